"""Record a JSON report of each CPU workload into fixtures/captures/ (run by hand, as root).

    python3 tools/record_captures.py [name ...]

The captures replay through the diagnosis in tests/replay/test_captures.py, on any
machine, and prove that each row of the knowledge tables matches something
real (tests/replay/test_knowledge_tables.py).  GPU captures come from
tools/gpu_proof.sh on the GPU machine.
"""
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from stalldiag.targets import descendants  # noqa: E402
WORKLOADS = os.path.join(ROOT, "fixtures", "workloads")
CAPTURES = os.path.join(ROOT, "fixtures", "captures")
TMP = tempfile.mkdtemp(prefix="stalldiag-captures-")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def py(script, *args):
    return [sys.executable, "-u", script] + [str(a) for a in args]


def torchrun(script, *args, nproc=2):
    return [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=%d" % nproc,
            "--master_port=%d" % free_port(), script] + list(args)


# name -> (argv, settle seconds, inspect duration[, "child": inspect the workload's first child[, extra env]])
CASES = {
    # issue 34: the ranks' Flight Recorders: a rank that skips collective 4, runs another one there,
    # or is stopped, with PyTorch's debug server started (the records read) and without (stacks only)
    **{"fr_%s%s" % (mode, "_debug_server" if server else ""): (
        torchrun("gloo_flight_recorder.py", mode, *(["debug-server"] if server else []), nproc=3), 3.0, 3)
       for mode in ("skip", "op", "stop") for server in (True, False)},
    # issue 34: a rank elsewhere in a 4-rank gloo job, with PyTorch's debug server started and without
    "gloo_eval_rank_debug_server": (torchrun("gloo_eval_rank_debug_server.py", "debug-server", nproc=4), 15.0, 3),
    "gloo_eval_rank": (torchrun("gloo_eval_rank_debug_server.py", nproc=4), 3.0, 3),
    # issue 33: configuration read beside the signal it explains
    "omp_threads_oversubscribed": (py("omp_threads_oversubscribed.py", 4), 4.0, 3, None, {"OMP_NUM_THREADS": "8"}),
    "cpu_loop_dev_mode": ([sys.executable, "-X", "dev", "-X", "tracemalloc=25", "-u", "cpu_loop_dev_mode.py"], 1.0, 3),
    "compile_settings_slow": (py("compile_fresh_cache.py"), 2.0, 3, None,
                              {"TORCHINDUCTOR_FORCE_DISABLE_CACHES": "1", "TORCHINDUCTOR_COMPILE_THREADS": "1"}),
    # issue 33: the object behind a wait, read from memory (its state decides the sentence)
    "objects_barrier_short": (py("barrier_party_missing.py", "threads"), 1.0, 2),
    "objects_semaphore_leaked": (py("semaphore_leak.py"), 1.0, 2),
    "objects_queue_full": (py("queue_consumer_died.py"), 1.0, 2),
    "objects_rlock_owner_exited": (py("rlock_owner_exited.py"), 1.0, 2),
    # issue 32: a job reading a pipe only a supervisor outside it can write (it sits in accept())
    "pipe_fed_by_idle_server": (py("pipe_fed_by_idle_server.py"), 1.0, 2, "child"),
    # issue 32: a leaked lock beside torch's idle OpenMP threads (no "likely deadlock" of them)
    "leaked_lock_beside_openmp_threads": (py("leaked_lock_beside_openmp_threads.py"), 1.0, 2),
    # issue 25: a rank at a prompt nobody answers (its launcher holds its stdin pipe)
    "prompt_pdb": (py("prompt_under_launcher.py", "pdb"), 1.5, 2),
    "prompt_getpass": (py("prompt_under_launcher.py", "getpass"), 1.5, 2),
    "prompt_click": (py("prompt_under_launcher.py", "click"), 1.5, 2),
    "prompt_code": (py("prompt_under_launcher.py", "code"), 1.5, 2),
    "prompt_input": (py("prompt_under_launcher.py", "input"), 1.5, 2),
    "tcp_server_handler_deadlock": (py("tcp_server_handler_deadlock.py"), 1.5, 2),
    "udp_server_handler_deadlock": (py("udp_server_handler_deadlock.py"), 1.5, 2),
    "thread_died_event": (py("thread_waker_died.py", os.path.join(TMP, "event.log"), "event"), 0.8, 2),
    "thread_died_poll": (py("thread_waker_died.py", os.path.join(TMP, "poll.log"), "poll"), 0.8, 2),
    "thread_died_spin": (py("thread_waker_died.py", os.path.join(TMP, "spin.log"), "spin"), 0.8, 3),
    "deadlock": (py("deadlock.py"), 0.3, 2),
    "cpu_loop": (py("cpu_loop.py"), 0.3, 2),
    "sleep_loop": (py("sleep_loop.py"), 0.3, 2),
    "wait_child": (py("wait_child.py"), 0.3, 2),
    "blocked_open": (py("blocked_open.py", os.path.join(TMP, "shard.fifo")), 0.3, 2),
    "producer_stuck_read": (py("producer_stuck_read.py", os.path.join(TMP, "records.fifo")), 0.3, 2),
    "mp_lock_deadlock": (py("mp_lock_deadlock.py"), 0.3, 2),
    "dataloader_cpu_bound": (py("dataloader_cpu_bound.py"), 1.0, 3),
    "dataloader_slow_io": (py("dataloader_slow_io.py", os.path.join(TMP, "data")), 1.5, 4),
    "compile_fresh_cache": (py("compile_fresh_cache.py"), 2.0, 4),
    "gloo_hang": (torchrun("gloo_hang.py"), 1.0, 3),
    "thread_join": (py("thread_waits.py", "join"), 0.3, 2),
    "mp_pool": (py("mp_waits.py", "pool"), 0.5, 2),
    "mp_connection": (py("mp_waits.py", "connection"), 0.3, 2),
    "mp_process_join": (py("mp_waits.py", "process-join"), 0.3, 2),
    "semaphore": (py("thread_waits.py", "semaphore"), 0.3, 2),
    "queue_put": (py("thread_waits.py", "queue-put"), 0.3, 2),
    "shell_launcher": (["bash", "-c", "%s -u sleep_loop.py; exit 0" % sys.executable], 0.5, 2),
    "http_wait": None,  # needs a server; see record_with_server
    # launchers (Debian's openmpi-bin, PyPI's accelerate: installed by hand to record these)
    "mpirun_launcher": (["mpirun", "--allow-run-as-root", "--oversubscribe", "-n", "2", sys.executable, "-u",
                         "sleep_loop.py"], 1.0, 2),
    "accelerate_launcher": (["accelerate", "launch", "--cpu", "--num_processes", "1", "--num_machines", "1",
                             "--mixed_precision", "no", "--dynamo_backend", "no", "sleep_loop.py"], 1.0, 2),
    "asyncio_selector": None,  # needs a server; see record_with_server
    # issue 13: who holds what (lock files, marker files, the GIL)
    "stale_lock_filelock": (py("stale_lock_file.py", "filelock", os.path.join(TMP, "cache")), 1.0, 2),
    "stale_lock_baton": (py("stale_lock_file.py", "baton", os.path.join(TMP, "ext")), 1.0, 2),
    "marker_file_wait": (py("marker_file_wait.py", TMP), 0.5, 2),
    "gil_held_by_regex": (py("gil_held_by_regex.py"), 1.0, 2),
    "flock_held_outside": None,  # needs a leftover holder; see record_with_holder
    # issue 20: the category is the root cause's; forked frames hold nothing (as root: I/O throttle)
    "lock_holder_slow_disk": (py("lock_holder_slow_disk.py", "/var/tmp/stalldiag-captures-slow"), 1.0, 3),
    "child_shell_slow_reader": (py("child_shell_slow_reader.py", "/var/tmp/stalldiag-captures-slow"), 1.5, 3),
    "fork_under_mp_lock": (py("fork_under_mp_lock.py"), 0.3, 2),
    # an event loop: only its own threads can wake it / idle on its listener
    "event_loop_lost_wakeup": (py("event_loop_waits.py", "lost-wakeup"), 0.8, 2),
    "event_loop_idle_server": (py("event_loop_waits.py", "server"), 0.5, 2),
    # processes at a multiprocessing.Barrier a party never reaches: a collective
    "barrier_party_missing": (py("barrier_party_missing.py", "processes"), 0.5, 2),
    # torch.jit.script compiling deeply nested modules (the torch.jit row of the frame table)
    "jit_script_deep": (py("jit_script_deep.py"), 1.0, 2),
}


