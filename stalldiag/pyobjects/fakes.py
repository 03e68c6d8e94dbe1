"""Objects built as bytes, laid out as a CPython version lays them out: for the unit tests of
stalldiag.pyobjects and for replays that need a memory image without a live process.

FakeProcess gives types, str, int, float, tuple, list, dict (combined and split), deque, set and
class instances (with each version's instance-dict scheme), in a FakeMemory the reader reads like
a process's.  Only what the reader looks at is filled in; nothing here touches a process."""
import struct

from stalldiag.pyobjects import layouts as L
from stalldiag.pyobjects.layouts import layout_for
from stalldiag.pyobjects.memory import Fault, Memory

TP_READY = 1 << 12


class FakeMemory(Memory):
    """One bytearray at `base`; reads outside it fail as EFAULT would; `holes` are unmapped."""

    def __init__(self, base, size):
        self.base = base
        self.data = bytearray(size)
        self.reads = 0
        self.holes = []          # [(start, end)] that read as unmapped

    def read(self, addr, n):
        self._check(addr, n)
        self.reads += 1
        for start, end in self.holes:
            if addr < end and addr + n > start:
                raise Fault("reading %d bytes at 0x%x: EFAULT (a hole)" % (n, addr))
        if addr < self.base or addr + n > self.base + len(self.data):
            raise Fault("reading %d bytes at 0x%x: EFAULT (not mapped)" % (n, addr))
        return bytes(self.data[addr - self.base:addr - self.base + n])


