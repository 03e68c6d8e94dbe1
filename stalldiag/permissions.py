"""Why the kernel refused a read, and how the user gets the rest.

Reading another process's current syscall, memory, fds or io counters needs
the same right as attaching a debugger (ptrace access mode): the same user
(and Yama allowing it), or CAP_SYS_PTRACE.  Its /proc/PID/stat stays readable,
so thread states and CPU time are still observed.
"""
import os
import pwd

from . import procfs

CAP_SYS_PTRACE = 19
YAMA = "sys/kernel/yama/ptrace_scope"   # under /proc


def has_cap_sys_ptrace():
    try:
        return bool(int(procfs.status("self")["CapEff"], 16) >> CAP_SYS_PTRACE & 1)
    except (procfs.ProcfsError, KeyError, ValueError):
        return False


def yama_scope():
    try:
        return int(procfs.read_host(YAMA).strip())
    except (procfs.ProcfsError, ValueError):
        return None


def _user(uid):
    try:
        return pwd.getpwuid(uid).pw_name
    except (KeyError, TypeError):
        return str(uid)


def how_to_get_access(target_uid):
    """One sentence: what to change so the denied reads succeed."""
    euid = os.geteuid()
    hints = []
    if euid != 0 and target_uid is not None and target_uid != euid:
        hints.append("the target runs as %s and stalldiag as %s: run it as root (sudo stalldiag ...) or as %s"
                     % (_user(target_uid), _user(euid), _user(target_uid)))
    elif not has_cap_sys_ptrace() and (euid == 0 or target_uid != euid):
        hints.append("stalldiag lacks CAP_SYS_PTRACE (in a container: docker run --cap-add SYS_PTRACE, or "
                     "securityContext.capabilities.add: [SYS_PTRACE] in Kubernetes)")
    scope = yama_scope()
    if scope is not None and scope >= 1 and not has_cap_sys_ptrace():
        hints.append("kernel.yama.ptrace_scope=%d lets a process read only its own descendants: "
                     "sudo sysctl kernel.yama.ptrace_scope=0, or run as root%s"
                     % (scope, " (3 forbids it until reboot)" if scope == 3 else ""))
    if not hints:
        hints.append("run as root (sudo) or grant CAP_SYS_PTRACE")
    return "; ".join(hints)


DENIED_MEANS = {
    "syscall": "current syscalls",
    "io": "I/O counters",
    "fd": "file descriptors",
    "environ": "rank/world-size environment",
    "exe": "executable path",
    "stat": "thread states",
    "status": "context switches",
}


def denied_text(proc_denied):
    return ", ".join(DENIED_MEANS.get(what, what) for what in sorted(proc_denied))
