"""The locks a thread holds and wants, read from its frames' source (sources.py annotates each
frame with the statements enclosing its line and the acquire() calls before it).

A thread inside `with X:` (or after an unreleased `X.acquire()`) holds X; the line it waits on
names what it wants.  Frames a forked child inherited from its parent hold nothing in the child
(knowledge.frames.own_frames).
"""
from ..knowledge import frames as frame_table
from ..knowledge.frames import LOCK_ACQUIRE, LOCK_WITH


def lock_intent(view):
    """Names of locks a thread holds (enclosing `with X:`, or an X.acquire() earlier in the
    function) and wants (the line it waits on)."""
    holds, wants = [], None
    frame = view.user_frame()
    if frame and len(frame) > 3 and isinstance(frame[3], dict):
        code = frame[3].get("code") or ""
        wants = frame_table.lock_taken(code)
        holds = [name for name, _held in _frame_holds(frame)]
    return {"holds": holds, "wants": wants}


def _frame_holds(frame):
    """(name, source entry) of the locks one annotated frame is inside or took by hand."""
    source = frame[3] if len(frame) > 3 and isinstance(frame[3], dict) else {}
    found = []
    for opener in source.get("within") or []:
        match = LOCK_WITH.match(opener.get("code") or "")
        if match:
            found.append((match.group(1), opener))
    for taken in source.get("acquired") or []:
        match = LOCK_ACQUIRE.search(taken.get("code") or "")
        if match:
            found.append((match.group(1), taken))
    return found


def held_locks(view):
    """(name, frame, source entry) of every lock the frames of a thread's top stack hold."""
    return [(name, frame, held) for frame in frame_table.own_frames(view.top_stack)
            for name, held in _frame_holds(frame)]


def _method_class(frame):
    # py-spy names methods "Class.method" on Python 3.11+; before, the source says
    source = frame[3] if len(frame) > 3 and isinstance(frame[3], dict) else {}
    if source.get("class"):
        return source["class"]
    return frame[0].rsplit(".", 1)[0] if frame[0] and "." in frame[0] else None


def holds_same(holder, wants, waiter):
    """holder holds a lock named `wants`; `self.x` counts only in a method of the waiter's class
    (another class's lock of the same name is another lock)."""
    cls = _method_class(waiter.user_frame()) if wants.startswith("self.") and waiter.user_frame() else None
    return any(name == wants and (cls is None or _method_class(frame) in (cls, None))
               for name, frame, _held in held_locks(holder))


def self_held(view):
    """(frame, source entry) where a thread already took the lock it now waits for, or None.
    `self.x` in an outer frame is the same lock only in a method of the same class (another
    object's lock of that name is a different lock); other names are taken to be the same."""
    wants = lock_intent(view)["wants"]
    inner = view.user_frame()
    if not wants or not inner:
        return None
    cls = _method_class(inner)
    for frame in frame_table.own_frames(view.top_stack):
        if frame is not inner and wants.startswith("self.") and (cls is None or _method_class(frame) != cls):
            continue
        for name, held in _frame_holds(frame):
            if name == wants:
                return frame, held
    return None


def shared_futex(view):
    detail = view.top_detail()
    return isinstance(detail, dict) and detail.get("shared")


def futex_word(view):
    detail = view.top_detail()
    return detail.get("futex") if isinstance(detail, dict) else None


def held_in_window(view):
    """Lock names a thread was inside (`with X:` around its own code) in any stack sample."""
    names = set()
    for frames, _count in view.stacks_by_count():
        for frame in frame_table.own_frames(frames):
            source = frame[3] if len(frame) > 3 and isinstance(frame[3], dict) else None
            for opener in (source or {}).get("within") or []:
                match = LOCK_WITH.match(opener.get("code") or "")
                if match:
                    names.add(match.group(1))
    return names
