"""The wait-for graph: who waits on whom, across threads, processes and resources.

Nodes are threads (ThreadView); an edge goes from a waiting thread to the
thread that would end its wait: the holder of a lock (or of the GIL, or of a
file lock, even in a process outside the inspected tree), the child it waits
for, the process at the other end of a pipe or socket, the DataLoader
workers, the rank that is not in the collective.  Edges are found lazily,
one waiting thread at a time, by the finders in WaitGraph.NEXT.  Framework
knowledge stays in the knowledge tables; this module only follows waits.
"""
import re
from collections import Counter

from ..knowledge import frames as frame_table
from ..knowledge.frames import LOCK_ACQUIRE
from ..knowledge.processes import match_process
from ..procfs import CLK_TCK   # the unit of a process's start_time
from ..redact import RANK_VARS, first_var
from .explain import code_text, frame_text, process_text
from .gpu import device_summaries, devices_of
from .progress import STUCK_SHARE, stuck
from .state import RUNNING_SHARE, classify, process_condition
from .threads import THREAD_WAIT_KINDS, thread_views

ACTIVITY_RANK = {
    "compile": 7, "cpu": 6, "io": 5, "network": 4, "child": 4, "gpu": 4, "cuda": 4, "lock": 3,
    "ipc": 2, "pipe": 2, "dataloader": 2, "collective": 1, "rendezvous": 1,
    "queue-get": 1, "queue-put": 1, "thread-join": 1, "future": 1, "condition": 1, "event": 1,
}


LOCK_NAME = re.compile(r"^(?:async\s+)?with\s+([\w.\[\]'\"]+)(?:\s*(?:,|as\b|:))")
LAUNCHER_ROLES = ("launcher",)
OUTSIDE_WHY = {"lock-holder": "holds a lock it waits for", "pipe-peer": "the other end of its pipe"}


def assign_roles(capture, views_by_pid=None):
    """pid -> role: launcher, main, rank N, dataloader-worker, compile-worker, compiler, child."""
    procs = capture.get("processes") or []
    root_pid = (capture.get("request") or {}).get("pid")
    views_by_pid = views_by_pid or {}
    roles = {}
    for proc in procs:
        pid = proc["pid"]
        row = match_process(proc.get("comm"), proc.get("cmdline"))
        contexts = set()
        for view in views_by_pid.get(pid, []):
            contexts.update(k for k, share in view.context_share.items() if share > 0)
        rank = first_var(proc.get("env"), RANK_VARS)
        if proc.get("outside_tree"):
            roles[pid] = "outside the job (%s)" % OUTSIDE_WHY.get(proc.get("role_hint"), "related")
        elif row is not None and row.role == "launcher":
            if pid == root_pid and len(procs) > 1 or any(p.get("ppid") == pid for p in procs):
                roles[pid] = "launcher"
        elif row is not None:
            roles[pid] = row.role
        elif "dataloader-worker" in contexts:
            roles[pid] = "dataloader-worker"
        elif rank is not None:
            roles[pid] = "rank %d" % rank
    main = focus_process(capture, roles)
    for proc in procs:
        if proc["pid"] not in roles:
            roles[proc["pid"]] = "main" if main is not None and proc is main else "child"
    return roles


def focus_process(capture, roles=None):
    """The process whose progress we judge: the root, or below a launcher its first worker child."""
    procs = capture.get("processes") or []
    if not procs:
        return None
    roles = roles or {}
    root_pid = (capture.get("request") or {}).get("pid")
    root = next((p for p in procs if p["pid"] == root_pid), procs[0])
    if roles.get(root["pid"]) not in LAUNCHER_ROLES:
        return root
    below = [p for p in procs if p is not root and roles.get(p["pid"]) not in LAUNCHER_ROLES + ("compiler",)]
    ranked = sorted(below, key=lambda p: (not (p.get("python") or {}).get("stacks"),
                                          not str(roles.get(p["pid"], "")).startswith("rank"),
                                          _rank_number(roles.get(p["pid"])), p["pid"]))
    return ranked[0] if ranked else root


def _rank_number(role):
    try:
        return int(str(role).split()[1])
    except (IndexError, ValueError):
        return 1 << 30


