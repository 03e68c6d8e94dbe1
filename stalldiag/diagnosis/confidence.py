"""How sure a verdict is, from what the decision rests on, how much was seen, what disagrees.

  high    earned: the decision rests on a closed chain or a kernel fact (a registry row that
          rests on one, a stopped culprit), on a wait that explains itself (storage, the
          network, compiling, a call that never left the CPU), or on a pattern of stacks and
          waits that names who should end the wait; seen in most samples of a window with
          enough of them; and nothing seen contradicts it (the threads it says cannot move
          did not move)
  medium  a guess (a "likely" row), a wait whose waker is not named (a row that lists what may
          have happened instead of deciding it, a lock nobody is seen to hold, a value that
          could not be read), a culprit that merely sleeps, polls or computes, "idle by
          design" in a job that shows no sign of advancing, thin sampling, or a signal that
          disagrees
  low     the cause is not determined, or the culprit was barely seen

Below high the verdict says what it does not know, the alternatives it could not rule out and
what would settle them.  Everything here reads the decision (category.Decision): its basis is
not decided again.
"""
from dataclasses import field
from typing import List

from ..records import typed_record
from . import kinds
from .kinds import SUMMARY
from .category import BOUNDARIES
from .motion import runaway, stuck
from .objects import not_read as object_not_read
from .registry import table
from ..vocab import Category, Condition, Kind, Level, ProgressState

LEVELS = (Level.LOW, Level.MEDIUM, Level.HIGH)
MIN_SAMPLES = 8          # /proc samples of the culprit under which the sampling was thin
MIN_STACK_SAMPLES = 2    # py-spy samples of a Python culprit under which its stack is a guess
SHARE_HIGH = 0.8         # share of the window the focus and the culprit spent as the verdict says
SHARE_MEDIUM = 0.5
MOVED_BYTES = 64 * 1024  # bytes a process wrote in the window that say data moves
MOVED_CPU = 0.2          # share of a core a thread used in the window: it ran (unless it spins)

LONGER = "a longer window (--duration 30 or more)"

# Roots that are themselves a wait on another thread: when the walk ends at one, nobody was found
# who would end the wait (a lock nobody is seen to hold, a queue nobody is seen to feed)
WAITS_ON_A_THREAD = frozenset(kinds.names(thread_wait=True) + ("lock", "loop-wakeup", "ipc"))


@typed_record(frozen=True)
class Confidence:
    level: str
    rests_on: str
    unknown: List[str] = field(default_factory=list)
    alternatives: List[str] = field(default_factory=list)
    to_settle: List[str] = field(default_factory=list)


def assess(scene, findings, decision, progress):
    g, focus, culprit, category = scene.g, scene.focus, decision.culprit, decision.category
    if category == Category.UNKNOWN:
        return Confidence(Level.LOW, "the cause is not determined", ["what the run waits on"], [
            "a wait stalldiag has no mechanism for", "a process it could not read"],
            [LONGER, "--children, to read the processes it may wait on", "root or CAP_SYS_PTRACE, for every stack"])
    c = _Levels()
    rests_on = _basis(scene, findings, decision, c)
    _agreement(scene, decision, c)
    _sampling(g, culprit, decision.root, c)
    _contention(focus, culprit, category, g, c)
    _moves(scene, findings, decision, progress, c)
    _idle_by_design(scene, decision, progress, c)
    if c.reasons:
        rests_on += "; " + "; ".join(c.reasons)
    if c.level == Level.HIGH:
        return Confidence(Level.HIGH, rests_on)
    return Confidence(c.level, rests_on, _once(c.unknown), _once(c.alternatives), _once(c.settle))


class _Levels:
    def __init__(self):
        self.level = Level.HIGH
        self.reasons, self.unknown, self.alternatives, self.settle = [], [], [], []

    def cap(self, level, reason=None):
        if LEVELS.index(level) < LEVELS.index(self.level):
            self.level = level
        if reason:
            self.reasons.append(reason)


