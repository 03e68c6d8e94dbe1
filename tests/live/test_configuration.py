"""The job's configuration, read with the signal it explains (issue 33): each on a real workload
started with the environment or flags a real job would carry."""
import os
import re
import sys

import pytest

from helpers import inspect_json

pytestmark = pytest.mark.alone

try:
    import torch  # noqa: F401
    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False


def kinds(report):
    return {f["kind"] for f in report["findings"]}


def finding(report, kind):
    return next(f for f in report["findings"] if f["kind"] == kind)


@pytest.mark.alone
@pytest.mark.skipif(not HAVE_TORCH, reason="needs torch (CPU build)")
def test_openmp_threads_beyond_the_cpus_are_named_beside_a_cpu_verdict(launch):
    """Four processes of 8 OpenMP threads each on this machine's CPUs, threads kept waiting for
    one: the CPU verdict names OMP_NUM_THREADS and processes x threads."""
    env = dict(os.environ, OMP_NUM_THREADS="8")
    w = launch("omp_threads_oversubscribed.py", 4, settle=4.0, env=env)
    report = inspect_json(w.pid, "--children", duration=3)
    verdict = report["verdict"]
    assert verdict["category"] == "cpu", verdict["summary"]
    assert "threads-oversubscribed" in kinds(report), verdict["summary"]
    said = finding(report, "threads-oversubscribed")["summary"]
    # (4 processes; on a loaded machine one may not have started its OpenMP pool yet)
    assert "OMP_NUM_THREADS" in said and re.search(r"\b[34] processes run up to 8 OMP threads", said), said
    # the OpenMP workers (no Python frame, between futex barriers) compute: never a lock wait
    assert not verdict["summary"].startswith("Blocked on a lock"), verdict["summary"]


@pytest.mark.alone
def test_a_debug_mode_is_named_beside_a_cpu_loop_and_a_loop_body_is_not_a_spin(launch):
    w = launch("cpu_loop_dev_mode.py", settle=1.0,
               argv=[sys.executable, "-X", "dev", "-X", "tracemalloc=25", "-u", "cpu_loop_dev_mode.py"])
    report = inspect_json(w.pid, duration=3)
    verdict = report["verdict"]
    assert verdict["category"] == "cpu", verdict["summary"]
    assert "debug-mode" in kinds(report) and "-X dev" in finding(report, "debug-mode")["summary"]
    # a comprehension over data on one line computes: not 'it spins', not 'no progress'
    assert "it spins" not in verdict["summary"] and verdict["progress"]["state"] != "no progress seen"
    assert "knobs-set" in kinds(report)


@pytest.mark.alone
@pytest.mark.skipif(not HAVE_TORCH, reason="needs torch (CPU build)")
def test_settings_that_slow_compiling_are_named_beside_a_compile(launch):
    env = dict(os.environ, TORCHINDUCTOR_FORCE_DISABLE_CACHES="1", TORCHINDUCTOR_COMPILE_THREADS="1")
    w = launch("compile_fresh_cache.py", settle=2.0, env=env)
    report = inspect_json(w.pid, "--children", duration=3)
    verdict = report["verdict"]
    assert verdict["category"] == "compilation", verdict["summary"]
    said = finding(report, "compile-settings")["summary"]
    assert "TORCHINDUCTOR_FORCE_DISABLE_CACHES=1" in said and "TORCHINDUCTOR_COMPILE_THREADS=1" in said