class WaitGraph:
    """Who waits on whom: threads, processes and what they hold, built from a capture.

    Each NEXT entry is an edge finder: given a waiting thread, the thread that would
    end its wait (the holder of its lock, the child it waits for, the process at the
    other end of its pipe, the rank missing from its collective).  verdict.walk()
    follows these edges; the end of the walk is the culprit.
    """
    def __init__(self, capture):
        self.capture = capture
        self.views = thread_views(capture)
        self.by_pid = {}
        for view in self.views:
            self.by_pid.setdefault(view.pid, []).append(view)
        self.procs = {p["pid"]: p for p in capture.get("processes") or []}
        self.roles = assign_roles(capture, self.by_pid)
        self.evidence = []
        self.findings = []
        self.chain = []
        self.chain_notes = {}
        self.group_of = {}     # chain step -> "4 DataLoader workers: ..." when it stands for a group
        self.workers = []
        self.rank_groups = None  # ([pids in the collective], [pids elsewhere]) once ranks are compared
        self.holders = _endpoint_holders(capture)
        self.gpus = device_summaries(capture)
        duration = (capture.get("window") or {}).get("duration_s") or 0
        self.states = {}
        for view in self.views:
            view.state = classify(view, duration, self.gpus, devices_of(capture, view.pid))
            self.states[(view.pid, view.tid)] = view.state
            _kind_from_state(view)
        self.gil = {int(pid): info for pid, info in (capture.get("gil") or {}).items()}
        self.file_locks = capture.get("locks") or []
        self.file_waits = {(w.get("pid"), w.get("tid")): w for w in capture.get("file_waits") or []}
        self.joins = {(j.get("pid"), j.get("tid")): j for j in capture.get("joins") or []}
        self.edge_notes = {}   # (pid, tid) of a chain step -> why the walk went there
        self.window_samples = max([v.n_samples for v in self.views] + [0])
        self.unix_peers = {int(k): v for k, v in (capture.get("unix_peers") or {}).items()}
        self.tcp_peers = {int(k): v for k, v in (capture.get("tcp_peers") or {}).items()}

    # --- where to start ----------------------------------------------------------

    def focus_thread(self):
        proc = focus_process(self.capture, self.roles)
        if proc is None:
            return None
        return self.main_thread(proc["pid"])

    def weight(self, view):
        """How much a thread's activity explains a wait: what it does (ACTIVITY_RANK), for what
        share of its samples, and for how much of the window it existed. A thread seen in one
        sample of fifty does not explain a window-long wait."""
        presence = min(1.0, view.n_samples / self.window_samples) if self.window_samples else 1.0
        return ACTIVITY_RANK.get(view.kind, 0) * view.share * presence

    def main_thread(self, pid, exclude=()):
        views = [v for v in self.by_pid.get(pid, []) if (v.pid, v.tid) not in exclude]
        main = [v for v in views if v.is_main and (v.n_samples or v.n_stack_samples)]
        if main:
            return main[0]
        sampled = sorted(views, key=lambda v: -(v.n_samples + v.n_stack_samples))
        return sampled[0] if sampled else None

    def most_telling_thread(self, pid, seen=()):
        """The thread of pid doing the most telling thing (compiling > computing > I/O > ...)."""
        views = [v for v in self.by_pid.get(pid, []) if (v.pid, v.tid) not in seen and v.n_samples]
        if not views:
            return None
        main = self.main_thread(pid, seen)
        if main is not None and self.halted(main):
            return main
        best = max(views, key=lambda v: (self.weight(v), v.is_main))
        if main is not None and self.weight(best) <= self.weight(main):
            return main
        return best

    # --- edges -------------------------------------------------------------------

    def joined_thread(self, view, seen):
        """Thread.join: the joined thread itself (py-spy's locals name it); joins that come back
        to a thread already on the walk are a deadlock."""
        join = self.joins.get((view.pid, view.tid))
        target = next((v for v in self.by_pid.get(view.pid, []) if join and v.tid == join.get("target_tid")), None)
        if target is None:
            return self.waited_thread(view, seen)
        if (target.pid, target.tid) in seen:
            cycle = self.stuck_cycle(target)
            if cycle:
                self.findings.append(finding(
                    "deadlock", "join deadlock: %s; each waits for the next to exit, and none can" % "; ".join(
                        "%s joins %s" % (v.label, nxt.label) for v, nxt in zip(cycle, cycle[1:] + [target])), view))
            return None
        self.edge_notes[(target.pid, target.tid)] = "joined by %s" % view.label
        return target

    def waited_thread(self, view, seen):
        """The thread a lock/queue/join waiter most likely waits on."""
        if view.kind == "lock":
            holder = self.gil_holder(view, seen)
            if holder:
                return holder
            holder = self.file_lock_holder(view, seen)
            if holder:
                return holder
            held = self_held(view) if stuck(view) else None
            if held:
                self._self_deadlock(view, *held)
                return None   # it waits on itself: the end of the chain
            holder = (self.lock_order_partner(view, seen) or self.named_lock_holder(view, seen)
                      or self.lock_cycle(view, seen))
            if holder:
                return holder
            if self.held_at_fork(view):
                return None
        if self._missed_task_done(view):
            return None
        others = [v for v in self.by_pid.get(view.pid, []) if (v.pid, v.tid) not in seen and v.n_samples
                  and not _idle_helper(v)]
        co_waiters = [v for v in others if _co_waiter(v, view)]
        others = [v for v in others if v not in co_waiters]
        ranked = sorted(others, key=lambda v: -(self.weight(v)))
        if ranked and ACTIVITY_RANK.get(ranked[0].kind, 0) > 0:
            return ranked[0]
        # Nobody is busy: the thread that should signal may be sleeping.  Prefer
        # threads running the user's own code over library helper threads.
        sleepers = [v for v in others if v.kind in ("sleep", "poll") and v.user_frame()
                    and not _library_only(v)]
        if sleepers:
            return max(sleepers, key=lambda v: v.share)
        if view.kind in THREAD_WAIT_KINDS and stuck(view):
            self._orphaned_wait(view, seen, co_waiters)
        return None

    def _missed_task_done(self, view):
        """Queue.join() with every consumer idle in get(): the queue is empty, so join() waits
        for a task_done() that a consumer skipped (an early `continue`, an exception caught
        before it); nothing will call it."""
        if not (view.kind in THREAD_WAIT_KINDS and stuck(view) and frame_table.waits_in_queue_join(view.top_stack)):
            return False
        threads = [v for v in self.by_pid.get(view.pid, []) if v is not view and v.top_stack]
        consumers = [v for v in threads if v.kind == "queue-get" and stuck(v)]
        if not consumers or any(not stuck(v) for v in threads):
            return False
        self.findings.append(finding(
            "orphaned-wait", "%s waits in Queue.join() at %s for every item to have its task_done(), but the "
            "queue's consumer%s (%s) wait%s in get() for new items: the queue is empty, so a task_done() call "
            "was missed (a path that skips it: an early `continue`, an exception caught before it), and "
            "join() will never return" % (
                view.label, frame_text(view.user_frame()) or "?", "s" if len(consumers) > 1 else "",
                ", ".join(v.label for v in consumers), "" if len(consumers) > 1 else "s"), view))
        return True

    def event_loop_blocked(self, view):
        """A thread that runs an asyncio event loop, held all window in one step (a synchronous
        sleep, read or computation inside a coroutine): no other task of the loop runs."""
        if not frame_table.in_event_loop_step(view.top_stack) or view.top_stack_count < 0.9 * view.n_stack_samples:
            return
        if not (stuck(view) or view.state is not None and view.state.condition in ("computing", "spinning")
                and view.share >= STUCK_SHARE):
            return
        frame = view.user_frame()
        self.findings.append(finding(
            "event-loop-blocked", "%s runs an asyncio event loop, and one step has held it for the whole window: "
            "%s at %s inside a coroutine or callback, without awaiting, so no other task of that loop runs "
            "(await an async call instead, or move the work to an executor)" % (
                view.label, _doing(view), frame_text(frame) or "?"), view))

    def _orphaned_wait(self, view, seen, co_waiters):
        """A wait on another thread of the process that no thread is left to end: the others are
        stuck in the same wait (parties at a barrier, tasks waiting on tasks queued to their own
        pool) or wait on it, and the thread that would end it died (an exception in a thread
        ends it quietly) or never started."""
        threads = self.by_pid.get(view.pid, [])
        python = [v for v in threads if v is not view and v.top_stack]
        waiting_on_it = [v for v in threads if v is not view and (v.pid, v.tid) in seen and stuck(v)]
        if any(v not in co_waiters and v not in waiting_on_it for v in python):
            return   # a thread that can still end the wait
        why = []
        if co_waiters:
            why.append("%s wait%s at the same line" % (", ".join(v.label for v in co_waiters),
                                                       "s" if len(co_waiters) == 1 else ""))
        if waiting_on_it:
            why.append("%s wait%s on it" % (", ".join(v.label for v in waiting_on_it),
                                            "s" if len(waiting_on_it) == 1 else ""))
        if not python:
            why.append("no other Python thread is alive in that process%s" % (
                " (only %d native helper thread(s))" % (len(threads) - 1) if len(threads) > 1 else ""))
        pool = frame_table.pool_of(view.top_stack)
        where = frame_text(view.user_frame()) or "?"
        if pool and view.frame_kind == "future":
            # every worker waits on tasks that need a free worker of the same pool
            self.findings.append(finding(
                "deadlock", "pool deadlock: %s, a worker of %s, waits (%s) at %s for a task queued to the same "
                "pool, and no worker is free to run it: %s" % (view.label, pool, view.frame_kind, where,
                                                               "; ".join(why) or "it is the only worker"), view))
            return
        self.findings.append(finding(
            "orphaned-wait", "%s waits (%s) at %s for another thread of pid %d, and no thread is left to end the "
            "wait: %s. Nothing will: the thread that would (a producer, a consumer, a party) died on an "
            "exception, which ends a thread quietly, or was never started"
            % (view.label, view.frame_kind, where, view.pid, "; ".join(why)), view))

    def gil_holder(self, view, seen):
        """A futex wait at a line that waits on nothing is a wait for the GIL; py-spy names its holder."""
        info = self.gil.get(view.pid) or {}
        holder_tid = info.get("holder_tid")
        if not holder_tid or holder_tid == view.tid or view.frame_kind:
            return None
        holder = next((v for v in self.by_pid.get(view.pid, []) if v.tid == holder_tid), None)
        if holder is None or (holder.pid, holder.tid) in seen:
            return None
        self.edge_notes[(holder.pid, holder.tid)] = "holds the GIL (%s) that %s waits for" % (
            info.get("how") or "py-spy", view.label)
        view.waits_for_gil = True
        return holder

    def file_lock_holder(self, view, seen):
        """flock()/fcntl() lock waits: /proc/locks names the holder, even outside the inspected tree."""
        if not self.file_locks:
            return None
        blocked = _in_file_lock(view)
        polling = view.kind in ("sleep", "poll", "other")
        if not blocked and not polling:
            return None
        for lock in self.file_locks:
            waiters = (lock.get("waiter_pids") or []) if blocked else (lock.get("pollers") or [])
            if view.pid not in waiters or not lock.get("holder_pid"):
                continue
            holder_pid = lock["holder_pid"]
            if blocked and self._file_lock_cycle(view, lock):
                return None
            thread = self.most_telling_thread(holder_pid, seen)
            where = "outside the inspected tree" if not lock.get("holder_in_tree", True) else "in the job"
            self.findings.append(finding(
                "file-lock", "%s %s for %s %s lock on %s held by %s, %s" % (
                    view.label, "waits" if blocked else "retries between sleeps (its process has the file open)", lock.get("mode", "an").lower().replace("write", "a write").replace("read", "a read"),
                    LOCK_TYPES.get(lock.get("type"), lock.get("type") or "file"),
                    lock.get("path") or lock.get("dev_inode"), _proc_text(self.procs.get(holder_pid), holder_pid),
                    where), view))
            if thread is not None:
                self.edge_notes[(thread.pid, thread.tid)] = "holds the %s lock on %s" % (
                    lock.get("type", "file"), lock.get("path") or lock.get("dev_inode"))
                return thread
        return None

    def waits_on_file_lock(self, view):
        """view waits (blocked, or retrying between sleeps) for a file lock another process holds."""
        return any(f["kind"] == "file-lock" and (f["pid"], f["tid"]) == (view.pid, view.tid) for f in self.findings)

    def _file_lock_cycle(self, view, lock):
        """The file lock view waits for is held by a process earlier on the walk, itself blocked
        on a file lock: a deadlock across processes through file locks."""
        first = next((v for v in self.chain if v.pid == lock["holder_pid"]), None)
        cycle = self.stuck_cycle(first) if first is not None and first.pid != view.pid else None
        if not cycle:
            return False
        name = lambda entry: entry.get("path") or entry.get("dev_inode") or "a lock"
        steps = []
        for v, nxt in zip(cycle, cycle[1:] + cycle[:1]):
            # v waits for the lock nxt holds
            entry = next((e for e in self.file_locks if e.get("holder_pid") == nxt.pid
                          and v.pid in (e.get("waiter_pids") or [])), {})
            steps.append("%s waits for %s, held by pid %d" % (_proc_text(self.procs.get(v.pid), v.pid), name(entry),
                                                               nxt.pid))
        self.findings.append(finding(
            "deadlock", "file-lock deadlock across processes: %s: nobody can move" % "; ".join(steps), view))
        return True

    def held_at_fork(self, view):
        """A forked child waiting on a lock that no thread of its own holds: the lock was held,
        at fork() time, by a thread that exists only in the parent.  Names that thread when its
        stack shows it inside the same lock (same `with` name, or the same library function)."""
        proc = self.procs.get(view.pid) or {}
        parent = self.procs.get(proc.get("ppid"))
        if parent is None or not stuck(view) or _shared_futex(view) or _in_file_lock(view):
            return False   # (a file lock is the kernel's, held by a process, not by a thread)
        others = [v for v in self.by_pid.get(view.pid, []) if v is not view and v.n_samples]
        wants = lock_intent(view)["wants"]
        if any(wants and wants in lock_intent(o)["holds"] for o in others):
            return False
        if any(o.kind in ("cpu", "io", "network") and o.share >= 0.5 for o in others):
            return False
        if (parent.get("cmdline") or [None])[0] != (proc.get("cmdline") or [None])[0]:
            return False   # an exec'd program, not a fork of the parent
        lock_frame = next((f for d, row in view.frame_matches if row.kind in ("lock", "semaphore")
                           for f in [view.top_stack[d]]), None)
        holder = None
        for candidate in self.by_pid.get(parent["pid"], []):
            if wants and wants in held_in_window(candidate):
                holder = candidate
                break
            if lock_frame and any(f[1] == lock_frame[1] and f[0] != lock_frame[0]
                                  for frames, _n in candidate.stacks_by_count()[:1] for f in frames):
                holder = candidate
        what = wants or (lock_frame and "the lock taken in %s (%s)" % (lock_frame[0], lock_frame[1].rsplit("/", 1)[-1])) \
            or "a lock"
        text = ("%s waits on %s that no thread of pid %d holds: pid %d was forked from pid %d while another thread "
                "held it, and that thread does not exist in the child, so nothing will ever release it"
                % (view.label, what, view.pid, view.pid, parent["pid"]))
        if holder is not None:
            text += "; in the parent, %s is inside it (%s)" % (holder.label, (frame_text(holder.user_frame()) or "no Python frame"))
        self.findings.append(finding("lock-held-at-fork", text, view))
        view.held_at_fork = text
        return True

    def waited_file(self, view, seen):
        """A sleep/poll loop on a lock or marker file: follow it to whoever holds or writes the file."""
        wait = self.file_waits.get((view.pid, view.tid))
        if not wait:
            return None
        holders = [p for p in (wait.get("flock_holders") or []) + (wait.get("open_by") or []) if p != view.pid]
        for pid in holders:
            thread = self.most_telling_thread(pid, seen)
            if thread is not None:
                self.edge_notes[(thread.pid, thread.tid)] = "holds or has open %s" % wait.get("path")
                return thread
        return None

    def _self_deadlock(self, view, frame, held):
        wants = lock_intent(view)["wants"]
        same = [v for v in self.by_pid.get(view.pid, []) if v is not view and v.kind == "lock"
                and _futex_word(v) and _futex_word(v) == _futex_word(view)]
        self.findings.append(finding(
            "deadlock",
            "self-deadlock: %s waits for `%s`, which it already holds (%s, line %d, in %s): a threading.Lock "
            "is not reentrant, so nothing can release it%s"
            % (view.label, wants, "`%s`" % code_text(held["code"]), held["line"], frame[0],
               "; %s wait%s on the same lock" % (", ".join(v.label for v in same), "" if len(same) > 1 else "s")
               if same else ""), view))

    def named_lock_holder(self, view, seen):
        """The thread of the process that holds, by name, the lock a waiter wants (inside
        `with X:`, or after an unreleased X.acquire()).  One that waits on the same futex word
        first: holding a lock of that name while blocked on this very lock, it is the one
        stuck inside it."""
        wants = lock_intent(view)["wants"]
        if not wants or not stuck(view):
            return None
        named = [v for v in self.lock_sharers(view) if v is not view and _holds_same(v, wants, view)]
        holders = [v for v in named if (v.pid, v.tid) not in seen]
        if not holders:
            self._cycle_through_lock(view, wants, [v for v in named if v in self.chain])
            return None
        word = _futex_word(view)
        holder = max(holders, key=lambda v: (bool(word) and _futex_word(v) == word, v.share))
        if not (holder.kind == "lock" and self_held(holder)):   # a self-deadlock says so itself
            _name, frame, held = next(h for h in held_locks(holder) if h[0] == wants)
            self.findings.append(finding(
                "lock-holder", "%s holds `%s` (`%s`, line %d, in %s), which %s waits for; it is %s"
                % (holder.label, wants, code_text(held["code"]), held["line"], frame[0], view.label,
                   _doing(holder)), holder))
        return holder

    def lock_sharers(self, view):
        """Threads that can hold the lock view waits on: its own process's, and for a lock in
        shared memory (a multiprocessing lock) those of every process mapping it (the waker
        probe's mappers; without them, every process of the capture)."""
        if not _shared_futex(view):
            return self.by_pid.get(view.pid, [])
        mappers = next((set(w.get("mappers") or []) for w in self.capture.get("wakers") or []
                        if (w.get("pid"), w.get("tid")) == (view.pid, view.tid) and w.get("wait") == "futex-shared"),
                       None)
        return [v for v in self.views if v.pid == view.pid or mappers is None or v.pid in mappers]

    def _cycle_through_lock(self, view, wants, holders):
        """The lock view waits for is held by a thread earlier on the walk, which waits (on a
        queue, a join, an event, ...) for what comes after it: a cycle, nobody can move."""
        if not holders:
            return
        holder = holders[0]
        cycle = self.stuck_cycle(holder)
        if not cycle or view not in cycle:
            return
        if any(f["kind"] == "deadlock" and holder.label in f["summary"] and view.label in f["summary"]
               for f in self.findings):
            return   # already said (a lock-order deadlock of the same two threads)
        _name, frame, held = next(h for h in held_locks(holder) if h[0] == wants)
        text = "deadlock through a lock: %s holds `%s` (`%s`, line %d, in %s)" % (
            holder.label, wants, code_text(held["code"]), held["line"], frame[0])
        for v, nxt in zip(cycle, cycle[1:]):
            text += " while it waits (%s) at %s for %s" % (v.frame_kind or v.kind, frame_text(v.user_frame()) or "?",
                                                          nxt.label)
            text = text if nxt is view else text + ", which"
        self.findings.append(finding(
            "deadlock", "%s, which waits for `%s`: none of them can move" % (text, wants), holder))

    def _lock_waiters(self, view, seen):
        """Other threads stuck on locks with view (in its process, or on a lock shared between
        processes); [] when one of the process's threads runs (contention, not a deadlock)."""
        if not stuck(view):
            return []
        shared = _shared_futex(view)
        candidates = []
        for other in self.views:
            if (other.pid, other.tid) in seen or other.kind != "lock" or not stuck(other):
                continue
            if other.pid == view.pid or (shared and _shared_futex(other)) or \
                    self.related(view.pid, other.pid) and _shared_futex(other):
                candidates.append(other)
        same = [v for v in self.by_pid.get(view.pid, []) if v.kind == "cpu" and v.share > 0.5
                or v.state is not None and v.state.progressing]
        if same and all(c.pid == view.pid for c in candidates):
            return []
        return candidates

    def lock_order_partner(self, view, seen):
        """The lock waiter that holds what view wants while wanting what view holds."""
        mine = lock_intent(view)
        for other in self._lock_waiters(view, seen):
            theirs = lock_intent(other)
            if mine["wants"] and theirs["wants"] and mine["wants"] in theirs["holds"] \
                    and theirs["wants"] in mine["holds"]:
                where = "" if other.pid == view.pid else " across processes"
                self.findings.append(finding(
                    "deadlock",
                    "lock-order deadlock%s: %s holds %s and wants %s; %s holds %s and wants %s"
                    % (where, view.label, theirs["wants"], mine["wants"],
                       other.label, mine["wants"], theirs["wants"]), other))
                return other
        return None

    def lock_cycle(self, view, seen):
        """Nobody is known to hold what view wants, and other threads are stuck on locks too."""
        candidates = self._lock_waiters(view, seen)
        if not candidates:
            return None
        other = max(candidates, key=lambda v: (v.pid == view.pid, v.share))
        self.findings.append(finding(
            "deadlock",
            "likely deadlock: %d threads blocked on locks for the whole window and none runs (%s)"
            % (len(candidates) + 1, ", ".join(v.label for v in [view] + candidates)), other))
        return other

    def stuck_cycle(self, first):
        """The chain from `first` (a thread on the walk) to its end, when every thread on it is
        stuck: a cycle back to `first` that nobody can leave; None otherwise (threads in
        lockstep are caught waiting on each other, and run in turn)."""
        if first not in self.chain:
            return None
        cycle = self.chain[self.chain.index(first):]
        return cycle if all(stuck(v) for v in cycle) else None

    def other_end(self, target, peers):
        """Pids holding the socket at the other end of `target` ("socket:[ino]"), by a peer table."""
        peer = peers.get(int(target[8:-1])) if target.startswith("socket:[") else None
        return self.holders.get("socket:[%s]" % peer, ()) if peer else ()

    def live_children(self, pid):
        return [p for p in self.procs.values() if p.get("ppid") == pid and p.get("exited_at") is None]

    def related(self, pid_a, pid_b):
        a, b = self.procs.get(pid_a, {}), self.procs.get(pid_b, {})
        return a.get("ppid") == pid_b or b.get("ppid") == pid_a or (a.get("ppid") and a.get("ppid") == b.get("ppid"))

    def waited_child(self, view, seen):
        detail = view.top_detail() or {}
        wanted = detail.get("child") if isinstance(detail, dict) else None
        kids = self.live_children(view.pid)
        if isinstance(wanted, int) and wanted > 0:
            kids = [p for p in kids if p["pid"] == wanted] or kids
        if not kids:
            return None
        kid = max(kids, key=lambda p: (self._process_halted(p["pid"]), self.roles.get(p["pid"]) == "compiler",
                                       p.get("cpu_seconds") or 0))
        return self.most_telling_thread(kid["pid"], seen)

    def waited_peer(self, view, seen):
        """The process at the other end of the pipe or unix socket a thread waits on."""
        if frame_table.waits_for_pool_result(view.top_stack) and stuck(view) and self.lost_pool_task(view):
            return None   # no worker has the task: the end of the walk
        peers = Counter()
        targets = _waited_targets(view)
        if not targets:
            # Waiting on a futex for a helper thread that talks to the other
            # process (multiprocessing.Pool's result handler, a Queue feeder):
            # use the pipes its sibling threads wait on.
            for sibling in self.by_pid.get(view.pid, []):
                if sibling is not view:
                    targets.extend(_waited_targets(sibling))
        for target in targets:
            for pid in self.holders.get(target, ()):
                if pid != view.pid:
                    peers[pid] += 1
            for pid in self.other_end(target, self.unix_peers):
                if pid != view.pid:
                    peers[pid] += 2
        if not peers:
            for proc in self.live_children(view.pid):
                peers[proc["pid"]] += 1
        candidates = [self.most_telling_thread(pid, seen) for pid in peers]
        candidates = [c for c in candidates if c is not None]
        if not candidates:
            return None
        best = max(candidates, key=lambda v: (self.halted(v), self.weight(v), peers[v.pid]))
        self.chain_notes[(best.pid, best.tid)] = "the other end of what %s waits on" % view.label
        return best

    def tcp_peer(self, view, seen):
        """A TCP connection between two processes of the tree (a local server, a store, a
        parameter server, another rank): the process that holds the other end."""
        for target in _waited_targets(view):
            for pid in sorted(self.other_end(target, self.tcp_peers)):
                thread = self.most_telling_thread(pid, seen) if pid != view.pid else None
                if thread is not None:
                    self.chain_notes[(thread.pid, thread.tid)] = "holds the other end of the connection %s " \
                        "waits on" % view.label
                    return thread
        return None

    def lost_pool_task(self, view):
        """A wait for a multiprocessing.Pool result while every worker of the pool waits for a task:
        none has it.  A worker that dies mid-task (SIGKILL, the OOM killer, os._exit) takes its task
        with it; the Pool starts a replacement worker, not the task again."""
        workers = [(p, self.main_thread(p["pid"])) for p in self.live_children(view.pid)]
        if not workers or not all(t is not None and frame_table.idle_pool_worker(t.top_stack) for _p, t in workers):
            return False
        starts = sorted((p.get("start_time") or 0, p["pid"]) for p, _t in workers)
        late = [(pid, (start - starts[0][0]) / CLK_TCK) for start, pid in starts[1:]
                if start - starts[0][0] >= REPLACEMENT_GAP_S * CLK_TCK]
        self.findings.append(finding(
            "lost-task", "%s waits for a multiprocessing.Pool result at %s, but all %d workers of the pool are "
            "idle, waiting for a task: none has it, so the result will never come. A worker that dies mid-task "
            "(SIGKILL, the OOM killer, os._exit) takes its task with it, and the Pool replaces the worker, not "
            "the task%s" % (view.label, frame_text(view.user_frame()) or "?", len(workers),
                            "; %s started %s after the first worker: replacement%s" % (
                                ", ".join("pid %d" % pid for pid, _gap in late),
                                ", ".join("%.1f s" % gap for _pid, gap in late), "s" if len(late) > 1 else "")
                            if late else ""), view))
        return True

    def waited_workers(self, view, seen):
        """DataLoader: the training loop waits for workers; judge them by what they do."""
        workers = [p for p in self.procs.values() if self.roles.get(p["pid"]) == "dataloader-worker"]
        mine = [p for p in workers if p.get("ppid") == view.pid] or workers
        if not mine:
            return self.waited_peer(view, seen)
        threads = [self.main_thread(p["pid"], seen) for p in mine]
        threads = [t for t in threads if t is not None]
        if not threads:
            return None
        kinds = Counter(t.kind for t in threads)
        best = max(threads, key=lambda v: (self.halted(v), self.weight(v), v.cpu_seconds or 0))
        self.group_of[(best.pid, best.tid)] = "%d DataLoader workers: %s" % (
            len(threads), ", ".join("%d %s" % (n, k) for k, n in kinds.most_common()))
        self.workers = threads
        return best

    def outlier_rank(self, view, seen):
        """Ranks waiting in a collective wait for the rank that is somewhere else."""
        ranks = {}
        for pid, role in self.roles.items():
            if str(role).startswith("rank "):
                thread = self.main_thread(pid)
                if thread is not None:
                    ranks[pid] = thread
        # A rank in the collective, or in the GPU sync right after an async NCCL
        # collective, is waiting for its peers.
        waiting = {pid for pid, t in ranks.items() if t.kind in ("collective", "rendezvous", "cuda")
                   and not self.halted(t)}
        outliers = [t for pid, t in ranks.items() if pid not in waiting and (t.pid, t.tid) not in seen]
        self.rank_groups = (sorted(waiting), sorted(t.pid for t in outliers))
        halted = [t for t in outliers if self.halted(t)]
        if halted:
            # A stopped or frozen rank is the end, however busy its peers look.
            return min(halted, key=lambda v: v.pid)
        if outliers:
            return max(outliers, key=lambda v: (self.weight(v), -v.pid))
        return self.gpu_straggler(view, ranks, seen)

    def gpu_straggler(self, view, ranks, seen):
        """Every rank waits on its GPU: the straggler is the rank whose GPU does the work the
        others wait for (real SM/tensor activity while the waiter's GPU only spins in NCCL)."""
        mine = [self.gpus[i] for i in devices_of(self.capture, view.pid) if i in self.gpus]
        if not mine or not mine[0].has_gpm or mine[0].real_compute:
            return None
        best = None
        for pid, thread in ranks.items():
            if pid == view.pid or (thread.pid, thread.tid) in seen:
                continue
            for index in devices_of(self.capture, pid):
                dev = self.gpus.get(index)
                if dev is None or not dev.real_compute or (dev.sm or 0) < (mine[0].sm or 0) + STRAGGLER_MARGIN:
                    continue
                if best is None or dev.sm > best[1].sm:
                    best = (thread, dev)
        if best is None:
            return None
        thread, dev = best
        text = ("%s is the straggler: its GPU %d computes (SM %.0f%%, tensor %.0f%%) while %s's GPU %d only waits "
                "(SM %.1f%%, tensor %.1f%%) in the collective that needs it" % (
                    _rank_text(self, thread.pid), dev.index, dev.sm, dev.tensor or 0, _rank_text(self, view.pid),
                    mine[0].index, mine[0].sm or 0, mine[0].tensor or 0))
        self.findings.append(finding("straggler", text, thread))
        self.edge_notes[(thread.pid, thread.tid)] = text
        thread.straggler_gpu = dev
        return thread

    def _process_halted(self, pid):
        return process_condition(self.by_pid.get(pid, []), self.states) is not None

    def halt_state(self, view):
        """The ThreadState that holds view still (stopped, traced or frozen): its own, or the
        one every thread of its process is in; None if it can move."""
        if view.state is not None and view.state.halted:
            return view.state
        return process_condition(self.by_pid.get(view.pid, []), self.states)

    def halted(self, view):
        return self.halt_state(view) is not None

    def straggler_rank(self, view, seen):
        """The walk ended inside a rank whose GPU does little: a peer whose GPU does the work is
        the straggler the whole job waits for (DDP syncs every step)."""
        if not str(self.roles.get(view.pid, "")).startswith("rank "):
            return None
        ranks = {pid: self.main_thread(pid) for pid, role in self.roles.items() if str(role).startswith("rank ")}
        ranks = {pid: t for pid, t in ranks.items() if t is not None}
        return self.gpu_straggler(view, ranks, seen) if len(ranks) > 1 else None

    def halted_rank(self, view, seen):
        """A rank that is not waiting, while a peer rank is stopped or frozen: the job cannot move."""
        if not str(self.roles.get(view.pid, "")).startswith("rank "):
            return None
        for pid, role in sorted(self.roles.items()):
            if pid != view.pid and str(role).startswith("rank "):
                thread = self.main_thread(pid)
                if thread is not None and (thread.pid, thread.tid) not in seen and self.halted(thread):
                    return thread
        return None

    def gpu_wait(self, view, seen):
        """A rank waiting on its GPU may wait on an NCCL kernel that waits for a hung peer."""
        if not str(self.roles.get(view.pid, "")).startswith("rank "):
            return None
        return self.outlier_rank(view, seen)

    def compiling_child(self, view, seen):
        """A compiling thread that waits on gcc/ptxas or its compile workers is still the one
        compiling: the compiler is its tool, named in the evidence, not the end of the walk
        (in a distributed job the rank that compiles is what holds the others up)."""
        if view.kernel_kind not in ("child", "poll", "pipe", "lock", "ipc", "sleep"):
            return None
        mine = set(self.descendants(view.pid))
        kids = [p for p in self.procs.values() if self.roles.get(p["pid"]) in ("compiler", "compile-worker")
                and p.get("exited_at") is None and p["pid"] in mine]
        busy = [self.most_telling_thread(p["pid"], seen) for p in kids]
        busy = [t for t in busy if t is not None and t.kind == "cpu" and t.share >= 0.3]
        if busy:
            tool = max(busy, key=lambda v: v.share)
            view.compiler = tool
            self.findings.append(finding("compiler-busy", "%s compiles through %s (%s), on CPU %d%% of the window" % (
                view.label, _proc_text(self.procs.get(tool.pid), tool.pid), self.roles.get(tool.pid), round(100 * tool.share)),
                tool))
        return None

    def descendants(self, pid):
        children = {}
        for proc in self.procs.values():
            children.setdefault(proc.get("ppid"), []).append(proc["pid"])
        out, todo = [], list(children.get(pid, []))
        while todo:
            child = todo.pop()
            out.append(child)
            todo.extend(children.get(child, []))
        return out

    def busier_thread(self, view, seen):
        """An idle focus thread hands over to a thread that is doing something."""
        # A native helper thread parked on a futex (no Python stack, no CPU) is idle, not busy.
        candidates = [v for v in self.views if (v.pid, v.tid) not in seen and v.n_samples and v.share >= 0.5
                      and ACTIVITY_RANK.get(v.kind, 0) >= 3 and self.roles.get(v.pid) not in LAUNCHER_ROLES
                      and (v.kind != "lock" or v.top_stack or (v.cpu_seconds or 0) > 0.05)
                      and v.n_samples * 2 >= self.window_samples]
        if not candidates:
            return None
        return max(candidates, key=lambda v: (ACTIVITY_RANK.get(v.kind, 0), v.share))

    NEXT = {
        "lock": waited_thread,
        "thread-join": joined_thread,
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
        "compile": compiling_child,
        "cuda": gpu_wait,
        "sleep": lambda self, view, seen: self.waited_file(view, seen) or self.file_lock_holder(view, seen),
        "poll": lambda self, view, seen: self.waited_file(view, seen) or self.file_lock_holder(view, seen),
        "other": lambda self, view, seen: self.file_lock_holder(view, seen),
        "io": waited_file,
    }


