"""Mechanisms the reproduced hangs of issue 20 showed missing, each on a workload of its own.

(The reproductions themselves run in tests/live/test_repro_hangs.py.)
"""
import pytest

from helpers import WORKLOADS, children_of, inspect_json, interpreter, wait_for, wchans

pytestmark = pytest.mark.alone

try:
    import torch  # noqa: F401
    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False


def launch_under(launch, version, script):
    """The workload run by that CPython (skipped where pyenv has none)."""
    python = interpreter(version)
    if python is None:
        pytest.skip("no CPython %s here" % version)
    return launch(script, settle=1.0, argv=[python, "-u", str(WORKLOADS / script)])


def kinds(report):
    return {f["kind"] for f in report["findings"]}


def test_cpu_in_one_call_whose_stack_never_moves_is_not_progress(launch):
    w = launch("runaway_regex.py", settle=1.0)
    report = inspect_json(w.pid, duration=5)     # enough stack samples under load (3 at the least)
    verdict = report["verdict"]
    assert verdict["category"] == "cpu" and verdict["thread_name"] == "header-parser", verdict["summary"]
    assert verdict["progress"]["state"] == "no progress seen", verdict["progress"]
    assert any("spins" in e and "at one line" in e for e in verdict["progress"]["evidence"]), verdict["progress"]


def test_a_thread_waiting_to_print_behind_a_writer_on_a_full_pipe_is_the_pipe(launch):
    w = launch("stderr_full_two_threads.py", settle=1.5)
    (worker,) = children_of(w.pid)
    wait_for(lambda: any("pipe_write" in w for w in wchans(worker)), what="a worker thread in pipe write")
    report = inspect_json(w.pid, "--children", duration=3)
    verdict = report["verdict"]
    # the parent waits on its child, which waits on the pipe the parent does not read: the first
    # wait's category (issue 32), the undrained pipe said
    assert verdict["category"] == "subprocess", verdict["summary"]
    assert verdict["summary"].startswith("Waiting on a child program") and "stderr" in verdict["summary"]
    assert verdict["pid"] == w.pid, verdict["summary"]          # the parent that does not read
    assert "lock-held-at-fork" not in kinds(report)


@pytest.mark.parametrize("version", ["3.8", "3.13"])
def test_a_queue_feeder_joined_at_exit_with_nobody_reading_is_the_undrained_pipe(launch, version):
    w = launch_under(launch, version, "queue_feeder_unread_at_exit.py")
    report = inspect_json(w.pid, duration=3)
    verdict = report["verdict"]
    assert verdict["category"] == "io" and verdict["confidence"] == "high", verdict["summary"]
    assert "only its own process holds" in verdict["summary"], verdict["summary"]
    assert "undrained-pipe" in kinds(report)


def test_waiting_for_a_child_before_reading_its_output_is_the_undrained_pipe(launch):
    w = launch("wait_before_reading_output.py", settle=1.0)
    report = inspect_json(w.pid, "--children", duration=2)
    verdict = report["verdict"]
    assert verdict["category"] == "subprocess", verdict["summary"]   # the first wait: on the child
    assert verdict["summary"].startswith("Waiting on a child program") and "its stdout, a pipe" in verdict["summary"]
    assert verdict["pid"] == w.pid, verdict["summary"]
    assert "deadlock" in kinds(report)                            # the cycle is still said
    assert verdict["progress"]["state"] == "no progress seen"


@pytest.mark.skipif(not HAVE_TORCH, reason="needs torch (CPU build)")
def test_spawned_ranks_without_rank_variables_are_ranks(launch, tmp_path):
    w = launch("spawn_ranks_no_env.py", tmp_path / "init", settle=2.0)
    report = inspect_json(w.pid, "--children", duration=3)
    verdict = report["verdict"]
    roles = {p["pid"]: p["role"] for p in report["processes"]}
    assert roles[w.pid] == "launcher", roles
    assert sorted(r for r in roles.values() if r.startswith("rank ")) == ["rank 0", "rank 1"], roles
    assert verdict["category"] == "collective", verdict["summary"]
    assert roles[verdict["pid"]] == "rank 1" and "prepare_shard" in verdict["summary"], verdict["summary"]
    assert "unnumbered-ranks" in kinds(report)


def test_a_signal_handler_reentering_queue_put_is_a_self_deadlock(launch):
    w = launch("signal_reenters_queue.py", settle=2.0)
    report = inspect_json(w.pid, duration=2)
    verdict = report["verdict"]
    assert verdict["category"] == "locks" and verdict["tid"] == w.pid, verdict["summary"]
    assert verdict["summary"].startswith("Self-deadlock by re-entry") and "Queue.put" in verdict["summary"]
    assert verdict["walk_end"] == "lock-holder"


def test_processes_at_a_shared_barrier_a_party_never_reaches_are_a_collective(launch):
    """multiprocessing.Barrier(4), three processes wait, the fourth died before arriving
    (mp_barrier_killed_rank's mechanism): the parties are ranks of a collective, not a lock
    deadlock, and the run makes no progress."""
    w = launch("barrier_party_missing.py", "processes")
    report = inspect_json(w.pid, "--children", duration=2)
    verdict = report["verdict"]
    assert verdict["category"] == "collective", verdict["summary"]
    assert "wait at one barrier" in verdict["summary"] and "a party is missing" in verdict["summary"]
    assert verdict["progress"]["state"] == "no progress seen"
    assert not any(f["kind"] == "deadlock" for f in report["findings"]), report["findings"]


