"""The registry's table: one row per mechanism, in the one precedence order.

A row says, for one mechanism (its name in names.py):
  detect          its detector: a function of the scene (scene.py: the graph, the walk, the focus
                  and the root) returning the Findings it makes; diagnose() runs the rows in the
                  order of this table, stage by stage
  says            the function that writes a finding's sentence from its facts
  category        the category it decides when found, or None (the wait-for chain decides)
  decides         "always": it decides the category wherever the chain ends; "weak-root": only
                  over a root that explains nothing itself (sleeping, polling, computing,
                  retrying); "summary": it decides no category and no confidence, it only gives
                  the summary its form (a stale lock file, a prompt nobody answers, a stopped
                  process); "qualifies": its clause joins a verdict of its category (a binding
                  limit, a neighbour, what the GPU did); "context": evidence around a verdict
  rests_on        what a verdict that it decides may rest on (confidence.py):
                    "closed"    a closed cycle or a kernel fact: a deadlock, a lock held by a
                                thread that no longer exists, a pipe its reader does not drain
                    "inferred"  a pattern of stacks and waits that names who should end the wait
                    "unnamed"   nobody is seen who could end the wait, and the finding cannot
                                say who should have: never above medium
                    "likely"    a guess from what surrounds the wait: never above medium
  blocks_progress the job cannot move while it holds (it cannot resolve by itself)
  leads_summary   its sentence gives the verdict's summary when it is the first found that does
  headline        how the summary reads it: None (the category's words, then its sentence), or a
                  function (g, finding, head) -> summary
  clause          (qualifiers) the words it adds to the summary, when not its whole sentence;
                  False: it adds none
  evidence_line   its sentence is also a line of the verdict's evidence
  only_with_category  it is reported only under a verdict of its category (what a GPU did
                  means something only for the wait the verdict names)
  stage           "scene" (after the walk) or "progress" (it reads the progress record)
  settle          below high: what would settle it, said to the reader
  report_facts    facts copied into the report's record of a finding, beside kind and summary
  root_only       (summary forms) its sentence says what the root does, not how the job reaches it:
                  under a collective whose missing rank it describes, the collective leads
  filed_under     (g, walk, finding) -> the category of the chain's first wait where it is not the
                  row's own (first_wait.py: a pipe mechanism reached by a parent waiting on its
                  child is the child's), or None
  contested       (category, why): a category readers file the same mechanism under as often as
                  the row's (a convention, not a fact the capture can settle): a verdict it
                  decides is said at medium, with that category as the alternative

The order of the rows is the one precedence: the category, the summary, the confidence and the
progress model each take the first row found that bears on them.  Nothing else orders mechanisms.
"""
from typing import Any, Callable, Optional, Tuple

from ...records import typed_record
from .. import collectives
from .. import detectors as found
from .. import first_wait
from .. import formatter as say
from .. import gpu
from .. import objects
from .. import polls
from .. import resources
from .. import settings
from .. import summaries
from .. import terminal
from .names import M


@typed_record(frozen=True)
class Mechanism:
    kind: M
    detect: Callable
    says: Callable
    category: Any = None
    decides: str = "always"
    rests_on: str = "context"
    blocks_progress: bool = False
    leads_summary: bool = False
    headline: Optional[Callable] = None
    clause: Any = None
    evidence_line: bool = False
    only_with_category: bool = False
    stage: str = "scene"
    settle: Tuple[str, ...] = ()
    report_facts: Tuple[str, ...] = ()
    root_only: bool = False
    filed_under: Optional[Callable] = None
    contested: Optional[Tuple[str, str]] = None


LONGER = "a longer window (--duration 30 or more)"


def _decides(kind, detect, says, **kw):
    return Mechanism(kind, detect, says, **kw)


def _summary(kind, detect, says, **kw):
    return Mechanism(kind, detect, says, decides="summary", leads_summary=True, **kw)


