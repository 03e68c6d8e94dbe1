"""How sure a verdict is, from its evidence: what it rests on, how much was seen, what disagrees.

  high    a closed chain: it ends in a recognised mechanism (registry.py) or at a root the
          kernel or the stacks explain by themselves (a thread in storage I/O, on the network,
          compiling, stopped by a signal, a call that never left the CPU), seen in most samples
          of a window with enough of them, and nothing seen contradicts it
  medium  the chain ends at a thread that merely sleeps, polls or computes (a long computation
          and a spin look alike for a while), or the sampling was thin, or a signal disagrees
  low     the cause is not determined, or the culprit was barely seen

Below high the verdict lists the alternatives it could not rule out and what would settle them.
"""
from . import kinds, registry
from .category import BOUNDARIES, boundary_of, root_kind
from .motion import runaway

LEVELS = ("low", "medium", "high")
MIN_SAMPLES = 8          # /proc samples of the culprit under which the sampling was thin
MIN_STACK_SAMPLES = 2    # py-spy samples of a Python culprit under which its stack is a guess
SHARE_HIGH = 0.8         # share of the window the focus and the culprit spent as the verdict says
SHARE_MEDIUM = 0.5
MOVED_BYTES = 64 * 1024  # bytes a process wrote in the window that say data moves

LONGER = "a longer window (--duration 30 or more)"


