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
from ..knowledge.frames import LOCK_FILE_SUFFIXES
from .registry import CATEGORY_OF, WEAK_ROOT_CATEGORY_OF
from . import kinds
from .motion import runaway

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

# root kind -> (category, decisive), from the table of thread kinds
ROOTS = {k.name: (k.root, k.decisive) for k in kinds.KINDS}

# link kind -> (category, words for "through ...")
BOUNDARIES = {
    "collective": ("collective", "a collective"),
    "rendezvous": ("collective", "a rendezvous"),
    "child": ("subprocess", "a child program"),
    "lock": ("locks", "a lock"),
    "file-lock": ("locks", "a file lock"),
    "compile": ("compilation", "compilation"),
    "file-server": ("io", "a file system served by a process (FUSE)"),
}



def root_kind(d, view):
    """The kind of a chain's end, refined by its role and what it polls."""
    if d.halted(view):
        return "frozen" if d.halt_state(view).condition == "frozen" else "stopped"
    role = d.roles.get(view.pid)
    if role == "compiler" or (role == "compile-worker" and view.kind == "cpu"):
        return "compile"
    if view.kind in ("child", "pipe") and any(d.roles.get(pid) == "compiler" for pid in d.descendants(view.pid)):
        return "compile"   # waiting on the compilers it runs (g++ per kernel: each lives a second or two)
    wait = d.file_waits.get((view.pid, view.tid))
    if wait and view.kind in ("sleep", "poll", "other") and is_lock_file(wait):
        return "lock"
    if not wait and d.retry(view):
        return "retry"
    if view.kind == "cpu" and view.state is not None and view.state.condition == "throttled" and \
            not runaway(view, d.procs.get(view.pid)):
        # (a spin kept from a CPU is still a spin: more CPU would not end it)
        return "cpu-starved"
    return view.kind if view.kind in ROOTS else "unknown"


def boundary_of(d, walk):
    """(link kind, index) of the first link of the walk that explains the wait better than a
    weak root, or (None, None)."""
    chain = walk.chain
    rank = lambda v: str(d.roles.get(v.pid)).startswith("rank ")
    for index, view in enumerate(chain[:-1]):
        edge, nxt = walk.into[index + 1], chain[index + 1]
        if view.kind in ("collective", "rendezvous") or edge.kind in ("rank", "straggler") \
                or (rank(view) and rank(nxt) and nxt.pid != view.pid):
            return ("rendezvous" if view.kind == "rendezvous" else "collective"), index
        if edge.kind == "child":
            return "child", index
        if edge.kind in ("file-lock", "file-server"):
            return edge.kind, index
        if edge.kind in ("lock-holder", "lock-waiter") or (edge.kind == "sibling" and view.kind == "lock"):
            if python_lock_wait(view, nxt):
                return "lock", index
    if any(v.kind == "compile" for v in chain):
        return "compile", next(i for i, v in enumerate(chain) if v.kind == "compile")
    return None, None


def python_lock_wait(waiter, holder):
    """A lock the user's code takes (`with lock:`, .acquire(), a semaphore) or a holder that is
    itself blocked on a lock.  A bare futex under a library call (backward() waiting for the
    autograd engine, a thread pool's join) waits for work: the other thread's kind decides."""
    from .locks import lock_intent
    return bool(lock_intent(waiter)["wants"]) or waiter.frame_kind in ("lock", "semaphore") or \
        holder.kind in ("lock", "stopped", "frozen") or not waiter.top_stack


def categorize(d, walk, mechanisms):
    """(category, boundary words or None): what the run is blocked on, and the first link on the
    way there when it is of another category.  mechanisms: the kinds of findings (and chain
    mechanisms such as "undrained-pipe") found on the way."""
    kinds = set(mechanisms)
    for kind, category in CATEGORY_OF:
        if kind in kinds:
            return category, None
    root = walk.chain[-1]
    kind = root_kind(d, root)
    if kind == "retry" or not ROOTS[kind][1]:
        # a mechanism that explains a root which explains nothing itself (a lock file's holder
        # that sleeps in a loop catching an exception is holding the lock, not retrying for us)
        for mechanism, category in WEAK_ROOT_CATEGORY_OF:
            if mechanism in kinds:
                return category, None
    link, _index = boundary_of(d, walk)
    if kind == "retry":
        # what the failing call is about decides, wherever the retry sits
        category = d.retry(root)["category"] or "sleep"
        words = BOUNDARIES[link] if link else None
        return category, (words[1] if words and words[0] != category else None)
    return decide(kind, link)


def decide(kind, link):
    """The table itself: (category, "through ..." words or None) for a root kind and the first
    boundary link on the way to it (None: no boundary)."""
    category, decisive = ROOTS[kind]
    if link is None:
        return category, None
    link_category, words = BOUNDARIES[link]
    if decisive and not (kind == "lock" and link == "lock"):
        return category, (words if link_category != category else None)
    return link_category, None


def is_lock_file(wait):
    path = (wait.path or "").lower()
    return wait.library not in (None, "user code") or path.endswith(LOCK_FILE_SUFFIXES)
