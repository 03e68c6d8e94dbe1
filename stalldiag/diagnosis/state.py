"""The state each thread is really in, from the kernel's own accounting.

A /proc sample says R, S, D or T; that is not yet what the thread is doing.
"R 100% of the window" can be computing, spin-waiting on a GPU or a lock, or
being runnable but throttled by a cgroup CPU quota; "D" can be storage
(a read, or a page fault on a memory-mapped file) or something else; "T" is
a stop by a signal or by a tracer.  This module settles that before any rule
reads a thread, from:

  /proc samples       state share, current syscall, wchan
  schedstat           time on CPU vs time runnable but waiting for a CPU
  status              voluntary context switches (a spinner makes none)
  cgroup              cpu.stat nr_throttled / throttled time, the quota;
                      freezer state
  TracerPid           who stops a traced thread
  stat, maps          major page faults, file-backed data mappings
  Python stacks       a stack frozen on one line while on CPU

Conditions: computing, spinning, throttled, stopped, traced, frozen,
blocked, storage (D for storage, including page faults on mapped files),
uninterruptible (D for other reasons), exited, unknown.  CPU time of a
spinning, stopped or frozen thread is never progress.
"""
from ..knowledge import frames as frame_table
from ..vocab import Condition, HALTED, Kind

RUNNING_SHARE = 0.5     # share of /proc samples that makes a thread "on CPU"
BUSY_CPU_SHARE = 0.3    # or CPU time received, as a share of the window
WOKEN_CPU_SHARE = 0.05  # under this much CPU, a thread that wakes ...
WOKEN_RATE = 50.0       # ... this many times a second (voluntary switches) is waiting, not running
FROZEN_STACK = 0.9      # share of stack samples on one stack that makes it "frozen"
MIN_STACKS = 3          # stack samples needed before calling a stack frozen
SPIN_SWITCHES = 2.0     # voluntary switches per second under which an on-CPU thread never sleeps
THROTTLED_SHARE = 0.2   # throttled time, as a share of the window, that slows a process
CONTENDED = 0.75        # runnable-but-waiting time at least this multiple of run time (two threads
                        # sharing one CPU each wait about as long as they run; measured 0.84)
FREEZER_FROZEN = ("FROZEN", "FREEZING", "frozen")
PAGE_FAULT_SYSCALLS = (None, "running", "nosyscall")


class ThreadState:
    """condition + the numbers behind it, and a phrase for the summary."""

    def __init__(self, condition, phrase="", numbers=None, progressing=False, target=None):
        self.condition = Condition(condition)
        self.phrase = phrase
        self.numbers = numbers or {}
        self.progressing = progressing
        self.target = target   # what a spinning thread spin-waits on: "cuda" or "lock"

    @property
    def halted(self):
        """Stopped, traced or frozen: it will not move until someone else acts."""
        return self.condition in HALTED

    def to_dict(self):
        return {"condition": self.condition, "phrase": self.phrase, "numbers": self.numbers}


def classify(view, duration, gpus=None, gpu_devices=()):
    """The ThreadState of one ThreadView over a window of `duration` seconds."""
    proc = view.proc
    kernel = proc.kernel
    n = view.n_samples
    states = view.states
    share = (lambda *keys: sum(states.get(k, 0) for k in keys) / n) if n else (lambda *keys: 0.0)
    numbers = {"cpu_s": view.cpu_seconds, "wall_s": duration}
    if view.cpu_seconds is not None and duration:
        numbers["cpu_share"] = round(view.cpu_seconds / duration, 3)
    sched = view.thread.sched
    if sched:
        numbers["run_s"] = round(sched.get("run_ns", 0) / 1e9, 3)
        numbers["runnable_wait_s"] = round(sched.get("wait_ns", 0) / 1e9, 3)

    freezer = ((kernel.get("cgroup") or {}).get("freezer") or {})
    if freezer.get("state") in FREEZER_FROZEN:
        return ThreadState(Condition.FROZEN, "frozen by its cgroup freezer (%s, %s)" % (
            freezer.get("path") or "?", freezer.get("state")), numbers)
    if n and share("T", "t") >= RUNNING_SHARE:
        tracer = kernel.get("tracer")
        if tracer:
            return ThreadState(Condition.TRACED, "stopped by its tracer pid %s (%s)" % (
                tracer.get("pid"), tracer.get("comm") or "?"), dict(numbers, tracer=tracer.get("pid")))
        pending = ((kernel.get("stop_signals") or {}).get("pending")) or []
        return ThreadState(Condition.STOPPED, "stopped by a signal (SIGSTOP, SIGTSTP, SIGTTIN or SIGTTOU; state T%s)"
                           % (", pending %s" % ", ".join(pending) if pending else ""), numbers)
    if n and share("Z", "X") >= RUNNING_SHARE:
        return ThreadState(Condition.EXITED, "exited", numbers)
    if n and share("D") >= RUNNING_SHARE:
        return _uninterruptible(view, kernel, numbers)
    cpu_share = numbers.get("cpu_share") or 0
    woken = _woken_loop(view, duration, cpu_share)
    if woken:
        return ThreadState(Condition.BLOCKED, woken, numbers)
    if n and (share("R") >= RUNNING_SHARE or cpu_share >= BUSY_CPU_SHARE):
        # A thread that hands work back and forth (the training loop and the autograd engine)
        # is caught asleep in half the samples; the kernel's CPU accounting says it computes.
        return _on_cpu(view, kernel, duration, numbers, gpu_devices, gpus or {})
    if not n:
        return ThreadState(Condition.UNKNOWN, "not sampled", numbers)
    return ThreadState(Condition.BLOCKED, "blocked in %s" % view.kernel_kind, numbers)


