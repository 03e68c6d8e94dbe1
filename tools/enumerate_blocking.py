#!/usr/bin/env python3
"""List the functions of a Python standard library (or of PyTorch) that directly call a blocking
primitive: the enumeration that `stalldiag/knowledge/blocking.py` is held against.

    python3 tools/enumerate_blocking.py $(pyenv prefix 3.12.1)/lib/python3.12     # one per line
    python3 tools/enumerate_blocking.py --calls LIB_DIR                           # with each call
    python3 tools/enumerate_blocking.py --torch TORCH_DIR   # $(python3 -c "import torch, os; print(os.path.dirname(torch.__file__))")
    python3 tools/enumerate_blocking.py --check LIB_DIR     # coverage against the table; exit 1 on a gap
    python3 tools/enumerate_blocking.py --check-all         # every Python 3.8-3.13 pyenv has, and torch
    python3 tools/enumerate_blocking.py --write-lines       # regenerate blocking.py's _LINES

Only the source is read (`ast`); nothing is imported from it.  The files read are STDLIB_FILES
(relative to the lib dir) and TORCH_FILES (relative to torch's package dir).

THE RULE.  A function is listed under its qualified name as the source defines it (`Class.method`,
`function`, `outer.<locals>.inner`, `outer.<locals>.<lambda>`: CPython's __qualname__, which py-spy
shows from 3.11 on) when its own body contains a call to a blocking primitive.  "Its own body": not a
nested def, class or lambda (listed on its own), but its comprehensions (inlined into it from 3.12
on).  Names are resolved through imports and simple aliases: module and class level `x = a.b`,
imports anywhere in the function, a function's own `nwait = notempty.wait`, a parameter whose
default is an alias (`def _recv(self, size, read=_read)`), a class attribute called through self
(`_select = select.select` ... `self._select(...)`), and `iter(q.get, None)` (a call of `q.get()`
per item).  A call is a primitive of one *class* (the enumeration reports the classes):

  acquire    `X.acquire(...)` on anything (threading and multiprocessing locks, semaphores,
             conditions, a logging Handler) and `_imp.acquire_lock()`; not with a first positional
             `False`/`0`, `blocking=False`, or a literal 0 timeout.
  with-lock  `with X:` where X is a name or attribute (not a call) whose last name looks like a
             lock or condition (`*lock*`, `*mutex*`, `*cond*`, `condition`, `not_empty`,
             `not_full`, `all_tasks_done`, `*_sem`, `semaphore`, `*_cv`, `wakeup`): a `with lock:`
             is a `lock.acquire()`, and 3.13 turned many `acquire()` calls into `with` blocks.
  wait       `X.wait(...)`, `X.wait_for(...)` (not `wait(0)`/`timeout=0`); a bare `wait(...)` or
             `as_completed(...)` imported from multiprocessing.connection or concurrent.futures.
  join       `X.join(...)` that is not `str.join`/`os.path.join`: no argument, a `timeout=`, or one
             argument that is a number or None, names a time (`timeout`, `delay`, `interval`,
             `remaining`, `deadline`), or goes to a receiver named like a thread, process or queue
             (`t`, `p`, `w`, `*thread*`, `*process*`, `proc`, `*worker*`, `*handler`, `*queue*`);
             `_thread._shutdown()` (3.13's join of every non-daemon thread).  A receiver that is a
             string literal, `path`, `os.path` or `*sep` is never a join; `join(0)` does not wait.
  get, put   `X.get(...)`/`X.put(...)` on a queue-like receiver (its last name contains `queue`,
             or is `q`, `*_q`, `inq`, `outq`, ...), or a `.get` with a `block=`/`timeout=` keyword;
             not with a first positional `False` (get), `block=False`, a literal 0 timeout, or a
             second positional `False` (put).  `get_nowait`/`put_nowait` never count.
  result     `X.result(...)`: a concurrent.futures Future; not in `asyncio/`, where a Future's
             result() never waits (it raises when the future is not done).
  sleep      `time.sleep(...)`.
  select     `select.select(...)` and `X.select/poll/control(...)` on a receiver named like a
             selector or poller (`*selector*`, `*poll*`, `*kqueue*`, `_kq`, `_ep`), unless the
             timeout (by position: select 4th, poll/select 1st, control 3rd; or `timeout=`) is a
             literal 0.
  os-io      `os.read/write/readv/writev/pread/pwrite/sendfile/splice/copy_file_range`,
             `_multiprocessing.recv/send`.
  os-wait    `os.wait/waitpid/wait3/wait4/waitid` without `WNOHANG` among the arguments;
             `os.system`.
  socket     a socket method by name whatever the receiver: `accept`, `_accept`, `recv`,
             `recv_into`, `recvfrom`, `recvfrom_into`, `recvmsg`, `recvmsg_into`, `send`, `sendall`,
             `sendto`, `sendmsg`, `sendfile`, `connect`, `connect_ex`, `recv_fds`, `send_fds`,
             `create_connection`, and DNS: `getaddrinfo`, `gethostbyname(_ex)`, `gethostbyaddr`,
             `getnameinfo`, `getfqdn`.  Not `X.send(...)` to a generator or coroutine (`coro`,
             `gen`, `*_gen`, `*_coro`).
  conn       a multiprocessing Connection: `recv_bytes`, `recv_bytes_into`, `send_bytes`, and
             `recv`/`send`/`poll` (not `poll(0)`) on a receiver named like a connection (`c`,
             `conn`, `connection`, `reader`, `writer`, `pipe`, `*_conn`, `*_reader`, `*_writer`,
             `*_pipe`).
  ssl        `_sslobj.read/write/do_handshake/shutdown(...)` (the TLS engine).
  stream     a read (`read`, `readline`, `readlines`, `readinto`, `read1`, `peek`) of a socket
             file, a pipe or a terminal: a receiver named `fp`, `_fp`, `rfile`, `fh`, `stdout`,
             `stderr`, `stdin`, `fd`, `input`, `infile`, `fsrc`, `pipe`, `*_pipe`, or a local name bound
             to `urlopen(...)`, `X.makefile(...)` or `create_connection(...)`; a write (`write`,
             `writelines`, `flush`) to `wfile`, `stream`, `stdin`, `fdst`, `pipe`, `*_pipe` (a
             full pipe blocks its writer).  Not in `asyncio/` (StreamReader/Writer never block).
  fcntl      `fcntl.flock`/`fcntl.lockf` without `LOCK_NB`.
  input      the builtin `input(...)`.
  signal     `signal.pause/sigwait/sigwaitinfo/sigtimedwait`.
  windows    `_winapi`/`_overlapped` `WaitForSingleObject`, `WaitForMultipleObjects`,
             `GetQueuedCompletionStatus`, `WaitNamedPipe`, `ConnectNamedPipe`,
             `GetOverlappedResult`, and those method names on any receiver (and `ov.getresult()`).
  torch      (torch files) `torch._C._cuda_synchronize()`, `X.synchronize()`, `barrier(...)`,
             `X.barrier(...)`, `X.monitored_barrier(...)`, `TCPStore(...)` (its constructor connects,
             retrying until the timeout).
  store      (torch files) a Store call on a receiver named `store`, `_store`, `*_store`: `get`,
             `wait` (class wait), `multi_get` wait for keys; `set`, `add`, `compare_set`, `check`,
             `delete_key`, `num_keys`, `append`, `multi_set`, `queue_push/pop` are round trips to
             the store server.
  etcd       (torch files) python-etcd calls on `client`, `_client`, `*_client`: `read`, `write`,
             `get`, `set`, `watch` (a long poll), `test_and_set`, `delete`, `refresh`, `update`.

What does not count: a call under `await` (it makes a coroutine; a waiting coroutine is on no
thread's stack: its loop's thread sits in `selector.select`); `self.m(...)` where a class of the
same module defines `m`, and `super().m(...)` where one of the class's bases in that module does
(that Python method's own frame is where the wait shows, and it is listed itself if it waits).

Windows.  A call in code that only runs on Windows (the body of `if _mswindows:`, `if _winapi:`,
`if IS_WINDOWS:`, `if sys.platform == 'win32':`, `if os.name == 'nt':`, the `else:` of the negated
test, and every call of a module named `windows_*` or `*_win32`) is marked so; a function whose
calls are all such is `windows_only` (subprocess defines `Popen._wait` for both: the POSIX one
counts).  The table must exempt those in NOT_BLOCKING ("Windows-only: ...").

Each call also records whether it sits in a `while`/`for` loop of its function and whether it
passes a timeout: a hint for the table's `spins` (a timed wait or a sleep in a loop wakes up by
itself), which the table decides by reading the code.
"""
import argparse
import ast
import fnmatch
import os
import re
import sys
from dataclasses import dataclass, field

