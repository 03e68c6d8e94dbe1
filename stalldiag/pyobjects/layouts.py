"""Where fields lie in CPython's objects, per version (x86_64 Linux, release builds, not the
free-threaded ones), and how to tell a process's Python version from outside.

The numbers come from each version's headers (Include/object.h, cpython/object.h,
cpython/unicodeobject.h, internal/pycore_dict.h, internal/pycore_object.h) and, for structs
private to a C module (Modules/_threadmodule.c, _queuemodule.c, socketmodule.h,
_multiprocessing/semaphore.c, _asynciomodule.c, Objects/genobject.c), from those modules'
sources, each checked against a live process of that version (tests/live/test_pyobjects_live.py).
"""
import os
import re

from ..records import typed_record
from .. import procfs
from .memory import NotRead

SUPPORTED = ((3, 8), (3, 9), (3, 10), (3, 11), (3, 12), (3, 13))

# tp_flags bits (Include/object.h)
TPFLAGS_INLINE_VALUES = 1 << 2     # 3.13
TPFLAGS_MANAGED_WEAKREF = 1 << 3   # 3.12+
TPFLAGS_MANAGED_DICT = 1 << 4      # 3.11+
TPFLAGS_HEAPTYPE = 1 << 9
TPFLAGS_LONG_SUBCLASS = 1 << 24
TPFLAGS_LIST_SUBCLASS = 1 << 25
TPFLAGS_TUPLE_SUBCLASS = 1 << 26
TPFLAGS_BYTES_SUBCLASS = 1 << 27
TPFLAGS_UNICODE_SUBCLASS = 1 << 28
TPFLAGS_DICT_SUBCLASS = 1 << 29
TPFLAGS_TYPE_SUBCLASS = 1 << 31


@typed_record(frozen=True)
class Layout:
    version: tuple
    # PyObject / PyVarObject
    ob_type: int = 8
    ob_size: int = 16
    # PyTypeObject (the same offsets 3.8-3.13)
    tp_name: int = 24
    tp_basicsize: int = 32
    tp_itemsize: int = 40
    tp_flags: int = 168
    tp_members: int = 240
    tp_base: int = 256
    tp_dict: int = 264
    tp_dictoffset: int = 288
    tp_mro: int = 344
    # PyHeapTypeObject
    ht_qualname: int = 0
    ht_cached_keys: int = 0
    # str: data of a compact ASCII string, of a compact non-ASCII one, and the data pointer
    # of a legacy (non-compact) PyUnicodeObject
    unicode_ascii_data: int = 0
    unicode_compact_data: int = 0
    unicode_legacy_data: int = 0
    # int: 3.12+ keep sign and size in lv_tag, before that in ob_size
    long_lv_tag: bool = False
    # dict: keys object form ("3.8": dk_size/dk_lookup; "3.11": dk_log2_size, dk_kind) and
    # where values start in a PyDictValues (3.13 has a 4-byte header before them)
    dict_keys_form: str = "3.8"
    dict_values_start: int = 0
    # instance dict: "offset" (tp_dictoffset), "3.11" (values at -32, dict at -24),
    # "3.12" (PyDictOrValues at -24), "3.13" (inline values after the header, dict at -24)
    managed_dict: str = "offset"
    # _thread.lock / _thread.RLock (Modules/_threadmodule.c)
    lock_locked: int = 32          # char locked
    rlock_owner: int = 24          # unsigned long rlock_owner
    rlock_count: int = 32          # unsigned long rlock_count
    # _thread._ThreadHandle (3.13): PyObject_HEAD; ThreadHandle *handle
    thread_handle_ptr: int = 16
    thread_handle_ident: int = 32    # ThreadHandle.ident
    thread_handle_state: int = 52    # ThreadHandle.state (1 not started .. 4 done)
    thread_handle_exiting: int = 57  # ThreadHandle.thread_is_exiting (PyEvent, uint8)
    # _queue.SimpleQueue: "list" (PyObject *lst; Py_ssize_t lst_pos) or "ring" (3.13 RingBuf)
    simplequeue_form: str = "list"
    simplequeue_lst: int = 32
    simplequeue_lst_pos: int = 40
    simplequeue_num_items: int = 56
    # _socket.socket (Modules/socketmodule.h PySocketSockObject)
    sock_fd: int = 16
    sock_family: int = 20
    sock_type: int = 24
    sock_proto: int = 28
    sock_timeout: int = 40         # _PyTime_t nanoseconds, -1: blocking
    # _multiprocessing.SemLock (Modules/_multiprocessing/semaphore.c SemLockObject)
    semlock_handle: int = 16       # sem_t *
    semlock_last_tid: int = 24
    semlock_count: int = 32
    semlock_maxvalue: int = 36
    semlock_kind: int = 40
    semlock_name: int = 48
    # memoryview: view.buf (Include/cpython/memoryobject.h)
    memoryview_buf: int = 56
    # _asyncio.Future / _asyncio.Task (Modules/_asynciomodule.c FutureObj_HEAD)
    fut_loop: int = 16
    fut_exception: int = 48
    fut_result: int = 0
    fut_state: int = 0             # fut_state enum: 0 pending, 1 cancelled, 2 finished
    task_coro: int = 0
    task_name: int = 0
    # coroutine / generator: gi_qualname (Include/cpython/genobject.h)
    gen_qualname: int = 0


