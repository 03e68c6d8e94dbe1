"""The diagnosis as a pipeline: what each step may depend on and do.

- diagnosis/ imports nothing of stalldiag but its own modules, knowledge/ and the records
  decorator (no probe, no /proc, no renderer): a capture in, a verdict out.
- Edge finders change no view and are the same whatever order asks: finding every thread's
  edges, in two orders, on every saved capture, gives the same edges and leaves the views as
  they were.
"""
import ast
import copy

import pytest

from helpers import CAPTURES, ROOT
from stalldiag.capture import load_report
from stalldiag.diagnosis import edges as edge_finders
from stalldiag.diagnosis.graph import WaitGraph

DIAGNOSIS = ROOT / "stalldiag" / "diagnosis"


def test_the_diagnosis_imports_only_itself_the_knowledge_tables_and_the_vocabulary():
    for path in sorted(DIAGNOSIS.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level >= 2:
                assert (node.module or "").startswith(("knowledge", "records", "vocab")), "%s imports ..%s" % (
                    path.name, node.module)
            if isinstance(node, ast.Import):
                assert not any(alias.name.startswith("stalldiag") for alias in node.names), path.name


def test_no_probe_runs_the_diagnosis():
    # (a probe that wants the chain's processes asks Context.provisional_chain: the session made it)
    for path in sorted((ROOT / "stalldiag" / "probes").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                assert not (node.module or "").startswith("diagnosis") and "diagnosis" not in (node.module or ""), \
                    "%s imports %s" % (path.name, node.module)


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


def test_renderers_read_only_the_report():
    """render/ formats what the report holds (its sample classes, its GPU table): it imports
    nothing of the diagnosis, so a renderer cannot classify or diagnose again."""
    for path in sorted((DIAGNOSIS.parent / "render").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                assert "diagnosis" not in (node.module or ""), "%s imports %s" % (path.name, node.module)
                assert not (node.level == 2 and node.module is None and
                            any(a.name == "diagnosis" for a in node.names)), path.name


def _imports_of_package():
    """module -> stalldiag modules it imports, at any depth (a lazy import inside a function counts)."""
    package = DIAGNOSIS.parent
    modules = {}
    for path in package.rglob("*.py"):
        parts = path.relative_to(package.parent).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph = {}
    for name, path in modules.items():
        here = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = here.split(".")[:len(here.split(".")) - node.level + 1] if node.level else []
                full = ".".join(base + ([node.module] if node.module else []))
                targets = [full + "." + a.name for a in node.names if full + "." + a.name in modules]
                graph.setdefault(name, set()).update(targets or ([full] if full in modules else []))
            elif isinstance(node, ast.Import):
                graph.setdefault(name, set()).update(a.name for a in node.names if a.name in modules)
        graph.get(name, set()).discard(name)
    return graph


def test_no_module_of_stalldiag_imports_one_that_imports_it_back():
    graph, state, cycles = _imports_of_package(), {}, []

    def visit(module, stack):
        state[module] = "open"
        stack.append(module)
        for other in sorted(graph.get(module, ())):
            if state.get(other) == "open":
                cycles.append(" -> ".join(stack[stack.index(other):] + [other]))
            elif other not in state:
                visit(other, stack)
        stack.pop()
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module, [])
    assert not cycles, cycles
