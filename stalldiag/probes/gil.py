"""Which thread holds the GIL, asked only where a thread seems to starve on it.

A thread waiting for the GIL sits in futex (a timed wait, woken every 5 ms to ask
the holder to drop it) at a plain Python line that is no lock, queue or event
wait; meanwhile the holder runs.  /proc cannot tell that futex from any other, so
for a process that shows both at once, one `py-spy dump --json --nonblocking` at the
end of the window reads which thread owns the GIL ("owns_gil", from the
interpreter's own state).  Processes that do not show the pattern cost nothing.
"""

from typing import Optional

from ..records import typed_record
from .. import procfs
from ..knowledge import frames as frame_table
from .base import Section, StackWaitProbe
from .file_waits import syscall_share
from .stacks import dumped_tid, find_pyspy, most_common_stack, pyspy_dump
from .thread_ids import ThreadIdMap

MIN_SHARE = 0.5     # of a thread's /proc samples: in futex (the waiter), running (the other)
WAITER_CPU = 0.1    # a GIL-starved thread gets almost no CPU: at most this share of the window
MAX_DUMPS = 16      # processes asked at most, 8 at a time: a large tree costs one round, not one per process


def _cpu_share(thread):
    span = thread.last_seen - thread.first_seen
    cpu = (thread.cpu_last - thread.cpu_first) / procfs.CLK_TCK if thread.cpu_first is not None else 0
    return cpu / span if span > 0 else None


def _running(thread):
    samples = thread.samples
    if samples and sum(1 for s in samples if s[1] == "R") / len(samples) >= MIN_SHARE:
        return True
    share = _cpu_share(thread)
    return share is not None and share >= MIN_SHARE


def _starving(thread):
    """In futex most of the window, or caught runnable between its 5 ms timed waits, with
    almost no CPU either way."""
    share = _cpu_share(thread)
    if share is not None and share > WAITER_CPU:
        return False
    futex = syscall_share(thread.samples, ("futex",))
    asleep = [s for s in thread.samples if s[1] != "R"]
    return futex >= MIN_SHARE or bool(asleep) and sum(1 for s in asleep if s[2] == "futex") == len(asleep)


def candidates(records, profiles, frames):
    """{pid: [waiting tids]} of Python processes where a thread waits in futex at a line that
    is no known wait while another of its threads runs."""
    found = {}
    for record in records:
        waiting, running = [], []
        for tid, thread in record.threads.items():
            profile = profiles.get((record.pid, tid))
            if profile and _starving(thread):
                stack = most_common_stack(profile["stacks"])
                if stack and not frame_table.match_stack([frames[i] for i in stack]):
                    waiting.append(tid)
            elif profile and _running(thread):   # a thread with no Python state (OpenMP) cannot be it
                running.append(tid)
        if waiting and any(t not in waiting for t in running):
            found[record.pid] = waiting
    return found


def gil_holder(pid):
    """The kernel tid owning the GIL per one non-blocking py-spy dump; (tid or None, error or None)."""
    if find_pyspy() is None:
        return None, "py-spy not found"
    threads = pyspy_dump(pid)
    if threads is None:
        return None, "py-spy dump failed"
    for thread in threads:
        if thread.get("owns_gil"):
            return dumped_tid(pid, thread, ThreadIdMap()), None
    return None, None


def resolve(records, profiles, frames):
    """capture["gil"], or None when no process shows a thread starving on the GIL (py-spy is
    asked once per process that shows the pattern)."""
    found = candidates(records, profiles, frames)
    if not found:
        return None
    from concurrent.futures import ThreadPoolExecutor   # only when a GIL wait is seen
    out = {}
    asked = sorted(found.items())[:MAX_DUMPS]
    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = dict(zip([pid for pid, _w in asked], pool.map(gil_holder, [pid for pid, _w in asked])))
    for pid, waiting in asked:
        holder, error = answers[pid]
        if holder in waiting:
            continue   # the futex-waiting thread owns the GIL itself: a wait inside C code, not the GIL
        entry = {"holder_tid": holder, "waiting_tids": sorted(waiting), "how": "py-spy dump owns_gil"}
        if error:
            entry["error"] = error
        out[str(pid)] = entry
    return out or None


@typed_record
class GilSection(Section):
    """capture["gil"]: {pid: {holder_tid, waiting_tids, how}}, None when no thread starves on it."""
    gil: Optional[dict] = None


class GilProbe(StackWaitProbe):
    """At the window's end: which thread holds the GIL, where a thread seems to starve on it."""

    name = "GIL"
    Section = GilSection
    resolve = staticmethod(resolve)
