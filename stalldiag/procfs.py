"""The one reader of /proc: every /proc path stalldiag reads is built and opened here.

Nothing here stops, traces or writes to the target: /proc/PID/syscall and
/proc/PID/mem are read with the same ptrace *access* check as py-spy's
process_vm_readv, but neither attaches nor pauses the task.  Every reader
raises ``ProcessGone`` when the task disappeared and ``AccessDenied`` when
the kernel refused, so callers can tell "exited" from "not allowed"; each
carries the pid (and tid, and the file) as attributes (errors.py).

A pid may be "self" (this process) wherever one is taken.  What there is:

  read(pid, name, tid)       the text of /proc/PID[/task/TID]/NAME (status, schedstat, maps,
                             cgroup, mountinfo, limits, net/tcp, ...)
  read_host(name)            /proc/NAME: stat, meminfo, diskstats, locks, uptime, sys/...
  stat, status, io_counters, cmdline, comm, environ_subset, wchan, current_syscall,
  kernel_stack, shared_mappings, tids, children     parsed per-process and per-thread files
  pids, exists               the processes of our pid namespace
  list_fds, fd_target, fdinfo, fd_stat, open_fd     a process's fds and what they point at
  exe, cwd, root_stat, root_isdir, root_scandir, root_read
                             the process's executable, working directory and view of files
  read_memory, read_c_string its memory (/proc/PID/mem)
  open_held                  an fd kept open on a per-thread file, re-read with os.pread (the
                             thread sampler's 5 Hz ticks)
"""
import errno
import os
import platform

from . import syscall_names
from .errors import AccessDenied, NoSuchProcess, ProcessError

CLK_TCK = os.sysconf("SC_CLK_TCK")
PROC = "/proc"

# The errors every reader raises (errors.py): ProcfsError is their base, so `except
# ProcfsError` still catches all three.
ProcfsError = ProcessError
ProcessGone = NoSuchProcess


def _ids(path):
    """(pid, tid) named by a /proc path, None where it names none."""
    parts = path.split("/")
    pid = int(parts[2]) if len(parts) > 2 and parts[1] == "proc" and parts[2].isdigit() else None
    tid = int(parts[4]) if pid is not None and len(parts) > 4 and parts[3] == "task" and parts[4].isdigit() else None
    return pid, tid


def _fail(exc, path, pid=None, tid=None):
    """Raise the error an OSError on path means: ProcessGone, AccessDenied, else ProcfsError."""
    if pid is None:
        pid, tid = _ids(path)
    if isinstance(exc, (FileNotFoundError, ProcessLookupError)) or exc.errno in (errno.ESRCH, errno.ENOENT):
        raise ProcessGone(pid, tid=tid, path=path) from None
    if isinstance(exc, PermissionError) or exc.errno in (errno.EACCES, errno.EPERM):
        raise AccessDenied(pid, tid=tid, path=path) from None
    raise ProcfsError(pid, "%s: %s" % (path, exc), tid=tid, path=path) from None


def fail(exc, pid, name, tid=None):
    """_fail for an OSError met on /proc/PID[/task/TID]/NAME read through a held fd."""
    _fail(exc, task_dir(pid, tid) + "/" + name, pid, tid)


def _call(fn, path, pid, tid=None, *args):
    """fn(path, *args), its OSError raised as _fail says."""
    try:
        return fn(path, *args)
    except OSError as exc:
        _fail(exc, path, pid, tid)


def _read_bytes(path, limit):
    with open(path, "rb") as f:
        return f.read(limit)


def _listdir_ints(path):
    return [int(name) for name in os.listdir(path) if name.isdigit()]


# Per-process and per-thread files the kernel writes in one go.
ONE_READ_FILES = ("/stat", "/status", "/syscall", "/wchan", "/schedstat", "/io", "/comm", "/children",
                  "/cpu.stat", "freezer.state", "cgroup.events", "cpu.max", "cpu.cfs_quota_us", "cpu.cfs_period_us")


def read_text(path):
    # os.open/os.read: half the cost of open() for the thousands of small
    # /proc files read every second on a large tree.
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as exc:
        _fail(exc, path)
    try:
        chunks = []
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            chunks.append(chunk)
            if len(chunk) < 4096 and path.endswith(ONE_READ_FILES):
                break     # these small /proc files come whole in one read
            # Others (net/tcp, net/unix, locks, mountinfo...) come a page of whole records per
            # read, often under 4096 bytes: stopping early lost every socket after the ~27th.
        return b"".join(chunks).decode("utf-8", "replace")
    except OSError as exc:
        _fail(exc, path)
    finally:
        os.close(fd)


