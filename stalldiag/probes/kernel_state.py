"""The kernel's own accounting of a thread or process: what state it is really in.

Read at a thread's or process's first sighting and again at the end of the
window, never per tick: schedstat (time on CPU vs runnable-but-waiting),
context switches, the cgroup's CPU quota and throttling, the cgroup freezer,
who traces the process, which signals are pending, page faults, and the
file-backed mappings that hold data (a dataset read through mmap does no
read() syscalls; its storage waits are page faults).

Every reader returns None (or leaves a key out) when a file cannot be read;
permission denials go to ``on_error(what, exc)`` like the other /proc reads.

What each state looks like from /proc (measured on kernel 6.18, cgroup v1 +
v2 hybrid host, tests/live/test_kernel_state.py; "syscall" is .../syscall):
- page fault on an mmap'd file on throttled storage: state D, syscall
  "-1 SP PC" (not in a syscall: the sampler records "nosyscall"), wchan
  "folio_wait_bit_common"; majflt rises one per fault (with MADV_RANDOM; with
  default readahead one major fault reads MBs and later waits on in-flight
  pages count as minor), read_bytes rises, rchar/syscr do not.  So
  D + nosyscall + folio/filemap wchan + majflt is storage-bound page faults;
  data_mappings names the file.
- v1 freezer FROZEN: state D too, syscall "-1", wchan "__refrigerator", run_ns 0.
  Looks like a storage wait unless cgroup.freezer is read.
- v2 freezer (cgroup.freeze 1): state S, syscall "-1", wchan "get_signal".
- SIGSTOP: state T, syscall still names the interrupted call (e.g. 230
  clock_nanosleep), wchan "do_signal_stop"; TracerPid 0.
- ptrace stop: state t, wchan "ptrace_stop", TracerPid = the tracer.
- CPU quota (10% of a core): every sample "R"; over 10 s schedstat run_ns
  1.0 s and wait_ns 9.0 s (throttled time is counted as runnable wait),
  cpu.stat nr_throttled 100 of 100 periods, throttled 8.9 s.
"""
import os
import re
import signal
import time

from .. import mounts as mount_table, procfs, redact

MIN_DATA_MAPPING = 1 << 20
MAX_DATA_MAPPINGS = 8
NOT_DATA_PREFIXES = ("/dev/", "/proc/", "/sys/", "/usr/lib", "/lib", "/usr/libexec/", "/memfd:",
                     "anon_inode:", "/SYSV")
NOT_DATA_SUFFIXES = (".py", ".pyc", ".pyd", ".dylib")


def _read(path):
    """Text of a kernel file (a cgroup's), or None when it cannot be read."""
    try:
        return procfs.read_text(path)
    except procfs.ProcfsError:
        return None


def _proc(pid, name, tid=None, on_error=None):
    """Text of /proc/PID[/task/TID]/NAME, or None when it cannot be read (denials reported to
    on_error(name, exc), not raised)."""
    try:
        return procfs.read(pid, name, tid)
    except procfs.AccessDenied as exc:
        if on_error:
            on_error(name, exc)
    except procfs.ProcfsError:
        pass
    return None


def _key_values(text):
    values = {}
    for line in (text or "").splitlines():
        parts = line.split()
        if len(parts) == 2:
            try:
                values[parts[0]] = int(parts[1])
            except ValueError:
                values[parts[0]] = parts[1]
    return values


# --- per thread ----------------------------------------------------------------

def schedstat(pid, tid=None, on_error=None):
    """{"run_ns", "wait_ns", "slices"}: time on a CPU, time runnable waiting for one
    (CPU contention, or a cgroup quota throttling it), and timeslices run."""
    return parse_schedstat(_proc(pid, "schedstat", tid, on_error))


def parse_schedstat(text):
    parts = (text or "").split()
    if len(parts) < 3:
        return None
    return {"run_ns": int(parts[0]), "wait_ns": int(parts[1]), "slices": int(parts[2])}


def ctx_switches(pid, tid=None, on_error=None):
    """{"voluntary", "involuntary"} context switches of one thread."""
    text = _proc(pid, "status", tid, on_error)
    if text is None:
        return None
    # the two lines end the file: look for them, not at the fifty before
    found = {}
    for key, name in (("\nvoluntary_ctxt_switches:", "voluntary"), ("\nnonvoluntary_ctxt_switches:", "involuntary")):
        at = text.rfind(key)
        if at >= 0:
            end = text.find("\n", at + len(key))
            found[name] = int(text[at + len(key):end if end >= 0 else None])
    return found if len(found) == 2 else None


