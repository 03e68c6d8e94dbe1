"""Saved captures with the objects behind the waits read (probes/objects.py), replayed: the state
the object was in decides the sentence and how sure it is."""
import pytest

from helpers import CAPTURES
from stalldiag.capture import load_report
from stalldiag.report import build_report

# capture -> words the summary holds
SAID = {
    "objects_barrier_short": ["Barrier", "it expects 4 parties and 3 arrived: 1 more must call wait()"],
    "objects_semaphore_leaked": ["BoundedSemaphore", "its value is 0 of 2"],
    "objects_queue_full": ["Queue", "it is full (4 of maxsize 4)"],
    "objects_rlock_owner_exited": ["an RLock", "is no longer alive: an RLock is released only by its owner"],
}


def replay(name):
    return build_report(load_report(str(CAPTURES / (name + ".json"))))


@pytest.mark.parametrize("name", sorted(SAID))
def test_the_object_state_is_the_sentence(name):
    verdict = replay(name)["verdict"]
    assert verdict["mechanism"] == "stuck-object", verdict["summary"]
    for words in SAID[name]:
        assert words in verdict["summary"], verdict["summary"]
    # no list of possible stories where the object decided
    assert "or was never started" not in verdict["summary"]


def test_without_the_object_the_same_wait_stays_at_medium_and_says_what_it_lacks():
    """The barrier capture with its objects section removed (an older capture, or the probe not
    run): the wait is an orphaned wait, said at medium, with what would settle it."""
    capture = load_report(str(CAPTURES / "objects_barrier_short.json"))
    capture["objects"] = None
    verdict = build_report(capture)["verdict"]
    assert verdict["mechanism"] == "orphaned-wait" and verdict["confidence"] == "medium", verdict
    assert "parties" not in verdict["summary"]


def test_an_object_that_could_not_be_read_keeps_the_verdict_at_medium():
    capture = load_report(str(CAPTURES / "objects_rlock_owner_exited.json"))
    for item in capture["objects"]["threads"]:
        item["fact"] = {"not_read": "reading 8 bytes at 0x7f00 of pid 1: EPERM"}
    verdict = build_report(capture)["verdict"]
    assert verdict["confidence"] == "medium", verdict
    assert any("EPERM" in u for u in verdict.get("unknown") or []), verdict.get("unknown")
