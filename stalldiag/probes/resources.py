"""The job's resources, host-wide, read at the window's start and at its end (never per tick).

For each resource the job uses, three questions:
  may use    the limits on each of its processes: CPU affinity, the cgroup's cpuset and CPU
             quota, its memory limit, its block-I/O throttles (cgroup v1 and v2)
  uses       the kernel's own accounting over the window: the cgroup's memory usage, page cache
             and major faults; per-CPU busy time; per-disk throughput and busy time
  neighbours every other process on the host that used a CPU or a disk in the window, with its
             command, and the processes the GPU probe saw on the job's GPUs

Everything is a file the kernel already keeps: ~2 reads of /proc/*/stat and /proc/*/io per
window (about 10 ms per 500 processes, measured in docs/benchmarks.md; read through procfs.py),
and a few cgroup files per cgroup.  The cgroup readers take the text of /proc/PID/cgroup and a
mount table, so the tests run them on saved files of a cgroup v2 host.
"""
import os
import time
from dataclasses import field

from ..records import typed_record
from .. import fds, procfs, redact
from . import kernel_state
from .base import Probe, Section

NEIGHBOURS = 8            # most CPU-hungry and most I/O-heavy other processes kept, each
NEIGHBOUR_CPU_SHARE = 0.05
NEIGHBOUR_IO_BPS = 1 << 20
CGROUP_V1 = ("cpu", "cpuset", "memory", "blkio", "pids")
PIDS_FULL = 0.9          # share of pids.max in use from which the cgroup's members are described
PIDS_DIRECTORIES = 64    # cgroup directories read for those members, at most


_read = kernel_state._read   # a cgroup's file: its text, or None


def _text(pid, name):
    """Text of /proc/PID/NAME, or None when it cannot be read."""
    try:
        return procfs.read(pid, name)
    except procfs.ProcfsError:
        return None


def _host(name):
    """Text of /proc/NAME, or None when it cannot be read."""
    try:
        return procfs.read_host(name)
    except procfs.ProcfsError:
        return None


def _int(text):
    try:
        return int(text)
    except (TypeError, ValueError):
        return None


_key_values = kernel_state._key_values


def cpu_list(text):
    """[0, 1, 2, 5] from a kernel CPU list "0-2,5"; None for an empty or unreadable list."""
    cpus = []
    for part in (text or "").strip().split(","):
        if not part:
            continue
        low, _, high = part.partition("-")
        if _int(low) is None or (high and _int(high) is None):
            return None
        cpus.extend(range(int(low), int(high or low) + 1))
    return cpus or None


# --- cgroups --------------------------------------------------------------------------------

def cgroup_mounts(mountinfo):
    """{"v2": (point, root), "cpuset": (point, root), "memory": ..., "blkio": ..., "cpu": ...}."""
    return kernel_state.cgroup_mounts(mountinfo or "", controllers=CGROUP_V1)


process_cgroups = kernel_state.parse_proc_cgroups
_directory = kernel_state._cgroup_dir
_up = kernel_state._ancestors


def _nearest(directory, point, reader):
    """(the tightest limit along the path, the directory that sets it) for a reader that
    returns a number (smaller is tighter) or None where nothing is set."""
    best = (None, None)
    for candidate in _up(directory, point):
        value = reader(candidate)
        if value is not None and (best[0] is None or value < best[0]):
            best = (value, candidate)
    return best


NO_MEMORY_LIMIT = 1 << 60   # v1 writes 9223372036854771712 for "no limit"


def _memory_limit_v1(directory):
    value = _int((_read(directory + "/memory.limit_in_bytes") or "").strip())
    return value if value is not None and value < NO_MEMORY_LIMIT else None


def _memory_limit_v2(directory):
    return _int((_read(directory + "/memory.max") or "").strip())   # "max" -> None


def _cpu_quota_v1(directory):
    quota = _int((_read(directory + "/cpu.cfs_quota_us") or "").strip())
    period = _int((_read(directory + "/cpu.cfs_period_us") or "").strip())
    return round(quota / period, 3) if quota and quota > 0 and period else None


def _cpu_quota_v2(directory):
    limit = (_read(directory + "/cpu.max") or "").split()
    quota, period = (_int(limit[0]), _int(limit[1])) if len(limit) == 2 else (None, None)
    return round(quota / period, 3) if quota and period else None