def thread_snapshot(pid, tid, on_error=None, sched_text=None):
    """{"sched", "ctx"} of one thread; sched_text: its schedstat, when the caller has read it."""
    sched = parse_schedstat(sched_text) if sched_text is not None else schedstat(pid, tid, on_error)
    return {"sched": sched, "ctx": ctx_switches(pid, tid, on_error)}


def delta(first, last):
    """last - first for every key both have; None when either is missing."""
    if not first or not last:
        return None
    return {k: last[k] - first[k] for k in first if isinstance(last.get(k), int)}


# --- signals and tracer ----------------------------------------------------------

def signal_names(mask):
    """Names of the signals set in a /proc status mask ("0000000000004000" -> ["SIGTERM"])."""
    if isinstance(mask, str):
        try:
            mask = int(mask, 16)
        except ValueError:
            return []
    names = []
    rtmin = getattr(signal, "SIGRTMIN", 34)
    for number in range(1, 65):
        if not mask >> (number - 1) & 1:
            continue
        try:
            names.append(signal.Signals(number).name)
        except ValueError:
            names.append("SIGRTMIN+%d" % (number - rtmin) if number >= rtmin else "SIG%d" % number)
    return names


def stop_signals(status):
    """Signals pending for the process (ShdPnd|SigPnd) and blocked, or None if neither."""
    if not status:
        return None
    try:
        pending = int(status.get("ShdPnd", "0"), 16) | int(status.get("SigPnd", "0"), 16)
        blocked = int(status.get("SigBlk", "0"), 16)
    except ValueError:
        return None
    if not pending and not blocked:
        return None
    return {"pending": signal_names(pending), "blocked": signal_names(blocked)}


def tracer(status, on_error=None):
    """{"pid", "comm", "cmdline"} of the process ptrace-attached to this one, or None."""
    try:
        tracer_pid = int((status or {}).get("TracerPid", "0"))
    except ValueError:
        return None
    if not tracer_pid:
        return None
    found = {"pid": tracer_pid, "comm": None, "cmdline": []}
    try:
        found["comm"] = procfs.comm(tracer_pid)
        found["cmdline"] = redact.redact_argv(procfs.cmdline(tracer_pid))
    except procfs.AccessDenied as exc:
        if on_error:
            on_error("tracer", exc)
    except procfs.ProcfsError:
        pass
    return found


# --- data mappings -----------------------------------------------------------------

# "start-end perms offset dev inode   /path" lines of /proc/PID/maps (anonymous ones have no path)
FILE_MAPPING = re.compile(r"^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \S+ +(/.*)$", re.M)


def _is_data_path(path):
    if not path.startswith("/") or path.startswith(NOT_DATA_PREFIXES):
        return False
    name = path[:-len(" (deleted)")] if path.endswith(" (deleted)") else path
    base = os.path.basename(name)
    return not (base.endswith(NOT_DATA_SUFFIXES) or base.endswith(".so") or ".so." in base)


def data_mappings(pid, on_error=None, with_rss=False):
    """File-backed mappings that look like data (a memory-mapped dataset, a checkpoint),
    largest first: [{"path", "size", "rss"}].  Files with any executable mapping are code."""
    text = _proc(pid, "maps", on_error=on_error)
    if text is None:
        return None
    sizes, code = {}, set()
    # one regex pass over the file-backed lines: a torch process maps thousands of regions
    for start, end, perms, path in FILE_MAPPING.findall(text):
        path = path.strip()
        if "x" in perms:
            code.add(path)
            continue
        sizes[path] = sizes.get(path, 0) + int(end, 16) - int(start, 16)
    found = [{"path": path, "size": size, "rss": None} for path, size in sizes.items()
             if path not in code and size >= MIN_DATA_MAPPING and _is_data_path(path)]
    found.sort(key=lambda m: -m["size"])
    found = found[:MAX_DATA_MAPPINGS]
    if found and with_rss:
        _add_rss(pid, found)
    return found


def _add_rss(pid, mappings):
    """Resident bytes per data mapping, from smaps (read only when data mappings exist)."""
    text = _proc(pid, "smaps")
    if text is None:
        return
    wanted = {m["path"]: m for m in mappings}
    current = None
    for line in text.splitlines():
        first = line.split(None, 1)[0] if line else ""
        if "-" in first and not first.endswith(":"):
            parts = line.split(None, 5)
            current = wanted.get(parts[5].strip()) if len(parts) == 6 else None
        elif current is not None and first == "Rss:":
            current["rss"] = (current["rss"] or 0) + int(line.split()[1]) * 1024


