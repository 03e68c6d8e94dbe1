"""Exact syscall counts of every thread of the tree (--syscalls exact).

Backends, tried in this order:

- bpftrace: one in-kernel counter map keyed by (pid, tid, syscall) on the
  raw_syscalls:sys_enter tracepoint, with the set of tracked processes
  kept in the kernel and grown on sched_process_fork, so threads and
  processes born during the window are counted exactly and attributed to
  themselves.  No ptrace, no stop.
- perf stat: kernel tracepoints in counting mode on the tree's threads.
  Also no ptrace.  perf inherits counters, so a thread or child started
  during the window is counted, but into the thread that created it (the
  report says so).  One event per counted syscall plus a total.
- strace -f -c: ptrace.  Stops the target twice per syscall: the last
  resort, with a warning in the report.  Counts per process only.

Results are counted too, so a job that only retries (connect() refused, open()
ENOENT, EAGAIN) shows: per syscall the calls that failed, and per errno where the
backend can tell (bpftrace: raw_syscalls:sys_exit with ret < 0; strace: -Z lines
of the failed calls; perf: counting mode has no errno, only failed calls per
syscall, through a `ret < 0` filter on the exit tracepoints).

Whatever happens to stalldiag (SIGINT, SIGTERM, SIGKILL), the tracer runs in
its own process group with a parent-death signal, so it ends too and the
target is never left traced.
"""
import errno
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from typing import Optional

from ..records import typed_record
from .. import procfs
from ..errors import last_line
from ..helpers import die_with_parent
from .base import Probe, Section

from ..knowledge.syscalls import ALWAYS_SHOWN  # noqa: E402,F401  (the probe reports them always)

# perf counts one event per syscall: these, plus the total of all syscalls.
PERF_SYSCALLS = (
    "futex", "read", "write", "openat", "close", "pread64", "pwrite64", "readv", "writev",
    "poll", "ppoll", "epoll_wait", "epoll_pwait", "select", "pselect6", "recvfrom", "recvmsg",
    "sendto", "sendmsg", "mmap", "munmap", "madvise", "ioctl", "clock_nanosleep", "nanosleep",
    "wait4", "newfstatat", "statx", "lseek", "getdents64", "sched_yield", "clone", "clone3",
    "connect", "accept4",
)

ATTACH_TIMEOUT_S = 20.0

# errnos the kernel uses inside a syscall: a tracepoint at exit sees them, the caller
# sees EINTR or a restarted call instead (include/linux/errno.h)
KERNEL_ERRNOS = {512: "ERESTARTSYS", 513: "ERESTARTNOINTR", 514: "ERESTARTNOHAND", 515: "ENOIOCTLCMD",
                 516: "ERESTART_RESTARTBLOCK", 517: "EPROBE_DEFER", 518: "EOPENSTALE", 519: "ENOPARAM"}


def errno_name(number):
    """111 -> "ECONNREFUSED"."""
    return errno.errorcode.get(number) or KERNEL_ERRNOS.get(number) or "errno %d" % number


def add_failure(failures, key, syscall, n, errno_text=None):
    """Count n failed calls of syscall (with that errno, when known) into failures[key]."""
    entry = failures.setdefault(key, {}).setdefault(syscall, {"errors": 0})
    entry["errors"] += n
    if errno_text:
        errnos = entry.setdefault("errnos", {})
        errnos[errno_text] = errnos.get(errno_text, 0) + n


def _raise_fd_limit():
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ValueError, OSError):
        pass


def _tracer_preexec():
    die_with_parent()
    _raise_fd_limit()


