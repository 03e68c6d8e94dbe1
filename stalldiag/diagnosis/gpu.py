"""What the GPUs did over the window, from the NVML samples of a capture.

NVML "utilization" is the share of time any kernel ran: one spinning
thread block reads 100%.  GPM (Hopper and newer) says how many SMs were
busy and whether tensor cores worked, which separates real compute from a
spinning or hung kernel.  Thresholds below were set from captures on H200s
(fixtures/captures/gpu_*.json): a bf16 matmul loop read SM 96% / tensor 89%,
a one-block spin kernel SM 0.76%, an NCCL kernel waiting for its peer SM 18% /
tensor 0%.
"""
from .registry.names import M
from ..vocab import Category, Condition, Kind, rank_of

BUSY_FLAG = 90.0        # NVML utilization at or above: "a kernel is always running"
IDLE = 5.0              # at or below: idle
REAL_SM = 50.0          # GPM SM utilization that is real compute
REAL_TENSOR = 10.0      # or tensor-core activity that is
HUNG_SM = 5.0           # busy flag with SM activity under this: one stuck block
LAUNCH_BOUND_SM = 10.0  # GPM SM activity under which a computing host thread, not the GPU, sets the pace


def _mean(values):
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


class DeviceSummary:
    def __init__(self, index, info, samples, gpm):
        self.index = index
        self.name = (info or {}).get("name", "GPU")
        self.n = len(samples)
        self.util = _mean([s[2] for s in samples])
        self.idle_share = (sum(1 for s in samples if s[2] <= IDLE) / self.n) if self.n else None
        self.busy_share = (sum(1 for s in samples if s[2] >= BUSY_FLAG) / self.n) if self.n else None
        self.memory_used = samples[-1][4] if samples else None
        self.sm = _mean([g[2] for g in gpm]) if gpm else None
        self.occupancy = _mean([g[3] for g in gpm]) if gpm else None
        self.tensor = _mean([g[4] for g in gpm]) if gpm else None
        reasons = 0
        for s in samples:
            if len(s) > 7 and s[7]:
                reasons |= s[7]
        self.clock_reasons = reasons

    @property
    def has_gpm(self):
        return self.sm is not None

    @property
    def busy_flag(self):
        return self.util is not None and self.util >= BUSY_FLAG

    @property
    def real_compute(self):
        return self.has_gpm and ((self.sm or 0) >= REAL_SM or (self.tensor or 0) >= REAL_TENSOR)

    @property
    def looks_hung(self):
        return self.busy_flag and self.has_gpm and (self.sm or 0) < HUNG_SM and (self.tensor or 0) < 1

    @property
    def idle(self):
        return self.util is not None and self.util <= IDLE

    def text(self):
        parts = ["GPU %d (%s): utilization %.0f%% (busy in %.0f%% of %d samples)"
                 % (self.index, self.name, self.util or 0, 100 * (self.busy_share or 0), self.n)]
        if self.has_gpm:
            parts.append("SM activity %.1f%%, occupancy %.1f%%, tensor cores %.1f%% (GPM)"
                         % (self.sm or 0, self.occupancy or 0, self.tensor or 0))
        else:
            parts.append("no GPM: SM activity not measured")
        if self.memory_used is not None:
            parts.append("%.1f GiB used" % (self.memory_used / 2 ** 30))
        return ", ".join(parts)


def device_summaries(gpus):
    """index -> DeviceSummary of each GPU over the window, of a types.Gpus (or a capture's dict)."""
    from .types import Gpus
    if isinstance(gpus, dict):
        gpus = Gpus.of(gpus)
    if not gpus.available:
        return {}
    out = {}
    for index in sorted({s[1] for s in gpus.samples} | set(gpus.infos)):
        samples = [s for s in gpus.samples if s[1] == index]
        gpm = [g for g in gpus.gpm if g[1] == index]
        out[index] = DeviceSummary(index, gpus.infos.get(index), samples, gpm)
    return out


def devices_of(capture, pid):
    """GPU indices a process uses: NVML's process list, else its open /dev/nvidiaN files.

    NVML names host PIDs, so inside a container's PID namespace a process is
    not found there; the device files it holds open name its GPUs anyway
    (N is the device's minor number).
    """
    from .types import Gpus, Process
    proc = next((p for p in capture.get("processes") or [] if isinstance(p, dict) and p.get("pid") == pid), None)
    return Gpus.of(capture).devices_of(pid, Process.of(proc) if proc else None)


def visible_devices(env, devices):
    """Physical GPU indices a process may use, from CUDA_VISIBLE_DEVICES (indices or UUIDs)."""
    value = (env or {}).get("CUDA_VISIBLE_DEVICES")
    if value is None:
        return None
    out = []
    for item in value.split(","):
        item = item.strip()
        if item.isdigit():
            out.append(int(item))
        elif item:
            match = [d["index"] for d in devices if d.get("uuid", "").startswith(item)]
            out.extend(match)
    return out


# -- the registry's GPU rows: what the GPUs of the chain's ends did, found before the category is
# decided; each qualifies a verdict of its category (registry.py) ---------------------------

