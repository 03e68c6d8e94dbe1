"""Each case of the real-framework corpus (fixtures/real/, issue 39), recorded once live as a
capture (fixtures/captures/corpus_<id>.json, its first run), replays to its truth
(tools/run_repros.judge_corpus: the category, the culprit's frames or its stop, the progress, an
exit's headline).  KNOWN_WRONG (helpers.KNOWN_WRONG_CORPUS) keeps the recorded misses still wrong, and why (a strict xfail)."""
import sys

import pytest

from helpers import CAPTURES, KNOWN_WRONG_CORPUS as KNOWN_WRONG, ROOT

sys.path.insert(0, str(ROOT / "tools"))
import run_repros  # noqa: E402

ROWS = {row["id"]: row for row in run_repros.corpus_rows()}
RECORDED = sorted(p.stem[len("corpus_"):] for p in CAPTURES.glob("corpus_*.json"))



def test_every_recorded_case_is_in_the_corpus():
    assert set(RECORDED) <= set(ROWS), sorted(set(RECORDED) - set(ROWS))


@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.xfail(reason=KNOWN_WRONG[c], strict=True))
                                  if c in KNOWN_WRONG else c for c in RECORDED])
def test_a_corpus_case_replays_to_its_truth(case):
    wrong = run_repros.judge_corpus(ROWS[case], run_repros.corpus_report(str(CAPTURES / ("corpus_%s.json" % case))))
    assert wrong is None, wrong