def _qualifies(kind, detect, says, **kw):
    return Mechanism(kind, detect, says, decides="qualifies", **kw)


def _context(kind, detect, says, **kw):
    return Mechanism(kind, detect, says, decides="context", **kw)


# Rows that decide a verdict (its category, its summary, "no progress"), in PRECEDENCE order.
_DECIDING = (
    # a reader that does not drain the pipe a step of the chain writes: the pipe is the cause,
    # whatever the reader waits on (the writer itself, when it joins it)
    _decides(M.UNDRAINED_PIPE, found.from_walk(M.UNDRAINED_PIPE), summaries.undrained_pipe, category="io",
             rests_on="closed", blocks_progress=True, leads_summary=True, headline=summaries.undrained_pipe_headline,
             filed_under=first_wait.undrained),
    _decides(M.DEADLOCK, found.from_walk(M.DEADLOCK), say.cycle, category="locks", rests_on="closed",
             blocks_progress=True, leads_summary=True, headline=summaries.capitalized, filed_under=first_wait.pipe_cycle),
    # the input a step of the chain reads comes through a pipe whose writing end a process holds
    # and never writes: that process is the cause, whatever its own threads do
    _decides(M.UNFED_PIPE, found.from_walk(M.UNFED_PIPE), summaries.unfed_pipe, category="io",
             rests_on="closed", blocks_progress=True, leads_summary=True, headline=summaries.unfed_pipe_headline,
             filed_under=first_wait.unfed),
    # the forms the chain's end gives the summary by itself (category and confidence: the chain's)
    _summary(M.EVENT_LOOP_BLOCKED, found.on_root(found.event_loop_blocked), say.event_loop_blocked,
             headline=summaries.event_loop_blocked),
    _summary(M.STALE_LOCK_FILE, found.shared(summaries.file_wait), summaries.stale_lock_file,
             headline=summaries.whole, root_only=True),
    _summary(M.LOCK_FILE, found.shared(summaries.file_wait), summaries.lock_file, headline=summaries.whole,
             root_only=True),
    _summary(M.FILE_NEVER_WRITTEN, found.shared(summaries.file_wait), summaries.file_never_written,
             headline=summaries.whole, root_only=True),
    _summary(M.FILE_WAIT, found.shared(summaries.file_wait), summaries.file_wait_text, headline=summaries.whole,
             root_only=True),
    _summary(M.TERMINAL_INPUT, found.on_scene(summaries.terminal_input), summaries.terminal_input_text,
             headline=summaries.terminal_headline, root_only=True),
    _summary(M.PROMPT, found.on_scene(summaries.prompt), summaries.prompt_text, headline=summaries.prompt_headline,
             root_only=True),
    # a stopped job whose group's thread is caught in a call on its terminal: job control stopped it
    # for that call (a kernel fact), whatever the stopped threads were doing
    _decides(M.TERMINAL_STOP, found.on_scene(terminal.stopped_by_terminal), terminal.text, category="io",
             rests_on="closed", blocks_progress=True, leads_summary=True, headline=summaries.capitalized),
    _summary(M.HALTED, found.on_scene(summaries.halted), summaries.halted_text),
    _decides(M.CONNECTION_STALL, found.from_walk(M.CONNECTION_STALL), say.cycle, category="network",
             rests_on="closed", blocks_progress=True),
    _decides(M.LOCK_HELD_AT_FORK, found.from_walk(M.LOCK_HELD_AT_FORK), say.held_at_fork, category="locks",
             rests_on="closed", blocks_progress=True, leads_summary=True),
    _decides(M.LOST_TASK, found.from_walk(M.LOST_TASK), say.lost_task, category="subprocess", rests_on="closed",
             blocks_progress=True, leads_summary=True),
    # the pool's own thread that completes results is gone (every thread's stack read): a wait in the
    # parent, nothing to do with the workers, which are idle
    _decides(M.POOL_RESULTS_UNDELIVERED, found.from_walk(M.POOL_RESULTS_UNDELIVERED), say.pool_results_undelivered,
             category="locks", rests_on="inferred", blocks_progress=True, leads_summary=True),
    _decides(M.POOL_WORKERS_DYING, found.from_walk(M.POOL_WORKERS_DYING), say.pool_workers_dying,
             category="subprocess", rests_on="inferred", blocks_progress=True, leads_summary=True),
    _decides(M.LOST_BATCH, found.from_walk(M.LOST_BATCH), say.lost_batch, category="subprocess",
             rests_on="closed", blocks_progress=True, leads_summary=True),
    # a wait on a queue, lock or event whose only waker was a process that exited: two blind writers
    # filed it one under the child that died (decoupled_ckpt_dead), one under the object waited on
    # (joinable_queue_dead_worker)
    _decides(M.WAKER_EXITED, found.from_walk(M.WAKER_EXITED), say.waker_exited, category="subprocess",
             rests_on="closed", blocks_progress=True, leads_summary=True,
             contested=("locks", "a wait whose only waker was a process that exited is read as well as a wait on "
                                 "the object (the queue, lock or event) as one on the child that died")),
    _decides(M.BARRIER_INCOMPLETE, found.on_root(found.barrier_incomplete), say.barrier_incomplete,
             rests_on="closed", blocks_progress=True, leads_summary=True),
    _decides(M.POOL_EMPTY, found.from_walk(M.POOL_EMPTY), say.pool_empty, category="subprocess",
             rests_on="closed", blocks_progress=True, leads_summary=True),
    # why the GPU waits: the host thread that feeds it stands in a sink (a sync, the allocator,
    # anomaly detection, an autotuner; knowledge/gpu_sinks.py) in a third of its samples or more
    _decides(M.GPU_AUTOTUNING, found.shared(gpu.gpu_sinks), gpu.gpu_sink_text, category="compilation",
             decides="weak-root", rests_on="inferred", leads_summary=True),
    _decides(M.GPU_WAITS_ON_HOST, found.shared(gpu.gpu_sinks), gpu.gpu_sink_text, category="cuda",
             decides="weak-root", rests_on="inferred", leads_summary=True),
    # a GPU's memory held outside the job, by a job that fails to get it: its retries are explained
    _decides(M.GPU_MEMORY_HELD, found.on_root(resources.gpu_memory), resources.gpu_memory_held_text,
             category="cuda", decides="weak-root", rests_on="closed", blocks_progress=True, leads_summary=True),
    # a file lock is held whatever its holder does (a holder that sleeps in a loop catching an
    # exception is not the job's retry loop): before retry-loop
    _decides(M.FILE_LOCK, found.from_walk(M.FILE_LOCK), say.file_lock, category="locks", decides="weak-root",
             rests_on="closed", leads_summary=True, headline=summaries.file_lock),
    # a wait beside a thread that died on an exception its output shows: before the poll rows
    # and before orphaned-wait, which says only that no thread is left
    _decides(M.THREAD_DIED, found.on_scene(polls.thread_died_at_root), polls.thread_died_text, category="locks",
             decides="weak-root", rests_on="inferred", blocks_progress=True, leads_summary=True),
    # a poll loop beside a child that exited with a failure: the likely waker is dead (the loop's
    # own code does not say what it polls for)
    _decides(M.CHILD_EXITED, found.on_root(polls.child_exited), polls.child_exited_text, category="subprocess",
             decides="weak-root", rests_on="likely", blocks_progress=True, leads_summary=True,
             settle=("the job's output and the child's exit status: was the child the one to end the wait?",)),
    _decides(M.LOCK_POLL, found.on_root(polls.lock_poll), polls.lock_poll_text, category="locks",
             decides="weak-root", rests_on="likely", leads_summary=True,
             settle=("who holds the lock it polls: its lock file or service (ls -l, lsof)", LONGER)),
    # a flag polled by the only thread left: what the flag is about decides (a server's readiness
    # is the network); below a failing retry, a death the output shows and a lock poll
    _decides(M.FLAG_ORPHANED_NETWORK, found.on_root(polls.flag_orphaned), polls.flag_orphaned_text,
             category="network", decides="weak-root", rests_on="unnamed", blocks_progress=True, leads_summary=True,
             settle=("the job's stderr: the traceback of the server thread that ended",)),
    _decides(M.FLAG_ORPHANED, found.on_root(polls.flag_orphaned), polls.flag_orphaned_text, category="locks",
             decides="weak-root", rests_on="unnamed", blocks_progress=True, leads_summary=True,
             settle=("the job's stderr: the traceback of the thread that was to set the flag",)),
    # the same wait, its object read: its state (a barrier short of parties, a semaphore at 0, an
    # event not set, an RLock whose owner exited) says what keeps it waiting
    _decides(M.STUCK_OBJECT, found.on_scene(objects.stuck_object_found), say.stuck_object, rests_on="inferred",
             blocks_progress=True, leads_summary=True,
             settle=("the job's stderr: an 'Exception in thread' traceback names a thread that died",)),
    _decides(M.ORPHANED_WAIT, found.from_walk(M.ORPHANED_WAIT), say.orphaned_wait, rests_on="unnamed",
             blocks_progress=True, leads_summary=True,
             settle=("the job's stderr: an 'Exception in thread' traceback names the thread that died",
                     "--locals: the object waited on (its owner, its counters)")),
    _decides(M.POOL_DEADLOCK, found.from_walk(M.POOL_DEADLOCK), say.pool_deadlock, rests_on="inferred",
             blocks_progress=True, leads_summary=True, headline=summaries.capitalized),
    _decides(M.MISSED_TASK_DONE, found.from_walk(M.MISSED_TASK_DONE), say.missed_task_done, rests_on="inferred",
             blocks_progress=True, leads_summary=True),
    _decides(M.COLLECTIVE_MISMATCH, found.on_scene(found.collective_mismatch), say.collective_mismatch,
             rests_on="inferred", blocks_progress=True, leads_summary=True),
    # a job backing off between attempts of a failing call: filed under the call's resource, which
    # five blind writers chose, where five others chose sleep (wandb, tiledb, pepper, urllib3, a
    # Retry-After loop): the same mechanism, shown either way, is not said at high
    _decides(M.RETRY_LOOP, found.on_scene(found.retry_loop), say.retry_loop, blocks_progress=True,
             leads_summary=True, rests_on="inferred", report_facts=("failing",),
             contested=("sleep", "a loop that backs off between attempts is as often read as the job sleeping "
                                 "by design as waiting on the resource of the call it retries")),
    _decides(M.EVENT_LOOP_WAKEUP, found.shared(found.event_loop_waiting), say.event_loop_wakeup,
             rests_on="inferred", leads_summary=True),
    _decides(M.EVENT_LOOP_IDLE, found.shared(found.event_loop_waiting), say.event_loop_idle,
             rests_on="inferred", leads_summary=True),
    # threads stuck on locks with each other, none known to hold what another wants: a guess
    _decides(M.LIKELY_DEADLOCK, found.from_walk(M.LIKELY_DEADLOCK), say.likely_deadlock, rests_on="likely",
             leads_summary=True, headline=summaries.capitalized,
             settle=("--locals: which lock object each thread waits on and who took it",
                     "a second inspection: a deadlock's threads wait at the same lines again")),
    # the forms left when no mechanism leads: the GIL's holder, a GPU straggler, the root's
    # kernel state (spinning, kept from a CPU, in an uninterruptible wait)
    _summary(M.GIL_HELD, found.on_scene(summaries.gil_held), summaries.gil_held_text),
    _summary(M.STRAGGLER, found.from_walk(M.STRAGGLER), say.straggler, headline=summaries.straggler),
    _summary(M.KERNEL_STATE, found.on_scene(summaries.kernel_state), summaries.kernel_state_text),
)

