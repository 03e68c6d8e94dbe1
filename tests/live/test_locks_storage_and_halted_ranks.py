"""Held-out stalls for issue 13: real workloads the diagnosis was not tuned on.

Each workload of this first held-out set (fixtures/workloads/: cpu_quota_dataloader,
frozen_worker, gil_sum, healthy_compute, healthy_dataloader, lockf_checkpoint, logging_fork,
marker_wait, numpy_memmap, pipe_not_drained, sqlite_locked, stopped_rank_gloo; heldout_<name>.py
until they were named by what they model alone) models a real incident of a
family in issue 13 with another program and another shape than the tuning
workloads; its docstring says the mechanism and the verdict a correct
diagnosis must give.  These tests state that verdict: category, culprit,
the mechanism in the words of the summary/evidence, and progress.  They are
not weakened to match what the tool says today.
"""
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import (WORKLOADS, children_of, free_port, inspect_json, kill_pids, process_of, progress_state, said,
                     summary_and_evidence, wait_for)

pytestmark = [pytest.mark.heldout, pytest.mark.alone]

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (cgroups)")


def move_to_root_cgroup(hierarchy, cgroup):
    """Move what is left in a v1 cgroup back to the root, then remove the cgroup."""
    procs = os.path.join(cgroup, "cgroup.procs")
    if not os.path.isdir(cgroup):
        return
    for _ in range(50):
        with open(procs) as f:
            pids = f.read().split()
        for pid in pids:
            try:
                with open(os.path.join(hierarchy, "cgroup.procs"), "w") as f:
                    f.write(pid)
            except OSError:
                pass
        try:
            os.rmdir(cgroup)
            return
        except OSError:
            time.sleep(0.1)
    raise AssertionError("could not remove " + cgroup)


# 1. locks: a lock held at fork

def test_logging_lock_held_at_fork_blocks_the_forked_worker(launch):
    w = launch("logging_fork.py", settle=1.0)
    (child,) = children_of(w.pid)
    report = inspect_json(w.pid, "--children", duration=3)
    verdict = report["verdict"]
    text = summary_and_evidence(report)
    assert verdict["category"] == "locks", verdict["summary"]
    assert verdict["pid"] == child, verdict["summary"]
    assert "fork" in text, text
    assert re.search(r"(not exist|no such thread|no thread|does not exist|absent)", text), text
    assert "log-shipper" in text, text  # the parent's thread that held it
    assert progress_state(report) != "making progress"


# 2. a cycle through a pipe

def test_parent_waiting_for_child_that_fills_an_undrained_pipe(launch):
    w = launch("pipe_not_drained.py", settle=1.0)
    (child,) = children_of(w.pid)
    wait_for(lambda: "pipe_write" in open("/proc/%d/wchan" % child).read(), what="child blocked in pipe write")
    report = inspect_json(w.pid, "--children", duration=3)
    verdict = report["verdict"]
    text = said(report)
    # a reader that joins its writer while the writer fills the pipe: the undrained pipe (issue 20:
    # the mechanism decides before the cycle it makes), still said as a deadlock in the findings;
    # its category is the first wait's, the parent's on its child (issue 32)
    assert verdict["category"] == "subprocess", verdict["summary"]
    assert verdict["pid"] in (w.pid, child), verdict["summary"]
    assert "pipe" in text, text
    assert re.search(r"(pipe is full|full pipe|pipe .*full|not drain|never read|not read|undrained)", text), text
    assert "deadlock" in text.lower() or "cycle" in text.lower(), text
    assert str(w.pid) in text and str(child) in text, text
    assert progress_state(report) != "making progress"


# 3. the GIL held in one C call

def test_thread_holding_the_gil_in_a_c_call_starves_the_training_loop(launch, tmp_path):
    step_file = tmp_path / "step"
    w = launch("gil_sum.py", step_file, settle=1.5)
    before = step_file.read_text()
    report = inspect_json(w.pid, duration=3)
    assert step_file.read_text() == before, "the training loop ran: the workload did not stall"
    verdict = report["verdict"]
    metrics = next(t for t in process_of(report, w.pid)["threads"] if t["name"] == "metrics")
    assert verdict["category"] == "cpu", verdict["summary"]
    assert (verdict["pid"], verdict["tid"]) == (w.pid, metrics["tid"]), verdict["summary"]
    assert "GIL" in summary_and_evidence(report), summary_and_evidence(report)
    assert progress_state(report) != "making progress", report["verdict"]["progress"]


# 4. POSIX locks held by a leftover process outside the job

