"""The wait-for graph as data: for one waiting thread, the edges to whoever would end its wait.

find(g, view) returns Edge records, most likely waker first.  A finder reads the graph
(graph.WaitGraph: views, roles, processes, what the probes resolved) and nothing of the
walk: the same thread gets the same edges whatever order the walk visits it in.  It
writes no text and changes no view; what it saw goes in Edge.facts and Finding.facts,
and formatter.py says it.  The walk (walk.py) takes the first edge to a thread not yet
on its chain; an edge back onto the chain, when every thread of the loop is stuck, is a
cycle: nobody can move.

Edge kinds:
  lock-holder  holds the lock the waiter wants (by name, or the same lock a stuck partner wants)
  lock-waiter  another thread stuck on a lock with it, nobody known to hold either (a guess)
  gil          holds the GIL the waiter needs
  file-lock    holds the flock()/fcntl() lock the waiter waits for (any process of the host)
  file-holder  has open or locked the file the waiter polls for
  join         the thread the waiter joins
  sibling      a thread of the process that is busy (or sleeps) while the waiter waits (a guess)
  child        the child program the waiter waits for
  peer         the process at the other end of a pipe, unix socket or TCP connection
  workers      the DataLoader workers the training loop waits for
  rank         the rank that is not in the collective (stopped, elsewhere)
  straggler    the rank whose GPU still computes while the others wait in a collective
  compiler     the compiler a compiling thread drives (the compiling thread stays the end)
  (terminal)   held-at-fork, orphaned, pool-deadlock, lost-task, pool-results-undelivered,
               pool-workers-dying, lost-batch, missed-task-done: nothing will end the wait
"""
from collections import Counter

from ..knowledge import frames as frame_table
from ..knowledge.frames import LOCK_WITH
from .views import (ACTIVITY_RANK, STRAGGLER_MARGIN, REPLACEMENT_GAP_S, accepting, co_waiter, idle_helper,
                    in_file_lock, library_only, stuck_handler, waited_targets, waits_by_design, waits_for_its_turn)
from ..knowledge.roles import dispatch_wait, runs_user_code
from .locks import (futex_word, held_in_window, held_locks, holds_same, lock_intent, self_held,
                    shared_futex)
from .motion import STUCK_SHARE, streams_in, stuck
from .objects import not_read as object_not_read, unending
from .polls import died_pool_workers, died_threads, feeder_failed
from . import kinds
from .threads import THREAD_WAIT_KINDS
from .types import Edge, Finding
from .registry.names import M
from ..vocab import EdgeKind, Kind, rank_of, RoleKind


def find(g, view):
    """Edges out of view, most likely waker first ([] when the graph knows none)."""
    finder = FINDERS.get(view.kind)
    edges = list(finder(g, view)) if finder else []
    if edges and streams_in(view, g.procs.get(view.pid)) and all(
            e.waker is not None and e.waker.kind in (Kind.SLEEP, Kind.POLL) for e in edges):
        # the writer paces a stream the reader consumes: the reader's input is slow, and it ends
        # the chain (a writer that computes is followed: the input waits on its work)
        return []
    if not any(e.terminal for e in edges) and not g.halted(view):
        edges += rank_fallback(g, view)
    return edges


# --- threads of one process -----------------------------------------------------------------

def joined(g, view):
    """Thread.join: the joined thread itself (py-spy's locals name it)."""
    join = g.joins.get((view.pid, view.tid))
    target = next((v for v in g.by_pid.get(view.pid, []) if join and v.tid == join.target_tid), None)
    if target is None:
        return waited_thread(g, view)
    return [Edge(view, target, EdgeKind.JOIN)]


def waker_exited(g, view):
    """A wait on a lock or event in shared memory (a multiprocessing.Event) that no other live
    process maps, while a child of the waiter has exited: the child that would have set it is
    gone (a save process that died, a worker killed by the OOM killer)."""
    mappers = g.shared_mappers(view)
    # a mapper that exited during the window (a zombie now) sets nothing either
    if not shared_futex(view) or not stuck(view) or {pid for pid in mappers or () if pid not in g.procs
                                                     or g.procs[pid].exited_at is None}:
        return None
    dead = g.exited_children(view.pid)
    if not dead:
        return None
    return Edge(view, None, M.WAKER_EXITED, findings=[Finding.about(M.WAKER_EXITED, view, waiter=view, dead=dead)])


LONG_SLEEP_S = 60.0


def long_sleep(view):
    """A minute or more of one sleep left (clock_nanosleep), or asked for (time.sleep before
    Python 3.11 is a select() on no fds with that timeout)."""
    detail = view.top_detail()
    if not isinstance(detail, dict):
        return False
    if detail.get("sleep_s") is not None:
        return detail["sleep_s"] >= LONG_SLEEP_S
    return not detail.get("watching") and (detail.get("timeout_ms") or 0) >= LONG_SLEEP_S * 1000