# --- cgroups -------------------------------------------------------------------------

def cgroup_mounts(mountinfo=None, controllers=("cpu", "freezer")):
    """{"v2": mountpoint, "cpu": ..., "freezer": ...} from our /proc/self/mountinfo (the v1
    controllers asked for), with each mount's root so paths from /proc/PID/cgroup can be made
    relative to it."""
    entries = mount_table.mounts_of("self") if mountinfo is None else mount_table.parse_mountinfo(mountinfo)
    mounts = {}
    for entry in entries:
        point, root = entry["mountpoint"], entry["root"]
        if entry["fstype"] == "cgroup2":
            mounts.setdefault("v2", (point, root))
        elif entry["fstype"] == "cgroup":
            for option in entry["super"].split(","):
                if option in controllers:
                    mounts.setdefault(option, (point, root))
    return mounts


def proc_cgroups(pid, on_error=None):
    """{controller: path} from /proc/PID/cgroup; the v2 hierarchy is under key ""."""
    text = _proc(pid, "cgroup", on_error=on_error)
    return None if text is None else parse_proc_cgroups(text)


def parse_proc_cgroups(text):
    """{controller: path} of the text of a /proc/PID/cgroup; the v2 hierarchy under key ""."""
    paths = {}
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        if parts[0] == "0" and parts[1] == "":
            paths[""] = parts[2]
        for controller in parts[1].split(","):
            if controller:
                paths[controller] = parts[2]
    return paths


def _cgroup_dir(mount, path):
    point, root = mount
    if root != "/" and (path == root or path.startswith(root + "/")):
        path = path[len(root):]
    return point + (path if path != "/" else "")


def _ancestors(directory, mount_point):
    """directory, its parent, ... up to the mount point (a quota may be set on any of them)."""
    while True:
        yield directory
        if directory == mount_point or len(directory) <= len(mount_point):
            return
        directory = os.path.dirname(directory)


def cpu_v1(directory):
    """Limit and throttling counters of one v1 cpu cgroup directory, or None."""
    quota = _key_values("quota " + (_read(directory + "/cpu.cfs_quota_us") or "").strip())
    if "quota" not in quota:
        return None
    period = _key_values("period " + (_read(directory + "/cpu.cfs_period_us") or "").strip())
    stat = _key_values(_read(directory + "/cpu.stat"))
    limited = isinstance(quota["quota"], int) and quota["quota"] > 0
    return {"quota_us": quota["quota"] if limited else None,
            "period_us": period.get("period"),
            "nr_periods": stat.get("nr_periods"), "nr_throttled": stat.get("nr_throttled"),
            "throttled_ns": stat.get("throttled_time")}


def cpu_v2(directory):
    """Limit and throttling counters of one v2 cgroup directory (cpu.max, cpu.stat), or None."""
    limit = (_read(directory + "/cpu.max") or "").split()
    stat = _key_values(_read(directory + "/cpu.stat"))
    if not limit and not stat:
        return None
    quota = int(limit[0]) if limit and limit[0].isdigit() else None
    period = int(limit[1]) if len(limit) > 1 and limit[1].isdigit() else None
    throttled = stat.get("throttled_usec")
    return {"quota_us": quota, "period_us": period,
            "nr_periods": stat.get("nr_periods"), "nr_throttled": stat.get("nr_throttled"),
            "throttled_ns": throttled * 1000 if isinstance(throttled, int) else None}


def freezer_v1(directory):
    state = (_read(directory + "/freezer.state") or "").strip()
    return state or None


def freezer_v2(directory):
    """"frozen", "freezing" (asked, not yet done) or "thawed", from cgroup.events/cgroup.freeze."""
    events = _key_values(_read(directory + "/cgroup.events"))
    if "frozen" not in events:
        return None
    if events["frozen"] == 1:
        return "frozen"
    asked = (_read(directory + "/cgroup.freeze") or "0").strip()
    return "freezing" if asked == "1" else "thawed"


class CgroupCache:
    """Cgroup files are per cgroup, not per process: read each directory once per snapshot
    (entries older than max_age seconds are read again, so deltas stay honest)."""

    def __init__(self, max_age=0.25):
        self.max_age = max_age
        self._mounts = None
        self._entries = {}

    def mounts(self):
        if self._mounts is None:
            self._mounts = cgroup_mounts()
        return self._mounts

    def get(self, key, reader, *args):
        now = time.monotonic()
        entry = self._entries.get(key)
        if entry is None or now - entry[0] > self.max_age:
            entry = (now, reader(*args))
            self._entries[key] = entry
        return entry[1]

    def clear(self):
        self._entries.clear()


