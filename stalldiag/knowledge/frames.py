"""Python frames that say what a thread is waiting for or doing.

Each row: (framework, file pattern, function pattern, kind, meaning).
A pattern is a regular expression searched in the frame's file path
(with '/' separators) and matched against py-spy's function name
("Class.method" for methods on Python 3.11+, "method" before).  A stack is
read leaf first; the first row that matches a frame gives the thread's
*wait* kind, and every matching row is kept as context (so a queue wait
inside DataLoader._next_data is both a queue wait and a DataLoader wait).

Kinds used by the diagnosis:
  lock, semaphore, condition, event, queue-get, queue-put, thread-join, future: waits on
      another thread of the same process
  ipc: waits on another process (multiprocessing pipes, queues, managers)
  child: waits for a child program to finish or to answer
  network, poll, sleep, io, cpu: as the names say
  dataloader, compile, collective, rendezvous, cuda: framework context
  file-wait: polls for a lock or marker file in a sleep loop (FILE_WAIT_PATHS says where the
      path is among the frame's locals; FILE_WAIT_SOURCES recognises hand-written loops)
"""
import functools
import re
from collections import namedtuple

FramePattern = namedtuple("FramePattern", "framework file function kind meaning")

_P = FramePattern

# The loop of a thread that runs the tasks of a pool, and what the pool is.
THREAD_POOL_WORKER = (r"concurrent/futures/thread\.py$", r"^_worker$")
PROCESS_POOL_WORKER = (r"multiprocessing/pool\.py$", r"^worker$")
DATALOADER_WORKER = (r"torch/utils/data/_utils/worker\.py$", r"^_worker_loop$")
PIN_MEMORY_LOOP = (r"torch/utils/data/_utils/pin_memory\.py$", r"^_pin_memory_loop$")
# a multiprocessing.Pool's threads in the process that made it: one replaces workers, one hands out
# tasks, one takes results off the result queue and completes the waiting ApplyResult
POOL_WORKER_HANDLER = (r"multiprocessing/pool\.py$", r"^(Pool\.)?_handle_workers$")
POOL_RESULT_HANDLER = (r"multiprocessing/pool\.py$", r"^(Pool\.)?_handle_results$")   # (3.11+: qualified)
POOL_WORKER_FRAMES = ((THREAD_POOL_WORKER, "a concurrent.futures.ThreadPoolExecutor"),
                      (PROCESS_POOL_WORKER, "a multiprocessing pool"))


# An event loop's step, and where an idle loop waits for events: a thread inside a step but not
# in the wait runs a callback or a coroutine, and nothing else of that loop runs meanwhile.
EVENT_LOOP_STEP = ((r"asyncio/base_events\.py$", r"^(BaseEventLoop\.)?_run_once$"),)
EVENT_LOOP_WAIT = ((r"(^|/)selectors\.py$", r"^(\w+Selector\.)?select$"),
                   (r"asyncio/windows_events\.py$", r"^(IocpProactor\.)?_poll$"))


_REGEXES = {}


def regex(pattern):
    """re.compile(pattern), kept here: re.search(pattern, ...) looks its cache up in Python at
    every call, and these rows are asked of every frame of every thread."""
    compiled = _REGEXES.get(pattern)
    if compiled is None:
        compiled = _REGEXES[pattern] = re.compile(pattern)
    return compiled


# Packages that ship a copy of a standard-library package under another name, and run its code
# as theirs: `multiprocess` (dill's fork of multiprocessing, which Hugging Face datasets and
# pathos use for Dataset.map(num_proc=N)) and `billiard` (Celery's).  Their frames are matched as
# the standard module's (a Pool's worker loop, a Manager's server, a Connection's recv), and are
# shown under their real path.
STDLIB_FORKS = (("multiprocess", "multiprocessing"), ("billiard", "multiprocessing"))
_FORK_PATH = re.compile(r"/(?:site|dist)-packages/(%s)/" % "|".join(re.escape(f) for f, _std in STDLIB_FORKS))
_FORK_OF = dict(STDLIB_FORKS)


