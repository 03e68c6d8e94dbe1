"""Say what a file descriptor is: a file, a pipe, a TCP peer, a unix socket.

Socket inodes are looked up in the target's own network namespace
(/proc/PID/net/...), read once per inode and cached, so a thread stuck in
recv() for the whole window costs one lookup.
"""
import os
import socket
import stat as stat_mod
import struct
import time

from . import procfs


def classify_target(target):
    """Kind of an fd from its /proc/PID/fd link text."""
    if target is None:
        return None
    if target.startswith("pipe:"):
        return "pipe"
    if target.startswith("socket:"):
        return "socket"
    if target.startswith("anon_inode:"):
        if "eventpoll" in target:
            return "epoll"
        if "eventfd" in target:
            return "eventfd"
        return "anon"
    if target.startswith("/dev/nvidia"):
        return "gpu"
    if target.startswith(("/dev/pts/", "/dev/tty", "/dev/console")):
        return "tty"
    if target == "/dev/null":
        return "null"
    if target.startswith("/dev/"):
        return "char"
    if target.startswith("/"):
        return "file"
    return "other"


def socket_inode(target):
    return int(target[len("socket:["):-1])


def _hex_addr(text, family):
    host, port = text.split(":")
    raw = bytes.fromhex(host)
    if family == socket.AF_INET:
        addr = socket.inet_ntop(family, struct.pack("<I", struct.unpack(">I", raw)[0]))
    else:
        words = struct.unpack(">4I", raw)
        addr = socket.inet_ntop(family, struct.pack("<4I", *words))
    return "%s:%d" % (addr, int(port, 16))


TCP_STATES = {
    "01": "ESTABLISHED", "02": "SYN_SENT", "03": "SYN_RECV", "04": "FIN_WAIT1",
    "05": "FIN_WAIT2", "06": "TIME_WAIT", "07": "CLOSE", "08": "CLOSE_WAIT",
    "09": "LAST_ACK", "0A": "LISTEN", "0B": "CLOSING",
}


def inet_sockets(text, proto):
    """{inode: {"proto", "local", "remote", "state"}} of the text of /proc/PID/net/PROTO (tcp, tcp6,
    udp, udp6)."""
    family = socket.AF_INET6 if proto.endswith("6") else socket.AF_INET
    found = {}
    for line in text.splitlines()[1:]:
        parts = line.split()
        if len(parts) < 10:
            continue
        found[int(parts[9])] = {
            "proto": proto.rstrip("6"),
            "local": _hex_addr(parts[1], family),
            "remote": _hex_addr(parts[2], family),
            "state": TCP_STATES.get(parts[3], parts[3]) if proto.startswith("tcp") else None,
        }
        if proto.startswith("tcp"):
            # bytes queued at this end: sent and not yet acknowledged, received and not yet read
            # (a listening socket's rx is its accept backlog)
            tx, _, rx = parts[4].partition(":")
            try:
                found[int(parts[9])].update(tx_queue=int(tx, 16), rx_queue=int(rx, 16))
            except ValueError:
                pass
    return found


def _inet_tables(pid, protos):
    """(inode, description) of every socket of /proc/PID/net/PROTO for each of protos, in that
    process's network namespace; a table that cannot be read is skipped."""
    for proto in protos:
        try:
            text = procfs.read(pid, "net/" + proto)
        except procfs.ProcfsError:
            continue
        yield from inet_sockets(text, proto).items()


