"""Threads that frameworks run to wait for work: their roles, checked against the frameworks' source.

A server, a pool or a task framework keeps threads whose job is to wait: an event loop polls
its connections, a listener sits in accept(), a manager's server hands each client a thread, a
pool's handler threads move tasks and results, a process watcher joins its child, a queue's
feeder waits for items.  Each waits *by design*: the wait is the framework idling, not the
cause of a stall.  When a client waits on such a thread, the request it sent is somewhere
else: not yet read (bytes in the server's receive queue), or read and being handled by a
thread that runs a task (the user's code, below the framework's frames).  The walk follows the
request there (diagnosis/edges.py, work_in_flight) and never names the idle thread the
culprit.

A row: the framework, the file and function (regexes, as knowledge/frames.py's rows) of the
frame that makes a thread that role, the role, what it waits for by design, and where that was
read in the framework's source.  A thread has the role while it is idle in it: the role's frame
is on its stack and no frame of the user's own code is inside it (a ThreadPoolExecutor worker
that runs the user's function is working, not idle).
"""
import functools
from collections import namedtuple

from .frames import (DATALOADER_WORKER, PROCESS_POOL_WORKER, THREAD_POOL_WORKER, canonical_file, is_library_file,
                     own_frames, regex)

Role = namedtuple("Role", "framework file function role waits_for source")

_R = Role

