"""Detectors for a chain that ends at a thread that only sleeps between attempts (a poll loop):
what it polls for, when the graph can tell.

  lock-poll     it sleeps between attempts to take a lock (a lock file, a queue file, a lock
                service: acquire() in a sleep loop), and nobody was found holding it
  child-exited  it polls while a child of its process has exited with a failure: the child that
                was to end the wait (a saver, a writer) is gone
  thread-died   it waits, polls or spins while a thread of its process died on an exception (the
                job's output shows "Exception in thread NAME" and its traceback) and no thread of
                that name is alive: the thread that was to set what it waits for is gone
  flag-orphaned it polls a flag (`while not self._ready: sleep`) and is the only Python thread of
                its process, with no child: no thread is left to set the flag (only a signal
                handler could); flag-orphaned-network when the flag and its code are about a
                server (`_server_ready` in a server's start()): a server thread that never came up

Each returns a Finding or None; the registry's rows say what they decide.
"""
import re

from ..knowledge import frames as frame_table
from .explain import frame_text, process_text
from .motion import STUCK_SHARE, in_one_function, runaway
from .types import Finding
from .registry.names import M
from ..vocab import Kind

POLL_KINDS = ("sleep", "poll", "other")


def _polling(view):
    return view.kind in POLL_KINDS and view.share >= STUCK_SHARE and view.top_stack


def lock_poll(g, view):
    """A thread that sleeps between attempts inside a function that takes a lock."""
    if not _polling(view) or (view.pid, view.tid) in g.file_waits:
        return None   # (a lock file the file-wait probe resolved says more: its path and holders)
    frame = frame_table.lock_poll_frame(view.top_stack)
    if frame is None:
        return None
    return Finding.about(M.LOCK_POLL, view, waiter=view, frame=frame)


def child_exited(g, view):
    """A poll loop in a process whose child exited with a failure and was never reaped.  A loop
    that retries a call seen failing (a refused connect) is explained by that call instead."""
    if not _polling(view) or (g.retry(view) or {}).get("failing"):
        return None
    dead = [p for p in g.proc_list if p.ppid == view.pid and p.exit_status and "exit code 0" not in p.exit_status]
    if not dead:
        return None
    return Finding.about(M.CHILD_EXITED, view, waiter=view, dead=dead)


# Python's threading.excepthook: "Exception in thread NAME:" (3.10+: "NAME (target)"), then the
# traceback, then the exception's own line, unindented
THREAD_DIED = re.compile(r"^Exception in thread (.+?):\s*$")
# multiprocessing's bootstrap writes "Process ForkPoolWorker-3:" above the traceback of a process
# whose target raised
PROCESS_DIED = re.compile(r"^Process (\S+):\s*$")
EXCEPTION_LINE = re.compile(r"^([A-Za-z_][\w.]*)(: .*)?$")
WAITING_KINDS = POLL_KINDS + ("event", "condition", "queue-get", "future", "semaphore", "lock", "cpu")


def died_threads(g, pid, header=THREAD_DIED):
    """[(thread name, the exception's line)] of threads the process's output says died (with
    header=PROCESS_DIED: of multiprocessing processes, whose output is the job's)."""
    from .retry import output_lines
    found, current = [], None
    for line in output_lines(g, pid):
        match = header.match(line)
        if match:
            current = [match.group(1).split(" (")[0], None]
            found.append(current)
        elif current is not None and not line.startswith((" ", "\t", "Traceback")) and EXCEPTION_LINE.match(line):
            current[1] = line.strip()
    return [(name, error) for name, error in found if error]


POOL_WORKER_FRAME = re.compile(r'multiprocessing[/\\]pool\.py", line \d+, in worker$')


def died_pool_workers(g, pid):
    """[(worker name, the exception's line)] of multiprocessing.Pool workers the process's output
    says died: each "Process ForkPoolWorker-N:" traceback, or, where two workers died at once and
    their headers came first and fell out of the lines read, a traceback through the pool's worker
    function ("a pool worker")."""
    named = [(name, error) for name, error in died_threads(g, pid, PROCESS_DIED) if "PoolWorker" in name]
    if named:
        return named
    from .retry import output_lines
    found, in_worker = [], False
    for line in output_lines(g, pid):
        if line.startswith("Traceback"):
            in_worker = False
        elif POOL_WORKER_FRAME.search(line.strip()):
            in_worker = True
        elif in_worker and not line.startswith((" ", "\t")) and EXCEPTION_LINE.match(line):
            found.append(("a pool worker", line.strip()))
            in_worker = False
    return found


def feeder_failed(g, pids):
    """The exception line of the last traceback, in these processes' output, that went through
    a multiprocessing queue's feeder thread (`_feed`): a message the queue dropped, or None."""
    from .retry import output_lines
    found, in_feed = None, False
    for pid in pids:
        for line in output_lines(g, pid):
            if line.startswith("Traceback"):
                in_feed = False
            elif line.lstrip().startswith("File ") and line.rstrip().endswith(", in _feed"):
                in_feed = True
            elif in_feed and not line.startswith((" ", "\t")) and EXCEPTION_LINE.match(line):
                found, in_feed = line.strip(), False
    return found


