"""The forms a chain's end gives the verdict's summary by itself, as registry rows: each a detector
of the scene, the sentence of what it found, and, where the summary reads it otherwise than
"<the category's words>: <its sentence>", a headline.

  undrained-pipe / unfed-pipe   a pipe its reader does not drain / its writer holds and never writes
  event-loop-blocked            an event loop held in one step
  stale-lock-file, lock-file,   a sleep loop polling a file: a lock file nobody holds, one held,
  file-never-written, file-wait a marker file nothing will write, one another process has open
  terminal-input, prompt        a read of a terminal or a prompt nobody answers
  halted                        the culprit is stopped, traced or frozen
  gil-held                      the focus waits for the GIL its culprit holds
  straggler                     ranks wait on a rank whose GPU still computes
  kernel-state                  the culprit spins, is kept from a CPU, or waits uninterruptibly

Headlines take (scene, finding, head, said): head is the category's words with the first link of
another category ("Blocked on storage I/O, through a lock"), said the finding's sentence.
"""
from .kinds import SUMMARY
from .explain import detail_text, doing, frame_text, halted_phrase, process_text
from .registry.names import M
from .types import Finding
from .views import is_lock_file
from ..vocab import Condition, EdgeKind, Kind


def whole(scene, finding, head, said):
    """The sentence is the whole summary."""
    return said


def capitalized(scene, finding, head, said):
    if _filed_elsewhere(scene, head):
        return "%s: %s" % (head, said)
    text = said
    return text[0].upper() + text[1:]


def _filed_elsewhere(scene, head):
    """A row's own headline stands for its own category; a chain filed under its first wait (a
    parent waiting on its child: issue 32) leads with that category's words instead."""
    return head.startswith(SUMMARY["subprocess"])


def proc_text(g, pid):
    proc = g.procs.get(pid)
    if proc is None:
        return "pid %d" % pid
    text = process_text(proc)
    if proc.outside_tree:
        text += ", outside the inspected tree"
    return text


def _role(g, view):
    return g.roles.get(view.pid) or "process"


def _pid_text(view):
    return "(pid %d)" % view.pid


def _waits_on_it(view, focus):
    return "" if focus is None or view is focus else " (%s waits on it)" % focus.label


# --- pipes --------------------------------------------------------------------------------------

def undrained_pipe(g, writer, fd, reader, tool=None):
    where = {1: "its stdout, a pipe", 2: "its stderr, a pipe"}.get(fd.get("fd"), "a pipe (%s)" % fd.get("target"))
    if reader.pid == writer.pid:
        # (a multiprocessing Queue: the process made the pipe, and its consumers exited or never read)
        return ("%s waits to write to %s whose reading end only its own process holds, and none of its "
                "threads reads it (a queue's consumers gone, or never reading): %s is %s"
                % (writer.label, where, reader.label, doing(reader, tool)))
    return ("%s waits to write to %s, and the process reading that pipe is not draining it: "
            "%s is %s" % (writer.label, where, proc_text(g, reader.pid),
                          halted_phrase(g, reader) if g.halted(reader) else doing(reader, tool)))


def undrained_pipe_headline(scene, finding, head, said):
    return "%s: %s" % (head if _filed_elsewhere(scene, head) else "Blocked writing output", said)


def unfed_pipe(g, reader, target, holder, holder_thread, wrote):
    detail = reader.top_detail() or {}
    fd = (detail.get("fd") if isinstance(detail, dict) else None) or {}
    what = {0: "its stdin, %s" % target}.get(fd.get("fd"), target)
    return ("%s reads %s, whose writing end only %s holds; it wrote %s in the window, so only it can end the "
            "read, whatever its own threads do (%s)" % (
                reader.label, what, proc_text(g, holder), "nothing" if not wrote else "%d bytes, none of them here" % wrote,
                "it is %s" % doing(holder_thread) if holder_thread is not None else "not sampled"))


def unfed_pipe_headline(scene, finding, head, said):
    return "%s: %s" % (head if _filed_elsewhere(scene, head) else "Blocked reading input", said)


# --- an event loop ------------------------------------------------------------------------------

def event_loop_blocked(scene, finding, head, said):
    return "Event loop blocked: %s" % said


# --- a sleep loop polling a file ----------------------------------------------------------------

