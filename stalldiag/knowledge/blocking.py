"""Every function of the Python standard library (3.8-3.13) and of PyTorch that can block or
spin: what it waits on, and who ends the wait.

One row (`Blocking`) per function, named as its source defines it: `module` is the import path
(`multiprocessing.queues`, `importlib._bootstrap` for the frozen module, `torch.utils.data.dataloader`),
`function` the qualified name (`Class.method`, `function`, `outer.<locals>.inner`).  `kind` is one of the
thread kinds of `knowledge/frames.py` and `diagnosis/kinds.py` (no new kind was needed; `file-wait` and
`launcher-wait` are frames.py's).  `spins` marks a wait that wakes up by itself in a loop (a sleep or a
timed wait retried: the thread shows brief CPU bursts and is never asleep for the whole window) or
busy-polls; `background` a library thread's (or helper process's) own loop.  `versions` is the
first and last Python whose source defines the function (None for PyTorch rows: the installed PyTorch
is the reference).

The table is held against the sources by `tools/enumerate_blocking.py` (the rule is its docstring) and
`tests/unit/test_blocking_table.py`: every function the enumeration lists for Python 3.8-3.13 and for
the installed PyTorch is a row here or in NOT_BLOCKING with its reason, every row exists in the
sources of the versions it names and in no other.

Frame names (py-spy): Python 3.11+ reports `co_qualname` (`Condition.wait`, `_pin_memory_loop.<locals>.
do_one_step`), 3.8-3.10 only `co_name` (`wait`, `do_one_step`).  A bare name that several rows of one
file share (threading.py's `wait`: Condition.wait, Event.wait, Barrier.wait; `acquire`; `run`; `join`;
`select` in selectors.py; `__enter__`; ...) is told apart by the frame's line against each
candidate's line span in that Python's source (`_LINES`, generated from the sources of 3.8-3.13 and
of the installed PyTorch; the Python version is read from the path, `.../python3.10/threading.py`); a
line outside every known span (another patch release) takes the nearest span, and without a line the
first candidate in table order.  Frozen modules have no path: `<frozen importlib._bootstrap>` always,
and from 3.11 on `<frozen os>` too (os, like runpy, is frozen into the interpreter: its frames carry
no file path and no version).
"""
import re
from functools import lru_cache

from ..records import typed_record
from .frames import canonical_file

ALL = ((3, 8), (3, 13))
PYTHONS = ((3, 8), (3, 9), (3, 10), (3, 11), (3, 12), (3, 13))


def _v(first, last=13):
    return ((3, first), (3, last))


@typed_record(frozen=True)
class Blocking:
    module: str
    function: str
    kind: str
    waits_on: str
    ended_by: str
    spins: bool = False
    background: bool = False
    versions: tuple = ALL       # ((3, first), (3, last)); None: a PyTorch row
    note: str = ""

    @property
    def key(self):
        return (self.module, self.function)

    @property
    def bare(self):
        """The name py-spy gives the frame on Python 3.8-3.10 (co_name)."""
        return self.function.rsplit(".", 1)[-1]

    @property
    def framework(self):
        return "torch" if self.module.split(".")[0] == "torch" else "python"

    def in_version(self, version):
        if self.versions is None or version is None:
            return True
        return self.versions[0] <= tuple(version[:2]) <= self.versions[1]


@typed_record(frozen=True)
class NotBlocking:
    """A function the enumeration lists that does not block (or not on Linux), and why.
    function "*" covers every function of the module whose primitive calls are all of the
    classes in `only` (the enumeration's classes: socket, os-io, ssl, windows, ...)."""
    module: str
    function: str
    reason: str
    only: tuple = ()

    def covers(self, module, function, classes=()):
        if module != self.module:
            return False
        if self.function == "*":
            return bool(classes) and set(classes) <= set(self.only)
        return function == self.function and (not self.only or set(classes) <= set(self.only))


_B = Blocking
_BRIEF = "the thread holding it leaving its critical section (it is held for a few statements only)"


def _lock(module, function, lock, ended_by=_BRIEF, versions=ALL, note="", background=False):
    return Blocking(module, function, "lock", lock, ended_by, versions=versions, note=note, background=background)


# --- the locks many rows share ---------------------------------------------------------------
_LIMBO = "threading's _active_limbo_lock (guards the registry of started and starting threads)"
_SHUTDOWN_LOCKS = "threading's _shutdown_locks_lock (guards the set of non-daemon threads' tstate locks)"
_LOGGING = "logging's module lock, logging._lock (an RLock guarding loggers, handlers and levels)"
_LOGGING_END = ("the thread holding it leaving its critical section (configuration, getLogger(), "
                "adding a handler); the at-fork hooks re-create it in a forked child, so os.fork() "
                "cannot leave it held")
_HANDLER = "the handler's own lock, Handler.lock (an RLock taken around each emit, flush and close)"
_HANDLER_END = ("the thread inside this handler's emit()/flush() finishing, which may itself be "
                "stuck writing to a full pipe, a dead socket or a slow disk")
_QMUTEX = "the queue's mutex (queue.Queue.mutex, the lock under its not_empty/not_full/all_tasks_done conditions)"
_FUTURE_COND = "the future's condition lock (Future._condition, held briefly to read or change its state)"
_POOL_SHUTDOWN = "the executor's _shutdown_lock (held briefly by submit(), shutdown() and the manager thread)"
_MANAGER_MUTEX = "the manager server's mutex (Server.mutex, guarding its table of shared objects)"

_THREAD_DONE = "the thread returning from run() (or raising out of it)"
_CHILD_EXIT = "the child process exiting (or being killed)"


