"""The report as typed records: the one input of every renderer.

report.py builds a Report from a capture and its diagnosis; merge.py builds an Incident from
per-host Reports; the renderers in render/ format either and read nothing else: never the raw
capture, never the diagnosis. Everything a renderer shows is here (each thread's classified /proc
samples for the timeline, the Python stacks, the last lines written, the failed calls, each GPU
over the window).

Report.to_dict() is the JSON report, the contract other tools read (README, "JSON report"): the
keys it always had, the capture inside (that is how `stalldiag report x.json` re-diagnoses
offline), and report_version. Records the diagnosis wrote as open dicts (the verdict, findings,
rank rows) keep any key they do not name in `extra`, and the order of the keys they were read
with, so the JSON says exactly what the diagnosis said.
"""
from dataclasses import field, fields
from typing import Any, Dict, List, NamedTuple, Optional, Tuple

from ..records import typed_record

# The layout of Report and of Report.to_dict(): raised when a key changes meaning or goes away
# (adding one does not). The capture inside has its own schema_version (capture.py).
REPORT_VERSION = 1


# --- open records: typed fields over a dict the diagnosis or a probe wrote -------------------

class OpenRecord:
    """A dataclass read from a mapping: its named fields typed, other keys kept in `extra`, and the
    mapping's key order kept in `keys`, so to_dict() gives the mapping back as it was. `nested`
    names the fields that are records themselves (field -> record class)."""
    nested: Dict[str, Any] = {}

    @classmethod
    def read(cls, data):
        if data is None:
            return None
        names = cls._names()
        known, extra = {}, {}
        for key, value in data.items():
            if key in names:
                reader = cls.nested.get(key)
                known[key] = reader.read(value) if reader is not None and isinstance(value, dict) else value
            else:
                extra[key] = value
        return cls(**known, extra=extra, keys=tuple(data))

    @classmethod
    def _names(cls):
        return {f.name for f in fields(cls)} - {"extra", "keys"}

    def to_dict(self):
        names = self._names()
        order = self.keys or tuple(f.name for f in fields(self) if f.name in names) + tuple(self.extra)
        out = {}
        for key in order:
            value = getattr(self, key) if key in names else self.extra[key]
            out[key] = value.to_dict() if isinstance(value, OpenRecord) else value
        return out


def _extra():
    """An OpenRecord's keys it has no field for."""
    return field(default_factory=dict, repr=False, compare=False)


def _keys():
    """An OpenRecord's keys in the order it was read with; () for one built here."""
    return field(default=(), repr=False, compare=False)


# --- what the diagnosis said ------------------------------------------------------------------

@typed_record
class Progress(OpenRecord):
    state: Optional[str] = None           # "making progress", "no progress seen", "cannot tell"
    evidence: List[str] = field(default_factory=list)
    brief: Optional[str] = None           # the first thing that shows it, in a few words
    extra: Dict[str, Any] = _extra()
    keys: Tuple[str, ...] = _keys()


@typed_record
class Verdict(OpenRecord):
    category: str = "unknown"
    summary: str = ""
    pid: Optional[int] = None             # the culprit: the end of the chain
    tid: Optional[int] = None
    thread_name: Optional[str] = None
    confidence: Optional[str] = None      # high, medium, low
    evidence: List[str] = field(default_factory=list)
    walk_end: Optional[str] = None        # how the walk ended: a terminal or cycle-closing edge kind
    progress: Optional[Progress] = None
    confidence_rests_on: Optional[str] = None
    alternatives: Optional[List[str]] = None   # below high confidence: what is not ruled out
    to_settle: Optional[List[str]] = None      # and what would settle it
    extra: Dict[str, Any] = _extra()
    keys: Tuple[str, ...] = _keys()
    nested = {"progress": Progress}


@typed_record
class Finding(OpenRecord):
    """One mechanism found (registry.py): its kind and sentence; its facts in `extra`."""
    kind: str = ""
    summary: str = ""
    pid: Optional[int] = None
    tid: Optional[int] = None
    extra: Dict[str, Any] = _extra()
    keys: Tuple[str, ...] = _keys()


