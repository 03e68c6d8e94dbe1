"""stalldiag.pyobjects against real processes of every CPython 3.8-3.13.

One target per version (TARGET_PROGRAM below, written to a file and run by that version's
interpreter) makes each object in a known state, prints their id()s and blocks; these tests
read each object from its memory (never importing or running anything in it) and check every
field.  The reader runs on this interpreter only.
"""
import json
import os
import queue
import shutil
import signal
import subprocess
import tempfile
import threading
import time

import pytest

from stalldiag.pyobjects import NotRead, ProcessMemory, decode, describe, read_object, version_from_maps
from stalldiag.pyobjects.facts import (AddressFact, AsyncEventFact, AsyncFutureFact, AsyncLockFact, AsyncQueueFact,
                                        AsyncSemaphoreFact, AsyncTaskFact, BarrierFact, ConditionFact, EventFact,
                                        Fact, FutureFact, LockFact, MPConditionFact, MPEventFact, MPQueueFact, PoolFact,
                                        PopenFact, ProcessFact, ProcessPoolExecutorFact, ProxyFact, QueueFact,
                                        RLockFact, SemaphoreFact, SemLockFact, SimpleQueueFact, SocketFact, TextFact,
                                        ThreadFact, ThreadPoolExecutorFact, decode_with)
from stalldiag.pyobjects.layouts import layout_for
from stalldiag.pyobjects.reader import ObjectReader, TypeCache

VERSIONS = ("3.8", "3.9", "3.10", "3.11", "3.12", "3.13")
SEM_VALUE_MAX = 2147483647


def interpreter(minor):
    """The newest installed pyenv CPython of that minor version, or None."""
    if shutil.which("pyenv") is None:
        return None
    out = subprocess.run(["pyenv", "versions", "--bare"], capture_output=True, text=True).stdout.split()
    found = sorted((v for v in out if v.startswith(minor + ".") and v.replace(".", "").isdigit()),
                   key=lambda v: tuple(int(x) for x in v.split(".")))
    if not found:
        return None
    prefix = subprocess.run(["pyenv", "prefix", found[-1]], capture_output=True, text=True).stdout.strip()
    path = os.path.join(prefix, "bin", "python")
    return path if os.access(path, os.X_OK) else None


class Target:
    def __init__(self, pid, data):
        self.pid = pid
        self.ids = data["ids"]
        self.expect = data["expect"]
        self.version = tuple(data["version"])

    def fact(self, name, cls=Fact, complete=True):
        """decode() of a named object: a Fact of class cls, every field read when complete."""
        fact = decode(self.pid, self.ids[name], self.version)
        assert isinstance(fact, cls), "%s: %r" % (name, fact)
        if complete:
            assert fact.unread() == {}, "%s: %s" % (name, fact.unread())
        return fact


@pytest.fixture(scope="module")
def target_program(tmp_path_factory):
    path = tmp_path_factory.mktemp("pyobjects") / "pyobjects_target.py"
    path.write_text(TARGET_PROGRAM)
    return path


