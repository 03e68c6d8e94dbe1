"""Generic reading of Python objects in another process's memory, by each version's layout.

ObjectReader does the work; its methods raise Fault on anything it cannot trust (a read that
fails, a pointer that does not point at an object, a type it does not know), and the public
read_object() turns that into NotRead.  Every read is bounded: strings by max_str bytes,
containers by max_items items, nesting by depth.
"""
import struct
from typing import Any, Optional

from ..records import typed_record
from .. import procfs
from . import layouts as L
from .layouts import layout_for
from .memory import CachedMemory, Fault, NotRead, ProcessMemory, USER_SPACE_END

MAX_STR = 4096          # bytes of a str's data read at most
MAX_ITEMS = 64          # items of a container read at most
MAX_DEPTH = 2           # nesting followed by read_object
MAX_SCAN = 4096         # dict/set slots scanned at most for one container
MAX_ATTRS = 256         # instance attributes considered at most
MAX_INT_DIGITS = 64     # 30-bit digits of an int (about 1900 bits)

_NAME_CHARS = set(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._<>[]-, ")


@typed_record(frozen=True)
class PyObj:
    """One object read from the target.

    kind: 'none', 'bool', 'int', 'float', 'str', 'bytes', 'tuple', 'list', 'dict', 'set',
    'frozenset', 'deque', 'object' (an instance: value is its attributes), 'type', or 'ref'
    (not followed: the depth bound; value is NotRead).
    value: a Python value for scalars (str/bytes possibly cut, see truncated); a tuple of
    PyObj|NotRead for tuple/list/set/frozenset/deque; a tuple of (key, value) pairs for dict;
    a dict {name: PyObj|NotRead} for 'object' (its __dict__ and __slots__).
    length: the real length of a container, str (characters) or bytes, else None.
    """
    addr: int
    type_name: str
    kind: str
    value: Any
    length: Optional[int] = None
    truncated: bool = False

    def py(self):
        """The value as plain Python (containers rebuilt; an unread part stays NotRead)."""
        def conv(v):
            return v.py() if isinstance(v, PyObj) else v
        if self.kind in ("tuple", "set", "frozenset"):
            items = [conv(v) for v in self.value]
            return tuple(items) if self.kind == "tuple" else items
        if self.kind in ("list", "deque"):
            return [conv(v) for v in self.value]
        if self.kind == "dict":
            out = {}
            for k, v in self.value:
                key = conv(k)
                try:
                    out[key] = conv(v)
                except TypeError:
                    out[repr(key)] = conv(v)
            return out
        if self.kind == "object":
            return {k: conv(v) for k, v in self.value.items()} if isinstance(self.value, dict) else self.value
        return self.value


@typed_record
class TypeInfo:
    addr: int
    tp_name: str
    flags: int
    basicsize: int
    itemsize: int
    dictoffset: int
    base: int
    mro_ptr: int
    members: int
    qualname: Optional[str] = None      # filled lazily: module.qualname for classes
    mro_names: Optional[tuple] = None    # filled lazily

    @property
    def heap(self):
        return bool(self.flags & L.TPFLAGS_HEAPTYPE)


# tp_flags bits that say what a type is (others, such as VALID_VERSION_TAG, come and go)
_FLAGS_THAT_IDENTIFY = (L.TPFLAGS_INLINE_VALUES | L.TPFLAGS_MANAGED_WEAKREF | L.TPFLAGS_MANAGED_DICT
                        | L.TPFLAGS_HEAPTYPE | 0xFF000000)


class TypeCache:
    """What was read about one process's types, kept between decodes (types rarely change).
    A type read before is trusted again only while its identifying words (ob_type, tp_name,
    sizes, the identifying tp_flags, tp_members, tp_base, tp_dict, tp_dictoffset, tp_mro and,
    for a class, ht_qualname and ht_cached_keys) read the same; a class's shared-keys names
    while each entry holds the same key object (shared keys only ever grow)."""

    MAX_TYPES = 4096

    def __init__(self):
        self.types = {}          # type address -> (fingerprint, TypeInfo)
        self.type_type = None
        self.split_names = {}    # shared keys address -> {index: (key ptr, name)}


_CACHES = {}                     # (pid, start time) -> TypeCache
_MAX_PROCESSES = 32


def type_cache_for(pid):
    """The TypeCache of a live process (a new one for a new process of the same pid)."""
    try:
        start = procfs.stat(int(pid))["start_time"]
    except (procfs.ProcfsError, ValueError, IndexError):
        return None
    key = (int(pid), start)
    cache = _CACHES.get(key)
    if cache is None:
        if len(_CACHES) >= _MAX_PROCESSES:
            _CACHES.pop(next(iter(_CACHES)))
        cache = _CACHES[key] = TypeCache()
    return cache


def _valid_ptr(addr):
    return isinstance(addr, int) and 0x1000 <= addr < USER_SPACE_END and addr % 8 == 0


class ObjectReader:
    """Reads objects of one process (memory) laid out as `layout` says.  Keep one for a
    snapshot of reads (it caches types and what it read); make a new one for a later look."""

    def __init__(self, memory, layout, max_str=MAX_STR, max_items=MAX_ITEMS, cache=True, types=None):
        if isinstance(layout, NotRead):
            raise Fault(layout.reason)
        self.mem = CachedMemory(memory) if cache else memory
        self.L = layout
        self.shared = types       # a TypeCache kept between readers of one process, or None
        self.max_str = max_str
        self.max_items = max_items
        self._types = {}          # type address -> TypeInfo
        self._type_type = None    # address of `type`
        self._strs = {}           # str address -> str (attribute names)
        self._attrs = {}          # object address -> {name: ptr}
        self._keys = {}           # shared keys address -> [(index, name)]

    def close(self):
        inner = getattr(self.mem, "inner", self.mem)
        if hasattr(inner, "close"):
            inner.close()

    # ---- pointers and types -------------------------------------------------------------

    def _is_type_type(self, tp):
        """True when tp is `type` itself: its own ob_type, named 'type'."""
        if self._type_type is None and self.shared is not None and self.shared.type_type is not None:
            self._type_type = self.shared.type_type
        if self._type_type is not None:
            return tp == self._type_type
        if self.mem.ptr(tp + self.L.ob_type) != tp:
            return False
        if self.mem.cstring(self.mem.ptr(tp + self.L.tp_name), 16) != b"type":
            return False
        self._type_type = tp
        if self.shared is not None:
            self.shared.type_type = tp
        return True

    def _fingerprint(self, tp, heap):
        lay = self.L
        if heap:
            last = max(lay.ht_qualname, lay.ht_cached_keys) + 8
        else:
            last = lay.tp_mro + 8
        raw = self.mem.read(tp, last)
        word = lambda off: struct.unpack_from("<Q", raw, off)[0]
        fp = (word(lay.ob_type), word(lay.tp_name), word(lay.tp_basicsize), word(lay.tp_itemsize),
              word(lay.tp_flags) & _FLAGS_THAT_IDENTIFY, word(lay.tp_members), word(lay.tp_base),
              word(lay.tp_dict), word(lay.tp_dictoffset), word(lay.tp_mro))
        if heap:
            fp += (word(lay.ht_qualname), word(lay.ht_cached_keys))
        return fp

    def _is_a_type(self, tp, hops=4):
        """tp is a type object: its type (a metatype) is `type` or, for a metaclass such as
        ABCMeta, a type whose type is `type` (at most `hops` steps)."""
        seen = tp
        for _ in range(hops):
            if not _valid_ptr(seen):
                return False
            meta = self.mem.ptr(seen + self.L.ob_type)
            if not _valid_ptr(meta):
                return False
            if self._is_type_type(meta):
                return True
            seen = meta
        return False

    def type_info(self, tp):
        """TypeInfo of the type object at tp, validated (Fault if tp is not a type)."""
        info = self._types.get(tp)
        if info is not None:
            return info
        if not _valid_ptr(tp):
            raise Fault("type pointer 0x%x is not a valid address" % tp)
        if self.shared is not None:
            known = self.shared.types.get(tp)
            if known is not None and self._fingerprint(tp, known[1].heap) == known[0]:
                self._types[tp] = known[1]
                return known[1]
        if not self._is_a_type(tp):
            raise Fault("0x%x is not a type object (its type is not `type`)" % tp)
        head = self.mem.read(tp, self.L.tp_mro + 8)
        q = lambda off: struct.unpack_from("<Q", head, off)[0]
        qs = lambda off: struct.unpack_from("<q", head, off)[0]
        name_ptr = q(self.L.tp_name)
        if not name_ptr:
            raise Fault("type at 0x%x has no tp_name" % tp)
        raw = self.mem.cstring(name_ptr, 200)
        if not raw or not set(raw) <= _NAME_CHARS:
            raise Fault("type at 0x%x has an unprintable tp_name" % tp)
        basicsize, itemsize = qs(self.L.tp_basicsize), qs(self.L.tp_itemsize)
        if not (16 <= basicsize < (1 << 20)) or not (0 <= itemsize < (1 << 16)):
            raise Fault("type %s at 0x%x has an implausible size (%d, %d)" % (raw.decode(), tp, basicsize, itemsize))
        info = TypeInfo(addr=tp, tp_name=raw.decode("ascii"), flags=q(self.L.tp_flags), basicsize=basicsize,
                        itemsize=itemsize, dictoffset=qs(self.L.tp_dictoffset), base=q(self.L.tp_base),
                        mro_ptr=q(self.L.tp_mro), members=q(self.L.tp_members))
        self._types[tp] = info
        if self.shared is not None:
            if len(self.shared.types) >= TypeCache.MAX_TYPES:
                self.shared.types.clear()
            self.shared.types[tp] = (self._fingerprint(tp, info.heap), info)
        return info

    def type_of(self, addr):
        """TypeInfo of the object at addr; Fault unless addr holds an object of a valid type."""
        if not _valid_ptr(addr):
            raise Fault("0x%x is not a valid object address" % addr if isinstance(addr, int) else "no address")
        refcnt, tp = struct.unpack("<qQ", self.mem.read(addr, 16))
        if refcnt <= 0:
            raise Fault("object at 0x%x has reference count %d: freed or not an object" % (addr, refcnt))
        return self.type_info(tp)

    def type_name(self, info):
        """The qualified name of a type: 'int', '_thread.lock', 'threading.Barrier'."""
        if info.qualname is not None:
            return info.qualname
        name = info.tp_name
        if info.heap:
            try:
                qual = self._str_simple(self.mem.ptr(info.addr + self.L.ht_qualname), 200)
            except Fault:
                qual = None
            # a class statement's tp_name is its bare name; a C type made from a spec has
            # "module.Name" as tp_name (and just "Name" as qualname)
            if "." not in name or qual == name:
                module = self._type_module(info)
                qual = qual or name
                name = qual if module == "builtins" else "%s.%s" % (module, qual)
        info.qualname = name
        return name

    def _type_module(self, info):
        """__module__ from a class's own dict (it is the first name a class body defines)."""
        try:
            tdict = self.mem.ptr(info.addr + self.L.tp_dict)
            if not tdict:
                return "?"
            for kptr, vptr in self._dict_pairs(tdict, limit=MAX_ATTRS, want="__module__"):
                if self._key_name(kptr) == "__module__":
                    return self._str_simple(vptr, 200)
        except Fault:
            pass
        return "?"

    def mro_names(self, info):
        """Qualified names of the type and its bases, in method resolution order."""
        if info.mro_names is not None:
            return info.mro_names
        names = []
        try:
            n, ptrs = self._tuple_ptrs(info.mro_ptr, 64)
            for p in ptrs:
                names.append(self.type_name(self.type_info(p)))
        except Fault:
            names = []
        if not names:      # no mro tuple: follow tp_base
            tp, hops = info.addr, 0
            while tp and hops < 64:
                t = self.type_info(tp)
                names.append(self.type_name(t))
                tp, hops = t.base, hops + 1
        info.mro_names = tuple(names)
        return info.mro_names

    def is_instance(self, info, qualname):
        return qualname in self.mro_names(info)

    # ---- scalars --------------------------------------------------------------------------

    def _need(self, info, flag, what):
        if not info.flags & flag:
            raise Fault("%s is not %s" % (self.type_name(info), what))

    def int_value(self, addr, info=None):
        info = info or self.type_of(addr)
        self._need(info, L.TPFLAGS_LONG_SUBCLASS, "an int")
        if self.L.long_lv_tag:
            tag = self.mem.u64(addr + 16)
            ndigits, sign_bits = tag >> 3, tag & 3
            if sign_bits == 3:
                raise Fault("int at 0x%x has an invalid sign tag" % addr)
            sign = 1 - sign_bits
        else:
            size = self.mem.i64(addr + 16)
            ndigits, sign = abs(size), (size > 0) - (size < 0)
        if ndigits > MAX_INT_DIGITS:
            raise Fault("int at 0x%x has %d digits: over the bound of %d" % (addr, ndigits, MAX_INT_DIGITS))
        if ndigits == 0 or sign == 0:
            return 0
        digits = struct.unpack("<%dI" % ndigits, self.mem.read(addr + 24, 4 * ndigits))
        value = 0
        for d in reversed(digits):
            if d >> 30:
                raise Fault("int at 0x%x has a digit over 30 bits" % addr)
            value = (value << 30) | d
        return sign * value

    def float_value(self, addr, info=None):
        info = info or self.type_of(addr)
        if "float" not in self.mro_names(info):
            raise Fault("%s is not a float" % self.type_name(info))
        return struct.unpack("<d", self.mem.read(addr + 16, 8))[0]

    def str_value(self, addr, info=None, limit=None):
        """(text, length in characters, truncated) of a str, at most `limit` bytes of data."""
        info = info or self.type_of(addr)
        self._need(info, L.TPFLAGS_UNICODE_SUBCLASS, "a str")
        limit = self.max_str if limit is None else limit
        length = self.mem.i64(addr + 16)
        state = self.mem.u32(addr + 32)
        kind, compact, ascii_ = (state >> 2) & 7, (state >> 5) & 1, (state >> 6) & 1
        if self.L.version < (3, 12) and not (state >> 7) & 1:
            raise Fault("str at 0x%x is a legacy string not made ready (no canonical data)" % addr)
        if kind not in (1, 2, 4) or (ascii_ and kind != 1):
            raise Fault("str at 0x%x has an invalid kind %d" % (addr, kind))
        if not 0 <= length < (1 << 40):
            raise Fault("str at 0x%x has an invalid length %d" % (addr, length))
        if compact:
            data = addr + (self.L.unicode_ascii_data if ascii_ else self.L.unicode_compact_data)
        else:
            data = self.mem.ptr(addr + self.L.unicode_legacy_data)
            if not data:
                raise Fault("str at 0x%x has no data pointer" % addr)
        nchars = min(length, limit // kind)
        raw = self.mem.read(data, nchars * kind) if nchars else b""
        codec = {1: "latin-1", 2: "utf-16-le", 4: "utf-32-le"}[kind]
        try:
            text = raw.decode(codec)
        except UnicodeDecodeError:
            # a lone surrogate is legal in a Python str
            text = raw.decode(codec, errors="surrogatepass") if kind != 1 else raw.decode("latin-1")
        if ascii_ and not raw.isascii():
            raise Fault("str at 0x%x is marked ASCII but is not" % addr)
        return text, length, nchars < length

    def _str_simple(self, addr, limit):
        text, length, cut = self.str_value(addr, limit=limit)
        if cut:
            raise Fault("str at 0x%x is longer than %d bytes" % (addr, limit))
        return text

    def _key_name(self, kptr):
        """An attribute name (a str key of a dict), cached."""
        name = self._strs.get(kptr)
        if name is None:
            name = self._str_simple(kptr, 256)
            self._strs[kptr] = name
        return name

    def bytes_value(self, addr, info=None, limit=None):
        info = info or self.type_of(addr)
        self._need(info, L.TPFLAGS_BYTES_SUBCLASS, "bytes")
        limit = self.max_str if limit is None else limit
        size = self.mem.i64(addr + 16)
        if not 0 <= size < (1 << 40):
            raise Fault("bytes at 0x%x has an invalid size %d" % (addr, size))
        n = min(size, limit)
        return (self.mem.read(addr + 32, n) if n else b""), size, n < size

    def bool_value(self, addr, info=None):
        info = info or self.type_of(addr)
        if info.tp_name != "bool":
            raise Fault("%s is not a bool" % self.type_name(info))
        return bool(self.int_value(addr, info))

    # ---- containers -----------------------------------------------------------------------

    def _tuple_ptrs(self, addr, limit):
        info = self.type_of(addr)
        self._need(info, L.TPFLAGS_TUPLE_SUBCLASS, "a tuple")
        n = self.mem.i64(addr + 16)
        if not 0 <= n < (1 << 40):
            raise Fault("tuple at 0x%x has an invalid size %d" % (addr, n))
        k = min(n, limit)
        return n, list(struct.unpack("<%dQ" % k, self.mem.read(addr + 24, 8 * k))) if k else []

    def _list_ptrs(self, addr, limit):
        info = self.type_of(addr)
        self._need(info, L.TPFLAGS_LIST_SUBCLASS, "a list")
        n, items, allocated = struct.unpack("<qQq", self.mem.read(addr + 16, 24))
        if not 0 <= n <= allocated or allocated >= (1 << 40):
            raise Fault("list at 0x%x has an invalid size %d (allocated %d)" % (addr, n, allocated))
        k = min(n, limit)
        if k and not _valid_ptr(items):
            raise Fault("list at 0x%x has an invalid item array" % addr)
        return n, list(struct.unpack("<%dQ" % k, self.mem.read(items, 8 * k))) if k else []

    def _dict_keys(self, keys):
        """(entries address, entry size, number of entries, is_unicode_form) of a keys object."""
        if not _valid_ptr(keys):
            raise Fault("dict keys pointer 0x%x is invalid" % keys)
        if self.L.dict_keys_form == "3.8":
            head = self.mem.read(keys, 40)
            refcnt, dk_size, _lookup, usable, nentries = struct.unpack("<qqQqq", head)
            if dk_size < 8 or dk_size & (dk_size - 1) or dk_size > (1 << 30) or not 0 <= nentries <= dk_size:
                raise Fault("dict keys at 0x%x look wrong (size %d, entries %d)" % (keys, dk_size, nentries))
            width = 1 if dk_size <= 0xff else 2 if dk_size <= 0xffff else 4 if dk_size <= 0xffffffff else 8
            return keys + 40 + dk_size * width, 24, nentries, False
        head = self.mem.read(keys, 32)
        log2_size, log2_index_bytes, kind = head[8], head[9], head[10]
        nentries = struct.unpack_from("<q", head, 24)[0]
        if not 3 <= log2_size <= 30 or kind not in (0, 1, 2) or not 0 <= nentries <= (1 << log2_size) \
                or not log2_size <= log2_index_bytes <= log2_size + 3:
            raise Fault("dict keys at 0x%x look wrong (log2 size %d, kind %d, entries %d)"
                        % (keys, log2_size, kind, nentries))
        return keys + 32 + (1 << log2_index_bytes), (24 if kind == 0 else 16), nentries, kind != 0

    def _entries(self, keys, limit):
        """[(index, key ptr, value ptr from the entry)] of a keys object, live keys only."""
        start, esize, nentries, unicode_form = self._dict_keys(keys)
        out = []
        scan = min(nentries, MAX_SCAN)
        chunk = 64
        for first in range(0, scan, chunk):
            n = min(chunk, scan - first)
            raw = self.mem.read(start + first * esize, n * esize)
            for i in range(n):
                if unicode_form:
                    k, v = struct.unpack_from("<QQ", raw, i * esize)
                else:
                    _h, k, v = struct.unpack_from("<qQQ", raw, i * esize)
                if k:
                    out.append((first + i, k, v))
                    if len(out) >= limit:
                        return out
        return out

    def _values_array(self, values, count):
        """count value pointers of a split dict's PyDictValues."""
        if not _valid_ptr(values):
            raise Fault("dict values pointer 0x%x is invalid" % values)
        if count <= 0:
            return []
        return list(struct.unpack("<%dQ" % count, self.mem.read(values + self.L.dict_values_start, 8 * count)))

    def _dict_pairs(self, addr, limit, want=None):
        """[(key ptr, value ptr)] of a dict (at most limit live items)."""
        used, keys, values = struct.unpack("<q8xQQ", self.mem.read(addr + 16, 32))
        if not 0 <= used < (1 << 40):
            raise Fault("dict at 0x%x has an invalid size %d" % (addr, used))
        if used == 0:
            return []
        entries = self._entries(keys, limit if values == 0 else MAX_SCAN)
        if values == 0:
            return [(k, v) for _i, k, v in entries if v]
        if not entries:
            return []
        vals = self._values_array(values, entries[-1][0] + 1)
        pairs = [(k, vals[i]) for i, k, _v in entries if vals[i]]
        return pairs[:limit]

    def dict_len(self, addr, info=None):
        info = info or self.type_of(addr)
        self._need(info, L.TPFLAGS_DICT_SUBCLASS, "a dict")
        used = self.mem.i64(addr + 16)
        if not 0 <= used < (1 << 40):
            raise Fault("dict at 0x%x has an invalid size %d" % (addr, used))
        return used

    def _set_ptrs(self, addr, limit):
        used, mask, table = struct.unpack("<qqQ", self.mem.read(addr + 24, 24))
        if not 0 <= used <= mask + 1 or mask + 1 > (1 << 30) or (mask + 1) & mask:
            raise Fault("set at 0x%x looks wrong (used %d, mask %d)" % (addr, used, mask))
        out = []
        scan = min(mask + 1, MAX_SCAN)
        for first in range(0, scan, 64):
            n = min(64, scan - first)
            raw = self.mem.read(table + first * 16, n * 16)
            for i in range(n):
                k, h = struct.unpack_from("<Qq", raw, i * 16)
                if k and h != -1:
                    out.append(k)
                    if len(out) >= min(limit, used):
                        return used, out
        return used, out

    DEQUE_BLOCKLEN = 64

    def _deque_ptrs(self, addr, limit):
        n, left, _right, leftindex = struct.unpack("<qQQq", self.mem.read(addr + 16, 32))
        if not 0 <= n < (1 << 40) or not 0 <= leftindex < self.DEQUE_BLOCKLEN:
            raise Fault("deque at 0x%x looks wrong (size %d)" % (addr, n))
        out = []
        block, index = left, leftindex
        while len(out) < min(n, limit):
            if not _valid_ptr(block):
                raise Fault("deque at 0x%x has an invalid block pointer" % addr)
            take = min(self.DEQUE_BLOCKLEN - index, min(n, limit) - len(out))
            out.extend(struct.unpack("<%dQ" % take, self.mem.read(block + 8 + 8 * index, 8 * take)))
            block, index = self.mem.ptr(block + 8 + 8 * self.DEQUE_BLOCKLEN), 0
        return n, out

    def length(self, addr, info=None):
        """len() of a container held in memory: tuple, list, dict, set, frozenset, str, bytes,
        collections.deque, _queue.SimpleQueue (or a subclass of one)."""
        info = info or self.type_of(addr)
        f = info.flags
        if f & L.TPFLAGS_TUPLE_SUBCLASS:
            return self._tuple_ptrs(addr, 0)[0]
        if f & L.TPFLAGS_LIST_SUBCLASS:
            return self._list_ptrs(addr, 0)[0]
        if f & L.TPFLAGS_DICT_SUBCLASS:
            return self.dict_len(addr, info)
        if f & (L.TPFLAGS_UNICODE_SUBCLASS | L.TPFLAGS_BYTES_SUBCLASS):
            return self.mem.i64(addr + 16)
        names = self.mro_names(info)
        if "set" in names or "frozenset" in names:
            return self._set_ptrs(addr, 0)[0]
        if "collections.deque" in names:
            return self._deque_ptrs(addr, 0)[0]
        if "_queue.SimpleQueue" in names:
            return self.simplequeue_len(addr)
        raise Fault("%s has no length this reader knows" % self.type_name(info))

    def simplequeue_len(self, addr):
        if self.L.simplequeue_form == "ring":
            n = self.mem.i64(addr + self.L.simplequeue_num_items)
        else:
            lst = self.mem.ptr(addr + self.L.simplequeue_lst)
            pos = self.mem.i64(addr + self.L.simplequeue_lst_pos)
            total = self._list_ptrs(lst, 0)[0]
            if not 0 <= pos <= total:
                raise Fault("SimpleQueue at 0x%x has an invalid position %d of %d" % (addr, pos, total))
            n = total - pos
        if not 0 <= n < (1 << 40):
            raise Fault("SimpleQueue at 0x%x has an invalid size %d" % (addr, n))
        return n

    # ---- instance attributes --------------------------------------------------------------

    def _dict_ptr_of(self, addr, info):
        """Address of the instance's dict object (0 if it has none yet), by tp_dictoffset."""
        off = info.dictoffset
        if off == 0:
            return 0
        if off < 0:
            size = abs(self.mem.i64(addr + 16))
            total = info.basicsize + size * info.itemsize
            off += (total + 7) & ~7
        return self.mem.ptr(addr + off)

    def _shared_key_names(self, keys):
        """[(index, name)] of a split table's keys (shared by a class's instances; they only
        ever grow, so names already read are kept while their entry holds the same key)."""
        names = self._keys.get(keys)
        if names is None:
            known = {}
            if self.shared is not None:
                if len(self.shared.split_names) >= TypeCache.MAX_TYPES:
                    self.shared.split_names.clear()
                known = self.shared.split_names.setdefault(keys, {})
            names = []
            for i, k, _v in self._entries(keys, MAX_ATTRS):
                hit = known.get(i)
                if hit is None or hit[0] != k:
                    hit = known[i] = (k, self._key_name(k))
                names.append((i, hit[1]))
            self._keys[keys] = names
        return names

    def _split_attrs(self, info, values, capacity=None, keys=None):
        """Attributes held in a values array whose keys are shared keys (the class's)."""
        if keys is None:
            keys = self.mem.ptr(info.addr + self.L.ht_cached_keys)
        names = self._shared_key_names(keys)
        if not names:
            return {}
        count = names[-1][0] + 1
        if capacity is not None:
            count = min(count, capacity)
        vals = self._values_array(values, count)
        return {name: vals[i] for i, name in names if i < count and vals[i]}

    def _dict_attrs(self, dict_addr):
        if not dict_addr:
            return {}
        dinfo = self.type_of(dict_addr)
        self._need(dinfo, L.TPFLAGS_DICT_SUBCLASS, "a dict")
        used, keys, values = struct.unpack("<q8xQQ", self.mem.read(dict_addr + 16, 32))
        if values:        # a split table: an instance dict over its class's shared keys
            return self._split_attrs(None, values, keys=keys)
        out = {}
        for k, v in self._dict_pairs(dict_addr, MAX_ATTRS):
            try:
                out[self._key_name(k)] = v
            except Fault:
                continue      # a key that is not a str is no attribute name
        return out

    def _managed_attrs(self, addr, info):
        form = self.L.managed_dict
        if form == "3.11":
            values = self.mem.ptr(addr - 32)
            if values:
                return self._split_attrs(info, values)
            return self._dict_attrs(self.mem.ptr(addr - 24))
        if form == "3.12":
            dorv = self.mem.ptr(addr - 24)
            if dorv & 1:
                return self._split_attrs(info, dorv + 1)
            return self._dict_attrs(dorv)
        if form == "3.13":
            if info.flags & L.TPFLAGS_INLINE_VALUES:
                values = addr + info.basicsize
                capacity, _size, _embedded, valid = self.mem.read(values, 4)
                if valid:
                    return self._split_attrs(info, values, capacity)
            return self._dict_attrs(self.mem.ptr(addr - 24))
        raise Fault("type %s has a managed dict, unknown before 3.11" % self.type_name(info))

    def _slot_offsets(self, info):
        """{name: offset} of object __slots__ along the class and its bases (heap types)."""
        out = {}
        tp, hops = info.addr, 0
        while tp and hops < 32:
            t = self.type_info(tp)
            if t.heap and t.members:
                for i in range(64):
                    name_ptr, mtype, offset = struct.unpack("<Qi4xq", self.mem.read(t.members + 40 * i, 24))
                    if not name_ptr:
                        break
                    name = self.mem.cstring(name_ptr, 200).decode("ascii", "replace")
                    if mtype in (6, 16) and not name.startswith("__") and 16 <= offset < t.basicsize:
                        out.setdefault(name, offset)
            tp, hops = t.base, hops + 1
        return out

    def attrs(self, addr, info=None):
        """{name: pointer} of an instance's attributes: its __dict__ and its __slots__ (a slot
        never set is left out)."""
        cached = self._attrs.get(addr)
        if cached is not None:
            return cached
        info = info or self.type_of(addr)
        out = {}
        for name, off in self._slot_offsets(info).items():
            p = self.mem.ptr(addr + off)
            if p:
                out[name] = p
        if self.L.managed_dict != "offset" and info.flags & L.TPFLAGS_MANAGED_DICT:
            out.update(self._managed_attrs(addr, info))
        elif info.dictoffset:
            out.update(self._dict_attrs(self._dict_ptr_of(addr, info)))
        self._attrs[addr] = out
        return out

    def attr(self, addr, name):
        """Pointer to attribute `name` of the instance at addr, else of its class (a default
        such as _PyFuture._state); Fault if neither has it.  Descriptors are not run: this is
        for plain data attributes."""
        p = self.attrs(addr).get(name)
        if p:
            return p
        info = self.type_of(addr)
        p = self.class_attr(info, name)
        if not p:
            raise Fault("%s has no attribute %s" % (self.type_name(info), name))
        return p

    def class_attr(self, info, name):
        """Pointer to `name` in the dict of the first class along the MRO that defines it, or 0."""
        try:
            _n, mro = self._tuple_ptrs(info.mro_ptr, 64)
        except Fault:
            mro = [info.addr]
        for tp in mro:
            t = self.type_info(tp)
            if not t.heap:
                continue          # builtin and C types: no plain data attributes of interest
            cached = self._attrs.get(("class", tp))
            if cached is None:
                tdict = self.mem.ptr(tp + self.L.tp_dict)
                cached = self._dict_attrs(tdict) if tdict else {}
                self._attrs[("class", tp)] = cached
            if cached.get(name):
                return cached[name]
        return 0

    def is_none(self, addr):
        return self.type_of(addr).tp_name == "NoneType"

    # ---- generic values -------------------------------------------------------------------

    def value(self, addr, depth=MAX_DEPTH):
        """PyObj for the object at addr (Fault if it cannot be read at all)."""
        info = self.type_of(addr)
        name = self.type_name(info)
        f = info.flags
        names = self.mro_names(info)

        def sub(p):
            try:
                return self.value(p, depth - 1)
            except Fault as e:
                return NotRead(str(e))
            except (struct.error, ValueError, OverflowError, UnicodeError) as e:
                return NotRead("unexpected content at 0x%x: %s" % (p, e))

        if info.tp_name == "NoneType":
            return PyObj(addr, name, "none", None)
        if info.tp_name == "bool":
            return PyObj(addr, name, "bool", self.bool_value(addr, info))
        if f & L.TPFLAGS_LONG_SUBCLASS:
            return PyObj(addr, name, "int", self.int_value(addr, info))
        if "float" in names:
            return PyObj(addr, name, "float", self.float_value(addr, info))
        if f & L.TPFLAGS_UNICODE_SUBCLASS:
            text, n, cut = self.str_value(addr, info)
            return PyObj(addr, name, "str", text, n, cut)
        if f & L.TPFLAGS_BYTES_SUBCLASS:
            data, n, cut = self.bytes_value(addr, info)
            return PyObj(addr, name, "bytes", data, n, cut)
        if f & L.TPFLAGS_TYPE_SUBCLASS:
            return PyObj(addr, name, "type", self.type_name(self.type_info(addr)))
        if depth <= 0:
            return PyObj(addr, name, "ref", NotRead("not followed: nesting bound"))
        limit = self.max_items
        if f & L.TPFLAGS_TUPLE_SUBCLASS:
            n, ptrs = self._tuple_ptrs(addr, limit)
            return PyObj(addr, name, "tuple", tuple(sub(p) for p in ptrs), n, len(ptrs) < n)
        if f & L.TPFLAGS_LIST_SUBCLASS:
            n, ptrs = self._list_ptrs(addr, limit)
            return PyObj(addr, name, "list", tuple(sub(p) for p in ptrs), n, len(ptrs) < n)
        if f & L.TPFLAGS_DICT_SUBCLASS:
            n = self.dict_len(addr, info)
            pairs = self._dict_pairs(addr, limit)
            return PyObj(addr, name, "dict", tuple((sub(k), sub(v)) for k, v in pairs), n, len(pairs) < n)
        for kind in ("set", "frozenset"):
            if kind in names:
                n, ptrs = self._set_ptrs(addr, limit)
                return PyObj(addr, name, kind, tuple(sub(p) for p in ptrs), n, len(ptrs) < n)
        if "collections.deque" in names:
            n, ptrs = self._deque_ptrs(addr, limit)
            return PyObj(addr, name, "deque", tuple(sub(p) for p in ptrs), n, len(ptrs) < n)
        attrs = self.attrs(addr, info)
        items = list(attrs.items())[:limit]
        return PyObj(addr, name, "object", {k: sub(p) for k, p in items}, len(attrs), len(items) < len(attrs))


def reader_for(pid, version, **kw):
    """An ObjectReader of process pid for one moment (call its close() when done); what it
    learns of the process's types is kept for the next one."""
    layout = layout_for(version)
    if isinstance(layout, NotRead):
        raise Fault(layout.reason)
    kw.setdefault("types", type_cache_for(pid))
    return ObjectReader(ProcessMemory(pid), layout, **kw)


def read_object(pid, addr, version, depth=MAX_DEPTH, max_items=MAX_ITEMS, max_str=MAX_STR):
    """The object at addr in process pid (a py-spy local's `addr`, an id()) as PyObj, or
    NotRead with the reason.  Never raises for what it finds in the target."""
    try:
        reader = reader_for(pid, version, max_items=max_items, max_str=max_str)
    except Fault as e:
        return NotRead(str(e))
    try:
        return reader.value(addr, depth)
    except Fault as e:
        return NotRead(str(e))
    except Exception as e:       # noqa: BLE001 - content no reader foresaw is "not read", not a crash
        return NotRead("unexpected content at 0x%x: %s: %s" % (addr, type(e).__name__, e))
    finally:
        reader.close()
