"""Real third-party frameworks run as their users run them (issue 39): fixtures/real/, each case a
launcher that starts the user's program around the framework (Dask, Hugging Face datasets,
scikit-learn, numpy, pip, Lightning, torch.compile, joblib, the DataLoader, the transformers
Trainer, aiohttp, Flask, requests, SQLAlchemy), brings in the fault (a task that blocks, a stopped
or killed worker or rank, a silent peer, a held lock) or none, and prints READY <the job's pid>.
The truth of each (fixtures/real/manifest_*.json) comes from the framework's own semantics, not
from stalldiag: the category, the culprit thread's frames (or that it is stopped), the progress
(run_repros.judge_corpus).  Every case's first-run capture replays in the fast layer
(tests/replay/test_real_corpus_replay.py); live, one faulty case of most frameworks and two
healthy runs by default (DEFAULT: a full case takes 20 s to minutes here, the whole corpus about
50 minutes of CI), every case with STALLDIAG_LIVE_REAL=all.  A case that misses is run once more (both must miss)."""
import os
import sys

import pytest

from helpers import KNOWN_WRONG_CORPUS, ROOT

sys.path.insert(0, str(ROOT / "tools"))
import run_repros  # noqa: E402

ROWS = run_repros.corpus_rows()
LIVE_ALL = os.environ.get("STALLDIAG_LIVE_REAL") == "all"
# the default live set: one faulty case of each framework that starts in seconds (the compile
# cases take minutes to reach their state, pip's retries a minute), and the healthy runs that read
# as false alarms before; a known-wrong case (helpers.KNOWN_WRONG_CORPUS) is never among them
DEFAULT = {"dask_event", "datasets_flock", "sklearn_worker_stopped", "numpy_thread_died", "pip_build_lock",
           "lightning_rank0_stopped", "joblib_task_flock", "torch_dl_worker_stopped", "hf_trainer_dl_worker_stopped",
           "aiohttp_handler_blocking_upstream", "flask_handler_event", "sqla_sqlite_locked_by_thread",
           "aiohttp_healthy", "matmul_healthy", "apscheduler_healthy", "tornado_subprocess_stopped",
           "joblib_healthy"}
assert not DEFAULT & set(KNOWN_WRONG_CORPUS)


def _param(row):
    if row["id"] in KNOWN_WRONG_CORPUS:
        return pytest.param(row, id=row["id"], marks=[pytest.mark.xfail(reason=KNOWN_WRONG_CORPUS[row["id"]])] + (
            [] if LIVE_ALL else [pytest.mark.skip(reason="known wrong (replayed); live with STALLDIAG_LIVE_REAL=all")]))
    if not LIVE_ALL and row["id"] not in DEFAULT:
        return pytest.param(row, id=row["id"], marks=pytest.mark.skip(
            reason="replayed from its first-run capture; live with STALLDIAG_LIVE_REAL=all"))
    return pytest.param(row, id=row["id"])


def _run(row, tmp_path):
    result = run_repros.run_one(row, row.get("duration", 8), str(tmp_path))
    if "error" in result:
        return "error: " + result["error"]
    return run_repros.judge_corpus(row, run_repros.corpus_report(result["report"]))


@pytest.mark.parametrize("row", [_param(r) for r in ROWS])
def test_a_real_framework_case(row, tmp_path):
    for name in row.get("imports") or ():
        pytest.importorskip(name)
    wrong = _run(row, tmp_path)
    if wrong is not None:
        wrong = _run(row, tmp_path)
    assert wrong is None, "%s (%s): %s" % (row["id"], row.get("framework"), wrong)


def test_the_corpus_covers_twelve_frameworks_each_healthy_and_faulty():
    by = {}
    for row in ROWS:
        by.setdefault(row["framework"].split()[0].split("/")[0].split("+")[0], []).append(row)
    complete = [name for name, rows in by.items() if any(r["truth"]["progress"] == "some" for r in rows)
                and sum(r["truth"]["progress"] != "some" for r in rows) >= 2]
    assert len(complete) >= 12, sorted(complete)
