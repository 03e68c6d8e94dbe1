"""Detectors of the job's configuration (knowledge/knobs.py): a knob that explains a verdict
only beside the measured signal it explains.

  launch-blocking         CUDA_LAUNCH_BLOCKING in a process whose host thread waits on the GPU or
                          launches kernels one by one (a cuda or a launch-bound verdict)
  blocking-wait           NCCL's blocking wait in a rank whose wait in a collective is a CPU spin
  no-collective-timeout   the NCCL watchdog told not to abort, beside a collective that hangs
  threads-oversubscribed  OpenMP/MKL threads per process times the job's processes beyond the
                          CPUs they may use, beside threads kept waiting for a CPU
  debug-mode              a debug mode (Python's dev mode, a debug allocator, tracemalloc,
                          coverage, CUDA device-side assertions, compile debug) in a process that
                          computes or compiles
  compile-settings        settings that make compiling slower, beside a compile
  knobs-set               (context) what the chain's processes set, for the reader
"""
from ..knowledge import knobs as table
from .registry.names import M
from .types import Finding
from ..vocab import Condition, Kind, rank_of, RoleKind

DEBUG_KNOBS = ("PYTHONDEVMODE", "PYTHONMALLOC", "PYTHONTRACEMALLOC", "COVERAGE_PROCESS_START", "TORCH_USE_CUDA_DSA",
               "TORCH_COMPILE_DEBUG", "PYTORCH_NO_CUDA_MEMORY_CACHING")
DEBUG_FLAGS = ("-X dev", "-X tracemalloc")
COMPILE_KNOBS = ("TORCHINDUCTOR_MAX_AUTOTUNE", "TORCHINDUCTOR_FORCE_DISABLE_CACHES", "TORCHINDUCTOR_COMPILE_THREADS",
                 "TORCH_COMPILE_DEBUG", "TORCH_LOGS")
THREAD_KNOBS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def _chain_pids(scene):
    return list(dict.fromkeys([v.pid for v in scene.chain] + [scene.root.pid]))


def _set(g, pid, names):
    """[(name, value)] of the named knobs a process turns on (values as the probe kept them:
    redacted when read)."""
    proc = g.procs.get(pid)
    found = table.set_knobs(proc.env if proc is not None else {})
    return [(knob.name, str(value)) for knob, value in found if knob.name in names]


def launch_blocking(scene):
    g = scene.g
    for pid in _chain_pids(scene):
        if _set(g, pid, ("CUDA_LAUNCH_BLOCKING",)) and (g.devices_of(pid) or any(
                v.kind == Kind.CUDA for v in g.by_pid.get(pid, []))):
            return Finding.about(M.LAUNCH_BLOCKING, pid=pid, process=pid)
    return None


def blocking_wait(scene):
    g = scene.g
    for view in scene.chain:
        spinning = view.state is not None and view.state.condition in (Condition.SPINNING, Condition.COMPUTING)
        if view.kind in (Kind.COLLECTIVE, Kind.CUDA) and spinning:
            knob = _set(g, view.pid, ("NCCL_BLOCKING_WAIT", "TORCH_NCCL_BLOCKING_WAIT"))
            if knob:
                return Finding.about(M.BLOCKING_WAIT, view, rank=view, knob=knob[0])
    return None


def no_collective_timeout(scene):
    g = scene.g
    for view in scene.chain:
        if view.kind not in (Kind.COLLECTIVE, Kind.CUDA) or rank_of(g.roles.get(view.pid)) is None:
            continue
        env = (g.procs.get(view.pid).env if view.pid in g.procs else {}) or {}
        for name in ("TORCH_NCCL_ASYNC_ERROR_HANDLING", "NCCL_ASYNC_ERROR_HANDLING"):
            if str(env.get(name, "")).strip() == "0":
                return Finding.about(M.NO_COLLECTIVE_TIMEOUT, view, rank=view, knob=name)
    return None