@typed_record
class ChainStep(OpenRecord):
    """A thread on the verdict's chain, from the thread that should progress to the culprit."""
    pid: int = 0
    tid: int = 0
    name: Optional[str] = None
    kind: Optional[str] = None
    role: Optional[str] = None
    text: Optional[str] = None
    edge: Optional[str] = None            # the kind of the edge that led here (None for the first)
    activity: Optional[str] = None        # what it did most ("futex", "wait4", "on CPU")
    waits_on: Optional[str] = None        # what that waits on ("futex word 0x...", "child pid 12")
    # what the step before waits for, from the edge that led here ("waits for lock_b, which it
    # holds", "waits for the other end of a pipe"; "it": this thread); None for the first
    waits_for: Optional[str] = None
    # the last step only: how the walk ended: {"edge": the kind of the edge that closed a cycle or
    # ended the walk (None: none), "cycle_to": the index of the step a cycle led back to (None: no
    # cycle), "resource": what the chain ends on ("storage at 1.4 MB/s"; None: no resource),
    # "waits_for": as waits_for, of that edge (what the last step waits for)}
    end: Optional[Dict[str, Any]] = None
    extra: Dict[str, Any] = _extra()
    keys: Tuple[str, ...] = _keys()


@typed_record
class RankRow(OpenRecord):
    rank: int = 0
    local_rank: Optional[int] = None
    pid: int = 0
    host: Optional[str] = None
    state: str = ""                       # collective, rendezvous, cuda, sleep, ...
    where: str = "-"                      # the function it waits or works in
    frame: Optional[str] = None
    gpus: Optional[List[Any]] = None
    # its main thread's commonest stack as it ran it, [[function, file, line], ...] innermost
    # first (at most 16 frames), and how deep that stack is; None in reports older than these
    stack: Optional[List[Any]] = None
    stack_depth: Optional[int] = None
    world_size: Optional[int] = None      # WORLD_SIZE in its environment (merge: the ranks no report has)
    suspect: bool = False
    extra: Dict[str, Any] = _extra()
    keys: Tuple[str, ...] = _keys()


@typed_record
class RankGroup(OpenRecord):
    """A class of ranks as the diagnosis wrote it: ranks whose main threads have the same state
    and normalized stack (ranks.py), largest first."""
    shape: str = ""                       # "collective in all_reduce (torch.distributed)"
    ranks: List[int] = field(default_factory=list)
    extra: Dict[str, Any] = _extra()
    keys: Tuple[str, ...] = _keys()


class ClassFrame(NamedTuple):
    """A frame of a class's normalized stack: the function, its file's basename, and the line its
    first rank was at (ranks of one class may be at other lines of the same functions)."""
    function: Optional[str]
    file: Optional[str]
    line: Any

    def text(self, line=True):
        return "%s (%s%s)" % (self.function, self.file, ":%s" % self.line if line and self.line is not None else "")


class Divergence(NamedTuple):
    """Where a class's stack leaves the stack of a larger class (STAT's prefix tree), counted from
    the outermost frame: the deepest frame both have (None: they differ from the first frame seen)
    and this class's frame below it; into None: no frame of its own, either the same frames (only
    the state differs) or, `prefix`, a part of the other's (it is in a caller of the other's frames)."""
    from_class: int                       # the larger class compared with: the one sharing most frames
    common: Optional[ClassFrame]
    into: Optional[ClassFrame]
    prefix: bool = False

    def text(self):
        if self.into is None:
            if self.prefix:
                return "in a caller of #%d's frames, at %s" % (
                    self.from_class, self.common.text() if self.common else "its outermost frame")
            return "same frames as #%d" % self.from_class
        if self.common is None:
            return "differs from #%d at its outermost frame seen, in %s" % (self.from_class, self.into.text())
        return "diverges from #%d below %s, into %s" % (self.from_class, self.common.text(), self.into.text())

    def to_dict(self):
        return {"from_class": self.from_class, "common": None if self.common is None else list(self.common),
                "into": None if self.into is None else list(self.into), "prefix": self.prefix}


