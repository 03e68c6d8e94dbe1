"""Detectors of the rows that no edge of the walk finds: each a function of the scene (scene.py)
returning Findings, and the adapters that let a row name a detector of another shape.

  from_walk(kind)  the findings of that kind the walk's edges made (a cycle, a lost task, ...)
  on_root(fn)      fn(graph, root): a detector of the chain's end (polls.py, resources.py)
  on_scene(fn)     fn(scene)
  shared(fn)       fn(scene), run once however many rows read it (one detector, several kinds)

The registry's table (registry/table.py) names, for each row, one of these; diagnose() runs the
rows in the table's order and keeps, of what a detector returns, the findings of the row's kind.
"""
from collections import Counter
from typing import Any, Dict

from .explain import detail_text, frame_text
from .motion import STUCK_SHARE, stuck
from .registry.names import M
from .types import Finding
from ..vocab import Condition, Kind, rank_of, RoleKind


# --- adapters ---------------------------------------------------------------------------------

def _listed(found):
    if found is None:
        return []
    return list(found) if isinstance(found, (list, tuple)) else [found]


def from_walk(kind):
    def detect(scene):
        return [f for f in scene.walk.findings if f.kind == kind]
    detect.__name__ = "from_walk(%s)" % kind.value
    return detect


def on_root(fn):
    def detect(scene):
        return _listed(fn(scene.g, scene.root))
    detect.__name__ = "on_root(%s)" % fn.__name__
    detect.inner = fn
    return detect


def on_scene(fn):
    def detect(scene):
        return _listed(fn(scene))
    detect.__name__ = fn.__name__
    detect.inner = fn
    return detect


_SHARED: Dict[Any, Any] = {}


def shared(fn):
    """One adapter per detector, so that the scene's memo (keyed by it) runs fn once."""
    if fn not in _SHARED:
        def detect(scene):
            return scene.once(fn)
        detect.__name__ = "shared(%s)" % fn.__name__
        detect.inner = fn
        _SHARED[fn] = detect
    return _SHARED[fn]


def run(rows, scene, stage):
    """The findings of the rows of one stage, in the rows' order: each row keeps, of what its
    detector returns, the findings of its own kind."""
    out = []
    for row in rows:
        if row.stage != stage:
            continue
        for item in row.detect(scene):
            if item.kind == row.kind and not any(item is f for f in out):
                out.append(item)
    return out


# --- the chain's end --------------------------------------------------------------------------

def event_loop_blocked(g, view):
    """A thread that runs an asyncio event loop, held all window in one step (a synchronous
    sleep, read or computation inside a coroutine): no other task of the loop runs."""
    from ..knowledge import frames as frame_table
    if not frame_table.in_event_loop_step(view.top_stack) or view.top_stack_count < 0.9 * view.n_stack_samples:
        return None
    if not (stuck(view) or view.state is not None and view.state.condition in (Condition.COMPUTING, Condition.SPINNING)
            and view.share >= STUCK_SHARE):
        return None
    return Finding.about(M.EVENT_LOOP_BLOCKED, view, loop_thread=view)


def barrier_incomplete(g, view):
    """Every party seen at view's process-shared barrier waits, and none runs (barriers.py)."""
    return [Finding.about(M.BARRIER_INCOMPLETE, view, call=call, parties=members)
            for call, members in g.barriers if view in members and all(stuck(v) for v in members)]


def event_loop_waiting(scene):
    """An event loop between steps with nothing outside its process to wait on (event_loop.py):
    idle, or waiting for a wake-up only its own threads can send."""
    g, view = scene.g, scene.root
    loop = g.loops.get((view.pid, view.tid))
    if loop is None or loop["outside"] or view.kind not in (Kind.POLL, Kind.LOOP_WAKEUP):
        return []
    if view.kind == Kind.LOOP_WAKEUP:
        others = [v for v in g.by_pid.get(view.pid, []) if v is not view and v.top_stack]
        return [Finding.about(M.EVENT_LOOP_WAKEUP, view, loop_thread=view, threads=others,
                              wakeup=[fd.get("target") or "fd %s" % fd.get("fd") for fd in loop["wakeup"]])]
    return [Finding.about(M.EVENT_LOOP_IDLE, view, loop_thread=view, timeout_ms=loop["timeout_ms"],
                          listeners=[fd.get("local") or fd.get("target") for fd in loop["listeners"]])]


