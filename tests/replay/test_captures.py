"""Saved captures replay through the diagnosis on any machine (CI has no GPU).

The GPU captures were taken on NVIDIA H200s by tools/gpu_proof.sh; the others on
CPU by tools/record_captures.py.  Each row says what a reader of the report must
see: the category, who the culprit is (by role and thread), and the evidence.
"""

import pytest

from helpers import CAPTURES
from stalldiag.capture import load_report
from stalldiag.report import build_report


def replay(name):
    return build_report(load_report(str(CAPTURES / (name + ".json"))))


def culprit_role(report):
    return next(p["role"] for p in report["processes"] if p["pid"] == report["verdict"]["pid"])


def culprit_thread(report):
    proc = next(p for p in report["processes"] if p["pid"] == report["verdict"]["pid"])
    return next(t for t in proc["threads"] if t["tid"] == report["verdict"]["tid"])


def text(report):
    return "\n".join([report["verdict"]["summary"]] + report["verdict"]["evidence"]
                     + [f["summary"] for f in report["findings"]])


def finding_kinds(report):
    return {f["kind"] for f in report["findings"]}


# name, category, culprit role, culprit thread name (None: any), evidence fragments, finding kinds
EXPECTED = [
    ("deadlock", "locks", "main", "writer", ["holds lock_a and wants lock_b"], {"deadlock"}),
    ("cpu_loop", "cpu", "main", "MainThread", ["collatz_forever"], set()),
    ("sleep_loop", "sleep", "main", "MainThread", ["clock_nanosleep"], set()),
    ("wait_child", "subprocess", "child", None, ["wait4", "sleep 600"], set()),
    ("blocked_open", "io", "main", "MainThread", ["openat", "shard.fifo"], set()),
    ("producer_stuck_read", "io", "main", "producer", ["read_record", "records.fifo"], set()),
    ("mp_lock_deadlock", "locks", "child", None, ["across processes"], {"deadlock"}),
    ("dataloader_cpu_bound", "cpu", "dataloader-worker", None, ["augment_sample", "training loop is starved"],
     {"dataloader-starved"}),
    ("dataloader_slow_io", "io", "dataloader-worker", None, ["sample-", "MB/s from storage"],
     {"dataloader-starved", "d-state"}),
    ("compile_fresh_cache", "compilation", None, None, ["compiling"], {"compile-time"}),
    ("gloo_hang", "collective", "rank 1", None, ["stuck_in_data_prep", "all_reduce"], set()),
    ("rendezvous_missing_rank", "collective", "rank 0", None, ["ranks 1 never started"], {"missing-ranks"}),
    ("thread_join", "cpu", "main", "worker", ["crunch_numbers"], set()),
    ("mp_pool", "cpu", "child", None, ["score_batch"], set()),
    ("mp_connection", "sleep", "child", None, ["prepare_reply"], set()),
    ("asyncio_selector", "network", "main", "MainThread", ["ESTABLISHED"], set()),
    ("http_wait", "network", "main", "MainThread", ["ESTABLISHED"], set()),
    ("semaphore", "cpu", "main", "worker", ["crunch_numbers"], set()),
    ("queue_put", "cpu", "main", "worker", ["crunch_numbers"], set()),
    ("mp_process_join", "subprocess", "child", None, ["long_task"], set()),
    ("shell_launcher", "sleep", "main", "MainThread", ["poll_for_work"], set()),
    ("mpirun_launcher", "sleep", "rank 0", "MainThread", ["poll_for_work"], set()),
    ("accelerate_launcher", "sleep", "main", "MainThread", ["poll_for_work"], set()),
    # the training loop runnable in 40% of the samples (throttled, 0.00 s of CPU) and in DataLoader
    # frames in all: its wait is the batch, not the socket it was caught reading (was "network")
    ("dataloader_quota_main_runnable", "cpu", "dataloader-worker", None, ["throttled by its cgroup CPU quota"],
     set()),
    # --- measured on H200 GPUs ---
    ("gpu_matmul", "cuda", "main", "MainThread", ["SM activity 96", "GPU-bound"], {"gpu-bound"}),
    ("gpu_spin_kernel", "cuda", "main", "MainThread", ["looks hung", "SM activity 0.8%"], {"hung-kernel"}),
    ("gpu_starved_dataloader", "cpu", "dataloader-worker", None, ["decode_and_augment", "GPU 0 idle"],
     {"gpu-starved", "dataloader-starved"}),
    ("gpu_compile_autotune", "compilation", None, None, ["autotuning", "compiling"], {"compile-time", "compile-workers"}),
    ("jax_compile", "compilation", "main", "MainThread", ["compiling"], {"compile-time"}),
    ("nccl_hang", "collective", "rank 1", None, ["stuck_in_data_prep", "not compute"], {"collective-on-gpu"}),
]


