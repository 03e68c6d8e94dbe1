"""Held-out set 4: workloads written after the mechanisms they test, not tuned on.

Mechanisms built on other workloads (fixtures barrier_party_died.py, pool_waits_on_itself.py,
local_server_stopped.py): threads stuck in one wait are parties of it, not a chain; a wait
nobody is left to end; a pool whose every worker waits on tasks queued to it; a wait on a
loopback TCP connection leads to the process at the other end.  Each workload's docstring
says the verdict a correct diagnosis must give; each test first checks by hand (/proc) that
the workload is in the state it models.  The set's workloads (fixtures/workloads/:
async_blocking_http, event_coordinator_died, flock_workers_cycle, join_under_lock,
local_server_busy, pool_fanout, pool_worker_exits, queue_join_exception_path) were
heldout4_<name>.py until they were named by what they model alone.
"""
import os

import pytest

from helpers import children_of, inspect_json, other_tids, summary_and_evidence, wchan
from stalldiag import procfs

pytestmark = pytest.mark.heldout


def test_workers_waiting_for_a_coordinator_that_died(launch):
    w = launch("event_coordinator_died.py")
    tids = other_tids(w.pid)
    assert len(tids) == 3 and all("futex" in wchan(w.pid, t) for t in tids)   # the coordinator is gone
    report = inspect_json(w.pid, duration=2)
    verdict = report["verdict"]
    assert verdict["category"] == "locks", verdict["summary"]
    assert verdict["thread_name"].startswith("worker-"), verdict["summary"]
    assert "no live thread is left" in verdict["summary"] and "start.wait()" in verdict["summary"]
    assert verdict["progress"]["state"] == "no progress seen"


def test_fan_out_that_starves_its_own_pool(launch):
    w = launch("pool_fanout.py")
    assert all("futex" in wchan(w.pid, t) for t in other_tids(w.pid) + [w.pid])
    report = inspect_json(w.pid, duration=2)
    verdict = report["verdict"]
    assert verdict["category"] == "locks" and verdict["thread_name"].startswith("shard_"), verdict["summary"]
    assert verdict["summary"].startswith("Pool deadlock") and "cf.wait(parts)" in verdict["summary"]


@pytest.mark.alone
def test_trainer_waiting_on_a_local_server_that_spins(launch):
    w = launch("local_server_busy.py")
    (server,) = children_of(w.pid)
    with open("/proc/%d/stat" % server) as f:
        assert f.read().rsplit(")", 1)[1].split()[0] == "R"
    report = inspect_json(w.pid, "--children", duration=2)
    verdict = report["verdict"]
    assert verdict["pid"] == server and verdict["category"] == "cpu", verdict["summary"]
    assert "features_for" in summary_and_evidence(report)


def test_blocking_http_call_inside_a_coroutine(launch):
    w = launch("async_blocking_http.py")
    with open("/proc/%d/syscall" % w.pid) as f:
        assert procfs.SYSCALL_TABLE[int(f.read().split()[0])] == "recvfrom"   # the loop thread is in recv
    report = inspect_json(w.pid, duration=2)
    verdict = report["verdict"]
    assert verdict["tid"] == w.pid and verdict["category"] == "network", verdict["summary"]
    assert verdict["summary"].startswith("Event loop blocked") and "urlopen" in verdict["summary"]
    assert verdict["progress"]["state"] == "no progress seen"


def test_imap_waiting_for_a_shard_whose_worker_exited(launch):
    w = launch("pool_worker_exits.py", settle=0.5)
    workers = [int(p) for t in os.listdir("/proc/%d/task" % w.pid)
               for p in open("/proc/%d/task/%s/children" % (w.pid, t)).read().split()]
    assert len(workers) == 3     # the pool has replaced the worker that exited
    report = inspect_json(w.pid, "--children", duration=2)
    verdict = report["verdict"]
    assert verdict["category"] == "subprocess" and verdict["tid"] == w.pid, verdict["summary"]
    assert "none has it" in verdict["summary"] and "pool.imap(decode" in verdict["summary"]
    assert "replacement" in verdict["summary"]
    assert verdict["progress"]["state"] == "no progress seen"


def test_checkpointer_joining_its_writer_under_the_writers_lock(launch):
    w = launch("join_under_lock.py")
    assert all("futex" in wchan(w.pid, t) for t in [w.pid] + other_tids(w.pid))
    report = inspect_json(w.pid, duration=2)
    verdict = report["verdict"]
    assert verdict["category"] == "locks", verdict["summary"]
    assert verdict["summary"].startswith("Deadlock") and "self._lock" in verdict["summary"], verdict["summary"]
    assert "ckpt-writer" in verdict["summary"] and "writer.join()" in verdict["summary"]
    assert verdict["progress"]["state"] == "no progress seen"


def test_two_workers_taking_flocks_in_opposite_orders(launch, tmp_path):
    w = launch("flock_workers_cycle.py", tmp_path, settle=0.3)
    workers = children_of(w.pid)
    with open("/proc/locks") as f:
        waiting = [line for line in f if "->" in line]
    assert len(workers) == 2 and len(waiting) >= 2       # each worker waits on the other's lock
    report = inspect_json(w.pid, "--children", duration=2)
    verdict = report["verdict"]
    assert verdict["category"] == "locks" and verdict["pid"] in workers, verdict["summary"]
    assert verdict["summary"].startswith("File-lock deadlock") and "ckpt.lock" in verdict["summary"] \
        and "meta.lock" in verdict["summary"], verdict["summary"]
    assert verdict["progress"]["state"] == "no progress seen"


def test_join_after_decoders_swallowed_an_exception_before_task_done(launch):
    w = launch("queue_join_exception_path.py")
    assert all("futex" in wchan(w.pid, t) for t in [w.pid] + other_tids(w.pid))
    report = inspect_json(w.pid, duration=2)
    verdict = report["verdict"]
    assert verdict["category"] == "locks" and verdict["tid"] == w.pid, verdict["summary"]
    assert "records.join()" in verdict["summary"] and "task_done()" in verdict["summary"]
    assert "decoder-0" in verdict["summary"] and "decoder-1" in verdict["summary"]
