"""Each reproduced hang (fixtures/repro/*_manifest.json), recorded once live as a capture
(fixtures/captures/repro_<id>.json), replays to the truth its manifest states: the category, and
no progress claim that contradicts it ("making progress" of a stall, "no progress" of a run that
advances; "cannot tell" contradicts neither).  fixtures/repro/adjudicated.json overrides a
manifest's category where the product defines it otherwise, and says why."""
import json

import pytest

from conftest import CAPTURES, ROOT
from stalldiag.capture import load_report
from stalldiag.report import build_report

REPRO = ROOT / "fixtures" / "repro"
TRUTH = {row["id"]: row["truth"] for path in sorted(REPRO.glob("*_manifest.json")) for row in json.loads(path.read_text())}
ADJUDICATED = json.loads((REPRO / "adjudicated.json").read_text())
RECORDED = sorted(p.stem[len("repro_"):] for p in CAPTURES.glob("repro_*.json"))
CONTRADICTS = {"none": "making progress", "some": "no progress seen"}


def test_every_recorded_reproduction_is_in_a_manifest():
    assert set(RECORDED) <= set(TRUTH), sorted(set(RECORDED) - set(TRUTH))


@pytest.mark.parametrize("rid", RECORDED)
def test_the_reproduction_replays_to_its_truth(rid):
    verdict = build_report(load_report(str(CAPTURES / ("repro_%s.json" % rid))))["verdict"]
    truth = TRUTH[rid]
    want = ADJUDICATED.get(rid, {}).get("blocked_on", truth["blocked_on"])
    assert verdict["category"] == want, verdict["summary"]
    assert verdict["progress"]["state"] != CONTRADICTS.get(truth.get("progress")), verdict["progress"]
    if verdict["category"] == "unknown":
        assert verdict["confidence"] != "high"
