"""Follow the chain to its end on real PyTorch, multiprocessing and torchrun programs."""
import os
import socket
import sys
import time

import pytest

from helpers import inspect_json, process_of

pytestmark = pytest.mark.alone

torch = pytest.importorskip("torch")


def evidence(report):
    return "\n".join(report["verdict"]["evidence"])


def roles(report):
    return {p["pid"]: p["role"] for p in report["processes"]}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_producer_thread_stuck_reading_is_the_culprit(launch, tmp_path):
    w = launch("producer_stuck_read.py", tmp_path / "records.fifo")
    report = inspect_json(w.pid, "--children")
    verdict = report["verdict"]
    producer = next(t for t in process_of(report, w.pid)["threads"] if t["name"] == "producer")
    assert (verdict["pid"], verdict["tid"]) == (w.pid, producer["tid"])
    assert report["chain"][0]["kind"] == "queue-get"
    assert "read_record" in evidence(report)
    assert "records.fifo" in evidence(report)


def test_parent_child_multiprocessing_lock_cycle_is_locks(launch):
    w = launch("mp_lock_deadlock.py")
    report = inspect_json(w.pid, "--children")
    verdict = report["verdict"]
    child = next(p for p in report["processes"] if p["ppid"] == w.pid)
    assert verdict["category"] == "locks"
    assert verdict["pid"] == child["pid"]
    deadlock = next(f for f in report["findings"] if f["kind"] == "deadlock")
    assert "across processes" in deadlock["summary"]


def test_dataloader_cpu_bound_workers_are_cpu(launch):
    w = launch("dataloader_cpu_bound.py", settle=1.0)
    report = inspect_json(w.pid, "--children", duration=3)
    verdict = report["verdict"]
    workers = [p["pid"] for p in report["processes"] if p["role"] == "dataloader-worker"]
    assert len(workers) == 2
    assert verdict["category"] == "cpu"
    assert verdict["pid"] in workers
    assert "augment_sample" in evidence(report)
    assert "training loop is starved" in evidence(report)
    assert report["chain"][0]["kind"] == "dataloader"


@pytest.mark.skipif(os.geteuid() != 0 or not os.path.isdir("/sys/fs/cgroup/blkio"),
                    reason="slow storage is made with a cgroup v1 blkio throttle, which needs root")
def test_dataloader_workers_on_slow_storage_are_io(launch, tmp_path):
    w = launch("dataloader_slow_io.py", tmp_path / "data", settle=1.5)
    report = inspect_json(w.pid, "--children", duration=4)
    verdict = report["verdict"]
    workers = [p["pid"] for p in report["processes"] if p["role"] == "dataloader-worker"]
    assert len(workers) == 2
    assert verdict["category"] == "io"
    assert verdict["pid"] in workers
    assert "sample-" in evidence(report)
    assert "MB/s from storage" in evidence(report)
    assert " → storage at " in report["chain_text"]


def test_torch_compile_with_fresh_cache_is_compilation(launch):
    w = launch("compile_fresh_cache.py", settle=2.0)
    report = inspect_json(w.pid, "--children", duration=4)
    verdict = report["verdict"]
    assert verdict["category"] == "compilation"
    assert "compiling" in evidence(report)
    assert any(f["kind"] == "compile-time" for f in report["findings"])


def _torchrun(script, port):
    return [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2",
            "--master_port=%d" % port, script]


def test_gloo_rank_hanging_before_collective_is_the_culprit(launch):
    port = free_port()
    w = launch("gloo_hang.py", argv=_torchrun("gloo_hang.py", port), settle=1.0)
    report = inspect_json(w.pid, "--children", duration=3)
    verdict = report["verdict"]
    r = roles(report)
    assert r[w.pid] == "launcher"
    rank1 = next(pid for pid, role in r.items() if role == "rank 1")
    assert verdict["category"] == "collective"
    assert verdict["pid"] == rank1
    assert "stuck_in_data_prep" in evidence(report)
    assert "all_reduce" in evidence(report)


def test_rendezvous_waiting_for_a_rank_never_launched(launch):
    port = free_port()
    env = dict(os.environ, RANK="0", WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    w = launch("rendezvous_missing_rank.py", port, env=env, settle=1.0)
    report = inspect_json(w.pid, "--children")
    assert report["verdict"]["category"] == "collective"
    missing = next(f for f in report["findings"] if f["kind"] == "missing-ranks")
    assert "ranks 1 of world size 2" in missing["summary"]


def test_a_batch_a_worker_could_not_send_leaves_the_loop_waiting_on_idle_workers(launch):
    w = launch("dataloader_lost_batch.py", settle=1.0)
    report = inspect_json(w.pid, "--children", duration=3)
    verdict = report["verdict"]
    workers = [p["pid"] for p in report["processes"] if p["role"] == "dataloader-worker"]
    assert len(workers) == 2
    assert verdict["category"] == "subprocess" and verdict["pid"] == w.pid, verdict["summary"]
    assert "idle, waiting on their index queues" in verdict["summary"], verdict["summary"]
    assert all("pid %d" % pid in verdict["summary"] for pid in workers), verdict["summary"]
    assert verdict["progress"]["state"] == "no progress seen"
