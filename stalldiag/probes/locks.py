"""Who holds the file lock a thread waits for: /proc/locks, read only when one is waited on.

A thread blocked in flock() or fcntl(F_SETLKW / F_OFD_SETLKW) shows that
syscall in /proc/PID/task/TID/syscall.  /proc/locks then names the holder of
every lock on that file (dev:inode), even a process outside the inspected tree
(a leftover from an earlier run), which the session then samples like any other.

Caveats of /proc/locks: pids are those of the namespace /proc was mounted in
(ours, like every other pid we read; 0 when the holder is not visible there);
OFD locks (F_OFD_SETLK*) belong to an open file description, not a process,
and list pid -1: their holder is found among the processes that have the
inode open.  A flock held through an fd inherited by a child keeps the pid of
the process that took it, which may have exited: the processes that have the
file open say who holds it now.
"""
import os
from typing import Optional

from ..records import typed_record
from .. import fds, procfs
from .base import Probe, Section
from .threads import tree_pids

F_SETLKW = 7           # x86_64 and aarch64 (F_SETLKW64 is the same number there)
F_OFD_SETLKW = 38
MAX_HOST_SCAN = 4096   # processes looked at when scanning the host for a file's openers


def parse_locks(text):
    """/proc/locks text -> [{"id", "waiter": bool, "type", "mode", "pid", "dev_inode", "start", "end"}]."""
    out = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 8:
            continue
        waiter = parts[1] == "->"
        if waiter:
            parts = parts[:1] + parts[2:]
        try:
            lock_id = int(parts[0].rstrip(":"))
            pid = int(parts[4])
        except ValueError:
            continue
        out.append({"id": lock_id, "waiter": waiter, "type": parts[1], "mode": parts[3], "pid": pid,
                    "dev_inode": parts[5], "start": parts[6], "end": parts[7] if len(parts) > 7 else None})
    return out


def read_locks():
    try:
        return parse_locks(procfs.read_host("locks"))
    except procfs.ProcfsError:
        return []


def inode_key(st):
    """"maj:min:inode" of an os.stat result, as /proc/locks writes it (major and minor in hex)."""
    return "%02x:%02x:%d" % (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)


def dev_inode_of(pid, fd):
    """dev_inode of the file behind a process's fd, or None."""
    try:
        return inode_key(procfs.fd_stat(pid, fd))
    except procfs.ProcfsError:
        return None


def lock_wait_fd(pid, tid, syscall):
    """The fd a thread blocked in flock/fcntl waits to lock, or None if it is not a lock wait."""
    if syscall not in ("flock", "fcntl"):
        return None
    try:
        name, args = procfs.current_syscall(pid, tid)
    except procfs.ProcfsError:
        return None
    if not args or name != syscall:
        return None
    if name == "fcntl" and (args[1] & 0xFFFFFFFF) not in (F_SETLKW, F_OFD_SETLKW):
        return None
    fd = args[0] & 0xFFFFFFFF
    return fd if fd < 1 << 31 else None


def path_of_inode(pids, dev_inode):
    """A path for dev:inode from the fds of pids: (path, pid that has it open) or (None, None)."""
    for pid in pids:
        for fd, target in sorted((fds.fd_targets(pid) or {}).items()):
            if fds.classify_target(target) == "file" and dev_inode_of(pid, fd) == dev_inode:
                return target, pid
    return None, None


def openers(path, dev_inode):
    """Pids on the host with this file open (link text equal to path, confirmed by dev:inode)."""
    confirm = None if dev_inode is None else \
        (lambda pid, fd: dev_inode_of(pid, fd) == dev_inode)
    return fds.host_holders(path, confirm, limit=MAX_HOST_SCAN)


POLL_CHECK_AFTER_S = 1.0
SLEEP_SYSCALLS = ("clock_nanosleep", "nanosleep", "select", "pselect6", "poll", "ppoll")


def _mostly_sleeping(samples, least=3):
    """A thread asleep (a timed sleep or poll) in at least half of its samples so far."""
    if len(samples) < least:
        return False
    return sum(1 for s in samples if s[2] in SLEEP_SYSCALLS) * 2 >= len(samples)


