"""The ranks' Flight Recorders side by side (capture["collectives"], probes/flight_recorder.py):
per process group, the rank that is behind (its last enqueued collective lower than the others':
the collective it never entered, by sequence id and name), the ranks waiting in a collective
(enqueued, not completed), and a mismatch of operation, sizes or dtypes between ranks at the same
sequence id.  A pure function of the ranks' records, used by the registry's rows (one host) and by
`stalldiag merge` (every host's records together).

Gloo records no "started" (last_started is -1): a collective is enqueued, then completed;
NCCL's records all three, so a rank whose last started is below its peers' is behind too.
"""
from collections import Counter
from dataclasses import field
from typing import Any, Dict, List, Optional

from ..records import typed_record
from ..vocab import rank_of



@typed_record(frozen=True)
class Gap:
    """What the records of one process group say went wrong, at one sequence id."""
    group: str                          # the group's description ("default_pg") or name
    seq: int                            # the collective's sequence id in that group
    op: Optional[str]                   # its operation, as the ranks that entered it name it
    kind: str                           # "behind" | "mismatch" | "waiting"
    ranks: List[int]                    # the odd ranks: behind, or whose entry differs
    others: List[int]                   # the ranks that entered it / the majority
    differs: Optional[str] = None       # mismatch: "operation", "sizes", "dtypes"
    values: Dict[str, Any] = field(default_factory=dict)   # mismatch: the odd value, the others'
    last: Dict[int, Any] = field(default_factory=dict)     # behind: rank -> (enqueued, started, completed)
    frames: List[Any] = field(default_factory=list)        # the odd rank's frames at its last entry
    other_frames: List[Any] = field(default_factory=list)  # the others' frames at seq
    unanswered: List[int] = field(default_factory=list)    # ranks of the group whose record was not read
    host_of: Dict[int, Any] = field(default_factory=dict)
    unread_behind: bool = False         # behind: the ranks are those whose record was not read,
                                        # while every rank read waits at seq

    def ranks_text(self):
        return _ranks_words(self.ranks)

    def as_dict(self):
        """The plain record a report keeps of it."""
        return {"group": self.group, "seq": self.seq, "op": self.op, "kind": self.kind, "ranks": list(self.ranks),
                "others": list(self.others), "differs": self.differs,
                "values": {k: v for k, v in self.values.items()}, "unread": list(self.unanswered)}

    def others_text(self):
        return _ranks_words(self.others)


def rank_ranges(ranks, max_runs=6):
    """'0-1,3-16383': sorted ranks as runs (at most max_runs, then '... (N runs)')."""
    runs = []
    for r in sorted(set(ranks)):
        if runs and r == runs[-1][1] + 1:
            runs[-1][1] = r
        else:
            runs.append([r, r])
    text = ",".join(str(a) if a == b else "%d-%d" % (a, b) for a, b in runs[:max_runs])
    return text + (",... (%d runs)" % len(runs) if len(runs) > max_runs else "")


def _ranks_words(ranks):
    ranks = sorted(set(ranks))
    return ("rank %d" % ranks[0]) if len(ranks) == 1 else "ranks %s" % rank_ranges(ranks, max_runs=6)


def _key(group):
    return group.get("desc") or group.get("name") or group.get("pg_id")


def _op_text(entry):
    return entry.get("op") if entry else None


FIELDS = (("operation", lambda e: e.get("op")),
          ("sizes", lambda e: e.get("in_sizes")),
          ("dtypes", lambda e: e.get("in_dtypes")))


def analyze(records, world=None):
    """[Gap] of rank records (the capture's collectives.ranks, possibly from several hosts),
    the most telling first: a mismatch, then ranks behind, then ranks all waiting."""
    by_group = {}
    for rec in records:
        if rec.get("rank") is None:
            continue
        for group in rec.get("groups") or []:
            by_group.setdefault(_key(group), {})[rec["rank"]] = (rec, group)
    found = []
    for name, members in sorted(by_group.items(), key=lambda kv: str(kv[0])):
        found += _group(name, members, world)
    order = {"mismatch": 0, "behind": 1, "waiting": 2}
    return sorted(found, key=lambda d: (order[d.kind], d.seq))


