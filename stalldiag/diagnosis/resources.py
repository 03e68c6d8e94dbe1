"""Detectors of a binding limit or a neighbour: the resource the verdict's thread waits for, who
limits it and who else uses it (probes/resources.py and the GPU probe's process list).

  cpu-limit          runnable but waiting for a CPU, while CPUs it may not use (affinity, cpuset)
                     sit idle
  cpu-neighbour      runnable but waiting for a CPU that other processes, outside the job, use
  cpu-oversubscribed runnable but waiting for a CPU: the job's own busy threads outnumber the
                     CPUs it may use
  io-throttled       storage waits, under a cgroup block-I/O throttle
  disk-neighbour     storage waits, while another process outside the job moves more on the disks
  memory-limit       storage waits (reads, page faults) under a cgroup memory limit it has reached:
                     its data cannot stay in the page cache
  gpu-neighbour      a GPU of the job has other processes, outside the job, computing on it
  gpu-memory-held    the job cannot get GPU memory (its output says so, or the GPU is full) and a
                     process outside the job holds most of it
  pcie-bound         a thread waits for the GPU in a host-to-device copy with no pinned memory
  fd-limit           a process of the job holds (nearly) all the fds its RLIMIT_NOFILE allows
  pids-limit         the job's pids cgroup holds (nearly) all the tasks its pids.max allows: a
                     fork() or a new thread fails with EAGAIN; who holds the tasks is named

Each returns a Finding or None; the registry's rows say what they decide (most qualify the
verdict of their category: their sentence joins its summary).
"""
from ..knowledge import retries as retry_table
from .text import clip
from .explain import pct
from .types import Finding
from .registry.names import M
from ..vocab import Condition, Kind

GIB = float(1 << 30)
NEIGHBOUR_CPU = 0.1     # a process outside the job using this share of a CPU is a neighbour
NEIGHBOURS_CPU = 0.25   # neighbours using this share of each CPU the job may use are named
IDLE_CPU = 0.5          # a CPU busy less than this share of the window sat (mostly) idle
DISK_NEIGHBOUR_BPS = 5e6
MEMORY_FULL = 0.9       # usage at this share of the limit: the page cache is squeezed
GPU_NEIGHBOUR_SM = 10.0  # a process's mean SM share that counts as computing on the GPU
GPU_FULL = 0.9
HOLDER_SHARE = 0.5      # an outside process holding this share of a GPU's memory


def job_pids(g):
    return [pid for pid, proc in g.procs.items() if not proc.outside_tree]


def _outside_text(g, info, pid):
    """info: the OtherProcess the probe described, or None (not visible from here)."""
    command = (info.cmdline or info.comm) if info is not None else None
    zombie = ", a zombie" if info is not None and info.state == "Z" else ""
    gone = "" if info is not None else ", not visible from here (another PID namespace, or exited)"
    return "pid %d (not part of this job%s%s, `%s`)" % (pid, zombie, gone, short_command(command or "?"))


def short_command(command, limit=100):
    """A command line a reader recognises at a glance: long paths as their last part."""
    words = [("…/" + word.rsplit("/", 1)[1]) if "/" in word and len(word) > 30 else word
             for word in command.split()]
    words[:1] = [word.rsplit("/", 1)[-1] for word in words[:1]]   # the program: its name
    text = " ".join(words)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def allowed_cpus(res, pid):
    """The CPUs a process may run on: its affinity within its cgroup's cpuset; None if unknown."""
    limits = res.limits_of(pid)
    cpus = set(limits.affinity)
    cpuset = set(limits.cgroup.cpus)
    if cpus and cpuset:
        cpus &= cpuset
    cpus = cpus or cpuset
    return sorted(cpus) if cpus else None


def _waits_for_cpu(view):
    return view.state is not None and view.state.condition == Condition.THROTTLED and "throttled_s" not in view.state.numbers


def _cpu_limit_how(res, pid, allowed):
    cpuset = res.limits_of(pid).cgroup.cpus
    if cpuset and len(cpuset) == len(allowed) and len(cpuset) < res.host.cpus:
        return "its cgroup's cpuset %s" % _cpus_text(cpuset)
    return "its CPU affinity %s" % _cpus_text(allowed)


def _cpus_text(cpus):
    return "{%s}" % ",".join(map(str, cpus))


def _cpu_context(g, view):
    res = g.resources
    if res is None or not _waits_for_cpu(view):
        return None
    host_cpus = res.host.cpus
    return res, host_cpus, allowed_cpus(res, view.pid) or list(range(host_cpus))


