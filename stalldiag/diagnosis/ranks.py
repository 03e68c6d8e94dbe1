"""Ranks of a distributed job: one row per rank, grouped into classes by their stacks.

Ranks of a healthy or collectively-stuck job look alike; the rank that hung elsewhere is in a
small class.  A rank's class (STAT's equivalence classes) is its state (collective, cuda, cpu,
...) and the normalized stack of its main thread: the innermost CLASS_FRAMES frames it ran
itself (a forked child's inherited parent frames dropped), each as (function, file basename),
line numbers dropped.  A report written before rows carried their stack falls back to the
state and where the rank is (signature()).  Works for any number of ranks and, through
`stalldiag merge`, across hosts (only stacks are compared, never times, so host clocks do not
matter).
"""
import os

from ..knowledge.frames import own_frames
from ..knowledge.ranks import LOCAL_RANK_VARS, WORLD_SIZE_VARS, first_var
from .explain import frame_text
from ..vocab import rank_of

STACK_FRAMES = 16     # frames of a rank's main thread its row keeps, innermost first
CLASS_FRAMES = 12     # of those, the innermost that decide its class


def _where(view):
    """A short description of where a rank's main thread is: a framework frame, else the user's."""
    from ..knowledge.frames import framework_context
    for frames, _n in view.stacks_by_count()[:1]:
        context = framework_context(frames)
        if context:
            depth, row = context[0]
            return "%s (%s)" % (frames[depth][0], row.framework)
    frame = view.user_frame()
    return frame[0] if frame else view.kind


def _stack(view):
    """The main thread's commonest stack as the rank ran it: [[function, file, line], ...] innermost
    first, at most STACK_FRAMES, and how many frames it has in all."""
    frames = own_frames(view.top_stack or [])
    return [[f[0], f[1], f[2]] for f in frames[:STACK_FRAMES]], len(frames)


def rank_rows(d):
    rows = []
    host = d.machine.hostname
    for pid, role in d.roles.items():
        if rank_of(role) is None:
            continue
        view = d.main_thread(pid)
        env = d.procs[pid].env if pid in d.procs else {}
        stack, depth = _stack(view) if view else ([], 0)
        rows.append({
            "rank": rank_of(role),
            "local_rank": first_var(env, LOCAL_RANK_VARS),
            "pid": pid,
            "host": host,
            "state": view.kind if view else "unknown",
            "where": _where(view) if view else "-",
            "frame": frame_text(view.user_frame()) if view else None,
            "gpus": d.devices_of(pid),
            "stack": stack,
            "stack_depth": depth,
            "world_size": first_var(env, WORLD_SIZE_VARS),
        })
    return sorted(rows, key=lambda r: r["rank"])


def signature(row):
    return "%s in %s" % (row["state"], row["where"])


def normalized_stack(row):
    """((function, file basename), ...) of the row's innermost CLASS_FRAMES frames; () when the
    row has no frames (no Python stack, or a report older than rows' stacks)."""
    return tuple((f[0], os.path.basename(f[1] or "") if f[1] else "?")
                 for f in (row.get("stack") or [])[:CLASS_FRAMES])


def class_key(row):
    """What makes two ranks alike: the state and the normalized stack (else where it is)."""
    stack = normalized_stack(row)
    return (row["state"], stack) if stack else (row["state"], row["where"])


WAITING = ("collective", "rendezvous", "cuda")


def group(rows):
    """[(signature, [rows])]: the classes of ranks (class_key), largest first; on a tie, ranks
    waiting on their peers come first (they are the victims), then the lowest rank. The
    classes after the first are suspects."""
    classes = {}
    for row in rows:
        classes.setdefault(class_key(row), []).append(row)
    groups = [(signature(members[0]), members) for members in classes.values()]
    groups.sort(key=lambda g: (-len(g[1]), g[1][0]["state"] not in WAITING, min(r["rank"] for r in g[1])))
    return groups


def suspects(rows):
    """Ranks elsewhere while others wait on their peers; else the ranks of the classes smaller
    than the largest (all classes after the first when they are of one size)."""
    waiting = [r for r in rows if r["state"] in WAITING]
    if waiting and len(waiting) < len(rows):
        return [r for r in rows if r["state"] not in WAITING]
    groups = group(rows)
    if len(groups) < 2:
        return []
    majority = len(groups[0][1])
    odd = {id(r) for sig, members in groups[1:] for r in members if len(members) < majority} or \
        {id(r) for sig, members in groups[1:] for r in members}
    return [r for r in rows if id(r) in odd]
