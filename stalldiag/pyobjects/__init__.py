"""Read Python objects of another process from its memory, by each CPython version's layout."""
from .layouts import layout_for, version_from_maps
from .memory import Fault, NotRead, ProcessMemory, is_read
from .reader import ObjectReader, PyObj, read_object, reader_for
from .facts import Fact, decode, decode_with, describe
