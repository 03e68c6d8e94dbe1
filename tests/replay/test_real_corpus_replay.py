"""Each case of the real-framework corpus (fixtures/real/, issue 39), recorded once live as a
capture (fixtures/captures/corpus_<id>.json, its first run), replays to its truth
(tools/run_repros.judge_corpus: the category, the culprit's frames or its stop, the progress, an
exit's headline).  KNOWN_WRONG keeps the recorded misses still wrong, and why (a strict xfail)."""
import sys

import pytest

from helpers import CAPTURES, ROOT

sys.path.insert(0, str(ROOT / "tools"))
import run_repros  # noqa: E402
from stalldiag.capture import load_report  # noqa: E402
from stalldiag.report import build_report  # noqa: E402

ROWS = {row["id"]: row for row in run_repros.corpus_rows()}
RECORDED = sorted(p.stem[len("corpus_"):] for p in CAPTURES.glob("corpus_*.json"))

KNOWN_WRONG = {
    "numpy_slow_pipe": "a reader waiting on a pipe its feeder fills one block every 20 s, the window between two "
                       "blocks: said as a wait on the feeder that sleeps (sleep, medium, cannot tell); its writer "
                       "files the slow input under io",
    "flask_healthy": "a healthy client that sleeps between requests 98% of the window: said as sleeping (its writer "
                     "files the exchange under the network); not a false alarm (cannot tell)",
    "joblib_healthy": "loky workers that compute 15 ms and sleep 10 ms per task, 2 on 2 busy cores: the task "
                      "thread is found, its sleeps decide (sleep, medium); its writer files it under cpu",
    "torch_dl_healthy": "DataLoader workers whose __getitem__ sleeps (a shard read stand-in) 85% of the window: "
                        "said as sleeping workers (its writer: cpu)",
    "sqla_healthy": "an ingest thread that commits and sleeps between rows: said as sleeping (its writer: io)",
    "requests_retry_backoff": "urllib3's Retry with back-off around a failing GET: the network's retry loop at "
                              "medium, sleep named as the alternative (the contested row; its writer files it "
                              "under sleep)",
    "hf_trainer_callback_silent_peer": "the tracking server stand-in is the launcher, outside the job, whose "
                                       "handler waits on an Event; the walk follows it there and a guessed edge "
                                       "to the launcher's pipe reader closes a cycle back to the trainer",
}


def test_every_recorded_case_is_in_the_corpus():
    assert set(RECORDED) <= set(ROWS), sorted(set(RECORDED) - set(ROWS))


@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.xfail(reason=KNOWN_WRONG[c], strict=True))
                                  if c in KNOWN_WRONG else c for c in RECORDED])
def test_a_corpus_case_replays_to_its_truth(case):
    report = load_report(str(CAPTURES / ("corpus_%s.json" % case)))
    report = dict(build_report(report.get("capture", report)), capture=report.get("capture", report))
    wrong = run_repros.judge_corpus(ROWS[case], report)
    assert wrong is None, wrong
