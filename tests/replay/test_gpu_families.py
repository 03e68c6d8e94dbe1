"""GPU families of issue 13, proven on 2 NVIDIA H200s and replayed here (CI has no GPU).

Each capture was taken by tools/gpu_proof.sh on the device machine from a real
workload in fixtures/workloads/ (its docstring says what it models and the right
verdict).  The first test of each family checks that the capture really shows
the mechanism (so a fixture can't silently stop meaning what it claims); the
second replays the diagnosis on it.  Per family the second workload is held
out: it was written and captured without changing the diagnosis for it.
"""
import re

import pytest

from helpers import CAPTURES
from stalldiag.capture import load_report
from stalldiag.report import build_report

STOPPED = ["gpu_ddp_stopped_rank", "gpu_allgather_stopped"]      # rank 1 SIGSTOPped / cgroup-frozen
STRAGGLER = ["gpu_straggler", "gpu_straggler_uneven_batches"]     # rank 1 does the work rank 0 waits for
LAUNCH_BOUND = ["gpu_launch_bound", "gpu_launch_bound_autograd"]  # the host launches tiny kernels


def capture(name):
    return load_report(str(CAPTURES / (name + ".json")))


def replay(name):
    return build_report(capture(name))


def rank_proc(cap, rank):
    return next(p for p in cap["processes"] if (p.get("env") or {}).get("RANK") == str(rank))


def gpu_means(cap, dev):
    """(utilization %, SM activity %, tensor %) of one GPU over the window, from NVML samples and GPM."""
    g = cap["gpu"]
    util = [s[2] for s in g["samples"] if s[1] == dev]
    gpm = [s for s in g["gpm"] if s[1] == dev]
    mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
    return mean(util), mean([s[2] for s in gpm]), mean([s[4] for s in gpm])


def states(thread):
    return {s[1] for s in thread["samples"]}


def main_thread(proc):
    return next(t for t in proc["threads"] if t["tid"] == proc["pid"])


def conclusions(report):
    """What the diagnosis concluded in words: the summary and its findings (not the raw GPU table)."""
    return "\n".join([report["verdict"]["summary"]] + [f["summary"] for f in report["findings"]])


# --- the captures show the mechanism --------------------------------------------------------------

@pytest.mark.parametrize("name", STOPPED)
def test_stopped_rank_capture_shows_a_halted_peer_and_a_spinning_waiter(name):
    cap = capture(name)
    rank0, rank1 = rank_proc(cap, 0), rank_proc(cap, 1)
    halted = rank1["kernel"]["cgroup"]["freezer"]["state"] == "frozen" or all(
        states(t) == {"T"} for t in rank1["threads"])
    assert halted
    assert all(t["cpu_seconds"] == 0 for t in rank1["threads"])
    waiter = main_thread(rank0)
    assert states(waiter) == {"R"} and waiter["ctx"]["voluntary"] == 0   # spins in the CUDA driver
    util0, sm0, _ = gpu_means(cap, 0)
    util1, _, _ = gpu_means(cap, 1)
    assert util0 >= 90 and sm0 < 30 and util1 < 5      # NCCL kernel waiting on GPU 0; GPU 1 idle


@pytest.mark.parametrize("name", STRAGGLER)
def test_straggler_capture_shows_the_peer_gpu_computing(name):
    cap = capture(name)
    _, sm0, tensor0 = gpu_means(cap, 0)
    util1, sm1, tensor1 = gpu_means(cap, 1)
    assert util1 >= 90 and sm1 > 2.5 * sm0 and tensor1 > tensor0


@pytest.mark.parametrize("name", LAUNCH_BOUND)
def test_launch_bound_capture_shows_an_idle_gpu_and_a_busy_host(name):
    cap = capture(name)
    (proc,) = cap["processes"]
    util, sm, _ = gpu_means(cap, 0)
    assert util < 20 and sm < 1
    window = cap["window"]["duration_s"]
    assert sum(t["cpu_seconds"] for t in proc["threads"]) > 0.8 * window


# --- the diagnosis replays to the right verdict ---------------------------------------------------

@pytest.mark.parametrize("name", STOPPED)
def test_stopped_rank_is_the_culprit_and_the_job_is_not_making_progress(name):
    cap = capture(name)
    report = replay(name)
    v = report["verdict"]
    assert v["category"] == "collective", v["summary"]
    assert v["pid"] == rank_proc(cap, 1)["pid"], v["summary"]
    word = "stopped" if name == "gpu_ddp_stopped_rank" else r"stopped|frozen"
    assert re.search(word, v["summary"]), v["summary"]
    assert v["progress"]["state"] != "making progress", v["progress"]


@pytest.mark.parametrize("name", STRAGGLER)
def test_straggler_rank_is_the_culprit_with_its_gpu_activity_named(name):
    cap = capture(name)
    report = replay(name)
    v = report["verdict"]
    straggler = rank_proc(cap, 1)
    assert v["pid"] == straggler["pid"], v["summary"]
    dev = int(straggler["env"]["LOCAL_RANK"])
    assert re.search(r"GPU %d\b[^\n]*(SM|tensor) \d" % dev, conclusions(report)), conclusions(report)


@pytest.mark.parametrize("name", LAUNCH_BOUND)
def test_launch_bound_is_cpu_on_the_launching_thread_with_the_idle_gpu_named(name):
    cap = capture(name)
    report = replay(name)
    v = report["verdict"]
    assert v["category"] == "cpu", v["summary"]          # never "locks": autograd's futex is not a lock wait
    (proc,) = cap["processes"]
    culprit = next(t for t in proc["threads"] if t["tid"] == v["tid"])
    busiest = max(t["cpu_seconds"] for t in proc["threads"])
    assert culprit["cpu_seconds"] >= 0.5 * busiest, (v["summary"], culprit["name"])
    assert re.search(r"GPU 0\b[^\n]*SM \d", conclusions(report)), conclusions(report)