@functools.lru_cache(maxsize=8192)
def canonical_file(filename):
    """The file a frame's patterns are matched against: a standard-library fork's path
    (`.../python3.11/site-packages/multiprocess/pool.py`) as the module it copies
    (`.../python3.11/multiprocessing/pool.py`); every other path as it is."""
    filename = filename or ""
    if "-packages/" not in filename:
        return filename
    return _FORK_PATH.sub(lambda m: "/" + _FORK_OF[m.group(1)] + "/", filename, count=1)


def _matches(frame, row):
    file_pattern, function = row
    return bool(regex(file_pattern).search(canonical_file(frame[1])) and regex(function).match(frame[0] or ""))


def _any_frame(stack, rows):
    return any(_matches(frame, row) for frame in stack or [] for row in rows)


def in_event_loop_step(stack):
    """The thread runs one step of an asyncio event loop (a callback or a coroutine), not the
    loop's wait for events."""
    return _any_frame(stack, EVENT_LOOP_STEP) and not _any_frame(stack, EVENT_LOOP_WAIT)


# A barrier's wait (threading.Barrier, and multiprocessing's Barrier, which is one over
# process-shared locks): every party waits until the last arrives.
BARRIER_WAIT = ((r"(^|/)threading\.py$", r"^(Barrier\.)?wait$"),)


def barrier_call(stack):
    """The frame that called Barrier.wait (where the user's code waits at the barrier), or None."""
    for depth, frame in enumerate(stack or []):
        if any(_matches(frame, row) for row in BARRIER_WAIT):
            return stack[depth + 1] if depth + 1 < len(stack) else frame
    return None


# autograd's backward pass: in a rank of a DDP job it waits, between kernels, for the gradient
# all-reduce that DDP's reducer starts from it (finalize_backward joins it).
BACKWARD = ((r"torch/autograd/graph\.py$", r"^_engine_run_backward$"),
            (r"torch/autograd/__init__\.py$", r"^backward$"))


def in_backward(stack):
    return _any_frame(stack, BACKWARD)


def in_event_loop_wait(stack):
    """The thread is an asyncio event loop between steps, waiting for events."""
    return _any_frame(stack, EVENT_LOOP_STEP) and _any_frame(stack, EVENT_LOOP_WAIT)


# A multiprocessing.Pool: waits for a result, and a worker idle between tasks (in the pool's
# worker loop, every frame above it a wait on the task queue).
POOL_RESULT_WAIT = ((r"multiprocessing/pool\.py$", r"^((ApplyResult|MapResult)\.)?(get|wait)$|^(IMapIterator\.)?next$"),)
TASK_QUEUE_FILES = r"multiprocessing/(queues|synchronize|connection)\.py$|(^|/)selectors\.py$"   # (a get with a timeout polls)
# The thread of a process pool that waits for its workers' results (and replaces dead workers).
POOL_MANAGER = ((r"concurrent/futures/process\.py$", r"^(_ExecutorManagerThread\.)?(run|wait_result_broken_or_wakeup)$|"
                 r"^_queue_management_worker$"),
                (r"multiprocessing/pool\.py$", r"^(Pool\.)?_handle_(results|workers)$"),)
# A lock taken by polling: a sleep between attempts inside a function that acquires a lock (a
# lock file, a queue file, a lock service), whatever library or vendored copy it is.
LOCK_POLL_FUNCTION = re.compile(r"(^|\.)(acquire|_acquire|lock|_lock|wait_for_lock|acquire_lock|_poll_until_acquired)$"
                                r"|^\w*Lock\.\w+$")
THREAD_TASK_FILES = r"(^|/)(queue|threading)\.py$"


def waits_for_pool_result(stack):
    return _any_frame(stack, POOL_RESULT_WAIT)


def pool_manager(stack):
    """The thread is a process pool's manager, waiting for its workers' results."""
    return _any_frame(stack, POOL_MANAGER)