def waited_thread(g, view):
    """The thread a lock, queue, event or future waiter most likely waits on."""
    edges = []
    again = reentered(view) if stuck(view) else None
    if again and not any(holds_same(v, again.facts["wants"], view) for v in g.by_pid.get(view.pid, []) if v is not view):
        return [again]
    gone = waker_exited(g, view)
    if gone:
        return [gone]
    if view.kind == Kind.LOCK:
        edges += gil_holder(g, view) or file_lock_holder(g, view)
        if edges:
            return edges
        held = self_held(view) if stuck(view) else None
        if held:
            frame, entry = held
            word = futex_word(view)
            same = [v for v in g.by_pid.get(view.pid, []) if v is not view and v.kind == Kind.LOCK
                    and word and futex_word(v) == word]
            return [Edge(view, view, M.LOCK_HOLDER, {"wants": lock_intent(view)["wants"], "frame": frame,
                                                     "held": entry, "self": True, "same": same})]
        edges += lock_order_partner(g, view) + named_lock_holder(g, view) + stream_writer(g, view)
        if not edges:
            edges += lock_waiters(g, view)
        if not edges:
            fork = held_at_fork(g, view)
            if fork:
                return [fork]
    missed = missed_task_done(g, view)
    if missed:
        return edges + [missed]
    # (a framework's thread that waits for work by design, an event loop, a watcher, a feeder,
    # is not the one that will end this wait: it ends where the work is, work_in_flight)
    # (a pool's manager with no worker left says so: its wait is known to end nowhere)
    others = [v for v in g.by_pid.get(view.pid, []) if v is not view and v.n_samples and (
        not waits_by_design(v) or frame_table.pool_manager(v.top_stack) and stuck(v) and empty_pool(g, v) is not None)]
    co = [v for v in others if co_waiter(v, view)]
    others = [v for v in others if v not in co]
    # a thread in a timed wait on another thread (a timer, tqdm's monitor) is not busy: it sleeps
    timed = [v for v in others if v.timed_wait and v.kind in THREAD_WAIT_KINDS]
    busy = sorted((v for v in others if ACTIVITY_RANK.get(v.kind, 0) > 0 and v not in timed),
                  key=lambda v: -g.weight(v))
    edges += [Edge(view, v, EdgeKind.SIBLING, {"doing": v.kind}, guess=True) for v in busy]
    # Nobody is busy: the thread that should signal may be sleeping.  Prefer threads running
    # the user's own code over library helper threads.
    # (one that has a minute or more of one sleep left is a timer, a watchdog: not the thread
    # that will end this wait soon)
    sleepers = sorted((v for v in others if (v.kind in (Kind.SLEEP, Kind.POLL) or v in timed) and v.user_frame()
                       and not library_only(v) and not long_sleep(v)), key=lambda v: -v.share)
    edges += [Edge(view, v, EdgeKind.SIBLING, {"doing": "sleep"}, guess=True) for v in sleepers]
    if view.kind in THREAD_WAIT_KINDS and stuck(view):
        # last: the walk reaches it only when every thread above is already on its chain
        orphan = orphaned_wait(g, view, co)
        if orphan:
            edges.append(orphan)
    return edges


def reentered(view):
    """A thread waiting to take a lock in a function that an outer frame of its own is inside,
    holding the same lock by name: the code was re-entered (a signal handler, a callback that
    logs into the queue it interrupted) and a Lock is not reentrant.  Library frames count:
    Queue.put inside Queue.put is the usual shape."""
    stack = frame_table.own_frames(view.top_stack)
    for depth, inner in enumerate(stack[:4]):
        source = inner[3] if len(inner) > 3 and isinstance(inner[3], dict) else {}
        match = LOCK_WITH.match(source.get("code") or "")
        if not match:
            continue
        for outer in stack[depth + 1:]:
            held = outer[3] if len(outer) > 3 and isinstance(outer[3], dict) else {}
            if (outer[0], outer[1]) != (inner[0], inner[1]):
                continue
            # inside the outer call's `with X:` block, or at its `with X:` line with frames above
            # it: interrupted in __enter__, once the lock was taken (a handler runs between
            # bytecodes; no other thread holds it: the caller checks)
            at_line = [{"line": outer[2], "code": held.get("code")}] if held.get("code") else []
            opener = next((w for w in (held.get("within") or []) + at_line if LOCK_WITH.match(w.get("code") or "")
                           and LOCK_WITH.match(w["code"]).group(1) == match.group(1)), None)
            if opener:
                return Edge(view, view, M.LOCK_HOLDER, {"wants": match.group(1), "frame": outer, "held": opener,
                                                        "self": True, "reentered": inner})
        return None
    return None


def gil_holder(g, view):
    """A futex wait at a line that waits on nothing is a wait for the GIL; py-spy names its holder."""
    info = g.gil.get(view.pid)
    holder_tid = info.holder_tid if info is not None else None
    if not holder_tid or holder_tid == view.tid or view.frame_kind:
        return []
    holder = next((v for v in g.by_pid.get(view.pid, []) if v.tid == holder_tid), None)
    return [Edge(view, holder, EdgeKind.GIL, {"how": info.how or "py-spy"})] if holder else []


def lock_order_partner(g, view):
    """A stuck lock waiter that holds what view wants while wanting what view holds."""
    mine = lock_intent(view)
    out = []
    for other in lock_waiters_of(g, view):
        theirs = lock_intent(other)
        if mine["wants"] and theirs["wants"] and mine["wants"] in theirs["holds"] and theirs["wants"] in mine["holds"]:
            out.append(Edge(view, other, M.LOCK_HOLDER, {"wants": mine["wants"], "holds": theirs["wants"],
                                                         "order": True}, process=other.pid != view.pid))
    return out


