"""Targets on every CPython the machine has get the same verdict, culprit and Python stacks.

stalldiag itself runs on the default interpreter; only the workloads run on
3.8 ... 3.13 (pyenv's, by `pyenv prefix`).  Python 3.8-3.10 give py-spy no
kernel thread ids in --nonblocking mode: those runs also prove the pthread
id -> tid matching.
"""
import os

import pytest

from helpers import VERSIONS, WORKLOADS, inspect_json, interpreter, process_of

@pytest.fixture(params=VERSIONS)
def target_python(request):
    path = interpreter(request.param)
    if path is None:
        pytest.skip("CPython %s is absent on this machine (pyenv has no %s.x)" % (request.param, request.param))
    return request.param, path


def launch_with(launch, python, script, *args, settle=0.4):
    return launch(script, settle=settle, argv=[python, "-u", str(WORKLOADS / script)] + [str(a) for a in args])


def check_thread_matching(report, pid, minor):
    proc = process_of(report, pid)
    assert proc["python"] is True, proc["python_note"]
    kernel_tids = {t["tid"] for t in proc["threads"] if t["samples"]}
    python_threads = [t for t in proc["threads"] if t["stack_samples"]]
    assert python_threads and all(t["tid"] in kernel_tids for t in python_threads)
    method = report["capture"]["processes"]
    method = next(p for p in method if p["pid"] == pid)["python"]["thread_ids"]
    if tuple(int(x) for x in minor.split(".")) < (3, 11):
        assert "struct pthread" in method
    else:
        assert "reported by py-spy" in method


def test_lock_order_deadlock_on_every_python(launch, target_python):
    minor, python = target_python
    w = launch_with(launch, python, "deadlock.py")
    report = inspect_json(w.pid, duration=2)
    verdict = report["verdict"]
    writer = next(t for t in process_of(report, w.pid)["threads"] if t["name"] == "writer")
    assert verdict["category"] == "locks"
    assert verdict["tid"] == writer["tid"] and writer["tid"] != w.pid
    assert "Lock-order deadlock" in verdict["summary"]
    assert "holds lock_a and wants lock_b" in verdict["summary"]
    check_thread_matching(report, w.pid, minor)


@pytest.mark.alone
@pytest.mark.skipif(os.geteuid() != 0, reason="slow storage is made with a blkio cgroup throttle, which needs root")
def test_input_workers_on_slow_storage_on_every_python(launch, target_python, tmp_path):
    minor, python = target_python
    w = launch_with(launch, python, "worker_pool_slow_io.py", tmp_path / "data", settle=1.0)
    report = inspect_json(w.pid, "--children", duration=3)
    verdict = report["verdict"]
    workers = [p["pid"] for p in report["processes"] if p["ppid"] == w.pid]
    assert len(workers) == 2
    assert verdict["category"] == "io"
    assert verdict["pid"] in workers
    assert "sample-" in "\n".join(verdict["evidence"])
    assert report["chain"][0]["pid"] == w.pid and report["chain"][-1]["pid"] in workers
    for pid in [w.pid] + workers:
        check_thread_matching(report, pid, minor)


def test_a_method_re_entering_its_lock_on_every_python(launch, target_python):
    """Before 3.11 py-spy names a method without its class: the class comes from the source,
    or another object's lock of the same name (the decoy 'refresher') is taken for this one."""
    minor, python = target_python
    w = launch_with(launch, python, "self_deadlock_nested.py")
    report = inspect_json(w.pid, duration=2)
    verdict = report["verdict"]
    register = next(t for t in process_of(report, w.pid)["threads"] if t["name"] == "register")
    assert verdict["category"] == "locks"
    assert verdict["tid"] == register["tid"]
    assert verdict["summary"].startswith("Self-deadlock")
    check_thread_matching(report, w.pid, minor)


def test_a_pool_that_starves_itself_on_every_python(launch, target_python):
    """A worker of a ThreadPoolExecutor waits for tasks queued to its own pool: its pool is
    read from its frames, which py-spy names differently before 3.11."""
    minor, python = target_python
    w = launch_with(launch, python, "pool_fanout.py")
    report = inspect_json(w.pid, duration=2)
    verdict = report["verdict"]
    assert verdict["category"] == "locks" and verdict["thread_name"].startswith("shard_"), verdict["summary"]
    assert verdict["summary"].startswith("Pool deadlock")
    check_thread_matching(report, w.pid, minor)


