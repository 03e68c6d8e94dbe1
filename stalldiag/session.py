"""One inspection: run every probe concurrently over the window, return a capture.

The thread sampler runs on this thread at the sampling rate and rescans
the process tree twice a second; py-spy and NVML sample in their own
process/thread.  Whatever happens (a target exiting, Ctrl-C, a probe
failing) the capture holds what was seen up to then.
"""
import math
import os
import platform
import random
import socket
import sys
import time

from . import __version__, capture, fds, procfs, sources, targets
from .probes import file_waits, gil, joins, output_tail
from .probes.gpu import GpuProbe
from .probes.locks import LockWatch
from .probes.resources import ResourceProbe
from .probes.stacks import StackProbe
from .probes.threads import NANOSLEEPS, ThreadSampler
from .probes.wakers import Wakers

TREE_RESCAN_S = 0.5
FULL_RESCAN_EVERY = 4   # rescans between reads of every thread's children file (see _rescan)
# py-spy costs ~2 ms per sample of a 12-thread process (measured: ~600 process_vm_readv
# calls) and ~10 ms to attach, so stacks follow what a process does *now*, measured over
# its first DECIDE_AFTER_S of /proc samples: one using >= BUSY_CPU_SHARE of a core, or with a
# thread runnable (R) in >= BUSY_RUNNABLE_SHARE of its samples (wanting a CPU it does not get:
# throttled by a cgroup quota, or on an oversubscribed machine; its stack moves as a busy
# one's does, slowly), is recorded at the asked rate (within BUSY_STACK_SAMPLES_PER_S for the
# tree); an idle one
# gets one `py-spy dump` (its blocked threads have the same stack at every sample), again at
# the window's end if its threads moved, and a recorder if it turns busy later.
# No process goes unsampled.
BUSY_CPU_SHARE = 0.1
BUSY_RUNNABLE_SHARE = 0.25
RUNNABLE_MIN_SAMPLES = 4   # fewer say little: one R sample of two is a thread woken just then
BUSY_STACK_SAMPLES_PER_S = 24
DECIDE_AFTER_S = 0.4
ACTIVITY_CHECK_S = 1.0     # how often an idle process is checked for turning busy
MIN_RECORD_S = 1.0         # sampling a late recorder gets before it is asked to stop
IDLE_STACK_SAMPLES = 10    # --native and --duration 0 record every process: idle ones at 1 Hz
IDLE_STACK_RATE = 1
# Thread-samples per second above which the rate is lowered, to keep our
# own CPU use near 2-3% of a core on large trees.
THREAD_READS_PER_S = 1500
# Each /proc tick comes at a random point within half an interval of its place on the fixed
# schedule (as many ticks as at a fixed rate, none in step with the target): at a fixed rate, a loop
# whose period divides the interval (20 ms at 5 Hz) is caught at the same point of its period
# in every sample, e.g. always in its wait, never computing (fixtures/workloads/paced_training.py).
TICK_JITTER = 0.5


class Interrupted(Exception):
    pass

# processes sampled because an inspected one waits on them, not because they are in its tree
OUTSIDE_ROLES = capture.OUTSIDE_ROLES