def lock_poll_frame(stack, depth=4):
    """The frame, among the innermost few of the user's or a library's Python code, of a function
    that takes a lock by polling (acquire(), FileLock.acquire, lock()), or None."""
    python = [f for f in stack or [] if (f[1] or "").endswith(".py")][:depth]
    return next((f for f in python if LOCK_POLL_FUNCTION.search(f[0] or "")), None)


def idle_pool_worker(stack, loop=PROCESS_POOL_WORKER):
    """A multiprocessing.Pool worker (or, with loop=DATALOADER_WORKER, a DataLoader worker)
    waiting for its next task: only queue code above its loop."""
    for depth, frame in enumerate(stack or []):
        if _matches(frame, loop):
            return depth > 0 and all(regex(TASK_QUEUE_FILES).search(canonical_file(f[1])) for f in stack[:depth])
    return False


def idle_thread_pool_task_worker(stack):
    """A multiprocessing.pool.ThreadPool worker waiting for its next task: as a process pool's, or
    its loop the innermost Python frame (its task queue is a queue.SimpleQueue, whose get is C)."""
    return idle_pool_worker(stack) or bool(stack) and _matches(stack[0], PROCESS_POOL_WORKER)


def runs(stack, row):
    """A thread whose stack has a frame of that (file, function) row."""
    return any(_matches(frame, row) for frame in stack or [])


def idle_dataloader_worker(stack):
    """A DataLoader worker waiting on its index queue for the next batch to make."""
    return idle_pool_worker(stack, DATALOADER_WORKER)


def idle_thread_pool_worker(stack):
    """A ThreadPoolExecutor worker waiting for its next task: its loop is the innermost Python
    frame (SimpleQueue.get is C), or only queue code is above it."""
    for depth, frame in enumerate(stack or []):
        if _matches(frame, THREAD_POOL_WORKER):
            return all(regex(THREAD_TASK_FILES).search(canonical_file(f[1])) for f in stack[:depth])
    return False


# Where a forked child's own stack begins: fork copies the parent's frames, and the child
# returns from fork inside them.  Frames at and outside these ran in the parent: what they
# hold (`with lock:` around Process.start()) the child does not.
FORK_FRAMES = ((r"multiprocessing/popen_fork\.py$", r"^(Popen\.)?_launch$"),
               (r"multiprocessing/forkserver\.py$", r"^_serve$"),)


def own_frames(stack):
    """The frames of a stack that ran in this process: those inside the innermost fork point."""
    for depth, frame in enumerate(stack or []):
        if any(_matches(frame, row) for row in FORK_FRAMES):
            return stack[:depth]
    return stack or []


# A line that writes to a stream: Python's buffered streams (sys.stdout, sys.stderr, files) and
# logging's handlers take a lock around the write, which the thread blocked in write() holds.
STREAM_WRITE = re.compile(r"\bprint\(|\.write\(|\.writelines\(|\.flush\(|"
                          r"\b\w*(log|logger|logging|LOG)\.(debug|info|warning|warn|error|exception|critical|log)\(")


def writes_to_stream(code):
    return bool(code and STREAM_WRITE.search(code))


QUEUE_JOIN = ((r"(^|/)queue\.py$", r"^(Queue\.)?join$"),)


def waits_in_queue_join(stack):
    """Queue.join(): waits until every put() item has had its task_done()."""
    return _any_frame(stack, QUEUE_JOIN)


def pool_of(stack):
    """What pool a thread's stack (leaf first) runs tasks for, or None."""
    return next((pool for frame in stack or [] for row, pool in POOL_WORKER_FRAMES if _matches(frame, row)), None)


