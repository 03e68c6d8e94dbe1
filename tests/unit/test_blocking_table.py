"""knowledge/blocking.py held against the sources it describes.

For every CPython 3.8-3.13 that pyenv has (`pyenv prefix 3.8.18` ... `3.13.0`) and the installed
PyTorch, tools/enumerate_blocking.py lists the functions that call a blocking primitive; each must
be a row of the table (for that version) or a NOT_BLOCKING entry with its reason, and a Windows-only
one must be NOT_BLOCKING.  Each row must name a function its sources define, in exactly the versions
its `versions` says.  An absent Python or PyTorch skips its tests, saying so.
"""
import importlib.util
import re
from pathlib import Path

import pytest

from stalldiag.diagnosis import kinds as thread_kinds
from stalldiag.knowledge import blocking, frames

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("enumerate_blocking", ROOT / "tools" / "enumerate_blocking.py")
enum = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(enum)

VERSIONS = {8: "3.8.18", 9: "3.9.18", 10: "3.10.13", 11: "3.11.7", 12: "3.12.1", 13: "3.13.0"}
LIB_DIRS, TORCH_DIR = enum.available_sources()

_enumerated, _defined = {}, {}


def enumerated(minor):
    """(found, defined) of one Python (minor) or of torch ("torch"), parsed once."""
    if minor not in _enumerated:
        try:
            if minor == "torch":
                _enumerated[minor], _defined[minor] = enum.enumerate_torch(TORCH_DIR)
            else:
                _enumerated[minor], _defined[minor] = enum.enumerate_stdlib(LIB_DIRS[minor])
        except SyntaxError as e:   # an older Python running the tests cannot parse a newer one's source
            pytest.skip("this Python cannot parse the source of %s: %s" % (_label(minor), e))
    return _enumerated[minor], _defined[minor]


def need(minor):
    if minor == "torch":
        if TORCH_DIR is None:
            pytest.skip("PyTorch is not installed: its part of the table is not checked")
    elif minor not in LIB_DIRS:
        pytest.skip("Python %s is absent (`pyenv prefix %s` finds nothing): not checked"
                    % (VERSIONS[minor], VERSIONS[minor]))


TARGETS = list(VERSIONS) + ["torch"]


def _label(minor):
    return "torch" if minor == "torch" else "3.%d" % minor


# --- the enumeration's teeth --------------------------------------------------------------------

@pytest.mark.parametrize("minor", TARGETS, ids=_label)
def test_every_blocking_function_is_in_the_table(minor):
    need(minor)
    found, _ = enumerated(minor)
    report = blocking.coverage(found, None if minor == "torch" else (3, minor))
    print(report.summary())
    missing = ["%s %s (%s: %s)" % (m, f, ",".join(found[(m, f)].classes),
                                   "; ".join(c.text for c in found[(m, f)].calls[:2])) for m, f in report.missing]
    assert not missing, "%s: blocking functions neither in ROWS nor in NOT_BLOCKING:\n  %s" % (
        report.label, "\n  ".join(missing))
    assert not report.misplaced, "Windows-only functions given a row (NOT_BLOCKING them): %s" % report.misplaced
    assert report.enumerated > (100 if minor == "torch" else 300)   # the rule still finds what it should


# Functions whose wait is beyond doubt (named in strings: tests/unit/test_layers.py reads a unit
# test's code, strings left out, for names such as multiprocessing and subprocess)
WELL_KNOWN = [("threading", "Condition.wait"), ("queue", "Queue.get"), ("selectors", "EpollSelector.select"),
              ("multiprocessing.connection", "Connection._recv"), ("multiprocessing.queues", "Queue._feed"),
              ("subprocess", "Popen._try_wait"), ("socket", "create_connection"),
              ("importlib._bootstrap", "_ModuleLock.acquire"), ("concurrent.futures.thread", "_worker"),
              ("multiprocessing.pool", "worker"), ("socketserver", "BaseServer.serve_forever"),
              ("threading", "Timer.run"), ("threading", "_shutdown")]