@pytest.fixture(scope="module", params=VERSIONS)
def target(request, target_program):
    path = interpreter(request.param)
    if path is None:
        pytest.skip("CPython %s is absent on this machine" % request.param)
    stderr = tempfile.TemporaryFile()
    popen = subprocess.Popen([path, "-u", str(target_program)], stdout=subprocess.PIPE, stderr=stderr, text=True,
                             start_new_session=True)
    lines = queue.Queue()

    def first_json_line():
        for line in popen.stdout:
            if line.startswith("{"):
                lines.put(line)
                return
        lines.put("")
    threading.Thread(target=first_json_line, daemon=True).start()
    try:
        try:
            line = lines.get(timeout=120)
        except queue.Empty:
            line = ""
        if not line:
            stderr.seek(0)
            raise AssertionError("target under %s gave no ids: %s" % (request.param, stderr.read().decode()[-3000:]))
        yield Target(popen.pid, json.loads(line))
    finally:
        try:
            os.killpg(popen.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        popen.wait()
        stderr.close()


def test_version_from_maps(target):
    assert version_from_maps(target.pid) == target.version


def test_locks(target):
    e = target.expect
    assert target.fact("lock_held", LockFact).locked is True
    assert target.fact("lock_free", LockFact).locked is False
    held = target.fact("rlock_held", RLockFact)
    assert (held.locked, held.owner, held.count, held.implementation) == (True, e["holder_ident"], 2, "C")
    free = target.fact("rlock_free", RLockFact)
    assert (free.locked, free.owner, free.count) == (False, None, 0)
    py = target.fact("pyrlock", RLockFact)
    assert (py.locked, py.owner, py.count, py.implementation) == (True, e["holder_ident"], 1, "Python")
    assert describe(held) == "RLock: held by thread %d (2 deep)" % e["holder_ident"]
    assert describe(target.fact("lock_held")) == "Lock: held"


def test_condition(target):
    cond = target.fact("condition", ConditionFact)
    assert cond.waiters == 2
    assert isinstance(cond.lock, RLockFact) and cond.lock.locked is False
    assert describe(cond) == "Condition: 2 threads waiting, its RLock free"


def test_semaphores(target):
    sem = target.fact("semaphore", SemaphoreFact, complete=False)
    assert (sem.value, sem.waiters) == (0, 1)
    assert isinstance(sem.initial_value, NotRead) and list(sem.unread()) == ["initial_value"]
    bsem = target.fact("bsem", SemaphoreFact)
    assert (bsem.value, bsem.initial_value, bsem.waiters) == (2, 3, 0)
    assert describe(bsem) == "BoundedSemaphore: value 2 of 3, 0 threads waiting"


def test_events(target):
    ev = target.fact("event_set", EventFact)
    assert (ev.is_set, ev.waiters) == (True, 0)
    sub = target.fact("event_unset", EventFact)          # a subclass of threading.Event
    assert (sub.is_set, sub.waiters, sub.type_name) == (False, 1, "__main__.MyEvent")
    assert describe(sub) == "Event: not set, 1 thread waiting"


def test_barrier(target):
    b = target.fact("barrier", BarrierFact)
    assert (b.parties, b.count, b.state) == (3, 1, "filling")
    assert describe(b) == "Barrier: 1 of 3 parties arrived"


def test_a_class_of_the_same_name_is_not_decoded(target):
    got = decode(target.pid, target.ids["fake_barrier"], target.version)
    assert got == NotRead("no decoder for __main__.Barrier")


def test_threads(target):
    e = target.expect
    alive = target.fact("thread_alive", ThreadFact)
    assert (alive.name, alive.ident, alive.native_id, alive.daemon, alive.started, alive.alive) == \
        ("worker-alive", e["alive_ident"], e["alive_native_id"], True, True, True)
    new = target.fact("thread_new", ThreadFact)
    assert (new.name, new.ident, new.started, new.alive, new.daemon) == ("worker-new", None, False, False, False)
    done = target.fact("thread_done", ThreadFact)
    assert (done.ident, done.started, done.alive) == (e["done_ident"], True, False)
    exited = target.fact("thread_exited", ThreadFact)      # returned, never joined nor asked
    assert (exited.started, exited.alive) == (True, False), exited.alive_basis
    main = target.fact("main_thread", ThreadFact)
    assert (main.name, main.ident, main.alive) == ("MainThread", e["main_ident"], True)
    assert describe(alive) == "Thread 'worker-alive' (ident %d): alive, daemon" % e["alive_ident"]


def test_queues(target):
    full = target.fact("queue_full", QueueFact)
    assert (full.maxsize, full.size, full.unfinished_tasks, full.getters_waiting, full.putters_waiting) == (4, 4, 4, 0, 1)
    drained = target.fact("queue_drained", QueueFact)
    assert (drained.maxsize, drained.size, drained.unfinished_tasks, drained.getters_waiting) == (4, 0, 3, 1)
    assert describe(drained) == "Queue: 0 of maxsize 4 items, 3 unfinished tasks, 1 thread waiting to get"
    assert describe(full) == "Queue: 4 of maxsize 4 items (full), 4 unfinished tasks, 1 thread waiting to put"
    lifo = target.fact("lifo", QueueFact)
    assert (lifo.type_name, lifo.maxsize, lifo.size, lifo.unfinished_tasks) == ("queue.LifoQueue", 0, 2, 2)
    prio = target.fact("prio", QueueFact)
    assert (prio.type_name, prio.maxsize, prio.size) == ("queue.PriorityQueue", 10, 3)
    assert target.fact("simplequeue", SimpleQueueFact).size == 2


def test_multiprocessing_queues(target):
    q = target.fact("mpq", MPQueueFact, complete=False)
    assert (q.maxsize, q.in_flight, q.buffered, q.closed, q.feeder_thread) == (3, 2, 0, False, True)
    assert list(q.unread()) == ["unfinished_tasks"]
    jq = target.fact("mpjq", MPQueueFact)
    assert (jq.maxsize, jq.in_flight, jq.unfinished_tasks, jq.type_name) == \
        (SEM_VALUE_MAX, 1, 1, "multiprocessing.queues.JoinableQueue")


def test_multiprocessing_synchronize(target):
    lock = target.fact("mp_lock", SemLockFact)
    assert (lock.sem_kind, lock.value, lock.maxvalue, lock.count, lock.sem_waiters) == ("semaphore", 0, 1, 1, 0)
    assert describe(lock) == "Lock (multiprocessing): held (by this process, 1 deep), 0 waiters blocked"
    rlock = target.fact("mp_rlock", SemLockFact)
    assert (rlock.sem_kind, rlock.value, rlock.count) == ("recursive mutex", 0, 2)
    sem = target.fact("mp_sem", SemLockFact)
    assert (sem.value, sem.maxvalue, sem.count) == (2, SEM_VALUE_MAX, 1)
    bsem = target.fact("mp_bsem", SemLockFact)
    assert (bsem.value, bsem.maxvalue, bsem.count) == (2, 2, 0)
    ev = target.fact("mp_event", MPEventFact)
    assert (ev.is_set, ev.waiters) == (True, 0)
    cond = target.fact("mp_cond", MPConditionFact)
    assert cond.waiters == 1 and isinstance(cond.lock, SemLockFact) and cond.lock.value == 1
    barrier = target.fact("mp_barrier", BarrierFact)
    assert (barrier.parties, barrier.count, barrier.state) == (2, 1, "filling")


def test_pool(target):
    pool = target.fact("pool", PoolFact)
    assert (pool.processes, pool.state, pool.workers, pool.task_queue, pool.outstanding) == (2, "RUN", 2, 0, 5)


def test_processes(target):
    proc = target.fact("proc", ProcessFact)
    assert (proc.name, proc.started, proc.pid, proc.returncode) == ("child-proc", True, target.expect["proc_pid"], None)
    done = target.fact("proc_done", ProcessFact)
    assert (done.name, done.started, done.returncode) == ("child-done", True, 3)
    new = target.fact("proc_new", ProcessFact, complete=False)
    assert new.started is False and set(new.unread()) == {"pid", "returncode"}
    assert describe(new) == "Process 'child-new': not started"


def test_manager_proxies(target):
    e = target.expect
    for name, typeid in (("mqueue", "Queue"), ("mlist", "list")):
        proxy = target.fact(name, ProxyFact)
        assert (proxy.typeid, proxy.token_address, proxy.token_id, proxy.manager_address) == \
            (typeid, e["manager_address"], e[name + "_id"], e["manager_address"])


def test_concurrent_futures(target):
    assert [(f.state, f.has_result, f.has_exception) for f in
            (target.fact(n, FutureFact) for n in ("fut_pending", "fut_done", "fut_exc"))] == \
        [("PENDING", False, False), ("FINISHED", True, False), ("FINISHED", False, True)]
    tpe = target.fact("tpe", ThreadPoolExecutorFact)
    assert (tpe.max_workers, tpe.threads, tpe.queued, tpe.shutdown, tpe.broken) == (2, 2, 3, False, False)
    ppe = target.fact("ppe", ProcessPoolExecutorFact)
    assert (ppe.max_workers, ppe.processes, ppe.pending_work_items, ppe.broken) == (2, 2, 3, False)


def test_popen(target):
    p = target.fact("popen", PopenFact)
    assert (p.args, p.pid, p.returncode) == ("sleep 60", target.expect["popen_pid"], None)
    done = target.fact("popen_done", PopenFact)
    assert (done.args, done.returncode) == ("true", 0)
    assert describe(p) == "Popen 'sleep 60' (pid %d): running or not yet waited for" % target.expect["popen_pid"]


def test_sockets(target):
    e = target.expect
    tcp = target.fact("sock", SocketFact)
    assert (tcp.fd, tcp.family, tcp.type, tcp.proto, tcp.timeout, tcp.closed) == \
        (e["sock_fd"], "AF_INET", "SOCK_STREAM", 0, None, False)
    udp = target.fact("udp", SocketFact)
    assert (udp.fd, udp.type, udp.timeout) == (e["udp_fd"], "SOCK_DGRAM", 2.5)
    closed = target.fact("sock_closed", SocketFact)
    assert (closed.fd, closed.closed) == (-1, True)
    addr = target.fact("sockname", AddressFact)
    assert (addr.host, addr.port) == ("127.0.0.1", e["port"])
    assert describe(tcp) == "socket fd %d (AF_INET, SOCK_STREAM), blocking" % e["sock_fd"]


def test_asyncio(target):
    futs = [target.fact(n, AsyncFutureFact) for n in ("afut_pending", "afut_done", "afut_exc")]
    assert [(f.state, f.has_result, f.has_exception, f.implementation) for f in futs] == \
        [("PENDING", False, False, "C"), ("FINISHED", True, False, "C"), ("FINISHED", False, True, "C")]
    task = target.fact("atask", AsyncTaskFact)
    assert (task.state, task.name, task.coro, task.implementation) == \
        ("PENDING", "waiter-task", "asyncio_objects.<locals>.wait_for_event", "C")
    pytask = target.fact("pytask", AsyncTaskFact)
    assert (pytask.state, pytask.name, pytask.coro, pytask.implementation) == \
        ("PENDING", "py-task", "asyncio_objects.<locals>.wait_for_event", "Python")
    pyfut = target.fact("pyfut", AsyncFutureFact)
    assert (pyfut.state, pyfut.has_result, pyfut.implementation) == ("PENDING", False, "Python")
    ev = target.fact("aevent", AsyncEventFact)
    assert (ev.is_set, ev.waiters) == (False, 2)
    assert target.fact("aevent_set", AsyncEventFact).is_set is True
    lock = target.fact("alock", AsyncLockFact)
    assert (lock.locked, lock.waiters) == (True, 1)
    sem = target.fact("asem", AsyncSemaphoreFact)
    assert (sem.value, sem.waiters) == (0, 1)
    q = target.fact("aqueue", AsyncQueueFact)
    assert (q.maxsize, q.size, q.unfinished_tasks, q.getters_waiting, q.putters_waiting) == (2, 2, 2, 0, 1)
    assert describe(task) == "asyncio Task 'waiter-task': PENDING, running asyncio_objects.<locals>.wait_for_event"


def test_strings(target):
    long = target.fact("long_str", TextFact)
    assert (long.length, long.truncated, len(long.text)) == (target.expect["long_str_len"], True, 4096)
    assert long.text.startswith("/data/shard-xxx")
    path = target.fact("path", TextFact)
    assert (path.text, path.truncated) == ("/tmp/stalldiag/ready.flag", False)
    uni = target.fact("uni_str", TextFact)
    assert (uni.text, uni.length, uni.truncated) == (target.expect["uni_str"], len(target.expect["uni_str"]), False)


def test_read_object_generic(target):
    got = read_object(target.pid, target.ids["sockname"], target.version)
    assert got.py() == ("127.0.0.1", target.expect["port"])
    barrier = read_object(target.pid, target.ids["barrier"], target.version)
    assert barrier.type_name == "threading.Barrier" and barrier.kind == "object"
    attrs = barrier.py()
    assert (attrs["_parties"], attrs["_count"], attrs["_state"]) == (3, 1, 0)


def test_bad_addresses_are_not_read(target):
    some = target.ids["barrier"]
    for addr in (0, 8, some + 8, some + 3, 1 << 46, (1 << 47) + 16):
        got = decode(target.pid, addr, target.version)
        assert isinstance(got, NotRead), (hex(addr), got)
        got = read_object(target.pid, addr, target.version)
        assert isinstance(got, NotRead), (hex(addr), got)
    assert isinstance(decode(target.pid, some, (3, 7)), NotRead)


def test_pyspy_local_addresses_decode(target):
    """The `addr` py-spy gives a local is what decode() takes."""
    if shutil.which("py-spy") is None:
        pytest.skip("no py-spy")
    out = subprocess.run(["py-spy", "dump", "--json", "--locals", "--nonblocking", "--pid", str(target.pid)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    frames = [f for t in json.loads(out.stdout) for f in t["frames"] if f["name"] == "main"]
    local = {l["name"]: l for l in frames[0]["locals"]}
    assert local["barrier"]["addr"] == target.ids["barrier"]
    assert "Barrier at" in local["barrier"]["repr"]
    assert describe(decode(target.pid, local["barrier"]["addr"], target.version)) == "Barrier: 1 of 3 parties arrived"
    assert isinstance(decode(target.pid, local["queue_full"]["addr"], target.version), QueueFact)
    assert isinstance(decode(target.pid, local["sock"]["addr"], target.version), SocketFact)


@pytest.mark.alone
def test_cost_per_object(target):
    """Each decode is a handful of reads, well under a millisecond: cold (a reader that knows
    nothing of the process) and warm (the process's types known from an earlier decode, as
    decode() keeps them), a fresh reader and memory for each object."""
    report = []
    types = TypeCache()
    for mode in ("cold", "warm"):
        rows = []
        for name, addr in sorted(target.ids.items()):
            with ProcessMemory(target.pid) as mem:
                reader = ObjectReader(mem, layout_for(target.version), types=types if mode == "warm" else None)
                start = time.perf_counter()
                decode_with(reader, addr)
                rows.append((time.perf_counter() - start, mem.reads, name))
            if mode == "cold":       # fill the type cache for the warm round
                with ProcessMemory(target.pid) as mem:
                    decode_with(ObjectReader(mem, layout_for(target.version), types=types), addr)
        rows.sort()
        reads = sorted(r[1] for r in rows)
        mean_ms = 1000 * sum(r[0] for r in rows) / len(rows)
        report.append("%s: mean %.3f ms, median %.3f ms, reads median %d, max %d (%s)" % (
            mode, mean_ms, 1000 * rows[len(rows) // 2][0], reads[len(reads) // 2], reads[-1],
            max(rows, key=lambda r: r[1])[2]))
        assert mean_ms < (2.0 if mode == "cold" else 1.0), report
    print("\n%s, %d objects: %s" % (".".join(map(str, target.version)), len(target.ids), "; ".join(report)))


# The target: runs under any CPython 3.8-3.13 (a program of its own, kept here: the test folders
# hold test files only).
TARGET_PROGRAM = r'''"""Target for tests/live/test_pyobjects_live.py: runs under any CPython 3.8-3.13, makes each
synchronization and concurrency object in a known state, prints one JSON line
{"ids": {name: id(obj)}, "expect": {...values known only here...}}, then blocks (every thread
idle) until killed.  Its objects are locals of main(), as py-spy --locals sees them.
"""
import asyncio
import concurrent.futures as cf
import json
import multiprocessing as mp
import os
import queue
import socket
import subprocess
import sys
import threading
import time


def block(seconds=600):
    time.sleep(seconds)


def exit_with(code):
    sys.exit(code)


def settle(predicate, what, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    raise SystemExit("target: timed out waiting for " + what)


def daemon(target, *args, name=None):
    t = threading.Thread(target=target, args=args, name=name, daemon=True)
    t.start()
    return t


class MyEvent(threading.Event):
    """A subclass: decoded by its base's decoder."""


class Barrier:
    """A class of the same name as threading.Barrier: must not decode as one."""
    def __init__(self):
        self._parties = 3
        self._count = 1
        self._state = 0


async def asyncio_objects(report):
    loop = asyncio.get_running_loop()
    objs = {}
    objs["afut_pending"] = loop.create_future()
    objs["afut_done"] = loop.create_future()
    objs["afut_done"].set_result(42)
    objs["afut_exc"] = loop.create_future()
    objs["afut_exc"].set_exception(ValueError("boom"))
    objs["afut_exc"].exception()            # retrieved: no "never retrieved" noise
    aevent = asyncio.Event()
    aevent_set = asyncio.Event()
    aevent_set.set()

    async def wait_for_event():
        await aevent.wait()
    objs["atask"] = asyncio.ensure_future(wait_for_event())
    if sys.version_info >= (3, 8):
        objs["atask"].set_name("waiter-task")
    alock = asyncio.Lock()
    await alock.acquire()

    async def take(lock):
        async with lock:
            pass
    objs["alock_waiter"] = asyncio.ensure_future(take(alock))
    asem = asyncio.Semaphore(1)
    await asem.acquire()
    objs["asem_waiter"] = asyncio.ensure_future(take(asem))
    aqueue = asyncio.Queue(maxsize=2)
    aqueue.put_nowait("a")
    aqueue.put_nowait("b")
    objs["aqueue_putter"] = asyncio.ensure_future(aqueue.put("c"))
    objs["pyfut"] = asyncio.futures._PyFuture(loop=loop)
    objs["pytask"] = asyncio.tasks._PyTask(wait_for_event(), loop=loop, name="py-task")
    objs.update(aevent=aevent, aevent_set=aevent_set, alock=alock, asem=asem, aqueue=aqueue)
    for _ in range(5):
        await asyncio.sleep(0.05)
    report(objs)
    await asyncio.Event().wait()


def main():
    ids, expect = {}, {}
    keep = []       # everything stays referenced

    # threading
    lock_held, lock_free = threading.Lock(), threading.Lock()
    lock_held.acquire()
    rlock_free, rlock_held = threading.RLock(), threading.RLock()
    hold = threading.Event()
    held = threading.Event()

    def hold_rlocks():
        rlock_held.acquire()
        rlock_held.acquire()
        pyrlock.acquire()
        held.set()
        hold.wait()
    pyrlock = threading._PyRLock()
    holder = daemon(hold_rlocks, name="rlock-holder")
    held.wait()
    expect["holder_ident"] = holder.ident

    condition = threading.Condition()

    def cond_wait():
        with condition:
            condition.wait()
    for _ in range(2):
        daemon(cond_wait)
    settle(lambda: len(condition._waiters) == 2, "condition waiters")

    semaphore = threading.Semaphore(2)
    semaphore.acquire()
    semaphore.acquire()
    daemon(semaphore.acquire)
    settle(lambda: len(semaphore._cond._waiters) == 1, "semaphore waiter")
    bsem = threading.BoundedSemaphore(3)
    bsem.acquire()

    event_set, event_unset = threading.Event(), MyEvent()
    event_set.set()
    daemon(event_unset.wait)
    settle(lambda: len(event_unset._cond._waiters) == 1, "event waiter")

    barrier = threading.Barrier(3)
    daemon(barrier.wait)
    settle(lambda b=barrier: b.n_waiting == 1, "barrier waiter")  # a default, not a cell: py-spy shows no cells
    fake_barrier = Barrier()

    thread_alive = threading.Thread(target=hold.wait, name="worker-alive", daemon=True)
    thread_alive.start()
    thread_new = threading.Thread(target=time.sleep, args=(0,), name="worker-new")
    thread_done = threading.Thread(target=time.sleep, args=(0,), name="worker-done")
    thread_done.start()
    thread_done.join()
    ended = threading.Event()
    thread_exited = threading.Thread(target=ended.set, name="worker-exited")
    thread_exited.start()
    ended.wait()
    time.sleep(0.3)          # it has returned; nothing here asks is_alive() (that would reap it)
    main_thread = threading.main_thread()
    expect.update(alive_ident=thread_alive.ident, alive_native_id=thread_alive.native_id,
                  done_ident=thread_done.ident, main_ident=main_thread.ident)

    # queue
    queue_full = queue.Queue(maxsize=4)
    for i in range(4):
        queue_full.put(i)
    daemon(queue_full.put, 99)
    settle(lambda q=queue_full: len(q.not_full._waiters) == 1, "queue putter")
    queue_drained = queue.Queue(maxsize=4)
    for i in range(3):
        queue_drained.put(i)
    for i in range(3):
        queue_drained.get()
    daemon(queue_drained.get)
    settle(lambda: len(queue_drained.not_empty._waiters) == 1, "queue getter")
    lifo = queue.LifoQueue()
    lifo.put(1)
    lifo.put(2)
    prio = queue.PriorityQueue(maxsize=10)
    for i in (3, 1, 2):
        prio.put(i)
    simplequeue = queue.SimpleQueue()
    for i in range(3):
        simplequeue.put(i)
    simplequeue.get()

    # multiprocessing
    pool = mp.Pool(2)
    results = [pool.apply_async(block) for _ in range(5)]
    keep.append(results)
    mpq = mp.Queue(maxsize=3)
    mpq.put("x")
    mpq.put("y")
    settle(lambda: len(mpq._buffer) == 0, "feeder flush")
    mpjq = mp.JoinableQueue()
    mpjq.put(1)
    settle(lambda: len(mpjq._buffer) == 0, "feeder flush")
    mp_lock, mp_rlock = mp.Lock(), mp.RLock()
    mp_lock.acquire()
    mp_rlock.acquire()
    mp_rlock.acquire()
    mp_sem, mp_bsem = mp.Semaphore(3), mp.BoundedSemaphore(2)
    mp_sem.acquire()
    mp_event = mp.Event()
    mp_event.set()
    mp_cond = mp.Condition()

    def mp_cond_wait():
        with mp_cond:
            mp_cond.wait()
    daemon(mp_cond_wait)
    mp_barrier = mp.Barrier(2)
    daemon(mp_barrier.wait)
    settle(lambda: mp_barrier.n_waiting == 1, "mp barrier waiter")
    proc = mp.Process(target=block, name="child-proc", daemon=True)
    proc.start()
    proc_done = mp.Process(target=exit_with, args=(3,), name="child-done")
    proc_done.start()
    proc_done.join()
    proc_new = mp.Process(target=block, name="child-new")
    manager = mp.Manager()
    mqueue = manager.Queue()
    mlist = manager.list([1, 2])
    expect.update(proc_pid=proc.pid, manager_address=manager.address, mqueue_id=mqueue._id, mlist_id=mlist._id)
    settle(lambda: mp_cond._sleeping_count.get_value() == 1, "mp condition waiter")

    # concurrent.futures
    fut_pending, fut_done, fut_exc = cf.Future(), cf.Future(), cf.Future()
    fut_done.set_result("ok")
    fut_exc.set_exception(RuntimeError("bad"))
    tpe = cf.ThreadPoolExecutor(2)
    tpe_futures = [tpe.submit(hold.wait) for _ in range(5)]
    keep.append(tpe_futures)
    settle(lambda: tpe._work_queue.qsize() == 3, "thread pool queue")
    ppe = cf.ProcessPoolExecutor(2)
    ppe_futures = [ppe.submit(time.sleep, 600) for _ in range(3)]
    keep.append(ppe_futures)
    settle(lambda: len(ppe._processes) == 2, "process pool workers")

    # subprocess, socket
    popen = subprocess.Popen(["sleep", "60"])
    popen_done = subprocess.Popen(["true"])
    popen_done.wait()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(1)
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.settimeout(2.5)
    sock_closed = socket.socket()
    sock_closed.close()
    sockname = sock.getsockname()
    expect.update(popen_pid=popen.pid, sock_fd=sock.fileno(), udp_fd=udp.fileno(), port=sockname[1])

    # strings
    long_str = "/data/shard-" + "x" * 5000 + ".ready"
    path = "/tmp/stalldiag/ready.flag"
    uni_str = "données ☃ 𝄞 " * 3
    expect.update(long_str_len=len(long_str), uni_str=uni_str)

    # asyncio, on a loop in its own thread
    got = {}
    reported = threading.Event()

    def report(objs):
        got.update(objs)
        reported.set()
    daemon(lambda: asyncio.run(asyncio_objects(report)), name="asyncio-loop")
    reported.wait(30)

    names = dict(locals())
    for name, value in list(names.items()) + list(got.items()):
        if name in ("ids", "expect", "keep", "names", "got", "report", "reported", "hold", "held", "ended",
                    "i", "_", "hold_rlocks", "cond_wait", "mp_cond_wait", "value", "name", "results",
                    "tpe_futures", "ppe_futures"):
            continue
        ids[name] = id(value)
    print(json.dumps({"ids": ids, "expect": expect, "version": list(sys.version_info[:2])}), flush=True)
    hold.wait()      # forever: the test kills the process group


if __name__ == "__main__":
    main()
'''
