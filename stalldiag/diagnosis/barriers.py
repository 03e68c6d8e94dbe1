"""Processes waiting at one process-shared barrier are the parties of a collective (a part of
what a thread really is).

multiprocessing.Barrier is threading.Barrier over locks in shared memory: every party waits
until the last one arrives.  Threads of two or more processes waiting in Barrier.wait, called
from the same line, on a process-shared lock, are parties of one barrier: a collective, as
ranks at a torch.distributed barrier are.  When every party seen waits and none runs, one is
missing (it died or never arrived); a party that dies after arriving leaves the others
blocked even past their timeout.
"""
from ..knowledge import frames as frame_table
from .locks import shared_futex


def barrier_parties(views):
    """[(call frame, [views])]: the threads waiting at each process-shared barrier, grouped by the
    line that called Barrier.wait, where two or more processes wait."""
    groups = {}
    for view in views:
        call = frame_table.barrier_call(view.top_stack)
        if call is None or not shared_futex(view):
            continue
        groups.setdefault((call[1], call[2]), (call, []))[1].append(view)
    return [(call, members) for call, members in groups.values() if len({v.pid for v in members}) >= 2]
