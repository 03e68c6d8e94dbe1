"""Evidence sentences: how a thread spent the window, in numbers a reader can check."""
import os

from . import kinds
from .registry.names import M
from ..vocab import EdgeKind, Kind



def pct(share):
    return "%d%%" % round(100 * share)


def residency_text(view, limit=3):
    if not view.n_samples:
        return "no /proc samples"
    parts = ["%s %s" % (label, pct(count / view.n_samples))
             for label, count in view.activity.most_common(limit)]
    return ", ".join(parts)


def code_text(code):
    """A source line without its inline comment (the comment is not the call)."""
    return code.split("  #", 1)[0].rstrip()


def frame_text(frame):
    if not frame:
        return None
    name, filename, line = frame[0], frame[1], frame[2]
    text = "%s (%s:%s)" % (name, os.path.basename(filename or "?"), line)
    source = frame[3] if len(frame) > 3 and isinstance(frame[3], dict) else None
    if source and source.get("code"):
        text += " `%s`" % code_text(source["code"])
        withs = [code_text(w["code"]).rstrip(":") for w in source.get("within") or [] if w["code"].startswith("with ")]
        if withs:
            text += " inside `%s`" % "`, `".join(withs)
    return text


def detail_text(detail):
    """What a blocked syscall waits on, from its resolved detail."""
    if not isinstance(detail, dict):
        return None
    if "fd" in detail:
        return "fd %s -> %s" % (detail["fd"].get("fd"), describe_target(detail["fd"]))
    if "path" in detail:
        return "path %r" % detail["path"]
    if "child" in detail:
        return "any child" if detail["child"] == -1 else "child pid %d" % detail["child"]
    if "watching" in detail:
        watched = [describe_target(w) for w in detail["watching"]]
        return ", ".join(watched[:4]) if watched else "no fds (a timed wait)"
    if "futex" in detail:
        return "futex word %s" % detail["futex"]
    if "sleep_s" in detail:
        if detail.get("absolute"):
            return "a sleep with %.3g s left" % detail["sleep_s"]
        return "sleep(%.3g s)" % detail["sleep_s"]
    return None


# What the waiter of an edge of each kind waits for ("it": the thread the edge leads to), plain
# and with the edge's object as the fact named here gives it (a lock's name, "pipe", a path).
EDGE_WORDS = {
    M.LOCK_HOLDER: ("a lock it holds", "wants", "lock '{}', which it holds"),
    EdgeKind.GIL: ("the GIL it holds", None, None),
    M.FILE_LOCK: ("a file lock it holds", None, None),
    EdgeKind.FILE_HOLDER: ("a lock or marker file it holds", "path", "lock file {}"),
    EdgeKind.FILE_SERVER: ("the FUSE server of the mount", None, None),
    EdgeKind.JOIN: ("it to finish (join)", None, None),
    EdgeKind.CHILD: ("its child", "via", "its child (through a {})"),
    EdgeKind.PEER: ("the other end of a pipe or socket", "via", "the other end of a {}"),
    EdgeKind.WORKERS: ("its DataLoader workers", None, None),
    EdgeKind.PIN_MEMORY: ("the DataLoader's pin-memory thread, copying batches into page-locked memory", None, None),
    EdgeKind.RANK: ("it, in a collective", None, None),
    M.STRAGGLER: ("it, a straggler, in a collective", None, None),
    EdgeKind.SIBLING: ("it (a guess: a busier sibling)", None, None),
    EdgeKind.TASK: ("the task it runs (the work in flight, past the framework's idle threads)", None, None),
    EdgeKind.LOCK_WAITER: ("a lock (a guess: another waiter)", None, None),
    # terminal edges: nobody will end the wait
    EdgeKind.HELD_AT_FORK: ("a lock held at fork, which nobody will release", None, None),
    M.LOST_TASK: ("a pool task that was lost", None, None),
    M.POOL_RESULTS_UNDELIVERED: ("a pool result nobody is left to deliver", None, None),
    M.POOL_WORKERS_DYING: ("pool workers that die before they finish a task", None, None),
    M.LOST_BATCH: ("a DataLoader batch that was lost", None, None),
    M.ORPHANED_WAIT: ("a wake-up nobody is left to give", None, None),
    M.PEER_NOT_SERVING: ("a peer holding the socket, serving nothing", None, None),
    M.WAKER_EXITED: ("a waker that exited", None, None),
    M.POOL_EMPTY: ("a pool with no workers", None, None),
    M.MISSED_TASK_DONE: ("a task_done() that was missed", None, None),
    EdgeKind.COMPILER: ("a compiler it drives", "tool", "compiler {}"),
    EdgeKind.COMPILE_STEP: ("a compiler it waits for, which is stopped", None, None),
}
OBJECT_WORDS = {"tcp": "TCP connection", "pipe": "pipe"}


def request_clause(g, target):
    """Where a request sent on a connection is (graph.request_at_peer): "the other end holds N
    bytes ...: it never read the request", "nothing waits unread at the other end: ...", or None
    where the socket queues were not read."""
    where = g.request_at_peer(target)
    if where is None:
        return None
    if where[0] == "unread":
        return "the other end holds %d bytes sent to it that it has not read: it never read the request" % where[1]
    return "nothing waits unread at the other end: it read what was sent and has not answered"


