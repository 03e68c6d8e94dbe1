"""Real workloads, launched for each test and killed afterwards.

Two layers: a test that starts a process (a workload, stalldiag itself, a browser, Slurm) is
`live`; the rest (units, and replays of saved captures) are the fast layer, run after every
change as `pytest -m "not live"`.

The suite runs two files at a time (`-n 2 --dist loadfile`, pytest-xdist): most live tests
wait on a workload that is blocked and use no CPU, so two of them side by side cost the wall
time of one.  A live test whose answer depends on the machine being otherwise quiet (its
workload computes, it reads host-wide state, it times something) is marked `alone`: it holds
the test lock exclusively, the others share it, so it never runs beside another live test.
Tests of one file always run one after the other.
"""
import fcntl
import json
import inspect
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

import helpers
# Tests import what they share from helpers.py; these names stay importable from conftest for
# tests written before it.
from helpers import (CAPTURES, FIXTURES, ROOT, WORKLOADS, Workload, _wait_ready, children_of,  # noqa: F401
                     inspect_json, kill_groups, process_of, run_stalldiag, thread_named, wait_for, wchans)


# Fixtures that start or need real processes, and calls that do.
LIVE_FIXTURES = {"launch", "freezer", "cpu_quota", "slow_storage_dir", "silent_server", "driver", "cgroups_removed",
                 "spawn", "retrying", "hang_guard", "slurm", "submit", "target_python", "fuse_mount"}
LIVE_CALLS = re.compile(r"\b(run_stalldiag|run_one|inspect_json|subprocess|Popen|launch|multiprocessing|os\.fork|"
                        r"threading\.Thread|CliRunner|session\.|Session\()")


def _is_live(item):
    if LIVE_FIXTURES & set(getattr(item, "fixturenames", ())):
        return True
    try:
        source = inspect.getsource(item.function)
    except (OSError, TypeError, AttributeError):
        return True
    return bool(LIVE_CALLS.search(source))


# Live tests that must not run beside another: whole files (host-wide state: neighbours, cgroups,
# discovery of jobs, Slurm, tracers, ptrace settings; timing and progress), and tests whose
# workload computes (a CPU verdict can turn on another test's load: a run delay, a neighbour)
ALONE_FILES = {"test_resource_limits", "test_stopped_workers_and_contention", "test_progress",
               "test_progress_honest", "test_coverage", "test_watch", "test_slurm", "test_discovery_merge",
               "test_exact_syscalls", "test_kernel_state", "test_readme", "test_hardening", "test_cli_errors",
               "test_pools_sockets_and_healthy_jobs", "test_locks_storage_and_halted_ranks",
               "test_chains", "test_pipeline_mechanisms", "test_gpu_families", "test_html_report"}
ALONE_NAMES = re.compile(r"busy|cpu|spin|gil|regex|comput|quota|healthy|paced|progress|contention|neighbour|"
                         r"throttl|compil|slow_storage|exact")
TEST_LOCK = os.path.join(os.environ.get("TMPDIR", "/tmp"), "stalldiag-tests.lock")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if _is_live(item):
            item.add_marker(pytest.mark.live)
            if Path(str(item.fspath)).stem in ALONE_FILES or ALONE_NAMES.search(item.name):
                item.add_marker(pytest.mark.alone)


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
