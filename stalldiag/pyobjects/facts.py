"""Typed facts about the standard synchronization and concurrency objects, read from the
target's memory: what a lock, queue, event, barrier, pool, future or socket holds right now.

decode(pid, addr, version) chooses a decoder by the object's type (the most derived class of
its MRO that is known here), and returns a Fact or NotRead.  Each field of a Fact is a value or
NotRead(reason): a field that could not be read never shows as None or as a guess.  (None as a
value means what it means in the target: `returncode` None is "not collected yet".)
describe(fact) says it in one short sentence.
"""
import socket as _socket
import struct
from dataclasses import fields
from typing import Any, Union

from ..records import typed_record
from .layouts import layout_for
from .memory import Fault, NotRead
from .reader import PyObj, reader_for

Maybe = Union[Any, NotRead]


# ---- facts --------------------------------------------------------------------------------

@typed_record(frozen=True)
class Fact:
    type_name: str
    addr: int

    @property
    def kind(self):
        return type(self).__name__[:-4] if type(self).__name__.endswith("Fact") else type(self).__name__

    def unread(self):
        """{field: reason} of the fields that could not be read."""
        return {f.name: getattr(self, f.name).reason for f in fields(self) if isinstance(getattr(self, f.name), NotRead)}

    def as_dict(self):
        def conv(v):
            if isinstance(v, NotRead):
                return {"not_read": v.reason}
            if isinstance(v, Fact):
                return v.as_dict()
            if isinstance(v, PyObj):
                return v.py()
            if isinstance(v, tuple):
                return [conv(x) for x in v]
            return v
        out = {"kind": self.kind}
        out.update({f.name: conv(getattr(self, f.name)) for f in fields(self)})
        return out


@typed_record(frozen=True)
class LockFact(Fact):
    locked: Maybe


@typed_record(frozen=True)
class RLockFact(Fact):
    locked: Maybe
    owner: Maybe          # thread ident of the owner, None when free
    count: Maybe          # recursion level
    implementation: str   # "C" (_thread.RLock) or "Python" (threading._RLock)


@typed_record(frozen=True)
class ConditionFact(Fact):
    lock: Maybe           # LockFact / RLockFact / another Fact
    waiters: Maybe


@typed_record(frozen=True)
class SemaphoreFact(Fact):
    value: Maybe
    initial_value: Maybe  # BoundedSemaphore only
    waiters: Maybe


@typed_record(frozen=True)
class EventFact(Fact):
    is_set: Maybe
    waiters: Maybe


BARRIER_STATES = {0: "filling", 1: "draining", -1: "resetting", -2: "broken"}


@typed_record(frozen=True)
class BarrierFact(Fact):
    parties: Maybe
    count: Maybe          # parties waiting at the barrier now
    state: Maybe          # "filling", "draining", "resetting", "broken"


@typed_record(frozen=True)
class ThreadFact(Fact):
    name: Maybe
    ident: Maybe          # None before start
    native_id: Maybe
    daemon: Maybe
    started: Maybe
    alive: Maybe
    alive_basis: str      # what `alive` was judged from


@typed_record(frozen=True)
class QueueFact(Fact):
    maxsize: Maybe        # 0: unbounded
    size: Maybe
    unfinished_tasks: Maybe
    getters_waiting: Maybe
    putters_waiting: Maybe


@typed_record(frozen=True)
class SimpleQueueFact(Fact):
    size: Maybe


@typed_record(frozen=True)
class SemLockFact(Fact):
    """A multiprocessing Lock/RLock/Semaphore/BoundedSemaphore: its POSIX semaphore's value
    (shared by all processes) and this process's own acquisitions of it."""
    sem_kind: Maybe       # "semaphore" or "recursive mutex"
    value: Maybe          # the sem_t's value now (0: a Lock is held)
    maxvalue: Maybe
    sem_waiters: Maybe    # processes/threads blocked in sem_wait (glibc's count)
    count: Maybe          # acquisitions held by this process
    last_tid: Maybe       # thread ident of this process's last acquirer


@typed_record(frozen=True)
class MPConditionFact(Fact):
    lock: Maybe
    waiters: Maybe


@typed_record(frozen=True)
class MPEventFact(Fact):
    is_set: Maybe
    waiters: Maybe


@typed_record(frozen=True)
class MPQueueFact(Fact):
    maxsize: Maybe
    in_flight: Maybe      # items put and not yet taken (maxsize - its semaphore's value)
    buffered: Maybe       # items this process put that its feeder thread has not yet written
    closed: Maybe
    feeder_thread: Maybe  # whether this process has started its feeder thread
    unfinished_tasks: Maybe   # JoinableQueue only


@typed_record(frozen=True)
class PoolFact(Fact):
    processes: Maybe
    state: Maybe          # "INIT", "RUN", "CLOSE", "TERMINATE"
    workers: Maybe        # len(_pool)
    task_queue: Maybe     # tasks not yet handed to the workers' queue
    outstanding: Maybe    # len(_cache): results not yet delivered


@typed_record(frozen=True)
class ProxyFact(Fact):
    typeid: Maybe
    token_address: Maybe
    token_id: Maybe
    manager_address: Maybe


@typed_record(frozen=True)
class ProcessFact(Fact):
    name: Maybe
    started: Maybe
    pid: Maybe
    returncode: Maybe     # None: not collected (running, or not yet waited for)


