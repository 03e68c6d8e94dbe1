"""Classes of ranks as the reports show them, and rank and host lists written short.

The diagnosis decides which ranks are alike (diagnosis/ranks.py: the same state and normalized
stack) and orders the classes; this module gives each class what a reader is shown: its ranks
as ranges (`0-4094,4096-4099`), its hosts (`node[001-256]`), its first rank's stack (innermost
first, each frame as function and file basename), and STAT's prefix-tree position: where its
stack leaves the stack of a larger class, the one it shares most frames with, counted from the
outermost frame.
"""
import os
import re

from .model import ClassFrame, Divergence, RankClass

CLASS_FRAMES = 12      # the frames of a class's stack shown (and compared by the diagnosis)


# --- compact lists ----------------------------------------------------------------------------

def runs(numbers):
    """[(first, last)] of the sorted distinct integers."""
    out = []
    for n in sorted(set(numbers)):
        if out and n == out[-1][1] + 1:
            out[-1][1] = n
        else:
            out.append([n, n])
    return [(a, b) for a, b in out]


def _runs_text(spans, width=0, max_runs=None):
    """('0-7,16-23,...', ' (50 runs)'): the runs, and what says that some were left out."""
    def num(n):
        return "%0*d" % (width, n)
    parts = [num(a) if a == b else "%s-%s" % (num(a), num(b)) for a, b in spans]
    if max_runs is not None and len(parts) > max_runs:
        return ",".join(parts[:max_runs]) + ",...", " (%d runs)" % len(parts)
    return ",".join(parts), ""


def rank_ranges(ranks, max_runs=None):
    """'0-4094,4096-4099': the ranks as runs of consecutive numbers (max_runs: at most that many
    runs, then '... (N runs)')."""
    text, more = _runs_text(runs(ranks), max_runs=max_runs)
    return text + more if text else "-"


def ranks_text(ranks, max_runs=8):
    """'rank 7' or 'ranks 0-4094,4096-4099'."""
    distinct = set(ranks)
    return "%s %s" % ("rank" if len(distinct) == 1 else "ranks", rank_ranges(distinct, max_runs))


HOST_NUMBER = re.compile(r"^(.*?)(\d+)$")


def host_ranges(hosts, max_runs=6, max_names=3):
    """Host names written short: 'node[001-256]' when they share a prefix and end in a number
    (several prefixes: 'a[01-04],b[1-2]', up to three); otherwise the count and the first few."""
    names = sorted(set(h for h in hosts if h is not None))
    if len(names) <= 1:
        return names[0] if names else "-"
    split = [HOST_NUMBER.match(name) for name in names]
    groups = None
    if all(split):
        # a prefix whose numbers are zero-padded (node0001) keeps their width: node[0001-2048];
        # otherwise numbers of any width join: node[1-12]
        padded = {m.group(1) for m in split if m.group(2).startswith("0") and len(m.group(2)) > 1}
        groups = {}
        for m in split:
            prefix, digits = m.group(1), m.group(2)
            groups.setdefault((prefix, len(digits) if prefix in padded else 0), []).append(int(digits))
    if groups and len(groups) <= 3:
        # padded and unpadded numbers of one prefix: one group of the padded width, when it fits
        parts = []
        for (prefix, width), numbers in sorted(groups.items()):
            if len(numbers) == 1:
                parts.append("%s%0*d" % (prefix, width, numbers[0]))
            else:
                text, more = _runs_text(runs(numbers), width, max_runs)
                parts.append("%s[%s]%s" % (prefix, text, more))
        return ",".join(parts)
    shown = ", ".join(names[:max_names])
    return "%d hosts: %s%s" % (len(names), shown, ", ..." if len(names) > max_names else "")


def hosts_text(hosts):
    """'node0003' or '256 hosts node[0001-0256]'."""
    names = sorted(set(h for h in hosts if h is not None))
    if len(names) == 1:
        return names[0]
    text = host_ranges(names)
    return text if text.endswith("...") or " hosts: " in text else "%d hosts %s" % (len(names), text)


# --- classes ----------------------------------------------------------------------------------

def class_stack(member):
    """A rank's stack as its class shows it: ClassFrames innermost first, at most CLASS_FRAMES."""
    return [ClassFrame(f[0], os.path.basename(f[1]) if f[1] else "?", f[2] if len(f) > 2 else None)
            for f in (member.stack or [])[:CLASS_FRAMES]]


def _by_depth(member):
    """{depth from the outermost frame: (function, file basename, line)} for the frames kept."""
    stack = member.stack or []
    depth = member.stack_depth if isinstance(member.stack_depth, int) else len(stack)
    depth = max(depth, len(stack))
    return {depth - 1 - i: (f[0], os.path.basename(f[1]) if f[1] else "?", f[2] if len(f) > 2 else None)
            for i, f in enumerate(stack)}, depth