def test_a_retry_loop_and_a_reentered_lock_on_every_python(launch, target_python, tmp_path):
    """Issue 20's mechanisms read sources (a loop's except clauses) and library frames (Queue.put
    inside Queue.put), whose names py-spy gives differently before 3.11."""
    minor, python = target_python
    retry = launch_with(launch, python, "retry_connect_refused.py", tmp_path / "client.log", 100, settle=1.0)
    report = inspect_json(retry.pid, duration=2)
    verdict = report["verdict"]
    assert verdict["category"] == "network" and "retries between sleeps" in verdict["summary"], verdict["summary"]
    assert verdict["progress"]["state"] == "no progress seen"
    reentry = launch_with(launch, python, "signal_reenters_queue.py", settle=2.0)
    verdict = inspect_json(reentry.pid, duration=2)["verdict"]
    assert verdict["summary"].startswith("Self-deadlock by re-entry") and verdict["tid"] == reentry.pid, \
        verdict["summary"]


def test_an_event_loop_only_its_threads_can_wake_on_every_python(launch, target_python):
    """The loop's wait is read from asyncio's frames (BaseEventLoop._run_once, Selector.select),
    named differently by py-spy before 3.11, and from the epoll set's fds and timeout."""
    _minor, python = target_python
    w = launch_with(launch, python, "event_loop_waits.py", "lost-wakeup", settle=0.8)
    verdict = inspect_json(w.pid, duration=2)["verdict"]
    assert verdict["category"] == "locks" and "call_soon_threadsafe" in verdict["summary"], verdict["summary"]
    idle = launch_with(launch, python, "event_loop_waits.py", "server")
    verdict = inspect_json(idle.pid, duration=2)["verdict"]
    assert verdict["category"] == "sleep" and "listens on" in verdict["summary"], verdict["summary"]


def test_a_missing_barrier_party_and_an_orphaned_put_on_every_python(launch, target_python):
    """Round 2's mechanisms read threading's Barrier.wait and queue's Queue.put frames, named
    differently by py-spy before 3.11, and a process-shared futex's mapping."""
    _minor, python = target_python
    w = launch_with(launch, python, "barrier_party_missing.py", "processes")
    verdict = inspect_json(w.pid, "--children", duration=2)["verdict"]
    assert verdict["category"] == "collective" and "a party is missing" in verdict["summary"], verdict["summary"]
    q = launch_with(launch, python, "queue_consumer_died.py", settle=0.5)
    verdict = inspect_json(q.pid, duration=2)["verdict"]
    assert verdict["category"] == "locks" and "no live thread is left" in verdict["summary"], \
        verdict["summary"]


@pytest.mark.alone
def test_a_busy_wait_on_a_flag_is_a_spin_not_progress(launch, target_python):
    """`while not flag: pass` at 100% of a core, no syscall, no output: spinning at that line."""
    minor, python = target_python
    w = launch_with(launch, python, "busy_wait_flag.py", settle=0.5)
    report = inspect_json(w.pid, duration=3)
    verdict = report["verdict"]
    assert verdict["category"] == "cpu" and verdict["tid"] == w.pid, verdict["summary"]
    assert verdict["progress"]["state"] != "making progress", verdict["progress"]
    said = verdict["summary"] + " ".join(verdict["progress"]["evidence"])
    assert "busy_wait_flag.py:24" in said, said
    main = next(t for t in process_of(report, w.pid)["threads"] if t["tid"] == w.pid)
    # py-spy is niced so as not to slow its target: on a loaded machine it may take under 3
    # samples, too few to call one line a spin; then progress is "cannot tell", at that line
    assert "spins" in said if main["stack_samples"] >= 3 else verdict["progress"]["state"] == "cannot tell", said


def test_a_lock_taken_by_polling_is_a_lock_wait_on_every_python(launch, target_python, tmp_path):
    """DirLock.acquire() sleeps between mkdir() attempts on a directory a dead run left: locks."""
    minor, python = target_python
    w = launch_with(launch, python, "lock_poll_dir_lock.py", tmp_path, settle=0.5)
    report = inspect_json(w.pid, duration=2)
    verdict = report["verdict"]
    assert verdict["category"] == "locks" and verdict["tid"] == w.pid, verdict["summary"]
    assert "DirLock.acquire" in verdict["summary"] or "acquire" in verdict["summary"], verdict["summary"]
    assert verdict["confidence"] != "high" and verdict["progress"]["state"] == "no progress seen"