def unseen_wakers(scene):
    """Waits of the chain whose waker the probe could not see, and why (the other end on another
    host, nobody holding the write end, a set that cannot be read), and the mount a file wait
    is on: what a reader needs when the walk had to stop there."""
    g = scene.g
    views = [scene.root] if scene.root is scene.focus else [scene.focus, scene.root]
    said, out = set(), []
    for view in views:
        for record in g.wakers.get((view.pid, view.tid), []):
            key = (record.wait, record.target)
            if key in said:
                continue
            if record.why_unseen:
                said.add(key)
                out.append(Finding.about(M.WAKER_UNSEEN, view, waiter=view, record=record))
            mount = record.mount
            if mount and mount.get("fstype"):
                said.add(key)
                out.append(Finding.about(M.MOUNT, view, waiter=view, record=record))
    return out


def retry_loop(scene):
    """The chain's end sleeps between attempts at a call (retry.py), unless a file wait the probe
    resolved says more."""
    g, root = scene.g, scene.root
    if (root.pid, root.tid) in g.file_waits:
        return None
    retry = g.retry(root)
    if not retry:
        return None
    # a loop that sleeps between attempts is a retry of a failing call only when a failure is
    # seen; otherwise it may be pacing itself by design, and what it retries is read from its code
    unknown = None if retry.get("failing") else "whether the call it retries fails (no failure was seen in the window)"
    if retry.get("asked_wait"):
        unknown = "who set a wait this long (a server's Retry-After, or a back-off that grew)"
    return Finding.about(M.RETRY_LOOP, root, unknown=unknown, retrier=root, **retry)


# --- frameworks: the numbers a reader asks for ------------------------------------------------

def dataloader_starved(scene):
    g, focus = scene.g, scene.focus
    if focus.kind != Kind.DATALOADER:
        return None
    workers = scene.walk.workers
    return Finding.about(
        M.DATALOADER_STARVED, focus, loop=focus, starved=focus.context_share.get("dataloader", focus.share),
        states=Counter(w.kind for w in workers), duration=g.window.duration_s or 0,
        read_bytes=sum(g.procs[w.pid].io.get("read_bytes", 0) for w in workers),
        rchar=sum(g.procs[w.pid].io.get("rchar", 0) for w in workers),
        files=sorted({detail_text(w.top_detail()) for w in workers if w.kind == Kind.IO and w.top_detail()}))


def compile_time(scene):
    compiling = [v for v in scene.chain if v.kind == Kind.COMPILE]
    if not compiling:
        return None
    v = compiling[0]
    return Finding.about(M.COMPILE_TIME, v, compiler=v, share=v.context_share.get("compile", 0),
                         duration=scene.g.window.duration_s or 0, target=_compiled_function(v),
                         runs=_compile_episodes(v))


def rank_groups_of(scene):
    """(waiting, outliers) pids when a step of the chain waits in a collective, else None."""
    from .edges import rank_groups
    g = scene.g
    if not any(v.kind in (Kind.COLLECTIVE, Kind.RENDEZVOUS) or v.kind == Kind.CUDA and rank_of(g.roles.get(v.pid)) is not None
               for v in scene.chain):
        return None
    return rank_groups(g) or None


def collective_mismatch(scene):
    """Every rank waits, none is elsewhere, and they wait at different lines: different collectives."""
    from .edges import ranks_of
    groups = rank_groups_of(scene)
    if not groups:
        return None
    waiting, outliers = groups
    ranks = ranks_of(scene.g)
    waits = [ranks[pid] for pid in waiting if pid in ranks]
    lines = {tuple((v.user_frame() or [None] * 3)[1:3]) for v in waits}
    if not outliers and len(waits) >= 2 and len(lines) >= 2 and all(stuck(v) for v in waits):
        return Finding.about(M.COLLECTIVE_MISMATCH, waits[0], ranks=waits)
    return None


def missing_ranks(scene):
    if not rank_groups_of(scene):
        return None
    missing = _missing_ranks(scene.g)
    return Finding.about(M.MISSING_RANKS, missing=missing[0], world=missing[1], elsewhere=missing[2]) \
        if missing else None


def _missing_ranks(g):
    from ..knowledge.ranks import RANK_VARS, WORLD_SIZE_VARS, first_var
    from .collectives import rank_ranges
    seen, world, local = set(), None, None
    for proc in g.procs.values():
        rank = first_var(proc.env, RANK_VARS)
        if rank is not None:
            seen.add(rank)
        world = first_var(proc.env, WORLD_SIZE_VARS) or world
        local = first_var(proc.env, ("LOCAL_WORLD_SIZE",)) or local
    if world is None:
        return None
    missing = sorted(set(range(world)) - seen)
    # every rank this host runs is here (LOCAL_WORLD_SIZE of them) and the job has more: the others
    # run on other hosts, they did not fail to join
    elsewhere = bool(local and len(seen) >= local and world > local)
    return (rank_ranges(missing, max_runs=8), world, elsewhere) if missing else None


