#!/usr/bin/env python3
"""Issue 15 bench: coverage, wall time and stalldiag's own CPU on node-sized trees.

For each tree size (bench/targets/mixed_tree.py: idle, waiting, computing and
reading threads) it runs `stalldiag inspect ROOT --children --duration W -o x.json`
--runs times and records: CPU of stalldiag + its py-spy children (os.wait4),
wall - window, processes in the report, processes with Python stacks, how each
process's stacks were sampled (a rate, or snapshots), and how often the target
was stopped (voluntary stops are counted from /proc/PID/status of every
thread: a tracer stop or SIGSTOP shows as state T/t, sampled every 20 ms).

--breakdown also measures, on the same tree, where the CPU goes: the
interpreter and imports alone, stalldiag with py-spy disabled (/proc part),
and py-spy alone taking the same samples (the floor).

What is timed is stalldiag as the README installs it: `pip install .` into a
fresh venv, run as its `stalldiag` console script (--install venv, the
default).  --install checkout runs `python3 -m stalldiag` from this checkout
in the bench's own interpreter instead: every .pth file of that interpreter's
site-packages (an editable install's finder, a sandbox's CA hook) then runs at
every start, which is the environment's cost, not stalldiag's.

    python3 bench/scale.py --sizes 8x12,160x8 --runs 3 --out bench/results-scale.json
    python3 bench/scale.py --sizes 8x12 --runs 1 --breakdown
"""
import argparse
import datetime
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from overhead import (descendants, finish, finish_target, log, read_line, spawn,  # noqa: E402
                      system_busy_s, cleanup_all, machine, loadavg)


# How stalldiag is started: set by install() before anything is timed.
PYTHON = sys.executable           # the interpreter stalldiag runs in
STALLDIAG = [sys.executable, "-m", "stalldiag"]


def env():
    e = dict(os.environ)
    if PYTHON == sys.executable:   # the checkout, not an installed copy
        e["PYTHONPATH"] = REPO + (os.pathsep + e["PYTHONPATH"] if e.get("PYTHONPATH") else "")
    return e


def install(how, workdir):
    """Point PYTHON/STALLDIAG at the stalldiag to time; returns a line saying which."""
    global PYTHON, STALLDIAG
    if how == "checkout":
        compile_package()
        return "%s -m stalldiag from %s" % (sys.executable, REPO)
    venv = os.path.join(workdir, "venv")
    subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    subprocess.run([os.path.join(venv, "bin", "pip"), "install", "-q", REPO], check=True,
                   stdout=subprocess.DEVNULL)
    PYTHON = os.path.join(venv, "bin", "python")
    STALLDIAG = [os.path.join(venv, "bin", "stalldiag")]
    return "pip install . into a fresh venv, run as %s" % STALLDIAG[0]


def start_tree(n, threads):
    tree = spawn([sys.executable, os.path.join(HERE, "targets", "mixed_tree.py"), str(n), str(threads)],
                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=REPO)
    line = read_line(tree.stdout, 180)
    if not line.startswith("READY"):
        finish_target(tree)
        raise RuntimeError("tree did not come up: %r" % line)
    time.sleep(1.0)
    return tree


class StopWatch(threading.Thread):
    """Counts target threads seen stopped (state T or t) during the run."""

    def __init__(self, pids):
        super().__init__(daemon=True)
        self.pids, self.stops, self.reads, self.done = pids, 0, 0, False

    def run(self):
        while not self.done:
            for pid in self.pids:
                try:
                    tasks = os.listdir("/proc/%d/task" % pid)
                except OSError:
                    continue
                for tid in tasks:
                    try:
                        with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                            state = f.read().rsplit(")", 1)[1].split()[0]
                    except (OSError, IndexError):
                        continue
                    self.reads += 1
                    if state in ("T", "t"):
                        self.stops += 1
            time.sleep(0.02)


