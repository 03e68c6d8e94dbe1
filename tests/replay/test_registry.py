"""The registry of mechanisms and the table of thread kinds, held against the code.

Each mechanism and each thread kind is declared once (diagnosis/registry/, diagnosis/kinds.py): a
mechanism named as a string outside the registry, a row without a detector or a sentence, a name
without a row, a kind a thread can take that the table lacks, or a precedence that no longer
decides, fails here.
"""
import ast
from pathlib import Path

import pytest

from stalldiag.capture import load_report
from stalldiag.diagnosis import blockers, category, graph, kinds, threads, views
from stalldiag.diagnosis import diagnose_record
from stalldiag.diagnosis import edges as edges_module
from stalldiag.diagnosis.category import decide_category
from stalldiag.diagnosis.graph import WaitGraph
from stalldiag.diagnosis.registry import M, table
from stalldiag.diagnosis.scene import Scene
from stalldiag.diagnosis.types import Finding
from stalldiag.diagnosis.walk import walk
from stalldiag.knowledge import syscalls

PACKAGE = Path(table.__file__).resolve().parent.parent.parent
CAPTURES = PACKAGE.parent / "fixtures" / "captures"
NAMES = {m.value for m in M}

# Where a mechanism's name may be written: the registry itself, and modules that read or write the
# capture's own vocabulary (probes name what they saw, never a mechanism; a syscall is called mount).
OWN_VOCABULARY = {"diagnosis/registry", "probes", "syscall_names.py", "capture.py", "session.py"}
# Strings of the capture's vocabulary that happen to be spelled like a mechanism, where they are read
CAPTURE_WORDS = {("diagnosis/graph.py", "lock-holder"),   # a process's role_hint (session.py writes it)
                 ("diagnosis/formatter.py", "xid")}       # an Xid event's field (probes/gpu.py writes it)


def _literals():
    """(module, string, line) of every string constant of the package spelled like a mechanism."""
    out = []
    for path in PACKAGE.rglob("*.py"):
        where = path.relative_to(PACKAGE).as_posix()
        if any(where == own or where.startswith(own + "/") for own in OWN_VOCABULARY):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and node.value in NAMES and (where, node.value) not in CAPTURE_WORDS:
                out.append((where, node.value, node.lineno))
    return out


def test_no_mechanism_is_named_as_a_string_outside_the_registry():
    assert not _literals(), "name mechanisms through registry.M: %s" % _literals()


def test_the_literal_check_finds_a_name_written_as_a_string(tmp_path, monkeypatch):
    """The check above can fail: a module that writes "deadlock" is found."""
    (tmp_path / "stalldiag").mkdir()
    (tmp_path / "stalldiag" / "bad.py").write_text('KIND = "deadlock"\n')
    monkeypatch.setattr(__import__(__name__), "PACKAGE", tmp_path / "stalldiag")
    assert _literals() == [("bad.py", "deadlock", 1)]


def test_every_name_has_one_row_with_a_detector_and_a_sentence():
    assert [m.kind for m in table.MECHANISMS] == list(dict.fromkeys(m.kind for m in table.MECHANISMS))
    assert set(table.BY_KIND) == set(M), sorted(set(M) - set(table.BY_KIND))
    for row in table.MECHANISMS:
        assert callable(row.detect) and callable(row.says), row.kind
        of = row.category if isinstance(row.category, tuple) else (row.category,)
        assert set(of) <= set(category.CATEGORIES + (None,)), row.kind
        assert not isinstance(row.category, tuple) or row.decides == "qualifies", row.kind
        assert row.decides in ("always", "weak-root", "summary", "qualifies", "context"), row.kind
        assert row.rests_on in ("closed", "inferred", "unnamed", "likely", "context"), row.kind
        assert row.stage in table.STAGES, row.kind
        # a row that decides a verdict says what it rests on; one that cannot name its waker says
        # what would settle it
        assert row.decides not in ("always", "weak-root") or row.rests_on != "context", row.kind
        assert row.rests_on not in ("likely", "unnamed") or row.settle, row.kind


