"""The verdict: a walk over the wait-for graph from the thread that should make progress.

The walk starts at the focus thread (the main thread of the main process,
or of the first rank below a launcher) and follows wait edges; where it ends
is the culprit.  The category says what that end is doing (or, for a wait
on peers, a child or a deadlock, what the wait is), and the summary says the
mechanism in the user's words.
"""
from .explain import detail_text, frame_text, pct, process_text, residency_text
from .threads import THREAD_WAIT_KINDS

CATEGORIES = ("locks", "io", "compilation", "cuda", "collective", "network", "subprocess",
              "cpu", "sleep", "unknown")

SUMMARY = {
    "locks": "Blocked on a lock",
    "io": "Blocked on storage I/O",
    "compilation": "Compiling",
    "cuda": "Waiting on GPU kernels",
    "collective": "Waiting in a distributed collective",
    "network": "Waiting on the network",
    "subprocess": "Waiting on a child program",
    "cpu": "Busy computing on the CPU",
    "sleep": "Sleeping (idle by design)",
    "unknown": "Cause not determined",
}


CATEGORY_OF_KIND = {
    "cpu": "cpu",
    "lock": "locks",
    "io": "io",
    "network": "network",
    "child": "subprocess",
    "sleep": "sleep",
    "poll": "sleep",
    "gpu": "cuda",
    "cuda": "cuda",
    "ipc": "locks",
    "pipe": "unknown",
    "unknown": "unknown",
    "other": "unknown",
    "stopped": "unknown",
    "exited": "unknown",
    "tty": "sleep",
    "compile": "compilation",
    "collective": "collective",
    "rendezvous": "collective",
    "dataloader": "unknown",
}


MAX_CHAIN = 8


def walk(d, view):
    """Follow wait edges from the focus thread; the end of the walk is the culprit."""
    seen = set()
    current = view
    for _ in range(MAX_CHAIN):
        seen.add((current.pid, current.tid))
        d.chain.append(current)
        step = d.NEXT.get(current.kind)
        nxt = step(d, current, seen) if step else None
        if nxt is None and current is view and current.kind in ("sleep", "poll", "other", "tty"):
            nxt = d.busier_thread(current, seen)
        if nxt is None:
            return current
        current = nxt
    return current


def category_of(d, view):
    if view.kind in THREAD_WAIT_KINDS:
        return "locks"
    if d.roles.get(view.pid) == "compiler" or (
            d.roles.get(view.pid) == "compile-worker" and view.kind == "cpu"):
        return "compilation"
    return CATEGORY_OF_KIND.get(view.kind, "unknown")


def choose_category(d, focus, culprit):
    """The first decisive link of the chain names the category."""
    if any(f["kind"] == "deadlock" for f in d.findings):
        return "locks"
    if focus.kind in ("collective", "rendezvous"):
        return "collective"
    if focus.kind == "cuda" and culprit.pid != focus.pid and str(d.roles.get(culprit.pid)).startswith("rank "):
        return "collective"
    if focus.kind == "child" and culprit.pid != focus.pid:
        return "compilation" if category_of(d, culprit) == "compilation" else "subprocess"
    if focus.kind == "lock" and culprit is not focus:
        return "locks"
    if any(v.kind == "compile" for v in d.chain):
        return "compilation"
    return category_of(d, culprit)


def summary_of(d, category, focus, culprit):
    head = SUMMARY[category]
    deadlock = next((f for f in d.findings if f["kind"] == "deadlock"), None)
    if deadlock:
        return deadlock["summary"][0].upper() + deadlock["summary"][1:]
    what = detail_text(culprit.top_detail())
    where = ""
    frame = culprit.user_frame()
    if frame:
        where = " at %s (%s:%s)" % (frame[0], frame[1].rsplit("/", 1)[-1], frame[2])
    activity, count = culprit.activity.most_common(1)[0] if culprit.activity else (culprit.kind, 0)
    if activity == "running":
        activity = "on CPU"
    elif not activity.startswith("D:"):
        activity = "in " + activity
    text = "%s: %s %s%s of the window%s" % (
        head, culprit.label, activity, "" if not culprit.n_samples else " %s" % pct(count / culprit.n_samples),
        where)
    if what:
        text += "; waiting on %s" % what
    if category == "cuda" and culprit.kind == "cuda":
        spin = " (the CUDA driver spin-waits: %s on CPU)" % pct(culprit.activity.get("running", 0) / culprit.n_samples) \
            if culprit.n_samples and culprit.activity.get("running", 0) / culprit.n_samples >= 0.5 else ""
        text = "%s: %s waits for the GPU at %s%s" % (head, culprit.label, frame_text(culprit.user_frame()), spin)
    elif category == "collective" and culprit.pid != focus.pid:
        text = "%s: %s %s waits in %s; %s %s is elsewhere, %s%s" % (
            head, d.roles.get(focus.pid), focus.label,
            _first_framework_frame(focus) or "a GPU sync at %s" % frame_text(focus.user_frame()),
            d.roles.get(culprit.pid), culprit.label, _doing(culprit), where)
    elif category == "subprocess" and culprit.pid != focus.pid:
        text = "%s: %s waits for %s, which is %s" % (
            head, focus.label, process_text(d.procs[culprit.pid]), _doing(culprit))
    elif culprit is not focus and category != "subprocess":
        text += " (%s waits on it)" % focus.label
    return text


def _first_framework_frame(view):
    from ..knowledge.frames import framework_context
    for frames, _n in view.stacks_by_count()[:1]:
        for depth, row in framework_context(frames):
            return "%s (%s)" % (frames[depth][0], row.framework)
    return None


def _doing(view):
    words = {"cpu": "computing", "sleep": "sleeping", "io": "doing storage I/O", "network": "waiting on the network",
             "lock": "blocked on a lock", "child": "waiting on its own child", "poll": "idle in poll"}
    return "%s (%s)" % (words.get(view.kind, view.kind), residency_text(view, 2))


def confidence_of(d, focus, culprit):
    share = min(focus.share or 0, culprit.share or 0)
    if any(f["kind"] == "deadlock" for f in d.findings):
        share = max(share, 0.8)
    level = "high" if share >= 0.8 else "medium" if share >= 0.5 else "low"
    if not culprit.n_samples:
        level = "low"
    return level