def _entries(rec, group):
    return {e["seq"]: e for e in rec.get("entries") or []
            if e.get("pg_id") == group.get("pg_id") and e.get("seq") is not None and not e.get("p2p")}


def _group(name, members, world):
    entries = {rank: _entries(rec, group) for rank, (rec, group) in members.items()}
    hosts = {rank: rec.get("host") for rank, (rec, _g) in members.items()}
    enq = {rank: group.get("last_enqueued") or 0 for rank, (_rec, group) in members.items()}
    started = {rank: group.get("last_started") for rank, (_rec, group) in members.items()}
    done = {rank: group.get("last_completed") or 0 for rank, (_rec, group) in members.items()}
    expected = set()
    for _rank, (_rec, group) in members.items():
        expected.update(group.get("ranks") or [])
    if not expected and world:
        expected = set(range(world))
    unanswered = sorted(expected - set(members))
    found = []
    # a mismatch: the first sequence id past the last all completed where the entries differ
    low = min(done.values())
    for seq in range(low + 1, max(enq.values()) + 1):
        have = {rank: e[seq] for rank, e in entries.items() if seq in e}
        if len(have) < 2:
            continue
        for field_name, value_of in FIELDS:
            values = {rank: repr(value_of(e)) for rank, e in have.items()}
            counts = Counter(values.values())
            if len(counts) < 2:
                continue
            common, n = counts.most_common(1)[0]
            if n == 1 or list(counts.values()).count(n) > 1:
                odd = sorted(have)[1:] if len(have) == 2 else sorted(r for r, v in values.items() if v != common)
            else:
                odd = sorted(r for r, v in values.items() if v != common)
            rest = sorted(r for r in have if r not in odd)
            found.append(Gap(
                group=name, seq=seq, op=_op_text(have[rest[0]]) if rest else _op_text(have[odd[0]]),
                kind="mismatch", ranks=odd, others=rest, differs=field_name,
                values={"odd": value_of(have[odd[0]]), "others": value_of(have[rest[0]]) if rest else None,
                        "odd_op": _op_text(have[odd[0]])},
                frames=have[odd[0]].get("frames") or [], other_frames=have[rest[0]].get("frames") if rest else [],
                unanswered=unanswered, host_of=hosts))
            break
        if found:
            break
    # behind: a rank whose last enqueued (or, where recorded, started) is below its peers'
    front = max(enq.values())
    behind = sorted(r for r in enq if enq[r] < front)
    if not behind:
        starts = {r: s for r, s in started.items() if s is not None}
        if len(starts) == len(enq) and len(set(starts.values())) > 1:
            top = max(starts.values())
            behind = sorted(r for r, s in starts.items() if s < top)
    if behind:
        seq = min(enq[r] for r in behind) + 1
        ahead = sorted(r for r in enq if r not in behind)
        entry = next((entries[r][seq] for r in ahead if seq in entries[r]), None)
        mine = entries[behind[0]].get(enq[behind[0]])
        found.append(Gap(
            group=name, seq=seq, op=_op_text(entry), kind="behind", ranks=behind, others=ahead,
            last={r: (enq[r], started[r], done[r]) for r in members},
            frames=(mine or {}).get("frames") or [], other_frames=(entry or {}).get("frames") or [],
            unanswered=unanswered, host_of=hosts))
    elif not found and unanswered and all(enq[r] > done[r] for r in enq) and len({done[r] for r in enq}) == 1:
        # every rank read waits at the same collective: the ranks it waits for are those not read
        seq = min(done.values()) + 1
        ahead = sorted(enq)
        entry = next((entries[r][seq] for r in ahead if seq in entries[r]), None)
        found.append(Gap(
            group=name, seq=seq, op=_op_text(entry), kind="behind", ranks=unanswered, others=ahead,
            last={r: (enq[r], started[r], done[r]) for r in members}, other_frames=(entry or {}).get("frames") or [],
            unanswered=unanswered, host_of=hosts, unread_behind=True))
    elif not found:
        waiting = sorted(r for r in enq if enq[r] > done[r])
        if waiting:
            seq = min(done[r] for r in waiting) + 1
            entry = next((entries[r][seq] for r in waiting if seq in entries[r]), None)
            found.append(Gap(
                group=name, seq=seq, op=_op_text(entry), kind="waiting", ranks=waiting,
                others=sorted(r for r in enq if r not in waiting),
                last={r: (enq[r], started[r], done[r]) for r in members},
                other_frames=(entry or {}).get("frames") or [], unanswered=unanswered, host_of=hosts))
    return found


