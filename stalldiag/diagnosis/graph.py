"""The graph's nodes and what is known of them: threads, processes, roles, resources.

WaitGraph holds the thread views (with their kernel state), the processes and
their roles, and what the probes resolved (file locks, file waits, joins, the
GIL holder, socket peers, host-wide wakers).  Its questions (a process's main or
most telling thread, who maps a shared lock, who holds the other end of a
socket) are what edges.py asks to find each waiting thread's edges; the edges
themselves are found once per thread (WaitGraph.edges) and are data.  What a
thread holds and wants is read by locks.py; framework knowledge stays in the
knowledge tables.
"""
from ..knowledge import frames as frame_table
from ..knowledge.processes import match_process, runs_distributed
from ..knowledge.ranks import RANK_VARS, first_var
from .barriers import barrier_parties
from .locks import shared_futex
from .event_loop import loop_kind, loop_wait
from .gpu import device_summaries
from .motion import stuck
from .retry import retrying
from .state import RUNNING_SHARE, classify, process_condition
from . import kinds
from .threads import thread_views
from .types import read
from .views import ACTIVITY_RANK, idle_helper, stuck_handler, waited_targets
from ..vocab import Condition, Kind, rank_of, Role, RoleKind



LAUNCHER_ROLES = (RoleKind.LAUNCHER,)
# the access modes of the waker probe's end records (probes/wakers._mode: fdinfo's flags, "rw"
# where unread) that read or write a pipe; compared whole, as "write" contains the letter r
READING_MODES = ("read", "rw")
WRITING_MODES = ("write", "rw")


def _other_end_modes(record):
    """The modes of the end that can end a record's blocked pipe read or write, else None (a
    socket, a poll set: either end may)."""
    if record.wait not in ("pipe", "fifo"):
        return None
    syscall = record.syscall or ""
    if syscall.startswith(("write", "pwrite")):
        return READING_MODES
    if syscall.startswith(("read", "pread")):
        return WRITING_MODES
    return None
OUTSIDE_WHY = {"lock-holder": "holds a lock it waits for", "pipe-peer": "the other end of its pipe",
               "waker": "holds the other end of what it waits on"}


def assign_roles(procs, root_pid, views_by_pid=None, parties=()):
    """pid -> role: launcher, main, rank N, dataloader-worker, compile-worker, compiler, child.
    procs: types.Process records; root_pid: the pid inspected; parties: pids waiting at a
    process-shared barrier (barriers.py), ranks of a collective as torch.distributed's are."""
    views_by_pid = views_by_pid or {}
    roles = {}
    for proc in procs:
        pid = proc.pid
        row = match_process(proc.comm, proc.cmdline)
        contexts = set()
        for view in views_by_pid.get(pid, []):
            contexts.update(k for k, share in view.context_share.items() if share > 0)
        rank = first_var(proc.env, RANK_VARS)
        if proc.outside_tree:
            roles[pid] = Role(RoleKind.OUTSIDE, why=OUTSIDE_WHY.get(proc.role_hint, "related"))
        elif row is not None and row.role == RoleKind.LAUNCHER:
            if pid == root_pid and len(procs) > 1 or any(p.ppid == pid for p in procs):
                roles[pid] = Role(RoleKind.LAUNCHER)
        elif row is not None:
            roles[pid] = Role(row.role)
        elif "dataloader-worker" in contexts:
            roles[pid] = Role(RoleKind.DATALOADER_WORKER)
        elif "debug-server" in contexts:
            roles[pid] = Role(RoleKind.DEBUG_SERVER)     # (it inherited its rank's RANK: it is no rank)
        elif rank is not None:
            roles[pid] = Role(RoleKind.RANK, rank=rank)
    _children_of_ranks(procs, roles)
    _unnumbered_ranks(procs, roles, root_pid, parties)
    if root_pid not in roles and _starts_ranks(procs, roles, root_pid):
        roles[root_pid] = Role(RoleKind.LAUNCHER)     # a script that starts the ranks itself, as torchrun does
    main = focus_process(procs, root_pid, roles)
    for proc in procs:
        if proc.pid not in roles:
            roles[proc.pid] = Role(RoleKind.MAIN if main is not None and proc is main else RoleKind.CHILD)
    return roles


