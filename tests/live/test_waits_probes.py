"""Capture-level waits on real workloads: who holds a file lock (/proc/locks, even outside the
inspected tree), which file a sleep loop polls for, and which thread holds the GIL."""
import os

import pytest

from helpers import inspect_json


def _capture(pid, *args, duration=2):
    return inspect_json(pid, "--children", *args, duration=duration)["capture"]


@pytest.mark.parametrize("how,kind", [("flock", "FLOCK"), ("lockf", "POSIX"), ("ofd", "OFDLCK")])
def test_lock_holder_outside_the_tree_is_named_and_sampled(launch, tmp_path, how, kind):
    path = str(tmp_path / "ckpt.lock")
    # the leftover of an earlier run: its own session, no relation to the new run
    holder = launch("flock_held_outside.py", "hold", path, how, settle=0.1)
    waiter = launch("flock_held_outside.py", "wait", path, how)
    cap = _capture(waiter.pid)

    lock = next(l for l in cap["locks"] if waiter.pid in l["waiter_pids"])
    assert lock["type"] == kind and lock["mode"] == "WRITE"
    assert lock["holder_pid"] == holder.pid and lock["holder_in_tree"] is False
    assert lock["path"] == path
    st = os.stat(path)
    assert lock["dev_inode"] == "%02x:%02x:%d" % (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)

    procs = {p["pid"]: p for p in cap["processes"]}
    assert procs[holder.pid]["outside_tree"] is True and procs[holder.pid]["role_hint"] == "lock-holder"
    assert procs[holder.pid]["threads"][0]["samples"], "the holder is sampled like any process"
    assert procs[holder.pid]["python"]["stacks"] is True
    assert "outside_tree" not in procs[waiter.pid]
    # what the waiter's /proc samples show: blocked in flock, or in fcntl for POSIX and OFD locks
    syscalls = {s[2] for s in procs[waiter.pid]["threads"][0]["samples"]}
    assert syscalls == {"flock" if how == "flock" else "fcntl"}


def test_no_lock_wait_no_locks_field(launch):
    w = launch("sleep_loop.py")
    cap = _capture(w.pid, duration=1)
    assert cap["locks"] is None
    assert all(not p.get("outside_tree") for p in cap["processes"])


def _file_wait_of(cap, pid):
    return next(w for w in cap["file_waits"] or [] if w["pid"] == pid)


@pytest.mark.parametrize("mode,library,name", [("filelock", "filelock", "cache.lock"),
                                               ("baton", "torch FileBaton", "lock")])
def test_stale_lock_file_left_by_a_dead_run(launch, tmp_path, mode, library, name):
    w = launch("stale_lock_file.py", mode, tmp_path / "build", settle=1.0)
    cap = _capture(w.pid)
    wait = _file_wait_of(cap, w.pid)
    path = str(tmp_path / "build" / name)
    assert wait["tid"] == w.pid and wait["library"] == library
    assert wait["path"] == path and wait["exists"] is True and wait["size"] == 0
    assert wait["mtime"] == os.stat(path).st_mtime and wait["age_s"] >= 0
    # the earlier run is dead: nobody holds the lock file or has it open
    assert wait["flock_holders"] == [] and wait["open_by"] == []
    assert cap["gil"] is None


def test_marker_file_nobody_writes(launch, tmp_path):
    w = launch("marker_file_wait.py", tmp_path)
    wait = _file_wait_of(_capture(w.pid), w.pid)
    assert wait["library"] == "user code"
    assert wait["path"] == str(tmp_path / "preprocess.done")
    assert wait["exists"] is False and wait["mtime"] is None and wait["open_by"] == []


def test_filelock_poll_on_a_file_held_outside(launch, tmp_path):
    path = str(tmp_path / "ckpt.lock")
    holder = launch("flock_held_outside.py", "hold", path, "flock", settle=0.1)
    w = launch("flock_held_outside.py", "wait", path, "filelock", settle=1.0)
    cap = _capture(w.pid)
    wait = _file_wait_of(cap, w.pid)
    assert wait["library"] == "filelock" and wait["path"] == path and wait["exists"] is True
    assert wait["flock_holders"] == [holder.pid]
    assert holder.pid in wait["open_by"]
    assert cap["locks"] is None   # a poll of LOCK_NB attempts: no thread blocks in flock


@pytest.mark.alone
def test_gil_held_by_a_regex_thread(launch):
    w = launch("gil_held_by_regex.py", settle=1.0)
    cap = _capture(w.pid)
    proc = next(p for p in cap["processes"] if p["pid"] == w.pid)
    validator = next(t["tid"] for t in proc["threads"] if t.get("python_name") == "validator")
    gil = cap["gil"][str(w.pid)]
    assert gil["holder_tid"] == validator
    assert gil["waiting_tids"] == [w.pid]
    assert gil["how"] == "py-spy dump owns_gil"
    assert cap["file_waits"] is None


@pytest.mark.alone
@pytest.mark.parametrize("script", ["sleep_loop.py", "cpu_loop.py"])
def test_plain_sleep_or_compute_looks_up_nothing(launch, script):
    w = launch(script)
    cap = _capture(w.pid, duration=1.5)
    assert cap["file_waits"] is None and cap["gil"] is None and cap["locks"] is None


@pytest.mark.parametrize("how,words", [("flock", "flock()"), ("lockf", "POSIX (fcntl/lockf)"),
                                       ("ofd", "open-file-description (OFD)")])
def test_a_lock_held_outside_the_job_names_its_holder_and_how_long_it_can_have_held_it(launch, tmp_path, how, words):
    path = str(tmp_path / "ckpt.lock")
    holder = launch("flock_held_outside.py", "hold", path, how, settle=0.1)
    waiter = launch("flock_held_outside.py", "wait", path, how)
    verdict = inspect_json(waiter.pid, "--children", duration=2)["verdict"]
    assert verdict["category"] == "locks" and verdict["pid"] == holder.pid, verdict["summary"]
    assert "%s lock on %s held by pid %d" % (words, path, holder.pid) in verdict["summary"]
    assert "so it has held the lock at most that long" in verdict["summary"]


@pytest.mark.parametrize("how", ["flock", "lockf", "ofd"])
def test_a_lock_holder_that_retries_in_a_loop_still_holds_the_lock(launch, tmp_path, how):
    path = str(tmp_path / "ckpt.lock")
    holder = launch("lock_holder_retry_loop.py", path, how, settle=0.3)
    waiter = launch("flock_held_outside.py", "wait", path, how)
    verdict = inspect_json(waiter.pid, "--children", duration=2)["verdict"]
    assert verdict["category"] == "locks" and verdict["pid"] == holder.pid, verdict["summary"]
    assert "lock_holder_retry_loop.py" in verdict["summary"] and "held by pid %d" % holder.pid in verdict["summary"]
