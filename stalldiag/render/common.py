"""Pieces shared by the text renderers: process rows, telling stacks, last lines written."""
import os

from ..knowledge.retries import ERROR_LINE


def command_text(proc, width=60):
    cmd = " ".join(proc.cmdline or []) or "[%s]" % (proc.comm or "?")
    return cmd if len(cmd) <= width else cmd[:width - 3] + "..."


def dominant_state(proc):
    """The most common thread kind in a process, with the share of its main thread."""
    threads = proc.threads
    main = next((t for t in threads if t.tid == proc.pid), threads[0] if threads else None)
    if not main or not main.residency:
        return "-"
    label, share = next(iter(main.residency.items()))
    return "%s %d%%" % (label, round(100 * share))


def process_rows(report):
    duration = report.window.duration_s or 0
    rows = []
    for proc in report.processes:
        cpu = proc.cpu_seconds
        cpu_pct = "%.0f%%" % (100 * cpu / duration) if cpu is not None and duration else "-"
        rows.append([str(proc.pid), proc.role or "", command_text(proc), cpu_pct,
                     dominant_state(proc), str(len(proc.threads)),
                     "" if proc.exited_at is None else "exited %.1fs" % proc.exited_at])
    return rows


PROCESS_HEADER = ["pid", "role", "command", "CPU", "main thread", "threads", "note"]


def thread_stacks(report, limit=None):
    """(process, thread, [(stack frames, count)]) for every thread with Python stacks."""
    frames, stacks = report.frames, report.stacks
    out = []
    for proc in report.processes:
        for thread in proc.threads:
            counts = {}
            for stack_id, n in thread.stack_runs:
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


def stack_total(thread):
    """The py-spy samples of a thread."""
    return sum(run.samples for run in thread.stack_runs)


def short_frame(frame):
    return "%s (%s:%s)" % (frame.function, os.path.basename(frame.file or "?"), frame.line)


def telling_pids(report):
    """pids on the verdict's chain, the ones worth showing stacks for first."""
    return [step.pid for step in report.chain]


def gpu_rows(report):
    """One row per GPU: utilization, GPM activity, memory, MIG, ECC (the report's GPU summaries)."""
    infos = {d.index: d for d in report.gpu.devices}
    rows = []
    for dev in report.gpu.summaries:
        info = infos.get(dev.index)
        total = (info.memory_total if info else None) or 0
        ecc = (info.ecc_uncorrected_start, info.ecc_uncorrected_end) if info else (None, None)
        rows.append([dev.index, dev.name, "%.0f%%" % (dev.util or 0),
                     "%.1f%%" % dev.sm if dev.has_gpm else "n/a",
                     "%.1f%%" % (dev.tensor or 0) if dev.has_gpm else "n/a",
                     "%.1f / %.1f GiB" % ((dev.memory_used or 0) / 2**30, total / 2**30),
                     {True: "on", False: "off"}.get(info.mig_mode if info else None, "?"),
                     "%s -> %s" % ecc if ecc[0] is not None else "n/a"])
    return rows


# --- last lines written and failed syscalls -----------------------------------------------------

# a line worth the reader's eye: the job says it failed, or that it is trying again: ERROR_LINE,
# the knowledge table's pattern, the one the diagnosis reads too


def looks_like_error(line):
    return bool(ERROR_LINE.search(line or ""))


def tail_heading(tail):
    """'pid 12 stdout /tmp/out.txt (6.7 KiB, written 0.1 s ago)'."""
    return "pid %d %s %s (%s, written %s ago)" % (tail.pid, tail.stream, tail.path, _size(tail.size),
                                                  _age(tail.age_s))


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


def failed_text(calls, limit=6):
    """'connect 12 failed (ECONNREFUSED 12), openat 12 failed (ENOENT 12)'."""
    parts = []
    for call in calls[:limit]:
        codes = ", ".join("%s %d" % kv for kv in sorted(call.errnos.items(), key=lambda kv: -kv[1])[:3])
        parts.append("%s %d failed%s" % (call.name, call.errors, " (%s)" % codes if codes else ""))
    return ", ".join(parts)
