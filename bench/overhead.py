#!/usr/bin/env python3
"""Overhead bench for stalldiag (run by hand, not by the tests).

Part A: throughput of three targets with vs without an observer attached
(stalldiag sampled, stalldiag --syscalls exact, py-spy blocking, strace -f -c).
Part B: stalldiag's own cost (CPU, wall, completeness) on idle trees of
1, 8 and 64 processes with ~10 threads each.

    python3 bench/overhead.py            # full run, ~10-15 min on 2 cores
    python3 bench/overhead.py --quick    # ~3-4 min

See bench/README.md.  Prints a Markdown table and writes bench/results-<date>.json.
"""
import argparse
import datetime
import json
import os
import platform
import random
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
TARGET_DIR = os.path.join(HERE, "targets")

TARGETS = {
    "read_loop": {"script": "read_loop.py", "unit": "preads", "warmup": 1.5},
    # pinned to one CPU by default: unpinned, its rate depends 5x on whether the two
    # threads share a CPU (fast hand-off) or wake each other across CPUs (slow on a VM),
    # and any observer's load flips that placement, swamping the effect being measured
    "futex_pingpong": {"script": "futex_pingpong.py", "unit": "round trips", "warmup": 1.5, "pin": {0}},
    "torch_train": {"script": "torch_train.py", "unit": "steps", "warmup": 3.0},
}
TARGET_ALIASES = {"a": "read_loop", "b": "futex_pingpong", "c": "torch_train"}

OBSERVERS = ["stalldiag", "stalldiag-exact", "py-spy", "strace"]
OBSERVER_LABELS = {
    "stalldiag": "stalldiag (sampled)",
    "stalldiag-exact": "stalldiag --syscalls exact",
    "py-spy": "py-spy record --rate 100 (blocking)",
    "strace": "strace -f -c",
}
OBSERVER_ALIASES = {"1": "stalldiag", "2": "stalldiag-exact", "3": "py-spy", "4": "strace",
                    "exact": "stalldiag-exact", "pyspy": "py-spy", "py_spy": "py-spy"}

# background CPU (% of one core, outside target and observer) above which a row is flagged
BACKGROUND_WARN_PCT = 20

# pgids of everything we started, killed at exit whatever happens
_GROUPS = set()


def log(msg):
    sys.stderr.write("[%s] %s\n" % (time.strftime("%H:%M:%S"), msg))
    sys.stderr.flush()


# ---------------------------------------------------------------- processes

def spawn(argv, **kw):
    """Start argv in its own session/process group (so it can be killed as a group)."""
    kw.setdefault("stdin", subprocess.DEVNULL)
    p = subprocess.Popen(argv, start_new_session=True, **kw)
    _GROUPS.add(p.pid)
    return p