@typed_record(frozen=True)
class FutureFact(Fact):
    state: Maybe          # "PENDING", "RUNNING", "CANCELLED", "CANCELLED_AND_NOTIFIED", "FINISHED"
    has_result: Maybe
    has_exception: Maybe


@typed_record(frozen=True)
class ThreadPoolExecutorFact(Fact):
    max_workers: Maybe
    threads: Maybe
    queued: Maybe         # work items not yet taken by a thread
    shutdown: Maybe
    broken: Maybe         # False or the message


@typed_record(frozen=True)
class ProcessPoolExecutorFact(Fact):
    max_workers: Maybe
    processes: Maybe
    pending_work_items: Maybe
    broken: Maybe


@typed_record(frozen=True)
class PopenFact(Fact):
    args: Maybe           # as text (bounded)
    pid: Maybe
    returncode: Maybe     # None: not collected


@typed_record(frozen=True)
class SocketFact(Fact):
    fd: Maybe             # -1 once closed
    family: Maybe         # "AF_INET", ... (the number when unnamed)
    type: Maybe           # "SOCK_STREAM", ...
    proto: Maybe
    timeout: Maybe        # seconds; None: blocking without timeout
    closed: Maybe


@typed_record(frozen=True)
class AddressFact(Fact):
    host: Maybe
    port: Maybe


@typed_record(frozen=True)
class AsyncFutureFact(Fact):
    state: Maybe          # "PENDING", "CANCELLED", "FINISHED"
    has_result: Maybe
    has_exception: Maybe
    implementation: str


@typed_record(frozen=True)
class AsyncTaskFact(Fact):
    state: Maybe
    name: Maybe
    coro: Maybe           # the coroutine's qualified name
    implementation: str


@typed_record(frozen=True)
class AsyncEventFact(Fact):
    is_set: Maybe
    waiters: Maybe


@typed_record(frozen=True)
class AsyncLockFact(Fact):
    locked: Maybe
    waiters: Maybe


@typed_record(frozen=True)
class AsyncSemaphoreFact(Fact):
    value: Maybe
    waiters: Maybe


@typed_record(frozen=True)
class AsyncQueueFact(Fact):
    maxsize: Maybe
    size: Maybe
    unfinished_tasks: Maybe
    getters_waiting: Maybe
    putters_waiting: Maybe


@typed_record(frozen=True)
class TextFact(Fact):
    text: Maybe
    length: Maybe
    truncated: Maybe


@typed_record(frozen=True)
class ValueFact(Fact):
    value: Maybe          # PyObj of a plain value (int, float, bytes, tuple, ...)


# ---- field access -------------------------------------------------------------------------

def _catch(fn, *args):
    """fn(*args), or NotRead saying why not: nothing found in the target raises past here."""
    try:
        return fn(*args)
    except Fault as e:
        return NotRead(str(e))
    except Exception as e:       # noqa: BLE001 - content no decoder foresaw is "not read", not a crash
        return NotRead("unexpected content: %s: %s" % (type(e).__name__, e))


def _expect_type(r, addr, name):
    """Fault unless the object at addr is of the type `name` (or a subclass)."""
    info = r.type_of(addr)
    if name not in r.mro_names(info):
        raise Fault("expected %s, found %s" % (name, r.type_name(info)))
    return info


class _Obj:
    """An instance in the target, with its attributes read as typed values (Fault on failure;
    the decoders wrap each field in _catch)."""

    def __init__(self, r, addr):
        self.r, self.addr = r, addr

    def ptr(self, name):
        return self.r.attr(self.addr, name)

    def sub(self, name):
        return _Obj(self.r, self.ptr(name))

    def none(self, name):
        return self.r.is_none(self.ptr(name))

    def int(self, name):
        p = self.ptr(name)
        return self.r.int_value(p)

    def int_or_none(self, name):
        p = self.ptr(name)
        return None if self.r.is_none(p) else self.r.int_value(p)

    def bool(self, name):
        p = self.ptr(name)
        info = self.r.type_of(p)
        if info.tp_name == "bool":
            return self.r.bool_value(p, info)
        if info.tp_name == "NoneType":
            raise Fault("%s is None, not a bool" % name)
        return bool(self.r.int_value(p, info))

    def str(self, name, limit=512):
        p = self.ptr(name)
        text, _n, cut = self.r.str_value(p, limit=limit)
        return text + ("..." if cut else "")

    def str_or_none(self, name, limit=512):
        p = self.ptr(name)
        return None if self.r.is_none(p) else self.str(name, limit)

    def len(self, name):
        return self.r.length(self.ptr(name))

    def len_or_zero(self, name):
        """len() of a container attribute that is None until first used (asyncio's _waiters)."""
        p = self.ptr(name)
        return 0 if self.r.is_none(p) else self.r.length(p)

    def value(self, name, depth=2):
        return self.r.value(self.ptr(name), depth)


def _name(r, addr):
    return r.type_name(r.type_of(addr))


# ---- decoders -----------------------------------------------------------------------------

def _locked_byte(r, addr):
    _expect_type(r, addr, "_thread.lock")
    flag = r.mem.u8(addr + r.L.lock_locked)
    if flag not in (0, 1):
        raise Fault("lock at 0x%x has locked = %d" % (addr, flag))
    return bool(flag)


def _lock(r, addr, tn):
    return LockFact(tn, addr, _catch(_locked_byte, r, addr))