def assess(d, focus, culprit, category, progress):
    """{"level", "rests_on", "alternatives", "to_settle"} of a verdict."""
    if category == "unknown":
        return _result("low", "the cause is not determined", [
            "a wait stalldiag has no mechanism for", "a process it could not read"],
            [LONGER, "--children, to read the processes it may wait on", "root or CAP_SYS_PTRACE, for every stack"])
    alternatives, settle, reasons = [], [], []
    mechanism = registry.first([f["kind"] for f in d.findings], registry.PRECEDENCE)
    root = root_kind(d, culprit)
    link = boundary_of(d, d.walk)[0]
    level = "high"
    if mechanism is not None:
        rests_on = "a recognised mechanism (%s)" % mechanism
        if registry.BY_KIND[mechanism].rests_on == "inferred":
            rests_on += ", inferred from stacks and waits"
        elif registry.BY_KIND[mechanism].rests_on == "likely":
            rests_on += ", likely from what surrounds the wait, not shown by it"
            level = "medium"
            alternatives.append("the thread polls for something else, and the wait ends elsewhere")
            settle.append(LONGER)
    elif d.halted(culprit):
        rests_on = "the kernel's state of the culprit (%s)" % (d.halt_state(culprit).condition)
    elif kinds.of(root).decisive:
        rests_on = "the culprit's own wait (%s), which explains itself" % root
    elif root == "cpu" and runaway(culprit, d.procs.get(culprit.pid)):
        rests_on = "a thread that never left the CPU nor the line of its own code it spins at"
    elif link is not None:
        # the category is the first link's (a collective, a child, a lock): whatever its other
        # end does, the run waits there
        rests_on = "the wait on %s, whose other end is %s" % (BOUNDARIES[link][1], kinds.of(root).doing or root)
    elif category == "collective" and culprit.kind in ("collective", "rendezvous"):
        rests_on = "the culprit's wait in a %s for ranks that are not there" % culprit.kind
    elif (culprit.pid, culprit.tid) in d.file_waits:
        rests_on = "a poll loop on a file, and who holds or writes that file"
    else:
        rests_on = "a culprit that only %s" % {"cpu": "computes", "sleep": "sleeps", "poll": "polls"}.get(
            kinds.of(root).root if root not in ("cpu", "sleep", "poll") else root, "waits in a way not understood")
        level = "medium"
        alternatives.extend(_weak_root_alternatives(root))
        settle.append(LONGER)
        if root not in ("cpu",):
            settle.append("--syscalls exact, to see every wake-up of the threads involved")
    # how much of the window agrees with the verdict
    share = min(focus.share or 0, culprit.share or 0)
    if mechanism is not None and registry.BY_KIND[mechanism].rests_on == "closed":
        share = max(share, SHARE_HIGH)
    if share < SHARE_MEDIUM:
        level = "low"
        reasons.append("the focus or the culprit spent under half the window as said")
        alternatives.append("the run changes what it does within the window (a phase change, a stall that "
                            "began or ended mid-window)")
        settle.append(LONGER)
    elif share < SHARE_HIGH:
        level = _lower(level, "medium")
        reasons.append("the culprit spent %d%% of the window as said" % round(100 * share))
        settle.append(LONGER)
    if not culprit.n_samples:
        level = "low"
        reasons.append("the culprit was never sampled")
    elif culprit.n_samples < MIN_SAMPLES:
        level = _lower(level, "medium")
        reasons.append("only %d samples of the culprit" % culprit.n_samples)
        settle.append(LONGER)
    python = d.procs[culprit.pid].python if culprit.pid in d.procs else {}
    # (a blocked thread's stack does not change: one sample of it is as good as many)
    if python.get("stacks") and root in ("cpu", "compile") and culprit.n_framed_samples < MIN_STACK_SAMPLES:
        level = _lower(level, "medium")
        reasons.append("%d Python stack samples of the culprit" % culprit.n_framed_samples)
        settle.append(LONGER)
    elif not python.get("stacks") and "permission" in str(python.get("reason") or "").lower():
        level = _lower(level, "medium")
        reasons.append("its Python stacks could not be read (%s)" % python.get("reason"))
        settle.append("root or CAP_SYS_PTRACE (or kernel.yama.ptrace_scope=0), for Python stacks")
    # (a spin kept from a CPU spins at the same line once it runs: its wait changes nothing)
    contended = [v for v in (focus, culprit) if v.state is not None and v.state.condition == "throttled"
                 and not runaway(v, d.procs.get(v.pid))]
    if contended and category not in ("cpu",):
        level = _lower(level, "medium")
        reasons.append("%s waited for a CPU much of the window: what it does may change once it runs"
                       % contended[0].label)
        alternatives.append("a process still starting up (imports) on a busy machine")
        settle.append("a second inspection once the machine is less loaded")
    if progress.get("state") == "making progress" and mechanism is not None \
            and registry.BY_KIND[mechanism].blocks_progress:
        level = _lower(level, "medium")
        reasons.append("the run shows progress beside a mechanism that blocks it")
    movers = [p for p in d.proc_list if (p.io or {}).get("wchar", 0) >= MOVED_BYTES]
    if progress.get("state") == "no progress seen" and movers and not (
            mechanism is not None and registry.BY_KIND[mechanism].blocks_progress):
        # nothing counted as progress, yet a process of the job moves data (through a pipe or a
        # socket: a file server, a helper): the run may advance more slowly than it shows
        level = _lower(level, "medium")
        reasons.append("pid %d wrote %d bytes in the window, which no progress rule counts" % (
            movers[0].pid, movers[0].io["wchar"]))
        alternatives.append("a run advancing slowly through pid %d" % movers[0].pid)
        settle.append(LONGER)
    if reasons:
        rests_on += "; " + "; ".join(reasons)
    if level == "high":
        alternatives, settle = [], []
    return _result(level, rests_on, alternatives, settle)


def _weak_root_alternatives(root):
    if root == "cpu":
        return ["a long computation that will finish", "a loop that spins and never will"]
    if root in ("sleep", "poll", "retry"):
        return ["a thread idle by design (a timer, a poll loop) while the real wait is elsewhere",
                "a back-off loop around a call that fails"]
    return ["a wait on something outside what was inspected"]


def _lower(level, cap):
    return level if LEVELS.index(level) <= LEVELS.index(cap) else cap


def _result(level, rests_on, alternatives, settle):
    return {"level": level, "rests_on": rests_on, "alternatives": list(dict.fromkeys(alternatives)),
            "to_settle": list(dict.fromkeys(settle))}
