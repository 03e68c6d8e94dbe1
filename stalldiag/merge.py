"""`stalldiag merge`: one verdict across per-host reports of the same job.

Each host runs stalldiag through the cluster's own launcher (srun, kubectl
exec, pdsh) and writes its report; merge re-diagnoses each capture, lays
every rank of every host side by side and groups them by the shape of
their stacks.  Only shapes are compared, never timestamps, so differences
between host clocks do not matter.
"""
from .capture import load_report
from .diagnosis import rank_groups_of as group, suspect_ranks as suspects
from .report import build_report


def merge_reports(paths):
    hosts, rows = [], []
    for path in paths:
        report = build_report(load_report(path))
        host = (report["capture"].get("host") or {}).get("hostname") or path
        ranks = (report.get("ranks") or {}).get("rows") or []
        for row in ranks:
            row = dict(row, host=host, file=path)
            rows.append(row)
        v = report["verdict"]
        hosts.append({"host": host, "file": path, "category": v["category"], "summary": v["summary"],
                      "ranks": [r["rank"] for r in ranks], "processes": len(report["processes"]),
                      "progress": (v.get("progress") or {}).get("state")})
    rows.sort(key=lambda r: (r["rank"], r["host"]))
    odd = suspects(rows)
    odd_keys = {(r["host"], r["pid"]) for r in odd}
    for row in rows:
        row["suspect"] = (row["host"], row["pid"]) in odd_keys
    groups = [{"shape": sig, "ranks": [r["rank"] for r in members], "hosts": sorted({r["host"] for r in members})}
              for sig, members in group(rows)]
    verdict = _verdict(hosts, rows, odd, groups)
    return {"merged_from": list(paths), "verdict": verdict, "hosts": hosts, "ranks": rows, "groups": groups}


def _verdict(hosts, rows, odd, groups):
    if not rows:
        categories = sorted({h["category"] for h in hosts})
        return {"category": categories[0] if len(categories) == 1 else "unknown",
                "summary": "no ranks found in these reports (RANK not set?): per-host verdicts below",
                "host": None, "rank": None, "pid": None}
    if odd:
        culprit = odd[0]
        others = [r for r in rows if not r["suspect"]]
        majority = {"ranks": [r["rank"] for r in others],
                    "shape": group(others)[0][0] if others else "-"}
        category = "collective" if rows and any(r["state"] in ("collective", "rendezvous", "cuda")
                                                 for r in rows if not r["suspect"]) else culprit["state"]
        return {"category": category,
                "summary": "rank %d on host %s is the outlier: %s, while %d other rank(s) are mostly %s" % (
                    culprit["rank"], culprit["host"], "%s in %s" % (culprit["state"], culprit["where"]),
                    len(majority["ranks"]), majority["shape"]),
                "host": culprit["host"], "rank": culprit["rank"], "pid": culprit["pid"],
                "suspects": [{"host": r["host"], "rank": r["rank"], "pid": r["pid"]} for r in odd]}
    return {"category": hosts[0]["category"],
            "summary": "all %d ranks look alike (%s): no outlier rank" % (len(rows), groups[0]["shape"]),
            "host": None, "rank": None, "pid": None}


def render_text(merged, markdown=False):
    v = merged["verdict"]
    out = []
    if markdown:
        out += ["# stalldiag merge: %s" % v["category"], "", "**Verdict:** `%s`  " % v["category"],
                "**Summary:** %s  " % v["summary"], ""]
    else:
        out += ["MERGED VERDICT: %s" % v["category"].upper(), v["summary"], ""]
    out.append("## Hosts" if markdown else "Hosts")
    if markdown:
        out += ["", "| host | category | ranks | processes | progress | summary |", "|---|---|---|---|---|---|"]
        out += ["| %s | %s | %s | %d | %s | %s |" % (h["host"], h["category"], ",".join(map(str, h["ranks"])),
                                                  h["processes"], h["progress"], h["summary"].replace("|", "\\|"))
                for h in merged["hosts"]]
    else:
        out += ["  %s: %s (ranks %s) %s" % (h["host"], h["category"], ",".join(map(str, h["ranks"])) or "-",
                                           h["summary"][:120]) for h in merged["hosts"]]
    out += ["", "## Ranks" if markdown else "Ranks"]
    if markdown:
        out += ["", "| rank | host | pid | state | where | |", "|---|---|---|---|---|---|"]
        out += ["| %d | %s | %d | %s | %s | %s |" % (r["rank"], r["host"], r["pid"], r["state"], r["where"],
                                                   "**suspect**" if r["suspect"] else "") for r in merged["ranks"]]
    else:
        out += ["  rank %-4d %-20s pid %-8d %-11s %s%s" % (r["rank"], r["host"], r["pid"], r["state"], r["where"],
                                                          "   SUSPECT" if r["suspect"] else "")
                for r in merged["ranks"]]
    out += ["", "Groups by stack shape: " + "; ".join(
        "%s: ranks %s on %s" % (g["shape"], ",".join(map(str, g["ranks"])), ",".join(g["hosts"]))
        for g in merged["groups"])]
    return "\n".join(out) + "\n"