def test_a_poll_loop_whose_child_died_waits_on_the_dead_child_on_every_python(launch, target_python):
    minor, python = target_python
    w = launch_with(launch, python, "poll_flag_child_died.py", settle=0.5)
    report = inspect_json(w.pid, "--children", duration=2)
    verdict = report["verdict"]
    assert verdict["category"] == "subprocess" and verdict["pid"] == w.pid, verdict["summary"]
    assert "exit code 1" in verdict["summary"], verdict["summary"]
    assert verdict["progress"]["state"] == "no progress seen"


@pytest.mark.alone
def test_a_spin_on_queue_empty_is_a_spin_at_the_users_line_on_every_python(launch, target_python):
    minor, python = target_python
    w = launch_with(launch, python, "spin_on_queue_empty.py", settle=0.5)
    report = inspect_json(w.pid, "--children", duration=3)
    if report["verdict"]["progress"]["state"] == "making progress":
        # a second window of the same spin decides: the sampler may catch too few stacks in one
        report = inspect_json(w.pid, "--children", duration=3)
    verdict = report["verdict"]
    assert verdict["category"] == "cpu" and verdict["pid"] == w.pid, verdict["summary"]
    assert verdict["progress"]["state"] != "making progress", verdict["progress"]
    said = verdict["summary"] + " ".join(verdict["progress"]["evidence"])
    main = next(t for t in process_of(report, w.pid)["threads"] if t["tid"] == w.pid)
    if main["stack_samples"] >= 3:
        assert "spin" in said and "spin_on_queue_empty.py:21" in said, said


@pytest.mark.parametrize("minor", ["3.11", "3.12", "3.13"])
def test_a_pool_whose_workers_retired_has_no_worker_left(launch, minor):
    python = interpreter(minor)
    if python is None:
        pytest.skip("CPython %s is absent" % minor)
    w = launch_with(launch, python, "pool_retired_workers.py", settle=2.0)
    live = [c for c in os.listdir("/proc") if c.isdigit() and _ppid(int(c)) == w.pid]
    report = inspect_json(w.pid, "--children", duration=2)
    verdict = report["verdict"]
    if verdict["category"] != "subprocess":
        # the pool may still have live workers (the schedule that strands tasks did not happen)
        assert any("pool" in f["summary"] for f in report["findings"]) or live, verdict["summary"]
        pytest.skip("CPython %s: the pool kept a worker this time (%s)" % (minor, verdict["summary"][:120]))
    assert "no live worker" in verdict["summary"], verdict["summary"]
    assert verdict["confidence"] == "high" and verdict["progress"]["state"] == "no progress seen"