def named_lock_holder(g, view):
    """Threads holding, by name, the lock view wants (inside `with X:`, or after an unreleased
    X.acquire()); one waiting on the same futex word first: holding a lock of that name while
    blocked on this very lock, it is the one stuck inside it."""
    wants = lock_intent(view)["wants"]
    if not wants or not stuck(view):
        return []
    holders = [v for v in g.lock_sharers(view) if v is not view and holds_same(v, wants, view)]
    word = futex_word(view)
    holders.sort(key=lambda v: (bool(word) and futex_word(v) == word, v.share), reverse=True)
    out = []
    for holder in holders:
        _name, frame, entry = next(h for h in held_locks(holder) if h[0] == wants)
        said = [] if holder.kind == Kind.LOCK and self_held(holder) else [   # a self-deadlock says so itself
            Finding.about(M.LOCK_HOLDER, holder, holder=holder, waiter=view, wants=wants, frame=frame, held=entry)]
        out.append(Edge(view, holder, M.LOCK_HOLDER, {"wants": wants, "frame": frame, "held": entry},
                        findings=said, process=holder.pid != view.pid))
    return out


def stream_writer(g, view):
    """A thread stuck at a line that writes to a stream (print, .write, a logging call) waits
    for the stream's lock (a buffered stream's, a logging handler's); the thread of its
    process blocked in write() holds it (a full pipe, a slow disk)."""
    codes = [(f[3] or {}).get("code") for f in (view.top_stack or [None])[:1] + [view.user_frame()]
             if f and len(f) > 3 and isinstance(f[3], dict)]
    if not stuck(view) or not any(frame_table.writes_to_stream(code) for code in codes):
        return []
    writers = [v for v in g.by_pid.get(view.pid, []) if v is not view and v.kernel_kind in (Kind.PIPE, Kind.IO)
               and any(label.startswith("write") for label in v.activity)]
    return [Edge(view, v, M.LOCK_HOLDER, {"stream": True}) for v in writers]


def lock_waiters_of(g, view):
    """Other threads stuck on locks with view (in its process, or on a lock shared between
    processes); [] when one of the process's threads runs (contention, not a deadlock)."""
    if not stuck(view):
        return []
    shared = shared_futex(view)
    # (a native thread parked on a futex, an OpenMP or BLAS worker, waits for work, not for a
    # lock another thread holds: without a Python frame nothing says it is a lock at all)
    candidates = [o for o in g.views if o is not view and o.kind == Kind.LOCK and stuck(o) and o.top_stack and (
        o.pid == view.pid or (shared and shared_futex(o)) or g.related(view.pid, o.pid) and shared_futex(o))]
    same = [v for v in g.by_pid.get(view.pid, []) if v.kind == Kind.CPU and v.share > 0.5
            or v.state is not None and v.state.progressing]
    if same and all(c.pid == view.pid for c in candidates):
        return []
    return sorted(candidates, key=lambda v: (v.pid == view.pid, v.share), reverse=True)


def lock_waiters(g, view):
    """Nobody is known to hold what view wants, and other threads are stuck on locks too."""
    others = lock_waiters_of(g, view)
    if not others:
        return []
    said = [Finding.about(M.LIKELY_DEADLOCK, others[0], threads=[view] + others)]
    return [Edge(view, other, EdgeKind.LOCK_WAITER, findings=said if i == 0 else [], guess=True)
            for i, other in enumerate(others)]


def held_at_fork(g, view):
    """A forked child waiting on a lock that no thread of its own holds: the lock was held, at
    fork() time, by a thread that exists only in the parent."""
    proc = g.procs.get(view.pid)
    parent = g.procs.get(proc.ppid) if proc is not None else None
    if parent is None or not stuck(view) or shared_futex(view) or in_file_lock(view) or not view.top_stack:
        return None   # (a file lock is the kernel's, held by a process; without Python frames
                      # nothing says which lock, and a native thread's futex is rarely one)
    others = [v for v in g.by_pid.get(view.pid, []) if v is not view and v.n_samples]
    wants = lock_intent(view)["wants"]
    if any(wants and wants in lock_intent(o)["holds"] for o in others):
        return None
    if any(o.kind in (Kind.CPU, Kind.IO, Kind.NETWORK) and o.share >= 0.5 for o in others):
        return None
    if (parent.cmdline or [None])[0] != (proc.cmdline or [None])[0]:
        return None   # an exec'd program, not a fork of the parent
    lock_frame = next((view.top_stack[d] for d, row in view.frame_matches if row.kind in (Kind.LOCK, Kind.SEMAPHORE)), None)
    holder = None
    for candidate in g.by_pid.get(parent.pid, []):
        if wants and wants in held_in_window(candidate):
            holder = candidate
            break
        if lock_frame and any(f[1] == lock_frame[1] and f[0] != lock_frame[0]
                              for frames, _n in candidate.stacks_by_count()[:1] for f in frames):
            holder = candidate
    said = Finding.about(M.LOCK_HELD_AT_FORK, view, waiter=view, wants=wants, lock_frame=lock_frame,
                         parent=parent.pid, holder=holder)
    return Edge(view, None, EdgeKind.HELD_AT_FORK, findings=[said])


def missed_task_done(g, view):
    """Queue.join() with every consumer idle in get(): a task_done() was skipped."""
    if not (view.kind in THREAD_WAIT_KINDS and stuck(view) and frame_table.waits_in_queue_join(view.top_stack)):
        return None
    threads = [v for v in g.by_pid.get(view.pid, []) if v is not view and v.top_stack]
    consumers = [v for v in threads if v.kind == Kind.QUEUE_GET and stuck(v)]
    if not consumers or any(not stuck(v) for v in threads):
        return None
    return Edge(view, None, M.MISSED_TASK_DONE,
                findings=[Finding.about(M.MISSED_TASK_DONE, view, waiter=view, consumers=consumers)])


