"""`stalldiag merge`: one verdict across per-host reports of the same job.

Each host runs stalldiag through the cluster's own launcher (srun, kubectl
exec, pdsh) and writes its report; merge re-diagnoses each capture, lays
every rank of every host side by side and sorts them into classes: ranks
whose main threads have the same state and normalized stack (the diagnosis's
rank classes, LLNL STAT's equivalence classes), largest first.  The
outliers are the ranks not waiting while others wait on their peers, else
the ranks of the small classes; each class says where its stack leaves a
larger class's (the prefix tree).  Only stacks are compared, never
timestamps, so differences between host clocks do not matter.

merge_reports() reads the files (in worker processes when there are many: reading and
re-diagnosing each host's capture is most of a merge's time); incident() holds the rules as one
pure function of the per-host Reports; render/ formats the Incident. Of each host only what the
Incident needs is kept (its verdict, its rank rows), so a merge of thousands of hosts holds
thousands of rows, not thousands of reports.
"""
import os

from .capture import load_report
from .diagnosis import collective_gap_text, collective_gaps, diagnose, rank_groups_of as group, \
    suspect_ranks as suspects
from .errors import CaptureError, StalldiagError
from .render.consensus import class_where, classes_of, rank_ranges, ranks_text
from .render.model import Incident, IncidentHost, IncidentRank, IncidentVerdict, RankRow, Suspect

WAITING = ("collective", "rendezvous", "cuda")
PARALLEL_FROM = 16       # files: fewer are read in this process
MAX_JOBS = 8


def merge_reports(paths, jobs=None):
    """The Incident of per-host JSON reports (or captures): each re-diagnosed, then the rules.
    jobs: worker processes reading the files (default: the CPUs, at most MAX_JOBS)."""
    return incident_of_hosts(_read_hosts(list(paths), jobs))


def incident(reports):
    """reports: [(file, Report)] one per host. Every rank side by side (by rank, then host), in
    classes by stack; the outlier (suspect_ranks) names the merged verdict."""
    return incident_of_hosts(host_of_report(path, report) for path, report in reports)


# --- one host: its verdict and its rank rows ---------------------------------------------------

def host_of_report(path, report):
    """(IncidentHost, [RankRow]) of one host's Report."""
    v = report.verdict
    rows = report.ranks.rows if report.ranks else []
    collectives = ((report.capture or {}).get("collectives") or {}).get("ranks") if getattr(report, "capture", None) \
        else None
    return (IncidentHost(host=report.hostname or path, file=path, category=v.category, summary=v.summary,
                         ranks=[r.rank for r in rows], processes=len(report.processes),
                         progress=v.progress.state if v.progress else None, collectives=collectives or None), rows)


def read_host(path):
    """(IncidentHost, [rank row dicts]) of one file: its capture re-diagnosed (diagnose() only:
    the renderers' records of every thread are not needed here)."""
    capture = load_report(path)
    try:
        result = diagnose(capture)
    except StalldiagError:
        raise
    except Exception as exc:
        raise CaptureError("%s: malformed report (%s: %s)" % (path, type(exc).__name__, exc))
    verdict = result["verdict"]
    rows = (result.get("ranks") or {}).get("rows") or []
    progress = verdict.get("progress") or {}
    host = IncidentHost(host=(capture.get("host") or {}).get("hostname") or path, file=path,
                        category=verdict.get("category"), summary=verdict.get("summary") or "",
                        ranks=[r["rank"] for r in rows], processes=len(capture.get("processes") or []),
                        progress=progress.get("state"),
                        collectives=((capture.get("collectives") or {}).get("ranks") or None))
    return host, rows


