"""Which object states keep a wait from ending (diagnosis/objects.py), one row at a time."""
from types import SimpleNamespace

import pytest

from stalldiag.diagnosis.objects import unending
from stalldiag.diagnosis.types import HeldObject, Objects


def view_on(fact, frame="Barrier.wait", local="self", frame_kind=None, pid=7, tid=8):
    held = HeldObject(pid, tid, frame, local, fact.get("type_name", "?"), fact, "text")
    return SimpleNamespace(objects=[held], frame_kind=frame_kind, pid=pid, tid=tid)


def graph(idents=None):
    return SimpleNamespace(objects=Objects({}, {7: idents or {}}, []))


@pytest.mark.parametrize("fact,frame,stuck", [
    ({"kind": "Barrier", "parties": 4, "count": 3, "state": "filling"}, "Barrier.wait", "expects 4 parties and 3"),
    ({"kind": "Barrier", "parties": 4, "count": 0, "state": "draining"}, "Barrier.wait", None),
    ({"kind": "Barrier", "parties": 2, "count": 1, "state": "broken"}, "Barrier.wait", "broken"),
    ({"kind": "Semaphore", "value": 0, "initial_value": 3}, "Semaphore.acquire", "value is 0 of 3"),
    ({"kind": "Semaphore", "value": 1, "initial_value": {"not_read": "x"}}, "Semaphore.acquire", None),
    ({"kind": "Event", "is_set": False}, "Event.wait", "never set"),
    ({"kind": "Event", "is_set": True}, "Event.wait", None),
    ({"kind": "Event", "is_set": {"not_read": "EPERM"}}, "Event.wait", None),
    ({"kind": "Queue", "size": 0, "maxsize": 0}, "Queue.get", "empty"),
    ({"kind": "Queue", "size": 3, "maxsize": 0}, "Queue.get", None),
    ({"kind": "Queue", "size": 4, "maxsize": 4}, "Queue.put", "full (4 of maxsize 4)"),
    ({"kind": "MPQueue", "in_flight": 0, "maxsize": 10}, "Queue.get", "empty"),
    ({"kind": "Future", "state": "PENDING"}, "Future.result", "pending"),
    ({"kind": "Future", "state": "FINISHED"}, "Future.result", None),
    ({"kind": "Pool", "workers": 0, "outstanding": 2, "state": "RUN"}, "ApplyResult.get", "no worker"),
])
def test_a_state_that_keeps_the_wait(fact, frame, stuck):
    found = unending(graph(), view_on(fact, frame))
    if stuck is None:
        assert found is None
    else:
        assert found is not None and stuck in found.says, found


def test_an_rlock_whose_owner_is_not_a_live_thread_is_closed():
    fact = {"kind": "RLock", "locked": True, "owner": 111, "count": 1}
    found = unending(graph({222: 8}), view_on(fact, "Trainer.step", "self._lock"))
    assert found.closed and "111" in found.says
    assert unending(graph({111: 9, 222: 8}), view_on(fact, "Trainer.step", "self._lock")) is None


def test_an_object_not_read_proves_nothing():
    assert unending(graph(), view_on({"not_read": "EPERM"})) is None


def test_the_object_a_wait_is_on_is_the_outermost_blocking_calls_not_the_callers():
    from stalldiag.diagnosis.explain import waited_object
    inner = HeldObject(7, 8, "Condition.wait", "self", "threading.Condition", {"kind": "Condition"}, "c")
    outer = HeldObject(7, 8, "Barrier.wait", "self", "threading.Barrier", {"kind": "Barrier"}, "b")
    caller = HeldObject(7, 8, "train", "self", "Trainer", {"kind": "Value"}, "t", caller=True)
    assert waited_object(SimpleNamespace(objects=[inner, outer, caller])) is outer
