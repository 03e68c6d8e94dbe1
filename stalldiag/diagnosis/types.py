"""The records the diagnosis reads and passes between its steps.

A capture is plain JSON data (capture.py); the diagnosis reads it through these records,
made once when the graph is built, so no step digs through nested dicts:
Window   the sampling window: its start, length, rates and the clock tick of CPU times.
Machine  the host it was taken on: its name, kernel, boot time and clock tick.
Process  one process of the tree: identity, what the probes read of it, its threads.
Thread   one thread: its /proc samples, its Python stack samples, CPU and scheduler counts.
Frame    one Python frame: function, file, line, and the source py-spy's line points at
         (its code, enclosing loop, except handlers), where it was read.
Edge     one wait-for edge: who waits, who would end the wait (or None: nothing will), the
         kind of wait, and plain facts for the formatter.  Built once per waiting thread,
         the same whatever order the walk takes.
Finding  a structured observation: a kind, the thread or process it is about, and facts.
         Its sentence is written by formatter.py, never by whoever found it.
Resources  what limits the job and who else uses its resources (probes/resources.py), with
         ProcessLimits, CgroupLimits, CgroupMemory, OpenFiles, Host, Disk, OtherProcess.
Gpus     what NVML said over the window (probes/gpu.py): GpuDevice per device, each process's
         memory per device, its SM share, PCIe throughput.
OutputTail  the last lines a process wrote (stdout, stderr, its open logs); syscall_errors, the
         failed calls --syscalls exact counted.
Waits    what the wait probes resolved: FileLock (/proc/locks), FileWait (a loop polling a
         file), Join (Thread.join's target), GilOwner (py-spy's GIL holder), WakerRecord (who
         can end a blocked wait, host-wide).
"""
from dataclasses import MISSING, field, fields
from typing import Any, Dict, List, NamedTuple, Optional

from ..records import typed_record


def _from_dict(cls, data, **overrides):
    """cls built from a capture's dict: known fields only, a missing or null container as an
    empty one (old captures lack the newer fields)."""
    values = {}
    for f in fields(cls):
        if f.name in overrides:
            values[f.name] = overrides[f.name]
            continue
        value = data.get(f.name)
        if value is None and f.default_factory is not MISSING:
            value = f.default_factory()
        elif value is None and f.default is not MISSING:
            value = f.default
        values[f.name] = value
    return cls(**values)


def _by_int(mapping):
    """(int key, value) of a JSON object keyed by pids or indices; keys that are not numbers (a
    damaged capture) are skipped, never fatal."""
    if not isinstance(mapping, dict):
        return []
    return [(int(key), value) for key, value in mapping.items() if str(key).lstrip("-").isdigit()]


class Frame(NamedTuple):
    function: str
    file: str
    line: Optional[int]
    source: Optional[Dict[str, Any]] = None   # {"code", "loop", "within", ...} where read

    @classmethod
    def of(cls, raw):
        raw = list(raw) + [None] * (4 - len(raw))
        return cls(raw[0], raw[1], raw[2], raw[3] if isinstance(raw[3], dict) else None)


@typed_record
class Machine:
    """The host the capture was taken on (capture["host"])."""
    hostname: Optional[str] = None
    machine: Optional[str] = None
    kernel: Optional[str] = None
    cpu_count: Optional[int] = None
    clk_tck: Optional[int] = None        # the unit of a process's start_time
    boot_time: Optional[float] = None    # seconds since the epoch
    python: Optional[str] = None

    @classmethod
    def of(cls, capture):
        raw = capture.get("host")
        return _from_dict(cls, raw if isinstance(raw, dict) else {})


@typed_record
class Window:
    start: Optional[float] = None
    duration_s: Optional[float] = None
    samples: Optional[int] = None
    rate_hz: Optional[float] = None
    stack_rate_hz: Optional[float] = None
    clock_tick: Optional[int] = None
    interrupted: Optional[str] = None

    @classmethod
    def of(cls, capture):
        return _from_dict(cls, capture.get("window") or {})


