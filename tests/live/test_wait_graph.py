"""The diagnosis model on real stalls (issue 13): thread states from the kernel's accounting,
edges of the wait-for graph, and a verdict at the end of the walk, with the mechanism named.

Each test puts a real process in the state (a cgroup quota, a stop, the freezer, a tracer,
page faults, a file lock held outside the tree, the GIL, a lock held at fork, a pipe cycle, a
stale lock file) and checks category, culprit and the words that name the mechanism.
"""
import os
import signal
import sys
import time

import pytest

from helpers import TRACER, WORKLOADS, inspect_json, process_of, rmdir_soon

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (cgroups, ptrace, blkio throttle)")

FREEZER_V1 = "/sys/fs/cgroup/freezer"


def text(report):
    return "\n".join([report["verdict"]["summary"]] + report["verdict"]["evidence"]
                     + [f["summary"] for f in report["findings"]])


def child_of(pid):
    with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
        return [int(p) for p in f.read().split()]


@pytest.mark.alone
def test_cpu_quota_is_named_not_on_cpu_100_percent(launch):
    w = launch("cpu_quota_throttled.py", 10000, 100000, settle=0.5)
    try:
        report = inspect_json(w.pid, duration=3)
    finally:
        os.kill(w.pid, signal.SIGKILL)
        rmdir_soon("/sys/fs/cgroup/cpu/stalldiag-cpuquota")
    verdict = report["verdict"]
    assert verdict["category"] == "cpu" and verdict["tid"] == w.pid
    assert "throttled by its cgroup CPU quota (10% of a core)" in verdict["summary"]
    assert "got 0." in verdict["summary"]            # well under a second of CPU in a 3 s window


@pytest.mark.alone
@pytest.mark.parametrize("how", ["sigstop", "tracer", "freezer"])
def test_halted_child_is_the_culprit_and_no_progress(launch, how):
    if how == "freezer" and not os.path.exists(FREEZER_V1 + "/cgroup.procs"):
        pytest.skip("no cgroup v1 freezer on this machine")
    w = launch("mp_waits.py", "mp-queue", settle=0.5)
    child = child_of(w.pid)[0]
    cgroup = os.path.join(FREEZER_V1, "stalldiag-graph-%d" % os.getpid())
    tracer = None
    try:
        if how == "sigstop":
            os.kill(child, signal.SIGSTOP)
        elif how == "tracer":
            tracer = launch(None, argv=[sys.executable, "-u", "-c", TRACER, str(child)], settle=0.2)
        else:
            os.makedirs(cgroup, exist_ok=True)
            with open(cgroup + "/cgroup.procs", "w") as f:
                f.write(str(child))
            with open(cgroup + "/freezer.state", "w") as f:
                f.write("FROZEN")
        time.sleep(0.3)
        report = inspect_json(w.pid, "--children", duration=2)
    finally:
        if tracer is not None:
            tracer.popen.kill()
            tracer.popen.wait()
        if how == "freezer":
            with open(cgroup + "/freezer.state", "w") as f:
                f.write("THAWED")
        os.kill(child, signal.SIGCONT)
        os.kill(child, signal.SIGKILL)
        if how == "freezer":
            rmdir_soon(cgroup)
    verdict = report["verdict"]
    assert verdict["pid"] == child
    assert verdict["category"] == "subprocess"
    word = {"sigstop": "stopped by a signal", "tracer": "stopped by its tracer pid", "freezer": "frozen by its cgroup freezer"}
    assert word[how] in verdict["summary"]
    assert verdict["progress"]["state"] == "no progress seen"


@pytest.mark.skipif(not os.path.isdir("/sys/fs/cgroup/blkio"), reason="slow storage needs a blkio cgroup")
def test_page_faults_on_mapped_data_are_io_naming_the_file(launch, tmp_path):
    w = launch("mmap_slow_storage.py", tmp_path, settle=2.0)
    report = inspect_json(w.pid, duration=3)
    verdict = report["verdict"]
    assert verdict["category"] == "io" and verdict["tid"] == w.pid
    assert "page faults on memory-mapped data" in verdict["summary"]
    assert str(tmp_path / "mapped-dataset.bin") in verdict["summary"]