# Limits and neighbours: the why of a verdict of their category (resources.py), in the order the
# summary names them.
_QUALIFYING = (
    # What the GPUs of the chain's ends did (gpu.detect): at most one applies to a category, and
    # it comes first in the summary
    _qualifies(M.HUNG_KERNEL, found.shared(gpu.detect), say.hung_kernel, category="cuda",
               clause=gpu.hung_kernel_clause, only_with_category=True),
    _qualifies(M.GPU_BOUND, found.shared(gpu.detect), say.gpu_bound, category="cuda", clause=gpu.gpu_bound_clause,
               only_with_category=True),
    _qualifies(M.GPU_BUSY_FLAG, found.shared(gpu.detect), gpu.gpu_busy_flag_text, category="cuda",
               only_with_category=True),
    _qualifies(M.COLLECTIVE_ON_GPU, found.shared(gpu.detect), say.collective_on_gpu, category="collective",
               clause=False, evidence_line=True, only_with_category=True),
    _qualifies(M.LAUNCH_BOUND, found.shared(gpu.detect), say.launch_bound, category="cpu",
               clause=gpu.launch_bound_clause, evidence_line=True, only_with_category=True),
    _qualifies(M.GPU_STARVED, found.shared(gpu.detect), say.gpu_starved, category=("io", "cpu", "locks"),
               clause=gpu.gpu_starved_clause, evidence_line=True, only_with_category=True),
    # What the ranks' Flight Recorders say (collectives.py): the rank behind, the collective it
    # never entered, a mismatch at one sequence id; and, when the job armed no way to read them,
    # what to set next time
    _qualifies(M.COLLECTIVE_RECORD_MISMATCH, found.on_scene(collectives.mismatch), collectives.gap_text,
               category="collective", clause=collectives.gap_clause, only_with_category=True, evidence_line=True,
               report_facts=("record",)),
    _qualifies(M.COLLECTIVE_BEHIND, found.on_scene(collectives.behind), collectives.gap_text,
               category="collective", clause=collectives.gap_clause, only_with_category=True, evidence_line=True,
               report_facts=("record",)),
    _qualifies(M.FLIGHT_RECORDER_OFF, found.on_scene(collectives.not_armed), collectives.not_armed_text,
               category="collective", clause=False, only_with_category=True, evidence_line=True,
               report_facts=("next_time",)),
    # Limits and neighbours (resources.py), at most two named
    # (category None: it qualifies a verdict of any category)
    _qualifies(M.FD_LIMIT, found.on_root(resources.fd_limit), resources.fd_limit_text),
    _qualifies(M.PIDS_LIMIT, found.on_root(resources.pids_limit), resources.pids_limit_text),
    _qualifies(M.CPU_LIMIT, found.on_root(resources.cpu_limit), resources.cpu_limit_text, category="cpu"),
    _qualifies(M.CPU_NEIGHBOUR, found.on_root(resources.cpu_contention), resources.cpu_neighbour_text,
               category="cpu"),
    _qualifies(M.CPU_OVERSUBSCRIBED, found.on_root(resources.cpu_contention), resources.cpu_oversubscribed_text,
               category="cpu"),
    _qualifies(M.IO_THROTTLED, found.on_root(resources.io), resources.io_throttled_text, category="io"),
    _qualifies(M.MEMORY_LIMIT, found.on_root(resources.memory), resources.memory_limit_text, category="io"),
    _qualifies(M.DISK_NEIGHBOUR, found.on_root(resources.io), resources.disk_neighbour_text, category="io"),
    _qualifies(M.GPU_NEIGHBOUR, found.on_root(resources.gpu_neighbour), resources.gpu_neighbour_text,
               category="cuda"),
    _qualifies(M.PCIE_BOUND, found.on_root(resources.pcie), resources.pcie_bound_text, category="cuda"),
    # The job's configuration (settings.py): a knob named only beside the signal it explains
    _qualifies(M.LAUNCH_BLOCKING, found.on_scene(settings.launch_blocking), settings.launch_blocking_text,
               category=("cuda", "cpu"), only_with_category=True, evidence_line=True),
    _qualifies(M.BLOCKING_WAIT, found.on_scene(settings.blocking_wait), settings.blocking_wait_text,
               category="collective", only_with_category=True, evidence_line=True),
    _qualifies(M.NO_COLLECTIVE_TIMEOUT, found.on_scene(settings.no_collective_timeout),
               settings.no_collective_timeout_text, category="collective", only_with_category=True, evidence_line=True),
    _qualifies(M.THREADS_OVERSUBSCRIBED, found.on_scene(settings.threads_oversubscribed),
               settings.threads_oversubscribed_text, category="cpu", only_with_category=True),
    _qualifies(M.DEBUG_MODE, found.on_scene(settings.debug_mode), settings.debug_mode_text,
               category=("cpu", "compilation", "cuda"), only_with_category=True),
    _qualifies(M.COMPILE_SETTINGS, found.on_scene(settings.compile_settings), settings.compile_settings_text,
               category="compilation", only_with_category=True),
)

