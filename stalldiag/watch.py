"""`stalldiag watch`: a light check at each interval; a full inspection once a stall lasts.

Progress between two checks is any of: storage or pipe bytes moved
(/proc/PID/io rchar/wchar), stdout/stderr files grew, a GPU of the run did
real work (NVML), or CPU time grew *and* the Python stacks moved.  CPU with
frozen stacks is not progress: a spinning hang looks like that.  A light
check reads a few /proc files per process and takes one non-blocking
`py-spy dump` of at most MAX_DUMPS Python processes, only when CPU grew.
"""
import datetime
import os
import re
import shlex
import subprocess
import sys
import time

from . import procfs, targets
from .probes.gpu import NVML
from .probes.stacks import find_pyspy, looks_like_python, pyspy_dump

MAX_DUMPS = 4


def parse_interval(text):
    """'90', '90s', '10m', '1h', '1h30m' -> seconds."""
    if re.fullmatch(r"\d+(\.\d+)?", text):
        return float(text)
    parts = re.findall(r"(\d+(?:\.\d+)?)([smh])", text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError("%r is not an interval such as 30s, 10m or 1h" % text)
    return sum(float(n) * {"s": 1, "m": 60, "h": 3600}[u] for n, u in parts)


class Snapshot:
    """What one light check saw of the tree."""

    def __init__(self, root, children):
        self.time = time.monotonic()
        self.cpu = 0
        self.io = 0
        self.output = 0
        self.pids = []
        keys = [targets.process_key(root)]
        if children:
            keys += [targets.process_key(p) for p in targets.descendants(root)]
        for key in keys:
            if key is None:
                continue
            pid = key[0]
            try:
                st = procfs.stat(pid)
            except procfs.ProcfsError:
                continue
            if st["state"] in ("Z", "X"):
                continue
            self.pids.append(pid)
            self.cpu += st["utime"] + st["stime"]
            try:
                io = procfs.io_counters(pid)
                self.io += io.get("rchar", 0) + io.get("wchar", 0)
            except procfs.ProcfsError:
                pass
            for fd in (1, 2):
                try:
                    self.output += procfs.fd_stat(pid, fd).st_size
                except procfs.ProcfsError:
                    pass


def stack_signature(pids):
    """Function:line of every thread's innermost frames, from one non-blocking py-spy dump each."""
    binary = find_pyspy()
    if binary is None:
        return None
    signature = []
    dumped = 0
    for pid in pids:
        if dumped >= MAX_DUMPS or looks_like_python(pid, None) is False:
            continue
        dumped += 1
        for thread in pyspy_dump(pid, binary=binary) or []:
            frames = thread.get("frames") or []
            signature.append((pid, thread.get("os_thread_id"),
                              tuple((f.get("name"), f.get("line")) for f in frames[:3])))
    return sorted(signature, key=repr)


def gpu_busy():
    """The busiest GPU's utilization %, through the run's NVML session; None without NVML."""
    pynvml = NVML.open()
    if pynvml is None:
        return None
    try:
        return max((pynvml.nvmlDeviceGetUtilizationRates(pynvml.nvmlDeviceGetHandleByIndex(i)).gpu
                    for i in range(pynvml.nvmlDeviceGetCount())), default=0)
    except Exception:
        return None


class Watcher:
    def __init__(self, config, every, stall_after, report_dir, exec_cmd, log=print, sleep=time.sleep):
        """config: the inspection to run at a stall (its pid, children and window)."""
        self.config = config
        self.pid = config.pid
        self.children = config.children
        self.every = every
        self.stall_after = stall_after
        self.report_dir = report_dir
        self.exec_cmd = exec_cmd
        self.log = log
        self.sleep = sleep
        self.reports = []
        self.checks = 0

    def progress_between(self, before, after):
        """(progress?, why) between two snapshots, by the one progress model."""
        from .diagnosis.progress import interval_progress

        def stacks_moved():
            stacks = stack_signature(after.pids)
            if stacks is None or stacks != self._last_stacks:
                self._last_stacks = stacks
                return True
            return False
        return interval_progress(after.io - before.io, after.output - before.output, gpu_busy,
                                 (after.cpu - before.cpu) / procfs.CLK_TCK, stacks_moved)

    def run_until(self, stop):
        """Run until the target ends (0) or a signal stops the watch (130/143)."""
        self._stop = stop
        return self.run()

    def run(self):
        stop = getattr(self, "_stop", lambda: None)
        start = time.monotonic()
        self._last_stacks = None
        before = Snapshot(self.pid, self.children)
        last_progress = before.time
        armed = True
        self.log("stalldiag watch: watching pid %d%s every %s; a stall is %s without progress" % (
            self.pid, " and its children" if self.children else "", _fmt(self.every), _fmt(self.stall_after)))
        while True:
            self.sleep(self.every)
            if stop():
                self.log("stalldiag watch: stopped by %s after %s (%d stall report%s)" % (
                    stop(), _fmt(time.monotonic() - start), len(self.reports), "" if len(self.reports) == 1 else "s"))
                return {"SIGINT": 130, "SIGTERM": 143}.get(stop(), 130)
            if targets.process_key(self.pid) is None or _is_zombie(self.pid):
                self.log("stalldiag watch: pid %d ended after %s (%d checks, %d stall report%s)" % (
                    self.pid, _fmt(time.monotonic() - start), self.checks, len(self.reports),
                    "" if len(self.reports) == 1 else "s"))
                return 0
            after = Snapshot(self.pid, self.children)
            self.checks += 1
            moved, why = self.progress_between(before, after)
            before = after
            if moved:
                last_progress = after.time
                if not armed:
                    self.log("stalldiag watch: progress resumed (%s); re-armed" % why)
                    armed = True
                continue
            stalled_for = after.time - last_progress
            if armed and stalled_for >= self.stall_after:
                self.log("stalldiag watch: no progress for %s (%s): inspecting" % (_fmt(stalled_for), why))
                self.report()
                armed = False

    def report(self):
        from .output import failed_message, render_all, write_report
        from .report import build_or_fallback
        from .session import Inspection
        from .targets import check_target
        try:
            check_target(self.pid)
            cap = Inspection(self.config).run()
        except Exception as exc:
            self.log("stalldiag watch: inspection failed: %s" % exc)
            return
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
        base = os.path.join(self.report_dir, "stalldiag-%d-%s" % (self.pid, stamp))
        plan = [(base + ".md", "markdown"), (base + ".json", "json"), (base + ".html", "html")]
        report = build_or_fallback(cap)
        texts, _stdout = render_all(report, plan, as_json=True)
        write_report(texts)
        if report.failures:    # a bug, not the target's fault: say so and keep watching
            self.log("stalldiag watch: error: " + failed_message(report, [base + ".json"], plan))
        self.reports.append(base + ".md")
        self.log("stalldiag watch: %s: %s -> %s" % (report.verdict.category, report.verdict.summary[:160],
                                                   base + ".md"))
        if self.exec_cmd:
            argv = shlex.split(self.exec_cmd)
            argv = [a.replace("{}", base + ".md") for a in argv] if any("{}" in a for a in argv) \
                else argv + [base + ".md"]
            try:
                done = subprocess.run(argv, timeout=120, stdin=subprocess.DEVNULL)
                self.log("stalldiag watch: --exec %s exited %d" % (argv[0], done.returncode))
            except (OSError, subprocess.SubprocessError) as exc:
                self.log("stalldiag watch: --exec failed: %s" % exc)


def _is_zombie(pid):
    try:
        return procfs.stat(pid)["state"] in ("Z", "X")
    except procfs.ProcfsError:
        return True


def _fmt(seconds):
    seconds = int(round(seconds))
    if seconds < 120:
        return "%ds" % seconds
    if seconds < 7200:
        return "%dm%02ds" % (seconds // 60, seconds % 60)
    return "%dh%02dm" % (seconds // 3600, seconds % 3600 // 60)


def log_line(text):
    sys.stdout.write(text + "\n")
    sys.stdout.flush()
