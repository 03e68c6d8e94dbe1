"""The verdict's words: the summary of the walk (walk.py) from the focus to the root cause.

The category comes from the category table (category.py); the summary says the
mechanism in the user's words, and when the root cause was reached through a link
of another category, which ("Blocked on storage I/O, through a lock: ...").
"""
from .category import CATEGORIES, SUMMARY, categorize, is_lock_file as _is_lock_file  # noqa: F401
from .motion import runaway
from .registry import LEADS_SUMMARY, finding_of
from .explain import detail_text, doing, frame_text, halted_phrase, pct, process_text


def choose_category(d, focus, culprit):
    """(category, "through ..." words or None), from the category tables (category.py)."""
    mechanisms = [f["kind"] for f in d.findings]
    if undrained_pipe(d) is not None:
        mechanisms.append("undrained-pipe")
    return categorize(d, d.walk, mechanisms)


def summary_of(d, category, focus, culprit, through=None):
    head = SUMMARY[category] + (", through %s" % through if through else "")
    if category == "sleep" and culprit is not focus:
        # not idle by design when someone waits on it: a retry or back-off loop holds the run up
        head = "Waiting on a thread that sleeps (a retry or back-off loop?)"
    pipe = undrained_pipe(d)
    if pipe is not None:
        writer, fd, culprit = pipe
        where = {1: "its stdout, a pipe", 2: "its stderr, a pipe"}.get(fd.get("fd"), "a pipe (%s)" % fd.get("target"))
        return ("Blocked writing output: %s waits to write to %s, and the process reading that pipe is not "
                "draining it: %s is %s" % (writer.label, where, _proc_text(d, culprit.pid),
                                          halted_phrase(d, culprit) if d.halted(culprit) else doing(culprit, d)))
    deadlock = next((f for f in d.findings if f["kind"] == "deadlock"), None)
    if deadlock:
        return deadlock["summary"][0].upper() + deadlock["summary"][1:]
    loop = next((f for f in d.findings if f["kind"] == "event-loop-blocked" and f["tid"] == culprit.tid), None)
    if loop:
        return "Event loop blocked: %s" % loop["summary"]
    wait = _file_wait_text(d, culprit)
    if wait:
        return wait
    if culprit.kind == "tty":
        return "Blocked on terminal input%s: %s" % (", through %s" % through if through else "", _prompt(d, culprit))
    if culprit.kind == "prompt":
        detail = culprit.top_detail() or {}
        tty = ((detail.get("fd") if isinstance(detail, dict) else None) or {}).get("kind") == "tty"
        return "%s%s: %s" % ("Blocked on terminal input" if tty else "Waiting for a person",
                             ", through %s" % through if through else "", _person(d, culprit))
    special = _mechanism(d, category, focus, culprit)
    if special:
        return "%s: %s" % (head, special)
    what = detail_text(culprit.top_detail())
    where = ""
    frame = culprit.user_frame()
    if frame:
        where = " at %s (%s:%s)" % (frame[0], frame[1].rsplit("/", 1)[-1], frame[2])
    activity, share = culprit.main_activity()
    if not activity.startswith(("on CPU", "D:")):
        activity = "in " + activity
    text = "%s: %s %s%s of the window%s" % (
        head, culprit.label, activity, "" if not culprit.n_samples else " %s" % pct(share), where)
    if what:
        text += "; %s on %s" % ("between runs, waits" if culprit.kind == "cpu" else "waiting", what)
    if category == "cpu" and culprit.kind == "cpu" and runaway(culprit, d.procs.get(culprit.pid)):
        text += ("; it spins: every stack sample at that one line, no syscall, no output (a busy-wait on a "
                 "condition nothing changes, or a runaway call)")
    if category == "cuda" and culprit.kind == "cuda":
        spin = " (the CUDA driver spin-waits: %s on CPU)" % pct(culprit.activity.get("running", 0) / culprit.n_samples) \
            if culprit.n_samples and culprit.activity.get("running", 0) / culprit.n_samples >= 0.5 else ""
        text = "%s: %s waits for the GPU at %s%s" % (head, culprit.label, frame_text(culprit.user_frame()), spin)
    elif category == "collective" and culprit.pid != focus.pid:
        text = "%s: %s %s waits in %s; %s %s is elsewhere, %s%s" % (
            head, d.roles.get(focus.pid), focus.label,
            _first_framework_frame(focus) or "a GPU sync at %s" % frame_text(focus.user_frame()),
            d.roles.get(culprit.pid), culprit.label, doing(culprit, d), where)
    elif category == "subprocess" and culprit.pid != focus.pid:
        text = "%s: %s waits for %s, which is %s" % (
            head, focus.label, process_text(d.procs[culprit.pid]), doing(culprit, d))
    elif culprit is not focus and category != "subprocess":
        text += " (%s waits on it)" % focus.label
    return text


