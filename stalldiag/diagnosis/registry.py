"""The registry of mechanisms: every kind of finding the diagnosis can say, declared once.

A row says, for one mechanism:
  kind            the finding's kind (what edges.py, walk.py or evidence.py find)
  says            the function that writes its sentence from its facts (formatter.py's, or the
                  detector module's own for a mechanism added with its detector)
  found_by        the detector: the function that finds it (a pure function of the graph)
  category        the category it decides when found, or None (the wait-for chain decides)
  decides         "always": it decides wherever the chain ends; "weak-root": only over a root
                  that explains nothing better itself (sleeping, polling, computing, retrying);
                  "qualifies": it decides nothing, and when the verdict's category is its
                  category (one, a tuple, or None: any) its clause joins the summary (a binding
                  limit, a neighbour, what the GPU did)
  clause          (qualifiers) the words it adds to the summary, when not its whole sentence;
                  False: it adds none
  evidence_line   (qualifiers) its sentence is also a line of the verdict's evidence
  only_with_category  (qualifiers) it is reported only under a verdict of its category (what a
                  GPU did means something only for the wait the verdict names)
  blocks_progress the job cannot move while it holds (it cannot resolve by itself)
  leads_summary   its sentence is the verdict's summary when it is the deciding mechanism
  rests_on        what a verdict's confidence may rest on: "closed" (a closed chain or a
                  kernel fact: a cycle, a lock held by a thread that no longer exists),
                  "inferred" (a pattern of stacks and waits that is usually, not always, it),
                  "likely" (a guess from what surrounds a wait: never more than medium),
                  "context" (evidence around a verdict, never a verdict by itself)
  report_kind     the kind the report shows (a few internal kinds share one)

PRECEDENCE is the one order in which mechanisms win when several are found: the category,
the summary and the progress model all read it, never the order in which detectors ran.
category.py, progress.py and verdict.py derive their tables from these rows.
"""
from dataclasses import dataclass
from typing import Any, Callable, Optional

from . import formatter as say
from . import gpu
from . import polls
from . import resources
from .types import Finding


@dataclass(frozen=True)
class Mechanism:
    kind: str
    says: Optional[Callable]
    found_by: str
    category: Optional[str] = None
    decides: str = "always"
    blocks_progress: bool = False
    leads_summary: bool = False
    rests_on: str = "context"
    report_kind: Optional[str] = None
    clause: Any = None
    evidence_line: bool = False
    only_with_category: bool = False


def _m(kind, says, found_by, **kw):
    return Mechanism(kind, says, found_by, **kw)


# Mechanisms that decide a verdict (a category, the summary, "no progress"), in PRECEDENCE order.
_DECIDING = (
    # a reader that joins the writer it does not drain is also a deadlock: the pipe is the cause
    _m("undrained-pipe", None, "verdict.undrained_pipe", category="io", rests_on="closed"),
    _m("deadlock", say.cycle, "walk.walk", category="locks", blocks_progress=True, rests_on="closed"),
    _m("connection-stall", say.cycle, "walk.walk", category="network", blocks_progress=True, rests_on="closed"),
    _m("lock-held-at-fork", say.held_at_fork, "edges.waited_thread", category="locks", blocks_progress=True,
       leads_summary=True, rests_on="closed"),
    _m("lost-task", say.lost_task, "edges.waited_workers", category="subprocess", blocks_progress=True,
       leads_summary=True, rests_on="closed"),
    _m("lost-batch", say.lost_batch, "edges.waited_workers", category="subprocess", blocks_progress=True,
       leads_summary=True, rests_on="closed"),
    _m("waker-exited", say.waker_exited, "edges.waker_exited", category="subprocess", blocks_progress=True,
       leads_summary=True, rests_on="closed"),
    _m("barrier-incomplete", say.barrier_incomplete, "evidence.barrier_incomplete", blocks_progress=True,
       leads_summary=True, rests_on="closed"),
    _m("pool-empty", say.pool_empty, "edges.waited_peer", category="subprocess", blocks_progress=True,
       leads_summary=True, rests_on="closed"),
    # a file lock is held whatever its holder does (a holder that sleeps in a loop catching an
    # exception is not the job's retry loop): before retry-loop
    # a GPU's memory held outside the job, by a job that fails to get it: its retries are explained
    _m("gpu-memory-held", resources.gpu_memory_held_text, "resources.gpu_memory", category="cuda",
       decides="weak-root", blocks_progress=True, leads_summary=True, rests_on="closed"),
    _m("file-lock", say.file_lock, "edges.file_lock_holder", category="locks", decides="weak-root",
       leads_summary=True, rests_on="closed"),
    # a wait beside a thread that died on an exception its output shows: before the poll rows
    # and before orphaned-wait, which says only that no thread is left
    _m("thread-died", polls.thread_died_text, "polls.thread_died", category="locks", decides="weak-root",
       blocks_progress=True, leads_summary=True, rests_on="inferred"),
    # a poll loop beside a child that exited with a failure: the likely waker is dead (the loop's
    # own code does not say what it polls for)
    _m("child-exited", polls.child_exited_text, "polls.child_exited", category="subprocess", decides="weak-root",
       blocks_progress=True, leads_summary=True, rests_on="likely"),
    _m("lock-poll", polls.lock_poll_text, "polls.lock_poll", category="locks", decides="weak-root", leads_summary=True,
       rests_on="likely"),
    # a flag polled by the only thread left: what the flag is about decides (a server's readiness
    # is the network); below a failing retry, a death the output shows and a lock poll
    _m("flag-orphaned-network", polls.flag_orphaned_text, "polls.flag_orphaned", category="network",
       decides="weak-root", blocks_progress=True, leads_summary=True, rests_on="likely"),
    _m("flag-orphaned", polls.flag_orphaned_text, "polls.flag_orphaned", category="locks", decides="weak-root",
       blocks_progress=True, leads_summary=True, rests_on="likely"),
    _m("orphaned-wait", say.orphaned_wait, "edges.orphaned_wait", blocks_progress=True, leads_summary=True,
       rests_on="inferred"),
    _m("pool-deadlock", say.pool_deadlock, "edges.orphaned_wait", blocks_progress=True, rests_on="inferred",
       report_kind="deadlock"),
    _m("missed-task-done", say.missed_task_done, "edges.waited_thread", blocks_progress=True,
       rests_on="inferred", report_kind="orphaned-wait"),
    _m("collective-mismatch", say.collective_mismatch, "evidence.framework_evidence", blocks_progress=True,
       leads_summary=True, rests_on="inferred"),
    _m("retry-loop", say.retry_loop, "retry.retrying", blocks_progress=True, leads_summary=True,
       rests_on="inferred"),
    _m("event-loop-wakeup", say.event_loop_wakeup, "evidence.event_loop_waiting", leads_summary=True,
       rests_on="inferred"),
    _m("event-loop-idle", say.event_loop_idle, "evidence.event_loop_waiting", leads_summary=True,
       rests_on="inferred"),
    _m("likely-deadlock", say.likely_deadlock, "edges.waited_thread", rests_on="inferred",
       report_kind="deadlock"),
)