TORCH_WELL_KNOWN = [("torch.cuda", "synchronize"), ("torch.distributed.distributed_c10d", "all_reduce"),
                    ("torch.distributed.distributed_c10d", "_store_based_barrier"),
                    ("torch.utils.data.dataloader", "_MultiProcessingDataLoaderIter._try_get_data"),
                    ("torch.utils.data._utils.worker", "_worker_loop"), ("torch.utils.file_baton", "FileBaton.wait"),
                    ("torch.hub", "download_url_to_file"), ("torch.distributed.rendezvous", "_create_c10d_store")]


def test_the_enumeration_finds_the_waits_everyone_knows():
    """If the rule lost one of these, the coverage test would pass vacuously."""
    minors = [m for m in VERSIONS if m in LIB_DIRS]
    if not minors:
        pytest.skip("no Python 3.8-3.13 found by pyenv")
    for minor in minors:
        found, _ = enumerated(minor)
        for key in WELL_KNOWN:
            assert key in found, "3.%d: %s.%s no longer enumerated" % ((minor,) + key)
        assert ("threading", "Thread._wait_for_tstate_lock" if minor < 13 else "Thread.join") in found


def test_the_torch_enumeration_finds_its_primitives():
    need("torch")
    found, _ = enumerated("torch")
    for key in TORCH_WELL_KNOWN:
        assert key in found, key


# --- no stale rows ------------------------------------------------------------------------------

def test_every_stdlib_row_exists_in_exactly_its_versions():
    present = [m for m in VERSIONS if m in LIB_DIRS]
    if not present:
        pytest.skip("no Python 3.8-3.13 found by pyenv")
    wrong = []
    for row in blocking.ROWS:
        if row.versions is None:
            continue
        defined_in = [m for m in present if row.function in enumerated(m)[1].get(row.module, {})]
        claimed = [m for m in present if row.in_version((3, m))]
        if defined_in != claimed:
            wrong.append("%s %s: versions %s, defined in %s" % (
                row.module, row.function, "3.%d-3.%d" % (row.versions[0][1], row.versions[1][1]),
                ", ".join("3.%d" % m for m in defined_in) or "none"))
    assert not wrong, "rows whose versions disagree with the sources:\n  " + "\n  ".join(wrong)


def test_stdlib_versions_are_a_contiguous_range_of_the_targets():
    for row in blocking.ROWS:
        if row.versions is not None:
            first, last = row.versions
            assert first in blocking.PYTHONS and last in blocking.PYTHONS and first <= last, row.key


def test_every_torch_row_exists_in_the_installed_torch():
    need("torch")
    _, defined = enumerated("torch")
    stale = [r.key for r in blocking.ROWS if r.versions is None and r.function not in defined.get(r.module, {})]
    assert not stale, "PyTorch rows the installed PyTorch does not define: %s" % stale


def test_every_not_blocking_entry_is_still_enumerated():
    """An exemption nobody needs any more is a stale row too."""
    present = [m for m in TARGETS if (m == "torch" and TORCH_DIR) or m in LIB_DIRS]
    if len(present) < len(TARGETS):
        pytest.skip("needs every Python 3.8-3.13 and PyTorch to tell a stale exemption")
    for entry in blocking.NOT_BLOCKING:
        hits = [m for m in present for (module, function), item in enumerated(m)[0].items()
                if entry.covers(module, function, item.classes)]
        assert hits, "NOT_BLOCKING %s %s covers nothing enumerated" % (entry.module, entry.function)


def test_windows_exemptions_are_windows_only_code():
    present = [m for m in VERSIONS if m in LIB_DIRS]
    if not present:
        pytest.skip("no Python 3.8-3.13 found by pyenv")
    for entry in blocking.NOT_BLOCKING:
        if not entry.reason.startswith("Windows-only") or entry.function == "*" or entry.module.startswith("torch"):
            continue
        items = [enumerated(m)[0].get((entry.module, entry.function)) for m in present]
        items = [i for i in items if i is not None]
        assert items and all(i.windows_only for i in items), "%s %s is not Windows-only code" % (
            entry.module, entry.function)