def threads_oversubscribed(scene):
    """Intra-op threads per process (a thread knob, else the threads seen) times the job's
    processes that run them, beyond the CPUs they may use, while threads wait for a CPU."""
    from .resources import allowed_cpus
    g = scene.g
    res = g.resources
    waiting = [v for v in g.views if v.state is not None and v.state.condition == Condition.THROTTLED]
    if res is None or not waiting:
        return None
    busy = {v.pid for v in g.views if v.state is not None and v.state.condition in (Condition.COMPUTING, Condition.THROTTLED, Condition.SPINNING)}
    pids = [p.pid for p in g.proc_list if not p.outside_tree and p.exited_at is None and p.pid in busy]
    allowed = allowed_cpus(res, scene.root.pid) or list(range(res.host.cpus or 0))
    per_process = {}
    for pid in pids:
        proc = g.procs[pid]
        value = next((table.int_value(proc.env, name) for name in THREAD_KNOBS
                      if table.int_value(proc.env, name)), None)
        if value:
            per_process[pid] = value
    if not per_process or not allowed:
        return None
    total = sum(per_process.values())
    if total <= len(allowed):
        return None
    knob = next(name for name in THREAD_KNOBS if any(table.int_value(g.procs[pid].env, name) for pid in per_process))
    return Finding.about(M.THREADS_OVERSUBSCRIBED, scene.root, processes=len(per_process), threads=total,
                         cpus=len(allowed), knob=knob, per=max(per_process.values()), waiting=len(waiting))


def debug_mode(scene):
    g = scene.g
    for pid in _chain_pids(scene):
        proc = g.procs.get(pid)
        if proc is None:
            continue
        found = _set(g, pid, DEBUG_KNOBS) + [(flag, "") for flag in table.interpreter_flags(proc.cmdline)
                                              if flag in DEBUG_FLAGS]
        if found:
            return Finding.about(M.DEBUG_MODE, pid=pid, process=pid, knobs=found)
    return None


def compile_settings(scene):
    g = scene.g
    for view in scene.chain:
        if view.kind == Kind.COMPILE or g.roles.get(view.pid) in (RoleKind.COMPILER, RoleKind.COMPILE_WORKER):
            found = _set(g, view.pid, COMPILE_KNOBS)
            if found:
                return Finding.about(M.COMPILE_SETTINGS, view, knobs=found)
    return None


def knobs_set(scene):
    """What the chain's processes set, for the reader: a hint, never a verdict."""
    g = scene.g
    out = []
    for pid in _chain_pids(scene):
        proc = g.procs.get(pid)
        if proc is None:
            continue
        found = _set(g, pid, table.NAMES)
        flags = table.interpreter_flags(proc.cmdline)
        if found or flags:
            out.append(Finding.about(M.KNOBS_SET, pid=pid, process=pid, knobs=found, flags=flags))
    return out


# --- what each finding says -------------------------------------------------------------------------

def _pairs(knobs):
    return ", ".join("%s=%s" % (name, value) if value else name for name, value in knobs)


def launch_blocking_text(g, process):
    return "CUDA_LAUNCH_BLOCKING=1 in pid %d: %s" % (process, table.BY_NAME["CUDA_LAUNCH_BLOCKING"].effect)


def blocking_wait_text(g, rank, knob):
    name, value = knob
    return "%s=%s in pid %d: %s" % (name, value, rank.pid, table.BY_NAME[name].effect)


def no_collective_timeout_text(g, rank, knob):
    return ("%s=0 in pid %d: the NCCL watchdog will not abort a collective that times out, so this hang "
            "does not end by itself" % (knob, rank.pid))


def threads_oversubscribed_text(g, processes, threads, cpus, knob, per, waiting):
    return ("%d processes run up to %d %s threads each (%d in all) on %d CPUs they may use, and %d threads "
            "waited for a CPU: set %s so that processes x threads fits the CPUs" % (
                processes, per, knob.split("_")[0], threads, cpus, waiting, knob))


def debug_mode_text(g, process, knobs):
    effects = [table.BY_NAME[name].effect if name in table.BY_NAME else table.FLAGS[name] for name, _v in knobs]
    return "pid %d runs in a debug mode that slows it: %s (%s)" % (process, _pairs(knobs), "; ".join(effects))


def compile_settings_text(g, knobs):
    return "compile settings that make compiling slower: %s (%s)" % (
        _pairs(knobs), "; ".join(table.BY_NAME[name].effect for name, _v in knobs))


def knobs_set_text(g, process, knobs, flags):
    parts = []
    if knobs:
        parts.append(_pairs(knobs))
    if flags:
        parts.append("interpreter flags %s" % " ".join(flags))
    return "pid %d runs with %s" % (process, "; ".join(parts))
