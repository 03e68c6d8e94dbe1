"""Who could wake a blocked thread: the other end of what it waits on, searched host-wide.

A thread seen blocked on the same object for WAIT_MIN_SAMPLES samples in a row (a pipe,
FIFO, unix or TCP socket, an epoll/poll set, a futex in shared memory, a file on a slow
mount) has that object resolved once for the window: the processes holding the pipe's
other end, the peer socket's holders, the mappers of the shared page, the FUSE daemon
or NFS server behind the mount.  The waker is often outside the inspected tree (a log
shipper at the end of a pipe, a local server, the process that took a shared lock), so
the holders are looked up on the whole host: one pass over /proc/*/fd per window, made
only once a wait needs it and cut short after HOST_SCAN_BUDGET_S (and one over
/proc/*/maps, only for a shared futex).  Those found outside the tree are sampled like
the rest ("pipe-peer" for a pipe, else "waker").  Nothing here reads the target's pipes
or sockets, or stops it: link texts, fdinfo, maps, mountinfo and kernel stacks only.
"""
import stat as stat_mod
import time
from dataclasses import field
from typing import List

from ..records import typed_record
from .. import fds, mounts, procfs
from .base import Probe, Section
from .threads import EPOLL_SYSCALLS, POLL_SYSCALLS, SELECT_SYSCALLS, tree_pids

WAIT_MIN_SAMPLES = 2       # samples in a row on one object before it is resolved
HOST_SCAN_BUDGET_S = 0.3   # per pass (fds, maps): a host has thousands of processes
MAX_OUTSIDE = 16           # processes outside the tree sampled because they may wake a wait
MAX_ENDS = 16              # ends listed per object (120 workers share one queue's pipe): wakers first
BLOCKED = ("S", "D")
IO_CALLS = ("read", "pread64", "readv", "preadv", "preadv2", "write", "pwrite64", "writev",
            "pwritev", "pwritev2", "recvfrom", "recvmsg", "recvmmsg", "sendto", "sendmsg", "splice",
            "connect", "accept", "accept4", "fsync", "fdatasync")
OPEN_CALLS = ("open", "openat", "openat2")
ACCEPT_CALLS = ("accept", "accept4")
# a mount whose files a lookup could hang on: never lstat a path there
SLOW_FSTYPES = ("fuse",) + mounts.NETWORK_FSTYPES


def wait_of(record, sample):
    """(kind, target, fd or futex address) a blocked sample waits on, or None."""
    if sample[1] not in BLOCKED:
        return None
    syscall = sample[2]
    detail = record.details[sample[3]] if sample[3] is not None else {}
    if syscall in EPOLL_SYSCALLS and "epoll_fd" in detail:
        return ("epoll", "anon_inode:[eventpoll]", detail["epoll_fd"])
    if syscall in POLL_SYSCALLS + SELECT_SYSCALLS:
        # an empty set is a timed sleep (select(0, ...)): nothing there to wake it
        return ("poll", None, None) if detail.get("watching") or not detail else None
    if syscall == "futex":
        return ("futex-shared", None, detail["futex"]) if detail.get("shared") else None
    fd = detail.get("fd")
    if fd and syscall in IO_CALLS:
        kind = {"pipe": "pipe", "fifo": "fifo", "unix": "unix"}.get(fd.get("kind"))
        if kind is None and fd.get("proto") == "tcp":
            kind = "tcp"
        if kind is None and fd.get("kind") == "file":
            kind = "file"
        return (kind, fd.get("target"), fd.get("fd")) if kind and fd.get("target") else None
    if syscall in OPEN_CALLS and detail.get("path"):
        return ("file", detail["path"], None)   # a FIFO's open (waits for the other end) or a slow mount
    return None