def cpu_limit(g, view):
    """cpu-limit: a thread runnable but waiting for a CPU in a process that may use fewer CPUs than
    the host has (its affinity, its cgroup's cpuset)."""
    found = _cpu_context(g, view)
    if found is None or len(found[2]) >= found[1]:
        return None
    res, host_cpus, allowed = found
    others = {cpu: res.host.cpu_busy.get(cpu) for cpu in range(host_cpus) if cpu not in allowed}
    return Finding.about(M.CPU_LIMIT, view, waiter=view, allowed=allowed, host_cpus=host_cpus,
                         how=_cpu_limit_how(res, view.pid, allowed), others=others)


def cpu_contention(g, view):
    """cpu-neighbour, or cpu-oversubscribed: who else wants the CPUs a runnable thread waits for."""
    found = _cpu_context(g, view)
    if found is None:
        return None
    res, host_cpus, allowed = found
    neighbours = [n for n in res.neighbours if n.cpu_share >= NEIGHBOUR_CPU
                  and set(n.affinity or range(host_cpus)) & set(allowed)]
    if sum(n.cpu_share for n in neighbours) >= NEIGHBOURS_CPU * len(allowed):
        return Finding.about(M.CPU_NEIGHBOUR, view, waiter=view, allowed=allowed, host_cpus=host_cpus,
                             neighbours=neighbours[:3])
    runnable = [v for v in g.views if v.pid in g.procs and not g.procs[v.pid].outside_tree
                and v.state is not None and v.state.condition in (Condition.THROTTLED, Condition.COMPUTING, Condition.SPINNING)]
    if len(runnable) <= len(allowed):
        return None   # (who else ran there is not known: a neighbour too small to name, or unread)
    return Finding.about(M.CPU_OVERSUBSCRIBED, view, waiter=view, allowed=allowed, host_cpus=host_cpus,
                         threads=len(runnable))


def _storage_wait(view):
    return view.kind == Kind.IO or (view.state is not None and view.state.condition == Condition.STORAGE)


def io(g, view):
    """io-throttled or disk-neighbour, for a thread in storage waits."""
    res = g.resources
    if res is None or not _storage_wait(view):
        return None
    limits = res.limits_of(view.pid).cgroup
    if limits.io:
        device, rule = sorted(limits.io.items())[0]
        return Finding.about(M.IO_THROTTLED, view, waiter=view, device=device, rule=rule,
                             disk=_disk_of(res, device), version=limits.version)
    job = set(job_pids(g))
    job_bps = sum((g.procs[pid].io.get("read_bytes", 0) + g.procs[pid].io.get("write_bytes", 0)) for pid in job) \
        / max(g.window.duration_s or 1, 1e-3)
    heavy = [n for n in res.neighbours if n.read_Bps + n.write_Bps >= max(DISK_NEIGHBOUR_BPS, job_bps)]
    if heavy:
        return Finding.about(M.DISK_NEIGHBOUR, view, waiter=view, neighbours=heavy[:2], job_bps=job_bps)
    return None


def _disk_of(res, device):
    return next((name for name, disk in res.host.disks.items() if disk.device == device), None)


def memory(g, view):
    """memory-limit: storage waits (reads or page faults) under a cgroup memory limit it fills."""
    res = g.resources
    if res is None or not _storage_wait(view):
        return None
    limits = res.limits_of(view.pid).cgroup
    mem = limits.memory
    if not mem.limit or not mem.usage or mem.usage < MEMORY_FULL * mem.limit:
        return None
    return Finding.about(M.MEMORY_LIMIT, view, waiter=view, limit=mem.limit, usage=mem.usage,
                         cache=mem.file, where=mem.limit_path or limits.path,
                         host_available=res.host.memory.get("available"))


def _outsiders_on(g, index):
    """[(pid, memory bytes, mean SM %)] of processes on GPU `index` outside the job."""
    job = set(job_pids(g))
    found = []
    for pid, memory in g.gpu.memory.items():
        if pid in job or index not in memory:
            continue
        found.append((pid, memory[index], g.gpu.sm_share(pid, index)))
    return sorted(found, key=lambda r: (-(r[2] or 0), -r[1]))


def _job_gpus(g):
    found = []
    for pid in job_pids(g):
        for index in g.devices_of(pid):
            if index not in found:
                found.append(index)
    return sorted(found)


def _others(g):
    """pid -> OtherProcess: the GPUs' other users the probe described."""
    return g.resources.others if g.resources is not None else {}