FRAME_PATTERNS = [
    # --- the standard library: waits on other threads -----------------------------
    _P("python", r"(^|/)threading\.py$", r"^(Thread\.)?(join|_wait_for_tstate_lock)$",
       "thread-join", "waits in Thread.join for another thread to finish"),
    _P("python", r"(^|/)threading\.py$", r"^(Condition\.)?(wait|wait_for)$",
       "condition", "waits on a threading.Condition"),
    _P("python", r"(^|/)threading\.py$", r"^(Event\.)?wait$",
       "event", "waits on a threading.Event"),
    _P("python", r"(^|/)threading\.py$", r"^((Bounded)?Semaphore\.)?acquire$",
       "semaphore", "waits on a threading.Semaphore for another thread to release it"),
    _P("python", r"(^|/)queue\.py$", r"^(Queue\.)?get$",
       "queue-get", "waits for an item on a queue.Queue"),
    _P("python", r"(^|/)queue\.py$", r"^(Queue\.)?put$",
       "queue-put", "waits for room on a full queue.Queue"),
    _P("python", r"concurrent/futures/_base\.py$", r"^(Future\.)?(result|exception)$|^(wait|as_completed)$",
       "future", "waits for a concurrent.futures result"),
    # --- other processes -----------------------------------------------------------
    _P("python", r"(^|/)subprocess\.py$",
       r"^(Popen\.)?(wait|_wait|_try_wait|communicate|_communicate)$|^(run|call|check_call|check_output)$",
       "child", "waits for a child program"),
    _P("python", r"multiprocessing/connection\.py$",
       r"^((_ConnectionBase|Connection)\.)?(recv|recv_bytes|_recv|_recv_bytes|poll|_poll)$|^wait$",
       "ipc", "waits for a message from another process (multiprocessing Connection)"),
    _P("python", r"multiprocessing/queues\.py$", r"^(Queue\.)?get$",
       "ipc", "waits for an item on a multiprocessing.Queue"),
    _P("python", r"multiprocessing/synchronize\.py$", r"^(SemLock\.)?(__enter__|acquire)$",
       "lock", "waits on a multiprocessing lock/semaphore shared between processes"),
    _P("python", r"multiprocessing/pool\.py$", r"^(ApplyResult\.)?(get|wait)$|^(IMapIterator\.)?next$|^(Pool\.)?join$",
       "ipc", "waits for a multiprocessing.Pool result"),
    _P("python", r"multiprocessing/popen_fork\.py$", r"^(Popen\.)?(wait|poll)$",
       "child", "waits for a multiprocessing child process to exit"),
    # --- an embedded database: SQLite sleeps in its busy handler (busy_timeout) while another
    # connection, of this process or another, holds the database's write lock ---------------
    _P("sqlalchemy", r"sqlalchemy/engine/default\.py$",
       r"^(DefaultDialect\.)?(do_execute|do_executemany|do_execute_no_params|do_commit)$",
       "db-busy", "a database statement; asleep in it, SQLite's busy handler waits for the database's lock"),
    # --- sockets and event loops ------------------------------------------------------
    _P("python", r"(^|/)socket\.py$", r"^(socket\.)?(accept|readinto|recv_into)$|^(SocketIO\.)?readinto$|^create_connection$",
       "network", "waits on a socket"),
    _P("python", r"http/client\.py$", r"^(HTTPResponse\.)?(begin|_read_status|read)$|^(HTTPConnection\.)?getresponse$",
       "network", "waits for an HTTP response"),
    _P("python", r"(^|/)selectors\.py$", r"^(\w+Selector\.)?select$",
       "poll", "waits in a selector (event loop or socket wait)"),
    # --- lock and marker files polled in a sleep loop ---------------------------------
    # filelock 3.x polls in BaseFileLock.acquire (_api.py), 4.x in _poll_until_acquired
    _P("filelock", r"filelock/(_api|_core/_acquire)\.py$",
       r"^((\w+)\.)?(acquire|_poll_until_acquired)$",
       "file-wait", "polls a lock file until the filelock package can take it"),
    _P("torch FileBaton", r"torch/utils/file_baton\.py$", r"^(FileBaton\.)?wait$",
       "file-wait", "waits while a lock file exists (torch FileBaton: C++/CUDA extension builds)"),
]

# Where a file-wait frame keeps the path: (local name, name to join to it), looked up in
# the frame and then its callers, innermost first (py-spy --locals shows strings, not
# attributes: FileBaton's self.lock_file_path is reached through the caller's build_directory).
FILE_WAIT_PATHS = {
    "filelock": (("lock_filename", None), ("canonical_path", None)),
    "torch FileBaton": (("lock_file_path", None), ("build_directory", "lock")),
}