class Wakers:
    """Resolves each (pid, tid, object) waited on once per window; see the module's docstring."""

    def __init__(self, budget_s=HOST_SCAN_BUDGET_S):
        self.found = {}            # (pid, tid, kind, target, fd) -> record
        self.limitations = []
        self.host = fds.HostFds(budget_s)
        self.budget_s = budget_s
        self._unix = None          # {inode: peer inode}, one sock_diag dump per window
        self._maps = None          # {(dev, inode): {pid, ...}}: shared mappings on the host
        self._maps_note = None
        self._comm = {}
        self._objects = {}         # link text -> [(pid, fd, mode)]: each object resolved once
        self._asked = set()        # outside pids handed out for sampling
        self._left_out = set()     # outside pids beyond MAX_OUTSIDE

    # --- during the window ---------------------------------------------------

    def new_wakers(self, sampler, t):
        """[(pid, role_hint)] outside the tree to sample, from waits seen at tick t for the
        WAIT_MIN_SAMPLES-th sample in a row."""
        fresh = []
        for pid, key in list(sampler.live.items()):
            record = sampler.records[key]
            for tid, thread in record.threads.items():
                samples = thread.samples
                if len(samples) < WAIT_MIN_SAMPLES or samples[-1][0] != t or samples[-1][1] not in BLOCKED:
                    continue
                run = samples[-WAIT_MIN_SAMPLES:]
                if any(s[2] != run[-1][2] or s[1] not in BLOCKED for s in run):
                    continue
                wait = wait_of(record, run[-1])
                if wait is None or (pid, tid) + wait in self.found:
                    continue
                if any(s[3] != run[-1][3] and wait_of(record, s) != wait for s in run[:-1]):
                    continue
                entry = self._resolve(sampler, record, tid, run[-1], wait)
                self.found[(pid, tid) + wait] = entry
                fresh.extend(self._outside(sampler, entry))
        return list(dict.fromkeys(fresh))

    def _outside(self, sampler, entry):
        """Pids in the entry (ends, watched ends, mappers, FUSE servers) not yet sampled."""
        pids = [end["pid"] for end in entry.get("ends", ())]
        pids += [end["pid"] for w in entry.get("watching", ()) for end in w.get("ends", ())]
        pids += entry.get("mappers", [])
        pids += [s["pid"] for s in entry.get("mount", {}).get("served_by", ())]
        role = "pipe-peer" if entry["wait"] in ("pipe", "fifo") else "waker"
        out = []
        for pid in dict.fromkeys(pids):
            if pid in sampler.live or pid in self._asked:
                continue
            if len(self._asked) >= MAX_OUTSIDE:
                self._left_out.add(pid)
                continue
            self._asked.add(pid)
            out.append((pid, role))
        return out

    # --- resolving one wait ----------------------------------------------------

    def _resolve(self, sampler, record, tid, sample, wait):
        kind, target, handle = wait
        pid = record.pid
        detail = record.details[sample[3]] if sample[3] is not None else {}
        entry = {"pid": pid, "tid": tid, "wait": kind, "syscall": sample[2]}
        if target:
            entry["target"] = target
        if kind == "epoll" or kind == "poll":
            entry["watching"] = [self._watched(sampler, pid, info) for info in detail.get("watching", ())]
            if kind == "epoll" and not entry["watching"]:
                entry["why_unseen"] = "epoll set is empty"
            elif not detail:
                entry["why_unseen"] = ("its %s set cannot be read: /proc/%d/mem is refused without ptrace "
                                       "access (permission)" % (sample[2], pid))
        elif kind == "futex-shared":
            self._futex(entry, pid, int(handle, 16))
        elif kind == "file":
            self._file(entry, sampler, record, tid, sample, target, handle)
        else:
            self._ends_of(entry, sampler, pid, detail["fd"], sample[2])
        return entry

    def _watched(self, sampler, pid, info):
        item = {"fd": info.get("fd"), "target": info.get("target")}
        scratch = {}
        kind = {"pipe": "pipe", "fifo": "fifo", "unix": "unix"}.get(info.get("kind"))
        if kind is None and info.get("proto") == "tcp":
            kind = "tcp"
        if kind:
            scratch["wait"] = kind
            self._ends_of(scratch, sampler, pid, info, None)
            item["ends"] = scratch.get("ends", [])
            if "remote" in scratch:
                item["remote"] = scratch["remote"]
        return item

    def _ends_of(self, entry, sampler, pid, info, syscall):
        """Fill entry's ends (and remote, why_unseen) for one fd: pipe, FIFO, unix or TCP."""
        kind, target, fd = entry["wait"], info.get("target"), info.get("fd")
        if kind in ("pipe", "fifo"):
            self._pipe_ends(entry, sampler, pid, fd, target, kind)
        elif kind == "unix":
            self._unix_ends(entry, sampler, pid, fds.socket_inode(target), syscall)
        elif kind == "tcp":
            self._tcp_ends(entry, sampler, pid, fds.socket_inode(target), info, syscall)

    def _scan(self, sampler):
        if self.host.links is None:
            self.host.scan(first=list(sampler.live))
            if not self.host.complete:
                self.limitations.append(
                    "host scan for wakers stopped after %.1f s: fd tables of %d of %d processes read, so "
                    "ends held only by the others are not named" % (self.budget_s, self.host.scanned, self.host.total))
        return self.host

    def _holders(self, sampler, target, waiter, modes=False, same=None):
        """[(pid, fd, mode)] holding target on the host, looked up once per object (modes from
        fdinfo for pipes and FIFOs; same: the dev:inode a FIFO path must have)."""
        if target in self._objects:
            return self._objects[target]
        host = self._scan(sampler)
        if not any(p == waiter for p, _fd in host.holders(target)):
            # newer than the pass: the tree's processes are read again (not the host)
            for pid in sampler.live:
                host.add(pid)
        found = [(p, fd, _mode(p, fd) if modes else "rw") for p, fd in host.holders(target)
                 if same is None or _identity(procfs.fd_stat, p, fd) == same]
        self._objects[target] = found
        return found

    def _ends(self, holders, wanted=None):
        """End records for holders, those with the wanted mode first, at most MAX_ENDS."""
        ordered = sorted(holders, key=lambda h: h[2] not in (wanted, "rw")) if wanted else holders
        out = []
        for pid, fd, mode in ordered[:MAX_ENDS]:
            if pid not in self._comm:
                self._comm[pid] = mounts.comm(pid)
            out.append({"pid": pid, "fd": fd, "mode": mode, "comm": self._comm[pid]})
        return out

    def _pipe_ends(self, entry, sampler, pid, fd, target, kind):
        # a FIFO's link text is its path: its holders are confirmed by dev:inode
        same = _identity(procfs.fd_stat, pid, fd) if kind == "fifo" else None
        holders = [h for h in self._holders(sampler, target, pid, True, same) if h[:2] != (pid, fd)]
        wanted = {"read": "write", "write": "read"}.get(_mode(pid, fd))
        entry["ends"] = self._ends(holders, wanted)
        if wanted and not any(h[2] in (wanted, "rw") for h in holders):
            entry["why_unseen"] = self._nobody("the %s end" % wanted)

    def _nobody(self, what):
        """Why no holder of `what` was found: none, or some fd tables could not be read."""
        reasons = []
        if self.host.denied:
            reasons.append("fds of pid %s cannot be read (permission)" % ", ".join(map(str, self.host.denied[:5])))
        if not self.host.complete:
            reasons.append("the host scan was cut short")
        if reasons:
            return "no process seen holds %s: %s" % (what, "; ".join(reasons))
        return "no process on the host holds %s" % what

    def _unix_ends(self, entry, sampler, pid, inode, syscall):
        if syscall in ACCEPT_CALLS:
            return   # a listener waits for a client: nobody in particular wakes it
        if self._unix is None:
            self._unix = fds.unix_peers()
        peer = self._unix.get(inode)
        if not self._unix:
            entry["why_unseen"] = "unix socket peers cannot be read here (sock_diag netlink unavailable)"
        elif not peer:
            entry["why_unseen"] = "the peer socket is gone (not connected)"
        else:
            entry["ends"] = self._ends(self._holders(sampler, "socket:[%d]" % peer, pid))
            if not entry["ends"]:
                entry["why_unseen"] = self._nobody("the peer socket")

    def _tcp_ends(self, entry, sampler, pid, inode, info, syscall):
        state, remote = info.get("state"), info.get("remote")
        if state == "LISTEN" or syscall in ACCEPT_CALLS:
            return
        table = sampler.sockets
        peer = table.tcp_peers().get(inode) if state == "ESTABLISHED" else None
        if peer:
            entry["ends"] = self._ends(self._holders(sampler, "socket:[%d]" % peer, pid))
            if not entry["ends"]:
                entry["why_unseen"] = self._nobody("the peer socket")
            return
        listener = table.listener(remote) if remote and state == "ESTABLISHED" else None
        if listener:
            entry["ends"] = self._ends(self._holders(sampler, "socket:[%d]" % listener, pid))
            entry["why_unseen"] = "the server has not accepted this connection (it waits in the listen backlog)"
            return
        host = (remote or "").rpartition(":")[0]
        if state == "CLOSE_WAIT":
            entry["why_unseen"] = "the peer closed its end (%s)" % remote
        elif host.startswith("127.") or host in ("::1", "::ffff:127.0.0.1") or table.has_address(host):
            entry["why_unseen"] = "the peer on this host is gone (%s)" % remote
        else:
            entry["remote"] = remote
            entry["why_unseen"] = "the peer is on another host (%s)" % remote

    def _futex(self, entry, pid, address):
        try:
            mapping = next(m for m in procfs.shared_mappings(pid) if m[0] <= address < m[1])
        except (procfs.ProcfsError, StopIteration):
            entry["why_unseen"] = "its shared mapping is gone"
            return
        _start, _end, _offset, dev, inode, path = mapping
        name = path[:-len(" (deleted)")] if path.endswith(" (deleted)") else path
        anonymous = name in ("/dev/zero", "[anon_shmem]") or name.startswith("/SYSV")
        entry["mapping"] = "anonymous shared" if anonymous else name
        entry["mappers"] = sorted(p for p in self._mappers().get((dev, inode), ()) if p != pid)
        if not entry["mappers"]:
            entry["why_unseen"] = self._maps_note or "no other process on the host maps it"

    def _mappers(self):
        """{(dev, inode): pids} of every shared mapping on the host: one bounded pass over
        /proc/*/maps, the first time a shared futex is waited on."""
        if self._maps is None:
            self._maps, started = {}, time.monotonic()
            pids = fds.host_pids()
            read = 0
            for pid in pids:
                if time.monotonic() > started + self.budget_s:
                    break
                read += 1
                try:
                    for _s, _e, _o, dev, inode, _path in procfs.shared_mappings(pid):
                        self._maps.setdefault((dev, inode), set()).add(pid)
                except procfs.ProcfsError:
                    continue
            if read < len(pids):
                self._maps_note = "no other process seen maps it (the host scan was cut short)"
                self.limitations.append("host scan of shared mappings stopped after %.1f s: %d of %d processes "
                                        "read" % (self.budget_s, read, len(pids)))
        return self._maps

    def _file(self, entry, sampler, record, tid, sample, path, fd):
        pid = record.pid
        table = mounts.mounts_of(pid)
        mount = mounts.mount_of(pid, path, fd, table)
        slow = mount is not None and mount["fstype"].split(".")[0] in SLOW_FSTYPES
        if fd is None and not slow and _is_fifo(pid, path):
            # open() of a FIFO blocks until the other end is opened
            entry["wait"] = "fifo"
            same = _identity(procfs.root_stat, pid, path)
            entry["ends"] = self._ends([h for h in self._holders(sampler, path, pid, True, same) if h[0] != pid])
            if not entry["ends"]:
                entry["why_unseen"] = self._nobody("the other end (open waits for it)")
            return
        if mount is not None:
            fuse = mount["fstype"].startswith("fuse")
            entry["mount"] = mounts.describe(mount, self._scan(sampler) if fuse else None)
            if fuse and mounts.fuse_connection_alive(mount) is False:
                entry["why_unseen"] = "the FUSE connection is gone (aborted)"
            elif fuse and not entry["mount"]["served_by"]:
                entry["why_unseen"] = self._nobody("/dev/fuse (the FUSE server)")
        # D, or S for a FUSE request (request_wait_answer sleeps interruptibly first)
        stack = procfs.kernel_stack(pid, tid)
        if stack:
            entry["kernel_stack"] = stack

    # --- at the window's end ---------------------------------------------------

    def entries(self, in_tree):
        """capture["wakers"]: the records, with in_tree marked on every end."""
        out = []
        for entry in sorted(self.found.values(), key=lambda e: (e["pid"], e["tid"], e["wait"], e.get("target") or "")):
            for end in list(entry.get("ends", ())) + [e for w in entry.get("watching", ()) for e in w.get("ends", ())]:
                end["in_tree"] = end["pid"] in in_tree
            out.append(entry)
        if self._left_out:
            self.limitations.append(
                "%d more processes outside the tree could wake a waiting thread but were not sampled (at most "
                "%d are): pids %s" % (len(self._left_out), MAX_OUTSIDE, ", ".join(map(str, sorted(self._left_out)[:8]))))
        return out


