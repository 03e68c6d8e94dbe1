"""The walk: from the thread that should make progress, along wait-for edges, to the root cause.

At each thread the walk takes the first of its edges (edges.find, most likely waker
first) that leads to a thread not yet on the chain.  A known edge back onto the chain
closes a cycle; when every thread of it is stuck, nobody can move, and the cycle is the
finding (a guessed edge never closes one: threads in lockstep are caught waiting on each
other and run in turn).  A terminal edge (a lock held at fork, a lost pool task, a wait
nobody is left to end) ends the walk where it is.
"""
from dataclasses import field
from typing import Any, List, Optional

from ..records import typed_record
from . import edges as edge_finders
from .motion import stuck
from .views import waited_targets, waits_by_design, writes_pipe
from ..knowledge.roles import runs_dispatched_task
from .types import Edge, Finding
from .registry.names import M
from ..vocab import EdgeKind, Kind

MAX_CHAIN = 8


@typed_record(frozen=True)
class Walk:
    chain: List[Any]                       # ThreadViews, focus first
    into: List[Optional[Edge]]             # the edge that led to each step (None for the focus)
    end: Optional[Edge] = None             # the terminal edge or the edge that closed a cycle
    cycle: List[Any] = field(default_factory=list)
    findings: List[Finding] = field(default_factory=list)
    root: Any = None                       # the culprit: the chain's end, or the reader of a
                                           # pipe a step writes and it does not drain

    def out_of(self, view):
        """The edge the walk took from view (to the next step, or the one that ended it)."""
        index = self.chain.index(view)
        return self.into[index + 1] if index + 1 < len(self.chain) else self.end

    def tool_of(self, view):
        """The compiler the chain's end drives (a compiling thread stays the end of the walk)."""
        end = self.end
        if end is None or end.kind != EdgeKind.COMPILER or self.chain[-1] is not view:
            return None
        return end.facts.get("tool")

    @property
    def workers(self):
        """The DataLoader workers the walk went to, or []."""
        edge = next((e for e in self.into if e is not None and e.kind == EdgeKind.WORKERS), None)
        return edge.facts["workers"] if edge else []