class Counter:
    """Base: run a tracer over the window, return counts per (pid, tid) per syscall."""

    name = None
    attributes_new_tasks = True   # are threads/processes born in the window counted as themselves?
    warning = None
    gives_errnos = False          # are failed calls counted per errno, or only per syscall?
    settle_s = 0.5                # tracers that say nothing when ready: assume attached after this

    def __init__(self, pids):
        self.pids = list(pids)
        self.proc = None
        self.error = None
        self.attached_at = None
        # filled by parse(): {(pid, tid): {syscall: {"errors": n, "errnos": {"ECONNREFUSED": n}}}}
        self.failures = {}
        self._dir = tempfile.mkdtemp(prefix="stalldiag-exact-")
        self._out = os.path.join(self._dir, "out.txt")
        self._err = os.path.join(self._dir, "err.txt")

    @classmethod
    def available(cls):
        raise NotImplementedError

    def command(self):
        raise NotImplementedError

    def attached(self):
        return time.monotonic() - self._t_start >= self.settle_s

    def start(self):
        cmd = self.command()
        self._t_start = time.monotonic()
        with open(self._out, "w") as out, open(self._err, "w") as err:
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                         start_new_session=True, preexec_fn=_tracer_preexec)
        deadline = time.monotonic() + ATTACH_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self.error = "%s exited at start: %s" % (self.name, last_line(self._read(self._err), 200) or "no output")
                return False
            if self.attached():
                self.attached_at = time.monotonic()
                return True
            time.sleep(0.05)
        self.error = "%s did not attach within %.0f s" % (self.name, ATTACH_TIMEOUT_S)
        self.kill()
        return False

    def add_pid(self, pid):
        """A process appeared in the tree during the window."""

    def stop(self):
        """End counting (SIGINT: the tracer prints its totals and detaches)."""
        if self.proc is None:
            return {}
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGINT)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()
        try:
            return self.parse()
        finally:
            shutil.rmtree(self._dir, ignore_errors=True)

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()

    def parse(self):
        raise NotImplementedError

    @staticmethod
    def _read(path):
        try:
            with open(path, errors="replace") as f:
                return f.read()
        except OSError:
            return ""


class BpftraceCounter(Counter):
    name = "bpftrace"
    gives_errnos = True

    @classmethod
    def available(cls):
        return shutil.which("bpftrace") is not None and os.geteuid() == 0

    def command(self):
        track = " ".join("@track[%d] = 1;" % pid for pid in self.pids)
        program = (
            "BEGIN { %s printf(\"attached\\n\"); }\n"
            "tracepoint:sched:sched_process_fork /@track[pid]/ { @track[args->child_pid] = 1; }\n"
            "tracepoint:raw_syscalls:sys_enter /@track[pid]/ { @n[pid, tid, args->id] = count(); }\n"
            # -4095..-1 is the errno range: larger "negative" values are addresses (mmap); the
            # result is tested first, so a call that succeeded costs no map lookup at its exit
            "tracepoint:raw_syscalls:sys_exit /args->ret < 0 && args->ret >= -4095 && @track[pid]/ "
            "{ @f[pid, tid, args->id, -args->ret] = count(); }\n"
            "END { clear(@track); }\n" % track)
        return [shutil.which("bpftrace"), "-e", program]

    def attached(self):
        return "attached" in self._read(self._out)

    def parse(self):
        counts = {}
        for match in re.finditer(r"^@n\[(\d+), (\d+), (\d+)\]: (\d+)$", self._read(self._out), re.M):
            pid, tid, number, n = (int(x) for x in match.groups())
            per_thread = counts.setdefault((pid, tid), {})
            name = procfs.syscall_name(number)
            per_thread[name] = per_thread.get(name, 0) + n
        for match in re.finditer(r"^@f\[(\d+), (\d+), (\d+), (\d+)\]: (\d+)$", self._read(self._out), re.M):
            pid, tid, number, err, n = (int(x) for x in match.groups())
            add_failure(self.failures, (pid, tid), procfs.syscall_name(number), n, errno_name(err))
        return counts