def _crlock(r, addr, tn):
    def read():
        owner = r.mem.u64(addr + r.L.rlock_owner)
        count = r.mem.u64(addr + r.L.rlock_count)
        if count > (1 << 32):
            raise Fault("RLock at 0x%x has an implausible count %d" % (addr, count))
        return owner, count
    got = _catch(read)
    if isinstance(got, NotRead):
        return RLockFact(tn, addr, got, got, got, "C")
    owner, count = got
    return RLockFact(tn, addr, count > 0, owner if count > 0 else None, count, "C")


def _pyrlock(r, addr, tn):
    o = _Obj(r, addr)
    count = _catch(o.int, "_count")
    owner = _catch(o.int_or_none, "_owner")
    locked = _catch(lambda: _locked_byte(r, o.ptr("_block")))
    return RLockFact(tn, addr, locked, owner, count, "Python")


def _waiters(o, cond_attr):
    """Threads waiting on the Condition held in attribute cond_attr."""
    return _catch(lambda: o.sub(cond_attr).len("_waiters"))


def _condition(r, addr, tn):
    o = _Obj(r, addr)
    lock = _catch(lambda: _decode_at(r, o.ptr("_lock")))
    return ConditionFact(tn, addr, lock, _catch(o.len, "_waiters"))


def _semaphore(r, addr, tn):
    o = _Obj(r, addr)
    bounded = "threading.BoundedSemaphore" in r.mro_names(r.type_of(addr))
    initial = _catch(o.int, "_initial_value") if bounded else NotRead("a Semaphore has no bound (not a BoundedSemaphore)")
    return SemaphoreFact(tn, addr, _catch(o.int, "_value"), initial, _waiters(o, "_cond"))


def _event(r, addr, tn):
    o = _Obj(r, addr)
    return EventFact(tn, addr, _catch(o.bool, "_flag"), _waiters(o, "_cond"))


def _barrier_state(value):
    if isinstance(value, NotRead):
        return value
    return BARRIER_STATES.get(value, NotRead("unknown barrier state %r" % value))


def _barrier(r, addr, tn):
    o = _Obj(r, addr)
    return BarrierFact(tn, addr, _catch(o.int, "_parties"), _catch(o.int, "_count"),
                       _barrier_state(_catch(o.int, "_state")))


THREAD_HANDLE_STATES = {1: "not started", 2: "starting", 3: "running", 4: "done"}


def _thread(r, addr, tn):
    o = _Obj(r, addr)
    started = _catch(lambda: o.sub("_started").bool("_flag"))
    alive, basis = _thread_alive(r, o, started, tn)
    return ThreadFact(tn, addr, _catch(o.str, "_name"), _catch(o.int_or_none, "_ident"),
                      _catch(o.int_or_none, "_native_id"), _catch(o.bool, "_daemonic"), started, alive, basis)


def _thread_alive(r, o, started, tn):
    if isinstance(started, NotRead):
        return started, "its _started event could not be read"
    if not started:
        return False, "not started (_started is not set)"
    if tn.endswith("._DummyThread"):
        return True, "a thread not started by threading (_DummyThread) counts as alive"
    if r.L.version >= (3, 13):
        def by_handle():
            handle_obj = o.ptr("_handle")
            _expect_type(r, handle_obj, "_thread._ThreadHandle")
            handle = r.mem.ptr(handle_obj + r.L.thread_handle_ptr)
            if not handle:
                raise Fault("its _ThreadHandle holds no handle")
            state = r.mem.u32(handle + r.L.thread_handle_state)
            exiting = r.mem.u8(handle + r.L.thread_handle_exiting)
            if state not in THREAD_HANDLE_STATES or exiting not in (0, 1):
                raise Fault("its thread handle looks wrong (state %d)" % state)
            return state, exiting
        got = _catch(by_handle)
        if isinstance(got, NotRead):
            return got, "its _handle could not be read"
        state, exiting = got
        if state == 3 and not exiting:
            return True, "its thread handle is running"
        if state == 3:
            return False, "its thread handle says the thread is exiting"
        return False, "its thread handle is %s" % THREAD_HANDLE_STATES[state]
    stopped = _catch(o.bool, "_is_stopped")
    if isinstance(stopped, NotRead):
        return stopped, "_is_stopped could not be read"
    if stopped:
        return False, "_is_stopped is set"
    def tstate_lock():
        p = o.ptr("_tstate_lock")
        if r.is_none(p):
            return None
        return _locked_byte(r, p)
    held = _catch(tstate_lock)
    if isinstance(held, NotRead):
        return held, "its _tstate_lock could not be read"
    if held is None:
        return NotRead("started, not stopped, but no _tstate_lock"), "no _tstate_lock"
    if held:
        return True, "its _tstate_lock is held (released only when the thread ends)"
    return False, "its _tstate_lock was released: the thread has ended (not yet joined)"


def _queue(r, addr, tn):
    o = _Obj(r, addr)
    return QueueFact(tn, addr, _catch(o.int, "maxsize"), _catch(o.len, "queue"), _catch(o.int, "unfinished_tasks"),
                     _waiters(o, "not_empty"), _waiters(o, "not_full"))


def _simplequeue(r, addr, tn):
    return SimpleQueueFact(tn, addr, _catch(r.simplequeue_len, addr))


def _pysimplequeue(r, addr, tn):
    return SimpleQueueFact(tn, addr, _catch(_Obj(r, addr).len, "_queue"))


# multiprocessing

SEM_KINDS = {0: "recursive mutex", 1: "semaphore"}