# Limits and neighbours: the why of a verdict of their category (resources.py), in the order the
# summary names them.
_QUALIFYING = (
    # What the GPUs of the chain's ends did (gpu.detect): at most one applies to a category, and
    # it comes first in the summary
    _m("hung-kernel", say.hung_kernel, "gpu.detect", category="cuda", decides="qualifies",
       clause=gpu.hung_kernel_clause, only_with_category=True),
    _m("gpu-bound", say.gpu_bound, "gpu.detect", category="cuda", decides="qualifies", clause=gpu.gpu_bound_clause,
       only_with_category=True),
    _m("gpu-busy-flag", gpu.gpu_busy_flag_text, "gpu.detect", category="cuda", decides="qualifies",
       only_with_category=True),
    _m("collective-on-gpu", say.collective_on_gpu, "gpu.detect", category="collective", decides="qualifies",
       clause=False, evidence_line=True, only_with_category=True),
    _m("launch-bound", say.launch_bound, "gpu.detect", category="cpu", decides="qualifies",
       clause=gpu.launch_bound_clause, evidence_line=True, only_with_category=True),
    _m("gpu-starved", say.gpu_starved, "gpu.detect", category=("io", "cpu", "locks"), decides="qualifies",
       clause=gpu.gpu_starved_clause, evidence_line=True, only_with_category=True),
    # Limits and neighbours (resources.py), at most two named
    # (category None: it qualifies a verdict of any category)
    _m("fd-limit", resources.fd_limit_text, "resources.fd_limit", decides="qualifies"),
    _m("pids-limit", resources.pids_limit_text, "resources.pids_limit", decides="qualifies"),
    _m("cpu-limit", resources.cpu_limit_text, "resources.cpu_limit", category="cpu", decides="qualifies"),
    _m("cpu-neighbour", resources.cpu_neighbour_text, "resources.cpu_contention", category="cpu", decides="qualifies"),
    _m("cpu-oversubscribed", resources.cpu_oversubscribed_text, "resources.cpu_contention", category="cpu",
       decides="qualifies"),
    _m("io-throttled", resources.io_throttled_text, "resources.io", category="io", decides="qualifies"),
    _m("memory-limit", resources.memory_limit_text, "resources.memory", category="io", decides="qualifies"),
    _m("disk-neighbour", resources.disk_neighbour_text, "resources.io", category="io", decides="qualifies"),
    _m("gpu-neighbour", resources.gpu_neighbour_text, "resources.gpu_neighbour", category="cuda",
       decides="qualifies"),
    _m("pcie-bound", resources.pcie_bound_text, "resources.pcie", category="cuda", decides="qualifies"),
)

