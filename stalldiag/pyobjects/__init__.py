"""Read Python objects of another process from its memory, by each CPython version's layout.

Nothing runs in the target and nothing stops it: bytes come from /proc/PID/mem (or
process_vm_readv) as py-spy reads frames.  CPython 3.8-3.13, x86_64 Linux, release builds that
are not free-threaded.

    version_from_maps(pid)              -> (3, 12) | NotRead      the target's Python, from its maps
    read_object(pid, addr, version)     -> PyObj | NotRead        any object, generically (bounded)
    decode(pid, addr, version)          -> Fact | NotRead         typed facts of a known object
    describe(fact)                      -> str                    one plain sentence

`addr` is an object's address: id() in the target, py-spy's `addr` of a local (`py-spy dump
--json --locals`).  Every field of a Fact is a value or NotRead(reason) (falsy); nothing read
from the target raises.  For several objects of one process at one moment, keep one reader:
`reader = reader_for(pid, version)`, then `decode_with(reader, addr)` each, then
`reader.close()`.

Modules: memory (reading bytes), layouts (offsets per version), reader (generic objects),
facts (the decoders and facts), fakes (objects built as bytes, for tests and replays).
"""
from .facts import Fact, decode, decode_with, describe
from .layouts import layout_for, version_from_maps
from .memory import Fault, NotRead, ProcessMemory, is_read
from .reader import ObjectReader, PyObj, read_object, reader_for

__all__ = ["Fact", "Fault", "NotRead", "ObjectReader", "ProcessMemory", "PyObj", "decode", "decode_with",
           "describe", "is_read", "layout_for", "read_object", "reader_for", "version_from_maps"]
