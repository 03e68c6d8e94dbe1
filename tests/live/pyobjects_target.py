"""Target for tests/live/test_pyobjects_live.py: runs under any CPython 3.8-3.13, makes each
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
