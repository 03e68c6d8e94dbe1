"""Captures of real frameworks run as their users run them (shared/real-clients, issue 39),
recorded live on this project's machine: each replays to its truth, taken from the framework's
own semantics (the case's README), not from what stalldiag said.  The first run of these, before
any fix, was 4 of 13 right (docs/validation.md); the captures are that first run's."""
import pytest

from helpers import CAPTURES, ROOT  # noqa: F401

import sys
sys.path.insert(0, str(ROOT))
from stalldiag.capture import load_report  # noqa: E402
from stalldiag.report import build_report  # noqa: E402

NOT_PROGRESS = ("no progress seen",)
STALLED = ("making progress",)

# case: (category or None, culprit (pid, tid) or a set of acceptable pids, progress states it must
# not say, what the headline must begin with)
TRUTH = {
    # a Dask task blocks on an Event nobody sets: the worker thread running it, not an idle loop
    "dask_event": ("locks", (5122, 5134), STALLED, None),
    "dask_dep": ("locks", (5334, 5349), STALLED, None),
    # the same, the Dask worker process inspected by itself: its event loop idles by design, and
    # its executor thread runs the task that waits (it read as two idle loops waiting on each other)
    "dask_worker_inspected": ("locks", (21389, 21407), STALLED, None),
    # datasets' map: the worker in flock on the file the parent holds (either end of the lock)
    "datasets_flock": ("locks", {5384, 5378}, STALLED, None),
    "datasets_socket": ("network", (5416, 5416), STALLED, None),
    # healthy numeric work printing rarely: computing, never "no progress seen"
    "sklearn_healthy": ("cpu", {5813}, NOT_PROGRESS, None),
    "matmul_healthy": ("cpu", {6427}, NOT_PROGRESS, None),
    "pip_silent_retries": ("network", None, STALLED, None),
    # the same, inspected across pip's second retry: its "WARNING: Retrying (Retry(total=3 ...))"
    # line grew the log in the window, and is no progress
    "pip_retry_in_window": ("network", {24817}, STALLED, None),
    "lightning_healthy": ("cpu", {7705, 7996}, NOT_PROGRESS, None),
    # a stopped rank: the collective the other rank waits in, the stopped rank the culprit
    "lightning_rank0_stopped": ("collective", (8272, 8272), STALLED, None),
    "lightning_rank1_stopped": ("collective", (10122, 10122), STALLED, None),
    "compile_running": ("compilation", None, NOT_PROGRESS, None),
    # the run ended in the window: the headline says so
    "compile_exits": (None, None, NOT_PROGRESS, "Exited: "),
    "sklearn_exits": (None, None, NOT_PROGRESS, "Exited: "),
}


@pytest.mark.parametrize("case", sorted(TRUTH))
def test_a_real_framework_capture_replays_to_its_truth(case):
    category, culprit, never, headline = TRUTH[case]
    verdict = build_report(load_report(str(CAPTURES / ("real_%s.json" % case))))["verdict"]
    if category is not None:
        assert verdict["category"] == category, verdict["summary"]
    if isinstance(culprit, tuple):
        assert (verdict.get("pid"), verdict.get("tid")) == culprit, verdict["summary"]
    elif isinstance(culprit, set):
        assert verdict.get("pid") in culprit, verdict["summary"]
    assert verdict["progress"]["state"] not in never, verdict["progress"]
    if headline is not None:
        assert verdict["summary"].startswith(headline), verdict["summary"]
    # an idle framework thread (a listener, a manager's server, a watcher) is never the culprit
    assert "accept" not in verdict["summary"].split(";")[0], verdict["summary"]


def test_every_real_capture_has_a_truth():
    assert {p.stem[len("real_"):] for p in CAPTURES.glob("real_*.json")} == set(TRUTH)
