"""Issue 15: a node-sized tree is covered whole, on real processes.

Every Python process of a 120-process tree gets Python stacks (no cap on
recorders: a large tree lowers the sampling rate, never the process count),
the report says which rate each process got, and no py-spy is left behind.
Timing and CPU are measured in bench/scale.py, not asserted here.
"""
import json
import os
import subprocess
import sys
import time

from conftest import run_stalldiag

from stalldiag.probes.threads import FULL_READ_EVERY, ThreadSampler
from stalldiag import targets


def _tree(pid):
    return [pid] + targets.descendants(pid)


def _pyspy_children_of(pids):
    """py-spy processes still attached to any of pids."""
    left = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % entry, "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"py-spy") and b"--pid" in argv:
            target = argv[argv.index(b"--pid") + 1]
            if target.isdigit() and int(target) in pids:
                left.append(int(entry))
    return left


def test_every_process_of_a_120_process_tree_has_stacks(launch, tmp_path):
    w = launch("many_processes.py", 120, settle=1.0)
    tree = _tree(w.pid)
    assert len(tree) == 120
    out = tmp_path / "r.json"
    proc = run_stalldiag("inspect", w.pid, "--children", "--duration", 6, "-o", out, timeout=90)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    by_pid = {p["pid"]: p for p in report["processes"]}
    assert set(tree) <= set(by_pid)
    without = [pid for pid in tree if not by_pid[pid]["python"]]
    assert without == [], [(pid, by_pid[pid]["python_note"]) for pid in without[:5]]
    # the rate each process got is in the report: idle sleepers get ~10 samples over a
    # 6 s window (2 Hz, below the asked 3 Hz), and the limitations say so
    rates = {pid: by_pid[pid]["stack_rate_hz"] for pid in tree}
    assert set(rates.values()) == {2}, rates
    assert any("lowered for 120 of 120 processes: 120 at 2 Hz" in line for line in report["limitations"]), \
        report["limitations"]
    # the stacks are the workload's own code, for every process
    capture = report["capture"]
    files = {f[1] for f in capture["frames"]}
    assert any(path.endswith("many_processes.py") for path in files)
    for entry in capture["processes"]:
        if entry["pid"] in tree:
            assert any(t.get("stack_samples") for t in entry["threads"]), entry["pid"]
    assert _pyspy_children_of(set(tree)) == []


def test_a_blocked_thread_that_has_not_run_is_repeated_and_a_woken_one_read_again():
    """The sampler skips stat+syscall for a blocked thread whose schedstat did not move,
    and still sees it move to another call as soon as it runs."""
    code = ("import os, sys, time\n"
            "r = int(sys.argv[1])\n"
            "print('READY', flush=True)\n"
            "os.read(r, 1)\n"
            "time.sleep(100)\n")
    r, w = os.pipe()
    child = subprocess.Popen([sys.executable, "-c", code, str(r)], pass_fds=(r,), stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().startswith("READY")
        time.sleep(0.3)
        sampler = ThreadSampler(time.monotonic())
        sampler.watch(targets.process_key(child.pid))
        record = sampler.records[targets.process_key(child.pid)]
        repeated = []
        for _ in range(FULL_READ_EVERY + 2):
            sampler.tick()
            repeated.append(record.threads[child.pid].stale)
            time.sleep(0.05)
        thread = record.threads[child.pid]
        assert [s[2] for s in thread.samples] == ["read"] * (FULL_READ_EVERY + 2)
        # repeated from the last full read, and read in full again after FULL_READ_EVERY ticks
        assert max(repeated) == FULL_READ_EVERY - 1 and repeated.count(0) >= 2, repeated
        os.write(w, b"x")
        time.sleep(0.3)
        sampler.tick()
        assert thread.samples[-1][1] == "S" and thread.samples[-1][2] == "clock_nanosleep"
    finally:
        child.kill()
        child.wait()
        os.close(r)
        os.close(w)