# Findings that explain a verdict without deciding it: the evidence a reader asks for.
_CONTEXT = (
    # a silent healthy run is the first thing to say of it
    _context(M.SILENT_OUTPUT, found.silent_output, say.silent_output, stage="progress",
             report_facts=("unchanged_s", "stdio")),
    _context(M.LOCK_HOLDER, found.from_walk(M.LOCK_HOLDER), say.lock_holder),
    _context(M.PEER_NOT_SERVING, found.from_walk(M.PEER_NOT_SERVING), say.peer_not_serving),
    _context(M.COMPILER_BUSY, found.from_walk(M.COMPILER_BUSY), say.compiler_busy),
    _context(M.WAKER_UNSEEN, found.shared(found.unseen_wakers), say.waker_unseen),
    _context(M.MOUNT, found.shared(found.unseen_wakers), say.mount),
    _context(M.DATALOADER_STARVED, found.on_scene(found.dataloader_starved), say.dataloader_starved,
             evidence_line=True),
    _context(M.COMPILE_TIME, found.on_scene(found.compile_time), say.compiling, evidence_line=True),
    _context(M.MISSING_RANKS, found.on_scene(found.missing_ranks), say.missing_ranks),
    _context(M.UNNUMBERED_RANKS, found.on_scene(found.unnumbered_ranks), say.unnumbered_ranks),
    _context(M.XID, found.on_scene(found.xid), say.xid),
    _context(M.ECC, found.on_scene(found.ecc), say.ecc),
    _context(M.GPU_THROTTLED, found.on_scene(found.gpu_throttled), say.gpu_throttled),
    _context(M.SKIPPED_CHILDREN, found.on_scene(found.skipped_children), say.skipped_children),
    _context(M.PROCESS_EXITED, found.on_scene(found.process_exited), say.exited),
    _context(M.NO_PYTHON_STACKS, found.on_scene(found.no_python_stacks), say.no_python_stacks),
    _context(M.COMPILE_WORKERS, found.on_scene(found.compile_workers), say.compile_workers),
    _context(M.COMPILER_PROCESSES, found.on_scene(found.compiler_processes), say.compiler_processes),
    _context(M.D_STATE, found.on_scene(found.d_state), say.d_state),
    _context(M.KNOBS_SET, found.on_scene(settings.knobs_set), settings.knobs_set_text),
    _context(M.COLLECTIVE_RECORD, found.on_scene(collectives.record), collectives.record_text),
)