def divergence(member, other):
    """(frames shared, Divergence less its class) of two ranks' stacks compared from the outermost
    frame: the deepest frame both have, this member's frame below it, and whether its whole stack
    is a part of the other's. Outermost frames a row did not keep (beyond 16) count as shared:
    they are the same training loop's."""
    mine, my_depth = _by_depth(member)
    theirs, their_depth = _by_depth(other)
    common = None
    shared = 0
    for depth in range(min(my_depth, their_depth)):
        a, b = mine.get(depth), theirs.get(depth)
        if a is not None and b is not None:
            if a[:2] != b[:2]:
                return shared, common, ClassFrame(*a), False
            common = ClassFrame(*a)
        shared += 1
    if my_depth > their_depth:          # it went deeper than the other's innermost frame
        below = mine.get(their_depth)
        return shared, common, ClassFrame(*below) if below else None, False
    return shared, common, None, my_depth < their_depth


def classes_of(groups):
    """RankClass records of the diagnosis's classes, in its order: groups is [(shape, members)],
    each member a rank row (rank, host, state, where, frame, stack, stack_depth, suspect)."""
    out = []
    firsts = []
    for index, (shape, members) in enumerate(groups, 1):
        if not members:
            continue
        first = min(members, key=lambda m: m.rank)
        diverges = None
        if first.stack and out:
            best = None
            for earlier, other in zip(out, firsts):
                if not other.stack:
                    continue
                shared, common, into, prefix = divergence(first, other)
                if best is None or shared > best[0]:
                    best = (shared, Divergence(earlier.index, common, into, prefix))
            diverges = best[1] if best else None
        out.append(RankClass(
            index=index, shape=shape, state=first.state, where=first.where, frame=first.frame,
            ranks=sorted(m.rank for m in members), hosts=sorted({m.host for m in members if m.host is not None}),
            stack=class_stack(first), depth=first.stack_depth, diverges=diverges,
            outlier=any(m.suspect for m in members)))
        firsts.append(first)
    return out


def report_classes(ranks):
    """The RankClass records of one host's Ranks: its groups (the diagnosis's classes) with their rows."""
    by_rank = {}
    for row in ranks.rows:
        by_rank.setdefault(row.rank, []).append(row)
    return classes_of([(g.shape, [by_rank[r].pop(0) for r in g.ranks if by_rank.get(r)]) for g in ranks.groups])


def stack_text(stack, frames=5):
    """'all_reduce (distributed_c10d.py) < sync_gradients (gloo_hang.py) < train (gloo_hang.py) < ...':
    the innermost frames, each called from the next, without lines (the ranks of a class share
    functions, not lines)."""
    if not stack:
        return "(no Python stack)"
    shown = [f.text(line=False) for f in stack[:frames]]
    more = len(stack) - frames
    return " < ".join(shown) + (" < ... (%d more)" % more if more > 0 else "")


# --- what a short report shows ------------------------------------------------------------------

MAX_CLASSES = 6        # classes a terminal or Markdown report lists (the outliers' among them)
MAX_OUTLIERS = 8       # outlier ranks listed one a line
MAX_HOST_LINES = 8     # hosts listed one a line; more are grouped by their verdict's category
MAX_RANK_ROWS = 16     # a host's ranks listed one a line; more: only the outliers


def shown_classes(classes, limit=MAX_CLASSES):
    """(the classes to list, in order: the largest and every outlier class up to limit; the
    number of classes left out, their ranks)."""
    odd = [c for c in classes if c.outlier]
    keep_odd = odd[:max(limit // 2, limit - sum(1 for c in classes if not c.outlier))]
    big = [c for c in classes if not c.outlier][:limit - len(keep_odd)]
    kept = {id(c) for c in big + keep_odd}
    shown = [c for c in classes if id(c) in kept]
    hidden = [c for c in classes if id(c) not in kept]
    return shown, len(hidden), sum(c.count for c in hidden)


def host_groups(hosts):
    """[(category, [IncidentHost])] largest first: the hosts by their verdict's category."""
    groups = {}
    for h in hosts:
        groups.setdefault(h.category, []).append(h)
    return sorted(groups.items(), key=lambda kv: (-len(kv[1]), str(kv[0])))


def class_heading(c):
    """'#1  4095 ranks 0-4094 on 512 hosts node[001-512]'."""
    return "#%d  %d rank%s %s on %s%s" % (c.index, c.count, "" if c.count == 1 else "s",
                                         rank_ranges(c.ranks, max_runs=6), hosts_text(c.hosts),
                                         "   OUTLIER" if c.outlier else "")


def class_where(c):
    """'collective in all_reduce (torch.distributed), at sync_gradients (train.py:88)'."""
    place = (c.frame or "").split(" `")[0]
    if not place:
        return "%s in %s" % (c.state, c.where)
    if place.startswith(c.where.split(" (")[0] + " ("):
        return "%s in %s" % (c.state, place)
    return "%s in %s, at %s" % (c.state, c.where, place)