_STDLIB_THREADS_AND_IO = (
    # ============================ threading ======================================================
    _B("threading", "Condition.wait", "condition",
       "a waiter lock allocated for this call, which notify() releases",
       "notify()/notify_all() from another thread holding the condition's lock; the timeout",
       note="releases the condition's lock while waiting and re-takes it after (Condition._acquire_restore); "
            "Event.wait, Barrier.wait, Semaphore.acquire, queue.Queue.get/put/join and "
            "concurrent.futures.Future.result all end up here, so it is the innermost frame of all of them"),
    _B("threading", "Condition.wait_for", "condition",
       "the predicate to become true, re-checked after every notify",
       "a notify() after another thread made the predicate true; the timeout"),
    _B("threading", "Condition._acquire_restore", "lock",
       "the condition's own lock, re-taken after a wait() was notified or timed out",
       "the thread now holding the condition's lock releasing it (leaving its with-block or waiting itself)"),
    _B("threading", "Event.wait", "event", "the event's flag to be set",
       "Event.set() from another thread; the timeout",
       note="waits in Condition.wait of the event's internal condition (the innermost frame); at "
            "`with self._cond` only when set()/clear()/is_set() of another thread holds it"),
    _lock("threading", "Event.set", "the event's internal condition lock (held briefly by wait, set, clear)"),
    _lock("threading", "Event.clear", "the event's internal condition lock (held briefly by wait, set, clear)"),
    _B("threading", "Semaphore.acquire", "semaphore", "the semaphore's counter to be above zero",
       "Semaphore.release() from another thread; the timeout",
       note="BoundedSemaphore.acquire is this function (inherited); a threading.Lock or RLock has no Python "
            "frame (C): the caller is the innermost frame"),
    _lock("threading", "Semaphore.release", "the semaphore's internal condition lock"),
    _lock("threading", "BoundedSemaphore.release", "the semaphore's internal condition lock"),
    _B("threading", "Barrier.wait", "condition",
       "the other parties of the barrier: every party waits until the last one calls wait()",
       "the last party arriving; abort() or reset(); the timeout (which breaks the barrier for all)",
       note="multiprocessing's Barrier is this class over process-shared locks (parties in other processes)"),
    _B("threading", "Barrier._enter", "condition",
       "the previous round of the barrier to finish draining or resetting",
       "the parties of the previous round leaving wait()"),
    _B("threading", "Barrier._wait", "condition", "the remaining parties to arrive",
       "the last party's wait(); abort(); reset(); the timeout"),
    _lock("threading", "Barrier.abort", "the barrier's condition lock"),
    _lock("threading", "Barrier.reset", "the barrier's condition lock"),
    _B("threading", "Thread.start", "event", "the new thread to signal that it runs (the _started event)",
       "the new thread reaching _bootstrap_inner; an OS refusal raises instead",
       note="also takes _active_limbo_lock briefly"),
    _B("threading", "Thread.join", "thread-join", "the joined thread to finish", _THREAD_DONE + "; the timeout",
       note="3.8-3.12: waits in Thread._wait_for_tstate_lock (innermost frame); 3.13: in the C "
            "_ThreadHandle.join, so Thread.join itself is the innermost Python frame"),
    _B("threading", "Thread._wait_for_tstate_lock", "thread-join",
       "the thread's tstate lock, which the interpreter releases when the thread's C state is deleted",
       _THREAD_DONE + "; the timeout", versions=_v(8, 12),
       note="gone in 3.13 (thread handles); a join(timeout) in a caller's loop wakes every timeout"),
    _lock("threading", "Thread._set_tstate_lock", _SHUTDOWN_LOCKS, versions=_v(8, 12),
          note="acquires the new thread's own fresh tstate lock first (never waits)"),
    _lock("threading", "Thread._stop", _SHUTDOWN_LOCKS, versions=_v(8, 12)),
    _lock("threading", "Thread._bootstrap_inner", _LIMBO,
          note="on every thread's stack: only a wait when it is the innermost frame"),
    _lock("threading", "Thread._delete", _LIMBO),
    _lock("threading", "_DummyThread.__init__", _LIMBO),
    _lock("threading", "_MainThread.__init__", _LIMBO),
    _lock("threading", "_DeleteDummyThreadOnDel.__del__", _LIMBO, versions=_v(13)),
    _lock("threading", "_after_fork", _LIMBO,
          ended_by="nobody else runs in the freshly forked child: it re-creates the lock first"),
    _lock("threading", "active_count", _LIMBO),
    _lock("threading", "enumerate", _LIMBO),
    _B("threading", "_RLock.acquire", "lock", "the pure-Python RLock's inner lock",
       "its owner's last release(); the timeout",
       note="only threading._PyRLock; threading.RLock is the C _thread.RLock and has no Python frame"),
    _B("threading", "_RLock._acquire_restore", "lock", "the pure-Python RLock's inner lock, after a Condition wait",
       "its owner releasing it"),
    _B("threading", "Timer.run", "sleep", "the timer's interval (its `finished` event with a timeout)",
       "the interval elapsing (then it calls the function); Timer.cancel()", background=True),
    _B("threading", "_shutdown", "thread-join",
       "every non-daemon thread to finish, at interpreter exit (after the threading atexit callbacks, "
       "e.g. concurrent.futures joining its workers)",
       "those threads returning from run(); nothing else: a non-daemon thread that never ends hangs the exit",
       note="3.8-3.12 acquires each thread's tstate lock in a loop; 3.13 calls the C _thread._shutdown()"),

    # ============================ queue ==========================================================
    _B("queue", "Queue.get", "queue-get", "an item on the queue (its not_empty condition)",
       "put() from another thread; shutdown() (3.13); the timeout",
       note="the innermost frame is Condition.wait; at `with self.not_empty` the queue's mutex is contended"),
    _B("queue", "Queue.put", "queue-put", "room on a full bounded queue (its not_full condition)",
       "get() from another thread; shutdown() (3.13); the timeout"),
    _B("queue", "Queue.join", "condition",
       "task_done() for every item ever put (its all_tasks_done condition)",
       "consumers calling task_done() once per get(); a missed task_done() never ends it"),
    _lock("queue", "Queue.task_done", _QMUTEX),
    _lock("queue", "Queue.qsize", _QMUTEX),
    _lock("queue", "Queue.empty", _QMUTEX),
    _lock("queue", "Queue.full", _QMUTEX),
    _lock("queue", "Queue.shutdown", _QMUTEX, versions=_v(13)),
    _B("queue", "_PySimpleQueue.get", "queue-get", "an item (a semaphore counting items)",
       "put() from another thread; the timeout",
       note="only the pure-Python fallback: queue.SimpleQueue is the C _queue.SimpleQueue, whose get() "
            "has no Python frame (the caller is the innermost frame)"),

    # ============================ subprocess / os ================================================
    _B("subprocess", "Popen.wait", "child", "the child to exit", _CHILD_EXIT + "; the timeout",
       note="the innermost frame is Popen._wait/_try_wait"),
    _B("subprocess", "Popen._wait", "child", "the child to exit (waitpid)", _CHILD_EXIT + "; the timeout",
       spins=True,
       note="with a timeout it polls waitpid(WNOHANG) with sleeps growing to 50 ms (spins); without one "
            "it blocks in Popen._try_wait; also takes the Popen's _waitpid_lock"),
    _B("subprocess", "Popen._try_wait", "child", "the child to exit (os.waitpid)", _CHILD_EXIT),
    _B("subprocess", "Popen.communicate", "child",
       "the child's output on its one pipe to end (read to EOF), then its exit",
       "the child closing its stdout/stderr (exiting); the timeout",
       note="with more than one pipe or a timeout it waits in Popen._communicate"),
    _B("subprocess", "Popen._communicate", "child",
       "the child's stdout/stderr output and room in its stdin pipe (a selector over the pipes), then its exit",
       "the child writing, reading its stdin and closing its pipes; the timeout",
       note="POSIX: a selector in the calling thread; Windows: reader threads (Popen._readerthread). A "
            "grandchild that inherited the pipes keeps them open after the child exits"),
    _B("subprocess", "Popen._stdin_write", "child", "room in the child's stdin pipe",
       "the child reading its stdin; its exit (BrokenPipeError is swallowed)"),
    _B("subprocess", "Popen._execute_child", "child",
       "the new child's exec: reads the error pipe until exec closes it (close-on-exec)",
       "the child's exec() succeeding or reporting its failure; a preexec_fn that hangs never ends it"),
    _B("subprocess", "Popen.__exit__", "child", "the child to exit (wait())", _CHILD_EXIT),
    _B("subprocess", "run", "child", "the child to exit (communicate(), then wait())",
       _CHILD_EXIT + "; the timeout (kills it)"),
    _B("subprocess", "call", "child", "the child to exit", _CHILD_EXIT + "; the timeout"),
    _B("os", "_wrap_close.close", "child", "the shell started by os.popen() to exit",
       "the command exiting",
       note="3.11+: the os module is frozen, so this frame's file is `<frozen os>`"),

    # ============================ sockets, selectors, TLS ========================================
    _B("socket", "socket.accept", "network", "a connection on the listening socket",
       "a client connecting; the socket's timeout"),
    _B("socket", "create_connection", "network", "DNS resolution, then each address's TCP connect",
       "the server accepting (or refusing); the timeout per address; the resolver's own timeouts"),
    _B("socket", "getaddrinfo", "network", "DNS resolution (the C library's resolver)",
       "the DNS server answering; resolv.conf's timeout and attempts (no Python timeout applies)"),
    _B("socket", "SocketIO.readinto", "network", "data from the peer (socket.makefile() reads)",
       "the peer sending or closing; the socket's timeout"),
    _B("socket", "SocketIO.write", "network", "room in the socket's send buffer",
       "the peer reading; the socket's timeout"),
    _B("socket", "socket._sendfile_use_sendfile", "network", "room in the socket (os.sendfile in a selector loop)",
       "the peer reading; the socket's timeout"),
    _B("socket", "socket._sendfile_use_send", "network", "room in the socket's send buffer",
       "the peer reading; the socket's timeout"),
    _B("socket", "recv_fds", "ipc", "a message with file descriptors on a unix socket", "the peer sending",
       versions=_v(9)),
    _B("socket", "send_fds", "ipc", "room on a unix socket", "the peer reading", versions=_v(9)),
    _B("selectors", "_PollLikeSelector.select", "poll", "events on the registered fds (poll/devpoll)",
       "an fd becoming ready; the timeout"),
    _B("selectors", "EpollSelector.select", "poll", "events on the registered fds (epoll_wait)",
       "an fd becoming ready; the timeout",
       note="the wait of asyncio's event loop on Linux, of subprocess.communicate and socketserver"),
    _B("selectors", "SelectSelector.select", "poll", "events on the registered fds (select)",
       "an fd becoming ready; the timeout"),
    _B("selectors", "KqueueSelector.select", "poll", "events on the registered fds (kqueue)",
       "an fd becoming ready; the timeout", note="BSD and macOS only"),
    _B("ssl", "SSLSocket.read", "network", "TLS records from the peer", "the peer sending; the socket's timeout"),
    _B("ssl", "SSLSocket.write", "network", "room in the socket for TLS records", "the peer reading"),
    _B("ssl", "SSLSocket.recv", "network", "data from the peer", "the peer sending; the socket's timeout"),
    _B("ssl", "SSLSocket.recv_into", "network", "data from the peer", "the peer sending; the socket's timeout"),
    _B("ssl", "SSLSocket.recvfrom", "network", "data from the peer", "the peer sending"),
    _B("ssl", "SSLSocket.recvfrom_into", "network", "data from the peer", "the peer sending"),
    _B("ssl", "SSLSocket.send", "network", "room in the socket", "the peer reading"),
    _B("ssl", "SSLSocket.sendall", "network", "room in the socket", "the peer reading"),
    _B("ssl", "SSLSocket.sendto", "network", "room in the socket", "the peer reading"),
    _B("ssl", "SSLSocket.sendfile", "network", "room in the socket", "the peer reading"),
    _B("ssl", "SSLSocket.accept", "network", "a client connecting", "a client; the timeout"),
    _B("ssl", "SSLSocket.do_handshake", "network", "the TLS handshake with the peer",
       "the peer answering; the socket's timeout",
       note="a peer that accepts TCP but never speaks TLS hangs here forever without a timeout"),
    _B("ssl", "SSLSocket._real_connect", "network", "the TCP connect, then the handshake",
       "the server accepting; the timeout"),
    _B("ssl", "SSLSocket.unwrap", "network", "the peer's TLS close_notify", "the peer answering"),
    _B("ssl", "get_server_certificate", "network", "a connection and handshake to the server",
       "the server answering; the timeout"),

    # ============================ socketserver, http, urllib =====================================
    _B("socketserver", "BaseServer.serve_forever", "poll", "a request on the listening socket (a selector)",
       "a client connecting; shutdown() from another thread (seen within poll_interval, 0.5 s)",
       spins=True, background=True,
       note="wakes every poll_interval to check for shutdown"),
    _B("socketserver", "BaseServer.handle_request", "poll", "one request on the listening socket",
       "a client connecting; the server's timeout"),
    _B("socketserver", "BaseServer.shutdown", "event", "serve_forever() to notice the request and return",
       "the serving thread's loop (within poll_interval)",
       note="called from the thread running serve_forever() (a handler) it waits for itself: a deadlock"),
    _B("socketserver", "TCPServer.get_request", "network", "a client connection (accept)", "a client connecting"),
    _B("socketserver", "UDPServer.get_request", "network", "a datagram", "a client sending"),
    _B("socketserver", "ForkingMixIn.collect_children", "child",
       "its forked handler processes to exit (waitpid), above max_children or at close",
       "a handler process exiting"),
    _B("socketserver", "ThreadingMixIn.server_close", "thread-join", "the non-daemon handler threads",
       "every handler thread finishing its request"),
    _B("socketserver", "_Threads.join", "thread-join", "each handler thread to finish", _THREAD_DONE),
    _B("socketserver", "StreamRequestHandler.finish", "network", "the reply to be flushed to the client",
       "the client reading"),
    _B("socketserver", "DatagramRequestHandler.finish", "network", "the reply datagram to be sent",
       "room in the socket"),
    _B("socketserver", "_SocketWriter.write", "network", "room in the socket (sendall)", "the client reading"),
    _B("http.client", "HTTPConnection.send", "network", "the connect (first use) and room in the socket",
       "the server accepting and reading; the timeout"),
    _B("http.client", "HTTPConnection._tunnel", "network", "the proxy's answer to CONNECT",
       "the proxy answering; the timeout"),
    _B("http.client", "HTTPResponse._read_status", "network", "the status line of the server's response",
       "the server answering; the connection's timeout",
       note="innermost frame of getresponse() while the server thinks"),
    _B("http.client", "_read_headers", "network", "the response headers", "the server sending them"),
    _B("http.client", "HTTPResponse.read", "network", "the response body", "the server sending; the timeout"),
    _B("http.client", "HTTPResponse.read1", "network", "part of the response body", "the server sending"),
    _B("http.client", "HTTPResponse.readinto", "network", "the response body", "the server sending"),
    _B("http.client", "HTTPResponse.readline", "network", "a line of the response body", "the server sending"),
    _B("http.client", "HTTPResponse.peek", "network", "the response body", "the server sending"),
    _B("http.client", "HTTPResponse._safe_read", "network", "exactly n bytes of the body", "the server sending"),
    _B("http.client", "HTTPResponse._safe_readinto", "network", "exactly n bytes of the body",
       "the server sending"),
    _B("http.client", "HTTPResponse._read_next_chunk_size", "network", "a chunk header (chunked encoding)",
       "the server sending"),
    _B("http.client", "HTTPResponse._read_and_discard_trailer", "network", "the chunked trailer",
       "the server sending"),
    _B("http.client", "HTTPResponse._read1_chunked", "network", "a chunk of the body", "the server sending"),
    _B("http.client", "HTTPResponse._peek_chunked", "network", "a chunk of the body", "the server sending"),
    _B("http.server", "BaseHTTPRequestHandler.handle_one_request", "network",
       "the next request line from the client (a keep-alive connection idles here)",
       "the client sending a request or closing; the handler's timeout"),
    _B("http.server", "BaseHTTPRequestHandler.flush_headers", "network", "room to send the headers",
       "the client reading"),
    _B("http.server", "BaseHTTPRequestHandler.send_error", "network", "room to send the error page",
       "the client reading"),
    _B("http.server", "CGIHTTPRequestHandler.run_cgi", "child", "the CGI child and the request body",
       "the CGI program exiting; the client sending"),
    _B("http.server", "HTTPServer.server_bind", "network", "socket.getfqdn() of the bound host (DNS)",
       "the resolver answering (a slow reverse lookup delays every server start)"),
    _B("http.server", "_get_best_family", "network", "DNS resolution of the bind address", "the resolver"),
    _B("urllib.request", "urlretrieve", "network", "the download's next block", "the server sending; the timeout"),
    _B("urllib.request", "URLopener.retrieve", "network", "the download's next block", "the server sending"),
    _B("urllib.request", "HTTPRedirectHandler.http_error_302", "network", "the redirect's body (drained)",
       "the server sending"),
    _B("urllib.request", "ftpwrapper.init", "network", "the FTP connection and login", "the FTP server"),
    _B("urllib.request", "FTPHandler.ftp_open", "network", "DNS resolution of the FTP host", "the resolver"),
    _B("urllib.request", "URLopener.open_ftp", "network", "DNS resolution of the FTP host", "the resolver"),
    _B("urllib.request", "URLopener.open_local_file", "network", "DNS resolution of a file:// host",
       "the resolver"),
    _B("urllib.request", "FileHandler.get_names", "network", "DNS resolution of this host's names",
       "the resolver"),
    _B("urllib.request", "_safe_gethostbyname", "network", "DNS resolution", "the resolver"),
    _B("urllib.request", "localhost", "network", "DNS resolution of 'localhost'", "the resolver"),
    _B("urllib.request", "thishost", "network", "DNS resolution of this host's name", "the resolver"),
    _B("urllib.request", "FancyURLopener.prompt_user_passwd", "prompt", "a user name typed on stdin",
       "a person answering the prompt"),

    # ============================ importlib (frozen) =============================================
    _B("importlib._bootstrap", "_find_and_load", "lock",
       "the module's import lock, while another thread imports the same module",
       "the importing thread finishing that module's top-level code",
       note="frame file `<frozen importlib._bootstrap>`; the innermost frame is _ModuleLock.acquire. A module "
            "whose top-level code waits on a thread that imports it back deadlocks (a deadlock between two "
            "module locks is detected and raises _DeadlockError instead)"),
    _B("importlib._bootstrap", "_ModuleLock.acquire", "lock",
       "a module's import lock, held by the thread importing that module",
       "that thread finishing the import (its top-level code running to the end)",
       note="a lock held by a thread that was importing when the process forked is never released in the child"),
    _lock("importlib._bootstrap", "_ModuleLock.release", "the module lock's internal mutex"),
    _B("importlib._bootstrap", "_ModuleLockManager.__enter__", "lock", "the module's import lock",
       "the importing thread finishing"),
    _B("importlib._bootstrap", "_lock_unlock_module", "lock",
       "another thread's import of the module to finish (takes and releases the module's lock)",
       "that import finishing"),
    _lock("importlib._bootstrap", "_get_module_lock", "the global import lock (_imp.acquire_lock())",
          ended_by="the thread holding it releasing it (held briefly to find a module's lock; held across "
                   "os.fork() by the at-fork handlers)"),
    _lock("importlib._bootstrap", "_get_module_lock.<locals>.cb", "the global import lock"),
    _lock("importlib._bootstrap", "_ImportLockContext.__enter__", "the global import lock (imp.acquire_lock)",
          ended_by="the thread holding it: imp.release_lock(); a fork in progress"),

    # ============================ logging ========================================================
    _lock("logging", "_acquireLock", _LOGGING, _LOGGING_END, versions=_v(8, 12),
          note="3.8-3.12 callers (getLogger, addHandler, isEnabledFor on a cache miss) wait in this frame; "
               "3.13 takes `with _lock:` in the caller itself"),
    _lock("logging", "_prepareFork", _LOGGING, _LOGGING_END, versions=_v(13)),
    _lock("logging", "Logger.isEnabledFor", _LOGGING, _LOGGING_END,
          note="only on a level-cache miss; 3.8-3.12 through _acquireLock()"),
    _lock("logging", "Logger.addHandler", _LOGGING, _LOGGING_END),
    _lock("logging", "Logger.removeHandler", _LOGGING, _LOGGING_END),
    _lock("logging", "Logger.getChildren", _LOGGING, _LOGGING_END, versions=_v(12)),
    _lock("logging", "Manager.getLogger", _LOGGING, _LOGGING_END),
    _lock("logging", "Manager._clear_cache", _LOGGING, _LOGGING_END),
    _lock("logging", "Handler.set_name", _LOGGING, _LOGGING_END),
    _lock("logging", "Handler.close", _LOGGING, _LOGGING_END),
    _lock("logging", "_addHandlerRef", _LOGGING, _LOGGING_END),
    _lock("logging", "_removeHandlerRef", _LOGGING, _LOGGING_END),
    _lock("logging", "_register_at_fork_reinit_lock", _LOGGING, _LOGGING_END),
    _lock("logging", "addLevelName", _LOGGING, _LOGGING_END),
    _lock("logging", "basicConfig", _LOGGING, _LOGGING_END),
    _lock("logging", "Handler.acquire", _HANDLER, _HANDLER_END,
          note="3.8-3.12 Handler.handle/flush/close wait in this frame; 3.13 takes `with self.lock:` in them"),
    _lock("logging", "Handler.handle", _HANDLER, _HANDLER_END),
    _lock("logging", "FileHandler.close", _HANDLER, _HANDLER_END),
    _lock("logging", "StreamHandler.setStream", _HANDLER, _HANDLER_END),
    _B("logging", "StreamHandler.emit", "io",
       "the stream's write: a pipe nobody drains, a full or slow disk, a terminal that is not reading",
       "the reader of the pipe (a parent, a log collector) draining it; the disk",
       note="holds the handler's lock meanwhile: every other thread that logs to this handler waits behind it"),
    _B("logging", "StreamHandler.flush", "io", "the stream's flush (see emit)", "the stream's reader or disk"),
    _lock("logging", "shutdown", _HANDLER + ", of each handler in turn at exit", _HANDLER_END),
    _lock("logging.config", "fileConfig", _LOGGING, _LOGGING_END),
    _lock("logging.config", "DictConfigurator.configure", _LOGGING, _LOGGING_END),
    _lock("logging.config", "stopListening", _LOGGING, _LOGGING_END),
    _lock("logging.config", "listen.<locals>.ConfigSocketReceiver.__init__", _LOGGING, _LOGGING_END),
    _lock("logging.config", "listen.<locals>.Server.run", _LOGGING, _LOGGING_END),
    _B("logging.config", "listen.<locals>.ConfigSocketReceiver.serve_until_stopped", "poll",
       "a configuration client connecting", "a client; stopListening() (seen within its timeout)",
       spins=True, background=True),
    _B("logging.config", "listen.<locals>.ConfigStreamHandler.handle", "network",
       "the configuration sent by the client", "the client sending it"),
    _lock("logging.handlers", "BufferingHandler.flush", _HANDLER, _HANDLER_END),
    _lock("logging.handlers", "MemoryHandler.flush", _HANDLER, _HANDLER_END),
    _lock("logging.handlers", "MemoryHandler.close", _HANDLER, _HANDLER_END),
    _lock("logging.handlers", "MemoryHandler.setTarget", _HANDLER, _HANDLER_END),
    _lock("logging.handlers", "SocketHandler.close", _HANDLER, _HANDLER_END),
    _lock("logging.handlers", "SysLogHandler.close", _HANDLER, _HANDLER_END),
    _B("logging.handlers", "WatchedFileHandler.reopenIfNeeded", "io", "the old stream's flush",
       "the disk"),
    _B("logging.handlers", "SocketHandler.makeSocket", "network", "a TCP connection to the log server",
       "the server accepting; the timeout"),
    _B("logging.handlers", "SocketHandler.send", "network", "room in the socket (sendall)",
       "the log server reading", note="inside emit(): the handler's lock is held meanwhile"),
    _B("logging.handlers", "DatagramHandler.send", "network", "room to send the datagram", "the kernel"),
    _B("logging.handlers", "SysLogHandler.__init__", "network", "DNS resolution and connect of the syslog host",
       "the resolver; the server"),
    _B("logging.handlers", "SysLogHandler.createSocket", "network", "DNS resolution and connect of the syslog host",
       "the resolver; the server", versions=_v(11)),
    _B("logging.handlers", "SysLogHandler._connect_unixsocket", "network", "the connect to /dev/log",
       "syslogd accepting"),
    _B("logging.handlers", "SysLogHandler.emit", "network", "room on the syslog socket",
       "syslogd reading (a stopped journald fills /dev/log)"),
    _B("logging.handlers", "HTTPHandler.emit", "network", "the HTTP log server's answer", "the server"),
    _B("logging.handlers", "QueueListener.dequeue", "queue-get", "a log record on the listener's queue",
       "a QueueHandler putting a record; stop() (puts the sentinel)"),
    _B("logging.handlers", "QueueListener._monitor", "queue-get", "log records on the queue, forever",
       "stop() putting the sentinel", background=True,
       note="the listener thread's loop; the innermost frame is dequeue() (or the C SimpleQueue.get)"),
    _B("logging.handlers", "QueueListener.stop", "thread-join", "the listener thread to drain and exit",
       "the listener handling every queued record"),
)

_IPC_PEER = "the process at the other end sending (or closing its end: EOFError)"

