"""The capture: everything one inspection saw, as plain JSON-able data.

A capture is the input of the diagnosis and is saved inside every JSON
report under "capture", so `stalldiag report` can re-diagnose it offline.
Layout (schema_version 2):

  host, request, window              where, what was asked, the sampling window
  request.config                     the inspection's Config (config.py), every field (new in 2)
  processes[]                        one per (pid, start_time) seen
    ppid, pgid, sid                  parent, process group and session (pgid, sid: new fields,
                                     absent from older captures)
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
  collectives                        probes/flight_recorder.py, read at the window's end, None when no
                                     process has a rank: {armed: [debug-server, frontend, dump-file,
                                     fifo], ranks: [{rank, pid, host, source, where, version, backend,
                                     groups [{pg_id, name, desc, ranks, last_enqueued, last_started,
                                     last_completed}], entries [{pg_id, seq, op, in_sizes, in_dtypes,
                                     out_sizes, out_dtypes, state, retired, frames}], entries_total}],
                                     unread [{rank, pid, source, error}], read_s, next_time [...]}
  objects                            probes/objects.py, read at the window's end, None when no thread
                                     waits in a blocking call: {threads [{pid, tid, frame, local,
                                     type, caller, fact {kind, fields or {not_read}}, text}], idents
                                     {pid: {thread ident: tid}}, not_read [...]}
  native                             probes/native.py, at the window's end, None when no process was
                                     busy: {dumps, seconds, processes {pid: {tid: [[frames leaf first
                                     [function, file, line]], count]}}}
"""
import json

from . import __version__
from .errors import CaptureError

SCHEMA_VERSION = 3

# The probes' keys, in the capture's order, as they read when a probe gave nothing: each probe's
# Section (probes/base.py) writes its own.
PROBE_KEYS = (
    ("processes", list), ("frames", list), ("stacks", list),
    ("gpu", lambda: {"available": False, "reason": "not measured"}),
    ("skipped_children", int), ("unix_peers", dict), ("tcp_peers", dict), ("socket_queues", dict),
    ("exact_syscalls", None),
    ("locks", None), ("file_waits", None), ("joins", None), ("objects", None), ("gil", None), ("wakers", list),
    ("output_tail", dict),
    # the job's limits, the host's use of its CPUs, memory and disks, and who else uses them
    ("resources", lambda: {"available": False, "reason": "not measured"}),
    # the ranks' Flight Recorders, where the job armed a way out for them (probes/flight_recorder.py);
    # optional: a capture without it (older, or no ranks) reads as None
    ("collectives", None), ("native", None),
)


def build(host, request, window, sections, limitations=(), cleaned=True):
    """The capture of one inspection: where (host), what was asked (request), the sampling window,
    and each probe's Section (probes/base.py) writing its part, in the order given.  limitations:
    what the request itself gives up (--native); each section's follow, in the sections' order."""
    capture = {"schema_version": SCHEMA_VERSION, "tool": {"name": "stalldiag", "version": __version__},
               "host": host, "request": request, "window": window}
    for key, default in PROBE_KEYS:
        capture[key] = default() if default else None
    capture["limitations"] = list(limitations)
    # the target's own syscalls or stacks were refused: the verdict stands on less
    capture["permission_denied"] = False
    for section in sections:
        section.write(capture)
        capture["limitations"].extend(section.limitations)
    # (a provisional capture read in place and thrown away needs no cleaning for the page)
    return clean(capture) if cleaned else capture


MAX_STRING = 4096        # a 100 KB command line argument is cut here


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
