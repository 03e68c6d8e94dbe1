"""What the run is blocked on: the root cause decides, the first link says how it got there.

The walk gives a chain from the focus thread (the training loop) to the root
cause.  Two tables decide the category:

ROOTS      the kind of the chain's end.  A *decisive* root names the category
           wherever it sits: a lock holder reading a slow disk is storage I/O,
           a child in D state is storage I/O, a rank compiling is compilation.
           A *weak* root (computing, sleeping, stopped, polling) names it only
           when no link on the way explains the wait better.
BOUNDARIES the links that explain a wait better than a weak root: a lock the
           user's code takes (held by a thread that computes: contention), a
           collective (a rank that is elsewhere), a child program the focus
           waits for, a compile step.

The summary starts with the category's words and, when the first boundary
link is of another category, says so: "Blocked on storage I/O, through a
lock: ...".  Mechanisms that end the chain by themselves (a deadlock, a lost
pool task, a full pipe nobody drains) are findings with a category of their
own (registry.py).
"""
from typing import Any, Optional

from ..records import typed_record
from .registry import table
from . import kinds
from .kinds import CATEGORIES, SUMMARY  # noqa: F401  (the category table's names: declared with the kinds)
from .hot import busy_waits_on_children
from .motion import runaway, streams_in
from .threads import THREAD_WAIT_KINDS
from .views import is_lock_file, waits_by_design, waits_for_its_turn, writes_pipe
from .registry.names import M
from ..vocab import Category, Condition, EdgeKind, Kind, rank_of, RoleKind

# root kind -> (category, decisive), from the table of thread kinds
ROOTS = {k.name: (k.root, k.decisive) for k in kinds.KINDS}

# link kind -> (category, words for "through ...")
BOUNDARIES = {
    "collective": ("collective", "a collective"),
    "rendezvous": ("collective", "a rendezvous"),
    "child": ("subprocess", "a child program"),
    "lock": ("locks", "a lock"),
    M.FILE_LOCK: ("locks", "a file lock"),
    "compile": ("compilation", "compilation"),
    "file-server": ("io", "a file system served by a process (FUSE)"),
    "connection": ("network", "a connection to a stopped server"),
    "connection-outside": ("network", "a connection to a server outside the job"),
    "slow-feed": ("io", "a pipe whose writer sleeps between writes"),
}



def root_kind(d, view):
    """The kind of a chain's end, refined by its role and what it polls."""
    if d.halted(view):
        return "frozen" if d.halt_state(view).condition == Condition.FROZEN else "stopped"
    role = d.roles.get(view.pid)
    if role == RoleKind.COMPILER or (role == RoleKind.COMPILE_WORKER and view.kind == Kind.CPU):
        return "compile"
    if view.kind in (Kind.CHILD, Kind.PIPE) and any(d.roles.get(pid) == RoleKind.COMPILER for pid in d.descendants(view.pid)):
        return "compile"   # waiting on the compilers it runs (g++ per kernel: each lives a second or two)
    wait = d.file_waits.get((view.pid, view.tid))
    if wait and view.kind in (Kind.SLEEP, Kind.POLL, Kind.OTHER) and is_lock_file(wait):
        return "lock"
    if not wait and d.retry(view):
        return "retry"
    if streams_in(view, d.procs.get(view.pid)):
        return "pipe-stream"
    if view.kind in THREAD_WAIT_KINDS and waits_for_its_turn(view):
        # a framework's loop waiting, with a timeout, for its next turn (a scheduler's next job)
        # and coming back to it in the window: idle by design, not a lock nobody releases
        return Kind.POLL
    if view.kind == Kind.CPU and busy_waits_on_children(view):
        return "child-poll"
    if view.kind == Kind.CPU and _gpu_saturated(d, view):
        return "gpu-saturated"
    if view.kind == Kind.CPU and view.state is not None and view.state.condition == Condition.THROTTLED and \
            not runaway(view, d.procs.get(view.pid)):
        # (a spin kept from a CPU is still a spin: more CPU would not end it)
        return "cpu-starved"
    return view.kind if view.kind in ROOTS else "unknown"