_STDLIB_MULTIPROCESSING = (
    # ============================ multiprocessing.connection =====================================
    _B("multiprocessing.connection", "Connection._recv", "ipc", "bytes from the pipe or socket (os.read)",
       _IPC_PEER,
       note="the innermost frame of Connection.recv/recv_bytes/poll-then-recv, multiprocessing.Queue.get, "
            "Pool results and manager proxies: the peer is whichever process holds the other end"),
    _B("multiprocessing.connection", "Connection._send", "ipc", "room in the pipe or socket (os.write)",
       "the process at the other end reading (a full pipe blocks the writer until it does)"),
    _B("multiprocessing.connection", "wait", "ipc",
       "any of several connections, sockets or process sentinels to be ready (a selector)",
       "a peer sending; a process exiting (its sentinel); the timeout",
       note="multiprocessing.connection.wait; Process.join waits here on the child's sentinel"),
    _B("multiprocessing.connection", "ConnectionWrapper.recv", "ipc", "a message (xmlrpc listener)", _IPC_PEER),
    _B("multiprocessing.connection", "ConnectionWrapper.send", "ipc", "room to send a message",
       "the peer reading"),
    _B("multiprocessing.connection", "Listener.accept", "ipc", "a client connecting (then the auth challenge)",
       "a client process connecting"),
    _B("multiprocessing.connection", "SocketListener.accept", "ipc", "a client connecting", "a client process"),
    _B("multiprocessing.connection", "XmlListener.accept", "ipc", "a client connecting", "a client process"),
    _B("multiprocessing.connection", "SocketClient", "ipc", "the connect to a listener",
       "the listener accepting"),
    _B("multiprocessing.connection", "deliver_challenge", "ipc", "the client's answer to the auth challenge",
       "the client answering"),
    _B("multiprocessing.connection", "answer_challenge", "ipc", "the server's auth challenge and verdict",
       "the server answering"),
    _B("multiprocessing.dummy.connection", "Connection.poll", "condition", "an item on the peer thread's queue",
       "the other thread sending; the timeout"),
    _B("multiprocessing.dummy.connection", "Listener.accept", "queue-get", "a client thread connecting",
       "Client() from another thread"),

    # ============================ multiprocessing queues and locks ===============================
    _B("multiprocessing.queues", "Queue.get", "ipc",
       "an item from the queue's pipe, after the queue's reader lock (_rlock, shared by every consumer "
       "process)", "a producer's feeder thread writing an item; the timeout",
       note="blocking without a timeout it waits in Connection._recv under _rlock; with a timeout it polls "
            "the pipe: a get(timeout=...) in a loop wakes every timeout (spins in the caller)"),
    _B("multiprocessing.queues", "Queue.put", "ipc",
       "room on a bounded queue (the _sem semaphore: maxsize, default SEM_VALUE_MAX)",
       "a consumer process's get(); the timeout",
       note="put() only appends to a buffer; the feeder thread (Queue._feed) writes to the pipe"),
    _B("multiprocessing.queues", "Queue._feed", "condition",
       "items put() by this process (its notempty condition), then room in the pipe for each",
       "a put() in this process; a consumer process reading the pipe", background=True,
       note="the queue's feeder thread ('QueueFeederThread'); blocked writing when nobody reads the pipe"),
    _B("multiprocessing.queues", "Queue._finalize_join", "thread-join",
       "the feeder thread to flush the buffered items into the pipe, at process exit",
       "a consumer reading the pipe; nothing, if no consumer is left (Queue.cancel_join_thread avoids it)",
       note="the classic hang of a child that put() more than a pipe holds and exits before the parent gets"),
    _B("multiprocessing.queues", "JoinableQueue.put", "ipc", "room on a bounded queue (its semaphore)",
       "a consumer's get(); the timeout"),
    _B("multiprocessing.queues", "JoinableQueue.join", "ipc",
       "task_done() for every item put (a process-shared condition)",
       "consumer processes calling task_done()"),
    _lock("multiprocessing.queues", "JoinableQueue.task_done", "the queue's process-shared condition lock"),
    _B("multiprocessing.queues", "SimpleQueue.get", "ipc", "an item from the pipe, under the reader lock",
       "a producer process putting an item",
       note="the task queue of every multiprocessing.Pool worker"),
    _B("multiprocessing.queues", "SimpleQueue.put", "ipc", "room in the pipe, under the writer lock",
       "a consumer process reading"),
    _B("multiprocessing.synchronize", "Condition.wait", "condition",
       "a process-shared condition (a semaphore of sleepers)", "notify() from any process; the timeout"),
    _B("multiprocessing.synchronize", "Condition.notify", "semaphore",
       "the woken sleepers to acknowledge (the _woken_count semaphore)",
       "each woken waiter resuming (a waiter killed meanwhile never does)"),
    _B("multiprocessing.synchronize", "Event.wait", "event", "a process-shared event to be set",
       "Event.set() in any process; the timeout"),
    _lock("multiprocessing.synchronize", "Event.set", "the event's process-shared condition lock"),
    _lock("multiprocessing.synchronize", "Event.clear", "the event's process-shared condition lock"),
    _lock("multiprocessing.synchronize", "Event.is_set", "the event's process-shared condition lock"),
    _lock("multiprocessing.heap", "Heap.malloc", "the shared-memory heap's lock"),
    _B("multiprocessing.reduction", "sendfds", "ipc", "the peer's acknowledgement of the passed fds",
       "the peer receiving them"),
    _B("multiprocessing.reduction", "recvfds", "ipc", "a message with file descriptors", "the peer sending"),

    # ============================ processes =======================================================
    _B("multiprocessing.process", "BaseProcess.join", "child", "the child process to exit",
       _CHILD_EXIT + "; the timeout"),
    _B("multiprocessing.process", "_ParentProcess.join", "ipc", "the parent process to exit (its sentinel)",
       "the parent exiting; the timeout"),
    _B("multiprocessing.popen_fork", "Popen.wait", "child", "the child to exit (its sentinel, then waitpid)",
       _CHILD_EXIT + "; the timeout"),
    _B("multiprocessing.popen_fork", "Popen.poll", "child", "the child to exit (waitpid)", _CHILD_EXIT),
    _B("multiprocessing.popen_forkserver", "Popen.poll", "child", "the child's sentinel (via the fork server)",
       _CHILD_EXIT),
    _B("multiprocessing.popen_forkserver", "Popen._launch", "ipc",
       "the fork server taking the new process's preparation data (a pipe write), then its pid",
       "the fork server reading and forking; its death raises instead"),
    _B("multiprocessing.popen_spawn_posix", "Popen._launch", "child",
       "the new interpreter reading its preparation data from the pipe (Process.start with 'spawn')",
       "the child starting and reading it (beyond a pipe's 64 KiB the parent waits for that; a child "
       "that dies first ends it with BrokenPipeError)"),
    _B("multiprocessing.util", "_exit_function", "child",
       "every non-daemon child process to exit, at interpreter exit (Process.join)",
       "the children exiting; a child that never ends hangs the parent's exit"),
    _lock("multiprocessing.util", "get_logger", _LOGGING, _LOGGING_END),
    _B("multiprocessing.forkserver", "main", "ipc",
       "requests to fork on the server's listening socket, and the exit of its children",
       "a process asking for a new child; the parent closing its alive pipe (then it exits)", background=True,
       note="the fork server process's loop"),
    _B("multiprocessing.forkserver", "ForkServer.connect_to_new_process", "ipc", "the fork server's connection",
       "the fork server accepting"),
    _B("multiprocessing.forkserver", "read_signed", "ipc", "a pid or status from the fork server",
       "the fork server writing it"),
    _B("multiprocessing.forkserver", "write_signed", "ipc", "room in the pipe to the fork server",
       "the fork server reading"),
    _B("multiprocessing.forkserver", "ForkServer._stop_unlocked", "child", "the fork server process to exit",
       "the fork server exiting after its pipe closes"),
    _lock("multiprocessing.forkserver", "ForkServer._stop", "the fork server's lock"),
    _lock("multiprocessing.forkserver", "ForkServer.ensure_running", "the fork server's lock",
          ended_by="another thread finishing starting the fork server"),
    _B("multiprocessing.resource_tracker", "main", "ipc",
       "register/unregister lines on the tracker's pipe, until every process holding it exits",
       "a process creating or releasing a shared resource; the last writer closing the pipe", background=True,
       note="the resource tracker process (`python -c 'from multiprocessing.resource_tracker import main;"
            "main(N)'`), reading `for line in f`"),
    _B("multiprocessing.resource_tracker", "ResourceTracker._send", "ipc", "room in the tracker's pipe",
       "the tracker process reading"),
    _B("multiprocessing.resource_tracker", "ResourceTracker._check_alive", "ipc", "room in the tracker's pipe",
       "the tracker reading (a dead tracker raises instead)"),
    _B("multiprocessing.resource_tracker", "ResourceTracker._stop", "child", "the tracker process to exit",
       "the tracker exiting once its pipe is closed"),
    _B("multiprocessing.resource_tracker", "ResourceTracker.ensure_running", "child",
       "a dead tracker to be reaped, under the tracker's lock", "the old tracker exiting"),
    _B("multiprocessing.resource_sharer", "_ResourceSharer._serve", "ipc",
       "a process asking for a shared fd or socket", "another process connecting; stop()", background=True),
    _B("multiprocessing.resource_sharer", "_ResourceSharer.get_connection", "ipc",
       "the connect to the owning process's resource sharer", "that process's sharer thread"),
    _B("multiprocessing.resource_sharer", "_ResourceSharer.stop", "thread-join", "the sharer thread to exit",
       "the sharer thread; the timeout"),
    _lock("multiprocessing.resource_sharer", "_ResourceSharer.register", "the resource sharer's lock"),

    # ============================ managers ========================================================
    _B("multiprocessing.managers", "BaseManager.start", "ipc", "the manager process to report its address",
       "the manager process starting its server; its death raises EOFError"),
    _B("multiprocessing.managers", "BaseManager._run_server", "ipc", "room to send the address to the parent",
       "the parent reading"),
    _B("multiprocessing.managers", "BaseManager.join", "child", "the manager process to exit",
       _CHILD_EXIT + "; the timeout"),
    _B("multiprocessing.managers", "BaseManager._finalize_manager", "child",
       "the manager process to exit after the shutdown request", "the manager exiting; the shutdown timeout"),
    _B("multiprocessing.managers", "BaseProxy._callmethod", "ipc", "the manager process's reply to a method call",
       "the manager running the method and answering (a method that blocks in the manager blocks here too)",
       note="the frame of every proxy call (a manager's Queue.get waits in the manager, the caller here)"),
    _lock("multiprocessing.managers", "BaseProxy.__init__", "the proxies' class-wide mutex"),
    _B("multiprocessing.managers", "dispatch", "ipc", "the manager's reply", "the manager answering"),
    _B("multiprocessing.managers", "Server.serve_forever", "event", "the manager server's stop event",
       "shutdown() from a client; the parent's death is noticed through its connection", spins=True,
       background=True, note="the manager process's main thread, waking every second"),
    _B("multiprocessing.managers", "Server.accepter", "ipc", "a client connecting to the manager",
       "a process creating a proxy", background=True),
    _B("multiprocessing.managers", "Server.serve_client", "ipc", "the next request on one client's connection",
       "the client calling a proxy method; the client closing", background=True,
       note="one thread per connected client"),
    _B("multiprocessing.managers", "Server.handle_request", "ipc", "a request, then room for the reply",
       "the client"),
    _B("multiprocessing.managers", "Server._handle_request", "ipc", "a request, then room for the reply",
       "the client", versions=_v(10)),
    _B("multiprocessing.managers", "Server.accept_connection", "ipc", "room to answer the client", "the client"),
    _B("multiprocessing.managers", "Server.shutdown", "ipc", "room to answer the client", "the client"),
    _lock("multiprocessing.managers", "Server.create", _MANAGER_MUTEX),
    _lock("multiprocessing.managers", "Server.debug_info", _MANAGER_MUTEX),
    _lock("multiprocessing.managers", "Server.incref", _MANAGER_MUTEX),
    _lock("multiprocessing.managers", "Server.decref", _MANAGER_MUTEX),

    # ============================ multiprocessing.pool ============================================
    _B("multiprocessing.pool", "worker", "ipc", "the next task on the pool's task queue (inqueue.get)",
       "the pool's task handler thread sending a task; the sentinel None at close", background=True,
       note="the loop of every Pool worker process; ThreadPool workers run it in threads"),
    _B("multiprocessing.pool", "Pool._handle_workers", "poll",
       "a worker to exit or the pool's state to change (Pool._wait_for_updates)",
       "a worker process exiting; close()/terminate() (the change notifier)", spins=True, background=True,
       note="the pool's worker-handler thread; wakes at least every 0.1 s"),
    _B("multiprocessing.pool", "Pool._wait_for_updates", "poll",
       "the workers' sentinels and the change notifier (multiprocessing.connection.wait, 0.1 s timeout)",
       "a worker exiting; a change notification; the timeout", spins=True),
    _B("multiprocessing.pool", "ThreadPool._wait_for_updates", "sleep", "the timeout (a plain sleep)",
       "the timeout", spins=True),
    _B("multiprocessing.pool", "Pool._handle_tasks", "queue-get", "the next batch of tasks (a queue.SimpleQueue)",
       "apply_async()/map()/imap() putting tasks; close()/terminate() putting None", background=True,
       note="the pool's task-handler thread; then writes each task to the workers' pipe (ipc)"),
    _B("multiprocessing.pool", "Pool._handle_results", "ipc", "a result from a worker (outqueue, a pipe)",
       "a worker process finishing a task", background=True,
       note="the pool's result-handler thread; the innermost frame is Connection._recv"),
    _B("multiprocessing.pool", "Pool._help_stuff_finish", "lock",
       "the task queue's reader lock, then draining the queue", "the workers releasing the lock"),
    _B("multiprocessing.pool", "Pool._join_exited_workers", "child", "an exited worker to be reaped",
       "the worker having exited (joins only dead ones)"),
    _B("multiprocessing.pool", "Pool.join", "thread-join", "the pool's handler threads, then every worker process",
       "the workers finishing their tasks after close(); after terminate(), their being killed"),
    _B("multiprocessing.pool", "Pool._terminate_pool", "thread-join",
       "the handler threads and the workers, at terminate() or the pool's finalizer",
       "the handler threads returning; the killed workers exiting"),
    _B("multiprocessing.pool", "Pool.__init__", "child", "workers started so far, when starting one failed",
       "those workers exiting"),
    _B("multiprocessing.pool", "ApplyResult.wait", "event", "the task's result (an Event set by the result handler)",
       "the pool's result-handler thread receiving it from a worker; the timeout",
       note="a task whose worker died never gets a result: a lost task (the pool replaces the worker only)"),
    _B("multiprocessing.pool", "ApplyResult.get", "event", "the task's result", "as ApplyResult.wait",
       note="waits through ApplyResult.wait and Event.wait in Condition.wait (the innermost frame); Pool.map "
            "and Pool.apply wait here"),
    _B("multiprocessing.pool", "IMapIterator.next", "condition", "the next result of imap()",
       "the result-handler thread; the timeout"),
    _lock("multiprocessing.pool", "IMapIterator._set", "the iterator's condition lock"),
    _lock("multiprocessing.pool", "IMapIterator._set_length", "the iterator's condition lock"),
    _lock("multiprocessing.pool", "IMapUnorderedIterator._set", "the iterator's condition lock"),

    # ============================ concurrent.futures ==============================================
    _B("concurrent.futures._base", "Future.result", "future", "the future's result (its condition)",
       "the worker that runs the task finishing it (set_result/set_exception); cancel(); the timeout"),
    _B("concurrent.futures._base", "Future.exception", "future", "the future to finish", "as Future.result"),
    _B("concurrent.futures._base", "wait", "future", "some or all of the futures (a waiter event)",
       "the futures finishing, as return_when says; the timeout"),
    _B("concurrent.futures._base", "as_completed", "future", "the next future to finish",
       "a future finishing; the timeout"),
    _B("concurrent.futures._base", "Executor.map.<locals>.result_iterator", "future",
       "each result in order (3.8-3.9 in this frame, later in _result_or_cancel)", "the task finishing"),
    _B("concurrent.futures._base", "_result_or_cancel", "future", "one result of Executor.map",
       "the task finishing; the timeout", versions=_v(10)),
    _B("concurrent.futures._base", "_AcquireFutures.__enter__", "lock", "the condition lock of every future",
       "threads holding them leaving their critical sections"),
    _lock("concurrent.futures._base", "Future.__repr__", _FUTURE_COND),
    _lock("concurrent.futures._base", "Future.cancel", _FUTURE_COND),
    _lock("concurrent.futures._base", "Future.cancelled", _FUTURE_COND),
    _lock("concurrent.futures._base", "Future.running", _FUTURE_COND),
    _lock("concurrent.futures._base", "Future.done", _FUTURE_COND),
    _lock("concurrent.futures._base", "Future.add_done_callback", _FUTURE_COND),
    _lock("concurrent.futures._base", "Future.set_running_or_notify_cancel", _FUTURE_COND),
    _lock("concurrent.futures._base", "Future.set_result", _FUTURE_COND),
    _lock("concurrent.futures._base", "Future.set_exception", _FUTURE_COND),
    _lock("concurrent.futures._base", "_yield_finished_futures", _FUTURE_COND),
    _lock("concurrent.futures._base", "_AllCompletedWaiter._decrement_pending_calls", "the waiter's lock"),
    _lock("concurrent.futures._base", "_AsCompletedWaiter.add_result", "the waiter's lock"),
    _lock("concurrent.futures._base", "_AsCompletedWaiter.add_exception", "the waiter's lock"),
    _lock("concurrent.futures._base", "_AsCompletedWaiter.add_cancelled", "the waiter's lock"),
    _B("concurrent.futures.thread", "_worker", "queue-get", "the next work item (the executor's SimpleQueue)",
       "submit() from any thread; shutdown() (puts None)", background=True,
       note="a ThreadPoolExecutor thread ('ThreadPoolExecutor-N_M'), and asyncio's default executor "
            "('asyncio_N': loop.run_in_executor(None, ...) and to_thread() run here); the queue's get() is C"),
    _B("concurrent.futures.thread", "ThreadPoolExecutor.shutdown", "thread-join", "every worker thread to finish",
       "the running work items finishing (wait=True)"),
    _lock("concurrent.futures.thread", "ThreadPoolExecutor.submit", _POOL_SHUTDOWN + ", then the global shutdown lock",
          note="the work queue is a SimpleQueue: its put() never waits"),
    _lock("concurrent.futures.thread", "ThreadPoolExecutor._initializer_failed", _POOL_SHUTDOWN),
    _B("concurrent.futures.thread", "_python_exit", "thread-join",
       "every executor thread to finish, at interpreter exit (a threading atexit callback since 3.9)",
       "the running work items finishing; a work item that never ends hangs the exit"),
    _B("concurrent.futures.process", "_process_worker", "ipc", "the next call item on the call queue",
       "the executor's manager thread sending one; None at shutdown", background=True,
       note="the loop of every ProcessPoolExecutor worker process"),
    _B("concurrent.futures.process", "_sendback_result", "ipc", "room in the result pipe",
       "the executor's manager thread reading results"),
    _B("concurrent.futures.process", "_ExecutorManagerThread.run", "ipc",
       "results from the workers, dead workers and wake-ups (in wait_result_broken_or_wakeup)",
       "a worker finishing a task or dying; submit()/shutdown() waking it", background=True,
       versions=_v(9), note="the executor's manager thread; 3.8's is _queue_management_worker"),
    _B("concurrent.futures.process", "_ExecutorManagerThread.wait_result_broken_or_wakeup", "ipc",
       "a result, a worker's death or a wake-up (multiprocessing.connection.wait)",
       "a worker finishing or exiting; the wakeup pipe", background=True, versions=_v(9)),
    _B("concurrent.futures.process", "_ExecutorManagerThread.add_call_item_to_queue", "ipc",
       "room on the bounded call queue", "a worker taking a call item", versions=_v(9)),
    _B("concurrent.futures.process", "_ExecutorManagerThread.process_result_item", "child",
       "an exited worker (max_tasks_per_child)", "the worker exiting", versions=_v(9)),
    _B("concurrent.futures.process", "_ExecutorManagerThread._join_executor_internals", "child",
       "every worker process to exit", "the workers exiting", versions=_v(12)),
    _lock("concurrent.futures.process", "_ExecutorManagerThread.join_executor_internals", _POOL_SHUTDOWN,
          versions=_v(9)),
    _lock("concurrent.futures.process", "_ExecutorManagerThread.terminate_broken", _POOL_SHUTDOWN, versions=_v(9)),
    _lock("concurrent.futures.process", "_ExecutorManagerThread.__init__.<locals>.weakref_cb", _POOL_SHUTDOWN,
          versions=_v(9)),
    _lock("concurrent.futures.process", "_SafeQueue._on_queue_feeder_error", _POOL_SHUTDOWN),
    _B("concurrent.futures.process", "_queue_management_worker", "ipc",
       "results from the workers, dead workers and wake-ups", "a worker finishing or dying; a wake-up",
       background=True, versions=_v(8, 8)),
    _B("concurrent.futures.process", "_queue_management_worker.<locals>.shutdown_worker", "child",
       "every worker to exit at shutdown", "the workers exiting", versions=_v(8, 8)),
    _B("concurrent.futures.process", "_add_call_item_to_queue", "ipc", "room on the call queue",
       "a worker taking a call item", versions=_v(8, 8)),
    _B("concurrent.futures.process", "_ThreadWakeup.wakeup", "ipc", "room in the wakeup pipe",
       "the manager thread draining it (clear())",
       note="a submit() holding the shutdown lock while the pipe is full, with the manager thread "
            "waiting for that lock, deadlocks (reported as CPython gh-105829)"),
    _B("concurrent.futures.process", "_ThreadWakeup.clear", "ipc", "the wakeup pipe's bytes (drains it)",
       "none needed: polls before each read"),
    _B("concurrent.futures.process", "ProcessPoolExecutor.shutdown", "thread-join",
       "the manager thread to finish (which waits for the workers)", "the pending tasks finishing (wait=True)"),
    _lock("concurrent.futures.process", "ProcessPoolExecutor.submit", _POOL_SHUTDOWN),
    _B("concurrent.futures.process", "_python_exit", "thread-join", "every executor's manager thread, at exit",
       "their tasks finishing"),
)

