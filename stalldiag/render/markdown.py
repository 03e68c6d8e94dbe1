"""Markdown for tickets: verdict first, then evidence, tables, stacks, syscalls, GPU."""
import re

from .common import (PROCESS_HEADER, failed_calls, failed_text, gpu_rows, looks_like_error, output_tails,
                     process_rows, short_frame, tail_heading, thread_stacks)


def _md_table(header, rows):
    def esc(x):
        return str(x).replace("|", "\\|").replace("\n", " ")
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(esc(x) for x in row) + " |" for row in rows]
    return lines


def render(report):
    v = report["verdict"]
    window = report.get("window") or {}
    out = ["# stalldiag: %s" % v["category"], "",
           "**Verdict:** `%s` (confidence %s)  " % (v["category"], v.get("confidence")),
           "**Summary:** %s  " % v.get("summary"),
           "**Culprit:** pid %s, tid %s%s  " % (v.get("pid"), v.get("tid"),
                                                " `%s`" % v["thread_name"] if v.get("thread_name") else "")]
    if len(report.get("chain") or []) > 1 or " → storage" in (report.get("chain_text") or ""):
        out.append("**Chain:** %s  " % report["chain_text"])
    out.append("**Window:** %.1f s, %s samples at %s Hz%s" % (
        window.get("duration_s") or 0, window.get("samples"), window.get("rate_hz"),
        " — interrupted (%s)" % window["interrupted"] if window.get("interrupted") else ""))
    if v.get("confidence_rests_on"):
        out.append("**Confidence:** %s, resting on %s  " % (v.get("confidence"), v["confidence_rests_on"]))
    if v.get("alternatives"):
        out.append("**Not ruled out:** %s; **would settle it:** %s  " % (
            "; ".join(v["alternatives"]), "; ".join(v.get("to_settle") or [])))
    progress = v.get("progress") or {}
    if progress:
        out.append("")
        out.append("**Progress:** %s  " % progress.get("state"))
        out += ["- " + line for line in progress.get("evidence") or []]
    out += ["", "## Evidence", ""]
    out += ["- " + line for line in v.get("evidence") or []]
    if report.get("findings"):
        out += ["", "## Findings", ""]
        out += ["- **%s**: %s" % (f["kind"], f["summary"]) for f in report["findings"]]
    ranks = report.get("ranks") or {}
    if ranks.get("rows"):
        out += ["", "## Ranks", ""]
        out += _md_table(["rank", "local", "host", "pid", "state", "where", "GPU", ""],
                         [[r["rank"], r.get("local_rank"), r.get("host"), r["pid"], r["state"], r["where"],
                           ",".join(map(str, r.get("gpus") or [])) or "-", "**suspect**" if r.get("suspect") else ""]
                          for r in ranks["rows"]])
        out += ["", "Groups by stack shape: " + "; ".join(
            "%s: ranks %s" % (g["shape"], ",".join(map(str, g["ranks"]))) for g in ranks.get("groups") or [])]
    out += ["", "## Processes", ""]
    out += _md_table(PROCESS_HEADER, process_rows(report))
    out += ["", "## Threads and syscalls", "",
            "Share of /proc samples each thread spent running or inside each syscall.", ""]
    rows = []
    for proc in report.get("processes") or []:
        io = proc.get("io") or {}
        for t in proc.get("threads") or []:
            residency = ", ".join("%s %d%%" % (k, round(100 * s)) for k, s in list((t.get("residency") or {}).items())[:4])
            rows.append([proc["pid"], t["tid"], t.get("name"), t.get("kind"), t.get("state") or "-", t.get("samples"),
                         residency or "-", "%.2f" % t["cpu_seconds"] if t.get("cpu_seconds") is not None else "-"])
        if io:
            rows.append([proc["pid"], "(process)", "read/write syscalls", "exact", "",
                         "", "read %d, write %d" % (io.get("syscr", 0), io.get("syscw", 0)), ""])
    out += _md_table(["pid", "tid", "thread", "kind", "state", "samples", "residency", "CPU s"], rows)
    exact = report.get("syscall_counts")
    if exact:
        out += ["", "<details><summary>Exact syscall counts (%s, %.1f s)</summary>" % (
            exact.get("backend"), exact.get("counted_s") or 0), ""]
        out += ["- " + note for note in exact.get("notes") or []]
        rows = [["tree", "", _counts_text(exact.get("tree"))]]
        for proc in report.get("processes") or []:
            rows.append([proc["pid"], "", _counts_text(proc.get("syscall_counts"))])
            for t in proc.get("threads") or []:
                if t.get("syscall_counts") and any(t["syscall_counts"].values()):
                    rows.append([proc["pid"], t["tid"], _counts_text(t["syscall_counts"])])
        out += _md_table(["pid", "tid", "counts (futex, read, openat, then the most frequent)"], rows[:400])
        failed = failed_calls(report)
        if failed:
            out += ["", "Failed calls:", ""]
            out += ["- pid %d: %s" % (pid, failed_text(calls)) for pid, calls in failed.items()]
        out += ["", "</details>"]
    tails = output_tails(report)
    if tails:
        out += ["", "## Last lines written", "",
                "The newest lines of the regular files each process writes to (redacted); "
                "`!` marks a line that looks like an error or a retry.", ""]
        for pid, name, entry in tails:
            fence = _fence(entry["lines"])
            out += ["**%s**" % _md_text(tail_heading(pid, name, entry)), "", fence]
            out += [("! " if looks_like_error(line) else "  ") + line for line in entry["lines"]]
            out += [fence, ""]
    stacks = thread_stacks(report, limit=3)
    if stacks:
        out += ["", "<details><summary>Python stacks (%d threads)</summary>" % len(stacks), ""]
        for proc, thread, rendered in stacks:
            total = sum(c for _s, c in thread.get("stack_samples") or [])
            for frames, n in rendered:
                out.append("**pid %d tid %d `%s`** — %d of %d samples" % (
                    proc["pid"], thread["tid"], thread.get("python_name") or thread.get("name"), n, total))
                out.append("")
                out.append("```")
                out += [short_frame(f) for f in frames[:40]]
                out.append("```")
                for entry in thread.get("locals") or []:
                    if entry["locals"]:
                        out.append("locals of `%s`: %s  " % (entry["function"], ", ".join(
                            "`%s=%s`" % (k, v) for k, v in entry["locals"].items())))
                out.append("")
        out.append("</details>")
    gpu = (report.get("capture") or {}).get("gpu") or {}
    out += ["", "## GPU", ""]
    if gpu.get("available"):
        out += _md_table(["index", "name", "util mean", "SM (GPM)", "tensor (GPM)", "memory used / total",
                          "MIG", "ECC uncorrected"], gpu_rows(report))
        if gpu.get("gpm_note"):
            out += ["", gpu["gpm_note"]]
        users = [[p["pid"], p.get("role"), ", ".join(map(str, p["gpu"]["devices"])) or "-",
                  ", ".join("GPU %s %.1f GiB" % (k, (v or 0) / 2**30) for k, v in (p["gpu"].get("memory") or {}).items())
                  or "-", p["gpu"].get("sm_util_mean") if p["gpu"].get("sm_util_mean") is not None else "-"]
                 for p in report.get("processes") or [] if p.get("gpu")]
        if users:
            out += ["", "Processes on GPUs:", ""]
            out += _md_table(["pid", "role", "GPUs", "memory", "SM util mean"], users)
    else:
        out.append("GPU: not available (%s)" % gpu.get("reason"))
    if report.get("limitations"):
        out += ["", "## Not observed", ""]
        out += ["- " + line for line in report["limitations"]]
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