@typed_record
class RankClass:
    """Ranks alike: the same state and normalized stack (the diagnosis's class), with what the
    reports show of it: its ranks and hosts, its first rank's stack, where it leaves a larger
    class's stack, and whether its ranks are the outliers."""
    index: int                            # 1-based, largest class first
    shape: str                            # "collective in all_reduce (torch.distributed)"
    state: str
    where: str
    frame: Optional[str]                  # the first rank's innermost frame of the user's code
    ranks: List[int]                      # sorted
    hosts: List[str]                      # sorted
    stack: List[ClassFrame]               # innermost first, at most 12 frames; [] when not known
    depth: Optional[int] = None           # frames in the first rank's whole stack
    diverges: Optional[Divergence] = None
    outlier: bool = False

    @property
    def count(self):
        return len(self.ranks)

    def to_dict(self):
        return {"shape": self.shape, "ranks": self.ranks, "hosts": self.hosts, "count": self.count,
                "state": self.state, "where": self.where, "frame": self.frame,
                "stack": [list(f) for f in self.stack], "stack_depth": self.depth,
                "diverges": None if self.diverges is None else self.diverges.to_dict(), "outlier": self.outlier}


@typed_record
class Ranks:
    rows: List[RankRow]
    groups: List[RankGroup]

    def to_dict(self):
        return {"rows": [r.to_dict() for r in self.rows], "groups": [g.to_dict() for g in self.groups]}


# --- the window, the processes and threads ---------------------------------------------------

@typed_record
class Tool(OpenRecord):
    name: Optional[str] = None
    version: Optional[str] = None
    extra: Dict[str, Any] = _extra()
    keys: Tuple[str, ...] = _keys()


@typed_record
class Window:
    start: Optional[float] = None
    duration_s: Optional[float] = None
    samples: Optional[int] = None
    rate_hz: Optional[float] = None       # /proc samples per second
    interrupted: Optional[str] = None     # the signal that ended the window early
    stack_rate_hz: Optional[float] = None  # py-spy samples per second (not in the JSON's window)

    def to_dict(self):
        return {"start": self.start, "duration_s": self.duration_s, "samples": self.samples,
                "rate_hz": self.rate_hz, "interrupted": self.interrupted}


class SampleClass(NamedTuple):
    """What a distinct /proc sample was: the timeline band (kinds.py: running, lock, io, network,
    sleep, child, other), the thread kind, and what it waits on."""
    band: str
    kind: str
    waits_on: Optional[str]


UNCLASSIFIED = SampleClass("other", "unknown", None)


class Sample(NamedTuple):
    """One /proc sample of a thread, in the timeline: seconds into the window, state, syscall
    ("running" on a CPU), wchan, and its class (UNCLASSIFIED without a diagnosis)."""
    t: float
    state: Optional[str]
    syscall: Optional[str]
    wchan: Optional[str]
    cls: SampleClass


class Frame(NamedTuple):
    function: Optional[str]
    file: Optional[str]
    line: Any                             # an int as py-spy gives it


class StackRun(NamedTuple):
    """`samples` consecutive py-spy samples of one stack (an index into Report.stacks)."""
    stack: int
    samples: int      # (not `count`: a tuple's own count() would be hidden)


class FrameLocals(NamedTuple):
    """--locals: the local variables of one frame (truncated and redacted)."""
    function: str
    values: Dict[str, str]


@typed_record
class ThreadRow:
    tid: int
    name: Optional[str]                   # Python's name for it, else the kernel's
    comm: Optional[str]
    cpu_seconds: Optional[float] = None
    samples: Optional[int] = None         # /proc samples taken of it
    kind: Optional[str] = None            # kinds.py, from the diagnosis
    state: Optional[str] = None
    state_text: Optional[str] = None
    share: Optional[float] = None
    stack_samples: Optional[int] = None   # py-spy samples of it
    residency: Optional[Dict[str, float]] = None  # running/syscall -> share of samples
    syscall_counts: Optional[Dict[str, int]] = None             # only with --syscalls exact
    timeline: List[Sample] = field(default_factory=list)
    stack_runs: List[StackRun] = field(default_factory=list)    # in time order
    locals: List[FrameLocals] = field(default_factory=list)

    def to_dict(self, diagnosed=True):
        if not diagnosed:
            return {"tid": self.tid, "name": self.name, "comm": self.comm, "cpu_seconds": self.cpu_seconds,
                    "samples": self.samples}
        out = {"tid": self.tid, "name": self.name, "comm": self.comm, "kind": self.kind, "state": self.state,
               "state_text": self.state_text, "share": self.share, "cpu_seconds": self.cpu_seconds,
               "samples": self.samples, "stack_samples": self.stack_samples, "residency": self.residency}
        if self.syscall_counts is not None:
            out["syscall_counts"] = self.syscall_counts
        return out


