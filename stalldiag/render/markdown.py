"""Markdown for tickets: verdict first, then evidence, tables, stacks, syscalls, GPU."""
from typing import Tuple
import re

from .common import (PROCESS_HEADER, failed_text, gpu_rows, looks_like_error, process_rows, short_frame,
                     stack_total, tail_heading, thread_stacks)
from .consensus import (MAX_HOST_LINES, MAX_OUTLIERS, class_where, host_groups, hosts_text, rank_ranges,
                        report_classes, shown_classes, stack_text)

MAX_RANK_TABLE = 64     # a host's ranks in the table; more: only the outliers


def _md_table(header, rows):
    def esc(x):
        return str(x).replace("|", "\\|").replace("\n", " ")
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(esc(x) for x in row) + " |" for row in rows]
    return lines


def render(report):
    v = report.verdict
    window = report.window
    out = ["# stalldiag: %s" % v.category, "",
           "**Verdict:** `%s` (confidence %s)  " % (v.category, v.confidence),
           "**Summary:** %s  " % v.summary,
           "**Culprit:** pid %s, tid %s%s  " % (v.pid, v.tid, " `%s`" % v.thread_name if v.thread_name else "")]
    if len(report.chain) > 1 or " → storage" in (report.chain_text or ""):
        out.append("**Chain:** %s  " % report.chain_text)
    out.append("**Window:** %.1f s, %s samples at %s Hz%s" % (
        window.duration_s or 0, window.samples, window.rate_hz,
        " — interrupted (%s)" % window.interrupted if window.interrupted else ""))
    if v.confidence_rests_on:
        out.append("**Confidence:** %s, resting on %s  " % (v.confidence, v.confidence_rests_on))
    if v.alternatives:
        out.append("**Not ruled out:** %s; **would settle it:** %s  " % (
            "; ".join(v.alternatives), "; ".join(v.to_settle or [])))
    progress = v.progress
    if progress:
        out.append("")
        out.append("**Progress:** %s  " % progress.state)
        out += ["- " + line for line in progress.evidence or []]
    out += ["", "## Evidence", ""]
    out += ["- " + line for line in v.evidence or []]
    if report.findings:
        out += ["", "## Findings", ""]
        out += ["- **%s**: %s" % (f.kind, f.summary) for f in report.findings]
    if report.ranks and report.ranks.rows:
        rows = report.ranks.rows
        classes = report_classes(report.ranks)
        out += ["", "## Ranks", "", "%d rank%s in %d class%s by stack (the same state and innermost frames)." % (
            len(rows), "" if len(rows) == 1 else "s", len(classes), "" if len(classes) == 1 else "es"), ""]
        out += _md_table(CLASS_HEADER, _class_rows(classes))
        listed = rows if len(rows) <= MAX_RANK_TABLE else [r for r in rows if r.suspect]
        if listed:
            out.append("")
            out += _md_table(["rank", "local", "host", "pid", "state", "where", "GPU", ""],
                             [[r.rank, r.local_rank, r.host, r.pid, r.state, r.where,
                               ",".join(map(str, r.gpus or [])) or "-", "**suspect**" if r.suspect else ""]
                              for r in listed])
        if len(listed) < len(rows):
            out += ["", "%s%d ranks in all: every one in the JSON report." % (
                "The outliers above; " if listed else "", len(rows))]
    out += ["", "## Processes", ""]
    out += _md_table(PROCESS_HEADER, process_rows(report))
    out += ["", "## Threads and syscalls", "",
            "Share of /proc samples each thread spent running or inside each syscall.", ""]
    rows = []
    for proc in report.processes:
        io = proc.io or {}
        for t in proc.threads:
            residency = ", ".join("%s %d%%" % (k, round(100 * s)) for k, s in list((t.residency or {}).items())[:4])
            rows.append([proc.pid, t.tid, t.name, t.kind, t.state or "-", t.samples,
                         residency or "-", "%.2f" % t.cpu_seconds if t.cpu_seconds is not None else "-"])
        if io:
            rows.append([proc.pid, "(process)", "read/write syscalls", "exact", "",
                         "", "read %d, write %d" % (io.get("syscr", 0), io.get("syscw", 0)), ""])
    out += _md_table(["pid", "tid", "thread", "kind", "state", "samples", "residency", "CPU s"], rows)
    exact = report.syscall_counts
    if exact:
        out += ["", "<details><summary>Exact syscall counts (%s, %.1f s)</summary>" % (
            exact.backend, exact.counted_s or 0), ""]
        out += ["- " + note for note in exact.notes or []]
        rows = [["tree", "", _counts_text(exact.tree)]]
        for proc in report.processes:
            rows.append([proc.pid, "", _counts_text(proc.syscall_counts)])
            for t in proc.threads:
                if t.syscall_counts and any(t.syscall_counts.values()):
                    rows.append([proc.pid, t.tid, _counts_text(t.syscall_counts)])
        out += _md_table(["pid", "tid", "counts (futex, read, openat, then the most frequent)"], rows[:400])
        if report.failed_calls:
            out += ["", "Failed calls:", ""]
            out += ["- pid %d: %s" % (failed.pid, failed_text(failed.calls)) for failed in report.failed_calls]
        out += ["", "</details>"]
    tails = report.output_tails
    if tails:
        out += ["", "## Last lines written", "",
                "The newest lines of the regular files each process writes to (redacted); "
                "`!` marks a line that looks like an error or a retry.", ""]
        for tail in tails:
            fence = _fence(tail.lines)
            out += ["**%s**" % _md_text(tail_heading(tail)), "", fence]
            out += [("! " if looks_like_error(line) else "  ") + line for line in tail.lines]
            out += [fence, ""]
    stacks = thread_stacks(report, limit=3)
    if stacks:
        out += ["", "<details><summary>Python stacks (%d threads)</summary>" % len(stacks), ""]
        for proc, thread, rendered in stacks:
            total = stack_total(thread)
            for frames, n in rendered:
                out.append("**pid %d tid %d `%s`** — %d of %d samples" % (
                    proc.pid, thread.tid, thread.name, n, total))
                out.append("")
                out.append("```")
                out += [short_frame(f) for f in frames[:40]]
                out.append("```")
                for entry in thread.locals:
                    if entry.values:
                        out.append("locals of `%s`: %s  " % (entry.function, ", ".join(
                            "`%s=%s`" % (k, v) for k, v in entry.values.items())))
                out.append("")
        out.append("</details>")
    gpu = report.gpu
    out += ["", "## GPU", ""]
    if gpu.available:
        out += _md_table(["index", "name", "util mean", "SM (GPM)", "tensor (GPM)", "memory used / total",
                          "MIG", "ECC uncorrected"], gpu_rows(report))
        if gpu.gpm_note:
            out += ["", gpu.gpm_note]
        users = [[p.pid, p.role, ", ".join(map(str, p.gpu.devices)) or "-",
                  ", ".join("GPU %s %.1f GiB" % (k, (v or 0) / 2**30) for k, v in (p.gpu.memory or {}).items())
                  or "-", p.gpu.sm_util_mean if p.gpu.sm_util_mean is not None else "-"]
                 for p in report.processes if p.gpu]
        if users:
            out += ["", "Processes on GPUs:", ""]
            out += _md_table(["pid", "role", "GPUs", "memory", "SM util mean"], users)
    else:
        out.append("GPU: not available (%s)" % gpu.reason)
    if report.limitations:
        out += ["", "## Not observed", ""]
        out += ["- " + line for line in report.limitations]
    return "\n".join(out) + "\n"