def walk(g, focus):
    chain, into, said = [focus], [None], []
    end, cycle = None, []
    while len(chain) < MAX_CHAIN:
        current = chain[-1]
        candidates = edge_finders.edges_of(g, current)
        if current is focus and current.kind in (Kind.SLEEP, Kind.POLL, Kind.OTHER, Kind.TTY, Kind.NETWORK) \
                and (current.pid, current.tid) not in g.file_waits:
            # a child stuck writing a pipe the focus holds and does not read comes first: the
            # focus (a server waiting for clients) is idle because of it, not by design
            candidates = edge_finders.unread_child(g, current) + candidates
        if current is focus and current.kind in (Kind.SLEEP, Kind.POLL, Kind.OTHER, Kind.TTY) \
                and (current.pid, current.tid) not in g.file_waits:
            candidates = candidates + edge_finders.busier_thread(g, current)
        if current is focus and waits_by_design(current) and current.kind != Kind.LOOP_WAKEUP:
            # (a loop that watches only its own wake-up socket is the lost wake-up's to explain)
            # the focus is a framework's idle thread (a Dask worker's event loop, a server's loop):
            # the work is where its process runs a task, not at the peers it idles with
            # (work_in_flight's edges into the focus's own tree are the known ones, not guesses)
            # (a stopped child counts as a task it runs, unless it is the server at the other end
            # of a connection the focus waits on: then the connection is the wait)
            servers = {pid for target in waited_targets(current) for pid in g.other_end(target, g.tcp_peers)}
            local = [e for e in edge_finders.work_in_flight(g, current)
                     if (e.waker.pid == current.pid or not e.guess)
                     and (runs_dispatched_task(e.waker.top_stack) or g.halted(e.waker) and e.waker.pid not in servers)]
            candidates = local + [e for e in candidates if e not in local]
        if not candidates and current.kind not in edge_finders.WORKING_KINDS \
                and edge_finders.dispatch_wait(current.top_stack):
            # a framework's call waits for work it handed out (a task, a map's chunk): follow it
            # to the thread running it, past the framework's idle threads
            candidates = edge_finders.work_in_flight(g, current)
        if g.outside(current):
            # past the job's edge (a server it talks to), only proven edges go on: a guess at
            # which of a server's threads ends another's wait is not evidence about the job
            candidates = [e for e in candidates if not _guess_outside(g, e)]
        step = None
        for edge in candidates:
            if edge.terminal:
                said.extend(edge.findings)
                end = edge
                break
            back = _back_onto(chain, edge)
            if back is not None:
                loop = chain[back:]
                ring = into[back + 1:] + [edge]
                if not edge.guess and not any(_guess_outside(g, e) for e in ring) \
                        and all(stuck(v) for v in loop) and stuck(edge.waker) \
                        and not any(_shared_pipe(g, e) for e in ring) \
                        and not (_cycle_kind(ring) == M.CONNECTION_STALL and any(_woken(g, v) for v in loop)):
                    end, cycle = edge, loop
                    ring = into[back + 1:] + [edge]
                    said.append(Finding.about(_cycle_kind(ring), edge.waker, cycle=loop, edges=ring))
                    break
                continue
            step = edge
            break
        if step is None:
            break
        said.extend(step.findings)
        chain.append(step.waker)
        into.append(step)
        if step.stops:
            break   # the waker is the cause whatever it waits on itself (it holds what is waited on)
    found = Walk(chain, into, end, cycle, _once(said), root=chain[-1])
    pipe = undrained_pipe(g, found)
    if pipe is None:
        return found
    writer, fd, reader = pipe
    said = found.findings + [Finding.about(M.UNDRAINED_PIPE, reader, writer=writer, fd=fd, reader=reader,
                                           tool=found.tool_of(reader))]
    return Walk(chain, into, end, cycle, said, root=reader)


def undrained_pipe(g, walk):
    """(writer view, its fd, reader view) when a step of the walk is blocked writing a pipe whose
    reader, the next step, holds it and does not drain it (it sleeps, is stopped, or waits on
    something else: the writer itself, when the reader joins it)."""
    for edge in walk.into[1:] + [walk.end]:
        if edge is None or edge.kind != EdgeKind.PEER or edge.facts.get("via") != "pipe" or edge.waker is None:
            continue
        writer, reader = edge.waiter, edge.waker
        if not writes_pipe(writer) or not stuck(writer) or reader.kind in (Kind.CPU, Kind.COMPILE, Kind.IO) \
                or writes_pipe(reader):
            continue   # (a reader blocked writing a pipe of its own is the other half of a deadlock;
                       # a writer whose writes go through between waits has its pipe drained, slowly)
        detail = writer.top_detail() or {}
        fd = detail.get("fd") if isinstance(detail, dict) else None
        if fd and fd.get("target") in g.procs[reader.pid].endpoints:
            return writer, fd, reader
    if walk.cycle:
        return None   # (a closed cycle of pipes is a deadlock, not one undrained pipe)
    return _unread_pipe_at_root(g, walk.root, walk.chain)


