"""What the tests share besides fixtures: the checkout's paths, starting and reading real
processes, running stalldiag, and reading what a verdict says.  Fixtures and hooks are in
conftest.py (the layer a test is in comes from its folder: tests/unit, tests/replay, tests/live).
"""
import json
import os
import shutil
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
WORKLOADS = FIXTURES / "workloads"
CAPTURES = ROOT / "fixtures" / "captures"


class Workload:
    def __init__(self, popen):
        self.popen = popen
        self.pid = popen.pid

    def thread_ids(self):
        return sorted(int(t) for t in os.listdir("/proc/%d/task" % self.pid))


def _wait_ready(popen, timeout=60):
    """Read the workload's stdout in a thread (select() cannot see lines already buffered)."""
    lines = queue.Queue()

    def reader():
        for line in popen.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=reader, daemon=True).start()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=0.2)
        except queue.Empty:
            continue
        if line is None:
            break
        if line.startswith("READY"):
            return
    raise AssertionError("workload did not become ready (exit code %s)" % popen.poll())


def kill_groups(popens):
    """SIGKILL each workload's process group (started with start_new_session) and reap it."""
    for popen in popens:
        try:
            os.killpg(popen.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        popen.wait()


def wait_for(predicate, timeout=30, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError("timed out waiting for " + what)


def children_of(pid):
    with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
        return [int(c) for c in f.read().split()]


def wchans(pid):
    """The wchan of every thread of pid ('' for a thread that ended)."""
    out = []
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/wchan" % (pid, tid)) as f:
                out.append(f.read())
        except OSError:
            out.append("")
    return out


def run_stalldiag(*args, timeout=120):
    proc = subprocess.run([sys.executable, "-m", "stalldiag"] + [str(a) for a in args],
                          capture_output=True, text=True, timeout=timeout, cwd=str(ROOT))
    return proc


def inspect_json(pid, *args, duration=2):
    proc = run_stalldiag("inspect", pid, "--duration", duration, "--json", *args)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    _calibration_record(report)
    return report


# STALLDIAG_CALIBRATION_LOG=FILE: each verdict a live test asked for, with that test's outcome,
# one JSON line each (tools/calibration.py turns them into right/wrong per confidence level).
_CALIBRATION = os.environ.get("STALLDIAG_CALIBRATION_LOG")
_verdicts_of_test = []


def _calibration_record(report):
    if _CALIBRATION:
        verdict = report.get("verdict") or {}
        _verdicts_of_test.append({key: verdict.get(key) for key in ("category", "confidence", "summary")}
                                 | {"progress": (verdict.get("progress") or {}).get("state")})


def process_of(report, pid):
    return next(p for p in report["processes"] if p["pid"] == pid)


def thread_named(report, pid, name):
    return next(t for t in process_of(report, pid)["threads"] if t["name"] == name)


def assert_one_line_error(proc, code, fragment):
    assert proc.returncode == code, (proc.returncode, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("stalldiag: error: ")
    assert fragment in lines[0]
    assert "Traceback" not in proc.stderr


# --- what a verdict says, and a process read by hand (the held-out sets) -------------------------

def said(report):
    """Everything the verdict says: summary, evidence, chain and findings."""
    verdict = report["verdict"]
    parts = [verdict["summary"]] + list(verdict["evidence"]) + [report.get("chain_text") or ""]
    parts += [f.get("summary", "") for f in report.get("findings", [])]
    return "\n".join(parts)


def summary_and_evidence(report):
    return "\n".join([report["verdict"]["summary"]] + list(report["verdict"]["evidence"]))


def progress_state(report):
    return report["verdict"]["progress"]["state"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def kill_pids(pids):
    for pid in pids:
        try:
            os.kill(pid, signal.SIGCONT)
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def other_tids(pid):
    return [int(t) for t in os.listdir("/proc/%d/task" % pid) if int(t) != pid]


def wchan(pid, tid=None):
    with open("/proc/%d/task/%d/wchan" % (pid, tid or pid)) as f:
        return f.read()


def rmdir_soon(path):
    for _ in range(50):
        try:
            os.rmdir(path)
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.1)    # the killed workload is still leaving it


# A tracer that holds its target in a ptrace stop (python -c TRACER PID): prints READY, then sleeps.
TRACER = r"""
import ctypes, os, sys, time
PTRACE_SEIZE, PTRACE_INTERRUPT = 0x4206, 0x4207
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
pid = int(sys.argv[1])
for request in (PTRACE_SEIZE, PTRACE_INTERRUPT):
    if libc.ptrace(request, pid, None, None) != 0:
        sys.exit("ptrace %x: %s" % (request, os.strerror(ctypes.get_errno())))
os.waitpid(pid, 0x40000000)   # __WALL: the tracee is now in a ptrace stop
print("READY", os.getpid(), flush=True)
time.sleep(120)
"""


# --- the reproductions (fixtures/repro/manifest.json) ------------------------------------------

# Rows whose recorded verdict is still wrong, and why (strict: a fix makes the test say so).
KNOWN_WRONG = {
    "gamma_pool_worker_oom_killed": "a Pool whose worker the OOM killer took mid-task (SIGKILL) while holding the "
                                    "pool's task-queue lock: the handler threads wait on that SemLock, said as a "
                                    "lock wait at medium (its writer files the dead worker, subprocess)",
    "dataloader_exit_hang_queue_feeder_full_pipe": "the main process's queue feeder waits on the queue's write lock, "
                                                   "a process-shared lock a terminated worker held: said as a lock "
                                                   "wait (medium); the reporter files the undrained pipe behind it "
                                                   "as I/O",
    "gpu_cuda_launch_blocking_left_set": "CUDA_LAUNCH_BLOCKING set inside the script (os.environ before torch is "
                                         "imported) is not in /proc/PID/environ, and a host thread waiting on the "
                                         "autograd engine while the GPU idles reads as launch-bound CPU work",
    "blend_empty_shard_spin": "a DataLoader worker spinning in a pure-Python generator over several lines, "
                              "with library calls between, moves like a worker preprocessing a heavy batch: "
                              "'making progress' (its category, cpu, is right)",
    "ckpt_slow_storage": "a checkpoint write inside one writev() for the whole window to storage that moves "
                         "slowly: nothing the job's processes count advances, so 'no progress seen' (truth: "
                         "slow but advancing); the category, io, is right",
    "joinable_queue_dead_worker": "JoinableQueue.join() whose workers exited: said 'waits on a lock ... the "
                                  "child that shared it exited' (waker-exited, subprocess); the reporter files "
                                  "the wait for a task_done that cannot come under locks",
    # the tenth round's misses on its first run (docs/validation.md), until each is fixed
    "inductor_subproc_pool_sidecar_died_read_thread_never_eof": "first run: subprocess, high (truth: compilation)",
    "manager_dict_fine_grained_updates_slow_pool": "first run: cpu, medium (truth: network, slow)",
    "task_queue_nested_blocking_result_all_workers_deadlock": "first run: sleep, medium (truth: locks)",
    # the eleventh round's misses on its first run (docs/validation.md), until each is fixed
    "multicore_experiment_pool_worker_oom_killed_hang": "first run: subprocess, high, a lost task (truth: locks)",
    # the twelfth round's misses on its first run (docs/validation.md), until each is fixed
    "pycocoevalcap_meteor_slow_per_sample_roundtrip_to_jar": "first run: cpu, medium, making progress (truth: "
                                                             "subprocess, slow)",
    "dask_worker_scheduler_file_typo_json_load_robust_waits_forever": "first run: network, medium, a retry loop "
                                                                      "(truth: sleep)",
}


# the CPythons a target may run under (pyenv keeps them)
VERSIONS = ("3.8", "3.9", "3.10", "3.11", "3.12", "3.13")


def interpreter(minor):
    """The newest installed pyenv CPython of that minor version, or None."""
    if shutil.which("pyenv") is None:
        return None
    out = subprocess.run(["pyenv", "versions", "--bare"], capture_output=True, text=True).stdout.split()
    found = sorted((v for v in out if v.startswith(minor + ".") and v.replace(".", "").isdigit()),
                   key=lambda v: tuple(int(x) for x in v.split(".")))
    if not found:
        return None
    prefix = subprocess.run(["pyenv", "prefix", found[-1]], capture_output=True, text=True).stdout.strip()
    path = os.path.join(prefix, "bin", "python")
    return path if os.access(path, os.X_OK) else None


# Cases of the real-framework corpus (fixtures/real/) whose recorded verdict is still wrong, and why:
# a strict xfail in tests/replay/test_real_corpus_replay.py; never in the live layer's default set.
KNOWN_WRONG_CORPUS = {
    "requests_retry_backoff": "urllib3's Retry with back-off around a failing GET: the network's retry loop at "
                              "medium, sleep named as the alternative (the contested row; its writer files it "
                              "under sleep)",
}