def kill_group(pgid, sig=signal.SIGKILL):
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def reap(proc, timeout):
    """Wait for proc with os.wait4 so we get its rusage (which includes the
    children it waited for, e.g. stalldiag's py-spy).  Returns (rc, cpu_s, timed_out)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
        except ChildProcessError:
            return proc.returncode, None, False
        if pid:
            rc = os.waitstatus_to_exitcode(status)
            proc.returncode = rc
            return rc, ru.ru_utime + ru.ru_stime, False
        if time.monotonic() >= deadline:
            return None, None, True
        time.sleep(0.05)


def finish(proc, timeout):
    """reap(); on timeout kill the whole group and reap again."""
    rc, cpu, timed_out = reap(proc, timeout)
    if timed_out:
        kill_group(proc.pid, signal.SIGTERM)
        rc, cpu, _ = reap(proc, 3)
        if rc is None:
            kill_group(proc.pid)
            rc, cpu, _ = reap(proc, 5)
    kill_group(proc.pid)  # leftovers (e.g. a py-spy grandchild), harmless if gone
    _GROUPS.discard(proc.pid)
    return rc, cpu, timed_out


def cleanup_all():
    for pgid in list(_GROUPS):
        kill_group(pgid, signal.SIGKILL)
    for pgid in list(_GROUPS):
        try:
            os.waitpid(pgid, os.WNOHANG)
        except ChildProcessError:
            pass
    _GROUPS.clear()


def children_of(pid):
    out = []
    try:
        tasks = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return out
    for tid in tasks:
        try:
            with open("/proc/%d/task/%s/children" % (pid, tid)) as f:
                out.extend(int(x) for x in f.read().split())
        except OSError:
            pass
    return out


def descendants(pid):
    seen, todo = [], [pid]
    while todo:
        p = todo.pop()
        for c in children_of(p):
            if c not in seen:
                seen.append(c)
                todo.append(c)
    return seen


def comm(pid):
    try:
        with open("/proc/%d/comm" % pid) as f:
            return f.read().strip()
    except OSError:
        return ""


def tids(pid):
    try:
        return [int(t) for t in os.listdir("/proc/%d/task" % pid)]
    except OSError:
        return []


def traced(pid, tid):
    try:
        with open("/proc/%d/task/%d/status" % (pid, tid)) as f:
            for line in f:
                if line.startswith("TracerPid:"):
                    return int(line.split()[1]) != 0
    except OSError:
        return True  # gone: nothing to wait for
    return False


CLK_TCK = os.sysconf("SC_CLK_TCK")


def proc_cpu_s(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime + stime
    except (OSError, IndexError, ValueError):
        return 0.0


def tree_cpu_s(pid):
    return sum(proc_cpu_s(p) for p in [pid] + descendants(pid)) if pid else 0.0


def system_busy_s():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    return (sum(v) - v[3] - v[4]) / CLK_TCK  # all but idle and iowait


class CpuWindow:
    """CPU used during an interval by the whole machine, the target tree and the
    observer tree; background = the rest (other users of the machine + this bench)."""

    def __init__(self, target_pid, observer_pid=None):
        self.target_pid, self.observer_pid = target_pid, observer_pid
        self.t0 = time.monotonic()
        self.s0 = (system_busy_s(), tree_cpu_s(target_pid), tree_cpu_s(observer_pid))

    def end(self):
        dt = time.monotonic() - self.t0
        s1 = (system_busy_s(), tree_cpu_s(self.target_pid), tree_cpu_s(self.observer_pid))
        busy, target, observer = (b - a for a, b in zip(self.s0, s1))
        pct = lambda x: round(100 * x / dt, 1) if dt > 0 else None  # noqa: E731
        return {"system_pct": pct(busy), "target_pct": pct(target), "observer_tree_pct": pct(observer),
                "background_pct": pct(max(0.0, busy - target - observer))}


def stalldiag_cmd():
    return [sys.executable, "-m", "stalldiag"]


def child_env():
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


# ---------------------------------------------------------------- progress

def read_progress(path):
    """(count, monotonic) from a target's progress file; retried on a torn read."""
    for _ in range(20):
        try:
            with open(path, "rb") as f:
                parts = f.read().split()
            if len(parts) == 2:
                return int(parts[0]), float(parts[1])
        except (OSError, ValueError):
            pass
        time.sleep(0.01)
    raise RuntimeError("cannot read progress file %s" % path)


class Target:
    def __init__(self, name, workdir, pin=None):
        self.pin = pin
        self.name = name
        self.spec = TARGETS[name]
        self.progress = os.path.join(workdir, "progress-%s" % name)
        self.logpath = os.path.join(workdir, "target-%s.log" % name)
        self.proc = None

    def start(self):
        self._log = open(self.logpath, "wb")
        cpus = self.pin
        self.proc = spawn([sys.executable, os.path.join(TARGET_DIR, self.spec["script"]), self.progress],
                          stdout=self._log, stderr=subprocess.STDOUT, cwd=REPO,
                          preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None)
        deadline = time.monotonic() + 60
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError("target %s exited with %s: %s" % (self.name, self.proc.returncode,
                                                                     self.log_tail()))
            try:
                if os.path.exists(self.progress) and read_progress(self.progress)[0] > 0:
                    break
            except RuntimeError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("target %s made no progress in 60 s" % self.name)
            time.sleep(0.1)
        time.sleep(self.spec["warmup"])

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def mark(self):
        return read_progress(self.progress)

    def log_tail(self):
        try:
            with open(self.logpath, "rb") as f:
                return f.read()[-400:].decode(errors="replace")
        except OSError:
            return ""

    def stop(self):
        if self.proc is not None:
            finish_target(self.proc)
            self._log.close()


def finish_target(proc):
    kill_group(proc.pid, signal.SIGKILL)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass
    _GROUPS.discard(proc.pid)


