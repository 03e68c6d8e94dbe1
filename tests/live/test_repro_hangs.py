"""The reproductions of hangs reported in public issue trackers (fixtures/repro/), each run for real.

Written by helpers who saw neither stalldiag's code nor a list of its mechanisms; each cites its
thread and says in its manifest what the run is blocked on.  A row passes when the verdict's
category is the manifest's, and a run that makes no progress is not said to.  tools/run_repros.py
runs the same rows by hand and keeps the reports.
"""
import os
import sys

import pytest

from helpers import KNOWN_WRONG, ROOT

sys.path.insert(0, str(ROOT / "tools"))
import run_repros  # noqa: E402

ROWS = run_repros.manifests()

# Where "no progress" cannot be told from outside: the category is still checked.
PROGRESS_UNDECIDABLE = {
    # a pure-Python loop spinning over two lines is, to /proc and py-spy, a compute loop like
    # cpu_loop.py's; the frozen-stack rule catches it only when every sample hits one line
    # (2 runs of 3 here); its verdict is cpu either way
    "dataloader_epoch_spin",
    # a regex holding the GIL: its frozen stack needs 3 stack samples, and under load py-spy took
    # only 2 of it in a 4 s window (CI, 8adec81); with fewer the rule cannot tell, and says
    # "making progress" (the category, cpu, is still checked)
    "regex_gil_join_timeout",
    # the same for a single-threaded regex: py-spy, niced so as never to slow its target, took
    # fewer than 3 stack samples of it at 100% CPU in CI's 4 s window (its first full run)
    "entity_regex_redos",
    # a DataLoader worker spinning in a pure-Python generator over an empty shard: its stack
    # moves over several lines, like a worker preprocessing a heavy batch; the training loop
    # waits the whole window either way (category cpu, checked)
    "blend_empty_shard_spin",
    # a checkpoint write inside one writev() for the whole window to storage that moves slowly
    # (a file-server stand-in): nothing the job's processes count advances, so "no progress seen"
    # at medium (truth: slow but advancing); its category, io, is checked
    "ckpt_slow_storage",
}


def _needs(row):
    if row.get("gpu"):
        return "needs an NVIDIA GPU (its capture, recorded on the H200, is replayed in tests/replay)"
    if "torch" in open(os.path.join(run_repros.ROOT, row["file"])).read():
        try:
            import torch  # noqa: F401
        except ImportError:
            return "needs torch"
    return None


# Still wrong, with why: the replay of their recorded captures holds them as wrong (a strict
# xfail in tests/replay/test_reproduced_hangs_replay.py, KNOWN_WRONG in helpers.py); live, some are
# right on a lucky run (a loaded machine makes cpuset_shrunk_omp_threads's threads wait for a
# CPU), so a live run of those of the fourth round (rh, ri, rj) proves nothing
ROUND = {row["id"]: row["round"] for row in ROWS}
STILL_WRONG = {rid: why for rid, why in KNOWN_WRONG.items() if ROUND[rid] in ("rh", "ri", "rj", "rm", "rn", "ro")}


# Right in their recorded capture, but what they reproduce depends on this machine's speed.
TIMING_BOUND = {
    "affinity_env_pins_workers": "its main thread sleeps 1 s in a measurement (cpu_percent(interval=1)) "
                                 "every 10 batches; on a fast CPU the workers finish those batches in a "
                                 "fraction of that and the run really is asleep (the recorded capture, "
                                 "workers busy on CPU 0, replays to cpu)",
}


def _quiet(row):
    """A stall whose processes wait and compute nothing (a compile computes): it may run beside
    another live test."""
    return row["truth"].get("progress") == "none" and row["truth"]["blocked_on"] not in ("cpu", "compilation")


# The blind rounds of 2026-12-04 and 2026-12-07 (rm ... rw: 6 of them GPU) ran live for their
# first-run tables (docs/validation.md) and are replayed from those captures in every run
# (tests/replay/test_reproduced_hangs_replay.py); live again only with STALLDIAG_LIVE_ROUNDS=all,
# which adds about 25 minutes to the live layer and would take CI past its 40.
LATEST_ROUNDS = ("rm", "rn", "ro", "rp", "rq", "rr", "rs", "rt", "ru", "rv", "rw", "rx", "ry")
LIVE_ALL = os.environ.get("STALLDIAG_LIVE_ROUNDS") == "all"


def _param(row):
    if row.get("round") in LATEST_ROUNDS and not LIVE_ALL:
        return pytest.param(row, marks=pytest.mark.skip(
            reason="replayed from its first-run capture; live with STALLDIAG_LIVE_ROUNDS=all"))
    if row["id"] in TIMING_BOUND:
        return pytest.param(row, marks=pytest.mark.skip(reason="timing-bound: " + TIMING_BOUND[row["id"]]))
    if row["id"] in STILL_WRONG:
        return pytest.param(row, marks=pytest.mark.skip(reason="still wrong: " + STILL_WRONG[row["id"]]))
    return row if _quiet(row) else pytest.param(row, marks=pytest.mark.alone)


@pytest.mark.parametrize("row", [_param(r) for r in ROWS], ids=[r["id"] for r in ROWS])
def test_reproduced_hang(row, tmp_path):
    reason = _needs(row)
    if reason:
        pytest.skip(reason)
    result = run_repros.run_one(row, 4, str(tmp_path))
    if "error" not in result and not (result["got"] == result["want"] and (
            result["progress_ok"] or row["id"] in PROGRESS_UNDECIDABLE)):
        # py-spy is niced so as never to slow its target, and may take one stack sample of a busy
        # process in a window: a second, fresh run of the reproduction decides (both must miss)
        result = run_repros.run_one(row, 4, str(tmp_path))
    assert "error" not in result, result.get("error")
    assert result["got"] == result["want"], "%s (%s): %s" % (row["id"], row["cite"], result["summary"])
    if row["id"] not in PROGRESS_UNDECIDABLE:
        assert result["progress_ok"], "%s: %s" % (row["id"], result["progress"])