def orphaned_wait(g, view, co_waiters):
    """A wait on another thread of the process that no thread is left to end: every other
    Python thread is stuck in the same wait (parties at a barrier, tasks waiting on tasks of
    their own pool) or stuck in a wait of its own; the thread that would end it died (an
    exception ends a thread quietly) or never started."""
    if waits_for_its_turn(view):
        return None   # a framework's loop waiting for its next turn (a scheduler's next job): by design
    threads = g.by_pid.get(view.pid, [])
    python = [v for v in threads if v is not view and v.top_stack]
    stuck_too = [v for v in python if v not in co_waiters and stuck(v) and v.kind in THREAD_WAIT_KINDS + ("lock",)]
    if any(v not in co_waiters and v not in stuck_too and not long_sleep(v) for v in python):
        return None   # a thread that can still end the wait (a timer in a long sleep cannot soon)
    pool = frame_table.pool_of(view.top_stack)
    facts = {"waiter": view, "co_waiters": co_waiters, "stuck_too": stuck_too, "alone": not python,
             "native": len(threads) - 1, "pool": pool,
             "timers": [v for v in python if v not in co_waiters and v not in stuck_too]}
    if pool and view.frame_kind == Kind.FUTURE:
        return Edge(view, None, M.POOL_DEADLOCK, findings=[Finding.about(M.POOL_DEADLOCK, view, **facts)])
    # the object waited on, read from memory, says whether its state keeps the wait from ending
    stuck_object = unending(g, view)
    if stuck_object is not None:
        finding = Finding.about(M.STUCK_OBJECT, view, stuck=stuck_object, **facts)
        return Edge(view, None, M.STUCK_OBJECT, findings=[finding])
    unread = object_not_read(view)
    finding = Finding.about(M.ORPHANED_WAIT, view, unknown="the object it waits on was not read (%s)" % unread
                            if unread else None, **facts)
    return Edge(view, None, M.ORPHANED_WAIT, findings=[finding])


# --- across processes -----------------------------------------------------------------------

def file_lock_holder(g, view):
    """flock()/fcntl() lock waits: /proc/locks names the holder, even outside the inspected tree."""
    if not g.file_locks:
        return []
    blocked = in_file_lock(view)
    if not blocked and view.kind not in (Kind.SLEEP, Kind.POLL, Kind.OTHER):
        return []
    for lock in g.file_locks:
        waiters = lock.waiter_pids if blocked else lock.pollers
        if view.pid not in waiters or not lock.holder_pid:
            continue
        return [_file_lock_edge(g, view, lock, blocked)]
    return []


def _file_lock_edge(g, view, lock, blocked, stops=False):
    """view waits for a lock of /proc/locks: an edge to its holder's most telling thread."""
    said = [Finding.about(M.FILE_LOCK, view, waiter=view, lock=lock, blocked=blocked,
                          holder_proc=g.procs.get(lock.holder_pid))]
    return Edge(view, g.most_telling_thread(lock.holder_pid), M.FILE_LOCK, {"lock": lock, "blocked": blocked},
                findings=said, process=True, stops=stops)


def file_lock_holder_of_file(g, view):
    """A thread whose process has a database file open that another process holds a POSIX lock
    on (/proc/locks): SQLite's lock, its holder outside the thread's process."""
    mine = {f.get("target") for f in (g.procs[view.pid].files_end or []) if f.get("kind") == "file"} \
        if view.pid in g.procs else set()
    for lock in g.file_locks:
        if lock.holder_pid and lock.holder_pid != view.pid and lock.path in mine \
                and g.most_telling_thread(lock.holder_pid) is not None:
            # (its holder holds it, whatever it waits on itself)
            return [_file_lock_edge(g, view, lock, False, stops=True)]
    return []


def waited_file(g, view):
    """A sleep/poll loop on a lock or marker file: whoever holds or has the file open.  A read
    from a filesystem served from user space (FUSE): the process serving it."""
    wait = g.file_waits.get((view.pid, view.tid))
    if not wait:
        return file_server(g, view)
    pids = wait.others(view.pid)
    threads = [g.most_telling_thread(pid) for pid in dict.fromkeys(pids)]
    return [Edge(view, t, EdgeKind.FILE_HOLDER, {"path": wait.path}, process=True) for t in threads if t]


def file_server(g, view):
    """The FUSE daemon serving the mount a thread's file wait is on (the waker probe's mount)."""
    out = []
    for record in g.wakers.get((view.pid, view.tid), []):
        mount = record.mount or {}
        for server in mount.get("served_by") or []:
            thread = g.most_telling_thread(server.get("pid")) if server.get("pid") in g.procs else None
            if thread is not None and thread.pid != view.pid:
                out.append(Edge(view, thread, EdgeKind.FILE_SERVER, {M.MOUNT: mount}, process=True))
    return out


def waited_child(g, view):
    detail = view.top_detail() or {}
    wanted = detail.get("child") if isinstance(detail, dict) else None
    kids = g.live_children(view.pid)
    if isinstance(wanted, int) and wanted > 0:
        kids = [p for p in kids if p.pid == wanted] or kids
    kids.sort(key=lambda p: (g.process_halted(p.pid), g.roles.get(p.pid) == RoleKind.COMPILER,
                             p.cpu_seconds or 0), reverse=True)
    threads = [g.most_telling_thread(p.pid) for p in kids]
    edges = [Edge(view, t, EdgeKind.CHILD, process=True) for t in threads if t is not None]
    if not edges:
        # The child it ran has exited, and it still polls the child's output pipes: whoever holds
        # them now (a grandchild the child left running, a daemon it started) is what it waits for.
        for target in [t for t in waited_targets(view) if t.startswith("pipe:")]:
            for pid in g.holders.get(target, ()):
                thread = g.most_telling_thread(pid) if pid != view.pid else None
                if thread is not None and all(e.waker is not thread for e in edges):
                    edges.append(Edge(view, thread, EdgeKind.CHILD, {"via": "pipe", "target": target}, process=True))
    return edges


