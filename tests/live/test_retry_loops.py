"""A job that only retries a failing call is blocked on what the call needs, and makes no progress.

Real workloads: a client whose connect() is refused (an except clause in its loop,
logging each retry), one that polls `while s.connect_ex(addr):` silently, and a retry
wrapper whose call sleeps one frame in before it times out.  The guard: a loop that
sleeps by design (`while True: time.sleep(1)`) stays idle by design.
"""
import re

import pytest

from helpers import inspect_json
from stalldiag.probes.syscall_counts import choose_backend


def retry_finding(report):
    return next((f for f in report["findings"] if f["kind"] == "retry-loop"), None)


def assert_only_retries(report, category, *fragments):
    verdict = report["verdict"]
    assert verdict["category"] == category, verdict["summary"]
    assert re.search("retries between sleeps|sleeps between attempts", verdict["summary"]), verdict["summary"]
    for fragment in fragments:
        assert fragment in verdict["summary"], verdict["summary"]
    assert verdict["progress"]["state"] == "no progress seen", verdict["progress"]
    assert retry_finding(report) is not None


def test_a_refused_connect_retried_in_a_loop_is_the_network(launch, tmp_path):
    log = tmp_path / "client.log"
    w = launch("retry_connect_refused.py", log, "100", settle=1.0)
    report = inspect_json(w.pid, duration=2)
    assert_only_retries(report, "network", "except ConnectionRefusedError", "connection refused, retrying")
    assert report["verdict"]["tid"] == w.pid


@pytest.mark.alone
def test_the_exact_mode_counts_the_failed_calls_and_their_errno(launch, tmp_path):
    backend, _tried = choose_backend()
    if backend is None:
        pytest.skip("no exact syscall backend here (strace, perf, bpftrace)")
    w = launch("retry_connect_refused.py", tmp_path / "client.log", "100", settle=1.0)
    report = inspect_json(w.pid, "--syscalls", "exact", duration=2)
    assert_only_retries(report, "network", "connect() failed")
    if report["capture"]["exact_syscalls"].get("errnos_known"):
        assert "ECONNREFUSED" in report["verdict"]["summary"]


def test_a_silent_poll_on_connect_ex_is_the_network(launch):
    w = launch("poll_until_connect.py", settle=1.0)
    report = inspect_json(w.pid, duration=2)
    assert_only_retries(report, "network", "sock.connect_ex")


def test_a_sleep_inside_a_call_its_caller_retries_is_a_retry(launch):
    w = launch("retry_wrapper_timeout.py", settle=1.0)
    report = inspect_json(w.pid, duration=2)
    assert_only_retries(report, "network", "with_retry", "except TimeoutError")


def test_an_except_clause_alone_does_not_say_the_call_fails(launch):
    """A sleep in a loop that catches errors, with no failure counted or written, is a retry
    that may be idle: the category is what the call is about, and it does not by itself say
    the job makes no progress."""
    w = launch("retry_wrapper_timeout.py", settle=1.0)
    report = inspect_json(w.pid, duration=2)
    finding = retry_finding(report)
    assert finding is not None and finding["failing"] is False, finding
    assert "sleeps between attempts" in report["verdict"]["summary"]
    assert not any("retries between sleeps" in e for e in report["verdict"]["progress"]["evidence"])


def test_a_loop_that_sleeps_by_design_is_not_a_retry(launch):
    w = launch("sleep_loop.py")
    report = inspect_json(w.pid, duration=2)
    assert report["verdict"]["category"] == "sleep", report["verdict"]["summary"]
    assert retry_finding(report) is None


def test_an_idle_job_waiting_on_an_uploader_that_retries_is_the_network(launch, tmp_path):
    """The job polls in a sleep loop; in its service process a thread retries a POST answered with
    500 and logs each retry.  The idle focus hands over to the retrying thread, and the growing
    log is no progress (wandb_finish_filestream_500, wandb#6803)."""
    w = launch("upload_retry_500.py", tmp_path, settle=1.5)
    report = inspect_json(w.pid, "--children", duration=3)
    verdict = report["verdict"]
    assert verdict["category"] == "network", verdict["summary"]
    assert verdict["thread_name"] == "uploader" and "retries between sleeps" in verdict["summary"], verdict["summary"]
    assert verdict["progress"]["state"] == "no progress seen", verdict["progress"]


def test_a_wait_of_an_hour_a_server_asked_for_is_a_sleep_not_the_network(launch):
    w = launch("retry_after_rate_limited.py", settle=1.0)
    report = inspect_json(w.pid, duration=3)
    verdict = report["verdict"]
    assert verdict["category"] == "sleep" and verdict["confidence"] == "medium", verdict["summary"]
    assert "Retry-After" in verdict["summary"] and "60 minutes" in verdict["summary"], verdict["summary"]
