"""Bytes of another process's memory, read from outside: /proc/PID/mem (os.pread), else
process_vm_readv.  Nothing here runs code in the target or stops it.

Every read is bounded (MAX_READ bytes); any failure (the process is gone, the address is
not mapped, no permission) raises Fault, which the readers above turn into NotRead.
"""
import ctypes
import errno
import os
import struct

from ..records import typed_record
from .. import procfs

MAX_READ = 1 << 20          # no single read is larger than this
USER_SPACE_END = 1 << 47    # x86_64: user addresses are below 0x8000_0000_0000


@typed_record(frozen=True)
class NotRead:
    """A value the reader could not (or would not) read, with the reason.  Falsy, so that
    `if fact.locked:` never mistakes an unread field for a true one."""
    reason: str

    def __bool__(self):
        return False

    def __str__(self):
        return "not read: " + self.reason


def is_read(value):
    return not isinstance(value, NotRead)


class Fault(Exception):
    """A read that failed or a value that is not what it must be; its text is the reason."""


def _errname(err):
    return errno.errorcode.get(err, str(err))


class _iovec(ctypes.Structure):
    _fields_ = [("iov_base", ctypes.c_void_p), ("iov_len", ctypes.c_size_t)]


_libc = None


def _process_vm_readv():
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.process_vm_readv.restype = ctypes.c_ssize_t
        _libc.process_vm_readv.argtypes = [ctypes.c_int, ctypes.POINTER(_iovec), ctypes.c_ulong,
                                           ctypes.POINTER(_iovec), ctypes.c_ulong, ctypes.c_ulong]
    return _libc.process_vm_readv


class Memory:
    """Base: read(addr, n) -> bytes of exactly n, or Fault.  The struct helpers read little-endian
    x86_64 values."""

    reads = 0   # number of reads that reached the target (for measuring cost)

    def read(self, addr, n):
        raise NotImplementedError

    def _check(self, addr, n):
        if not isinstance(addr, int) or addr <= 0 or addr >= USER_SPACE_END:
            raise Fault("address 0x%x is not a user-space address" % addr if isinstance(addr, int)
                        else "address %r is not an integer" % (addr,))
        if n < 0 or n > MAX_READ:
            raise Fault("read of %d bytes is over the bound of %d" % (n, MAX_READ))
        if addr + n > USER_SPACE_END:
            raise Fault("read at 0x%x of %d bytes runs past user space" % (addr, n))

    def u8(self, addr):
        return self.read(addr, 1)[0]

    def u32(self, addr):
        return struct.unpack("<I", self.read(addr, 4))[0]

    def i32(self, addr):
        return struct.unpack("<i", self.read(addr, 4))[0]

    def u64(self, addr):
        return struct.unpack("<Q", self.read(addr, 8))[0]

    def i64(self, addr):
        return struct.unpack("<q", self.read(addr, 8))[0]

    def ptr(self, addr):
        return self.u64(addr)

    def cstring(self, addr, limit=256):
        """A NUL-terminated byte string of at most `limit` bytes (read in small steps so that a
        string near the end of a mapping still reads)."""
        out = b""
        step = 64
        while len(out) < limit:
            want = min(step, limit - len(out))
            # do not cross a page boundary in one read: the next page may be unmapped
            page_left = 4096 - ((addr + len(out)) % 4096)
            chunk = self.read(addr + len(out), min(want, page_left))
            nul = chunk.find(b"\0")
            if nul >= 0:
                return out + chunk[:nul]
            out += chunk
        raise Fault("string at 0x%x is longer than %d bytes" % (addr, limit))


class ProcessMemory(Memory):
    """A live process's memory.  Opens /proc/PID/mem once; falls back to process_vm_readv
    when the file cannot be opened.  Use as a context manager or call close()."""

    def __init__(self, pid):
        self.pid = int(pid)
        self.reads = 0
        self._fd = None
        self._how = None
        try:
            self._fd = procfs.open_held(self.pid, "mem")
            self._how = "proc-mem"
        except procfs.ProcessGone:
            raise Fault("process %d does not exist" % self.pid)
        except procfs.ProcfsError as e:
            self._open_error = str(e)
            self._how = "process_vm_readv"

    def close(self):
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def read(self, addr, n):
        self._check(addr, n)
        if n == 0:
            return b""
        self.reads += 1
        if self._fd is not None:
            try:
                data = os.pread(self._fd, n, addr)
            except OSError as e:
                raise Fault("reading %d bytes at 0x%x of pid %d: %s" % (n, addr, self.pid, _errname(e.errno)))
            if len(data) != n:
                raise Fault("short read at 0x%x of pid %d (%d of %d bytes)" % (addr, self.pid, len(data), n))
            return data
        buf = ctypes.create_string_buffer(n)
        local = _iovec(ctypes.cast(buf, ctypes.c_void_p), n)
        remote = _iovec(addr, n)
        got = _process_vm_readv()(self.pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
        if got < 0:
            raise Fault("reading %d bytes at 0x%x of pid %d: %s" % (n, addr, self.pid, _errname(ctypes.get_errno())))
        if got != n:
            raise Fault("short read at 0x%x of pid %d (%d of %d bytes)" % (addr, self.pid, got, n))
        return buf.raw


class CachedMemory(Memory):
    """Reads through aligned blocks kept for the life of this object (one decode, one moment):
    neighbouring fields and small objects cost one read, not one each.  A block that cannot be
    read whole (it runs into an unmapped page) falls back to the exact read asked for."""

    BLOCK = 1024

    def __init__(self, inner, max_blocks=1024):
        self.inner = inner
        self._blocks = {}
        self._max_blocks = max_blocks

    @property
    def reads(self):
        return self.inner.reads

    def _block(self, base):
        data = self._blocks.get(base)
        if data is None:
            try:
                data = self.inner.read(base, self.BLOCK)
            except Fault:
                return None
            if len(self._blocks) < self._max_blocks:
                self._blocks[base] = data
        return data

    def read(self, addr, n):
        if not (0 < addr < USER_SPACE_END and 0 <= n <= MAX_READ and addr + n <= USER_SPACE_END) \
                or not isinstance(addr, int):
            self._check(addr, n)
        block = self.BLOCK
        off = addr % block
        if off + n <= block:                     # the common case: inside one block
            data = self._block(addr - off)
            if data is None:
                return self.inner.read(addr, n)
            return data[off:off + n]
        if n > 4 * block:                        # big reads go straight through
            return self.inner.read(addr, n)
        first = addr - off
        parts = []
        for base in range(first, addr + n, block):
            data = self._block(base)
            if data is None:
                return self.inner.read(addr, n)
            parts.append(data)
        return b"".join(parts)[off:off + n]


class BufferMemory(Memory):
    """Memory made of byte buffers at given addresses (for tests, and for reading a saved
    snapshot): regions {base: bytes}.  A read outside them is a Fault, as EFAULT would be."""

    def __init__(self, regions=None):
        self.regions = dict(regions or {})
        self.reads = 0

    def add(self, base, data):
        self.regions[base] = bytes(data)

    def read(self, addr, n):
        self._check(addr, n)
        self.reads += 1
        for base, data in self.regions.items():
            if base <= addr and addr + n <= base + len(data):
                return data[addr - base:addr - base + n]
        raise Fault("reading %d bytes at 0x%x: EFAULT (not mapped)" % (n, addr))
