"""What the object behind a wait says about whether the wait can end (probes/objects.py read it).

A thread blocked in Barrier.wait with no other thread left to arrive is, from its stack alone, a
wait "that nothing will end" for one of several reasons.  The barrier's own fields decide which:
it expects 4 parties and 3 arrived.  `unending(g, view)` returns, for the object the thread waits
on, the sentence its state proves (a Stuck), or None when the object was not read or its state
does not show the wait stuck (a queue that holds items, an event that is set, a lock that is free).

One row per kind of object: the state that keeps its waiters waiting, and what that state says.
"""
from typing import Optional

from ..records import typed_record
from .explain import waited_object
from ..vocab import Kind


@typed_record(frozen=True)
class Stuck:
    """The object a wait is on, and what its state proves."""
    held: object          # types.HeldObject
    says: str             # "it expects 4 parties and 3 arrived"
    closed: bool = False  # the state alone proves nothing can end the wait (an RLock's owner exited)


def _barrier(held, view, g):
    parties, count, state = held.get("parties"), held.get("count"), held.get("state")
    if state == "broken":
        return "it is broken (a party timed out or called abort()): every wait on it raises"
    if isinstance(parties, int) and isinstance(count, int) and count < parties and state == "filling":
        return "it expects %d parties and %d arrived: %d more must call wait()" % (parties, count, parties - count)
    return None


def _semaphore(held, view, g):
    value, bound = held.get("value"), held.get("initial_value")
    if value == 0:
        of = " of %d" % bound if isinstance(bound, int) else ""
        return "its value is 0%s: every permit was acquired and none released" % of
    return None


def _event(held, view, g):
    if held.get("is_set") is False:
        return "it was never set (or was cleared)"
    return None


def _queue(held, view, g):
    size = held.get("size") if held.get("size") is not None else held.get("in_flight")
    maxsize = held.get("maxsize")
    getting = "get" in held.frame.lower() or view.frame_kind in (Kind.QUEUE_GET,)
    if size == 0 and getting:
        return "it is empty"
    if isinstance(maxsize, int) and maxsize > 0 and size == maxsize and not getting:
        return "it is full (%d of maxsize %d)" % (size, maxsize)
    if held.frame.endswith("join") and held.get("unfinished_tasks"):
        return "%d tasks were put and not marked done (task_done())" % held.get("unfinished_tasks")
    return None


def _rlock(held, view, g):
    owner = held.get("owner")
    if held.get("locked") and isinstance(owner, int):
        idents = (g.objects.idents.get(view.pid) if g.objects else None) or {}
        if idents and owner not in idents:
            return "its owner, thread ident %d, is no longer alive: an RLock is released only by its owner" % owner
        if idents.get(owner) == view.tid:
            return "this thread owns it already"
    return None


def _lock(held, view, g):
    return "it is held" if held.get("locked") else None


def _future(held, view, g):
    state = held.get("state")
    if state in ("PENDING", "RUNNING"):
        return "it is %s: no result was set" % state.lower()
    return None


def _pool(held, view, g):
    workers, outstanding = held.get("workers"), held.get("outstanding")
    if workers == 0:
        return "it has no worker left"
    if held.get("state") in ("CLOSE", "TERMINATE") and outstanding:
        return "it is %s with %d results outstanding" % (held.get("state").lower(), outstanding)
    return None


def _executor(held, view, g):
    broken = held.get("broken")
    if broken:
        return "it is broken (%s)" % broken
    if held.get("shutdown"):
        return "it was shut down"
    return None


# fact kind -> the test of its state (None: the state does not show the wait stuck)
STATES = {
    "Barrier": _barrier, "MPBarrier": _barrier,
    "Semaphore": _semaphore, "SemLock": _semaphore,
    "Event": _event, "MPEvent": _event, "AsyncEvent": _event,
    "Queue": _queue, "MPQueue": _queue, "AsyncQueue": _queue, "SimpleQueue": _queue,
    "RLock": _rlock,
    "Lock": _lock,
    "Future": _future, "AsyncFuture": _future,
    "Pool": _pool,
    "ThreadPoolExecutor": _executor, "ProcessPoolExecutor": _executor,
}
CLOSED = {_rlock}   # its state proves the wait cannot end whatever other threads do


def unending(g, view) -> Optional[Stuck]:
    """What the object the thread waits on proves, or None (not read, or its state lets it end)."""
    held = waited_object(view)
    if held is None or not held.read:
        return None
    test = STATES.get(held.kind)
    says = test(held, view, g) if test else None
    if not says:
        return None
    return Stuck(held, says, closed=test in CLOSED and "no longer alive" in says)


def not_read(view):
    """Why the object the thread waits on could not be read, or None (read, or no object)."""
    held = waited_object(view)
    return held.fact.get("not_read") if held is not None and not held.read else None


def stuck_object_found(scene):
    """The stuck-object findings: the walk's (a wait no live thread is left to end, its object
    read), else the chain's end waiting on a lock whose state alone proves it stays held (an
    RLock whose owner exited)."""
    from .registry.names import M
    from .types import Finding
    found = [f for f in scene.walk.findings if f.kind == M.STUCK_OBJECT]
    if found:
        return found
    root = scene.root
    stuck = unending(scene.g, root) if root is not None and root.kind == Kind.LOCK else None
    if stuck is None or not stuck.closed:
        return []
    return [Finding.about(M.STUCK_OBJECT, root, stuck=stuck, waiter=root, co_waiters=[], stuck_too=[], alone=False,
                          native=0, pool=None, timers=[])]
