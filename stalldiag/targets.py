"""Which processes to inspect: the target, and with --children its whole tree.

A process is identified by (pid, start_time) so that a pid reused by the
kernel during the window is recorded as a new process, never merged with
the one that exited.
"""
import os

from . import procfs
from .errors import AccessDenied, BadTarget, NoSuchProcess


def process_key(pid):
    """(pid, start_time in clock ticks since boot), or None if it is gone."""
    try:
        return (pid, procfs.stat(pid)["start_time"])
    except procfs.ProcessGone:
        return None


def check_target(pid):
    """Refuse targets we cannot or should not inspect, with a one-line reason: NoSuchProcess,
    AccessDenied or BadTarget (errors.py), each carrying the pid (and its name where read)."""
    if pid <= 0:
        raise NoSuchProcess(pid, "PID must be a positive number, got %d" % pid)
    if pid == os.getpid():
        raise BadTarget(pid, "PID %d is stalldiag itself" % pid, name="stalldiag")
    try:
        st = procfs.stat(pid)
    except procfs.ProcessGone:
        raise NoSuchProcess(pid, "no process with PID %d" % pid) from None
    except procfs.AccessDenied as exc:
        raise AccessDenied(pid, "cannot read %s: permission denied" % exc.path, path=exc.path) from None
    if st["state"] == "Z":
        raise BadTarget(pid, "PID %d is a zombie (it exited; its parent has not reaped it)" % pid, name=st["comm"])
    if _is_kernel_thread(pid):
        raise BadTarget(pid, "PID %d (%s) is a kernel thread, not a program" % (pid, st["comm"]), name=st["comm"])
    return st


def _is_kernel_thread(pid):
    # Kernel threads have no memory map and an empty cmdline; PF_KTHREAD is
    # bit 21 of the flags field, but an empty cmdline plus ppid 2 is enough.
    try:
        return not procfs.cmdline(pid) and (pid == 2 or procfs.stat(pid)["ppid"] == 2)
    except procfs.ProcfsError:
        return False


def descendants(pid):
    """All live descendants of pid, parents before children."""
    found = []
    queue = [pid]
    use_children_files = True
    while queue:
        parent = queue.pop(0)
        kids = None
        if use_children_files:
            try:
                kids = procfs.children(parent)
            except procfs.ProcfsError:
                continue
            if kids is None:
                use_children_files = False
        if kids is None:
            return _descendants_by_ppid(pid)
        for kid in kids:
            if kid not in found and kid != pid:
                found.append(kid)
                queue.append(kid)
    return found


def _descendants_by_ppid(pid):
    """Without /proc/*/task/*/children: psutil builds the tree from every ppid."""
    import psutil
    try:
        return [p.pid for p in psutil.Process(pid).children(recursive=True)]
    except psutil.Error:
        return []
