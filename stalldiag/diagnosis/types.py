"""The records the diagnosis passes between its steps.

Edge     one wait-for edge: who waits, who would end the wait (or None: nothing will), the
         kind of wait, and plain facts for the formatter.  Built once per waiting thread,
         the same whatever order the walk takes.
Finding  a structured observation: a kind, the thread or process it is about, and facts.
         Its sentence is written by formatter.py, never by whoever found it.
"""
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional


@dataclass
class Finding:
    kind: str
    pid: Optional[int] = None
    tid: Optional[int] = None
    facts: Dict[str, Any] = field(default_factory=dict)

    @classmethod
    def about(cls, kind, view=None, pid=None, **facts):
        return cls(kind, view.pid if view is not None else pid, view.tid if view is not None else None, facts)


@dataclass
class Edge:
    waiter: Any                   # ThreadView
    waker: Any                    # ThreadView, or None: the wait ends here
    kind: str                     # EDGE_KINDS in edges.py
    facts: Dict[str, Any] = field(default_factory=dict)
    findings: List[Finding] = field(default_factory=list)   # said when the walk takes this edge
    guess: bool = False           # a likely waker, not a known one: never closes a cycle
    process: bool = False         # the wait is on a process (pipe, socket, child, file lock):
                                  # any stuck thread of it on the walk closes a cycle

    @property
    def terminal(self):
        return self.waker is None
