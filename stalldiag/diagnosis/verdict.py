"""The verdict's words: the summary and the evidence, from the scene, the findings and the decision.

The summary is the sentence of the first found row of the registry that leads it (its headline),
or, when none does, the category's words and what the culprit does; then the clauses of the
qualifiers that apply to the category (a binding limit, what the GPU did).
"""
from typing import List

from ..records import typed_record
from .kinds import CATEGORIES, SUMMARY  # noqa: F401
from .evidence import lines as evidence_lines
from .explain import blocking_text, detail_text, doing, frame_text, pct, process_text, request_clause
from .hot import hot_code, hot_text, native_hot, native_text
from .motion import runaway
from .registry import table
from .summaries import first_framework_frame
from ..vocab import Category, Kind


@typed_record(frozen=True)
class Words:
    summary: str
    evidence: List[str]
    lead: object = None       # the Finding whose sentence leads the summary, or None


def words(scene, findings, decision):
    kept = table.kept(findings, decision.category)
    lead = table.leading(kept)
    if lead is not None:
        text = _lead_text(scene, lead, _head(scene, decision), decision)
        hot = _hot_of(scene, decision, _spins(scene, decision))
        if hot is not None:
            text += "; " + hot_text(hot)     # (a leading row says why it computes, not on what)
    else:
        text = generic(scene, decision)
    summary = "; ".join([text] + table.qualifiers_of(scene.g, kept, decision.category))
    ended = exited_focus(scene)
    if ended is not None:
        # the run ended in the window: that is the headline, and the rest is what it did before
        summary = "%s; before it exited: %s" % (ended, summary[0].lower() + summary[1:])
    return Words(summary, evidence_lines(scene, kept, decision), lead)


def exited_focus(scene):
    """"Exited: pid N (...) exited with exit code 0, 4.7 s into the window" when the process whose
    progress is judged ended during the window, else None."""
    proc = scene.g.procs.get(scene.focus.pid) if scene.focus is not None else None
    if proc is None or proc.exited_at is None:
        return None
    status = proc.exit_status or "an unknown status (it was reaped by its parent before it was read)"
    finished = " (it finished)" if status == "exit code 0" else ""
    duration = scene.g.window.duration_s or 0
    when = "%.1f s into the window%s" % (proc.exited_at, ", which ended with it" if proc.exited_at >= duration - 0.5
                                          else " of %.1f s" % duration)
    return "Exited: %s exited with %s%s, %s" % (process_text(proc), status, finished, when)


def _head(scene, decision):
    if decision.category == Category.SLEEP and decision.culprit is not scene.focus:
        # not idle by design when someone waits on it: a retry or back-off loop holds the run up
        return "Waiting on a thread that sleeps (a retry or back-off loop?)"
    return SUMMARY[decision.category] + (", through %s" % decision.through if decision.through else "")


def _lead_text(scene, lead, head, decision):
    row, said = table.row(lead), table.sentence(scene.g, lead)
    if row.root_only and decision.category == Category.COLLECTIVE and decision.culprit.pid != scene.focus.pid:
        # the form of the rank that is elsewhere says what it does; the collective is what the
        # job waits in, and leads
        return "%s; %s" % (generic(scene, decision), said[0].lower() + said[1:])
    if row.headline is not None:
        return row.headline(scene, lead, head, said)
    return "%s: %s" % (head, said)


def _spins(scene, decision):
    culprit = decision.culprit
    return decision.category == Category.CPU and culprit.kind == Kind.CPU and runaway(culprit, scene.g.procs.get(culprit.pid))


def _hot_of(scene, decision, spins):
    """The culprit's HotCode when it computes under a cpu verdict (or a parent busy-waiting on its
    children, filed under them: its CPU still goes somewhere) and does not spin on one line."""
    culprit = decision.culprit
    if spins or decision.category not in (Category.CPU, Category.SUBPROCESS) or culprit.kind not in (Kind.CPU, Kind.CPU_STARVED):
        return None
    return hot_code(culprit)


def _request_words(g, view):
    """Where the request is, for a thread waiting to receive on a connection: unread at the other
    end (never read), or read there and not answered; "" where the queues were not read."""
    from .views import waited_targets
    where = next((w for w in (request_clause(g, t) for t in waited_targets(view)) if w), None)
    return "; " + where if where else ""