OOM_WORDS = retry_table.ERROR_WORDS_OF["cuda"]


def gpu_memory(g, view):
    """gpu-memory-held: the job cannot get GPU memory (its output says "out of memory", or the GPU
    it uses is full) and a process outside the job holds most of that memory."""
    from .retry import error_lines
    lines = [line for pid in job_pids(g) for line in error_lines(g, pid) if OOM_WORDS.search(line)]
    for info in g.gpu.devices:
        index, total = info.index, info.memory_total
        dev = g.gpus.get(index)
        outsiders = _outsiders_on(g, index)
        held = sum(r[1] for r in outsiders)
        full = dev is not None and dev.memory_used and total and dev.memory_used >= GPU_FULL * total
        if not total or held < HOLDER_SHARE * total or not (lines or full):
            continue
        holder = max(outsiders, key=lambda r: r[1])
        return Finding.about(M.GPU_MEMORY_HELD, view, waiter=view, index=index, total=total, holder=holder,
                             holder_info=_others(g).get(holder[0]), held=held, lines=lines[-1:])
    return None


def gpu_neighbour(g, view):
    """gpu-neighbour: a GPU the job uses has another process, outside the job, computing on it."""
    for index in _job_gpus(g):
        busy = [r for r in _outsiders_on(g, index) if (r[2] or 0) >= GPU_NEIGHBOUR_SM]
        if busy:
            return Finding.about(M.GPU_NEIGHBOUR, view, index=index, neighbours=busy[:2],
                                 infos={r[0]: _others(g).get(r[0]) for r in busy[:2]})
    return None


COPY_FUNCTIONS = ("to", "cuda", "copy_", "_to_copy", "tensor", "as_tensor", "from_numpy")


def pcie(g, view):
    """pcie-bound: a thread that waits for the GPU inside a host-to-device copy, in a job with no
    pinned-memory thread and no pin_memory() call in its stacks."""
    if view.kind != Kind.CUDA or not view.top_stack:
        return None
    user = view.user_frame()
    line = ((user[3] or {}).get("code") if user and len(user) > 3 and isinstance(user[3], dict) else "") or ""
    if not any(".%s(" % name in line for name in ("to", "cuda", "copy_")):
        return None
    pinned = any("pin_memory" in (frame[0] or "") for v in g.views for frames, _n in v.stacks_by_count()[:3]
                 for frame in frames)
    return Finding.about(M.PCIE_BOUND, view, waiter=view, pinned=pinned,
                         rx_Bps=g.gpu.pcie_rx_Bps(g.devices_of(view.pid)), line=line.strip())


FD_FULL = 0.95   # share of RLIMIT_NOFILE in use: the next open, pipe or socket fails (EMFILE)


def fd_limit(g, view):
    """fd-limit: a process of the job holds (nearly) as many fds as its RLIMIT_NOFILE allows:
    whatever it opens next (a file, a pipe, a socket, a shared-memory handle) fails with EMFILE."""
    res = g.resources
    if res is None:
        return None
    full = []
    for pid, limits in sorted(res.processes.items()):
        files = limits.open_files
        if files is not None and files.limit and files.open >= FD_FULL * files.limit:
            full.append((pid, files.open, files.limit))
    if not full:
        return None
    return Finding.about(M.FD_LIMIT, view, full=full)


PIDS_FULL = 0.95   # share of pids.max in use: the next fork() or thread fails (EAGAIN)


def pids_limit(g, view):
    """pids-limit: a pids cgroup of the job's processes is (nearly) full."""
    res = g.resources
    if res is None:
        return None
    for pid, limits in sorted(res.processes.items()):
        pids = limits.cgroup.pids
        if pids is not None and pids.limit and pids.current is not None and pids.current >= PIDS_FULL * pids.limit:
            return Finding.about(M.PIDS_LIMIT, view, limit=pids.limit, current=pids.current, where=pids.limit_path,
                                 members=pids.members)
    return None


DETECTORS = (fd_limit, pids_limit, cpu_limit, cpu_contention, io, memory, gpu_memory, gpu_neighbour, pcie)


def detect(g, view):
    """Every finding these detectors make of the verdict's thread."""
    return [found for found in (detector(g, view) for detector in DETECTORS) if found is not None]


# -- what each finding says (the registry's `says`) -------------------------------------------