def timed(argv, timeout, extra_env=None):
    """Run argv; return (rc, cpu_s including waited-for children, wall_s)."""
    e = env()
    e.update(extra_env or {})
    t0 = time.monotonic()
    p = spawn(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=REPO, env=e)
    rc, cpu, timed_out = finish(p, timeout)
    err = p.stderr.read().decode(errors="replace")[-400:]
    p.stderr.close()
    return rc, cpu, time.monotonic() - t0, ("timed out " if timed_out else "") + (err if rc else "")


def inspect_once(tree, window, workdir, extra_env=None, stopwatch=True):
    pids = [tree.pid] + descendants(tree.pid)
    out = os.path.join(workdir, "report.json")
    if os.path.exists(out):
        os.unlink(out)
    watch = StopWatch(pids) if stopwatch else None
    if watch:
        watch.start()
    busy0 = system_busy_s()
    rc, cpu, wall, err = timed(STALLDIAG + ["inspect", str(tree.pid), "--children",
                                            "--duration", str(window), "-o", out], window * 4 + 60, extra_env)
    busy = system_busy_s() - busy0
    if watch:
        watch.done = True
        watch.join()
    row = {"rc": rc, "cpu_s": round(cpu, 3) if cpu is not None else None, "wall_s": round(wall, 2),
           "wall_over_window_s": round(wall - window, 2), "processes_running": len(pids),
           "machine_busy_pct": round(100 * busy / wall, 1)}
    if watch:
        row.update(stopped_samples=watch.stops, stop_checks=watch.reads)
    if err:
        row["error"] = err
    if os.path.exists(out):
        with open(out) as f:
            rep = json.load(f)
        procs = rep.get("processes") or []
        with_stacks = [p for p in procs if p.get("python")]
        rates = sorted({p.get("stack_rate_hz") for p in procs} - {None})
        row.update(processes_reported=len(procs), processes_with_stacks=len(with_stacks),
                   missing_stacks=[p["pid"] for p in procs if p not in with_stacks][:10],
                   stack_rates_hz=rates, window=rep.get("window"),
                   sampling={"recorded": sum(1 for p in procs if p.get("stack_rate_hz")),
                             "snapshots": sum(len(p.get("stack_snapshots") or []) for p in procs),
                             "per_process": {p["pid"]: [p.get("stack_rate_hz"), len(p.get("stack_snapshots") or [])]
                                             for p in procs}},
                   limitations=rep.get("limitations") or [])
    return row