@typed_record
class Thread:
    tid: int
    name: Optional[str] = None            # /proc comm
    python_name: Optional[str] = None     # threading's name, from py-spy
    cpu_seconds: Optional[float] = None
    ctx: Dict[str, int] = field(default_factory=dict)       # voluntary / involuntary switches
    sched: Dict[str, int] = field(default_factory=dict)     # schedstat run_ns / wait_ns
    samples: List[list] = field(default_factory=list)       # [t, state, syscall, detail index, wchan]
    stack_samples: List[list] = field(default_factory=list) # [stack id, count]
    first_seen: Optional[float] = None
    last_seen: Optional[float] = None


@typed_record
class Process:
    pid: int
    ppid: Optional[int] = None
    pgid: Optional[int] = None
    sid: Optional[int] = None
    comm: Optional[str] = None
    cmdline: List[str] = field(default_factory=list)
    exe: Optional[str] = None
    user: Optional[str] = None
    uid: Optional[int] = None
    nspid: Optional[int] = None
    start_time: Optional[float] = None
    first_seen: Optional[float] = None
    last_seen: Optional[float] = None
    exited_at: Optional[float] = None
    exit_status: Optional[str] = None       # a zombie's: "killed by SIGXFSZ", "exit code 1"
    cpu_seconds: Optional[float] = None
    ctx_switches: Dict[str, int] = field(default_factory=dict)
    io: Dict[str, int] = field(default_factory=dict)
    kernel: Dict[str, Any] = field(default_factory=dict)     # cgroup, tracer, faults, mappings
    python: Dict[str, Any] = field(default_factory=dict)     # py-spy: stacks, reason, version
    details: List[Any] = field(default_factory=list)         # wait details the samples index
    endpoints: Dict[str, List[int]] = field(default_factory=dict)   # pipe:/socket: -> fds
    env: Dict[str, str] = field(default_factory=dict)        # the allow-listed variables only
    files_start: List[Dict[str, Any]] = field(default_factory=list)
    files_end: List[Dict[str, Any]] = field(default_factory=list)
    recent_files: List[Dict[str, Any]] = field(default_factory=list)
    role_hint: Optional[str] = None
    outside_tree: bool = False
    denied: List[str] = field(default_factory=list)
    errors: List[str] = field(default_factory=list)
    threads: List[Thread] = field(default_factory=list)

    @classmethod
    def of(cls, raw):
        """A Process from a capture's dict (or the Process itself)."""
        if isinstance(raw, cls):
            return raw
        threads = [_from_dict(Thread, t) for t in raw.get("threads") or []]
        return _from_dict(cls, raw, threads=threads, outside_tree=bool(raw.get("outside_tree")))


def processes(capture):
    """The capture's processes as records."""
    return [Process.of(p) for p in capture.get("processes") or []]


@typed_record
class CgroupMemory:
    limit: Optional[int] = None          # bytes (memory.max / memory.limit_in_bytes), None: none
    limit_path: Optional[str] = None     # the cgroup whose limit binds (a parent's, maybe)
    usage: Optional[int] = None
    file: Optional[int] = None           # page cache
    anon: Optional[int] = None
    pgmajfault: Optional[int] = None
    refaults: Optional[int] = None
    active_file: Optional[int] = None
    inactive_file: Optional[int] = None


@typed_record
class CgroupPids:
    limit: Optional[int] = None          # pids.max: tasks (processes and threads) the cgroup may hold
    current: Optional[int] = None        # pids.current of the cgroup that sets the limit
    limit_path: Optional[str] = None     # that cgroup (a parent's, maybe)
    members: List["OtherProcess"] = field(default_factory=list)   # who holds its tasks, most first (near full)

    @classmethod
    def of(cls, raw):
        return _from_dict(cls, raw, members=[_from_dict(OtherProcess, o) for o in raw.get("members") or []])


@typed_record
class CgroupLimits:
    version: Optional[int] = None
    path: Optional[str] = None
    cpus: List[int] = field(default_factory=list)     # the cpuset, [] if unknown
    cpu_quota: Optional[Any] = None
    memory: CgroupMemory = field(default_factory=CgroupMemory)
    io: Dict[str, Dict[str, Any]] = field(default_factory=dict)   # device -> throttle rule
    pids: Optional[CgroupPids] = None

    @classmethod
    def of(cls, raw):
        raw = raw or {}
        return _from_dict(cls, raw, memory=_from_dict(CgroupMemory, raw.get("memory") or {}),
                          pids=CgroupPids.of(raw["pids"]) if raw.get("pids") else None)