@pytest.mark.parametrize("how,words", [("flock", "flock()"), ("lockf", "POSIX (fcntl/lockf)"),
                                       ("ofd", "open-file-description (OFD)")])
def test_file_lock_held_outside_the_tree_names_the_holder(launch, tmp_path, how, words):
    path = tmp_path / "checkpoint.lock"
    holder = launch("flock_held_outside.py", "hold", path, how, settle=0.1)
    waiter = launch("flock_held_outside.py", "wait", path, how)
    report = inspect_json(waiter.pid, duration=2)
    verdict = report["verdict"]
    assert verdict["category"] == "locks"
    assert verdict["pid"] == holder.pid
    assert "outside the inspected tree" in verdict["summary"] and words in verdict["summary"]
    assert "pid %d" % holder.pid in verdict["summary"] and "hold" in verdict["summary"]
    assert process_of(report, holder.pid)["threads"]


def test_lock_retried_between_sleeps_names_the_holder_outside(launch, tmp_path):
    """No thread sits in a lock syscall: the waiter tries F_SETLK and sleeps. /proc/locks still
    says who holds the file its process has open."""
    path = tmp_path / "checkpoint.lock"
    holder = launch("flock_held_outside.py", "hold", path, "lockf", settle=0.1)
    waiter = launch("flock_held_outside.py", "wait", path, "lockf-retry")
    report = inspect_json(waiter.pid, duration=2)
    verdict = report["verdict"]
    assert verdict["category"] == "locks" and verdict["pid"] == holder.pid
    assert "retries between sleeps" in verdict["summary"] and "outside the inspected tree" in verdict["summary"]
    assert process_of(report, holder.pid)["threads"]


@pytest.mark.alone
def test_gil_held_in_c_code_is_the_holders_category(launch):
    w = launch("gil_held_by_regex.py", settle=1.0)
    report = inspect_json(w.pid, duration=2)
    verdict = report["verdict"]
    validator = next(t for t in process_of(report, w.pid)["threads"] if t["name"] == "validator")
    assert verdict["tid"] == validator["tid"]
    assert verdict["category"] == "cpu"
    assert "waits for the GIL" in verdict["summary"]
    assert verdict["progress"]["state"] == "no progress seen"


def test_lock_held_at_fork_names_the_parents_holder(launch):
    w = launch("fork_with_lock_held.py", settle=0.5)
    report = inspect_json(w.pid, "--children", duration=2)
    verdict = report["verdict"]
    child = child_of(w.pid)[0]
    prefetch = next(t for t in process_of(report, w.pid)["threads"] if t["name"] == "prefetch")
    assert verdict["category"] == "locks" and verdict["pid"] == child
    assert "forked from pid %d while another thread held it" % w.pid in verdict["summary"]
    assert "thread %d 'prefetch'" % prefetch["tid"] in verdict["summary"]


def test_two_processes_blocked_on_each_others_pipes_is_a_deadlock(launch):
    w = launch("pipe_cycle.py", settle=1.0)
    report = inspect_json(w.pid, "--children", duration=2)
    verdict = report["verdict"]
    # a deadlock of pipes alone between a parent and its child: the category is the first wait's,
    # the parent's on its child (issue 32; pyinfra_ollama_benchmark_stdin_pipe_never_closed)
    assert verdict["category"] == "subprocess", verdict["summary"]
    assert "deadlock across processes" in verdict["summary"].lower()
    assert verdict["summary"].count("blocked writing to a full pipe") == 2
    assert verdict["progress"]["state"] == "no progress seen"


