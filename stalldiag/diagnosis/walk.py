"""The walk: from the thread that should make progress, along wait-for edges, to the root cause.

At each thread the walk takes the first of its edges (edges.find, most likely waker
first) that leads to a thread not yet on the chain.  A known edge back onto the chain
closes a cycle; when every thread of it is stuck, nobody can move, and the cycle is the
finding (a guessed edge never closes one: threads in lockstep are caught waiting on each
other and run in turn).  A terminal edge (a lock held at fork, a lost pool task, a wait
nobody is left to end) ends the walk where it is.
"""
from dataclasses import dataclass, field
from typing import Any, List, Optional

from . import edges as edge_finders
from .motion import stuck
from .types import Edge, Finding

MAX_CHAIN = 8


@dataclass
class Walk:
    chain: List[Any]                       # ThreadViews, focus first
    into: List[Optional[Edge]]             # the edge that led to each step (None for the focus)
    end: Optional[Edge] = None             # the terminal edge or the edge that closed a cycle
    cycle: List[Any] = field(default_factory=list)
    findings: List[Finding] = field(default_factory=list)

    def out_of(self, view):
        """The edge the walk took from view (to the next step, or the one that ended it)."""
        index = self.chain.index(view)
        return self.into[index + 1] if index + 1 < len(self.chain) else self.end


def walk(g, focus):
    chain, into, said = [focus], [None], []
    end, cycle = None, []
    while len(chain) < MAX_CHAIN:
        current = chain[-1]
        candidates = edge_finders.edges_of(g, current)
        if current is focus and current.kind in ("sleep", "poll", "other", "tty") \
                and (current.pid, current.tid) not in g.file_waits:
            candidates = candidates + edge_finders.busier_thread(g, current)
        step = None
        for edge in candidates:
            if edge.terminal:
                said.extend(edge.findings)
                end = edge
                break
            back = _back_onto(chain, edge)
            if back is not None:
                loop = chain[back:]
                if not edge.guess and all(stuck(v) for v in loop) and stuck(edge.waker):
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
    return Walk(chain, into, end, cycle, _once(said))


def _cycle_kind(ring):
    """A cycle of TCP connections whose ends both wait to receive is a stalled conversation (a
    lost request or reply), not a lock; every other cycle is a deadlock."""
    if all(e.kind == "peer" and e.facts.get("via") == "tcp" for e in ring):
        return "connection-stall"
    return "deadlock"


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
        key = item.kind if item.kind == "likely-deadlock" else id(item)
        if key not in seen:
            seen.add(key)
            out.append(item)
    return out


def workers_of(d):
    """The DataLoader workers the walk went to, or []."""
    edge = next((e for e in (d.walk.into if d.walk else []) if e is not None and e.kind == "workers"), None)
    return edge.facts["workers"] if edge else []