# Calls that ask whether a child process has exited, without waiting: a loop around one on a CPU
# is a busy-wait on the child (the parent's CPU goes to asking, its progress to the child).
CHILD_POLLS = ((r"(^|/)multiprocessing/process\.py$", r"^(BaseProcess\.)?is_alive$"),
               (r"(^|/)multiprocessing/popen_\w+\.py$", r"^(Popen\.)?poll$"),
               (r"(^|/)subprocess\.py$", r"^(Popen\.)?(poll|_internal_poll)$"))


def polls_child(frame):
    """The frame asks whether a child has exited (CHILD_POLLS)."""
    return any(_matches(frame, row) for row in CHILD_POLLS)


# A lock taken or given back by hand in a source line: `X.acquire(` / `X.release(`, X's name.
LOCK_ACQUIRE = re.compile(r"([\w.\[\]]+)\.acquire\(")
LOCK_RELEASE = re.compile(r"([\w.\[\]]+)\.release\(")
# A lock a statement holds for its block: `with X:`, `async with X as y:`, `with X, Y:`, X's name.
# calls that can run without bound on one input (a regular expression backtracking) or spin in
# native code: a line of a `for` loop that makes one of them may be one call that never returns;
# any other call there is as likely the loop's own work, repeated (h.update per row)
# Numeric libraries whose calls compute in native code (BLAS, Cython, C++ kernels): a thread whose
# innermost Python frame is theirs, or whose own line hands them the work, computes however long
# one call takes and however still its Python stack stands.  Names as installed (site-packages).
NUMERIC_PACKAGES = frozenset((
    "numpy", "scipy", "sklearn", "torch", "torchvision", "torchaudio", "pandas", "jax", "jaxlib", "tensorflow",
    "keras", "xgboost", "lightgbm", "catboost", "numba", "cupy", "numexpr", "statsmodels", "pyarrow", "polars",
    "faiss", "hnswlib", "annoy", "sentence_transformers", "transformers", "tokenizers", "cv2", "PIL", "skimage",
    "networkx", "sympy", "h5py", "zarr", "blosc", "lightning", "pytorch_lightning", "triton", "opt_einsum"))
# A line of the user's own code that hands work to a numeric library: a matrix product, or a call
# through a numeric module's usual name.
NUMERIC_LINE = re.compile(r"[\w)\]]\s*@=?\s*[\w(]|\b(np|numpy|torch|scipy|sp|jnp|jax|tf|pd|cp|F|nn|linalg|"
                          r"sklearn)\.\w+|\.(fit|predict|transform|fit_transform|matmul|dot|einsum|solve|svd|"
                          r"backward|forward|step|cholesky|eig\w*|lstsq|inv|fft\w*|conv\w*)\(")

RUNAWAY_CALL = re.compile(r"(\bre\.\w+|\.(search|match|fullmatch|sub|subn|findall|finditer|split|"
                          r"scanner))\(|spin_lock|spin_until")


LOCK_WITH = re.compile(r"^(?:async\s+)?with\s+([\w.\[\]'\"]+)(?:\s*(?:,|as\b|:))")


def lock_taken(line):
    """The name a source line takes a lock by (`self._lock` of `with self._lock:` or of
    `self._lock.acquire()`), or None."""
    line = (line or "").strip()
    match = LOCK_WITH.match(line) or LOCK_ACQUIRE.search(line)
    return match.group(1) if match else None


# A hand-written wait for a file, from source lines: a sleep inside a loop on a file's existence.
FILE_WAIT_SOURCES = [
    ("user code", re.compile(r"^while\s+(not\s+)?(os\.path\.(exists|isfile|lexists)|[\w.]+\.(exists|is_file))"
                             r"\(\s*([\w.]*)"), re.compile(r"\bsleep\(")),
]