class FileChange(NamedTuple):
    path: Optional[str]
    pos: Optional[int]
    size: Optional[int]
    delta: Optional[int]


@typed_record
class Files:
    """Files read on, written and opened during the window."""
    read: List[FileChange] = field(default_factory=list)
    written: List[FileChange] = field(default_factory=list)
    opened: List[FileChange] = field(default_factory=list)

    def to_dict(self):
        return {name: [entry._asdict() for entry in getattr(self, name)] for name in ("read", "written", "opened")}


@typed_record
class GpuUse:
    """The GPUs one process uses, its memory there and its SM utilization samples' mean."""
    devices: List[Any]
    memory: Dict[str, Any]
    sm_util_mean: Optional[float]
    cuda_visible_devices: Optional[List[Any]]

    def to_dict(self):
        return {"devices": self.devices, "memory": self.memory, "sm_util_mean": self.sm_util_mean,
                "cuda_visible_devices": self.cuda_visible_devices}


@typed_record
class ProcessRow:
    pid: int
    ppid: Optional[int]
    role: str
    cmdline: List[str]
    comm: Optional[str]
    user: Optional[str]
    python: bool                          # Python stacks were sampled
    python_note: Optional[str]            # why not
    cpu_seconds: Optional[float]
    io: Optional[Dict[str, int]]          # /proc/PID/io over the window
    exited_at: Optional[float]
    env: Dict[str, str]
    threads: List[ThreadRow]
    stack_rate_hz: Optional[float] = None
    stack_snapshots: Optional[List[float]] = None
    ctx_switches: Optional[Dict[str, int]] = None
    residency: Dict[str, float] = field(default_factory=dict)
    stdio: Dict[str, Any] = field(default_factory=dict)        # fd -> what changed on it
    files: Files = field(default_factory=Files)
    syscall_counts: Optional[Dict[str, int]] = None
    gpu: Optional[GpuUse] = None
    sample_classes: Dict[str, SampleClass] = field(default_factory=dict)   # sample key -> class

    def to_dict(self, diagnosed=True):
        threads = [t.to_dict(diagnosed) for t in self.threads]
        if not diagnosed:
            return {"pid": self.pid, "ppid": self.ppid, "role": self.role, "cmdline": self.cmdline,
                    "comm": self.comm, "user": self.user, "python": self.python, "python_note": self.python_note,
                    "cpu_seconds": self.cpu_seconds, "io": self.io, "exited_at": self.exited_at,
                    "env": self.env, "threads": threads}
        return {"pid": self.pid, "ppid": self.ppid, "role": self.role, "cmdline": self.cmdline, "comm": self.comm,
                "user": self.user, "python": self.python, "python_note": self.python_note,
                "stack_rate_hz": self.stack_rate_hz, "stack_snapshots": self.stack_snapshots,
                "cpu_seconds": self.cpu_seconds, "io": self.io, "ctx_switches": self.ctx_switches,
                "exited_at": self.exited_at, "env": self.env, "residency": self.residency, "stdio": self.stdio,
                "files": self.files.to_dict(), "syscall_counts": self.syscall_counts,
                "gpu": None if self.gpu is None else self.gpu.to_dict(), "threads": threads,
                "sample_classes": {key: list(cls) for key, cls in self.sample_classes.items()}}


# --- what the job wrote, what failed, the GPUs -----------------------------------------------

@typed_record
class OutputTail:
    """The last lines (redacted) of one regular file a process writes to."""
    pid: int
    stream: str                           # "stdout", "stderr" or "log"
    path: Optional[str]
    lines: List[str]
    size: Optional[int]
    age_s: Optional[float]                # since its last write, at the window's end


class FailedCall(NamedTuple):
    name: str                             # the syscall
    errors: int
    errnos: Dict[str, int]                # ECONNREFUSED -> n (when the backend knows them)


@typed_record
class CallFailures:
    """--syscalls exact: the calls of one process that failed, most failures first."""
    pid: int
    calls: List[FailedCall]