class SocketTable:
    """Inode -> socket description for the namespaces of the processes we watch."""

    def __init__(self):
        self._by_inode = {}
        self._loaded_for = set()

    def describe(self, pid, inode):
        if inode not in self._by_inode and pid not in self._loaded_for:
            self._load(pid)
        return self._by_inode.get(inode, {"proto": "socket"})

    def refresh(self):
        self._loaded_for.clear()

    def tcp_peers(self):
        """{inode: peer inode} for established TCP connections whose two ends are both in the
        tables read so far (a local server, a store, another rank): the end whose local and
        remote addresses are this end's remote and local.  The tables are read only to describe
        a socket a thread waits on, so this costs nothing more."""
        ends = {(s["local"], s["remote"]): inode for inode, s in self._by_inode.items()
                if s.get("proto") == "tcp" and s.get("state") == "ESTABLISHED" and inode}
        peers = {inode: ends[(remote, local)] for (local, remote), inode in ends.items() if (remote, local) in ends}
        # A connected UDP socket (a client that connect()ed to a local service) and the socket
        # bound to the address it sends to: the service that is to answer it.
        bound = {s["local"]: inode for inode, s in self._by_inode.items() if s.get("proto") == "udp" and inode}
        for inode, s in self._by_inode.items():
            remote = s.get("remote") or ""
            if s.get("proto") == "udp" and inode and not remote.endswith(":0") and remote in bound:
                peers.setdefault(inode, bound[remote])
        return peers

    def queues(self, pids, inodes):
        """{inode: [bytes received and not read, bytes sent and not acknowledged]} of the TCP
        sockets among inodes, read again now from the tables of pids' network namespaces (the
        queues of the window's end, not of when a socket was first described)."""
        wanted = set(inodes)
        found = {}
        for pid in pids:
            for inode, entry in _inet_tables(pid, ("tcp", "tcp6")):
                if inode in wanted and "rx_queue" in entry:
                    found[inode] = [entry["rx_queue"], entry["tx_queue"]]
            if wanted <= set(found):
                break
        return found

    def listener(self, address):
        """Inode of the listening TCP socket that takes connections to address ("ip:port"),
        in the tables read so far, or None (0 if it is held by no fd)."""
        host, _, port = address.rpartition(":")
        for inode, s in self._by_inode.items():
            if s.get("proto") == "tcp" and s.get("state") == "LISTEN":
                lhost, _, lport = s["local"].rpartition(":")
                if lport == port and lhost in (host, "0.0.0.0", "::"):
                    return inode
        return None

    def has_address(self, host):
        """Is host an address of a socket in the tables read so far (one of this host's)?"""
        return any(s.get("local", "").rpartition(":")[0] == host for s in self._by_inode.values())

    def _load(self, pid):
        self._loaded_for.add(pid)
        for inode, entry in _inet_tables(pid, ("tcp", "tcp6", "udp", "udp6")):
            self._by_inode[inode] = entry
        try:
            lines = procfs.read(pid, "net/unix").splitlines()[1:]
        except procfs.ProcfsError:
            lines = []
        for line in lines:
            parts = line.split()
            if len(parts) < 7:
                continue
            self._by_inode[int(parts[6])] = {
                "proto": "unix",
                "path": parts[7] if len(parts) > 7 else None,
            }


def describe_fd(pid, fd, sockets):
    """A small dict: fd, target text, kind, and for sockets proto/peer."""
    target = procfs.fd_target(pid, fd)
    kind = classify_target(target)
    info = {"fd": fd, "target": target, "kind": kind}
    if kind == "socket":
        sock = sockets.describe(pid, socket_inode(target))
        info.update({k: v for k, v in sock.items() if v is not None})
        if sock.get("proto") == "unix":
            info["kind"] = "unix"
    elif kind == "file":
        info.update(_file_position(pid, fd, target))
    return info


def _file_position(pid, fd, path):
    """Offset and size of a regular file, so a report can say "at 62%"."""
    facts = file_facts(pid, fd, "file")
    out = {k: facts[k] for k in ("pos", "size") if k in facts}
    if facts.get("kind") != "file":
        out["kind"] = facts["kind"]
    return out


def file_facts(pid, fd, kind):
    """Offset, open mode, size and mtime of an fd, and its kind refined by stat (fifo, block)."""
    facts = {"kind": kind}
    try:
        info = procfs.fdinfo(pid, fd)
        facts["pos"] = int(info.get("pos", 0))
        flags = int(info.get("flags", "0"), 8)
        facts["mode"] = {0: "r", O_WRONLY: "w", O_RDWR: "rw"}.get(flags & O_ACCMODE, "?") + \
            ("a" if flags & O_APPEND else "")
    except (procfs.ProcfsError, ValueError):
        pass
    try:
        st = procfs.fd_stat(pid, fd)
    except procfs.ProcfsError:
        return facts
    if stat_mod.S_ISREG(st.st_mode):
        facts["size"] = st.st_size
        facts["mtime"] = st.st_mtime
    elif stat_mod.S_ISFIFO(st.st_mode) and kind == "file":
        facts["kind"] = "fifo"
    elif stat_mod.S_ISBLK(st.st_mode):
        facts["kind"] = "block"
    return facts


# --- unix socket peers ---------------------------------------------------------
# /proc/net/unix does not say which socket is connected to which; the kernel's
# sock_diag netlink interface does (what `ss -x` uses).  One dump per capture.

NETLINK_SOCK_DIAG = 4
SOCK_DIAG_BY_FAMILY = 20
NLM_F_REQUEST, NLM_F_DUMP = 0x1, 0x300
NLMSG_ERROR, NLMSG_DONE = 2, 3
UDIAG_SHOW_PEER = 0x4
UDIAG_SHOW_RQLEN = 0x10
UNIX_DIAG_PEER = 2
UNIX_DIAG_RQLEN = 4


