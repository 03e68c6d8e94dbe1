"""Fixtures and hooks; what tests share besides them is in helpers.py.

Three layers, one folder each: tests/unit (functions and tables, no process started),
tests/replay (saved captures of fixtures/captures replayed offline, no process started) and
tests/live (anything that starts a process: a workload, stalldiag itself, a browser, Slurm).  The
folder decides: a test under tests/live is marked `live`, and no other is.  The fast layer, run
after every change, is `pytest -m "not live" tests` (the same tests as `pytest tests/unit
tests/replay`).

The suite runs two files at a time (`-n 2 --dist loadfile`, pytest-xdist): most live tests
wait on a workload that is blocked and use no CPU, so two of them side by side cost the wall
time of one.  A live test whose answer depends on the machine being otherwise quiet (its
workload computes, it reads host-wide state, it times something) is marked `alone` where it is
written (`pytestmark = pytest.mark.alone` for a whole file, `@pytest.mark.alone` for one test):
it holds the test lock exclusively, the others share it, so it never runs beside another live
test.  Tests of one file always run one after the other.
"""
import fcntl
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

# every record declared frozen is frozen in the tests, and in the stalldiag they start
# (stalldiag/records.py): code that changes a record after it was built fails here
os.environ["STALLDIAG_CHECKS"] = "1"

import helpers  # noqa: E402
# Tests import what they share from helpers.py; these names stay importable from conftest for
# tests written before it.
from helpers import (CAPTURES, FIXTURES, ROOT, WORKLOADS, Workload, _wait_ready, children_of,  # noqa: F401
                     inspect_json, kill_groups, process_of, run_stalldiag, thread_named, wait_for, wchans)


TESTS = Path(__file__).resolve().parent
LIVE = TESTS / "live"
TEST_LOCK = os.path.join(os.environ.get("TMPDIR", "/tmp"), "stalldiag-tests.lock")


def is_live(path):
    """A test is live when its file is under tests/live, and only then."""
    return LIVE in Path(path).resolve().parents


@pytest.hookimpl(tryfirst=True)   # before -m deselects by marker
def pytest_collection_modifyitems(config, items):
    for item in items:
        if is_live(item.path):
            item.add_marker(pytest.mark.live)


@pytest.fixture(autouse=True)
def _test_lock(request):
    """Shared for a live test, exclusive for one marked `alone` (see the module's docstring)."""
    if request.node.get_closest_marker("live") is None:
        yield
        return
    with open(TEST_LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX if request.node.get_closest_marker("alone") else fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@pytest.fixture
def launch():
    started = []

    def _launch(script, *args, settle=0.4, python=True, env=None, argv=None):
        if argv is None:
            argv = ([sys.executable, "-u", str(WORKLOADS / script)] if python else [script]) + [str(a) for a in args]
        popen = subprocess.Popen(argv, cwd=str(WORKLOADS), stdout=subprocess.PIPE, text=True,
                                 start_new_session=True, env=env)
        started.append(popen)
        if python:
            _wait_ready(popen)
        time.sleep(settle)
        return Workload(popen)

    yield _launch
    kill_groups(started)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    result = outcome.get_result()
    if not helpers._CALIBRATION or result.when != "call":
        return
    with open(helpers._CALIBRATION, "a") as f:
        for verdict in helpers._verdicts_of_test:
            f.write(json.dumps(dict(verdict, test=item.nodeid, passed=result.passed)) + "\n")
    helpers._verdicts_of_test.clear()