def _semlock_c(r, addr, tn):
    """The _multiprocessing.SemLock C object and the glibc sem_t it points at."""
    lay = r.L

    def head():
        _expect_type(r, addr, "_multiprocessing.SemLock")
        raw = r.mem.read(addr + lay.semlock_handle, lay.semlock_kind + 4 - lay.semlock_handle)
        get = lambda off, fmt: struct.unpack_from(fmt, raw, off - lay.semlock_handle)[0]
        return (get(lay.semlock_handle, "<Q"), get(lay.semlock_last_tid, "<Q"), get(lay.semlock_count, "<i"),
                get(lay.semlock_maxvalue, "<i"), get(lay.semlock_kind, "<i"))
    got = _catch(head)
    if isinstance(got, NotRead):
        return SemLockFact(tn, addr, got, got, got, got, got, got)
    handle, last_tid, count, maxvalue, kind = got
    sem_kind = SEM_KINDS.get(kind, NotRead("unknown SemLock kind %d" % kind))

    def sem_t():
        # glibc x86_64 struct new_sem: uint64_t data (value: low 32 bits, nwaiters: high 32)
        data = r.mem.u64(handle)
        return data & 0xFFFFFFFF, data >> 32
    sem = _catch(sem_t) if handle else NotRead("no sem_t handle")
    if not isinstance(sem, NotRead) and maxvalue > 0 and sem[0] > maxvalue:
        sem = NotRead("sem_t value %d is over maxvalue %d" % (sem[0], maxvalue))
    value = sem if isinstance(sem, NotRead) else sem[0]
    waiters = sem if isinstance(sem, NotRead) else sem[1]
    if count < 0:
        count = NotRead("negative acquisition count %d" % count)
    return SemLockFact(tn, addr, sem_kind, value, maxvalue, waiters, count, last_tid)


def _semlock(r, addr, tn):
    got = _catch(lambda: _semlock_c(r, _Obj(r, addr).ptr("_semlock"), tn))
    if isinstance(got, NotRead):
        return SemLockFact(tn, addr, got, got, got, got, got, got)
    return SemLockFact(tn, addr, *[getattr(got, f.name) for f in fields(got)][2:])


def _sem_value(o, name):
    """The sem_t value of the multiprocessing semaphore held in attribute `name`."""
    got = _catch(lambda: _semlock(o.r, o.ptr(name), "").value)
    return got


def _mp_condition(r, addr, tn):
    o = _Obj(r, addr)
    lock = _catch(lambda: _decode_at(r, o.ptr("_lock")))
    sleeping, woken = _sem_value(o, "_sleeping_count"), _sem_value(o, "_woken_count")
    waiters = sleeping if isinstance(sleeping, NotRead) else woken if isinstance(woken, NotRead) \
        else max(sleeping - woken, 0)
    return MPConditionFact(tn, addr, lock, waiters)


def _mp_event(r, addr, tn):
    o = _Obj(r, addr)
    flag = _sem_value(o, "_flag")
    is_set = flag if isinstance(flag, NotRead) else flag > 0
    waiters = _catch(lambda: _mp_condition(r, o.ptr("_cond"), "").waiters)
    return MPEventFact(tn, addr, is_set, waiters)


def _mp_barrier(r, addr, tn):
    o = _Obj(r, addr)

    def shared():
        view = o.ptr("_array")
        if r.type_name(r.type_of(view)) != "memoryview":
            raise Fault("_array is not a memoryview")
        buf = r.mem.ptr(view + r.L.memoryview_buf)
        return struct.unpack("<ii", r.mem.read(buf, 8))
    got = _catch(shared)
    state = got if isinstance(got, NotRead) else _barrier_state(got[0])
    count = got if isinstance(got, NotRead) else got[1]
    return BarrierFact(tn, addr, _catch(o.int, "_parties"), count, state)


def _mp_queue(r, addr, tn):
    o = _Obj(r, addr)
    maxsize = _catch(o.int, "_maxsize")
    sem = _sem_value(o, "_sem")
    in_flight = maxsize if isinstance(maxsize, NotRead) else sem if isinstance(sem, NotRead) else maxsize - sem
    joinable = "multiprocessing.queues.JoinableQueue" in r.mro_names(r.type_of(addr))
    unfinished = _sem_value(o, "_unfinished_tasks") if joinable else NotRead("not a JoinableQueue")
    return MPQueueFact(tn, addr, maxsize, in_flight, _catch(o.len, "_buffer"), _catch(o.bool, "_closed"),
                       _catch(lambda: not o.none("_thread")), unfinished)


def _pool(r, addr, tn):
    o = _Obj(r, addr)
    return PoolFact(tn, addr, _catch(o.int, "_processes"), _catch(o.str, "_state"), _catch(o.len, "_pool"),
                    _catch(o.len, "_taskqueue"), _catch(o.len, "_cache"))


def _address_value(r, p):
    v = r.value(p, 2)
    return v.py()


def _proxy(r, addr, tn):
    o = _Obj(r, addr)
    token = _catch(o.sub, "_token")
    if isinstance(token, NotRead):
        typeid = token_address = token_id = token
    else:
        typeid = _catch(token.str, "typeid")
        token_address = _catch(lambda: _address_value(r, token.ptr("address")))
        token_id = _catch(token.str, "id")

    def manager():
        m = o.ptr("_manager")
        if r.is_none(m):
            raise Fault("the proxy holds no manager (made by unpickling): its token's address is the manager's")
        return _address_value(r, _Obj(r, m).ptr("_address"))
    return ProxyFact(tn, addr, typeid, token_address, token_id, _catch(manager))


