"""The objects behind the waits: what a barrier, queue, event, lock, pool or future holds now.

A thread blocked in `Barrier.wait` is, to /proc, a futex; to py-spy, a frame whose `self` is
`<Barrier at 0x7f..>`.  How many parties the barrier expects and how many arrived, a queue's
bound and size, whether an event was ever set, who owns an RLock: those are fields of the
object, read here from the target's memory by each CPython version's layout (stalldiag/pyobjects:
/proc/PID/mem, never code run in the target, never a stop).

At the window's end, for each process with a thread that waited most of the window inside a
function of the blocking table (knowledge/blocking.py: Condition.wait, Queue.get, Future.result,
Popen.wait, ...), one `py-spy dump --locals --nonblocking` (shared with the other end-of-window
probes) gives the frames' locals with their addresses; the objects of the waiting frames (and of
their callers up to the first frame of the user's code) are decoded into typed facts.  A process
with no such thread costs nothing.  Values are never copied raw: facts are counts, states and
thread idents; the strings an object holds (a Popen's arguments, an address) are redacted.
"""
import re
import time
from typing import Optional

from ..records import typed_record
from .. import sources
from ..knowledge import blocking
from ..knowledge import frames as frame_table
from ..redact import redact_text
from .base import Section, StackWaitProbe
from .file_waits import dump_locals_raw, syscall_share
from .stacks import most_common_stack

WAIT_SYSCALLS = ("futex", "poll", "ppoll", "select", "pselect6", "epoll_wait", "epoll_pwait", "wait4",
                 "waitid", "read", "recvfrom", "recvmsg", "accept", "accept4", "connect", "clock_nanosleep",
                 "nanosleep", "semtimedop", "sem_timedwait")
MIN_WAIT_SHARE = 0.5
MAX_PROCESSES = 8          # one dump each, at the window's end
MAX_OBJECTS_PER_THREAD = 4
MAX_FRAMES = 6             # leaf-first frames whose locals are read, per thread
BUDGET_S = 3.0             # for every process's reads together
OBJECT = re.compile(r"^<([\w.]+) at (0x[0-9a-f]+)>$")
MAX_TEXT = 200
# reprs of things that are not what a thread waits on (a closure's cell, a predicate)
NOT_WAITED_ON = {"function", "cell", "method", "builtin_function_or_method", "module", "type", "frame", "code",
                 "generator", "coroutine"}
# locals that are a blocking function's own machinery: Condition.wait's per-call lock is always held
INTERNAL = {("Condition.wait", "waiter"), ("wait", "waiter")}


# the lock a line of the user's code takes: `with self._lock:`, `lock.acquire()`, `with a.b as c:`
DOTTED = re.compile(r"[A-Za-z_][\w.]*")


def lock_expression(line):
    """The dotted name a line takes as a lock (`self._lock`: knowledge.frames.lock_taken), or None
    (no lock, or one taken through a subscript, which a local's attributes do not reach)."""
    name = frame_table.lock_taken(line)
    return name if name and DOTTED.fullmatch(name) else None


def waiting_threads(records, profiles, frames):
    """{pid: [tid]} of threads that waited most of the window with a blocking function of the
    standard library or PyTorch innermost on their most common Python stack, or in futex at a
    line of their own code that takes a lock (`with self._lock:`: a C lock's acquire has no frame)."""
    found = {}
    for record in records:
        for tid, thread in record.threads.items():
            profile = profiles.get((record.pid, tid))
            if not profile or not profile.get("stacks") or syscall_share(thread.samples, WAIT_SYSCALLS) < MIN_WAIT_SHARE:
                continue
            stack = [frames[i] for i in most_common_stack(profile["stacks"])]
            if blocking.blocking_frame(stack) is not None or (
                    syscall_share(thread.samples, ("futex",)) >= MIN_WAIT_SHARE and stack
                    and lock_expression(sources.source_line(record.pid, stack[0][1], stack[0][2]))):
                found.setdefault(record.pid, []).append(tid)
    return found


def _clean(value):
    """A fact's dict with its strings redacted and bounded (an address, a command line)."""
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    if isinstance(value, str):
        return redact_text(value)[:MAX_TEXT]
    return value


def _waiting_frames(stack):
    """The frames whose objects a wait is about, leaf first: the blocking calls (Condition.wait,
    Barrier.wait, Queue.get: rows of the blocking table), then the first frame that is not one
    (the caller, whose locals may hold the object it handed down), at most MAX_FRAMES."""
    out = []
    for frame in stack[:MAX_FRAMES]:
        if blocking.frame_row(frame["function"], frame["file"], frame.get("line")) is None:
            if frame.get("user") and out:
                out.append(dict(frame, caller=True))   # the user's call: the object it handed down
            break
        out.append(frame)
    return out


