"""Terminal summary: verdict and culprit first, then evidence, processes, stacks."""
from .common import (PROCESS_HEADER, failed_text, looks_like_error, process_rows, short_frame, stack_total,
                     tail_heading, telling_pids, thread_stacks)

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
        out.append(_c("Ranks", "bold", color))
        out.extend("  " + line for line in table(
            ["rank", "local", "host", "pid", "state", "where", "GPU", ""],
            [[r.rank, r.local_rank, r.host, r.pid, r.state, r.where[:40],
              ",".join(map(str, r.gpus or [])) or "-", "SUSPECT" if r.suspect else ""]
             for r in report.ranks.rows]))
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


def render_incident(incident):
    """`stalldiag merge` on a terminal: the merged verdict, every host, every rank, the groups."""
    v = incident.verdict
    out = ["MERGED VERDICT: %s" % v.category.upper(), v.summary, "", "Hosts"]
    out += ["  %s: %s (ranks %s) %s" % (h.host, h.category, ",".join(map(str, h.ranks)) or "-", h.summary[:120])
            for h in incident.hosts]
    out += ["", "Ranks"]
    out += ["  rank %-4d %-20s pid %-8d %-11s %s%s" % (r.rank, r.host, r.pid, r.state, r.where,
                                                      "   SUSPECT" if r.suspect else "")
            for r in incident.ranks]
    out += ["", "Groups by stack shape: " + "; ".join(
        "%s: ranks %s on %s" % (g.shape, ",".join(map(str, g.ranks)), ",".join(g.hosts)) for g in incident.groups)]
    return "\n".join(out) + "\n"


class TextRenderer:
    format = "text"
    extensions = (".txt",)

    # render() and render_incident() below are this module's functions, looked up when called
    def render(self, report, color=False):
        return render(report, color=color)

    def render_incident(self, incident, color=False):
        return render_incident(incident)