def _uninterruptible(view, kernel, numbers):
    faults = kernel.get("faults") or {}
    mapped = kernel.get("data_mappings") or []
    in_fault = sum(n for (state, syscall), n in view.state_syscalls.items()
                   if state == "D" and syscall in PAGE_FAULT_SYSCALLS)
    if in_fault >= view.n_samples * RUNNING_SHARE and (faults.get("majflt") or mapped):
        numbers["majflt"] = faults.get("majflt")
        files = ", ".join("%s (%.0f MB mapped)" % (m["path"], m.get("size", 0) / 1e6) for m in mapped[:3])
        return ThreadState(Condition.STORAGE, "in page faults on memory-mapped data%s (%s major faults)" % (
            ": " + files if files else "", faults.get("majflt", "?")), dict(numbers, mapped=[m["path"] for m in mapped[:3]]))
    if in_fault >= view.n_samples * RUNNING_SHARE and faults.get("majflt"):
        # Major faults with no file mapped as data: anonymous memory coming back from swap.
        return ThreadState(Condition.STORAGE, "in page faults on anonymous memory (%s major faults, no data file mapped): "
                           "swapping under memory pressure" % faults["majflt"], dict(numbers, majflt=faults["majflt"]))
    in_d = sum(n for (state, _syscall), n in view.state_syscalls.items() if state == "D")
    if view.kernel_kind == Kind.IO or in_d and view.kernel_kinds.get("io", 0) * 2 >= in_d:
        # (a thread half on a CPU, half in fdatasync: its D samples are storage all the same)
        return ThreadState(Condition.STORAGE, "in uninterruptible sleep on storage (%s)" % _top_wchan(view), numbers)
    return ThreadState(Condition.UNINTERRUPTIBLE, "in uninterruptible sleep (D, %s), not storage" % _top_wchan(view), numbers)


def _top_wchan(view):
    d_labels = [(label, n) for label, n in view.activity.most_common() if label.startswith("D:")]
    return d_labels[0][0][2:] if d_labels else "?"


def _woken_loop(view, duration, cpu_share):
    """A thread caught runnable in the samples that got almost no CPU while sleeping and waking
    many times a second is a timed wait in a loop (the GIL's 5 ms waits, a condition with a
    timeout) on a busy machine, not a computing or CPU-starved thread."""
    ctx = view.thread.ctx
    if not ctx or not duration or view.cpu_seconds is None or cpu_share >= WOKEN_CPU_SHARE:
        return None
    rate = ctx.get("voluntary", 0) / duration
    if rate < WOKEN_RATE or ctx.get("involuntary", 0) > ctx.get("voluntary", 0):
        return None
    return "woken and put back to sleep %.0f times a second with %.2f s of CPU in %.1f s: a timed wait " \
           "in a loop" % (rate, view.cpu_seconds, duration)