_STDLIB_ASYNCIO_AND_MISC = (
    # ============================ asyncio (what blocks a thread, not a coroutine) =================
    _B("asyncio.base_events", "BaseEventLoop._run_once", "poll",
       "events on the loop's fds, up to the next timer (selector.select)",
       "an fd becoming ready; the next scheduled callback's time; call_soon_threadsafe() writing to the "
       "loop's self-pipe",
       note="a coroutine waiting (await) appears in no thread's stack: its loop's thread sits here. "
            "A loop stuck elsewhere (not in this wait) is blocked by a callback or coroutine step. While "
            "callbacks keep the ready queue non-empty the timeout is 0 and the loop busy-polls"),
    _B("asyncio.base_events", "BaseEventLoop.run_forever", "poll", "the loop's events, step after step",
       "loop.stop(); run_until_complete()'s future finishing", background=True,
       note="the innermost frame of an idle loop is the selector's select() under _run_once"),
    _B("asyncio.base_events", "BaseEventLoop.shutdown_default_executor", "thread-join",
       "the thread that shuts the default executor down (it joins every executor thread)",
       "the executor's running calls finishing; the timeout (3.12+)", versions=_v(9),
       note="blocks the loop's thread in a non-awaited join() after the await"),
    _B("asyncio.base_events", "BaseEventLoop._getaddrinfo_debug", "network", "DNS resolution (debug mode)",
       "the resolver", note="runs in the default executor's thread (loop.getaddrinfo)"),
    _lock("asyncio.events", "_init_event_loop_policy", "asyncio's global policy lock"),
    _lock("asyncio.mixins", "_LoopBoundMixin._get_loop", "asyncio's global lock binding primitives to a loop",
          versions=_v(10)),
    _lock("asyncio.unix_events", "_UnixDefaultEventLoopPolicy._init_watcher", "asyncio's global policy lock"),
    _B("asyncio.unix_events", "ThreadedChildWatcher._do_waitpid", "child",
       "one child process to exit (os.waitpid, one thread per child)", _CHILD_EXIT, background=True,
       note="thread 'asyncio-waitpid-N' (3.11+; 'waitpid-N' before) of asyncio.create_subprocess_*"),
    _B("asyncio.unix_events", "ThreadedChildWatcher._join_threads", "thread-join",
       "the non-daemon waitpid threads", "the children exiting", versions=_v(8, 10)),
    _B("asyncio.unix_events", "PidfdChildWatcher._do_wait", "child", "the child's exit status (pidfd ready)",
       "the child having exited (called when the pidfd is readable)", versions=_v(9)),
    _lock("asyncio.unix_events", "FastChildWatcher.__enter__", "the watcher's lock"),
    _lock("asyncio.unix_events", "FastChildWatcher.__exit__", "the watcher's lock"),
    _lock("asyncio.unix_events", "FastChildWatcher.add_child_handler", "the watcher's lock"),
    _lock("asyncio.unix_events", "FastChildWatcher._do_waitpid_all", "the watcher's lock",
          note="its waitpid calls use WNOHANG"),

    # ============================ sched, shutil, pty, prompts ====================================
    _B("sched", "scheduler.run", "sleep", "the next event's time (delayfunc, time.sleep by default)",
       "the time arriving; with a custom delayfunc, whatever it waits on", spins=False,
       note="also takes the scheduler's lock; calls delayfunc through an attribute, so the innermost frame "
            "of the default sleep is this one"),
    _lock("sched", "scheduler.enterabs", "the scheduler's lock"),
    _lock("sched", "scheduler.cancel", "the scheduler's lock"),
    _lock("sched", "scheduler.empty", "the scheduler's lock"),
    _lock("sched", "scheduler.queue", "the scheduler's lock"),
    _B("shutil", "copyfileobj", "io", "reads from the source and writes to the destination",
       "the storage or the pipe's peer"),
    _B("shutil", "_copyfileobj_readinto", "io", "reads into a buffer and writes", "the storage"),
    _B("shutil", "_fastcopy_sendfile", "io", "os.sendfile between two files", "the storage"),
    _B("pty", "spawn", "child", "the child on the pseudo-terminal to exit", _CHILD_EXIT),
    _B("pty", "_copy", "child", "output of the child's terminal and input on stdin (select)",
       "the child writing; someone typing; the child closing its terminal"),
    _B("pty", "_read", "child", "output of the child's terminal", "the child writing"),
    _B("pty", "_writen", "child", "room in the child's terminal", "the child reading", versions=_v(8, 10)),
    _B("getpass", "unix_getpass", "prompt", "a password typed on the terminal", "a person typing it"),
    _B("getpass", "_raw_input", "prompt", "a line typed on the terminal", "a person typing it"),
    _B("code", "InteractiveConsole.raw_input", "prompt", "a line on stdin (input())", "a person typing it"),
    _B("cmd", "Cmd.cmdloop", "prompt", "the next command on stdin", "a person typing it"),
)

_RANKS = "every rank of the process group reaching the same collective (and the network/NCCL moving the data)"
_RANKS_END = ("the last rank arriving; the process group's timeout (NCCL: the watchdog aborts after "
              "TORCH_NCCL_TIMEOUT/timeout=, default 10 min)")
_WORK_NOTE = ("gloo and the store-backed groups block the CPU thread in Work.wait(); NCCL's wait() only "
              "makes the current stream wait (the host goes on until a later synchronize or .item()), unless "
              "TORCH_NCCL_BLOCKING_WAIT=1, which busy-polls")


def _collective(function, what, note=_WORK_NOTE):
    return Blocking("torch.distributed.distributed_c10d", function, "collective", what + ": " + _RANKS,
                    _RANKS_END, versions=None, note=note)


_T = dict(versions=None)
_STORE_END = "the other ranks or agents setting the keys; the store's timeout (default 30 min for TCPStore)"

