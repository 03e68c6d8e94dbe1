"""What one thread view is, beside what it did: predicates the graph and the edges both ask.

(Pure functions of a threads.ThreadView; kept apart from graph.py so that edges.py, which the
walk asks for each thread's wait-for edges, does not import the graph that holds them.)
"""
from ..knowledge import frames as frame_table
from ..knowledge.roles import native_role, role_of
from . import kinds
from .motion import stuck
from ..vocab import Kind

ACTIVITY_RANK = {k.name: k.rank for k in kinds.KINDS if k.rank}
STRAGGLER_MARGIN = 20.0   # SM points a straggler's GPU must exceed the waiter's by
REPLACEMENT_GAP_S = 0.1   # a pool worker started this long after the first is a replacement




def idle_helper(view):
    """A helper thread parked in a wait (NCCL's socket listener, a pool's idle worker): no
    Python stack, or an executor's worker waiting for a task, and no CPU.  Nobody's wait ends
    through it."""
    if (view.cpu_seconds or 0) >= 0.05 or view.kind in (Kind.CPU, Kind.IO, Kind.COMPILE):
        return False
    return not view.top_stack or frame_table.idle_thread_pool_worker(view.top_stack)


# what a server's connection handler is stuck in when none of its threads reads the connection
STUCK_HANDLER_KINDS = ("lock", "condition", "event", "semaphore", "future", "queue-get", "queue-put", "thread-join")


def stuck_handler(view):
    """A server thread stuck (a lock, a condition, a join ...) inside a request handler: the
    handler a client of that server waits for, when none of its threads reads the connection."""
    return view.kind in STUCK_HANDLER_KINDS and view.share >= 0.8 and frame_table.serves_requests(view.top_stack)


def accepting(view):
    """A server thread waiting for a client: in accept(), or polling only listening sockets
    (socketserver's serve_forever, an asyncio server with no connection).  It holds no lock and
    serves no connection, so it is never the thread a waiter waits for."""
    if view.kind != Kind.NETWORK:
        return False
    if view.main_activity()[0] in ("accept", "accept4"):
        return True
    detail = view.top_detail()
    watched = detail.get("watching") if isinstance(detail, dict) else None
    return bool(watched) and all(isinstance(w, dict) and w.get("state") == "LISTEN" for w in watched)


def waits_by_design(view):
    """A framework's thread idle in the wait it exists for (knowledge/roles.py: an event loop
    polling, a listener in accept(), a manager's server, a pool's handler threads, a process
    watcher, a queue's feeder), a native helper parked with no Python stack, or a server in
    accept(): it waits for work, and a wait that ends at it ends where the work went instead."""
    if accepting(view) or idle_helper(view):
        return True
    if view.kind in (Kind.CPU, Kind.IO, Kind.COMPILE):
        return False
    if not view.top_stack and native_role(view.comm) is not None:
        return True      # (pt_autograd_0 between two backward passes: it waits for the next one)
    return role_of(view.top_stack) is not None


def writes_pipe(view):
    """A thread caught writing a pipe (a full one: its reader does not drain it)."""
    return view.kind == Kind.PIPE and any(label.startswith("write") for label in view.activity)


def waited_targets(view):
    """pipe:[..] / socket:[..] targets a thread waits on, from its blocked syscalls."""
    targets = []
    for index, _count in view.detail_counts.most_common(4):
        detail = view.details[index] if index < len(view.details) else None
        if not isinstance(detail, dict):
            continue
        fds = [detail["fd"]] if detail.get("fd") else list(detail.get("watching") or [])
        for fd in fds:
            target = (fd or {}).get("target") or ""
            if target.startswith(("pipe:", "socket:")):
                targets.append(target)
    return targets


def in_file_lock(view):
    return view.kernel_kind == Kind.LOCK and bool({label for label in view.activity} & {"flock", "fcntl", "fcntl64"})


def co_waiter(other, view):
    """Stuck in the same wait as view (the same kind, at the same line of the same code): a peer
    waiting on the same object (parties at a barrier, consumers of one queue) cannot end it."""
    mine, theirs = view.user_frame(), other.user_frame()
    return bool(mine and theirs) and other.kind == view.kind and stuck(other) and \
        tuple(mine[:3]) == tuple(theirs[:3])


def library_only(view):
    """A thread whose every frame is library code (a pool's helper thread)."""
    from ..knowledge.frames import is_library_file
    return bool(view.top_stack) and all(is_library_file(f[1]) for f in view.top_stack)


def is_lock_file(wait):
    """A file a sleep loop polls is a lock file: a locking library's loop, or a lock's name."""
    path = (wait.path or "").lower()
    return wait.library not in (None, "user code") or path.endswith(frame_table.LOCK_FILE_SUFFIXES)


# roles whose wait is for their own next turn (a timeout they set), not for work someone hands them
TURN_ROLES = ("scheduler-loop", "process-manager", "progress-monitor")


def waits_for_its_turn(view):
    """A framework's loop in its timed wait for its next turn (a scheduler's next job, a process
    manager's next check of its workers) that came back to it in the window: idle by design."""
    row = role_of(view.top_stack) if view.top_stack else None
    return row is not None and row.role in TURN_ROLES and woken_timed_wait(view)


def woken_timed_wait(view):
    """A wait with a timeout that the thread came back to in the window (it woke, went on, and waits
    again): a scheduler's or a poll loop's wait for its next turn, which nobody needs to end."""
    return view.timed_wait and ((view.thread.ctx or {}).get("voluntary") or 0) >= 1
