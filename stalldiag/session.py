"""One inspection: run the probes over the window, return the capture.

The session watches the target and (with --children) its tree, then runs the probe list
(probes/base.py): each starts, ticks at every turn of the window's loop (the thread sampler
takes the /proc samples there, at the sampling rate; the tree is rescanned twice a second),
and stops once the window ends, returning its Section; capture.build writes them into the
capture.  py-spy and NVML sample in their own process/thread.  Whatever happens (a target
exiting, Ctrl-C, a probe failing) the capture holds what was seen up to then.
"""
import os
import platform
import socket
import sys
import time

from . import capture, procfs, targets
from .probes.base import Context, run_guarded
from .probes.file_waits import FileWaitsProbe
from .probes.flight_recorder import FlightRecorderProbe
from .probes.gil import GilProbe
from .probes.gpu import GpuProbe
from .probes.joins import JoinsProbe
from .probes.locks import FileLocksProbe
from .probes.native import NativeProbe
from .probes.objects import ObjectsProbe
from .probes.output_tail import OutputTailProbe
from .probes.resources import JobResourcesProbe
from .probes.stacks import StacksProbe
from .probes.threads import OUTSIDE_ROLES, ThreadSampler, ThreadsProbe
from .probes.wakers import WakersProbe

TREE_RESCAN_S = 0.5
FULL_RESCAN_EVERY = 4   # rescans between reads of every thread's children file (see _rescan)
SNAPSHOT_WAIT_S = 0.5   # --duration 0: time for py-spy to take a few samples


def default_probes(config=None):
    """The probes a Config asks for (every one without a Config), in the order they start, tick and
    stop: exact counting first (the window starts once it runs; only with --syscalls exact, so its
    module is not even imported otherwise), the thread sampler before the probes that read its
    samples, the samplers of the window before those that resolve at its end (at_end); the last
    lines written last of all, so that their ages are those of the report."""
    probes = [ThreadsProbe(), StacksProbe(), GpuProbe(), JobResourcesProbe(), FileLocksProbe(), WakersProbe(),
              FileWaitsProbe(), GilProbe(), JoinsProbe(), ObjectsProbe(), FlightRecorderProbe(),
              NativeProbe(dumps=0 if config is None else config.native_dumps), OutputTailProbe()]
    if config is None or config.syscalls == "exact":
        from .probes.syscall_counts import ExactCountsProbe
        probes.insert(0, ExactCountsProbe())
    return probes


