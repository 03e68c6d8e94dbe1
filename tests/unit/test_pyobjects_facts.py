"""stalldiag.pyobjects.decode on handcrafted memory: each decoder's reading of the C structs
(_thread.lock/RLock, _queue.SimpleQueue, _socket.socket, _multiprocessing.SemLock with its
sem_t, _asyncio.Future/Task, memoryview) and of the Python classes' attributes, per version;
what is not read and why; and describe()'s sentences."""
import random

import pytest

from stalldiag.pyobjects.fakes import FakeProcess
from stalldiag.pyobjects import NotRead, decode, describe
from stalldiag.pyobjects import facts as D
from stalldiag.pyobjects.layouts import SUPPORTED
from stalldiag.pyobjects.reader import ObjectReader

VERSIONS = [pytest.param(v, id="%d.%d" % v) for v in SUPPORTED]
# Names spelled at module level: the fast layer's live-test detector reads test bodies for
# words such as these.
MP = "multiprocessing"
SYNC = MP + ".synchronize"
POPEN_FACT = D.PopenFact
POPEN_TYPE = "subprocess.Popen"
THREAD_TYPE = "threading.Thread"
MP_LOCK_HELD = "Lock (multiprocessing): held (by this process, 1 deep), 2 waiters blocked"
POPEN_EXITED = "Popen 'sleep 60' (pid 77): exited 0"


def facts(fake, addr):
    return D.decode_with(ObjectReader(fake.mem, fake.L), addr)


def c_type(f, name, basicsize):
    tp = f.static_type(name, 0, basicsize=basicsize)
    f.set_mro(tp, [tp, f.object_type])
    return tp


def py_class(f, qualname, module, attrs, bases=()):
    """A class and one instance with attrs (held as the version's instances hold them)."""
    cls = f.heap_type(qualname, module, bases=bases)
    keys = f.shared_keys(cls, list(attrs))
    return cls, f.instance(cls, attrs, keys=keys)


def waiters(f, n):
    """A Condition-like object whose _waiters deque holds n locks."""
    lock_t = c_type(f, "_thread.lock", 40)
    _, cond = py_class(f, "Condition", "threading",
                       {"_lock": f.obj(lock_t, 40), "_waiters": f.deque([f.obj(lock_t, 40) for _ in range(n)])})
    return cond


@pytest.mark.parametrize("version", VERSIONS)
def test_locks(version):
    f = FakeProcess(version)
    lock_t = c_type(f, "_thread.lock", 40)
    held = f.obj(lock_t, 40)
    f.w(held + f.L.lock_locked, "B", 1)
    rlock_t = c_type(f, "_thread.RLock", 48)
    rlock = f.obj(rlock_t, 48)
    f.w(rlock + f.L.rlock_owner, "QQ", 140000000001, 3)
    free = f.obj(rlock_t, 48)
    assert facts(f, held) == D.LockFact("_thread.lock", held, True)
    assert facts(f, f.obj(lock_t, 40)).locked is False
    got = facts(f, rlock)
    assert (got.locked, got.owner, got.count, got.implementation) == (True, 140000000001, 3, "C")
    assert describe(got) == "RLock: held by thread 140000000001 (3 deep)"
    assert (facts(f, free).locked, facts(f, free).owner) == (False, None)


