"""The JSON report: the stable contract other tools read, built from capture + diagnosis."""
import os
import sys

from .diagnosis import (detail_text, device_summaries, diagnose, file_changes, sample_kind, stdio_changes,
                        visible_devices)
from .diagnosis import kinds as thread_kinds


def sample_key(sample):
    """The key of one /proc sample [t, state, syscall, detail index, wchan] in sample_classes."""
    padded = (list(sample) + [None] * 5)[1:5]
    return "|".join("" if v is None else str(v) for v in padded)


def sample_classes(proc):
    """What each distinct /proc sample of a process was, for timelines: sample_key -> [band
    (kinds.py: running, lock, io, network, sleep, child, other), kind, what it waits on]."""
    details = proc.get("details") or []
    classes = {}
    for thread in proc.get("threads") or []:
        for sample in thread.get("samples") or []:
            if not isinstance(sample, (list, tuple)) or len(sample) < 3:
                continue
            key = sample_key(sample)
            if key in classes:
                continue
            state, syscall = sample[1], sample[2]
            index = sample[3] if len(sample) > 3 else None
            detail = details[index] if isinstance(index, int) and 0 <= index < len(details) else None
            kind = sample_kind(state, syscall, detail, sample[4] if len(sample) > 4 else None)
            band = "io" if state == "D" else thread_kinds.of(kind).band
            classes[key] = [band, kind, detail_text(detail)]
    return classes


def gpu_window(capture):
    """Each GPU over the window, for the report's GPU table: utilization, GPM activity, memory."""
    return [{"index": index, "name": dev.name, "util": dev.util, "has_gpm": dev.has_gpm, "sm": dev.sm,
             "tensor": dev.tensor, "memory_used": dev.memory_used}
            for index, dev in device_summaries(capture).items()]


def build_report(capture):
    result = diagnose(capture)
    roles = result["roles"]
    processes = []
    window = capture.get("window") or {}
    window_end = (window.get("start") or 0) + (window.get("duration_s") or 0)
    exact = capture.get("exact_syscalls") or None
    exact_by_thread = {}
    for pid, tid, per in (exact or {}).get("counts") or []:
        exact_by_thread[(pid, tid)] = per
    for proc in capture.get("processes") or []:
        threads = []
        for thread in proc.get("threads") or []:
            summary = result["threads"].get("%d:%d" % (proc["pid"], thread["tid"]), {})
            threads.append({
                "tid": thread["tid"],
                "name": thread.get("python_name") or thread.get("name"),
                "comm": thread.get("name"),
                "kind": summary.get("kind"),
                "state": summary.get("state"),
                "state_text": summary.get("state_text"),
                "share": summary.get("share"),
                "cpu_seconds": thread.get("cpu_seconds"),
                "samples": summary.get("samples"),
                "stack_samples": summary.get("stack_samples"),
                "residency": summary.get("residency"),
            })
            if exact is not None:
                threads[-1]["syscall_counts"] = _with_always_shown(exact_by_thread.get((proc["pid"], thread["tid"])))
        gpu_use = _gpu_use(capture, proc, result["gpu_devices"].get(str(proc["pid"])) or [])
        processes.append({
            "pid": proc["pid"],
            "ppid": proc.get("ppid"),
            "role": roles.get(str(proc["pid"]), "child"),
            "cmdline": proc.get("cmdline") or [],
            "comm": proc.get("comm"),
            "user": proc.get("user"),
            "python": (proc.get("python") or {}).get("stacks", False),
            "python_note": (proc.get("python") or {}).get("reason"),
            "stack_rate_hz": (proc.get("python") or {}).get("stack_rate_hz"),
            "stack_snapshots": (proc.get("python") or {}).get("stack_snapshots"),
            "cpu_seconds": proc.get("cpu_seconds"),
            "io": proc.get("io"),
            "ctx_switches": proc.get("ctx_switches"),
            "exited_at": proc.get("exited_at"),
            "env": proc.get("env") or {},
            "residency": _process_residency(threads),
            "stdio": {str(fd): info for fd, info in stdio_changes(proc, window_end).items()},
            "files": _files(proc),
            "syscall_counts": None if exact is None else _with_always_shown(
                _sum_counts(per for (pid, _tid), per in exact_by_thread.items() if pid == proc["pid"])),
            "gpu": gpu_use,
            "threads": threads,
            "sample_classes": sample_classes(proc),
        })
    window = capture.get("window") or {}
    gpu = capture.get("gpu") or {}
    return {
        "schema_version": capture.get("schema_version"),
        "tool": capture.get("tool"),
        "window": _window(capture),
        "verdict": result["verdict"],
        "chain": result["chain"],
        "chain_text": result["chain_text"],
        "ranks": result["ranks"],
        "findings": result["findings"],
        "processes": processes,
        "syscall_counts": None if exact is None else {
            "backend": exact.get("backend"), "counted_s": exact.get("counted_s"), "notes": exact.get("notes"),
            "tree": _with_always_shown(_sum_counts(exact_by_thread.values()))},
        "gpus": gpu.get("devices") or [],
        "gpu_available": gpu.get("available", False),
        "gpu_window": gpu_window(capture),
        "limitations": list(capture.get("limitations") or []),   # a copy: failures are the report's, not the capture's
        "failures": [],
        "capture": capture,
    }


# --- a bug in diagnosis or rendering never loses the capture -------------------------------

PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def where(exc):
    """The innermost stalldiag frame of exc's traceback, as 'stalldiag/x.py:12 in f'."""
    inner = None
    import traceback   # only when something failed
    for frame in traceback.extract_tb(exc.__traceback__):
        if os.path.abspath(frame.filename).startswith(PACKAGE_DIR + os.sep):
            inner = frame
    if inner is None:
        return None
    path = os.path.relpath(os.path.abspath(inner.filename), os.path.dirname(PACKAGE_DIR))
    return "%s:%s in %s" % (path, inner.lineno, inner.name)


def failure_text(failure):
    return "%s failed: %s: %s%s" % (failure["stage"], failure["type"], failure["message"],
                                    " (at %s)" % failure["where"] if failure.get("where") else "")


def record_failure(report, stage, exc):
    """Note a failed stage in the report (`failures` and a line under `limitations`); return it."""
    if os.environ.get("STALLDIAG_DEBUG"):
        import traceback
        traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
    failure = {"stage": stage, "type": type(exc).__name__, "message": str(exc)[:500], "where": where(exc)}
    report.setdefault("failures", []).append(failure)
    report.setdefault("limitations", []).append(
        failure_text(failure) + "; the capture below is complete: `stalldiag report` on this JSON file "
        "re-runs the diagnosis (a stalldiag bug: please report it)")
    return failure


def build_report_or_fallback(capture):
    """build_report(), or when the diagnosis raises, a report without a verdict that still
    carries the whole capture, so nothing sampled is lost and the renderers can still run."""
    try:
        return build_report(capture)
    except Exception as exc:
        report = fallback_report(capture)
        record_failure(report, "diagnosis", exc)
        return report


def fallback_report(capture):
    """The report's shape from the capture alone: no verdict, no finding, raw process data."""
    gpu = capture.get("gpu") or {}
    processes = []
    for proc in capture.get("processes") or []:
        processes.append({
            "pid": proc.get("pid"), "ppid": proc.get("ppid"),
            "role": "target" if proc.get("pid") == (capture.get("request") or {}).get("pid") else "child",
            "cmdline": proc.get("cmdline") or [], "comm": proc.get("comm"), "user": proc.get("user"),
            "python": (proc.get("python") or {}).get("stacks", False),
            "python_note": (proc.get("python") or {}).get("reason"),
            "cpu_seconds": proc.get("cpu_seconds"), "io": proc.get("io"), "exited_at": proc.get("exited_at"),
            "env": proc.get("env") or {},
            "threads": [{"tid": t.get("tid"), "name": t.get("python_name") or t.get("name"), "comm": t.get("name"),
                         "cpu_seconds": t.get("cpu_seconds"), "samples": len(t.get("samples") or [])}
                        for t in proc.get("threads") or []],
        })
    return {
        "schema_version": capture.get("schema_version"),
        "tool": capture.get("tool"),
        "window": _window(capture),
        "verdict": {"category": "unknown", "summary": "No diagnosis: stalldiag's diagnosis failed on this "
                    "capture (see Not observed); the raw samples are kept in the JSON report",
                    "pid": None, "tid": None, "confidence": None, "evidence": []},
        "chain": [], "chain_text": "", "ranks": {}, "findings": [],
        "processes": processes,
        "syscall_counts": None,
        "gpus": gpu.get("devices") or [],
        "gpu_available": gpu.get("available", False),
        "limitations": list(capture.get("limitations") or []),
        "failures": [],
        "capture": capture,
    }


def _process_residency(threads):
    """Share of all thread samples of a process spent running or in each syscall."""
    totals, n = {}, 0
    for t in threads:
        samples = t.get("samples") or 0
        n += samples
        for label, share in (t.get("residency") or {}).items():
            totals[label] = totals.get(label, 0) + share * samples
    if not n:
        return {}
    return {k: round(v / n, 3) for k, v in sorted(totals.items(), key=lambda kv: -kv[1])}


def _gpu_use(capture, proc, devices):
    """Which GPUs a process uses (devices: the diagnosis's answer), its memory and SM
    utilization samples there."""
    gpu = capture.get("gpu") or {}
    if not gpu.get("available"):
        return None
    info = (gpu.get("processes") or {}).get(str(proc["pid"])) or {}
    memory = info.get("devices") or ({str(info["device"]): info.get("used_memory")} if "device" in info else {})
    util = (gpu.get("process_util") or {}).get(str(proc["pid"])) or []
    visible = visible_devices(proc.get("env"), gpu.get("devices") or [])
    if not devices and not util and visible is None:
        return None
    return {
        "devices": devices,
        "memory": memory,
        "sm_util_mean": round(sum(u[2] for u in util) / len(util), 1) if util else None,
        "cuda_visible_devices": visible,
    }


def _sum_counts(dicts):
    total = {}
    for per in dicts:
        for name, n in (per or {}).items():
            total[name] = total.get(name, 0) + n
    return total


def _with_always_shown(counts):
    """futex, read and openat are always present (0 when none), the rest by count."""
    from .knowledge.syscalls import ALWAYS_SHOWN
    counts = dict(counts or {})
    ordered = {name: counts.pop(name, 0) for name in ALWAYS_SHOWN}
    ordered.update(sorted(counts.items(), key=lambda kv: -kv[1]))
    return ordered


def _files(proc):
    """Files read on, written and opened during the window."""
    read, written, opened = file_changes(proc)

    def brief(entry):
        return {"path": entry.get("target"), "pos": entry.get("pos"), "size": entry.get("size"),
                "delta": entry.get("delta")}
    return {"read": [brief(e) for e in read], "written": [brief(e) for e in written],
            "opened": [brief(e) for e in opened]}


def _window(capture):
    window = capture.get("window") or {}
    return {key: window.get(key) for key in ("start", "duration_s", "samples", "rate_hz", "interrupted")}