def _basis(scene, findings, decision, c):
    """What the decision rests on, in words; caps the level where that is a guess or leaves the
    waker unnamed."""
    g, culprit, root, basis = scene.g, decision.culprit, decision.root, decision.basis
    if basis == "mechanism":
        mechanism = decision.mechanism
        row = table.row(mechanism)
        text = "a recognised mechanism (%s)" % row.kind
        if row.rests_on == "inferred":
            text += ", inferred from stacks and waits"
        elif row.rests_on == "likely":
            text += ", likely from what surrounds the wait, not shown by it"
            c.cap(Level.MEDIUM)
            c.alternatives.append("the thread waits for something else, and the wait ends elsewhere")
        elif row.rests_on == "unnamed":
            text += ", which names nobody who could end the wait"
            c.cap(Level.MEDIUM)
            c.unknown.append(mechanism.unknown or "which thread or process was to end the wait, and why it did not")
        if row.rests_on in ("likely", "unnamed"):
            c.settle.extend(row.settle or (LONGER,))
        elif mechanism.unknown:
            c.cap(Level.MEDIUM, "it could not read %s" % mechanism.unknown)
            c.unknown.append(mechanism.unknown)
            c.settle.extend(row.settle or (LONGER,))
        if row.filed_under is not None and row.category and decision.category != row.category:
            # the mechanism is shown; the category is the first wait's (issue 32), a convention
            # blind writers split on for a pipe between a parent and its child: said, not high
            c.cap(Level.MEDIUM, "the chain is filed under its first wait, %s; under the %s it shows, it is %s"
                  % (decision.category, row.kind, row.category))
            c.alternatives.append("%s: %s (the mechanism's own category)" % (row.category, SUMMARY[row.category]))
        if row.contested is not None and decision.category != row.contested[0]:
            other, why = row.contested
            c.cap(Level.MEDIUM, why)
            c.alternatives.append("%s: %s" % (other, SUMMARY[other]))
    elif basis == "halted":
        text = "the kernel's state of the culprit (%s)" % g.halt_state(culprit).condition
        if culprit.pid == scene.focus.pid and g.halt_state(culprit).condition == Condition.STOPPED:
            # the job itself is stopped, and nothing says by whom or why (a terminal's job control
            # is its own row): what the stop stands for is not a category the state shows
            c.cap(Level.MEDIUM, "the job itself is stopped, by a signal nothing here names")
            c.unknown.append("who stopped the job, and why (kill -STOP, Ctrl-Z, a debugger, a supervisor)")
            c.alternatives.append("a job paused on purpose, to be continued (SIGCONT)")
            c.settle.append("the job's launcher or supervisor: what sent the stop")
    elif basis == "root":
        text = "the culprit's own wait (%s), which explains itself" % root
        if root in WAITS_ON_A_THREAD and not _named_waker(g, culprit):
            text = "the culprit's own wait (%s), whose waker was not found" % root
            c.cap(Level.MEDIUM)
            c.unknown.append("who would end %s's wait (%s): no thread was seen holding or signalling it"
                             % (culprit.label, culprit.frame_kind or root))
            c.alternatives.append("a waker outside what was inspected, or one that died")
            c.settle.extend(["--locals: the object waited on (its owner, its counters)", LONGER])
    elif basis == "runaway":
        text = "a thread that never left the CPU nor the line of its own code it spins at"
    elif basis == "boundary":
        # the category is the first link's (a collective, a child, a lock): whatever its other
        # end does, the run waits there
        text = "the wait on %s, whose other end is %s" % (BOUNDARIES[decision.link][1], kinds.of(root).doing or root)
        if decision.link == "slow-feed":
            # the writer was not seen writing: that it sleeps between writes, rather than having
            # stopped feeding, is the likelier reading of one window, not a shown one
            c.cap(Level.MEDIUM, "the writer was not seen writing in the window")
            c.alternatives.append("a writer that has stopped feeding the pipe for good")
            c.settle.append(LONGER)
    elif basis == "collective":
        text = "the culprit's wait in a %s for ranks that are not there" % culprit.kind
        if culprit.kind == Kind.RENDEZVOUS:
            # ranks that never joined: late, never started, or looking for the store elsewhere;
            # none of the three is seen from the rank that waits
            c.cap(Level.MEDIUM, "why the other ranks have not joined is not seen")
            c.unknown.append("why the other ranks have not joined the rendezvous")
            c.alternatives.append("ranks that connect to another address or port (the network), or were never "
                                  "started")
            c.settle.extend(["--children from the launcher, to see every rank", LONGER])
    elif basis == "file-wait":
        text = "a poll loop on a file, and who holds or writes that file"
    else:
        text = "a culprit that only %s" % ONLY.get(
            kinds.of(root).root if root not in ONLY else root, "waits in a way not understood")
        c.cap(Level.MEDIUM)
        c.alternatives.extend(_weak_root_alternatives(root))
        c.settle.append(LONGER)
        if root not in (Kind.CPU,):
            c.settle.append("--syscalls exact, to see every wake-up of the threads involved")
    unread = object_not_read(culprit) if culprit is not None and decision.category == Category.LOCKS \
        and not table.closed(decision.mechanism) else None
    if unread:
        # the object the culprit waits on was there to read and could not be: its state (who
        # holds it, how many arrived) is what a lock verdict stands on, unless a closed mechanism
        # (a cycle of holders) proves it without the object
        c.cap(Level.MEDIUM, "the object the culprit waits on could not be read")
        c.unknown.append("the state of the object %s waits on (%s)" % (culprit.label, unread))
        c.settle.append("--locals, with the permissions to read the target's memory")
    lead = table.leading(table.kept(findings, decision.category))
    if lead is not None and lead is not decision.mechanism and lead.unknown:
        c.cap(Level.MEDIUM, "the summary's %s could not be read" % lead.unknown)
        c.unknown.append(lead.unknown)
        c.settle.append(LONGER)
    return text


