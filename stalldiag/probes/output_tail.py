"""The last lines a process wrote: to stdout and stderr, and to the log files it holds open.

A job that only retries says so in its log ("connection refused, retrying") long before
anything else shows it.  Read once at the end of the window, and only from regular files:
a pipe, socket or tty is never opened (reading one would take the data from its reader),
so each fd is stat()ed first and the opened file fstat()ed again before a byte is read
(the fd may have been closed and reused in between).  Only the last TAIL_BYTES are read,
so a 10 GB log or a checkpoint costs the same; binary-looking tails are skipped.  Every
line is redacted (stalldiag/redact.py) and cut to MAX_LINE characters.

Result, per pid with anything to show (a stream that is not a regular file is absent):
  {"stdout": {"path", "lines", "age_s", "size"}, "stderr": {... or "same_as": "stdout"},
   "logs": [{"path", "lines", "age_s", "size"}, ...]}
"""
import os
import re
import stat as stat_mod
import time
from dataclasses import field
from typing import Dict

from ..records import typed_record
from .. import fds, procfs
from .base import Probe, Section
from ..redact import MASK, PRIVATE_KEY_BEGIN, redact_text

TAIL_BYTES = 8192
MAX_LINES = 20
MAX_LINE = 300
MAX_LOGS = 8                       # log files per process, beside stdout and stderr
NOT_LOGS = ("/proc/", "/sys/", "/dev/")
O_ACCMODE, O_WRONLY, O_RDWR, O_APPEND = 0o3, 0o1, 0o2, 0o2000
# terminal escapes (colours, cursor moves) and other control characters: never replayed
# into the reader's terminal
_ESCAPES = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-_]|[\x00-\x08\x0b-\x1f\x7f]")


def collect(pids):
    """{str(pid): tails} for the pids that have something to show."""
    now = time.time()
    out = {}
    for pid in pids:
        tails = of_process(pid, now)
        if tails:
            out[str(pid)] = tails
    return out


def of_process(pid, now=None):
    now = time.time() if now is None else now
    targets = fds.fd_targets(pid)
    if not targets:
        return None
    tails, seen = {}, {}
    for fd, name in ((1, "stdout"), (2, "stderr")):
        if fd not in targets:
            continue
        tail = _tail(pid, fd, targets[fd], now)
        if tail is None:
            continue
        identity = tail.pop("_id")
        if identity in seen:   # 2>&1: one file, shown once
            tails[name] = {"path": tail["path"], "same_as": seen[identity]}
            continue
        seen[identity] = name
        tails[name] = tail
    logs = []
    for fd, target in sorted(targets.items()):
        if len(logs) >= MAX_LOGS:
            break
        if fd <= 2 or not target.startswith("/") or target.startswith(NOT_LOGS) or not _writing(pid, fd):
            continue
        tail = _tail(pid, fd, target, now)
        if tail is None:
            continue
        identity = tail.pop("_id")
        if identity in seen:   # the same file on another fd, or stdout's
            continue
        seen[identity] = target
        logs.append(tail)
    if logs:
        tails["logs"] = logs
    return tails or None


def _writing(pid, fd):
    """Is the fd open for writing (O_WRONLY, O_RDWR or O_APPEND), per its fdinfo flags?"""
    try:
        flags = int(procfs.fdinfo(pid, fd).get("flags", "0"), 8)
    except (procfs.ProcfsError, ValueError):
        return False
    return flags & O_ACCMODE in (O_WRONLY, O_RDWR) or bool(flags & O_APPEND)


def _tail(pid, fd, target, now):
    """The last lines of the regular file behind fd, or None (not a regular file, gone,
    unreadable, binary)."""
    try:
        st = procfs.fd_stat(pid, fd)
    except procfs.ProcfsError:
        return None
    if not stat_mod.S_ISREG(st.st_mode):
        return None   # a pipe, socket, tty: never opened
    data = b""
    if st.st_size:
        try:
            # O_NONBLOCK: should the fd have become a FIFO since the stat, opening does not wait
            handle = procfs.open_fd(pid, fd, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
        except procfs.ProcfsError:
            return None
        try:
            now_st = os.fstat(handle)
            if not stat_mod.S_ISREG(now_st.st_mode) or (now_st.st_dev, now_st.st_ino) != (st.st_dev, st.st_ino):
                return None   # the fd was reused in between: read nothing
            start = max(0, now_st.st_size - TAIL_BYTES)
            data = os.pread(handle, TAIL_BYTES, start)
        except OSError:
            return None
        finally:
            os.close(handle)
        if _binary(data):
            return None
        if start:   # the first line is cut: it starts before the bytes read
            data = data.partition(b"\n")[2]
    return {"path": target, "lines": _lines(data), "age_s": round(max(0.0, now - st.st_mtime), 1),
            "size": st.st_size, "_id": (st.st_dev, st.st_ino)}


def _binary(data):
    """A NUL, or more than a tenth of bytes that are neither text nor UTF-8: not a log."""
    if b"\0" in data:
        return True
    sample = data[-2048:]
    odd = sum(1 for b in sample if b < 9 or 13 < b < 32 and b != 27)
    return odd * 10 > len(sample)


def _lines(data):
    """The last MAX_LINES non-blank lines, without escapes, redacted, cut to MAX_LINE.
    Redacted before cutting: a cut through a token could leave a prefix no pattern knows."""
    text = data.decode("utf-8", "replace")
    # a progress bar rewrites its line with \r: each rewrite is a line here, the last ones kept
    lines, in_key = [], False
    for line in re.split(r"\r\n|\r|\n", text):
        if in_key:   # the body of a PEM private key: one masked line, whatever its length
            in_key = "-----END" not in line
            if lines and lines[-1] == MASK:
                continue
            line = MASK
        elif PRIVATE_KEY_BEGIN.search(line) and "-----END" not in line:
            in_key = True
        if line.strip():
            lines.append(line)
    out = []
    for line in lines[-MAX_LINES:]:
        line = redact_text(_ESCAPES.sub("", line)).rstrip()
        out.append(line if len(line) <= MAX_LINE else line[:MAX_LINE - 3] + "...")
    return out


@typed_record
class OutputTailSection(Section):
    """capture["output_tail"]: {pid: {stdout, stderr, logs}} of the live processes."""
    output_tail: Dict[str, dict] = field(default_factory=dict)


class OutputTailProbe(Probe):
    """Once, at the window's end: what each live process last wrote (~0.3 ms a process, measured)."""

    name = "output tail"
    Section = OutputTailSection
    at_end = True

    def stop(self, ctx):
        return OutputTailSection(output_tail=collect(sorted({r.pid for r in ctx.sampler.records.values()
                                                             if r.exited_at is None})))
