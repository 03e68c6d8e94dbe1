"""The layers are folders: tests/unit, tests/replay, tests/live.  Each test file sits in one of
them, the folder alone decides the `live` marker (tests/conftest.py), `alone` is a live test's,
and no file outside tests/live starts a process or imports another test module.

The source check below is a guard against a process started by mistake in the fast layer, not how
the layer is decided: a test that needs a process belongs in tests/live.
"""
import io
import tokenize

from helpers import ROOT

TESTS = ROOT / "tests"
LAYERS = ("unit", "replay", "live")
SHARED = {"conftest.py", "helpers.py"}
# names whose use starts a process or a thread: subprocess, os.fork, multiprocessing, threading,
# stalldiag run as a program, a workload (the launch fixture and its kin), a browser
STARTS = {"subprocess", "Popen", "multiprocessing", "fork", "forkpty", "Thread", "ThreadPoolExecutor",
          "ProcessPoolExecutor", "system", "run_stalldiag", "inspect_json", "run_one", "launch", "spawn",
          "webdriver"}


def _files():
    return sorted(p for p in TESTS.rglob("*.py") if "__pycache__" not in p.parts)


def code_names(path):
    """The names the code uses: comments and strings (docstrings too) left out."""
    tokens = tokenize.generate_tokens(io.StringIO(path.read_text()).readline)
    return [t.string for t in tokens if t.type == tokenize.NAME]


def test_every_test_file_sits_in_one_layer_folder():
    names = []
    for path in _files():
        rel = path.relative_to(TESTS)
        if len(rel.parts) == 1:
            assert rel.name in SHARED, "%s: a test file belongs in tests/unit, tests/replay or tests/live" % rel
            continue
        assert len(rel.parts) == 2 and rel.parts[0] in LAYERS, rel
        assert rel.name.startswith("test_") and rel.name != "__init__.py", rel
        names.append(rel.name)
    # without __init__.py pytest imports a test file by its name: one name, one file
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)


def test_the_folder_decides_the_live_marker(request):
    live = TESTS / "live"
    for item in request.session.items:
        in_live = live in item.path.resolve().parents
        assert (item.get_closest_marker("live") is not None) == in_live, item.nodeid
        if item.get_closest_marker("alone") is not None:
            assert in_live, "%s: alone is for a live test (it takes the lock the live tests share)" % item.nodeid


def test_no_file_outside_live_starts_a_process():
    for path in _files():
        if path.parent.name in ("unit", "replay"):
            found = sorted(set(code_names(path)) & STARTS)
            assert not found, "%s uses %s: a test that starts a process belongs in tests/live" % (
                path.relative_to(TESTS), ", ".join(found))


def test_no_test_module_imports_another():
    """What tests share is in helpers.py: a test file in one folder cannot import one in another."""
    for path in _files():
        names = code_names(path)
        imported = [names[i + 1] for i, name in enumerate(names[:-1]) if name in ("import", "from")]
        assert not [n for n in imported if n.startswith("test_") or n == "conftest"], path.relative_to(TESTS)