def _children_of_ranks(procs, roles):
    """A process forked by a rank inherits its RANK: one whose parent is the rank of that number is
    a child of the rank (a helper it started), not a second rank."""
    parents = {p.pid: p.ppid for p in procs}
    for pid, role in list(roles.items()):
        if role.is_rank and roles.get(parents.get(pid)) == role:
            roles[pid] = Role(RoleKind.CHILD)


def _unnumbered_ranks(procs, roles, root_pid, parties=()):
    """Processes running torch.distributed's threads, or waiting at a process-shared barrier,
    with no RANK variable are ranks, numbered by pid (the report says so: unnumbered-ranks); a
    root that started them is their launcher."""
    if any(role.is_rank for role in roles.values()):
        return
    ranks = sorted(p.pid for p in procs if p.pid not in roles and not p.outside_tree
                   and (runs_distributed(t.name for t in p.threads) or p.pid in parties))
    if not [pid for pid in ranks if pid != root_pid]:
        return   # one process using gloo alone is not a job of ranks
    for number, pid in enumerate(ranks):
        roles[pid] = Role(RoleKind.RANK, rank=number)
    if root_pid not in ranks and root_pid not in roles:
        roles[root_pid] = Role(RoleKind.LAUNCHER)


def _starts_ranks(procs, roles, root_pid):
    """The root, not a rank itself, has ranks below it."""
    parents = {p.pid: p.ppid for p in procs}
    for pid, role in roles.items():
        if not role.is_rank or pid == root_pid:
            continue
        up = parents.get(pid)
        while up is not None and up != root_pid:
            up = parents.get(up)
        if up == root_pid:
            return True
    return False


def unnumbered_ranks(procs, roles):
    """Ranks whose number is their place in pid order, not a RANK variable."""
    envs = {p.pid: p.env for p in procs}
    return sorted(pid for pid, role in roles.items() if role.is_rank
                  and first_var(envs.get(pid), RANK_VARS) is None)


def focus_process(procs, root_pid, roles=None):
    """The process whose progress we judge: the root, or below a launcher its first worker child."""
    if not procs:
        return None
    roles = roles or {}
    root = next((p for p in procs if p.pid == root_pid), procs[0])
    if roles.get(root.pid) not in LAUNCHER_ROLES:
        return root
    below = [p for p in procs if p is not root and roles.get(p.pid) not in LAUNCHER_ROLES + (RoleKind.COMPILER,)]
    ranked = sorted(below, key=lambda p: (not p.python.get("stacks"),
                                          rank_of(roles.get(p.pid)) is None,
                                          _rank_number(roles.get(p.pid)), p.pid))
    return ranked[0] if ranked else root


def _rank_number(role):
    rank = rank_of(role)
    return 1 << 30 if rank is None else rank