def pyspy_floor(sampling, window, workdir):
    """py-spy alone taking the samples stalldiag took: one `record --nonblocking` per recorded
    process at its rate for the window, one `dump --nonblocking` per snapshot: what those
    stacks cost whoever drives py-spy.  sampling: {pid: [rate or None, snapshots]}."""
    binary = pyspy_binary()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    procs = []
    for pid, (rate, snapshots) in sampling.items():
        if rate:
            procs.append(subprocess.Popen(
                [binary, "record", "--pid", str(pid), "--threads", "--idle", "--nonblocking",
                 "--rate", str(rate), "--duration", str(int(window)), "--format", "raw",
                 "-o", os.path.join(workdir, "floor-%s.txt" % pid)],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        for _ in range(snapshots):
            subprocess.run([binary, "dump", "--pid", str(pid), "--nonblocking"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for p in procs:
        p.wait()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return {"recorded": sum(1 for r, _n in sampling.values() if r),
            "snapshots": sum(n for _r, n in sampling.values()), "cpu_s": round(cpu, 3),
            "wall_s": round(time.monotonic() - t0, 2)}


def pyspy_binary():
    """The py-spy stalldiag runs (beside its Python, else PATH): not a pyenv shim on PATH,
    whose bash and `pyenv exec` cost more than py-spy itself."""
    return subprocess.run([PYTHON, "-c", "from stalldiag.probes.stacks import find_pyspy; print(find_pyspy())"],
                          env=env(), capture_output=True, text=True, check=True).stdout.strip()


def compile_package():
    """Byte-compile stalldiag as `pip install` does: with PYTHONDONTWRITEBYTECODE set (this
    machine sets it) every run would otherwise compile the changed modules again (~35 ms)."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", os.path.join(REPO, "stalldiag")],
                   stdout=subprocess.DEVNULL, check=True)


def breakdown(tree, window, workdir):
    parts = {}
    rc, cpu, wall, _ = timed([PYTHON, "-c", "pass"], 30)
    parts["python_start_s"] = round(cpu, 3)
    rc, cpu, wall, _ = timed([PYTHON, "-c", "import stalldiag.cli, stalldiag.session"], 30)
    parts["python_start_and_imports_s"] = round(cpu, 3)
    row = inspect_once(tree, window, workdir, {"STALLDIAG_PYSPY": "/nonexistent"}, stopwatch=False)
    parts["stalldiag_without_pyspy_s"] = row["cpu_s"]
    row = inspect_once(tree, window, workdir, stopwatch=False)
    parts["stalldiag_total_s"] = row["cpu_s"]
    parts["pyspy_share_s"] = round(row["cpu_s"] - parts["stalldiag_without_pyspy_s"], 3)
    parts["pyspy_alone"] = pyspy_floor((row.get("sampling") or {}).get("per_process") or {}, window, workdir)
    return parts


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="8x12,160x8,256x4", help="NxT,... processes x threads")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--window", type=float, default=10)
    ap.add_argument("--breakdown", action="store_true")
    ap.add_argument("--install", choices=("venv", "checkout"), default="venv",
                    help="time stalldiag pip-installed in a fresh venv (default) or run from this checkout")
    ap.add_argument("--out")
    args = ap.parse_args()
    workdir = tempfile.mkdtemp(prefix="stalldiag-scale-")
    installed = install(args.install, workdir)
    log("timing: " + installed)
    results = {"machine": machine(), "date": datetime.date.today().isoformat(), "stalldiag": installed,
               "commit": subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"],
                                        capture_output=True, text=True).stdout.strip(),
               "window_s": args.window, "load_start": loadavg(), "sizes": []}
    try:
        for size in args.sizes.split(","):
            n, t = (int(x) for x in size.split("x"))
            log("tree %dx%d: starting" % (n, t))
            tree = start_tree(n, t)
            entry = {"processes": n, "threads": t, "runs": []}
            try:
                if args.breakdown:
                    entry["breakdown"] = breakdown(tree, args.window, workdir)
                    log("  breakdown %s" % json.dumps(entry["breakdown"]))
                for i in range(args.runs):
                    row = inspect_once(tree, args.window, workdir)
                    entry["runs"].append(row)
                    sampling = row.get("sampling") or {}
                    log("  run %d: cpu %s s, wall-window %s s, reported %s/%s, stacks %s, recorded %s at %s Hz, "
                        "snapshots %s, stops %s, busy %s%% %s"
                        % (i + 1, row.get("cpu_s"), row.get("wall_over_window_s"), row.get("processes_reported"),
                           row.get("processes_running"), row.get("processes_with_stacks"), sampling.get("recorded"),
                           row.get("stack_rates_hz"), sampling.get("snapshots"), row.get("stopped_samples"),
                           row.get("machine_busy_pct"), row.get("error", "")))
            finally:
                finish_target(tree)
            runs = [r for r in entry["runs"] if r.get("cpu_s") is not None]
            if runs:
                entry["summary"] = {k: [min(r[k] for r in runs), max(r[k] for r in runs)]
                                    for k in ("cpu_s", "wall_over_window_s", "processes_with_stacks")}
            results["sizes"].append(entry)
    finally:
        cleanup_all()
        shutil.rmtree(workdir, ignore_errors=True)
    results["load_end"] = loadavg()
    text = json.dumps(results, indent=1)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    for entry in results["sizes"]:
        print("%dx%d: %s" % (entry["processes"], entry["threads"], json.dumps(entry.get("summary"))))


if __name__ == "__main__":
    main()
