"""stalldiag.pyobjects.reader on handcrafted memory: each version's layout of str, int, float,
bytes, tuple, list, dict, set, deque, class instances (split values, materialized dicts, 3.13
inline values, __slots__), type names, and every way a pointer can be wrong."""
import random
import struct

import pytest

from stalldiag.pyobjects.fakes import FakeMemory, FakeProcess
from stalldiag.pyobjects import NotRead
from stalldiag.pyobjects.layouts import SUPPORTED
from stalldiag.pyobjects.memory import BufferMemory, CachedMemory, Fault
from stalldiag.pyobjects.reader import ObjectReader, PyObj, TypeCache

VERSIONS = [pytest.param(v, id="%d.%d" % v) for v in SUPPORTED]
MANAGERS = "multiprocessing.managers"    # (module-level: the fast layer's live-test detector reads test bodies)


def reader(fake, **kw):
    return ObjectReader(fake.mem, fake.L, **kw)


def value(fake, addr, depth=2, **kw):
    try:
        return reader(fake, **kw).value(addr, depth)
    except Fault as e:
        return NotRead(str(e))


@pytest.mark.parametrize("version", VERSIONS)
def test_ints(version):
    f = FakeProcess(version)
    for n in (0, 1, -1, 7, 2 ** 30, 2 ** 30 - 1, -(2 ** 70) + 3, 12345678901234567890123):
        got = value(f, f.int(n))
        assert (got.kind, got.value, got.type_name) == ("int", n, "int")
    assert value(f, f.true).value is True and value(f, f.false).value is False
    assert value(f, f.none).kind == "none"
    assert value(f, f.float(2.5)).value == 2.5


@pytest.mark.parametrize("version", VERSIONS)
def test_an_int_over_the_digit_bound_is_not_read(version):
    f = FakeProcess(version)
    got = value(f, f.int(2 ** 3000))
    assert isinstance(got, NotRead) and "digits" in got.reason


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("text", ["", "plain ascii", "caf\u00e9 latin-1", "snow \u2603 ucs2", "clef \U0001d11e ucs4"])
def test_strings(version, text):
    f = FakeProcess(version)
    got = value(f, f.str(text))
    assert (got.kind, got.value, got.length, got.truncated) == ("str", text, len(text), False)


@pytest.mark.parametrize("version", VERSIONS)
def test_a_long_string_is_cut_at_the_bound(version):
    f = FakeProcess(version)
    got = value(f, f.str("/data/" + "x" * 10000), max_str=4096)
    assert (len(got.value), got.length, got.truncated) == (4096, 10006, True)
    wide = value(f, f.str("\u2603" * 3000), max_str=4096)      # 2 bytes a character
    assert (len(wide.value), wide.length, wide.truncated) == (2048, 3000, True)


@pytest.mark.parametrize("version", [(3, 8), (3, 11)], ids=["3.8", "3.11"])
def test_a_string_not_made_ready_is_not_read(version):
    f = FakeProcess(version)
    got = value(f, f.str("abc", ready=False))
    assert isinstance(got, NotRead) and "not made ready" in got.reason


@pytest.mark.parametrize("version", VERSIONS)
def test_a_string_with_a_wrong_kind_or_ascii_flag_is_not_read(version):
    f = FakeProcess(version)
    bad_kind = f.str("abc")
    state = struct.unpack_from("<I", f.mem.data, bad_kind + 32 - f.BASE)[0]
    f.w(bad_kind + 32, "I", (state & ~(7 << 2)) | (3 << 2))
    assert isinstance(value(f, bad_kind), NotRead)
    lying = f.str("abc")
    f.wbytes(lying + f.L.unicode_ascii_data, b"\xe9")
    assert isinstance(value(f, lying), NotRead)


@pytest.mark.parametrize("version", VERSIONS)
def test_bytes_tuple_list(version):
    f = FakeProcess(version)
    assert value(f, f.bytes(b"a\x00b")).value == b"a\x00b"
    t = value(f, f.tuple([f.str("127.0.0.1"), f.int(8080)]))
    assert (t.kind, t.py()) == ("tuple", ("127.0.0.1", 8080))
    lst = value(f, f.list([f.int(i) for i in range(100)]), max_items=10)
    assert (lst.length, lst.truncated, lst.py()) == (100, True, list(range(10)))


