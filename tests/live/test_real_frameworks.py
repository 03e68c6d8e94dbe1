"""Real third-party frameworks run as their users run them (issue 39): fixtures/real/, each case a
launcher that starts the user's program around the framework (Dask, Hugging Face datasets,
scikit-learn, numpy, pip, Lightning, torch.compile, joblib, the DataLoader, the transformers
Trainer, aiohttp, Flask, requests, SQLAlchemy), brings in the fault (a task that blocks, a stopped
or killed worker or rank, a silent peer, a held lock) or none, and prints READY <the job's pid>.
The truth of each (fixtures/real/manifest_*.json) comes from the framework's own semantics, not
from stalldiag: the category, the culprit thread's frames (or that it is stopped), and the
progress.  Each case is run once more where the first run misses (both must miss)."""
import glob
import json
import os
import sys

import pytest

from helpers import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import run_repros  # noqa: E402
from stalldiag.capture import load_report  # noqa: E402
from stalldiag.diagnosis.graph import WaitGraph  # noqa: E402

ROWS = [row for path in sorted(glob.glob(str(ROOT / "fixtures" / "real" / "manifest_*.json")))
        for row in json.load(open(path))]
# the progress a verdict must not say of each truth ("exits": the run ends in the window)
NEVER = {"none": "making progress", "some": "no progress seen", "slow": "no progress seen",
         "exits": "no progress seen"}


def _importable(row):
    for name in row.get("imports") or ():
        try:
            __import__(name)
        except ImportError:
            return name
    return None


def _culprit_ok(row, report):
    truth, verdict = row["truth"], report["verdict"]
    if truth.get("culprit_stopped"):
        g = WaitGraph(report["capture"])
        view = next((v for v in g.views if (v.pid, v.tid) == (verdict.get("pid"), verdict.get("tid"))), None)
        return view is not None and g.halted(view)
    wanted = set(truth.get("culprit_frames") or ())
    if not wanted:
        return True
    g = WaitGraph(report["capture"])
    view = next((v for v in g.views if (v.pid, v.tid) == (verdict.get("pid"), verdict.get("tid"))), None)
    names = {f[0].rsplit(".", 1)[-1] for frames, _n in (view.stacks if view else []) for f in frames or []}
    return bool(wanted & names)


def _judge(row, result):
    if "error" in result:
        return "error: " + result["error"]
    report = load_report(result["report"])
    verdict = report["verdict"]
    truth = row["truth"]
    if truth["progress"] == "exits":
        if not verdict["summary"].startswith("Exited") or verdict["progress"]["state"] == "no progress seen":
            return "the run exited in the window; the verdict says: %s" % verdict["summary"][:300]
        return None
    if verdict["category"] != truth["blocked_on"]:
        return "category %s, want %s: %s" % (verdict["category"], truth["blocked_on"], verdict["summary"][:300])
    if verdict["progress"]["state"] == NEVER.get(truth["progress"]):
        return "progress %s of a run whose truth is %s" % (verdict["progress"]["state"], truth["progress"])
    if not _culprit_ok(row, report):
        return "culprit %s/%s, want %s: %s" % (verdict.get("pid"), verdict.get("tid"), truth["culprit"][:200],
                                               verdict["summary"][:300])
    return None


@pytest.mark.parametrize("row", ROWS, ids=[r["id"] for r in ROWS])
def test_a_real_framework_case(row, tmp_path):
    missing = _importable(row)
    if missing:
        pytest.skip("needs %s" % missing)
    duration = row.get("duration", 8)
    wrong = _judge(row, run_repros.run_one(row, duration, str(tmp_path)))
    if wrong and not wrong.startswith("error"):
        wrong = _judge(row, run_repros.run_one(row, duration, str(tmp_path)))
    assert wrong is None, "%s (%s): %s" % (row["id"], row.get("framework"), wrong)


def test_the_corpus_covers_twelve_frameworks_each_healthy_and_faulty():
    by = {}
    for row in ROWS:
        by.setdefault(row["framework"].split()[0].split("/")[0].split("+")[0], []).append(row)
    assert len(by) >= 12, sorted(by)
    for name, rows in by.items():
        assert any(r["truth"]["progress"] == "some" for r in rows), name
        assert sum(r["truth"]["progress"] != "some" for r in rows) >= 2, name