def waited_peer(g, view):
    """The process at the other end of the pipe or unix socket a thread waits on."""
    if frame_table.waits_for_pool_result(view.top_stack):
        # a multiprocessing.pool.ThreadPool: its workers are threads of this process, and the
        # result comes from the ones running a task
        workers = [v for v in g.by_pid.get(view.pid, []) if v is not view
                   and frame_table.runs(v.top_stack, frame_table.PROCESS_POOL_WORKER)]
        if workers:
            return [Edge(view, v, EdgeKind.SIBLING, {"doing": v.kind}, guess=True) for v in workers
                    if not frame_table.idle_thread_pool_task_worker(v.top_stack)]
        lost = (dying_pool_workers(g, view) or lost_pool_task(g, view)) if stuck(view) else None
        if lost:
            return [lost]
    if frame_table.pool_manager(view.top_stack) and stuck(view):
        empty = empty_pool(g, view)
        if empty:
            return [empty]
    unfed = unfed_pipe(g, view)
    if unfed:
        return [unfed]
    peers = Counter()
    targets = waited_targets(view)
    if not targets:
        # Waiting on a futex for a helper thread that talks to the other process
        # (multiprocessing.Pool's result handler, a Queue feeder): its siblings' pipes.
        for sibling in g.by_pid.get(view.pid, []):
            if sibling is not view:
                targets.extend(waited_targets(sibling))
    for target in targets:
        for pid in () if g.pipe_ends_known(view, target) else g.holders.get(target, ()):
            if pid != view.pid:
                peers[pid] += 1
        for pid in g.other_end(target, g.unix_peers):
            if pid != view.pid:
                peers[pid] += 2
        for pid in g.waker_pids(view, target):
            if pid != view.pid:
                peers[pid] += 2
    if not peers:
        for proc in g.live_children(view.pid):
            peers[proc.pid] += 1
    for pid in [pid for pid in peers if g.helper(pid)]:
        del peers[pid]
    threads = [g.thread_on(pid, targets) for pid in peers]
    threads = [t for t in threads if t is not None]
    threads.sort(key=lambda v: (g.halted(v), g.weight(v), peers[v.pid]), reverse=True)
    # peers: how many processes could be the other end (a cycle needs the only one)
    edges = [Edge(view, t, EdgeKind.PEER, {"via": "pipe", "peers": len(threads)}, process=True) for t in threads]
    return past_idle_servers(g, view, edges)


def unfed_pipe(g, view):
    """A read of a pipe, stuck all window (no byte arrived: a write would have ended it), whose
    writing end a process outside the job holds: nothing of the job can feed the pipe, and that
    process does not.  It is the cause whatever its own threads wait on (a server's accept(), a
    sleep): the walk ends there."""
    if not stuck(view) or any(label.startswith("write") for label in view.activity):
        return None
    for target in [t for t in waited_targets(view) if t.startswith("pipe:")]:
        holders = [pid for pid in g.writer_pids(view, target) if pid != view.pid and pid in g.procs
                   and g.procs[pid].outside_tree and not g.helper(pid)]
        if not holders:
            continue
        proc = g.procs[holders[0]]
        thread = g.thread_on(proc.pid, [target])
        if thread is None:
            continue
        said = Finding.about(M.UNFED_PIPE, view, reader=view, target=target, holder=proc.pid, holder_thread=thread,
                             wrote=(proc.io or {}).get("wchar"))
        return Edge(view, thread, EdgeKind.PEER, {"via": "pipe", "target": target}, findings=[said], process=True,
                    stops=True)
    return None


def tcp_peer(g, view):
    """A TCP connection to a process of the host (a local server, a store, another rank): the
    process that holds the other end, and the thread of it that waits on that connection."""
    out = []
    for target in waited_targets(view):
        pids = set(g.other_end(target, g.tcp_peers)) | set(g.waker_pids(view, target))
        for pid in sorted(pids - {view.pid}):
            peers = g.peer_targets(target)
            thread = g.thread_on(pid, peers)
            if thread is None:
                continue
            serving = set(waited_targets(thread)) & set(peers)
            if not serving and not g.halted(thread) and thread.kind not in WORKING_KINDS \
                    and not stuck_handler(thread) and (g.request_at_peer(target) or ("read",))[0] == "read":
                # the server read the request (nothing waits unread at its end) and its thread on
                # the connection is not found: the request went to a handler thread of its own
                # (socketserver's process_request_thread, a Flask view) stuck in a wait
                handler = next((v for v in g.by_pid.get(pid, []) if stuck_handler(v)), None)
                thread = handler or thread
            if not serving and thread.kind == Kind.NETWORK and stuck(thread) and not waits_by_design(thread) and (
                    frame_table.serves_requests(thread.top_stack) or frame_table.in_event_loop_step(thread.top_stack)):
                # the server's thread is inside the request's handler (an async handler's blocking
                # call freezes its whole loop), blocked on a connection of its own, upstream
                serving = {target}
            if serving or g.halted(thread) or thread.kind in WORKING_KINDS or stuck_handler(thread):
                out.append(Edge(view, thread, EdgeKind.PEER, {"via": "tcp", "target": target}, process=True))
            else:
                # it holds the other end, but nothing of it reads or works: it does not answer
                said = Finding.about(M.PEER_NOT_SERVING, view, waiter=view, target=target, peer=pid, peer_thread=thread)
                out.append(Edge(view, None, M.PEER_NOT_SERVING, {"target": target, "peer": pid}, findings=[said]))
    return past_idle_servers(g, view, out)