class WaitGraph:
    """Who waits on whom: threads, processes and what they hold, built from a capture.

    Each NEXT entry is an edge finder: given a waiting thread, the thread that would
    end its wait (the holder of its lock, the child it waits for, the process at the
    other end of its pipe, the rank missing from its collective).  verdict.walk()
    follows these edges; the end of the walk is the culprit.
    """
    def __init__(self, capture):
        facts = self.facts = read(capture)   # (a capture, or its Facts)
        self.window = facts.window
        self.machine = facts.machine
        self.root_pid = facts.request_pid   # the pid inspected
        self.proc_list = facts.processes
        self.procs = {p.pid: p for p in self.proc_list}
        self.views = thread_views(facts)
        self.by_pid = {}
        for view in self.views:
            self.by_pid.setdefault(view.pid, []).append(view)
        self.barriers = barrier_parties(self.views)
        self.barrier_pids = {v.pid for _call, members in self.barriers for v in members}
        self.roles = assign_roles(self.proc_list, self.root_pid, self.by_pid, self.barrier_pids)
        self.skipped_children = facts.skipped_children
        self._edges = {}
        self._retries = {}
        self.holders = _endpoint_holders(self.proc_list)
        self.gpu = facts.gpu
        self.gpus = device_summaries(facts.gpu)
        self.resources = facts.resources   # None: the probe did not run or failed
        duration = self.window.duration_s or 0
        self.states = {}
        for view in self.views:
            view.state = classify(view, duration, self.gpus, self.devices_of(view.pid))
            self.states[(view.pid, view.tid)] = view.state
            _kind_from_state(view)
        self.file_locks, self.file_waits, self.joins = facts.file_locks, facts.file_waits, facts.joins
        self.objects = facts.objects        # None: not read (an older capture, or no thread waited)
        self.gil, self.wakers = facts.gil, facts.wakers
        self.output = facts.output          # pid -> OutputTail
        self.syscall_errors = facts.syscall_errors
        self.window_samples = max([v.n_samples for v in self.views] + [0])
        self.unix_peers = facts.unix_peers
        self.tcp_peers = facts.tcp_peers
        self.socket_queues = facts.socket_queues
        self.collectives = facts.collectives   # the ranks' Flight Recorders, None: not read
        for _call, members in self.barriers:
            for view in members:
                view.kind = "collective"
        for view in self.views:
            # a rank blocked (not computing) in backward() waits for DDP's gradient all-reduce
            if rank_of(self.roles.get(view.pid)) is not None and view.kind in (Kind.LOCK, Kind.OTHER, Kind.POLL) \
                    and frame_table.in_backward(view.top_stack) and stuck(view):
                view.kind = "collective"
        # event loops waiting for events: what can wake each (event_loop.py)
        self.loops = {}
        for view in self.views:
            loop = loop_wait(self, view)
            if loop is None:
                continue
            self.loops[(view.pid, view.tid)] = loop
            view.kind = loop_kind(loop)
        for view in self.views:
            view.freeze()   # built once: no step after this one changes what a thread is

    # --- where to start ----------------------------------------------------------

    def focus_thread(self):
        proc = focus_process(self.proc_list, self.root_pid, self.roles)
        if proc is None:
            return None
        main = self.main_thread(proc.pid)
        if main is not None and self.halted(main) and rank_of(self.roles.get(proc.pid)) is not None:
            # a stopped rank that is also the job's root (Lightning's rank 0 launches the others):
            # the job's progress is judged where it waits, at a rank waiting in the collective the
            # stopped one is missing from; the walk then ends at the stopped rank
            waiting = [self.main_thread(p.pid) for p in self.proc_list
                       if p.pid != proc.pid and rank_of(self.roles.get(p.pid)) is not None]
            waiting = [v for v in waiting if v is not None and not self.halted(v)
                       and v.kind in (Kind.COLLECTIVE, Kind.RENDEZVOUS, Kind.CUDA)]
            if waiting:
                return min(waiting, key=lambda v: (_rank_number(self.roles.get(v.pid)), v.pid))
        return main

    def weight(self, view):
        """How much a thread's activity explains a wait: what it does (ACTIVITY_RANK), for what
        share of its samples, and for how much of the window it existed. A thread seen in one
        sample of fifty does not explain a window-long wait."""
        presence = min(1.0, view.n_samples / self.window_samples) if self.window_samples else 1.0
        return ACTIVITY_RANK.get(view.kind, 0) * view.share * presence

    def main_thread(self, pid):
        views = self.by_pid.get(pid, [])
        main = [v for v in views if v.is_main and (v.n_samples or v.n_stack_samples)]
        if main:
            return main[0]
        sampled = sorted(views, key=lambda v: -(v.n_samples + v.n_stack_samples))
        return sampled[0] if sampled else None

    def request_at_peer(self, target):
        """Where a request sent on a connection (target "socket:[N]") is, from the bytes queued at
        the window's end: ("unread", n) when the other end holds n bytes its process has not read
        (it never read the request), ("read", 0) when nothing waits there (it read the request,
        or none was sent), None where the queues were not read."""
        inode = int(target[8:-1]) if isinstance(target, str) and target.startswith("socket:[") else None
        peer = self.tcp_peers.get(inode) or self.unix_peers.get(inode) if inode is not None else None
        queue = self.socket_queues.get(peer) if peer is not None else None
        if not queue:
            return None
        return ("unread", queue[0]) if queue[0] else ("read", 0)

    def most_telling_thread(self, pid):
        """The thread of pid doing the most telling thing (compiling > computing > I/O > ...)."""
        views = [v for v in self.by_pid.get(pid, []) if v.n_samples and not idle_helper(v)] or \
            [v for v in self.by_pid.get(pid, []) if v.n_samples]
        if not views:
            return None
        main = self.main_thread(pid)
        if main is not None and self.halted(main):
            return main
        best = max(views, key=lambda v: (self.weight(v), v.is_main))
        if main is not None and self.weight(best) <= self.weight(main):
            return main
        if main is not None and native_pool_worker(best) and main.kind in (Kind.CPU, Kind.CUDA) and main.top_stack:
            return main   # (a native pool's worker does the work its main thread's Python frames name)
        return best

    # --- what the walk and the edges ask of the graph ------------------------------

    def retry(self, view):
        """retry.retrying() of view, found once (the category and the findings both ask)."""
        key = (view.pid, view.tid)
        if key not in self._retries:
            self._retries[key] = retrying(self, view)
        return self._retries[key]

    def thread_on(self, pid, targets):
        """The thread of pid that waits on one of targets (the other end of a pipe or socket a
        waiter waits on), else its most telling thread."""
        wanted = set(targets)
        for target in targets:
            wanted.update(self.peer_targets(target))
        views = self.by_pid.get(pid, [])
        for view in views:
            if wanted & set(waited_targets(view)):
                return view
        if any(target.startswith("socket:[") for target in targets):
            # A server none of whose threads reads this connection: its handler is stuck on
            # something else (a lock), not its acceptor nor a thread that reads another connection.
            # (a library's own thread waiting on a condition, a queue's feeder, is idle: only a
            # lock wait counts there)
            stuck = [v for v in views if stuck_handler(v)]
            if stuck:
                return max(stuck, key=self.weight)
        return self.most_telling_thread(pid)

    def devices_of(self, pid):
        """The GPU indices a process of the capture uses."""
        return self.gpu.devices_of(pid, self.procs.get(pid))

    def peer_targets(self, target):
        """The socket at the other end of target, by the TCP and unix peer tables."""
        if not target.startswith("socket:["):
            return [target]
        inode = int(target[8:-1])
        peers = [table.get(inode) for table in (self.tcp_peers, self.unix_peers)]
        return ["socket:[%s]" % p for p in peers if p] or [target]

    def waker_pids(self, view, target):
        """Processes the waker probe found holding the other end of what view waits on, anywhere
        on the host (capture['wakers'])."""
        out = []
        for record in self.wakers.get((view.pid, view.tid), []):
            if record.target != target and not any(w.get("target") == target for w in record.watching):
                continue
            ends = list(record.ends)
            for watched in record.watching:
                if watched.get("target") == target:
                    ends += watched.get("ends") or []
            other = _other_end_modes(record)
            out += [e["pid"] for e in ends if e.get("pid") in self.procs and (other is None or e.get("mode") in other)]
        return list(dict.fromkeys(out))

    def pipe_ends_known(self, view, target):
        """Whether the waker probe read the access modes of the pipe view blocks reading or
        writing: then only the holders of its other end can end the wait (a process between them,
        /bin/sh holding the writing end as its stdout, cannot)."""
        return any(record.target == target and _other_end_modes(record) is not None
                   for record in self.wakers.get((view.pid, view.tid), []))

    def writer_pids(self, view, target):
        """Processes the waker probe found holding the writing end of the pipe view reads."""
        return self._end_pids(view, target, WRITING_MODES)

    def reader_pids(self, view, target):
        """Processes the waker probe found holding the reading end of the pipe view writes."""
        return self._end_pids(view, target, READING_MODES)

    def _end_pids(self, view, target, modes):
        out = []
        for record in self.wakers.get((view.pid, view.tid), []):
            ends = list(record.ends) if record.target == target else []
            for watched in record.watching:
                if watched.get("target") == target:
                    ends += watched.get("ends") or []
            out += [e["pid"] for e in ends if e.get("mode") in modes]
        return list(dict.fromkeys(out))

    def shared_mappers(self, view):
        """Other processes the waker probe found mapping the shared lock view waits on (a set),
        or None when the probe did not look."""
        for w in self.wakers.get((view.pid, view.tid), []):
            if w.wait == "futex-shared":
                return set(w.mappers) - {view.pid}
        return None

    def lock_sharers(self, view):
        """Threads that can hold the lock view waits on: its own process's, and for a lock in
        shared memory (a multiprocessing lock) those of every process mapping it (the waker
        probe's mappers; without them, every process of the capture)."""
        if not shared_futex(view):
            return self.by_pid.get(view.pid, [])
        mappers = next((set(w.mappers) for w in self.wakers.get((view.pid, view.tid), [])
                        if w.wait == "futex-shared"), None)
        return [v for v in self.views if v.pid == view.pid or mappers is None or v.pid in mappers]

    def other_end(self, target, peers):
        """Pids holding the socket at the other end of `target` ("socket:[ino]"), by a peer table."""
        peer = peers.get(int(target[8:-1])) if target.startswith("socket:[") else None
        return self.holders.get("socket:[%s]" % peer, ()) if peer else ()

    def live_children(self, pid):
        return [p for p in self.proc_list if p.ppid == pid and p.exited_at is None]

    def exited_children(self, pid):
        return [p for p in self.proc_list if p.ppid == pid and p.exited_at is not None]

    def helper(self, pid):
        """multiprocessing's resource tracker or fork server (it holds the pipe ends it inherited
        and writes to none of them), PyTorch's debug server frontend (it waits for requests): it
        ends nobody's wait."""
        return self.roles.get(pid) in (RoleKind.MP_HELPER, RoleKind.DEBUG_SERVER)

    def related(self, pid_a, pid_b):
        a, b = self.procs.get(pid_a), self.procs.get(pid_b)
        if a is None or b is None:
            return False
        return a.ppid == pid_b or b.ppid == pid_a or bool(a.ppid and a.ppid == b.ppid)

    def process_halted(self, pid):
        return process_condition(self.by_pid.get(pid, []), self.states) is not None

    def halt_state(self, view):
        """The ThreadState that holds view still (stopped, traced or frozen): its own, or the
        one every thread of its process is in; None if it can move."""
        if view.state is not None and view.state.halted:
            return view.state
        return process_condition(self.by_pid.get(view.pid, []), self.states)

    def halted(self, view):
        return self.halt_state(view) is not None

    def outside(self, view):
        """A thread of a process outside the inspected tree (a lock's holder, a server the job talks to)."""
        proc = self.procs.get(view.pid)
        return proc is not None and bool(proc.outside_tree)

    def descendants(self, pid):
        children = {}
        for proc in self.procs.values():
            children.setdefault(proc.ppid, []).append(proc.pid)
        out, todo = [], list(children.get(pid, []))
        while todo:
            child = todo.pop()
            out.append(child)
            todo.extend(children.get(child, []))
        return out



