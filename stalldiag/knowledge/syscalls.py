"""What a thread blocked in a given syscall is waiting for.

WAIT_KIND maps a syscall name to the kind of wait it is when a thread sits
in it.  For syscalls on a file descriptor the fd's target refines the kind
(a read() on a socket is a network wait, on a regular file a storage wait):
see FD_KIND_OVERRIDES.
"""

# syscall -> wait kind while a thread is inside it
WAIT_KIND = {
    # locks, conditions, semaphores, the GIL
    "futex": "lock",
    "futex_waitv": "lock",
    "semop": "lock",
    "semtimedop": "lock",
    "flock": "lock",
    # a thread that stays in fcntl() is in F_SETLKW / F_OFD_SETLKW: a POSIX or OFD file lock
    "fcntl": "lock",
    # storage and file metadata
    "read": "fd",
    "pread64": "fd",
    "readv": "fd",
    "preadv": "fd",
    "preadv2": "fd",
    "write": "fd",
    "pwrite64": "fd",
    "writev": "fd",
    "pwritev": "fd",
    "pwritev2": "fd",
    "open": "open",
    "openat": "open",
    "openat2": "open",
    "stat": "io",
    "lstat": "io",
    "newfstatat": "io",
    "statx": "io",
    "fstat": "io",
    "getdents64": "io",
    "fsync": "io",
    "fdatasync": "io",
    "sync_file_range": "io",
    "sendfile": "io",
    "copy_file_range": "io",
    "io_getevents": "io",
    "io_uring_enter": "io",
    "mmap": "io",
    # sockets
    "recvfrom": "network",
    "recvmsg": "network",
    "recvmmsg": "network",
    "sendto": "network",
    "sendmsg": "network",
    "accept": "network",
    "accept4": "network",
    "connect": "network",
    # multiplexed waits: refined by the fds they watch
    "poll": "poll",
    "ppoll": "poll",
    "select": "poll",
    "pselect6": "poll",
    "epoll_wait": "poll",
    "epoll_pwait": "poll",
    "epoll_pwait2": "poll",
    # children
    "wait4": "child",
    "waitid": "child",
    # sleeping by design
    "nanosleep": "sleep",
    "clock_nanosleep": "sleep",
    "pause": "sleep",
    "rt_sigsuspend": "sleep",
    "rt_sigtimedwait": "sleep",
    "sched_yield": "cpu",
    # a sleep, poll or futex wait interrupted (by a debugger attach, a signal) and
    # resumed: the Python frame says what it was
    "restart_syscall": "other",
    # GPU drivers talk through ioctl on /dev/nvidia*
    "ioctl": "fd",
}

# syscalls whose first argument is a file descriptor worth resolving
FD_FIRST_ARG = {
    "read", "pread64", "readv", "preadv", "preadv2", "write", "pwrite64", "writev",
    "pwritev", "pwritev2", "recvfrom", "recvmsg", "recvmmsg", "sendto", "sendmsg",
    "accept", "accept4", "connect", "fsync", "fdatasync", "flock", "ioctl",
    "getdents64", "fstat", "sync_file_range", "epoll_wait", "epoll_pwait", "epoll_pwait2",
    "io_getevents",
}

# kind of fd target -> wait kind of an fd syscall on it
FD_KIND_OVERRIDES = {
    "file": "io",
    "block": "io",
    "pipe": "pipe",
    "fifo": "io",       # a named pipe is a path the program opened: reading it waits like a read of a file
    "socket": "network",
    "unix": "ipc",
    "tty": "tty",
    "eventfd": "event",
    "gpu": "gpu",
    "char": "device",
    "epoll": "poll",
}

# Kernel wait channels (wchan of a D-state thread) that mean storage or network.
WCHAN_HINTS = (
    # the cgroup freezer parks tasks in the refrigerator (D state): not storage
    ("refrigerator", "frozen"),
    ("do_signal_stop", "stopped"),
    ("ptrace_stop", "stopped"),
    ("io_schedule", "io"),
    ("submit_bio", "io"),
    ("folio_wait", "io"),
    ("wait_on_page", "io"),
    ("blk_", "io"),
    ("nfs", "io"),
    ("fuse", "io"),
    ("jbd2", "io"),
    ("ext4", "io"),
    ("xfs", "io"),
    ("rpc_wait", "io"),
    ("pipe_", "pipe"),
    ("unix_", "ipc"),
    ("sk_wait", "network"),
    ("tcp_", "network"),
    ("futex", "lock"),
    ("do_wait", "child"),
    ("nvidia", "gpu"),
    ("uvm", "gpu"),
)


def wait_kind(syscall, fd_kind=None):
    """Kind of wait for a thread inside syscall, refined by the fd's kind when known."""
    kind = WAIT_KIND.get(syscall)
    if kind in ("fd", "poll") and fd_kind in FD_KIND_OVERRIDES:
        return FD_KIND_OVERRIDES[fd_kind]
    if kind == "fd":
        return "io"
    return kind or "other"


def wchan_kind(wchan):
    for fragment, kind in WCHAN_HINTS:
        if wchan and fragment in wchan:
            return kind
    return "io"


# Syscall counts always reported, so a reader can rely on them being there (zero if unseen).
ALWAYS_SHOWN = ("futex", "read", "openat")