def edge_words(edge, ranks=0):
    """"waits for lock_b, which it holds": what an edge's waiter waits for, in words (ranks: the
    job's ranks, said of a collective's edge); None for no edge."""
    if edge is None:
        return None
    plain, fact, named = EDGE_WORDS.get(str(edge.kind), ("it (%s)" % edge.kind, None, None))
    value = edge.facts.get(fact) if fact else None
    words = "waits for " + (named.format(OBJECT_WORDS.get(value, value)) if isinstance(value, str) and value
                            else plain)
    if str(edge.kind) in ("rank", M.STRAGGLER) and ranks > 2:
        words += " of %d ranks" % ranks
    return words


def blocking_text(view):
    """"in threading.Condition.wait: waits on a waiter lock ...; ended by notify() ..." when the
    thread's innermost Python frame is a blocking function of the standard library or PyTorch
    (knowledge/blocking.py), else None."""
    from ..knowledge.blocking import blocking_frames
    if view.kind in (Kind.CPU, Kind.COMPILE) or not view.top_stack:
        return None
    found = blocking_frames(view.top_stack)
    if not found:
        return None
    # the outermost of the blocking calls is the one the code asked for (Event.wait, not the
    # Condition.wait it waits in): what it waits on and who ends it are said of that one
    _depth, row = found[-1]
    inner = found[0][1]
    text = "in %s.%s" % (row.module, row.function)
    if inner is not row:
        text += " (in %s)" % inner.function
    return "%s, which waits on %s; ended by %s" % (text, row.waits_on, row.ended_by)


def waited_object(view):
    """The object the thread waits on (a HeldObject): the outermost blocking call's `self` (the
    Barrier of Barrier.wait, the Queue of Queue.get, rather than the Condition they wait in), else
    the innermost object read; None when none was read."""
    inside = [o for o in view.objects if not o.caller]
    objects = [o for o in inside if o.local == "self"] or inside
    return objects[-1] if objects else None


def objects_text(view):
    """"the Barrier its Barrier.wait waits on: 2 of 3 parties arrived" (what was read of the
    objects behind the wait), or None."""
    held = waited_object(view)
    if held is None:
        return None
    short = held.frame.rsplit(".", 1)[-1]
    if not held.read:
        return "the object %s waits on was not read (%s)" % (short, held.fact.get("not_read"))
    return "%s waits on %s" % (held.frame, held.text[0].lower() + held.text[1:])


def describe_thread(view):
    """"thread 812 'writer' (pid 800): futex 100% of 200 samples (...); Python: f (x.py:3)"."""
    parts = ["%s: %s of %d samples" % (view.label, residency_text(view), view.n_samples)]
    detail = detail_text(view.top_detail())
    if detail:
        parts.append("waiting on %s" % detail)
    blocked = blocking_text(view)
    if blocked:
        parts.append("blocked " + blocked)
    held = objects_text(view)
    if held:
        parts.append(held)
    if view.cpu_seconds is not None:
        parts.append("%.2f s CPU" % view.cpu_seconds)
    frame = frame_text(view.user_frame())
    if frame:
        parts.append("Python frame %s" % frame)
    elif view.n_stack_samples == 0 and not view.proc.python.get("stacks"):
        parts.append("no Python stacks (%s)" % (view.proc.python.get("reason") or "not sampled"))
    return "; ".join(parts)


def process_text(proc, limit=100):
    """"pid N (command line)" of a types.Process."""
    cmd = " ".join(proc.cmdline) or proc.comm or "?"
    return "pid %d (%s)" % (proc.pid, " ".join(cmd.split())[:limit])


def describe_target(info):
    """One short human string for a described fd."""
    if not info:
        return ""
    kind = info.get("kind")
    if kind in ("socket", "network") and info.get("remote"):
        state = (" " + info["state"]) if info.get("state") else ""
        return "%s %s -> %s%s" % (info.get("proto", "socket"), info.get("local"), info.get("remote"), state)
    if kind == "unix":
        return "unix socket %s" % (info.get("path") or info.get("target"))
    if kind == "file" and info.get("size"):
        pct = 100.0 * info.get("pos", 0) / info["size"] if info["size"] else 0
        return "%s (at %.0f%% of %d bytes)" % (info["target"], pct, info["size"])
    return str(info.get("target"))


def doing_call(view):
    call = view.activity.most_common(1)[0][0] if view.activity else "unknown"
    return "running" if call == "running" else "%s in %s" % ("blocked" if view.kind != Kind.SLEEP else "sleeping",
                                                              call)


def halted_phrase(g, view):
    held = g.halt_state(view)
    return held.phrase if held else "stopped"


def doing(view, tool=None):
    """"computing (running 96%)"; tool: the compiler a compiling thread drives (walk.tool_of)."""
    text = "%s (%s)" % (kinds.of(view.kind).doing or view.kind, residency_text(view, 2))
    if tool is not None:
        text += ", through its compiler %s (pid %d, on CPU %d%%)" % (tool.comm or tool.name, tool.pid,
                                                                  round(100 * tool.share))
    return text