@typed_record
class OpenFiles:
    open: int = 0
    limit: Optional[int] = None          # the soft RLIMIT_NOFILE


@typed_record
class ProcessLimits:
    affinity: List[int] = field(default_factory=list)
    cgroup: CgroupLimits = field(default_factory=CgroupLimits)
    open_files: Optional[OpenFiles] = None

    @classmethod
    def of(cls, raw):
        raw = raw or {}
        files = raw.get("open_files")
        return _from_dict(cls, raw, cgroup=CgroupLimits.of(raw.get("cgroup")),
                          open_files=_from_dict(OpenFiles, files) if files else None)


@typed_record
class OtherProcess:
    """A process outside the job: a neighbour on its CPUs or disks, or a GPU's other user."""
    pid: int
    comm: Optional[str] = None
    cmdline: Optional[str] = None        # redacted by the probe
    state: Optional[str] = None
    ppid: Optional[int] = None
    uid: Optional[int] = None
    cpu_share: float = 0.0               # (neighbours) CPUs' worth used over the window
    read_Bps: float = 0.0
    write_Bps: float = 0.0
    majflt: int = 0
    affinity: List[int] = field(default_factory=list)
    listening: List[str] = field(default_factory=list)   # (twins) TCP addresses it listens on
    threads: Optional[int] = None        # (a full pids cgroup's members) tasks it holds there


@typed_record
class Disk:
    device: Optional[str] = None         # "major:minor"
    read_Bps: float = 0.0
    write_Bps: float = 0.0
    busy: float = 0.0


@typed_record
class Host:
    cpus: int = 0
    memory: Dict[str, int] = field(default_factory=dict)        # meminfo: total, available, cached
    cpu_busy: Dict[int, float] = field(default_factory=dict)    # CPU -> busy share of the window
    disks: Dict[str, Disk] = field(default_factory=dict)


@typed_record
class Resources:
    duration_s: Optional[float] = None
    processes: Dict[int, ProcessLimits] = field(default_factory=dict)
    host: Host = field(default_factory=Host)
    neighbours: List[OtherProcess] = field(default_factory=list)
    others: Dict[int, OtherProcess] = field(default_factory=dict)
    twins: List[OtherProcess] = field(default_factory=list)   # outside the job, running its program

    @classmethod
    def of(cls, capture):
        """The capture's resource record, or None where the probe did not run or failed."""
        raw = capture.get("resources") or {}
        if not raw.get("available"):
            return None
        host = raw.get("host") or {}
        return cls(
            duration_s=raw.get("duration_s"),
            processes={pid: ProcessLimits.of(info) for pid, info in _by_int(raw.get("processes"))},
            host=_from_dict(Host, host, cpu_busy=dict(_by_int(host.get("cpu_busy"))),
                            disks={name: _from_dict(Disk, row) for name, row in (host.get("disks") or {}).items()}),
            neighbours=[_from_dict(OtherProcess, n) for n in raw.get("neighbours") or []],
            others={pid: _from_dict(OtherProcess, info) for pid, info in _by_int(raw.get("others"))},
            twins=[_from_dict(OtherProcess, t) for t in raw.get("twins") or [] if isinstance(t, dict)
                   and isinstance(t.get("pid"), int)])

    def limits_of(self, pid):
        return self.processes.get(pid) or ProcessLimits()


@typed_record
class GpuDevice:
    index: int
    name: str = "GPU"
    uuid: Optional[str] = None
    pci_bus_id: Optional[str] = None
    memory_total: int = 0
    mig_mode: Optional[bool] = None
    minor_number: Optional[int] = None
    architecture: Optional[str] = None
    ecc_uncorrected_start: Optional[int] = None
    ecc_uncorrected_end: Optional[int] = None