def test_the_tables_of_category_progress_and_summary_are_the_registrys():
    assert blockers.table is table
    assert [k for k, _c in table.CATEGORY_OF] == [m.kind for m in table.MECHANISMS
                                                  if m.category and m.decides == "always"]


def test_every_kind_a_thread_can_take_is_in_the_table():
    producible = (set(syscalls.WAIT_KIND.values()) | set(syscalls.FD_KIND_OVERRIDES.values())
                  | {kind for _fragment, kind in syscalls.WCHAN_HINTS} | set(threads.FRAME_REFINES)
                  | {rule[0] for rule in threads.CONTEXT_RULES} | set(edges_module.FINDERS)) - {"fd"}
    assert producible <= set(kinds.BY_NAME), sorted(producible - set(kinds.BY_NAME))
    for kind in kinds.KINDS:
        assert kind.root in category.CATEGORIES, kind.name
    assert len(kinds.BY_NAME) == len(kinds.KINDS), "a thread kind declared twice"


def test_the_kind_tables_elsewhere_are_derived_from_the_one_table():
    assert category.ROOTS == {k.name: (k.root, k.decisive) for k in kinds.KINDS}
    assert set(views.ACTIVITY_RANK) == {k.name for k in kinds.KINDS if k.rank}
    assert set(threads.THREAD_WAIT_KINDS) == {k.name for k in kinds.KINDS if k.thread_wait}
    assert set(graph.SLEEPING_KINDS) == {k.name for k in kinds.KINDS if k.asleep}
    assert kinds.of("no such kind") is kinds.BY_NAME["unknown"]


# -- facts once: the graph's threads do not change after it is built ------------------------------

def test_a_thread_view_cannot_change_once_the_graph_is_built():
    g = WaitGraph(load_report(str(CAPTURES / "deadlock.json")))
    view = g.views[0]
    with pytest.raises(AttributeError):
        view.kind = "cpu"


def test_findings_stay_typed_until_the_report_and_keep_their_own_kind():
    record = diagnose_record(load_report(str(CAPTURES / "deadlock.json")))
    assert record.findings and all(isinstance(f, Finding) and f.kind in M for f in record.findings)
    assert record.decision.mechanism.kind is M.DEADLOCK
    assert record.as_dict()["verdict"]["mechanism"] == "deadlock"


# -- precedence: where two deciding mechanisms are found, the registry's order decides ---------

def _scene(name):
    g = WaitGraph(load_report(str(CAPTURES / (name + ".json"))))
    return Scene(g, walk(g, g.focus_thread()))


def _found(*kinds_found):
    return [Finding.about(kind, pid=1) for kind in kinds_found]


PAIRS = [(a, b) for i, (a, _ca) in enumerate(table.CATEGORY_OF) for (b, _cb) in table.CATEGORY_OF[i + 1:]]


@pytest.mark.parametrize("first,second", PAIRS, ids=["%s>%s" % p for p in PAIRS])
def test_precedence_between_mechanisms_that_decide_the_category(first, second):
    scene = _scene("deadlock")
    want = table.BY_KIND[first].category
    for order in ((second, first), (first, second)):
        decision = decide_category(scene, _found(*order))
        assert (decision.category, decision.through) == (want, None)
        assert decision.mechanism.kind == first


WEAK = [(a, b) for i, (a, _ca) in enumerate(table.WEAK_ROOT_CATEGORY_OF)
        for (b, _cb) in table.WEAK_ROOT_CATEGORY_OF[i + 1:]]


@pytest.mark.parametrize("first,second", WEAK, ids=["%s>%s" % p for p in WEAK])
def test_precedence_between_mechanisms_that_decide_over_a_weak_root(first, second):
    scene = _scene("sleep_loop")   # the chain ends at a thread that only sleeps
    assert decide_category(scene, _found(second, first)).category == table.BY_KIND[first].category


@pytest.mark.parametrize("weak", [kind for kind, _c in table.WEAK_ROOT_CATEGORY_OF])
def test_a_mechanism_that_always_decides_wins_over_one_that_decides_over_a_weak_root(weak):
    always, want = table.CATEGORY_OF[0]
    assert decide_category(_scene("sleep_loop"), _found(weak, always)).category == want


