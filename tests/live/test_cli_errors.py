"""Bad input gets one line on stderr, a documented exit code and no traceback."""
import json
import os
import time

import pytest

from helpers import CAPTURES, assert_one_line_error, run_stalldiag

pytestmark = pytest.mark.alone


def free_pid():
    pid = 4_000_000
    while os.path.exists("/proc/%d" % pid):
        pid -= 1
    return pid


def test_missing_pid():
    assert_one_line_error(run_stalldiag("inspect", free_pid()), 3, "no process with PID")


def test_pid_not_a_number():
    proc = run_stalldiag("inspect", "abc")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "is not a valid integer" in proc.stderr


def test_kernel_thread_refused():
    assert_one_line_error(run_stalldiag("inspect", 2, "--duration", 0), 4, "kernel thread")


def test_output_directory_missing_refused_before_sampling(launch, tmp_path):
    w = launch("sleep_loop.py")
    started = time.monotonic()
    proc = run_stalldiag("inspect", w.pid, "--duration", 30, "-o", tmp_path / "nope" / "r.json")
    assert time.monotonic() - started < 10
    assert_one_line_error(proc, 7, "does not exist")


def test_unknown_output_format_refused(launch, tmp_path):
    w = launch("sleep_loop.py")
    assert_one_line_error(run_stalldiag("inspect", w.pid, "-o", tmp_path / "r.pdf"), 7, "unknown report format")


def test_report_of_missing_truncated_and_foreign_files(tmp_path):
    assert_one_line_error(run_stalldiag("report", tmp_path / "none.json"), 6, "no such file")
    truncated = tmp_path / "truncated.json"
    truncated.write_text('{"schema_version": 1, "processes": [')
    assert_one_line_error(run_stalldiag("report", truncated), 6, "invalid or truncated JSON")
    foreign = tmp_path / "foreign.json"
    foreign.write_text('{"hello": "world"}')
    assert_one_line_error(run_stalldiag("report", foreign), 6, "no schema_version")
    binary = tmp_path / "binary.json"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    assert_one_line_error(run_stalldiag("report", binary), 6, "not a stalldiag report")


def test_report_of_newer_schema(tmp_path):
    capture = json.loads((CAPTURES / "deadlock.json").read_text())
    capture["capture"]["schema_version"] = 99
    newer = tmp_path / "newer.json"
    newer.write_text(json.dumps(capture))
    assert_one_line_error(run_stalldiag("report", newer), 6, "newer than this stalldiag understands")


def test_report_of_wrong_types_is_a_clean_error(tmp_path):
    capture = json.loads((CAPTURES / "deadlock.json").read_text())
    capture["capture"]["processes"][0]["threads"][0]["samples"] = "not a list"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(capture))
    proc = run_stalldiag("report", bad)
    assert proc.returncode in (0, 6) and "Traceback" not in proc.stderr