# Framework frames.  These give *context*: a thread with any of them on its
# stack is doing that framework's work, whatever syscall it sits in (a rank
# in all_reduce may spin, poll or futex-wait; inductor may wait on gcc).
FRAMEWORK_PATTERNS = [
    # Interactive prompts: a read of stdin under these waits for a person, whatever stdin is
    _P("pdb", r"(^|/)(pdb|bdb|cmd)\.py$", r"^(Pdb\.|Bdb\.|Cmd\.)?(cmdloop|interaction|set_trace|trace_dispatch|"
       r"dispatch_line|user_line|_cmdloop)$", "prompt", "the Python debugger waits for a command"),
    _P("getpass", r"(^|/)getpass\.py$", r"^(unix_getpass|getpass|_raw_input|fallback_getpass)$", "prompt",
       "getpass waits for a password"),
    _P("click", r"click/termui\.py$", r"^(prompt|confirm|prompt_func|getchar)$", "prompt",
       "a click/typer prompt waits for an answer"),
    _P("code", r"(^|/)code\.py$", r"^(InteractiveConsole\.)?(interact|raw_input)$", "prompt",
       "an interactive console waits for input"),
    # PyTorch DataLoader: the training loop waiting for a batch, and the workers
    _P("DataLoader", r"torch/utils/data/dataloader\.py$",
       r"^(_MultiProcessingDataLoaderIter\.)?(_next_data|_get_data|_try_get_data)$",
       "dataloader", "the training loop waits for a batch from DataLoader workers"),
    _P("DataLoader", r"torch/utils/data/_utils/worker\.py$", r"^_worker_loop$",
       "dataloader-worker", "a DataLoader worker process"),
    _P("DataLoader", r"torch/utils/data/_utils/pin_memory\.py$", r"^_pin_memory_loop$",
       "pin-memory", "the DataLoader pin-memory thread"),
    # torch.compile: dynamo tracing, AOT autograd, inductor codegen, Triton
    _P("torch.compile", r"torch/_dynamo/(convert_frame|symbolic_convert|output_graph|bytecode_transformation|"
       r"variables/|guards)", r".", "compile", "torch.compile (dynamo) is tracing a function"),
    _P("torch.compile", r"torch/_functorch/(aot_autograd|_aot_autograd/|partitioners)", r".", "compile",
       "torch.compile (AOT autograd) is building forward/backward graphs"),
    _P("torch.compile", r"torch/_inductor/(compile_fx|graph|scheduler|lowering|codegen/|codecache|async_compile|"
       r"select_algorithm|autotune_process|fx_passes/|cpp_builder|runtime/triton_heuristics)", r".", "compile",
       "torch.compile (inductor) is generating or building kernels"),
    _P("Triton", r"triton/(compiler/|backends/[^/]+/compiler\.py|runtime/(jit|autotuner|build))", r".", "compile",
       "Triton is compiling a kernel"),
    _P("JAX", r"jax/_src/(compiler|interpreters/pxla|dispatch)\.py$", r"compile|lower|backend_compile", "compile",
       "JAX/XLA is compiling"),
    _P("torch.jit", r"torch/jit/(_recursive|_script|frontend)\.py$", r".", "compile",
       "torch.jit.script is compiling a model to TorchScript"),
    # torch.distributed
    _P("torch.distributed", r"torch/distributed/distributed_c10d\.py$",
       r"^(all_reduce|all_gather|all_gather_into_tensor|all_gather_object|reduce_scatter|"
       r"reduce_scatter_tensor|broadcast|broadcast_object_list|reduce|barrier|all_to_all|all_to_all_single|"
       r"gather|scatter|send|recv|monitored_barrier)$",
       "collective", "a torch.distributed collective waits for every rank"),
    # DistributedDataParallel's own collectives: the buffers it broadcasts before a forward, the
    # flags it all-reduces (uneven inputs, unused parameters), its parameters' sync at init
    _P("torch.distributed", r"torch/nn/parallel/distributed\.py$",
       r"(^|\.)(_distributed_broadcast_coalesced|_default_broadcast_coalesced|_sync_buffers|_sync_module_buffers|"
       r"_sync_params_and_buffers|_match_all_reduce_for_bwd_pass|_match_unused_params_allreduce|"
       r"_check_global_requires_backward_grad_sync|_find_common_rank|_sync_final_model)$",
       "collective", "DistributedDataParallel's own collective (its buffers, its flags) waits for every rank"),
    _P("torch.distributed", r"torch/distributed/(distributed_c10d\.py|rendezvous\.py|elastic/rendezvous/)",
       r"init_process_group|_create_c10d_store|_rendezvous|rendezvous|_env_rendezvous_handler|"
       r"_tcp_rendezvous_handler|next_rendezvous|_store_based_barrier",
       "rendezvous", "torch.distributed rendezvous waits for every rank to join"),
    # CUDA: the host waits for the GPU
    _P("torch.cuda", r"torch/cuda/(__init__|streams)\.py$", r"^(synchronize|Event\.synchronize|Stream\.synchronize|"
       r"Event\.wait|Event\.elapsed_time)$", "cuda", "the host waits for GPU work to finish"),
    _P("torch.distributed", r"torch/distributed/(elastic/agent/server/api|elastic/multiprocessing/api)\.py$",
       r"_monitor_workers|_invoke_run|run|wait",
       "launcher-wait", "the torchrun agent monitors its ranks"),
    # PyTorch's debug server (torch.distributed.debug.start_debug_server): the HTTP frontend process
    # rank 0 forks, which serves requests and waits on its listening socket by design
    _P("torch.distributed.debug", r"torch/distributed/debug/_frontend\.py$", r".",
       "debug-server", "PyTorch's debug server frontend: it waits for HTTP requests"),
]