@typed_record
class ExactCounts:
    """--syscalls exact: the backend, the span counted, the tree's counts."""
    backend: Optional[str]
    counted_s: Optional[float]
    notes: Optional[List[str]]
    tree: Dict[str, int]

    def to_dict(self):
        return {"backend": self.backend, "counted_s": self.counted_s, "notes": self.notes, "tree": self.tree}


@typed_record
class GpuDevice(OpenRecord):
    """A GPU as NVML described it (the capture's gpu.devices entry; other fields in `extra`)."""
    index: Any = None
    name: Optional[str] = None
    memory_total: Optional[int] = None
    mig_mode: Optional[bool] = None
    ecc_uncorrected_start: Optional[int] = None
    ecc_uncorrected_end: Optional[int] = None
    extra: Dict[str, Any] = _extra()
    keys: Tuple[str, ...] = _keys()


@typed_record
class GpuSummary:
    """One GPU over the window: utilization, GPM activity, memory (the JSON's gpu_window)."""
    index: Any
    name: Optional[str]
    util: Optional[float]
    has_gpm: bool
    sm: Optional[float]
    tensor: Optional[float]
    memory_used: Optional[int]

    def to_dict(self):
        return {"index": self.index, "name": self.name, "util": self.util, "has_gpm": self.has_gpm, "sm": self.sm,
                "tensor": self.tensor, "memory_used": self.memory_used}


@typed_record
class GpuSeries:
    """One GPU's samples over the window, [seconds, percent] in time order, for the charts."""
    index: Any
    name: Optional[str]
    util: List[Tuple[float, float]]       # NVML utilization
    memutil: List[Tuple[float, float]]    # memory bandwidth
    sm: List[Tuple[float, float]]         # GPM SM activity
    tensor: List[Tuple[float, float]]     # GPM tensor activity


@typed_record
class GpuWindow:
    available: bool = False
    reason: Optional[str] = None          # why not available
    gpm_note: Optional[str] = None
    devices: List[GpuDevice] = field(default_factory=list)
    summaries: List[GpuSummary] = field(default_factory=list)
    series: List[GpuSeries] = field(default_factory=list)


@typed_record
class Failure:
    """A stalldiag stage that raised (diagnosis, a renderer): the report says so, the capture is kept."""
    stage: str
    type: str
    message: str
    where: Optional[str] = None           # "stalldiag/x.py:12 in f"

    def to_dict(self):
        return {"stage": self.stage, "type": self.type, "message": self.message, "where": self.where}


# --- the report ------------------------------------------------------------------------------

@typed_record
class Report:
    schema_version: Any                   # the capture's
    tool: Optional[Tool]
    hostname: Optional[str]
    window: Window
    verdict: Verdict
    chain: List[ChainStep]
    chain_text: str
    ranks: Optional[Ranks]
    findings: List[Finding]
    processes: List[ProcessRow]           # the capture's processes, in its order
    syscall_counts: Optional[ExactCounts]
    gpu: GpuWindow
    frames: List[Frame]                   # the Python stacks: every frame seen
    stacks: List[List[int]]               # each a list of indexes into frames, leaf first
    output_tails: List[OutputTail]        # processes in report order
    failed_calls: List[CallFailures]      # by pid
    limitations: List[str]
    failures: List[Failure]
    # The capture, for the JSON only (to re-diagnose offline): no renderer reads it.
    capture: Dict[str, Any] = field(repr=False)
    # False for the fallback report (the diagnosis failed): no verdict, the capture's raw rows
    diagnosed: bool = True
    report_version: int = REPORT_VERSION

    def to_dict(self):
        out = {
            "report_version": self.report_version,
            "schema_version": self.schema_version,
            "tool": None if self.tool is None else self.tool.to_dict(),
            "window": self.window.to_dict(),
            "verdict": self.verdict.to_dict(),
            "chain": [step.to_dict() for step in self.chain],
            "chain_text": self.chain_text,
            "ranks": (None if self.ranks is None else self.ranks.to_dict()) if self.diagnosed else {},
            "findings": [f.to_dict() for f in self.findings],
            "processes": [p.to_dict(self.diagnosed) for p in self.processes],
            "syscall_counts": None if self.syscall_counts is None else self.syscall_counts.to_dict(),
            "gpus": [d.to_dict() for d in self.gpu.devices],
            "gpu_available": self.gpu.available,
        }
        if self.diagnosed:
            out["gpu_window"] = [s.to_dict() for s in self.gpu.summaries]
        out.update({"limitations": self.limitations, "failures": [f.to_dict() for f in self.failures],
                    "capture": self.capture})
        return out


