"""The report: built once from a capture and its diagnosis, as render/model.py's typed records.

build(capture) is the Report every renderer reads; build_report(capture) its JSON dict (the stable
contract other tools read, with the capture inside). Everything taken from stalldiag.diagnosis
besides diagnose() itself is read in one function, _diagnosis_facts(); the rest of this module
builds records from the capture, diagnose()'s dict and those facts.
"""
import os
import sys
from typing import Any, Dict, List, Optional

from .records import typed_record
from .diagnosis import diagnose, sample_key
from .render.model import (UNCLASSIFIED, CallFailures, ChainStep, ExactCounts, FailedCall, Failure, FileChange, Files,
                           Finding, Frame, FrameLocals, GpuDevice, GpuSeries, GpuSummary, GpuUse, GpuWindow,
                           OutputTail, ProcessRow, RankGroup, RankRow, Ranks, Report, Sample, SampleClass, StackRun,
                           ThreadRow, Tool, Verdict, Window)


def build(capture):
    """The Report of a capture: diagnose it, then build every record the renderers read."""
    result = diagnose(capture)
    return _report(capture, result, _diagnosis_facts(capture, result))


def build_report(capture):
    """The JSON report's dict of a capture (build(capture).to_dict()), for what reads the JSON contract."""
    return build(capture).to_dict()


# --- what the report takes from the diagnosis beyond diagnose()'s dict --------------------------
#
# diagnose(capture) returns {"verdict", "findings", "roles", "chain", "chain_text", "ranks", "threads",
# "gpu_devices", "processes", "gpu_summaries"}: the last two are what the report shows of each process
# (its samples' classes, files, stdio, GPUs) and of each GPU, read by the diagnosis with the rest, once.

@typed_record
class ProcessFacts:
    """The diagnosis's facts about one process of the capture."""
    sample_classes: Dict[str, SampleClass]   # sample_key -> what that /proc sample was
    files: tuple                             # (read, written, opened): [{target, pos, size, delta}]
    stdio: Dict[Any, dict]                   # fd -> how it changed over the window
    gpu_devices: List[Any]                   # the GPUs it uses
    visible_devices: Optional[List[Any]]     # CUDA_VISIBLE_DEVICES resolved to devices


@typed_record
class DiagnosisFacts:
    processes: List[ProcessFacts]            # one per capture["processes"] entry, in its order
    gpus: Dict[Any, Any]                     # GPU index -> its summary over the window (name, util,
                                             # has_gpm, sm, tensor, memory_used)


def _diagnosis_facts(capture, result):
    """The diagnosis's facts of each process and of the GPUs (diagnose() reads them once, with
    everything else), as the report's records."""
    processes = [ProcessFacts(
        sample_classes={key: SampleClass(*cls) for key, cls in facts["sample_classes"].items()},
        files=facts["files"], stdio=facts["stdio"], gpu_devices=facts["gpu_devices"],
        visible_devices=facts["visible_devices"]) for facts in result["processes"]]
    return DiagnosisFacts(processes=processes, gpus=result["gpu_summaries"])


# --- the report from the capture, diagnose()'s dict and the facts -------------------------------