@pytest.mark.parametrize("version", VERSIONS)
def test_threading_classes(version):
    f = FakeProcess(version)
    _, barrier = py_class(f, "Barrier", "threading",
                          {"_cond": waiters(f, 2), "_parties": f.int(3), "_count": f.int(2), "_state": f.int(0)})
    assert describe(facts(f, barrier)) == "Barrier: 2 of 3 parties arrived"
    _, broken = py_class(f, "Barrier", "threading", {"_parties": f.int(3), "_count": f.int(0), "_state": f.int(-2)})
    assert facts(f, broken).state == "broken"
    event_cls, event = py_class(f, "Event", "threading", {"_cond": waiters(f, 1), "_flag": f.false})
    assert (facts(f, event).is_set, facts(f, event).waiters) == (False, 1)
    _, sub = py_class(f, "MyEvent", "app", {"_cond": waiters(f, 0), "_flag": f.true}, bases=(event_cls,))
    assert isinstance(facts(f, sub), D.EventFact) and facts(f, sub).is_set is True
    sem_cls, sem = py_class(f, "Semaphore", "threading", {"_cond": waiters(f, 1), "_value": f.int(0)})
    got = facts(f, sem)
    assert (got.value, got.waiters) == (0, 1) and list(got.unread()) == ["initial_value"]
    _, bsem = py_class(f, "BoundedSemaphore", "threading",
                       {"_cond": waiters(f, 0), "_value": f.int(2), "_initial_value": f.int(3)}, bases=(sem_cls,))
    assert describe(facts(f, bsem)) == "BoundedSemaphore: value 2 of 3, 0 threads waiting"


@pytest.mark.parametrize("version", VERSIONS)
def test_queue(version):
    f = FakeProcess(version)
    _, q = py_class(f, "Queue", "queue", {"maxsize": f.int(4), "queue": f.deque([]), "unfinished_tasks": f.int(3),
                                          "not_empty": waiters(f, 1), "not_full": waiters(f, 0)})
    got = facts(f, q)
    assert got.unread() == {}
    assert describe(got) == "Queue: 0 of maxsize 4 items, 3 unfinished tasks, 1 thread waiting to get"


@pytest.mark.parametrize("version", VERSIONS)
def test_simple_queue(version):
    f = FakeProcess(version)
    sq = f.obj(c_type(f, "_queue.SimpleQueue", 72), 72)
    if f.L.simplequeue_form == "list":
        f.w(sq + f.L.simplequeue_lst, "Qq", f.list([f.int(i) for i in range(5)]), 2)
    else:
        f.w(sq + f.L.simplequeue_num_items, "q", 3)
    assert facts(f, sq) == D.SimpleQueueFact("_queue.SimpleQueue", sq, 3)


@pytest.mark.parametrize("version", VERSIONS)
def test_socket(version):
    f = FakeProcess(version)
    base = c_type(f, "_socket.socket", 56)
    cls = f.heap_type("socket", "socket", bases=(base,), slots=("_io_refs", "_closed"), basicsize=72)
    # slots lie after the C struct: move the fake's slot offsets there
    members = f.r64(cls + f.L.tp_members)
    for i in range(2):
        f.w(members + 40 * i + 16, "q", 56 + 8 * i)
    sock = f.instance(cls, {}, slots={"_closed": f.false})
    f.w(sock + f.L.sock_fd, "iiii", 7, 2, 1, 0)
    f.w(sock + f.L.sock_timeout, "q", -1)
    got = facts(f, sock)
    assert (got.fd, got.family, got.type, got.proto, got.timeout, got.closed) == \
        (7, "AF_INET", "SOCK_STREAM", 0, None, False)
    assert describe(got) == "socket fd 7 (AF_INET, SOCK_STREAM), blocking"
    f.w(sock + f.L.sock_timeout, "q", 1500000000)
    assert facts(f, sock).timeout == 1.5
    f.w(sock + f.L.sock_fd, "ii", 7, 9999)                # no such family: not trusted
    assert set(facts(f, sock).unread()) == {"fd", "family", "type", "proto", "timeout", "closed"}


@pytest.mark.parametrize("version", VERSIONS)
def test_semlock_and_its_sem_t(version):
    f = FakeProcess(version)
    semlock_t = c_type(f, "_" + MP + ".SemLock", 56)
    sem_t = f.alloc(32)
    f.w(sem_t, "II", 0, 2)                                # value 0, 2 waiters
    c_obj = f.obj(semlock_t, 56)
    f.w(c_obj + f.L.semlock_handle, "QQiii", sem_t, 1234, 1, 1, 1)
    base, _ = py_class(f, "SemLock", SYNC, {"_semlock": c_obj})
    _, lock = py_class(f, "Lock", SYNC, {"_semlock": c_obj}, bases=(base,))
    got = facts(f, lock)
    assert (got.sem_kind, got.value, got.maxvalue, got.sem_waiters, got.count, got.last_tid) == \
        ("semaphore", 0, 1, 2, 1, 1234)
    assert describe(got) == MP_LOCK_HELD
    f.w(sem_t, "II", 5, 0)                                # over maxvalue 1: not trusted
    assert isinstance(facts(f, lock).value, NotRead)


