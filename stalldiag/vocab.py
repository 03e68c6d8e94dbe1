"""The report's closed vocabularies, as string enums a type checker sees.

A verdict's category, its confidence level, the progress state, the condition the state model
finds a thread in, a thread's kind, an edge's kind and a process's role are each one of a few
words, written into the JSON report and compared by every rule that reads them.  Each is declared
here once; the code compares members (`Category.SLEEP`), never the bare text, and a test
(tests/unit/test_vocabulary.py) counts the literals left.

A member *is* its text (a `str`): it compares, hashes, formats and serialises as the word itself,
so the JSON report, the saved captures and the sentences are unchanged, and a word read back from a
saved report compares equal to its member.
"""
import enum


class Word(str, enum.Enum):
    """A word of a closed vocabulary: a str that is its own text everywhere (str(), %s, format(),
    json, a dict key), on every Python from 3.8 (whose Enum gives str() and hash() otherwise)."""

    def __str__(self):
        return str.__str__(self)

    def __format__(self, spec):
        return str.__format__(str.__str__(self), spec)

    def __repr__(self):
        return repr(str.__str__(self))

    __hash__ = str.__hash__


class Category(Word):
    """What a run is blocked on: the verdict's headline word."""
    LOCKS = "locks"
    IO = "io"
    COMPILATION = "compilation"
    CUDA = "cuda"
    COLLECTIVE = "collective"
    NETWORK = "network"
    SUBPROCESS = "subprocess"
    CPU = "cpu"
    SLEEP = "sleep"
    UNKNOWN = "unknown"


class Level(Word):
    """How sure a verdict is (diagnosis/confidence.py caps it from high down)."""
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"



class ProgressState(Word):
    """Whether the window shows the run advancing (diagnosis/progress.py)."""
    MAKING = "making progress"
    NONE_SEEN = "no progress seen"
    CANNOT_TELL = "cannot tell"


class Condition(Word):
    """The state a thread is really in, from the kernel's accounting (diagnosis/state.py)."""
    COMPUTING = "computing"
    SPINNING = "spinning"
    THROTTLED = "throttled"
    STOPPED = "stopped"
    TRACED = "traced"
    FROZEN = "frozen"
    BLOCKED = "blocked"
    STORAGE = "storage"
    UNINTERRUPTIBLE = "uninterruptible"
    EXITED = "exited"
    UNKNOWN = "unknown"


class Kind(Word):
    """What a thread waits on or does over the window (diagnosis/kinds.py holds each one's row:
    its category as a chain's end, its rank, its flags)."""
    COMPILE = "compile"
    CPU = "cpu"
    IO = "io"
    OPEN = "open"
    NETWORK = "network"
    CHILD = "child"
    GPU = "gpu"
    CUDA = "cuda"
    TTY = "tty"
    CPU_STARVED = "cpu-starved"
    CHILD_POLL = "child-poll"
    PROMPT = "prompt"
    LOCK = "lock"
    DB_BUSY = "db-busy"
    IPC = "ipc"
    PIPE = "pipe"
    PIPE_STREAM = "pipe-stream"
    DATALOADER = "dataloader"
    COLLECTIVE = "collective"
    RENDEZVOUS = "rendezvous"
    LOOP_WAKEUP = "loop-wakeup"
    THREAD_JOIN = "thread-join"
    QUEUE_GET = "queue-get"
    QUEUE_PUT = "queue-put"
    FUTURE = "future"
    CONDITION = "condition"
    EVENT = "event"
    SEMAPHORE = "semaphore"
    SLEEP = "sleep"
    POLL = "poll"
    DEVICE = "device"
    OTHER = "other"
    UNKNOWN = "unknown"
    STOPPED = "stopped"
    FROZEN = "frozen"
    EXITED = "exited"
    RETRY = "retry"


class EdgeKind(Word):
    """Who-waits-on-whom links of the walk that are no mechanism of their own (an edge that is
    one, a lock's holder or a straggler, is named by its registry.M member); diagnosis/explain's
    EDGE_WORDS says each in words."""
    GIL = "gil"
    FILE_HOLDER = "file-holder"
    FILE_SERVER = "file-server"
    JOIN = "join"
    CHILD = "child"
    PEER = "peer"
    WORKERS = "workers"
    PIN_MEMORY = "pin-memory"
    RANK = "rank"
    SIBLING = "sibling"
    TASK = "task"
    LOCK_WAITER = "lock-waiter"
    HELD_AT_FORK = "held-at-fork"
    COMPILER = "compiler"
    COMPILE_STEP = "compile-step"


class RoleKind(Word):
    """What a process is to the job (diagnosis/graph.assign_roles; the process table's rows)."""
    MAIN = "main"
    LAUNCHER = "launcher"
    RANK = "rank"
    CHILD = "child"
    DATALOADER_WORKER = "dataloader-worker"
    COMPILE_WORKER = "compile-worker"
    COMPILER = "compiler"
    MP_HELPER = "mp-helper"
    DEBUG_SERVER = "debug-server"
    OUTSIDE = "outside the job"


class Role(str):
    """A process's role, as the report writes it ("rank 3", "launcher", "outside the job (holds a
    lock it waits for)"), with what it is as fields: its kind, and a rank's number (never parsed
    back from the text)."""

    def __new__(cls, kind, rank=None, why=None):
        kind = RoleKind(kind)
        text = "rank %d" % rank if kind == RoleKind.RANK else "%s (%s)" % (kind, why) if why else str(kind)
        role = super().__new__(cls, text)
        role.kind, role.rank = kind, rank
        return role

    def __getnewargs__(self):
        return (self.kind, self.rank, self._why())

    def _why(self):
        return str.__str__(self)[len(self.kind) + 2:-1] if self.kind == RoleKind.OUTSIDE and "(" in self else None

    @property
    def is_rank(self):
        return self.kind == RoleKind.RANK


def rank_of(role):
    """A role's rank number, or None (no role, or not a rank)."""
    return getattr(role, "rank", None)


HALTED = (Condition.STOPPED, Condition.TRACED, Condition.FROZEN)   # it will not move until someone else acts
