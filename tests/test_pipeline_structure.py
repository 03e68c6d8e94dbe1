"""The diagnosis as a pipeline: what each step may depend on and do.

- diagnosis/ imports nothing of stalldiag but its own modules and knowledge/ (no probe, no /proc,
  no renderer): a capture in, a verdict out.
- Edge finders change no view and are the same whatever order asks: finding every thread's
  edges, in two orders, on every saved capture, gives the same edges and leaves the views as
  they were.
"""
import ast
import copy
from pathlib import Path

import pytest

from conftest import CAPTURES
from stalldiag.capture import load_report
from stalldiag.diagnosis import edges as edge_finders
from stalldiag.diagnosis.graph import WaitGraph

DIAGNOSIS = Path(__file__).resolve().parent.parent / "stalldiag" / "diagnosis"


def test_the_diagnosis_imports_only_itself_and_the_knowledge_tables():
    for path in sorted(DIAGNOSIS.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level >= 2:
                assert (node.module or "").startswith("knowledge"), "%s imports ..%s" % (path.name, node.module)
            if isinstance(node, ast.Import):
                assert not any(alias.name.startswith("stalldiag") for alias in node.names), path.name


def _views_state(g):
    return [copy.deepcopy({k: v for k, v in vars(view).items() if k != "state"}) for view in g.views]


def _edge_keys(edges):
    return [(e.kind, e.waker.pid if e.waker else None, e.waker.tid if e.waker else None, e.guess, e.process,
             [f.kind for f in e.findings]) for e in edges]


@pytest.mark.parametrize("path", sorted(CAPTURES.glob("*.json")), ids=lambda p: p.stem)
def test_edges_are_data_the_same_in_any_order_and_change_no_view(path):
    capture = load_report(str(path))
    forward, backward = WaitGraph(capture), WaitGraph(capture)
    before = _views_state(forward)
    found = {(v.pid, v.tid): _edge_keys(edge_finders.find(forward, v)) for v in forward.views}
    assert _views_state(forward) == before
    found_back = {(v.pid, v.tid): _edge_keys(edge_finders.find(backward, v)) for v in reversed(backward.views)}
    assert found == found_back
    for view in forward.views:
        for edge in edge_finders.find(forward, view):
            assert not any(isinstance(v, str) and len(v) > 80 for v in edge.facts.values()), edge.facts


def test_reports_and_renderers_read_the_diagnosis_through_its_public_api():
    """report.py, merge.py and render/ import stalldiag.diagnosis (the package), never its modules."""
    root = DIAGNOSIS.parent
    for path in [root / "report.py", root / "merge.py"] + sorted((root / "render").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and "diagnosis" in node.module:
                assert node.module.split(".")[-1] == "diagnosis", "%s imports %s" % (path.name, node.module)