def _named_waker(g, view):
    """A thread waiting on another whose waker a probe names all the same: a file a poll loop
    waits on, a joined thread py-spy names."""
    wait = g.file_waits.get((view.pid, view.tid))
    return bool(wait and wait.path) or (view.pid, view.tid) in g.joins


def _agreement(scene, decision, c):
    """How much of the window agrees with the verdict."""
    focus, culprit = scene.focus, decision.culprit
    share = min(focus.share or 0, culprit.share or 0)
    if table.closed(decision.mechanism):
        share = max(share, SHARE_HIGH)
    if share < SHARE_MEDIUM:
        c.cap(Level.LOW, "the focus or the culprit spent under half the window as said")
        c.alternatives.append("the run changes what it does within the window (a phase change, a stall that "
                              "began or ended mid-window)")
        c.settle.append(LONGER)
    elif share < SHARE_HIGH:
        c.cap(Level.MEDIUM, "the culprit spent %d%% of the window as said" % round(100 * share))
        c.settle.append(LONGER)


def _sampling(g, culprit, root, c):
    if culprit is not None and culprit.paced:
        # what it does between its short sleeps is read from the few samples that caught it awake
        c.cap(Level.MEDIUM, "the culprit's work between short sleeps is read from the samples that caught it awake")
        c.settle.append("--syscalls exact, to count the calls it makes between its sleeps")
    if not culprit.n_samples:
        c.cap(Level.LOW, "the culprit was never sampled")
    elif culprit.n_samples < MIN_SAMPLES:
        c.cap(Level.MEDIUM, "only %d samples of the culprit" % culprit.n_samples)
        c.settle.append(LONGER)
    python = g.procs[culprit.pid].python if culprit.pid in g.procs else {}
    # (a blocked thread's stack does not change: one sample of it is as good as many)
    if python.get("stacks") and root in (Kind.CPU, Kind.COMPILE) and culprit.n_framed_samples < MIN_STACK_SAMPLES:
        c.cap(Level.MEDIUM, "%d Python stack samples of the culprit" % culprit.n_framed_samples)
        c.settle.append(LONGER)
    elif not python.get("stacks") and "permission" in str(python.get("reason") or "").lower():
        c.cap(Level.MEDIUM, "its Python stacks could not be read (%s)" % python.get("reason"))
        c.settle.append("root or CAP_SYS_PTRACE (or kernel.yama.ptrace_scope=0), for Python stacks")


def _contention(focus, culprit, category, g, c):
    # (a spin kept from a CPU spins at the same line once it runs: its wait changes nothing)
    contended = [v for v in (focus, culprit) if v.state is not None and v.state.condition == Condition.THROTTLED
                 and not runaway(v, g.procs.get(v.pid))]
    if contended and category not in (Category.CPU,):
        c.cap(Level.MEDIUM, "%s waited for a CPU much of the window: what it does may change once it runs"
              % contended[0].label)
        c.alternatives.append("a process still starting up (imports) on a busy machine")
        c.settle.append("a second inspection once the machine is less loaded")