class LockWatch:
    """Follows lock waits over the window: which files are waited on, and who holds them."""

    def __init__(self):
        self.waits = {}          # (pid, tid) -> dev:inode waited on
        self.paths = {}          # dev:inode -> path, from the waiter's fd
        self.holders = {}        # dev:inode -> set of holder pids
        self._seen = set()       # (pid, tid, syscall) already looked at
        self.reads = 0           # /proc/locks reads, for the record
        self.polls = {}          # (pid, dev:inode) -> True: a sleeping process has a file open that another holds locked
        self._polls_checked = False

    def new_holders(self, sampler, t):
        """Pids holding a lock that a thread sampled at time t waits for (look once per wait)."""
        fresh = []
        for pid, key in list(sampler.live.items()):
            for tid, thread in sampler.records[key].threads.items():
                last = thread.samples[-1] if thread.samples else None
                if not last or last[0] != t or last[2] not in ("flock", "fcntl") or (pid, tid, last[2]) in self._seen:
                    continue
                self._seen.add((pid, tid, last[2]))
                fd = lock_wait_fd(pid, tid, last[2])
                dev_inode = dev_inode_of(pid, fd) if fd is not None else None
                if dev_inode is None:
                    continue
                self.waits[(pid, tid)] = dev_inode
                self.paths.setdefault(dev_inode, procfs.fd_target(pid, fd))
                fresh.extend(self._holders_of(dev_inode, waiter_pid=pid))
        return [p for p in dict.fromkeys(fresh) if p > 0]

    def polled_holders(self, sampler, t):
        """Holders of locks that sleeping processes retry without blocking.

        sqlite's busy handler, or a non-blocking flock tried between sleeps, make no
        lock syscall that a sample can catch: the thread just sleeps.  Once, after
        POLL_CHECK_AFTER_S of samples, a process with a thread asleep most of that
        time has its open files matched against the locks /proc/locks lists as held
        by another process.  One /proc/locks read, one fd scan per sleeping process.
        """
        if self._polls_checked or t < POLL_CHECK_AFTER_S:
            return []
        self._polls_checked = True
        sleepers = [pid for pid, key in sampler.live.items()
                    if any(_mostly_sleeping(th.samples) for th in sampler.records[key].threads.values())]
        if not sleepers:
            return []
        self.reads += 1
        held = {}
        for entry in read_locks():
            if not entry["waiter"]:
                held.setdefault(entry["dev_inode"], set()).add(entry["pid"])
        fresh = []
        for pid in sleepers:
            for fd, target in sorted((fds.fd_targets(pid) or {}).items()):
                if fds.classify_target(target) != "file":
                    continue
                dev_inode = dev_inode_of(pid, fd)
                holders = {h for h in held.get(dev_inode, ()) if h != pid}
                if -1 in holders:
                    holders.discard(-1)
                    holders.update(p for p in openers(target, dev_inode) if p != pid)
                holders.discard(0)
                if holders:
                    self.polls[(pid, dev_inode)] = True
                    self.paths.setdefault(dev_inode, target)
                    self.holders.setdefault(dev_inode, set()).update(holders)
                    fresh.extend(sorted(holders))
        return [p for p in dict.fromkeys(fresh) if p > 0]

    def _holders_of(self, dev_inode, waiter_pid):
        self.reads += 1
        held = {e["pid"] for e in read_locks() if not e["waiter"] and e["dev_inode"] == dev_inode}
        if -1 in held:   # an OFD lock: whoever else has the file open
            held.discard(-1)
            held.update(p for p in openers(self.paths.get(dev_inode), dev_inode) if p != waiter_pid)
        self.holders.setdefault(dev_inode, set()).update(held)
        return sorted(held)

    def entries(self, inspected, in_tree):
        """capture["locks"]: the locks that an inspected pid holds or waits for (None: no lock wait seen)."""
        if not self.waits and not self.polls:
            return None
        self.reads += 1
        table = read_locks()
        by_id = {}
        for entry in table:
            by_id.setdefault(entry["id"], []).append(entry)
        waited = set(self.waits.values()) | {di for (_pid, di) in self.polls}
        out = []
        for group in by_id.values():
            holder = next((e for e in group if not e["waiter"]), None)
            if holder is None:
                continue
            dev_inode = holder["dev_inode"]
            waiters = sorted({e["pid"] for e in group if e["waiter"]}
                             | {pid for (pid, _tid), di in self.waits.items() if di == dev_inode})
            if holder["pid"] not in inspected and dev_inode not in waited and not set(waiters) & inspected:
                continue
            holder_pid = holder["pid"] if holder["pid"] > 0 else None
            if holder["pid"] == -1:
                openers_ = [p for p in self.holders.get(dev_inode, ()) if p not in waiters]
                holder_pid = openers_[0] if len(openers_) == 1 else None
            path = self.paths.get(dev_inode)
            if path is None:
                path, _pid = path_of_inode([p for p in [holder_pid] + waiters if p and p > 0], dev_inode)
            if holder["pid"] == -1 and holder_pid is None:
                openers_ = [p for p in self.holders.get(dev_inode, ()) if p not in waiters]
                holder_pid = openers_[0] if openers_ else None
            entry = {"type": holder["type"], "mode": holder["mode"], "holder_pid": holder_pid,
                     "waiter_pids": [p for p in waiters if p > 0], "dev_inode": dev_inode, "path": path,
                     "holder_in_tree": holder_pid in in_tree}
            pollers = sorted(pid for (pid, di) in self.polls if di == dev_inode and pid != holder_pid)
            if pollers:
                entry["pollers"] = pollers    # retry the lock between sleeps: no kernel waiter line
            out.append(entry)
        return out


@typed_record
class LocksSection(Section):
    """capture["locks"]: None when no thread was seen waiting for a file lock."""
    locks: Optional[list] = None


class FileLocksProbe(Probe):
    """A thread blocked in flock/fcntl(F_SETLKW), or sleeping while another process holds a lock on
    a file it has open: the holder is sampled too, even outside the tree; the locks are listed at
    the window's end."""

    name = "file locks"
    Section = LocksSection
    at_end = True

    def __init__(self):
        self.watch = LockWatch()

    def tick(self, ctx):
        if ctx.t is None:
            return
        for pid in self.watch.new_holders(ctx.sampler, ctx.t) + self.watch.polled_holders(ctx.sampler, ctx.t):
            ctx.watch(pid, "lock-holder")

    def stop(self, ctx):
        records = ctx.sampler.records.values()
        return LocksSection(locks=self.watch.entries({r.pid for r in records}, tree_pids(ctx.sampler)))
