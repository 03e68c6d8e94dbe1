"""The capture: everything one inspection saw, as plain JSON-able data.

A capture is the input of the diagnosis and is saved inside every JSON
report under "capture", so `stalldiag report` can re-diagnose it offline.
Layout (schema_version 2):

  host, request, window              where, what was asked, the sampling window
  request.config                     the inspection's Config (config.py), every field (new in 2)
  processes[]                        one per (pid, start_time) seen
    threads[].samples                [t, state, syscall|"running", detail index, wchan]
    threads[].stack_samples          [[stack index, run length], ...] in time order
    threads[].sched, .ctx            window deltas, first to last sighting: schedstat
                                     {run_ns, wait_ns, slices}; {voluntary, involuntary}
    kernel                           probes/kernel_state.py: cgroup {version, path, cpu
                                     {quota_us, period_us, nr_periods, nr_throttled,
                                     throttled_ns}, freezer {state, path}}, tracer,
                                     stop_signals, faults {majflt, minflt}, data_mappings
    details[]                        what blocked syscalls waited on (fd, path, child)
    python                           {"stacks": bool, "reason": why not}
  frames[]                           [function, file, line]
  stacks[]                           [frame index, ...] leaf first
  gpu                                NVML devices, samples, per-process memory
  exact_syscalls                     with --syscalls exact: backend, counted span,
                                     counts [[pid, tid or null, {syscall: n}], ...], failed calls
                                     errors [[pid, tid or null, {syscall: {errors: n, errnos:
                                     {ECONNREFUSED: n}}}], ...] (errnos only if errnos_known)
  limitations[]                      what could not be observed, and why
  locks[]                            file locks an inspected process holds or waits for (only when
                                     a thread was seen blocked in flock/fcntl): type, mode, holder_pid,
                                     waiter_pids, dev_inode, path, holder_in_tree.  A holder outside
                                     the tree is sampled too: processes[] with role_hint "lock-holder"
                                     and outside_tree true
  joins[]                            threads blocked in Thread.join: pid, tid, the joined Thread
                                     object's address and its tid (matched through py-spy --locals)
  file_waits[]                       threads polling for a lock/marker file in a sleep loop: pid, tid,
                                     path, library, exists, mtime, age_s, size, flock_holders, open_by
  gil                                {pid: {holder_tid, waiting_tids, how}} for processes where a
                                     thread waits in futex at a plain Python line while another runs
  wakers[]                           probes/wakers.py: one per (pid, tid, object) blocked on for 2+
                                     samples: wait, target, syscall, ends [{pid, fd, mode, comm,
                                     in_tree}], remote, watching [{fd, target, ends}], mount
                                     {mountpoint, fstype, source, served_by, server}, kernel_stack,
                                     mappers, mapping, why_unseen.  Holders outside the tree are
                                     sampled too: role_hint "waker" ("pipe-peer" for a pipe)
  output_tail                        probes/output_tail.py, read at the window's end: {pid: {stdout,
                                     stderr, logs[]}}, each {path, lines (redacted), age_s, size}, only
                                     for regular files (never a pipe, socket or tty)
"""
import json
import os

from .errors import CaptureError
from .helpers import intern_row

SCHEMA_VERSION = 3
# processes sampled because an inspected one waits on them, not because they are in its tree
OUTSIDE_ROLES = ("lock-holder", "pipe-peer", "waker")


