"""--syscalls exact: counts match a workload that makes known numbers of calls, and the
target is never left traced or stopped, whatever happens to stalldiag."""
import json
import os
import pty
import signal
import subprocess
import sys
import threading
import time

import pytest

from helpers import ROOT
from stalldiag.probes.syscall_counts import BACKENDS

pytestmark = pytest.mark.alone

N = 5000
AVAILABLE = [b.name for b in BACKENDS if b.available()]


def backend_param(name):
    return pytest.param(name, marks=pytest.mark.skipif(name not in AVAILABLE, reason="%s not usable here" % name))


def start_exact(pid, backend, duration):
    """Run stalldiag with stderr on a pty (so it shows progress) and wait until counting runs."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "stalldiag", "inspect", str(pid), "--children", "--duration",
                             str(duration), "--syscalls", "exact", "--syscalls-backend", backend, "--json"],
                            stdout=subprocess.PIPE, stderr=slave, cwd=str(ROOT), text=True)
    os.close(slave)
    seen = []
    started = threading.Event()

    def drain():
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                return
            if not chunk:
                return
            seen.append(chunk)
            if b"processes" in b"".join(seen):   # the progress line: the window has begun
                started.set()

    threading.Thread(target=drain, daemon=True).start()
    assert started.wait(60), b"".join(seen)
    return proc, seen


def within(actual, expected, tolerance=0.02):
    return abs(actual - expected) <= tolerance * expected


@pytest.mark.parametrize("backend", [backend_param(b) for b in ("bpftrace", "perf", "strace")])
def test_exact_counts_match_known_calls(launch, tmp_path, backend):
    trigger = tmp_path / "go"
    w = launch("known_syscalls.py", trigger, N)
    proc, _ = start_exact(w.pid, backend, duration=120)
    trigger.touch()
    done = tmp_path / "go.done"
    deadline = time.monotonic() + 100
    while not done.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert done.exists()
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)            # end the window: the report covers every call
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 130
    report = json.loads(out)
    counts = report["syscall_counts"]
    assert counts["backend"] == backend
    tree = counts["tree"]
    for name in ("openat", "read", "futex"):
        assert within(tree[name], 4 * N), (name, tree[name])   # main, 2 threads, 1 child
    parent = next(p for p in report["processes"] if p["pid"] == w.pid)
    assert list(parent["syscall_counts"])[:3] == ["futex", "read", "openat"]
    if backend == "bpftrace":
        # exact attribution: each thread and the child process get their own
        child = next(p for p in report["processes"] if p["ppid"] == w.pid)
        for name in ("openat", "read", "futex"):
            assert within(parent["syscall_counts"][name], 3 * N), (name, parent["syscall_counts"])
            assert within(child["syscall_counts"][name], N), (name, child["syscall_counts"])
        workers = [t for t in parent["threads"] if t["comm"] and t["comm"].startswith("worker")]
        for t in workers:
            assert within(t["syscall_counts"]["openat"], N), t
    if backend == "strace":
        assert any("strace" in line and "ptrace" in line for line in report["limitations"])


def tracer_pid(pid):
    for line in open("/proc/%d/status" % pid):
        if line.startswith("TracerPid:"):
            return int(line.split()[1])
    return None


def state(pid):
    return open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[0]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
@pytest.mark.skipif("strace" not in AVAILABLE, reason="strace not installed")
def test_killing_stalldiag_never_leaves_the_target_traced(launch, tmp_path, sig):
    w = launch("cpu_loop.py")
    proc, _ = start_exact(w.pid, "strace", duration=30)
    assert tracer_pid(w.pid) != 0          # strace is attached now
    proc.send_signal(sig)
    proc.wait(timeout=30)
    deadline = time.monotonic() + 10
    while tracer_pid(w.pid) != 0 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert tracer_pid(w.pid) == 0
    cpu_before = sum(int(x) for x in open("/proc/%d/stat" % w.pid).read().rsplit(")", 1)[1].split()[11:13])
    time.sleep(0.5)
    cpu_after = sum(int(x) for x in open("/proc/%d/stat" % w.pid).read().rsplit(")", 1)[1].split()[11:13])
    assert state(w.pid) in ("R", "S") and cpu_after > cpu_before   # still running, not stopped
    if sig != signal.SIGKILL:
        assert proc.returncode == {signal.SIGINT: 130, signal.SIGTERM: 143}[sig]


@pytest.mark.skipif(os.geteuid() != 0 or not set(AVAILABLE) - {"bpftrace"},
                    reason="needs root and a backend besides bpftrace")
def test_a_backend_that_fails_to_attach_gives_way_to_the_next(launch, tmp_path):
    """bpftrace installed but unable to attach (no tracefs mounted on a fresh host): the next
    backend counts, and the report says why bpftrace did not."""
    shim = tmp_path / "bpftrace"
    shim.write_text("#!/bin/sh\necho 'ERROR: tracefs not mounted' >&2\nexit 1\n")
    shim.chmod(0o755)
    w = launch("cpu_loop.py")
    env = dict(os.environ, PATH="%s:%s" % (tmp_path, os.environ["PATH"]))
    proc = subprocess.run([sys.executable, "-m", "stalldiag", "inspect", str(w.pid), "--duration", "1",
                           "--syscalls", "exact", "--json"], capture_output=True, text=True, cwd=str(ROOT),
                          env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["capture"]["exact_syscalls"]["backend"] in set(AVAILABLE) - {"bpftrace"}
    said = " ".join(report["limitations"])
    assert "bpftrace failed: bpftrace exited at start: ERROR: tracefs not mounted" in said, said