class PerfCounter(Counter):
    name = "perf"
    attributes_new_tasks = False

    @classmethod
    def available(cls):
        if shutil.which("perf") is None:
            return False
        probe = subprocess.run(["perf", "stat", "-e", "raw_syscalls:sys_enter", "-x,", "--", "true"],
                               capture_output=True, text=True)
        return probe.returncode == 0 and "raw_syscalls:sys_enter" in probe.stderr \
            and "not supported" not in probe.stderr

    def command(self):
        counted = [s for s in PERF_SYSCALLS if os.path.exists("/sys/kernel/tracing/events/syscalls/sys_enter_%s" % s)
                   or not os.path.isdir("/sys/kernel/tracing/events/syscalls")]
        events = ["raw_syscalls:sys_enter"] + ["syscalls:sys_enter_%s" % s for s in counted]
        # failed calls: the exit tracepoints filtered in the kernel on ret < 0 (a filter applies
        # to the event just before it), the total and one per counted syscall
        failed = []
        for event in ["raw_syscalls:sys_exit"] + ["syscalls:sys_exit_%s" % s for s in counted]:
            failed += ["-e", event, "--filter", "ret < 0"]
        return ["perf", "stat", "--per-thread", "-x", ",", "-o", self._out, "-e", ",".join(events)] + failed + \
            ["-p", ",".join(str(p) for p in self.pids)]

    def parse(self):
        counts = {}
        failed_total = {}
        for line in self._read(self._out).splitlines():
            parts = line.split(",")
            if len(parts) < 4 or not parts[1].strip().isdigit():
                continue
            comm_tid, value, event = parts[0], int(parts[1]), parts[3]
            tid = int(comm_tid.rsplit("-", 1)[-1])
            pid = _tgid_of(tid)
            per_thread = counts.setdefault((pid, tid), {})
            if event == "raw_syscalls:sys_enter":
                per_thread["_total"] = value
            elif event == "raw_syscalls:sys_exit":
                failed_total[(pid, tid)] = value
            elif "sys_exit_" in event:
                if value:
                    add_failure(self.failures, (pid, tid), event.split("sys_exit_", 1)[-1], value)
            else:
                per_thread[event.split("sys_enter_", 1)[-1]] = value
        for per_thread in counts.values():
            total = per_thread.pop("_total", None)
            if total is not None:
                per_thread["other"] = max(0, total - sum(per_thread.values()))
        for key, total in failed_total.items():
            named = sum(e["errors"] for e in self.failures.get(key, {}).values())
            if total > named:
                add_failure(self.failures, key, "other", total - named)
        return {k: {s: n for s, n in v.items() if n} for k, v in counts.items()}


class StraceCounter(Counter):
    name = "strace"
    attributes_new_tasks = False
    warning = ("exact counts came from strace (ptrace): it stops the target twice per syscall, "
               "so syscall-heavy code ran much slower while it was attached")

    @classmethod
    def available(cls):
        return shutil.which("strace") is not None

    @property
    def gives_errnos(self):
        return _strace_failed_only()

    def command(self):
        cmd = ["strace", "-f", "-c", "-qq", "-o", self._out]
        if _strace_failed_only():
            # -C -Z: the summary of every call, plus one line per *failed* call for its errno
            # (arguments raw: nothing decoded).  The target already stops at every syscall;
            # this only writes the failed ones.
            cmd = ["strace", "-f", "-C", "-Z", "-qq", "-e", "raw=all", "-o", self._out]
        for pid in self.pids:
            cmd += ["-p", str(pid)]
        return cmd

    def parse(self):
        # strace -c sums every traced task: one bucket for the whole tree, its failures too.
        totals = {}
        key = (self.pids[0], None)
        try:
            with open(self._out, errors="replace") as f:
                for line in f:   # line by line: the failed calls may be many
                    summary = _STRACE_SUMMARY.match(line)
                    if summary:
                        calls, errors, name = int(summary.group(1)), summary.group(2), summary.group(3)
                        if name != "total":
                            totals[name] = totals.get(name, 0) + calls
                            if errors:
                                add_failure(self.failures, key, name, int(errors))
                        continue
                    failed = _STRACE_FAILED.match(line)
                    if failed:
                        name = failed.group(1) or failed.group(2)
                        errnos = self.failures.setdefault(key, {}).setdefault(name, {"errors": 0}) \
                            .setdefault("errnos", {})
                        errnos[failed.group(3)] = errnos.get(failed.group(3), 0) + 1
        except OSError:
            pass
        return {key: totals} if totals else {}


# "% time  seconds  usecs/call  calls  errors  syscall" (errors empty when none)
_STRACE_SUMMARY = re.compile(r"^\s*\d+\.\d+\s+\d+\.\d+\s+\d+\s+(\d+)\s+(?:(\d+)\s+)?(\w+)\s*$")
# "1234  connect(0x4, ...) = -1 ECONNREFUSED (...)", "1234  <... read resumed>...) = -1 EAGAIN (...)"
_STRACE_FAILED = re.compile(r"^(?:\d+\s+)?(?:<\.\.\. (\w+) resumed>|(\w+)\().*\)\s+= (?:-1|\?) (E[A-Z0-9_]+)")
_FAILED_ONLY = []