def _mode(pid, fd):
    try:
        return fds.access_mode(procfs.fdinfo(pid, fd).get("flags", "2"))
    except (procfs.ProcfsError, ValueError):
        return "rw"


def _identity(stat_of, pid, fd_or_path):
    """(dev, inode) of procfs.fd_stat(pid, fd) or procfs.root_stat(pid, path) (a path as the
    process sees it), or None."""
    try:
        st = stat_of(pid, fd_or_path)
    except procfs.ProcfsError:
        return None
    return st.st_dev, st.st_ino


def _is_fifo(pid, path):
    try:
        return stat_mod.S_ISFIFO(procfs.root_stat(pid, path, follow=False).st_mode)
    except procfs.ProcfsError:
        return False


@typed_record
class WakersSection(Section):
    """capture["wakers"]: one record per (pid, tid, object) blocked on for WAIT_MIN_SAMPLES samples."""
    wakers: List[dict] = field(default_factory=list)


class WakersProbe(Probe):
    """Who could end each blocked wait (Wakers): resolved as the window runs, the ones outside the
    tree sampled too ("pipe-peer", "waker"); listed at its end."""

    name = "wakers"
    Section = WakersSection
    at_end = True

    def __init__(self):
        self.wakers = Wakers()

    def tick(self, ctx):
        if ctx.t is None:
            return
        for pid, role in self.wakers.new_wakers(ctx.sampler, ctx.t):
            ctx.watch(pid, role)

    def stop(self, ctx):
        entries = self.wakers.entries(tree_pids(ctx.sampler))
        return WakersSection(limitations=list(self.wakers.limitations), wakers=entries)