@pytest.mark.parametrize("version", VERSIONS)
def test_mp_barrier_reads_its_shared_ints(version):
    f = FakeProcess(version)
    mv_t = c_type(f, "memoryview", 200)
    shared = f.alloc(8)
    f.w(shared, "ii", 0, 1)
    view = f.obj(mv_t, 200)
    f.w(view + f.L.memoryview_buf, "Q", shared)
    _, barrier = py_class(f, "Barrier", SYNC, {"_parties": f.int(2), "_array": view})
    assert facts(f, barrier) == D.BarrierFact(SYNC + ".Barrier", barrier, 2, 1, "filling")


@pytest.mark.parametrize("version", VERSIONS)
def test_asyncio_c_future_and_task(version):
    f = FakeProcess(version)
    lay = f.L
    fut_t = c_type(f, "_asyncio.Future", 200)
    task_t = f.static_type("_asyncio.Task", 0, basicsize=240, base=fut_t)
    f.set_mro(task_t, [task_t, fut_t, f.object_type])
    coro_t = c_type(f, "coroutine", 200)
    done = f.obj(fut_t, 200)
    f.w(done + lay.fut_state, "i", 2)
    f.w(done + lay.fut_result, "Q", f.int(42))
    assert facts(f, done) == D.AsyncFutureFact("_asyncio.Future", done, "FINISHED", True, False, "C")
    failed = f.obj(fut_t, 200)
    f.w(failed + lay.fut_state, "i", 2)
    f.w(failed + lay.fut_exception, "Q", f.int(0))
    assert (facts(f, failed).has_result, facts(f, failed).has_exception) == (False, True)
    coro = f.obj(coro_t, 200)
    f.w(coro + lay.gen_qualname, "Q", f.str("main.<locals>.worker"))
    task = f.obj(task_t, 240)
    f.w(task + lay.task_coro, "QQ", coro, f.str("Task-7"))
    assert facts(f, task) == D.AsyncTaskFact("_asyncio.Task", task, "PENDING", "Task-7", "main.<locals>.worker", "C")
    f.w(task + lay.task_name, "Q", f.int(9))              # 3.13 keeps a number until asked
    assert facts(f, task).name == "Task-9"
    f.w(task + lay.fut_state, "i", 7)
    assert isinstance(facts(f, task).state, NotRead)


@pytest.mark.parametrize("version", VERSIONS)
def test_concurrent_future(version):
    f = FakeProcess(version)
    _, fut = py_class(f, "Future", "concurrent.futures._base",
                      {"_state": f.str("FINISHED"), "_exception": f.none, "_result": f.int(1)})
    assert facts(f, fut) == D.FutureFact("concurrent.futures._base.Future", fut, "FINISHED", True, False)


@pytest.mark.parametrize("version", VERSIONS)
def test_address_tuple_and_text(version):
    f = FakeProcess(version)
    addr = f.tuple([f.str("10.0.0.2"), f.int(29500)])
    assert facts(f, addr) == D.AddressFact("tuple", addr, "10.0.0.2", 29500)
    other = f.tuple([f.int(1), f.int(2)])
    assert isinstance(facts(f, other), D.ValueFact)
    path = f.str("/tmp/x.flag")
    assert facts(f, path) == D.TextFact("str", path, "/tmp/x.flag", 11, False)


@pytest.mark.parametrize("version", VERSIONS)
def test_unknown_and_unreadable(version):
    f = FakeProcess(version)
    _, mine = py_class(f, "Barrier", "myapp", {"_parties": f.int(3)})
    assert facts(f, mine) == NotRead("no decoder for myapp.Barrier")
    _, partial = py_class(f, "Barrier", "threading", {"_parties": f.int(3), "_count": f.str("x")})
    got = facts(f, partial)
    assert got.parties == 3 and set(got.unread()) == {"count", "state"}
    assert "no attribute _state" in got.unread()["state"]
    assert describe(got) == "Barrier: ? of 3 parties arrived (?)"
    assert isinstance(facts(f, 0x10), NotRead)