def build(tool_version, host, request, window, records, profiles, frames, stack_failures,
          gpu, skipped_children, limitations, unix_peers=None, tcp_peers=None, exact=None, local_values=None,
          thread_matching=None, locks=None, file_waits=None, gil=None, stack_rates=None, joins=None,
          stack_snapshots=None, output_tail=None, wakers=None, resources=None):
    stack_table = []
    stack_index = {}
    processes = []
    latest_record_of_pid = {}
    for key, record in sorted(records.items(), key=lambda kv: kv[1].first_seen):
        latest_record_of_pid[record.pid] = key
    seen_pids = {pid for (pid, _tid) in profiles}
    limitations = list(limitations)
    for key, record in sorted(records.items(), key=lambda kv: kv[1].first_seen):
        proc = record.to_dict()
        by_tid = {t["tid"]: t for t in proc["threads"]}
        if latest_record_of_pid[record.pid] == key:
            for (pid, tid), profile in profiles.items():
                if pid != record.pid:
                    continue
                thread = by_tid.get(tid)
                if thread is None:
                    thread = {"tid": tid, "name": profile["name"], "samples": [], "cpu_seconds": None,
                              "first_seen": None, "last_seen": None}
                    proc["threads"].append(thread)
                    by_tid[tid] = thread
                thread["python_name"] = profile["name"]
                if local_values and (pid, tid) in local_values:
                    thread["locals"] = local_values[(pid, tid)]
                thread["stack_samples"] = _run_length(
                    [intern_row(stack_table, stack_index, _bounded_stack(s, frames)) for s in profile["stacks"]])
        if record.role_hint in OUTSIDE_ROLES:
            proc["outside_tree"] = True
        proc["python"] = _python_status(record, record.pid in seen_pids, (stack_failures or {}).get(record.pid))
        _thread_matching(proc, thread_matching, limitations)
        if (stack_rates or {}).get(record.pid):
            proc["python"]["stack_rate_hz"] = stack_rates[record.pid]   # what py-spy sampled it at
        if (stack_snapshots or {}).get(record.pid):
            proc["python"]["stack_snapshots"] = stack_snapshots[record.pid]   # seconds into the window
        processes.append(proc)
    from .permissions import denied_text, how_to_get_access
    root_uid = next((p.get("uid") for p in processes if p["pid"] == request.get("pid")), None)
    stack_failure = (stack_failures or {}).get(request.get("pid"))
    denied = [pid for pid, failure in (stack_failures or {}).items() if failure[0] == "permission"]
    if denied:
        limitations.append("py-spy was denied access to pid %s: no Python stacks (%s). To get them: %s"
                           % (", ".join(map(str, denied[:5])), stack_failures[denied[0]][1],
                              how_to_get_access(root_uid)))
    for pid, failure in sorted((stack_failures or {}).items())[:5]:
        if failure[0] == "error":
            limitations.append("py-spy failed on pid %d: %s" % (pid, failure[1]))
    denied = [p for p in processes if p["denied"]]
    for proc in denied[:20]:
        limitations.append("pid %d: permission denied reading its %s (still observed: thread states, CPU time, "
                           "command line). To see the rest: %s" % (proc["pid"], denied_text(proc["denied"]),
                                                                  how_to_get_access(proc.get("uid"))))
    if len(denied) > 20:
        limitations.append("%d more processes with the same denials" % (len(denied) - 20))
    return clean({
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "stalldiag", "version": tool_version},
        "host": host,
        "request": request,
        "window": window,
        "processes": processes,
        "frames": frames,
        "stacks": stack_table,
        "gpu": gpu,
        "skipped_children": skipped_children,
        "unix_peers": _peers_in(processes, unix_peers or {}),
        "tcp_peers": _peers_in(processes, tcp_peers or {}),
        "exact_syscalls": exact,
        "locks": locks,
        "file_waits": file_waits,
        "joins": joins,
        "gil": gil,
        "wakers": wakers or [],
        "output_tail": output_tail or {},
        # the job's limits, the host's use of its CPUs, memory and disks, and who else uses them
        "resources": resources or {"available": False, "reason": "not measured"},
        "limitations": limitations,
        # the target's own syscalls or stacks were refused: the verdict stands on less
        "permission_denied": _target_denied(processes, request.get("pid"), stack_failure),
    })


MAX_STRING = 4096        # a 100 KB command line argument is cut here
MAX_STACK_DEPTH = 512    # deeper stacks keep their innermost and outermost frames
ELIDED_FRAME = ["...", "", 0]