def _throttles(text, v2):
    """{"MAJ:MIN": {"rbps": n, ...}} of blkio.throttle.*_device (v1) or io.max (v2)."""
    limits = {}
    for line in (text or "").splitlines():
        parts = line.split()
        if not parts:
            continue
        if v2:
            for item in parts[1:]:
                key, _, value = item.partition("=")
                if _int(value) is not None:
                    limits.setdefault(parts[0], {})[key] = int(value)
        elif len(parts) == 2 and _int(parts[1]) is not None:
            limits.setdefault(parts[0], {})["value"] = int(parts[1])
    return limits


def _io_v1(directory):
    found = {}
    for name, key in (("read_bps", "rbps"), ("write_bps", "wbps"), ("read_iops", "riops"), ("write_iops", "wiops")):
        for device, value in _throttles(_read(directory + "/blkio.throttle.%s_device" % name), False).items():
            found.setdefault(device, {})[key] = value["value"]
    return found


def _io_v2(directory):
    return _throttles(_read(directory + "/io.max"), True)


def _pids_limit(directory):
    return _int((_read(directory + "/pids.max") or "").strip())   # "max" -> None


def _pids(directory, point):
    """{"limit", "current", "limit_path", "members"} of the tightest pids.max above a process
    (v1 and v2 name the files alike), or None where none is set.  members: every pid in the
    limiting cgroup and below, read only when the count is near the limit (who else holds it)."""
    limit, where = _nearest(directory, point, _pids_limit)
    if limit is None:
        return None
    current = _int((_read(where + "/pids.current") or "").strip())
    members = []
    if current is not None and current >= PIDS_FULL * limit:
        for n, (path, _dirs, _files) in enumerate(os.walk(where)):
            if n >= PIDS_DIRECTORIES:
                break
            members += [int(pid) for pid in (_read(path + "/cgroup.procs") or "").split() if pid.isdigit()]
    return {"limit": limit, "current": current, "limit_path": where[len(point):] or "/", "members": members}


MEMORY_STAT_V1 = {"total_cache": "file", "total_rss": "anon", "total_pgmajfault": "pgmajfault",
                  "total_inactive_file": "inactive_file", "total_active_file": "active_file"}
MEMORY_STAT_V2 = {"file": "file", "anon": "anon", "pgmajfault": "pgmajfault", "inactive_file": "inactive_file",
                  "active_file": "active_file", "workingset_refault_file": "refaults"}


def cgroup_limits(cgroup_text, mounts):
    """The limits and usage of one process's cgroups: {"version", "path", "cpus", "cpu_quota",
    "memory": {"limit", "limit_path", "usage", "file", "anon", "pgmajfault", ...}, "io": {...}}."""
    paths = process_cgroups(cgroup_text)
    found = {"version": None, "path": None}
    v1 = any(c in paths and c in mounts for c in CGROUP_V1)
    if v1:
        found["version"], found["path"] = 1, paths.get("memory") or paths.get("cpu") or paths.get("cpuset")
        if "cpuset" in paths and "cpuset" in mounts:
            directory = _directory(mounts["cpuset"], paths["cpuset"])
            found["cpus"] = cpu_list(_read(directory + "/cpuset.effective_cpus") or _read(directory + "/cpuset.cpus"))
        if "cpu" in paths and "cpu" in mounts:
            quota, where = _nearest(_directory(mounts["cpu"], paths["cpu"]), mounts["cpu"][0], _cpu_quota_v1)
            found["cpu_quota"] = quota
        if "memory" in paths and "memory" in mounts:
            directory = _directory(mounts["memory"], paths["memory"])
            limit, where = _nearest(directory, mounts["memory"][0], _memory_limit_v1)
            stat = _key_values(_read(directory + "/memory.stat"))
            memory = {new: stat.get(old) for old, new in MEMORY_STAT_V1.items()}
            memory.update(limit=limit, limit_path=where and where[len(mounts["memory"][0]):] or None,
                          usage=_int((_read(directory + "/memory.usage_in_bytes") or "").strip()))
            found["memory"] = memory
        if "blkio" in paths and "blkio" in mounts:
            found["io"] = _io_v1(_directory(mounts["blkio"], paths["blkio"])) or None
        if "pids" in paths and "pids" in mounts:
            found["pids"] = _pids(_directory(mounts["pids"], paths["pids"]), mounts["pids"][0])
    elif "" in paths and "v2" in mounts:
        point = mounts["v2"][0]
        directory = _directory(mounts["v2"], paths[""])
        found["version"], found["path"] = 2, paths[""]
        found["cpus"] = cpu_list(_read(directory + "/cpuset.cpus.effective"))
        found["cpu_quota"] = _nearest(directory, point, _cpu_quota_v2)[0]
        limit, where = _nearest(directory, point, _memory_limit_v2)
        stat = _key_values(_read(directory + "/memory.stat"))
        memory = {new: stat.get(old) for old, new in MEMORY_STAT_V2.items()}
        memory.update(limit=limit, limit_path=where and where[len(point):] or None,
                      usage=_int((_read(directory + "/memory.current") or "").strip()))
        found["memory"] = memory
        io = {}
        for candidate in _up(directory, point):
            for device, limits in _io_v2(candidate).items():
                io.setdefault(device, limits)
        found["io"] = io or None
        found["pids"] = _pids(directory, point)
    return found