# A user's line that makes the host wait for the GPU through a C call py-spy
# cannot show (tensor.item(), .cpu(), .tolist(), .numpy()).  Only counted for a
# process that holds a GPU (an open /dev/nvidia* or NVML memory).
SOURCE_PATTERNS = [
    # (stdin.read() with no size reads to end of input: data piped in, not an answer awaited)
    ("prompt", re.compile(r"\b(raw_)?input\(|stdin\.(readline\(|read\(\s*[1-9])|\bgetpass\(|\bbreakpoint\(|"
                          r"set_trace\(|\bconfirm\(|\bprompt\("), "prompt",
     "the line asks for input on stdin: a person at a prompt is to answer it"),
    ("torch.cuda", re.compile(r"\.(item|cpu|tolist|numpy)\(\)|cuda\.synchronize\(|\.synchronize\(\)|"
                              r"\.to\([^)]*['\"]cpu['\"]"), "cuda",
     "a tensor read back to the host waits for the GPU kernels queued before it"),
]


# Words of a user's line that touch a GPU (a copy to or from it, a sync): a thread on CPU
# without moving at such a line, in a process holding a GPU, spin-waits in the CUDA driver.
DEVICE_WORDS = (".to(", ".cuda(", "device", "copy_(", "synchronize", ".item(", "non_blocking")


def touches_device(code):
    return any(word in (code or "") for word in DEVICE_WORDS)


# Lock files a polling loop waits on, by name (filelock's .lock, a bare "lock", .lck).
LOCK_FILE_SUFFIXES = (".lock", "/lock", ".lck")


# Functions that serve a request (socketserver, multiprocessing managers, http.server, a user's
# own handle()/serve()): a server thread stuck on a lock in one is the handler a client waits for
SERVER_HANDLER = re.compile(r"(^|\.)(handle\w*|serve\w*|process_request\w*|finish_request|dispatch_request|"
                            r"_handle_request|on_request|on_message)$")


def serves_requests(stack):
    """A stack inside a request handler (SERVER_HANDLER)."""
    return any(SERVER_HANDLER.search(frame[0] or "") for frame in stack or [])


def source_kind(code):
    """The kind of wait a user's source line implies, or None."""
    for _framework, regex, kind, _meaning in SOURCE_PATTERNS:
        if code and regex.search(code):
            return kind
    return None