def _mechanism(d, category, focus, culprit):
    """The summary for waits that the kernel state or the graph explains in its own words."""
    state = culprit.state
    role = lambda v: d.roles.get(v.pid) or "process"
    if d.halted(culprit) and culprit is not focus:
        how = _focus_wait(d, focus)
        return "%s %s is %s; %s %s %s" % (role(culprit), _pid_text(culprit), halted_phrase(d, culprit),
                                          role(focus), _pid_text(focus), how)
    if d.halted(culprit):
        return "%s is %s" % (culprit.label, halted_phrase(d, culprit))
    lead = finding_of(d.findings, LEADS_SUMMARY)
    if lead and lead["kind"] == "file-lock":
        return "%s; that process is %s" % (lead["summary"], doing(culprit, d))
    if lead:
        return lead["summary"]
    if d.walk.out_of(focus) is not None and d.walk.out_of(focus).kind == "gil":
        return "%s waits for the GIL, which %s holds: %s at %s without releasing it" % (
            focus.label, culprit.label, state.phrase if state else doing(culprit, d),
            frame_text(culprit.user_frame()) or "native code")
    into = d.walk.into[-1]
    straggler = into.facts["gpu"] if into is not None and into.kind == "straggler" else None
    if straggler is not None:
        return "%s %s waits at %s for %s %s, a straggler whose GPU %d is still computing (SM %.0f%%, tensor %.0f%%)" % (
            role(focus), _pid_text(focus), frame_text(focus.user_frame()) or "a collective", role(culprit),
            _pid_text(culprit), straggler.index, straggler.sm, straggler.tensor or 0)
    if state is not None and state.condition in ("throttled", "spinning", "uninterruptible") or \
            state is not None and state.condition == "storage" and "page faults" in state.phrase:
        text = "%s is %s" % (culprit.label, state.phrase)
        frame = frame_text(culprit.user_frame())
        if frame and state.condition != "spinning":
            text += "; at %s" % frame
        if culprit is not focus:
            text += " (%s waits on it)" % focus.label
        return text
    return None


def _prompt(d, view):
    """"reads its terminal ... waiting for someone to type; it last wrote: <the prompt>"."""
    from .retry import last_lines
    text = "%s reads its terminal (%s), waiting for someone to type: an interactive prompt nobody answers" % (
        view.label, detail_text(view.top_detail()) or "a tty")
    lines = last_lines(d, view.pid)
    if lines:
        text += "; it last wrote: %s" % lines[-1]
    if view is not d.chain[0]:
        text += " (%s waits on it)" % d.chain[0].label
    return text


def _person(d, view):
    """"thread ... waits for someone to answer a prompt (pdb) at x.py:27, reading stdin (a pipe
    whose other end pid N holds and never writes); it last wrote: <the prompt>"."""
    from ..knowledge.frames import framework_context
    from .retry import last_lines
    what = next((row.framework for _d, row in framework_context(view.top_stack or []) if row.kind == "prompt"),
                None)
    detail = view.top_detail() or {}
    fd = detail.get("fd") if isinstance(detail, dict) else None
    stdin = (fd or {}).get("target") or "stdin"
    writers = [pid for pid in d.holders.get(stdin, ()) if pid != view.pid]
    if (fd or {}).get("kind") == "tty":
        source = "its terminal (%s)" % stdin
    elif writers:
        source = "stdin, %s, whose other end %s hold%s and never write%s" % (
            stdin, ", ".join(_proc_text(d, pid) for pid in writers[:2]), "s" if len(writers) == 1 else "",
            "s" if len(writers) == 1 else "")
    else:
        source = "stdin, %s, that nothing writes to" % stdin
    text = "%s waits for someone to answer a prompt%s at %s, reading %s" % (
        view.label, " (%s)" % what if what else "", frame_text(view.user_frame()) or "?", source)
    lines = last_lines(d, view.pid)
    if lines:
        text += "; it last wrote: %s" % lines[-1].strip()[:160]
    if view is not d.chain[0]:
        text += " (%s waits on it)" % d.chain[0].label
    return text


