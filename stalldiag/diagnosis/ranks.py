"""Ranks of a distributed job: one row per rank, grouped by the shape of their stacks.

Ranks of a healthy or collectively-stuck job all look alike; the rank that
hung elsewhere is in the minority group.  Works for any number of ranks and,
through `stalldiag merge`, across hosts (only shapes are compared, never
times, so host clocks do not matter).
"""
from collections import Counter

from ..knowledge.ranks import LOCAL_RANK_VARS, first_var
from .explain import frame_text


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


def rank_rows(d):
    rows = []
    host = d.machine.hostname
    for pid, role in d.roles.items():
        if not str(role).startswith("rank "):
            continue
        view = d.main_thread(pid)
        env = d.procs[pid].env if pid in d.procs else {}
        rows.append({
            "rank": int(role.split()[1]),
            "local_rank": first_var(env, LOCAL_RANK_VARS),
            "pid": pid,
            "host": host,
            "state": view.kind if view else "unknown",
            "where": _where(view) if view else "-",
            "frame": frame_text(view.user_frame()) if view else None,
            "gpus": d.devices_of(pid),
        })
    return sorted(rows, key=lambda r: r["rank"])


def signature(row):
    return "%s in %s" % (row["state"], row["where"])


WAITING = ("collective", "rendezvous", "cuda")


def group(rows):
    """[(signature, [rows])] largest group first; on a tie, ranks waiting on their peers come
    first (they are the victims); the groups after the first are suspects."""
    counts = Counter(signature(r) for r in rows)
    groups = [(sig, [r for r in rows if signature(r) == sig]) for sig in counts]
    groups.sort(key=lambda g: (-len(g[1]), g[1][0]["state"] not in WAITING, g[1][0]["rank"]))
    return groups


def suspects(rows):
    """Ranks elsewhere while others wait on their peers; else the minority stack shape."""
    waiting = [r for r in rows if r["state"] in WAITING]
    if waiting and len(waiting) < len(rows):
        return [r for r in rows if r["state"] not in WAITING]
    groups = group(rows)
    if len(groups) < 2:
        return []
    majority = len(groups[0][1])
    return [r for sig, members in groups[1:] for r in members if len(members) < majority] or \
        [r for sig, members in groups[1:] for r in members]
