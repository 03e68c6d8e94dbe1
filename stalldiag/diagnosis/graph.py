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

from ..knowledge.processes import match_process
from ..redact import RANK_VARS, first_var
from .gpu import device_summaries
from .threads import thread_views

ACTIVITY_RANK = {
    "compile": 7, "cpu": 6, "io": 5, "network": 4, "child": 4, "gpu": 4, "cuda": 4, "lock": 3,
    "ipc": 2, "pipe": 2, "dataloader": 2, "collective": 1, "rendezvous": 1,
    "queue-get": 1, "queue-put": 1, "thread-join": 1, "future": 1, "condition": 1, "event": 1,
}


LOCK_NAME = re.compile(r"^(?:async\s+)?with\s+([\w.\[\]'\"]+)(?:\s*(?:,|as\b|:))")
ACQUIRE_NAME = re.compile(r"([\w.\[\]]+)\.acquire\(")
LAUNCHER_ROLES = ("launcher",)


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
        if row is not None and row.role == "launcher":
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
        self.unix_peers = {int(k): v for k, v in (capture.get("unix_peers") or {}).items()}

    # --- where to start ----------------------------------------------------------

    def focus_thread(self):
        proc = focus_process(self.capture, self.roles)
        if proc is None:
            return None
        return self.main_thread(proc["pid"])

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
        best = max(views, key=lambda v: (ACTIVITY_RANK.get(v.kind, 0) * v.share, v.is_main))
        if main is not None and ACTIVITY_RANK.get(best.kind, 0) * best.share <= \
                ACTIVITY_RANK.get(main.kind, 0) * main.share:
            return main
        return best

    # --- edges -------------------------------------------------------------------

    def waited_thread(self, view, seen):
        """The thread a lock/queue/join waiter most likely waits on."""
        if view.kind == "lock":
            cycle = self.lock_cycle(view, seen)
            if cycle:
                return cycle
        others = [v for v in self.by_pid.get(view.pid, []) if (v.pid, v.tid) not in seen and v.n_samples]
        ranked = sorted(others, key=lambda v: -(ACTIVITY_RANK.get(v.kind, 0) * v.share))
        if ranked and ACTIVITY_RANK.get(ranked[0].kind, 0) > 0:
            return ranked[0]
        # Nobody is busy: the thread that should signal may be sleeping.  Prefer
        # threads running the user's own code over library helper threads.
        sleepers = [v for v in others if v.kind in ("sleep", "poll") and v.user_frame()
                    and not _library_only(v)]
        return max(sleepers, key=lambda v: v.share) if sleepers else None

    def lock_cycle(self, view, seen):
        """Threads stuck on locks (in this process, or on a lock shared between processes)."""
        if view.share < 0.8:
            return None
        shared = _shared_futex(view)
        candidates = []
        for other in self.views:
            if (other.pid, other.tid) in seen or other.kind != "lock" or other.share < 0.8:
                continue
            if other.pid == view.pid or (shared and _shared_futex(other)) or \
                    self.related(view.pid, other.pid) and _shared_futex(other):
                candidates.append(other)
        if not candidates:
            return None
        same = [v for v in self.by_pid.get(view.pid, []) if v.kind == "cpu" and v.share > 0.5]
        if same and all(c.pid == view.pid for c in candidates):
            return None  # someone runs: contention, not a deadlock
        mine = lock_intent(view)
        for other in candidates:
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
        other = max(candidates, key=lambda v: (v.pid == view.pid, v.share))
        self.findings.append(finding(
            "deadlock",
            "likely deadlock: %d threads blocked on locks for the whole window and none runs (%s)"
            % (len(candidates) + 1, ", ".join(v.label for v in [view] + candidates)), other))
        return other

    def related(self, pid_a, pid_b):
        a, b = self.procs.get(pid_a, {}), self.procs.get(pid_b, {})
        return a.get("ppid") == pid_b or b.get("ppid") == pid_a or (a.get("ppid") and a.get("ppid") == b.get("ppid"))

    def waited_child(self, view, seen):
        detail = view.top_detail() or {}
        wanted = detail.get("child") if isinstance(detail, dict) else None
        kids = [p for p in self.procs.values() if p.get("ppid") == view.pid and p.get("exited_at") is None]
        if isinstance(wanted, int) and wanted > 0:
            kids = [p for p in kids if p["pid"] == wanted] or kids
        if not kids:
            return None
        kid = max(kids, key=lambda p: (self.roles.get(p["pid"]) == "compiler", p.get("cpu_seconds") or 0))
        return self.most_telling_thread(kid["pid"], seen)

    def waited_peer(self, view, seen):
        """The process at the other end of the pipe or unix socket a thread waits on."""
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
            if target.startswith("socket:["):
                peer = self.unix_peers.get(int(target[8:-1]))
                for pid in self.holders.get("socket:[%s]" % peer, ()) if peer else ():
                    if pid != view.pid:
                        peers[pid] += 2
        if not peers:
            for proc in self.procs.values():
                if proc.get("ppid") == view.pid and proc.get("exited_at") is None:
                    peers[proc["pid"]] += 1
        candidates = [self.most_telling_thread(pid, seen) for pid in peers]
        candidates = [c for c in candidates if c is not None]
        if not candidates:
            return None
        best = max(candidates, key=lambda v: (ACTIVITY_RANK.get(v.kind, 0) * v.share, peers[v.pid]))
        self.chain_notes[(best.pid, best.tid)] = "the other end of what %s waits on" % view.label
        return best

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
        best = max(threads, key=lambda v: (ACTIVITY_RANK.get(v.kind, 0) * v.share, v.cpu_seconds or 0))
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
        waiting = {pid for pid, t in ranks.items() if t.kind in ("collective", "rendezvous", "cuda")}
        outliers = [t for pid, t in ranks.items() if pid not in waiting and (t.pid, t.tid) not in seen]
        self.rank_groups = (sorted(waiting), sorted(t.pid for t in outliers))
        if outliers:
            return max(outliers, key=lambda v: (ACTIVITY_RANK.get(v.kind, 0) * v.share, -v.pid))
        return None

    def gpu_wait(self, view, seen):
        """A rank waiting on its GPU may wait on an NCCL kernel that waits for a hung peer."""
        if not str(self.roles.get(view.pid, "")).startswith("rank "):
            return None
        return self.outlier_rank(view, seen)

    def compiling_child(self, view, seen):
        """A compiling thread that waits on gcc/ptxas or the compile workers: show the busiest."""
        if view.kernel_kind not in ("child", "poll", "pipe", "lock", "ipc", "sleep"):
            return None
        kids = [p for p in self.procs.values() if self.roles.get(p["pid"]) in ("compiler", "compile-worker")
                and p.get("exited_at") is None]
        busy = [self.most_telling_thread(p["pid"], seen) for p in kids]
        busy = [t for t in busy if t is not None and t.kind == "cpu" and t.share >= 0.3]
        return max(busy, key=lambda v: v.share) if busy else None

    def busier_thread(self, view, seen):
        """An idle focus thread hands over to a thread that is doing something."""
        candidates = [v for v in self.views if (v.pid, v.tid) not in seen and v.n_samples and v.share >= 0.5
                      and ACTIVITY_RANK.get(v.kind, 0) >= 3 and self.roles.get(v.pid) not in LAUNCHER_ROLES]
        if not candidates:
            return None
        return max(candidates, key=lambda v: (ACTIVITY_RANK.get(v.kind, 0), v.share))

    NEXT = {
        "lock": waited_thread,
        "thread-join": waited_thread,
        "queue-get": waited_thread,
        "queue-put": waited_thread,
        "condition": waited_thread,
        "event": waited_thread,
        "future": waited_thread,
        "semaphore": waited_thread,
        "child": waited_child,
        "ipc": waited_peer,
        "pipe": waited_peer,
        "dataloader": waited_workers,
        "collective": outlier_rank,
        "rendezvous": outlier_rank,
        "compile": compiling_child,
        "cuda": gpu_wait,
    }


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


def _library_only(view):
    """A thread whose every frame is library code (a pool's helper thread)."""
    from ..knowledge.frames import is_library_file
    return bool(view.top_stack) and all(is_library_file(f[1]) for f in view.top_stack)


def _shared_futex(view):
    detail = view.top_detail()
    return isinstance(detail, dict) and detail.get("shared")


def lock_intent(view):
    """Names of locks a thread holds (enclosing `with X:`) and wants (the line it waits on)."""
    holds, wants = [], None
    frame = view.user_frame()
    if frame and len(frame) > 3 and isinstance(frame[3], dict):
        code = frame[3].get("code") or ""
        match = LOCK_NAME.match(code) or ACQUIRE_NAME.search(code)
        wants = match.group(1) if match else None
        for opener in frame[3].get("within") or []:
            m = LOCK_NAME.match(opener.get("code") or "")
            if m:
                holds.append(m.group(1))
    return {"holds": holds, "wants": wants}


def finding(kind, summary, view=None, pid=None):
    return {"kind": kind, "summary": summary,
            "pid": view.pid if view else pid, "tid": view.tid if view else None}