# --- stalldiag merge: one incident across per-host reports -----------------------------------

@typed_record
class IncidentHost:
    host: str
    file: str
    category: str
    summary: str
    ranks: List[int]
    processes: int
    progress: Optional[str]
    collectives: Optional[List[Any]] = None   # its ranks' Flight Recorder records (not in the JSON)

    def to_dict(self):
        return {"host": self.host, "file": self.file, "category": self.category, "summary": self.summary,
                "ranks": self.ranks, "processes": self.processes, "progress": self.progress}


@typed_record
class IncidentRank:
    """A rank of one host's report, with the host and file it came from."""
    row: RankRow
    host: str
    file: str
    suspect: bool = False
    class_index: Optional[int] = None     # its class (RankClass.index); not in the JSON's rank rows

    @property
    def rank(self):
        return self.row.rank

    @property
    def local_rank(self):
        return self.row.local_rank

    @property
    def pid(self):
        return self.row.pid

    @property
    def state(self):
        return self.row.state

    @property
    def where(self):
        return self.row.where

    @property
    def frame(self):
        return self.row.frame

    @property
    def stack(self):
        return self.row.stack

    @property
    def stack_depth(self):
        return self.row.stack_depth

    def to_dict(self):
        return dict(self.row.to_dict(), host=self.host, file=self.file, suspect=self.suspect)


IncidentGroup = RankClass     # a class of ranks across hosts (the JSON's "groups")


@typed_record
class Suspect:
    host: str
    rank: int
    pid: int

    def to_dict(self):
        return {"host": self.host, "rank": self.rank, "pid": self.pid}


@typed_record
class IncidentVerdict:
    category: str
    summary: str
    host: Optional[str] = None            # the outlier rank's host, rank and pid
    rank: Optional[int] = None
    pid: Optional[int] = None
    suspects: Optional[List[Suspect]] = None
    # the classes in one sentence: "ranks 0-4094: collective in all_reduce ...; rank 4095: ..."
    consensus: Optional[str] = None
    missing_ranks: Optional[str] = None   # ranks of the job (WORLD_SIZE, else up to the highest seen) no report has
    # what the ranks' Flight Recorders say, every host's read together (diagnosis/collectives.py)
    flight_recorder: Optional[List[str]] = None

    def to_dict(self):
        out = {"category": self.category, "summary": self.summary, "host": self.host, "rank": self.rank,
               "pid": self.pid}
        if self.suspects is not None:
            out["suspects"] = [s.to_dict() for s in self.suspects]
        if self.consensus is not None:
            out["consensus"] = self.consensus
        if self.missing_ranks is not None:
            out["missing_ranks"] = self.missing_ranks
        if self.flight_recorder:
            out["flight_recorder"] = self.flight_recorder
        return out


@typed_record
class Incident:
    """`stalldiag merge`: every host's verdict, every rank side by side, and the ranks' classes
    by stack (largest first), the outliers among them."""
    merged_from: List[str]
    verdict: IncidentVerdict
    hosts: List[IncidentHost]
    ranks: List[IncidentRank]             # by rank, then host
    groups: List[RankClass]               # the classes, largest first

    @property
    def classes(self):
        return self.groups

    @property
    def outliers(self):
        """The suspect ranks, in the order the verdict names them (smallest class first)."""
        order = {(s.host, s.rank, s.pid): i for i, s in enumerate(self.verdict.suspects or [])}
        return sorted((r for r in self.ranks if r.suspect), key=lambda r: order.get((r.host, r.rank, r.pid), len(order)))

    def to_dict(self):
        return {"merged_from": self.merged_from, "verdict": self.verdict.to_dict(),
                "hosts": [h.to_dict() for h in self.hosts], "ranks": [r.to_dict() for r in self.ranks],
                "groups": [g.to_dict() for g in self.groups]}