def rate(m0, m1):
    dc, dt = m1[0] - m0[0], m1[1] - m0[1]
    return dc / dt if dt > 0 else float("nan"), dt


# ---------------------------------------------------------------- observers

class Observer:
    """One run of one observer against a target, for an interval of T seconds."""

    NOT_AVAILABLE = "n/a"

    def __init__(self, kind, pid, interval, workdir):
        self.kind = kind
        self.pid = pid
        self.interval = interval
        self.workdir = workdir
        self.proc = None
        self.errpath = os.path.join(workdir, "observer.err")
        self.report_path = os.path.join(workdir, "observer.json")
        # stalldiag and py-spy stop by themselves: give them a window that covers
        # the time to attach plus the measured interval plus a tail.
        self.own_duration = interval + 1.5

    def argv(self):
        T = "%.1f" % self.own_duration
        if self.kind == "stalldiag":
            return stalldiag_cmd() + ["inspect", str(self.pid), "--children", "--duration", T,
                                      "-o", self.report_path]
        if self.kind == "stalldiag-exact":
            return stalldiag_cmd() + ["inspect", str(self.pid), "--children", "--duration", T,
                                      "--syscalls", "exact", "-o", self.report_path]
        if self.kind == "py-spy":
            return ["py-spy", "record", "--pid", str(self.pid), "--subprocesses", "--rate", "100",
                    "--duration", str(int(round(self.own_duration))), "-o", "/dev/null", "--format", "raw"]
        if self.kind == "strace":
            argv = ["strace", "-f", "-c", "-o", os.path.join(self.workdir, "strace.out"), "-p", str(self.pid)]
            for child in descendants(self.pid):
                argv += ["-p", str(child)]
            return argv
        raise ValueError(self.kind)

    def start(self):
        for p in (self.report_path, self.errpath):
            try:
                os.unlink(p)
            except OSError:
                pass
        self._err = open(self.errpath, "wb")
        self.started = time.monotonic()
        self.proc = spawn(self.argv(), stdout=subprocess.DEVNULL, stderr=self._err, cwd=REPO, env=child_env())

    def wait_attached(self, settle):
        """Wait until the observer is really attached. Returns None or an error string."""
        deadline = time.monotonic() + 20
        if self.kind.startswith("stalldiag"):
            # the window starts right before stalldiag launches py-spy: wait for that child
            while not any(comm(c) == "py-spy" for c in descendants(self.proc.pid)):
                if self.proc.poll() is not None:
                    return self.failure()
                if time.monotonic() > deadline:
                    break  # no py-spy (e.g. not installed): fall back on the fixed settle
                time.sleep(0.05)
        elif self.kind == "strace":
            pids = [self.pid] + descendants(self.pid)
            while not all(traced(p, t) for p in pids for t in tids(p)):
                if self.proc.poll() is not None:
                    return self.failure()
                if time.monotonic() > deadline:
                    return "strace did not attach to every thread within 20 s"
                time.sleep(0.05)
        if self.kind == "py-spy":
            settle += 0.5  # py-spy finds the subprocesses and starts sampling
        time.sleep(settle)
        if self.proc.poll() is not None:
            return self.failure()
        return None

    def failure(self):
        rc, cpu, _ = finish(self.proc, 5)
        self._err.close()
        err = self.stderr_tail()
        if self.kind == "stalldiag-exact" and rc == 2 and "no such option" in err.lower():
            return self.NOT_AVAILABLE
        return "exited early with %s: %s" % (rc, err.strip()[-300:] or "(no stderr)")

    def stderr_tail(self):
        try:
            with open(self.errpath, "rb") as f:
                return f.read()[-2000:].decode(errors="replace")
        except OSError:
            return ""

    def still_running(self):
        return self.proc.poll() is None

    def stop(self):
        """Let the observer finish (strace: SIGINT). Returns a dict about the run."""
        info = {}
        if self.kind == "strace":
            try:
                os.kill(self.proc.pid, signal.SIGINT)
            except ProcessLookupError:
                pass
            timeout = 30
        else:
            timeout = max(30.0, self.own_duration * 3)
        rc, cpu, timed_out = finish(self.proc, timeout)
        self._err.close()
        wall = time.monotonic() - self.started
        info.update(rc=rc, observer_cpu_s=cpu, observer_wall_s=round(wall, 2))
        if timed_out:
            info["error"] = "observer did not finish within %.0f s; killed" % timeout
        elif rc not in (0, None) and not (self.kind == "strace" and rc in (0, 130, -2)):
            info["error"] = "exit %s: %s" % (rc, self.stderr_tail().strip()[-300:] or "(no stderr)")
        if self.kind.startswith("stalldiag") and os.path.exists(self.report_path):
            try:
                with open(self.report_path) as f:
                    rep = json.load(f)
                info["report"] = {"processes": len(rep.get("processes") or []),
                                  "rate_hz": (rep.get("window") or {}).get("rate_hz"),
                                  "samples": (rep.get("window") or {}).get("samples"),
                                  "limitations": rep.get("limitations") or [],
                                  "syscall_backend": (rep.get("syscall_counts") or {}).get("backend")}
            except (OSError, ValueError) as exc:
                info["report_error"] = str(exc)
        return info


