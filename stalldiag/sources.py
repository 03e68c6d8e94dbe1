"""Source lines of sampled frames, read at capture time from the target's files.

A frame "w (train.py:6)" says little; "with a:" inside "with b:" says which
lock a thread holds and which it wants, and so does a "b.acquire()" earlier in
the same function that no "b.release()" followed.  Files are read through
/proc/PID/root so a target in another mount namespace is read correctly.
The diagnosis only looks at what is stored here; it never reads files.
"""
import os
import re

from . import procfs
from .knowledge.frames import LOCK_ACQUIRE, LOCK_RELEASE
from .redact import redact_text

MAX_LINE = 200
MAX_ENCLOSING = 5
MAX_ACQUIRED = 3


def _indent(text):
    return len(text) - len(text.lstrip(" \t"))


MAX_SOURCE = 4 * 1024 * 1024


def _lines(path, cache, pid=None):
    """The lines of a source file, as process pid sees it (through its root) or as we do."""
    key = (pid, path) if pid else path
    if key not in cache:
        try:
            if pid:
                data = procfs.root_read(pid, path, MAX_SOURCE)
            else:
                with open(path, "rb") as f:
                    data = f.read(MAX_SOURCE)
            cache[key] = data.decode("utf-8", "replace").splitlines()
        except (OSError, procfs.ProcfsError):
            cache[key] = None
    return cache[key]


def annotate(frames, pid_for_frame, cache=None):
    """Add {"code": line, "within": [enclosing with/for/while/def lines]} to frames.

    frames: list of [function, file, line]; pid_for_frame(i) gives a pid whose
    root to read through (or None for our own view of the filesystem).
    """
    cache = {} if cache is None else cache
    for index, frame in enumerate(frames):
        filename, lineno = frame[1], frame[2]
        if filename and not filename.startswith(("/", "<")) and pid_for_frame(index):
            # Python 3.8 keeps the script's path as typed ("train.py"): relative to
            # the directory it started in, which is the cwd unless it moved.
            filename = frame[1] = _absolute(filename, pid_for_frame(index), cache)
        if not filename or not filename.startswith("/") or not lineno:
            frame.append(None)
            continue
        pid = pid_for_frame(index)
        lines = _lines(filename, cache, pid)
        if lines is None and pid:
            lines = _lines(filename, cache)
        if not lines or lineno > len(lines):
            frame.append(None)
            continue
        code = lines[lineno - 1]
        source = {"code": redact_text(code.strip()[:MAX_LINE]), "within": _enclosing(lines, lineno)}
        acquired = _acquired(lines, lineno)
        if acquired:
            source["acquired"] = acquired
        owner = _method_class(lines, lineno)
        if owner:
            source["class"] = owner   # py-spy names the class only on Python 3.11+
        # the frame's own line may be the loop's header (py-spy gives 3.10's frames in a
        # call inside a loop the header's line at times)
        own = [{"line": lineno, "code": source["code"]}] if source["code"].startswith(("while ", "for ")) else []
        loop = _loop_handlers(lines, lineno, own + source["within"])
        if loop:
            source["loop"] = loop
        frame.append(source)
    return frames


MAX_HANDLERS = 3


def _loop_handlers(lines, lineno, within):
    """The innermost while/for loop around lineno and the except clauses of its body: a sleep
    in a loop that catches errors is a retry loop (the diagnosis decides, from its tables)."""
    opener = next((w for w in within if w["code"].startswith(("while ", "for ", "async for "))), None)
    if opener is None:
        return None
    start = opener["line"]
    level = _indent(lines[start - 1])
    handlers, tried, in_try = [], [], None
    for number in range(start, min(len(lines), start + 200)):
        text = lines[number]
        if not text.strip() or text.lstrip().startswith("#"):
            continue
        if _indent(text) <= level:
            break   # the loop's body ends
        stripped = text.strip()
        if stripped == "try:":
            in_try = _indent(text)
        elif stripped.startswith("except") and len(handlers) < MAX_HANDLERS:
            if _in_other_loop(lines, number + 1, start, lineno):
                in_try = None
                continue   # it guards a call of an inner loop the thread is not in
            handlers.append({"line": number + 1, "code": redact_text(stripped[:MAX_LINE])})
            in_try = None
        elif in_try is not None and _indent(text) > in_try and len(tried) < MAX_HANDLERS:
            tried.append(redact_text(stripped[:MAX_LINE]))   # what the loop attempts
    loop = {"line": start, "code": opener["code"], "handlers": handlers}
    if handlers and tried:
        loop["tried"] = tried
    return loop


