"""The category of the first wait (issue 32): a pipe mechanism found on a chain that starts with
the focus waiting on a program of its own is filed under that wait (subprocess), not under the
pipe. Each function is a registry row's `filed_under`: (g, walk, finding) -> a category, or None
where the row's own category stands.

  pipe_cycle     a cycle of pipes alone (no lock, no join) between the focus and its child: a
                 parent reading its child's output while the child reads input only the parent
                 can close
  undrained      a pipe the focus does not read while it waits on the child writing it (or the
                 child's descendants), or one the child's own process holds and never reads (its
                 queue's feeder flushing at its exit): to exit (Popen.wait() with stdout=PIPE, Process.join()
                 before its Queue is drained), or to answer on another pipe or a socket (a client
                 of the server it started, whose log it never reads); a server that serves
                 instead of reading its child's pipe does not wait on that child
  unfed          the focus's child reads a pipe whose writing end only another process holds and
                 never writes (a launcher that keeps its job's stdin open); or that holder is an
                 orphan started after the job in its session: a program the job's child left
                 running in the background (`cmd &` in a shell that has exited)
"""
from .registry.names import M
from .views import waited_targets
from ..vocab import EdgeKind, Kind

SUBPROCESS = "subprocess"


def _starts_at_own_child(g, walk):
    child = g.procs.get(walk.chain[1].pid) if len(walk.chain) >= 2 else None
    return child is not None and child.ppid == walk.chain[0].pid


def pipe_cycle(g, walk, finding):
    if finding.kind != M.DEADLOCK or not _starts_at_own_child(g, walk):
        return None
    edges = finding.facts.get("edges") or []
    alone = bool(edges) and all(e.kind in (EdgeKind.PEER, EdgeKind.CHILD) and e.facts.get("via") == "pipe" for e in edges)
    return SUBPROCESS if alone else None


def undrained(g, walk, finding):
    if not _starts_at_own_child(g, walk):
        return None
    reader, writer = finding.facts.get("reader"), finding.facts.get("writer")
    # the pipe is the focus's to read, or the child's own (a queue the child made, its feeder
    # flushing at the child's exit with nobody left to read it)
    unread_by = reader is walk.chain[0] or (reader is not None and writer is not None and reader.pid == writer.pid)
    waits_on_writer = (walk.into[1] is not None and walk.into[1].kind in (EdgeKind.CHILD, EdgeKind.PEER)
                       and _waits_on(g, walk.chain[0], walk.chain[1].pid) and unread_by
                       and writer is not None and writer in walk.chain[1:])
    return SUBPROCESS if waits_on_writer else None


def _waits_on(g, focus, child_pid):
    """The focus waits on that child: for it to exit or write (a child wait, a pipe), or for it to
    answer on a socket whose other end it holds (a server listening for clients waits on none)."""
    if focus.kind in (Kind.CHILD, Kind.PIPE):
        return True
    return focus.kind == Kind.NETWORK and any(
        child_pid in g.other_end(target, g.tcp_peers) or child_pid in g.other_end(target, g.unix_peers)
        for target in waited_targets(focus))


def unfed(g, walk, finding):
    if _starts_at_own_child(g, walk) and finding.facts.get("reader") in walk.chain[1:]:
        return SUBPROCESS
    return SUBPROCESS if _left_running(g, walk, finding) else None


def _left_running(g, walk, finding):
    """The pipe's holder is an orphan that started after the job (a holder that started before
    the job, its launcher, or one with a live parent is someone else).  An orphan is reparented
    to init, or to a subreaper (systemd --user, a container's init): where the capture has the
    session, one that kept the job's session and whose parent is not of the job is such an
    orphan too, and one in another session is not the job's (a daemon it asked to start)."""
    holder, focus = g.procs.get(finding.facts.get("holder")), g.procs.get(walk.chain[0].pid)
    if holder is None or focus is None or holder.start_time is None or focus.start_time is None \
            or holder.start_time <= focus.start_time:
        return False
    if holder.sid is not None and focus.sid is not None:
        return holder.sid == focus.sid and holder.ppid not in g.procs
    return holder.ppid in (0, 1)