def probe_exact_support(workdir):
    """Is `--syscalls exact` accepted at all?  Tried once on a throwaway `sleep`."""
    sleeper = spawn(["sleep", "60"])
    try:
        r = subprocess.run(stalldiag_cmd() + ["inspect", str(sleeper.pid), "--duration", "0",
                                              "--syscalls", "exact", "-o", os.path.join(workdir, "probe.json")],
                           cwd=REPO, env=child_env(), capture_output=True, text=True, timeout=120)
        if r.returncode == 2 and "no such option" in (r.stderr + r.stdout).lower():
            return False, "stalldiag rejects --syscalls (exit 2, no such option)"
        return True, "probe exit %d" % r.returncode
    except subprocess.TimeoutExpired:
        return True, "probe timed out (option accepted)"
    finally:
        finish_target(sleeper)


# ---------------------------------------------------------------- part A

def run_part_a(args, workdir, exact_ok, exact_note):
    rows = []
    for tname in args.targets:
        log("target %s: starting" % tname)
        pin = TARGETS[tname].get("pin") if args.pin == "default" else args.pin
        target = Target(tname, workdir, pin=pin)
        try:
            target.start()
        except Exception as exc:
            log("target %s failed to start: %s" % (tname, exc))
            for obs in args.observers:
                rows.append({"target": tname, "observer": obs, "status": "error",
                             "error": "target failed to start: %s" % exc})
            target.stop()
            continue
        try:
            for obs in args.observers:
                if obs == "stalldiag-exact" and not exact_ok:
                    rows.append({"target": tname, "observer": obs, "status": "n/a", "error": exact_note})
                    log("  %s: n/a (%s)" % (obs, exact_note))
                    continue
                if obs != "stalldiag" and obs != "stalldiag-exact" and not shutil.which(obs):
                    rows.append({"target": tname, "observer": obs, "status": "error",
                                 "error": "%s not found on PATH" % obs})
                    continue
                rows.append(measure_row(args, workdir, target, obs))
                r = rows[-1]
                log("  %-16s ratio %s  spread %s  %s" % (
                    obs, fmt_ratio(r.get("ratio")),
                    "%s-%s" % (fmt_ratio(r.get("ratio_min")), fmt_ratio(r.get("ratio_max")))
                    if r.get("ratio_min") is not None else "-", r.get("error") or ""))
                if not target.alive():
                    log("target %s died: %s" % (tname, target.log_tail()))
                    break
        finally:
            target.stop()
    return rows


