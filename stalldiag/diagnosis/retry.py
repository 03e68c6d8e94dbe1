"""Is a sleeping thread retrying a call that fails?  (a part of what a thread really is)

A thread asleep most of the window is idle by design only if nothing says otherwise.
It retries when its sleep is inside a retry helper (tenacity, urllib3's Retry, ...), or
inside a loop that catches errors, or a while loop that polls a call, and the failures
show: failed syscalls counted in the exact mode, the except clause itself, or error lines
the job wrote.  retrying() says so with the evidence, or returns None.
"""
from ..knowledge import retries as table
from ..vocab import Kind

SLEEPING = ("sleep", "poll")
MIN_FAILURES = 3     # failed calls of one syscall in the window that make a retry visible
MAX_LINES = 3
# a sleep between attempts with this long still to go was asked for (a server's Retry-After on a
# 429 or 503) or is a back-off grown long: the job waits by design, whatever the last call did
ASKED_WAIT_S = 300


def retrying(g, view):
    """{"where", "loop", "handlers", "library", "failures", "lines", "failing", "category"} or None."""
    if view.kind not in SLEEPING or view.share < 0.5 or not view.top_stack:
        return None
    frame, loop = _retrying_loop(view)
    handlers = [h["code"] for h in loop.get("handlers") or []]
    library = table.retry_library(view.top_stack)
    # a while loop polling a call that says what it waits for (connect_ex, os.path.exists)
    polls = bool(loop) and bool(table.POLL_LOOP.match(loop.get("code") or "")) \
        and table.category_of_text(loop.get("code")) is not None
    if not (library or handlers or polls or loop):
        return None        # (a sleep in no loop retries nothing, whatever failed: nothing to read)
    failures = failed_calls(g, view.pid, view.tid)
    lines = error_lines(g, view.pid)
    # an error its output names by resource (No space left on device, Connection refused, CUDA
    # out of memory, an HTTP 5xx) shows the call its loop retries, with or without an except
    named = any(_names_resource(line) for line in lines)
    if not (library or handlers or polls or (loop and (failures or named))):
        return None
    if named:   # the line that names the error is the one to quote (it is said last)
        lines = sorted(lines, key=_names_resource)
    # failing: something shows the call fails (counted failures, error lines, a helper that
    # retries only on failure, a loop polling a call); an except clause alone shows it could
    left = _sleep_left(view)
    asked = left if left is not None and left >= ASKED_WAIT_S else None
    return {"where": frame, "loop": loop or None, "handlers": handlers, "library": library,
            "failures": failures, "lines": lines, "failing": bool(failures or lines or library or polls),
            "asked_wait": asked,
            "category": "sleep" if asked else _category(failures, handlers + list(loop.get("tried") or []),
                                                        loop.get("code"), lines, library)}


def _sleep_left(view):
    """Seconds left of the sleep the thread is in, when its syscall's arguments said."""
    detail = view.top_detail()
    if not isinstance(detail, dict) or view.kind != Kind.SLEEP:
        return None
    if detail.get("sleep_s") is not None:
        return detail["sleep_s"]
    # (time.sleep before Python 3.11 is a select() on no fds, its timeout the sleep asked for)
    timeout = detail.get("timeout_ms")
    return timeout / 1000.0 if not detail.get("watching") and timeout is not None and timeout >= 0 else None


def _names_resource(line):
    """An error line that names its resource (No space left on device, Connection refused, ...)."""
    return table.named_category(line) is not None


def _retrying_loop(view, depth=4):
    """(frame, loop) of the innermost of the thread's own frames whose enclosing loop catches
    errors or polls a call: the sleep may be inside a call that loop retries (a busy timeout
    in a database call, a helper that sleeps); else the innermost user frame and its loop."""
    frames = [f for f in view.top_stack if len(f) > 3 and isinstance(f[3], dict)
              and not _library(f)][:depth]
    for frame in frames:
        loop = frame[3].get("loop") or {}
        if loop.get("handlers") or table.POLL_LOOP.match(loop.get("code") or ""):
            return frame, loop
    frame = view.user_frame()
    source = frame[3] if frame and len(frame) > 3 and isinstance(frame[3], dict) else {}
    return frame, source.get("loop") or {}


def _library(frame):
    from ..knowledge.frames import is_library_file
    return is_library_file(frame[1])


def failed_calls(g, pid, tid):
    """[(syscall, errors, {errno: n})] of one thread (or its process, when the backend counts
    per process), most failures first; only operations (a sleep's EINTR is not a failure)."""
    merged = {}
    for row_pid, row_tid, calls in g.syscall_errors:
        if row_pid != pid or row_tid not in (None, tid):
            continue
        for name, entry in (calls or {}).items():
            if name in table.NOT_OPERATIONS or entry.get("errors", 0) < MIN_FAILURES:
                continue
            errors, errnos = merged.get(name, (0, {}))
            for errno, n in (entry.get("errnos") or {}).items():
                errnos[errno] = errnos.get(errno, 0) + n
            merged[name] = (errors + entry["errors"], errnos)
    return sorted(((name, n, errnos) for name, (n, errnos) in merged.items()), key=lambda r: -r[1])


def _tail_streams(g, pid, logs=True):
    """The output_tail streams of a process: stdout, stderr and (logs) its open log files."""
    tail = g.output.get(pid)
    return tail.streams(logs) if tail is not None else []


def last_lines(g, pid, n=MAX_LINES):
    """The last lines the process wrote to its stdout and stderr (output_tail), newest last."""
    found = []
    for stream in _tail_streams(g, pid, logs=False):
        found += [line for line in stream.lines if line.strip()]
    return found[-n:]


def output_lines(g, pid):
    """Every kept line the process wrote (stdout, stderr, its open logs), each stream in order."""
    found = []
    for stream in _tail_streams(g, pid):
        found += [line for line in stream.lines if line.strip()]
    return found


def error_lines(g, pid):
    """The last lines the process wrote (stdout, stderr, its open logs) that report a failure."""
    found = []
    for stream in _tail_streams(g, pid):
        for line in stream.lines:
            if table.ERROR_LINE.search(line) and line not in found:
                found.append(line)
    return found[-MAX_LINES:]


def _category(failures, handlers, loop_code, lines, library):
    """The failing calls' category; when several calls fail, the one the loop's own text (its
    except clauses, what it tries, the error it logs) is about."""
    calls = []
    for name, _n, errnos in failures:
        named = [table.ERRNO_CATEGORY[e] for e in errnos if table.ERRNO_CATEGORY.get(e)]
        found = named[0] if named else table.CALL_CATEGORY.get(name)
        if found and found not in calls:
            calls.append(found)
    texts = handlers + [loop_code] + list(reversed(lines))
    text = table.failure_category(*texts)
    if text and (text in calls or not calls):
        return text
    if calls:
        return calls[0]
    if library and library not in ("tenacity", "backoff"):
        return "network"   # urllib3, huggingface_hub, redis-py, google, botocore retry requests
    return None
