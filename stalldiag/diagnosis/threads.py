"""Per-thread summaries of a capture: where each thread spent the window.

Pure functions of the capture.  A thread's *kind* is what it was doing or
waiting for most of the window, from its /proc samples (state and current
syscall, refined by the fd it waits on) and, where py-spy saw it, its
Python stack (a futex under Queue.get is a queue wait, not a bare lock).
"""
from collections import Counter

from ..knowledge import frames as frame_table
from ..knowledge.syscalls import wait_kind, wchan_kind
from ..records import CHECKS
from . import kinds
from .types import Frame

# Waits on another thread of the same process, known from Python frames.
THREAD_WAIT_KINDS = kinds.names(thread_wait=True)

# Python-frame kinds and the kernel kinds they refine.
FRAME_REFINES = {
    "thread-join": ("lock", "sleep", "poll", "other"),
    "queue-get": ("lock", "sleep", "poll", "other"),
    "queue-put": ("lock", "sleep", "poll", "other"),
    "condition": ("lock", "sleep", "poll", "other"),
    "event": ("lock", "sleep", "poll", "other"),
    "future": ("lock", "sleep", "poll", "other"),
    "semaphore": ("lock", "sleep", "poll", "other"),
    "child": ("child", "pipe", "poll", "lock", "sleep", "other"),
    "ipc": ("pipe", "ipc", "poll", "lock", "other"),
    "network": ("network", "poll", "other"),
    "lock": ("lock", "other"),
    # (a statement of an in-process database asleep: its busy handler polls the database's lock)
    "db-busy": ("sleep", "lock"),
}

# Framework context that decides a thread's kind, in priority order:
# (context kind, least share of stack samples, kernel kinds it applies to or None for any).
CONTEXT_RULES = (
    ("compile", 0.3, None),
    ("collective", 0.5, None),
    ("rendezvous", 0.5, None),
    ("cuda", 0.5, None),
    # (a training loop that waits for batches in a third of its samples or more is fed too slowly:
    # its step's own work between two waits does not make it a thread that computes)
    ("dataloader", 0.3, ("poll", "pipe", "ipc", "lock", "sleep", "other", "network")),
    # a read of stdin (a terminal, or a pipe nobody writes) under a prompt waits for a person
    ("prompt", 0.5, ("tty", "pipe", "io", "other", "poll")),
)

IDLE_KINDS = kinds.names(idle=True)


