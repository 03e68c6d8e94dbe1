"""From thread summaries to one verdict: what the run waits on, and who is to blame.

The rules start at the thread that should be making progress (the main
thread of the main process) and follow what it waits on: another thread
of the same process, a child program, a lock cycle.  The end of that chain
is the culprit.  Each rule adds evidence lines with numbers from the window.
"""
import re

from ..knowledge.processes import match_process
from .threads import THREAD_WAIT_KINDS, thread_views

# Thread kind -> verdict category.
CATEGORY_OF_KIND = {
    "cpu": "cpu",
    "lock": "locks",
    "io": "io",
    "network": "network",
    "child": "subprocess",
    "sleep": "sleep",
    "poll": "sleep",
    "gpu": "cuda",
    "ipc": "locks",
    "pipe": "unknown",
    "unknown": "unknown",
    "other": "unknown",
    "stopped": "unknown",
    "exited": "unknown",
    "tty": "sleep",
    "event": "locks",
    "condition": "locks",
}

# How telling a thread's activity is when choosing who a waiting thread waits on.
ACTIVITY_RANK = {
    "cpu": 6, "io": 5, "network": 4, "child": 4, "gpu": 4, "lock": 3, "ipc": 2, "pipe": 2,
    "queue-get": 1, "queue-put": 1, "thread-join": 1, "future": 1, "condition": 1, "event": 1,
}

MAX_CHAIN = 8
LOCK_NAME = re.compile(r"^(?:async\s+)?with\s+([\w.\[\]'\"]+)(?:\s*(?:,|as\b|:))")
ACQUIRE_NAME = re.compile(r"([\w.\[\]]+)\.acquire\(")


def assign_roles(capture):
    """pid -> role, from the process table and the tree shape."""
    procs = capture.get("processes") or []
    root_pid = (capture.get("request") or {}).get("pid")
    roles = {}
    for proc in procs:
        row = match_process(proc.get("comm"), proc.get("cmdline"))
        if row is not None and row.role != "launcher":
            roles[proc["pid"]] = row.role
        elif row is not None and row.role == "launcher" and proc["pid"] == root_pid and len(procs) > 1:
            roles[proc["pid"]] = "launcher"
    main = focus_process(capture, roles)
    for proc in procs:
        if proc["pid"] in roles:
            continue
        roles[proc["pid"]] = "main" if main is not None and proc is main else "child"
    return roles


def focus_process(capture, roles=None):
    """The process whose progress we judge: the root, or below a launcher its first Python child."""
    procs = capture.get("processes") or []
    if not procs:
        return None
    root_pid = (capture.get("request") or {}).get("pid")
    root = next((p for p in procs if p["pid"] == root_pid), procs[0])
    if roles and roles.get(root["pid"]) == "launcher":
        for proc in procs:
            if proc is not root and (proc.get("python") or {}).get("stacks") and roles.get(proc["pid"]) is None:
                return proc
        for proc in procs:
            if proc is not root and roles.get(proc["pid"]) is None:
                return proc
    return root