STDLIB_FILES = (
    "threading.py", "queue.py", "subprocess.py", "socket.py", "selectors.py", "ssl.py",
    "socketserver.py", "http/client.py", "http/server.py", "urllib/request.py",
    "multiprocessing/**", "concurrent/futures/**", "asyncio/**", "logging/**",
    "importlib/_bootstrap.py", "sched.py", "shutil.py", "os.py", "pty.py", "getpass.py",
    "code.py", "cmd.py",
)

TORCH_FILES = (
    "utils/data/dataloader.py", "utils/data/_utils/*.py", "distributed/distributed_c10d.py",
    "distributed/elastic/**", "distributed/rendezvous.py", "cuda/__init__.py", "cuda/streams.py",
    "_inductor/async_compile.py", "_inductor/compile_worker/**", "multiprocessing/**",
    "utils/file_baton.py", "hub.py",
)


@dataclass(frozen=True)
class Call:
    cls: str        # the primitive's class (the rule's first word)
    line: int
    text: str       # the call as written (unparsed, shortened)
    in_loop: bool
    timed: bool
    windows: bool = False   # in code that only runs on Windows


@dataclass
class Found:
    module: str
    function: str
    line: int
    end_line: int
    calls: list = field(default_factory=list)

    @property
    def windows_only(self):
        """Every primitive call of it is in code that only runs on Windows."""
        return all(c.windows for c in self.calls)

    @property
    def classes(self):
        return tuple(sorted({c.cls for c in self.calls}))

    @property
    def key(self):
        return (self.module, self.function)


# --- what the files are -----------------------------------------------------------------------

def _walk_files(root, patterns):
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in ("__pycache__", "test", "tests"))
        for name in sorted(filenames):
            if not name.endswith(".py"):
                continue
            rel = os.path.relpath(os.path.join(dirpath, name), root).replace(os.sep, "/")
            if any(_glob(rel, p) for p in patterns):
                found.append(rel)
    return found


def _glob(rel, pattern):
    if pattern.endswith("/**"):
        return rel.startswith(pattern[:-2])
    return fnmatch.fnmatchcase(rel, pattern) and rel.count("/") == pattern.count("/")


def module_name(rel, prefix=""):
    """`multiprocessing/queues.py` -> `multiprocessing.queues`; `logging/__init__.py` -> `logging`."""
    parts = rel[:-3].split("/")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(([prefix] if prefix else []) + parts)


def stdlib_files(lib_dir):
    return _walk_files(lib_dir, STDLIB_FILES)