def generic(scene, decision):
    """The summary when no row leads it: what the culprit does, for how much of the window."""
    g, focus, culprit, category = scene.g, scene.focus, decision.culprit, decision.category
    head = _head(scene, decision)
    what = detail_text(culprit.top_detail())
    where = ""
    frame = culprit.user_frame()
    if frame:
        where = " at %s (%s:%s)" % (frame[0], frame[1].rsplit("/", 1)[-1], frame[2])
    spins = _spins(scene, decision)
    hot = _hot_of(scene, decision, spins)
    activity, share = culprit.main_activity()
    if not activity.startswith(("on CPU", "D:")):
        activity = "in " + activity
    if culprit.paced:
        # (most samples catch it asleep, yet the sleeps are steps of its work: say so, not where a
        # sleep's line takes its CPU)
        rate, cpu = culprit.paced
        text = "%s: %s works between short sleeps, woken %.0f times a second with %s of a core%s%s" % (
            head, culprit.label, rate, pct(cpu), where,
            "; waits on storage in %d of %d samples" % (culprit.kernel_kinds["io"], culprit.n_samples)
            if culprit.kind == Kind.IO else "")
        hot, what = None, None
    else:
        text = "%s: %s %s%s of the window%s" % (
            head, culprit.label, activity, "" if not culprit.n_samples else " %s" % pct(share), "" if hot else where)
    blocked = None if culprit.paced else blocking_text(culprit)
    if blocked and (not what or what.startswith("futex word")):
        text += "; waiting " + blocked      # (the call it waits in says more than a futex's address)
    elif what:
        text += "; %s on %s" % ("between runs, waits" if culprit.kind == Kind.CPU else "waiting", what)
    if culprit.kind in (Kind.NETWORK, Kind.IPC):
        text += _request_words(g, culprit)
    native = native_hot(culprit) if category in (Category.CPU, Category.CUDA) else None
    if spins and native is not None and native.what and not native.what.startswith("the interpreter"):
        # the native frames tell the two apart: a call that never returns, not a Python loop
        text += ("; it spins: every stack sample at that one line, no syscall, no output: one call that does "
                 "not return, in %s" % native.what)
    elif spins:
        text += ("; it spins: every stack sample at that one line, no syscall, no output (a busy-wait on a "
                 "condition nothing changes, or a runaway call)")
    elif hot is not None:
        text += "; " + hot_text(hot)
    if native is not None and category == Category.CPU:
        text += "; " + native_text(native)
    tool = scene.walk.tool_of(culprit)
    if category == Category.CUDA and culprit.kind == Kind.CUDA:
        running = culprit.activity.get("running", 0) / culprit.n_samples if culprit.n_samples else 0
        spin = " (the CUDA driver spin-waits: %s on CPU)" % pct(running) if running >= 0.5 else ""
        text = "%s: %s waits for the GPU at %s%s" % (head, culprit.label, frame_text(culprit.user_frame()), spin)
        if native is not None:
            text += "; " + native_text(native)
    elif category == Category.COLLECTIVE and culprit.pid != focus.pid:
        text = "%s: %s %s waits in %s; %s %s is elsewhere, %s%s" % (
            head, g.roles.get(focus.pid), focus.label,
            first_framework_frame(focus) or "a GPU sync at %s" % frame_text(focus.user_frame()),
            g.roles.get(culprit.pid), culprit.label, doing(culprit, tool), where)
    elif decision.link == "connection-outside":
        text = _outside_server_text(scene, decision, head)
    elif decision.link == "slow-feed":
        reader, writer = _across_boundary(scene, decision)
        text = "Waiting for input: %s at %s reads a pipe whose writer, %s, sleeps%s at %s: the input comes as " \
               "fast as the writer writes" % (
                   reader.label, frame_text(reader.user_frame()), process_text(g.procs[writer.pid]),
                   " (%s)" % detail_text(writer.top_detail()) if writer.top_detail() else "",
                   frame_text(writer.user_frame()))
    elif category == Category.SUBPROCESS and culprit.pid != focus.pid:
        text = "%s: %s waits for %s, which is %s" % (
            head, focus.label, process_text(g.procs[culprit.pid]), doing(culprit, tool))
    elif culprit is not focus and category != Category.SUBPROCESS:
        text += " (%s waits on it)" % focus.label
    return text


def _outside_server_text(scene, decision, head):
    """"Waiting on the network: <client> waits for a reply from <server>, outside the job; <where
    the request is>: <the server's thread> is <doing>": a request the job sent to a server it did
    not start, led by the job's own wait (the server's handler is where the request is)."""
    g = scene.g
    client, server = _across_boundary(scene, decision)
    where = _request_words(g, client)
    blocked = blocking_text(server)
    doing_there = ("waiting %s, at %s" % (blocked.split(";")[0], frame_text(server.user_frame()))) if blocked \
        else doing(server, scene.walk.tool_of(server))
    return "%s: %s at %s waits for a reply from %s, outside the job%s; there %s is %s" % (
        head, client.label, frame_text(client.user_frame()), process_text(g.procs[server.pid]), where, server.label,
        doing_there)


def _across_boundary(scene, decision):
    """(the thread that waits, the thread it waits on) at the walk's first boundary link."""
    return scene.chain[decision.link_at], scene.chain[decision.link_at + 1]