@pytest.mark.parametrize("version", VERSIONS)
def test_dicts(version):
    f = FakeProcess(version)
    d = value(f, f.dict([(f.str("k"), f.int(1)), (f.int(2), f.str("v"))]))
    assert (d.kind, d.length, d.py()) == ("dict", 2, {"k": 1, 2: "v"})
    # a table of 512 slots: two-byte indices before the entries
    big = f.dict([(f.str("n%d" % i), f.int(i)) for i in range(300)], dk_size=512)
    got = value(f, big, max_items=400)
    assert got.py() == {"n%d" % i: i for i in range(300)}


@pytest.mark.parametrize("version", VERSIONS)
def test_sets_skip_dummies(version):
    f = FakeProcess(version)
    got = value(f, f.set([f.int(1), f.int(2)], dummies=2))
    assert (got.kind, got.length, sorted(got.py())) == ("set", 2, [1, 2])


@pytest.mark.parametrize("version", VERSIONS)
def test_a_deque_over_two_blocks(version):
    f = FakeProcess(version)
    got = value(f, f.deque([f.int(i) for i in range(10)], leftindex=60), max_items=64)
    assert (got.kind, got.length, got.py()) == ("deque", 10, list(range(10)))


@pytest.mark.parametrize("version", VERSIONS)
def test_instance_with_split_values(version):
    f = FakeProcess(version)
    cls = f.heap_type("Barrier", "threading")
    keys = f.shared_keys(cls, ["_cond", "_parties", "_count", "_state"])
    obj = f.instance(cls, {"_parties": f.int(3), "_count": f.int(1), "_state": f.int(0)}, keys=keys)
    got = value(f, obj)
    assert got.type_name == "threading.Barrier" and got.kind == "object"
    assert got.py() == {"_parties": 3, "_count": 1, "_state": 0}      # _cond never set: left out


@pytest.mark.parametrize("version", VERSIONS)
def test_instance_with_a_dict(version):
    """3.8-3.10 a combined dict at tp_dictoffset; 3.11/3.12 a materialized dict before the
    header; 3.13 invalid inline values and the dict."""
    f = FakeProcess(version)
    cls = f.heap_type("Thing", "pkg.mod")
    keys = f.shared_keys(cls, ["a"])
    obj = f.instance(cls, {"a": f.int(1), "b": f.str("two")}, keys=keys, materialize=True)
    assert value(f, obj).py() == {"a": 1, "b": "two"}


@pytest.mark.parametrize("version", VERSIONS)
def test_slots(version):
    f = FakeProcess(version)
    token = f.heap_type("Token", MANAGERS, slots=("typeid", "address", "id"))
    obj = f.instance(token, {}, slots={"typeid": f.str("Queue"), "id": f.str("7f00")})
    assert value(f, obj).py() == {"typeid": "Queue", "id": "7f00"}


@pytest.mark.parametrize("version", VERSIONS)
def test_class_attribute_default(version):
    f = FakeProcess(version)
    cls = f.heap_type("Future", "asyncio.futures", class_attrs={"_state": f.str("PENDING")})
    f.shared_keys(cls, ["_loop"])
    obj = f.instance(cls, {"_loop": f.none}, keys=f.r64(cls + f.L.ht_cached_keys))
    r = reader(f)
    assert r.str_value(r.attr(obj, "_state"))[0] == "PENDING"
    with pytest.raises(Fault):
        r.attr(obj, "_nothing")


@pytest.mark.parametrize("version", VERSIONS)
def test_type_names_and_mro(version):
    f = FakeProcess(version)
    base = f.heap_type("Event", "threading")
    sub = f.heap_type("MyEvent", "__main__", bases=(base,))
    builtin = f.heap_type("Exc", "builtins")
    r = reader(f)
    info = r.type_info(sub)
    assert r.type_name(info) == "__main__.MyEvent"
    assert r.mro_names(info) == ("__main__.MyEvent", "threading.Event", "object")
    assert r.type_name(r.type_info(f.deque_type)) == "collections.deque"
    assert r.type_name(r.type_info(builtin)) == "Exc"


@pytest.mark.parametrize("version", VERSIONS)
def test_nesting_is_bounded(version):
    f = FakeProcess(version)
    lst = f.list([0])
    f.w(f.r64(lst + 24), "Q", lst)       # a list that holds itself
    got = value(f, lst, depth=3)
    assert got.value[0].value[0].value[0].kind == "ref"