def fd_limit_text(g, full):
    return "%s: whatever %s next (a file, a pipe, a socket, a batch passed through shared memory) " \
           "fails with EMFILE (Too many open files)" % ("; ".join(
               "pid %d holds %d of the %d open files its RLIMIT_NOFILE allows" % row for row in full[:3]),
               "it opens" if len(full) == 1 else "they open")


def pids_limit_text(g, limit, current, where, members):
    text = "its pids cgroup %s holds %d of the %d tasks (processes and threads) its pids.max allows" % (
        where or "?", current, limit)
    holders = [m for m in members if (m.threads or 0) >= max(2, 0.2 * limit)][:2]
    if holders:
        text += ", %s" % "; ".join("%d of them threads of %s" % (m.threads, _member_text(g, m)) for m in holders)
    return text + ": every fork() or new thread fails with EAGAIN (Resource temporarily unavailable)"


def _member_text(g, member):
    if member.pid in g.procs:
        return "pid %d (of this job, `%s`)" % (member.pid, member.comm or "?")
    return _outside_text(g, member, member.pid)


def cpu_limit_text(g, waiter, allowed, host_cpus, how, others):
    idle = [cpu for cpu, share in sorted(others.items()) if share is not None and share < IDLE_CPU]
    text = "its processes may use %d of the host's %d CPUs (%s)" % (len(allowed), host_cpus, how)
    if idle:
        text += ", while CPU %s sat idle (%s busy)" % (",".join(map(str, idle)),
                                                       ", ".join(pct(others[c]) for c in idle))
    return text


def cpu_neighbour_text(g, waiter, allowed, host_cpus, neighbours):
    return "the CPUs it may use (%s of %d) are shared with %s" % (
        _cpus_text(allowed), host_cpus, "; ".join("%s, %.0f%% of a CPU" % (
            _outside_text(g, n, n.pid), 100 * n.cpu_share) for n in neighbours))


def cpu_oversubscribed_text(g, waiter, allowed, host_cpus, threads):
    return "the job's own %d busy threads share the %d CPU%s it may use (of %d on the host)" % (
        threads, len(allowed), "" if len(allowed) == 1 else "s", host_cpus)


def io_throttled_text(g, waiter, device, rule, disk, version):
    limits = ", ".join("%s %s" % (key, _rate(value) if key.endswith("bps") else value) for key, value in sorted(rule.items()))
    return "its cgroup throttles disk %s (%s) to %s (%s)" % (
        disk or device, device, limits, "blkio.throttle" if version == 1 else "io.max")


def disk_neighbour_text(g, waiter, neighbours, job_bps):
    return "the disks are shared with %s (the job moves %s)" % ("; ".join("%s, %s read and %s written" % (
        _outside_text(g, n, n.pid), _rate(n.read_Bps), _rate(n.write_Bps)) for n in neighbours),
        _rate(job_bps))


def memory_limit_text(g, waiter, limit, usage, cache, where, host_available):
    text = "its cgroup's memory limit of %s (%s) is full (%s used, %s of it page cache): its data cannot stay " \
           "cached and is read from disk again" % (_size(limit), where or "?", _size(usage), _size(cache or 0))
    if host_available:
        text += ", though the host has %s available" % _size(host_available)
    return text


def gpu_memory_held_text(g, waiter, index, total, holder, holder_info, held, lines):
    text = "cannot get GPU memory: %s holds %s of GPU %d's %s" % (
        _outside_text(g, holder_info, holder[0]), _size(holder[1]), index, _size(total))
    if lines:
        text += "; the job's output says: %s" % clip(lines[-1].strip(), 200)
    return text


def gpu_neighbour_text(g, index, neighbours, infos):
    return "GPU %d is shared with %s" % (index, "; ".join("%s, %.0f%% of SM, %s" % (
        _outside_text(g, infos.get(pid), pid), sm or 0, _size(mem)) for pid, mem, sm in neighbours))


def pcie_bound_text(g, waiter, pinned, rx_Bps, line):
    notes = [] if pinned else ["no pin_memory in the job's stacks"]
    if rx_Bps is not None:
        notes.append("PCIe %s host-to-device" % _rate(rx_Bps))
    return "bound by host-to-device copies of %s memory%s at `%s`" % (
        "pinned" if pinned else "pageable", " (%s)" % "; ".join(notes) if notes else "", line[:80])


def _size(n):
    return "%.1f GiB" % (n / GIB) if n >= GIB / 2 else "%.0f MiB" % (n / float(1 << 20))


def _rate(bps):
    return "%.1f GB/s" % (bps / 1e9) if bps >= 1e9 else "%.1f MB/s" % (bps / 1e6)