def torch_files(torch_dir):
    return _walk_files(torch_dir, TORCH_FILES)


# --- names -----------------------------------------------------------------------------------

def dotted(node):
    """`a.b.c` for a Name/Attribute chain, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super":
        parts.append("super()")
        return ".".join(reversed(parts))
    return None


def _last(node):
    """The last name of a receiver expression (`self._work_queue` -> `_work_queue`)."""
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Subscript):
        return _last(node.value)
    if isinstance(node, ast.Call):
        return _last(node.func) + "()" if _last(node.func) else None
    return None


class Scope:
    """Simple aliases: name -> set of dotted origins (`_sleep` -> {`time.sleep`})."""

    def __init__(self, parent=None):
        self.parent, self.names = parent, {}

    def resolve(self, name):
        head, _, rest = name.partition(".")
        scope = self
        while scope is not None:
            if head in scope.names:
                return {o + ("." + rest if rest else "") for o in scope.names[head]}
            scope = scope.parent
        return {name}

    def bind(self, name, origin):
        self.names.setdefault(name, set()).update(self.parent_resolve(origin))

    def parent_resolve(self, origin):
        return self.resolve(origin) if origin else set()


def _bind_imports(node, scope, package):
    if isinstance(node, ast.Import):
        for a in node.names:
            if a.asname:
                scope.bind(a.asname, a.name)
            else:
                scope.names.setdefault(a.name.split(".")[0], set()).add(a.name.split(".")[0])
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            pkg = package.split(".")
            pkg = pkg[:len(pkg) - (node.level - 1)] if node.level > 1 else pkg
            base = ".".join(pkg + ([base] if base else []))
        for a in node.names:
            scope.names.setdefault(a.asname or a.name, set()).add(base + "." + a.name)


# --- primitives ------------------------------------------------------------------------------

OS_IO = {"os.read", "os.write", "os.readv", "os.writev", "os.pread", "os.pwrite", "os.sendfile",
         "os.splice", "os.copy_file_range", "_multiprocessing.recv", "_multiprocessing.send"}
OS_WAIT = {"os.wait", "os.waitpid", "os.wait3", "os.wait4", "os.waitid", "os.system"}
SLEEP = {"time.sleep"}
SIGNAL = {"signal.pause", "signal.sigwait", "signal.sigwaitinfo", "signal.sigtimedwait"}
FCNTL = {"fcntl.flock", "fcntl.lockf"}
BARE_WAIT = {"multiprocessing.connection.wait", "concurrent.futures.wait", "concurrent.futures._base.wait",
             "concurrent.futures.as_completed", "concurrent.futures._base.as_completed"}
THREAD_SHUTDOWN = {"_thread._shutdown"}
DNS = {"socket.getaddrinfo", "socket.gethostbyname", "socket.gethostbyname_ex", "socket.gethostbyaddr",
       "socket.getnameinfo", "socket.getfqdn", "socket.create_connection",
       "_socket.getaddrinfo", "_socket.gethostbyname", "_socket.gethostbyname_ex", "_socket.gethostbyaddr",
       "_socket.getnameinfo"}
SOCKET_METHODS = {"accept", "_accept", "recv", "recv_into", "recvfrom", "recvfrom_into", "recvmsg",
                  "recvmsg_into", "send", "sendall", "sendto", "sendmsg", "sendfile", "connect", "connect_ex",
                  "recv_fds", "send_fds", "create_connection", "getaddrinfo", "gethostbyname",
                  "gethostbyname_ex", "gethostbyaddr", "getnameinfo", "getfqdn"}
WINDOWS = {"WaitForSingleObject", "WaitForMultipleObjects", "GetQueuedCompletionStatus",
           "WaitNamedPipe", "ConnectNamedPipe", "GetOverlappedResult", "getresult"}
GENERATORS = re.compile(r"^(coro|_coro|gen|_gen|\w+_gen|\w+_coro|generator)$")
QUEUE_LIKE = re.compile(r"queue|^_?q$|_q$|^_?(in|out|task|result|cmd|job|work|call)q$", re.I)
STORE_LIKE = re.compile(r"^_?store$|_store$", re.I)
# a torch.distributed Store's calls: each is a round trip to the store server (get and wait wait for keys)
STORE_CALLS = {"get", "set", "add", "compare_set", "check", "delete_key", "num_keys", "append", "multi_get",
               "multi_set", "queue_pop", "queue_push"}
# python-etcd client calls (torch's etcd rendezvous): requests to etcd; watch() long-polls
ETCD_LIKE = re.compile(r"^_?client$|_client$")
ETCD_CALLS = {"read", "write", "get", "set", "watch", "test_and_set", "delete", "refresh", "update"}
THREAD_LIKE = re.compile(r"^_?[tpw]$|thread|process|^_?proc$|worker|handler$|^_?threads$|queue|^_?pc$", re.I)
TIME_WORDS = re.compile(r"time|timeout|delay|interval|remaining|deadline", re.I)
POLLER_LIKE = re.compile(r"selector|poll|kqueue|^_?kq$|^_?ep$", re.I)
CONN_LIKE = re.compile(r"^_?(c|conn|connection|reader|writer|pipe|parent_conn|child_conn)$|_conn$|_reader$|"
                       r"_writer$|_pipe$", re.I)
STREAM_READERS = re.compile(r"^(fp|_fp|rfile|fh|fd|stdout|stderr|stdin|input|infile|fsrc|pipe|\w+_pipe)$")
STREAM_WRITERS = re.compile(r"^(wfile|stream|stdin|fdst|pipe|\w+_pipe)$")
# calls whose result is a stream over a socket: a read on it waits for the peer
# a name that holds a file descriptor (a pipe end): open(fd) of it makes a stream that can block
FD_NAMES = re.compile(r"^(fd|_fd|\w+_fd|fd_\w+|[rw]|\w+_[rw]|[rw]fd)$")
NETWORK_STREAM_MAKERS = re.compile(r"(^|\.)(urlopen|makefile|create_connection)$")
READS = {"read", "readline", "readlines", "readinto", "read1", "peek"}
WRITES = {"write", "writelines", "flush"}
LOCK_LIKE = re.compile(r"lock|mutex|^_?cond$|_cond$|condition|^not_empty$|^not_full$|^all_tasks_done$|"
                       r"^_?sem$|_sem$|semaphore|^_?cv$|_cv$|^_?wakeup$|_mutex$", re.I)
# Where a wait's timeout is among its positional arguments (0 means "do not wait").
TIMEOUT_POSITION = {"select.select": 3, "poll": 0, "select": 0, "control": 2}


def _is_false(node):
    return isinstance(node, ast.Constant) and node.value is not None and node.value in (False, 0)


def _is_zero(node):
    return isinstance(node, ast.Constant) and node.value is not None and node.value is not True \
        and node.value == 0


def _kw(call, name):
    return next((k.value for k in call.keywords if k.arg == name), None)


def _nonblocking(call, first_is_block=True):
    """acquire(False), acquire(blocking=False), get(False), get(timeout=0), acquire(True, 0)."""
    if first_is_block and call.args and _is_false(call.args[0]):
        return True
    for name in ("blocking", "block"):
        value = _kw(call, name)
        if value is not None and _is_false(value):
            return True
    timeout = _kw(call, "timeout")
    if timeout is None and len(call.args) >= 2:
        timeout = call.args[1]
    return timeout is not None and _is_zero(timeout)


def _zero_timeout(call, position):
    timeout = _kw(call, "timeout")
    if timeout is None and len(call.args) > position:
        timeout = call.args[position]
    return timeout is not None and _is_zero(timeout)


def _timed(call):
    if any(k.arg in ("timeout", "block") for k in call.keywords):
        return True
    return any(not (isinstance(a, ast.Constant) and a.value is None) for a in call.args)


class Context:
    """What a call's classification needs to know about where it is."""

    def __init__(self, scope, torch=False, in_asyncio=False, own_methods=frozenset(), base_methods=frozenset(),
                 class_scope=None, streams=frozenset()):
        self.scope, self.torch, self.in_asyncio = scope, torch, in_asyncio
        self.own_methods = own_methods      # methods of the module's classes (a `self.m()` is Python)
        self.base_methods = base_methods    # methods of the enclosing class's bases defined in the module
        self.class_scope = class_scope      # the enclosing class's aliases (`_select = select.select`)
        self.streams = streams              # local names bound to urlopen(...)/sock.makefile(...)