def _kind_from_state(view):
    """What a thread waits on, once its kernel state is known: a CUDA spin-wait waits on the GPU
    (its CPU time is not work), a halted thread is stopped or frozen whatever it was doing."""
    state = view.state
    if state is None:
        return
    if state.condition == Condition.BLOCKED and view.kernel_kind == Kind.CPU and not native_pool_worker(view):
        # caught runnable between timed waits: what it waits in is its most common syscall, and
        # what its stack says about that wait (a DataLoader's batch) applies to it as to any wait
        waits = [(n, k) for k, n in view.kernel_kinds.items() if k != "cpu"]
        if waits:
            count, kind = max(waits)
            view.rekind(kind, count / max(view.n_samples, 1))
    if native_pool_worker(view) and view.kind == Kind.LOCK:
        # a native pool's worker between barriers computes, whichever of the two it was caught in more
        view.rekind("cpu", view.activity.get("running", 0) / view.n_samples)
    if state.condition == Condition.SPINNING:
        view.kind, view.share = state.target, max(view.share, view.kernel_share)
    elif state.halted:
        view.kind = "stopped" if state.condition != Condition.FROZEN else "frozen"
    elif state.condition == Condition.STORAGE and view.kind not in (Kind.IO, Kind.DATALOADER, Kind.COMPILE):
        view.kind = "io"
    # Samples at 5 Hz can catch a thread that hands work back and forth hundreds of times a
    # second asleep in most of them; the scheduler's accounting is exact.  A computing thread on
    # a CPU or runnable for most of the window computes, whatever the samples caught (one held
    # back by its CPU quota does not), and one that was for part of it slept for at most the rest.
    awake = _awake_share(state)
    if awake is None:
        return
    storage = _storage_share(view, awake)
    if state.condition == Condition.COMPUTING and storage >= STORAGE_BOUND_SHARE and awake < RUNNING_SHARE + 0.1:
        # on a CPU a third of the window and in storage waits (fsync, D state) as long: each step
        # waits on the disk (a commit per row), storage sets the pace
        view.rekind("io", storage)
        view.scheduled_share = awake
        return
    if state.condition == Condition.COMPUTING and awake >= RUNNING_SHARE and view.kernel_kind != Kind.CPU:
        view.rekind("cpu", awake)
        view.scheduled_share = awake
    if view.kind in SLEEPING_KINDS:
        view.share = min(view.share, max(0.0, 1.0 - awake))
    paced = paced_work(view, state)
    if paced:
        kind, share, view.paced = paced
        view.rekind(kind, share)
        view.scheduled_share = awake