def _process(r, addr, tn):
    o = _Obj(r, addr)
    popen = _catch(o.ptr, "_popen")
    if isinstance(popen, NotRead):
        started = pid = rc = popen
    elif r.is_none(popen):
        started, pid, rc = False, NotRead("not started (no _popen)"), NotRead("not started (no _popen)")
    else:
        p = _Obj(r, popen)
        started, pid, rc = True, _catch(p.int, "pid"), _catch(p.int_or_none, "returncode")
    return ProcessFact(tn, addr, _catch(o.str, "_name"), started, pid, rc)


# concurrent.futures

def _cf_future(r, addr, tn):
    o = _Obj(r, addr)
    state = _catch(o.str, "_state")
    has_exc = _catch(lambda: not o.none("_exception"))
    if isinstance(state, NotRead) or isinstance(has_exc, NotRead):
        has_result = state if isinstance(state, NotRead) else has_exc
    else:
        has_result = state == "FINISHED" and not has_exc
    return FutureFact(tn, addr, state, has_result, has_exc)


def _broken(o):
    def read():
        p = o.ptr("_broken")
        info = o.r.type_of(p)
        if info.tp_name == "bool":
            return o.r.bool_value(p, info)
        return o.r.str_value(p, limit=512)[0]
    return _catch(read)


def _tpe(r, addr, tn):
    o = _Obj(r, addr)
    return ThreadPoolExecutorFact(tn, addr, _catch(o.int, "_max_workers"), _catch(o.len, "_threads"),
                                  _catch(o.len, "_work_queue"), _catch(o.bool, "_shutdown"), _broken(o))


def _ppe(r, addr, tn):
    o = _Obj(r, addr)
    processes = _catch(lambda: 0 if o.none("_processes") else o.len("_processes"))
    return ProcessPoolExecutorFact(tn, addr, _catch(o.int, "_max_workers"), processes,
                                   _catch(o.len, "_pending_work_items"), _broken(o))


def _args_text(r, p, limit=1024):
    v = r.value(p, 2)
    if v.kind == "str":
        return v.value + ("..." if v.truncated else "")
    if v.kind == "bytes":
        return v.value.decode("utf-8", "replace")
    if v.kind in ("list", "tuple"):
        parts = []
        for item in v.value:
            if isinstance(item, PyObj) and item.kind == "str":
                parts.append(item.value)
            elif isinstance(item, PyObj) and item.kind == "bytes":
                parts.append(item.value.decode("utf-8", "replace"))
            elif isinstance(item, PyObj) and item.kind in ("int", "float"):
                parts.append(str(item.value))
            else:
                parts.append("<%s>" % (item.type_name if isinstance(item, PyObj) else "unread"))
        text = " ".join(parts) + (" ..." if v.truncated else "")
        return text if len(text) <= limit else text[:limit] + "..."
    return "<%s>" % v.type_name


def _popen(r, addr, tn):
    o = _Obj(r, addr)
    return PopenFact(tn, addr, _catch(lambda: _args_text(r, o.ptr("args"))), _catch(o.int, "pid"),
                     _catch(o.int_or_none, "returncode"))


def _enum_name(enum_cls, value):
    try:
        return enum_cls(value).name
    except ValueError:
        return value


def _socket_fact(r, addr, tn):
    lay = r.L

    def head():
        raw = r.mem.read(addr + lay.sock_fd, lay.sock_timeout + 8 - lay.sock_fd)
        at = lambda off, fmt: struct.unpack_from(fmt, raw, off - lay.sock_fd)[0]
        return (at(lay.sock_fd, "<i"), at(lay.sock_family, "<i"), at(lay.sock_type, "<i"),
                at(lay.sock_proto, "<i"), at(lay.sock_timeout, "<q"))
    got = _catch(head)
    if isinstance(got, NotRead):
        return SocketFact(tn, addr, got, got, got, got, got, got)
    fd, family, stype, proto, timeout_ns = got
    if fd < -1 or family < 0 or family > 64:
        bad = NotRead("the socket struct looks wrong (fd %d, family %d)" % (fd, family))
        return SocketFact(tn, addr, bad, bad, bad, bad, bad, bad)
    timeout = None if timeout_ns < 0 else timeout_ns / 1e9
    attrs = _catch(r.attrs, addr)
    if not isinstance(attrs, NotRead) and "_closed" in attrs:     # socket.socket's slot
        closed = _catch(_Obj(r, addr).bool, "_closed")
    else:
        closed = fd == -1
    return SocketFact(tn, addr, fd, _enum_name(_socket.AddressFamily, family), _enum_name(_socket.SocketKind, stype),
                      proto, timeout, closed)


# asyncio

ASYNC_STATES = {0: "PENDING", 1: "CANCELLED", 2: "FINISHED"}


def _c_future_head(r, addr):
    lay = r.L
    state = r.mem.i32(addr + lay.fut_state)
    if state not in ASYNC_STATES:
        raise Fault("asyncio future at 0x%x has an unknown state %d" % (addr, state))
    return ASYNC_STATES[state], r.mem.ptr(addr + lay.fut_result), r.mem.ptr(addr + lay.fut_exception)