def measure_row(args, workdir, target, obs):
    T = args.interval
    row = {"target": target.name, "observer": obs, "interval_s": T, "rounds": []}
    for rnd in range(args.rounds):
        if not target.alive():
            row.setdefault("error", "target died: %s" % target.log_tail().strip()[-200:])
            break
        # baseline: nothing attached
        time.sleep(args.cooldown)
        m0 = target.mark()
        cw = CpuWindow(target.proc.pid)
        time.sleep(T)
        m1 = target.mark()
        base_cpu = cw.end()
        base, base_dt = rate(m0, m1)
        # observed: only while the observer is attached
        ob = Observer(obs, target.proc.pid, T, workdir)
        ob.start()
        err = ob.wait_attached(args.settle)
        if err == Observer.NOT_AVAILABLE:
            row.update(status="n/a", error="stalldiag rejects --syscalls exact (exit 2, no such option)")
            return row
        if err:
            row["rounds"].append({"baseline": base, "error": err})
            row.setdefault("error", err)
            continue
        m2 = target.mark()
        cw = CpuWindow(target.proc.pid, ob.proc.pid)
        time.sleep(T)
        m3 = target.mark()
        obs_cpu = cw.end()
        attached_to_end = ob.still_running()
        observed, obs_dt = rate(m2, m3)
        info = ob.stop()
        rd = {"baseline": base, "baseline_s": round(base_dt, 3), "observed": observed,
              "observed_s": round(obs_dt, 3), "ratio": observed / base if base else None,
              "cpu_baseline": base_cpu, "cpu_observed": obs_cpu}
        rd.update(info)
        if not attached_to_end and "error" not in rd:
            rd["error"] = "observer exited before the end of the interval (rc %s)" % info.get("rc")
        if "error" in rd:
            row.setdefault("error", rd["error"])
        row["rounds"].append(rd)
    good = [r for r in row["rounds"] if "error" not in r and r.get("ratio") is not None]
    if good:
        bases = [r["baseline"] for r in good]
        obsd = [r["observed"] for r in good]
        ratios = [r["ratio"] for r in good]
        cpu = [r["observer_cpu_s"] / r["observer_wall_s"] for r in good
               if r.get("observer_cpu_s") is not None and r.get("observer_wall_s")]
        row.update(status="ok" if len(good) == len(row["rounds"]) == args.rounds else "partial",
                   baseline_mean=statistics.mean(bases), observed_mean=statistics.mean(obsd),
                   ratio=statistics.mean(obsd) / statistics.mean(bases),
                   ratio_min=min(ratios), ratio_max=max(ratios),
                   ratio_ci95=ratio_interval(bases, obsd),
                   observer_cpu_pct=100 * statistics.mean(cpu) if cpu else None,
                   background_pct_max=max(max(r["cpu_baseline"]["background_pct"] or 0,
                                              r["cpu_observed"]["background_pct"] or 0) for r in good))
    else:
        row["status"] = "error"
        row.setdefault("error", "no valid round")
    return row


# ---------------------------------------------------------------- part B

def run_part_b(args, workdir):
    rows = []
    for n in args.tree_sizes:
        log("tree of %d processes: starting" % n)
        row = {"processes_expected": n, "threads_expected": 10 * n, "window_s": args.tree_duration}
        tree = spawn([sys.executable, os.path.join(TARGET_DIR, "idle_tree.py"), str(n)],
                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=REPO)
        try:
            line = read_line(tree.stdout, 120)
            if not line.startswith("READY"):
                row["error"] = "tree did not come up: %r" % line
                rows.append(row)
                continue
            time.sleep(0.5)
            tree_pids = [tree.pid] + descendants(tree.pid)
            row["processes_running"] = len(tree_pids)
            row["threads_running"] = sum(len(tids(p)) for p in tree_pids)
            out = os.path.join(workdir, "tree-%d.json" % n)
            errpath = os.path.join(workdir, "tree-%d.err" % n)
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            busy0, tree0 = system_busy_s(), tree_cpu_s(tree.pid)
            t0 = time.monotonic()
            with open(errpath, "wb") as err:
                sd = spawn(stalldiag_cmd() + ["inspect", str(tree.pid), "--children", "--duration",
                                              str(args.tree_duration), "-o", out],
                           stdout=subprocess.DEVNULL, stderr=err, cwd=REPO, env=child_env())
                rc, cpu, timed_out = finish(sd, args.tree_duration * 4 + 60)
            wall = time.monotonic() - t0
            busy, tree_cpu = system_busy_s() - busy0, tree_cpu_s(tree.pid) - tree0
            row["tree_cpu_pct"] = round(100 * tree_cpu / wall, 1)
            row["background_pct"] = round(100 * max(0.0, busy - tree_cpu - (cpu or 0)) / wall, 1)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu_children = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
            row.update(rc=rc, wall_s=round(wall, 2), wall_over_window_s=round(wall - args.tree_duration, 2),
                       cpu_s=round(cpu, 3) if cpu is not None else None,
                       cpu_s_rusage_children=round(cpu_children, 3),
                       cpu_pct_of_core=round(100 * cpu / args.tree_duration, 1) if cpu is not None else None)
            if timed_out or rc != 0:
                with open(errpath, "rb") as f:
                    row["error"] = "stalldiag exit %s%s: %s" % (
                        rc, " (timed out)" if timed_out else "", f.read()[-300:].decode(errors="replace"))
            if os.path.exists(out):
                with open(out) as f:
                    rep = json.load(f)
                procs = rep.get("processes") or []
                seen = {p.get("pid") for p in procs}
                window = rep.get("window") or {}
                row.update(processes_reported=len(procs),
                           tree_missing=sorted(set(tree_pids) - seen),
                           all_present=set(tree_pids) <= seen,
                           threads_reported=sum(len(p.get("threads") or []) for p in procs),
                           rate_hz=window.get("rate_hz"), samples=window.get("samples"),
                           stack_rate_hz=window.get("stack_rate_hz"),
                           limitations=rep.get("limitations") or [],
                           rate_notes=[x for x in rep.get("limitations") or [] if "rate" in x.lower()])
        except Exception as exc:
            row["error"] = "%s: %s" % (type(exc).__name__, exc)
        finally:
            finish_target(tree)
        log("  N=%d: cpu %s%% of a core, wall-window %s s, processes %s/%d, rate %s Hz %s" % (
            n, row.get("cpu_pct_of_core"), row.get("wall_over_window_s"), row.get("processes_reported"),
            n, row.get("rate_hz"), row.get("error") or ""))
        rows.append(row)
    return rows


