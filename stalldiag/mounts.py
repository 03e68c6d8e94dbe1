"""Which mount a file lives on, and who serves it: a FUSE daemon, an NFS or CIFS server.

A thread stuck in D state reading a file waits on whatever serves that file's
mount.  The mount is found in the waiter's own /proc/PID/mountinfo (its mount
namespace), by the mount id the fd's fdinfo gives (`mnt_id:`), or for a bare
path by the longest mount point that prefixes it.  Nothing here stats or opens
the file: on a hung FUSE or NFS mount that would hang us too.
"""
import os

from . import procfs

NETWORK_FSTYPES = ("nfs", "nfs4", "cifs", "smb3", "ceph", "9p", "glusterfs", "lustre", "gpfs")


def _unescape(text):
    # mountinfo writes space, tab, newline and backslash as octal escapes (\040)
    if "\\" not in text:
        return text
    out, i = [], 0
    while i < len(text):
        if text[i] == "\\" and text[i + 1:i + 4].isdigit():
            out.append(chr(int(text[i + 1:i + 4], 8)))
            i += 4
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def parse_mountinfo(text):
    """[{"id", "dev", "root", "mountpoint", "fstype", "source", "super"}] from mountinfo text: the
    one parser of /proc/PID/mountinfo (the FUSE/NFS server of a file, the cgroup mounts)."""
    out = []
    for line in text.splitlines():
        left, sep, right = line.partition(" - ")
        parts, tail = left.split(), right.split()
        if not sep or len(parts) < 5 or len(tail) < 2 or not parts[0].isdigit():
            continue
        out.append({"id": int(parts[0]), "dev": parts[2], "root": _unescape(parts[3]),
                    "mountpoint": _unescape(parts[4]), "fstype": tail[0], "source": _unescape(tail[1]),
                    "super": tail[2] if len(tail) > 2 else ""})
    return out


def mounts_of(pid):
    """The mountinfo entries of a process's mount namespace ("self": ours); [] when unreadable."""
    try:
        return parse_mountinfo(procfs.read(pid, "mountinfo"))
    except procfs.ProcfsError:
        return []


def mount_of(pid, path=None, fd=None, mounts=None):
    """The mountinfo entry a process's fd (by its mnt_id) or path (longest prefix) is on."""
    mounts = mounts_of(pid) if mounts is None else mounts
    if fd is not None:
        try:
            mnt_id = int(procfs.fdinfo(pid, fd).get("mnt_id", -1))
        except (procfs.ProcfsError, ValueError):
            mnt_id = -1
        for entry in reversed(mounts):
            if entry["id"] == mnt_id:
                return entry
    if not path or not path.startswith("/"):
        return None
    best = None
    for entry in mounts:   # later entries are mounted over earlier ones: >= keeps the last
        point = entry["mountpoint"].rstrip("/") + "/"
        if (path + "/").startswith(point) and (best is None or len(point) >= len(best["mountpoint"].rstrip("/") + "/")):
            best = entry
    return best


def server_address(entry):
    """addr= of an NFS/CIFS mount's super options (the server it waits on), or the host part
    of an NFS source ("10.0.0.5:/export")."""
    for option in entry.get("super", "").split(","):
        if option.startswith("addr="):
            return option[len("addr="):]
    if entry["fstype"].startswith("nfs") and ":" in entry["source"]:
        return entry["source"].rsplit(":", 1)[0]
    return None


def fuse_connection_alive(entry):
    """True/False whether /sys/fs/fuse/connections/<minor> lists the mount's connection; None
    when the fusectl file system is not mounted there."""
    base = "/sys/fs/fuse/connections"
    if not os.path.ismount(base):
        return None
    try:
        minor = int(entry["dev"].split(":")[1])
    except (IndexError, ValueError):
        return None
    return os.path.isdir("%s/%d" % (base, minor))


def fuse_servers(entry, host_fds):
    """Processes holding /dev/fuse (host_fds: fds.HostFds, scanned), narrowed to those whose
    command line names the mount point when any does: the kernel does not say which /dev/fuse
    fd serves which mount."""
    pids = sorted({pid for pid, _fd in host_fds.holders("/dev/fuse")})
    named = []
    for pid in pids:
        try:
            argv = procfs.cmdline(pid)
        except procfs.ProcfsError:
            continue
        if any(arg.rstrip("/") == entry["mountpoint"].rstrip("/") for arg in argv):
            named.append(pid)
    return named or pids


def describe(entry, host_fds=None):
    """The record's "mount" dict: mountpoint, fstype, source, served_by (FUSE), server (NFS/CIFS)."""
    out = {"mountpoint": entry["mountpoint"], "fstype": entry["fstype"], "source": entry["source"]}
    if entry["fstype"].startswith("fuse") and host_fds is not None:
        out["served_by"] = [{"pid": pid, "comm": comm(pid)} for pid in fuse_servers(entry, host_fds)]
    server = server_address(entry) if entry["fstype"].split(".")[0] in NETWORK_FSTYPES else None
    if server:
        out["server"] = server
    return out


def comm(pid):
    try:
        return procfs.comm(pid)
    except procfs.ProcfsError:
        return None