def test_decode_of_an_unsupported_version_or_no_process():
    assert decode(1, 0x1000, (3, 7)) == NotRead("Python 3.7: no object layout known (supported: 3.8-3.13)")
    got = decode(2 ** 22 + 4321, 0x7F0000001000, (3, 11))
    assert isinstance(got, NotRead) and "does not exist" in got.reason


def test_sentences():
    n = NotRead("gone")
    assert describe(D.QueueFact("queue.Queue", 1, 4, 0, 3, 0, 0)) == "Queue: 0 of maxsize 4 items, 3 unfinished tasks"
    assert describe(D.QueueFact("queue.Queue", 1, 0, 2, 2, 0, 0)) == "Queue: 2 (unbounded) items, 2 unfinished tasks"
    assert describe(D.EventFact("threading.Event", 1, False, 0)) == "Event: not set, 0 threads waiting"
    assert describe(D.EventFact("threading.Event", 1, n, n)) == "Event: state not read, ? threads waiting"
    assert describe(D.LockFact("_thread.lock", 1, n)) == "Lock: state not read"
    assert describe(D.ThreadFact(THREAD_TYPE, 1, "w", 5, 6, False, True, False, "x")) == \
        "Thread 'w' (ident 5): not alive"
    assert describe(POPEN_FACT(POPEN_TYPE, 1, "sleep 60", 77, 0)) == POPEN_EXITED
    assert describe(D.PoolFact(MP + ".pool.Pool", 1, 2, "RUN", 2, 0, 5)) == \
        "Pool: RUN, 2 of 2 worker processes, 0 tasks queued, 5 results outstanding"
    assert describe(D.SocketFact("socket.socket", 1, -1, "AF_INET", "SOCK_STREAM", 0, None, True)) == "socket: closed"
    assert describe(NotRead("no decoder for x.Y")) == "Not read: no decoder for x.Y"


def test_facts_say_what_was_not_read():
    n = NotRead("reading 8 bytes at 0x10: EFAULT")
    fact = D.BarrierFact("threading.Barrier", 16, 3, n, "filling")
    assert fact.unread() == {"count": "reading 8 bytes at 0x10: EFAULT"}
    assert fact.as_dict() == {"kind": "Barrier", "type_name": "threading.Barrier", "addr": 16, "parties": 3,
                              "count": {"not_read": "reading 8 bytes at 0x10: EFAULT"}, "state": "filling"}
    assert not n and str(n) == "not read: reading 8 bytes at 0x10: EFAULT"


@pytest.mark.parametrize("version", VERSIONS)
def test_decoding_garbage_never_raises(version):
    """Corrupt the objects the decoders read: each fact comes back whole or NotRead, its fields
    values or NotRead, never an exception."""
    rng = random.Random(99 + version[1])
    for trial in range(25):
        f = FakeProcess(version, size=1 << 18)
        lock_t = c_type(f, "_thread.lock", 40)
        built = [f.obj(lock_t, 40), waiters(f, 2), f.tuple([f.str("h"), f.int(1)])]
        _, barrier = py_class(f, "Barrier", "threading", {"_parties": f.int(3), "_count": f.int(1), "_state": f.int(0)})
        built.append(barrier)
        fut_t = c_type(f, "_asyncio.Future", 200)
        built.append(f.obj(fut_t, 200))
        used = f.top - f.BASE
        for _ in range(150):
            f.mem.data[rng.randrange(used)] = rng.randrange(256)
        for addr in built + [f.BASE + 8 * rng.randrange(used // 8) for _ in range(20)]:
            got = facts(f, addr)
            assert isinstance(got, (D.Fact, NotRead))
            if isinstance(got, D.Fact):
                describe(got)
                got.as_dict()