# --- the host --------------------------------------------------------------------------------

def cpu_times(stat_text):
    """{cpu index: (busy jiffies, total jiffies)} of /proc/stat's per-CPU lines."""
    times = {}
    for line in (stat_text or "").splitlines():
        if not line.startswith("cpu") or line.startswith("cpu "):
            continue
        parts = line.split()
        values = [_int(v) or 0 for v in parts[1:]]
        idle = sum(values[3:5])   # idle + iowait
        times[_int(parts[0][3:])] = (sum(values[:8]) - idle, sum(values[:8]))
    return times


def meminfo(text):
    """{"total", "available", "cached", "swap_used"} in bytes from /proc/meminfo."""
    kb = {}
    for line in (text or "").splitlines():
        name, _, rest = line.partition(":")
        value = _int(rest.split()[0]) if rest.split() else None
        if value is not None:
            kb[name] = value * 1024
    swap = (kb.get("SwapTotal") or 0) - (kb.get("SwapFree") or 0)
    return {"total": kb.get("MemTotal"), "available": kb.get("MemAvailable"), "cached": kb.get("Cached"),
            "swap_used": swap}


def disk_counters(text):
    """{"name": (MAJ:MIN, sectors read, sectors written, ms busy)} of /proc/diskstats, whole disks."""
    disks = {}
    for line in (text or "").splitlines():
        parts = line.split()
        if len(parts) < 13 or parts[2].startswith(("loop", "ram", "dm-", "sr")):
            continue
        disks[parts[2]] = ("%s:%s" % (parts[0], parts[1]), _int(parts[5]) or 0, _int(parts[9]) or 0,
                           _int(parts[12]) or 0)
    return disks


def process_counters():
    """{pid: (start time, CPU ticks, major faults, read bytes, write bytes, comm, state, ppid)} of
    every process on the host (the I/O bytes of another user's process need root)."""
    found = {}
    try:
        pids = procfs.pids()
    except procfs.ProcfsError:
        return found
    for pid in pids:
        text = _text(pid, "stat")
        if not text or ")" not in text:
            continue
        comm = text[text.index("(") + 1:text.rindex(")")]
        fields = text[text.rindex(")") + 2:].split()
        if len(fields) < 20:
            continue
        io = _key_values((_text(pid, "io") or "").replace(":", ""))
        found[pid] = (_int(fields[19]), (_int(fields[11]) or 0) + (_int(fields[12]) or 0), _int(fields[9]) or 0,
                            io.get("read_bytes"), io.get("write_bytes"), comm, fields[0], _int(fields[1]))
    return found


def open_files(pid):
    """{"open", "limit"}: the fds a process holds and its soft RLIMIT_NOFILE (/proc/PID/limits)."""
    try:
        count = len(procfs.list_fds(pid))
    except procfs.ProcfsError:
        return None
    limit = None
    for line in (_text(pid, "limits") or "").splitlines():
        if line.startswith("Max open files"):
            limit = _int(line[len("Max open files"):].split()[0])
    return {"open": count, "limit": limit}


def _affinity(pid):
    try:
        return sorted(os.sched_getaffinity(pid))
    except OSError:
        return None


def describe_process(pid):
    """{"pid", "comm", "cmdline", "state", "ppid", "uid"} of any process on the host (a GPU's
    other user, a neighbour); the command line redacted; None when it is gone."""
    stat = _text(pid, "stat")
    if not stat or ")" not in stat:
        return None
    fields = stat[stat.rindex(")") + 2:].split()
    uid = next((_int(line.split()[1]) for line in (_text(pid, "status") or "").splitlines()
                if line.startswith("Uid:") and len(line.split()) > 1), None)
    return {"pid": pid, "comm": stat[stat.index("(") + 1:stat.rindex(")")],
            "cmdline": redacted_command(pid),
            "state": fields[0] if fields else None, "ppid": _int(fields[1]) if len(fields) > 1 else None,
            "uid": uid}