def classify(call, ctx, depth=0):
    """The primitive class of one ast.Call, or None."""
    func = call.func
    scope = ctx.scope
    if isinstance(func, ast.Name):
        if func.id == "iter" and len(call.args) == 2 and isinstance(call.args[0], (ast.Attribute, ast.Name)):
            # iter(q.get, None): the loop calls q.get() until it returns None
            return classify(ast.Call(func=call.args[0], args=[], keywords=[]), ctx, depth + 1)
        names = scope.resolve(func.id)
        bare = func.id
    elif isinstance(func, ast.Attribute):
        full = dotted(func)
        if full and full.startswith("self.") and full.count(".") == 1 and ctx.class_scope is not None \
                and func.attr in ctx.class_scope.names:
            names = ctx.class_scope.resolve(func.attr)     # self._select = select.select (a class alias)
        else:
            names = scope.resolve(full) if full else set()
        bare = None
    else:
        return None
    for name in names:
        cls = _classify_name(name, call, ctx)
        if cls is not None:
            return cls
    if bare is not None:
        if bare == "input" and names == {"input"}:
            return "input"
        if ctx.torch and bare in ("TCPStore", "barrier"):
            return "torch"
        if depth < 2:
            # a local alias of a method: `nwait = notempty.wait` ... `nwait()`
            for origin in names:
                if origin != bare and "." in origin:
                    try:
                        target = ast.parse(origin, mode="eval").body
                    except SyntaxError:
                        continue
                    cls = classify(ast.Call(func=target, args=call.args, keywords=call.keywords), ctx, depth + 1)
                    if cls is not None:
                        return cls
        return None
    return _classify_method(call, func, ctx)


def _classify_name(name, call, ctx):
    if name in SLEEP:
        return "sleep"
    if name in OS_IO:
        return "os-io"
    if name in OS_WAIT:
        return None if "WNOHANG" in ast.unparse(call) else "os-wait"
    if name == "select.select":
        return None if _zero_timeout(call, 3) else "select"
    if name in SIGNAL:
        return "signal"
    if name in DNS:
        return "socket"
    if name in BARE_WAIT:
        return None if _kw(call, "timeout") is not None and _is_zero(_kw(call, "timeout")) else "wait"
    if name in THREAD_SHUTDOWN:
        return "join"
    if name in FCNTL:
        return None if "LOCK_NB" in ast.unparse(call) else "fcntl"
    if name == "_imp.acquire_lock":
        return "acquire"
    if ctx.torch and name in ("torch._C._cuda_synchronize", "torch.cuda.synchronize"):
        return "torch"
    if name.split(".")[0] in ("_winapi", "_overlapped") and name.split(".")[-1] in WINDOWS:
        return "windows"
    return None


