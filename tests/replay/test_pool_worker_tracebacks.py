"""A pool whose workers die in its initializer, two at a time: both write "Process ForkPoolWorker-N:"
before either traceback, and the last lines read of the job's log (fixtures/captures/
pool_workers_dying_headers_cut.json, recorded on CPython 3.9 from the live test that flaked on it)
hold the two tracebacks without their headers. The tracebacks through the pool's worker function
still say a pool worker died."""
from helpers import CAPTURES
from stalldiag.capture import load_report
from stalldiag.report import build_report


def test_a_pool_workers_traceback_without_its_header_still_says_it_died():
    capture = load_report(str(CAPTURES / "pool_workers_dying_headers_cut.json"))
    tails = [t["stderr"]["lines"] for t in capture["output_tail"].values()]
    assert not any(line.startswith("Process ") for lines in tails for line in lines)   # the headers fell out
    verdict = build_report(capture)["verdict"]
    assert verdict["mechanism"] == "pool-workers-dying" and verdict["category"] == "subprocess", verdict["summary"]
    assert "a pool worker died on FileNotFoundError" in verdict["summary"], verdict["summary"]