def past_idle_servers(g, view, edges):
    """Edges to a server's thread that waits for work by design (an event loop, a listener, a
    manager's server) lead on to the work in flight: the thread of the job that runs the task the
    request became.  An idle server is never the end of a wait while a task is running somewhere;
    where none is, the edges stay as they are."""
    if not edges or not dispatch_wait(view.top_stack) or \
            not any(e.waker is not None and waits_by_design(e.waker) for e in edges):
        return edges
    tasks = work_in_flight(g, view)
    if not tasks:
        return edges
    return [e for e in edges if e.waker is not None and not waits_by_design(e.waker)] + tasks


def work_in_flight(g, view):
    """The threads of the job that run a task: the user's own code, inside a framework's frames
    (a Dask worker's executor thread, a pool worker running the mapped function, a server's
    handler), stuck in a wait of their own or computing: a wait that ends at a framework's idle
    thread (an event loop, a manager, a pool's handler) ends when such a task finishes.  Workers of
    the waiter's own process tree first, then the most telling.  An edge to a descendant of the
    waiter is known (it handed the task out); to another process of the job, a guess."""
    below = set(g.descendants(view.pid))
    tasks = [v for v in g.views if v is not view and v.n_samples and v.top_stack and v.pid in g.procs
             and not g.procs[v.pid].outside_tree and not waits_by_design(v) and runs_user_code(v.top_stack)
             and (v.pid != view.pid or not v.is_main)]   # (the waiter's own main thread drives it)
    # a worker process below the waiter that is stopped or frozen holds whatever task it had; its
    # stack cannot be read while it is stopped
    tasks += [t for t in (g.main_thread(pid) for pid in below if pid in g.procs and not g.procs[pid].outside_tree)
              if t is not None and t not in tasks and g.halted(t)]
    # (a task that computes between short waits, a shard read, a sleep, is running all the same)
    tasks.sort(key=lambda v: (v.pid in below, g.halted(v), v.kind in WORKING_KINDS or stuck(v), g.weight(v)),
               reverse=True)
    return [Edge(view, v, EdgeKind.TASK, {"via": "the work in flight"}, guess=v.pid not in below, process=v.pid != view.pid)
            for v in tasks]


# what a thread does when it is working, not waiting: a peer busy so is the one to follow
WORKING_KINDS = kinds.names(working=True)


def lost_pool_task(g, view):
    """A wait for a multiprocessing.Pool result while every worker waits for a task: none has
    it.  A worker that dies mid-task takes its task with it; the Pool replaces the worker."""
    workers = [(p, g.main_thread(p.pid)) for p in g.live_children(view.pid)]
    if not workers or not all(t is not None and frame_table.idle_pool_worker(t.top_stack) for _p, t in workers):
        return None
    if results_handler_gone(g, view.pid):
        # the task's result came back, and no thread is left to hand it over
        died = died_threads(g, view.pid)
        return Edge(view, None, M.POOL_RESULTS_UNDELIVERED, findings=[Finding.about(
            M.POOL_RESULTS_UNDELIVERED, view, waiter=view, workers=len(workers), error=died[-1][1] if died else None)])
    tick = g.window.clock_tick or 100   # the unit of start_time
    starts = sorted((p.start_time or 0, p.pid) for p, _t in workers)
    late = [(pid, (start - starts[0][0]) / tick) for start, pid in starts[1:]
            if start - starts[0][0] >= REPLACEMENT_GAP_S * tick]
    return Edge(view, None, M.LOST_TASK, findings=[Finding.about(M.LOST_TASK, view, waiter=view, workers=len(workers),
                                                                 replacements=late)])


DYING_WORKERS = 2    # pool workers of the waiting process that exited in the window, each with a traceback


def dying_pool_workers(g, view):
    """A wait for a multiprocessing.Pool result while the pool's workers exit one after another,
    the job's output showing a pool worker's traceback: each dies before it finishes a task (in
    the pool's initializer, at an import) and the pool starts another, for ever.  (A pool with
    maxtasksperchild replaces workers too, but they exit cleanly, with no traceback.)"""
    exited = g.exited_children(view.pid)
    died = died_pool_workers(g, view.pid)
    if len(exited) < DYING_WORKERS or not died:
        return None
    return Edge(view, None, M.POOL_WORKERS_DYING, findings=[Finding.about(
        M.POOL_WORKERS_DYING, view, waiter=view, exited=len(exited), worker=died[-1][0], error=died[-1][1])])


def results_handler_gone(g, pid):
    """The process's multiprocessing.Pool has its worker-handler thread but no result-handler
    thread: the one that completes each waiting result ended (an exception unpickling a worker's
    result kills it), and no result reaches its caller again.  Only where every thread's stack was
    read."""
    threads = g.by_pid.get(pid, [])
    if not threads or any(not v.top_stack for v in threads):
        return False
    return any(frame_table.runs(v.top_stack, frame_table.POOL_WORKER_HANDLER) for v in threads) and not any(
        frame_table.runs(v.top_stack, frame_table.POOL_RESULT_HANDLER) for v in threads)