def _classify_method(call, func, ctx):
    method, recv = func.attr, func.value
    last = _last(recv) or ""
    if isinstance(recv, ast.Name) and recv.id in ("self", "cls") and method in ctx.own_methods:
        return None     # a method of this module's own: its own frame is the one that waits
    if isinstance(recv, ast.Call) and _last(recv.func) == "super" and method in ctx.base_methods:
        return None     # super().m() where a base class of this module defines m
    if method == "acquire":
        return None if _nonblocking(call) else "acquire"
    if method in ("wait", "wait_for"):
        if method == "wait" and _zero_timeout(call, 0):
            return None
        return "wait"
    if method == "join":
        if isinstance(recv, ast.Constant) or last in ("path", "posixpath", "ntpath") or last.endswith("sep") \
                or (dotted(recv) or "").endswith("os.path"):
            return None
        if not call.args and not call.keywords:
            return "join"
        if _kw(call, "timeout") is not None:
            return None if _is_zero(_kw(call, "timeout")) else "join"
        if len(call.args) == 1 and not call.keywords:
            arg = call.args[0]
            if isinstance(arg, ast.Constant) and (arg.value is None or isinstance(arg.value, (int, float))):
                return None if _is_zero(arg) else "join"
            if TIME_WORDS.search(ast.unparse(arg)) or THREAD_LIKE.search(last):
                return "join"
        return None
    if ctx.torch and method in STORE_CALLS and STORE_LIKE.search(last):
        return "store"
    if ctx.torch and method in ETCD_CALLS and ETCD_LIKE.search(last):
        return "etcd"
    if method in ("get", "put"):
        queue_like = QUEUE_LIKE.search(last) or _kw(call, "block") is not None \
            or (method == "get" and _kw(call, "timeout") is not None)
        if not queue_like:
            return None
        if method == "get" and _nonblocking(call, first_is_block=True):
            return None
        if method == "put":
            block = _kw(call, "block")
            if block is None and len(call.args) >= 2:
                block = call.args[1]
            timeout = _kw(call, "timeout")
            if timeout is None and len(call.args) >= 3:
                timeout = call.args[2]
            if (block is not None and _is_false(block)) or (timeout is not None and _is_zero(timeout)):
                return None
        return method
    if method == "result":
        return None if ctx.in_asyncio else "result"
    if method in ("select", "poll", "control") and POLLER_LIKE.search(last):
        return None if _zero_timeout(call, TIMEOUT_POSITION[method]) else "select"
    if method == "poll" and CONN_LIKE.search(last):
        return None if _zero_timeout(call, 0) else "conn"
    if method in ("recv_bytes", "recv_bytes_into", "send_bytes"):
        return "conn"
    if method in SOCKET_METHODS:
        if method == "send" and GENERATORS.search(last):
            return None
        if method in ("send", "recv") and CONN_LIKE.search(last):
            return "conn"
        return "socket"
    if last == "_sslobj" and method in ("read", "write", "do_handshake", "shutdown"):
        return "ssl"
    if not ctx.in_asyncio and ((method in READS and (STREAM_READERS.match(last) or last in ctx.streams))
                               or (method in WRITES and (STREAM_WRITERS.match(last) or last in ctx.streams))):
        return "stream"
    if method in WINDOWS:
        return "windows"
    if ctx.torch and method in ("synchronize", "barrier", "monitored_barrier"):
        return "torch"
    return None


def lock_like_with(item):
    """`with self._lock:` (a name or attribute that looks like a lock, not a call): an acquire."""
    expr = item.context_expr
    return isinstance(expr, (ast.Name, ast.Attribute)) and bool(LOCK_LIKE.search(_last(expr) or ""))


# modules that only exist for Windows (their names say so)
WINDOWS_MODULES = re.compile(r"(^|\.)(windows_\w+|\w+_win32)$")


# --- platform tests --------------------------------------------------------------------------