def _report(capture, result, facts):
    roles = result["roles"]
    exact = capture.get("exact_syscalls") or None
    exact_by_thread = {}
    for pid, tid, per in (exact or {}).get("counts") or []:
        exact_by_thread[(pid, tid)] = per
    processes = []
    for proc, known in zip(capture.get("processes") or [], facts.processes):
        threads = []
        for thread in proc.get("threads") or []:
            summary = result["threads"].get("%d:%d" % (proc["pid"], thread["tid"]), {})
            threads.append(_thread_row(
                thread, known.sample_classes, kind=summary.get("kind"), state=summary.get("state"),
                state_text=summary.get("state_text"), share=summary.get("share"), samples=summary.get("samples"),
                stack_samples=summary.get("stack_samples"), residency=summary.get("residency"),
                syscall_counts=None if exact is None else _with_always_shown(
                    exact_by_thread.get((proc["pid"], thread["tid"])))))
        python = proc.get("python") or {}
        read, written, opened = known.files
        processes.append(ProcessRow(
            pid=proc["pid"], ppid=proc.get("ppid"), role=roles.get(str(proc["pid"]), "child"),
            cmdline=proc.get("cmdline") or [], comm=proc.get("comm"), user=proc.get("user"),
            python=python.get("stacks", False), python_note=python.get("reason"),
            stack_rate_hz=python.get("stack_rate_hz"), stack_snapshots=python.get("stack_snapshots"),
            cpu_seconds=proc.get("cpu_seconds"), io=proc.get("io"), ctx_switches=proc.get("ctx_switches"),
            exited_at=proc.get("exited_at"), env=proc.get("env") or {},
            residency=_process_residency(threads),
            stdio={str(fd): info for fd, info in known.stdio.items()},
            files=Files(read=[_file_change(e) for e in read], written=[_file_change(e) for e in written],
                        opened=[_file_change(e) for e in opened]),
            syscall_counts=None if exact is None else _with_always_shown(
                _sum_counts(per for (pid, _tid), per in exact_by_thread.items() if pid == proc["pid"])),
            gpu=_gpu_use(capture, proc, known.gpu_devices, known.visible_devices),
            threads=threads, sample_classes=known.sample_classes))
    ranks = result["ranks"]
    return Report(
        schema_version=capture.get("schema_version"),
        tool=Tool.read(capture.get("tool")),
        hostname=(capture.get("host") or {}).get("hostname"),
        window=_window(capture),
        verdict=Verdict.read(result["verdict"]),
        chain=[ChainStep.read(step) for step in result["chain"]],
        chain_text=result["chain_text"],
        ranks=None if ranks is None else Ranks(rows=[RankRow.read(r) for r in ranks.get("rows") or []],
                                               groups=[RankGroup.read(g) for g in ranks.get("groups") or []]),
        findings=[Finding.read(f) for f in result["findings"]],
        processes=processes,
        syscall_counts=None if exact is None else ExactCounts(
            backend=exact.get("backend"), counted_s=exact.get("counted_s"), notes=exact.get("notes"),
            tree=_with_always_shown(_sum_counts(exact_by_thread.values()))),
        gpu=_gpu_window(capture, facts.gpus),
        frames=_frames(capture),
        stacks=capture.get("stacks") or [],
        output_tails=_output_tails(capture, processes),
        failed_calls=_failed_calls(capture),
        limitations=list(capture.get("limitations") or []),   # a copy: failures are the report's, not the capture's
        failures=[],
        capture=capture,
    )


def _thread_row(thread, classes, **diagnosed):
    return ThreadRow(
        tid=thread.get("tid"), name=thread.get("python_name") or thread.get("name"), comm=thread.get("name"),
        cpu_seconds=thread.get("cpu_seconds"), timeline=_timeline(thread, classes), stack_runs=_stack_runs(thread),
        locals=[FrameLocals(entry.get("function"), entry.get("locals") or {})
                for entry in thread.get("locals") or [] if isinstance(entry, dict)],
        **diagnosed)


def _timeline(thread, classes):
    """The thread's /proc samples as captured, each with its class (UNCLASSIFIED when not known)."""
    out, memo = [], {}
    new = tuple.__new__    # Sample(...) without its Python-level __new__: a capture can hold a million samples
    for s in thread.get("samples") or []:
        if not isinstance(s, (list, tuple)) or len(s) < 3:
            continue
        n = len(s)
        wchan = s[4] if n > 4 else None
        memo_key = (s[1], s[2], s[3] if n > 3 else None, wchan)
        cls = memo.get(memo_key)
        if cls is None:
            cls = memo[memo_key] = classes.get(sample_key(s)) or UNCLASSIFIED
        out.append(new(Sample, (s[0], s[1], s[2], wchan, cls)))
    return out


def _stack_runs(thread):
    """py-spy's run-length encoded samples of a thread, in time order (runs of no sample dropped)."""
    runs = []
    for run in thread.get("stack_samples") or []:
        try:
            stack, count = run
        except (TypeError, ValueError):
            continue
        if isinstance(count, int) and count > 0:
            runs.append(StackRun(stack, count))
    return runs


def _frames(capture):
    out = []
    for f in capture.get("frames") or []:
        if not isinstance(f, (list, tuple)) or not f:
            out.append(Frame("?", None, None))
        else:
            out.append(Frame(f[0], f[1] if len(f) > 1 else None, f[2] if len(f) > 2 else None))
    return out