def clean(value):
    """Make captured data safe to write anywhere: valid UTF-8, bounded strings.

    Thread names, paths and command lines are bytes to the kernel and may not
    be UTF-8; Python hands them over with surrogate escapes, which cannot be
    written as UTF-8.  They become U+FFFD here, once, for every renderer.
    """
    if isinstance(value, str):
        if len(value) <= MAX_STRING and value.isascii():
            return value
        if len(value) > MAX_STRING:
            value = value[:MAX_STRING] + "...[%d chars cut]" % (len(value) - MAX_STRING)
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            value = value.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        return value
    if isinstance(value, dict):
        return {clean(k) if isinstance(k, str) else k: v if k in SAMPLE_ROWS else clean(v)
                for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        # the bulk of a capture is sample rows of numbers and short ASCII names: kept as they are
        return [v if type(v) in _PLAIN or type(v) is str and len(v) <= MAX_STRING and v.isascii()
                else clean(v) for v in value]
    return value


_PLAIN = (int, float, bool, type(None))
# Rows the samplers write (times, counts, state letters, syscall names from our table, kernel
# wchan symbols): nothing in them comes from the target, and they are most of a capture.
SAMPLE_ROWS = ("samples",)


def _bounded_stack(stack, frames):
    """Keep the innermost 400 and outermost 100 frames of very deep (recursive) stacks."""
    if len(stack) <= MAX_STACK_DEPTH:
        return stack
    if ELIDED_FRAME not in frames:
        frames.append(list(ELIDED_FRAME))
    return stack[:400] + [frames.index(ELIDED_FRAME)] + stack[-100:]


def _target_denied(processes, pid, stack_failure):
    target = next((p for p in processes if p["pid"] == pid), None)
    if target is None:
        return False
    return "syscall" in target["denied"] or bool(stack_failure and stack_failure[0] == "permission")


def _peers_in(processes, peers):
    """Only the socket pairs that touch an inspected process."""
    held = {target for proc in processes for target in proc.get("endpoints", {})}
    return {str(ino): peer for ino, peer in peers.items() if "socket:[%d]" % ino in held}


def _run_length(ids):
    runs = []
    for sid in ids:
        if runs and runs[-1][0] == sid:
            runs[-1][1] += 1
        else:
            runs.append([sid, 1])
    return runs


def _thread_matching(proc, thread_matching, limitations):
    """How py-spy's thread ids became kernel tids, and the threads that could not be matched."""
    methods, unmatched = thread_matching or ({}, {})
    if not proc["python"]["stacks"]:
        return
    pid = proc["pid"]
    proc["python"]["thread_ids"] = methods.get(pid) or "kernel tids reported by py-spy"
    lost = unmatched.get(pid)
    if lost:
        proc["python"]["unmatched_threads"] = [{"pthread_id": p, "name": n, "reason": why} for p, n, why in lost]
        limitations.append("pid %d: Python stacks of %d thread(s) could not be tied to a kernel thread (%s: %s)"
                           % (pid, len(lost), ", ".join("%s '%s'" % (p, n) for p, n, _w in lost[:4]), lost[0][2]))


def _python_status(record, has_stacks, stack_failure):
    if has_stacks:
        return {"stacks": True, "reason": None}
    looks_python = looks_like_python(record.pid, record.static.get("exe"))
    if looks_python is False:
        return {"stacks": False, "reason": "not a Python process"}
    if stack_failure:
        return {"stacks": False, "reason": "py-spy: %s" % (stack_failure[1] or stack_failure[0])}
    if record.exited_at is not None and record.exited_at - record.first_seen < 1.0:
        return {"stacks": False, "reason": "exited before py-spy could sample it"}
    return {"stacks": False, "reason": "no Python stacks sampled"}


def looks_like_python(pid, exe):
    """True/False from the executable and its mapped libraries; None if unknown."""
    if exe and os.path.basename(exe).startswith("python"):
        return True
    try:
        with open("/proc/%d/maps" % pid) as f:
            for line in f:
                if "libpython" in line:
                    return True
    except OSError:
        return None if not exe else False
    return False


# --- saving and loading --------------------------------------------------------

def load_report(path):
    """Read a saved JSON report (or a bare capture); return the capture, or raise CaptureError."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        raise CaptureError("%s: no such file" % path)
    except OSError as exc:
        raise CaptureError("%s: cannot read: %s" % (path, exc.strerror or exc))
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise CaptureError("%s: not a stalldiag report (not UTF-8 text)" % path)
    except ValueError as exc:
        raise CaptureError("%s: not a stalldiag report (invalid or truncated JSON: %s)" % (path, exc))
    if not isinstance(data, dict):
        raise CaptureError("%s: not a stalldiag report (top level is not an object)" % path)
    cap = data.get("capture", data)
    validate(cap, path)
    return migrate(cap)


def _config_from_request(request):
    """Schema 1 recorded only some of what was asked: the rest is the defaults of then."""
    from .config import Config
    config = Config(pid=request.get("pid"), children=bool(request.get("children")),
                    duration=request.get("duration_s") or 0.0, rate=request.get("rate_hz") or 5.0,
                    stack_rate=request.get("stack_rate_hz") or 3.0, native=bool(request.get("native")),
                    discovered=request.get("discovered"))
    return config_record(config)


def config_record(config):
    """The Config as the capture records it."""
    from dataclasses import asdict
    return asdict(config)


# schema version -> the function that brings a capture of that version to the next
MIGRATIONS = {
    1: lambda cap: dict(cap, schema_version=2, request=dict(cap.get("request") or {}, config=_config_from_request(
        cap.get("request") or {}))),
    # schema 3 reads the job's resources (probes/resources.py): older captures did not
    2: lambda cap: dict(cap, schema_version=3, resources=cap.get("resources") or {
        "available": False, "reason": "not measured: captured before stalldiag read resources"}),
}


def migrate(cap):
    """A capture of any supported schema, brought to SCHEMA_VERSION (a new dict; cap is unchanged)."""
    while cap["schema_version"] < SCHEMA_VERSION:
        cap = MIGRATIONS[cap["schema_version"]](cap)
    return cap


def validate(cap, path="capture"):
    if not isinstance(cap, dict) or "schema_version" not in cap:
        raise CaptureError("%s: not a stalldiag report (no schema_version)" % path)
    version = cap["schema_version"]
    if not isinstance(version, int):
        raise CaptureError("%s: schema_version %r is not a number" % (path, version))
    if version > SCHEMA_VERSION:
        raise CaptureError("%s: schema_version %d is newer than this stalldiag understands (%d); "
                           "upgrade stalldiag" % (path, version, SCHEMA_VERSION))
    if version < 1:
        raise CaptureError("%s: schema_version %d is not supported" % (path, version))
    for field, kind in (("processes", list), ("window", dict), ("frames", list), ("stacks", list)):
        if not isinstance(cap.get(field), kind):
            raise CaptureError("%s: malformed capture: '%s' missing or not a %s"
                               % (path, field, kind.__name__))
    for proc in cap["processes"]:
        if not isinstance(proc, dict) or not isinstance(proc.get("pid"), int) \
                or not isinstance(proc.get("threads"), list):
            raise CaptureError("%s: malformed capture: a process entry lacks pid/threads" % path)