def read_line(stream, timeout):
    import select
    deadline = time.monotonic() + timeout
    buf = b""
    fd = stream.fileno()
    while time.monotonic() < deadline:
        r, _, _ = select.select([fd], [], [], 0.5)
        if r:
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            buf += chunk
            if b"\n" in buf:
                break
    return buf.split(b"\n")[0].decode(errors="replace")


# ---------------------------------------------------------------- output

def machine():
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    tools = {}
    for tool, argv in (("py-spy", ["py-spy", "--version"]), ("strace", ["strace", "-V"])):
        try:
            tools[tool] = subprocess.run(argv, capture_output=True, text=True, timeout=10).stdout.splitlines()[0]
        except Exception:
            tools[tool] = None
    try:
        import torch  # noqa: F401
        tools["torch"] = torch.__version__
    except Exception:
        tools["torch"] = None
    return {"nproc": os.cpu_count(), "cpu_model": model, "kernel": platform.release(),
            "python": platform.python_version(), "tools": tools}


def loadavg():
    try:
        with open("/proc/loadavg") as f:
            return [float(x) for x in f.read().split()[:3]]
    except OSError:
        return None


def ratio_interval(bases, observed, draws=4000):
    """95% bootstrap interval of mean(observed) / mean(baseline), resampling whole rounds (a
    round's two intervals stay paired): on a shared VM the target's own rate moves by 10-25%
    between intervals, and a ratio is only worth the interval around it."""
    rng = random.Random(0)
    n = len(bases)
    if n < 2:
        return None
    ratios = []
    for _ in range(draws):
        picks = [rng.randrange(n) for _ in range(n)]
        ratios.append(sum(observed[i] for i in picks) / sum(bases[i] for i in picks))
    ratios.sort()
    return [ratios[int(0.025 * draws)], ratios[int(0.975 * draws) - 1]]


def fmt_ratio(x):
    return "-" if x is None else "%.2f" % x


def fmt_rate(x):
    if x is None:
        return "-"
    if x >= 10000:
        return "%.0fk" % (x / 1000)
    return "%.0f" % x