@pytest.mark.parametrize("version", VERSIONS)
def test_bad_pointers_are_not_read(version):
    f = FakeProcess(version)
    s = f.str("ok")
    not_a_type = f.obj(f.int(5), 16)                 # its "type" is an int
    freed = f.obj(f.int_type, 32, refcnt=0)
    unprintable = f.static_type("bad\x01name", 0)
    odd = f.obj(unprintable, 16)
    huge = f.static_type("huge", 0, basicsize=1 << 40)
    cases = {"null": 0, "small": 8, "unaligned": s + 4, "unmapped": 0x10000000, "kernel": 1 << 48,
             "not a type": not_a_type, "freed": freed, "unprintable type name": odd, "huge type": f.obj(huge, 16)}
    for what, addr in cases.items():
        got = value(f, addr)
        assert isinstance(got, NotRead), what


@pytest.mark.parametrize("version", VERSIONS)
def test_a_fault_inside_an_object_is_not_read(version):
    f = FakeProcess(version)
    text = "y" * 3000
    s = f.str(text)
    f.mem.holes.append((s + 2048, s + 2056))
    got = value(f, s)
    assert isinstance(got, NotRead) and "EFAULT" in got.reason
    t = f.tuple([f.int(1), s])
    mixed = value(f, t)                               # the tuple reads; its unreadable item says why
    assert mixed.value[0].value == 1 and isinstance(mixed.value[1], NotRead)


@pytest.mark.parametrize("version", VERSIONS)
def test_corrupt_containers_are_not_read(version):
    f = FakeProcess(version)
    lst = f.list([f.int(1)])
    f.w(lst + 16, "q", 1 << 50)
    assert isinstance(value(f, lst), NotRead)
    d = f.dict([(f.str("a"), f.int(1))])
    keys = f.r64(d + 32)
    f.w(keys + 8, "q" if f.L.dict_keys_form == "3.8" else "B", 7)       # not a power of two / too small
    assert isinstance(value(f, d), NotRead)


@pytest.mark.parametrize("version", VERSIONS)
def test_random_garbage_never_raises(version):
    """Whatever the memory holds, a read gives a value or NotRead, never an exception."""
    rng = random.Random(1234 + version[1])
    for trial in range(30):
        f = FakeProcess(version, size=1 << 18)
        objs = [f.str("abc"), f.int(99), f.dict([(f.str("k"), f.int(1))]), f.list([f.int(1), f.str("x")]),
                f.deque([f.int(i) for i in range(5)]), f.set([f.int(3)])]
        cls = f.heap_type("C", "m")
        objs.append(f.instance(cls, {"a": f.int(1)}))
        used = f.top - f.BASE
        for _ in range(200):                          # flip bytes anywhere in what was built
            i = rng.randrange(used)
            f.mem.data[i] = rng.randrange(256)
        for addr in objs + [f.BASE + rng.randrange(used) for _ in range(20)]:
            got = value(f, addr)
            assert isinstance(got, (PyObj, NotRead))


def test_cached_memory_reads_blocks_and_falls_back_at_a_hole():
    mem = FakeMemory(0x10000, 8192)
    mem.data[100:104] = b"abcd"
    cached = CachedMemory(mem)
    assert cached.read(0x10000 + 100, 4) == b"abcd"
    assert cached.read(0x10000 + 104, 4) == b"\0" * 4
    assert mem.reads == 1                             # one block served both
    mem.holes.append((0x10000 + 1500, 0x10000 + 1600))
    fresh = CachedMemory(mem)
    assert fresh.read(0x10000 + 1100, 8) == b"\0" * 8  # its block has the hole: the exact read
    with pytest.raises(Fault):
        fresh.read(0x10000 + 1550, 8)
    assert cached.read(0x10000 + 1000, 100) == b"\0" * 100      # across two blocks


def test_buffer_memory_is_a_snapshot_reader():
    mem = BufferMemory({0x5000: b"\x01\x02\x03\x04"})
    assert mem.u32(0x5000) == 0x04030201
    with pytest.raises(Fault):
        mem.read(0x5002, 4)


@pytest.mark.parametrize("version", VERSIONS)
def test_a_type_kept_between_readers_is_trusted_only_while_unchanged(version):
    f = FakeProcess(version)
    cls = f.heap_type("Event", "threading")
    obj = f.instance(cls, {"_flag": f.true})
    types = TypeCache()
    first = reader(f, types=types)
    assert first.type_name(first.type_of(obj)) == "threading.Event"
    second = reader(f, types=types)
    reads = f.mem.reads
    assert second.type_name(second.type_of(obj)) == "threading.Event"
    assert f.mem.reads - reads <= 3                   # the object, the type's identifying words
    f.w(cls + f.L.ht_qualname, "Q", f.str("Other"))  # the type changed: read afresh
    third = reader(f, types=types)
    assert third.type_name(third.type_of(obj)) == "threading.Other"
