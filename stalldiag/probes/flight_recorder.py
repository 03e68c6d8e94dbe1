"""The ranks' Flight Recorder (PyTorch's record of each process group's collectives), read where
the job armed a way out for it, once the window ended.  Nothing is injected into a rank:

  debug server   a rank that ran torch.distributed.debug.start_debug_server() has C++ threads
                 named pt_workerserver; the one in accept() names the listening socket's fd,
                 whose port /proc/PID/net/tcp{,6} gives: the only port asked (POST
                 /handler/fr_trace_json on localhost, TIMEOUT_S), never a guessed one (the job's
                 TCPStore and gloo's own listeners must never receive stray bytes).  A stopped
                 rank is not asked (it cannot answer).  When no worker answered, the frontend
                 (rank 0's child, port 25999 by default: GET /fr_trace_json) is asked instead.
  dump files     NCCL's dump on timeout, <TORCH_FR_DUMP_TEMP_FILE or
                 TORCH_NCCL_DEBUG_INFO_TEMP_FILE><rank>, read through the rank's own root
                 (procfs.root_read) from the path its environment names
  FIFO           <TORCH_NCCL_DEBUG_INFO_PIPE_FILE><rank>.pipe: one byte written (open non-blocking:
                 a FIFO nobody reads is left alone), then the dump file that NCCL's watchdog writes
                 is waited for (FIFO_WAIT_S) and copied at once (a later dump truncates it)

Every pickle is read by stalldiag/flight_recorder.py's plain-only unpickler.  The environment is
read through procfs.environ_subset (only the variables knowledge/flight_recorder.py names).

Capture key `collectives` (None when no process of the tree has a rank):
  {"armed": ["debug-server", "dump-file", "fifo", "frontend"], "ranks": [rank_record + pid, host],
   "unread": [{rank, pid, source, error}], "read_s": seconds, "next_time": [what to set]}
"""
import os
import socket
import stat as stat_mod
import time
from typing import Any, Optional

from ..records import typed_record
from .. import fds, procfs
from ..flight_recorder import MAX_DUMP_BYTES, DumpError, frontend_dumps, rank_record, read_record
from ..knowledge import flight_recorder as fr
from ..knowledge.ranks import RANK_VARS, first_var
from .base import Probe, Section

TIMEOUT_S = 2.0          # one HTTP request to a rank's worker server
FRONTEND_TIMEOUT_S = 5.0
FIFO_WAIT_S = 5.0        # for the dump a FIFO write asks for
ACCEPTS = ("accept", "accept4", "poll", "ppoll", "select", "pselect6")


@typed_record
class CollectivesSection(Section):
    collectives: Optional[Any] = None


class FlightRecorderProbe(Probe):
    name = "collectives"
    Section = CollectivesSection
    at_end = True

    def stop(self, ctx):
        ranks = []
        for record in ctx.sampler.records.values():
            if record.exited_at is not None:
                continue
            env = (record.static or {}).get("env") or {}
            rank = first_var(env, RANK_VARS)
            if rank is not None:
                ranks.append((record.pid, rank, env))
        if not ranks:
            return CollectivesSection([], None)
        ranks = one_per_rank(ranks)
        result = collect(sorted(ranks, key=lambda r: r[1]), tree=[r.pid for r in ctx.sampler.records.values()
                                                                  if r.exited_at is None])
        limitations = [("Flight Recorder of rank %s (pid %s) not read from %s: %s" % (
            u["rank"], u["pid"], u["source"], u["error"])) if u["rank"] is not None else
            "Flight Recorder not read from the debug frontend: %s" % u["error"] for u in result["unread"]]
        return CollectivesSection(limitations, result)


def one_per_rank(ranks):
    """[(pid, rank, env)] with one process per rank: a child that inherited its parent's RANK (the
    debug frontend rank 0 forks, a DataLoader worker) is not the rank."""
    pids = {pid for pid, _rank, _env in ranks}
    by_rank = {}
    for pid, rank, env in sorted(ranks):
        try:
            parent = procfs.stat(pid)["ppid"]
        except (procfs.ProcfsError, ValueError, IndexError):
            parent = None
        inherited = parent in pids and any(p == parent and r == rank for p, r, _e in ranks)
        if rank not in by_rank or not inherited and by_rank[rank][1]:
            by_rank[rank] = ((pid, rank, env), inherited)
    return sorted((entry for entry, _inherited in by_rank.values()), key=lambda e: e[1])