class Inspection:
    """One inspection of a Config's target over its window: run() returns the finished capture."""

    def __init__(self, config, progress=None, stop_flag=None, notice=None, probes=None):
        self.config = config
        self.pid = config.pid
        self.progress = progress
        self.stop_flag = stop_flag or (lambda: None)
        self.notice = notice or (lambda message: None)
        self.probes = default_probes(config) if probes is None else probes
        self._rescans = 0

    def run(self):
        config = self.config
        root_stat = targets.check_target(self.pid)
        ctx = Context(config, ThreadSampler(time.monotonic()), self.notice, provisional=provisional_walk)
        ctx.probes = self.probes
        root_key = (self.pid, root_stat["start_time"])
        ctx.sampler.watch(root_key, role_hint="target")
        if config.children:
            self._rescan(ctx)
        else:
            ctx.skipped_children = len(_safe_descendants(self.pid))
        interrupted = None
        try:
            for probe in self.probes:
                run_guarded(probe, "start", ctx)
            if config.duration == 0:
                self._turn(ctx)
                time.sleep(SNAPSHOT_WAIT_S)
            else:
                interrupted = self._window(ctx)
        finally:
            sections, elapsed = self._stop(ctx)
        host = host_info()
        if config.host_label:
            host["hostname"] = config.host_label
        request = {"pid": self.pid, "children": config.children, "duration_s": config.duration,
                   "rate_hz": config.rate, "stack_rate_hz": config.stack_rate, "native": config.native,
                   "config": capture.config_record(config)}
        if config.discovered:
            request["discovered"] = config.discovered
        threads, stacks = sections.get("threads"), sections.get("stacks")
        window = {"start": ctx.wall_start, "duration_s": round(elapsed, 3), "samples": ctx.sampler.ticks,
                  "clock_tick": procfs.CLK_TCK,   # the unit of start_time and CPU ticks
                  "rate_hz": threads.rate_hz if threads and threads.rate_hz is not None else config.rate,
                  "stack_rate_hz": stacks.rate_hz if stacks else None, "interrupted": interrupted}
        limitations = []
        if config.native:
            limitations.append("--native: py-spy paused the target briefly at each sample "
                               "(native unwinding cannot run non-blocking)")
        return capture.build(host, request, window, list(sections.values()), limitations)

    def _window(self, ctx):
        """The sampling window: a turn of every probe at each /proc tick and tree rescan, until the
        window ends, a signal stops it (its name is returned) or everything watched exited."""
        config, sampler = self.config, ctx.sampler
        next_rescan = TREE_RESCAN_S
        while True:
            now = ctx.now()
            if now >= config.duration:
                return None
            reason = self.stop_flag()
            if reason:
                return reason
            self._turn(ctx)
            if self.progress and ctx.t is not None:
                self.progress(now, config.duration, len(sampler.live), ctx.thread_count)
            if config.children and now >= next_rescan:
                self._rescan(ctx)
                next_rescan += TREE_RESCAN_S
            if not sampler.live:
                return None   # everything we watch has exited
            due = [p.due for p in self.probes if p.due is not None and getattr(p, "_failed", None) is None]
            if config.children:
                due.append(next_rescan)
            time.sleep(max(0.0, min(due, default=now + TREE_RESCAN_S) - ctx.now()))

    def _turn(self, ctx):
        ctx.t = None
        for probe in self.probes:
            run_guarded(probe, "tick", ctx)

    def _stop(self, ctx):
        """Stop every probe in order; ({name: Section}, the window's length).  The window ends once
        the samplers have stopped: the probes that resolve at its end come after."""
        sections, elapsed = {}, None
        for probe in self.probes:
            if probe.at_end and elapsed is None:
                elapsed = ctx.now()
            ctx.sections[probe.name] = sections[probe.name] = _stopped(probe, ctx)
        return sections, ctx.now() if elapsed is None else elapsed

    def _rescan(self, ctx):
        """Watch processes new in the tree.  The children files of the threads already watched
        are read through held fds, and only new pids are looked up: ~0.5 ms for 8 processes x
        12 threads, not 4 ms."""
        sampler = ctx.sampler
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
                for key in map(targets.process_key, _safe_descendants(self.pid)):
                    if key is not None and key not in sampler.records:
                        ctx.joined(sampler.watch(key, role_hint="descendant"))
                return
            for kid in kids:
                if kid in seen or kid in sampler.live:
                    continue
                seen.add(kid)
                key = targets.process_key(kid)
                if key is not None and key not in sampler.records:
                    ctx.joined(sampler.watch(key, role_hint="descendant"))
                    queue.append(kid)


def _stopped(probe, ctx):
    """probe.stop(ctx), or its failed() Section when it raises; a probe that failed earlier in
    the window is still stopped (a tracer detached, recorders ended) and says so."""
    earlier = getattr(probe, "_failed", None)
    try:
        section = probe.stop(ctx)
    except Exception as exc:
        return probe.failed(earlier or "%s in stop(): %s" % (type(exc).__name__, exc))
    if earlier:
        section.limitations.append("%s: the probe failed during the window (%s): only what it saw "
                                   "before is reported" % (probe.name, earlier))
    return section


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


def provisional_walk(ctx):
    """(pids on the wait-for chain of a provisional diagnosis of what the probes saw so far, or
    None when it cannot be made; whether a closed mechanism already settles it): the objects and
    native probes read only the chain's processes (its walk: 15 ms on an 8 x 12 tree)."""
    from .diagnosis import settled_by_walk, walk_of
    try:
        window = {"start": ctx.wall_start, "duration_s": round(ctx.now(), 3), "samples": ctx.sampler.ticks,
                  "clock_tick": procfs.CLK_TCK, "rate_hz": ctx.config.rate}
        request = {"pid": ctx.config.pid, "children": ctx.config.children, "duration_s": ctx.config.duration}
        provisional = capture.build({}, request, window, list(ctx.sections.values()), cleaned=False)
        walk = walk_of(provisional)
    except Exception:   # noqa: BLE001 - a provisional verdict that fails leaves the choice to the caps
        return None, False
    return ({view.pid for view in walk.chain} if walk is not None else set()), settled_by_walk(walk)