_LAYOUTS = {
    (3, 8): Layout((3, 8), ht_qualname=864, ht_cached_keys=872,
                   unicode_ascii_data=48, unicode_compact_data=72, unicode_legacy_data=72,
                   fut_result=56, fut_state=72, task_coro=112, task_name=120, gen_qualname=56),
    (3, 9): Layout((3, 9), ht_qualname=856, ht_cached_keys=864,
                   unicode_ascii_data=48, unicode_compact_data=72, unicode_legacy_data=72,
                   fut_result=56, fut_state=80, task_coro=152, task_name=160, gen_qualname=56),
    (3, 10): Layout((3, 10), ht_qualname=864, ht_cached_keys=872,
                    unicode_ascii_data=48, unicode_compact_data=72, unicode_legacy_data=72,
                    fut_result=64, fut_state=88, task_coro=160, task_name=168, gen_qualname=48),
    (3, 11): Layout((3, 11), ht_qualname=864, ht_cached_keys=872,
                    unicode_ascii_data=48, unicode_compact_data=72, unicode_legacy_data=72,
                    dict_keys_form="3.11", managed_dict="3.11",
                    fut_result=64, fut_state=88, task_coro=136, task_name=144, gen_qualname=40),
    (3, 12): Layout((3, 12), ht_qualname=872, ht_cached_keys=880,
                    unicode_ascii_data=40, unicode_compact_data=56, unicode_legacy_data=56,
                    long_lv_tag=True, dict_keys_form="3.11", managed_dict="3.12",
                    fut_result=64, fut_state=88, task_coro=136, task_name=144, gen_qualname=32),
    (3, 13): Layout((3, 13), ht_qualname=872, ht_cached_keys=880,
                    unicode_ascii_data=40, unicode_compact_data=56, unicode_legacy_data=56,
                    long_lv_tag=True, dict_keys_form="3.11", dict_values_start=8, managed_dict="3.13",
                    simplequeue_form="ring",
                    fut_result=64, fut_state=96, task_coro=120, task_name=128, gen_qualname=32),
}


def layout_for(version):
    """The Layout of (major, minor), or NotRead saying why there is none."""
    try:
        key = (int(version[0]), int(version[1]))
    except (TypeError, ValueError, IndexError):
        return NotRead("version %r is not (major, minor)" % (version,))
    layout = _LAYOUTS.get(key)
    if layout is None:
        return NotRead("Python %d.%d: no object layout known (supported: 3.8-3.13)" % key)
    return layout


_PYTHON_NAME = re.compile(r"(?:^|/)(?:lib)?python(\d)\.(\d+)(t?)(?:[^/]*)$")


def version_from_path(path):
    """(major, minor) from a libpython or python binary's path ('.../libpython3.12.so.1.0',
    '.../bin/python3.11'), None if the name tells none; NotRead for a free-threaded build."""
    m = _PYTHON_NAME.search(path.strip())
    if not m:
        return None
    if m.group(3) == "t":
        return NotRead("free-threaded build (%s): its object layout is not supported" % os.path.basename(path))
    return int(m.group(1)), int(m.group(2))


def version_from_maps(pid):
    """The target's Python version from the files it has mapped (/proc/PID/maps): libpython3.X
    when Python is a shared library, else the python3.X executable.  Returns (major, minor) or
    NotRead."""
    try:
        maps = procfs.read(int(pid), "maps")
    except procfs.ProcfsError as e:
        return NotRead(str(e))
    found = {}
    for line in maps.splitlines():
        parts = line.split(None, 5)
        if len(parts) < 6 or "python" not in parts[5]:
            continue
        path = parts[5]
        version = version_from_path(path.replace(" (deleted)", ""))
        if version is not None:
            found.setdefault(path, version)
    libs = {v for p, v in found.items() if "libpython" in os.path.basename(p)}
    exes = {v for p, v in found.items() if "libpython" not in os.path.basename(p)}
    for candidates in (libs, exes):
        if len(candidates) == 1:
            return next(iter(candidates))
        if len(candidates) > 1:
            if any(isinstance(v, NotRead) for v in candidates):
                return next(v for v in candidates if isinstance(v, NotRead))
            return NotRead("more than one Python mapped: %s" % sorted(candidates))
    try:
        exe = procfs.exe(int(pid))
    except procfs.ProcfsError as e:
        return NotRead("no python mapped in /proc/%s/maps, and its executable: %s" % (pid, e))
    version = version_from_path(exe)
    if version is None:
        return NotRead("no libpython3.X or python3.X mapped in process %s (exe %s)" % (pid, exe))
    return version
