"""Where a busy thread's CPU goes below Python: a few native stack samples of the busiest processes.

py-spy's Python frames stop at the call into C: a thread at 100% of a core "in" `pattern.match` or
`loss.backward()` spends it in a regex engine, an ATen kernel, an OpenMP barrier or the CUDA driver,
and only the native frames say which.  Native unwinding must stop the target for the moment of
each sample (py-spy --native), so it is not done over the window: at its end, for at most
MAX_PROCESSES processes whose threads ran most of the window (those on a provisional verdict's
chain first), `--native-dumps` `py-spy dump --native` snapshots, SPACING_S apart.  Each stops the process for the time of one unwind (a few ms: the
overhead is measured in docs/benchmarks.md).  A stop, however short, is one: it is opt-in
(--native-dumps N); --native (every sample native) makes it redundant.
"""
import time
from collections import Counter
from typing import Optional

from ..records import typed_record
from .base import Probe, Section
from .file_waits import syscall_share
from .stacks import dumped_tid, find_pyspy, pyspy_native_dump
from .thread_ids import ThreadIdMap

MAX_PROCESSES = 2
MIN_RUNNING = 0.5          # share of a thread's /proc samples on a CPU
SPACING_S = 0.1
MAX_FRAMES = 24            # leaf-first frames kept per sample


def busy_processes(records, limit=MAX_PROCESSES):
    """[(pid, [tid])] of the processes with threads on a CPU most of the window, busiest first."""
    found = []
    for record in records:
        tids = [tid for tid, thread in record.threads.items()
                if thread.samples and syscall_share(thread.samples, ("running",)) >= MIN_RUNNING]
        if tids:
            found.append((record.pid, tids))
    found.sort(key=lambda item: -len(item[1]))
    return found[:limit]


def sample(pid, tids, dumps, binary=None):
    """{tid: [[frames leaf first, count], ...]} of `dumps` native snapshots of pid; frames are
    [function, file, line]."""
    counts = {tid: Counter() for tid in tids}
    ids = ThreadIdMap()
    for i in range(dumps):
        if i:
            time.sleep(SPACING_S)
        for thread in pyspy_native_dump(pid, binary) or []:
            tid = dumped_tid(pid, thread, ids)
            if tid not in counts:
                continue
            frames = tuple((f.get("name") or "?", f.get("filename") or "", f.get("line") or 0)
                           for f in (thread.get("frames") or [])[:MAX_FRAMES])
            if frames:
                counts[tid][frames] += 1
    return {str(tid): [[list(map(list, frames)), n] for frames, n in c.most_common()] for tid, c in counts.items() if c}


@typed_record
class NativeSection(Section):
    """capture["native"]: {"dumps": n, "seconds": s, "processes": {pid: {tid: [[frames, n], ...]}}},
    or None when no process was busy (or native sampling was off)."""
    native: Optional[dict] = None


class NativeProbe(Probe):
    """At the window's end: native stack snapshots of the busiest processes."""

    name = "native"
    Section = NativeSection
    at_end = True

    def __init__(self, dumps=0):
        self.dumps = dumps

    def stop(self, ctx):
        if self.dumps <= 0:
            return self.Section()
        binary = find_pyspy()
        if binary is None:
            return self.Section()
        live = [r for r in ctx.sampler.records.values() if r.exited_at is None]
        busy = busy_processes(live)
        # the busy processes on a provisional verdict's chain first (each snapshot costs the target
        # a stop and us a py-spy start), else the busiest
        from .objects import chain_pids
        on_chain = chain_pids(ctx) if busy else None
        if on_chain:
            busy = [item for item in busy if item[0] in on_chain][:MAX_PROCESSES] or busy[:1]
        if not busy:
            return self.Section()
        start = time.monotonic()
        processes = {}
        for pid, tids in busy:
            got = sample(pid, tids, self.dumps, binary)
            if got:
                processes[str(pid)] = got
        if not processes:
            return self.Section(limitations=["native frames of the busy threads: py-spy --native gave none"])
        return self.Section(native={"dumps": self.dumps, "seconds": round(time.monotonic() - start, 3),
                                    "processes": processes})