def _c_async_future(r, addr, tn):
    got = _catch(_c_future_head, r, addr)
    if isinstance(got, NotRead):
        return AsyncFutureFact(tn, addr, got, got, got, "C")
    state, result, exc = got
    return AsyncFutureFact(tn, addr, state, state == "FINISHED" and not exc, bool(exc), "C")


def _coro_name(r, coro):
    info = r.type_of(coro)
    name = r.type_name(info)
    if name in ("coroutine", "generator", "async_generator"):
        return r.str_value(r.mem.ptr(coro + r.L.gen_qualname), limit=256)[0]
    return "<%s>" % name


def _task_name(r, p):
    info = r.type_of(p)
    if info.flags & (1 << 24) and info.tp_name != "bool":     # 3.13 keeps a number until asked
        return "Task-%d" % r.int_value(p, info)
    return r.str_value(p, info, limit=256)[0]


def _c_async_task(r, addr, tn):
    got = _catch(_c_future_head, r, addr)
    state = got if isinstance(got, NotRead) else got[0]
    coro = _catch(lambda: _coro_name(r, r.mem.ptr(addr + r.L.task_coro)))
    name = _catch(lambda: _task_name(r, r.mem.ptr(addr + r.L.task_name)))
    return AsyncTaskFact(tn, addr, state, name, coro, "C")


def _py_async_future(r, addr, tn):
    o = _Obj(r, addr)
    state = _catch(o.str, "_state")
    has_exc = _catch(lambda: not o.none("_exception"))
    has_result = state if isinstance(state, NotRead) else has_exc if isinstance(has_exc, NotRead) \
        else (state == "FINISHED" and not has_exc)
    return AsyncFutureFact(tn, addr, state, has_result, has_exc, "Python")


def _py_async_task(r, addr, tn):
    o = _Obj(r, addr)
    return AsyncTaskFact(tn, addr, _catch(o.str, "_state"), _catch(lambda: _task_name(r, o.ptr("_name"))),
                         _catch(lambda: _coro_name(r, o.ptr("_coro"))), "Python")


def _async_event(r, addr, tn):
    o = _Obj(r, addr)
    return AsyncEventFact(tn, addr, _catch(o.bool, "_value"), _catch(o.len_or_zero, "_waiters"))


def _async_lock(r, addr, tn):
    o = _Obj(r, addr)
    return AsyncLockFact(tn, addr, _catch(o.bool, "_locked"), _catch(o.len_or_zero, "_waiters"))


def _async_semaphore(r, addr, tn):
    o = _Obj(r, addr)
    return AsyncSemaphoreFact(tn, addr, _catch(o.int, "_value"), _catch(o.len_or_zero, "_waiters"))


def _async_queue(r, addr, tn):
    o = _Obj(r, addr)
    return AsyncQueueFact(tn, addr, _catch(o.int, "_maxsize"), _catch(o.len, "_queue"),
                          _catch(o.int, "_unfinished_tasks"), _catch(o.len, "_getters"), _catch(o.len, "_putters"))


# plain values

def _text(r, addr, tn):
    got = _catch(r.str_value, addr)
    if isinstance(got, NotRead):
        return TextFact(tn, addr, got, got, got)
    return TextFact(tn, addr, *got)


def _tuple(r, addr, tn):
    v = r.value(addr, 2)
    items = v.value
    if 2 <= len(items) <= 4 and isinstance(items[0], PyObj) and isinstance(items[1], PyObj) \
            and items[0].kind in ("str", "bytes") and items[1].kind == "int" and 0 <= items[1].value < 65536:
        host = items[0].value if items[0].kind == "str" else items[0].value.decode("latin-1")
        return AddressFact(tn, addr, host, items[1].value)
    return ValueFact(tn, addr, v)


DECODERS = {
    "_thread.lock": _lock,
    "_thread.RLock": _crlock,
    "threading._RLock": _pyrlock,
    "threading.Condition": _condition,
    "threading.Semaphore": _semaphore,          # BoundedSemaphore is a subclass
    "threading.Event": _event,
    "threading.Barrier": _barrier,
    "threading.Thread": _thread,
    "queue.Queue": _queue,                      # LifoQueue, PriorityQueue
    "_queue.SimpleQueue": _simplequeue,
    "queue._PySimpleQueue": _pysimplequeue,
    "multiprocessing.queues.Queue": _mp_queue,  # JoinableQueue
    "multiprocessing.pool.Pool": _pool,         # ThreadPool
    "multiprocessing.managers.BaseProxy": _proxy,
    "multiprocessing.process.BaseProcess": _process,
    "multiprocessing.synchronize.Condition": _mp_condition,
    "multiprocessing.synchronize.Event": _mp_event,
    "multiprocessing.synchronize.Barrier": _mp_barrier,
    "multiprocessing.synchronize.SemLock": _semlock,   # Lock, RLock, Semaphore, BoundedSemaphore
    "_multiprocessing.SemLock": _semlock_c,
    "concurrent.futures._base.Future": _cf_future,
    "concurrent.futures.thread.ThreadPoolExecutor": _tpe,
    "concurrent.futures.process.ProcessPoolExecutor": _ppe,
    "subprocess.Popen": _popen,
    "_socket.socket": _socket_fact,
    "_asyncio.Task": _c_async_task,
    "_asyncio.Future": _c_async_future,
    "asyncio.tasks.Task": _py_async_task,
    "asyncio.futures.Future": _py_async_future,
    "asyncio.locks.Event": _async_event,
    "asyncio.locks.Lock": _async_lock,
    "asyncio.locks.Semaphore": _async_semaphore,
    "asyncio.queues.Queue": _async_queue,
    "str": _text,
    "tuple": _tuple,
}