def _platform_of(test):
    """'windows' when an if-test is true only on Windows, 'posix' when only off it, else None."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _platform_of(test.operand)
        return {"windows": "posix", "posix": "windows"}.get(inner)
    if isinstance(test, ast.BoolOp):
        parts = [_platform_of(v) for v in test.values]
        if isinstance(test.op, ast.And) and "windows" in parts:
            return "windows"
        if isinstance(test.op, ast.Or) and parts and all(p == "windows" for p in parts):
            return "windows"
        return None
    if isinstance(test, ast.Name) and test.id in ("_mswindows", "_winapi", "MS_WINDOWS", "_MS_WINDOWS",
                                                 "WINDOWS", "_WINDOWS", "_IS_WINDOWS", "IS_WINDOWS"):
        return "windows"
    text = ast.unparse(test)
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        windows_literal = re.search(r"['\"](win32|nt)['\"]", text)
        if windows_literal and re.match(r"^(sys\.platform|os\.name)\b", text):
            if isinstance(test.ops[0], (ast.Eq, ast.In)):
                return "windows"
            if isinstance(test.ops[0], (ast.NotEq, ast.NotIn)):
                return "posix"
    if re.match(r"^sys\.platform(\.lower\(\))?\.startswith\(['\"]win['\"]\)$", text):
        return "windows"
    return None


# --- the walk --------------------------------------------------------------------------------

def _own_statements(body):
    """The statements of a function body, into blocks but not into nested defs or classes."""
    stack = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        yield node
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt):
                stack.append(child)
            elif isinstance(child, ast.excepthandler):
                stack.extend(child.body)


def _methods(tree):
    """{class name: (set of method names, set of base names)} of every class in a module."""
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            methods, bases = out.setdefault(node.name, (set(), set()))
            methods.update(n.name for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
            bases.update(_last(b) for b in node.bases if _last(b))
    return out


def _base_methods(methods, cls, seen=None):
    """The methods the module's own classes among cls's bases (transitively) define."""
    seen = seen if seen is not None else set()
    out = set()
    for base in methods.get(cls, ((), ()))[1]:
        if base in methods and base not in seen:
            seen.add(base)
            out |= methods[base][0] | _base_methods(methods, base, seen)
    return out


def _stream_names(body):
    """Local names bound to a stream over a socket or a pipe: `u = urlopen(req)`, `with urlopen(url)
    as f`, `f = sock.makefile()`, `with open(parent_w, 'wb') as f` (open() of a file descriptor)."""
    names = set()
    for stmt in _own_statements(body):
        pairs = []
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            pairs.append((stmt.targets[0], stmt.value))
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            pairs.extend((i.optional_vars, i.context_expr) for i in stmt.items if i.optional_vars is not None)
        for target, value in pairs:
            if not (isinstance(target, ast.Name) and isinstance(value, ast.Call)):
                continue
            maker = dotted(value.func) or ""
            if NETWORK_STREAM_MAKERS.search(maker) or (
                    maker in ("open", "io.open", "os.fdopen") and value.args
                    and isinstance(value.args[0], ast.Name) and FD_NAMES.match(value.args[0].id)):
                names.add(target.id)
    return names


class _Walker(ast.NodeVisitor):
    def __init__(self, module, package, methods, torch=False, in_asyncio=False, with_locks=True):
        self.module, self.package, self.torch, self.in_asyncio = module, package, torch, in_asyncio
        self.methods = methods
        self.all_methods = set().union(*(m for m, _ in methods.values())) if methods else set()
        self.streams = [set()]
        self.with_locks = with_locks
        self.found = {}        # qualname -> Found (only those with calls)
        self.defined = {}      # qualname -> (line, end_line) of every def (the span of all its definitions)
        self.stack = []        # [(kind, name)] kind: class/def
        self.scopes = [Scope()]
        self.class_scopes = [None]
        self.windows = 0       # depth of Windows-only if-branches
        self.loops = [0]       # loop depth per function
        self.awaited = set()

    def _qualname(self, name):
        parts = []
        for kind, n in self.stack:
            parts.append(n)
            if kind == "def":
                parts.append("<locals>")
        return ".".join(parts + [name])

    def _function(self):
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i][0] == "def":
                parts = []
                for kind, n in self.stack[:i]:
                    parts.append(n)
                    if kind == "def":
                        parts.append("<locals>")
                return ".".join(parts + [self.stack[i][1]])
        return None

    def _class(self):
        """The class whose method the current function is, or None."""
        if len(self.stack) >= 2 and self.stack[-1][0] == "def" and self.stack[-2][0] == "class":
            return self.stack[-2][1]
        return None

    def visit_Module(self, node):
        for stmt in node.body:
            self._bind_statement(stmt, self.scopes[0])
        self.generic_visit(node)

    def _bind_statement(self, stmt, scope):
        """Imports and `x = a.b` aliases of a module or class body (into if/try blocks too)."""
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            _bind_imports(stmt, scope, self.package)
        elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            origin = dotted(stmt.value)
            if origin:
                scope.bind(stmt.targets[0].id, origin)
        elif isinstance(stmt, (ast.If, ast.Try)):
            for block in (stmt.body, stmt.orelse, getattr(stmt, "finalbody", []),
                          *[h.body for h in getattr(stmt, "handlers", [])]):
                for s in block:
                    self._bind_statement(s, scope)

    def visit_If(self, node):
        platform = _platform_of(node.test)
        self.visit(node.test)
        for block, windows in ((node.body, platform == "windows"), (node.orelse, platform == "posix")):
            self.windows += windows
            for stmt in block:
                self.visit(stmt)
            self.windows -= windows

    def visit_ClassDef(self, node):
        for d in node.decorator_list + node.bases:
            self.visit(d)
        scope = Scope(self.scopes[-1])
        scope.is_class = True
        for stmt in node.body:
            self._bind_statement(stmt, scope)
        self.stack.append(("class", node.name))
        self.scopes.append(scope)
        self.class_scopes.append(scope)
        for stmt in node.body:
            self.visit(stmt)
        self.class_scopes.pop()
        self.scopes.pop()
        self.stack.pop()

    def _body_parent(self):
        """A function body sees the enclosing functions' names and the module's, never a class's."""
        for scope in reversed(self.scopes):
            if not getattr(scope, "is_class", False):
                return scope
        return self.scopes[0]

    def _visit_function(self, node, name, body):
        for d in getattr(node, "decorator_list", []):
            self.visit(d)
        for default in node.args.defaults + [d for d in node.args.kw_defaults if d is not None]:
            self.visit(default)
        qualname = self._qualname(name)
        line, end = node.lineno, getattr(node, "end_lineno", node.lineno)
        old = self.defined.get(qualname)
        self.defined[qualname] = (line, end) if old is None else (min(old[0], line), max(old[1], end))
        scope = Scope(self._body_parent())
        args = node.args
        positional = args.posonlyargs + args.args
        for arg, default in zip(positional[len(positional) - len(args.defaults):], args.defaults):
            origin = dotted(default)
            if origin:
                scope.names[arg.arg] = self.scopes[-1].resolve(origin)
        for arg, default in zip(args.kwonlyargs, args.kw_defaults):
            origin = dotted(default) if default is not None else None
            if origin:
                scope.names[arg.arg] = self.scopes[-1].resolve(origin)
        for stmt in _own_statements(body if isinstance(body, list) else [body]):
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                _bind_imports(stmt, scope, self.package)
            elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                origin = dotted(stmt.value)
                if origin and origin.split(".")[-1] not in ("__class__",):
                    scope.names.setdefault(stmt.targets[0].id, set()).update(scope.resolve(origin)
                                                                              if origin.split(".")[0] !=
                                                                              stmt.targets[0].id else {origin})
        self.stack.append(("def", name))
        self.scopes.append(scope)
        self.loops.append(0)
        self.streams.append(_stream_names(body))
        for stmt in body:
            self.visit(stmt)
        self.streams.pop()
        self.loops.pop()
        self.scopes.pop()
        self.stack.pop()

    def visit_FunctionDef(self, node):
        self._visit_function(node, node.name, node.body)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node):
        self._visit_function(node, "<lambda>", [node.body])

    def _loop(self, node):
        if isinstance(node, ast.For) and isinstance(node.iter, ast.Name) and node.iter.id in self.streams[-1] \
                and self._function() is not None and not self.in_asyncio:
            # `for line in f` over a pipe or socket stream reads it line by line
            self._record("stream", node.iter, "for %s in %s" % (ast.unparse(node.target), node.iter.id), False)
        self.loops[-1] += 1
        self.generic_visit(node)
        self.loops[-1] -= 1

    visit_While = visit_For = visit_AsyncFor = _loop

    def visit_Await(self, node):
        for child in ast.walk(node.value):
            if isinstance(child, ast.Call):
                self.awaited.add(id(child))
        self.generic_visit(node)

    def _record(self, cls, node, text, timed):
        function = self._function()
        found = self.found.get(function)
        if found is None:
            found = self.found[function] = Found(self.module, function, 0, 0)
        found.calls.append(Call(cls, node.lineno, text if len(text) < 90 else text[:87] + "...",
                                self.loops[-1] > 0, timed, bool(self.windows)))

    def _context(self):
        cls = self._class()
        method_of_class = len(self.stack) >= 2 and self.stack[-1][0] == "def" and self.stack[-2][0] == "class"
        return Context(self.scopes[-1], self.torch, self.in_asyncio, self.all_methods,
                       _base_methods(self.methods, cls) if cls else set(),
                       self.class_scopes[-1] if method_of_class else None, self.streams[-1])

    def visit_With(self, node):
        if self.with_locks and self._function() is not None:
            for item in node.items:
                if lock_like_with(item):
                    self._record("with-lock", item.context_expr, "with %s:" % ast.unparse(item.context_expr), False)
        self.generic_visit(node)

    def visit_Call(self, node):
        if self._function() is not None and id(node) not in self.awaited:
            cls = classify(node, self._context())
            if cls is not None:
                self._record(cls, node, ast.unparse(node), _timed(node) or cls == "sleep")
        self.generic_visit(node)