def _holder_is_culprit(report, holder_pid, waiter_pid):
    verdict = report["verdict"]
    text = summary_and_evidence(report)
    assert verdict["pid"] == holder_pid, verdict["summary"]
    holder = process_of(report, holder_pid)  # sampled like any process of the run
    assert holder["pid"] != waiter_pid
    assert str(holder_pid) in text, text
    assert "hold" in " ".join(holder["cmdline"]) and re.search(r"(sqlite_locked|lockf_checkpoint)\.py hold", text), text
    assert progress_state(report) != "making progress"


def test_sqlite_write_polls_behind_a_leftover_exclusive_transaction(launch, tmp_path):
    db = tmp_path / "runs.db"
    holder = launch("sqlite_locked.py", "hold", db)
    w = launch("sqlite_locked.py", db, settle=1.0)
    assert w.pid not in children_of(holder.pid) and holder.pid not in children_of(w.pid)
    report = inspect_json(w.pid, duration=3)
    assert report["verdict"]["category"] == "locks", report["verdict"]["summary"]
    assert "runs.db" in summary_and_evidence(report)
    _holder_is_culprit(report, holder.pid, w.pid)


def test_checkpoint_lockf_waits_on_a_leftover_holder(launch, tmp_path):
    ckpt = tmp_path / "model.ckpt"
    holder = launch("lockf_checkpoint.py", "hold", ckpt)
    w = launch("lockf_checkpoint.py", ckpt, settle=1.0)
    with open("/proc/locks") as f:
        assert re.search(r"-> POSIX +ADVISORY +WRITE %d " % w.pid, f.read()), "waiter not in /proc/locks"
    report = inspect_json(w.pid, duration=3)
    assert report["verdict"]["category"] == "locks", report["verdict"]["summary"]
    assert "model.ckpt" in summary_and_evidence(report)
    _holder_is_culprit(report, holder.pid, w.pid)


# 5. a frozen worker

FREEZER = "/sys/fs/cgroup/freezer"


@pytest.fixture
def freezer():
    if os.geteuid() != 0 or not os.path.isdir(FREEZER):
        pytest.skip("needs root and the cgroup v1 freezer")
    cg = os.path.join(FREEZER, "stalldiag-heldout-frozen-%d" % os.getpid())
    os.makedirs(cg, exist_ok=True)
    try:
        yield cg
    finally:
        with open(os.path.join(cg, "freezer.state"), "w") as f:
            f.write("THAWED")
        move_to_root_cgroup(FREEZER, cg)


def test_worker_frozen_by_cgroup_freezer_is_the_culprit(launch, freezer, tmp_path):
    pids_file = tmp_path / "workers"
    w = launch("frozen_worker.py", pids_file, settle=0.5)
    workers = [int(p) for p in pids_file.read_text().split()]
    frozen = workers[1]
    try:
        with open(os.path.join(freezer, "cgroup.procs"), "w") as f:
            f.write(str(frozen))
        with open(os.path.join(freezer, "freezer.state"), "w") as f:
            f.write("FROZEN")
        wait_for(lambda: open(os.path.join(freezer, "freezer.state")).read().strip() == "FROZEN", what="FROZEN")
        time.sleep(0.5)
        report = inspect_json(w.pid, "--children", duration=3)
    finally:
        with open(os.path.join(freezer, "freezer.state"), "w") as f:
            f.write("THAWED")
        kill_pids(workers)
    verdict = report["verdict"]
    assert verdict["pid"] == frozen, verdict["summary"]
    assert "frozen" in summary_and_evidence(report).lower(), summary_and_evidence(report)
    assert verdict["category"] != "io", verdict["summary"]  # the refrigerator's D state is not storage
    assert progress_state(report) != "making progress"


# 6. a stopped rank

torch_only = pytest.mark.skipif(subprocess.run([sys.executable, "-c", "import torch"]).returncode != 0,
                                reason="torch not installed")


@torch_only
def test_rank_stopped_by_sigstop_is_the_culprit(launch, tmp_path):
    port = free_port()
    argv = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2",
            "--master_port=%d" % port, "stopped_rank_gloo.py", str(tmp_path)]
    w = launch("stopped_rank_gloo.py", argv=argv, settle=0.5)
    ranks = [int((tmp_path / ("rank%d.pid" % r)).read_text()) for r in (0, 1)]
    try:
        os.kill(ranks[1], signal.SIGSTOP)
        wait_for(lambda: open("/proc/%d/stat" % ranks[1]).read().rsplit(")", 1)[1].split()[0] == "T",
                 what="rank 1 stopped")
        time.sleep(0.5)
        report = inspect_json(w.pid, "--children", duration=3)
    finally:
        kill_pids(ranks)
    verdict = report["verdict"]
    assert verdict["category"] == "collective", verdict["summary"]
    assert verdict["pid"] == ranks[1], verdict["summary"]
    assert "stopped" in verdict["summary"], verdict["summary"]
    assert progress_state(report) != "making progress", report["verdict"]["progress"]


# 7. a CPU quota