class ThreadView:
    """What one thread did over the window, ready for rules and renderers."""

    def __init__(self, proc, thread, facts):
        self.proc = proc             # a types.Process
        self.thread = thread         # a types.Thread
        self.state = None            # a state.ThreadState, set by the graph once GPUs are known
        self.pid = proc.pid
        self.tid = thread.tid
        self.name = thread.python_name or thread.name or "?"
        self.comm = thread.name
        self.is_main = self.tid == self.pid
        self.cpu_seconds = thread.cpu_seconds
        samples = thread.samples
        details = proc.details
        self.n_samples = len(samples)
        # a blocked thread repeats one sample all window: each distinct one is read once (counted
        # in plain dicts, made Counters once: a Counter's += on a new key calls __missing__)
        distinct = {}
        for sample in samples:
            key = tuple((list(sample) + [None] * 5)[1:5])
            distinct[key] = distinct.get(key, 0) + 1
        activity, kernel_kinds, detail_counts, states, state_syscalls = {}, {}, {}, {}, {}
        for (state, syscall, detail_index, wchan), n in distinct.items():
            detail = details[detail_index] if isinstance(detail_index, int) and 0 <= detail_index < len(details) else None
            states[state] = states.get(state, 0) + n
            state_syscalls[(state, syscall)] = state_syscalls.get((state, syscall), 0) + n
            label = _activity_label(state, syscall, wchan)
            activity[label] = activity.get(label, 0) + n
            kind = sample_kind(state, syscall, detail, wchan)
            kernel_kinds[kind] = kernel_kinds.get(kind, 0) + n
            if detail_index is not None:
                detail_counts[detail_index] = detail_counts.get(detail_index, 0) + n
        self.activity = Counter(activity)   # "running", "futex", "read", "D:io_schedule", ...
        self.kernel_kinds = Counter(kernel_kinds)
        self.detail_counts = Counter(detail_counts)
        self.states = Counter(states)
        self.state_syscalls = Counter(state_syscalls)   # (state, syscall): tells a page fault (D, no syscall) from a read
        self.details = details
        self.stacks = _expand_stacks(thread.stack_samples, facts)
        self.n_stack_samples = sum(n for _s, n in self.stacks)
        # samples with frames: a read that raced the thread keeps its sample but no frames
        # (probes/stacks.py), and shares are of what was seen, not of what was lost
        self.n_framed_samples = sum(n for s, n in self.stacks if s)
        self.top_stack, self.top_stack_count = _top_stack(self.stacks_by_count())
        # the objects its waiting frames hold, innermost first (probes/objects.py); [] when none
        # was read (None in `facts.objects`: the probe did not run)
        self.objects = facts.objects.of_thread(proc.pid, thread.tid) if facts.objects else []
        # native snapshots at the window's end (probes/native.py): where its CPU goes below Python
        self.native_stacks = facts.native.get((proc.pid, thread.tid), [])
        self.frame_matches = frame_table.match_stack(self.top_stack) if self.top_stack else []
        self.frame_kind = _wait_frame_kind(self.top_stack, self.frame_matches)
        self.context_share = _context_share(self.stacks, self.n_framed_samples)
        prompt = _source_share(self.stacks, self.n_framed_samples, "prompt")
        if prompt and self._reads_stdin():
            self.context_share["prompt"] = self.context_share.get("prompt", 0) + prompt
        if proc.pid in facts.gpu.holders:
            cuda = _source_share(self.stacks, self.n_framed_samples, "cuda")
            if cuda:
                self.context_share["cuda"] = self.context_share.get("cuda", 0) + cuda
        self.kernel_kind, self.kernel_share = _dominant(self.kernel_kinds, self.n_samples)
        self.kind = self._combined_kind()
        self.share = self.context_share.get(self.kind, self.kernel_share)
        self.scheduled_share = None  # set when the scheduler's accounting overrules the samples
        self.paced = None            # (wakes a second, CPU share) of work paced by short sleeps (graph.paced_work)

    def freeze(self):
        """The view is built: what it is (its kind, share and state) no longer changes (checked
        where STALLDIAG_CHECKS=1, as the tests run: a guard on every assignment costs a third of
        building the views)."""
        object.__setattr__(self, "_frozen", True)

    if CHECKS:
        def __setattr__(self, name, value):
            if getattr(self, "_frozen", False):
                raise AttributeError("a ThreadView is not changed once the graph is built (%s)" % name)
            object.__setattr__(self, name, value)

    def _combined_kind(self):
        kernel = self.kernel_kind
        for kind, threshold, kernels in CONTEXT_RULES:
            if self.context_share.get(kind, 0) >= threshold and (kernels is None or kernel in kernels
                                                                 or kernel is None):
                return kind
        if self.frame_kind and kernel in FRAME_REFINES.get(self.frame_kind, ()):
            return self.frame_kind
        if kernel is None:
            if self.frame_kind:
                return self.frame_kind
            return "unknown"
        return kernel

    def _reads_stdin(self):
        """Its commonest wait is a read of fd 0 (stdin), whatever stdin is."""
        for index, _n in self.detail_counts.most_common(1):
            detail = self.details[index] if 0 <= index < len(self.details) else None
            fd = detail.get("fd") if isinstance(detail, dict) else None
            return isinstance(fd, dict) and fd.get("fd") == 0
        return False

    def main_activity(self):
        """(what the thread did most, its share of the window): the scheduler's accounting where
        it corrected the samples, else the commonest /proc sample."""
        if self.scheduled_share is not None:
            return "on CPU or runnable", self.scheduled_share
        if not self.activity:
            return self.kind, 0.0
        label, count = self.activity.most_common(1)[0]
        return ("on CPU" if label == "running" else label), count / self.n_samples

    def rekind(self, kernel_kind, kernel_share):
        """Take a corrected kernel kind (the state model's); framework context applies to it."""
        self.kernel_kind, self.kernel_share = kernel_kind, kernel_share
        self.kind = self._combined_kind()
        self.share = max(self.share, self.context_share.get(self.kind, kernel_share))

    def stacks_by_count(self):
        merged = Counter()
        frames_of = {}
        for frames, count in self.stacks:
            key = tuple(tuple(f[:3]) for f in frames)
            merged[key] += count
            frames_of[key] = frames
        return [(frames_of[k], n) for k, n in merged.most_common()]

    def top_detail(self):
        if not self.detail_counts:
            return None
        index, _count = self.detail_counts.most_common(1)[0]
        return self.details[index]

    @property
    def timed_wait(self):
        """Its wait has a timeout (a timer thread, a poll with queue.get(timeout=...)): it ends
        by itself, and the thread goes on with its own work, not someone else's."""
        detail = self.top_detail()
        return isinstance(detail, dict) and bool(detail.get("timed"))

    def user_frame(self):
        """The innermost frame of the user's own code in the top stack."""
        return user_frame_of(self.top_stack or [])

    @property
    def label(self):
        return "thread %d '%s' (pid %d)" % (self.tid, self.name, self.pid)

    @property
    def active(self):
        return self.kind not in IDLE_KINDS


