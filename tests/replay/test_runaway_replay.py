"""A healthy worker hashing rows in a for loop, its stdout block-buffered (the tenth round's
worker_print_block_buffered_stdout_silent, its second live run): 9 stack samples, all at the loop's
`h.update(...)` line. One line of a for loop that calls nothing known to run away is the loop's work
repeated, not a spin: CPU, "cannot tell", never "it spins" nor "no progress seen"."""
from helpers import CAPTURES
from stalldiag.capture import load_report
from stalldiag.report import build_report


def test_a_for_loops_one_line_of_work_is_not_a_runaway():
    verdict = build_report(load_report(str(CAPTURES / "for_loop_one_line_thin_samples.json")))["verdict"]
    assert verdict["category"] == "cpu", verdict["summary"]
    assert "spins" not in verdict["summary"], verdict["summary"]
    assert verdict["progress"]["state"] == "cannot tell", verdict["progress"]
    assert verdict["confidence"] != "high", verdict["confidence"]