def _lock_taken(pid, reader, stack):
    """The lock the innermost frame's line takes, when that frame is the user's and the lock is
    reachable from one of its locals (`self._lock`, `lock`): {"frame", "local", "type", "fact",
    "text"}, else None.  A module global is not in py-spy's locals: said so, not guessed."""
    from .. import pyobjects
    if not stack or not stack[0].get("user"):
        return None
    frame = stack[0]
    expression = lock_expression(sources.source_line(pid, frame["file"], frame.get("line")))
    if not expression:
        return None
    base, *path = expression.split(".")
    local = next((l for l in frame["locals"] if l["name"] == base), None)
    record = {"frame": frame["function"], "local": expression, "type": "?", "caller": False}
    if local is None:
        reason = "%s is not a local of %s (a global or a closure's: py-spy reads only locals)" % (
            base, frame["function"])
        return dict(record, fact={"not_read": reason}, text="Not read: " + reason)
    try:
        addr = local["addr"]
        for name in path:
            addr = reader.attr(addr, name)
    except pyobjects.Fault as e:
        return dict(record, fact={"not_read": _clean(str(e))}, text="Not read: %s" % _clean(str(e)))
    fact = pyobjects.decode_with(reader, addr)
    if not pyobjects.is_read(fact):
        return dict(record, fact={"not_read": _clean(fact.reason)}, text="Not read: %s" % _clean(fact.reason))
    return dict(record, type=fact.type_name, fact=_clean(fact.as_dict()), text=_clean(pyobjects.describe(fact)))


def read_objects(pid, tids, dumped, deadline):
    """[{"tid", "frame", "local", "type", "fact", "text"}] of the objects the waiting frames of
    tids hold, and [reasons] for what could not be read."""
    from .. import pyobjects   # (25 ms to import: only where an object is to be read)
    version = pyobjects.version_from_maps(pid)
    if not pyobjects.is_read(version):
        return [], ["pid %d: its objects were not read (%s)" % (pid, version.reason)]
    try:
        reader = pyobjects.reader_for(pid, version)
    except pyobjects.Fault as e:
        return [], ["pid %d: its objects were not read (%s)" % (pid, e)]
    out, unread = [], []
    try:
        for tid in tids:
            seen = set()
            stack = dumped.get(tid) or []
            taken = _lock_taken(pid, reader, stack)
            if taken is not None:
                out.append(dict(taken, tid=tid))
                continue
            for frame in _waiting_frames(stack):
                for local in frame["locals"]:
                    match = OBJECT.match(local["repr"])
                    if not match or match.group(1) in NOT_WAITED_ON or local["addr"] in seen \
                            or (frame["function"], local["name"]) in INTERNAL or len(seen) >= MAX_OBJECTS_PER_THREAD:
                        continue
                    if time.monotonic() > deadline:
                        unread.append("pid %d: out of time after %d objects" % (pid, len(out)))
                        return out, unread
                    fact = pyobjects.decode_with(reader, local["addr"])
                    if not pyobjects.is_read(fact) and "no decoder" in str(getattr(fact, "reason", "")):
                        continue   # an object of a type this reader does not know: not a wait's
                    seen.add(local["addr"])
                    out.append({"tid": tid, "frame": frame["function"], "local": local["name"],
                                "caller": bool(frame.get("caller")),
                                "type": match.group(1),
                                "fact": _clean(fact.as_dict()) if pyobjects.is_read(fact)
                                else {"not_read": _clean(fact.reason)},
                                "text": _clean(pyobjects.describe(fact))})
    finally:
        reader.close()
    return out, unread


def resolve_objects(records, profiles, frames, only=None):
    """capture["objects"]: {"threads": [...], "idents": {pid: {ident: tid}}, "not_read": [...]},
    or None when no thread waited in a blocking function.  only: the pids to read (the chain's)."""
    found = waiting_threads(records, profiles, frames)
    if only is not None:
        found = {pid: tids for pid, tids in found.items() if pid in only}
    if not found:
        return None
    deadline = time.monotonic() + BUDGET_S
    threads, idents, unread = [], {}, []
    for pid, tids in sorted(found.items())[:MAX_PROCESSES]:
        dumped, pid_idents = dump_locals_raw(pid)
        if not dumped:
            unread.append("pid %d: py-spy dump --locals gave nothing" % pid)
            continue
        idents[str(pid)] = {str(k): v for k, v in pid_idents.items()}
        got, missing = read_objects(pid, tids, dumped, deadline)
        threads += [dict(item, pid=pid) for item in got]
        unread += missing
    skipped = len(found) - MAX_PROCESSES
    if skipped > 0:
        unread.append("%d more processes with waiting threads: their objects were not read" % skipped)
    return {"threads": threads, "idents": idents, "not_read": unread}


@typed_record
class ObjectsSection(Section):
    """capture["objects"]: None when no thread waited in a blocking function."""
    objects: Optional[dict] = None


def chain_pids(ctx):
    """The processes on the wait-for chain of a provisional diagnosis of what the probes saw so far,
    or None when it cannot be made (the session makes it: Context.provisional_chain): the objects
    that decide a verdict are those of the chain, and a dump of every other process would cost the
    target and us."""
    return ctx.provisional_chain()[0]


class ObjectsProbe(StackWaitProbe):
    """At the window's end: the objects the waiting threads' frames hold, decoded (for the
    processes on the provisional verdict's chain)."""

    name = "objects"
    Section = ObjectsSection
    resolve = staticmethod(resolve_objects)

    def stop(self, ctx):
        stacks = ctx.sections.get("stacks")
        live = [r for r in ctx.sampler.records.values() if r.exited_at is None]
        profiles, frames = (stacks.profiles, stacks.frames) if stacks else ({}, [])
        if not waiting_threads(live, profiles, frames):
            return self.Section([], None)
        on_chain, settled = ctx.provisional_chain()
        if settled:
            # (a cycle of stuck threads or an undrained pipe decides it: no dump of the target)
            return self.Section(["objects: not read, the wait-for chain ends at a mechanism its kernel facts "
                                 "close (a cycle, a pipe nobody drains)"], None)
        return self.Section([], resolve_objects(live, profiles, frames, only=on_chain))