def unix_peers(queues=None):
    """{inode: peer inode} for every connected unix socket in our network namespace; with a dict
    as queues, also {inode: [bytes in its receive queue, bytes in its send queue]} into it
    (sock_diag's UNIX_DIAG_RQLEN; for a listener, its backlog and the backlog's limit)."""
    peers = {}
    try:
        sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_SOCK_DIAG)
    except (OSError, AttributeError):
        return peers
    with sock:
        request = struct.pack("=BBHIIIII", socket.AF_UNIX, 0, 0, 0xFFFFFFFF, 0,
                              UDIAG_SHOW_PEER | (UDIAG_SHOW_RQLEN if queues is not None else 0), 0, 0)
        header = struct.pack("=IHHII", 16 + len(request), SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST | NLM_F_DUMP, 1, 0)
        try:
            sock.send(header + request)
        except OSError:
            return peers
        sock.settimeout(2.0)
        while True:
            try:
                data = sock.recv(65536)
            except OSError:
                return peers
            offset = 0
            while offset + 16 <= len(data):
                length, msg_type = struct.unpack_from("=IH", data, offset)
                if msg_type in (NLMSG_DONE, NLMSG_ERROR) or length < 16:
                    return peers
                body = offset + 16
                inode = struct.unpack_from("=I", data, body + 4)[0]
                attr = body + 16
                end = offset + length
                while attr + 4 <= end:
                    attr_len, attr_type = struct.unpack_from("=HH", data, attr)
                    if attr_len < 4:
                        break
                    if attr_type == UNIX_DIAG_PEER and attr_len >= 8:
                        peers[inode] = struct.unpack_from("=I", data, attr + 4)[0]
                    elif attr_type == UNIX_DIAG_RQLEN and attr_len >= 12 and queues is not None:
                        queues[inode] = list(struct.unpack_from("=II", data, attr + 4))
                    attr += (attr_len + 3) & ~3
                offset += (length + 3) & ~3
            if not data:
                return peers


def fd_targets(pid):
    """{fd: link text} of every open fd of a process, or None if its fd table cannot be read."""
    try:
        fd_list = procfs.list_fds(pid)
    except procfs.ProcfsError:
        return None
    return _links(pid, fd_list)


def _links(pid, fd_list):
    targets = {}
    for fd in fd_list:
        try:
            target = procfs.fd_target(pid, fd)
        except procfs.ProcfsError:
            continue
        if target:
            targets[fd] = target
    return targets


def host_pids(first=(), skip=()):
    """Pids on the host (our pid namespace), ourselves and `skip` excepted, `first` before the
    rest: a pass cut short still covers them."""
    try:
        rest = sorted(procfs.pids())
    except procfs.ProcfsError:
        return []
    skip = set(skip) | {os.getpid()}
    first = [p for p in dict.fromkeys(first) if p not in skip]
    early = set(first)
    return first + [p for p in rest if p not in early and p not in skip]


def host_fd_tables(skip=(), limit=4096, first=(), deadline=None):
    """(pid, {fd: link text} or None if unreadable, denied) for the host_pids(), stopping at
    `limit` processes or once time.monotonic() passes `deadline`."""
    for count, pid in enumerate(host_pids(first, skip)):
        if count >= limit or deadline is not None and time.monotonic() > deadline:
            return
        try:
            fd_list = procfs.list_fds(pid)
        except procfs.AccessDenied:
            yield pid, None, True
            continue
        except procfs.ProcfsError:
            continue   # exited
        yield pid, _links(pid, fd_list), False


def host_holders(target, confirm=None, skip=(), limit=4096):
    """Pids on the host (our pid namespace) with an fd whose link text is target
    ("pipe:[ino]", a path); confirm(pid, fd) may check more (a path's dev:inode).
    One pass over /proc/*/fd: only used for a wait that leads outside the tree."""
    found = []
    for pid, links, _denied in host_fd_tables(skip, limit):
        for fd, link in (links or {}).items():
            if link == target and (confirm is None or confirm(pid, fd)):
                found.append(pid)
                break
    return found


