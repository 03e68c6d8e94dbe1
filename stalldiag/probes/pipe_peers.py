"""The process at the other end of a pipe, even outside the inspected tree.

A run whose stdout is piped into a log shipper (`python train.py | tee log`, a
container's logging agent) blocks in write() once that reader stops draining
the pipe; the reader is a sibling, not a child, so the tree never contains it.
When a thread is seen blocked reading or writing a pipe that no inspected
process holds the other end of, the host's fd tables are scanned once for that
pipe's inode, and the processes found are sampled like the rest.
"""
from .. import fds

PIPE_SYSCALLS = ("read", "write", "readv", "writev", "splice")


class PipePeers:
    """Looks up each pipe a sampled thread blocks on once; returns pids worth sampling."""

    def __init__(self):
        self._looked = set()     # pipe targets already resolved
        self.found = {}          # pipe target -> pids outside the tree holding it

    def new_peers(self, sampler, t):
        fresh = []
        for pid, key in list(sampler.live.items()):
            record = sampler.records[key]
            for thread in record.threads.values():
                last = thread.samples[-1] if thread.samples else None
                if not last or last[0] != t or last[2] not in PIPE_SYSCALLS or last[3] is None:
                    continue
                fd = (record.details[last[3]] or {}).get("fd") or {}
                target = fd.get("target") or ""
                if not target.startswith("pipe:") or target in self._looked:
                    continue
                self._looked.add(target)
                inside = {p for p, k in sampler.live.items() if target in sampler.records[k].endpoints}
                if inside - {pid}:
                    continue        # the other end is inspected already
                outside = fds.host_holders(target, skip=set(sampler.live))
                if outside:
                    self.found[target] = outside
                    fresh.extend(outside)
        return list(dict.fromkeys(fresh))
