"""knowledge/roles.py (framework threads that wait by design, dispatch waits, native roles),
knowledge/frames.py's standard-library forks and numeric lines, and progress.only_failures."""
from stalldiag.diagnosis.progress import only_failures
from stalldiag.knowledge.blocking import module_of
from stalldiag.knowledge.frames import NUMERIC_LINE, canonical_file, match_frame
from stalldiag.knowledge.roles import dispatch_wait, native_role, role_of, runs_user_code

LIB = "/usr/lib/python3.11/"
SITE = LIB + "site-packages/"


def test_a_fork_of_multiprocessing_matches_as_multiprocessing():
    path = SITE + "multiprocess/pool.py"
    assert canonical_file(path) == LIB + "multiprocessing/pool.py"
    assert module_of(path)[0] == "multiprocessing.pool"
    assert match_frame("Connection._recv", SITE + "multiprocess/connection.py") is not None
    assert canonical_file(SITE + "torch/nn/modules/module.py") == SITE + "torch/nn/modules/module.py"


def test_an_idle_framework_thread_has_its_role():
    loop = [("EpollSelector.select", LIB + "selectors.py", 468), ("BaseEventLoop._run_once", LIB + "asyncio/base_events.py", 1884),
            ("BaseEventLoop.run_forever", LIB + "asyncio/base_events.py", 607)]
    assert role_of(loop).role == "event-loop"
    accepter = [("socket.accept", LIB + "socket.py", 294), ("Server.accepter", SITE + "multiprocess/managers.py", 190)]
    assert role_of(accepter).role == "manager-server"
    watcher = [("Popen.poll", LIB + "multiprocessing/popen_fork.py", 27),
               ("AsyncProcess._watch_process", SITE + "distributed/process.py", 250)]
    assert role_of(watcher).role == "process-watcher"


def test_a_framework_thread_running_the_users_task_is_no_idle_role():
    task = [("Condition.wait", LIB + "threading.py", 331), ("blocker", "<dynamic-code>", 14),
            ("_worker", SITE + "distributed/threadpoolexecutor.py", 60)]
    assert role_of(task) is None
    assert runs_user_code(task)
    proxy = [("Connection._recv", LIB + "multiprocessing/connection.py", 398), ("get", "<string>", 2)]
    assert not runs_user_code(proxy)     # (a Manager's proxy method, exec'd from a string)


def test_dispatch_waits_of_task_frameworks():
    assert dispatch_wait([("Event.wait", LIB + "threading.py", 629), ("Future.result", SITE + "distributed/client.py", 431)]) \
        == "dask.distributed"
    assert dispatch_wait([("iflatmap_unordered", SITE + "datasets/utils/py_utils.py", 610)]) == "datasets"
    assert dispatch_wait([("Parallel._retrieve", SITE + "joblib/parallel.py", 1800)]) == "joblib"
    assert dispatch_wait([("all_reduce", SITE + "torch/distributed/distributed_c10d.py", 2000)]) is None


def test_native_threads_known_by_name():
    assert native_role("pt_autograd_0")[1] == "autograd-device"
    assert native_role("pt_nccl_watchdg")[1] == "c10d-watchdog"
    assert native_role("python3") is None


def test_a_line_that_hands_work_to_a_numeric_library():
    for line in ("c = a @ b; a = c / np.linalg.norm(c); n += 1", "clf.fit(X, y)", "out = torch.matmul(x, w)"):
        assert NUMERIC_LINE.search(line), line
    for line in ("while not done: pass", "n = (n * 31 + 7) % M", "@functools.cache"):
        assert not NUMERIC_LINE.search(line), line


def test_output_that_only_reports_failures_is_no_progress():
    retry = ("WARNING: Retrying (Retry(total=3, connect=None, read=None, redirect=None, status=None)) after connection "
             "broken by 'ReadTimeoutError(...)': /simple/requests/")
    lines = ["Looking in indexes: http://127.0.0.1:9/simple", retry]
    assert only_failures(lines, len(retry) + 1) == retry
    steps = ["step 10 loss 2.31", "step 20 loss 2.12"]
    assert only_failures(steps, len(steps[-1]) + 1) is None
    assert only_failures(lines, 10_000) is None     # (the kept lines do not cover what was written)


def test_a_loop_waiting_for_its_next_turn_has_its_role_as_the_frameworks_source_has_it():
    import inspect

    import pytest
    scheduler = [("Event.wait", LIB + "threading.py", 629),
                 ("BlockingScheduler._main_loop", SITE + "apscheduler/schedulers/blocking.py", 28),
                 ("BaseScheduler.start", SITE + "apscheduler/schedulers/base.py", 217)]
    assert role_of(scheduler).role == "scheduler-loop"
    arbiter = [("Queue.get", LIB + "queue.py", 180), ("Arbiter.wait_for_signals", SITE + "gunicorn/arbiter.py", 425),
               ("Arbiter.run", SITE + "gunicorn/arbiter.py", 246)]
    assert role_of(arbiter).role == "process-manager"
    # the rows read the installed frameworks' code (requirements-test.txt installs both)
    blocking = pytest.importorskip("apscheduler.schedulers.blocking")
    assert "self._event.wait(wait_seconds)" in inspect.getsource(blocking.BlockingScheduler._main_loop)
    arbiter_module = pytest.importorskip("gunicorn.arbiter")
    assert "timeout" in inspect.signature(arbiter_module.Arbiter.wait_for_signals).parameters
