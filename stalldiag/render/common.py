"""Pieces shared by the text renderers: process rows, telling stacks, last lines written."""
import os
import re



def command_text(proc, width=60):
    cmd = " ".join(proc.get("cmdline") or []) or "[%s]" % (proc.get("comm") or "?")
    return cmd if len(cmd) <= width else cmd[:width - 3] + "..."


def dominant_state(proc):
    """The most common thread kind in a process, with the share of its main thread."""
    threads = proc.get("threads") or []
    main = next((t for t in threads if t["tid"] == proc["pid"]), threads[0] if threads else None)
    if not main or not main.get("residency"):
        return "-"
    label, share = next(iter(main["residency"].items()))
    return "%s %d%%" % (label, round(100 * share))


def process_rows(report):
    duration = (report.get("window") or {}).get("duration_s") or 0
    rows = []
    for proc in report.get("processes") or []:
        cpu = proc.get("cpu_seconds")
        cpu_pct = "%.0f%%" % (100 * cpu / duration) if cpu is not None and duration else "-"
        rows.append([str(proc["pid"]), proc.get("role") or "", command_text(proc), cpu_pct,
                     dominant_state(proc), str(len(proc.get("threads") or [])),
                     "" if proc.get("exited_at") is None else "exited %.1fs" % proc["exited_at"]])
    return rows


PROCESS_HEADER = ["pid", "role", "command", "CPU", "main thread", "threads", "note"]


def thread_stacks(report, limit=None):
    """(process, thread, [(stack frames, count)]) for every thread with Python stacks."""
    cap = report.get("capture") or {}
    frames = cap.get("frames") or []
    stacks = cap.get("stacks") or []
    out = []
    for proc in cap.get("processes") or []:
        for thread in proc.get("threads") or []:
            counts = {}
            for stack_id, n in thread.get("stack_samples") or []:
                counts[stack_id] = counts.get(stack_id, 0) + n
            if not counts:
                continue
            ordered = sorted(counts.items(), key=lambda kv: -kv[1])[:limit]
            rendered = []
            for stack_id, n in ordered:
                try:
                    rendered.append(([frames[i] for i in stacks[stack_id]], n))
                except (IndexError, TypeError):
                    continue
            out.append((proc, thread, rendered))
    return out


def short_frame(frame):
    return "%s (%s:%s)" % (frame[0], os.path.basename(frame[1] or "?"), frame[2])


def telling_pids(report):
    """pids on the verdict's chain, the ones worth showing stacks for first."""
    return [step["pid"] for step in report.get("chain") or []]


def gpu_rows(report):
    """One row per GPU: utilization, GPM activity, memory, MIG, ECC (the report's gpu_window)."""
    infos = {d["index"]: d for d in report.get("gpus") or []}
    rows = []
    for dev in report.get("gpu_window") or []:
        info = infos.get(dev["index"], {})
        total = info.get("memory_total") or 0
        ecc = info.get("ecc_uncorrected_start"), info.get("ecc_uncorrected_end")
        rows.append([dev["index"], dev["name"], "%.0f%%" % (dev["util"] or 0),
                     "%.1f%%" % dev["sm"] if dev["has_gpm"] else "n/a",
                     "%.1f%%" % (dev["tensor"] or 0) if dev["has_gpm"] else "n/a",
                     "%.1f / %.1f GiB" % ((dev["memory_used"] or 0) / 2**30, total / 2**30),
                     {True: "on", False: "off"}.get(info.get("mig_mode"), "?"),
                     "%s -> %s" % ecc if ecc[0] is not None else "n/a"])
    return rows


# --- last lines written (capture "output_tail") and failed syscalls ----------------------------

# a line worth the reader's eye: the job says it failed, or that it is trying again
ERROR_LINE = re.compile(r"(?i)error|exception|traceback|refused|denied|timed out|timeout|failed|failure"
                        r"|retry|retrying|fatal|killed|unreachable")
STREAMS = ("stdout", "stderr")


def looks_like_error(line):
    return bool(ERROR_LINE.search(line or ""))


def output_tails(report):
    """(pid, "stdout"|"stderr"|"log", entry) for every file with lines, processes in report order.
    A stderr that is stdout's file (2>&1) is not repeated."""
    tails = (report.get("capture") or {}).get("output_tail") or {}
    order = [str(p["pid"]) for p in report.get("processes") or []]
    out = []
    for pid in order + sorted(set(tails) - set(order)):
        per = tails.get(pid) or {}
        files = [(name, per[name]) for name in STREAMS if isinstance(per.get(name), dict)]
        files += [("log", entry) for entry in per.get("logs") or [] if isinstance(entry, dict)]
        out += [(int(pid), name, entry) for name, entry in files if entry.get("lines")]
    return out


def tail_heading(pid, name, entry):
    """'pid 12 stdout /tmp/out.txt (6.7 KiB, written 0.1 s ago)'."""
    return "pid %d %s %s (%s, written %s ago)" % (pid, name, entry.get("path"), _size(entry.get("size")),
                                                  _age(entry.get("age_s")))


def _size(n):
    if n is None:
        return "size ?"
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return ("%d %s" if unit == "bytes" else "%.1f %s") % (n, unit)
        n /= 1024.0


def _age(seconds):
    if seconds is None:
        return "?"
    if seconds < 120:
        return "%.1f s" % seconds
    if seconds < 7200:
        return "%.0f min" % (seconds / 60)
    return "%.1f h" % (seconds / 3600)


def failed_calls(report):
    """{pid: {syscall: (errors, {errno: n})}} of --syscalls exact, most failures first; the
    capture's exact_syscalls.errors summed over each process's threads."""
    exact = (report.get("capture") or {}).get("exact_syscalls") or {}
    per_pid = {}
    for row in exact.get("errors") or []:
        try:
            pid, _tid, per = row
        except (TypeError, ValueError):
            continue
        mine = per_pid.setdefault(pid, {})
        for name, entry in (per or {}).items():
            errors, errnos = mine.get(name, (0, {}))
            for code, n in (entry.get("errnos") or {}).items():
                errnos[code] = errnos.get(code, 0) + n
            mine[name] = (errors + (entry.get("errors") or 0), errnos)
    return {pid: dict(sorted(calls.items(), key=lambda kv: -kv[1][0])) for pid, calls in sorted(per_pid.items())}


def failed_text(calls, limit=6):
    """'connect 12 failed (ECONNREFUSED 12), openat 12 failed (ENOENT 12)'."""
    parts = []
    for name, (errors, errnos) in list(calls.items())[:limit]:
        codes = ", ".join("%s %d" % kv for kv in sorted(errnos.items(), key=lambda kv: -kv[1])[:3])
        parts.append("%s %d failed%s" % (name, errors, " (%s)" % codes if codes else ""))
    return ", ".join(parts)
