"""Sample every thread's state and current syscall from /proc, with no ptrace stop.

One ``tick()`` reads, for every thread of every watched process,
/proc/PID/task/TID/stat (state, CPU ticks) and .../syscall (what it is
blocked in now), plus wchan for D-state threads.  What a blocked syscall
waits on (the fd's file, pipe or socket; the path being opened; the child
being waited for) is resolved once per distinct (thread, call) and cached,
so a thread stuck in one long read() costs one lookup for the whole window.
"""
import os
import pwd
import random
import signal
import struct
import time
from dataclasses import field
from typing import Dict, List, Optional

from ..records import typed_record
from .. import fds, procfs, redact
from . import kernel_state
from .base import Probe, Section
from ..knowledge.syscalls import FD_FIRST_ARG

POLL_SYSCALLS = ("poll", "ppoll")
EPOLL_SYSCALLS = ("epoll_wait", "epoll_pwait", "epoll_pwait2")
SELECT_SYSCALLS = ("select", "pselect6")
MAX_WATCHED_FDS = 16
FUTEX_CMD_MASK = 0x7f                       # without FUTEX_PRIVATE_FLAG, FUTEX_CLOCK_REALTIME
FUTEX_WAITS = (0, 9)                        # FUTEX_WAIT, FUTEX_WAIT_BITSET
NANOSLEEPS = ("clock_nanosleep", "nanosleep")   # their wait detail is the time left
TIMER_ABSTIME = 1
# A blocked thread that has not run is repeated from its last sample, but read in full
# at least every this many ticks (a thread woken and still waiting for a CPU shows then).
FULL_READ_EVERY = 5
# A thread found in the same state and call QUIET_CHECKS checks in a row (blocked and not
# run since, or woken and back in the very call it sleeps in: a poll loop, a watchdog) is
# looked at every other tick, after twice as many every MAX_SKIP + 1 ticks, its last sample
# repeated in between; the first look that finds it elsewhere reads it every tick again.
# In a stalled job most threads sit in one futex, read or sleep loop for the whole window:
# reading them every tick was most of the /proc cost.
QUIET_CHECKS = 5
BLOCKED = ("S", "D")
STOPPED = ("T", "t")
MAX_SKIP = 3
# The task directory is listed when the thread count changes, or at least this often.
RELIST_EVERY = 10
# Open /proc files kept per thread and re-read with pread: 1.3-4 us a read instead of 7-10 us
# for open+read+close (measured).  Within this share of the fd limit; beyond it, plain reads.
HELD_FD_SHARE = 0.8


def _fd_budget():
    """File descriptors the held /proc files may use: the soft limit is raised to the hard one."""
    try:
        import resource
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        wanted = hard if hard != resource.RLIM_INFINITY else 1 << 20
        if soft != resource.RLIM_INFINITY and soft < wanted:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
            soft = wanted
        return int(min(soft, 1 << 20) * HELD_FD_SHARE) - 64
    except (ImportError, ValueError, OSError):
        return 0


def _signed(value):
    return value - (1 << 64) if value >= 1 << 63 else value


def exit_status(code):
    """A wait status as words: "killed by SIGXFSZ", "exit code 1", or None."""
    if code is None:
        return None
    if os.WIFSIGNALED(code):
        try:
            return "killed by %s" % signal.Signals(os.WTERMSIG(code)).name
        except ValueError:
            return "killed by signal %d" % os.WTERMSIG(code)
    return "exit code %d" % os.WEXITSTATUS(code)


def _signed32(value):
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