def markdown(results):
    m = results["machine"]
    cfg = results["config"]
    lines = []
    lines.append("### stalldiag overhead (%s)" % results["date"])
    lines.append("")
    lines.append("Machine: %s cores, %s, Linux %s, Python %s%s. Generated by `python3 bench/overhead.py%s`."
                 % (m["nproc"], m["cpu_model"] or "unknown CPU", m["kernel"], m["python"],
                    ", torch %s" % m["tools"]["torch"] if m["tools"].get("torch") else "",
                    " --quick" if cfg["quick"] else "")
                 + pin_note(cfg.get("pin")))
    if results.get("part_a"):
        lines.append("")
        lines.append("**Target throughput with the observer attached** (observed / baseline, mean of %d "
                     "alternating %g s intervals; 95%% CI: bootstrap over rounds; spread = min-max of "
                     "per-round ratios; 1.00 = no slowdown)"
                     % (cfg["rounds"], cfg["interval"]))
        bg = [r.get("background_pct_max") or 0 for r in results["part_a"]]
        if bg and max(bg) > BACKGROUND_WARN_PCT:
            lines.append("")
            lines.append("**Warning:** other work used up to %.0f%% of a core during some intervals "
                         "(rows marked `*`); those ratios are noisy." % max(bg))
        lines.append("")
        lines.append("| target | observer | throughput ratio | 95% CI | spread | baseline rate | observer CPU |")
        lines.append("|---|---|---:|---:|---:|---:|---:|")
        for r in results["part_a"]:
            unit = TARGETS[r["target"]]["unit"]
            if r.get("status") in ("ok", "partial"):
                note = "" if r["status"] == "ok" else " (partial: %s)" % short(r.get("error"))
                if (r.get("background_pct_max") or 0) > BACKGROUND_WARN_PCT:
                    note += " *"
                label = OBSERVER_LABELS[r["observer"]]
                backends = {x.get("report", {}).get("syscall_backend") for x in r["rounds"]} - {None}
                if r["observer"] == "stalldiag-exact" and backends:
                    label += " (%s)" % ",".join(sorted(backends))
                ci = r.get("ratio_ci95")
                lines.append("| %s | %s | %s%s | %s | %s-%s | %s %s/s | %s |" % (
                    r["target"], label, fmt_ratio(r["ratio"]), note,
                    "%s-%s" % (fmt_ratio(ci[0]), fmt_ratio(ci[1])) if ci else "-",
                    fmt_ratio(r["ratio_min"]), fmt_ratio(r["ratio_max"]), fmt_rate(r["baseline_mean"]), unit,
                    "%.0f%%" % r["observer_cpu_pct"] if r.get("observer_cpu_pct") is not None else "-"))
            else:
                label = "n/a" if r.get("status") == "n/a" else "error: %s" % short(r.get("error"))
                lines.append("| %s | %s | %s | - | - | - | - |" % (r["target"], OBSERVER_LABELS[r["observer"]], label))
    if results.get("part_b"):
        lines.append("")
        lines.append("**stalldiag's own cost** (`stalldiag inspect ROOT --children --duration %s` on an idle tree, "
                     "~10 threads per process; CPU = stalldiag + its py-spy, %% of one core over the window)"
                     % fmt_num(cfg["tree_duration"]))
        lines.append("")
        lines.append("| processes | threads | CPU (% of a core) | wall - window | processes in report | rate (Hz) | note |")
        lines.append("|---:|---:|---:|---:|---:|---:|---|")
        for r in results["part_b"]:
            note = r.get("error") or "; ".join(r.get("rate_notes") or []) or ""
            if (r.get("background_pct") or 0) > BACKGROUND_WARN_PCT:
                note += " (other work used %.0f%% of a core meanwhile)" % r["background_pct"]
            if r.get("tree_missing"):
                note = ("missing pids %s; " % r["tree_missing"][:5]) + note
            lines.append("| %s | %s | %s | %s | %s | %s | %s |" % (
                r["processes_expected"], r.get("threads_running", "-"),
                "%.1f%%" % r["cpu_pct_of_core"] if r.get("cpu_pct_of_core") is not None else "-",
                "%+.2f s" % r["wall_over_window_s"] if r.get("wall_over_window_s") is not None else "-",
                "%s/%s" % (r.get("processes_reported", "-"), r.get("processes_running", r["processes_expected"])),
                r.get("rate_hz", "-"), short(note, 120)))
    return "\n".join(lines) + "\n"


def pin_note(pin):
    if pin == "default":
        pinned = ["%s to CPU %s" % (n, ",".join(map(str, sorted(t["pin"])))) for n, t in TARGETS.items() if t.get("pin")]
        return " Pinned: %s." % "; ".join(pinned) if pinned else ""
    if pin:
        return " All targets pinned to CPU %s." % ",".join(map(str, pin))
    return " No target pinned."


def fmt_num(x):
    return ("%g" % x)


def short(s, n=80):
    s = " ".join(str(s or "").split()).replace("|", "/")
    return s if len(s) <= n else s[:n - 3] + "..."


# ---------------------------------------------------------------- main