def _moves(scene, findings, decision, progress, c):
    """A verdict that says nothing will move is held against the activity of the threads it is
    about: a thread of them that ran, or a process of them that wrote, lowers it."""
    g = scene.g
    mechanism = decision.mechanism
    blocks = mechanism is not None and table.row(mechanism).blocks_progress
    if progress.state == ProgressState.MAKING and blocks:
        c.cap(Level.MEDIUM, "the run shows progress beside a mechanism that blocks it")
    if blocks:
        moved = [v for v in _involved(scene, mechanism) if _ran(g, v)]
        if moved:
            c.cap(Level.MEDIUM, "%s moved in the window (%s), which the verdict says cannot" % (
                moved[0].label, ", ".join("%s %d" % kv for kv in moved[0].activity.most_common(3))))
            c.alternatives.append("a wait that resolves slowly, not one that never will")
            c.settle.append(LONGER)
    movers = [p for p in g.proc_list if (p.io or {}).get("wchar", 0) >= MOVED_BYTES]
    if progress.state == ProgressState.NONE_SEEN and movers and not blocks:
        # nothing counted as progress, yet a process of the job moves data (through a pipe or a
        # socket: a file server, a helper): the run may advance more slowly than it shows
        c.cap(Level.MEDIUM, "pid %d wrote %d bytes in the window, which no progress rule counts" % (
            movers[0].pid, movers[0].io["wchar"]))
        c.alternatives.append("a run advancing slowly through pid %d" % movers[0].pid)
        c.settle.append(LONGER)


def _involved(scene, finding):
    """The threads a finding is about: those its facts name, and the chain's focus."""
    views = []
    for value in finding.facts.values():
        for item in value if isinstance(value, (list, tuple)) else [value]:
            if hasattr(item, "n_samples") and hasattr(item, "tid") and all(item is not v for v in views):
                views.append(item)
    return views


DATA_CALLS = ("read", "readv", "pread64", "write", "writev", "pwrite64", "sendto", "sendmsg", "recvfrom",
              "recvmsg", "sendmmsg", "recvmmsg")
MOVED_SAMPLES = 2        # samples of a waiting thread in a data call other than its wait: it moved data


def _ran(g, view):
    """A thread the verdict says waits (its kind is a wait) that moved in the window: caught in a
    read, write, send or receive other than the one it waits in, or, not caught stuck, on a CPU a
    share of it.  (A thread the verdict says computes, such as one retrying a call that fails, runs
    by design; a spin, a CUDA spin-wait and a stopped thread move nothing.)"""
    state = view.state
    if state is None or not kinds.of(view.kind).asleep or runaway(view, g.procs.get(view.pid)) \
            or state.condition in (Condition.SPINNING, Condition.STOPPED, Condition.TRACED, Condition.FROZEN):
        return False
    waits_in = view.main_activity()[0]
    if sum(n for label, n in view.activity.items() if label in DATA_CALLS and label != waits_in) >= MOVED_SAMPLES:
        return True
    return not stuck(view) and (state.numbers or {}).get("cpu_share", 0) >= MOVED_CPU and state.progressing


def _idle_by_design(scene, decision, progress, c):
    """"Idle by design" is high only when nothing waits on the idle thread and the job's output
    advances: a job that makes no progress beside an idle loop may be waiting on something not
    seen (an event loop's awaits cannot be read before Python 3.14)."""
    if decision.category != Category.SLEEP or c.level != Level.HIGH:
        return
    if decision.culprit is not scene.focus:
        c.cap(Level.MEDIUM, "the focus waits on the sleeping thread")
    elif progress.state != ProgressState.MAKING:
        c.cap(Level.MEDIUM, "nothing shows the job advancing beside it")
    else:
        return
    c.unknown.append("whether the job waits on something not seen (a task's await, a peer)")
    c.alternatives.append("a job waiting on something outside what was inspected")
    c.settle.append(LONGER)


ONLY = {"cpu": "computes", "sleep": "sleeps", "poll": "polls",
        "pipe-stream": "reads a pipe whose data comes in at its writer's pace",
        "child-poll": "asks in a loop whether its children exited"}


def _weak_root_alternatives(root):
    if root == Kind.CPU:
        return ["a long computation that will finish", "a loop that spins and never will"]
    if root == Kind.CHILD_POLL:
        return ["children that work and will exit", "a child that hangs or waits and never will"]
    if root == Kind.PIPE_STREAM:
        return ["a source slow by design (a rate-limited stream)", "storage or a network the writer stands for"]
    if root in (Kind.SLEEP, Kind.POLL, Kind.RETRY):
        return ["a thread idle by design (a timer, a poll loop) while the real wait is elsewhere",
                "a back-off loop around a call that fails"]
    return ["a wait on something outside what was inspected"]


def _once(items):
    return list(dict.fromkeys(items))