class ProcessRecord:
    """Everything sampled about one process (one pid + start time)."""

    def __init__(self, pid, start_time, t, role_hint=None):
        self.pid = pid
        self.start_time = start_time
        self.first_seen = t
        self.last_seen = t
        self.exited_at = None
        self.exit_status = None   # how a zombie ended ("killed by SIGKILL", "exit code 1")
        self.threads = {}
        self.details = []
        self._detail_index = {}
        self.errors = []
        self.denied = set()
        self.static = {}
        self.io_first = self.io_last = None
        self.status_first = self.status_last = None
        self.stat_first = self.stat_last = None
        self.kernel_first = self.kernel_last = None   # kernel_state snapshots (first/last only)
        self.stat_fd = None        # /proc/PID/stat held open while sampled (ThreadSampler)
        self.tids = None           # threads listed at the last listing, and ticks since
        self.unlisted_ticks = 0
        self.role_hint = role_hint
        self.endpoints = {}
        self.files_start = None
        self.files_end = None
        self.recent_files = []
        self._read_static()
        self.files_start = self.read_fds()

    def read_fds(self):
        """Read the fd table once: note the pipes and sockets this process holds (how waits
        cross into other processes) and return the snapshot of its files."""
        targets = fds.fd_targets(self.pid)
        for target, fd_list in fds.endpoints(targets).items():
            known = self.endpoints.setdefault(target, [])
            known.extend(fd for fd in fd_list if fd not in known)
        return fds.file_snapshot(self.pid, targets)

    def _read_static(self):
        pid = self.pid
        info = {}
        try:
            info["cmdline"] = redact.redact_argv(procfs.cmdline(pid))
        except procfs.ProcfsError as exc:
            info["cmdline"] = []
            self._error("cmdline", exc)
        try:
            info["exe"] = procfs.exe(pid)
        except procfs.ProcfsError as exc:
            info["exe"] = None
            if isinstance(exc, procfs.AccessDenied):
                self.denied.add("exe")
        try:
            st = procfs.status(pid)
            uid = int(st.get("Uid", "0").split()[0])
            info["uid"] = uid
            try:
                info["user"] = pwd.getpwuid(uid).pw_name
            except KeyError:
                info["user"] = str(uid)
            info["nspid"] = [int(p) for p in st.get("NSpid", str(pid)).split()]
        except procfs.ProcfsError as exc:
            self._error("status", exc)
        try:
            # known knobs only, each value redacted by the same rules as every text (a URL with a
            # token in NCCL_* or a path with a key in it stays out of the report)
            env = procfs.environ_subset(pid, redact.ENV_ALLOWED)
            info["env"] = {k: redact.redact_text(v) for k, v in env.items()}
        except procfs.ProcfsError as exc:
            info["env"] = {}
            self._error("environ", exc)
        self.static = info

    def _error(self, what, exc):
        if isinstance(exc, procfs.AccessDenied):
            self.denied.add(what)
        elif not isinstance(exc, procfs.ProcessGone):
            self.errors.append("%s: %s" % (what, exc))

    def intern_detail(self, detail):
        """Index of a wait detail in this process's table (shared by samples)."""
        key = repr(sorted(detail.items()))
        index = self._detail_index.get(key)
        if index is None:
            index = len(self.details)
            self.details.append(detail)
            self._detail_index[key] = index
        return index

    def to_dict(self):
        def delta(first, last, keys):
            if not first or not last:
                return None
            return {k: last.get(k, 0) - first.get(k, 0) for k in keys}

        cpu_ticks = None
        if self.stat_first and self.stat_last:
            cpu_ticks = (self.stat_last["utime"] + self.stat_last["stime"]
                         - self.stat_first["utime"] - self.stat_first["stime"])
        ctx = None
        if self.status_first and self.status_last:
            ctx = {
                "voluntary": int(self.status_last.get("voluntary_ctxt_switches", 0))
                - int(self.status_first.get("voluntary_ctxt_switches", 0)),
                "involuntary": int(self.status_last.get("nonvoluntary_ctxt_switches", 0))
                - int(self.status_first.get("nonvoluntary_ctxt_switches", 0)),
            }
        stat_any = self.stat_last or self.stat_first or {}
        return dict(
            pid=self.pid,
            start_time=self.start_time,
            ppid=stat_any.get("ppid"),
            # process group and session: a program the job left running in the background keeps
            # the job's session after its parent exits and it is reparented
            pgid=stat_any.get("pgid"),
            sid=stat_any.get("sid"),
            comm=stat_any.get("comm"),
            first_seen=round(self.first_seen, 3),
            last_seen=round(self.last_seen, 3),
            exited_at=None if self.exited_at is None else round(self.exited_at, 3),
            exit_status=self.exit_status,
            role_hint=self.role_hint,
            cpu_seconds=None if cpu_ticks is None else cpu_ticks / procfs.CLK_TCK,
            io=delta(self.io_first, self.io_last,
                     ("rchar", "wchar", "syscr", "syscw", "read_bytes", "write_bytes")),
            ctx_switches=ctx,
            kernel=kernel_state.process_kernel(self.kernel_first, self.kernel_last,
                                               self.stat_first, self.stat_last),
            denied=sorted(self.denied),
            errors=self.errors[:20],
            details=self.details,
            endpoints=self.endpoints,
            files_start=self.files_start,
            files_end=self.files_end,
            recent_files=self.recent_files,
            threads=[t.to_dict() for t in self.threads.values()],
            **self.static,
        )