ROLES = (
    # --- the standard library ------------------------------------------------------------------
    _R("asyncio", r"asyncio/base_events\.py$", r"^(BaseEventLoop\.)?run_forever$", "event-loop",
       "events on the fds it watches, and callbacks scheduled on it",
       "Lib/asyncio/base_events.py: run_forever calls _run_once, whose selector.select blocks"),
    _R("selectors", r"(^|/)socketserver\.py$", r"^(BaseServer\.)?serve_forever$", "server-loop",
       "a client connecting (its selector polls the listening socket)",
       "Lib/socketserver.py: serve_forever polls the listening socket with a selector"),
    _R("socketserver", r"(^|/)socketserver\.py$", r"^(BaseServer\.)?handle_request$", "server-loop",
       "a client connecting", "Lib/socketserver.py: handle_request waits on the listening socket"),
    _R("multiprocessing", r"multiprocessing/managers\.py$", r"^(Server\.)?(serve_forever|accepter)$",
       "manager-server", "a client connecting, or the manager's shutdown",
       "Lib/multiprocessing/managers.py: Server.serve_forever waits on stop_event; accepter on accept()"),
    _R("multiprocessing", r"multiprocessing/pool\.py$", r"^(Pool\.)?_handle_(workers|tasks|results)$",
       "pool-handler", "tasks to hand out, results to hand back, workers to replace",
       "Lib/multiprocessing/pool.py: Pool's three handler threads"),
    _R("multiprocessing", r"multiprocessing/queues\.py$", r"^(Queue\.)?_feed$", "queue-feeder",
       "items put on the queue, to flush into its pipe",
       "Lib/multiprocessing/queues.py: Queue._feed waits on its notempty condition"),
    _R("multiprocessing", r"multiprocessing/resource_tracker\.py$", r"^((ResourceTracker\.)?main|main)$",
       "resource-tracker", "messages from the processes that share it",
       "Lib/multiprocessing/resource_tracker.py: main reads its fifo until every writer closes it"),
    _R("concurrent.futures", r"concurrent/futures/process\.py$",
       r"^(_ExecutorManagerThread\.)?(run|wait_result_broken_or_wakeup)$", "executor-manager",
       "a result from a worker process, or a new task",
       "Lib/concurrent/futures/process.py: _ExecutorManagerThread.run waits on the result queue"),
    _R("logging", r"logging/handlers\.py$", r"^(QueueListener\.)?_monitor$", "log-listener",
       "a log record on its queue", "Lib/logging/handlers.py: QueueListener._monitor"),
    # --- task and data frameworks --------------------------------------------------------------
    _R("dask.distributed", r"distributed/process\.py$",
       r"^(AsyncProcess\.)?_watch_(process|message_queue)$|monitor_parent$", "process-watcher",
       "its worker process to exit, a message for it, or its parent to go away",
       "distributed/process.py: AsyncProcess._watch_process joins the child; monitor_parent reads a pipe "
       "nothing writes to"),
    _R("dask.distributed", r"distributed/nanny\.py$", r"watch_stop_q$", "process-watcher",
       "the nanny's stop message", "distributed/nanny.py: watch_stop_q, the 'Nanny stop queue watch' thread"),
    _R("dask.distributed", r"distributed/utils\.py$", r"run_loop$", "event-loop",
       "the client's event loop, in its own thread ('IO loop')",
       "distributed/utils.py: LoopRunner._start_unlocked.<locals>.run_loop runs asyncio's loop"),
    _R("tornado", r"tornado/(ioloop|platform/asyncio)\.py$", r"^(\w+\.)?start$", "event-loop",
       "events on the fds it watches", "tornado/platform/asyncio.py: BaseAsyncIOLoop.start runs asyncio's loop"),
    _R("joblib/loky", r"loky/process_executor\.py$",
       r"^(_ExecutorManagerThread\.)?(run|wait_result_broken_or_wakeup)$", "executor-manager",
       "a result from a worker process, or a new task",
       "joblib/externals/loky/process_executor.py: _ExecutorManagerThread"),
    _R("joblib/loky", r"loky/backend/queues\.py$", r"^(Queue\.)?_feed$", "queue-feeder",
       "items put on the queue", "joblib/externals/loky/backend/queues.py: Queue._feed"),
    _R("tqdm", r"tqdm/_monitor\.py$", r"^(TMonitor\.)?run$", "progress-monitor",
       "its next check, every few seconds", "tqdm/_monitor.py: TMonitor.run waits on an event with a timeout"),
    _R("torch", r"torch/utils/data/_utils/pin_memory\.py$", r"^_pin_memory_loop$", "pin-memory",
       "a batch from the DataLoader's workers to pin",
       "torch/utils/data/_utils/pin_memory.py: _pin_memory_loop gets from the workers' result queue"),
    _R("torch", r"torch/_inductor/compile_worker/subproc_pool\.py$", r"^(SubprocPool\.)?_read_thread$",
       "compile-pool-reader", "results from its compile workers",
       "torch/_inductor/compile_worker/subproc_pool.py: SubprocPool._read_thread"),
    _R("werkzeug", r"werkzeug/serving\.py$", r"^(BaseWSGIServer\.)?serve_forever$", "server-loop",
       "a client connecting", "werkzeug/serving.py: BaseWSGIServer.serve_forever is socketserver's"),
    _R("uvicorn", r"uvicorn/server\.py$", r"^(Server\.)?(serve|_serve|main_loop)$", "event-loop",
       "a request, on the loop it serves from", "uvicorn/server.py: Server.main_loop ticks every 0.1 s"),
    _R("gunicorn", r"gunicorn/arbiter\.py$", r"^(Arbiter\.)?(wait_for_signals|sleep|run)$", "process-manager",
       "a signal, or its next check of the workers, every second (the requests are the workers')",
       "gunicorn/arbiter.py: Arbiter.run loops on wait_for_signals (SIG_QUEUE.get, timeout 1.0; sleep's "
       "select on its pipe in older releases), then murders and spawns workers"),
    _R("apscheduler", r"apscheduler/schedulers/blocking\.py$", r"^(BlockingScheduler\.)?_main_loop$",
       "scheduler-loop", "the next job's run time (its event, set by a new job or a wake-up)",
       "apscheduler/schedulers/blocking.py: BlockingScheduler._main_loop waits on _event with the seconds "
       "until the next run, then _process_jobs hands the jobs to the executor"),
)


# Native threads (no Python frames) that libraries start to wait for work, by the name the kernel
# shows (comm, 15 characters): (regex, framework, role, what it waits for, where it was read).
NATIVE_ROLES = (
    (r"^pt_autograd_\d+$", "torch", "autograd-device",
     "backward work queued for its device (it runs the backward's kernels and hooks when there is some)",
     "torch/csrc/autograd/engine.cpp: Engine::thread_init names each device thread pt_autograd_<device>"),
    (r"^pt_nccl_(watchdg|heartbt)$|^pt_nccl_", "torch.distributed", "c10d-watchdog",
     "its next check of the process group's work (a timeout)",
     "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp: ncclCommWatchdog, heartbeatMonitor"),
    (r"^pt_tcpstore|^tcpstore", "torch.distributed", "tcpstore-server", "a client's request",
     "torch/csrc/distributed/c10d/TCPStoreLibUvBackend.cpp: the store's server loop"),
    (r"^cuda-EvtHandlr$|^cuda\d+$", "CUDA driver", "cuda-driver", "driver events", "the CUDA driver's own threads"),
    (r"^jemalloc_bg_thd$|^pt_main_thread$", "allocator", "allocator", "its next purge", "jemalloc's background thread"),
)


