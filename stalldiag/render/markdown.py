"""Markdown for tickets: verdict first, then evidence, tables, stacks, syscalls, GPU."""
import re

from .common import (PROCESS_HEADER, failed_text, gpu_rows, looks_like_error, process_rows, short_frame,
                     stack_total, tail_heading, thread_stacks)


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
        out += ["", "## Ranks", ""]
        out += _md_table(["rank", "local", "host", "pid", "state", "where", "GPU", ""],
                         [[r.rank, r.local_rank, r.host, r.pid, r.state, r.where,
                           ",".join(map(str, r.gpus or [])) or "-", "**suspect**" if r.suspect else ""]
                          for r in report.ranks.rows])
        out += ["", "Groups by stack shape: " + "; ".join(
            "%s: ranks %s" % (g.shape, ",".join(map(str, g.ranks))) for g in report.ranks.groups)]
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


def render_incident(incident):
    """`stalldiag merge` for a ticket: the merged verdict, every host, every rank, the groups."""
    v = incident.verdict
    out = ["# stalldiag merge: %s" % v.category, "", "**Verdict:** `%s`  " % v.category,
           "**Summary:** %s  " % v.summary, "", "## Hosts"]
    out += ["", "| host | category | ranks | processes | progress | summary |", "|---|---|---|---|---|---|"]
    out += ["| %s | %s | %s | %d | %s | %s |" % (h.host, h.category, ",".join(map(str, h.ranks)), h.processes,
                                              h.progress, h.summary.replace("|", "\\|"))
            for h in incident.hosts]
    out += ["", "## Ranks"]
    out += ["", "| rank | host | pid | state | where | |", "|---|---|---|---|---|---|"]
    out += ["| %d | %s | %d | %s | %s | %s |" % (r.rank, r.host, r.pid, r.state, r.where,
                                               "**suspect**" if r.suspect else "") for r in incident.ranks]
    out += ["", "Groups by stack shape: " + "; ".join(
        "%s: ranks %s on %s" % (g.shape, ",".join(map(str, g.ranks)), ",".join(g.hosts)) for g in incident.groups)]
    return "\n".join(out) + "\n"


class MarkdownRenderer:
    format = "markdown"
    extensions = (".md", ".markdown")

    # render() and render_incident() below are this module's functions, looked up when called
    def render(self, report, color=False):
        return render(report)

    def render_incident(self, incident, color=False):
        return render_incident(incident)