class HostFds:
    """Every fd of every process on the host, read in one pass over /proc/*/fd when first
    asked for and kept for the window: the holders of many objects (pipes, sockets, FIFOs,
    /dev/fuse) then cost one lookup each.  Bounded in time (a host has thousands of
    processes): `complete` says whether the pass read them all."""

    def __init__(self, budget_s=0.3, limit=4096):
        self.budget_s = budget_s
        self.limit = limit
        self.links = None          # link text -> [(pid, fd), ...]
        self.denied = []           # pids whose fd tables could not be read
        self.scanned = self.total = 0
        self.complete = True
        self.elapsed_s = None

    def scan(self, first=()):
        """The pass itself (once): `first` (the inspected tree) are read before the rest."""
        if self.links is not None:
            return self
        started = time.monotonic()
        deadline = started + self.budget_s
        self.links = {}
        self.total = len(host_pids())
        for pid, links, denied in host_fd_tables(limit=self.limit, first=first, deadline=deadline):
            self.scanned += 1
            if denied:
                self.denied.append(pid)
            for fd, link in (links or {}).items():
                self.links.setdefault(link, []).append((pid, fd))
        self.elapsed_s = time.monotonic() - started
        self.complete = time.monotonic() <= deadline and self.scanned < self.limit
        return self

    def holders(self, target):
        """[(pid, fd)] holding target, as the pass found them."""
        return list((self.links or {}).get(target, ()))

    def add(self, pid):
        """Read one more process's fds (one the pass did not cover, or newer than it)."""
        for fd, link in (fd_targets(pid) or {}).items():
            pairs = self.links.setdefault(link, [])
            if (pid, fd) not in pairs:
                pairs.append((pid, fd))


def access_mode(flags):
    """"read", "write" or "rw" from an fdinfo flags field (octal text)."""
    return {0: "read", O_WRONLY: "write", O_RDWR: "rw"}.get(int(flags, 8) & O_ACCMODE, "rw")


def endpoints(targets):
    """{"pipe:[ino]", "socket:[ino]" or "/dev/nvidiaN": [fd, ...]} from fd_targets(): what
    connects a process to others, and whether it holds a GPU context."""
    found = {}
    for fd, target in (targets or {}).items():
        if target.startswith(("pipe:", "socket:", "/dev/nvidia")):
            found.setdefault(target, []).append(fd)
    return found


MAX_FILES = 512
O_ACCMODE, O_WRONLY, O_RDWR, O_APPEND = 0o3, 0o1, 0o2, 0o2000


def file_snapshot(pid, targets):
    """stdin/stdout/stderr and the regular files a process holds: offset, size, mtime.

    Two snapshots (start and end of the window) tell which files advanced,
    which grew (checkpoints, logs) and whether stdout received anything.
    `targets` is fd_targets(pid).  Returns a list of dicts, at most MAX_FILES files.
    """
    if targets is None:
        return None
    out = []
    for fd, target in sorted(targets.items()):
        kind = classify_target(target)
        if fd > 2 and kind != "file":
            continue
        entry = {"fd": fd, "target": target}
        entry.update(file_facts(pid, fd, kind))
        out.append(entry)
        if len(out) >= MAX_FILES:
            break
    return out


MAX_DIRS, MAX_ENTRIES = 16, 2000


def recently_written(pid, argv, snapshot, since, cache=None):
    """Files modified since `since` (epoch) in the places a run writes to: its cwd, the
    directories named on its command line, and those of the files it holds open.

    Checkpoints are usually written to a temporary name and renamed, so they are
    never seen open; their directory is.  `cache` (a dict shared over one snapshot
    of many processes) scans a directory once for all processes that see the same
    root: 160 workers in one cwd cost one scan, not 160.
    """
    try:
        cwd = procfs.cwd(pid)
        root_st = procfs.root_stat(pid, "")
    except procfs.ProcfsError:
        return []
    dirs = [cwd]
    for arg in argv or []:
        for part in arg.split("=")[-1:]:
            if "/" in part or part.startswith("."):
                path = part if part.startswith("/") else os.path.join(cwd, part)
                dirs.append(path if procfs.root_isdir(pid, path) else os.path.dirname(path))
    for entry in snapshot or []:
        if entry.get("kind") == "file" and entry.get("target", "").startswith("/"):
            dirs.append(os.path.dirname(entry["target"]))
    found, seen = [], set()
    for directory in dirs:
        directory = os.path.normpath(directory)
        if directory in seen or len(seen) >= MAX_DIRS or directory.startswith(("/proc", "/sys", "/dev")):
            continue
        seen.add(directory)
        key = (root_st.st_dev, root_st.st_ino, directory)
        if cache is not None and key in cache:
            found.extend(cache[key])
            continue
        start = len(found)
        try:
            with procfs.root_scandir(pid, directory) as entries:
                for i, entry in enumerate(entries):
                    if i >= MAX_ENTRIES:
                        break
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    if stat_mod.S_ISREG(st.st_mode) and st.st_mtime >= since:
                        found.append({"path": os.path.join(directory, entry.name), "size": st.st_size,
                                      "mtime": st.st_mtime})
        except (OSError, procfs.ProcfsError):
            continue
        if cache is not None:
            cache[key] = [dict(f) for f in found[start:]]
    return found[:100]