def file_wait(scene):
    """The file a sleep loop at the chain's end polls (probes/file_waits.py), by what it is."""
    g, view = scene.g, scene.root
    wait = g.file_waits.get((view.pid, view.tid))
    if not wait or view.kind not in (Kind.SLEEP, Kind.POLL, Kind.OTHER):
        return None
    others = wait.others(view.pid)
    if not others and view.pid in (wait.flock_holders or []):
        # its own process holds the lock it polls for, through another open file (a second lock
        # object on the same path): the kernel names the holder, and it is not gone
        others = [view.pid]
    path = wait.path or path_in_source(view)
    unknown = None if path else "the path it polls (neither the loop's locals nor its source name it)"
    facts = dict(waiter=view, wait=wait, others=others, path=path)
    if is_lock_file(wait):
        kind = M.STALE_LOCK_FILE if wait.exists and not others else M.LOCK_FILE
    else:
        kind = M.FILE_WAIT if others else M.FILE_NEVER_WRITTEN
    return Finding.about(kind, view, unknown=unknown, **facts)


def path_in_source(view):
    """A path the poll loop's own source spells out (`while not os.path.exists("/data/done"):`):
    the first string literal of its line or loop header that looks like a path."""
    import ast
    frame = view.user_frame()
    source = frame[3] if frame is not None and len(frame) > 3 and isinstance(frame[3], dict) else {}
    for code in [source.get("code"), (source.get("loop") or {}).get("code")]:
        text = (code or "").strip()
        if text.endswith(":"):
            text += " pass"
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and "/" in node.value \
                    and " " not in node.value.strip():
                return node.value
    return None


def _path(wait, path=None):
    return path or wait.path or "a file whose path could not be read"


def _exists(wait):
    # (the probe stats only a path it read: one read from the loop's source was not looked at)
    return "whether it exists was not read" if not wait.path else "it exists" if wait.exists else "it does not exist"


def stale_lock_file(g, waiter, wait, others, path=None):
    age = " (%.0f s old)" % wait.age_s if wait.age_s is not None else ""
    return ("Blocked on a stale lock file: %s polls %s until %s can take it; the file exists%s, and no live process "
            "holds a lock on it or has it open: an earlier run that died left it, and nothing will remove it" % (
                waiter.label, _path(wait, path), wait.library or "its code", age))


def lock_file(g, waiter, wait, others, path=None):
    text = "Blocked on a lock file: %s polls %s (%s), held or open by pid %s" % (
        waiter.label, _path(wait, path), wait.library or "its code", ", ".join(map(str, others)) or "nobody")
    if others == [waiter.pid]:
        text += " (its own process: it holds the lock through another open file, a lock it took itself)"
    return text


def file_never_written(g, waiter, wait, others, path=None):
    return ("Waiting for a file that nothing will write: %s polls for %s in a sleep loop (%s); %s, and no live "
            "process has it open or locked" % (waiter.label, _path(wait, path), wait.library or "its code",
                                               _exists(wait)))


def file_wait_text(g, waiter, wait, others, path=None):
    return "Waiting for a file: %s polls %s (%s); %s; pid %s has it open" % (
        waiter.label, _path(wait, path), wait.library or "its code", _exists(wait), ", ".join(map(str, others)))


# --- a person at a terminal ---------------------------------------------------------------------

def terminal_input(scene):
    root = scene.root
    if root.kind != Kind.TTY:
        return None
    return Finding.about(M.TERMINAL_INPUT, root, reader=root, focus=scene.focus)


def terminal_input_text(g, reader, focus):
    from .retry import last_lines
    text = "%s reads its terminal (%s), waiting for someone to type: an interactive prompt nobody answers" % (
        reader.label, detail_text(reader.top_detail()) or "a tty")
    lines = last_lines(g, reader.pid)
    if lines:
        text += "; it last wrote: %s" % lines[-1]
    return text + _waits_on_it(reader, focus)


def _through(head):
    return head.partition(", through ")[2]


def terminal_headline(scene, finding, head, said):
    through = _through(head)
    return "Blocked on terminal input%s: %s" % (", through %s" % through if through else "", said)


def prompt(scene):
    root = scene.root
    if root.kind != Kind.PROMPT:
        return None
    detail = root.top_detail() or {}
    tty = ((detail.get("fd") if isinstance(detail, dict) else None) or {}).get("kind") == "tty"
    return Finding.about(M.PROMPT, root, reader=root, focus=scene.focus, tty=tty)