_TORCH = (
    # ============================ DataLoader ======================================================
    _B("torch.utils.data.dataloader", "_MultiProcessingDataLoaderIter._try_get_data", "ipc",
       "a batch on the data queue (multiprocessing.Queue.get with a timeout, 5 s by default)",
       "a worker process (or the pin-memory thread) putting the batch; the timeout, after which it checks "
       "for dead workers", **_T),
    _B("torch.utils.data.dataloader", "_MultiProcessingDataLoaderIter._get_data", "ipc",
       "the next batch, in a loop of timed gets", "a worker producing it; a dead worker raises", spins=True,
       note="loops while the pin-memory thread is alive or without a timeout: wakes every 5 s", **_T),
    _B("torch.utils.data.dataloader", "_MultiProcessingDataLoaderIter._next_data", "ipc",
       "the batch with the next index (out-of-order batches are kept)", "the worker responsible for it",
       spins=True, **_T),
    _B("torch.utils.data.dataloader", "_MultiProcessingDataLoaderIter._shutdown_workers", "child",
       "the pin-memory thread, then every worker process to exit (join with a 5 s timeout, then terminate)",
       "the workers exiting", spins=True, **_T),
    _lock("torch.utils.data.dataloader", "_MultiProcessingDataLoaderIter._clean_up_persistent_workers_atexit",
          "the DataLoader's persistent-workers atexit lock", versions=None),
    _lock("torch.utils.data.dataloader", "_MultiProcessingDataLoaderIter._register_persistent_workers_atexit",
          "the DataLoader's persistent-workers atexit lock", versions=None),
    _B("torch.utils.data._utils.worker", "_worker_loop", "ipc",
       "the next index batch on its index queue (get with a 5 s timeout), then room on the data queue",
       "the main process sending indices; the main process dying (checked every 5 s); None at shutdown",
       spins=True, background=True, note="every DataLoader worker process", **_T),
    _B("torch.utils.data._utils.pin_memory", "_pin_memory_loop", "ipc",
       "batches from the workers' data queue, forever", "the workers; the done event at shutdown",
       spins=True, background=True, note="the DataLoader's pin-memory thread", **_T),
    _B("torch.utils.data._utils.pin_memory", "_pin_memory_loop.<locals>.do_one_step", "ipc",
       "a batch from the workers (get with a 5 s timeout), then room on the output queue",
       "a worker putting a batch; the main thread taking batches", spins=True, background=True, **_T),

    # ============================ CUDA ============================================================
    _B("torch.cuda", "synchronize", "cuda", "every kernel queued on the device to finish",
       "the GPU finishing them; nothing, if a kernel hangs (a collective missing a rank, a deadlocked kernel)",
       spins=True, note="the CUDA driver spin-waits by default (100% of a core while the GPU works); "
                        "no Python frame below it", **_T),
    _B("torch.cuda.streams", "Stream.synchronize", "cuda", "the work queued on this stream",
       "the GPU finishing it", spins=True, **_T),
    _B("torch.cuda.streams", "Event.synchronize", "cuda", "the work recorded before this event",
       "the GPU reaching the event", spins=True, **_T),
    _lock("torch.cuda", "_lazy_init", "torch.cuda's initialization lock (another thread initializes CUDA)",
          ended_by="that thread finishing CUDA initialization (seconds on a large machine)", versions=None),
    _lock("torch.cuda", "_lazy_call", "torch.cuda's initialization lock", versions=None),

    # ============================ torch.distributed ===============================================
    _collective("all_reduce", "all_reduce"),
    _collective("all_reduce_coalesced", "all_reduce_coalesced"),
    _collective("all_gather", "all_gather"),
    _collective("all_gather_single", "all_gather_into_tensor"),
    _collective("all_gather_coalesced", "all_gather_coalesced"),
    _collective("all_to_all", "all_to_all"),
    _collective("all_to_all_single", "all_to_all_single"),
    _collective("broadcast", "broadcast"),
    _collective("reduce", "reduce"),
    _collective("reduce_scatter", "reduce_scatter"),
    _collective("reduce_scatter_single", "reduce_scatter_tensor"),
    _collective("gather", "gather"),
    _collective("scatter", "scatter"),
    _collective("barrier", "barrier",
                note="NCCL's barrier is an all-reduce of one element followed by a device synchronize (spins)"),
    _collective("monitored_barrier", "monitored_barrier (gloo)",
                note="rank 0 waits for every rank and names the ones missing when it times out"),
    _collective("_coalescing_manager", "the coalesced collectives"),
    _collective("_CoalescingManager.wait", "the coalesced collectives"),
    _collective("_new_group_with_tag", "a barrier after creating the group (use_local_synchronization=False)"),
    _B("torch.distributed.distributed_c10d", "send", "collective", "the destination rank to receive",
       "that rank calling recv()/irecv(); the timeout", note=_WORK_NOTE, **_T),
    _B("torch.distributed.distributed_c10d", "recv", "collective", "the source rank to send",
       "that rank calling send(); the timeout", note=_WORK_NOTE, **_T),
    _B("torch.distributed.distributed_c10d", "send_object_list", "collective", "the destination rank to receive",
       "that rank's recv_object_list()", **_T),
    _B("torch.distributed.distributed_c10d", "recv_object_list", "collective", "the source rank to send",
       "that rank's send_object_list()", **_T),
    _B("torch.distributed.distributed_c10d", "init_process_group", "rendezvous",
       "every rank to join (the store rendezvous, then a barrier)",
       "the last rank joining; the timeout", **_T),
    _B("torch.distributed.distributed_c10d", "_store_based_barrier", "rendezvous",
       "every rank to check in on the store (store.wait in a loop, logging every 10 s)",
       "the last rank arriving; the timeout", spins=True, **_T),
    _B("torch.distributed.rendezvous", "_create_c10d_store", "rendezvous",
       "the connection to the TCPStore server on MASTER_ADDR:MASTER_PORT (retried until the timeout)",
       "rank 0 (or the agent) starting the store server; the timeout", **_T),

    # ============================ torch.distributed.elastic (torchrun) ============================
    _B("torch.distributed.elastic.agent.server.api", "SimpleElasticAgent._invoke_run", "child",
       "its worker processes, checked every monitor_interval (a sleep loop)",
       "the workers finishing or failing; a membership change", spins=True, background=True,
       note="torchrun's agent loop", **_T),
    _B("torch.distributed.elastic.agent.server.api", "SimpleElasticAgent._assign_worker_ranks", "rendezvous",
       "every agent's role info on the store", _STORE_END, **_T),
    _B("torch.distributed.elastic.agent.server.api", "SimpleElasticAgent._exit_barrier", "rendezvous",
       "every agent to finish (the exit barrier on the store)", "the other agents' workers finishing; "
       "the barrier timeout", **_T),
    _B("torch.distributed.elastic.agent.server.api", "_get_fq_hostname", "network",
       "DNS resolution of this host's name", "the resolver", **_T),
    _B("torch.distributed.elastic.agent.server.local_elastic_agent", "LocalElasticAgent._get_fq_hostname",
       "network", "DNS resolution of this host's name", "the resolver", **_T),
    _B("torch.distributed.elastic.events", "construct_and_record_rdzv_event", "network",
       "DNS resolution of this host's name (socket.getfqdn)", "the resolver", **_T),
    _B("torch.distributed.elastic.multiprocessing.errors", "ChildFailedError._format_failure", "network",
       "DNS resolution of this host's name", "the resolver", **_T),
    _B("torch.distributed.elastic.multiprocessing.api", "PContext.wait", "child",
       "the worker processes, polled every period (a sleep loop)", "the workers exiting; the timeout",
       spins=True, **_T),
    _B("torch.distributed.elastic.multiprocessing.api", "MultiprocessContext._poll", "child",
       "the ranks' processes (ProcessContext.join) and their return values", "the ranks finishing", **_T),
    _B("torch.distributed.elastic.multiprocessing.api", "MultiprocessContext._close", "child",
       "the ranks to exit after SIGTERM, then after SIGKILL", "the ranks exiting; the grace period",
       spins=True, **_T),
    _B("torch.distributed.elastic.multiprocessing.api", "SubprocessContext._close", "child",
       "the ranks to exit after SIGTERM, then after SIGKILL", "the ranks exiting; the grace period",
       spins=True, **_T),
    _B("torch.distributed.elastic.multiprocessing.api", "_wrap", "event",
       "the agent to read this rank's return value (queue_finished_reading_event)",
       "the agent's MultiprocessContext reading it", **_T),
    _B("torch.distributed.elastic.multiprocessing.tail_log", "tail_logfile", "io",
       "new lines in a rank's log file (a sleep loop)", "the rank writing; the finished event",
       spins=True, background=True, **_T),
    _B("torch.distributed.elastic.multiprocessing.tail_log", "TailLog.stop", "future",
       "each tailer thread to finish", "the tailers noticing the finished event", **_T),
    _B("torch.distributed.elastic.rendezvous.api", "RendezvousStoreInfo.build", "rendezvous",
       "the master address and port on the store (set by rank 0)", _STORE_END, **_T),
    _B("torch.distributed.elastic.rendezvous.c10d_rendezvous_backend", "_create_tcp_store", "rendezvous",
       "the TCPStore server (connect, retried)", "the store server starting; the timeout", **_T),
    _B("torch.distributed.elastic.rendezvous.static_tcp_rendezvous", "StaticTCPRendezvous.next_rendezvous",
       "rendezvous", "the TCPStore of rank 0 and every rank joining", "the ranks joining; the timeout", **_T),
    _lock("torch.distributed.elastic.rendezvous.dynamic_rendezvous", "DynamicRendezvousHandler._keep_alive",
          "the rendezvous handler's heartbeat lock", versions=None),
    _lock("torch.distributed.elastic.rendezvous.dynamic_rendezvous", "DynamicRendezvousHandler.is_closed",
          "the rendezvous handler's heartbeat lock", versions=None),
    _lock("torch.distributed.elastic.rendezvous.dynamic_rendezvous", "DynamicRendezvousHandler.set_closed",
          "the rendezvous handler's heartbeat lock", versions=None),
    _lock("torch.distributed.elastic.rendezvous.dynamic_rendezvous",
          "DynamicRendezvousHandler.num_nodes_waiting", "the rendezvous handler's heartbeat lock", versions=None),
    _B("torch.distributed.elastic.rendezvous.dynamic_rendezvous", "_NodeDescGenerator.generate", "network",
       "DNS resolution of this host's name (under the generator's lock)", "the resolver", **_T),
    _B("torch.distributed.elastic.rendezvous.etcd_rendezvous", "EtcdRendezvous.rendezvous_barrier", "rendezvous",
       "the etcd rendezvous to complete (1 s sleep loop)", "the other nodes joining; the timeout",
       spins=True, **_T),
    _B("torch.distributed.elastic.rendezvous.etcd_rendezvous", "EtcdRendezvous.store_extra_data", "rendezvous",
       "a compare-and-set on etcd to succeed (0.1 s retry loop)", "etcd", spins=True, **_T),
    _B("torch.distributed.elastic.rendezvous.etcd_rendezvous",
       "EtcdRendezvous.setup_lease_renewal.<locals>.lease_worker", "sleep",
       "half the lease's TTL between renewals", "the stop event", spins=True, background=True, **_T),
    # etcd rendezvous (legacy, python-etcd): every client call is a request to etcd; watch() long-polls
    *[_B("torch.distributed.elastic.rendezvous.etcd_rendezvous", "EtcdRendezvous." + name, "rendezvous", what,
         "etcd answering (and, for a watch, another node changing the rendezvous state); the timeouts", **_T)
      for name, what in (
          ("__init__", "etcd, to create the rendezvous's keys"),
          ("announce_self_waiting", "etcd, to register as waiting (compare-and-set, retried)"),
          ("confirm_membership", "etcd, to confirm membership (compare-and-set, retried)"),
          ("create_path_if_not_exists", "etcd, to create a key"),
          ("get_rdzv_state", "etcd, for the rendezvous state"),
          ("handle_join_last_call", "the last-call window for more nodes to join (etcd compare-and-set)"),
          ("join_rendezvous", "etcd, to join (compare-and-set, retried)"),
          ("load_extra_data", "another node's extra data (an etcd watch)"),
          ("set_closed", "etcd, to close the rendezvous"),
          ("try_create_rendezvous", "etcd, to create a new rendezvous round"),
          ("try_wait_for_state_change", "a change of the rendezvous state (an etcd watch with a timeout)"),
          ("wait_for_rendezvous_to_free", "the previous rendezvous round to finish (an etcd watch)"))],
    _B("torch.distributed.elastic.rendezvous.etcd_rendezvous_backend", "EtcdRendezvousBackend.get_state",
       "rendezvous", "etcd, for the rendezvous state", "etcd answering; the client's timeout", **_T),
    _B("torch.distributed.elastic.rendezvous.etcd_rendezvous_backend", "EtcdRendezvousBackend.set_state",
       "rendezvous", "etcd, to write the rendezvous state", "etcd answering", **_T),
    _B("torch.distributed.elastic.rendezvous.etcd_store", "EtcdStore._try_wait_get", "rendezvous",
       "keys to appear in etcd (a watch loop)", "another node setting them; the timeout", spins=True, **_T),
    _B("torch.distributed.elastic.rendezvous.etcd_store", "EtcdStore.add", "rendezvous",
       "etcd, for an atomic add (compare-and-set, retried)", "etcd answering", **_T),
    _B("torch.distributed.elastic.rendezvous.etcd_store", "EtcdStore.set", "rendezvous", "etcd, to set a key",
       "etcd answering", **_T),
    _B("torch.distributed.elastic.rendezvous.etcd_server", "EtcdServer._wait_for_ready", "child",
       "the etcd server to answer (1 s sleep loop)", "etcd starting; the timeout", spins=True, **_T),
    _B("torch.distributed.elastic.rendezvous.etcd_server", "stop_etcd", "child", "the etcd process to exit",
       "etcd exiting", **_T),
    _B("torch.distributed.elastic.rendezvous.etcd_server", "find_free_port", "network", "DNS for 'localhost'",
       "the resolver", **_T),
    _B("torch.distributed.elastic.rendezvous.etcd_store", "cas_delay", "sleep", "up to 0.1 s (random)",
       "the delay", **_T),
    _B("torch.distributed.elastic.rendezvous.utils", "_PeriodicTimer._run", "sleep",
       "the timer's interval (a stop event with a timeout)", "the interval; cancel()", spins=True,
       background=True, note="the rendezvous keep-alive (heartbeat) thread", **_T),
    _B("torch.distributed.elastic.rendezvous.utils", "_PeriodicTimer._stop_thread", "thread-join",
       "the timer thread to exit", "the timer noticing its stop event", **_T),
    _B("torch.distributed.elastic.rendezvous.utils", "_delay", "sleep", "a given delay", "the delay", **_T),
    _B("torch.distributed.elastic.rendezvous.utils", "_matches_machine_hostname", "network",
       "DNS resolution of both host names", "the resolver", **_T),
    _B("torch.distributed.elastic.timer.api", "TimerServer._run_watchdog", "ipc",
       "timer requests from the workers (a batch get with a timeout)", "a worker acquiring or releasing a timer",
       spins=True, background=True, **_T),
    _B("torch.distributed.elastic.timer.api", "TimerServer.stop", "thread-join", "the watchdog thread",
       "the watchdog's next round", **_T),
    _B("torch.distributed.elastic.timer.local_timer", "MultiprocessingRequestQueue.get", "ipc",
       "timer requests on the multiprocessing queue, until the timeout", "workers sending requests",
       spins=True, **_T),
    _B("torch.distributed.elastic.timer.file_based_local_timer", "FileTimerServer._get_requests", "ipc",
       "timer requests on the named pipe (readline; a sleep when no writer has it open)",
       "a worker writing a request", spins=True, background=True, **_T),
    _B("torch.distributed.elastic.timer.file_based_local_timer", "FileTimerServer.run_once", "thread-join",
       "one watchdog round", "the watchdog thread", **_T),
    _B("torch.distributed.elastic.timer.file_based_local_timer", "FileTimerServer.stop", "thread-join",
       "the watchdog thread", "its next round", **_T),
    _B("torch.distributed.elastic.timer.file_based_local_timer", "_retry.<locals>.wrapper.<locals>.wrapper",
       "sleep", "the delay between retries of a failing call", "the call succeeding; the retry count",
       spins=True, **_T),
    _B("torch.distributed.elastic.utils.api", "get_socket_with_port", "network", "DNS for 'localhost'",
       "the resolver", **_T),
    _B("torch.distributed.elastic.utils.distributed", "get_socket_with_port", "network", "DNS for 'localhost'",
       "the resolver", **_T),
    _B("torch.distributed.elastic.utils.distributed", "_check_full_rank", "rendezvous",
       "every rank to connect to the store (a store barrier)", _STORE_END, **_T),
    _B("torch.distributed.elastic.utils.store", "barrier", "rendezvous", "every member to arrive (store.wait)",
       _STORE_END, **_T),
    _B("torch.distributed.elastic.utils.store", "get_all", "rendezvous", "every rank's key, then a barrier",
       _STORE_END, **_T),
    _B("torch.distributed.elastic.utils.store", "synchronize", "rendezvous",
       "every rank's data on the store (set, then get_all)", _STORE_END, **_T),
    _B("torch.distributed.elastic.utils.store", "_barrier_nonblocking", "rendezvous",
       "the store server's answers to an add and a set (round trips)", "the store server answering", **_T),
    _B("torch.distributed.elastic.utils.store", "_try_detecting_missing_ranks", "rendezvous",
       "the store server's answers, then the tracing of which ranks are missing", "the store server; the ranks",
       **_T),
    _B("torch.distributed.elastic.utils.store", "_try_detecting_missing_ranks.<locals>._checkin", "rendezvous",
       "the tracing gate key", _STORE_END, **_T),
    _B("torch.distributed.elastic.utils.store", "_try_detecting_missing_ranks.<locals>._find_missing_ranks",
       "rendezvous", "each rank's trace key (timed waits)", "the ranks; the trace timeout", **_T),

    # ============================ torch.multiprocessing ===========================================
    _B("torch.multiprocessing.spawn", "ProcessContext.join", "child",
       "any spawned process to exit (multiprocessing.connection.wait on their sentinels)",
       "a process exiting (a failure terminates the others); the timeout", **_T),
    _B("torch.multiprocessing.spawn", "ProcessContext._join_procs_with_timeout", "child",
       "the other processes to exit after one failed", "their exit; the grace period", **_T),
    _B("torch.multiprocessing.spawn", "start_processes", "child",
       "the processes to start (a thread pool), then all of them to exit (join=True)",
       "the processes finishing", **_T),
    _B("torch.multiprocessing.queue", "ConnectionWrapper.recv", "ipc", "a pickled message on the pipe",
       _IPC_PEER, **_T),
    _B("torch.multiprocessing.queue", "ConnectionWrapper.send", "ipc", "room in the pipe", "the peer reading", **_T),
    _lock("torch.multiprocessing.reductions", "SharedCache.get", "the shared-storage cache's lock",
          versions=None),
    _lock("torch.multiprocessing.reductions", "SharedCache.__setitem__", "the shared-storage cache's lock",
          versions=None),

    # ============================ torch.compile (inductor) ========================================
    _B("torch._inductor.async_compile", "AsyncCompile.wait", "compile",
       "every kernel submitted to the compile workers (futures)", "the compile worker processes finishing",
       **_T),
    _B("torch._inductor.async_compile", "AsyncCompile._wait_futures", "compile",
       "the compile futures, one by one (timed)", "the compile workers; the timeout", **_T),
    _B("torch._inductor.async_compile", "AsyncCompile.wait_pool_ready", "compile",
       "the compile worker pool to be warmed up", "the workers starting; the timeout", **_T),
    _B("torch._inductor.async_compile", "AsyncCompile.triton", "compile", "a Triton kernel compiled in a worker",
       "the worker finishing", **_T),
    _B("torch._inductor.async_compile", "AsyncCompile.triton.<locals>.get_result", "compile",
       "a Triton kernel compiled in a worker", "the worker finishing", **_T),
    _B("torch._inductor.async_compile", "AsyncCompile.pallas.<locals>.<lambda>", "compile",
       "a Pallas kernel compiled in a worker", "the worker finishing", **_T),
    _B("torch._inductor.async_compile", "AsyncCompile.cutedsl.<locals>.get_result", "compile",
       "a CuTe DSL kernel compiled in a worker", "the worker finishing", **_T),
    _B("torch._inductor.async_compile", "AsyncCompile.nv_universal_gemm.<locals>.get_result", "compile",
       "a GEMM kernel compiled in a worker", "the worker finishing", **_T),
    _B("torch._inductor.compile_worker.subproc_pool", "_recv_msg", "ipc", "a message on the pool's pipe",
       "the other side (the parent's pool or the worker process) writing", **_T),
    _B("torch._inductor.compile_worker.subproc_pool", "_send_msg", "ipc", "room in the pool's pipe",
       "the other side reading", **_T),
    _B("torch._inductor.compile_worker.subproc_pool", "SubprocPool._read_thread", "ipc",
       "results from the compile subprocess", "the subprocess finishing jobs", background=True,
       note="thread 'InductorSubproc'", **_T),
    _B("torch._inductor.compile_worker.subproc_pool", "SubprocMain.main", "ipc",
       "jobs from the parent on its pipe", "the parent submitting compiles; the pipe closing", background=True,
       note="the compile worker process's loop", **_T),
    _lock("torch._inductor.compile_worker.subproc_pool", "SubprocPool._send", "the pool's write lock",
          versions=None),
    _lock("torch._inductor.compile_worker.subproc_pool", "SubprocPool.submit", "the pool's futures lock",
          versions=None),
    _B("torch._inductor.compile_worker.subproc_pool", "SubprocPool.shutdown", "child",
       "the compile subprocess to exit (wait(300))", "the subprocess exiting; 300 s", **_T),
    _lock("torch._inductor.compile_worker.subproc_pool", "SubprocMain._shutdown", "the worker's write lock",
          versions=None),
    _lock("torch._inductor.compile_worker.subproc_pool", "SubprocMain._submit_inner.<locals>.callback",
          "the worker's write lock (to send a finished job back)", versions=None),
    _B("torch._inductor.compile_worker.timer", "Timer.check", "sleep", "the timer's interval (a sleep loop)",
       "the interval; quit()", spins=True, background=True, **_T),
    _lock("torch._inductor.compile_worker.timer", "Timer.record_call", "the timer's lock", versions=None),
    _lock("torch._inductor.compile_worker.timer", "Timer.quit", "the timer's lock", versions=None),
    _lock("torch._inductor.compile_worker.tracked_process_pool", "TrackedProcessPoolExecutor.__init__",
          "the pool's queue-statistics lock", versions=None),
    _lock("torch._inductor.compile_worker.tracked_process_pool", "TrackedProcessPoolExecutor._record_enqueue",
          "the pool's queue-statistics lock", versions=None),
    _lock("torch._inductor.compile_worker.tracked_process_pool", "TrackedProcessPoolExecutor._record_dequeue",
          "the pool's queue-statistics lock", versions=None),
    _B("torch._inductor.compile_worker.utils", "_async_compile_initializer.<locals>.run", "sleep",
       "60 s between checks that the parent is alive", "the interval (it kills its own worker when orphaned)",
       spins=True, background=True, **_T),

    # ============================ files and downloads =============================================
    _B("torch.utils.file_baton", "FileBaton.wait", "file-wait",
       "the baton's lock file to disappear (a sleep loop)",
       "the process building the extension removing the file; nothing, if it died and left the file",
       spins=True, **_T),
    _B("torch.hub", "download_url_to_file", "network", "the next block of the download", "the server sending",
       **_T),
    _B("torch.hub", "_read_url", "network", "the whole response body", "the server sending", **_T),
    _B("torch.hub", "_check_repo_is_trusted", "prompt", "a yes/no answer on stdin", "a person answering", **_T),
)

ROWS = _STDLIB_THREADS_AND_IO + _STDLIB_MULTIPROCESSING + _STDLIB_ASYNCIO_AND_MISC + _TORCH


_WIN = "Windows-only: "
_SIMPLEQUEUE_PUT = "puts on a queue.SimpleQueue (C): put() never waits"
_MP_UNBOUNDED_PUT = ("puts on an unbounded multiprocessing.Queue: put() appends to the feeder thread's buffer "
                     "and returns")

NOT_BLOCKING = (
    # asyncio: only the loop's selector wait blocks a thread; its sockets, pipes and TLS are non-blocking
    NotBlocking("asyncio.selector_events", "*", "asyncio's sockets are non-blocking: recv/send/accept/connect "
                "return at once (BlockingIOError) and the loop waits in selector.select", only=("socket", "os-io")),
    NotBlocking("asyncio.trsock", "*", "TransportSocket's deprecated pass-throughs (3.8-3.10) to a transport's "
                "non-blocking socket", only=("socket",)),
    NotBlocking("asyncio.sslproto", "*", "TLS over memory BIOs (ssl.SSLObject): never waits on a socket",
                only=("ssl",)),
    NotBlocking("asyncio.proactor_events", "*", _WIN + "the proactor loop's overlapped calls return futures",
                only=("socket", "os-io", "windows")),
    NotBlocking("asyncio.windows_events", "*", _WIN + "IOCP proactor", only=("windows", "socket")),
    NotBlocking("asyncio.windows_utils", "*", _WIN + "named pipes", only=("windows",)),
    NotBlocking("asyncio.unix_events", "_UnixReadPipeTransport._read_ready",
                "reads a non-blocking pipe when the loop says it is readable"),
    NotBlocking("asyncio.unix_events", "_UnixWritePipeTransport.write", "writes a non-blocking pipe"),
    NotBlocking("asyncio.unix_events", "_UnixWritePipeTransport._write_ready", "writes a non-blocking pipe"),
    NotBlocking("asyncio.unix_events", "_UnixSelectorEventLoop._sock_sendfile_native_impl",
                "os.sendfile on a non-blocking socket, retried by the loop"),
    NotBlocking("ssl", "SSLObject.read", "memory-BIO TLS: works on buffers, never on a socket"),
    NotBlocking("ssl", "SSLObject.write", "memory-BIO TLS: works on buffers, never on a socket"),
    NotBlocking("ssl", "SSLObject.do_handshake", "memory-BIO TLS: works on buffers, never on a socket"),
    NotBlocking("ssl", "SSLObject.unwrap", "memory-BIO TLS: works on buffers, never on a socket"),
    # Windows-only (and one macOS-only) code of POSIX modules
    NotBlocking("multiprocessing.connection", "Pipe", _WIN + "named-pipe Pipe(); POSIX uses socketpair/os.pipe"),
    NotBlocking("multiprocessing.connection", "PipeClient", _WIN + "named pipes"),
    NotBlocking("multiprocessing.connection", "PipeListener.accept", _WIN + "named pipes"),
    NotBlocking("multiprocessing.connection", "PipeConnection._recv_bytes", _WIN + "named pipes"),
    NotBlocking("multiprocessing.connection", "PipeConnection._send_bytes", _WIN + "named pipes"),
    NotBlocking("multiprocessing.connection", "PipeConnection._get_more_data", _WIN + "named pipes"),
    NotBlocking("multiprocessing.connection", "_exhaustive_wait", _WIN + "WaitForMultipleObjects"),
    NotBlocking("multiprocessing.popen_spawn_win32", "Popen.wait", _WIN + "WaitForSingleObject"),
    NotBlocking("multiprocessing.reduction", "recv_handle", _WIN + "DuplicateHandle over a connection; "
                "POSIX passes fds in recvfds"),
    NotBlocking("multiprocessing.reduction", "send_handle", _WIN + "DuplicateHandle over a connection"),
    NotBlocking("multiprocessing.resource_sharer", "DupSocket.detach", _WIN + "socket sharing"),
    NotBlocking("multiprocessing.resource_sharer", "DupSocket.__init__.<locals>.send", _WIN + "socket sharing"),
    NotBlocking("subprocess", "Popen._readerthread", _WIN + "communicate()'s reader threads; POSIX reads the "
                "pipes through a selector in the calling thread (Popen._communicate)"),
    NotBlocking("subprocess", "Popen._internal_poll", _WIN + "WaitForSingleObject(0); the POSIX poll() uses "
                "waitpid(WNOHANG)"),
    NotBlocking("selectors", "SelectSelector._select", _WIN + "on POSIX _select is select.select itself (C), "
                "so SelectSelector.select is the frame"),
    NotBlocking("urllib.request", "proxy_bypass_registry", _WIN + "the registry's proxy settings"),
    NotBlocking("urllib.request", "_proxy_bypass_macosx_sysconf", "macOS-only: called by proxy_bypass on darwin"),
    NotBlocking("socket", "socketpair", "the fallback for platforms without socketpair() (Windows): on Linux "
                "socket.socketpair is the C call", only=("socket",)),
    NotBlocking("socket", "_fallback_socketpair", "the fallback for platforms without socketpair() (3.13 name)"),
    # a lock just created, a queue that never fills, a pipe read when it is ready
    NotBlocking("threading", "Thread._reset_internal_locks", "after fork: acquires the thread's tstate lock "
                "just re-initialised in the child (free)"),
    NotBlocking("concurrent.futures.thread", "ThreadPoolExecutor._adjust_thread_count.<locals>.weakref_cb",
                _SIMPLEQUEUE_PUT),
    NotBlocking("multiprocessing.pool", "Pool.apply_async", _SIMPLEQUEUE_PUT + " (the pool's task queue)"),
    NotBlocking("multiprocessing.pool", "Pool._map_async", _SIMPLEQUEUE_PUT + " (the pool's task queue)"),
    NotBlocking("multiprocessing.pool", "Pool.imap", _SIMPLEQUEUE_PUT + " (the pool's task queue)"),
    NotBlocking("multiprocessing.pool", "Pool.imap_unordered", _SIMPLEQUEUE_PUT + " (the pool's task queue)"),
    NotBlocking("multiprocessing.pool", "ThreadPool._help_stuff_finish", _SIMPLEQUEUE_PUT + " (a ThreadPool's "
                "inqueue); its gets are get(block=False)"),
    # torch
    NotBlocking("torch.distributed.distributed_c10d", "isend", "returns the Work at once (async point-to-point)"),
    NotBlocking("torch.distributed.distributed_c10d", "irecv", "returns the Work at once (async point-to-point)"),
    NotBlocking("torch.cuda.streams", "Event.wait", "makes a stream wait for the event on the GPU; the host "
                "does not wait"),
    NotBlocking("torch.cuda.streams", "Stream.wait_event", "makes the stream wait on the GPU; the host does not "
                "wait"),
    NotBlocking("torch.distributed.elastic.timer.api", "expires", "the timer client's acquire() sends a request "
                "and returns (it is not a lock)"),
    NotBlocking("torch.distributed.elastic.timer.local_timer", "LocalTimerClient.acquire", _MP_UNBOUNDED_PUT),
    NotBlocking("torch.distributed.elastic.timer.local_timer", "LocalTimerClient.release", _MP_UNBOUNDED_PUT),
    NotBlocking("torch.utils.data.dataloader", "_MultiProcessingDataLoaderIter._try_put_index",
                _MP_UNBOUNDED_PUT + " (a worker's index queue)"),
    NotBlocking("torch.utils.data.dataloader", "_MultiProcessingDataLoaderIter._mark_worker_as_unavailable",
                _MP_UNBOUNDED_PUT + " (a worker's index queue)"),
    NotBlocking("torch.utils.data.dataloader", "_MultiProcessingDataLoaderIter._reset",
                _MP_UNBOUNDED_PUT + " (the workers' index queues)"),
    NotBlocking("torch.utils.data._utils.worker", "ManagerWatchdog.is_alive", _WIN + "WaitForSingleObject(0)"),
)