class ThreadRecord:
    def __init__(self, tid, name, t):
        self.tid = tid
        self._name = name
        self.first_seen = t
        self.last_seen = t
        self.samples = []
        self.cpu_first = None
        self._cpu_last = None
        self.stat_raw = None     # the last /proc stat read, parsed only when asked for
        self.kernel_first = self.kernel_last = None   # schedstat + ctx switches, first/last sighting
        self.sched_text = None   # last /proc schedstat line: unchanged = has not run since
        self.stale = 0           # ticks repeated from the last full read
        self.children_sched = None  # schedstat when its children file was last read, and
        self.children_last = []     # what it listed then
        self.quiet = 0           # checks in a row that found it blocked and not run since
        self.skip = 0            # ticks left that repeat the last sample without a read
        self.syscall_raw = None  # last /proc syscall line whose wait was resolved, and
        self.syscall_seen = None  # its (syscall, detail index): a thread still in it costs no parse
        self.held = {}           # /proc file name -> fd kept open (see ThreadSampler._read)

    def _parse_stat_raw(self):
        if self.stat_raw is not None:
            self._name, _state, self._cpu_last = _thread_stat(self.stat_raw)
            self.stat_raw = None

    @property
    def cpu_last(self):
        self._parse_stat_raw()
        return self._cpu_last

    @cpu_last.setter
    def cpu_last(self, value):
        self.stat_raw, self._cpu_last = None, value

    @property
    def name(self):
        self._parse_stat_raw()
        return self._name

    @name.setter
    def name(self, value):
        self._parse_stat_raw()
        self._name = value

    def to_dict(self):
        cpu = None
        if self.cpu_first is not None and self.cpu_last is not None:
            cpu = (self.cpu_last - self.cpu_first) / procfs.CLK_TCK
        return {
            "tid": self.tid,
            "name": self.name,
            "first_seen": round(self.first_seen, 3),
            "last_seen": round(self.last_seen, 3),
            "cpu_seconds": cpu,
            "sched": kernel_state.delta((self.kernel_first or {}).get("sched"), (self.kernel_last or {}).get("sched")),
            "ctx": kernel_state.delta((self.kernel_first or {}).get("ctx"), (self.kernel_last or {}).get("ctx")),
            # [t, state, syscall or "running", detail index or None, wchan or None]
            "samples": self.samples,
        }