def _compiled_function(view):
    """The user's function being compiled: the innermost user frame above dynamo's entry."""
    from ..knowledge.frames import framework_context, is_library_file
    for frames, _count in view.stacks_by_count():
        context = framework_context(frames)
        if not any(row.kind == Kind.COMPILE for _d, row in context):
            continue
        deepest = max(d for d, row in context if row.kind == Kind.COMPILE)
        for frame in frames[deepest + 1:]:
            if not is_library_file(frame[1]):
                return frame_text(frame)
    return None


def _compile_episodes(view):
    """How many separate runs of compile-context samples the thread's timeline has."""
    from ..knowledge.frames import framework_context
    episodes, inside = 0, False
    for frames, count in view.stacks:
        compiling = any(row.kind == Kind.COMPILE for _d, row in framework_context(frames))
        if compiling and not inside and count:
            episodes += 1
        inside = compiling
    return episodes


# --- the GPUs ---------------------------------------------------------------------------------

def xid(scene):
    return [Finding.about(M.XID, event=event) for event in scene.g.gpu.xid_events] if scene.g.gpus else []


def ecc(scene):
    out = []
    for dev in scene.g.gpu.devices if scene.g.gpus else []:
        start, end = dev.ecc_uncorrected_start, dev.ecc_uncorrected_end
        if isinstance(start, int) and isinstance(end, int) and end > start:
            out.append(Finding.about(M.ECC, index=dev.index, errors=end - start))
    return out


def gpu_throttled(scene):
    out = []
    for dev in scene.g.gpus.values():
        slow = dev.clock_reasons & (0x8 | 0x40 | 0x80)
        if slow:
            out.append(Finding.about(M.GPU_THROTTLED, gpu=dev, reasons=slow))
    return out


# --- findings that stand on their own ---------------------------------------------------------

def unnumbered_ranks(scene):
    from .graph import unnumbered_ranks as guessed_ranks
    g = scene.g
    guessed = guessed_ranks(g.proc_list, g.roles)
    return Finding.about(M.UNNUMBERED_RANKS, pids=guessed, parties=sorted(g.barrier_pids & set(guessed))) \
        if guessed else None


def skipped_children(scene):
    g = scene.g
    return Finding.about(M.SKIPPED_CHILDREN, pid=g.root_pid, count=g.skipped_children) \
        if g.skipped_children else None


def process_exited(scene):
    g = scene.g
    return [Finding.about(M.PROCESS_EXITED, pid=p.pid, proc=p) for p in g.proc_list
            if g.roles.get(p.pid) != RoleKind.COMPILER and p.exited_at is not None]


def no_python_stacks(scene):
    g = scene.g
    return [Finding.about(M.NO_PYTHON_STACKS, pid=p.pid, proc=p) for p in g.proc_list
            if g.roles.get(p.pid) != RoleKind.COMPILER and not p.python.get("stacks") and p.exited_at is None]


def compile_workers(scene):
    g = scene.g
    workers = [p for p in g.proc_list if g.roles.get(p.pid) == RoleKind.COMPILE_WORKER and p.exited_at is None]
    if not workers:
        return None
    busy = [p for p in workers if getattr(g.most_telling_thread(p.pid), "kind", None) in (Kind.CPU, Kind.COMPILE)]
    return Finding.about(M.COMPILE_WORKERS, busy=len(busy), workers=len(workers),
                         compiling=any(v.kind == Kind.COMPILE for v in scene.chain))


def compiler_processes(scene):
    g = scene.g
    compilers = Counter(p.comm or "?" for p in g.proc_list if g.roles.get(p.pid) == RoleKind.COMPILER)
    # (short-lived by nature: summarised, not one line each)
    return Finding.about(M.COMPILER_PROCESSES, compilers=compilers) if compilers else None


def d_state(scene):
    out = []
    for view in scene.g.views:
        share = sum(n for label, n in view.activity.items() if label.startswith("D:")) / max(view.n_samples, 1)
        if share >= 0.2:
            out.append(Finding.about(M.D_STATE, view, thread=view, share=share))
    return out


# --- after the progress model -----------------------------------------------------------------

def silent_output(scene):
    """A run that makes progress while its stdout and stderr receive nothing (progress.py)."""
    from .progress import silent_output as silent
    g, focus = scene.g, scene.focus
    facts = silent(g.window, g.procs.get(focus.pid), scene.progress)
    if not facts:
        return []
    return [Finding.about(M.SILENT_OUTPUT, pid=focus.pid, **facts)]
