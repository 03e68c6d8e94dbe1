"""capture["wakers"] on real workloads: each wait resolved to the processes that could end it,
searched on the whole host, and those outside the inspected tree sampled too."""
import json
import os
import subprocess
import time

import pytest

from helpers import run_stalldiag


def _inspect(pid, tmp_path):
    out = tmp_path / "out.json"
    proc = run_stalldiag("inspect", "--children", "--duration", 3, "-o", out, pid)
    assert proc.returncode == 0, proc.stderr
    return json.loads(out.read_text())["capture"]


def _wait(cap, pid, kind):
    found = [w for w in cap["wakers"] if w["pid"] == pid and w["wait"] == kind]
    assert found, "no %s wait of pid %d in %s" % (kind, pid, cap["wakers"])
    return found[0]


def _proc(cap, pid):
    return next(p for p in cap["processes"] if p["pid"] == pid)


def _children(pid):
    with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
        return [int(c) for c in f.read().split()]


def _pid_from(path, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_text():
            return int(path.read_text())
        time.sleep(0.05)
    raise AssertionError("no pid in %s" % path)


def test_pipe_whose_write_end_only_an_outside_process_holds(launch, tmp_path):
    feeder = launch("wakers_pipe.py", tmp_path / "pid", settle=0.5)
    reader = _pid_from(tmp_path / "pid")
    cap = _inspect(reader, tmp_path)
    wait = _wait(cap, reader, "pipe")
    assert wait["tid"] == reader and wait["syscall"] == "read" and wait["target"].startswith("pipe:[")
    (end,) = wait["ends"]
    assert os.readlink("/proc/%d/fd/%d" % (feeder.pid, end["fd"])) == wait["target"]
    assert end == {"pid": feeder.pid, "fd": end["fd"], "mode": "write", "comm": _proc(cap, feeder.pid)["comm"],
                   "in_tree": False}
    assert "why_unseen" not in wait
    outside = _proc(cap, feeder.pid)
    assert outside["outside_tree"] is True and outside["role_hint"] == "pipe-peer"
    assert outside["threads"][0]["samples"], "the feeder is sampled like the rest"
    assert "outside_tree" not in _proc(cap, reader)


def test_fifo_reader_names_the_writer(launch, tmp_path):
    fifo = tmp_path / "feed.fifo"
    writer = launch("wakers_fifo.py", fifo, tmp_path / "pid", "held", settle=0.5)
    reader = _pid_from(tmp_path / "pid")
    cap = _inspect(reader, tmp_path)
    wait = _wait(cap, reader, "fifo")
    assert wait["target"] == str(fifo) and wait["syscall"] == "read"
    assert [(e["pid"], e["mode"], e["in_tree"]) for e in wait["ends"]] == [(writer.pid, "write", False)]
    assert _proc(cap, writer.pid)["outside_tree"] is True


def test_fifo_open_with_no_writer_says_nobody_holds_it(launch, tmp_path):
    fifo = tmp_path / "feed.fifo"
    launch("wakers_fifo.py", fifo, tmp_path / "pid", "nowriter", settle=0.5)
    reader = _pid_from(tmp_path / "pid")
    cap = _inspect(reader, tmp_path)
    wait = _wait(cap, reader, "fifo")
    assert wait["target"] == str(fifo) and wait["syscall"] == "openat"
    assert wait["ends"] == [] and wait["why_unseen"].startswith("no process on the host holds the other end")


def test_unix_client_whose_server_never_answers(launch, tmp_path):
    path = tmp_path / "srv.sock"
    server = launch("wakers_sockets.py", "serve", "unix", path, settle=0.1)
    client = launch("wakers_sockets.py", "client", "unix", path, settle=0.3)
    cap = _inspect(client.pid, tmp_path)
    wait = _wait(cap, client.pid, "unix")
    assert wait["syscall"] == "recvfrom" and wait["target"].startswith("socket:[")
    assert [(e["pid"], e["mode"], e["in_tree"]) for e in wait["ends"]] == [(server.pid, "rw", False)]
    assert "why_unseen" not in wait
    server_proc = _proc(cap, server.pid)
    assert server_proc["outside_tree"] is True and server_proc["role_hint"] == "waker"
    assert server_proc["python"]["stacks"] is True, "the server's Python stack says where it is stuck"


def test_tcp_client_on_loopback_names_the_server(launch, tmp_path):
    portfile = tmp_path / "port"
    server = launch("wakers_sockets.py", "serve", "tcp", portfile, settle=0.1)
    client = launch("wakers_sockets.py", "client", "tcp", portfile, settle=0.3)
    cap = _inspect(client.pid, tmp_path)
    wait = _wait(cap, client.pid, "tcp")
    assert [(e["pid"], e["in_tree"]) for e in wait["ends"]] == [(server.pid, False)]
    assert "remote" not in wait and "why_unseen" not in wait
    assert _proc(cap, server.pid)["role_hint"] == "waker"


def test_tcp_connection_never_accepted_points_at_the_listener(launch, tmp_path):
    portfile = tmp_path / "port"
    server = launch("wakers_sockets.py", "serve", "tcp-backlog", portfile, settle=0.1)
    client = launch("wakers_sockets.py", "client", "tcp", portfile, settle=0.3)
    cap = _inspect(client.pid, tmp_path)
    wait = _wait(cap, client.pid, "tcp")
    assert [e["pid"] for e in wait["ends"]] == [server.pid]
    assert "not accepted" in wait["why_unseen"]


def test_asyncio_loop_with_idle_fds_records_the_epoll_set(launch, tmp_path):
    loop = launch("wakers_epoll.py", "asyncio", settle=0.5)
    (child,) = _children(loop.pid)
    cap = _inspect(loop.pid, tmp_path)
    wait = _wait(cap, loop.pid, "epoll")
    assert wait["syscall"] in ("epoll_wait", "epoll_pwait") and wait["target"] == "anon_inode:[eventpoll]"
    by_kind = {}
    for item in wait["watching"]:
        by_kind.setdefault(item["target"].split(":")[0], []).append(item)
    pipe = by_kind["pipe"][0]
    assert [(e["pid"], e["mode"], e["in_tree"]) for e in pipe["ends"]] == [(child, "write", True)]
    sockets = by_kind["socket"]
    # asyncio's self-pipe (a socketpair: its peer is the loop's own other end) and the listener
    assert any(e["pid"] == loop.pid for s in sockets for e in s["ends"])
    assert any(s["ends"] == [] for s in sockets), "a listener waits for anyone: no end"
    assert "why_unseen" not in wait
    assert not any(p.get("outside_tree") for p in cap["processes"])


def test_empty_epoll_set_says_so(launch, tmp_path):
    loop = launch("wakers_epoll.py", "empty", settle=0.3)
    cap = _inspect(loop.pid, tmp_path)
    wait = _wait(cap, loop.pid, "epoll")
    assert wait["watching"] == [] and wait["why_unseen"] == "epoll set is empty"


def test_futex_on_a_shared_lock_names_the_processes_mapping_it(launch, tmp_path):
    parent = launch("wakers_futex.py", tmp_path / "pid", settle=0.5)
    waiter = _pid_from(tmp_path / "pid")
    holder = [c for c in _children(parent.pid) if c != waiter]
    cap = _inspect(waiter, tmp_path)
    wait = _wait(cap, waiter, "futex-shared")
    assert wait["syscall"] == "futex" and wait["mapping"].startswith("/dev/shm/sem.")
    assert set(holder) | {parent.pid} <= set(wait["mappers"]) and waiter not in wait["mappers"]
    for pid in holder + [parent.pid]:
        assert _proc(cap, pid)["outside_tree"] is True and _proc(cap, pid)["role_hint"] == "waker"


def _fuse_usable():
    if not os.path.exists("/dev/fuse"):
        return "no /dev/fuse on this machine"
    try:
        os.close(os.open("/dev/fuse", os.O_RDWR))
    except OSError as exc:
        return "/dev/fuse cannot be opened: %s" % exc.strerror
    if os.geteuid() != 0:
        return "mounting a FUSE file system without fusermount needs root"
    return None


@pytest.fixture
def fuse_mount(tmp_path):
    reason = _fuse_usable()
    if reason:
        pytest.skip(reason)
    mountpoint = tmp_path / "mnt"
    mountpoint.mkdir()
    yield mountpoint
    # the server is killed by the launch fixture, which leaves its mount behind: detach it
    subprocess.run(["umount", "-l", str(mountpoint)], capture_output=True)


def test_read_blocked_on_a_slow_fuse_mount_names_the_server(launch, tmp_path, fuse_mount):
    server = launch("wakers_fuse.py", "serve", fuse_mount, settle=0.2)
    if server.popen.poll() is not None:
        pytest.skip("the FUSE mount was refused here")
    reader = launch("wakers_fuse.py", "read", fuse_mount, settle=0.3)
    cap = _inspect(reader.pid, tmp_path)
    wait = _wait(cap, reader.pid, "file")
    assert wait["target"] == str(fuse_mount / "data") and wait["syscall"] == "read"
    mount = wait["mount"]
    assert mount["mountpoint"] == str(fuse_mount) and mount["fstype"] == "fuse.slowfuse"
    assert mount["source"] == "slowdata"
    assert [s["pid"] for s in mount["served_by"]] == [server.pid]
    assert "request_wait_answer" in wait["kernel_stack"]
    assert _proc(cap, server.pid)["outside_tree"] is True


# --- the verdict follows what the probe resolved -------------------------------------------------

def _verdict(pid, tmp_path):
    from stalldiag.capture import load_report
    from stalldiag.report import build_report
    _inspect(pid, tmp_path)
    return build_report(load_report(str(tmp_path / "out.json")))


def test_the_verdict_says_why_a_fifo_readers_waker_cannot_be_seen(launch, tmp_path):
    fifo = tmp_path / "feed.fifo"
    launch("wakers_fifo.py", fifo, tmp_path / "pid", "nowriter", settle=0.5)
    report = _verdict(_pid_from(tmp_path / "pid"), tmp_path)
    unseen = [f["summary"] for f in report["findings"] if f["kind"] == "waker-unseen"]
    assert report["verdict"]["category"] == "io", report["verdict"]["summary"]
    assert any(str(fifo) in s and "no process on the host holds the other end" in s for s in unseen), unseen


def test_a_read_on_a_slow_fuse_mount_leads_to_its_server(launch, tmp_path, fuse_mount):
    server = launch("wakers_fuse.py", "serve", fuse_mount, settle=0.2)
    if server.popen.poll() is not None:
        pytest.skip("the FUSE mount was refused here")
    reader = launch("wakers_fuse.py", "read", fuse_mount, settle=0.3)
    report = _verdict(reader.pid, tmp_path)
    chain = report["chain"]
    assert [c["pid"] for c in chain] == [reader.pid, server.pid], report["chain_text"]
    assert report["verdict"]["category"] == "io", report["verdict"]["summary"]
    mounts = [f["summary"] for f in report["findings"] if f["kind"] == "mount"]
    assert any("fuse.slowfuse" in s and "served by pid %d" % server.pid in s for s in mounts), mounts