class _Row:
    """A pattern row whose regexes are compiled when first needed: a frame's file must contain
    the row's needle (the literal text every match of its file pattern contains) before they
    are compiled or run.  Compiling both tables up front was ~7 ms of every run's start, for
    the few rows a window's frames ever reach."""
    __slots__ = ("row", "needle", "_file", "_function")

    def __init__(self, row):
        self.row, self.needle = row, file_needle(row.file)
        self._file = self._function = None

    def matches(self, function, filename):
        if self.needle not in filename:
            return False
        if self._file is None:
            self._file, self._function = re.compile(self.row.file), re.compile(self.row.function)
        return self._file.search(filename) is not None and self._function.search(function) is not None


def file_needle(pattern):
    """The leading literal text of a file pattern (after an optional '(^|/)' or '^'): every
    match contains it.  '' where the pattern alternates at its top level."""
    depth, escaped, in_class = 0, False, False
    for c in pattern:
        if escaped:
            escaped = False
        elif c == "\\":
            escaped = True
        elif in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "|" and depth == 0:
            return ""
    text = pattern[len("(^|/)"):] if pattern.startswith("(^|/)") else pattern.lstrip("^")
    needle, i = [], 0
    while i < len(text):
        if text.startswith("\\.", i):
            needle.append(".")
            i += 2
        elif text[i].isalnum() or text[i] in "_/-":
            needle.append(text[i])
            i += 1
        else:
            if text[i] in "?*{+" and needle:
                needle.pop()   # a quantified last character may be absent (or repeated)
            break
    return "".join(needle)


def _compile(rows):
    return [_Row(row) for row in rows]


_COMPILED = _compile(FRAME_PATTERNS)
_FRAMEWORK = _compile(FRAMEWORK_PATTERNS)


def match_frame(function, filename, rows=None):
    """The first pattern row matching one frame, or None."""
    if rows is None:
        return _match_table(function, filename)
    return _first_match(_compile(rows), function, filename)


@functools.lru_cache(maxsize=8192)
def _match_table(function, filename):
    # A window repeats the same few hundred frames in thousands of samples.
    return _first_match(_COMPILED, function, filename)


def _first_match(compiled, function, filename):
    function, filename = function or "", canonical_file(filename)
    for row in compiled:
        if row.matches(function, filename):
            return row.row
    return None


def match_stack(frames):
    """All (depth, row) matches of a leaf-first list of (function, file, line)."""
    found = []
    for depth, frame in enumerate(frames):
        row = match_frame(frame[0], frame[1])
        if row is not None:
            found.append((depth, row))
    return found


def is_library_file(filename):
    """A frame from the standard library or site-packages (not the user's code)."""
    f = filename or ""
    if f.startswith("<"):
        return f.startswith("<frozen")   # <string>, <stdin> are the user's own code
    if not f.endswith((".py", ".pyw")):
        return True                      # a native frame (--native): libc.so.6, libtorch.so
    return "/lib/python" in f or "site-packages" in f or "dist-packages" in f


_SITE_PACKAGE = re.compile(r"/(?:site|dist)-packages/([^/]+)")
_STDLIB = re.compile(r"/lib/python\d\.\d+/(?!(?:site|dist)-packages/)")


def is_stdlib_file(filename):
    """A frame of the standard library (not of a package installed beside it)."""
    return bool(_STDLIB.search(filename or ""))


def package_of(filename):
    """The installed package a file belongs to ("torch", "transformers"), or None."""
    match = _SITE_PACKAGE.search(filename or "")
    if not match:
        return None
    name = match.group(1)
    return name[:-3] if name.endswith(".py") else name


def framework_context(frames):
    """Framework rows matching anywhere in a stack, innermost first, one per kind."""
    found = {}
    for depth, frame in enumerate(frames):
        function, filename = frame[0] or "", frame[1] or ""
        for compiled in _FRAMEWORK:
            row = compiled.row
            if row.kind not in found and compiled.matches(function, filename):
                found[row.kind] = (depth, row)
    return sorted(found.values(), key=lambda item: item[0])