MECHANISMS = _DECIDING + _QUALIFYING + _CONTEXT
BY_KIND = {m.kind: m for m in MECHANISMS}
PRECEDENCE = tuple(m.kind for m in _DECIDING)
STAGES = ("scene", "progress")

# Derived tables: what the category, the progress model and the summary read.
CATEGORY_OF = tuple((m.kind, m.category) for m in _DECIDING if m.category and m.decides == "always")
WEAK_ROOT_CATEGORY_OF = tuple((m.kind, m.category) for m in _DECIDING if m.category and m.decides == "weak-root")
BLOCKS_PROGRESS = frozenset(m.kind for m in MECHANISMS if m.blocks_progress)
QUALIFIERS = tuple((m.kind, m.category) for m in _QUALIFYING)
GPU_ROWS = frozenset(m.kind for m in _QUALIFYING if getattr(m.detect, "inner", None) is gpu.detect)


def row(finding):
    """The row of a finding (or of a mechanism's name)."""
    return BY_KIND[getattr(finding, "kind", finding)]


def closed(finding):
    """The finding (or mechanism) rests on a closed chain of facts: a verdict it decides needs
    nothing more (its waited objects, its share of the window) to stand.  False for None."""
    return finding is not None and row(finding).rests_on == "closed"


def applies(of, category):
    """A qualifier of category `of` (one, a tuple, or None: any) applies to a verdict of category."""
    return of is None or category == of or (isinstance(of, tuple) and category in of)