def _window(capture):
    window = capture.get("window") or {}
    return Window(start=window.get("start"), duration_s=window.get("duration_s"), samples=window.get("samples"),
                  rate_hz=window.get("rate_hz"), interrupted=window.get("interrupted"),
                  stack_rate_hz=window.get("stack_rate_hz"))


def _process_residency(threads):
    """Share of all thread samples of a process spent running or in each syscall."""
    totals, n = {}, 0
    for t in threads:
        samples = t.samples or 0
        n += samples
        for label, share in (t.residency or {}).items():
            totals[label] = totals.get(label, 0) + share * samples
    if not n:
        return {}
    return {k: round(v / n, 3) for k, v in sorted(totals.items(), key=lambda kv: -kv[1])}


def _gpu_use(capture, proc, devices, visible):
    """Which GPUs a process uses (devices: the diagnosis's answer), its memory and SM
    utilization samples there."""
    gpu = capture.get("gpu") or {}
    if not gpu.get("available"):
        return None
    info = (gpu.get("processes") or {}).get(str(proc["pid"])) or {}
    memory = info.get("devices") or ({str(info["device"]): info.get("used_memory")} if "device" in info else {})
    util = (gpu.get("process_util") or {}).get(str(proc["pid"])) or []
    if not devices and not util and visible is None:
        return None
    return GpuUse(devices=devices, memory=memory,
                  sm_util_mean=round(sum(u[2] for u in util) / len(util), 1) if util else None,
                  cuda_visible_devices=visible)


def _gpu_window(capture, summaries):
    """The GPUs over the window: NVML's description of each, the diagnosis's summaries (None: no
    diagnosis) and each device's samples for the charts."""
    gpu = capture.get("gpu") or {}
    devices = [GpuDevice.read(d) for d in gpu.get("devices") or [] if isinstance(d, dict)]
    return GpuWindow(
        available=gpu.get("available", False), reason=gpu.get("reason"), gpm_note=gpu.get("gpm_note"),
        devices=devices,
        summaries=[GpuSummary(index=index, name=dev.name, util=dev.util, has_gpm=dev.has_gpm, sm=dev.sm,
                              tensor=dev.tensor, memory_used=dev.memory_used)
                   for index, dev in (summaries or {}).items()],
        series=_gpu_series(gpu) if gpu.get("available") else [])


def _gpu_series(gpu):
    """Each GPU's samples in time order: every device sampled or described, sorted by index."""
    infos = {d.get("index"): d for d in gpu.get("devices") or [] if isinstance(d, dict)}
    samples = [s for s in gpu.get("samples") or [] if isinstance(s, (list, tuple)) and len(s) >= 3]
    gpm = [g for g in gpu.get("gpm") or [] if isinstance(g, (list, tuple)) and len(g) >= 5]
    out = []
    for index in sorted({s[1] for s in samples} | {i for i in infos if i is not None}, key=lambda x: (str(type(x)), x)):
        mine = sorted((s for s in samples if s[1] == index), key=lambda s: s[0] or 0)
        g = sorted((x for x in gpm if x[1] == index), key=lambda x: x[0] or 0)
        out.append(GpuSeries(
            index=index, name=(infos.get(index) or {}).get("name"),
            util=[(s[0], s[2]) for s in mine if s[2] is not None],
            memutil=[(s[0], s[3]) for s in mine if len(s) > 3 and s[3] is not None],
            sm=[(x[0], x[2]) for x in g if x[2] is not None],
            tensor=[(x[0], x[4]) for x in g if x[4] is not None]))
    return out


STREAMS = ("stdout", "stderr")


def _output_tails(capture, processes):
    """Every file with lines in the capture's output_tail, processes in report order, then any other
    pid's; per process stdout, stderr, then its logs."""
    tails = capture.get("output_tail") or {}
    order = [str(p.pid) for p in processes]
    out = []
    for pid in order + sorted(set(tails) - set(order)):
        per = tails.get(pid) or {}
        files = [(name, per[name]) for name in STREAMS if isinstance(per.get(name), dict)]
        files += [("log", entry) for entry in per.get("logs") or [] if isinstance(entry, dict)]
        out += [OutputTail(pid=int(pid), stream=name, path=entry.get("path"), lines=entry["lines"],
                           size=entry.get("size"), age_s=entry.get("age_s"))
                for name, entry in files if entry.get("lines")]
    return out