# Findings that explain a verdict without deciding it: the evidence a reader asks for.
_CONTEXT = (
    _m("lock-holder", say.lock_holder, "edges.waited_thread"),
    _m("peer-not-serving", say.peer_not_serving, "edges.tcp_peer"),
    _m("straggler", say.straggler, "edges.outlier_rank"),
    _m("compiler-busy", say.compiler_busy, "edges.compiling"),
    _m("event-loop-blocked", say.event_loop_blocked, "evidence.event_loop_blocked"),
    _m("waker-unseen", say.waker_unseen, "evidence.unseen_wakers"),
    _m("mount", say.mount, "evidence.unseen_wakers"),
    _m("dataloader-starved", say.dataloader_starved, "evidence.framework_evidence"),
    _m("compiling", say.compiling, "evidence.framework_evidence"),
    _m("missing-ranks", say.missing_ranks, "evidence.framework_evidence"),
    _m("unnumbered-ranks", say.unnumbered_ranks, "evidence.general_findings"),
    _m("xid", say.xid, "evidence.general_findings"),
    _m("ecc", say.ecc, "evidence.general_findings"),
    _m("gpu-throttled", say.gpu_throttled, "evidence.general_findings"),
    _m("silent-output", say.silent_output, "progress.silent_output"),
    _m("skipped-children", say.skipped_children, "evidence.general_findings"),
    _m("exited", say.exited, "evidence.general_findings"),
    _m("no-python-stacks", say.no_python_stacks, "evidence.general_findings"),
    _m("compile-workers", say.compile_workers, "evidence.general_findings"),
    _m("compiler-processes", say.compiler_processes, "evidence.general_findings"),
    _m("d-state", say.d_state, "evidence.general_findings"),
)

MECHANISMS = _DECIDING + _QUALIFYING + _CONTEXT
BY_KIND = {m.kind: m for m in MECHANISMS}
PRECEDENCE = tuple(m.kind for m in _DECIDING)
REPORT_KIND = {m.kind: m.report_kind for m in MECHANISMS if m.report_kind}

# Derived tables: what the category, the progress model and the summary read.
CATEGORY_OF = tuple((m.kind, m.category) for m in _DECIDING if m.category and m.decides == "always")
WEAK_ROOT_CATEGORY_OF = tuple((m.kind, m.category) for m in _DECIDING if m.category and m.decides == "weak-root")
BLOCKS_PROGRESS = tuple(m.kind for m in MECHANISMS if m.blocks_progress)
LEADS_SUMMARY = tuple(m.kind for m in _DECIDING if m.leads_summary)
QUALIFIERS = tuple((m.kind, m.category) for m in _QUALIFYING)
GPU_ROWS = tuple(m.kind for m in _QUALIFYING if m.found_by == "gpu.detect")


def applies(of, category):
    """A qualifier of category `of` (one, a tuple, or None: any) applies to a verdict of category."""
    return of is None or category == of or (isinstance(of, tuple) and category in of)


def qualifiers_of(findings, category, most=2):
    """The clauses the summary of a verdict of `category` gets: what the GPU did, then at most
    `most` limits and neighbours, in the registry's order."""
    found = {f["kind"]: f.get("clause", f["summary"]) for f in findings}
    clauses = [(kind, found[kind]) for kind, of in QUALIFIERS if applies(of, category) and found.get(kind)]
    return [c for kind, c in clauses if kind in GPU_ROWS] + [c for kind, c in clauses if kind not in GPU_ROWS][:most]


def with_category(items, category):
    """The Findings of rows reported only under a verdict of their category, kept where it applies."""
    return [f for f in items if not BY_KIND[f.kind].only_with_category or applies(BY_KIND[f.kind].category, category)]


def report_kind(kind):
    return REPORT_KIND.get(kind, kind)


def first(kinds, among):
    """The kind of `kinds` (found mechanisms) that PRECEDENCE puts first, among `among`."""
    found = set(kinds)
    return next((kind for kind in PRECEDENCE if kind in found and kind in among), None)


def finding_of(findings, among):
    """The finding (a report dict) of the mechanism that wins among `among`, or None.  Findings
    carry their report kind: a pool deadlock or a likely deadlock counts as a deadlock."""
    kind = first([f["kind"] for f in findings], among)
    return next((f for f in findings if f["kind"] == kind), None) if kind else None


def as_dict(item: Finding, g):
    """The report's {"kind", "summary", "pid", "tid"} record of a Finding, its sentence written by
    the row's `says`."""
    row = BY_KIND[item.kind]
    found = {"kind": report_kind(item.kind), "summary": row.says(g, **item.facts), "pid": item.pid, "tid": item.tid}
    if row.clause is False:
        found["clause"] = None
    elif row.clause is not None:
        found["clause"] = row.clause(g, **item.facts)
    return found