def first(findings, test):
    """The finding, of those found, whose row comes first in PRECEDENCE among the rows `test`
    accepts; None when there is none."""
    ranked = [f for f in findings if f.kind in PRECEDENCE and test(BY_KIND[f.kind])]
    return min(ranked, key=lambda f: PRECEDENCE.index(f.kind)) if ranked else None


def deciding(findings):
    """The mechanism a verdict rests on: the first found of the rows that decide one (a form of
    the summary decides nothing)."""
    return first(findings, lambda m: m.decides in ("always", "weak-root"))


def leading(findings):
    """The finding whose sentence gives the summary: the first found of the rows that lead it."""
    return first(findings, lambda m: m.leads_summary)


def kept(findings, category):
    """The findings a verdict of `category` reports: a row reported only under a verdict of its
    category is left out under another."""
    return [f for f in findings if not row(f).only_with_category or applies(row(f).category, category)]


def qualifiers_of(g, findings, category, most=2):
    """The clauses the summary of a verdict of `category` gets: what the GPU did, then at most
    `most` limits and neighbours, in the registry's order."""
    clauses = []
    for kind, of in QUALIFIERS:
        if not applies(of, category):
            continue
        item = next((f for f in findings if f.kind == kind), None)
        words = clause(g, item) if item is not None else None
        if words:
            clauses.append((kind, words))
    return [c for kind, c in clauses if kind in GPU_ROWS] + [c for kind, c in clauses if kind not in GPU_ROWS][:most]


def sentence(g, finding):
    """A finding's sentence, written by its row."""
    return row(finding).says(g, **finding.facts)


def clause(g, finding):
    """A qualifier's words in the summary: its clause, its sentence, or None (it adds none)."""
    mechanism = row(finding)
    if mechanism.clause is False:
        return None
    if mechanism.clause is not None:
        return mechanism.clause(g, **finding.facts)
    return sentence(g, finding)


def as_report(g, finding):
    """The report's record of a finding: {"kind", "summary", "pid", "tid"} (its clause, and the
    facts its row puts in the report, where it has them).  Written only when the report is."""
    mechanism = row(finding)
    out = {"kind": mechanism.kind.value, "summary": sentence(g, finding), "pid": finding.pid, "tid": finding.tid}
    if mechanism.clause is not None:
        out["clause"] = clause(g, finding)
    if finding.unknown:
        out["unknown"] = finding.unknown
    for name in mechanism.report_facts:
        value = finding.facts.get(name)
        out[name] = {str(k): v for k, v in value.items()} if isinstance(value, dict) else value
    return out