def _threads(pid):
    return next((_int(line.split()[1]) for line in (_text(pid, "status") or "").splitlines()
                 if line.startswith("Threads:") and len(line.split()) > 1), None)


def _argv(pid):
    return [a for a in (_text(pid, "cmdline") or "").split("\0") if a]


def redacted_command(pid):
    """A process's command line, redacted and cut to 200 characters; None if it has none."""
    argv = _argv(pid)
    return " ".join(redact.redact_argv(argv))[:200] if argv else None


def program_of(argv):
    """The Python program a command line runs (its script, or `-m module`), or None: a twin of
    a job is another process running the same program, not any process of the same interpreter."""
    if not argv or "python" not in os.path.basename(argv[0]):
        return None
    args = argv[1:]
    while args and args[0].startswith("-") and args[0] not in ("-m", "-c"):
        args = args[1:]
    if len(args) >= 2 and args[0] == "-m":
        return "-m " + args[1]
    if args and args[0].endswith(".py"):
        return os.path.basename(args[0])
    return None


def listening_sockets():
    """{socket inode: "address:port"} of the TCP sockets listening in this network namespace."""
    found = {}
    for name in ("tcp", "tcp6"):
        for inode, entry in fds.inet_sockets(_host("net/" + name) or "", name).items():
            if entry["state"] == "LISTEN":
                found[inode] = entry["local"]
    return found


def _listening_of(pid, listening):
    found = []
    for target in (fds.fd_targets(pid) or {}).values():
        if target.startswith("socket:[") and int(target[8:-1]) in listening:
            found.append(listening[int(target[8:-1])])
    return sorted(set(found))