PLAIN = {"int", "bool", "float", "bytes", "NoneType", "list", "dict", "set", "frozenset", "collections.deque"}


def _decode_at(r, addr):
    """The Fact for the object at addr (Fault if its type cannot be read; NotRead if no
    decoder knows it)."""
    info = r.type_of(addr)
    tn = r.type_name(info)
    for name in r.mro_names(info) or (tn,):
        decoder = DECODERS.get(name)
        if decoder is not None:
            return decoder(r, addr, tn)
        if name in PLAIN:
            return ValueFact(tn, addr, _catch(r.value, addr, 2))
    return NotRead("no decoder for %s" % tn)


def decode_with(reader, addr):
    """decode() with a reader the caller keeps (several objects of one process and moment)."""
    return _catch(_decode_at, reader, addr)


def decode(pid, addr, version):
    """Typed facts about the object at addr (an id(), py-spy's `addr` of a local) in process
    pid of Python `version` (major, minor): a Fact, or NotRead with the reason."""
    layout = layout_for(version)
    if isinstance(layout, NotRead):
        return layout
    try:
        reader = reader_for(pid, version)
    except Fault as e:
        return NotRead(str(e))
    try:
        return decode_with(reader, addr)
    finally:
        reader.close()


# ---- sentences ----------------------------------------------------------------------------

def _v(x, unread="?"):
    return unread if isinstance(x, NotRead) else x


def _plural(n, word):
    if isinstance(n, NotRead):
        return "? %ss" % word
    return "%d %s%s" % (n, word, "" if n == 1 else "s")


def _short(tn):
    return tn.rsplit(".", 1)[-1]


def _waiting(f, who):
    extra = ""
    if _v(f.getters_waiting, 0):
        extra += ", %s waiting to get" % _plural(f.getters_waiting, who)
    if _v(f.putters_waiting, 0):
        extra += ", %s waiting to put" % _plural(f.putters_waiting, who)
    return extra


def _its_lock(lock):
    if isinstance(lock, (LockFact, RLockFact)):
        kind = "lock" if isinstance(lock, LockFact) else "RLock"
        if lock.locked is True:
            owner = " by thread %s" % lock.owner if isinstance(lock, RLockFact) and lock.owner else ""
            return "its %s held%s" % (kind, owner)
        return "its %s free" % kind if lock.locked is False else "its %s not read" % kind
    if isinstance(lock, NotRead):
        return "its lock not read"
    return "its lock a %s" % _short(lock.type_name)