SATURATED_UTIL = 90   # % of the window a GPU was busy


def _gpu_saturated(d, view):
    """A thread of a process whose GPU was busy almost all window with real compute (SM or tensor
    activity, not a busy flag over a waiting kernel)."""
    for index in d.devices_of(view.pid) or ():
        dev = d.gpus.get(index)
        if dev is not None and (dev.util or 0) >= SATURATED_UTIL and dev.real_compute and not dev.looks_hung:
            return True
    return False


def boundary_of(d, walk):
    """(link kind, index) of the first link of the walk that explains the wait better than a
    weak root, or (None, None)."""
    chain = walk.chain
    rank = lambda v: rank_of(d.roles.get(v.pid)) is not None
    for index, view in enumerate(chain[:-1]):
        edge, nxt = walk.into[index + 1], chain[index + 1]
        if view.kind in (Kind.COLLECTIVE, Kind.RENDEZVOUS) or edge.kind in (EdgeKind.RANK, M.STRAGGLER) \
                or (rank(view) and rank(nxt) and nxt.pid != view.pid):
            return ("rendezvous" if view.kind == Kind.RENDEZVOUS else "collective"), index
        if edge.kind == EdgeKind.CHILD:
            return "child", index
        if edge.kind == EdgeKind.PEER and edge.facts.get("via") == "tcp" and d.halted(nxt):
            # a client waits on the server at the other end of its connection, which is stopped
            # (a child of it or not): the wait is the network's, the stop is why
            return "connection", index
        if edge.kind == EdgeKind.PEER and edge.facts.get("via") == "tcp" and d.outside(nxt) and not d.outside(view) \
                and not waits_by_design(view):
            # a request the job sent to a server outside it (a tracking service, a feature
            # store): whatever the server's handler waits on, the job waits on the network, and
            # the handler's wait is where the request is, not a lock or a sleep of the job's (an
            # event loop or a server waiting on such a connection is its server side: its client
            # is outside, not a server it asked)
            return "connection-outside", index
        if edge.kind == EdgeKind.PEER and edge.facts.get("via") == "pipe" and view.kind == Kind.PIPE \
                and not writes_pipe(view) and nxt.kind == Kind.SLEEP and not d.halted(nxt):
            # a reader whose only writer sleeps (a data feed that delivers a block, then waits):
            # its input arrives slowly; the sleep is the writer's pace, not the reader's wait
            return "slow-feed", index
        if edge.kind in (M.FILE_LOCK, EdgeKind.FILE_SERVER):
            return edge.kind, index
        if edge.kind in (M.LOCK_HOLDER, EdgeKind.LOCK_WAITER) or (edge.kind == EdgeKind.SIBLING and view.kind == Kind.LOCK):
            if python_lock_wait(view, nxt):
                return "lock", index
    if any(v.kind == Kind.COMPILE for v in chain):
        return "compile", next(i for i, v in enumerate(chain) if v.kind == Kind.COMPILE)
    return None, None


def python_lock_wait(waiter, holder):
    """A lock the user's code takes (`with lock:`, .acquire(), a semaphore) or a holder that is
    itself blocked on a lock.  A bare futex under a library call (backward() waiting for the
    autograd engine, a thread pool's join) waits for work: the other thread's kind decides."""
    from .locks import lock_intent
    return bool(lock_intent(waiter)["wants"]) or waiter.frame_kind in (Kind.LOCK, Kind.SEMAPHORE) or \
        holder.kind in (Kind.LOCK, Kind.STOPPED, Kind.FROZEN) or not waiter.top_stack