LOCK_TYPES = {"FLOCK": "flock()", "POSIX": "POSIX (fcntl/lockf)", "OFDLCK": "open-file-description (OFD)",
              "LEASE": "lease"}
STRAGGLER_MARGIN = 20.0   # SM points a straggler's GPU must exceed the waiter's by
REPLACEMENT_GAP_S = 0.1   # a pool worker started this long after the first is a replacement


def _kind_from_state(view):
    """What a thread waits on, once its kernel state is known: a CUDA spin-wait waits on the GPU
    (its CPU time is not work), a halted thread is stopped or frozen whatever it was doing."""
    state = view.state
    if state is None:
        return
    if state.condition == "blocked" and view.kernel_kind == "cpu":
        # caught runnable between timed waits: what it waits in is its most common syscall, and
        # what its stack says about that wait (a DataLoader's batch) applies to it as to any wait
        waits = [(n, k) for k, n in view.kernel_kinds.items() if k != "cpu"]
        if waits:
            count, kind = max(waits)
            view.rekind(kind, count / max(view.n_samples, 1))
    if state.condition == "spinning" and "CUDA" in state.phrase:
        view.kind, view.share = "cuda", max(view.share, view.kernel_share)
    elif state.condition == "spinning":
        view.kind, view.share = "lock", max(view.share, view.kernel_share)
    elif state.condition in ("stopped", "traced", "frozen"):
        view.kind = "stopped" if state.condition != "frozen" else "frozen"
    elif state.condition == "storage" and view.kind not in ("io", "dataloader", "compile"):
        view.kind = "io"
    # Samples at 5 Hz can catch a thread that hands work back and forth hundreds of times a
    # second asleep in most of them; the scheduler's accounting is exact.  A computing thread on
    # a CPU or runnable for most of the window computes, whatever the samples caught (one held
    # back by its CPU quota does not), and one that was for part of it slept for at most the rest.
    awake = _awake_share(state)
    if awake is None:
        return
    if state.condition == "computing" and awake >= RUNNING_SHARE and view.kernel_kind != "cpu":
        view.rekind("cpu", awake)
        view.scheduled_share = awake
    if view.kind in SLEEPING_KINDS:
        view.share = min(view.share, max(0.0, 1.0 - awake))