def _file_wait_text(d, view):
    """A poll loop on a lock or marker file: what the file is, and whether anyone will change it."""
    wait = d.file_waits.get((view.pid, view.tid))
    if not wait or view.kind not in ("sleep", "poll", "other"):
        return None
    path, library = wait.path, wait.library or "its code"
    others = wait.others(view.pid)
    if _is_lock_file(wait):
        if wait.exists and not others:
            age = " (%.0f s old)" % wait.age_s if wait.age_s is not None else ""
            return ("Blocked on a stale lock file: %s polls %s until %s can take it; the file exists%s, and no "
                    "live process holds a lock on it or has it open: an earlier run that died left it, and "
                    "nothing will remove it" % (view.label, path, library, age))
        return "Blocked on a lock file: %s polls %s (%s), held or open by pid %s" % (
            view.label, path, library, ", ".join(map(str, others)) or "nobody")
    state = "exists" if wait.exists else "does not exist"
    if not others:
        return ("Waiting for a file that nothing will write: %s polls for %s in a sleep loop (%s); it %s, "
                "and no live process has it open or locked" % (view.label, path, library, state))
    return "Waiting for a file: %s polls %s (%s); it %s; pid %s has it open" % (
        view.label, path, library, state, ", ".join(map(str, others)))


def undrained_pipe(d):
    """(writer view, its fd, reader view) when a step of the walk is blocked writing a pipe whose
    reader, the next step, holds it and does not drain it (it sleeps, is stopped, or waits on
    something else: the writer itself, when the reader joins it)."""
    for edge in [e for e in d.walk.into[1:]] + [d.walk.end]:
        if edge is None or edge.kind != "peer" or edge.facts.get("via") != "pipe" or edge.waker is None:
            continue
        writer, reader = edge.waiter, edge.waker
        if not _writes_pipe(writer) or reader.kind in ("cpu", "compile", "io") or _writes_pipe(reader):
            continue   # (a reader blocked writing a pipe of its own is the other half of a deadlock)
        detail = writer.top_detail() or {}
        fd = detail.get("fd") if isinstance(detail, dict) else None
        if fd and fd.get("target") in d.procs[reader.pid].endpoints:
            return writer, fd, reader
    return None


def _writes_pipe(view):
    return view.kind == "pipe" and any(label.startswith("write") for label in view.activity)


def _proc_text(d, pid):
    proc = d.procs.get(pid)
    if proc is None:
        return "pid %d" % pid
    text = process_text(proc)
    if proc.outside_tree:
        text += ", outside the inspected tree"
    return text


def _pid_text(view):
    return "(pid %d)" % view.pid


def _focus_wait(d, focus):
    """"spin-waits in a CUDA call at `x.to(device)` ... behind a collective that needs it"."""
    state = focus.state
    if state is not None and state.condition == "spinning":
        return "%s, behind a collective that needs it" % state.phrase
    where = _first_framework_frame(focus)
    if where:
        return "waits in %s for it" % where
    if focus.kind == "cuda":
        return "waits for its GPU at %s, whose kernels wait for it" % (frame_text(focus.user_frame()) or "a GPU sync")
    return "waits for it (%s)" % doing(focus)


def _first_framework_frame(view):
    from ..knowledge.frames import framework_context
    for frames, _n in view.stacks_by_count()[:1]:
        for depth, row in framework_context(frames):
            return "%s (%s)" % (frames[depth][0], row.framework)
    return None


