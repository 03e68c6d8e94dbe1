"""Find the training run when no PID is given.

Candidates, strongest first: processes holding a GPU (NVML, or an open
/dev/nvidiaN), launchers (torchrun, deepspeed, accelerate launch, mpirun,
srun), and otherwise Python processes by CPU time and memory.  Each
candidate is climbed up to the root of its job (the launcher above it, or
the topmost Python ancestor), so all ranks and workers are inspected.
"""
import os
import re
import time

import psutil

from . import fds, redact
from .errors import StalldiagError
from .knowledge.processes import match_process
from .probes.gpu import NVML

SHELLS = {"bash", "sh", "dash", "zsh", "ksh", "fish", "tmux", "screen", "sshd", "init", "systemd",
          "containerd-shim", "su", "sudo", "login"}


class AmbiguousTarget(StalldiagError):
    def __init__(self, message):
        super().__init__(message, code="ambiguous")


def _info(proc):
    try:
        with proc.oneshot():
            return {
                "pid": proc.pid,
                "ppid": proc.ppid(),
                "name": proc.name(),
                "cmdline": proc.cmdline(),
                "create_time": proc.create_time(),
                "cpu": sum(proc.cpu_times()[:2]),
                "rss": proc.memory_info().rss,
                "uid": proc.uids().real,
            }
    except (psutil.Error, OSError):
        return None


def _is_python(info):
    name = info["name"] or ""
    argv0 = os.path.basename(info["cmdline"][0]) if info["cmdline"] else ""
    return name.startswith("python") or argv0.startswith("python") or name.startswith("pt_")


def _is_launcher(info):
    row = match_process(info["name"], info["cmdline"])
    return row is not None and row.role == "launcher" and row.framework != "shell"


def _gpu_memory():
    """{host pid: GPU memory in bytes} of every compute process NVML knows; {} without NVML."""
    used = {}
    pynvml = NVML.open()   # the run's NVML session, the GPU probe's too
    if pynvml is None:
        return used
    try:
        for index in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            for proc in pynvml.nvmlDeviceGetComputeRunningProcesses(handle):
                used[proc.pid] = used.get(proc.pid, 0) + (proc.usedGpuMemory or 0)
    except Exception:
        pass
    return used


def _holds_gpu_file(pid):
    return any(re.fullmatch(r"/dev/nvidia\d+", target) for target in (fds.fd_targets(pid) or {}).values())


def _excluded():
    """stalldiag itself and its ancestors (the shell or test runner that started it)."""
    excluded = set()
    proc = psutil.Process()
    while proc is not None:
        excluded.add(proc.pid)
        try:
            proc = proc.parent()
        except psutil.Error:
            break
    return excluded


def find_jobs(match=None):
    """[(root info, reason, [member infos])] for every job that looks like a training run."""
    excluded = _excluded()
    infos = {}
    for proc in psutil.process_iter():
        if proc.pid in excluded or proc.pid <= 2:
            continue
        info = _info(proc)
        if info and info["cmdline"]:
            infos[info["pid"]] = info
    if match:
        pattern = re.compile(match)
        keep = {pid for pid, info in infos.items() if pattern.search(" ".join(info["cmdline"]))}
    else:
        keep = set(infos)
    gpu = set(_gpu_memory())
    reasons = {}
    for pid in keep:
        info = infos[pid]
        if pid in gpu or (_is_python(info) and _holds_gpu_file(pid)):
            reasons[pid] = "holds a GPU"
        elif _is_launcher(info):
            reasons[pid] = "launcher"
    if not reasons:
        for pid in keep:
            if _is_python(infos[pid]):
                reasons[pid] = "Python process"
    jobs = {}
    for pid, reason in reasons.items():
        root = job_root(pid, infos)
        job = jobs.setdefault(root, {"reasons": set(), "members": set()})
        job["reasons"].add(reason)
        job["members"].add(pid)
    out = []
    for root, job in jobs.items():
        members = [infos[p] for p in _tree(root, infos)]
        out.append((infos[root], ", ".join(sorted(job["reasons"])), members))
    strength = {"holds a GPU": 0, "launcher": 1, "Python process": 2}
    out.sort(key=lambda j: (min(strength[r] for r in j[1].split(", ")),
                            -sum(m["cpu"] for m in j[2]), -sum(m["rss"] for m in j[2])))
    return out


def job_root(pid, infos):
    """Climb from pid while the parent is a launcher or a Python process of the same job."""
    current = pid
    while True:
        parent = infos.get(infos[current]["ppid"])
        if parent is None or (parent["name"] or "") in SHELLS:
            return current
        if _is_launcher(parent) or _is_python(parent):
            current = parent["pid"]
            continue
        return current


def _tree(root, infos):
    members, frontier = [root], [root]
    while frontier:
        parent = frontier.pop()
        for info in infos.values():
            if info["ppid"] == parent and info["pid"] not in members:
                members.append(info["pid"])
                frontier.append(info["pid"])
    return members


def choose_target(match=None):
    """The root pid of the one training run, or raise with the list of candidates."""
    jobs = find_jobs(match)
    if not jobs:
        raise StalldiagError("no training run found%s: give a PID" % (
            " matching %r" % match if match else ""), code="no-such-process")
    strongest = jobs[0][1].split(", ")[0]
    contenders = [j for j in jobs if strongest in j[1]]
    if len(contenders) > 1:
        raise AmbiguousTarget("%d runs could be the one: give a PID or --match REGEX\n%s" % (
            len(contenders), candidates_table(contenders)))
    return jobs[0][0]["pid"], jobs[0][1]


def candidates_table(jobs):
    now = time.time()
    lines = ["  %-8s %-6s %-8s %-9s %-7s %s" % ("pid", "procs", "age", "GPU", "CPU s", "command (why)")]
    gpu = _gpu_memory()
    for root, reason, members in jobs:
        mem = sum(gpu.get(m["pid"], 0) for m in members)
        cmd = " ".join(redact.redact_argv(root["cmdline"]))[:70]
        lines.append("  %-8d %-6d %-8s %-9s %-7.1f %s (%s)" % (
            root["pid"], len(members), _age(now - root["create_time"]),
            "%.1f GiB" % (mem / 2**30) if mem else "-", sum(m["cpu"] for m in members), cmd, reason))
    return "\n".join(lines)


def _age(seconds):
    if seconds < 120:
        return "%ds" % seconds
    if seconds < 7200:
        return "%dm" % (seconds // 60)
    return "%.1fh" % (seconds / 3600)