def _on_cpu(view, kernel, duration, numbers, gpu_devices, gpus):
    cpu = ((kernel.get("cgroup") or {}).get("cpu")) or {}
    throttled_s = (cpu.get("throttled_ns") or 0) / 1e9
    if cpu.get("nr_throttled") and duration and throttled_s >= THROTTLED_SHARE * duration:
        quota = cpu.get("quota_us")
        period = cpu.get("period_us")
        limit = " (%.0f%% of a core)" % (100.0 * quota / period) if quota and period else ""
        numbers.update(throttled_s=round(throttled_s, 2), nr_throttled=cpu["nr_throttled"])
        return ThreadState(Condition.THROTTLED, "runnable but throttled by its cgroup CPU quota%s: got %.2f s of CPU in "
                           "%.1f s, throttled %d times for %.1f s" % (
                               limit, view.cpu_seconds or 0, duration, cpu["nr_throttled"], throttled_s),
                           numbers, progressing=True)
    sched = view.thread.sched
    run, wait = sched.get("run_ns", 0) / 1e9, sched.get("wait_ns", 0) / 1e9
    # (A thread that only wakes to go back to sleep was taken out by _woken_loop before this.)
    if duration and wait >= THROTTLED_SHARE * duration and wait >= CONTENDED * run:
        return ThreadState(Condition.THROTTLED, "runnable but waiting for a CPU: %.2f s on CPU and %.2f s waiting for one "
                           "in %.1f s (more runnable threads than CPUs it may use)" % (run, wait, duration), numbers, progressing=True)
    spin = _spin_target(view, duration, gpu_devices, gpus)
    if spin:
        return ThreadState(Condition.SPINNING, spin[1], numbers, target=spin[0])
    return ThreadState(Condition.COMPUTING, "on CPU", numbers, progressing=True)


def _spin_target(view, duration, gpu_devices, gpus):
    """(what an on-CPU thread spin-waits on, "cuda" or "lock"; its phrase), or None if it computes.

    A spin-wait burns CPU without sleeping (almost no voluntary context
    switches, no syscalls) and without moving (its Python stack stays on one
    line), at a line that waits on a device or a lock.  A long C call (a
    regex, a sum) also keeps one line, so the line must say what is awaited.
    """
    if view.n_framed_samples < MIN_STACKS or view.top_stack_count < FROZEN_STACK * view.n_framed_samples:
        return None
    ctx = view.thread.ctx
    if ctx and duration and ctx.get("voluntary", 0) > SPIN_SWITCHES * duration:
        return None
    if any(label not in ("running",) for label in view.activity if view.activity[label] > 0.1 * view.n_samples):
        return None
    frame = view.user_frame()
    code = ((frame[3] or {}).get("code") if frame and len(frame) > 3 and isinstance(frame[3], dict) else "") or ""
    where = "`%s` (%s:%s)" % (code, (frame[1] or "?").rsplit("/", 1)[-1], frame[2]) if frame else "one line"
    contexts = {row.kind for _d, row in frame_table.framework_context(view.top_stack or [])}
    matches = {row.kind for _d, row in view.frame_matches}
    if gpu_devices and (frame_table.source_kind(code) == "cuda" or "cuda" in contexts or "collective" in contexts
                        or frame_table.touches_device(code)):
        gpu = _gpu_phrase(gpu_devices, gpus)
        return "cuda", "spin-waiting in a CUDA call at %s: on CPU, %s voluntary switches, stack unchanged%s" % (
            where, ctx.get("voluntary", "no") if ctx else "no count of", gpu)
    if matches & {"lock", "semaphore"}:
        return "lock", "spin-waiting on a lock at %s" % where
    return None


def _gpu_phrase(devices, gpus):
    parts = []
    for index in devices:
        dev = gpus.get(index)
        if dev is None or dev.util is None:
            continue
        text = "GPU %d %.0f%% busy" % (index, dev.util)
        if dev.has_gpm:
            text += ", SM %.1f%%" % (dev.sm or 0)
        parts.append(text)
    return "; " + "; ".join(parts) if parts else ""


def process_condition(views_of_process, states):
    """The condition that holds the whole process: frozen, stopped or traced (all its threads)."""
    halted = [states[(v.pid, v.tid)] for v in views_of_process if (v.pid, v.tid) in states
              and v.n_samples and states[(v.pid, v.tid)].halted]
    sampled = [v for v in views_of_process if v.n_samples]
    if sampled and len(halted) == len(sampled):
        return halted[0]
    return None