BY_KEY = {row.key: row for row in ROWS}


# --- frames ----------------------------------------------------------------------------------

_FROZEN = re.compile(r"^<frozen ([\w.]+)>$")
_VERSION = re.compile(r"(?:^|/)python3\.(\d+)t?/")
_TORCH_PATH = re.compile(r"(?:^|/)(torch/(?:[\w.-]+/)*[\w.-]+)\.py$")
_STDLIB_PATH = re.compile(r"(?:^|/)(?:python3\.\d+t?|Lib)/((?:[\w-]+/)*[\w-]+)\.py$")
_COMPREHENSIONS = ("<listcomp>", "<dictcomp>", "<setcomp>", "<genexpr>")


def _module_name(rel):
    parts = rel.split("/")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@lru_cache(maxsize=4096)
def module_of(filename):
    """(module, python minor version or None) of a frame's file, for files this table knows:
    `/usr/lib/python3.10/multiprocessing/queues.py` -> ('multiprocessing.queues', 10);
    `<frozen importlib._bootstrap>` -> ('importlib._bootstrap', None);
    `.../python3.11/site-packages/torch/cuda/__init__.py` -> ('torch.cuda', 11)."""
    filename = canonical_file(filename)
    frozen = _FROZEN.match(filename)
    if frozen:
        return frozen.group(1), None
    version = _VERSION.search(filename)
    minor = int(version.group(1)) if version else None
    torch = _TORCH_PATH.search(filename)
    if torch and ("site-packages/" in filename or "dist-packages/" in filename or "/torch/" in filename):
        return _module_name(torch.group(1)), minor
    stdlib = _STDLIB_PATH.search(filename)
    if stdlib and not stdlib.group(1).startswith(("site-packages/", "dist-packages/")):
        return _module_name(stdlib.group(1)), minor
    return None


def _index():
    by_module, bare = {}, {}
    for row in ROWS:
        by_module.setdefault(row.module, {})[row.function] = row
        bare.setdefault((row.module, row.bare), []).append(row)
    return by_module, bare


_BY_MODULE, _BY_BARE = _index()


def frame_row(function, filename, line=None):
    """The row of one frame (py-spy's function name in either naming style, its file, its line),
    or None."""
    where = module_of(filename)
    if where is None or not function:
        return None
    module, minor = where
    rows = _BY_MODULE.get(module)
    if not rows:
        return None
    version = (3, minor) if minor is not None else None
    exact = rows.get(function)
    if "." in function or (minor is not None and minor >= 11):
        return exact if exact is not None and exact.in_version(version) else None
    # a bare co_name (3.8-3.10, or a frozen module of unknown version)
    candidates = [r for r in _BY_BARE.get((module, function), ()) if r.in_version(version)]
    if not candidates:
        return None
    if (module, function) not in _LINES:
        return candidates[0]      # the only function of its file with this name
    return _by_line(module, function, candidates, line, minor)


def _by_line(module, bare, candidates, line, minor):
    """Of the functions of one file sharing a bare name (rows or not: threading.py's `run` is
    Thread.run as well as Timer.run), the one whose definition spans the line in that Python's
    source (from the path), else the nearest span; None when that is not a row.  Without a line,
    the first candidate row."""
    if line is None:
        return candidates[0]
    spans = _LINES[(module, bare)]
    key = "torch" if module.split(".")[0] == "torch" else minor
    pools = [spans[key]] if key in spans else [spans[k] for k in sorted(spans, key=str)]
    best = None
    for pool in pools:
        for start, end, function in pool:
            distance = 0 if start <= line <= end else min(abs(line - start), abs(line - end))
            if best is None or distance < best[0]:
                best = (distance, function)
    names = {r.function: r for r in candidates}
    return names.get(best[1]) if best else candidates[0]


def _python_frame(frame):
    """A frame of Python code (not a native frame of --native), and not a comprehension's (the
    enclosing function's, from 3.12 on inlined into it)."""
    filename, function = frame[1] or "", frame[0] or ""
    if not (filename.endswith((".py", ".pyw")) or filename.startswith("<")):
        return False
    return not function.endswith(_COMPREHENSIONS)


def blocking_frames(stack):
    """[(depth, row)] of a leaf-first stack: the innermost Python frame if it is a row, and each
    caller after it while they are rows too (Condition.wait, Event.wait, Thread.start); [] when the
    innermost Python frame is not a blocking function (the thread runs code, or waits somewhere
    this table does not know)."""
    found = []
    for depth, frame in enumerate(stack or []):
        if not _python_frame(frame):
            continue
        row = frame_row(frame[0], frame[1], frame[2] if len(frame) > 2 else None)
        if row is None:
            break
        found.append((depth, row))
    return found


def blocking_frame(stack):
    """(depth, row) of the innermost frame of a leaf-first py-spy stack, when it is a blocking
    function: what the thread waits on and who ends the wait.  Native frames (--native) and
    comprehension frames are looked through.  A row further out, above Python frames that are not
    rows, is not a wait (every thread's stack has Thread._bootstrap_inner)."""
    found = blocking_frames(stack)
    return found[0] if found else None


def background_thread(stack):
    """The row of the library loop a thread (or helper process) runs, the outermost such frame
    (the pool's worker loop, a queue feeder, an executor's manager thread), or None."""
    for frame in reversed(stack or []):
        if not _python_frame(frame):
            continue
        row = frame_row(frame[0], frame[1], frame[2] if len(frame) > 2 else None)
        if row is not None and row.background:
            return row
    return None


# --- coverage of an enumeration --------------------------------------------------------------

@typed_record
class Coverage:
    label: str
    enumerated: int
    rows: int
    not_blocking: int
    missing: list        # keys neither in the table (for this version) nor in NOT_BLOCKING
    misplaced: list      # Windows-only functions given a row instead of a NOT_BLOCKING reason

    def summary(self):
        return "%s: %d enumerated, %d known (%d rows, %d NOT_BLOCKING)%s%s" % (
            self.label, self.enumerated, self.rows + self.not_blocking, self.rows, self.not_blocking,
            "; %d MISSING" % len(self.missing) if self.missing else "",
            "; %d Windows-only given a row" % len(self.misplaced) if self.misplaced else "")


def not_blocking(module, function, classes=()):
    """The NOT_BLOCKING entry covering a function, or None."""
    return next((n for n in NOT_BLOCKING if n.covers(module, function, classes)), None)


def coverage(found, version=None):
    """How the table covers an enumeration ({(module, function): item with .classes and
    .windows_only}, from tools/enumerate_blocking.py) of one Python version (None: PyTorch)."""
    rows = nb = 0
    missing, misplaced = [], []
    for key in sorted(found):
        item = found[key]
        row = BY_KEY.get(key)
        if item.windows_only:
            if not_blocking(key[0], key[1], item.classes) is not None:
                nb += 1
            elif row is not None:
                misplaced.append(key)
            else:
                missing.append(key)
        elif row is not None and row.in_version(version):
            rows += 1
        elif not_blocking(key[0], key[1], item.classes) is not None:
            nb += 1
        else:
            missing.append(key)
    label = "%d.%d" % tuple(version[:2]) if version else "torch"
    return Coverage(label, len(found), rows, nb, missing, misplaced)