@pytest.mark.parametrize("name,category,role,thread,fragments,findings", EXPECTED, ids=[e[0] for e in EXPECTED])
def test_capture_replays_to_the_measured_verdict(name, category, role, thread, fragments, findings):
    report = replay(name)
    assert report["verdict"]["category"] == category, report["verdict"]["summary"]
    if role:
        assert culprit_role(report) == role
    if thread:
        assert culprit_thread(report)["name"] == thread
    for fragment in fragments:
        assert fragment in text(report)
    assert findings <= finding_kinds(report)


def test_nccl_capture_names_both_ranks_gpus():
    report = replay("nccl_hang")
    gpu_text = [e for e in report["verdict"]["evidence"] if e.startswith("GPU ")]
    assert any(e.startswith("GPU 0") and "utilization 100%" in e for e in gpu_text)
    assert any(e.startswith("GPU 1") and "utilization 0%" in e for e in gpu_text)


def test_gpu_of_a_process_outside_nvmls_pid_view_comes_from_its_device_files():
    """In a container NVML's host PIDs match nothing: the open /dev/nvidiaN files still do."""
    from stalldiag.diagnosis.gpu import devices_of, visible_devices
    cap = load_report(str(CAPTURES / "nccl_hang.json"))
    rank1 = next(p for p in cap["processes"] if p["env"].get("RANK") == "1")
    assert devices_of(cap, rank1["pid"]) == [1]          # NVML's own answer
    cap["gpu"]["processes"] = {}
    for dev in cap["gpu"]["devices"]:
        dev["minor_number"] = dev["index"]
    # CUDA opens every visible device node, so without NVML this is "may use"
    assert devices_of(cap, rank1["pid"]) == [0, 1]
    devices = cap["gpu"]["devices"]
    assert visible_devices({"CUDA_VISIBLE_DEVICES": "1"}, devices) == [1]
    assert visible_devices({"CUDA_VISIBLE_DEVICES": devices[0]["uuid"][:12]}, devices) == [0]
    assert visible_devices({}, devices) is None


def test_native_threads_are_shown_by_name_with_their_state():
    report = replay("nccl_hang")
    rank0 = next(p for p in report["processes"] if p["role"] == "rank 0")
    names = {t["name"]: t for t in rank0["threads"]}
    native = [n for n in names if n.startswith(("pt_nccl", "cuda-EvtHandlr", "pt_elastic", "pt_tcpstore"))]
    assert native, sorted(names)
    for name in native:
        assert names[name]["residency"], name   # /proc state even without Python frames


def test_mpi_ranks_come_from_open_mpi_variables():
    report = replay("mpirun_launcher")
    assert next(p for p in report["processes"] if p["pid"] == report["capture"]["request"]["pid"])["role"] == "launcher"
    assert [(r["rank"], r["local_rank"]) for r in report["ranks"]["rows"]] == [(0, 0), (1, 1)]


def test_slurm_saved_capture_replays_with_slurmstepd_as_launcher():
    """slurmstepd above the ranks is a launcher: the verdict is the collective, not a wait on a child."""
    from stalldiag.capture import load_report
    from stalldiag.report import build_report
    report = build_report(load_report(str(CAPTURES / "slurm_srun_ranks.json")))
    roles = {p["pid"]: p["role"] for p in report["processes"]}
    stepd = next(p for p in report["processes"] if p["comm"] == "slurmstepd")
    assert roles[stepd["pid"]] == "launcher"
    assert report["verdict"]["category"] == "collective"
    assert roles[report["verdict"]["pid"]] == "rank 1"


# Healthy loops whose 5 Hz /proc samples caught the training loop waiting in (almost) every
# sample: a DDP step handing its allreduce to gloo's threads, and a loop paced by its input
# whose period the fixed-rate sampler aliased with.  Both were called stalls ("likely deadlock",
# "waiting on a thread that sleeps", no progress); the scheduler's accounting says they compute.
@pytest.mark.parametrize("name", ["ddp_gloo_healthy_caught_asleep", "paced_training_aliased"])
def test_loop_caught_waiting_in_samples_computes_by_the_scheduler(name):
    report = replay(name)
    assert report["verdict"]["progress"]["state"] == "making progress", report["verdict"]["progress"]
    assert report["verdict"]["category"] == "cpu", report["verdict"]["summary"]
    assert culprit_thread(report)["name"] == "MainThread"
    assert "deadlock" not in finding_kinds(report)
    # what the samples said of it: asleep in 80% or more, while it ran 30% of the window or more
    capture = load_report(str(CAPTURES / (name + ".json")))
    pid, tid = report["verdict"]["pid"], report["verdict"]["tid"]
    raw = next(t for p in capture["processes"] if p["pid"] == pid for t in p["threads"] if t["tid"] == tid)
    asleep = sum(1 for s in raw["samples"] if s[1] == "S") / len(raw["samples"])
    assert asleep >= 0.8 and raw["sched"]["run_ns"] / 1e9 >= 0.3 * capture["window"]["duration_s"]