@typed_record(frozen=True)
class Decision:
    """What the run is blocked on, and why: the category step's record, which the summary, the
    progress model and the confidence read (none of them decides it again).
      category   the category
      through    words for the first link on the way, when it is of another category
      culprit    the root of the wait-for chain (walk.root)
      root       the culprit's kind, refined by its role and what it polls (root_kind)
      link       the first boundary link's kind (BOUNDARIES), or None
      link_at    the chain's index of the thread that waits across that link, or None
      mechanism  the finding a verdict rests on (registry: the first found of the deciding rows)
      basis      what the category rests on: "mechanism" (a registry row decided it, or the
                 verdict rests on one), "halted" (the kernel's state of the culprit), "root" (a
                 wait that explains itself), "runaway" (a call that never left the CPU),
                 "boundary" (the wait on a link whose other end is weak), "collective" (ranks
                 missing from a collective), "file-wait" (a poll loop on a file), "weak" (a
                 culprit that only sleeps, polls or computes), "unknown"
    """
    category: Category
    through: Optional[str]
    culprit: Any
    root: str
    link: Optional[str]
    mechanism: Any
    basis: str
    link_at: Optional[int] = None


def decide_category(scene, findings):
    """The Decision for a scene and its findings (typed, in precedence order)."""
    g, walk = scene.g, scene.walk
    culprit = walk.root
    kind = root_kind(g, culprit)
    link, index = boundary_of(g, walk)
    if link == "slow-feed":
        # the job is blocked on its input: the culprit is the read that waits for it (the writer's
        # sleep, its pace, is named in the summary)
        culprit = walk.chain[index]
    if kind == "gpu-saturated":
        # it feeds a GPU that computes all the time: the GPU sets the pace, not its CPU; where
        # others wait on it through a link (a collective), the link's category stands
        kind = "cuda" if link is None else "cpu"
    mechanism = table.deciding(findings)
    category, through = _category(g, walk, findings, kind, link)
    return Decision(Category(category), through, culprit, kind, link, mechanism,
                    _basis(g, culprit, kind, link, mechanism, category), link_at=index)


def _category(g, walk, findings, kind, link):
    found = {f.kind: f for f in reversed(findings)}     # (the first finding of each kind)
    for mechanism, category in table.CATEGORY_OF:
        if mechanism in found:
            finding = found[mechanism]
            filed_under = table.row(finding).filed_under
            return (filed_under and filed_under(g, walk, finding) or category), None
    if kind == Kind.RETRY or not ROOTS[kind][1]:
        # a mechanism that explains a root which explains nothing itself (a lock file's holder
        # that sleeps in a loop catching an exception is holding the lock, not retrying for us)
        for mechanism, category in table.WEAK_ROOT_CATEGORY_OF:
            if mechanism in found:
                return category, None
    if kind == Kind.RETRY:
        # what the failing call is about decides, wherever the retry sits
        category = g.retry(walk.root)["category"] or "sleep"
        words = BOUNDARIES[link] if link else None
        return category, (words[1] if words and words[0] != category else None)
    return decide(kind, link)


def _basis(g, culprit, kind, link, mechanism, category):
    if category == Category.UNKNOWN:
        return "unknown"
    if mechanism is not None:
        return "mechanism"
    if g.halted(culprit):
        return "halted"
    if kinds.of(kind).decisive:
        return "root"
    if kind == Kind.CPU and runaway(culprit, g.procs.get(culprit.pid)):
        return "runaway"
    if link is not None:
        return "boundary"
    if category == Category.COLLECTIVE and culprit.kind in (Kind.COLLECTIVE, Kind.RENDEZVOUS):
        return "collective"
    if (culprit.pid, culprit.tid) in g.file_waits:
        return "file-wait"
    return "weak"


def decide(kind, link):
    """The table itself: (category, "through ..." words or None) for a root kind and the first
    boundary link on the way to it (None: no boundary)."""
    category, decisive = ROOTS[kind]
    if link is None:
        return category, None
    link_category, words = BOUNDARIES[link]
    if link == "connection-outside":
        return link_category, None   # (what a server outside the job waits on, the job cannot change)
    if decisive and not (kind == Kind.LOCK and link == "lock"):
        return category, (words if link_category != category else None)
    if link == "child" and kind == Kind.CPU:
        # a parent that waits for its children while they compute (worker processes, a pool):
        # where the time goes is their CPU, whatever the machine's CPUs leave them
        return category, words
    return link_category, None
