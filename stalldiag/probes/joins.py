"""Which thread a Thread.join() waits for, from the Thread objects' addresses.

/proc shows a joining thread in futex on the joined thread's tstate lock, which no
kernel structure ties to an owner.  py-spy's --locals names objects by type and
address: the joiner's `join(self)` frame holds `<Thread at 0xA>`, and every started
thread's own `_bootstrap_inner(self)` frame holds its object, so equal addresses
name the joined thread.  One `py-spy dump --locals --nonblocking` per process
with a thread blocked in join, at the end of the window; nothing otherwise.
"""
import re
from typing import Optional

from ..records import typed_record
from .base import Section, StackWaitProbe
from .file_waits import dump_locals, syscall_share

JOIN_FRAMES = ("join", "_wait_for_tstate_lock")
OWN_FRAMES = ("_bootstrap_inner", "_bootstrap", "run")
ADDRESS = re.compile(r"^<\w+ at (0x[0-9a-f]+)>$")
MIN_SHARE = 0.5


def _short(function):
    return (function or "").rsplit(".", 1)[-1]


def _joining(stack, frames):
    return any(frames[i][1].endswith("threading.py") and _short(frames[i][0]) in JOIN_FRAMES for i in stack)


def candidates(records, profiles, frames):
    """{pid: [tid]} of threads in futex most of the window with Thread.join on their stack."""
    found = {}
    for record in records:
        for tid, thread in record.threads.items():
            profile = profiles.get((record.pid, tid))
            if not profile or not profile["stacks"] or syscall_share(thread.samples, ("futex",)) < MIN_SHARE:
                continue
            joining = sum(1 for stack in profile["stacks"] if _joining(stack, frames))
            if joining * 2 >= len(profile["stacks"]):
                found.setdefault(record.pid, []).append(tid)
    return found


def _address(frame):
    match = ADDRESS.match(frame["locals"].get("self", ""))
    return match.group(1) if match else None


def resolve(records, profiles, frames):
    """capture["joins"]: [{"pid", "tid", "target": "0x..", "target_tid": tid or None}], or None."""
    found = candidates(records, profiles, frames)
    out = []
    for pid, tids in sorted(found.items()):
        dumped = dump_locals(pid)
        own = {}
        for tid, stack in dumped.items():
            outer = [f for f in stack if f["file"].endswith("threading.py") and _short(f["function"]) in OWN_FRAMES]
            if outer and _address(outer[-1]):
                own[_address(outer[-1])] = tid
        for tid in tids:
            join = next((f for f in dumped.get(tid) or [] if f["file"].endswith("threading.py")
                         and _short(f["function"]) in JOIN_FRAMES and _address(f)), None)
            if join is None:
                continue
            target = _address(join)
            out.append({"pid": pid, "tid": tid, "target": target, "target_tid": own.get(target)})
    return out or None


@typed_record
class JoinsSection(Section):
    """capture["joins"]: None when no thread waits in Thread.join."""
    joins: Optional[list] = None


class JoinsProbe(StackWaitProbe):
    """At the window's end: the thread each Thread.join() waits for."""

    name = "joins"
    Section = JoinsSection
    resolve = staticmethod(resolve)
