"""Terminal summary: verdict and culprit first, then evidence, processes, stacks."""
from typing import Tuple
from .common import (PROCESS_HEADER, failed_text, looks_like_error, process_rows, short_frame, stack_total,
                     tail_heading, telling_pids, thread_stacks)
from .consensus import (MAX_HOST_LINES, MAX_OUTLIERS, MAX_RANK_ROWS, class_heading, class_where, host_groups,
                        hosts_text, rank_ranges, ranks_text, report_classes, shown_classes, stack_text)

COLORS = {"red": "\033[31m", "yellow": "\033[33m", "green": "\033[32m", "bold": "\033[1m",
          "dim": "\033[2m", "reset": "\033[0m"}
CATEGORY_COLOR = {"sleep": "green", "cpu": "yellow", "unknown": "yellow"}
MAX_TAIL_FILES, TAIL_LINES = 6, 5    # the terminal shows the newest lines; the other reports all 20


def _c(text, color, enabled):
    return "%s%s%s" % (COLORS[color], text, COLORS["reset"]) if enabled else text


def table(header, rows):
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)] if rows else [len(h) for h in header]
    lines = ["  ".join(str(x).ljust(w) for x, w in zip(header, widths)).rstrip()]
    for row in rows:
        lines.append("  ".join(str(x).ljust(w) for x, w in zip(row, widths)).rstrip())
    return lines


def render(report, color=False, max_stacks=4):
    v = report.verdict
    out = []
    head = "VERDICT: %s" % v.category.upper()
    out.append(_c(head, CATEGORY_COLOR.get(v.category, "red"), color) +
               "  (confidence %s)" % v.confidence)
    out.append(v.summary)
    if v.pid is not None:
        out.append("culprit: pid %s tid %s%s" % (v.pid, v.tid, " '%s'" % v.thread_name if v.thread_name else ""))
    if len(report.chain) > 1 or " → storage" in (report.chain_text or ""):
        out.append("chain: " + report.chain_text)
    window = report.window
    progress = v.progress
    if progress:
        out.append("progress: %s (%s)" % (progress.state, progress.brief or "; ".join(progress.evidence or [])))
    if v.confidence_rests_on:
        out.append("confidence %s: rests on %s" % (v.confidence, v.confidence_rests_on))
    for alternative in v.alternatives or []:
        out.append("  not ruled out: " + alternative)
    if v.to_settle:
        out.append("  would settle it: " + "; ".join(v.to_settle))
    out.append(_c("window: %.1f s, %s samples at %s Hz%s" % (
        window.duration_s or 0, window.samples, window.rate_hz,
        ", INTERRUPTED (%s)" % window.interrupted if window.interrupted else ""), "dim", color))
    out.append("")
    out.append(_c("Evidence", "bold", color))
    for line in v.evidence or []:
        out.append("  - " + line)
    if report.findings:
        out.append("")
        out.append(_c("Findings", "bold", color))
        for f in report.findings:
            out.append("  - [%s] %s" % (f.kind, f.summary))
    if report.ranks and report.ranks.rows:
        out.append("")
        out.extend(_ranks_section(report.ranks, color))
    out.append("")
    out.append(_c("Processes", "bold", color))
    out.extend("  " + line for line in table(PROCESS_HEADER, process_rows(report)))
    stacks = thread_stacks(report, limit=1)
    first = telling_pids(report)
    stacks.sort(key=lambda item: (item[0].pid not in first, item[0].pid, item[1].tid))
    if stacks:
        out.append("")
        out.append(_c("Stacks (most common per thread)", "bold", color))
        for proc, thread, rendered in stacks[:max_stacks]:
            for frames, n in rendered:
                out.append("  pid %d tid %d '%s' (%d/%d samples):" % (
                    proc.pid, thread.tid, thread.name, n, stack_total(thread)))
                for frame in frames[:12]:
                    out.append("      " + short_frame(frame))
        if len(stacks) > max_stacks:
            out.append("  (%d more threads with stacks in the Markdown/JSON report)" % (len(stacks) - max_stacks))
    exact = report.syscall_counts
    if exact:
        out.append("")
        out.append(_c("Exact syscall counts (%s, %.1f s)" % (exact.backend, exact.counted_s or 0),
                      "bold", color))
        out.append("  tree: " + ", ".join("%s %d" % kv for kv in list((exact.tree or {}).items())[:8]))
        for proc in report.processes[:8]:
            counts = proc.syscall_counts or {}
            out.append("  pid %d: %s" % (proc.pid, ", ".join("%s %d" % kv for kv in list(counts.items())[:8])))
        for failed in report.failed_calls[:8]:
            out.append(_c("  pid %d: %s" % (failed.pid, failed_text(failed.calls)), "red", color))
    tails = report.output_tails
    if tails:
        out.append("")
        out.append(_c("Last lines written (! looks like an error or a retry)", "bold", color))
        for tail in tails[:MAX_TAIL_FILES]:
            out.append("  " + tail_heading(tail))
            for line in tail.lines[-TAIL_LINES:]:
                out.append(_c("    ! " + line, "red", color) if looks_like_error(line) else "      " + line)
        if len(tails) > MAX_TAIL_FILES:
            out.append("  (%d more files in the Markdown/JSON report)" % (len(tails) - MAX_TAIL_FILES))
    if report.limitations:
        out.append("")
        out.append(_c("Not observed", "bold", color))
        for line in report.limitations:
            out.append("  - " + line)
    return "\n".join(out) + "\n"