@typed_record
class Gpus:
    """The GPU probe's record.  Time series stay rows: samples [t, index, util, mem util, memory
    used, SM clock, power, throttle reasons], gpm [t, index, SM %, occupancy %, tensor %],
    process_util pid -> [t, index, SM %, memory %], pcie [t, index, rx KB/s, tx KB/s]."""
    available: bool = False
    devices: List[GpuDevice] = field(default_factory=list)
    memory: Dict[int, Dict[int, int]] = field(default_factory=dict)   # pid -> {index: bytes}
    process_util: Dict[int, List[list]] = field(default_factory=dict)
    pcie: List[list] = field(default_factory=list)
    xid_events: List[Dict[str, Any]] = field(default_factory=list)
    samples: List[list] = field(default_factory=list)
    gpm: List[list] = field(default_factory=list)
    infos: Dict[int, Dict[str, Any]] = field(default_factory=dict)   # index -> the probe's device dict
    holders: frozenset = frozenset()      # pids NVML listed on a GPU (the probe's "processes")
    raw: Dict[str, Any] = field(default_factory=dict)   # the probe's record as captured, for the report

    @classmethod
    def of(cls, capture):
        raw = capture.get("gpu") or {}
        memory = {}
        for pid, info in _by_int(raw.get("processes")):
            info = info if isinstance(info, dict) else {}
            if "devices" in info:
                memory[pid] = {index: used or 0 for index, used in _by_int(info["devices"])}
            elif isinstance(info.get("device"), int):   # (older captures: one device, its used_memory)
                memory[pid] = {info["device"]: info.get("used_memory") or 0}
        return cls(available=bool(raw.get("available")),
                   devices=[_from_dict(GpuDevice, d) for d in raw.get("devices") or [] if isinstance(d, dict)
                            and isinstance(d.get("index"), int)],
                   memory=memory,
                   process_util={pid: rows or [] for pid, rows in _by_int(raw.get("process_util"))},
                   pcie=list(raw.get("pcie") or []), xid_events=list(raw.get("xid_events") or []),
                   samples=[s for s in raw.get("samples") or [] if isinstance(s, (list, tuple)) and len(s) > 2],
                   gpm=[r for r in raw.get("gpm") or [] if isinstance(r, (list, tuple)) and len(r) > 4],
                   infos={d.get("index"): d for d in raw.get("devices") or [] if isinstance(d, dict)},
                   holders=frozenset(pid for pid, _info in _by_int(raw.get("processes"))), raw=raw)

    def devices_of(self, pid, proc=None):
        """GPU indices a process uses: NVML's process list, else the /dev/nvidiaN files it holds
        open (proc: its Process record).  NVML names host PIDs, so inside a container's PID
        namespace a process is not found there; the device files name its GPUs anyway (N is the
        device's minor number)."""
        if pid in self.memory:
            return sorted(self.memory[pid])
        by_minor = {d.minor_number: d.index for d in self.devices if d.minor_number is not None}
        found = []
        for target in (proc.endpoints if proc is not None else {}):
            suffix = target[len("/dev/nvidia"):] if target.startswith("/dev/nvidia") else ""
            if suffix.isdigit() and int(suffix) in by_minor:
                found.append(by_minor[int(suffix)])
        return sorted(set(found))

    def sm_share(self, pid, index):
        """A process's mean SM share on one GPU over the window, or None if NVML gave none."""
        rows = [r[2] for r in self.process_util.get(pid) or [] if r[1] == index and r[2] is not None]
        return sum(rows) / len(rows) if rows else None

    def pcie_rx_Bps(self, indices):
        """Mean host-to-device PCIe throughput of these GPUs, bytes/s, or None if not measured."""
        rows = [r for r in self.pcie if r[1] in indices and r[2] is not None]
        return sum(r[2] for r in rows) / len(rows) * 1024 if rows else None


# -- what the job wrote, and the calls that failed ---------------------------------------------

@typed_record
class OutputStream:
    """The last lines written to one of a process's streams (probes/output_tail.py)."""
    path: Optional[str] = None
    lines: List[str] = field(default_factory=list)
    age_s: Optional[float] = None        # since it was last written
    size: Optional[int] = None
    same_as: Optional[str] = None        # (stderr) the same file as stdout