def collect(ranks, tree=(), host=None):
    """The capture's `collectives` of [(pid, rank, env)]."""
    t0 = time.monotonic()
    host = host or socket.gethostname()
    armed, records, unread = set(), {}, []
    server_ranks = []
    for pid, rank, env in ranks:
        port = worker_port(pid)
        if port is not None:
            armed.add("debug-server")
            server_ranks.append(rank)
            if port is False:
                unread.append(_unread(rank, pid, "debug-server", "its worker server's port was not found"))
            elif _state(pid) in ("T", "t"):
                unread.append(_unread(rank, pid, "debug-server", "not asked: the process is stopped (state T)"))
            else:
                try:
                    records[rank] = dict(read_record(_post(port, fr.FR_ROUTE, TIMEOUT_S), rank=rank,
                                                     source="debug-server", where="localhost:%d" % port), pid=pid)
                except (OSError, DumpError) as exc:
                    unread.append(_unread(rank, pid, "debug-server", _one_line(exc)))
        dump_path = _env_path(env, fr.DUMP_FILE_VARS)
        pipe_prefix = _env_path(env, fr.PIPE_VARS)
        if pipe_prefix:
            armed.add("fifo")
            got = _ask_fifo(pid, rank, pipe_prefix + "%d.pipe" % rank, (dump_path or fr.DEFAULT_DUMP_PREFIX) + str(rank))
            if isinstance(got, dict):
                records.setdefault(rank, dict(got, pid=pid))
            elif got:
                unread.append(_unread(rank, pid, "fifo", got))
        if dump_path or os.path.exists(procfs.root_path(pid, fr.DEFAULT_DUMP_PREFIX + str(rank))):
            armed.add("dump-file") if dump_path else None
            path = (dump_path or fr.DEFAULT_DUMP_PREFIX) + str(rank)
            got = _read_dump_file(pid, rank, path)
            if isinstance(got, dict):
                armed.add("dump-file")
                records.setdefault(rank, dict(got, pid=pid))
            elif got:
                unread.append(_unread(rank, pid, "dump-file", got))
    stopped = {u["rank"] for u in unread if u["error"].startswith("not asked")}
    if server_ranks and len(records) + len(stopped) < len(ranks):
        # a worker that could not be asked (its port not seen, an error): the frontend has every
        # rank's record (not asked for a stopped rank's: it would wait its fetch_timeout on it)
        port = frontend_port(tree)
        if port:
            armed.add("frontend")
            try:
                page = _request("GET", port, fr.FRONTEND_ROUTE, FRONTEND_TIMEOUT_S).decode("utf-8", "replace")
                pids = {rank: pid for pid, rank, _env in ranks}
                for rank, data in frontend_dumps(page):
                    if rank not in records and rank in pids:
                        records[rank] = dict(rank_record(data, rank=rank, source="frontend",
                                                         where="localhost:%d" % port), pid=pids[rank])
            except OSError as exc:
                unread.append(_unread(None, None, "frontend", _one_line(exc)))
    out = []
    for rank in sorted(records):
        rec = records[rank]
        rec["host"] = host
        out.append(rec)
    # a rank read another way is not "unread"
    unread = [u for u in unread if u["rank"] not in records]
    return {"armed": sorted(armed), "ranks": out, "unread": unread,
            "read_s": round(time.monotonic() - t0, 3), "next_time": [] if armed else list(fr.ARM_IT)}


def _unread(rank, pid, source, error):
    return {"rank": rank, "pid": pid, "source": source, "error": error}


def _one_line(exc):
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return "%s: %s" % (type(exc).__name__, text[:200]) if not isinstance(exc, DumpError) else text[:200]


def _state(pid):
    try:
        return procfs.stat(pid)["state"]
    except (procfs.ProcfsError, ValueError, IndexError):
        return None


def _env_path(env, names):
    for name in names:
        value = env.get(name)
        if value and value.startswith("/"):
            return value
    return None


# --- the debug server ------------------------------------------------------------------------

def worker_port(pid, tries=3):
    """The port of the debug server's worker on this process: None when it has no pt_workerserver
    thread, False when it has one but the listening socket was not seen (its accepting thread
    was busy at each look)."""
    try:
        tids = procfs.tids(pid)
    except procfs.ProcfsError:
        return None
    workers = []
    for tid in tids:
        try:
            if procfs.comm(pid, tid).strip() == fr.WORKER_THREAD:
                workers.append(tid)
        except procfs.ProcfsError:
            continue
    if not workers:
        return None
    listeners = _listening_ports(pid)
    for attempt in range(tries):
        for tid in workers:
            try:
                name, args = procfs.current_syscall(pid, tid)
            except procfs.ProcfsError:
                continue
            if name in ("accept", "accept4") and args:
                port = listeners.get(args[0])
                if port:
                    return port
        time.sleep(0.05)
    return False