def prompt_text(g, reader, focus, tty):
    """"thread ... waits for someone to answer a prompt (pdb) at x.py:27, reading stdin (a pipe
    whose other end pid N holds and never writes); it last wrote: <the prompt>"."""
    from ..knowledge.frames import framework_context
    from .retry import last_lines
    what = next((row.framework for _d, row in framework_context(reader.top_stack or []) if row.kind == Kind.PROMPT),
                None)
    detail = reader.top_detail() or {}
    fd = detail.get("fd") if isinstance(detail, dict) else None
    stdin = (fd or {}).get("target") or "stdin"
    writers = [pid for pid in g.holders.get(stdin, ()) if pid != reader.pid]
    if tty:
        source = "its terminal (%s)" % stdin
    elif writers:
        source = "stdin, %s, whose other end %s hold%s and never write%s" % (
            stdin, ", ".join(proc_text(g, pid) for pid in writers[:2]), "s" if len(writers) == 1 else "",
            "s" if len(writers) == 1 else "")
    else:
        source = "stdin, %s, that nothing writes to" % stdin
    text = "%s waits for someone to answer a prompt%s at %s, reading %s" % (
        reader.label, " (%s)" % what if what else "", frame_text(reader.user_frame()) or "?", source)
    lines = last_lines(g, reader.pid)
    if lines:
        text += "; it last wrote: %s" % lines[-1].strip()[:160]
    return text + _waits_on_it(reader, focus)


def prompt_headline(scene, finding, head, said):
    through = _through(head)
    return "%s%s: %s" % ("Blocked on terminal input" if finding.facts["tty"] else "Waiting for a person",
                         ", through %s" % through if through else "", said)


# --- the culprit's kernel state -------------------------------------------------------------------

def halted(scene):
    g, root = scene.g, scene.root
    if not g.halted(root):
        return None
    return Finding.about(M.HALTED, root, culprit=root, focus=scene.focus)


def halted_text(g, culprit, focus):
    if culprit is not focus:
        return "%s %s is %s; %s %s %s" % (_role(g, culprit), _pid_text(culprit), halted_phrase(g, culprit),
                                          _role(g, focus), _pid_text(focus), _focus_wait(focus))
    return "%s is %s" % (culprit.label, halted_phrase(g, culprit))


def _focus_wait(focus):
    """"spin-waits in a CUDA call at `x.to(device)` ... behind a collective that needs it"."""
    state = focus.state
    if state is not None and state.condition == Condition.SPINNING:
        return "%s, behind a collective that needs it" % state.phrase
    where = first_framework_frame(focus)
    if where:
        return "waits in %s for it" % where
    if focus.kind == Kind.CUDA:
        return "waits for its GPU at %s, whose kernels wait for it" % (frame_text(focus.user_frame()) or "a GPU sync")
    return "waits for it (%s)" % doing(focus)


def first_framework_frame(view):
    from ..knowledge.frames import framework_context
    for frames, _n in view.stacks_by_count()[:1]:
        for depth, row in framework_context(frames):
            return "%s (%s)" % (frames[depth][0], row.framework)
    return None


def gil_held(scene):
    out = scene.walk.out_of(scene.focus)
    if out is None or out.kind != EdgeKind.GIL:
        return None
    return Finding.about(M.GIL_HELD, scene.root, waiter=scene.focus, holder=scene.root,
                         tool=scene.walk.tool_of(scene.root))


def gil_held_text(g, waiter, holder, tool):
    state = holder.state
    return "%s waits for the GIL, which %s holds: %s at %s without releasing it" % (
        waiter.label, holder.label, state.phrase if state else doing(holder, tool),
        frame_text(holder.user_frame()) or "native code")


def straggler(scene, finding, head, said):
    g, focus = scene.g, scene.focus
    culprit = scene.root
    gpu = finding.facts["gpu"]
    return "%s: %s %s waits at %s for %s %s, a straggler whose GPU %d is still computing (SM %.0f%%, tensor %.0f%%)" % (
        head, _role(g, focus), _pid_text(focus), frame_text(focus.user_frame()) or "a collective", _role(g, culprit),
        _pid_text(culprit), gpu.index, gpu.sm, gpu.tensor or 0)


KERNEL_CONDITIONS = ("throttled", "spinning", "uninterruptible")


def kernel_state(scene):
    state = scene.root.state
    if state is None or not (state.condition in KERNEL_CONDITIONS or
                             state.condition == Condition.STORAGE and "page faults" in state.phrase):
        return None
    return Finding.about(M.KERNEL_STATE, scene.root, thread=scene.root, focus=scene.focus)


def kernel_state_text(g, thread, focus):
    state = thread.state
    text = "%s is %s" % (thread.label, state.phrase)
    frame = frame_text(thread.user_frame())
    if frame and state.condition != Condition.SPINNING:
        text += "; at %s" % frame
    return text + _waits_on_it(thread, focus)


# --- a file lock's holder -------------------------------------------------------------------------

def file_lock(scene, finding, head, said):
    return "%s: %s; that process is %s" % (head, said, doing(scene.root, scene.walk.tool_of(scene.root)))