class Inspection:
    """One inspection of a Config's target over its window: run() returns the finished capture."""

    def __init__(self, config, progress=None, stop_flag=None, notice=None):
        self.config = config
        self.pid = config.pid
        self.children = config.children
        self.duration = config.duration
        self.rate = config.rate
        self.stack_rate = config.stack_rate
        self.native = config.native
        self.progress = progress
        self.stop_flag = stop_flag or (lambda: None)
        self.limitations = []
        if config.native:
            self.limitations.append("--native: py-spy paused the target briefly at each sample "
                                    "(native unwinding cannot run non-blocking)")
        self.syscalls = config.syscalls
        self.syscall_backend = config.syscall_backend
        self.notice = notice or (lambda message: None)
        self.locals = config.locals
        self._busy_stack_rate = self.stack_rate
        self._rescans = 0
        self._by_activity = False
        self._snapshot_signatures = {}   # pid -> _signature when its snapshot was asked for
        self._activity_marks = {}        # pid -> (t, CPU ticks) at its last activity check
        self._not_python = set()

    def run(self):
        root_stat = targets.check_target(self.pid)
        wall_start = time.time()
        t0 = time.monotonic()
        sampler = ThreadSampler(t0)
        root_key = (self.pid, root_stat["start_time"])
        sampler.watch(root_key, role_hint="target")
        self.lock_watch = LockWatch()
        self.wakers = Wakers()
        skipped_children = 0
        if self.children:
            self._rescan(sampler, root_key)
        else:
            skipped_children = len(_safe_descendants(self.pid))

        counter = None
        if self.syscalls == "exact" and self.duration == 0:
            self.limitations.append("--syscalls exact needs a window: no counts with --duration 0")
        elif self.syscalls == "exact":
            counter = self._start_exact_counts(sampler)
        if counter is not None:
            # the window starts once counting runs, so both cover the same span
            t0 = time.monotonic()
            sampler.t0 = t0
            wall_start = sampler.wall_start = time.time()
        stack_rate = self.stack_rate if self.duration else 20
        stacks = StackProbe(rate=stack_rate, duration=max(self.duration, 1), native=self.native)
        stacks.t0 = t0
        # a snapshot (--duration 0) and --native record every process from the start, at a rate
        # set by its CPU since it started; otherwise _choose_stacks decides by what it does now
        self._by_activity = bool(self.duration) and not self.native
        if stacks.start() and not self._by_activity:
            busy = sum(1 for record in sampler.records.values() if _cpu_share(record) >= BUSY_CPU_SHARE)
            if busy * stacks.rate > BUSY_STACK_SAMPLES_PER_S:
                self._busy_stack_rate = max(IDLE_STACK_RATE, BUSY_STACK_SAMPLES_PER_S // busy)
            for record in list(sampler.records.values()):
                self._sample_stacks_of(stacks, record)
        gpu = GpuProbe()
        gpu.start(t0)
        resources = ResourceProbe()
        resources.start(sorted({r.pid for r in sampler.records.values()}))

        interrupted = None
        effective_rate = self.rate
        rate_notes = set()
        next_rescan = TREE_RESCAN_S
        try:
            if self.duration == 0:
                self._follow_lock_holders(sampler, stacks, sampler.tick())
                time.sleep(0.5)   # time for py-spy to take a few samples
            else:
                next_tick = base_tick = 0.0
                while True:
                    now = time.monotonic() - t0
                    if now >= self.duration:
                        break
                    if stacks.usable:
                        stacks.stop_due(self.duration - now)
                    reason = self.stop_flag()
                    if reason:
                        interrupted = reason
                        break
                    if now >= next_tick:
                        self._follow_lock_holders(sampler, stacks, sampler.tick())
                        if stacks.usable and self._by_activity:
                            self._choose_stacks(sampler, stacks, time.monotonic() - t0)
                        threads = sum(len(sampler.records[k].threads) for k in sampler.live.values())
                        effective_rate = min(self.rate, max(1.0, THREAD_READS_PER_S / max(threads, 1)))
                        if effective_rate < self.rate:
                            rate_notes.add(round(effective_rate, 1))
                        base_tick += 1.0 / effective_rate
                        next_tick = base_tick + random.uniform(-TICK_JITTER, TICK_JITTER) / effective_rate
                        if self.progress:
                            self.progress(now, self.duration, len(sampler.live), threads)
                    if self.children and now >= next_rescan:
                        for record in self._rescan(sampler, root_key):
                            self._sample_stacks_of(stacks, record)
                        next_rescan += TREE_RESCAN_S
                    if not sampler.live:
                        break  # everything we watch has exited
                    time.sleep(max(0.0, min(next_tick, next_rescan if self.children else next_tick)
                                   - (time.monotonic() - t0)))
        finally:
            exact = self._stop_exact_counts(counter)
            if self._by_activity:
                stacks.snapshot_at_end([pid for pid in stacks.snapshots if pid not in stacks.rates
                                        and self._moved_since_snapshot(sampler, pid)])
            sampler.finish()
            # py-spy's grace counts from the window's end, so finish() above overlaps it
            past_end = max(0.0, time.monotonic() - t0 - self.duration) if self.duration else 0.0
            profiles, frames = stacks.stop(grace=max(0.0, stacks.STOP_GRACE_S - past_end))
            gpu.stop()
            resources.stop(sorted({r.pid for r in sampler.records.values()}),
                           also=[int(pid) for pid in gpu.processes])
        elapsed = time.monotonic() - t0
        local_values = {}
        if self.locals:
            from .probes.stacks import dump_locals
            local_values = dump_locals(sorted({pid for pid, _tid in profiles}))
        sources.annotate(frames, _frame_owner(profiles))

        if stacks.limitation:
            self.limitations.append(stacks.limitation)
        self._note_stack_sampling(stacks)
        if stacks.late:
            self.limitations.append("Python stacks of %d processes from one snapshot: their py-spy did not stop "
                                    "within %.1f s of the window's end (pids %s)"
                                    % (len(stacks.late), stacks.STOP_GRACE_S, ", ".join(map(str, stacks.late[:5]))))
        for pid, taken, span, started in stacks.thin:
            self.limitations.append("py-spy took only %d stack sample%s of pid %d in %.1f s at %d Hz, recording from "
                                    "%.1f s into the window (started late, starved of CPU, or failing to read the "
                                    "process): its Python stacks say less"
                                    % (taken, "" if taken == 1 else "s", pid, span, stacks.rates[pid], started))
        if rate_notes:
            self.limitations.append(
                "sampling rate lowered to %s Hz for a large tree (asked for %s Hz)"
                % (min(rate_notes), self.rate))
        if not gpu.available:
            self.limitations.append("GPU: not available (%s)" % gpu.reason)
        if not resources.result.get("available"):
            self.limitations.append("resources: not measured (%s)" % resources.result.get("reason"))

        unix_peers = fds.unix_peers()
        tcp_peers = sampler.sockets.tcp_peers()
        waits = self._resolve_waits(sampler, profiles, frames)
        # once, at the end: what each live process last wrote (~0.3 ms a process, measured)
        tails = output_tail.collect(sorted({r.pid for r in sampler.records.values() if r.exited_at is None}))
        host = host_info()
        if self.config.host_label:
            host["hostname"] = self.config.host_label
        request = {"pid": self.pid, "children": self.children, "duration_s": self.duration,
                   "rate_hz": self.rate, "stack_rate_hz": self.stack_rate, "native": self.native,
                   "config": capture.config_record(self.config)}
        if self.config.discovered:
            request["discovered"] = self.config.discovered
        return capture.build(
            tool_version=__version__,
            host=host,
            request=request,
            window={"start": wall_start, "duration_s": round(elapsed, 3), "samples": sampler.ticks,
                    "clock_tick": procfs.CLK_TCK,   # the unit of start_time and CPU ticks
                    "rate_hz": round(effective_rate, 2), "stack_rate_hz": stacks.rate,
                    "interrupted": interrupted},
            records=sampler.records,
            profiles=profiles,
            frames=frames,
            stack_failures=stacks.failures,
            gpu=gpu.to_dict(),
            skipped_children=skipped_children,
            limitations=self.limitations,
            unix_peers=unix_peers,
            tcp_peers=tcp_peers,
            exact=exact,
            local_values=local_values,
            thread_matching=(stacks.thread_ids.method, stacks.unmatched),
            stack_rates=stacks.rates,
            stack_snapshots=stacks.snapshots,
            output_tail=tails,
            resources=resources.to_dict(),
            **waits
        )

    def _start_exact_counts(self, sampler):
        from .probes import syscall_counts
        failed = []
        while True:
            # a backend that is installed may still fail to attach (bpftrace with no tracefs
            # mounted, perf under a strict perf_event_paranoid): the next one is tried
            backend, tried = syscall_counts.choose_backend(self.syscall_backend, skip=[n for n, _e in failed])
            if backend is None:
                break
            self.notice("stalldiag: attaching exact syscall counting (%s)..." % backend.name)
            counter = backend([pid for pid, _start in sampler.live.values()])
            if counter.start():
                if failed:
                    self.limitations.append("--syscalls exact: %s, so %s counted" % (
                        "; ".join("%s failed: %s" % (n, e) for n, e in failed), backend.name))
                return counter
            failed.append((backend.name, counter.error))
        if failed:
            self.limitations.append("--syscalls exact: %s" % "; ".join("%s failed: %s" % (n, e) for n, e in failed))
        else:
            self.limitations.append("--syscalls exact: no backend works here (tried %s; install bpftrace, "
                                    "linux-perf or strace, and run as root)" % (", ".join(tried) or "none"))
        return None

    def _stop_exact_counts(self, counter):
        if counter is None:
            return None
        stopped = time.monotonic()
        counts = counter.stop()
        notes = []
        if not counter.attributes_new_tasks:
            notes.append("%s counts a thread or process born during the window into the one that "
                         "created it" % counter.name)
        if counter.warning:
            self.limitations.append(counter.warning)
        return {
            "backend": counter.name,
            "counted_s": round(stopped - counter.attached_at, 3),
            "notes": notes,
            "warning": counter.warning,
            "counts": [[pid, tid, per] for (pid, tid), per in sorted(counts.items(), key=lambda kv: (kv[0][0], kv[0][1] or 0))],
            # failed calls, same rows: [pid, tid, {syscall: {"errors": n, "errnos": {name: n}}}];
            # "errnos" only where the backend tells them apart (errnos_known)
            "errnos_known": bool(counter.gives_errnos),
            "errors": [[pid, tid, per] for (pid, tid), per in sorted(counter.failures.items(),
                                                                   key=lambda kv: (kv[0][0], kv[0][1] or 0))],
        }

    def _rescan(self, sampler, root_key):
        """Watch processes new in the tree; return their records.  The children files of
        the threads already watched are read through held fds, and only new pids are
        looked up: ~0.5 ms for 8 processes x 12 threads, not 4 ms."""
        born = []
        self._rescans += 1
        full = self._rescans % FULL_RESCAN_EVERY == 1   # also catches orphans adopted by a subreaper
        queue = [pid for pid, key in sampler.live.items()
                 if sampler.records[key].role_hint not in OUTSIDE_ROLES]
        seen = set(queue)
        while queue:
            try:
                kids = sampler.children(queue.pop(), full)
            except procfs.ProcfsError:
                continue
            if kids is None:   # no children files in this kernel: the slow way
                return born + [sampler.watch(key, role_hint="descendant")
                               for key in map(targets.process_key, _safe_descendants(self.pid))
                               if key is not None and key not in sampler.records]
            for kid in kids:
                if kid in seen or kid in sampler.live:
                    continue
                seen.add(kid)
                key = targets.process_key(kid)
                if key is not None and key not in sampler.records:
                    born.append(sampler.watch(key, role_hint="descendant"))
                    queue.append(kid)
        return born

    def _follow_lock_holders(self, sampler, stacks, t):
        """A thread blocked in flock/fcntl(F_SETLKW) at tick t: sample the lock's holder too,
        even outside the tree (one /proc/locks read per new wait)."""
        for pid in self.lock_watch.new_holders(sampler, t) + self.lock_watch.polled_holders(sampler, t):
            key = targets.process_key(pid)
            if key is not None and key not in sampler.records:
                self._sample_stacks_of(stacks, sampler.watch(key, role_hint="lock-holder"))
        # the other end of a pipe, socket or shared lock waited on, found host-wide (probes/wakers.py)
        for pid, role in self.wakers.new_wakers(sampler, t):
            key = targets.process_key(pid)
            if key is not None and key not in sampler.records:
                self._sample_stacks_of(stacks, sampler.watch(key, role_hint=role))

    def _resolve_waits(self, sampler, profiles, frames):
        """Capture-level waits, resolved once at the end of the window: file locks, and (only
        for threads that qualify) lock/marker file polls and the GIL's holder."""
        inspected = {record.pid for record in sampler.records.values()}
        in_tree = {r.pid for r in sampler.records.values() if r.role_hint not in OUTSIDE_ROLES}
        live = [r for r in sampler.records.values() if r.exited_at is None]
        return {"locks": self.lock_watch.entries(inspected, in_tree),
                "file_waits": file_waits.resolve(live, profiles, frames),
                "gil": gil.resolve(live, profiles, frames),
                "joins": joins.resolve(live, profiles, frames),
                "wakers": self._wakers_entries(in_tree)}

    def _wakers_entries(self, in_tree):
        entries = self.wakers.entries(in_tree)
        self.limitations.extend(self.wakers.limitations)
        return entries

    def _choose_stacks(self, sampler, stacks, now):
        """Record the stacks of processes busy now, snapshot the idle ones, and start a
        recorder for an idle one that turns busy (see BUSY_CPU_SHARE)."""
        decide_after = min(DECIDE_AFTER_S, self.duration / 10.0)
        newly, busy = [], []
        for key in list(sampler.live.values()):
            record = sampler.records[key]
            if record.pid in stacks.rates or record.exited_at is not None:
                continue
            if record.pid in stacks.snapshots:
                mark = self._activity_marks.get(record.pid)
                if mark and record.last_seen - mark[0] >= ACTIVITY_CHECK_S:
                    turned_busy = _busy_since(record, mark)
                    self._activity_marks[record.pid] = (record.last_seen, _cpu_ticks(record.stat_last))
                    rate = self._busy_rate(stacks, 1)
                    if turned_busy and self.duration - now >= stacks.lead(rate) + MIN_RECORD_S:
                        stacks.add(record.pid, rate)
                continue
            if record.last_seen - record.first_seen >= decide_after and record.pid not in self._not_python:
                if not _python(record):
                    self._not_python.add(record.pid)   # a compiler, a shell: no Python stacks to take
                    continue
                if _busy_since(record, (record.first_seen, _cpu_ticks(record.stat_first))):
                    busy.append(record)
                elif _looks(record) < RUNNABLE_MIN_SAMPLES and _caught_runnable(record):
                    continue   # ticks come at random intervals: look again before calling it idle
                newly.append(record)
        rate = self._busy_rate(stacks, len(busy))
        for record in newly:
            if record in busy:
                stacks.add(record.pid, rate)
            else:
                self._snapshot_signatures[record.pid] = _signature(record)
                self._activity_marks[record.pid] = (record.last_seen, _cpu_ticks(record.stat_last))
                stacks.snapshot(record.pid)

    def _busy_rate(self, stacks, count):
        """Stack rate for `count` more busy processes: the asked rate, within the tree's budget."""
        left = BUSY_STACK_SAMPLES_PER_S - sum(stacks.rates.values())
        return max(1, min(stacks.rate, left // max(count, 1)))

    def _moved_since_snapshot(self, sampler, pid):
        """Did a thread of this snapshotted process end the window somewhere else (another
        call or wait, running, or a thread the snapshot did not see)?"""
        key = sampler.live.get(pid)
        before = self._snapshot_signatures.get(pid)
        if key is None or before is None:
            return False
        now = _signature(sampler.records[key])
        return any(tid not in before or sig != before[tid] or sig[0] == "running" for tid, sig in now.items())

    def _note_stack_sampling(self, stacks):
        """Say in the limitations how stacks were sampled where that was not the asked rate."""
        recorded = stacks.rates
        snapped = {pid: times for pid, times in stacks.snapshots.items() if pid not in recorded and times}
        if snapped:
            again = sum(1 for times in snapped.values() if len(times) > 1)
            self.limitations.append(
                "Python stacks of %d idle process%s (under %d%% of a core when sampled) come from one py-spy "
                "snapshot each%s; their blocked threads sit in the calls /proc samples at %s Hz (each "
                "process's stack sampling is in the JSON report)"
                % (len(snapped), "" if len(snapped) == 1 else "es", round(BUSY_CPU_SHARE * 100),
                   ", %d taken again at the window's end (their threads moved)" % again if again else "",
                   self.rate))
        lowered = sorted(pid for pid, hz in recorded.items() if hz < stacks.rate)
        if lowered:
            by_rate = {}
            for pid in lowered:
                by_rate.setdefault(recorded[pid], []).append(pid)
            self.limitations.append(
                "Python stack rate (asked for %d Hz) lowered for %d of %d recorded processes: %s (each "
                "process's rate is in the JSON report)"
                % (stacks.rate, len(lowered), len(recorded),
                   ", ".join("%d at %d Hz" % (len(p), hz) for hz, p in sorted(by_rate.items()))))

    def _sample_stacks_of(self, stacks, record):
        if self._by_activity:
            return   # decided by _choose_stacks once its activity is known
        if record.exited_at is None and _python(record):
            rate = stacks.rate
            if self.duration:   # a --duration 0 snapshot samples everything at full rate
                busy = _cpu_share(record) >= BUSY_CPU_SHARE
                idle_rate = max(IDLE_STACK_RATE, math.ceil(IDLE_STACK_SAMPLES / self.duration))
                rate = min(rate, self._busy_stack_rate if busy else idle_rate)
            stacks.add(record.pid, rate)


def _frame_owner(profiles):
    """frame index -> a pid whose filesystem view holds that frame's file."""
    owner = {}
    for (pid, _tid), profile in profiles.items():
        for stack in profile["stacks"]:
            for index in stack:
                owner.setdefault(index, pid)
    return owner.get


def _python(record):
    return capture.looks_like_python(record.pid, record.static.get("exe")) is not False


def _cpu_ticks(stat):
    return (stat["utime"] + stat["stime"]) if stat else 0


def _recent_share(record, mark):
    """Cores the process used since mark = (t, CPU ticks), from its /proc stat."""
    span = record.last_seen - mark[0]
    if span <= 0 or not record.stat_last:
        return 0.0
    return (_cpu_ticks(record.stat_last) - mark[1]) / procfs.CLK_TCK / span


def _busy_since(record, mark):
    """Busy since mark = (t, CPU ticks): it used BUSY_CPU_SHARE of a core, or one of its threads
    was runnable in BUSY_RUNNABLE_SHARE of its samples (see BUSY_RUNNABLE_SHARE)."""
    return _recent_share(record, mark) >= BUSY_CPU_SHARE or _runnable_share(record, mark[0]) >= BUSY_RUNNABLE_SHARE


def _runnable_share(record, since):
    """The largest share of samples since `since` in which one thread was runnable (R), over
    threads with RUNNABLE_MIN_SAMPLES samples or more."""
    best = 0.0
    for thread in record.threads.values():
        runnable = total = 0
        for sample in reversed(thread.samples):   # newest first: only the samples since the mark
            if sample[0] < since:
                break
            total += 1
            runnable += sample[1] == "R"
        if total >= RUNNABLE_MIN_SAMPLES:
            best = max(best, runnable / total)
    return best


def _looks(record):
    """How many /proc samples the process's threads have had (its oldest thread's count)."""
    return max((len(thread.samples) for thread in record.threads.values()), default=0)


def _caught_runnable(record):
    return any(sample[1] == "R" for thread in record.threads.values() for sample in thread.samples)


def _signature(record):
    """{tid: (syscall or "running", wait detail)} of the threads seen at the last tick (a sleep's
    detail is its time left, different at every look: the call alone says where it is)."""
    return {tid: (thread.samples[-1][2], None if thread.samples[-1][2] in NANOSLEEPS else thread.samples[-1][3])
            for tid, thread in record.threads.items() if thread.samples and thread.last_seen == record.last_seen}


def _cpu_share(record):
    """CPU the process used since it started, in cores (0.5 = half a core on average)."""
    stat = record.stat_first
    try:
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0.0
    if not stat:
        return 0.0
    age = max(0.5, uptime - stat["start_time"] / procfs.CLK_TCK)
    return (stat["utime"] + stat["stime"]) / procfs.CLK_TCK / age


def _safe_descendants(pid):
    try:
        return targets.descendants(pid)
    except procfs.ProcfsError:
        return []


def host_info():
    return {
        "hostname": socket.gethostname(),
        "machine": platform.machine(),
        "kernel": platform.release(),
        "cpu_count": os.cpu_count(),
        "clk_tck": procfs.CLK_TCK,
        # wall time of boot: a process's start_time (ticks since boot) as a date, its age
        "boot_time": procfs.boot_time(),
        "python": sys.version.split()[0],
    }
