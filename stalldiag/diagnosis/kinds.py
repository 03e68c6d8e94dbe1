"""The table of thread kinds: what each kind of thread (or chain end) is, declared once.

A thread's kind is what it did or waited for most of the window (threads.py decides it). A row says:
  root         the category when the wait-for chain ends at a thread of this kind
  decisive     the root names the category wherever it sits; a weak root (computing,
               sleeping, polling) only when no link on the way explains the wait better
  rank         how telling a busy sibling of this kind is, when an idle focus hands over
  asleep       the wait is spent asleep in the kernel, taking no CPU while it lasts
  idle         idle by nature (a sleeper, a poller): never the thread that does the work
  thread_wait  a wait on another thread of the same process, known from Python frames
  working      the thread does the work itself (computes, reads storage, runs GPU work)
  doing        words for "that process is ..."
  band         the timeline's band in the HTML report
  chain_only   a kind only a chain's end takes (from its role or state), never a thread's
Every table of kinds elsewhere (category.ROOTS, views.ACTIVITY_RANK, ...) is derived here, and
the categories a root can name are declared with it (CATEGORIES, and SUMMARY: each one's words).
"""

from ..records import typed_record
from ..vocab import Category, Kind

CATEGORIES = tuple(Category)

SUMMARY = {
    Category.LOCKS: "Blocked on a lock",
    Category.IO: "Blocked on storage I/O",
    Category.COMPILATION: "Compiling",
    Category.CUDA: "Waiting on GPU kernels",
    Category.COLLECTIVE: "Waiting in a distributed collective",
    Category.NETWORK: "Waiting on the network",
    Category.SUBPROCESS: "Waiting on a child program",
    Category.CPU: "Busy computing on the CPU",
    Category.SLEEP: "Sleeping (idle by design)",
    Category.UNKNOWN: "Cause not determined",
}


@typed_record(frozen=True)
class ThreadKind:
    name: Kind
    root: Category
    decisive: bool
    rank: int = 0
    asleep: bool = False
    idle: bool = False
    thread_wait: bool = False
    working: bool = False
    doing: str = ""
    band: str = "other"
    chain_only: bool = False


def _k(name, root, decisive, **kw):
    return ThreadKind(Kind(name), Category(root), decisive, **kw)


_THREAD_WAIT = dict(root="locks", decisive=True, asleep=True, thread_wait=True)

KINDS = (
    _k("compile", "compilation", True, rank=7, working=True, doing="compiling"),
    _k("cpu", "cpu", False, rank=6, working=True, doing="computing", band="running"),
    _k("io", "io", True, rank=5, working=True, doing="doing storage I/O", band="io"),
    _k("open", "unknown", False, band="io"),
    _k("network", "network", True, rank=4, asleep=True, doing="waiting on the network", band="network"),
    _k("child", "subprocess", False, rank=4, asleep=True, doing="waiting on its own child", band="child"),
    _k("gpu", "cuda", True, rank=4, working=True),
    _k("cuda", "cuda", True, rank=4, working=True),
    _k("tty", "io", True, rank=4, asleep=True, idle=True,
       doing="waiting for someone to type on its terminal (an interactive prompt)"),
    # a root runnable but kept from a CPU (a quota, a cpuset, neighbours): the CPU is the cause
    # wherever it sits, not the child link on the way to it
    _k("cpu-starved", "cpu", True, rank=5, working=True, chain_only=True,
       doing="runnable but waiting for a CPU"),
    # a root whose CPU goes to asking whether its children exited (Process.is_alive, Popen.poll in
    # a loop): it waits on them, busily (a link on the way still explains the wait better)
    _k("child-poll", "subprocess", False, chain_only=True,
       doing="asking in a loop whether its children exited"),
    _k("prompt", "io", True, rank=4, asleep=True, idle=True,
       doing="waiting for someone to answer an interactive prompt"),
    _k("lock", "locks", True, rank=3, asleep=True, doing="blocked on a lock", band="lock"),
    _k("db-busy", "locks", True, rank=3, asleep=True, doing="waiting for a database's lock", band="lock"),
    _k("ipc", "locks", False, rank=2, asleep=True, doing="waiting for a message from another process",
       band="network"),
    _k("pipe", "unknown", False, rank=2, asleep=True, doing="blocked on a pipe", band="network"),
    # a root reading a pipe whose data comes on, at a pace its writer (sleeping between writes) sets:
    # slow input; weak (the source may be slow by design, or be a stand-in for storage or the network)
    _k("pipe-stream", "io", False, chain_only=True,
       doing="reading a pipe whose data comes in slowly, at its writer's pace"),
    _k("dataloader", "unknown", False, rank=2),
    _k("collective", "collective", False, rank=1),
    _k("rendezvous", "collective", False, rank=1),
    _k("loop-wakeup", "locks", True, rank=1, asleep=True,
       doing="an event loop waiting for a wake-up from its own threads"),
    _k("thread-join", rank=1, **_THREAD_WAIT),
    _k("queue-get", rank=1, **_THREAD_WAIT),
    _k("queue-put", rank=1, **_THREAD_WAIT),
    _k("future", rank=1, **_THREAD_WAIT),
    _k("condition", rank=1, idle=True, **_THREAD_WAIT),
    _k("event", rank=1, idle=True, **_THREAD_WAIT),
    _k("semaphore", **_THREAD_WAIT),
    _k("sleep", "sleep", False, asleep=True, idle=True, doing="sleeping", band="sleep"),
    _k("poll", "sleep", False, asleep=True, idle=True, doing="idle in poll", band="sleep"),
    _k("device", "unknown", False),   # a character device other than a GPU or terminal
    _k("other", "unknown", False, idle=True),
    _k("unknown", "unknown", False, idle=True),
    _k("stopped", "subprocess", False, idle=True),
    _k("frozen", "subprocess", False, chain_only=True),
    _k("exited", "unknown", False),
    # a thread that sleeps between attempts at a call that keeps failing: the call's category
    # decides (retry.py); sleep when it is not known
    _k("retry", "sleep", True, chain_only=True),
)

BY_NAME = {k.name: k for k in KINDS}


def names(**flags):
    """The kinds whose flags are all as given, in table order: names(thread_wait=True)."""
    return tuple(k.name for k in KINDS if all(getattr(k, flag) == value for flag, value in flags.items()))


def of(name):
    """The row of a kind; an unlisted kind reads as "unknown"."""
    return BY_NAME.get(name, BY_NAME["unknown"])