def _failed_calls(capture):
    """--syscalls exact: the capture's exact_syscalls.errors summed over each process's threads,
    pids in order, each process's calls most failures first."""
    exact = capture.get("exact_syscalls") or {}
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
    return [CallFailures(pid=pid, calls=[FailedCall(name, errors, errnos) for name, (errors, errnos)
                                         in sorted(calls.items(), key=lambda kv: -kv[1][0])])
            for pid, calls in sorted(per_pid.items())]


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


def _file_change(entry):
    return FileChange(path=entry.get("target"), pos=entry.get("pos"), size=entry.get("size"), delta=entry.get("delta"))


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
    return "%s failed: %s: %s%s" % (failure.stage, failure.type, failure.message,
                                    " (at %s)" % failure.where if failure.where else "")


def record_failure(report, stage, exc):
    """Note a failed stage in the report (`failures` and a line under `limitations`); return it."""
    if os.environ.get("STALLDIAG_DEBUG"):
        import traceback
        traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
    failure = Failure(stage=stage, type=type(exc).__name__, message=str(exc)[:500], where=where(exc))
    report.failures.append(failure)
    report.limitations.append(
        failure_text(failure) + "; the capture below is complete: `stalldiag report` on this JSON file "
        "re-runs the diagnosis (a stalldiag bug: please report it)")
    return failure


def build_or_fallback(capture):
    """build(), or when the diagnosis raises, a report without a verdict that still carries the
    whole capture, so nothing sampled is lost and the renderers can still run."""
    try:
        return build(capture)
    except Exception as exc:
        report = fallback_report(capture)
        record_failure(report, "diagnosis", exc)
        return report


def fallback_report(capture):
    """The Report from the capture alone (nothing of the diagnosis is called: it may be what
    failed): no verdict, no finding, the raw process rows; the JSON has the fallback's shape.
    What the renderers show beyond the rows (timelines, stacks, tails, failed calls, GPU charts)
    is read where it can be: whatever made the diagnosis fail must not fail this too."""
    processes = []
    for proc in capture.get("processes") or []:
        python = proc.get("python") or {}
        processes.append(ProcessRow(
            pid=proc.get("pid"), ppid=proc.get("ppid"),
            role="target" if proc.get("pid") == (capture.get("request") or {}).get("pid") else "child",
            cmdline=proc.get("cmdline") or [], comm=proc.get("comm"), user=proc.get("user"),
            python=python.get("stacks", False), python_note=python.get("reason"),
            cpu_seconds=proc.get("cpu_seconds"), io=proc.get("io"), exited_at=proc.get("exited_at"),
            env=proc.get("env") or {},
            threads=[_safely(lambda: _thread_row(t, {}, samples=len(t.get("samples") or [])),
                             lambda: ThreadRow(tid=t.get("tid"), name=t.get("python_name") or t.get("name"),
                                               comm=t.get("name"), cpu_seconds=t.get("cpu_seconds"),
                                               samples=len(t.get("samples") or [])))
                     for t in proc.get("threads") or []]))
    return Report(
        schema_version=capture.get("schema_version"),
        tool=_safely(lambda: Tool.read(capture.get("tool")), lambda: None),
        hostname=_safely(lambda: (capture.get("host") or {}).get("hostname"), lambda: None),
        window=_window(capture),
        verdict=Verdict.read({
            "category": "unknown", "summary": "No diagnosis: stalldiag's diagnosis failed on this capture (see "
            "Not observed); the raw samples are kept in the JSON report",
            "pid": None, "tid": None, "confidence": None, "evidence": []}),
        chain=[], chain_text="", ranks=None, findings=[],
        processes=processes,
        syscall_counts=None,
        gpu=_safely(lambda: _gpu_window(capture, None), lambda: GpuWindow(
            available=False, reason="the capture's GPU record could not be read")),
        frames=_safely(lambda: _frames(capture), list),
        stacks=capture.get("stacks") or [],
        output_tails=_safely(lambda: _output_tails(capture, processes), list),
        failed_calls=_safely(lambda: _failed_calls(capture), list),
        limitations=list(capture.get("limitations") or []),
        failures=[],
        capture=capture,
        diagnosed=False,
    )


def _safely(part, otherwise):
    """part(), or otherwise() when it raises (for the fallback report only)."""
    try:
        return part()
    except Exception:
        return otherwise()