class Diagnosis:
    def __init__(self, capture):
        self.capture = capture
        self.views = thread_views(capture)
        self.by_pid = {}
        for view in self.views:
            self.by_pid.setdefault(view.pid, []).append(view)
        self.procs = {p["pid"]: p for p in capture.get("processes") or []}
        self.roles = assign_roles(capture)
        self.evidence = []
        self.findings = []
        self.chain = []

    # --- helpers ---------------------------------------------------------------

    def describe(self, view):
        """One evidence line: how the thread spent the window, with its Python frame."""
        from .explain import describe_thread
        return describe_thread(view)

    def focus_thread(self):
        proc = focus_process(self.capture, self.roles)
        if proc is None:
            return None
        views = self.by_pid.get(proc["pid"], [])
        main = [v for v in views if v.is_main and v.n_samples]
        if main:
            return main[0]
        sampled = sorted(views, key=lambda v: -(v.n_samples + v.n_stack_samples))
        return sampled[0] if sampled else None

    def category_of(self, view):
        if view.kind in THREAD_WAIT_KINDS:
            return "locks"
        return CATEGORY_OF_KIND.get(view.kind, "unknown")

    # --- the chain ---------------------------------------------------------------

    def follow(self, view):
        """Walk from a waiting thread to the thread that explains the wait."""
        seen = set()
        current = view
        for _ in range(MAX_CHAIN):
            seen.add((current.pid, current.tid))
            self.chain.append(current)
            nxt = None
            if current.kind in THREAD_WAIT_KINDS or current.kind == "lock":
                nxt = self.waited_thread(current, seen)
            elif current.kind == "child":
                nxt = self.waited_child(current, seen)
            elif current.kind in ("sleep", "poll", "other") and current is view:
                nxt = self.busier_thread(current, seen)
            if nxt is None:
                return current
            current = nxt
        return current

    def waited_thread(self, view, seen):
        """The thread a lock/queue/join waiter most likely waits on, in its own process."""
        others = [v for v in self.by_pid.get(view.pid, []) if (v.pid, v.tid) not in seen and v.n_samples]
        if view.kind == "lock":
            cycle = self.lock_cycle(view, others)
            if cycle:
                return cycle
        ranked = sorted(others, key=lambda v: -(ACTIVITY_RANK.get(v.kind, 0) * v.share))
        if ranked and ACTIVITY_RANK.get(ranked[0].kind, 0) > 0:
            return ranked[0]
        return None

    def lock_cycle(self, view, others):
        """Another thread stuck on a lock too: a deadlock when each holds what the other wants."""
        stuck = [v for v in others if v.kind == "lock" and v.share >= 0.8]
        if not stuck or view.share < 0.8:
            return None
        runnable = [v for v in others if v.kind == "cpu" and v.share > 0.5]
        if runnable:
            return None
        mine = lock_intent(view)
        for other in stuck:
            theirs = lock_intent(other)
            if mine["wants"] and theirs["wants"] and mine["wants"] in theirs["holds"] \
                    and theirs["wants"] in mine["holds"]:
                self.findings.append(finding(
                    "deadlock",
                    "lock-order deadlock: %s holds %s and wants %s; %s holds %s and wants %s"
                    % (view.label, mine["wants_other"] or theirs["wants"], mine["wants"],
                       other.label, theirs["wants_other"] or mine["wants"], theirs["wants"]),
                    other))
                return other
        other = max(stuck, key=lambda v: v.share)
        self.findings.append(finding(
            "deadlock",
            "likely deadlock: %d threads of pid %d blocked on locks for the whole window and none runs "
            "(%s)" % (len(stuck) + 1, view.pid, ", ".join(v.label for v in [view] + stuck)),
            other))
        return other

    def waited_child(self, view, seen):
        detail = view.top_detail() or {}
        wanted = detail.get("child") if isinstance(detail, dict) else None
        kids = [p for p in self.procs.values() if p.get("ppid") == view.pid]
        if isinstance(wanted, int) and wanted > 0:
            kids = [p for p in kids if p["pid"] == wanted] or kids
        if not kids:
            return None
        kid = kids[0]
        views = [v for v in self.by_pid.get(kid["pid"], []) if (v.pid, v.tid) not in seen]
        main = [v for v in views if v.is_main] or views
        return main[0] if main else None

    def busier_thread(self, view, seen):
        """An idle focus thread hands over to a thread that is doing something."""
        candidates = [v for v in self.views if (v.pid, v.tid) not in seen and v.n_samples and v.share >= 0.5
                      and ACTIVITY_RANK.get(v.kind, 0) >= 3 and self.roles.get(v.pid) != "launcher"]
        if not candidates:
            return None
        return max(candidates, key=lambda v: (ACTIVITY_RANK.get(v.kind, 0), v.share))


def lock_intent(view):
    """Names of locks a thread holds (enclosing `with X:`) and wants (the line it waits on)."""
    holds, wants, wants_other = [], None, None
    frame = view.user_frame()
    if frame and len(frame) > 3 and isinstance(frame[3], dict):
        code = frame[3].get("code") or ""
        match = LOCK_NAME.match(code) or ACQUIRE_NAME.search(code)
        wants = match.group(1) if match else None
        for opener in frame[3].get("within") or []:
            m = LOCK_NAME.match(opener.get("code") or "")
            if m:
                holds.append(m.group(1))
        wants_other = holds[0] if holds else None
    return {"holds": holds, "wants": wants, "wants_other": wants_other}


def finding(kind, summary, view=None, pid=None):
    return {"kind": kind, "summary": summary,
            "pid": view.pid if view else pid, "tid": view.tid if view else None}
