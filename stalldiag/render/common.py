"""Pieces shared by the text renderers: process rows and telling stacks."""
import os

from ..diagnosis import frame_text  # noqa: F401  (re-exported for renderers)


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
    """One row per GPU: utilization, GPM activity, memory, MIG, ECC, from the capture."""
    from ..diagnosis.gpu import device_summaries
    cap = report.get("capture") or {}
    infos = {d["index"]: d for d in (cap.get("gpu") or {}).get("devices") or []}
    rows = []
    for index, dev in device_summaries(cap).items():
        info = infos.get(index, {})
        total = info.get("memory_total") or 0
        ecc = info.get("ecc_uncorrected_start"), info.get("ecc_uncorrected_end")
        rows.append([index, dev.name, "%.0f%%" % (dev.util or 0),
                     "%.1f%%" % dev.sm if dev.has_gpm else "n/a",
                     "%.1f%%" % (dev.tensor or 0) if dev.has_gpm else "n/a",
                     "%.1f / %.1f GiB" % ((dev.memory_used or 0) / 2**30, total / 2**30),
                     {True: "on", False: "off"}.get(info.get("mig_mode"), "?"),
                     "%s -> %s" % ecc if ecc[0] is not None else "n/a"])
    return rows