def parse_list(value, known, aliases, what):
    out = []
    for item in value.split(","):
        item = item.strip()
        if not item:
            continue
        item = aliases.get(item, item)
        if item not in known:
            raise SystemExit("unknown %s %r (known: %s)" % (what, item, ", ".join(known)))
        out.append(item)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--targets", default=",".join(TARGETS),
                    help="comma list of read_loop,futex_pingpong,torch_train (or a,b,c)")
    ap.add_argument("--observers", default=",".join(OBSERVERS),
                    help="comma list of stalldiag,stalldiag-exact,py-spy,strace (or 1,2,3,4)")
    ap.add_argument("--interval", type=float, help="seconds per baseline/observed interval (default 6; quick 2.5)")
    ap.add_argument("--rounds", type=int, help="baseline/observed pairs per row (default 3; quick 2)")
    ap.add_argument("--settle", type=float, default=0.5,
                    help="extra seconds after an observer is attached before the observed interval starts")
    ap.add_argument("--cooldown", type=float, default=0.5, help="seconds after an observer ends before a baseline")
    ap.add_argument("--tree-sizes", default="1,8,64", help="part B tree sizes (processes)")
    ap.add_argument("--tree-duration", type=float, help="part B stalldiag window (default 10; quick 5)")
    ap.add_argument("--parts", default="A,B", help="A, B or A,B")
    ap.add_argument("--pin", default="default",
                    help="pin every target to these CPUs (e.g. 0 or 0,1), or 'none'; default: only "
                         "futex_pingpong, to CPU 0")
    ap.add_argument("--quick", action="store_true", help="shorter intervals and fewer rounds (~4 min)")
    ap.add_argument("--out", help="results JSON (default bench/results-<date>.json)")
    args = ap.parse_args()

    args.targets = parse_list(args.targets, list(TARGETS), TARGET_ALIASES, "target")
    args.observers = parse_list(args.observers, OBSERVERS, OBSERVER_ALIASES, "observer")
    if args.pin in (None, "default"):
        args.pin = "default"
    elif args.pin == "none":
        args.pin = None
    else:
        args.pin = {int(x) for x in args.pin.split(",")}
    args.tree_sizes = [int(x) for x in args.tree_sizes.split(",") if x.strip()]
    if args.interval is None:
        args.interval = 2.5 if args.quick else 6.0
    if args.rounds is None:
        args.rounds = 2 if args.quick else 3
    if args.tree_duration is None:
        args.tree_duration = 5.0 if args.quick else 10.0
    parts = {p.strip().upper() for p in args.parts.split(",")}

    def on_signal(signum, _frame):
        cleanup_all()
        sys.exit(128 + signum)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    now = datetime.datetime.now()
    results = {"date": now.strftime("%Y-%m-%d %H:%M"), "machine": machine(),
               "config": {"targets": args.targets, "observers": args.observers, "interval": args.interval,
                          "rounds": args.rounds, "settle": args.settle, "cooldown": args.cooldown,
                          "tree_sizes": args.tree_sizes, "pin": args.pin if args.pin in (None, "default") else sorted(args.pin), "tree_duration": args.tree_duration,
                          "quick": args.quick, "parts": sorted(parts)}}
    results["loadavg_start"] = loadavg()
    started = time.monotonic()
    workdir = tempfile.mkdtemp(prefix="stalldiag-bench-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    try:
        if "A" in parts:
            exact_ok, exact_note = True, ""
            if "stalldiag-exact" in args.observers:
                exact_ok, exact_note = probe_exact_support(workdir)
                log("--syscalls exact: %s" % exact_note)
            results["exact_mode"] = {"available": exact_ok, "note": exact_note}
            results["part_a"] = run_part_a(args, workdir, exact_ok, exact_note)
        if "B" in parts:
            results["part_b"] = run_part_b(args, workdir)
    finally:
        cleanup_all()
        shutil.rmtree(workdir, ignore_errors=True)
    results["loadavg_end"] = loadavg()
    results["elapsed_s"] = round(time.monotonic() - started, 1)
    out = args.out or os.path.join(HERE, "results-%s.json" % now.strftime("%Y-%m-%d"))
    table = markdown(results)
    results["markdown"] = table
    with open(out, "w") as f:
        json.dump(results, f, indent=2)
        f.write("\n")
    sys.stdout.write(table)
    log("raw results: %s (run took %.0f s)" % (os.path.relpath(out), results["elapsed_s"]))


if __name__ == "__main__":
    main()
