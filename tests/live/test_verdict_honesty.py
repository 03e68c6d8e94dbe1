"""What the verdict pipeline may claim: the root of a wait is the holder of what is waited on,
whatever that holder does; a guess is never said as a proof (issue 32).  Each on a real workload."""
from helpers import children_of, inspect_json, wait_for


def kinds(report):
    return {f["kind"] for f in report["findings"]}


def test_a_pipe_held_by_a_process_that_never_writes_it_is_the_cause_whatever_that_process_waits_on(launch):
    """The job reads its stdin, whose writing end only its supervisor (outside the inspected tree)
    holds; the supervisor's thread sits in accept().  Before: 'Waiting on the network'."""
    w = launch("pipe_fed_by_idle_server.py", settle=0.5)
    (job,) = wait_for(lambda: children_of(w.pid), what="the job")
    report = inspect_json(job, duration=2)
    verdict = report["verdict"]
    assert verdict["category"] == "io", verdict["summary"]
    assert verdict["summary"].startswith("Blocked reading input"), verdict["summary"]
    assert verdict["pid"] == w.pid and verdict["mechanism"] == "unfed-pipe", verdict["summary"]
    assert verdict["progress"]["state"] == "no progress seen"


def test_idle_native_threads_are_not_a_likely_deadlock(launch):
    """A leaked lock beside torch's OpenMP threads (parked on futexes, no Python frame).  Before:
    'Likely deadlock: 8 threads blocked on locks ...', high, an OpenMP thread the culprit."""
    w = launch("leaked_lock_beside_openmp_threads.py", settle=0.5)
    report = inspect_json(w.pid, duration=2)
    verdict = report["verdict"]
    assert verdict["category"] == "locks" and verdict["tid"] == w.pid, verdict["summary"]
    assert "likely-deadlock" not in kinds(report)
    assert verdict["confidence"] == "medium" and verdict["unknown"], verdict.get("confidence_rests_on")
