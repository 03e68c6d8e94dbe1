"""Every saved capture replays to the verdict recorded beside it (fixtures/verdicts.json):
its category, culprit, confidence and progress.  A change that moves one rewrites that file with
`python3 tools/replay_all.py --write`, and its commit says why the new verdict is the better one."""
import json
import sys

import pytest

from helpers import CAPTURES, ROOT

sys.path.insert(0, str(ROOT / "tools"))
from replay_all import GOLDEN, brief  # noqa: E402

with open(GOLDEN) as f:
    RECORDED = json.load(f)


def test_every_capture_has_a_recorded_verdict():
    captures = {p.stem for p in CAPTURES.glob("*.json")}
    assert captures == set(RECORDED), sorted(captures ^ set(RECORDED))


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_the_capture_replays_to_its_recorded_verdict(name):
    assert brief(str(CAPTURES / (name + ".json"))) == RECORDED[name]
