"""`stalldiag merge`: one verdict across per-host reports of the same job.

Each host runs stalldiag through the cluster's own launcher (srun, kubectl
exec, pdsh) and writes its report; merge re-diagnoses each capture, lays
every rank of every host side by side and groups them by the shape of
their stacks.  Only shapes are compared, never timestamps, so differences
between host clocks do not matter.

merge_reports() reads the files; incident() holds the rules (which rank on which host is the
outlier) as one pure function of the per-host Reports; render/ formats the Incident.
"""
from .capture import load_report
from .diagnosis import rank_groups_of as group, suspect_ranks as suspects
from .render.model import Incident, IncidentGroup, IncidentHost, IncidentRank, IncidentVerdict, Suspect
from .report import build


def merge_reports(paths):
    """The Incident of per-host JSON reports (or captures): each re-diagnosed, then incident()."""
    return incident([(path, build(load_report(path))) for path in paths])


def incident(reports):
    """reports: [(file, Report)] one per host. Every rank side by side (by rank, then host), grouped
    by stack shape; the outlier (suspect_ranks) names the merged verdict."""
    hosts, ranks = [], []
    for path, report in reports:
        host = report.hostname or path
        rows = report.ranks.rows if report.ranks else []
        ranks += [IncidentRank(row=row, host=host, file=path) for row in rows]
        v = report.verdict
        hosts.append(IncidentHost(host=host, file=path, category=v.category, summary=v.summary,
                                  ranks=[r.rank for r in rows], processes=len(report.processes),
                                  progress=v.progress.state if v.progress else None))
    ranks.sort(key=lambda r: (r.rank, r.host))
    rows = [r.to_dict() for r in ranks]     # the diagnosis's rank rules read rows as dicts
    rank_of = {id(row): r for row, r in zip(rows, ranks)}
    odd = [rank_of[id(row)] for row in suspects(rows)]
    odd_keys = {(r.host, r.pid) for r in odd}
    for r in ranks:
        r.suspect = (r.host, r.pid) in odd_keys
    groups = [IncidentGroup(shape=sig, ranks=[rank_of[id(m)].rank for m in members],
                            hosts=sorted({rank_of[id(m)].host for m in members}))
              for sig, members in group(rows)]
    return Incident(merged_from=[path for path, _report in reports], verdict=_verdict(hosts, ranks, odd, groups),
                    hosts=hosts, ranks=ranks, groups=groups)


def _verdict(hosts, ranks, odd, groups):
    if not ranks:
        categories = sorted({h.category for h in hosts})
        return IncidentVerdict(category=categories[0] if len(categories) == 1 else "unknown",
                               summary="no ranks found in these reports (RANK not set?): per-host verdicts below")
    if odd:
        culprit = odd[0]
        others = [r for r in ranks if not r.suspect]
        majority_shape = group([r.to_dict() for r in others])[0][0] if others else "-"
        category = "collective" if any(r.state in ("collective", "rendezvous", "cuda") for r in others) \
            else culprit.state
        return IncidentVerdict(
            category=category,
            summary="rank %d on host %s is the outlier: %s, while %d other rank(s) are mostly %s" % (
                culprit.rank, culprit.host, "%s in %s" % (culprit.state, culprit.where), len(others), majority_shape),
            host=culprit.host, rank=culprit.rank, pid=culprit.pid,
            suspects=[Suspect(host=r.host, rank=r.rank, pid=r.pid) for r in odd])
    return IncidentVerdict(category=hosts[0].category,
                           summary="all %d ranks look alike (%s): no outlier rank" % (len(ranks), groups[0].shape))