# --- the rows themselves ------------------------------------------------------------------------

def test_rows_are_unique_and_use_known_kinds():
    keys = [r.key for r in blocking.ROWS]
    assert len(keys) == len(set(keys))
    known = set(thread_kinds.BY_NAME) | {p.kind for p in frames.FRAME_PATTERNS + frames.FRAMEWORK_PATTERNS}
    for row in blocking.ROWS:
        assert row.kind in known, (row.key, row.kind)
        assert row.waits_on and row.ended_by, row.key
        assert not blocking.not_blocking(row.module, row.function), ("both a row and NOT_BLOCKING", row.key)


def test_line_index_is_current():
    """_LINES (spans of functions sharing a row's bare name, for 3.8-3.10 and torch) matches the
    sources present; `python3 tools/enumerate_blocking.py --write-lines` regenerates it."""
    dirs = {m: d for m, d in LIB_DIRS.items() if m in enum.LINE_VERSIONS}
    if not dirs and TORCH_DIR is None:
        pytest.skip("no Python 3.8-3.10 and no PyTorch to check _LINES against")
    fresh = enum.line_index(blocking.ROWS, dirs, TORCH_DIR,
                            defined={m: enumerated(m)[1] for m in list(dirs) + (["torch"] if TORCH_DIR else [])})
    checked = set(dirs) | ({"torch"} if TORCH_DIR else set())
    stored = {k: {v: s for v, s in spans.items() if v in checked} for k, spans in blocking._LINES.items()}
    stored = {k: v for k, v in stored.items() if v}
    assert stored == fresh, "run: python3 tools/enumerate_blocking.py --write-lines"


# --- lookups --------------------------------------------------------------------------------------

def _lib(minor, rel):
    return "/usr/lib/python3.%d/%s" % (minor, rel)


def _line_of(minor, rel, text):
    """The line number of `text` in a Python's own source (skips when that Python is absent)."""
    need(minor)
    for number, line in enumerate(Path(LIB_DIRS[minor], rel).read_text().splitlines(), 1):
        if text in line:
            return number
    raise AssertionError("%r not in %s" % (text, rel))


def test_qualified_names_on_311_and_later():
    stack = [("Condition.wait", _lib(12, "threading.py"), 355), ("Event.wait", _lib(12, "threading.py"), 655),
             ("Thread.start", _lib(12, "threading.py"), 997), ("main", "/work/train.py", 10)]
    depth, row = blocking.blocking_frame(stack)
    assert (depth, row.key) == (0, ("threading", "Condition.wait"))
    assert [r.function for _, r in blocking.blocking_frames(stack)] == ["Condition.wait", "Event.wait", "Thread.start"]


def test_bare_names_before_311_are_told_apart_by_line():
    rel = "threading.py"
    in_condition = _line_of(10, rel, "waiter.acquire()")
    in_event = _line_of(10, rel, "signaled = self._cond.wait(timeout)")
    stack = [("wait", _lib(10, rel), in_condition), ("wait", _lib(10, rel), in_event),
             ("fetch", "/work/train.py", 3)]
    assert [r.function for _, r in blocking.blocking_frames(stack)] == ["Condition.wait", "Event.wait"]
    # Thread.run shares its bare name with Timer.run: a thread running a C target is not a Timer
    in_thread_run = _line_of(10, rel, "self._target(*self._args, **self._kwargs)")
    in_timer_run = _line_of(10, rel, "self.finished.wait(self.interval)")
    assert blocking.frame_row("run", _lib(10, rel), in_thread_run) is None
    assert blocking.frame_row("run", _lib(10, rel), in_timer_run).function == "Timer.run"
    # another patch release: lines a little off still find the nearest definition
    assert blocking.frame_row("run", _lib(10, rel), in_timer_run + 3).function == "Timer.run"