def frame_words(frames, most=3):
    """'sync_gradients (gloo_flight_recorder.py:78) < main (...)': the innermost user frames of a
    record entry (torch.distributed's own frames skipped)."""
    import os
    own = [f for f in frames or [] if "torch/distributed" not in str(f[1]).replace("\\", "/")]
    return " < ".join("%s (%s:%s)" % (f[0], os.path.basename(str(f[1])), f[2]) for f in own[:most])


def sentence(d):
    """The words of one Gap."""
    where = " of group %s" % d.group
    if d.kind == "behind" and d.unread_behind:
        text = ("%s entered collective %d (%s) of group %s and none completed it: they wait for %s, whose record "
                "was not read" % (d.others_text(), d.seq, d.op or "?", d.group, d.ranks_text()))
        if d.other_frames:
            text += "; they entered it from %s" % frame_words(d.other_frames)
        return text
    if d.kind == "behind":
        enq, started, done = d.last.get(d.ranks[0], (None, None, None))
        text = ("%s is behind in group %s: it never entered collective %d (%s), which %s entered (its last enqueued is %s, "
                "last completed %s)" % (d.ranks_text(), d.group, d.seq, d.op or "?", d.others_text(), enq, done))
        if started is not None:
            text += ", last started %s" % started
        if d.frames:
            text += "; its last recorded collective was called from %s" % frame_words(d.frames)
        if d.other_frames and frame_words(d.other_frames) != frame_words(d.frames):
            text += "; the others entered it from %s" % frame_words(d.other_frames)
        return text
    if d.kind == "mismatch":
        if d.differs == "operation":
            text = "%s ran %s where %s ran %s" % (d.ranks_text(), d.values.get("odd"), d.others_text(),
                                                   d.values.get("others"))
        else:
            text = "%s called %s with %s %s where %s had %s" % (
                d.ranks_text(), d.values.get("odd_op") or d.op, "input sizes" if d.differs == "sizes" else "dtypes",
                _short(d.values.get("odd")), d.others_text(), _short(d.values.get("others")))
        text = "%s mismatch at collective %d%s: %s" % (d.differs, d.seq, where, text)
        if d.frames:
            text += "; %s called it from %s" % (d.ranks_text(), frame_words(d.frames))
        return text
    return ("%s entered collective %d (%s)%s and none completed it" % (d.ranks_text(), d.seq, d.op or "?", where)
            + ("; %s's record was not read" % _ranks_words(d.unanswered) if d.unanswered else ""))


def _short(value, most=60):
    text = str(value)
    return text if len(text) <= most else text[:most] + "..."