def user_frame_of(frames):
    """The innermost frame of the user's own code in one stack (leaf first).  Code made at run
    time ("<string>": a namedtuple's __new__, a lambda made by exec) runs for whoever called it,
    the library's selectors.py as often as the user: a file's frame is preferred, and "<string>"
    only stands where nothing else is the user's (`python -c`)."""
    frames = frame_table.own_frames(frames) or frames   # (a forked worker's parent frames are not its code)
    own = [f for f in frames if not frame_table.is_library_file(f[1])]
    return next((f for f in own if not (f[1] or "").startswith("<")), own[0] if own else (frames or [None])[0])


def _top_stack(by_count):
    """The thread's most common stack that has frames.  py-spy reports a thread with no Python
    frames while it is between frames (on 3.13 often, under a tight loop); those samples say
    nothing about where it is, and must not hide the line it spins at."""
    return next(((frames, n) for frames, n in by_count if frames), by_count[0] if by_count else (None, 0))


def _wait_frame_kind(stack, matches):
    """Kind of the outermost library frame that matched, below the first user frame.

    Queue.get calls Condition.wait: the leaf says "condition", but the call
    the user made, and the one that names what is awaited, is Queue.get.
    """
    if not matches:
        return None
    first_user = next((d for d, f in enumerate(stack) if not frame_table.is_library_file(f[1])), len(stack))
    below_user = [(d, row) for d, row in matches if d < first_user]
    if below_user:
        return below_user[-1][1].kind
    return matches[0][1].kind


def _source_share(stacks, total, kind):
    """Share of stack samples whose innermost user line implies `kind` (e.g. x.item() -> cuda)."""
    if not total:
        return 0.0
    hits = 0
    for frames, count in stacks:
        for frame in frames:
            if frame_table.is_library_file(frame[1]):
                continue
            source = frame[3] if len(frame) > 3 and isinstance(frame[3], dict) else None
            if source and frame_table.source_kind(source.get("code")) == kind:
                hits += count
            break
    return hits / total


def _context_share(stacks, total):
    """Share of stack samples that carry each framework context (compile, collective, ...)."""
    if not total:
        return {}
    counts = Counter()
    for frames, count in stacks:
        for _depth, row in frame_table.framework_context(frames):
            counts[row.kind] += count
    return {kind: n / total for kind, n in counts.items()}


def _activity_label(state, syscall, wchan):
    if state in ("T", "t"):
        return "stopped (%s)" % state     # /proc still names the call it was stopped in: not a wait
    if state == "D":
        return "D:%s" % (wchan or syscall or "?")
    if state == "R" or syscall == "running":
        return "running"
    return syscall or "unreadable"


D_STORAGE_SYSCALLS = ("read", "pread64", "readv", "openat", "open", "statx", "newfstatat", "getdents64",
                      "write", "pwrite64", "fsync", "fdatasync", "sync_file_range", "syncfs", "msync")


def sample_kind(state, syscall, detail, wchan):
    """Kind of one /proc sample."""
    # D first: the state and the syscall are two reads, and a thread that syncs thousands of
    # times a second is "running" in one and in D (submit_bio_wait) in the other
    if state == "D":
        if syscall in D_STORAGE_SYSCALLS:
            return "io"
        return wchan_kind(wchan)
    if state == "R" or syscall == "running":
        return "cpu"
    if state in ("T", "t"):
        return "stopped"
    if state in ("Z", "X"):
        return "exited"
    if syscall is None:
        return "unknown"
    if syscall == "nosyscall":
        return "other"
    fd_kind = None
    if isinstance(detail, dict):
        if detail.get("fd"):
            fd_kind = detail["fd"].get("kind")
        elif "watching" in detail:
            fd_kind = _watched_kind(detail["watching"])
            if fd_kind is None and not detail["watching"]:
                return "sleep"  # poll/select on no fds is a sleep
        elif "path" in detail:
            return "io"
    return wait_kind(syscall, fd_kind)


def _watched_kind(watched):
    kinds = {w.get("kind") for w in watched if isinstance(w, dict)}
    for kind in ("socket", "unix", "pipe", "fifo", "file", "eventfd", "tty"):
        if kind in kinds:
            return kind
    return None


def _dominant(counter, total):
    if not counter or not total:
        return None, 0.0
    kind, count = counter.most_common(1)[0]
    return kind, count / total


def _expand_stacks(runs, facts):
    frames, stacks = facts.frames, facts.stacks
    out = []
    for run in runs:
        try:
            stack_id, count = run
            ids = stacks[stack_id]
            out.append(([Frame.of(frames[i]) for i in ids], count))
        except (IndexError, TypeError, ValueError):
            continue
    return out


def thread_views(facts):
    """A ThreadView of every thread of a types.Facts."""
    return [ThreadView(proc, thread, facts) for proc in facts.processes for thread in proc.threads]