@pytest.mark.parametrize("weak", [kind for kind, _c in table.WEAK_ROOT_CATEGORY_OF])
def test_a_root_that_explains_itself_is_not_overruled_by_a_weak_root_mechanism(weak):
    assert decide_category(_scene("dataloader_slow_io"), _found(weak)).category == "io"


def test_a_file_lock_decides_over_a_root_that_only_retries():
    """A lock file's holder that sleeps in a loop catching an exception holds the lock: locks,
    not the retry's category (it was 'Sleeping (idle by design)')."""
    scene = _scene("flock_held_outside")
    root = scene.walk.root
    scene.g._retries[(root.pid, root.tid)] = {"category": "sleep", "failing": False}
    assert category.root_kind(scene.g, root) == "retry"
    assert decide_category(scene, _found(M.FILE_LOCK)).category == "locks"
    assert decide_category(scene, []).category == "sleep"


@pytest.mark.parametrize("guess,proof", [(M.LIKELY_DEADLOCK, M.DEADLOCK), (M.POOL_DEADLOCK, M.DEADLOCK),
                                         (M.MISSED_TASK_DONE, M.ORPHANED_WAIT)])
def test_a_guess_keeps_its_own_kind_and_precedence(guess, proof):
    """A likely deadlock is not a closed cycle: it keeps its row (what it decides, what it rests on)."""
    scene = _scene("deadlock")
    decision = decide_category(scene, _found(guess))
    assert decision.mechanism.kind is guess
    assert table.row(decision.mechanism).rests_on != "closed"
    assert decide_category(scene, _found(guess, proof)).mechanism.kind is min(
        (guess, proof), key=table.PRECEDENCE.index)


def test_the_summary_leads_with_the_row_first_in_precedence():
    leading = [m.kind for m in table.MECHANISMS if m.leads_summary]
    assert table.leading(_found(*reversed(leading))).kind == leading[0]
    for i, kind in enumerate(leading[:-1]):
        assert table.leading(_found(leading[i + 1], kind)).kind == kind


# -- confidence: from what the decision rests on -------------------------------------------------

def _verdict(name):
    from stalldiag.report import build_report
    return build_report(load_report(str(CAPTURES / (name + ".json"))))["verdict"]


@pytest.mark.parametrize("name", ["deadlock", "flock_held_outside", "dataloader_slow_io", "gpu_ddp_stopped_rank",
                                  "runaway_regex"])
def test_a_closed_chain_or_an_explained_root_is_high(name):
    verdict = _verdict(name)
    assert verdict["confidence"] == "high", verdict.get("confidence_rests_on")
    assert "alternatives" not in verdict


@pytest.mark.parametrize("name", ["sleep_loop", "cpu_loop", "mp_connection", "thread_join"])
def test_a_root_that_only_sleeps_or_computes_is_not_high_and_says_what_would_settle_it(name):
    verdict = _verdict(name)
    assert verdict["confidence"] == "medium", verdict.get("confidence_rests_on")
    assert verdict["alternatives"] and verdict["to_settle"], verdict


@pytest.mark.parametrize("name", ["repro_wsclient_ready_never_set", "repro_tpe_sigterm_shutdown"])
def test_a_wait_whose_waker_is_not_named_is_never_high_and_says_what_it_does_not_know(name):
    verdict = _verdict(name)
    assert verdict["mechanism"] == "orphaned-wait"
    assert verdict["confidence"] == "medium" and verdict["unknown"] and verdict["to_settle"], verdict


@pytest.mark.parametrize("name, mechanism, other", [
    ("repro_http500_retry", "retry-loop", "sleep"), ("repro_ray_spill_enospc", "retry-loop", "sleep"),
    ("retry_connect_refused_exact", "retry-loop", "sleep"), ("repro_decoupled_ckpt_dead", "waker-exited", "locks")])