def empty_pool(g, view):
    """A pool's manager thread waiting for results while no worker process of its pool lives."""
    if any(not g.helper(p.pid) for p in g.live_children(view.pid)):
        return None
    return Edge(view, None, M.POOL_EMPTY, findings=[Finding.about(M.POOL_EMPTY, view, waiter=view,
                                                                   exited=g.exited_children(view.pid))])


def waited_workers(g, view):
    """DataLoader: the training loop waits for workers; judge them by what they do."""
    workers = [p for p in g.proc_list if g.roles.get(p.pid) == RoleKind.DATALOADER_WORKER]
    mine = [p for p in workers if p.ppid == view.pid] or workers
    if not mine:
        return waited_peer(g, view)
    threads = [g.main_thread(p.pid) for p in mine]
    threads = [t for t in threads if t is not None]
    # with pin_memory=True the loop takes its batches from the pin-memory thread of its own
    # process, which takes them from the workers: a pin-memory thread that works (copying each
    # batch into page-locked memory) while the loop waits is what the loop waits on
    pinning = [v for v in g.by_pid.get(view.pid, []) if v is not view and v.kind == Kind.CPU
               and frame_table.runs(v.top_stack, frame_table.PIN_MEMORY_LOOP)]
    if pinning and not any(t.kind in WORKING_KINDS for t in threads):
        return [Edge(view, pinning[0], EdgeKind.PIN_MEMORY, process=False)]
    if threads and stuck(view) and all(frame_table.idle_dataloader_worker(t.top_stack) and stuck(t)
                                       and not g.halted(t) for t in threads):
        # every worker waits for an index while the loop waits for a batch: none is making it.
        # A worker whose queue feeder failed to send it (EMFILE passing its tensors, an
        # unpicklable sample) drops the batch and goes on, and the loop waits for it for ever.
        error = feeder_failed(g, [view.pid] + [t.pid for t in threads])
        return [Edge(view, None, M.LOST_BATCH, findings=[Finding.about(M.LOST_BATCH, view, waiter=view,
                                                                        workers=threads, error=error)])]
    threads.sort(key=lambda v: (g.halted(v), g.weight(v), v.cpu_seconds or 0), reverse=True)
    kinds = Counter(t.kind for t in threads)
    return [Edge(view, t, EdgeKind.WORKERS, {"workers": threads, "kinds": kinds}, process=True) for t in threads]


# --- ranks ----------------------------------------------------------------------------------

def ranks_of(g):
    ranks = {}
    for pid, role in g.roles.items():
        if rank_of(role) is not None:
            thread = g.main_thread(pid)
            if thread is not None:
                ranks[pid] = thread
    return ranks


def rank_groups(g):
    """([pids of ranks in a collective, rendezvous or its GPU sync], [pids elsewhere])."""
    ranks = ranks_of(g)
    waiting = {pid for pid, t in ranks.items() if t.kind in (Kind.COLLECTIVE, Kind.RENDEZVOUS, Kind.CUDA) and not g.halted(t)}
    return sorted(waiting), sorted(pid for pid in ranks if pid not in waiting)


def outlier_rank(g, view):
    """Ranks waiting in a collective wait for the rank that is somewhere else: a stopped or
    frozen one first, however busy its peers look."""
    ranks = ranks_of(g)
    waiting, elsewhere = rank_groups(g)
    outliers = [ranks[pid] for pid in elsewhere if pid != view.pid]
    outliers.sort(key=lambda v: (g.halted(v), -v.pid if g.halted(v) else g.weight(v), -v.pid), reverse=True)
    edges = [Edge(view, t, EdgeKind.RANK, process=True) for t in outliers]
    return edges + gpu_straggler(g, view, ranks)


def gpu_straggler(g, view, ranks):
    """Every rank waits on its GPU: the straggler is the rank whose GPU does the work the others
    wait for (real SM/tensor activity while the waiter's GPU only spins in NCCL)."""
    mine = [g.gpus[i] for i in g.devices_of(view.pid) if i in g.gpus]
    if not mine or not mine[0].has_gpm or mine[0].real_compute:
        return []
    best = None
    for pid, thread in ranks.items():
        if pid == view.pid:
            continue
        for index in g.devices_of(pid):
            dev = g.gpus.get(index)
            if dev is None or not dev.real_compute or (dev.sm or 0) < (mine[0].sm or 0) + STRAGGLER_MARGIN:
                continue
            if best is None or dev.sm > best[1].sm:
                best = (thread, dev)
    if best is None:
        return []
    thread, dev = best
    said = Finding.about(M.STRAGGLER, thread, straggler=thread.pid, waiter=view.pid, gpu=dev, waiter_gpu=mine[0])
    return [Edge(view, thread, M.STRAGGLER, {"gpu": dev}, findings=[said], process=True)]


def gpu_wait(g, view):
    """A rank waiting on its GPU may wait on an NCCL kernel that waits for a hung peer."""
    return outlier_rank(g, view) if rank_of(g.roles.get(view.pid)) is not None else []


def rank_fallback(g, view):
    """The walk ended inside a rank: a peer rank that is stopped or frozen holds the job; else
    a peer whose GPU does the work the others wait for."""
    if rank_of(g.roles.get(view.pid)) is None:
        return []
    ranks = ranks_of(g)
    halted = [Edge(view, t, EdgeKind.RANK, process=True) for pid, t in sorted(ranks.items())
              if pid != view.pid and g.halted(t)]
    return halted or (gpu_straggler(g, view, ranks) if len(ranks) > 1 else [])


# --- compiling ------------------------------------------------------------------------------