def walk_file(path, module, torch=False, with_locks=True):
    with open(path, "rb") as f:
        tree = ast.parse(f.read(), filename=path)
    package = module if path.endswith("__init__.py") else module.rpartition(".")[0]
    walker = _Walker(module, package, _methods(tree), torch=torch, in_asyncio=module.startswith("asyncio"),
                     with_locks=with_locks)
    walker.windows = int(bool(WINDOWS_MODULES.search(module)))
    walker.visit(tree)
    for qualname, found in walker.found.items():
        found.line, found.end_line = walker.defined[qualname]
    return walker


def _walk_tree(root, files, prefix, torch, with_locks=True):
    found, defined = {}, {}
    for rel in files:
        module = module_name(rel, prefix)
        walker = walk_file(os.path.join(root, rel), module, torch=torch, with_locks=with_locks)
        for qualname, f in walker.found.items():
            found[(module, qualname)] = f
        defined[module] = dict(walker.defined)
    return found, defined


def enumerate_stdlib(lib_dir, with_locks=True):
    """{(module, qualname): Found} of a stdlib dir (`.../lib/python3.12`), and every function
    defined in those modules ({module: {qualname: (line, end_line)}})."""
    return _walk_tree(lib_dir, stdlib_files(lib_dir), "", False, with_locks)


def enumerate_torch(torch_dir, with_locks=True):
    return _walk_tree(torch_dir, torch_files(torch_dir), "torch", True, with_locks)


def python_version_of(lib_dir):
    m = re.search(r"python(3)\.(\d+)", lib_dir)
    return (int(m.group(1)), int(m.group(2))) if m else None


# --- line spans for bare frame names (Python 3.8-3.10) -----------------------------------------

LINE_VERSIONS = (8, 9, 10)     # the Pythons whose frames carry bare names (co_name)
BEGIN_LINES = "# BEGIN GENERATED _LINES"
END_LINES = "# END GENERATED _LINES"


def line_index(rows, stdlib_dirs, torch_dir=None, defined=None):
    """{(module, bare): {minor or "torch": ((first, last, qualname), ...)}} for every bare name of a
    row that more than one function of its file defines, in the given sources
    ({minor: lib_dir} for 3.8-3.10, and torch's dir).  `defined` ({minor or "torch": the second
    value of enumerate_*}) saves parsing sources already parsed."""
    defined = defined or {}
    defs = {minor: defined[minor] if minor in defined else enumerate_stdlib(d)[1]
            for minor, d in stdlib_dirs.items()}
    if torch_dir:
        defs["torch"] = defined["torch"] if "torch" in defined else enumerate_torch(torch_dir)[1]
    wanted = {(r.module, r.function.rsplit(".", 1)[-1]) for r in rows}
    index = {}
    for (module, bare) in sorted(wanted):
        for key, modules in defs.items():
            if (key == "torch") != (module.split(".")[0] == "torch"):
                continue
            spans = sorted((line, end, q) for q, (line, end) in modules.get(module, {}).items()
                           if q.rsplit(".", 1)[-1] == bare)
            if len(spans) > 1:
                index.setdefault((module, bare), {})[key] = tuple(spans)
    return index


