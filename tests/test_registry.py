"""The registry of mechanisms and the table of thread kinds, held against the code.

Each mechanism and each thread kind is declared once (diagnosis/registry.py, diagnosis/kinds.py):
a finding the code says that the registry lacks, a row nothing produces, a kind a thread can
take that the table lacks, or a precedence that no longer decides, fails here.
"""
import importlib
import inspect
import re
from pathlib import Path

import pytest

from stalldiag.capture import load_report
from stalldiag.diagnosis import category, graph, kinds, progress, registry, threads, verdict, views
from stalldiag.diagnosis import edges as edges_module
from stalldiag.diagnosis.graph import WaitGraph
from stalldiag.diagnosis.walk import walk
from stalldiag.knowledge import syscalls

DIAGNOSIS = Path(registry.__file__).parent
CAPTURES = Path(__file__).resolve().parent.parent / "fixtures" / "captures"
SAID = re.compile(r'(?:Finding\.about\(|say\(d, )"([a-z-]+)"')


def said_in_code():
    """finding kind -> modules whose code says it."""
    out = {}
    for path in DIAGNOSIS.glob("*.py"):
        for kind in SAID.findall(path.read_text()):
            out.setdefault(kind, set()).add(path.stem)
    return out


def test_every_finding_the_code_says_is_a_registry_row():
    missing = sorted(set(said_in_code()) - set(registry.BY_KIND))
    assert not missing, "findings said in the code with no registry row: %s" % missing


def test_every_row_is_found_by_the_detector_it_names():
    said = said_in_code()
    for row in registry.MECHANISMS:
        module_name, function = row.found_by.split(".")
        module = importlib.import_module("stalldiag.diagnosis." + module_name)
        assert callable(getattr(module, function, None)), "%s: no %s" % (row.kind, row.found_by)
        if row.kind in ("undrained-pipe", "retry-loop", "silent-output"):
            continue   # said by the pipeline from the detector's answer (diagnosis/__init__.py)
        assert module_name in said.get(row.kind, ()) or '"%s"' % row.kind in inspect.getsource(module), \
            "%s is not found in %s.py" % (row.kind, module_name)


def test_each_row_has_a_sentence_and_a_known_category():
    for row in registry.MECHANISMS:
        assert row.kind == "undrained-pipe" or callable(row.says), row.kind
        of = row.category if isinstance(row.category, tuple) else (row.category,)
        assert set(of) <= set(category.CATEGORIES + (None,)), row.kind
        assert not isinstance(row.category, tuple) or row.decides == "qualifies", row.kind
        assert row.decides in ("always", "weak-root", "qualifies") and row.rests_on in ("closed", "inferred", "likely", "context")
    assert len(registry.BY_KIND) == len(registry.MECHANISMS), "a mechanism declared twice"


def test_the_tables_of_category_progress_and_summary_are_the_registrys():
    assert progress.BLOCKS_PROGRESS is registry.BLOCKS_PROGRESS
    assert category.CATEGORY_OF is registry.CATEGORY_OF
    assert verdict.LEADS_SUMMARY is registry.LEADS_SUMMARY
    # no module of the pipeline keeps a list of mechanisms of its own (a tuple, list or dict
    # literal naming two or more of them): that is how the lists came to disagree
    literal = re.compile(r"[(\[{][^()\[\]{}]*[)\]}]", re.S)
    mechanisms = set(registry.BY_KIND) - {"file-lock"}   # also an edge kind (edges.py), named as such
    for path in DIAGNOSIS.glob("*.py"):
        if path.stem in ("registry", "formatter"):
            continue
        for group in literal.findall(path.read_text()):
            named = set(re.findall(r'"([a-z-]+)"', group)) & mechanisms
            assert len(named) < 2, "%s.py keeps its own list of mechanisms: %s" % (path.stem, sorted(named))


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


# -- precedence: where two deciding mechanisms are found, the registry's order decides ---------

def _graph_and_walk(name):
    d = WaitGraph(load_report(str(CAPTURES / (name + ".json"))))
    d.walk = walk(d, d.focus_thread())
    return d


PAIRS = [(a, b) for i, (a, _ca) in enumerate(registry.CATEGORY_OF) for (b, _cb) in registry.CATEGORY_OF[i + 1:]]


@pytest.mark.parametrize("first,second", PAIRS, ids=["%s>%s" % p for p in PAIRS])
def test_precedence_between_mechanisms_that_decide_the_category(first, second):
    d = _graph_and_walk("deadlock")
    want = registry.BY_KIND[first].category
    assert category.categorize(d, d.walk, [second, first]) == (want, None)
    assert category.categorize(d, d.walk, [first, second]) == (want, None)