def native_role(comm):
    """The row of a native library thread known by its name, or None."""
    for pattern, framework, role, waits_for, source in NATIVE_ROLES:
        if regex(pattern).search(comm or ""):
            return (framework, role, waits_for, source)
    return None


def _in(frame, file, function):
    """The frame is of that file and function (regexes searched: a function pattern may end a
    qualified name, `...<locals>.monitor_parent`); a standard-library fork's file as the module's."""
    return bool(regex(file).search(canonical_file(frame[1])) and regex(function).search(frame[0] or ""))


@functools.lru_cache(maxsize=8192)
def _role_of_frame(function, filename):
    # (every view asks of every frame, many times a diagnosis: a window repeats a few hundred frames)
    return next((row for row in ROLES if _in((function, filename), row.file, row.function)), None)


# Calls in which a framework waits for work it handed out to other threads or processes: a task's
# result, a map's chunks.  A thread waiting in one waits for whichever of the framework's workers
# runs that work; the framework's own threads (above) only carry it.  (file, function, framework,
# where it was read)
DISPATCH_WAITS = (
    (r"distributed/client\.py$", r"^(Future\.result|Client\.gather|Client\.compute|Client\.persist)$",
     "dask.distributed", "distributed/client.py: Future.result and Client.gather run the loop's coroutine via sync()"),
    (r"dask/(base|threaded|multiprocessing|local)\.py$", r"^(compute|get|get_async|DaskMethodsMixin\.compute)$",
     "dask", "dask/local.py: get_async waits on the queue its workers put results on"),
    (r"datasets/utils/py_utils\.py$", r"^iflatmap_unordered$", "datasets",
     "datasets/utils/py_utils.py: iflatmap_unordered gets each chunk from a Manager queue its pool fills"),
    (r"joblib/parallel\.py$", r"^(Parallel\.)?(_retrieve|_wait_retrieval|__call__|_get_outputs)$", "joblib",
     "joblib/parallel.py: Parallel._retrieve waits on the batches its backend's workers run"),
    (r"concurrent/futures/_base\.py$", r"^(Future\.result|as_completed|wait)$", "concurrent.futures",
     "Lib/concurrent/futures/_base.py: Future.result waits on its condition, set by the worker that runs it"),
    (r"ray/_private/worker\.py$", r"^get$", "ray", "ray/_private/worker.py: ray.get waits for the task's object"),
)


# The loops in which a framework's pool thread or process runs the tasks handed to it: a thread
# with one of these on its stack and the user's code inside runs a task the framework dispatched.
TASK_RUNNERS = (
    THREAD_POOL_WORKER, PROCESS_POOL_WORKER, DATALOADER_WORKER,
    (r"distributed/(threadpoolexecutor|_concurrent_futures_thread)\.py$", r"^(_worker|_WorkItem\.run)$"),
    (r"loky/process_executor\.py$", r"^_process_worker$"),
)


def runs_dispatched_task(stack):
    """The thread runs a task a framework's pool handed it (TASK_RUNNERS), the user's code inside."""
    return runs_user_code(stack) and any(_in(frame, file, function) for frame in stack or []
                                         for file, function in TASK_RUNNERS)


def dispatch_wait(stack):
    """The framework of the dispatch wait a thread is in (a Dask client's Future.result, datasets'
    map), else None."""
    for frame in stack or []:
        for file, function, framework, _source in DISPATCH_WAITS:
            if _in(frame, file, function):
                return framework
    return None


def role_of(stack):
    """The row whose role a thread with this (leaf-first) stack has while idle in it: a role's
    frame, with no frame of the user's own code inside it; else None."""
    own = own_frames(stack)
    for depth, frame in enumerate(own):
        if not is_library_file(frame[1]):
            return None      # the user's code runs inside whatever the thread is (a task)
        row = _role_of_frame(frame[0] or "", frame[1] or "")
        if row is not None:
            return row
    return None


def runs_user_code(stack):
    """A frame of the user's own code (a file outside the standard library and site-packages, or
    code a task framework shipped by value: cloudpickle's "<dynamic-code>") ran in this process,
    inside the thread's frames: a task, not infrastructure.  ("<string>" is left out: a
    multiprocessing manager's proxies are exec'd from a string, and are the library's.)"""
    return any(not is_library_file(frame[1]) and (frame[1] or "") != "<string>" for frame in own_frames(stack))


__all__ = ["TASK_RUNNERS", "runs_dispatched_task", "NATIVE_ROLES", "native_role", "DISPATCH_WAITS", "ROLES", "Role", "dispatch_wait", "role_of", "runs_user_code"]