@typed_record
class OutputTail:
    """A process's stdout, stderr and the log files it has open."""
    stdout: Optional[OutputStream] = None
    stderr: Optional[OutputStream] = None
    logs: List[OutputStream] = field(default_factory=list)

    @classmethod
    def of(cls, raw):
        raw = raw if isinstance(raw, dict) else {}

        def stream(value):
            return _from_dict(OutputStream, value) if isinstance(value, dict) else None
        return cls(stream(raw.get("stdout")), stream(raw.get("stderr")),
                   [s for s in (stream(v) for v in raw.get("logs") or []) if s is not None])

    def streams(self, logs=True):
        return [s for s in [self.stdout, self.stderr] + (self.logs if logs else []) if s is not None]


def output_tails(capture):
    """pid -> OutputTail."""
    return {pid: OutputTail.of(raw) for pid, raw in _by_int(capture.get("output_tail"))}


def syscall_errors(capture):
    """(pid, tid or None, {syscall: {"errors": n, "errnos": {errno: n}}}) rows of --syscalls exact."""
    exact = capture.get("exact_syscalls")
    rows = (exact.get("errors") if isinstance(exact, dict) else None) or []
    return [tuple(row) for row in rows if isinstance(row, (list, tuple)) and len(row) == 3]


# -- the capture, read once ----------------------------------------------------------------------

@typed_record(frozen=True)
class Facts:
    """Everything the diagnosis and the report read of a capture, read from it once: no step after
    this one opens the capture's dicts."""
    request_pid: Optional[int]
    window: Window
    machine: Machine
    processes: List[Process]
    frames: List[Any]                    # py-spy's frames table: [function, file, line, source]
    stacks: List[List[int]]              # stack id -> frame ids, leaf first
    gpu: Gpus
    resources: Optional["Resources"]
    file_locks: List["FileLock"]
    file_waits: Dict[Any, "FileWait"]
    joins: Dict[Any, "Join"]
    objects: Optional["Objects"]
    native: Dict[Any, List[Any]]          # (pid, tid) -> [(frames leaf first, count)] (probes/native.py)
    gil: Dict[int, "GilOwner"]
    wakers: Dict[Any, List["WakerRecord"]]
    output: Dict[int, OutputTail]        # pid -> the last lines it wrote
    output_raw: Dict[str, Any]           # the output tails as captured, for the report's own records
    syscall_errors: List[tuple]
    exact_syscalls: Optional[Dict[str, Any]]
    unix_peers: Dict[int, Any]
    tcp_peers: Dict[int, Any]
    skipped_children: int
    limitations: List[str]
    tool: Optional[Dict[str, Any]]
    schema_version: Any
    hostname: Optional[str]
    collectives: Optional["Collectives"] = None
    socket_queues: Dict[int, Any] = field(default_factory=dict)   # inode -> [unread, unsent] bytes


@typed_record(frozen=True)
class Collectives:
    """The ranks' Flight Recorders as the probe read them (probes/flight_recorder.py): the ways
    out the job armed, each rank's record (its groups' last sequence ids and the entries around
    them, as captured), the ranks not read and why, and what to set next time."""
    armed: List[str]
    ranks: List[Dict[str, Any]]
    unread: List[Dict[str, Any]]
    next_time: List[str]
    read_s: Optional[float] = None

    @classmethod
    def of(cls, capture):
        raw = capture.get("collectives")
        if not isinstance(raw, dict):
            return None
        return cls(armed=list(raw.get("armed") or []), ranks=[r for r in raw.get("ranks") or [] if isinstance(r, dict)],
                   unread=[u for u in raw.get("unread") or [] if isinstance(u, dict)],
                   next_time=list(raw.get("next_time") or []), read_s=raw.get("read_s"))


def read(capture):
    """The Facts of a capture (a Facts is returned as it is)."""
    if isinstance(capture, Facts):
        return capture
    file_locks, file_waits, joins, gil, wakers = waits(capture)
    exact = capture.get("exact_syscalls")
    return Facts(
        request_pid=(capture.get("request") or {}).get("pid"),
        window=Window.of(capture), machine=Machine.of(capture), processes=processes(capture),
        frames=list(capture.get("frames") or []), stacks=list(capture.get("stacks") or []),
        gpu=Gpus.of(capture), resources=Resources.of(capture),
        file_locks=file_locks, file_waits=file_waits, joins=joins, objects=Objects.of(capture), native=native_samples(capture),
        gil=gil, wakers=wakers,
        output=output_tails(capture), output_raw=dict(capture.get("output_tail") or {}),
        syscall_errors=syscall_errors(capture), exact_syscalls=exact if isinstance(exact, dict) else None,
        unix_peers=dict(_by_int(capture.get("unix_peers"))), tcp_peers=dict(_by_int(capture.get("tcp_peers"))),
        socket_queues=dict(_by_int(capture.get("socket_queues"))),
        skipped_children=capture.get("skipped_children") or 0,
        limitations=list(capture.get("limitations") or []), tool=capture.get("tool"),
        schema_version=capture.get("schema_version"), hostname=(capture.get("host") or {}).get("hostname"),
        collectives=Collectives.of(capture))