def wait_ready(popen, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if select.select([popen.stdout], [], [], 0.5)[0]:
            line = popen.stdout.readline()
            if line.startswith("READY"):
                return True
            if not line and popen.poll() is not None:
                return False
    return False


def record(name, argv, settle, duration, target=None, env=None):
    popen = subprocess.Popen(argv, cwd=WORKLOADS, stdout=subprocess.PIPE, text=True,
                             start_new_session=True, env=env)
    try:
        if not wait_ready(popen):
            print("%s: workload never became ready" % name)
            return
        time.sleep(settle)
        out = os.path.join(CAPTURES, name + ".json")
        pid = descendants(popen.pid)[0] if target == "child" else popen.pid
        proc = subprocess.run([sys.executable, "-m", "stalldiag", "inspect", str(pid), "--children",
                               "--duration", str(duration), "-o", out], capture_output=True, text=True, cwd=ROOT)
        os.chmod(out, 0o644)
        print("%s: %s" % (name, proc.stdout.splitlines()[0] if proc.stdout else proc.stderr.strip()))
    finally:
        # launchers (mpirun, torchrun) put their children in other process groups
        tree = [popen.pid] + descendants(popen.pid)
        os.killpg(popen.pid, signal.SIGKILL)
        for pid in tree:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        popen.wait()


def record_with_server(name, mode):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    try:
        record(name, py("net_waits.py", mode, server.getsockname()[1]), 0.5, 2)
    finally:
        server.close()


def record_with_holder(name):
    path = os.path.join(TMP, "ckpt.lock")
    holder = subprocess.Popen(py("flock_held_outside.py", "hold", path, "flock"), cwd=WORKLOADS,
                              stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        wait_ready(holder)
        record(name, py("flock_held_outside.py", "wait", path, "flock"), 0.5, 2)
    finally:
        holder.kill()
        holder.wait()


def main():
    wanted = sys.argv[1:] or list(CASES)
    for name in wanted:
        if name == "flock_held_outside":
            record_with_holder(name)
        elif name == "asyncio_selector":
            record_with_server(name, "selector")
        elif name == "http_wait":
            record_with_server(name, "http")
        elif name == "rendezvous_missing_rank":
            port = free_port()
            env = dict(os.environ, RANK="0", WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
            record(name, py("rendezvous_missing_rank.py", port), 1.0, 2, env=env)
        else:
            argv, settle, duration, *more = CASES[name]
            target = more[0] if more else None
            env = dict(os.environ, **more[1]) if len(more) > 1 else None
            record(name, argv, settle, duration, target=target, env=env)


if __name__ == "__main__":
    main()