def test_a_mechanism_whose_category_readers_contest_is_said_at_medium_with_the_other(name, mechanism, other):
    # a back-off loop around a failing call: its resource's category, or the job sleeping by design;
    # a wait whose waker exited: the child that died, or the object waited on
    verdict = _verdict(name)
    assert verdict["mechanism"] == mechanism and verdict["category"] != other
    assert verdict["confidence"] == "medium", verdict.get("confidence_rests_on")
    assert any(a.startswith(other + ":") for a in verdict["alternatives"]), verdict["alternatives"]


def test_a_contested_row_names_a_category_and_why():
    contested = [row for row in table.MECHANISMS if row.contested is not None]
    assert contested
    for row in contested:
        if row.contested is not None:
            other, why = row.contested
            assert other in kinds.SUMMARY and other != row.category and why


def test_idle_by_design_in_a_job_that_shows_no_progress_is_not_high():
    verdict = _verdict("event_loop_idle_server")
    assert verdict["category"] == "sleep" and verdict["progress"]["state"] != "making progress"
    assert verdict["confidence"] == "medium" and verdict["unknown"]


def test_cause_not_determined_is_never_high():
    from stalldiag.diagnosis import confidence
    from stalldiag.diagnosis.category import Decision
    from stalldiag.diagnosis.progress import Progress
    scene = _scene("deadlock")
    decision = Decision("unknown", None, scene.root, "unknown", None, None, "unknown")
    sure = confidence.assess(scene, [], decision, Progress("no progress seen"))
    assert sure.level == "low" and sure.to_settle


def test_a_gpu_row_is_reported_only_under_a_verdict_of_its_category():
    # what the GPU did is found before the category is decided (gpu.detect), and kept where it
    # means something: a busy flag over a hung kernel under a cuda wait, not under a collective
    found = _found(M.HUNG_KERNEL, M.LAUNCH_BOUND, M.GPU_STARVED, M.FD_LIMIT)
    kept = lambda c: [f.kind for f in table.kept(found, c)]
    assert kept("cuda") == [M.HUNG_KERNEL, M.FD_LIMIT]
    assert kept("cpu") == [M.LAUNCH_BOUND, M.GPU_STARVED, M.FD_LIMIT]
    assert kept("collective") == [M.FD_LIMIT]


def test_the_summary_names_the_gpu_first_and_two_limits_at_most():
    class Gpu:
        index, sm = 0, 3.0
    scene = _scene("deadlock")
    found = [Finding.about(M.CPU_LIMIT, pid=1, waiter=scene.root, allowed=[0], host_cpus=8, how="affinity",
                           others={}),
             Finding.about(M.FD_LIMIT, pid=1, full=[]), Finding.about(M.LAUNCH_BOUND, pid=1, host=scene.root, gpu=Gpu())]
    clauses = table.qualifiers_of(scene.g, found, "cpu")
    assert clauses[0] == "launch-bound: GPU 0 SM 3.0%" and len(clauses) == 3


def test_a_thread_a_blocking_verdict_says_waits_moved_when_it_moved_data_or_ran():
    from collections import Counter
    from stalldiag.diagnosis.confidence import _ran
    from stalldiag.diagnosis.state import ThreadState
    g = WaitGraph(load_report(str(CAPTURES / "deadlock.json")))

    class View:
        kind, share, n_samples, n_framed_samples, stacks, top_stack, pid = "lock", 0.9, 50, 0, [], [], g.root_pid
        thread = type("T", (), {"ctx": {}})()

        def __init__(self, activity, cpu=0.0, progressing=False):
            self.activity = Counter(activity)
            self.state = ThreadState("blocked", "", {"cpu_share": cpu}, progressing=progressing)

        def main_activity(self):
            label, n = self.activity.most_common(1)[0]
            return label, n / self.n_samples
    assert not _ran(g, View({"futex": 50}))
    assert _ran(g, View({"futex": 45, "write": 3, "sendto": 2}))         # it wrote between its waits
    assert not _ran(g, View({"read": 48, "futex": 2}))                   # its one wait is a read
    moving = View({"futex": 30, "running": 20}, cpu=0.4, progressing=True)
    moving.share = 0.6
    assert _ran(g, moving)