def _strace_failed_only():
    """Does this strace have -Z (--failed-only, strace >= 5.2)?  Asked once."""
    if not _FAILED_ONLY:
        try:
            text = subprocess.run(["strace", "-h"], capture_output=True, text=True, timeout=10).stdout
        except (OSError, subprocess.SubprocessError):
            text = ""
        _FAILED_ONLY.append("--failed-only" in text)
    return _FAILED_ONLY[0]


BACKENDS = (BpftraceCounter, PerfCounter, StraceCounter)


def _tgid_of(tid):
    try:
        return int(procfs.status(tid).get("Tgid", tid))
    except (procfs.ProcfsError, ValueError):
        return tid


def choose_backend(preferred=None, skip=()):
    """The first backend that works here (or the one asked for), none of skip (names of those
    that failed to attach), or None and the names tried."""
    tried = list(skip)
    for backend in BACKENDS:
        if preferred and backend.name != preferred or backend.name in skip:
            continue
        if backend.available():
            return backend, tried
        tried.append(backend.name)
    return None, tried


# --- the probe -------------------------------------------------------------------------------

@typed_record
class ExactSection(Section):
    """capture["exact_syscalls"] (--syscalls exact): None when not asked for or no backend worked."""
    exact_syscalls: Optional[dict] = None


class ExactCountsProbe(Probe):
    """--syscalls exact: every syscall of every thread counted by the least intrusive backend that
    attaches here.  The window starts once counting runs, so both cover the same span."""

    name = "exact syscalls"
    Section = ExactSection

    def __init__(self):
        self.counter = None
        self.notes = []

    def start(self, ctx):
        config = ctx.config
        if config.syscalls != "exact":
            return
        if config.duration == 0:
            self.notes.append("--syscalls exact needs a window: no counts with --duration 0")
            return
        failed = []
        while True:
            # a backend that is installed may still fail to attach (bpftrace with no tracefs
            # mounted, perf under a strict perf_event_paranoid): the next one is tried
            backend, tried = choose_backend(config.syscall_backend, skip=[n for n, _e in failed])
            if backend is None:
                break
            ctx.notice("stalldiag: attaching exact syscall counting (%s)..." % backend.name)
            counter = backend([pid for pid, _start in ctx.sampler.live.values()])
            if counter.start():
                if failed:
                    self.notes.append("--syscalls exact: %s, so %s counted" % (
                        "; ".join("%s failed: %s" % (n, e) for n, e in failed), backend.name))
                self.counter = counter
                ctx.restart()
                return
            failed.append((backend.name, counter.error))
        if failed:
            self.notes.append("--syscalls exact: %s" % "; ".join("%s failed: %s" % (n, e) for n, e in failed))
        else:
            self.notes.append("--syscalls exact: no backend works here (tried %s; install bpftrace, "
                              "linux-perf or strace, and run as root)" % (", ".join(tried) or "none"))

    def stop(self, ctx):
        counter = self.counter
        if counter is None:
            return ExactSection(limitations=self.notes)
        stopped = time.monotonic()
        counts = counter.stop()
        notes = []
        if not counter.attributes_new_tasks:
            notes.append("%s counts a thread or process born during the window into the one that "
                         "created it" % counter.name)
        if counter.warning:
            self.notes.append(counter.warning)
        return ExactSection(limitations=self.notes, exact_syscalls={
            "backend": counter.name,
            "counted_s": round(stopped - counter.attached_at, 3),
            "notes": notes,
            "warning": counter.warning,
            "counts": [[pid, tid, per] for (pid, tid), per in sorted(counts.items(), key=_row_order)],
            # failed calls, same rows: [pid, tid, {syscall: {"errors": n, "errnos": {name: n}}}];
            # "errnos" only where the backend tells them apart (errnos_known)
            "errnos_known": bool(counter.gives_errnos),
            "errors": [[pid, tid, per] for (pid, tid), per in sorted(counter.failures.items(), key=_row_order)],
        })

    def failed(self, error):
        if self.counter is not None:
            self.counter.kill()   # never leave the target traced
        return ExactSection(limitations=self.notes + ["--syscalls exact: no counts (the probe failed: %s)" % error])


def _row_order(item):
    (pid, tid), _per = item
    return pid, tid or 0