def clause(d):
    """The words a collective verdict's summary gets from one Gap."""
    if d.kind == "behind" and d.unread_behind:
        return "the Flight Recorder shows %s waiting in collective %d (%s) of group %s for %s" % (
            d.others_text(), d.seq, d.op or "?", d.group, d.ranks_text())
    if d.kind == "behind":
        return "the Flight Recorder shows %s never entered collective %d (%s) of group %s, which %s entered" % (
            d.ranks_text(), d.seq, d.op or "?", d.group, d.others_text())
    if d.kind == "mismatch":
        if d.differs == "operation":
            what = "ran %s where %s ran %s" % (d.values.get("odd"), d.others_text(), d.values.get("others"))
        else:
            what = "called %s with %s %s where %s had %s" % (
                d.values.get("odd_op") or d.op, "input sizes" if d.differs == "sizes" else "dtypes",
                _short(d.values.get("odd")), d.others_text(), _short(d.values.get("others")))
        return "the Flight Recorder shows a%s %s mismatch at collective %d of group %s: %s %s" % (
            "n" if d.differs == "operation" else "", d.differs, d.seq, d.group, d.ranks_text(), what)
    return sentence(d)


# --- the registry's detectors and sentences (registry/table.py) ---------------------------------

def gaps_of(g):
    """[Gap] of the graph's Flight Recorders (none when they were not read)."""
    from ..knowledge.ranks import WORLD_SIZE_VARS, first_var
    if g.collectives is None or not g.collectives.ranks:
        return []
    world = next((first_var(p.env, WORLD_SIZE_VARS) for p in g.proc_list if first_var(p.env, WORLD_SIZE_VARS)), None)
    return analyze(g.collectives.ranks, world)


def _rank_view(g, rank):
    for pid, role in g.roles.items():
        if rank_of(role) == rank:
            return g.main_thread(pid)
    return None


def _about(kind, g, d):
    from .types import Finding
    view = _rank_view(g, d.ranks[0]) if d.ranks else None
    return Finding.about(kind, view, gap=d, record=d.as_dict())


def behind(scene):
    from .registry.names import M
    return [_about(M.COLLECTIVE_BEHIND, scene.g, d) for d in gaps_of(scene.g) if d.kind == "behind"][:1] or None


def mismatch(scene):
    from .registry.names import M
    return [_about(M.COLLECTIVE_RECORD_MISMATCH, scene.g, d) for d in gaps_of(scene.g) if d.kind == "mismatch"][:1] \
        or None


def not_armed(scene):
    """Ranks whose Flight Recorder the job left no way out for: what to set next time."""
    from .registry.names import M
    from .types import Finding
    c = scene.g.collectives
    if c is None or c.armed or c.ranks:
        return None
    return Finding.about(M.FLIGHT_RECORDER_OFF, next_time=list(c.next_time))


def record(scene):
    """What was read, from where, and what the records say when they show no rank behind and no
    mismatch (every rank entered the same collective and none completed it)."""
    from .registry.names import M
    from .types import Finding
    c = scene.g.collectives
    if c is None or not (c.ranks or c.unread):
        return None
    gaps = [d for d in gaps_of(scene.g) if d.kind == "waiting"]
    return Finding.about(M.COLLECTIVE_RECORD, armed=list(c.armed), read=sorted(r["rank"] for r in c.ranks),
                         sources=sorted({r.get("source") for r in c.ranks if r.get("source")}),
                         unread=list(c.unread), read_s=c.read_s, waiting=gaps[:1])


def gap_text(g, gap, record=None):
    return sentence(gap)


def gap_clause(g, gap, record=None):
    return clause(gap)


def not_armed_text(g, next_time):
    return ("the job left PyTorch's Flight Recorder (its record of every collective's sequence id, operation and "
            "sizes) no way out, so only stacks could be compared; next time: %s" % "; or ".join(next_time))


def record_text(g, armed, read, sources, unread, read_s, waiting):
    parts = []
    if read:
        parts.append("Flight Recorder of %s read (%s, %.2f s)" % (_ranks_words(read), ", ".join(sources),
                                                                 read_s or 0.0))
    for u in unread:
        who = ("rank %s" % u["rank"]) if u.get("rank") is not None else "the debug frontend"
        parts.append("%s not read from %s: %s" % (who, u.get("source"), u.get("error")))
    if waiting:
        parts.append(sentence(waiting[0]))
    return "; ".join(parts) if parts else "Flight Recorder armed (%s) but nothing read" % ", ".join(armed)