class FakeProcess:
    BASE = 0x7F0000000000

    def __init__(self, version, size=1 << 20):
        self.version = version
        self.L = layout_for(version)
        self.mem = FakeMemory(self.BASE, size)
        self.top = self.BASE + 0x100
        self.type_type = self.static_type("type", L.TPFLAGS_TYPE_SUBCLASS, meta="self")
        self.object_type = self.static_type("object", 0)
        self.int_type = self.static_type("int", L.TPFLAGS_LONG_SUBCLASS, basicsize=24, itemsize=4)
        self.bool_type = self.static_type("bool", L.TPFLAGS_LONG_SUBCLASS, basicsize=24, itemsize=4)
        self.float_type = self.static_type("float", 0, basicsize=24)
        self.str_type = self.static_type("str", L.TPFLAGS_UNICODE_SUBCLASS, basicsize=self.L.unicode_compact_data)
        self.bytes_type = self.static_type("bytes", L.TPFLAGS_BYTES_SUBCLASS, basicsize=33, itemsize=1)
        self.tuple_type = self.static_type("tuple", L.TPFLAGS_TUPLE_SUBCLASS, basicsize=24, itemsize=8)
        self.list_type = self.static_type("list", L.TPFLAGS_LIST_SUBCLASS, basicsize=40)
        self.dict_type = self.static_type("dict", L.TPFLAGS_DICT_SUBCLASS, basicsize=48)
        self.set_type = self.static_type("set", 0, basicsize=200)
        self.none_type = self.static_type("NoneType", 0)
        self.deque_type = self.static_type("collections.deque", 0, basicsize=632)
        self.none = self.obj(self.none_type, 16)
        self.true = self.int(1, tp=self.bool_type)
        self.false = self.int(0, tp=self.bool_type)
        for t in (self.type_type, self.object_type, self.int_type, self.bool_type, self.float_type, self.str_type,
                  self.bytes_type, self.tuple_type, self.list_type, self.dict_type, self.set_type, self.none_type,
                  self.deque_type):
            self.set_mro(t, [t] if t == self.object_type else [t, self.object_type])

    # ---- raw memory ---------------------------------------------------------------------

    def alloc(self, size, align=16, before=0):
        """Zeroed room for size bytes (plus `before` bytes in front: a pre-header)."""
        self.top = (self.top + before + align - 1) // align * align
        addr = self.top
        self.top += size + 16
        if self.top > self.BASE + len(self.mem.data):
            raise MemoryError("fake address space is full")
        return addr

    def w(self, addr, fmt, *values):
        struct.pack_into("<" + fmt, self.mem.data, addr - self.BASE, *values)

    def wbytes(self, addr, data):
        self.mem.data[addr - self.BASE:addr - self.BASE + len(data)] = data

    def r64(self, addr):
        return struct.unpack_from("<Q", self.mem.data, addr - self.BASE)[0]

    def cstr(self, text):
        raw = text.encode() + b"\0"
        addr = self.alloc(len(raw), align=8)
        self.wbytes(addr, raw)
        return addr

    def obj(self, tp, size, refcnt=1, before=0):
        addr = self.alloc(size, before=before)
        self.w(addr, "qQ", refcnt, tp)
        return addr

    # ---- types --------------------------------------------------------------------------

    def static_type(self, name, flags, basicsize=16, itemsize=0, meta=None, base=0, dictoffset=0):
        lay = self.L
        tp = self.alloc(420)
        self.w(tp, "q", 1)
        self.w(tp + lay.ob_type, "Q", tp if meta == "self" else (meta or self.type_type))
        self.w(tp + lay.tp_name, "Q", self.cstr(name))
        self.w(tp + lay.tp_basicsize, "qq", basicsize, itemsize)
        self.w(tp + lay.tp_flags, "Q", flags | TP_READY)
        self.w(tp + lay.tp_base, "Q", base if base or name == "object" else getattr(self, "object_type", 0))
        self.w(tp + lay.tp_dictoffset, "q", dictoffset)
        return tp

    def set_mro(self, tp, types):
        self.w(tp + self.L.tp_mro, "Q", self.tuple(types))

    def heap_type(self, qualname, module, bases=(), flags=0, basicsize=None, slots=(), class_attrs=None):
        """A Python class: `module.qualname`, with the version's instance-dict scheme (no
        instance dict when slots are given)."""
        lay = self.L
        v = self.version
        has_dict = not slots
        if basicsize is None:
            basicsize = 16 + 8 * len(slots)
            if has_dict and lay.managed_dict == "offset":
                basicsize += 8
        tp = self.alloc(max(lay.ht_cached_keys, lay.ht_qualname) + 8 + 40 * (len(slots) + 1))
        self.w(tp, "q", 1)
        self.w(tp + lay.ob_type, "Q", self.type_type)
        self.w(tp + lay.tp_name, "Q", self.cstr(qualname.rsplit(".", 1)[-1]))
        self.w(tp + lay.tp_basicsize, "qq", basicsize, 0)
        flags |= L.TPFLAGS_HEAPTYPE
        dictoffset = 0
        if has_dict:
            if lay.managed_dict == "offset":
                dictoffset = basicsize - 8
            else:
                flags |= L.TPFLAGS_MANAGED_DICT
                dictoffset = -1
                if v >= (3, 13):
                    flags |= L.TPFLAGS_INLINE_VALUES
        self.w(tp + lay.tp_flags, "Q", flags | TP_READY)
        self.w(tp + lay.tp_dictoffset, "q", dictoffset)
        base = bases[0] if bases else self.object_type
        self.w(tp + lay.tp_base, "Q", base)
        attrs = [(self.str("__module__"), self.str(module))] + [(self.str(k), v) for k, v in (class_attrs or {}).items()]
        self.w(tp + lay.tp_dict, "Q", self.dict(attrs))
        self.w(tp + lay.ht_qualname, "Q", self.str(qualname))
        if slots:
            members = tp + max(lay.ht_cached_keys, lay.ht_qualname) + 8
            for i, name in enumerate(slots):
                # PyMemberDef {name, type T_OBJECT_EX=16, offset, flags, doc}
                self.w(members + 40 * i, "Qi4xqi4xQ", self.cstr(name), 16, 16 + 8 * i, 0, 0)
            self.w(tp + lay.tp_members, "Q", members)
        self.set_mro(tp, [tp] + list(bases) + [self.object_type])
        return tp

    def shared_keys(self, tp, names):
        """The class's shared (split) keys holding `names`, set as its ht_cached_keys."""
        keys = self._keys([(self.str(n), 0) for n in names], split=True)
        self.w(tp + self.L.ht_cached_keys, "Q", keys)
        return keys

    # ---- values ---------------------------------------------------------------------------

    def int(self, value, tp=None):
        tp = tp or self.int_type
        digits = []
        n = abs(value)
        while n:
            digits.append(n & ((1 << 30) - 1))
            n >>= 30
        addr = self.obj(tp, 24 + 4 * max(1, len(digits)))
        sign = (value > 0) - (value < 0)
        if self.L.long_lv_tag:
            self.w(addr + 16, "Q", (len(digits) << 3) | (1 - sign))
        else:
            self.w(addr + 16, "q", sign * len(digits))
        for i, d in enumerate(digits):
            self.w(addr + 24 + 4 * i, "I", d)
        return addr

    def float(self, value):
        addr = self.obj(self.float_type, 24)
        self.w(addr + 16, "d", value)
        return addr

    def bool(self, value):
        return self.true if value else self.false

    def str(self, text, state_extra=0, ready=True):
        lay = self.L
        maxc = max((ord(c) for c in text), default=0)
        kind = 1 if maxc < 256 else 2 if maxc < 65536 else 4
        ascii_ = maxc < 128
        raw = text.encode({1: "latin-1", 2: "utf-16-le", 4: "utf-32-le"}[kind])
        head = lay.unicode_ascii_data if ascii_ else lay.unicode_compact_data
        addr = self.obj(self.str_type, head + len(raw) + kind)
        state = (kind << 2) | (1 << 5) | (ascii_ << 6) | state_extra
        if lay.version < (3, 12) and ready:
            state |= 1 << 7
        self.w(addr + 16, "qqI", len(text), -1, state)
        self.wbytes(addr + head, raw)
        return addr

    def bytes(self, data):
        addr = self.obj(self.bytes_type, 33 + len(data))
        self.w(addr + 16, "qq", len(data), -1)
        self.wbytes(addr + 32, data)
        return addr

    def tuple(self, items):
        addr = self.obj(self.tuple_type, 24 + 8 * len(items))
        self.w(addr + 16, "q", len(items))
        for i, p in enumerate(items):
            self.w(addr + 24 + 8 * i, "Q", p)
        return addr

    def list(self, items):
        array = self.alloc(8 * max(1, len(items)), align=8)
        for i, p in enumerate(items):
            self.w(array + 8 * i, "Q", p)
        addr = self.obj(self.list_type, 40)
        self.w(addr + 16, "qQq", len(items), array, len(items))
        return addr

    def _keys(self, pairs, split=False, dk_size=None):
        """A keys object holding (key ptr, value ptr) pairs (values 0 for split keys)."""
        n = len(pairs)
        size = dk_size or 8
        while size * 2 // 3 < n:
            size *= 2
        if self.L.dict_keys_form == "3.8":
            width = 1 if size <= 0xff else 2 if size <= 0xffff else 4
            entries_at = 40 + size * width
            keys = self.alloc(entries_at + 24 * n)
            self.w(keys, "qqQqq", 1, size, 0, size * 2 // 3 - n, n)
            for i, (k, v) in enumerate(pairs):
                self.w(keys + entries_at + 24 * i, "qQQ", 12345, k, 0 if split else v)
            return keys
        log2 = size.bit_length() - 1
        width = 1 if size <= 0xff else 2 if size <= 0xffff else 4
        log2_bytes = log2 + width.bit_length() - 1
        unicode_keys = split or all(self._is_str(k) for k, _v in pairs)
        kind = 2 if split else (1 if unicode_keys else 0)
        esize = 16 if kind else 24
        entries_at = 32 + (1 << log2_bytes)
        keys = self.alloc(entries_at + esize * n)
        self.w(keys, "q", 1)
        self.w(keys + 8, "BBB", log2, log2_bytes, kind)
        self.w(keys + 16, "qq", size * 2 // 3 - n, n)
        for i, (k, v) in enumerate(pairs):
            if esize == 16:
                self.w(keys + entries_at + 16 * i, "QQ", k, 0 if split else v)
            else:
                self.w(keys + entries_at + 24 * i, "qQQ", 12345, k, v)
        return keys

    def _is_str(self, p):
        return self.r64(p + 8) == self.str_type

    def dict(self, pairs, dk_size=None, tp=None):
        """A combined dict of (key ptr, value ptr) pairs."""
        keys = self._keys(pairs, dk_size=dk_size)
        addr = self.obj(tp or self.dict_type, 48)
        self.w(addr + 16, "qQQQ", len(pairs), 0, keys, 0)
        return addr

    def values_array(self, ptrs, capacity=None):
        """A PyDictValues of the version holding ptrs."""
        start = self.L.dict_values_start
        cap = capacity or max(len(ptrs), 1)
        addr = self.alloc(start + 8 * cap)
        if start:
            self.w(addr, "BBBB", cap, len(ptrs), 0, 1)
        for i, p in enumerate(ptrs):
            self.w(addr + start + 8 * i, "Q", p)
        return addr

    def split_dict(self, keys, ptrs):
        addr = self.obj(self.dict_type, 48)
        self.w(addr + 16, "qQQQ", sum(1 for p in ptrs if p), 0, keys, self.values_array(ptrs))
        return addr

    def set(self, items, dummies=0):
        size = 8
        while size * 3 // 5 < len(items) + dummies:
            size *= 2
        table = self.alloc(16 * size)
        slot = 0
        for _ in range(dummies):
            self.w(table + 16 * slot, "Qq", self.none, -1)      # a dummy: hash -1
            slot += 1
        for p in items:
            self.w(table + 16 * slot, "Qq", p, 99)
            slot += 1
        addr = self.obj(self.set_type, 200)
        self.w(addr + 16, "qqqQ", len(items) + dummies, len(items), size - 1, table)
        return addr

    def deque(self, items, leftindex=60):
        blocks = []
        total = len(items)
        index, pos = leftindex, 0
        while pos < total or not blocks:
            block = self.alloc(8 + 64 * 8 + 8)
            if blocks:
                self.w(blocks[-1] + 8 + 64 * 8, "Q", block)
                self.w(block, "Q", blocks[-1])
            blocks.append(block)
            while index < 64 and pos < total:
                self.w(block + 8 + 8 * index, "Q", items[pos])
                index, pos = index + 1, pos + 1
            index = 0
        addr = self.obj(self.deque_type, 80)
        self.w(addr + 16, "qQQqq", total, blocks[0], blocks[-1], leftindex, (leftindex + total - 1) % 64)
        return addr

    def instance(self, tp, attrs, keys=None, materialize=False, slots=None):
        """An instance of the class tp with attrs {name: ptr}, held as the version holds them:
        3.8-3.10 a dict at tp_dictoffset (split over `keys` when given), 3.11 values (keys given)
        or a dict before the header, 3.12 values or dict in the tagged PyDictOrValues, 3.13
        values inline after the header or a dict."""
        lay = self.L
        basicsize = struct.unpack_from("<q", self.mem.data, tp + lay.tp_basicsize - self.BASE)[0]
        extra = 8 + 8 * max(len(attrs), 1) if lay.managed_dict == "3.13" else 0
        addr = self.obj(tp, basicsize + extra, before=32)
        for name, p in (slots or {}).items():
            members = self.r64(tp + lay.tp_members)
            for i in range(16):
                if not self.r64(members + 40 * i):
                    break
                if self.mem.read(self.r64(members + 40 * i), len(name) + 1) == name.encode() + b"\0":
                    off = struct.unpack_from("<q", self.mem.data, members + 40 * i + 16 - self.BASE)[0]
                    self.w(addr + off, "Q", p)
        if not attrs and slots:
            return addr
        names = [n for n in attrs]
        if keys is not None:
            key_names = self._key_names(keys)
            ptrs = [attrs.get(n, 0) for n in key_names]
        if lay.managed_dict == "offset":
            if keys is not None and not materialize:
                d = self.split_dict(keys, ptrs)
            else:
                d = self.dict([(self.str(n), attrs[n]) for n in names])
            self.w(addr + basicsize - 8, "Q", d)
        elif lay.managed_dict == "3.11":
            if keys is not None and not materialize:
                self.w(addr - 32, "Q", self.values_array(ptrs))
            else:
                self.w(addr - 24, "Q", self.dict([(self.str(n), attrs[n]) for n in names]))
        elif lay.managed_dict == "3.12":
            if keys is not None and not materialize:
                self.w(addr - 24, "Q", self.values_array(ptrs) - 1)
            else:
                self.w(addr - 24, "Q", self.dict([(self.str(n), attrs[n]) for n in names]))
        else:
            values = addr + basicsize
            if keys is not None and not materialize:
                self.w(values, "BBBB", len(ptrs), len(ptrs), 1, 1)
                for i, p in enumerate(ptrs):
                    self.w(values + 8 + 8 * i, "Q", p)
            else:
                self.w(values, "BBBB", 0, 0, 1, 0)       # not valid: the dict holds them
                self.w(addr - 24, "Q", self.dict([(self.str(n), attrs[n]) for n in names]))
        return addr

    def _key_names(self, keys):
        lay = self.L
        out = []
        if lay.dict_keys_form == "3.8":
            size, n = struct.unpack_from("<q16xq", self.mem.data, keys + 8 - self.BASE)
            width = 1 if size <= 0xff else 2
            start, esize, koff = keys + 40 + size * width, 24, 8
        else:
            log2_bytes = self.mem.data[keys + 9 - self.BASE]
            n = struct.unpack_from("<q", self.mem.data, keys + 24 - self.BASE)[0]
            start, esize, koff = keys + 32 + (1 << log2_bytes), 16, 0
        for i in range(n):
            k = self.r64(start + esize * i + koff)
            length = struct.unpack_from("<q", self.mem.data, k + 16 - self.BASE)[0]
            out.append(bytes(self.mem.data[k + lay.unicode_ascii_data - self.BASE:
                                           k + lay.unicode_ascii_data + length - self.BASE]).decode())
        return out