def test_threads_at_a_barrier_of_one_process_stay_a_lock_wait(launch):
    """The guard: threads of one process at a threading.Barrier are not ranks of a job."""
    w = launch("barrier_party_missing.py", "threads")
    verdict = inspect_json(w.pid, duration=2)["verdict"]
    assert verdict["category"] == "locks", verdict["summary"]


def test_a_queue_whose_consumer_died_is_orphaned_whatever_a_watchdog_sleeps(launch):
    """The only other thread sleeps one long sleep (a watchdog): it will not drain the queue, so
    the producer's put() is an orphaned wait, not a wait on a sleeping thread
    (tb_asyncwriter_dead_thread, tensorboard#6167)."""
    w = launch("queue_consumer_died.py", settle=0.5)
    report = inspect_json(w.pid, duration=2)
    verdict = report["verdict"]
    assert verdict["category"] == "locks" and verdict["tid"] == w.pid, verdict["summary"]
    assert "no live thread is left" in verdict["summary"] and "'job-watchdog'" in verdict["summary"]
    assert verdict["progress"]["state"] == "no progress seen"


@pytest.mark.skipif(not HAVE_TORCH, reason="needs torch (CPU build)")
def test_ranks_waiting_in_different_collectives_are_a_mismatch(launch, tmp_path):
    """DDP with uneven inputs: rank 0's backward() waits for the gradient all-reduce while rank 1
    waits in barrier().  The script that starts the ranks is their launcher; the verdict is the
    collective, never its store's native threads (ddp_uneven_inputs, pytorch#33148)."""
    w = launch("ddp_uneven_batches.py", tmp_path / "init", settle=2.0)
    report = inspect_json(w.pid, "--children", duration=3)
    verdict = report["verdict"]
    roles = {p["pid"]: p["role"] for p in report["processes"]}
    assert roles[w.pid] == "launcher", roles
    assert verdict["category"] == "collective", verdict["summary"]
    assert "not the same one" in verdict["summary"] and "backward()" in verdict["summary"], verdict["summary"]
    assert "collective-mismatch" in kinds(report)
    assert verdict["progress"]["state"] == "no progress seen"


def test_a_worker_waiting_on_the_compilers_it_runs_is_compiling(launch, tmp_path):
    """The trainer waits on its compile worker, which waits on gcc, one short-lived gcc after
    another: compilation, not a child program (inductor_recompile_storm, pytorch#97783)."""
    w = launch("compile_worker_gcc.py", tmp_path, settle=1.5)
    verdict = inspect_json(w.pid, "--children", duration=3)["verdict"]
    assert verdict["category"] == "compilation", verdict["summary"]
    assert verdict["pid"] != w.pid, verdict["summary"]


def test_a_child_reading_a_terminal_nobody_types_into_is_a_hidden_prompt(launch, tmp_path):
    """The setup step's question goes to a log; its stdin is a terminal: the run is blocked on
    terminal input, and the summary quotes the prompt (hub_trust_prompt, a torch.hub
    trust_repo prompt)."""
    w = launch("hidden_prompt.py", tmp_path, settle=1.0)
    verdict = inspect_json(w.pid, "--children", duration=2)["verdict"]
    assert verdict["category"] == "io", verdict["summary"]
    assert verdict["summary"].startswith("Blocked on terminal input, through a child program"), verdict["summary"]
    assert "trusted list (y/N)?" in verdict["summary"]


def test_an_event_whose_only_setter_died_is_the_dead_child(launch):
    """A multiprocessing.Event the save process would set; the save process exited with 1 and
    nothing else maps the event: the dead child, with how it ended (decoupled_ckpt_dead,
    DeepSpeed#7741)."""
    w = launch("event_setter_died.py", settle=1.0)
    report = inspect_json(w.pid, "--children", duration=2)
    verdict = report["verdict"]
    assert verdict["category"] == "subprocess" and verdict["tid"] == w.pid, verdict["summary"]
    assert "exited (exit code 1)" in verdict["summary"], verdict["summary"]
    assert verdict["progress"]["state"] == "no progress seen"


def test_a_pipe_held_by_a_program_the_jobs_child_left_running_under_a_subreaper_is_the_child(launch):
    # the orphan `sleep` is reparented to the launcher (a child subreaper), not to init: it kept
    # the job's session, so it is the program the job's child left running, not someone else
    w = launch("background_child_left_running_under_subreaper.py", settle=1.0)
    job = next(pid for pid in children_of(w.pid) if "job" in open("/proc/%d/cmdline" % pid).read())
    report = inspect_json(job, "--children", duration=3)
    verdict = report["verdict"]
    assert verdict["mechanism"] == "unfed-pipe" and verdict["category"] == "subprocess", verdict["summary"]
    process = next(p for p in report["capture"]["processes"] if p["pid"] == job)
    assert process["sid"] == w.pid and process["pgid"] == w.pid


