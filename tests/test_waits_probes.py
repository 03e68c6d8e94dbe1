"""Capture-level waits on real workloads: who holds a file lock (/proc/locks, even outside the
inspected tree), which file a sleep loop polls for, and which thread holds the GIL."""
import os

import pytest

from conftest import inspect_json


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