# what a compiling thread's kernel shows while it waits for the compilers it drives
COMPILE_WAITS = ("child", "poll", "pipe", "lock", "ipc", "sleep")


def compiler_of(g, view):
    """The busiest compiler or compile worker a compiling thread drives (gcc, ptxas,
    inductor's workers), or None.  The compiling thread stays the end of the walk."""
    if view.kernel_kind not in COMPILE_WAITS:
        return None
    mine = set(g.descendants(view.pid))
    kids = [p for p in g.proc_list if g.roles.get(p.pid) in (RoleKind.COMPILER, RoleKind.COMPILE_WORKER)
            and p.exited_at is None and p.pid in mine]
    busy = [g.most_telling_thread(p.pid) for p in kids]
    busy = [t for t in busy if t is not None and t.kind == Kind.CPU and t.share >= 0.3]
    return max(busy, key=lambda v: v.share) if busy else None


def compiling(g, view):
    if view.kernel_kind in COMPILE_WAITS:
        # a compiler it waits for that is stopped or frozen (cc1plus under g++ under an inductor
        # compile thread): the compile cannot finish until it runs again
        mine = set(g.descendants(view.pid))
        stopped = [g.main_thread(p.pid) for p in g.proc_list if p.pid in mine and p.exited_at is None
                   and g.roles.get(p.pid) in (RoleKind.COMPILER, RoleKind.COMPILE_WORKER)]
        stopped = [t for t in stopped if t is not None and g.halted(t)]
        if stopped:
            return [Edge(view, stopped[0], EdgeKind.COMPILE_STEP, process=True)]
    tool = compiler_of(g, view)
    if tool is None:
        return []
    return [Edge(view, None, EdgeKind.COMPILER, {"tool": tool},
                 findings=[Finding.about(M.COMPILER_BUSY, tool, compiler=tool, waiter=view)])]


def sleeping(g, view):
    return waited_file(g, view) or file_lock_holder(g, view)


FINDERS = {
    "lock": waited_thread,
    "db-busy": lambda g, view: file_lock_holder_of_file(g, view) or waited_thread(g, view),
    "thread-join": joined,
    "queue-get": waited_thread,
    "queue-put": waited_thread,
    "condition": waited_thread,
    "event": waited_thread,
    "future": waited_thread,
    "semaphore": waited_thread,
    "child": waited_child,
    "ipc": waited_peer,
    "pipe": waited_peer,
    "network": tcp_peer,
    "dataloader": waited_workers,
    "collective": outlier_rank,
    "rendezvous": outlier_rank,
    "compile": compiling,
    "cuda": gpu_wait,
    "sleep": sleeping,
    "poll": sleeping,
    "other": file_lock_holder,
    "io": waited_file,
}


def unread_child(g, view):
    """Threads of the focus's child processes blocked all window writing a pipe whose reading end
    the focus's process holds and never reads (a web UI that started training with stdout=PIPE
    and serves requests instead of reading it): [Edge focus -> that writer]."""
    out = []
    own = set(waited_targets(view))
    for proc in g.live_children(view.pid):
        for thread in g.by_pid.get(proc.pid, []):
            if thread.kind != Kind.PIPE or not stuck(thread) or \
                    not any(label.startswith("write") for label in thread.activity):
                continue
            detail = thread.top_detail() or {}
            target = ((detail.get("fd") if isinstance(detail, dict) else None) or {}).get("target")
            if target and target not in own and view.pid in g.reader_pids(thread, target):
                out.append(Edge(view, thread, EdgeKind.CHILD, {"via": "pipe", "target": target}, process=True))
    return out


def busier_thread(g, view):
    """An idle focus thread hands over to a thread that is doing something (the focus only:
    the training loop may just be waiting for the thread that does the work)."""
    # A focus that itself retries a call that keeps failing (an HTTP 503 between back-off sleeps)
    # is not idle: its failing call is the story, not a busier thread (a server it started).
    if (g.retry(view) or {}).get("failing"):
        return []
    # First, a thread of the job retrying a call that keeps failing (an upload answered with 500,
    # a refused connect): the work the idle focus waits for is stuck there.
    live = [v for v in g.views if v is not view and v.n_samples and g.roles.get(v.pid) not in (RoleKind.LAUNCHER,)
            and v.n_samples * 2 >= g.window_samples]
    retrying = [v for v in live if v.kind in (Kind.SLEEP, Kind.POLL) and (g.retry(v) or {}).get("failing")]
    # A native helper thread parked on a futex (no Python stack, no CPU) is idle, not busy; so
    # is a server waiting in accept() for a client.
    candidates = [v for v in live if v.share >= 0.5 and ACTIVITY_RANK.get(v.kind, 0) >= 3 and not idle_helper(v)
                  and not accepting(v)]
    candidates.sort(key=lambda v: (ACTIVITY_RANK.get(v.kind, 0), v.share), reverse=True)
    return [Edge(view, v, EdgeKind.SIBLING, {"doing": "retry", "handover": True}, guess=True) for v in retrying] + \
        [Edge(view, v, EdgeKind.SIBLING, {"doing": v.kind, "handover": True}, guess=True) for v in candidates]


def edges_of(g, view):
    """view's wait-for edges (find), found once per graph: the same whatever order asks."""
    key = (view.pid, view.tid)
    if key not in g._edges:
        g._edges[key] = find(g, view)
    return g._edges[key]


__all__ = ["find", "edges_of", "busier_thread", "rank_groups", "compiler_of", "STUCK_SHARE"]