WEAK = [(a, b) for i, (a, _ca) in enumerate(registry.WEAK_ROOT_CATEGORY_OF)
        for (b, _cb) in registry.WEAK_ROOT_CATEGORY_OF[i + 1:]]


@pytest.mark.parametrize("first,second", WEAK, ids=["%s>%s" % p for p in WEAK])
def test_precedence_between_mechanisms_that_decide_over_a_weak_root(first, second):
    d = _graph_and_walk("sleep_loop")   # the chain ends at a thread that only sleeps
    assert category.categorize(d, d.walk, [second, first]) == (registry.BY_KIND[first].category, None)


@pytest.mark.parametrize("weak", [kind for kind, _c in registry.WEAK_ROOT_CATEGORY_OF])
def test_a_mechanism_that_always_decides_wins_over_one_that_decides_over_a_weak_root(weak):
    d = _graph_and_walk("sleep_loop")
    always, want = registry.CATEGORY_OF[0]
    assert category.categorize(d, d.walk, [weak, always]) == (want, None)


@pytest.mark.parametrize("weak", [kind for kind, _c in registry.WEAK_ROOT_CATEGORY_OF])
def test_a_root_that_explains_itself_is_not_overruled_by_a_weak_root_mechanism(weak):
    d = _graph_and_walk("dataloader_slow_io")   # the chain ends in storage I/O
    assert category.categorize(d, d.walk, [weak])[0] == "io"


def test_a_file_lock_decides_over_a_root_that_only_retries():
    """A lock file's holder that sleeps in a loop catching an exception holds the lock: locks,
    not the retry's category (it was 'Sleeping (idle by design)')."""
    d = _graph_and_walk("flock_held_outside")
    root = d.walk.chain[-1]
    d._retries[(root.pid, root.tid)] = {"category": "sleep", "failing": False}
    assert category.root_kind(d, root) == "retry"
    assert category.categorize(d, d.walk, ["file-lock"])[0] == "locks"
    assert category.categorize(d, d.walk, [])[0] == "sleep"


def test_the_summary_leads_with_the_mechanism_first_in_precedence():
    findings = [{"kind": kind, "summary": kind} for kind in reversed(registry.LEADS_SUMMARY)]
    assert registry.finding_of(findings, registry.LEADS_SUMMARY)["kind"] == registry.LEADS_SUMMARY[0]
    for i, kind in enumerate(registry.LEADS_SUMMARY[:-1]):
        later = registry.LEADS_SUMMARY[i + 1]
        pair = [{"kind": later, "summary": later}, {"kind": kind, "summary": kind}]
        assert registry.finding_of(pair, registry.LEADS_SUMMARY)["kind"] == kind


# -- confidence: from the evidence ----------------------------------------------------------------

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


def test_cause_not_determined_is_never_high():
    from stalldiag.diagnosis import confidence

    class View:
        share, n_samples, n_stack_samples, state, label = 1.0, 50, 50, None, "t"
    d = _graph_and_walk("deadlock")
    sure = confidence.assess(d, View(), View(), "unknown", {"state": "no progress seen"})
    assert sure["level"] == "low" and sure["to_settle"]


def test_a_gpu_row_is_reported_only_under_a_verdict_of_its_category():
    # what the GPU did is found before the category is decided (gpu.detect), and kept where it
    # means something: a busy flag over a hung kernel under a cuda wait, not under a collective
    from stalldiag.diagnosis.types import Finding
    found = [Finding.about(kind, pid=1) for kind in ("hung-kernel", "launch-bound", "gpu-starved", "fd-limit")]
    kept = lambda c: [f.kind for f in registry.with_category(found, c)]
    assert kept("cuda") == ["hung-kernel", "fd-limit"]
    assert kept("cpu") == ["launch-bound", "gpu-starved", "fd-limit"]
    assert kept("collective") == ["fd-limit"]
    clauses = registry.qualifiers_of([{"kind": "cpu-limit", "summary": "limit"}, {"kind": "fd-limit", "summary": "fds"},
                                      {"kind": "cpu-neighbour", "summary": "neighbour"},
                                      {"kind": "launch-bound", "summary": "long", "clause": "launch-bound: GPU 0"}], "cpu")
    assert clauses == ["launch-bound: GPU 0", "fds", "limit"]   # the GPU's first; two limits at most