# Waits spent asleep in the kernel, that take no CPU while they last.
SLEEPING_KINDS = ("lock", "sleep", "poll", "pipe", "ipc", "child", "network", "tty") + THREAD_WAIT_KINDS


def _awake_share(state):
    """Share of the window a thread was on a CPU or runnable (schedstat), else on a CPU."""
    numbers = state.numbers
    wall = numbers.get("wall_s")
    if not wall:
        return None
    if numbers.get("run_s") is not None:
        return min(1.0, (numbers["run_s"] + numbers.get("runnable_wait_s", 0)) / wall)
    return numbers.get("cpu_share")


def _idle_helper(view):
    """A native helper thread parked in a wait (NCCL's socket listener, a pool's idle worker):
    no Python stack and no CPU. Nobody's wait ends through it."""
    return not view.top_stack and (view.cpu_seconds or 0) < 0.05 and view.kind not in ("cpu", "io", "compile")


def _proc_text(proc, pid):
    return process_text(proc, limit=160) if proc else "pid %d (not inspected)" % pid


def _rank_text(graph, pid):
    return "%s (pid %d)" % (graph.roles.get(pid) or "process", pid)


def _endpoint_holders(capture):
    holders = {}
    for proc in capture.get("processes") or []:
        if proc.get("exited_at") is not None:
            continue
        for target in (proc.get("endpoints") or {}):
            holders.setdefault(target, set()).add(proc["pid"])
    return holders