def detect(scene):
    """Findings of the GPUs the chain's first thread (the focus) and its culprit use."""
    from .types import Finding
    g, focus, culprit = scene.g, scene.focus, scene.root
    if not g.gpus:
        return []
    focus_devs = [g.gpus[i] for i in g.devices_of(focus.pid) if i in g.gpus]
    culprit_devs = [g.gpus[i] for i in g.devices_of(culprit.pid) if i in g.gpus]
    found = []
    if focus_devs:
        dev = focus_devs[0]
        if dev.looks_hung:
            found.append(Finding.about(M.HUNG_KERNEL, focus, waiter=focus, gpu=dev))
        elif dev.real_compute:
            found.append(Finding.about(M.GPU_BOUND, focus, gpu=dev))
        elif dev.busy_flag and not dev.has_gpm:
            found.append(Finding.about(M.GPU_BUSY_FLAG, focus, gpu=dev))
        if focus.kind == Kind.CUDA and dev.busy_flag and not dev.real_compute:
            found.append(Finding.about(M.COLLECTIVE_ON_GPU, focus, waiter=focus, gpu=dev))
    if culprit_devs and focus.kind != Kind.DATALOADER:
        dev = culprit_devs[0]
        if dev.has_gpm and (dev.sm or 0) < LAUNCH_BOUND_SM and culprit.state is not None \
                and culprit.state.condition == Condition.COMPUTING:
            found.append(Finding.about(M.LAUNCH_BOUND, culprit, host=culprit, gpu=dev))
    if focus.kind == Kind.DATALOADER:
        found += [Finding.about(M.GPU_STARVED, focus, gpu=dev) for dev in focus_devs if dev.idle]
    return found


def hung_kernel_clause(g, waiter, gpu):
    return "the GPU kernel looks hung (busy flag %.0f%%, SM activity %.1f%%)" % (gpu.util, gpu.sm)


def gpu_bound_clause(g, gpu):
    return "the GPU is really busy (SM %.0f%%, tensor %.0f%%): GPU-bound" % (gpu.sm, gpu.tensor or 0)


def gpu_busy_flag_text(g, gpu):
    return "GPU busy flag %.0f%% (no GPM to tell real compute from a spin)" % gpu.util


def launch_bound_clause(g, host, gpu):
    return "launch-bound: GPU %d SM %.1f%%" % (gpu.index, gpu.sm or 0)


def gpu_starved_clause(g, gpu):
    return "GPU %d idle %.0f%% of the window" % (gpu.index, 100 * gpu.idle_share)


# -- why the GPU waits: a sink of knowledge/gpu_sinks.py in the stacks of the thread that feeds it --

SINK_SHARE = 0.3    # share of a thread's stack samples in one sink that makes it what the GPU waits on


def gpu_sinks(scene):
    """The sink (knowledge/gpu_sinks.py) the GPU of the chain's end waits on: a host thread
    of a process using a GPU that is not saturated with real compute, whose stack samples stand in
    a sync, the allocator, anomaly detection or an autotuner in SINK_SHARE of them or more."""
    from collections import Counter
    from ..knowledge.gpu_sinks import BY_NAME, sink_of_frames
    from ..knowledge.frames import is_library_file
    from .threads import user_frame_of
    from .types import Finding
    g = scene.g
    if not g.gpus:
        return []
    # (the chain's end only: a focus whose wait the walk followed elsewhere, a rank syncing on a
    # collective's kernel that waits for a peer, waits on what the chain found)
    view = scene.root
    if view is None or view.kind in (Kind.DATALOADER, Kind.COLLECTIVE, Kind.RENDEZVOUS) \
            or rank_of(g.roles.get(view.pid)) is not None and view.kind == Kind.CUDA and scene.walk.chain[1:]:
        return []
    devs = [g.gpus[i] for i in g.devices_of(view.pid) if i in g.gpus]
    if not devs or (devs[0].real_compute and devs[0].busy_flag):
        return []      # (a GPU busy with real compute waits on nobody)
    counts, total, at = Counter(), 0, {}
    for frames, n in view.stacks:
        if not frames:
            continue
        total += n
        python = [f for f in frames if (f[1] or "").endswith((".py", ".pyx"))]
        mine = user_frame_of(frames)
        code = None
        if python and mine is python[0] and not is_library_file(mine[1]) and len(mine) > 3 \
                and isinstance(mine[3], dict):
            code = mine[3].get("code")    # (the line's own C call: the sync it makes)
        sink = sink_of_frames(frames, code)
        if sink is not None:
            counts[sink.name] += n
            if n > at.get(sink.name, (0, None))[0]:
                at[sink.name] = (n, mine)
    for frames, n in view.native_stacks or []:
        sink = sink_of_frames(frames)
        if sink is not None:
            counts[sink.name] += n
            total += n
    if not counts or not total:
        return []
    name, n = counts.most_common(1)[0]
    if n / total < SINK_SHARE:
        return []
    sink = BY_NAME[name]
    kind = M.GPU_AUTOTUNING if sink.category == Category.COMPILATION else M.GPU_WAITS_ON_HOST
    return [Finding.about(kind, view, host=view, sink=sink, share=n / total, gpu=devs[0], where=at.get(name, (0, None))[1])]


def gpu_sink_text(g, host, sink, share, gpu, where):
    from .explain import frame_text
    return ("GPU %d is %s (%s): it waits on %s: %s, in %.0f%% of its stack samples%s" % (
        gpu.index, "idle" if gpu.idle else "narrow", "utilization %.0f%%%s" % (
            gpu.util or 0, ", SM %.0f%%" % gpu.sm if gpu.has_gpm else ""),
        host.label, sink.meaning, 100 * share, " at %s" % frame_text(where) if where else ""))