# -- the wait probes' records ----------------------------------------------------------------

@typed_record
class FileLock:
    """One lock of /proc/locks that a process of the job holds or waits for (probes/locks.py)."""
    type: Optional[str] = None           # FLOCK, POSIX, OFDLCK
    mode: Optional[str] = None           # READ, WRITE
    holder_pid: Optional[int] = None
    waiter_pids: List[int] = field(default_factory=list)
    pollers: List[int] = field(default_factory=list)   # retry it between sleeps (LOCK_NB)
    dev_inode: Optional[str] = None
    path: Optional[str] = None
    holder_in_tree: bool = True

    def where(self):
        return self.path or self.dev_inode


@typed_record
class FileWait:
    """A thread polling for a lock or marker file in a sleep loop (probes/file_waits.py)."""
    pid: int
    tid: int
    library: Optional[str] = None        # whose loop it is ("user code", filelock, ...)
    path: Optional[str] = None
    exists: bool = False
    mtime: Optional[float] = None
    age_s: Optional[float] = None
    size: Optional[int] = None
    flock_holders: List[int] = field(default_factory=list)
    open_by: List[int] = field(default_factory=list)

    def others(self, pid):
        """The processes, other than pid, that hold or have the file open."""
        return [p for p in self.flock_holders + self.open_by if p != pid]


@typed_record
class Join:
    """Thread.join(): the thread joined (probes/joins.py)."""
    pid: int
    tid: int
    target: Optional[str] = None
    target_tid: Optional[int] = None


@typed_record(frozen=True)
class HeldObject:
    """An object a waiting thread's frame holds, read from the target's memory (probes/objects.py):
    `fact` is the decoded record ({"kind": "Barrier", "parties": 3, "count": 2, ...}; a field that
    could not be read is {"not_read": why}), or {"not_read": why} for the whole object."""
    pid: int
    tid: int
    frame: str
    local: str
    type: str
    fact: Dict[str, Any]
    text: str
    caller: bool = False     # held by the user's frame that made the blocking call, not by the call

    @property
    def read(self):
        return "not_read" not in self.fact

    @property
    def kind(self):
        return self.fact.get("kind")

    def get(self, name):
        """A field's value, None when absent or not read."""
        value = self.fact.get(name)
        return None if isinstance(value, dict) and "not_read" in value else value


@typed_record(frozen=True)
class Objects:
    """What probes/objects.py read: the objects per thread (innermost frame first), each process's
    live thread idents, and what it could not read.  None in a Facts: the probe did not run (an
    older capture) or no thread waited in a blocking function."""
    by_thread: Dict[Any, List[HeldObject]]
    idents: Dict[int, Dict[int, int]]      # pid -> {thread ident: tid}
    not_read: List[str]

    @classmethod
    def of(cls, capture):
        raw = capture.get("objects")
        if not isinstance(raw, dict):
            return None
        by_thread = {}
        for item in raw.get("threads") or []:
            try:
                held = HeldObject(int(item["pid"]), int(item["tid"]), str(item.get("frame")), str(item.get("local")),
                                  str(item.get("type")), dict(item.get("fact") or {}), str(item.get("text") or ""),
                                  bool(item.get("caller")))
            except (KeyError, TypeError, ValueError):
                continue
            by_thread.setdefault((held.pid, held.tid), []).append(held)
        idents = {}
        for pid, table in _by_int(raw.get("idents")):
            try:
                idents[pid] = {int(k): v for k, v in (table or {}).items()}
            except (TypeError, ValueError):
                continue
        return cls(by_thread, idents, [str(x) for x in raw.get("not_read") or []])

    def of_thread(self, pid, tid):
        return self.by_thread.get((pid, tid), [])


