"""Each reproduced hang (fixtures/repro/manifest.json), recorded once live as a capture
(fixtures/captures/repro_<id>.json), replays to the truth its manifest states: the category, and
no progress claim that contradicts it ("making progress" of a stall, "no progress" of a run that
advances; "cannot tell" contradicts neither).  fixtures/repro/adjudicated.json overrides a
manifest's category where the product defines it otherwise, and says why."""
import json
import sys

import pytest

from helpers import CAPTURES, KNOWN_WRONG, ROOT
from stalldiag.capture import load_report
from stalldiag.report import build_report

REPRO = ROOT / "fixtures" / "repro"
TRUTH = {row["id"]: row["truth"] for row in json.loads((REPRO / "manifest.json").read_text())}
ADJUDICATED = json.loads((REPRO / "adjudicated.json").read_text())
RECORDED = sorted(p.stem[len("repro_"):] for p in CAPTURES.glob("repro_*.json"))
sys.path.insert(0, str(ROOT / "tools"))
from run_repros import CONTRADICTS  # noqa: E402  (the runner's rule, so a first run and its replay agree)


def test_every_recorded_reproduction_is_in_a_manifest():
    assert set(RECORDED) <= set(TRUTH), sorted(set(RECORDED) - set(TRUTH))


# KNOWN_WRONG (helpers.py): rows whose recorded verdict is still wrong, and why (a strict xfail).


@pytest.mark.parametrize("rid", [pytest.param(r, marks=pytest.mark.xfail(reason=KNOWN_WRONG[r], strict=True))
                                 if r in KNOWN_WRONG else r for r in RECORDED])
def test_the_reproduction_replays_to_its_truth(rid):
    verdict = build_report(load_report(str(CAPTURES / ("repro_%s.json" % rid))))["verdict"]
    truth = TRUTH[rid]
    want = ADJUDICATED.get(rid, {}).get("blocked_on", truth["blocked_on"])
    assert verdict["category"] == want, verdict["summary"]
    assert verdict["progress"]["state"] != CONTRADICTS.get(truth.get("progress")), verdict["progress"]
    if verdict["category"] == "unknown":
        assert verdict["confidence"] != "high"
