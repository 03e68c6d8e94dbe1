"""Kernel thread ids for the pthread ids that py-spy reports on Python 3.8-3.10.

Python 3.11+ keeps each thread's native id in its thread state and py-spy
reports it.  Older interpreters only keep `pthread_self()`, the address of
libc's `struct pthread`, and py-spy in --nonblocking mode gives that instead.
That struct holds the thread's kernel tid at a fixed offset (glibc x86_64:
0x2d0), so one read of /proc/PID/mem per thread maps it, with no stop and
no attach.  The offset is not trusted blindly: it must give, for every
Python thread of the process, a distinct tid that /proc/PID/task lists.
When the known offset fails that check (another libc, e.g. musl) the first
2 KiB of the struct are scanned for the one offset that passes it.
"""
import platform
import sys

from .. import procfs

# offsetof(struct pthread, tid) in glibc builds we know; tried first.
KNOWN_TID_OFFSETS = {"x86_64": (0x2D0,), "aarch64": (0xD0,), "ppc64le": (0xD0,)}
SCAN_BYTES = 0x800


class ThreadIdMap:
    """Maps pthread ids to tids process by process; remembers the offset that worked."""

    def __init__(self):
        self.offsets = list(KNOWN_TID_OFFSETS.get(platform.machine(), ()))
        self.method = {}    # pid -> how its ids were matched, for the capture

    def resolve(self, pid, pthread_ids):
        """{pthread id: tid} for the ids it could match, and {pthread id: why not} for the rest."""
        pthread_ids = sorted(set(pthread_ids))
        try:
            tids = set(procfs.tids(pid))
        except procfs.ProcfsError:
            return {}, {p: "the process exited before its threads could be matched" for p in pthread_ids}
        blobs = {}
        for pthread_id in pthread_ids:
            try:
                blobs[pthread_id] = procfs.read_memory(pid, pthread_id, SCAN_BYTES)
            except procfs.ProcessGone:
                return {}, {p: "the process exited before its threads could be matched" for p in pthread_ids}
            except procfs.AccessDenied:
                return {}, {p: "/proc/%d/mem could not be read (permission denied)" % pid for p in pthread_ids}
        offset = self._offset(blobs, tids)
        if offset is None:
            return self._partial(blobs, tids)
        if offset not in self.offsets:
            self.offsets.append(offset)
        self.method[pid] = "pthread id -> tid from struct pthread at +0x%x (/proc/%d/mem)" % (offset, pid)
        return {p: _u32(blob, offset) for p, blob in blobs.items()}, {}

    def _offset(self, blobs, tids):
        for offset in self.offsets:
            if _valid(blobs, tids, offset):
                return offset
        found = [o for o in range(0, SCAN_BYTES - 3, 4) if _valid(blobs, tids, o)]
        if not found:
            return None
        # Several offsets can pass for one or two threads (a copy of the pid
        # lies beside the tid in old glibc); they are only safe if they agree.
        mappings = {tuple(_u32(b, o) for b in blobs.values()) for o in found}
        return found[0] if len(mappings) == 1 else None

    def _partial(self, blobs, tids):
        """Some threads exited between py-spy's sample and this read: match the live ones."""
        matched, why = {}, {}
        for pthread_id, blob in blobs.items():
            tid = next((_u32(blob, o) for o in self.offsets if _u32(blob, o) in tids), None)
            if tid is not None and tid not in matched.values():
                matched[pthread_id] = tid
            else:
                why[pthread_id] = ("no kernel thread of the process matches it (the thread exited, "
                                   "or the C library's thread struct has an unknown layout)")
        return matched, why


def _u32(blob, offset):
    chunk = blob[offset:offset + 4]
    return int.from_bytes(chunk, sys.byteorder) if len(chunk) == 4 else -1


def _valid(blobs, tids, offset):
    values = [_u32(blob, offset) for blob in blobs.values()]
    return all(v in tids for v in values) and len(set(values)) == len(values)
