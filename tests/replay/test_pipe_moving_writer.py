"""A pipe whose writer's writes go through between waits is drained, slowly: not the undrained
pipe (fixtures/captures/spawn_workers_pipe_drained_slowly.json: a DataLoader starting spawned
workers one after another, the parent writing each worker's pickled dataset into its pipe while
the worker unpickles it; recorded from the ninth round's first run, before the stall had settled)."""
from helpers import CAPTURES
from stalldiag.capture import load_report
from stalldiag.report import build_report


def test_a_writer_that_moves_is_not_blocked_on_an_undrained_pipe():
    report = build_report(load_report(str(CAPTURES / "spawn_workers_pipe_drained_slowly.json")))
    assert "undrained-pipe" not in [f["kind"] for f in report["findings"]], report["verdict"]["summary"]
    assert not report["verdict"]["summary"].startswith("Blocked writing output"), report["verdict"]["summary"]