def _listening_ports(pid):
    """{fd: port} of the process's listening TCP sockets."""
    targets = fds.fd_targets(pid) or {}
    inodes = {fds.socket_inode(t): fd for fd, t in targets.items() if t.startswith("socket:[")}
    ports = {}
    for proto in ("tcp", "tcp6"):
        try:
            text = procfs.read(pid, "net/" + proto)
        except procfs.ProcfsError:
            continue
        for inode, sock in fds.inet_sockets(text, proto).items():
            if sock["state"] == "LISTEN" and inode in inodes:
                try:
                    ports[inodes[inode]] = int(sock["local"].rsplit(":", 1)[1])
                except (ValueError, IndexError):
                    pass
    return ports


def frontend_port(tree):
    """The debug frontend's port: a process of the tree listening on its port (25999 by default)
    that is not a rank's worker (its listening socket is its own, not inherited from the rank)."""
    for pid in tree:
        if fr.DEFAULT_FRONTEND_PORT in _listening_ports(pid).values():
            return fr.DEFAULT_FRONTEND_PORT
    return None


class HttpError(OSError):
    """An answer that is not the record (a status other than 200, a broken reply)."""


def _request(method, port, path, timeout):
    import http.client   # (imported only where a job armed a debug server: 14 ms at every start otherwise)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request(method, path, headers={"Content-Length": "0"} if method == "POST" else {})
        resp = conn.getresponse()
        body = resp.read(MAX_DUMP_BYTES + 1)
        if resp.status != 200:
            raise HttpError("HTTP %d %s" % (resp.status, body[:100].decode("utf-8", "replace")))
        return body
    except http.client.HTTPException as exc:
        raise HttpError(str(exc) or type(exc).__name__) from None
    finally:
        conn.close()


def _post(port, path, timeout):
    return _request("POST", port, path, timeout)


# --- NCCL's dump files and FIFO --------------------------------------------------------------

def _read_dump_file(pid, rank, path, not_before=None):
    """The record of the dump file at path (as the rank sees it), or a one-line reason, or None
    when there is none."""
    try:
        st = procfs.root_stat(pid, path)
    except procfs.ProcfsError:
        return None
    if not stat_mod.S_ISREG(st.st_mode):
        return "%s is not a regular file" % path
    if not_before is not None and st.st_mtime < not_before:
        return None
    try:
        raw = procfs.root_read(pid, path, MAX_DUMP_BYTES + 1)
    except procfs.ProcfsError as exc:
        return "%s: %s" % (path, exc)
    try:
        rec = read_record(raw, rank=rank, source="dump-file", where=path)
    except DumpError as exc:
        return "%s: %s" % (path, exc)
    rec["age_s"] = round(max(0.0, time.time() - st.st_mtime), 1)
    rec["bytes"] = len(raw)
    return rec


def _ask_fifo(pid, rank, pipe, dump):
    """Write one byte to the rank's dump FIFO (non-blocking: nobody reading it, nothing done), wait
    for the dump it asks for and copy it at once; the record, a one-line reason, or None (no FIFO)."""
    where = procfs.root_path(pid, pipe)
    try:
        st = os.stat(where)
    except OSError:
        return None
    if not stat_mod.S_ISFIFO(st.st_mode):
        return "%s is not a FIFO" % pipe
    before = time.time()
    try:
        old = os.stat(procfs.root_path(pid, dump)).st_mtime
    except OSError:
        old = None
    try:
        fd = os.open(where, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        return "%s: nobody reads it (%s)" % (pipe, exc.strerror)
    try:
        os.write(fd, b"1\n")
    except OSError as exc:
        return "%s: %s" % (pipe, exc.strerror)
    finally:
        os.close(fd)
    deadline = time.monotonic() + FIFO_WAIT_S
    last_size = None
    while time.monotonic() < deadline:
        time.sleep(0.1)
        try:
            now = os.stat(procfs.root_path(pid, dump))
        except OSError:
            continue
        if (old is None or now.st_mtime > old) and now.st_size and now.st_size == last_size:
            got = _read_dump_file(pid, rank, dump)
            if isinstance(got, dict):
                got["source"] = "fifo"
                got["asked_s"] = round(time.time() - before, 2)
            return got
        last_size = now.st_size
    return "%s: no dump in %s within %.0f s" % (pipe, dump, FIFO_WAIT_S)