def _ppid(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def test_a_loop_retrying_a_write_to_a_full_disk_is_io_with_the_error_on_every_python(launch, target_python, tmp_path):
    minor, python = target_python
    log = tmp_path / "train.log"
    job = launch_with(launch, python, "resource_full_disk_retry.py", log, settle=1.5)
    report = inspect_json(job.pid, "--children", duration=3)
    verdict = report["verdict"]
    assert verdict["category"] == "io", verdict["summary"]
    assert "No space left on device" in verdict["summary"] and "idle by design" not in verdict["summary"]
    assert "no failure was seen" not in verdict["summary"]
    assert verdict["progress"]["state"] == "no progress seen"


def test_a_client_retrying_a_refused_connection_is_network_with_the_refusal_on_every_python(launch, target_python):
    minor, python = target_python
    job = launch_with(launch, python, "resource_refused_retry.py", settle=1.5)
    report = inspect_json(job.pid, "--children", duration=3)
    verdict = report["verdict"]
    assert verdict["category"] == "network", verdict["summary"]
    assert "Connection refused" in verdict["summary"]


@pytest.mark.parametrize("mode", ["pdb", "input"])
def test_a_rank_at_a_prompt_under_its_launcher_waits_for_a_person_on_every_python(launch, target_python, mode):
    minor, python = target_python
    job = launch_with(launch, python, "prompt_under_launcher.py", mode, settle=1.0)
    report = inspect_json(job.pid, "--children", duration=2)
    verdict = report["verdict"]
    assert verdict["category"] == "io", verdict["summary"]
    assert verdict["summary"].startswith("Waiting for a person") and "deadlock" not in verdict["summary"].lower()
    assert verdict["pid"] != job.pid   # the rank at the prompt, not its launcher
    assert "prompt_under_launcher.py:" in verdict["summary"] and "pid %d" % job.pid in verdict["summary"]
    if mode == "input":
        assert "overwrite existing checkpoint dir? [y/N]" in verdict["summary"]


def test_a_client_of_a_local_server_whose_handler_deadlocked_is_the_servers_deadlock_on_every_python(
        launch, target_python):
    minor, python = target_python
    job = launch_with(launch, python, "tcp_server_handler_deadlock.py", settle=0.8)
    report = inspect_json(job.pid, "--children", duration=2)
    verdict = report["verdict"]
    assert verdict["category"] == "locks", verdict["summary"]
    assert verdict["pid"] != job.pid and "deadlock" in verdict["summary"].lower()


@pytest.mark.parametrize("mode", ["event", "poll", pytest.param("spin", marks=pytest.mark.alone)])
def test_a_wait_whose_waker_thread_died_names_the_thread_and_its_exception_on_every_python(
        launch, target_python, mode, tmp_path):
    minor, python = target_python
    job = launch_with(launch, python, "thread_waker_died.py", tmp_path / "train.log", mode, settle=0.8)
    report = inspect_json(job.pid, duration=3)
    verdict = report["verdict"]
    assert verdict["category"] == "locks", verdict["summary"]
    assert "thread 'index-loader' was to do, and that thread died on KeyError: 'validation'" in verdict["summary"]
    assert verdict["progress"]["state"] == "no progress seen"


def test_a_client_of_a_local_udp_service_whose_handler_deadlocked_is_the_services_deadlock_on_every_python(
        launch, target_python):
    minor, python = target_python
    job = launch_with(launch, python, "udp_server_handler_deadlock.py", settle=0.8)
    verdict = inspect_json(job.pid, "--children", duration=2)["verdict"]
    assert verdict["category"] == "locks", verdict["summary"]
    assert verdict["pid"] != job.pid and "deadlock" in verdict["summary"].lower()


def test_a_poll_on_pipes_a_daemon_still_holds_names_the_daemon_on_every_python(launch, target_python):
    minor, python = target_python
    job = launch_with(launch, python, "pipes_held_by_daemon.py", settle=1.5)
    report = inspect_json(job.pid, "--children", duration=2)
    verdict = report["verdict"]
    try:
        assert verdict["category"] == "subprocess", verdict["summary"]
        daemon = next(p for p in report["capture"]["processes"] if p["pid"] == verdict["pid"])
        assert daemon.get("outside_tree") and "os.setsid()" in " ".join(daemon["cmdline"]), verdict["summary"]
        assert "waits for pid %d" % verdict["pid"] in verdict["summary"]
    finally:
        if verdict.get("pid") and verdict["pid"] != job.pid:
            os.kill(verdict["pid"], 9)   # the daemon left its session: the launch fixture cannot reach it


@pytest.mark.parametrize("mode,category", [("server", "network"), ("leftover", "network"), ("loader", "locks")])
def test_a_flag_polled_by_the_only_thread_left_is_a_wait_nothing_can_end_on_every_python(
        launch, target_python, mode, category):
    minor, python = target_python
    job = launch_with(launch, python, "flag_waiter_alone.py", mode, settle=0.5)
    verdict = inspect_json(job.pid, duration=2)["verdict"]
    assert verdict["category"] == category and verdict["pid"] == job.pid, verdict["summary"]
    flag = {"server": "`while not self._serving:`", "leftover": "`while not self._serving:`",
            "loader": "`while not index.loaded:`"}[mode]
    assert flag in verdict["summary"] and "no thread is left to set that flag" in verdict["summary"], verdict["summary"]
    if mode == "leftover":   # the copy an "earlier run" left, listening on the port
        assert "a copy of this program outside the job (ppid 1," in verdict["summary"], verdict["summary"]
        assert "listens on 127.0.0.1:" in verdict["summary"], verdict["summary"]
    assert verdict["confidence"] != "high" and verdict["progress"]["state"] == "no progress seen"