def format_lines(index):
    out = [BEGIN_LINES + " (python3 tools/enumerate_blocking.py --write-lines)", "_LINES = {"]
    for key in sorted(index):
        out.append("    %r: {" % (key,))
        for version in sorted(index[key], key=lambda v: (isinstance(v, str), v)):
            out.append("        %r: %r," % (version, index[key][version]))
        out.append("    },")
    out.append("}")
    out.append(END_LINES)
    return "\n".join(out)


def available_sources():
    """{minor: lib_dir} of the Pythons 3.8-3.13 that pyenv has, and torch's dir (or None)."""
    import glob
    import subprocess
    dirs = {}
    for minor, version in zip(range(8, 14), ("3.8.18", "3.9.18", "3.10.13", "3.11.7", "3.12.1", "3.13.0")):
        try:
            prefix = subprocess.run(["pyenv", "prefix", version], capture_output=True, text=True,
                                    timeout=30).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            prefix = ""
        if not prefix:
            found = glob.glob(os.path.expanduser("~/.pyenv/versions/%s" % version))
            prefix = found[0] if found else ""
        lib = os.path.join(prefix, "lib", "python3.%d" % minor) if prefix else ""
        if lib and os.path.isfile(os.path.join(lib, "threading.py")):
            dirs[minor] = lib
    return dirs, torch_dir()


def torch_dir():
    """The installed PyTorch's package dir (what `python3 -c "import torch, os;
    print(os.path.dirname(torch.__file__))"` prints), found without importing it; None if absent."""
    import importlib.util
    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        return None
    locations = list(spec.submodule_search_locations or []) if spec else []
    return locations[0] if locations and os.path.isfile(os.path.join(locations[0], "__init__.py")) else None


# --- the command line ------------------------------------------------------------------------

def _print(found):
    for key in sorted(found):
        f = found[key]
        flags = []
        if f.windows_only:
            flags.append("windows-only")
        if any(c.in_loop and c.timed for c in f.calls):
            flags.append("timed-in-loop")
        print("%s\t%s\t%d-%d\t%s\t%s" % (f.module, f.function, f.line, f.end_line, ",".join(f.classes),
                                         " ".join(flags)))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("directory", nargs="?", help="a stdlib dir (.../lib/python3.X) or, with --torch, torch's package dir")
    parser.add_argument("--torch", action="store_true")
    parser.add_argument("--calls", action="store_true", help="print each primitive call too")
    parser.add_argument("--check", action="store_true", help="coverage against stalldiag.knowledge.blocking")
    parser.add_argument("--lines", action="store_true",
                        help="print blocking.py's _LINES from the Pythons 3.8-3.10 pyenv has and torch")
    parser.add_argument("--write-lines", action="store_true", help="rewrite _LINES in blocking.py")
    parser.add_argument("--check-all", action="store_true",
                        help="coverage for every Python 3.8-3.13 pyenv has and the installed torch")
    args = parser.parse_args(argv)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sys.path.insert(0, root)
    if args.check_all:
        from stalldiag.knowledge import blocking
        dirs, torch = available_sources()
        gaps = 0
        targets = [((3, m), enumerate_stdlib(d)[0]) for m, d in sorted(dirs.items())]
        if torch:
            targets.append((None, enumerate_torch(torch)[0]))
        for version, found in targets:
            report = blocking.coverage(found, version)
            print(report.summary())
            for key in report.missing + report.misplaced:
                print("  MISSING %s\t%s\t%s" % (key[0], key[1], ",".join(found[key].classes)))
            gaps += len(report.missing) + len(report.misplaced)
        print("%d rows (%d stdlib, %d torch), %d NOT_BLOCKING entries" % (
            len(blocking.ROWS), sum(r.versions is not None for r in blocking.ROWS),
            sum(r.versions is None for r in blocking.ROWS), len(blocking.NOT_BLOCKING)))
        return 1 if gaps else 0
    if args.lines or args.write_lines:
        from stalldiag.knowledge import blocking
        dirs, torch = available_sources()
        text = format_lines(line_index(blocking.ROWS, {m: d for m, d in dirs.items() if m in LINE_VERSIONS}, torch))
        if args.write_lines:
            path = os.path.join(root, "stalldiag", "knowledge", "blocking.py")
            source = open(path).read()
            start, end = source.index(BEGIN_LINES), source.index(END_LINES) + len(END_LINES)
            with open(path, "w") as f:
                f.write(source[:start] + text + source[end:])
        else:
            print(text)
        return 0
    if not args.directory:
        parser.error("a directory is needed (or --check-all, --lines, --write-lines)")
    found, _defined = (enumerate_torch if args.torch else enumerate_stdlib)(args.directory)
    if args.check:
        from stalldiag.knowledge import blocking
        version = None if args.torch else python_version_of(args.directory)
        report = blocking.coverage(found, version)
        print(report.summary())
        for key in report.missing + report.misplaced:
            f = found[key]
            print("MISSING %s\t%s\t%d-%d\t%s" % (key[0], key[1], f.line, f.end_line, ",".join(f.classes)))
        return 1 if report.missing or report.misplaced else 0
    if args.calls:
        for key in sorted(found):
            f = found[key]
            print("%s\t%s%s" % (f.module, f.function, "\t[windows-only]" if f.windows_only else ""))
            for c in f.calls:
                print("    %-8s %5d %s%s" % (c.cls, c.line, c.text, "  (loop)" if c.in_loop else ""))
    else:
        _print(found)
    return 0


if __name__ == "__main__":
    sys.exit(main())