def _unread_pipe_at_root(g, writer, chain):
    """The chain's end blocked writing a pipe all window whose reading end only processes hold
    that do not read it (its reader died; the parent that made the pipe keeps a copy and waits on
    something else): (writer, fd, the holder's thread), else None."""
    if writer is None or not writes_pipe(writer) or not stuck(writer):
        return None
    detail = writer.top_detail() or {}
    fd = detail.get("fd") if isinstance(detail, dict) else None
    target = (fd or {}).get("target")
    if not target:
        return None
    readers = g.reader_pids(writer, target)
    holders = [pid for pid in readers if pid != writer.pid and pid in g.procs]
    if not holders:
        return _unread_own_pipe(g, writer, fd, chain) if writer.pid in readers else None
    for pid in holders:
        if any(target in waited_targets(v) or writes_pipe(v) for v in g.by_pid.get(pid, [])):
            return None      # a thread of it reads the pipe (slowly), or is the other half of a
                             # deadlock (itself blocked writing a pipe): not one undrained pipe
    # the holder nearest the writer on the chain (the shell that runs it, not the job above it)
    nearest = [v.pid for v in reversed(chain) if v.pid in holders]
    reader = g.most_telling_thread(nearest[0] if nearest else holders[0])
    return (writer, fd, reader) if reader is not None else None


def _unread_own_pipe(g, writer, fd, chain):
    """The reading end only the writer's own process holds, and none of its threads reads it: a
    multiprocessing Queue's feeder thread flushing into the pipe the process itself made, whose
    consumers exited or never read (the process joins the feeder at exit, or joins its workers
    before draining their queue). (writer, fd, the thread that waits on the writer, else the
    process's most telling other thread), else None."""
    target = fd.get("target")
    others = [v for v in g.by_pid.get(writer.pid, []) if v is not writer]
    if any(target in waited_targets(v) or writes_pipe(v) for v in others):
        return None
    before = [v for v in chain if v.pid == writer.pid and v is not writer]
    reader = before[-1] if before else next((v for v in others if v.tid == writer.pid), None)
    return (writer, fd, reader) if reader is not None else None


def _shared_pipe(g, edge):
    """A pipe edge whose writing end other processes hold too (a parent keeps both ends of every
    pipe it made for its children): the waker is one possible writer, not the one, so the edge
    cannot close a cycle."""
    if edge is None or edge.kind != EdgeKind.PEER or edge.facts.get("via") != "pipe" or writes_pipe(edge.waiter):
        return False   # (a writer blocked on a full pipe waits on its reader, whoever else holds it)
    if edge.facts.get("peers", 1) > 1:
        return True
    writers = {pid for pid in g.writer_pids(edge.waiter, edge.facts.get("target")) if pid != edge.waiter.pid}
    return len(writers) > 1


WOKEN_PER_S = 2.0   # voluntary switches a second: a thread whose wait ends again and again


def _woken(g, view):
    """Woken WOKEN_PER_S times a second or more: its waits end, message after message (an event
    loop serving a client); both ends of a stalled conversation sleep through the window."""
    woke = (view.thread.ctx or {}).get("voluntary")
    duration = g.window.duration_s or 0
    return woke is not None and duration > 0 and woke >= WOKEN_PER_S * duration


def _guess_outside(g, edge):
    """A guessed edge to a thread of a process outside the job (a server the job talks to, whose
    busy sibling thread is only a guess): a cycle through it is not proven."""
    return edge is not None and edge.guess and edge.waker is not None and g.outside(edge.waker)


def _cycle_kind(ring):
    """A cycle of TCP connections whose ends both wait to receive is a stalled conversation (a
    lost request or reply), not a lock; every other cycle is a deadlock."""
    if all(e.kind == EdgeKind.PEER and e.facts.get("via") == "tcp" for e in ring):
        return M.CONNECTION_STALL
    return M.DEADLOCK


def _back_onto(chain, edge):
    """Index of the chain step the edge leads back to, or None."""
    for index, view in enumerate(chain):
        if view is edge.waker:
            return index
    if edge.process:
        for index, view in enumerate(chain):
            if view.pid == edge.waker.pid:
                return index
    return None


def _once(findings):
    """A finding said by several edges of the walk (the threads stuck on locks with each
    other) stands once."""
    out, seen = [], set()
    for item in findings:
        key = item.kind if item.kind == M.LIKELY_DEADLOCK else id(item)
        if key not in seen:
            seen.add(key)
            out.append(item)
    return out