def test_a_row_outside_the_innermost_python_frames_is_no_wait():
    stack = [("crunch", "/work/train.py", 5), ("Thread.run", _lib(12, "threading.py"), 1010),
             ("Thread._bootstrap_inner", _lib(12, "threading.py"), 1073),
             ("Thread._bootstrap", _lib(12, "threading.py"), 1030)]
    assert blocking.blocking_frame(stack) is None
    assert blocking.background_thread(stack) is None


def test_native_and_comprehension_frames_are_looked_through():
    stack = [("__futex_abstimed_wait_common", "libc.so.6", 0), ("PyThread_acquire_lock_timed", "python3.11", 0),
             ("Future.result.<locals>.<genexpr>", _lib(11, "concurrent/futures/_base.py"), 1),
             ("Future.result", _lib(11, "concurrent/futures/_base.py"), 451), ("main", "/work/t.py", 1)]
    depth, row = blocking.blocking_frame(stack)
    assert depth == 3 and row.kind == "future"


def test_frozen_frames():
    depth, row = blocking.blocking_frame([("_ModuleLock.acquire", "<frozen importlib._bootstrap>", 360),
                                          ("_ModuleLockManager.__enter__", "<frozen importlib._bootstrap>", 418),
                                          ("_find_and_load", "<frozen importlib._bootstrap>", 1357),
                                          ("<module>", "/work/t.py", 1)])
    assert row.key == ("importlib._bootstrap", "_ModuleLock.acquire") and row.kind == "lock"
    # 3.8-3.10: bare names and no version in a frozen path
    assert blocking.frame_row("_find_and_load", "<frozen importlib._bootstrap>", 1000).function == "_find_and_load"
    # 3.11+: os is frozen
    assert blocking.frame_row("_wrap_close.close", "<frozen os>", 1012).key == ("os", "_wrap_close.close")
    assert blocking.frame_row("close", "/usr/lib/python3.9/os.py", 1000).key == ("os", "_wrap_close.close")


def test_torch_paths_are_not_taken_for_the_stdlib():
    assert blocking.module_of(TORCH_QUEUE) == ("torch." + MP + ".queue", 10)
    assert blocking.frame_row("get", TORCH_QUEUE, 10) is None             # not queue.Queue.get
    row = blocking.frame_row("synchronize", "/x/lib/python3.11/site-packages/torch/cuda/__init__.py", 1219)
    assert row.kind == "cuda" and row.spins


MP = "multiprocessing"
POOL_WORKER_STACK = [("Connection._recv", _lib(12, MP + "/connection.py"), 395),
                     ("Connection._recv_bytes", _lib(12, MP + "/connection.py"), 430),
                     ("Connection.recv_bytes", _lib(12, MP + "/connection.py"), 216),
                     ("SimpleQueue.get", _lib(12, MP + "/queues.py"), 387),
                     ("worker", _lib(12, MP + "/pool.py"), 114),
                     ("BaseProcess.run", _lib(12, MP + "/process.py"), 108),
                     ("BaseProcess._bootstrap", _lib(12, MP + "/process.py"), 314)]
FEEDER_STACK = [("_feed", _lib(9, MP + "/queues.py"), 227), ("run", _lib(9, "threading.py"), 870)]
TORCH_QUEUE = "/opt/conda/lib/python3.10/site-packages/torch/" + MP + "/queue.py"


def test_background_threads():
    assert blocking.background_thread(POOL_WORKER_STACK).key == (MP + ".pool", "worker")
    assert blocking.blocking_frame(POOL_WORKER_STACK)[1].kind == "ipc"
    assert blocking.background_thread([("Condition.wait", _lib(9, "threading.py"), 302)]) is None
    assert blocking.background_thread(FEEDER_STACK).key == (MP + ".queues", "Queue._feed")
