"""stalldiag.pyobjects.memory: reading this very process through /proc/self/mem and through
process_vm_readv, and every failure as a Fault (never another exception)."""
import ctypes
import os

import pytest

from stalldiag.pyobjects.memory import MAX_READ, Fault, NotRead, ProcessMemory, is_read


def test_pread_and_process_vm_readv_read_the_same_bytes():
    buf = ctypes.create_string_buffer(b"stalldiag reads this")
    addr = ctypes.addressof(buf)
    with ProcessMemory(os.getpid()) as mem:
        assert mem.read(addr, 20) == b"stalldiag reads this"
        assert mem.cstring(addr) == b"stalldiag reads this"
        mem.close()                               # no file: process_vm_readv
        assert mem.read(addr, 9) == b"stalldiag"
        assert mem.reads == 3


@pytest.mark.parametrize("addr,n", [(0, 8), (8, 8), (1 << 47, 8), ((1 << 47) - 4, 8), (0x1000, MAX_READ + 1),
                                    (0x1000, -1)])
def test_reads_out_of_bounds_are_faults(addr, n):
    with ProcessMemory(os.getpid()) as mem:
        with pytest.raises(Fault):
            mem.read(addr, n)


def test_an_unmapped_address_is_a_fault_both_ways():
    with ProcessMemory(os.getpid()) as mem:
        with pytest.raises(Fault, match="EIO|EFAULT|short read"):
            mem.read(0x10000, 16)
        mem.close()
        with pytest.raises(Fault, match="EFAULT|short read"):
            mem.read(0x10000, 16)


def test_no_such_process_is_a_fault():
    with pytest.raises(Fault, match="does not exist"):
        ProcessMemory(2 ** 22 + 777)


def test_not_read_is_falsy_and_says_why():
    n = NotRead("EFAULT at 0x10")
    assert not n and not is_read(n) and is_read(0) and is_read(None)
    assert str(n) == "not read: EFAULT at 0x10"
