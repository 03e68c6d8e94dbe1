"""Terminal summary: verdict and culprit first, then evidence, processes, stacks."""
from .common import (PROCESS_HEADER, failed_calls, failed_text, looks_like_error, output_tails, process_rows,
                     short_frame, tail_heading, telling_pids, thread_stacks)

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
    v = report["verdict"]
    out = []
    head = "VERDICT: %s" % v["category"].upper()
    out.append(_c(head, CATEGORY_COLOR.get(v["category"], "red"), color) +
               "  (confidence %s)" % v.get("confidence"))
    out.append(v.get("summary", ""))
    if v.get("pid") is not None:
        out.append("culprit: pid %s tid %s%s" % (v.get("pid"), v.get("tid"),
                                                  " '%s'" % v["thread_name"] if v.get("thread_name") else ""))
    if len(report.get("chain") or []) > 1 or " → storage" in (report.get("chain_text") or ""):
        out.append("chain: " + report["chain_text"])
    window = report.get("window") or {}
    progress = v.get("progress") or {}
    if progress:
        out.append("progress: %s (%s)" % (progress.get("state"), progress.get("brief") or "; ".join(progress.get("evidence") or [])))
    if v.get("confidence_rests_on"):
        out.append("confidence %s: rests on %s" % (v.get("confidence"), v["confidence_rests_on"]))
    for alternative in v.get("alternatives") or []:
        out.append("  not ruled out: " + alternative)
    if v.get("to_settle"):
        out.append("  would settle it: " + "; ".join(v["to_settle"]))
    out.append(_c("window: %.1f s, %s samples at %s Hz%s" % (
        window.get("duration_s") or 0, window.get("samples"), window.get("rate_hz"),
        ", INTERRUPTED (%s)" % window["interrupted"] if window.get("interrupted") else ""), "dim", color))
    out.append("")
    out.append(_c("Evidence", "bold", color))
    for line in v.get("evidence") or []:
        out.append("  - " + line)
    if report.get("findings"):
        out.append("")
        out.append(_c("Findings", "bold", color))
        for f in report["findings"]:
            out.append("  - [%s] %s" % (f["kind"], f["summary"]))
    ranks = report.get("ranks") or {}
    if ranks.get("rows"):
        out.append("")
        out.append(_c("Ranks", "bold", color))
        out.extend("  " + line for line in table(
            ["rank", "local", "host", "pid", "state", "where", "GPU", ""],
            [[r["rank"], r.get("local_rank"), r.get("host"), r["pid"], r["state"], r["where"][:40],
              ",".join(map(str, r.get("gpus") or [])) or "-", "SUSPECT" if r.get("suspect") else ""]
             for r in ranks["rows"]]))
    out.append("")
    out.append(_c("Processes", "bold", color))
    out.extend("  " + line for line in table(PROCESS_HEADER, process_rows(report)))
    stacks = thread_stacks(report, limit=1)
    first = telling_pids(report)
    stacks.sort(key=lambda item: (item[0]["pid"] not in first, item[0]["pid"], item[1]["tid"]))
    if stacks:
        out.append("")
        out.append(_c("Stacks (most common per thread)", "bold", color))
        for proc, thread, rendered in stacks[:max_stacks]:
            for frames, n in rendered:
                total = sum(c for _s, c in thread.get("stack_samples") or [])
                out.append("  pid %d tid %d '%s' (%d/%d samples):" % (
                    proc["pid"], thread["tid"], thread.get("python_name") or thread.get("name"), n, total))
                for frame in frames[:12]:
                    out.append("      " + short_frame(frame))
        if len(stacks) > max_stacks:
            out.append("  (%d more threads with stacks in the Markdown/JSON report)" % (len(stacks) - max_stacks))
    exact = report.get("syscall_counts")
    if exact:
        out.append("")
        out.append(_c("Exact syscall counts (%s, %.1f s)" % (exact.get("backend"), exact.get("counted_s") or 0),
                      "bold", color))
        out.append("  tree: " + ", ".join("%s %d" % kv for kv in list((exact.get("tree") or {}).items())[:8]))
        for proc in (report.get("processes") or [])[:8]:
            counts = proc.get("syscall_counts") or {}
            out.append("  pid %d: %s" % (proc["pid"], ", ".join("%s %d" % kv for kv in list(counts.items())[:8])))
        for pid, calls in list(failed_calls(report).items())[:8]:
            out.append(_c("  pid %d: %s" % (pid, failed_text(calls)), "red", color))
    tails = output_tails(report)
    if tails:
        out.append("")
        out.append(_c("Last lines written (! looks like an error or a retry)", "bold", color))
        for pid, name, entry in tails[:MAX_TAIL_FILES]:
            out.append("  " + tail_heading(pid, name, entry))
            for line in entry["lines"][-TAIL_LINES:]:
                out.append(_c("    ! " + line, "red", color) if looks_like_error(line) else "      " + line)
        if len(tails) > MAX_TAIL_FILES:
            out.append("  (%d more files in the Markdown/JSON report)" % (len(tails) - MAX_TAIL_FILES))
    if report.get("limitations"):
        out.append("")
        out.append(_c("Not observed", "bold", color))
        for line in report["limitations"]:
            out.append("  - " + line)
    return "\n".join(out) + "\n"