def thread_died_at_root(scene):
    """thread_died() of the chain's end, with what the walk found of the same wait."""
    root = scene.root
    orphan = next((f.facts for f in scene.walk.findings if f.kind in (M.ORPHANED_WAIT, M.STUCK_OBJECT) and f.tid == root.tid
                   and f.pid == root.pid), None)
    return thread_died(scene.g, root, orphan)


def thread_died(g, view, orphan=None):
    """A waiting, polling or spinning thread beside a thread of its process that died on an
    exception its output shows, and that is no longer alive."""
    if view.kind not in WAITING_KINDS or view.share < STUCK_SHARE or (view.kind == Kind.CPU and not (
            runaway(view, g.procs.get(view.pid)) or in_one_function(view))):
        return None
    alive = {name for v in g.by_pid.get(view.pid, []) for name in (v.name, v.comm) if name}
    dead = [(name, error) for name, error in died_threads(g, view.pid) if name not in alive]
    if not dead:
        return None
    return Finding.about(M.THREAD_DIED, view, waiter=view, dead=dead[-1], orphan=orphan)


def flag_orphaned(g, view):
    """A sleep loop polling a flag, alone in its process: nothing left can set the flag."""
    from ..knowledge import retries as retry_table
    if not _polling(view) or (g.retry(view) or {}).get("failing") or died_threads(g, view.pid):
        return None   # (a failing retry, or a death the output shows, says more)
    frame = view.user_frame()
    source = frame[3] if frame is not None and len(frame) > 3 and isinstance(frame[3], dict) else {}
    loop = source.get("loop") or {}
    code = (loop.get("code") or "").strip()
    if not retry_table.FLAG_LOOP.match(code) or retry_table.STOP_FLAG.search(code) or loop.get("handlers"):
        return None
    others = [v for v in g.by_pid.get(view.pid, []) if v is not view and v.top_stack]
    if others or g.live_children(view.pid):
        return None
    about = " ".join([code, frame[0] or "", source.get("class") or ""])
    server = bool(retry_table.FLAG_NETWORK.search(about))
    kind = M.FLAG_ORPHANED_NETWORK if server else M.FLAG_ORPHANED
    # a copy of this program outside the job that listens: a server an earlier run left holds the
    # port this one's server thread could not take
    leftover = next((t for t in (g.resources.twins if g.resources is not None else []) if t.listening), None) \
        if server else None
    return Finding.about(kind, view, waiter=view, code=code, frame=frame, server=server, leftover=leftover)


DETECTORS = (lock_poll, child_exited, thread_died, flag_orphaned)


def detect(g, view):
    """Every finding these detectors make of the chain's end."""
    return [found for found in (detector(g, view) for detector in DETECTORS) if found is not None]


# -- what each finding says (the registry's `says`) -------------------------------------------

def lock_poll_text(g, waiter, frame):
    return ("%s sleeps between attempts to take a lock at %s, and no holder of it was found: a lock file, queue "
            "file or lock service that a run which died left taken, or a lock call that keeps failing" % (
                waiter.label, frame_text(frame)))


def thread_died_text(g, waiter, dead, orphan=None):
    name, error = dead
    return ("%s %s at %s for what thread '%s' was to do, and that thread died on %s (its traceback is in "
            "the job's output) and is no longer alive: nothing will end the wait" % (
                waiter.label, "spins" if waiter.kind == Kind.CPU else "waits", frame_text(waiter.user_frame()) or "?",
                name, error)) + _orphaned(orphan)


def _orphaned(orphan):
    """What the walk found of the same wait (its orphaned-wait's facts): "; no thread is left to
    end the wait: <who else waits, stuck>"."""
    from .formatter import nobody_left
    if orphan is None:
        return ""
    why = nobody_left(orphan["co_waiters"], orphan["stuck_too"], orphan["alone"], orphan["native"],
                      orphan.get("timers", ()))
    stuck = orphan.get("stuck")
    said = "; it waits on %s: %s" % (stuck.held.type.rsplit(".", 1)[-1], stuck.says) if stuck is not None else ""
    return "%s; no live thread is left to end the wait: %s" % (said, why) if why else said


def flag_orphaned_text(g, waiter, code, frame, server, leftover):
    if leftover is not None:
        return ("%s polls `%s` at %s in a sleep loop for its server, and no thread is left to set that flag: the "
                "server thread has ended. pid %d, a copy of this program outside the job (ppid %s, `%s`), listens "
                "on %s: a server an earlier run left holds the port this one could not take (Address already in "
                "use)" % (waiter.label, code, frame_text(frame) or "?", leftover.pid, leftover.ppid,
                          (leftover.cmdline or leftover.comm or "?")[:120], ", ".join(leftover.listening[:3])))
    return ("%s polls `%s` at %s in a sleep loop, and it is the only Python thread of its process, with no "
            "child: no thread is left to set that flag, so only a signal handler could end the wait. The thread "
            "that was to set it (%s) has ended; an exception ends a thread quietly, its traceback going to "
            "the job's stderr" % (waiter.label, code, frame_text(frame) or "?",
                                  "a server thread that never came up" if server else "a loader, a worker"))


def child_exited_text(g, waiter, dead):
    return ("%s polls in a sleep loop at %s, and %s, its child, exited (%s) and was never reaped: if it was to end "
            "the wait (a saver, a writer, a worker), nothing will" % (
                waiter.label, frame_text(waiter.user_frame()) or "?", "; ".join(process_text(p) for p in dead[:3]),
                "; ".join(p.exit_status for p in dead[:3])))