def _in_other_loop(lines, line, outer, lineno):
    """Is line (an except clause) inside a loop nested in the loop at `outer` whose body does
    not hold lineno? Its try guards that inner loop's calls, not the call the thread is in."""
    for opener in _enclosing(lines, line):
        if opener["line"] <= outer:
            return False
        if opener["code"].startswith(("for ", "while ", "async for ")) \
                and not opener["line"] < lineno <= _block_end(lines, opener["line"]):
            return True
    return False


def _block_end(lines, line):
    """The last line (1-based) of the block the line `line` opens."""
    level = _indent(lines[line - 1])
    end = line
    for number in range(line, len(lines)):
        text = lines[number]
        if not text.strip() or text.lstrip().startswith("#"):
            continue
        if _indent(text) <= level:
            break
        end = number + 1
    return end


def source_line(pid, filename, lineno, cache=None):
    """The stripped text of line lineno of filename as process pid sees it, or None."""
    lines = _lines(_absolute(filename, pid, cache if cache is not None else {}), cache if cache is not None else {},
                   pid)
    if not lines or not lineno or lineno > len(lines):
        return None
    return lines[lineno - 1].strip()


def _absolute(filename, pid, cache):
    key = ("cwd", pid)
    if key not in cache:
        try:
            cache[key] = procfs.cwd(pid)
        except procfs.ProcfsError:
            cache[key] = None
    return os.path.normpath(os.path.join(cache[key], filename)) if cache[key] else filename


def _enclosing(lines, lineno):
    """Block openers (with/for/while/try/def) that contain line lineno, innermost first."""
    found = []
    level = _indent(lines[lineno - 1])
    for number in range(lineno - 2, -1, -1):
        text = lines[number]
        if not text.strip() or text.lstrip().startswith("#"):
            continue
        indent = _indent(text)
        if indent < level:
            stripped = text.strip()
            if stripped.startswith(("with ", "async with ", "for ", "while ", "def ", "async def ", "class ")):
                found.append({"line": number + 1, "code": redact_text(stripped[:MAX_LINE])})
            level = indent
            if stripped.startswith(("def ", "async def ", "class ")) or len(found) >= MAX_ENCLOSING:
                break
            if level == 0:
                break
    return found


CLASS_NAME = re.compile(r"class\s+(\w+)")


def _def_above(lines, lineno):
    """Index of the `def` line whose body holds line lineno, or None (module-level code)."""
    level = _indent(lines[lineno - 1])
    for number in range(lineno - 2, -1, -1):
        text = lines[number]
        stripped = text.strip()
        if not stripped or stripped.startswith("#") or _indent(text) >= level:
            continue
        if stripped.startswith(("def ", "async def ")):
            return number
        level = _indent(text)
    return None


def _method_class(lines, lineno):
    """Name of the class whose method holds line lineno, or None (a function, not a method)."""
    at_def = _def_above(lines, lineno)
    if at_def is None:
        return None
    level = _indent(lines[at_def])
    for number in range(at_def - 1, -1, -1):
        text = lines[number]
        stripped = text.strip()
        if not stripped or stripped.startswith(("#", "@")) or _indent(text) >= level:
            continue
        match = CLASS_NAME.match(stripped)
        return match.group(1) if match else None
    return None


def _acquired(lines, lineno):
    """`X.acquire()` lines of the function around line lineno, before it, that no
    `X.release()` followed before it: locks the frame took by hand and still holds."""
    at_def = _def_above(lines, lineno)
    held = {}
    for number in range(0 if at_def is None else at_def + 1, lineno - 1):
        text = lines[number].split("#", 1)[0]
        for match in LOCK_ACQUIRE.finditer(text):
            held[match.group(1)] = {"line": number + 1, "code": redact_text(lines[number].strip()[:MAX_LINE])}
        for match in LOCK_RELEASE.finditer(text):
            held.pop(match.group(1), None)
    return list(held.values())[-MAX_ACQUIRED:]