def _waited_targets(view):
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


def _in_file_lock(view):
    return view.kernel_kind == "lock" and bool({label for label in view.activity} & {"flock", "fcntl", "fcntl64"})


def _co_waiter(other, view):
    """Stuck in the same wait as view (the same kind, at the same line of the same code): a peer
    waiting on the same object (parties at a barrier, consumers of one queue) cannot end it."""
    mine, theirs = view.user_frame(), other.user_frame()
    return bool(mine and theirs) and other.kind == view.kind and stuck(other) and \
        tuple(mine[:3]) == tuple(theirs[:3])


def _library_only(view):
    """A thread whose every frame is library code (a pool's helper thread)."""
    from ..knowledge.frames import is_library_file
    return bool(view.top_stack) and all(is_library_file(f[1]) for f in view.top_stack)


def _shared_futex(view):
    detail = view.top_detail()
    return isinstance(detail, dict) and detail.get("shared")


def lock_intent(view):
    """Names of locks a thread holds (enclosing `with X:`, or an X.acquire() earlier in the
    function) and wants (the line it waits on)."""
    holds, wants = [], None
    frame = view.user_frame()
    if frame and len(frame) > 3 and isinstance(frame[3], dict):
        code = frame[3].get("code") or ""
        match = LOCK_NAME.match(code) or LOCK_ACQUIRE.search(code)
        wants = match.group(1) if match else None
        holds = [name for name, _held in _frame_holds(frame)]
    return {"holds": holds, "wants": wants}