PACED_RATE = 50.0        # sleeps ended a second (voluntary switches) ...
PACED_CPU_SHARE = 0.05   # ... with at least this much of a core between them: work paced by sleeps


def paced_work(view, state):
    """(kind, share, (wakes a second, CPU share)) of the work a thread does between short sleeps,
    else None.  A loop that sleeps
    a few milliseconds between units of work (a dataset's simulated decode, a client pacing its
    requests, a writer between commits) is caught in the sleep by most /proc samples, yet it wakes
    hundreds of times a second and spends a real share of a core: the sleeps pace the work, they
    do not hold it (state._woken_loop is the same rate with no CPU: a timed wait in a loop). Its
    work is the network or storage where its Python stacks caught it in such a call, storage where
    it was caught in storage waits, else CPU."""
    if view.kernel_kind != Kind.SLEEP or view.kind != Kind.SLEEP or state.halted:
        return None
    wall, cpu = state.numbers.get("wall_s"), state.numbers.get("cpu_share") or 0
    rate = ((view.thread.ctx or {}).get("voluntary") or 0) / wall if wall else 0
    if rate < PACED_RATE or cpu < PACED_CPU_SHARE:
        return None
    awake = _awake_share(state) or cpu
    if view.frame_kind in (Kind.NETWORK, Kind.IO):
        # its Python stacks caught its work in a call on the network or storage (a request between
        # the sleeps that pace a client): that is its work, whatever the 5 Hz samples missed
        return view.frame_kind, awake, (rate, cpu)
    if view.kernel_kinds.get("io", 0) >= STORAGE_SAMPLES:
        return Kind.IO, max(_storage_share(view, awake), view.kernel_kinds["io"] / max(view.n_samples, 1)), (rate, cpu)
    return Kind.CPU, awake, (rate, cpu)