class ThreadSampler:
    """Samples thread states and syscalls of a changing set of processes."""

    def __init__(self, t0):
        self.t0 = t0
        self.wall_start = time.time()
        self.records = {}          # (pid, start_time) -> ProcessRecord
        self.live = {}             # pid -> (pid, start_time) currently watched
        self.sockets = fds.SocketTable()
        self._maps = {}            # pid -> shared file mappings, for this tick (shared_mapping)
        self._wait_cache = {}      # (pid, tid, syscall, args) -> detail index
        self.cgroups = kernel_state.CgroupCache()
        self.ticks = 0
        self._fd_budget = None     # held /proc fds allowed (read on first use)
        self._held = 0             # held /proc fds open now

    def now(self):
        return time.monotonic() - self.t0

    def watch(self, key, role_hint=None):
        """Start watching (pid, start_time); a pid reused by a new process gets a new record."""
        pid = key[0]
        current = self.live.get(pid)
        if current == key:
            return self.records[key]
        if current is not None:
            self._mark_exited(current)
        record = self.records.get(key)
        if record is None:
            record = ProcessRecord(pid, key[1], self.now(), role_hint)
            self.records[key] = record
            try:
                self._read_process_counters(record, first=True)
            except procfs.ProcessGone:
                record.exited_at = self.now()   # gone, or the pid now belongs to another process
                return record
        self.live[pid] = key
        return record

    def _mark_exited(self, key):
        record = self.records[key]
        if record.exited_at is None:
            record.exited_at = self.now()
        self.live.pop(key[0], None)
        self._release_process(record)

    def _read(self, pid, thread, name, empty_ok=False):
        """Text of /proc/PID/task/TID/<name> through an fd kept open for the thread."""
        return self._read_bytes(pid, thread, name, empty_ok).decode("utf-8", "replace")

    def _read_bytes(self, pid, thread, name, empty_ok=False):
        fd = thread.held.get(name)
        if fd is not None:   # the hot path: one pread, no path built
            try:
                data = os.pread(fd, 4096, 0)
            except OSError as exc:
                self._release(thread, name)
                procfs.fail(exc, pid, name, thread.tid)
            if data or empty_ok:
                return data
            self._release(thread, name)   # the thread is gone (its tid may live on in another thread)
            raise procfs.ProcessGone(pid, tid=thread.tid)
        fd = self._hold(pid, name, thread.tid)
        if fd is None:
            return procfs.read(pid, name, thread.tid).encode()
        thread.held[name] = fd
        return self._read_bytes(pid, thread, name, empty_ok)

    def _hold(self, pid, name, tid=None):
        """An fd kept open on /proc/PID[/task/TID]/NAME for pread, or None once the held fds
        reach their budget."""
        if self._fd_budget is None:
            self._fd_budget = _fd_budget()
        if self._held >= self._fd_budget:
            return None
        fd = procfs.open_held(pid, name, tid)
        self._held += 1
        return fd

    def children(self, pid, full=True):
        """Direct children of a watched process, from the children file of each thread the
        last tick saw (held open like the others); None where the kernel has no such files.
        Unless full, a thread that has not run since its file was last read (schedstat
        unchanged) cannot have forked since: its last answer is kept."""
        key = self.live.get(pid)
        record = self.records[key] if key else None
        if record is None or not record.threads:
            return procfs.children(pid)
        kids = []
        for thread in list(record.threads.values()):
            if thread.last_seen != record.last_seen:
                continue   # not seen at the last tick: ended
            if not full and thread.children_sched is not None and thread.children_sched == thread.sched_text:
                kids.extend(thread.children_last)
                continue
            try:
                found = [int(c) for c in self._read(pid, thread, "children", empty_ok=True).split()]
            except procfs.ProcessGone:
                continue
            except procfs.ProcfsError:
                return procfs.children(pid)
            thread.children_sched, thread.children_last = thread.sched_text, found
            kids.extend(found)
        return kids

    def _read_process_stat(self, record):
        """/proc/PID/stat through an fd held for the process (as _read does for threads)."""
        if record.stat_fd is not None:
            try:
                data = os.pread(record.stat_fd, 4096, 0)
                if data:
                    return data.decode("utf-8", "replace")
            except OSError:
                pass
            self._release_process(record)   # gone: the plain read below says how
        text = procfs.read(record.pid, "stat")
        try:
            record.stat_fd = self._hold(record.pid, "stat")
        except procfs.ProcfsError:
            pass
        return text

    def _release_process(self, record):
        if record.stat_fd is not None:
            os.close(record.stat_fd)
            record.stat_fd = None
            self._held -= 1
        for thread in record.threads.values():
            self._release(thread)

    def _release(self, thread, name=None):
        for key in [name] if name else list(thread.held):
            fd = thread.held.pop(key, None)
            if fd is not None:
                os.close(fd)
                self._held -= 1

    def tick(self):
        t = round(self.now(), 3)
        self.ticks += 1
        self._maps.clear()
        for pid, key in list(self.live.items()):
            record = self.records[key]
            try:
                self._sample_process(record, t)
            except procfs.ProcessGone:
                self._mark_exited(key)
        return t

    def finish(self):
        """Read closing counters of every live process."""
        self.cgroups.clear()
        for record in self.records.values():
            self._release_process(record)
        scanned = {}   # directory scans shared by processes with the same root
        for pid, key in list(self.live.items()):
            try:
                record = self.records[key]
                self._read_process_counters(record, first=False)
                for tid in procfs.tids(pid):
                    if tid in record.threads:   # threads that ended keep no last reading
                        thread = record.threads[tid]
                        thread.kernel_last = kernel_state.thread_snapshot(pid, tid, record._error)
                        try:   # ticks may have skipped its stat: CPU as of the window's end
                            thread.stat_raw = procfs.read(pid, "stat", tid).encode()
                        except procfs.ProcfsError:
                            pass
                record.files_end = record.read_fds()
                record.recent_files = fds.recently_written(
                    pid, procfs.cmdline(pid), record.files_end, self.wall_start, scanned)
            except procfs.ProcessGone:
                self._mark_exited(key)

    def _read_process_counters(self, record, first):
        pid = record.pid
        readers = (("stat", procfs.stat), ("status", procfs.status), ("io", procfs.io_counters))
        for name, reader in readers:
            if name in record.denied:
                continue
            try:
                value = reader(pid)
            except procfs.AccessDenied:
                record.denied.add(name)
                continue
            if name == "stat" and value["start_time"] != record.start_time:
                raise procfs.ProcessGone(pid, "pid %d now belongs to another process" % pid)
            if first and getattr(record, name + "_first") is None:
                setattr(record, name + "_first", value)
            setattr(record, name + "_last", value)
        snapshot = kernel_state.process_snapshot(pid, record.status_last, self.cgroups, record._error, last=not first)
        if first and record.kernel_first is None:
            record.kernel_first = snapshot
        else:
            record.kernel_last = snapshot

    def _sample_process(self, record, t):
        pid = record.pid
        stat = procfs.parse_stat(self._read_process_stat(record))
        if stat["start_time"] != record.start_time:
            raise procfs.ProcessGone(pid, "pid %d now belongs to another process" % pid)
        if stat["state"] in ("Z", "X"):
            record.exit_status = exit_status(stat.get("exit_code"))
            raise procfs.ProcessGone(pid, "pid %d exited (%s)" % (pid, record.exit_status), name=stat["comm"])
        record.last_seen = t
        record.stat_last = stat
        tids = record.tids
        # The task directory is listed again only when the thread count moved, a thread
        # read came back gone (one ended, another may have started), or every RELIST_EVERY
        # ticks: a listing costs more than reading a dozen held files.
        if tids is None or stat["num_threads"] != len(tids) or record.unlisted_ticks >= RELIST_EVERY:
            tids = record.tids = procfs.tids(pid)
            record.unlisted_ticks = 0
            if len(tids) < len(record.threads):
                listed = set(tids)
                for tid, thread in record.threads.items():
                    if tid not in listed and thread.held:
                        self._release(thread)
        else:
            record.unlisted_ticks += 1
        threads, pread, full_every = record.threads, os.pread, FULL_READ_EVERY - 1
        for tid in tids:
            # The common case inline (most of a tick's cost was Python, not /proc): a thread
            # seen before, read through its held schedstat fd.  Anything else: _sample_thread.
            thread = threads.get(tid)
            checked = False
            if thread is not None and thread.samples:
                if thread.skip:
                    thread.skip -= 1     # quiet for a while: this tick repeats its last sample unread
                    thread.last_seen = t
                    last = thread.samples[-1]
                    thread.samples.append([t, last[1], last[2], last[3], last[4]])
                    continue
                fd = thread.held.get("schedstat")
                try:
                    sched = pread(fd, 256, 0) if fd is not None else None
                except OSError:
                    sched = None
                if sched:
                    checked = True
                    if sched == thread.sched_text:
                        last = thread.samples[-1]
                        if last[1] in BLOCKED and thread.stale < full_every:
                            self._repeat(thread, last, t)
                            continue
                    thread.sched_text = sched
            try:
                self._sample_thread(record, tid, t, checked)
            except procfs.ProcessGone:
                record.tids = None   # the thread ended between listing and reading

    @staticmethod
    def _repeat(thread, last, t):
        """Repeat the last sample of a thread still where it was: blocked (S/D) at the last
        tick and not run since (schedstat's run time, wait time and timeslices unchanged:
        the same syscall with the same arguments), or woken and back asleep in the very call
        (_sample_thread).  One small read instead of stat + syscall (+ wchan).  A thread woken
        but not yet run would still read S, so every FULL_READ_EVERY-th look is in full."""
        thread.stale += 1
        ThreadSampler._quiet(thread)
        thread.last_seen = t
        thread.samples.append([t, last[1], last[2], last[3], last[4]])

    @staticmethod
    def _quiet(thread):
        """One more look that found the thread where it was (see QUIET_CHECKS)."""
        thread.quiet += 1
        thread.skip = min(thread.quiet // QUIET_CHECKS, MAX_SKIP)

    def _sample_thread(self, record, tid, t, checked=False):
        """One thread's full sample (checked: its schedstat was read and moved this tick)."""
        pid = record.pid
        thread = record.threads.get(tid)
        if thread is None:
            st = procfs.stat(pid, tid)
            thread = ThreadRecord(tid, st["comm"], t)
            record.threads[tid] = thread
            comm, state, cpu = st["comm"], st["state"], st["utime"] + st["stime"]
            call = last = None
        elif not checked and self._unchanged(record, thread, t):
            return
        else:
            call = None
            last = thread.samples[-1] if thread.samples else None
            if (last is not None and last[1] == "S" and thread.syscall_raw is not None
                    and thread.stale < FULL_READ_EVERY - 1 and (last[2], last[3]) == thread.syscall_seen
                    and (record.stat_last or {}).get("state") not in STOPPED):
                try:
                    call = self._read_bytes(pid, thread, "syscall")
                except procfs.AccessDenied:
                    call = None
                if call == thread.syscall_raw:
                    # It ran, and sleeps again in the very call it slept in (same arguments,
                    # same place): still S, no stat read.  Every FULL_READ_EVERY-th look
                    # reads it in full, and finish() reads every thread's CPU.
                    self._repeat(thread, last, t)
                    return
            # Only the state is needed now; name and CPU are parsed from the last reading
            # when asked for (ThreadRecord.cpu_last, .name).
            raw = self._read_bytes(pid, thread, "stat")
            thread.stat_raw = raw
            state = chr(raw[raw.rindex(b")") + 2])
            comm = cpu = None
        if thread.cpu_first is None:
            thread.cpu_first = cpu if cpu is not None else thread.cpu_last
            thread.kernel_first = self._first_snapshot(record, thread)
        thread.last_seen = t
        if cpu is not None:
            thread.cpu_last, thread.name = cpu, comm
        syscall, detail, wchan = None, None, None
        if state == "R":
            syscall = "running"      # on a CPU or about to be: no syscall to read
        elif "syscall" not in record.denied:
            try:
                raw = call if call is not None else self._read_bytes(pid, thread, "syscall")
            except procfs.AccessDenied:
                record.denied.add("syscall")
                raw = None
            if raw is not None and raw == thread.syscall_raw:
                syscall, detail = thread.syscall_seen   # the same call, arguments and all
            elif raw is not None:
                syscall, args = _parse_syscall(raw.decode())
                if syscall and syscall not in ("running", "nosyscall") and args is not None:
                    detail = self._wait_detail(record, tid, syscall, args)
                    if detail is None or not _moves(record.details[detail]):
                        thread.syscall_raw, thread.syscall_seen = raw, (syscall, detail)
        if state == "D":
            wchan = procfs.wchan(pid, tid)
        sample = [t, state, syscall, detail, wchan]
        if last is not None and state in BLOCKED and sample[1:] == last[1:]:
            self._quiet(thread)
        else:
            thread.quiet = 0
        thread.samples.append(sample)
        thread.stale = 0

    def _first_snapshot(self, record, thread):
        """kernel_state.thread_snapshot, its schedstat read through the fd the ticks go on to
        hold: the next tick can then tell that the thread has not run since (and costs one
        read, not a full sample)."""
        try:
            sched = self._read_bytes(record.pid, thread, "schedstat")
        except procfs.ProcfsError:
            return kernel_state.thread_snapshot(record.pid, thread.tid, record._error)
        thread.sched_text = sched
        return kernel_state.thread_snapshot(record.pid, thread.tid, record._error, sched.decode())

    def _unchanged(self, record, thread, t):
        """_repeat the last sample if schedstat says the thread has not run since (the
        first reading of a thread, opening the held fd, comes here)."""
        try:
            sched = self._read_bytes(record.pid, thread, "schedstat")
        except procfs.AccessDenied:
            return False
        previous, thread.sched_text = thread.sched_text, sched
        last = thread.samples[-1] if thread.samples else None
        if sched != previous:
            return False
        if last is None or last[1] not in BLOCKED or thread.stale >= FULL_READ_EVERY - 1:
            return False
        self._repeat(thread, last, t)
        return True

    def _wait_detail(self, record, tid, syscall, args):
        cache_key = (record.pid, tid, syscall, tuple(args))
        if cache_key in self._wait_cache:
            return self._wait_cache[cache_key]
        try:
            detail = describe_wait(record.pid, syscall, args, self.sockets, self._maps)
        except procfs.AccessDenied:
            record.denied.add("fd")
            detail = None
        except procfs.ProcfsError:
            detail = None
        index = record.intern_detail(detail) if detail else None
        if not _moves(detail):
            self._wait_cache[cache_key] = index
        return index


def _thread_stat(raw):
    """(comm, state, utime + stime) from a thread's /proc stat: the fields each tick needs.
    comm may hold spaces and parentheses, so the fields start after the last ')'."""
    close = raw.rindex(b")")
    rest = raw[close + 2:].split(None, 13)   # rest[0] is field 3 (state); utime, stime are 14, 15
    return raw[raw.index(b"(") + 1:close].decode("utf-8", "replace"), rest[0].decode(), int(rest[11]) + int(rest[12])


def _parse_syscall(text):
    """procfs.current_syscall on text already read: (name, args), ("running", None), ("nosyscall", None)."""
    parts = text.split()
    if not parts:
        return None, None
    if parts[0] == "running":
        return "running", None
    number = int(parts[0])
    if number < 0:
        return "nosyscall", None
    return procfs.syscall_name(number), [int(a, 16) for a in parts[1:7]]


def _moves(detail):
    """A read of a regular file advances its offset: resolve it again next tick."""
    fd = (detail or {}).get("fd") or {}
    return fd.get("kind") == "file" and "pos" in fd


def describe_wait(pid, syscall, args, sockets, maps=None):
    """What a thread blocked in syscall(args) is waiting on, as a small dict (maps: see
    shared_mapping)."""
    if syscall in EPOLL_SYSCALLS:
        watched = procfs.fdinfo(pid, _signed32(args[0]))["tfd"][:MAX_WATCHED_FDS]
        return {"epoll_fd": _signed32(args[0]), "watching": [fds.describe_fd(pid, fd, sockets) for fd in watched],
                "timeout_ms": _signed32(args[3])}
    if syscall in FD_FIRST_ARG:
        return {"fd": fds.describe_fd(pid, _signed32(args[0]), sockets)}
    if syscall in ("openat", "openat2"):
        return {"path": procfs.read_c_string(pid, args[1])}
    if syscall == "open":
        return {"path": procfs.read_c_string(pid, args[0])}
    if syscall in ("wait4", "waitid"):
        # wait4(pid, ...): -1 any child; waitid(idtype, id, ...)
        child = _signed32(args[0]) if syscall == "wait4" else _signed32(args[1])
        return {"child": child}
    if syscall == "futex":
        detail = {"futex": "0x%x" % args[0]}
        if args[1] & FUTEX_CMD_MASK in FUTEX_WAITS and args[3]:
            detail["timed"] = True     # a wait with a timeout ends by itself (a timer, a poll)
        shared = shared_mapping(pid, args[0], maps)
        if shared:
            detail["shared"] = shared
        return detail
    if syscall in POLL_SYSCALLS:
        nfds = min(args[1], MAX_WATCHED_FDS)
        raw = procfs.read_memory(pid, args[0], 8 * nfds)
        watched = [struct.unpack_from("<iHH", raw, 8 * i)[0] for i in range(len(raw) // 8)]
        timeout = _signed32(args[2]) if syscall == "poll" else _timespec_ms(pid, args[2], 1e6)
        return {"watching": [fds.describe_fd(pid, fd, sockets) for fd in watched if fd >= 0], "timeout_ms": timeout}
    if syscall in SELECT_SYSCALLS:
        nfds = min(args[0], 1024)
        watched = []
        if args[1] and nfds:
            raw = procfs.read_memory(pid, args[1], (nfds + 7) // 8)
            for fd in range(min(nfds, len(raw) * 8)):
                if raw[fd // 8] >> (fd % 8) & 1:
                    watched.append(fd)
        # select's timeout is a timeval (microseconds), pselect6's a timespec
        timeout = _timespec_ms(pid, args[4], 1000 if syscall == "select" else 1e6)
        return {"watching": [fds.describe_fd(pid, fd, sockets) for fd in watched[:MAX_WATCHED_FDS]],
                "timeout_ms": timeout}
    if syscall in NANOSLEEPS:
        ts = _read_timespec(pid, args[2] if syscall == "clock_nanosleep" else args[0])
        if ts is not None:
            sec, nsec = ts
            value = sec + nsec / 1e9
            if syscall == "clock_nanosleep" and args[1] & TIMER_ABSTIME:
                # Python sleeps until an absolute deadline on CLOCK_MONOTONIC.
                try:
                    value -= time.clock_gettime(args[0])
                except OSError:
                    return None
                return {"sleep_s": round(max(value, 0.0), 3), "absolute": True}
            return {"sleep_s": round(value, 3)}
    return None


def _timespec_ms(pid, address, per_ms):
    """The timeout a poll-family call was given, in ms: -1 for none (a NULL pointer, as poll's
    and epoll_wait's -1), None when unreadable.  per_ms: the struct's second field per ms."""
    if not address:
        return -1
    ts = _read_timespec(pid, address)
    return None if ts is None else int(ts[0] * 1000 + ts[1] / per_ms)


def _read_timespec(pid, address):
    """(seconds, fraction) of a struct timespec or timeval in the target's memory, or None."""
    raw = procfs.read_memory(pid, address, 16)
    return struct.unpack("<qq", raw) if len(raw) == 16 else None


def shared_mapping(pid, address, maps=None):
    """"path+offset" when a futex word lives in a file mapping (a multiprocessing
    semaphore in /dev/shm), so waits of two processes on one lock can be matched.
    maps: {pid: shared file mappings}, kept for one tick (a tree's first tick finds a
    dozen lock waiters per process; /proc/PID/maps was read for each)."""
    maps = {} if maps is None else maps
    if pid not in maps:
        try:
            # only a shared mapping holds a futex another process can wait on
            maps[pid] = procfs.shared_mappings(pid)
        except procfs.ProcfsError:
            return None
    for start, end, offset, _dev, _inode, path in maps[pid]:
        if start <= address < end:
            return "%s+0x%x" % (path, address - start + offset)
    return None


# --- the probe -------------------------------------------------------------------------------

# Thread-samples per second above which the rate is lowered, to keep our
# own CPU use near 2-3% of a core on large trees.
THREAD_READS_PER_S = 1500
# Each /proc tick comes at a random point within half an interval of its place on the fixed
# schedule (as many ticks as at a fixed rate, none in step with the target): at a fixed rate, a loop
# whose period divides the interval (20 ms at 5 Hz) is caught at the same point of its period
# in every sample, e.g. always in its wait, never computing (fixtures/workloads/paced_training.py).
TICK_JITTER = 0.5
# processes sampled because an inspected one waits on them, not because they are in its tree
OUTSIDE_ROLES = ("lock-holder", "pipe-peer", "waker")
MAX_DENIED_NAMED = 20


@typed_record
class ThreadsSection(Section):
    """Every process watched (capture "processes", first seen first), the socket pairs between
    them, and how many children went uninspected."""
    processes: List[dict] = field(default_factory=list)
    unix_peers: Dict[int, int] = field(default_factory=dict)
    tcp_peers: Dict[int, int] = field(default_factory=dict)
    # inode -> [bytes received and not read, bytes sent and not yet taken] at the window's end, of
    # both ends of the connections above: where a request is (unread at the server, or read)
    socket_queues: Dict[int, list] = field(default_factory=dict)
    skipped_children: int = 0
    target_denied: bool = False   # the target's current syscalls were refused
    rate_hz: Optional[float] = None   # the /proc sampling rate at the window's end (window.rate_hz)

    def write(self, capture):
        capture["processes"] = self.processes
        capture["skipped_children"] = self.skipped_children
        capture["unix_peers"] = _peers_in(self.processes, self.unix_peers)
        capture["tcp_peers"] = _peers_in(self.processes, self.tcp_peers)
        ends = {int(k) for table in (capture["unix_peers"], capture["tcp_peers"]) for k in table} | \
            {int(v) for table in (capture["unix_peers"], capture["tcp_peers"]) for v in table.values()}
        capture["socket_queues"] = {str(ino): q for ino, q in self.socket_queues.items() if ino in ends}
        capture["permission_denied"] = capture.get("permission_denied") or self.target_denied


def _peers_in(processes, peers):
    """Only the socket pairs that touch an inspected process."""
    held = {target for proc in processes for target in proc.get("endpoints", {})}
    return {str(ino): peer for ino, peer in peers.items() if "socket:[%d]" % ino in held}


class ThreadsProbe(Probe):
    """The thread sampler over the window: every thread's state and current syscall at the
    sampling rate (lowered for a large tree), the kernel's accounting at the window's start and
    end (kernel_state.py), and what each process holds open."""

    name = "threads"
    Section = ThreadsSection

    def __init__(self):
        self.rate = None
        self.rate_notes = set()
        self.due = 0.0
        self._base = 0.0

    def start(self, ctx):
        self.rate = ctx.config.rate

    def tick(self, ctx):
        if ctx.now() < self.due:
            return
        sampler = ctx.sampler
        ctx.t = sampler.tick()
        ctx.thread_count = threads = sum(len(sampler.records[k].threads) for k in sampler.live.values())
        if not ctx.config.duration:
            return   # one snapshot: no schedule
        asked = ctx.config.rate
        self.rate = min(asked, max(1.0, THREAD_READS_PER_S / max(threads, 1)))
        if self.rate < asked:
            self.rate_notes.add(round(self.rate, 1))
        self._base += 1.0 / self.rate
        self.due = self._base + random.uniform(-TICK_JITTER, TICK_JITTER) / self.rate

    def stop(self, ctx):
        sampler = ctx.sampler
        limitations = []
        try:
            sampler.finish()
        except Exception as exc:   # the samples stand without the closing counters
            limitations.append("thread states: the counters at the window's end were not read (%s: %s)"
                               % (type(exc).__name__, exc))
        processes = []
        for _key, record in sorted(sampler.records.items(), key=lambda kv: kv[1].first_seen):
            proc = record.to_dict()
            if record.role_hint in OUTSIDE_ROLES:
                proc["outside_tree"] = True
            processes.append(proc)
        target = next((p for p in processes if p["pid"] == ctx.config.pid), None)
        if self.rate_notes:
            limitations.append("sampling rate lowered to %s Hz for a large tree (asked for %s Hz)"
                               % (min(self.rate_notes), ctx.config.rate))
        unix_queues = {}
        unix_peers = fds.unix_peers(unix_queues)
        tcp_peers = sampler.sockets.tcp_peers()
        ends = set(tcp_peers) | set(tcp_peers.values())
        queues = dict(unix_queues)
        if ends:
            queues.update(sampler.sockets.queues([p["pid"] for p in processes if not p.get("exited_at")], ends))
        return ThreadsSection(limitations=limitations + _denials(processes), processes=processes,
                              unix_peers=unix_peers, tcp_peers=tcp_peers, socket_queues=queues,
                              skipped_children=ctx.skipped_children,
                              target_denied=target is not None and "syscall" in target["denied"],
                              rate_hz=round(self.rate, 2))

    def failed(self, error):
        return ThreadsSection(limitations=["thread states: not measured (the probe failed: %s)" % error])


def _denials(processes):
    """A limitation per process whose /proc files were refused, and what is still observed."""
    from ..permissions import denied_text, how_to_get_access
    denied = [p for p in processes if p["denied"]]
    out = ["pid %d: permission denied reading its %s (still observed: thread states, CPU time, command line). "
           "To see the rest: %s" % (proc["pid"], denied_text(proc["denied"]), how_to_get_access(proc.get("uid")))
           for proc in denied[:MAX_DENIED_NAMED]]
    if len(denied) > MAX_DENIED_NAMED:
        out.append("%d more processes with the same denials" % (len(denied) - MAX_DENIED_NAMED))
    return out


def tree_pids(sampler):
    """Pids of the inspected tree: every watched process not sampled only as an outside one."""
    return {r.pid for r in sampler.records.values() if r.role_hint not in OUTSIDE_ROLES}