def _frame_holds(frame):
    """(name, source entry) of the locks one annotated frame is inside or took by hand."""
    source = frame[3] if len(frame) > 3 and isinstance(frame[3], dict) else {}
    found = []
    for opener in source.get("within") or []:
        match = LOCK_NAME.match(opener.get("code") or "")
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


def _holds_same(holder, wants, waiter):
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


def _doing(view):
    call = view.activity.most_common(1)[0][0] if view.activity else "unknown"
    return "running" if call == "running" else "%s in %s" % ("blocked" if view.kind != "sleep" else "sleeping",
                                                              call)


def _futex_word(view):
    detail = view.top_detail()
    return detail.get("futex") if isinstance(detail, dict) else None


def held_in_window(view):
    """Lock names a thread was inside (`with X:` around its own code) in any stack sample."""
    names = set()
    for frames, _count in view.stacks_by_count():
        for frame in frame_table.own_frames(frames):
            source = frame[3] if len(frame) > 3 and isinstance(frame[3], dict) else None
            for opener in (source or {}).get("within") or []:
                match = LOCK_NAME.match(opener.get("code") or "")
                if match:
                    names.add(match.group(1))
    return names


def finding(kind, summary, view=None, pid=None):
    return {"kind": kind, "summary": summary,
            "pid": view.pid if view else pid, "tid": view.tid if view else None}