NATIVE_POOL_RUNNING = 0.3   # share of samples on a CPU or runnable of a native pool's worker


def native_pool_worker(view):
    """A thread with no Python frame that runs (or waits to run) between futex waits: a worker of
    a native compute pool (OpenMP, a BLAS library, Eigen) passing barriers, which computes; not
    a thread that waits on a lock."""
    if view.top_stack or not view.n_samples:
        return False
    running = view.activity.get("running", 0) / view.n_samples
    return running >= NATIVE_POOL_RUNNING and set(view.kernel_kinds) <= {Kind.CPU, Kind.LOCK}


STORAGE_BOUND_SHARE = 0.3   # share of samples in storage waits that makes a half-busy thread storage-bound
STORAGE_SAMPLES = 2         # storage-wait samples it takes to share the scheduler's asleep time out


def _storage_share(view, awake):
    """Share of the window a thread spent in storage waits.  Samples of a thread that switches
    thousands of times a second are biased towards its moments on a CPU (commit_per_row: 13 of
    16 samples running, where schedstat says 31% of the window on a CPU or runnable): where the
    scheduler says it slept more than the samples caught, its time asleep is shared out as its
    off-CPU samples were."""
    n = max(view.n_samples, 1)
    io = view.kernel_kinds.get("io", 0)
    sampled = io / n
    off_cpu = n - view.kernel_kinds.get("cpu", 0)
    if io < STORAGE_SAMPLES or off_cpu <= 0 or 1.0 - awake <= off_cpu / n:
        return sampled
    return max(sampled, (1.0 - awake) * io / off_cpu)

# Waits spent asleep in the kernel, that take no CPU while they last.
SLEEPING_KINDS = kinds.names(asleep=True)


def _awake_share(state):
    """Share of the window a thread was on a CPU or runnable (schedstat), else on a CPU."""
    numbers = state.numbers
    wall = numbers.get("wall_s")
    if not wall:
        return None
    if numbers.get("run_s") is not None:
        return min(1.0, (numbers["run_s"] + numbers.get("runnable_wait_s", 0)) / wall)
    return numbers.get("cpu_share")


def _endpoint_holders(procs):
    holders = {}
    for proc in procs:
        if proc.exited_at is not None:
            continue
        for target in proc.endpoints:
            holders.setdefault(target, set()).add(proc.pid)
    return holders