class ResourceProbe:
    """start(pids) and stop(pids, also=...) around the window; to_dict() for the capture."""

    def __init__(self):
        self.result = {"available": False}
        self._start = None
        self._t0 = None
        self.exclude = {os.getpid()}

    def _snapshot(self):
        return {"t": time.monotonic(), "cpus": cpu_times(_host("stat")),
                "disks": disk_counters(_host("diskstats")), "procs": process_counters()}

    def start(self, pids):
        try:
            self._start = self._snapshot()
        except Exception as exc:   # a probe never stops the others: the report says what is missing
            self.result = {"available": False, "reason": "could not read /proc: %s" % exc}

    def stop(self, pids, also=()):
        """pids: the job's processes; also: other pids to describe (the GPU's other processes)."""
        if self._start is None:
            return
        try:
            self.result = self._finish(self._start, self._snapshot(), set(pids), also)
        except Exception as exc:
            self.result = {"available": False, "reason": "resource probe failed: %s" % exc}

    def _finish(self, first, last, job, also):
        duration = max(last["t"] - first["t"], 1e-3)
        mounts = cgroup_mounts(_text("self", "mountinfo"))
        processes = {}
        for pid in sorted(job):
            text = _text(pid, "cgroup")
            if text is None:
                continue
            processes[str(pid)] = {"affinity": _affinity(pid), "cgroup": cgroup_limits(text, mounts),
                                   "open_files": open_files(pid)}
        self._pids_members(processes)
        host = {"cpus": len(last["cpus"]), "memory": meminfo(_host("meminfo")),
                "cpu_busy": {}, "disks": {}}
        for cpu, (busy, total) in last["cpus"].items():
            before = first["cpus"].get(cpu)
            if before and total > before[1]:
                host["cpu_busy"][str(cpu)] = round((busy - before[0]) / float(total - before[1]), 3)
        for name, (device, read, written, busy_ms) in last["disks"].items():
            before = first["disks"].get(name)
            if before is None:
                continue
            row = {"device": device, "read_Bps": round((read - before[1]) * 512 / duration),
                   "write_Bps": round((written - before[2]) * 512 / duration),
                   "busy": round(min(1.0, (busy_ms - before[3]) / 1000.0 / duration), 3)}
            if row["read_Bps"] or row["write_Bps"] or row["busy"]:
                host["disks"][name] = row
        return {"available": True, "duration_s": round(duration, 3), "processes": processes, "host": host,
                "neighbours": self._neighbours(first["procs"], last["procs"], job, duration),
                "twins": self._twins(last["procs"], job),
                "others": {str(pid): info for pid, info in ((p, describe_process(p))
                                                              for p in sorted(set(also) - job)) if info}}

    def _pids_members(self, processes):
        """A near-full pids cgroup: its members (in the job or not), most threads first (each
        thread counts against pids.max), in place of the bare list of pids."""
        described, ours = {}, None
        for limits in processes.values():
            pids = (limits["cgroup"] or {}).get("pids")
            if not pids:
                continue
            members = pids.pop("members")
            if not members:
                continue
            if ours is None:   # (read once, and only for a near-full cgroup)
                ours = self.exclude | _descendants_of(os.getpid(), process_counters())
            others = []
            for pid in sorted(set(members) - ours):
                if pid not in described:
                    described[pid] = describe_process(pid)
                    if described[pid] is not None:
                        described[pid]["threads"] = _threads(pid)
                if described[pid] is not None:
                    others.append(described[pid])
            pids["members"] = sorted(others, key=lambda o: -(o["threads"] or 0))[:NEIGHBOURS]

    def _neighbours(self, first, last, job, duration):
        """Other processes that used a CPU or a disk in the window, busiest first."""
        hz = os.sysconf("SC_CLK_TCK")
        ours = self.exclude | _descendants_of(os.getpid(), last)
        rows = []
        for pid, now in last.items():
            before = first.get(pid)
            if pid in job or pid in ours or before is None or before[0] != now[0]:
                continue
            cpu = (now[1] - before[1]) / float(hz) / duration
            read = (now[3] - before[3]) / duration if now[3] is not None and before[3] is not None else 0
            write = (now[4] - before[4]) / duration if now[4] is not None and before[4] is not None else 0
            if cpu < NEIGHBOUR_CPU_SHARE and read + write < NEIGHBOUR_IO_BPS:
                continue
            rows.append({"pid": pid, "comm": now[5], "state": now[6], "ppid": now[7], "cpu_share": round(cpu, 3),
                         "read_Bps": round(read), "write_Bps": round(write), "majflt": now[2] - before[2]})
        keep = sorted(rows, key=lambda r: -r["cpu_share"])[:NEIGHBOURS]
        keep += [r for r in sorted(rows, key=lambda r: -(r["read_Bps"] + r["write_Bps"]))[:NEIGHBOURS] if r not in keep]
        for row in keep:   # (comm, state and ppid came with the counters: only the command is read)
            row["cmdline"] = redacted_command(row["pid"])
            row["affinity"] = _affinity(row["pid"])
        return keep

    def _twins(self, counters, job):
        """Processes outside the job that run one of its programs (a copy an earlier run left:
        a server still on the job's port, a trainer still on its GPU), with the TCP addresses
        they listen on."""
        programs = {program_of(_argv(pid)) for pid in job} - {None}
        if not programs:
            return []
        ours = self.exclude | _descendants_of(os.getpid(), counters)
        listening = listening_sockets()
        twins = []
        for pid, row in sorted(counters.items()):
            if pid in job or pid in ours or program_of(_argv(pid)) not in programs:
                continue
            twins.append({"pid": pid, "comm": row[5], "state": row[6], "ppid": row[7],
                          "cmdline": redacted_command(pid),
                          "listening": _listening_of(pid, listening)})
        return twins[:NEIGHBOURS]

    def to_dict(self):
        return self.result


def _descendants_of(root, counters):
    """Our own children (py-spy, strace): never a neighbour."""
    children = {}
    for pid, row in counters.items():
        children.setdefault(row[7], []).append(pid)
    found, todo = set(), [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


@typed_record
class ResourcesSection(Section):
    """capture["resources"]: the job's limits, the host's use of its CPUs, memory and disks, and
    who else uses them (or why they were not measured)."""
    resources: dict = field(default_factory=lambda: {"available": False, "reason": "not measured"})


class JobResourcesProbe(Probe):
    """ResourceProbe over the window: read at its start and end, for the job's processes and the
    other processes the GPU probe saw on its GPUs."""

    name = "resources"
    Section = ResourcesSection

    def __init__(self):
        self.reader = ResourceProbe()

    def start(self, ctx):
        self.reader.start(sorted({r.pid for r in ctx.sampler.records.values()}))

    def stop(self, ctx):
        gpu = ctx.sections.get("gpu")
        self.reader.stop(sorted({r.pid for r in ctx.sampler.records.values()}),
                         also=gpu.processes if gpu is not None else ())
        result = self.reader.to_dict()
        return ResourcesSection(limitations=[] if result.get("available") else
                                ["resources: not measured (%s)" % result.get("reason")], resources=result)

    def failed(self, error):
        reason = "resource probe failed: %s" % error
        return ResourcesSection(limitations=["resources: not measured (%s)" % reason],
                                resources={"available": False, "reason": reason})
