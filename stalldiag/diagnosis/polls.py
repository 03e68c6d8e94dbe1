"""Detectors for a chain that ends at a thread that only sleeps between attempts (a poll loop):
what it polls for, when the graph can tell.

  lock-poll     it sleeps between attempts to take a lock (a lock file, a queue file, a lock
                service: acquire() in a sleep loop), and nobody was found holding it
  child-exited  it polls while a child of its process has exited with a failure: the child that
                was to end the wait (a saver, a writer) is gone

Each returns a Finding or None; the registry's rows say what they decide.
"""
from ..knowledge import frames as frame_table
from .explain import frame_text, process_text
from .types import Finding

POLL_KINDS = ("sleep", "poll", "other")
STUCK_SHARE = 0.8


def _polling(view):
    return view.kind in POLL_KINDS and view.share >= STUCK_SHARE and view.top_stack


def lock_poll(g, view):
    """A thread that sleeps between attempts inside a function that takes a lock."""
    if not _polling(view) or (view.pid, view.tid) in g.file_waits:
        return None   # (a lock file the file-wait probe resolved says more: its path and holders)
    frame = frame_table.lock_poll_frame(view.top_stack)
    if frame is None:
        return None
    return Finding.about("lock-poll", view, waiter=view, frame=frame)


def child_exited(g, view):
    """A poll loop in a process whose child exited with a failure and was never reaped.  A loop
    that retries a call seen failing (a refused connect) is explained by that call instead."""
    if not _polling(view) or (g.retry(view) or {}).get("failing"):
        return None
    dead = [p for p in g.proc_list if p.ppid == view.pid and p.exit_status and "exit code 0" not in p.exit_status]
    if not dead:
        return None
    return Finding.about("child-exited", view, waiter=view, dead=dead)


DETECTORS = (lock_poll, child_exited)


def detect(g, view):
    """Every finding these detectors make of the chain's end."""
    return [found for found in (detector(g, view) for detector in DETECTORS) if found is not None]


# -- what each finding says (the registry's `says`) -------------------------------------------

def lock_poll_text(g, waiter, frame):
    return ("%s sleeps between attempts to take a lock at %s, and no holder of it was found: a lock file, queue "
            "file or lock service that a run which died left taken, or a lock call that keeps failing" % (
                waiter.label, frame_text(frame)))


def child_exited_text(g, waiter, dead):
    return ("%s polls in a sleep loop at %s, and %s, its child, exited (%s) and was never reaped: if it was to end "
            "the wait (a saver, a writer, a worker), nothing will" % (
                waiter.label, frame_text(waiter.user_frame()) or "?", "; ".join(process_text(p) for p in dead[:3]),
                "; ".join(p.exit_status for p in dead[:3])))