def describe(fact):
    """One short plain sentence about a Fact (or why there is none)."""
    if isinstance(fact, NotRead):
        return "Not read: %s" % fact.reason
    f, name = fact, _short(fact.type_name)
    if isinstance(f, LockFact):
        return "Lock: %s" % {True: "held", False: "free"}.get(_v(f.locked), "state not read")
    if isinstance(f, RLockFact):
        if f.locked is True:
            return "RLock: held by thread %s (%s deep)" % (_v(f.owner), _v(f.count))
        return "RLock: free" if f.locked is False else "RLock: state not read"
    if isinstance(f, ConditionFact):
        return "Condition: %s waiting, %s" % (_plural(f.waiters, "thread"), _its_lock(f.lock))
    if isinstance(f, SemaphoreFact):
        bound = "" if isinstance(f.initial_value, NotRead) else " of %s" % f.initial_value
        return "%s: value %s%s, %s waiting" % (name, _v(f.value), bound, _plural(f.waiters, "thread"))
    if isinstance(f, EventFact):
        state = {True: "set", False: "not set"}.get(_v(f.is_set), "state not read")
        return "Event: %s, %s waiting" % (state, _plural(f.waiters, "thread"))
    if isinstance(f, BarrierFact):
        state = "" if _v(f.state) == "filling" else " (%s)" % _v(f.state)
        return "Barrier: %s of %s parties arrived%s" % (_v(f.count), _v(f.parties), state)
    if isinstance(f, ThreadFact):
        if f.started is False:
            return "Thread %r: not started" % _v(f.name)
        alive = {True: "alive", False: "not alive"}.get(_v(f.alive), "alive or not unknown")
        daemon = ", daemon" if f.daemon is True else ""
        return "Thread %r (ident %s): %s%s" % (_v(f.name), _v(f.ident), alive, daemon)
    if isinstance(f, QueueFact):
        size, maxsize = _v(f.size), _v(f.maxsize)
        bound = "of maxsize %s " % maxsize if maxsize not in (0, "?") and not (isinstance(maxsize, int) and maxsize < 0) \
            else "(unbounded) "
        full = " (full)" if isinstance(size, int) and isinstance(maxsize, int) and 0 < maxsize <= size else ""
        return "%s: %s %sitems%s, %s unfinished tasks%s" % (name, size, bound, full, _v(f.unfinished_tasks),
                                                             _waiting(f, "thread"))
    if isinstance(f, SimpleQueueFact):
        return "SimpleQueue: %s" % _plural(f.size, "item")
    if isinstance(f, SemLockFact):
        if isinstance(f.value, NotRead):
            return "%s (multiprocessing): semaphore not read" % name
        if name in ("Lock", "RLock"):
            state = "held" if f.value == 0 else "free"
            mine = " (by this process, %s deep)" % f.count if isinstance(f.count, int) and f.count > 0 else ""
            return "%s (multiprocessing): %s%s, %s blocked" % (name, state, mine, _plural(f.sem_waiters, "waiter"))
        return "%s (multiprocessing): value %s of max %s, %s blocked" % (name, f.value, _v(f.maxvalue),
                                                                           _plural(f.sem_waiters, "waiter"))
    if isinstance(f, MPConditionFact):
        return "Condition (multiprocessing): %s" % _plural(f.waiters, "waiter")
    if isinstance(f, MPEventFact):
        state = {True: "set", False: "not set"}.get(_v(f.is_set), "state not read")
        return "Event (multiprocessing): %s, %s" % (state, _plural(f.waiters, "waiter"))
    if isinstance(f, MPQueueFact):
        feeder = {True: "feeder thread started", False: "no feeder thread"}.get(_v(f.feeder_thread), "feeder unknown")
        closed = ", closed" if f.closed is True else ""
        unfinished = "" if isinstance(f.unfinished_tasks, NotRead) else ", %s unfinished tasks" % f.unfinished_tasks
        return "%s (multiprocessing): %s of maxsize %s items in flight, %s buffered here, %s%s%s" % (
            name, _v(f.in_flight), _v(f.maxsize), _v(f.buffered), feeder, closed, unfinished)
    if isinstance(f, PoolFact):
        return "%s: %s, %s of %s worker processes, %s tasks queued, %s results outstanding" % (
            name, _v(f.state), _v(f.workers), _v(f.processes), _v(f.task_queue), _v(f.outstanding))
    if isinstance(f, ProxyFact):
        return "Manager proxy %s (id %s) of the manager at %s" % (_v(f.typeid), _v(f.token_id), _v(f.token_address))
    if isinstance(f, ProcessFact):
        if f.started is False:
            return "Process %r: not started" % _v(f.name)
        rc = "running or not yet waited for" if f.returncode is None else "exited %s" % _v(f.returncode)
        return "Process %r (pid %s): %s" % (_v(f.name), _v(f.pid), rc)
    if isinstance(f, FutureFact):
        extra = " with an exception" if f.has_exception is True else " with a result" if f.has_result is True else ""
        return "Future: %s%s" % (_v(f.state), extra)
    if isinstance(f, ThreadPoolExecutorFact):
        return "ThreadPoolExecutor: %s of %s threads, %s items queued%s%s" % (
            _v(f.threads), _v(f.max_workers), _v(f.queued), ", shut down" if f.shutdown is True else "",
            ", broken" if _v(f.broken, False) not in (False, "?") else "")
    if isinstance(f, ProcessPoolExecutorFact):
        return "ProcessPoolExecutor: %s of %s processes, %s work items pending%s" % (
            _v(f.processes), _v(f.max_workers), _v(f.pending_work_items),
            ", broken" if _v(f.broken, False) not in (False, "?") else "")
    if isinstance(f, PopenFact):
        rc = "running or not yet waited for" if f.returncode is None else "exited %s" % _v(f.returncode)
        return "Popen %r (pid %s): %s" % (_v(f.args), _v(f.pid), rc)
    if isinstance(f, SocketFact):
        if f.fd == -1:
            return "socket: closed"
        timeout = "blocking" if f.timeout is None else "timeout %ss" % _v(f.timeout)
        return "socket fd %s (%s, %s), %s" % (_v(f.fd), _v(f.family), _v(f.type), timeout)
    if isinstance(f, AddressFact):
        return "address %s:%s" % (_v(f.host), _v(f.port))
    if isinstance(f, AsyncFutureFact):
        extra = " with an exception" if f.has_exception is True else " with a result" if f.has_result is True else ""
        return "asyncio Future: %s%s" % (_v(f.state), extra)
    if isinstance(f, AsyncTaskFact):
        return "asyncio Task %r: %s, running %s" % (_v(f.name), _v(f.state), _v(f.coro))
    if isinstance(f, AsyncEventFact):
        state = {True: "set", False: "not set"}.get(_v(f.is_set), "state not read")
        return "asyncio Event: %s, %s waiting" % (state, _plural(f.waiters, "task"))
    if isinstance(f, AsyncLockFact):
        state = {True: "held", False: "free"}.get(_v(f.locked), "state not read")
        return "asyncio Lock: %s, %s waiting" % (state, _plural(f.waiters, "task"))
    if isinstance(f, AsyncSemaphoreFact):
        return "asyncio %s: value %s, %s waiting" % (name, _v(f.value), _plural(f.waiters, "task"))
    if isinstance(f, AsyncQueueFact):
        maxsize = _v(f.maxsize)
        bound = "of maxsize %s " % maxsize if isinstance(maxsize, int) and maxsize > 0 else "(unbounded) "
        return "asyncio %s: %s %sitems, %s unfinished tasks%s" % (name, _v(f.size), bound, _v(f.unfinished_tasks),
                                                                 _waiting(f, "task"))
    if isinstance(f, TextFact):
        text = _v(f.text)
        shown = text if len(text) <= 80 else text[:77] + "..."
        return "str of %s characters: %r" % (_v(f.length), shown)
    if isinstance(f, ValueFact):
        v = f.value
        if isinstance(v, NotRead):
            return "%s: not read (%s)" % (name, v.reason)
        shown = repr(v.py())
        return "%s: %s" % (name, shown if len(shown) <= 80 else shown[:77] + "...")
    return "%s at 0x%x" % (f.type_name, f.addr)