CPU_V1 = "/sys/fs/cgroup/cpu"


@pytest.fixture
def cpu_quota():
    if os.geteuid() != 0 or not os.path.exists(os.path.join(CPU_V1, "cpu.cfs_quota_us")):
        pytest.skip("needs root and the cgroup v1 cpu controller")
    cg = os.path.join(CPU_V1, "stalldiag-heldout-quota-%d" % os.getpid())
    os.makedirs(cg, exist_ok=True)
    with open(os.path.join(cg, "cpu.cfs_period_us"), "w") as f:
        f.write("100000")
    with open(os.path.join(cg, "cpu.cfs_quota_us"), "w") as f:
        f.write("5000")  # 5% of one core
    try:
        yield cg
    finally:
        move_to_root_cgroup(CPU_V1, cg)


@torch_only
def test_dataloader_under_a_tiny_cpu_quota_is_named_throttled(launch, cpu_quota):
    w = launch("cpu_quota_dataloader.py", cpu_quota, settle=1.0)
    job = [int(p) for p in open(os.path.join(cpu_quota, "cgroup.procs")).read().split()]
    assert w.pid in job and len(job) == 3
    try:
        report = inspect_json(w.pid, "--children", duration=4)
    finally:
        kill_pids(job)
    verdict = report["verdict"]
    text = summary_and_evidence(report)
    assert verdict["category"] == "cpu", verdict["summary"]
    assert verdict["pid"] in job
    assert re.search(r"(throttl|quota)", text, re.I), text
    assert "on CPU 100%" not in text, text
    # (added with the runnable-share rule, not part of the held-out check) a worker runnable
    # nearly all the window gets a recorder, though throttling leaves it ~2% of a core
    workers = [p for p in report["processes"] if p["pid"] != w.pid and p["pid"] in job]
    assert any(p.get("stack_rate_hz") for p in workers), [p.get("stack_snapshots") for p in workers]


# 8. memory-mapped data on slow storage

@pytest.mark.skipif(os.geteuid() != 0 or not os.path.isdir("/sys/fs/cgroup/blkio"),
                    reason="slow storage is made with a cgroup v1 blkio throttle, which needs root")
def test_memmapped_npy_on_slow_storage_is_io_with_page_faults(launch, tmp_path):
    w = launch("numpy_memmap.py", tmp_path / "data", settle=1.0)
    report = inspect_json(w.pid, duration=4)
    verdict = report["verdict"]
    text = summary_and_evidence(report)
    assert verdict["category"] == "io", verdict["summary"]
    assert verdict["pid"] == w.pid
    assert re.search(r"page.?fault", text, re.I), text
    assert "tokens.npy" in text, text


# 9. a marker file nobody will write

def test_waiting_for_the_marker_of_a_crashed_preprocessing_job(launch, tmp_path):
    cache = tmp_path / "cache"
    crashed = subprocess.run([sys.executable, str(WORKLOADS / "marker_wait.py"), "preprocess", str(cache)],
                             capture_output=True, text=True)
    assert crashed.returncode == 1 and "MemoryError" in crashed.stderr
    w = launch("marker_wait.py", "wait", cache, settle=1.0)
    report = inspect_json(w.pid, duration=3)
    verdict = report["verdict"]
    text = summary_and_evidence(report)
    assert verdict["category"] in ("sleep", "io"), verdict["summary"]
    assert verdict["pid"] == w.pid
    assert str(cache / ".done") in text, text
    assert "no live process" in text, text
    assert progress_state(report) != "making progress"


# 10. healthy runs are not stalls

@torch_only
def test_healthy_dataloader_run_with_a_shared_log_is_making_progress(launch, tmp_path):
    log = tmp_path / "train.log"
    w = launch("healthy_dataloader.py", log, settle=1.0)
    report = inspect_json(w.pid, "--children", duration=3)
    verdict = report["verdict"]
    assert progress_state(report) == "making progress", verdict["progress"]
    if verdict.get("tid") is not None:
        window = max(t["samples"] for p in report["processes"] for t in p["threads"])
        culprit = next(t for t in process_of(report, verdict["pid"])["threads"] if t["tid"] == verdict["tid"])
        assert culprit["samples"] >= window / 2, (verdict["summary"], culprit["samples"], window)
    mentions = [line for line in verdict["progress"]["evidence"] if "train.log" in line]
    assert len(mentions) == 1, verdict["progress"]["evidence"]


@torch_only
def test_healthy_matmul_loop_with_checkpoints_is_making_progress(launch, tmp_path):
    w = launch("healthy_compute.py", tmp_path, settle=2.5)
    assert (tmp_path / "ckpt.pt").exists()
    report = inspect_json(w.pid, duration=3)
    assert progress_state(report) == "making progress", report["verdict"]["progress"]
