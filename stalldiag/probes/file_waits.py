"""Threads that poll for a lock or marker file in a sleep loop, and the state of that file.

Such a wait makes no lock syscall: the thread sleeps, wakes, stats a path and sleeps
again.  What it waits for is a path in its Python locals, so for a thread that
sleeps through most of the window inside a known file-polling frame (the
knowledge table's "file-wait" rows and hand-written `while not os.path.exists(p):
time.sleep(...)` loops) one `py-spy dump --locals --nonblocking` of its process
reads the path, and the file is then checked: does it exist, how old is it, does
any live process on the host hold a lock on it or have it open.  Threads that do
not qualify cost nothing.
"""
import os
import time
from collections import Counter
from typing import Optional

from ..records import typed_record
from .. import procfs
from .base import Section, StackWaitProbe
from ..knowledge import frames as frame_table
from . import locks
from .stacks import dumped_tid, pyspy_dump
from .thread_ids import ThreadIdMap

SLEEP_SYSCALLS = ("clock_nanosleep", "nanosleep", "select", "pselect6")
MIN_SLEEP_SHARE = 0.5     # of the thread's /proc samples
MIN_STACK_SHARE = 0.5     # of its Python stack samples inside the polling frame
MAX_PATH = 4096


def syscall_share(samples, names):
    return sum(1 for s in samples if s[2] in names) / len(samples) if samples else 0.0


def _polling_frame(stack, frames):
    """(library, depth, local name hint) of the file-polling frame of a leaf-first stack, or None."""
    for depth, index in enumerate(stack):
        frame = frames[index]
        row = frame_table.match_frame(frame[0], frame[1])
        if row is not None and row.kind == "file-wait":
            return row.framework, depth, None
        note = frame[3] if len(frame) > 3 and isinstance(frame[3], dict) else None
        if note and depth == 0:
            for library, loop_re, body_re in frame_table.FILE_WAIT_SOURCES:
                loop = next((w for w in note.get("within") or [] if loop_re.search(w["code"])), None)
                if loop and body_re.search(note.get("code") or ""):
                    return library, depth, loop_re.search(loop["code"]).group(5)
    return None


def candidates(records, profiles, frames):
    """[(pid, tid, library, function, file, local name hint)] of threads that poll for a file."""
    found, seen = [], {}   # a blocked thread repeats one stack: each distinct one is read once
    for record in records:
        for tid, thread in record.threads.items():
            profile = profiles.get((record.pid, tid))
            if not profile or syscall_share(thread.samples, SLEEP_SYSCALLS) < MIN_SLEEP_SHARE:
                continue
            hits = Counter()
            for stack in profile["stacks"]:
                key = tuple(stack)
                hit = seen[key] if key in seen else seen.setdefault(key, _polling_frame(stack, frames))
                if hit is not None:
                    frame = frames[stack[hit[1]]]
                    hits[(hit[0], frame[0], frame[1], hit[2])] += 1
            if hits:
                key, count = hits.most_common(1)[0]
                if count >= MIN_STACK_SHARE * len(profile["stacks"]):
                    found.append((record.pid, tid) + key)
    return found


# One `py-spy dump --locals` per process serves every end-of-window probe that reads locals
# (joins, file waits, objects): a dump younger than this is reused.
DUMP_REUSE_S = 2.0
_DUMPS = {}


def dump_locals_raw(pid):
    """({tid: [{"function", "file", "user", "locals": [{"name", "addr", "repr"}]}, ...] leaf
    first}, {thread ident: tid}) from one py-spy dump --locals of pid (reused for DUMP_REUSE_S)."""
    cached = _DUMPS.get(pid)
    if cached is not None and time.monotonic() - cached[0] < DUMP_REUSE_S:
        return cached[1]
    found, idents, ids = {}, {}, ThreadIdMap()
    for thread in pyspy_dump(pid, with_locals=True) or []:
        tid = dumped_tid(pid, thread, ids)
        if thread.get("thread_id") is not None:
            idents[thread["thread_id"]] = tid
        found[tid] = [
            {"function": f.get("name"), "file": f.get("filename") or "", "line": f.get("line"),
             "user": not frame_table.is_library_file(f.get("filename") or ""),
             "locals": [{"name": str(l.get("name")), "addr": l.get("addr"), "repr": str(l.get("repr"))}
                        for l in f.get("locals") or []]}
            for f in thread.get("frames") or []]
    if len(_DUMPS) > 64:
        _DUMPS.clear()
    _DUMPS[pid] = (time.monotonic(), (found, idents))
    return found, idents


def dump_locals(pid):
    """{tid: [{"function", "file", "locals": {name: repr}}, ...] leaf first} from one py-spy dump."""
    dumped, _idents = dump_locals_raw(pid)
    return {tid: [{"function": f["function"], "file": f["file"],
                   "locals": {l["name"]: l["repr"] for l in f["locals"]}} for f in stack]
            for tid, stack in dumped.items()}


def _string(text):
    """A py-spy repr of a str ("\"/tmp/x\"") -> the str, or None for any other value."""
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    return None


def path_from_locals(dumped, library, function, filename, hint):
    """The waited-for path from the polling frame's locals (then its callers'), or None."""
    start = next((i for i, f in enumerate(dumped) if f["function"] == function
                  and os.path.basename(f["file"]) == os.path.basename(filename)), None)
    if start is None:
        return None
    names = frame_table.FILE_WAIT_PATHS.get(library) or (((hint, None),) if hint else ())
    for frame in dumped[start:]:
        for name, join in names:
            value = _string(frame["locals"].get(name, ""))
            if value:
                return os.path.join(value, join) if join else value
    return None


def check(path, pid):
    """What the file is now: exists, mtime, age, size, lock holders and openers on the host."""
    facts = {"path": path, "exists": False, "mtime": None, "age_s": None, "size": None,
             "flock_holders": [], "open_by": []}
    if not path:
        facts["exists"] = None
        return facts
    try:
        # as the process sees it (its mount namespace); a relative path as we see it
        st = procfs.root_stat(pid, path) if path.startswith("/") else os.stat(path)
    except (OSError, procfs.ProcfsError):
        return facts
    facts.update(exists=True, mtime=st.st_mtime, age_s=round(time.time() - st.st_mtime, 1), size=st.st_size)
    dev_inode = locks.inode_key(st)
    facts["open_by"] = locks.openers(path, dev_inode)
    held = {e["pid"] for e in locks.read_locks() if not e["waiter"] and e["dev_inode"] == dev_inode}
    if -1 in held:        # an OFD lock: held through some open fd of it
        held.discard(-1)
        held.update(facts["open_by"])
    facts["flock_holders"] = sorted(p for p in held if p > 0)
    return facts


def resolve(records, profiles, frames):
    """capture["file_waits"], or None when no thread polls for a file."""
    found = candidates(records, profiles, frames)
    if not found:
        return None
    out, dumps = [], {}
    for pid, tid, library, function, filename, hint in found:
        if pid not in dumps:
            dumps[pid] = dump_locals(pid)
        path = path_from_locals(dumps[pid].get(tid) or [], library, function, filename, hint)
        entry = {"pid": pid, "tid": tid, "library": library}
        entry.update(check(path[:MAX_PATH] if path else None, pid))
        out.append(entry)
    return out


@typed_record
class FileWaitsSection(Section):
    """capture["file_waits"]: None when no thread polls for a file."""
    file_waits: Optional[list] = None


class FileWaitsProbe(StackWaitProbe):
    """At the window's end: the lock or marker file each qualifying sleep loop polls for."""

    name = "file waits"
    Section = FileWaitsSection
    resolve = staticmethod(resolve)