@pytest.mark.parametrize("mode", ["filelock", "baton"])
def test_stale_lock_file_nobody_holds(launch, tmp_path, mode):
    w = launch("stale_lock_file.py", mode, tmp_path / "build", settle=1.0)
    report = inspect_json(w.pid, duration=2)
    verdict = report["verdict"]
    assert verdict["category"] == "locks" and verdict["tid"] == w.pid
    assert "stale lock file" in verdict["summary"] and str(tmp_path / "build") in verdict["summary"]
    assert "no live process holds a lock on it" in verdict["summary"]


def test_marker_file_nothing_will_write(launch, tmp_path):
    w = launch("marker_file_wait.py", tmp_path)
    report = inspect_json(w.pid, duration=2)
    verdict = report["verdict"]
    assert verdict["tid"] == w.pid
    assert "nothing will write" in verdict["summary"] and str(tmp_path / "preprocess.done") in verdict["summary"]
    assert verdict["progress"]["state"] == "no progress seen"


@pytest.mark.parametrize("reader", ["sleep 600", "python3 -c 'import os, signal; os.kill(os.getpid(), signal.SIGSTOP)'"])
def test_stdout_pipe_nobody_drains_names_the_reader_outside_the_tree(launch, tmp_path, reader):
    pidfile = tmp_path / "pid"
    script = WORKLOADS / "stdout_pipe_stalled.py"
    launch(None, python=False, argv=["bash", "-c", "%s -u %s %s | %s" % (sys.executable, script, pidfile, reader)],
           settle=1.5)
    writer = int(pidfile.read_text())
    report = inspect_json(writer, duration=2)
    verdict = report["verdict"]
    reader_pid = verdict["pid"]
    assert reader_pid != writer
    reader_proc = process_of(report, reader_pid)
    assert reader_proc["ppid"] != writer       # a sibling in the pipeline, found through the pipe
    assert verdict["category"] == "io"
    assert "not draining" in verdict["summary"]
    if "SIGSTOP" in reader:
        assert "stopped by a signal" in verdict["summary"]


def test_queue_wait_whose_producer_died_says_nobody_is_left(launch):
    w = launch("producer_died.py")
    report = inspect_json(w.pid, duration=2)
    verdict = report["verdict"]
    assert verdict["category"] == "locks" and verdict["tid"] == w.pid
    assert "no other Python thread is alive" in verdict["summary"]
    assert verdict["progress"]["state"] == "no progress seen"


def test_joins_are_followed_to_the_thread_that_does_not_end(launch):
    w = launch("join_chain.py", "chain")
    report = inspect_json(w.pid, duration=2)
    names = {t["tid"]: t["name"] for t in process_of(report, w.pid)["threads"]}
    assert [names[step["tid"]] for step in report["chain"]] == ["MainThread", "uploader", "compressor"]
    assert report["verdict"]["category"] == "sleep"


def test_three_threads_joining_in_a_ring_is_a_deadlock(launch):
    w = launch("join_chain.py", "ring")
    report = inspect_json(w.pid, duration=2)
    verdict = report["verdict"]
    assert verdict["category"] == "locks"
    assert "join deadlock" in verdict["summary"].lower()
    assert all("'%s'" % name in verdict["summary"] for name in ("a", "b", "c"))
    assert verdict["progress"]["state"] == "no progress seen"


def test_parties_at_a_barrier_are_one_wait_not_a_chain(launch):
    """Two loaders wait at a Barrier(3) whose third party died: each is a party of the same
    wait, so the walk does not go from one to the other; nobody is left to end it."""
    w = launch("barrier_party_died.py")
    report = inspect_json(w.pid, duration=2)
    verdict = report["verdict"]
    assert verdict["category"] == "locks" and verdict["thread_name"] in ("loader-0", "loader-1")
    # the barrier read from memory: its state is the sentence (issue 33)
    orphaned = [f for f in report["findings"] if f["kind"] == "stuck-object"]
    assert orphaned and "it expects 3 parties and 2 arrived" in orphaned[0]["summary"], report["findings"]
    assert "barrier.wait()" in orphaned[0]["summary"] and "at the same line" in orphaned[0]["summary"]
    assert verdict["progress"]["state"] == "no progress seen"