def task_dir(pid, tid=None):
    return "%s/%s/task/%d" % (PROC, pid, tid) if tid else "%s/%s" % (PROC, pid)


def read(pid, name, tid=None):
    """Text of /proc/PID[/task/TID]/NAME: "status", "schedstat", "maps", "cgroup", "net/tcp"..."""
    return read_text(task_dir(pid, tid) + "/" + name)


def read_host(name):
    """Text of /proc/NAME: "stat", "meminfo", "diskstats", "locks", "sys/kernel/..."."""
    return read_text(PROC + "/" + name)


def host_path(name):
    """The path of /proc/NAME, for a check of whether it exists ("driver/nvidia")."""
    return PROC + "/" + name


def open_held(pid, name, tid=None):
    """An fd open on /proc/PID[/task/TID]/NAME, for a caller that re-reads it with os.pread
    (a read through a held fd costs 1.3-4 us, open+read+close 7-10 us) and closes it."""
    return _call(os.open, task_dir(pid, tid) + "/" + name, pid, tid, os.O_RDONLY)


def pids():
    """Pids of every process in our pid namespace (unsorted)."""
    return _call(_listdir_ints, PROC, None)


def exists(pid):
    """Is there a process (or zombie) with this pid?"""
    return os.path.exists(task_dir(pid))


def exe(pid):
    """The path of the process's executable (/proc/PID/exe)."""
    return _call(os.readlink, task_dir(pid) + "/exe", pid)


def cwd(pid):
    """The process's working directory (/proc/PID/cwd)."""
    return _call(os.readlink, task_dir(pid) + "/cwd", pid)


def parse_stat(text):
    """Fields of /proc/PID[/task/TID]/stat that we use.

    comm may contain spaces and parentheses, so split at the last ')'.
    """
    open_paren = text.index("(")
    close_paren = text.rindex(")")
    comm = text[open_paren + 1:close_paren]
    rest = text[close_paren + 2:].split()
    # rest[0] is field 3 (state); field N is rest[N - 3].
    return {
        "comm": comm,
        "state": rest[0],
        "ppid": int(rest[1]),
        "pgid": int(rest[2]),
        "sid": int(rest[3]),
        "minflt": int(rest[7]),
        "majflt": int(rest[9]),
        "utime": int(rest[11]),
        "stime": int(rest[12]),
        "num_threads": int(rest[17]),
        "start_time": int(rest[19]),
        "processor": int(rest[36]) if len(rest) > 36 else None,
        # the wait status a zombie left for its parent (field 52, Linux 3.5+)
        "exit_code": int(rest[49]) if len(rest) > 49 else None,
    }


def stat(pid, tid=None):
    return parse_stat(read_text(task_dir(pid, tid) + "/stat"))


def status(pid):
    fields = {}
    for line in read_text(task_dir(pid) + "/status").splitlines():
        key, _, value = line.partition(":")
        fields[key] = value.strip()
    return fields


def cmdline(pid):
    raw = read_text(task_dir(pid) + "/cmdline")
    return [part for part in raw.split("\0")][:-1] if raw.endswith("\0") else ([raw] if raw else [])


def comm(pid, tid=None):
    return read_text(task_dir(pid, tid) + "/comm").rstrip("\n")


def tids(pid):
    return sorted(_call(_listdir_ints, task_dir(pid) + "/task", pid))


def children(pid):
    """Direct children of every thread of pid (CONFIG_PROC_CHILDREN), or None if unsupported."""
    kids = []
    for tid in tids(pid):
        path = task_dir(pid, tid) + "/children"
        try:
            with open(path) as f:
                kids.extend(int(c) for c in f.read().split())
        except FileNotFoundError:
            if not os.path.exists(task_dir(pid, tid)):
                continue
            return None
        except OSError as exc:
            if exc.errno in (errno.ESRCH,):
                continue
            _fail(exc, path)
    return kids


def io_counters(pid):
    counters = {}
    for line in read_text(task_dir(pid) + "/io").splitlines():
        key, _, value = line.partition(":")
        counters[key.strip()] = int(value)
    return counters


def wchan(pid, tid):
    try:
        value = read_text(task_dir(pid, tid) + "/wchan").strip()
    except AccessDenied:
        return None
    return value if value and value != "0" else None


def environ_subset(pid, names):
    """Only the named variables: the rest of the environment may hold secrets."""
    raw = read_text(task_dir(pid) + "/environ")
    found = {}
    for entry in raw.split("\0"):
        key, sep, value = entry.partition("=")
        if sep and key in names:
            found[key] = value
    return found


# --- current syscall ---------------------------------------------------------

MACHINE = platform.machine()
SYSCALL_TABLE = syscall_names.AARCH64 if MACHINE in ("aarch64", "arm64") else syscall_names.X86_64