def _ranks_section(ranks, color):
    """A host's ranks: their classes by stack, then every rank (a few) or the outliers (many)."""
    rows = ranks.rows
    classes = report_classes(ranks)
    out = [_c("Ranks: %d in %d class%s by stack" % (len(rows), len(classes), "" if len(classes) == 1 else "es"),
              "bold", color)]
    if len(classes) > 1 or len(rows) > MAX_RANK_ROWS:
        shown, hidden, hidden_ranks = shown_classes(classes)
        out += class_lines(shown)
        if hidden:
            out.append("  (%d more class%s of %d rank%s in the Markdown/JSON report)" % (
                hidden, "" if hidden == 1 else "es", hidden_ranks, "" if hidden_ranks == 1 else "s"))
    listed = rows if len(rows) <= MAX_RANK_ROWS else [r for r in rows if r.suspect][:MAX_OUTLIERS]
    if listed:
        out.extend("  " + line for line in table(
            ["rank", "local", "host", "pid", "state", "where", "GPU", ""],
            [[r.rank, r.local_rank, r.host, r.pid, r.state, r.where[:40],
              ",".join(map(str, r.gpus or [])) or "-", "SUSPECT" if r.suspect else ""]
             for r in listed]))
    if len(listed) < len(rows):
        out.append("  (%s%d ranks in the Markdown/JSON report)" % (
            "the outliers above; " if listed else "", len(rows)))
    return out


def _rank_line(r):
    return "rank %-5d local %-3s %-20s pid %-8s %-11s %s" % (
        r.rank, "-" if r.local_rank is None else r.local_rank, r.host, r.pid, r.state,
        r.frame or r.where)


def class_lines(classes, indent="  "):
    """Each class: its heading, where its first rank is, its stack, where it leaves a larger one."""
    out = []
    for c in classes:
        out.append(indent + class_heading(c))
        out.append(indent + "    " + class_where(c))
        if c.stack:
            out.append(indent + "    stack: " + stack_text(c.stack))
        if c.diverges is not None:
            out.append(indent + "    " + c.diverges.text())
    return out


def render_incident(incident, all_ranks=False):
    """`stalldiag merge` on a terminal, short whatever the job's size: the merged verdict, the
    hosts by verdict, the classes of ranks by stack and the outlier ranks (all_ranks: then every
    rank on a line of its own)."""
    v = incident.verdict
    out = ["MERGED VERDICT: %s" % v.category.upper(), v.summary]
    if v.consensus:
        out.append(v.consensus)
    if v.missing_ranks:
        out.append("ranks in no report: %s" % v.missing_ranks)
    out += ["flight recorder: %s" % line for line in v.flight_recorder or []]
    hosts = incident.hosts
    out += ["", "Hosts: %d report%s, %s, %d ranks" % (len(hosts), "" if len(hosts) == 1 else "s",
                                                       hosts_text([h.host for h in hosts]), len(incident.ranks))]
    if len(hosts) <= MAX_HOST_LINES:
        out += ["  %s: %s (%s) %s" % (h.host, h.category, ranks_text(h.ranks, max_runs=4) if h.ranks else "no ranks",
                                      h.summary[:120]) for h in hosts]
    else:
        for category, members in host_groups(hosts)[:MAX_HOST_LINES // 2]:
            out.append("  %s on %s: e.g. %s" % (category, hosts_text([h.host for h in members]),
                                                 members[0].summary[:100]))
    if incident.groups:
        shown, hidden, hidden_ranks = shown_classes(incident.groups)
        out += ["", "Classes of ranks by stack: %d (largest first; a stack is innermost first, each frame called "
                "from the next)" % len(incident.groups)]
        out += class_lines(shown)
        if hidden:
            out.append("  (%d more class%s of %d rank%s: --ranks all, or --json)" % (
                hidden, "" if hidden == 1 else "es", hidden_ranks, "" if hidden_ranks == 1 else "s"))
    outliers = incident.outliers
    if outliers:
        out += ["", "Outliers: %d rank%s (%s)" % (len(outliers), "" if len(outliers) == 1 else "s",
                                                 rank_ranges([r.rank for r in outliers], max_runs=6))]
        out += ["  " + _rank_line(r) for r in outliers[:MAX_OUTLIERS]]
        if len(outliers) > MAX_OUTLIERS:
            out.append("  (%d more: --ranks all, or --json)" % (len(outliers) - MAX_OUTLIERS))
    if all_ranks:
        out += ["", "Ranks"]
        out += ["  " + _rank_line(r) + ("   SUSPECT" if r.suspect else "") for r in incident.ranks]
    elif len(incident.ranks) > MAX_OUTLIERS:
        out += ["", "(every rank on a line: stalldiag merge --ranks all, or --json)"]
    return "\n".join(out) + "\n"


class TextRenderer:
    format = "text"
    extensions: Tuple[str, ...] = (".txt",)

    # render() and render_incident() below are this module's functions, looked up when called
    def render(self, report, color=False):
        return render(report, color=color)

    def render_incident(self, incident, color=False, all_ranks=False):
        return render_incident(incident, all_ranks=all_ranks)