def test_task_waiting_on_its_own_single_worker_pool_is_a_pool_deadlock(launch):
    w = launch("pool_waits_on_itself.py")
    report = inspect_json(w.pid, duration=2)
    verdict = report["verdict"]
    assert verdict["category"] == "locks" and verdict["thread_name"] == "io_0", verdict["summary"]
    assert verdict["summary"].startswith("Pool deadlock") and "pool.submit(inner).result()" in verdict["summary"]


def test_wait_on_a_loopback_connection_leads_to_the_process_at_the_other_end(launch):
    """The client's own stack says only recv(); the TCP connection's other end is held by the
    stopped server of the same tree."""
    w = launch("local_server_stopped.py")
    (server,) = child_of(w.pid)
    report = inspect_json(w.pid, "--children", duration=2)
    verdict = report["verdict"]
    assert verdict["pid"] == server and "stopped by a signal" in verdict["summary"], verdict["summary"]
    assert report["capture"]["tcp_peers"]


def test_a_sleep_inside_a_coroutine_blocks_the_event_loop(launch):
    """The loop thread sleeps inside one step of the loop: not idle by design."""
    w = launch("event_loop_blocked_sleep.py")
    report = inspect_json(w.pid, duration=2)
    verdict = report["verdict"]
    assert verdict["summary"].startswith("Event loop blocked"), verdict["summary"]
    assert "time.sleep(3600)" in verdict["summary"] and "idle by design" not in verdict["summary"]
    assert "event-loop-blocked" in {f["kind"] for f in report["findings"]}


def test_pool_result_whose_task_died_with_its_worker_is_a_lost_task(launch):
    w = launch("pool_worker_killed.py", settle=0.3)
    report = inspect_json(w.pid, "--children", duration=2)
    verdict = report["verdict"]
    assert verdict["category"] == "subprocess" and verdict["tid"] == w.pid, verdict["summary"]
    assert "none has it" in verdict["summary"] and "result.get()" in verdict["summary"]
    assert "lost-task" in {f["kind"] for f in report["findings"]}
    assert verdict["progress"]["state"] == "no progress seen"


def test_lock_held_across_a_queue_wait_is_a_deadlock_through_the_lock(launch):
    """The walk main -> consumer (queue) -> producer (lock) comes back: the producer's lock is
    held by the consumer, earlier on the walk."""
    w = launch("lock_held_across_queue_wait.py")
    report = inspect_json(w.pid, duration=2)
    verdict = report["verdict"]
    assert verdict["category"] == "locks" and verdict["thread_name"] == "producer", verdict["summary"]
    assert verdict["summary"].startswith("Deadlock through a lock") and "`state_lock`" in verdict["summary"]
    assert "'consumer'" in verdict["summary"] and "batches.get()" in verdict["summary"]


def test_flocks_taken_in_opposite_orders_by_two_processes_are_a_deadlock(launch, tmp_path):
    """A file lock is held by a process, not by a thread: not a lock held at fork."""
    w = launch("flock_order_deadlock.py", tmp_path)
    report = inspect_json(w.pid, "--children", duration=2)
    verdict = report["verdict"]
    assert verdict["category"] == "locks", verdict["summary"]
    assert verdict["summary"].startswith("File-lock deadlock across processes"), verdict["summary"]
    assert "index.lock" in verdict["summary"] and "shard.lock" in verdict["summary"]
    assert "lock-held-at-fork" not in {f["kind"] for f in report["findings"]}


def test_queue_join_with_idle_consumers_missed_a_task_done(launch):
    w = launch("queue_join_missed_task_done.py")
    report = inspect_json(w.pid, duration=2)
    verdict = report["verdict"]
    assert verdict["category"] == "locks" and verdict["tid"] == w.pid, verdict["summary"]
    assert "Queue.join()" in verdict["summary"] and "task_done() call was missed" in verdict["summary"]