@typed_record
class GilOwner:
    """A process's GIL: its holder and the threads waiting for it (probes/gil.py)."""
    holder_tid: Optional[int] = None
    waiting_tids: List[int] = field(default_factory=list)
    how: Optional[str] = None


@typed_record
class WakerRecord:
    """Who can end one blocked wait of one thread, searched host-wide (probes/wakers.py)."""
    pid: int
    tid: int
    wait: Optional[str] = None           # the kind of wait: pipe, socket, futex-shared, file, ...
    syscall: Optional[str] = None
    target: Optional[str] = None         # what it waits on (pipe:[...], a path)
    ends: List[Dict[str, Any]] = field(default_factory=list)       # processes at the other end
    watching: List[Dict[str, Any]] = field(default_factory=list)   # a poll/select/epoll set's fds
    mapping: Optional[str] = None        # (futex-shared) the shared mapping
    mappers: List[int] = field(default_factory=list)
    mount: Optional[Dict[str, Any]] = None   # the file system a file wait is on, and who serves it
    kernel_stack: List[str] = field(default_factory=list)
    why_unseen: Optional[str] = None


def native_samples(capture):
    """{(pid, tid): [(frames, count)]} of the native snapshots at the window's end; frames are
    (function, file, line) tuples, leaf first."""
    raw = capture.get("native")
    out = {}
    if not isinstance(raw, dict):
        return out
    for pid, threads in _by_int(raw.get("processes")):
        for tid, stacks in _by_int(threads):
            try:
                out[(pid, tid)] = [(tuple(tuple(f) for f in frames), int(n)) for frames, n in stacks or []]
            except (TypeError, ValueError):
                continue
    return out


def waits(capture):
    """(locks, file waits by thread, joins by thread, GIL owners by pid, waker records by thread)."""
    locks = [_from_dict(FileLock, r) for r in capture.get("locks") or [] if isinstance(r, dict)]
    file_waits = {(w.pid, w.tid): w for w in (_from_dict(FileWait, r) for r in capture.get("file_waits") or [])}
    joins = {(j.pid, j.tid): j for j in (_from_dict(Join, r) for r in capture.get("joins") or [])}
    gil = {pid: _from_dict(GilOwner, info or {}) for pid, info in _by_int(capture.get("gil"))}
    wakers = {}
    for raw in capture.get("wakers") or []:
        record = _from_dict(WakerRecord, raw)
        wakers.setdefault((record.pid, record.tid), []).append(record)
    return locks, file_waits, joins, gil, wakers


@typed_record(frozen=True)
class Finding:
    """What a detector found: a mechanism (registry.M), the thread or process it is about, and the
    facts its row's sentence is written from.  `unknown` says what the finding could not see (the
    thread that should end a wait, a value that could not be read): a verdict resting on it is
    never said above medium.  Its sentence and its report kind are written only with the report."""
    kind: Any
    pid: Optional[int] = None
    tid: Optional[int] = None
    facts: Dict[str, Any] = field(default_factory=dict)
    unknown: Optional[str] = None

    @classmethod
    def about(cls, kind, view=None, pid=None, unknown=None, **facts):
        return cls(kind, view.pid if view is not None else pid, view.tid if view is not None else None, facts,
                   unknown)


@typed_record(frozen=True)
class Edge:
    waiter: Any                   # ThreadView
    waker: Any                    # ThreadView, or None: the wait ends here
    kind: Any                     # a vocab.EdgeKind, or the registry.M of a mechanism's edge
    facts: Dict[str, Any] = field(default_factory=dict)
    findings: List[Finding] = field(default_factory=list)   # said when the walk takes this edge
    guess: bool = False           # a likely waker, not a known one: never closes a cycle
    process: bool = False         # the wait is on a process (pipe, socket, child, file lock):
                                  # any stuck thread of it on the walk closes a cycle
    stops: bool = False           # the waker holds what is waited on and does not use it: it is
                                  # the root, whatever it waits on itself

    @property
    def terminal(self):
        return self.waker is None