def _jobs(jobs, n_files):
    if jobs is None:
        jobs = min(os.cpu_count() or 1, MAX_JOBS)
    return max(1, min(jobs, n_files // 4 or 1)) if n_files >= PARALLEL_FROM else 1


def _read_hosts(paths, jobs):
    """read_host() of every path, in order; in worker processes when there are many."""
    jobs = _jobs(jobs, len(paths))
    if jobs == 1:
        for path in paths:
            yield read_host(path)
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("fork")) as pool:
        yield from pool.map(read_host, paths, chunksize=max(1, min(32, len(paths) // (jobs * 8))))


def _rank_row(row, frames):
    """A RankRow of a row dict, its frames shared with every other rank's that has the same."""
    if isinstance(row, RankRow):
        return row
    stack = row.get("stack")
    if stack:
        row = dict(row, stack=[frames.setdefault(tuple(f), list(f)) for f in stack])
    return RankRow.read(row)


# --- the rules -------------------------------------------------------------------------------

def incident_of_hosts(hosts_and_rows):
    """The Incident of [(IncidentHost, [RankRow or row dict])], one per host, in file order."""
    merged_from, hosts, ranks = [], [], []
    frames = {}
    for host, rows in hosts_and_rows:
        merged_from.append(host.file)
        hosts.append(host)
        ranks += [IncidentRank(row=_rank_row(row, frames), host=host.host, file=host.file) for row in rows]
    ranks.sort(key=lambda r: (r.rank, r.host))
    # the diagnosis's rank rules read rows as dicts: the keys they read, and where each came from
    rows = [{"rank": r.rank, "state": r.state, "where": r.where, "stack": r.stack, "i": i}
            for i, r in enumerate(ranks)]
    odd = suspects(rows)
    for row in odd:
        ranks[row["i"]].suspect = True
    grouped = group(rows)
    classes = classes_of([(shape, [ranks[m["i"]] for m in members]) for shape, members in grouped])
    for index, (_shape, members) in enumerate(grouped, 1):     # RankClass.index
        for m in members:
            ranks[m["i"]].class_index = index
    # the verdict names an outlier of the smallest class first (the rarest stack), then the lowest rank
    size = {m["i"]: len(members) for _shape, members in grouped for m in members}
    odd = [ranks[row["i"]] for row in sorted(odd, key=lambda row: (size[row["i"]], row["i"]))]
    return Incident(merged_from=merged_from, verdict=_verdict(hosts, ranks, odd, classes),
                    hosts=hosts, ranks=ranks, groups=classes)


def _verdict(hosts, ranks, odd, classes):
    if not ranks:
        categories = sorted({h.category for h in hosts})
        return IncidentVerdict(category=categories[0] if len(categories) == 1 else "unknown",
                               summary="no ranks found in these reports (RANK not set?): per-host verdicts below")
    consensus, missing = consensus_text(classes), _missing(ranks)
    records = flight_recorder(hosts, ranks)
    if odd:
        culprit = odd[0]
        recorded = "; the Flight Recorder: %s" % records[0] if records else ""
        others = [r for r in ranks if not r.suspect]
        majority = next((c for c in classes if not c.outlier), None)
        category = "collective" if any(r.state in WAITING for r in others) else culprit.state
        return IncidentVerdict(
            category=category,
            summary="rank %d on host %s is the outlier: %s, while %d other rank(s) are mostly %s" % (
                culprit.rank, culprit.host, "%s in %s" % (culprit.state, culprit.where), len(others),
                majority.shape if majority else "-") + recorded,
            host=culprit.host, rank=culprit.rank, pid=culprit.pid,
            suspects=[Suspect(host=r.host, rank=r.rank, pid=r.pid) for r in odd],
            consensus=consensus, missing_ranks=missing, flight_recorder=records)
    return IncidentVerdict(category=hosts[0].category,
                           summary="all %d ranks look alike (%s): no outlier rank" % (len(ranks), classes[0].shape),
                           consensus=consensus, missing_ranks=missing, flight_recorder=records)


def class_phrase(c):
    """'ranks 0-4094: collective in all_reduce (torch.distributed), at sync_gradients (train.py:88)'."""
    return "%s: %s" % (ranks_text(c.ranks, max_runs=4), class_where(c))


def consensus_text(classes, majority=2, outliers=3):
    """The classes in one sentence: the largest ones, then the outliers' and where each left a
    larger class's stack. 'ranks 0-4094: collective in all_reduce (torch.distributed), at
    sync_gradients (train.py:88); rank 4095 diverged from #1 below train (train.py:80): cpu in
    evaluate (eval.py:31)'."""
    if not classes:
        return None
    big = [c for c in classes if not c.outlier][:majority]
    odd = [c for c in classes if c.outlier][:outliers]
    parts = [class_phrase(c) for c in big]
    for c in odd:
        phrase, d = class_phrase(c), c.diverges
        if d is not None and d.into is not None and d.common is not None:
            ranks, where = phrase.split(": ", 1)
            phrase = "%s diverged from #%d below %s: %s" % (ranks, d.from_class, d.common.text(), where)
        elif d is not None:
            phrase += " (%s)" % d.text()
        parts.append(phrase)
    rest = len(classes) - len(big) - len(odd)
    if rest > 0:
        parts.append("%d more class%s" % (rest, "" if rest == 1 else "es"))
    return "; ".join(parts)


def _missing(ranks):
    """Ranks of the job that no report has, as ranges ('0-1,3-16383'; None: none missing): every rank
    below its WORLD_SIZE when the ranks' environment gave it, else below the highest seen."""
    seen = {r.rank for r in ranks}
    if not seen or min(seen) < 0:
        return None
    worlds = [r.row.world_size for r in ranks if isinstance(getattr(r.row, "world_size", None), int)]
    top = max(worlds) if worlds else max(seen) + 1
    missing = set(range(max(top, max(seen) + 1))) - seen
    return rank_ranges(missing, max_runs=8) if missing else None


def flight_recorder(hosts, ranks):
    """The sentences of what every host's Flight Recorder records say together (the rank behind, the
    collective it never entered, a mismatch at a seq id), or None when no host read them."""
    records = [rec for h in hosts for rec in (h.collectives or [])]
    if not records:
        return None
    worlds = [r.row.world_size for r in ranks if isinstance(getattr(r.row, "world_size", None), int)]
    return [collective_gap_text(gap) for gap in collective_gaps(records, max(worlds) if worlds else None)[:3]] or None


__all__ = ["merge_reports", "incident", "incident_of_hosts", "read_host", "host_of_report", "consensus_text"]
