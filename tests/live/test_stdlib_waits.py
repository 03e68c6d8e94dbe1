"""Every standard-library row of FRAME_PATTERNS, exercised by a real stalled program.

Each test checks the main thread's wait kind (report["chain"][0]), the culprit
(the thread or process that would end the wait) and the verdict category of
what that culprit does.
"""
import socket

import pytest

from helpers import inspect_json, process_of, thread_named


def evidence(report):
    return "\n".join(report["verdict"]["evidence"])


def culprit(report):
    return report["verdict"]["pid"], report["verdict"]["tid"]


def only_child(report, pid):
    kids = [p for p in report["processes"] if p["ppid"] == pid]
    assert len(kids) == 1, kids
    return kids[0]


# --- waits on another thread ----------------------------------------------------------


@pytest.mark.alone
def test_thread_join_on_a_busy_worker_is_cpu_in_the_worker(launch):
    w = launch("thread_waits.py", "join")
    report = inspect_json(w.pid)
    worker = thread_named(report, w.pid, "worker")
    assert report["chain"][0]["kind"] == "thread-join"
    assert culprit(report) == (w.pid, worker["tid"])
    assert report["verdict"]["category"] == "cpu"
    assert "crunch_numbers" in evidence(report)


def test_event_wait_follows_to_the_worker_stuck_on_a_pipe(launch):
    w = launch("thread_waits.py", "event")
    report = inspect_json(w.pid)
    worker = thread_named(report, w.pid, "worker")
    assert report["chain"][0]["kind"] == "event"
    assert culprit(report) == (w.pid, worker["tid"])
    # A read on a pipe whose only writer is the process itself: stalldiag maps a
    # "pipe" end of chain to "unknown" (CATEGORY_OF_KIND), there is no pipe category.
    assert report["verdict"]["category"] == "unknown"
    assert "fetch_config" in evidence(report)
    assert "pipe:[" in evidence(report)


def test_condition_wait_blames_the_sleeping_producer(launch):
    w = launch("thread_waits.py", "condition")
    report = inspect_json(w.pid)
    worker = thread_named(report, w.pid, "worker")
    assert report["chain"][0]["kind"] == "condition"
    assert culprit(report) == (w.pid, worker["tid"])
    assert report["verdict"]["category"] == "sleep"
    assert "slow_producer" in evidence(report)


@pytest.mark.alone
def test_future_result_on_a_busy_pool_thread_is_cpu(launch):
    w = launch("thread_waits.py", "future")
    report = inspect_json(w.pid)
    pool_thread = next(t for t in process_of(report, w.pid)["threads"]
                       if t["name"].startswith("ThreadPoolExecutor"))
    assert report["chain"][0]["kind"] == "future"
    assert culprit(report) == (w.pid, pool_thread["tid"])
    assert report["verdict"]["category"] == "cpu"
    assert "compute_shard" in evidence(report)


@pytest.mark.alone
def test_semaphore_acquire_with_a_busy_worker_is_cpu(launch):
    w = launch("thread_waits.py", "semaphore")
    report = inspect_json(w.pid)
    worker = thread_named(report, w.pid, "worker")
    assert report["chain"][0]["kind"] == "semaphore"
    assert culprit(report) == (w.pid, worker["tid"])
    assert "crunch_numbers" in evidence(report)
    assert report["verdict"]["category"] == "cpu"


@pytest.mark.alone
def test_put_on_a_full_queue_blames_the_busy_consumer(launch):
    w = launch("thread_waits.py", "queue-put")
    report = inspect_json(w.pid)
    worker = thread_named(report, w.pid, "worker")
    assert report["chain"][0]["kind"] == "queue-put"
    assert culprit(report) == (w.pid, worker["tid"])
    assert report["verdict"]["category"] == "cpu"
    assert "crunch_numbers" in evidence(report)


# --- waits on another process (multiprocessing, fork) ---------------------------------------


@pytest.mark.alone
def test_pool_result_follows_to_the_busy_pool_worker(launch):
    w = launch("mp_waits.py", "pool")
    report = inspect_json(w.pid, "--children")
    worker = only_child(report, w.pid)
    assert report["chain"][0]["kind"] == "ipc"
    assert culprit(report) == (worker["pid"], worker["pid"])
    assert report["verdict"]["category"] == "cpu"
    assert "score_batch" in evidence(report)


def test_connection_recv_follows_to_the_sleeping_child(launch):
    w = launch("mp_waits.py", "connection")
    report = inspect_json(w.pid, "--children")
    child = only_child(report, w.pid)
    assert report["chain"][0]["kind"] == "ipc"
    assert culprit(report) == (child["pid"], child["pid"])
    assert report["verdict"]["category"] == "sleep"
    assert "prepare_reply" in evidence(report)


@pytest.mark.alone
def test_mp_queue_get_follows_to_the_busy_child(launch):
    w = launch("mp_waits.py", "mp-queue")
    report = inspect_json(w.pid, "--children")
    child = only_child(report, w.pid)
    assert report["chain"][0]["kind"] == "ipc"
    assert culprit(report) == (child["pid"], child["pid"])
    assert report["verdict"]["category"] == "cpu"
    assert "make_items" in evidence(report)


def test_process_join_follows_to_the_sleeping_child(launch):
    w = launch("mp_waits.py", "process-join")
    report = inspect_json(w.pid, "--children")
    child = only_child(report, w.pid)
    assert report["chain"][0]["kind"] == "child"
    assert culprit(report) == (child["pid"], child["pid"])
    # A wait for a child is "subprocess" whatever the child does (as for wait_child.py);
    # the summary says what the child is doing.
    assert report["verdict"]["category"] == "subprocess"
    assert "sleeping" in report["verdict"]["summary"]
    assert "wait4" in evidence(report)
    assert "long_task" in evidence(report)


# --- the network ----------------------------------------------------------------------------


def test_accept_with_nobody_connecting_is_network(launch):
    w = launch("net_waits.py", "accept", 0)
    report = inspect_json(w.pid)
    assert report["chain"][0]["kind"] == "network"
    assert culprit(report) == (w.pid, w.pid)
    assert report["verdict"]["category"] == "network"
    assert "accept4" in evidence(report)
    assert "LISTEN" in evidence(report)
    assert "wait_for_client" in evidence(report)


def _silent_server():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    return server, server.getsockname()[1]


def test_http_getresponse_from_a_silent_server_is_network(launch):
    server, port = _silent_server()
    try:
        w = launch("net_waits.py", "http", port)
        conn, _ = server.accept()  # accept, never answer
        report = inspect_json(w.pid)
        assert report["chain"][0]["kind"] == "network"
        assert culprit(report) == (w.pid, w.pid)
        assert report["verdict"]["category"] == "network"
        assert "127.0.0.1:%d ESTABLISHED" % port in evidence(report)
        assert "recvfrom" in evidence(report)
        assert "fetch_weights" in evidence(report)
        conn.close()
    finally:
        server.close()


def test_asyncio_read_from_a_silent_server_is_network(launch):
    server, port = _silent_server()
    try:
        w = launch("net_waits.py", "selector", port)
        conn, _ = server.accept()  # accept, never answer
        report = inspect_json(w.pid)
        assert report["chain"][0]["kind"] == "network"
        assert culprit(report) == (w.pid, w.pid)
        assert report["verdict"]["category"] == "network"
        assert "127.0.0.1:%d ESTABLISHED" % port in evidence(report)
        assert "epoll_wait" in evidence(report)
        conn.close()
    finally:
        server.close()