def _cpu_limit(mount, directory, reader, cache):
    """Counters of the nearest cgroup (self or ancestor) with a CPU quota; the own
    cgroup's when none has one.  Throttling is accounted where the quota is set."""
    own = None
    for candidate in _ancestors(directory, mount[0]):
        cpu = cache.get(("cpu", candidate), reader, candidate)
        if cpu is None:
            continue
        if own is None:
            own = dict(cpu)
        if cpu["quota_us"] is not None:
            found = dict(cpu)
            if candidate != directory:
                found["limit_path"] = candidate[len(mount[0]):] or "/"
            return found
    return own


def cgroup_state(pid, cache=None, on_error=None):
    """{"version", "path", "cpu", "freezer"} for the process's cgroup (cpu controller for v1),
    with absolute counters (the capture stores deltas).  None when /proc/PID/cgroup is unreadable."""
    cache = cache or CgroupCache()
    paths = proc_cgroups(pid, on_error)
    if paths is None:
        return None
    mounts = cache.mounts()
    result = {"version": None, "path": None, "cpu": None, "freezer": None}
    if "cpu" in paths and "cpu" in mounts:
        result["version"], result["path"] = 1, paths["cpu"]
        directory = _cgroup_dir(mounts["cpu"], paths["cpu"])
        result["cpu"] = _cpu_limit(mounts["cpu"], directory, cpu_v1, cache)
    elif "" in paths and "v2" in mounts:
        result["version"], result["path"] = 2, paths[""]
        directory = _cgroup_dir(mounts["v2"], paths[""])
        result["cpu"] = _cpu_limit(mounts["v2"], directory, cpu_v2, cache)
    # Hybrid hosts have both freezers: the v1 controller and the v2 core freezer.
    if "freezer" in paths and "freezer" in mounts:
        directory = _cgroup_dir(mounts["freezer"], paths["freezer"])
        state = cache.get(("freezer1", directory), freezer_v1, directory)
        if state:
            result["freezer"] = {"state": state, "path": paths["freezer"], "version": 1}
    if "" in paths and "v2" in mounts and (result["freezer"] or {}).get("state") in (None, "THAWED"):
        directory = _cgroup_dir(mounts["v2"], paths[""])
        state = cache.get(("freezer2", directory), freezer_v2, directory)
        if state and (state != "thawed" or result["freezer"] is None):
            result["freezer"] = {"state": state, "path": paths[""], "version": 2}
    return result


# --- per process -----------------------------------------------------------------------

CPU_COUNTERS = ("nr_periods", "nr_throttled", "throttled_ns")


def process_snapshot(pid, status, cache=None, on_error=None, last=False):
    """Absolute kernel state of a process now; ``status`` is its parsed /proc/PID/status.
    /proc/PID/maps (large for a torch process) is read only in the last snapshot."""
    return {
        "cgroup": cgroup_state(pid, cache, on_error),
        "tracer": tracer(status, on_error),
        "stop_signals": stop_signals(status),
        "data_mappings": data_mappings(pid, on_error, with_rss=True) if last else None,
    }


def process_kernel(first, last, stat_first=None, stat_last=None):
    """The capture's "kernel" dict: counters as window deltas, state as last seen."""
    now = last or first
    if not now:
        return None
    kernel = {}
    cgroup = now.get("cgroup")
    if cgroup:
        cgroup = dict(cgroup)
        cpu = cgroup.get("cpu")
        if cpu:
            before = ((first or {}).get("cgroup") or {}).get("cpu") or {}
            after = ((last or {}).get("cgroup") or {}).get("cpu") or {}
            cpu = dict(cpu)
            for key in CPU_COUNTERS:
                a, b = before.get(key), after.get(key)
                cpu[key] = b - a if isinstance(a, int) and isinstance(b, int) and first and last else None
            cgroup["cpu"] = cpu
        kernel["cgroup"] = cgroup
    for key in ("tracer", "stop_signals"):
        if now.get(key):
            kernel[key] = now[key]
    if stat_first and stat_last and "majflt" in stat_first and "majflt" in stat_last:
        kernel["faults"] = {"majflt": stat_last["majflt"] - stat_first["majflt"],
                            "minflt": stat_last["minflt"] - stat_first["minflt"]}
    if now.get("data_mappings") is not None:
        kernel["data_mappings"] = now["data_mappings"]
    return kernel