def _fence(lines):
    """A code fence longer than any run of backticks in the lines, so none can close it."""
    longest = max([len(run) for line in lines for run in re.findall(r"`+", line)] or [0])
    return "`" * max(3, longest + 1)


def _md_text(text):
    return re.sub(r"([\\`*_\[\]<>|#])", r"\\\1", text)


def _counts_text(counts, limit=8):
    if not counts:
        return "-"
    return ", ".join("%s %d" % (name, n) for name, n in list(counts.items())[:limit])


def _class_rows(classes):
    return [["%d%s" % (c.index, " **outlier**" if c.outlier else ""), c.count, rank_ranges(c.ranks, max_runs=12),
             hosts_text(c.hosts), "`%s`" % class_where(c), "`%s`" % stack_text(c.stack, frames=8),
             c.diverges.text() if c.diverges else "-"] for c in classes]


CLASS_HEADER = ["class", "ranks", "which", "hosts", "where", "stack (innermost first)", "diverges"]


def _rank_row(r):
    return [r.rank, r.host, r.pid, "-" if r.local_rank is None else r.local_rank, r.state, r.where,
            r.frame or "-"]


RANK_HEADER = ["rank", "host", "pid", "local", "state", "where", "frame"]


def render_incident(incident, all_ranks=False):
    """`stalldiag merge` for a ticket, short whatever the job's size: the merged verdict, the
    hosts, the classes of ranks by stack, the outlier ranks (all_ranks: every rank too)."""
    v = incident.verdict
    out = ["# stalldiag merge: %s" % v.category, "", "**Verdict:** `%s`  " % v.category,
           "**Summary:** %s  " % v.summary]
    if v.consensus:
        out.append("**Classes:** %s  " % _md_text(v.consensus))
    if v.missing_ranks:
        out.append("**Ranks in no report:** %s  " % v.missing_ranks)
    out += ["**Flight Recorder:** %s  " % _md_text(line) for line in v.flight_recorder or []]
    hosts = incident.hosts
    out += ["", "## Hosts", "", "%d report%s, %s, %d ranks." % (
        len(hosts), "" if len(hosts) == 1 else "s", hosts_text([h.host for h in hosts]), len(incident.ranks)), ""]
    if len(hosts) <= MAX_HOST_LINES:
        out += _md_table(["host", "category", "ranks", "processes", "progress", "summary"],
                         [[h.host, h.category, rank_ranges(h.ranks), h.processes, h.progress, h.summary]
                          for h in hosts])
    else:
        out += _md_table(["category", "hosts", "which", "e.g. (the first host's verdict)"],
                         [[category, len(members), hosts_text([h.host for h in members]), members[0].summary]
                          for category, members in host_groups(hosts)])
    if incident.groups:
        shown, hidden, hidden_ranks = shown_classes(incident.groups)
        out += ["", "## Classes of ranks by stack", "",
                "Ranks whose main threads are in the same state with the same innermost frames (function and "
                "file; lines may differ), largest class first; each class says where its stack leaves the "
                "larger class it shares most frames with.", ""]
        out += _md_table(CLASS_HEADER, _class_rows(shown))
        if hidden:
            out += ["", "%d more class%s of %d rank%s: `stalldiag merge --ranks all`, or the JSON." % (
                hidden, "" if hidden == 1 else "es", hidden_ranks, "" if hidden_ranks == 1 else "s")]
    outliers = incident.outliers
    if outliers:
        out += ["", "## Outliers", "", "%d rank%s: %s." % (
            len(outliers), "" if len(outliers) == 1 else "s", rank_ranges([r.rank for r in outliers], max_runs=12)), ""]
        out += _md_table(RANK_HEADER, [_rank_row(r) for r in outliers[:MAX_OUTLIERS]])
        if len(outliers) > MAX_OUTLIERS:
            out += ["", "%d more: `stalldiag merge --ranks all`, or the JSON." % (len(outliers) - MAX_OUTLIERS)]
    if all_ranks:
        out += ["", "## Ranks", ""]
        out += _md_table(RANK_HEADER + [""], [_rank_row(r) + ["**suspect**" if r.suspect else ""]
                                              for r in incident.ranks])
    return "\n".join(out) + "\n"


class MarkdownRenderer:
    format = "markdown"
    extensions: Tuple[str, ...] = (".md", ".markdown")

    # render() and render_incident() below are this module's functions, looked up when called
    def render(self, report, color=False):
        return render(report)

    def render_incident(self, incident, color=False, all_ranks=False):
        return render_incident(incident, all_ranks=all_ranks)