# --- generated: line spans of the functions that share a row's bare name in its file ---------------
# For 3.8-3.10 (bare co_names) and the installed PyTorch; the test keeps it current.
# {(module, bare name): {python minor (or "torch"): ((first line, last line, qualified name), ...)}}
# BEGIN GENERATED _LINES (python3 tools/enumerate_blocking.py --write-lines)
_LINES = {
    ('asyncio.unix_events', '__enter__'): {
        8: ((870, 874, 'AbstractChildWatcher.__enter__'), (963, 964, 'SafeChildWatcher.__enter__'), (1043, 1047, 'FastChildWatcher.__enter__'), (1165, 1166, 'MultiLoopChildWatcher.__enter__'), (1282, 1283, 'ThreadedChildWatcher.__enter__')),
        9: ((870, 874, 'AbstractChildWatcher.__enter__'), (897, 898, 'PidfdChildWatcher.__enter__'), (1041, 1042, 'SafeChildWatcher.__enter__'), (1121, 1125, 'FastChildWatcher.__enter__'), (1243, 1244, 'MultiLoopChildWatcher.__enter__'), (1360, 1361, 'ThreadedChildWatcher.__enter__')),
        10: ((880, 884, 'AbstractChildWatcher.__enter__'), (907, 908, 'PidfdChildWatcher.__enter__'), (1037, 1038, 'SafeChildWatcher.__enter__'), (1117, 1121, 'FastChildWatcher.__enter__'), (1239, 1240, 'MultiLoopChildWatcher.__enter__'), (1356, 1357, 'ThreadedChildWatcher.__enter__')),
    },
    ('asyncio.unix_events', '__exit__'): {
        8: ((876, 878, 'AbstractChildWatcher.__exit__'), (966, 967, 'SafeChildWatcher.__exit__'), (1049, 1061, 'FastChildWatcher.__exit__'), (1168, 1169, 'MultiLoopChildWatcher.__exit__'), (1285, 1286, 'ThreadedChildWatcher.__exit__')),
        9: ((876, 878, 'AbstractChildWatcher.__exit__'), (900, 901, 'PidfdChildWatcher.__exit__'), (1044, 1045, 'SafeChildWatcher.__exit__'), (1127, 1139, 'FastChildWatcher.__exit__'), (1246, 1247, 'MultiLoopChildWatcher.__exit__'), (1363, 1364, 'ThreadedChildWatcher.__exit__')),
        10: ((886, 888, 'AbstractChildWatcher.__exit__'), (910, 911, 'PidfdChildWatcher.__exit__'), (1040, 1041, 'SafeChildWatcher.__exit__'), (1123, 1135, 'FastChildWatcher.__exit__'), (1242, 1243, 'MultiLoopChildWatcher.__exit__'), (1359, 1360, 'ThreadedChildWatcher.__exit__')),
    },
    ('asyncio.unix_events', '_do_waitpid'): {
        8: ((907, 908, 'BaseChildWatcher._do_waitpid'), (987, 1019, 'SafeChildWatcher._do_waitpid'), (1206, 1241, 'MultiLoopChildWatcher._do_waitpid'), (1314, 1338, 'ThreadedChildWatcher._do_waitpid')),
        9: ((985, 986, 'BaseChildWatcher._do_waitpid'), (1065, 1097, 'SafeChildWatcher._do_waitpid'), (1284, 1319, 'MultiLoopChildWatcher._do_waitpid'), (1392, 1416, 'ThreadedChildWatcher._do_waitpid')),
        10: ((981, 982, 'BaseChildWatcher._do_waitpid'), (1061, 1093, 'SafeChildWatcher._do_waitpid'), (1280, 1315, 'MultiLoopChildWatcher._do_waitpid'), (1388, 1412, 'ThreadedChildWatcher._do_waitpid')),
    },
    ('asyncio.unix_events', '_do_waitpid_all'): {
        8: ((910, 911, 'BaseChildWatcher._do_waitpid_all'), (982, 985, 'SafeChildWatcher._do_waitpid_all'), (1084, 1124, 'FastChildWatcher._do_waitpid_all'), (1202, 1204, 'MultiLoopChildWatcher._do_waitpid_all')),
        9: ((988, 989, 'BaseChildWatcher._do_waitpid_all'), (1060, 1063, 'SafeChildWatcher._do_waitpid_all'), (1162, 1202, 'FastChildWatcher._do_waitpid_all'), (1280, 1282, 'MultiLoopChildWatcher._do_waitpid_all')),
        10: ((984, 985, 'BaseChildWatcher._do_waitpid_all'), (1056, 1059, 'SafeChildWatcher._do_waitpid_all'), (1158, 1198, 'FastChildWatcher._do_waitpid_all'), (1276, 1278, 'MultiLoopChildWatcher._do_waitpid_all')),
    },
    ('asyncio.unix_events', 'add_child_handler'): {
        8: ((825, 834, 'AbstractChildWatcher.add_child_handler'), (969, 973, 'SafeChildWatcher.add_child_handler'), (1063, 1075, 'FastChildWatcher.add_child_handler'), (1171, 1176, 'MultiLoopChildWatcher.add_child_handler'), (1296, 1303, 'ThreadedChildWatcher.add_child_handler')),
        9: ((825, 834, 'AbstractChildWatcher.add_child_handler'), (921, 928, 'PidfdChildWatcher.add_child_handler'), (1047, 1051, 'SafeChildWatcher.add_child_handler'), (1141, 1153, 'FastChildWatcher.add_child_handler'), (1249, 1254, 'MultiLoopChildWatcher.add_child_handler'), (1374, 1381, 'ThreadedChildWatcher.add_child_handler')),
        10: ((835, 844, 'AbstractChildWatcher.add_child_handler'), (931, 938, 'PidfdChildWatcher.add_child_handler'), (1043, 1047, 'SafeChildWatcher.add_child_handler'), (1137, 1149, 'FastChildWatcher.add_child_handler'), (1245, 1250, 'MultiLoopChildWatcher.add_child_handler'), (1370, 1377, 'ThreadedChildWatcher.add_child_handler')),
    },
    ('concurrent.futures._base', '__enter__'): {
        8: ((148, 150, '_AcquireFutures.__enter__'), (640, 641, 'Executor.__enter__')),
        9: ((149, 151, '_AcquireFutures.__enter__'), (633, 634, 'Executor.__enter__')),
        10: ((149, 151, '_AcquireFutures.__enter__'), (645, 646, 'Executor.__enter__')),
    },
    ('concurrent.futures._base', 'add_cancelled'): {
        8: ((72, 73, '_Waiter.add_cancelled'), (92, 95, '_AsCompletedWaiter.add_cancelled'), (108, 110, '_FirstCompletedWaiter.add_cancelled'), (138, 140, '_AllCompletedWaiter.add_cancelled')),
        9: ((73, 74, '_Waiter.add_cancelled'), (93, 96, '_AsCompletedWaiter.add_cancelled'), (109, 111, '_FirstCompletedWaiter.add_cancelled'), (139, 141, '_AllCompletedWaiter.add_cancelled')),
        10: ((73, 74, '_Waiter.add_cancelled'), (93, 96, '_AsCompletedWaiter.add_cancelled'), (109, 111, '_FirstCompletedWaiter.add_cancelled'), (139, 141, '_AllCompletedWaiter.add_cancelled')),
    },
    ('concurrent.futures._base', 'add_exception'): {
        8: ((69, 70, '_Waiter.add_exception'), (87, 90, '_AsCompletedWaiter.add_exception'), (104, 106, '_FirstCompletedWaiter.add_exception'), (131, 136, '_AllCompletedWaiter.add_exception')),
        9: ((70, 71, '_Waiter.add_exception'), (88, 91, '_AsCompletedWaiter.add_exception'), (105, 107, '_FirstCompletedWaiter.add_exception'), (132, 137, '_AllCompletedWaiter.add_exception')),
        10: ((70, 71, '_Waiter.add_exception'), (88, 91, '_AsCompletedWaiter.add_exception'), (105, 107, '_FirstCompletedWaiter.add_exception'), (132, 137, '_AllCompletedWaiter.add_exception')),
    },
    ('concurrent.futures._base', 'add_result'): {
        8: ((66, 67, '_Waiter.add_result'), (82, 85, '_AsCompletedWaiter.add_result'), (100, 102, '_FirstCompletedWaiter.add_result'), (127, 129, '_AllCompletedWaiter.add_result')),
        9: ((67, 68, '_Waiter.add_result'), (83, 86, '_AsCompletedWaiter.add_result'), (101, 103, '_FirstCompletedWaiter.add_result'), (128, 130, '_AllCompletedWaiter.add_result')),
        10: ((67, 68, '_Waiter.add_result'), (83, 86, '_AsCompletedWaiter.add_result'), (101, 103, '_FirstCompletedWaiter.add_result'), (128, 130, '_AllCompletedWaiter.add_result')),
    },
    ('http.server', 'server_bind'): {
        8: ((137, 142, 'HTTPServer.server_bind'), (1304, 1309, 'DualStackServer.server_bind')),
        9: ((135, 140, 'HTTPServer.server_bind'), (1297, 1302, 'DualStackServer.server_bind')),
        10: ((135, 140, 'HTTPServer.server_bind'), (1296, 1301, 'DualStackServer.server_bind')),
    },
    ('importlib._bootstrap', '__enter__'): {
        8: ((147, 149, '_ModuleLockManager.__enter__'), (863, 865, '_ImportLockContext.__enter__')),
        9: ((156, 158, '_ModuleLockManager.__enter__'), (874, 876, '_ImportLockContext.__enter__')),
        10: ((169, 171, '_ModuleLockManager.__enter__'), (893, 895, '_ImportLockContext.__enter__')),
    },
    ('importlib._bootstrap', 'acquire'): {
        8: ((78, 101, '_ModuleLock.acquire'), (128, 130, '_DummyModuleLock.acquire')),
        9: ((87, 110, '_ModuleLock.acquire'), (137, 139, '_DummyModuleLock.acquire')),
        10: ((100, 123, '_ModuleLock.acquire'), (150, 152, '_DummyModuleLock.acquire')),
    },
    ('importlib._bootstrap', 'release'): {
        8: ((103, 114, '_ModuleLock.release'), (132, 135, '_DummyModuleLock.release')),
        9: ((112, 123, '_ModuleLock.release'), (141, 144, '_DummyModuleLock.release')),
        10: ((125, 136, '_ModuleLock.release'), (154, 157, '_DummyModuleLock.release')),
    },
    ('logging', 'close'): {
        8: ((974, 989, 'Handler.close'), (1149, 1169, 'FileHandler.close')),
        9: ((972, 987, 'Handler.close'), (1148, 1168, 'FileHandler.close')),
        10: ((988, 1004, 'Handler.close'), (1171, 1193, 'FileHandler.close')),
    },
    ('logging', 'emit'): {
        8: ((931, 939, 'Handler.emit'), (1073, 1093, 'StreamHandler.emit'), (1178, 1187, 'FileHandler.emit'), (2160, 2161, 'NullHandler.emit')),
        9: ((929, 937, 'Handler.emit'), (1071, 1091, 'StreamHandler.emit'), (1178, 1187, 'FileHandler.emit'), (2175, 2176, 'NullHandler.emit')),
        10: ((945, 953, 'Handler.emit'), (1088, 1108, 'StreamHandler.emit'), (1204, 1218, 'FileHandler.emit'), (2216, 2217, 'NullHandler.emit')),
    },
    ('logging', 'flush'): {
        8: ((965, 972, 'Handler.flush'), (1062, 1071, 'StreamHandler.flush')),
        9: ((963, 970, 'Handler.flush'), (1060, 1069, 'StreamHandler.flush')),
        10: ((979, 986, 'Handler.flush'), (1077, 1086, 'StreamHandler.flush')),
    },
    ('logging', 'getLogger'): {
        8: ((1284, 1316, 'Manager.getLogger'), (2018, 2027, 'getLogger')),
        9: ((1284, 1316, 'Manager.getLogger'), (2034, 2042, 'getLogger')),
        10: ((1315, 1347, 'Manager.getLogger'), (2071, 2079, 'getLogger')),
    },
    ('logging', 'handle'): {
        8: ((941, 957, 'Handler.handle'), (1591, 1599, 'Logger.handle'), (2157, 2158, 'NullHandler.handle')),
        9: ((939, 955, 'Handler.handle'), (1591, 1599, 'Logger.handle'), (2172, 2173, 'NullHandler.handle')),
        10: ((955, 971, 'Handler.handle'), (1626, 1634, 'Logger.handle'), (2213, 2214, 'NullHandler.handle')),
    },
    ('logging', 'isEnabledFor'): {
        8: ((1689, 1709, 'Logger.isEnabledFor'), (1846, 1850, 'LoggerAdapter.isEnabledFor')),
        9: ((1689, 1709, 'Logger.isEnabledFor'), (1846, 1850, 'LoggerAdapter.isEnabledFor')),
        10: ((1724, 1744, 'Logger.isEnabledFor'), (1881, 1885, 'LoggerAdapter.isEnabledFor')),
    },
    ('logging.config', '__init__'): {
        8: ((372, 374, 'BaseConfigurator.__init__'), (884, 892, 'listen.<locals>.ConfigSocketReceiver.__init__'), (910, 916, 'listen.<locals>.Server.__init__')),
        9: ((373, 375, 'BaseConfigurator.__init__'), (885, 893, 'listen.<locals>.ConfigSocketReceiver.__init__'), (911, 917, 'listen.<locals>.Server.__init__')),
        10: ((374, 376, 'BaseConfigurator.__init__'), (887, 895, 'listen.<locals>.ConfigSocketReceiver.__init__'), (913, 919, 'listen.<locals>.Server.__init__')),
    },
    ('logging.handlers', '__init__'): {
        8: ((51, 59, 'BaseRotatingHandler.__init__'), (120, 150, 'RotatingFileHandler.__init__'), (199, 254, 'TimedRotatingFileHandler.__init__'), (434, 437, 'WatchedFileHandler.__init__'), (496, 519, 'SocketHandler.__init__'), (661, 666, 'DatagramHandler.__init__'), (795, 847, 'SysLogHandler.__init__'), (950, 983, 'SMTPHandler.__init__'), (1036, 1060, 'NTEventLogHandler.__init__'), (1129, 1147, 'HTTPHandler.__init__'), (1209, 1215, 'BufferingHandler.__init__'), (1266, 1284, 'MemoryHandler.__init__'), (1348, 1353, 'QueueHandler.__init__'), (1414, 1422, 'QueueListener.__init__')),
        9: ((54, 63, 'BaseRotatingHandler.__init__'), (124, 156, 'RotatingFileHandler.__init__'), (208, 266, 'TimedRotatingFileHandler.__init__'), (468, 474, 'WatchedFileHandler.__init__'), (533, 556, 'SocketHandler.__init__'), (698, 703, 'DatagramHandler.__init__'), (839, 891, 'SysLogHandler.__init__'), (994, 1027, 'SMTPHandler.__init__'), (1080, 1104, 'NTEventLogHandler.__init__'), (1173, 1191, 'HTTPHandler.__init__'), (1264, 1270, 'BufferingHandler.__init__'), (1321, 1339, 'MemoryHandler.__init__'), (1403, 1408, 'QueueHandler.__init__'), (1469, 1477, 'QueueListener.__init__')),
        10: ((54, 63, 'BaseRotatingHandler.__init__'), (124, 158, 'RotatingFileHandler.__init__'), (210, 269, 'TimedRotatingFileHandler.__init__'), (475, 483, 'WatchedFileHandler.__init__'), (542, 565, 'SocketHandler.__init__'), (707, 712, 'DatagramHandler.__init__'), (848, 900, 'SysLogHandler.__init__'), (1003, 1036, 'SMTPHandler.__init__'), (1089, 1122, 'NTEventLogHandler.__init__'), (1191, 1209, 'HTTPHandler.__init__'), (1282, 1288, 'BufferingHandler.__init__'), (1339, 1357, 'MemoryHandler.__init__'), (1421, 1426, 'QueueHandler.__init__'), (1488, 1496, 'QueueListener.__init__')),
    },
    ('logging.handlers', 'close'): {
        8: ((636, 648, 'SocketHandler.close'), (886, 895, 'SysLogHandler.close'), (1111, 1122, 'NTEventLogHandler.close'), (1249, 1258, 'BufferingHandler.close'), (1320, 1334, 'MemoryHandler.close')),
        9: ((673, 685, 'SocketHandler.close'), (930, 939, 'SysLogHandler.close'), (1155, 1166, 'NTEventLogHandler.close'), (1304, 1313, 'BufferingHandler.close'), (1375, 1389, 'MemoryHandler.close')),
        10: ((682, 694, 'SocketHandler.close'), (939, 948, 'SysLogHandler.close'), (1173, 1184, 'NTEventLogHandler.close'), (1322, 1331, 'BufferingHandler.close'), (1393, 1407, 'MemoryHandler.close')),
    },
    ('logging.handlers', 'emit'): {
        8: ((61, 73, 'BaseRotatingHandler.emit'), (472, 480, 'WatchedFileHandler.emit'), (621, 634, 'SocketHandler.emit'), (910, 944, 'SysLogHandler.emit'), (994, 1024, 'SMTPHandler.emit'), (1094, 1109, 'NTEventLogHandler.emit'), (1157, 1201, 'HTTPHandler.emit'), (1226, 1235, 'BufferingHandler.emit'), (1394, 1403, 'QueueHandler.emit')),
        9: ((65, 77, 'BaseRotatingHandler.emit'), (509, 517, 'WatchedFileHandler.emit'), (658, 671, 'SocketHandler.emit'), (954, 988, 'SysLogHandler.emit'), (1038, 1068, 'SMTPHandler.emit'), (1138, 1153, 'NTEventLogHandler.emit'), (1215, 1256, 'HTTPHandler.emit'), (1281, 1290, 'BufferingHandler.emit'), (1449, 1458, 'QueueHandler.emit')),
        10: ((65, 77, 'BaseRotatingHandler.emit'), (518, 526, 'WatchedFileHandler.emit'), (667, 680, 'SocketHandler.emit'), (963, 997, 'SysLogHandler.emit'), (1047, 1077, 'SMTPHandler.emit'), (1156, 1171, 'NTEventLogHandler.emit'), (1233, 1274, 'HTTPHandler.emit'), (1299, 1308, 'BufferingHandler.emit'), (1468, 1477, 'QueueHandler.emit')),
    },
    ('logging.handlers', 'flush'): {
        8: ((1237, 1247, 'BufferingHandler.flush'), (1303, 1318, 'MemoryHandler.flush')),
        9: ((1292, 1302, 'BufferingHandler.flush'), (1358, 1373, 'MemoryHandler.flush')),
        10: ((1310, 1320, 'BufferingHandler.flush'), (1376, 1391, 'MemoryHandler.flush')),
    },
    ('logging.handlers', 'makeSocket'): {
        8: ((521, 536, 'SocketHandler.makeSocket'), (668, 678, 'DatagramHandler.makeSocket')),
        9: ((558, 573, 'SocketHandler.makeSocket'), (705, 715, 'DatagramHandler.makeSocket')),
        10: ((567, 582, 'SocketHandler.makeSocket'), (714, 724, 'DatagramHandler.makeSocket')),
    },
    ('logging.handlers', 'send'): {
        8: ((566, 583, 'SocketHandler.send'), (680, 690, 'DatagramHandler.send')),
        9: ((603, 620, 'SocketHandler.send'), (717, 727, 'DatagramHandler.send')),
        10: ((612, 629, 'SocketHandler.send'), (726, 736, 'DatagramHandler.send')),
    },
    ('multiprocessing.connection', 'accept'): {
        8: ((455, 467, 'Listener.accept'), (608, 611, 'SocketListener.accept'), (666, 687, 'PipeListener.accept'), (788, 792, 'XmlListener.accept')),
        9: ((455, 467, 'Listener.accept'), (608, 611, 'SocketListener.accept'), (666, 687, 'PipeListener.accept'), (788, 792, 'XmlListener.accept')),
        10: ((455, 467, 'Listener.accept'), (608, 611, 'SocketListener.accept'), (666, 687, 'PipeListener.accept'), (788, 792, 'XmlListener.accept')),
    },
    ('multiprocessing.connection', 'recv'): {
        8: ((246, 251, '_ConnectionBase.recv'), (776, 778, 'ConnectionWrapper.recv')),
        9: ((246, 251, '_ConnectionBase.recv'), (776, 778, 'ConnectionWrapper.recv')),
        10: ((246, 251, '_ConnectionBase.recv'), (776, 778, 'ConnectionWrapper.recv')),
    },
    ('multiprocessing.connection', 'send'): {
        8: ((202, 206, '_ConnectionBase.send'), (773, 775, 'ConnectionWrapper.send')),
        9: ((202, 206, '_ConnectionBase.send'), (773, 775, 'ConnectionWrapper.send')),
        10: ((202, 206, '_ConnectionBase.send'), (773, 775, 'ConnectionWrapper.send')),
    },
    ('multiprocessing.managers', '__init__'): {
        8: ((66, 67, 'Token.__init__'), (144, 160, 'Server.__init__'), (516, 526, 'BaseManager.__init__'), (756, 757, 'ProcessLocalSet.__init__'), (772, 811, 'BaseProxy.__init__'), (1017, 1018, 'Namespace.__init__'), (1029, 1031, 'Value.__init__'), (1251, 1253, '_SharedMemoryTracker.__init__'), (1290, 1298, 'SharedMemoryServer.__init__'), (1353, 1363, 'SharedMemoryManager.__init__')),
        9: ((68, 69, 'Token.__init__'), (146, 162, 'Server.__init__'), (491, 501, 'BaseManager.__init__'), (731, 732, 'ProcessLocalSet.__init__'), (747, 786, 'BaseProxy.__init__'), (992, 993, 'Namespace.__init__'), (1004, 1006, 'Value.__init__'), (1228, 1230, '_SharedMemoryTracker.__init__'), (1267, 1275, 'SharedMemoryServer.__init__'), (1319, 1329, 'SharedMemoryManager.__init__')),
        10: ((68, 69, 'Token.__init__'), (146, 162, 'Server.__init__'), (499, 509, 'BaseManager.__init__'), (739, 740, 'ProcessLocalSet.__init__'), (755, 794, 'BaseProxy.__init__'), (1000, 1001, 'Namespace.__init__'), (1012, 1014, 'Value.__init__'), (1236, 1238, '_SharedMemoryTracker.__init__'), (1275, 1283, 'SharedMemoryServer.__init__'), (1327, 1337, 'SharedMemoryManager.__init__')),
    },
    ('multiprocessing.managers', 'create'): {
        8: ((363, 423, 'Server.create'), (1300, 1318, 'SharedMemoryServer.create')),
        9: ((365, 399, 'Server.create'), (1277, 1285, 'SharedMemoryServer.create')),
        10: ((373, 407, 'Server.create'), (1285, 1293, 'SharedMemoryServer.create')),
    },
    ('multiprocessing.managers', 'shutdown'): {
        8: ((350, 361, 'Server.shutdown'), (1321, 1324, 'SharedMemoryServer.shutdown')),
        9: ((352, 363, 'Server.shutdown'), (1287, 1290, 'SharedMemoryServer.shutdown')),
        10: ((360, 371, 'Server.shutdown'), (1295, 1298, 'SharedMemoryServer.shutdown')),
    },
    ('multiprocessing.pool', '__init__'): {
        8: ((58, 59, 'RemoteTraceback.__init__'), (64, 68, 'ExceptionWithTraceback.__init__'), (84, 87, 'MaybeEncodingError.__init__'), (157, 159, '_PoolCache.__init__'), (183, 259, 'Pool.__init__'), (744, 751, 'ApplyResult.__init__'), (791, 802, 'MapResult.__init__'), (834, 843, 'IMapIterator.__init__'), (924, 925, 'ThreadPool.__init__')),
        9: ((58, 59, 'RemoteTraceback.__init__'), (64, 68, 'ExceptionWithTraceback.__init__'), (84, 87, 'MaybeEncodingError.__init__'), (157, 159, '_PoolCache.__init__'), (183, 259, 'Pool.__init__'), (744, 751, 'ApplyResult.__init__'), (793, 804, 'MapResult.__init__'), (836, 845, 'IMapIterator.__init__'), (926, 927, 'ThreadPool.__init__')),
        10: ((58, 59, 'RemoteTraceback.__init__'), (64, 68, 'ExceptionWithTraceback.__init__'), (84, 87, 'MaybeEncodingError.__init__'), (157, 159, '_PoolCache.__init__'), (183, 262, 'Pool.__init__'), (747, 754, 'ApplyResult.__init__'), (796, 807, 'MapResult.__init__'), (839, 848, 'IMapIterator.__init__'), (929, 930, 'ThreadPool.__init__')),
    },
    ('multiprocessing.pool', '_help_stuff_finish'): {
        8: ((669, 675, 'Pool._help_stuff_finish'), (941, 949, 'ThreadPool._help_stuff_finish')),
        9: ((669, 675, 'Pool._help_stuff_finish'), (943, 951, 'ThreadPool._help_stuff_finish')),
        10: ((672, 678, 'Pool._help_stuff_finish'), (946, 954, 'ThreadPool._help_stuff_finish')),
    },
    ('multiprocessing.pool', '_set'): {
        8: ((773, 781, 'ApplyResult._set'), (804, 826, 'MapResult._set'), (872, 887, 'IMapIterator._set'), (903, 910, 'IMapUnorderedIterator._set')),
        9: ((773, 781, 'ApplyResult._set'), (806, 828, 'MapResult._set'), (874, 889, 'IMapIterator._set'), (905, 912, 'IMapUnorderedIterator._set')),
        10: ((776, 784, 'ApplyResult._set'), (809, 831, 'MapResult._set'), (877, 892, 'IMapIterator._set'), (908, 915, 'IMapUnorderedIterator._set')),
    },
    ('multiprocessing.pool', '_wait_for_updates'): {
        8: ((498, 501, 'Pool._wait_for_updates'), (951, 952, 'ThreadPool._wait_for_updates')),
        9: ((498, 501, 'Pool._wait_for_updates'), (953, 954, 'ThreadPool._wait_for_updates')),
        10: ((501, 504, 'Pool._wait_for_updates'), (956, 957, 'ThreadPool._wait_for_updates')),
    },
    ('multiprocessing.process', 'join'): {
        8: ((142, 151, 'BaseProcess.join'), (378, 383, '_ParentProcess.join')),
        9: ((142, 151, 'BaseProcess.join'), (378, 383, '_ParentProcess.join')),
        10: ((142, 151, 'BaseProcess.join'), (384, 389, '_ParentProcess.join')),
    },
    ('multiprocessing.queues', 'get'): {
        8: ((92, 116, 'Queue.get'), (354, 358, 'SimpleQueue.get')),
        9: ((98, 122, 'Queue.get'), (363, 367, 'SimpleQueue.get')),
        10: ((98, 122, 'Queue.get'), (363, 367, 'SimpleQueue.get')),
    },
    ('multiprocessing.queues', 'put'): {
        8: ((80, 90, 'Queue.put'), (303, 314, 'JoinableQueue.put'), (360, 368, 'SimpleQueue.put')),
        9: ((86, 96, 'Queue.put'), (308, 319, 'JoinableQueue.put'), (369, 377, 'SimpleQueue.put')),
        10: ((86, 96, 'Queue.put'), (308, 319, 'JoinableQueue.put'), (369, 377, 'SimpleQueue.put')),
    },
    ('multiprocessing.synchronize', 'wait'): {
        8: ((247, 268, 'Condition.wait'), (344, 354, 'Event.wait')),
        9: ((247, 268, 'Condition.wait'), (344, 354, 'Event.wait')),
        10: ((247, 268, 'Condition.wait'), (344, 354, 'Event.wait')),
    },
    ('os', 'close'): {
        8: ((1000, 1008, '_wrap_close.close'), (1086, 1088, '_AddedDllDirectory.close')),
        9: ((1000, 1008, '_wrap_close.close'), (1088, 1090, '_AddedDllDirectory.close')),
        10: ((1003, 1011, '_wrap_close.close'), (1095, 1097, '_AddedDllDirectory.close')),
    },
    ('queue', 'empty'): {
        8: ((96, 108, 'Queue.empty'), (311, 313, '_PySimpleQueue.empty')),
        9: ((97, 109, 'Queue.empty'), (314, 316, '_PySimpleQueue.empty')),
        10: ((97, 109, 'Queue.empty'), (314, 316, '_PySimpleQueue.empty')),
    },
    ('queue', 'get'): {
        8: ((153, 182, 'Queue.get'), (278, 293, '_PySimpleQueue.get')),
        9: ((154, 183, 'Queue.get'), (281, 296, '_PySimpleQueue.get')),
        10: ((154, 183, 'Queue.get'), (281, 296, '_PySimpleQueue.get')),
    },
    ('queue', 'put'): {
        8: ((121, 151, 'Queue.put'), (269, 276, '_PySimpleQueue.put')),
        9: ((122, 152, 'Queue.put'), (272, 279, '_PySimpleQueue.put')),
        10: ((122, 152, 'Queue.put'), (272, 279, '_PySimpleQueue.put')),
    },
    ('queue', 'qsize'): {
        8: ((91, 94, 'Queue.qsize'), (315, 317, '_PySimpleQueue.qsize')),
        9: ((92, 95, 'Queue.qsize'), (318, 320, '_PySimpleQueue.qsize')),
        10: ((92, 95, 'Queue.qsize'), (318, 320, '_PySimpleQueue.qsize')),
    },
    ('selectors', 'select'): {
        8: ((155, 171, 'BaseSelector.select'), (319, 338, 'SelectSelector.select'), (402, 428, '_PollLikeSelector.select'), (451, 481, 'EpollSelector.select'), (553, 573, 'KqueueSelector.select')),
        9: ((156, 172, 'BaseSelector.select'), (320, 339, 'SelectSelector.select'), (403, 429, '_PollLikeSelector.select'), (452, 482, 'EpollSelector.select'), (554, 577, 'KqueueSelector.select')),
        10: ((156, 172, 'BaseSelector.select'), (320, 339, 'SelectSelector.select'), (403, 429, '_PollLikeSelector.select'), (452, 482, 'EpollSelector.select'), (554, 577, 'KqueueSelector.select')),
    },
    ('socketserver', 'finish'): {
        8: ((757, 758, 'BaseRequestHandler.finish'), (803, 812, 'StreamRequestHandler.finish'), (843, 844, 'DatagramRequestHandler.finish')),
        9: ((757, 758, 'BaseRequestHandler.finish'), (803, 812, 'StreamRequestHandler.finish'), (843, 844, 'DatagramRequestHandler.finish')),
        10: ((757, 758, 'BaseRequestHandler.finish'), (803, 812, 'StreamRequestHandler.finish'), (843, 844, 'DatagramRequestHandler.finish')),
    },
    ('socketserver', 'get_request'): {
        8: ((493, 499, 'TCPServer.get_request'), (526, 528, 'UDPServer.get_request')),
        9: ((493, 499, 'TCPServer.get_request'), (526, 528, 'UDPServer.get_request')),
        10: ((493, 499, 'TCPServer.get_request'), (526, 528, 'UDPServer.get_request')),
    },
    ('socketserver', 'join'): {
        8: ((645, 647, '_Threads.join'), (660, 661, '_NoThreads.join')),
        9: ((645, 647, '_Threads.join'), (660, 661, '_NoThreads.join')),
        10: ((645, 647, '_Threads.join'), (660, 661, '_NoThreads.join')),
    },
    ('socketserver', 'server_close'): {
        8: ((350, 356, 'BaseServer.server_close'), (477, 483, 'TCPServer.server_close'), (626, 628, 'ForkingMixIn.server_close'), (699, 701, 'ThreadingMixIn.server_close')),
        9: ((350, 356, 'BaseServer.server_close'), (477, 483, 'TCPServer.server_close'), (626, 628, 'ForkingMixIn.server_close'), (699, 701, 'ThreadingMixIn.server_close')),
        10: ((350, 356, 'BaseServer.server_close'), (477, 483, 'TCPServer.server_close'), (626, 628, 'ForkingMixIn.server_close'), (699, 701, 'ThreadingMixIn.server_close')),
    },
    ('ssl', 'do_handshake'): {
        8: ((942, 944, 'SSLObject.do_handshake'), (1336, 1344, 'SSLSocket.do_handshake')),
        9: ((943, 945, 'SSLObject.do_handshake'), (1337, 1345, 'SSLSocket.do_handshake')),
        10: ((973, 975, 'SSLObject.do_handshake'), (1369, 1377, 'SSLSocket.do_handshake')),
    },
    ('ssl', 'read'): {
        8: ((879, 889, 'SSLObject.read'), (1123, 1142, 'SSLSocket.read')),
        9: ((880, 890, 'SSLObject.read'), (1124, 1143, 'SSLSocket.read')),
        10: ((908, 918, 'SSLObject.read'), (1154, 1173, 'SSLSocket.read')),
    },
    ('ssl', 'unwrap'): {
        8: ((946, 948, 'SSLObject.unwrap'), (1316, 1322, 'SSLSocket.unwrap')),
        9: ((947, 949, 'SSLObject.unwrap'), (1317, 1323, 'SSLSocket.unwrap')),
        10: ((977, 979, 'SSLObject.unwrap'), (1349, 1355, 'SSLSocket.unwrap')),
    },
    ('ssl', 'write'): {
        8: ((891, 897, 'SSLObject.write'), (1144, 1151, 'SSLSocket.write')),
        9: ((892, 898, 'SSLObject.write'), (1145, 1152, 'SSLSocket.write')),
        10: ((920, 926, 'SSLObject.write'), (1175, 1182, 'SSLSocket.write')),
    },
    ('threading', '__init__'): {
        8: ((104, 107, '_RLock.__init__'), (222, 244, 'Condition.__init__'), (388, 392, 'Semaphore.__init__'), (473, 475, 'BoundedSemaphore.__init__'), (505, 507, 'Event.__init__'), (582, 596, 'Barrier.__init__'), (761, 806, 'Thread.__init__'), (1239, 1245, 'Timer.__init__'), (1262, 1270, '_MainThread.__init__'), (1283, 1291, '_DummyThread.__init__')),
        9: ((105, 108, '_RLock.__init__'), (228, 250, 'Condition.__init__'), (405, 409, 'Semaphore.__init__'), (493, 495, 'BoundedSemaphore.__init__'), (528, 530, 'Event.__init__'), (605, 619, 'Barrier.__init__'), (802, 847, 'Thread.__init__'), (1291, 1297, 'Timer.__init__'), (1314, 1322, '_MainThread.__init__'), (1335, 1343, '_DummyThread.__init__')),
        10: ((113, 116, '_RLock.__init__'), (236, 258, 'Condition.__init__'), (422, 426, 'Semaphore.__init__'), (510, 512, 'BoundedSemaphore.__init__'), (545, 547, 'Event.__init__'), (631, 645, 'Barrier.__init__'), (827, 883, 'Thread.__init__'), (1363, 1369, 'Timer.__init__'), (1386, 1394, '_MainThread.__init__'), (1407, 1415, '_DummyThread.__init__')),
    },
    ('threading', '_acquire_restore'): {
        8: ((190, 192, '_RLock._acquire_restore'), (258, 259, 'Condition._acquire_restore')),
        9: ((196, 198, '_RLock._acquire_restore'), (268, 269, 'Condition._acquire_restore')),
        10: ((204, 206, '_RLock._acquire_restore'), (276, 277, 'Condition._acquire_restore')),
    },
    ('threading', '_stop'): {
        8: ((944, 968, 'Thread._stop'), (1293, 1294, '_DummyThread._stop')),
        9: ((992, 1017, 'Thread._stop'), (1345, 1346, '_DummyThread._stop')),
        10: ((1028, 1053, 'Thread._stop'), (1417, 1418, '_DummyThread._stop')),
    },
    ('threading', 'acquire'): {
        8: ((124, 158, '_RLock.acquire'), (394, 437, 'Semaphore.acquire')),
        9: ((130, 164, '_RLock.acquire'), (411, 454, 'Semaphore.acquire')),
        10: ((138, 172, '_RLock.acquire'), (428, 471, 'Semaphore.acquire')),
    },
    ('threading', 'join'): {
        8: ((979, 1015, 'Thread.join'), (1300, 1301, '_DummyThread.join')),
        9: ((1028, 1064, 'Thread.join'), (1352, 1353, '_DummyThread.join')),
        10: ((1064, 1100, 'Thread.join'), (1424, 1425, '_DummyThread.join')),
    },
    ('threading', 'release'): {
        8: ((162, 183, '_RLock.release'), (441, 450, 'Semaphore.release'), (477, 491, 'BoundedSemaphore.release')),
        9: ((168, 189, '_RLock.release'), (458, 470, 'Semaphore.release'), (497, 514, 'BoundedSemaphore.release')),
        10: ((176, 197, '_RLock.release'), (475, 487, 'Semaphore.release'), (514, 531, 'BoundedSemaphore.release')),
    },
    ('threading', 'run'): {
        8: ((859, 874, 'Thread.run'), (1251, 1255, 'Timer.run')),
        9: ((906, 921, 'Thread.run'), (1303, 1307, 'Timer.run')),
        10: ((942, 957, 'Thread.run'), (1375, 1379, 'Timer.run')),
    },
    ('threading', 'wait'): {
        8: ((270, 316, 'Condition.wait'), (540, 559, 'Event.wait'), (598, 624, 'Barrier.wait')),
        9: ((280, 326, 'Condition.wait'), (563, 582, 'Event.wait'), (621, 647, 'Barrier.wait')),
        10: ((288, 334, 'Condition.wait'), (589, 608, 'Event.wait'), (647, 673, 'Barrier.wait')),
    },
    ('torch._inductor.async_compile', '<lambda>'): {
        'torch': ((131, 135, '_compile_end.<locals>.<lambda>'), (565, 565, 'AsyncCompile.cpp.<locals>.<lambda>'), (729, 729, 'AsyncCompile.pallas.<locals>.<lambda>')),
    },
    ('torch._inductor.async_compile', 'get_result'): {
        'torch': ((496, 515, 'AsyncCompile.triton.<locals>.get_result'), (667, 679, 'AsyncCompile.cutedsl.<locals>.get_result'), (772, 784, 'AsyncCompile.nv_universal_gemm.<locals>.get_result')),
    },
    ('torch._inductor.compile_worker.subproc_pool', 'submit'): {
        'torch': ((232, 258, 'SubprocPool.submit'), (421, 430, 'SubprocMain.submit')),
    },
    ('torch.cuda.streams', 'synchronize'): {
        'torch': ((102, 108, 'Stream.synchronize'), (245, 254, 'Event.synchronize')),
    },
    ('torch.distributed.elastic.multiprocessing.api', '_close'): {
        'torch': ((642, 647, 'PContext._close'), (866, 914, 'MultiprocessContext._close'), (1023, 1070, 'SubprocessContext._close')),
    },
    ('torch.distributed.elastic.multiprocessing.api', '_poll'): {
        'torch': ((585, 593, 'PContext._poll'), (781, 859, 'MultiprocessContext._poll'), (982, 1015, 'SubprocessContext._poll')),
    },
    ('torch.distributed.elastic.rendezvous.dynamic_rendezvous', '_keep_alive'): {
        'torch': ((712, 720, '_DistributedRendezvousOpExecutor._keep_alive'), (1325, 1346, 'DynamicRendezvousHandler._keep_alive')),
    },
    ('torch.distributed.elastic.rendezvous.etcd_rendezvous', '__init__'): {
        'torch': ((155, 163, 'EtcdRendezvousHandler.__init__'), (224, 270, 'EtcdRendezvous.__init__')),
    },
    ('torch.distributed.elastic.rendezvous.etcd_rendezvous', 'set_closed'): {
        'torch': ((191, 192, 'EtcdRendezvousHandler.set_closed'), (822, 846, 'EtcdRendezvous.set_closed')),
    },
    ('torch.distributed.elastic.rendezvous.etcd_rendezvous_backend', 'get_state'): {
        'torch': ((75, 86, 'EtcdRendezvousBackend.get_state'), (96, 100, 'EtcdRendezvousBackend.set_state.<locals>.get_state')),
    },
    ('torch.distributed.elastic.timer.file_based_local_timer', 'wrapper'): {
        'torch': ((44, 56, '_retry.<locals>.wrapper'), (45, 54, '_retry.<locals>.wrapper.<locals>.wrapper')),
    },
    ('torch.utils.data.dataloader', '_next_data'): {
        'torch': ((717, 718, '_BaseDataLoaderIter._next_data'), (783, 788, '_SingleProcessDataLoaderIter._next_data'), (1468, 1529, '_MultiProcessingDataLoaderIter._next_data')),
    },
    ('urllib.request', 'http_error_302'): {
        8: ((697, 755, 'HTTPRedirectHandler.http_error_302'), (2159, 2175, 'FancyURLopener.http_error_302')),
        9: ((689, 747, 'HTTPRedirectHandler.http_error_302'), (2151, 2167, 'FancyURLopener.http_error_302')),
        10: ((691, 749, 'HTTPRedirectHandler.http_error_302'), (2152, 2168, 'FancyURLopener.http_error_302')),
    },
    ('urllib.request', 'open_local_file'): {
        8: ((1504, 1529, 'FileHandler.open_local_file'), (2014, 2044, 'URLopener.open_local_file')),
        9: ((1496, 1521, 'FileHandler.open_local_file'), (2006, 2036, 'URLopener.open_local_file')),
        10: ((1498, 1523, 'FileHandler.open_local_file'), (2007, 2037, 'URLopener.open_local_file')),
    },
}
# END GENERATED _LINES