def syscall_name(number, table=None):
    table = SYSCALL_TABLE if table is None else table
    return table.get(number, "syscall_%d" % number)


def current_syscall(pid, tid):
    """(name, args) of the syscall the thread is blocked in, ("running", None) if on CPU.

    Format of /proc/PID/task/TID/syscall: "NR arg0 .. arg5 sp pc", "running",
    or "-1 sp pc" when blocked outside a syscall (e.g. a page fault).
    """
    text = read_text(task_dir(pid, tid) + "/syscall").split()
    if not text:
        return None, None
    if text[0] == "running":
        return "running", None
    number = int(text[0])
    if number < 0:
        return "nosyscall", None
    args = [int(a, 16) for a in text[1:7]]
    return syscall_name(number), args


def read_memory(pid, address, size):
    """Bytes of the target's memory, read through /proc/PID/mem (no stop, no attach)."""
    path = task_dir(pid) + "/mem"
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as exc:
        _fail(exc, path)
    try:
        return os.pread(fd, size, address)
    except OSError:
        return b""
    finally:
        os.close(fd)


def read_c_string(pid, address, limit=512):
    data = read_memory(pid, address, limit)
    return data.split(b"\0", 1)[0].decode("utf-8", "replace")


# --- file descriptors --------------------------------------------------------

def fd_path(pid, fd):
    return "%s/%s/fd/%d" % (PROC, pid, fd)


def fd_target(pid, fd):
    """What fd points at: a path, 'pipe:[ino]', 'socket:[ino]', 'anon_inode:[eventpoll]'."""
    path = fd_path(pid, fd)
    try:
        return os.readlink(path)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return None
        _fail(exc, path, pid)


def fd_stat(pid, fd):
    """os.stat of the file behind one of the process's fds (its size, mode, dev and inode)."""
    return _call(os.stat, fd_path(pid, fd), pid)


def open_fd(pid, fd, flags=os.O_RDONLY):
    """A new fd of ours on the file behind one of the process's fds (the caller closes it)."""
    return _call(os.open, fd_path(pid, fd), pid, None, flags)


def fdinfo(pid, fd):
    fields = {"tfd": []}
    for line in read_text("%s/%s/fdinfo/%d" % (PROC, pid, fd)).splitlines():
        key, _, value = line.partition(":")
        if key == "tfd":
            fields["tfd"].append(int(value.split()[0]))
        else:
            fields[key] = value.strip()
    return fields


def list_fds(pid):
    return sorted(_call(_listdir_ints, task_dir(pid) + "/fd", pid))


# --- a process's view of the file system (/proc/PID/root: its mount namespace) ---------------

def root_path(pid, path):
    return "%s/%s/root%s" % (PROC, pid, path)


def root_stat(pid, path, follow=True):
    """os.stat (os.lstat unless follow) of path as the process sees it."""
    return _call(os.stat if follow else os.lstat, root_path(pid, path), pid)


def root_isdir(pid, path):
    return os.path.isdir(root_path(pid, path))


def root_scandir(pid, directory):
    """os.scandir of a directory as the process sees it (a context manager)."""
    return _call(os.scandir, root_path(pid, directory), pid)


def root_read(pid, path, limit):
    """Up to limit bytes of a file as the process sees it."""
    return _call(_read_bytes, root_path(pid, path), pid, None, limit)


def boot_time():
    for line in read_host("stat").splitlines():
        if line.startswith("btime"):
            return int(line.split()[1])
    return 0


def uptime():
    return float(read_host("uptime").split()[0])


def shared_mappings(pid):
    """[(start, end, offset, "maj:min", inode, path)] of a process's shared mappings ('s' in
    /proc/PID/maps: a /dev/shm file, a multiprocessing semaphore, an anonymous shared area,
    which maps shows as "/dev/zero (deleted)")."""
    out = []
    for line in read(pid, "maps").splitlines():
        parts = line.split(None, 5)
        if len(parts) < 6 or parts[1][3:4] != "s" or not parts[5].strip():
            continue
        start, end = (int(x, 16) for x in parts[0].split("-"))
        out.append((start, end, int(parts[2], 16), parts[3], int(parts[4]), parts[5].strip()))
    return out


def kernel_stack(pid, tid):
    """Function names of a thread's kernel stack, innermost first (/proc/PID/task/TID/stack:
    root only; [] when refused or empty)."""
    try:
        text = read_text(task_dir(pid, tid) + "/stack")
    except ProcfsError:
        return []
    names = []
    for line in text.splitlines():
        symbol = line.split()[-1] if line.split() else ""
        names.append(symbol.split("+", 1)[0])
    return [n for n in names if n]