@pytest.mark.parametrize("version", ["3.8", "3.13"])
def test_a_pool_whose_result_handler_died_is_a_result_nobody_delivers_not_a_lost_task(launch, version):
    # every worker idles as after a lost task, but the parent lacks the thread that hands results
    # over: it died unpickling the task's exception (the traceback is in the job's output)
    w = launch_under(launch, version, "pool_result_handler_died.py")
    report = inspect_json(w.pid, "--children", duration=3)
    verdict = report["verdict"]
    assert verdict["mechanism"] == "pool-results-undelivered" and verdict["category"] == "locks", verdict["summary"]
    assert "no attribute 'path'" in verdict["summary"], verdict["summary"]
    assert "lost-task" not in kinds(report)


@pytest.mark.parametrize("version", ["3.9", "3.12"])
def test_a_pool_whose_workers_die_in_its_initializer_is_the_child_program(launch, version):
    w = launch_under(launch, version, "pool_initializer_fails.py")
    report = inspect_json(w.pid, "--children", duration=4)
    verdict = report["verdict"]
    assert verdict["mechanism"] == "pool-workers-dying" and verdict["category"] == "subprocess", verdict["summary"]
    assert "FileNotFoundError" in verdict["summary"] and verdict["progress"]["state"] == "no progress seen"


def test_a_pool_that_replaces_each_worker_after_a_task_is_not_dying(launch):
    # maxtasksperchild=1: workers exit one after another, cleanly, while tasks complete
    w = launch("pool_initializer_fails.py", "recycle", settle=1.0)
    report = inspect_json(w.pid, "--children", duration=4)
    assert "pool-workers-dying" not in kinds(report), report["verdict"]["summary"]
    assert report["verdict"]["progress"]["state"] != "no progress seen", report["verdict"]["progress"]


@pytest.mark.parametrize("version", ["3.9", "3.13"])
def test_a_parent_joining_a_child_whose_own_queue_feeder_cannot_flush_waits_on_the_child(launch, version):
    # (3.8's worker does not join its feeder at exit: it exits)
    w = launch_under(launch, version, "child_queue_feeder_unread_at_exit.py")
    report = inspect_json(w.pid, "--children", duration=3)
    verdict = report["verdict"]
    # the first wait is the parent's on its child: subprocess, the pipe (io) named as the alternative
    assert verdict["mechanism"] == "undrained-pipe" and verdict["category"] == "subprocess", verdict["summary"]
    assert verdict["confidence"] == "medium" and any(a.startswith("io:") for a in verdict["alternatives"])


def test_a_background_job_stopped_by_its_terminal_is_terminal_io(launch, tmp_path):
    # its child program changes the terminal's settings from a background process group: SIGTTOU
    # stops the group (the job's group dies with the terminal when the launcher is killed)
    pid_file = tmp_path / "job.pid"
    launch("background_job_stopped_by_terminal.py", pid_file, settle=0.5)
    job = int(pid_file.read_text())
    report = inspect_json(job, "--children", duration=2)
    verdict = report["verdict"]
    assert verdict["mechanism"] == "terminal-stop" and verdict["category"] == "io", verdict["summary"]
    assert "ioctl on /dev/pts/" in verdict["summary"] and "SIGTTOU" in verdict["summary"], verdict["summary"]
    assert verdict["confidence"] == "high" and verdict["progress"]["state"] == "no progress seen"


def test_a_scan_reading_a_slow_source_over_a_pipe_is_slow_input_that_advances(launch):
    # the child sleeps between answers: the reader's input is slow, not the child's sleep
    w = launch("slow_source_over_pipe.py", settle=0.5)
    report = inspect_json(w.pid, "--children", duration=3)
    verdict = report["verdict"]
    assert verdict["category"] == "io" and verdict["pid"] == w.pid, verdict["summary"]
    assert verdict["progress"]["state"] == "making progress", verdict["progress"]
    assert verdict["confidence"] == "medium", verdict.get("confidence_rests_on")


def test_a_scan_reading_a_source_that_computes_each_answer_waits_on_its_work(launch):
    w = launch("slow_source_over_pipe.py", "compute", settle=0.5)
    report = inspect_json(w.pid, "--children", duration=3)
    verdict = report["verdict"]
    assert verdict["category"] == "cpu" and verdict["pid"] != w.pid, verdict["summary"]


@pytest.mark.parametrize("version", ["3.8", "3.12"])
def test_a_thread_pool_result_waits_on_the_worker_thread_running_its_task(launch, version):
    # multiprocessing.pool.ThreadPool: the result comes from a worker thread of the same process,
    # the one blocked reading a silent server, not from another process
    w = launch_under(launch, version, "threadpool_imap_worker_stalled_on_socket.py")
    report = inspect_json(w.pid, "--children", duration=3)
    verdict = report["verdict"]
    assert verdict["category"] == "network" and verdict["pid"] == w.pid, verdict["summary"]
    assert "at fetch" in verdict["summary"] and verdict["tid"] != w.pid, verdict["summary"]
