"""Diagnosis: a pure function from a capture to a verdict and findings (no I/O)."""
from .explain import describe_thread, detail_text, frame_text, pct, process_text, residency_text
from collections import Counter

from .threads import THREAD_WAIT_KINDS
from .verdict import Diagnosis, finding

CATEGORIES = ("locks", "io", "compilation", "cuda", "collective", "network", "subprocess",
              "cpu", "sleep", "unknown")

SUMMARY = {
    "locks": "Blocked on a lock",
    "io": "Blocked on storage I/O",
    "compilation": "Compiling",
    "cuda": "Waiting on GPU kernels",
    "collective": "Waiting in a distributed collective",
    "network": "Waiting on the network",
    "subprocess": "Waiting on a child program",
    "cpu": "Busy computing on the CPU",
    "sleep": "Sleeping (idle by design)",
    "unknown": "Cause not determined",
}


def diagnose(capture):
    """Return {"verdict", "findings", "roles", "chain", "threads"} for a capture."""
    d = Diagnosis(capture)
    focus = d.focus_thread()
    if focus is None:
        verdict = {"category": "unknown", "summary": "Nothing was sampled: the target exited or "
                   "could not be read", "pid": (capture.get("request") or {}).get("pid"), "tid": None,
                   "confidence": "low", "evidence": [],
                   "progress": {"state": "no progress seen", "evidence": ["nothing was sampled"]}}
        return _result(d, verdict)

    culprit = d.follow(focus)
    category = _category(d, focus, culprit)
    evidence = []
    for view in d.chain:
        evidence.append(describe_thread(view))
    if culprit.pid != focus.pid:
        evidence.append("%s is %s of %s" % (process_text(d.procs[culprit.pid]),
                                             d.roles.get(culprit.pid, "child"), process_text(d.procs[focus.pid])))
    _process_evidence(d, culprit, evidence)
    _framework_evidence(d, focus, culprit, evidence)
    category_gpu = _gpu_evidence(d, focus, culprit, category, evidence)
    confidence = _confidence(d, focus, culprit)
    verdict = {
        "category": category,
        "summary": _summary(d, category, focus, culprit) + category_gpu,
        "pid": culprit.pid,
        "tid": culprit.tid,
        "thread_name": culprit.name,
        "confidence": confidence,
        "evidence": evidence,
    }
    _general_findings(d)
    _progress(d, verdict, focus)
    return _result(d, verdict)


def _progress(d, verdict, focus):
    """Every verdict says whether the run is making progress; a silent healthy run is a finding."""
    from .progress import assess, silent_output
    verdict["progress"] = assess(d.capture, d.views, d.gpus)
    silent = silent_output(d.capture, d.procs.get(focus.pid), verdict["progress"])
    if silent:
        item = finding("silent-output", silent["summary"], pid=focus.pid)
        item["unchanged_s"] = silent["unchanged_s"]
        item["stdio"] = {str(k): v for k, v in silent["stdio"].items()}
        d.findings.insert(0, item)


def _category(d, focus, culprit):
    """The first decisive link of the chain names the category."""
    if any(f["kind"] == "deadlock" for f in d.findings):
        return "locks"
    if focus.kind in ("collective", "rendezvous"):
        return "collective"
    if focus.kind == "cuda" and culprit.pid != focus.pid and str(d.roles.get(culprit.pid)).startswith("rank "):
        return "collective"
    if focus.kind == "child" and culprit.pid != focus.pid:
        return "compilation" if d.category_of(culprit) == "compilation" else "subprocess"
    if focus.kind == "lock" and culprit is not focus:
        return "locks"
    if any(v.kind == "compile" for v in d.chain):
        return "compilation"
    return d.category_of(culprit)


def _summary(d, category, focus, culprit):
    head = SUMMARY[category]
    deadlock = next((f for f in d.findings if f["kind"] == "deadlock"), None)
    if deadlock:
        return deadlock["summary"][0].upper() + deadlock["summary"][1:]
    what = detail_text(culprit.top_detail())
    where = ""
    frame = culprit.user_frame()
    if frame:
        where = " at %s (%s:%s)" % (frame[0], frame[1].rsplit("/", 1)[-1], frame[2])
    activity, count = culprit.activity.most_common(1)[0] if culprit.activity else (culprit.kind, 0)
    if activity == "running":
        activity = "on CPU"
    elif not activity.startswith("D:"):
        activity = "in " + activity
    text = "%s: %s %s%s of the window%s" % (
        head, culprit.label, activity, "" if not culprit.n_samples else " %s" % pct(count / culprit.n_samples),
        where)
    if what:
        text += "; waiting on %s" % what
    if category == "cuda" and culprit.kind == "cuda":
        spin = " (the CUDA driver spin-waits: %s on CPU)" % pct(culprit.activity.get("running", 0) / culprit.n_samples) \
            if culprit.n_samples and culprit.activity.get("running", 0) / culprit.n_samples >= 0.5 else ""
        text = "%s: %s waits for the GPU at %s%s" % (head, culprit.label, frame_text(culprit.user_frame()), spin)
    elif category == "collective" and culprit.pid != focus.pid:
        text = "%s: %s %s waits in %s; %s %s is elsewhere, %s%s" % (
            head, d.roles.get(focus.pid), focus.label,
            _first_framework_frame(focus) or "a GPU sync at %s" % frame_text(focus.user_frame()),
            d.roles.get(culprit.pid), culprit.label, _doing(culprit), where)
    elif category == "subprocess" and culprit.pid != focus.pid:
        text = "%s: %s waits for %s, which is %s" % (
            head, focus.label, process_text(d.procs[culprit.pid]), _doing(culprit))
    elif culprit is not focus and category != "subprocess":
        text += " (%s waits on it)" % focus.label
    return text


def _first_framework_frame(view):
    from ..knowledge.frames import framework_context
    for frames, _n in view.stacks_by_count()[:1]:
        for depth, row in framework_context(frames):
            return "%s (%s)" % (frames[depth][0], row.framework)
    return None


def _doing(view):
    words = {"cpu": "computing", "sleep": "sleeping", "io": "doing storage I/O", "network": "waiting on the network",
             "lock": "blocked on a lock", "child": "waiting on its own child", "poll": "idle in poll"}
    return "%s (%s)" % (words.get(view.kind, view.kind), residency_text(view, 2))


def _confidence(d, focus, culprit):
    share = min(focus.share or 0, culprit.share or 0)
    if any(f["kind"] == "deadlock" for f in d.findings):
        share = max(share, 0.8)
    level = "high" if share >= 0.8 else "medium" if share >= 0.5 else "low"
    if not culprit.n_samples:
        level = "low"
    return level


def _process_evidence(d, culprit, evidence):
    proc = d.procs.get(culprit.pid) or {}
    io = proc.get("io")
    duration = (d.capture.get("window") or {}).get("duration_s") or 0
    if io:
        evidence.append("pid %d during %.1f s: %d read / %d write syscalls, %d bytes read from storage, "
                        "%d bytes read in all" % (culprit.pid, duration, io.get("syscr", 0), io.get("syscw", 0),
                                                  io.get("read_bytes", 0), io.get("rchar", 0)))
    ctx = proc.get("ctx_switches")
    if ctx:
        evidence.append("pid %d context switches: %d voluntary, %d involuntary"
                        % (culprit.pid, ctx["voluntary"], ctx["involuntary"]))


def _framework_evidence(d, focus, culprit, evidence):
    """DataLoader starvation, compilation time, rank groups: the numbers a reader asks for."""
    duration = (d.capture.get("window") or {}).get("duration_s") or 0
    if focus.kind == "dataloader":
        starved = focus.context_share.get("dataloader", focus.share)
        workers = d.workers
        text = "the training loop is starved: %s waited on DataLoader workers in %s of its stack samples" % (
            focus.label, pct(starved))
        if workers:
            read_bytes = sum(((d.procs[w.pid].get("io") or {}).get("read_bytes", 0)) for w in workers)
            rchar = sum(((d.procs[w.pid].get("io") or {}).get("rchar", 0)) for w in workers)
            states = Counter(w.kind for w in workers)
            text += "; %d workers: %s" % (len(workers), ", ".join("%d %s" % (n, k) for k, n in states.most_common()))
            if duration:
                text += "; workers read %.1f MB/s from storage (%.1f MB/s in all)" % (
                    read_bytes / duration / 1e6, rchar / duration / 1e6)
            files = sorted({detail_text(w.top_detail()) for w in workers if w.kind == "io" and w.top_detail()})
            if files:
                text += "; reading %s" % "; ".join(files[:4])
        evidence.append(text)
        d.findings.append(finding("dataloader-starved", text, focus))
    compiling = [v for v in d.chain if v.kind == "compile"]
    if compiling:
        v = compiling[0]
        share = v.context_share.get("compile", 0)
        target = _compiled_function(v)
        text = "%s compiling in %s of stack samples (%.1f s of the %.1f s window)" % (
            v.label, pct(share), share * duration, duration)
        if target:
            text += "; compiling what %s calls" % target
        runs = _compile_episodes(v)
        if runs > 1:
            text += "; compilation started %d separate times in the window: looks like repeated recompiles" % runs
        evidence.append(text)
        d.findings.append(finding("compiling", text, v))
    groups = d.rank_groups
    if groups:
        waiting, outliers = groups
        text = "ranks in the collective/rendezvous: %s; elsewhere: %s" % (
            ", ".join(_rank_label(d, p) for p in waiting) or "none",
            ", ".join(_rank_label(d, p) for p in outliers) or "none")
        evidence.append(text)
        missing = _missing_ranks(d)
        if missing:
            d.findings.append(finding("missing-ranks", "ranks %s of world size %s never joined (no process "
                                      "with that RANK in the inspected tree)" % (missing[0], missing[1])))
            evidence.append("ranks %s never started" % missing[0])


def _gpu_evidence(d, focus, culprit, category, evidence):
    """GPU numbers behind the call; returns a phrase for the summary, or ""."""
    from .gpu import devices_of
    if not d.gpus:
        return ""
    chain_pids = [v.pid for v in d.chain]
    used = []
    for pid in chain_pids + list(d.procs):
        for index in devices_of(d.capture, pid):
            if index in d.gpus and index not in used:
                used.append(index)
    shown = used or sorted(d.gpus)
    for index in shown:
        evidence.append(d.gpus[index].text())
    phrase = ""
    focus_devs = [d.gpus[i] for i in devices_of(d.capture, focus.pid) if i in d.gpus]
    if category == "cuda" and focus_devs:
        dev = focus_devs[0]
        if dev.looks_hung:
            text = ("GPU %d reads %.0f%% busy but only %.1f%% of SMs are active and tensor cores idle: "
                    "the kernel looks hung or spinning, while %s waits for it" % (dev.index, dev.util, dev.sm, focus.label))
            d.findings.append(finding("hung-kernel", text, focus))
            phrase = "; the GPU kernel looks hung (busy flag %.0f%%, SM activity %.1f%%)" % (dev.util, dev.sm)
        elif dev.real_compute:
            text = "GPU %d is really computing (SM %.0f%%, tensor %.0f%%): the run is GPU-bound, the host waits " \
                   "for kernels that are doing work" % (dev.index, dev.sm, dev.tensor or 0)
            d.findings.append(finding("gpu-bound", text, focus))
            phrase = "; the GPU is really busy (SM %.0f%%, tensor %.0f%%): GPU-bound" % (dev.sm, dev.tensor or 0)
        elif dev.busy_flag and not dev.has_gpm:
            phrase = "; GPU busy flag %.0f%% (no GPM to tell real compute from a spin)" % dev.util
    if category == "collective" and focus.kind == "cuda" and focus_devs:
        dev = focus_devs[0]
        if dev.busy_flag and not dev.real_compute:
            text = ("%s waits on GPU %d, which reads %.0f%% busy with %s: a communication kernel "
                    "(NCCL) waiting for its peer, not compute" % (
                        focus.label, dev.index, dev.util,
                        "SM %.1f%%, tensor %.1f%%" % (dev.sm, dev.tensor or 0) if dev.has_gpm else "no GPM data"))
            d.findings.append(finding("collective-on-gpu", text, focus))
            evidence.append(text)
    if category == "compilation":
        active = [d.gpus[i] for i in shown if not d.gpus[i].idle]
        if active:
            evidence.append("GPU activity during compilation (%s) is expected: autotuning benchmarks run kernels"
                            % ", ".join("GPU %d %.0f%%" % (g.index, g.util) for g in active))
    if focus.kind == "dataloader" and category in ("io", "cpu", "locks"):
        for dev in focus_devs or []:
            if dev.idle:
                text = "GPU %d idle: utilization %.0f%%, idle in %.0f%% of samples while the training loop waits " \
                       "for its input pipeline" % (dev.index, dev.util, 100 * dev.idle_share)
                evidence.append(text)
                d.findings.append(finding("gpu-starved", text, focus))
                phrase = "; GPU %d idle %.0f%% of the window" % (dev.index, 100 * dev.idle_share)
    gpu = d.capture.get("gpu") or {}
    for event in gpu.get("xid_events") or []:
        d.findings.append(finding("xid", "Xid %s on GPU %s at %.1f s" % (event.get("xid"), event.get("device"),
                                                                       event.get("t", 0))))
    for dev_info in gpu.get("devices") or []:
        start, end = dev_info.get("ecc_uncorrected_start"), dev_info.get("ecc_uncorrected_end")
        if isinstance(start, int) and isinstance(end, int) and end > start:
            d.findings.append(finding("ecc", "GPU %d: %d new uncorrected ECC errors during the window"
                                      % (dev_info["index"], end - start)))
    for dev in d.gpus.values():
        slow = dev.clock_reasons & (0x8 | 0x40 | 0x80)
        if slow:
            from ..probes.gpu import reasons_text
            d.findings.append(finding("gpu-throttled", "GPU %d clocks slowed by %s" % (
                dev.index, ", ".join(reasons_text(slow)))))
    return phrase


def _rank_label(d, pid):
    return "%s (pid %d)" % (d.roles.get(pid), pid)


def _missing_ranks(d):
    from ..redact import RANK_VARS, WORLD_SIZE_VARS, first_var
    seen, world = set(), None
    for proc in d.procs.values():
        rank = first_var(proc.get("env"), RANK_VARS)
        if rank is not None:
            seen.add(rank)
        world = first_var(proc.get("env"), WORLD_SIZE_VARS) or world
    if world is None:
        return None
    missing = sorted(set(range(world)) - seen)
    return (",".join(map(str, missing)), world) if missing else None


def _compiled_function(view):
    """The user's function being compiled: the innermost user frame above dynamo's entry."""
    from ..knowledge.frames import framework_context, is_library_file
    for frames, _count in view.stacks_by_count():
        context = framework_context(frames)
        if not any(row.kind == "compile" for _d, row in context):
            continue
        deepest = max(d for d, row in context if row.kind == "compile")
        for frame in frames[deepest + 1:]:
            if not is_library_file(frame[1]):
                return frame_text(frame)
    return None


def _compile_episodes(view):
    """How many separate runs of compile-context samples the thread's timeline has."""
    from ..knowledge.frames import framework_context
    episodes, inside = 0, False
    for frames, count in view.stacks:
        compiling = any(row.kind == "compile" for _d, row in framework_context(frames))
        if compiling and not inside and count:
            episodes += 1
        inside = compiling
    return episodes


class _NoView:
    kind = None


def _general_findings(d):
    cap = d.capture
    skipped = cap.get("skipped_children") or 0
    if skipped:
        d.findings.append(finding("skipped-children", "%d child process(es) not inspected; add --children"
                                  % skipped, pid=(cap.get("request") or {}).get("pid")))
    compilers = Counter()
    for proc in d.procs.values():
        if d.roles.get(proc["pid"]) == "compiler":
            compilers[proc.get("comm") or "?"] += 1
            continue  # short-lived by nature: summarised below, not one line each
        if proc.get("exited_at") is not None:
            d.findings.append(finding("exited", "%s exited at %.1f s into the window"
                                      % (process_text(proc), proc["exited_at"]), pid=proc["pid"]))
        py = proc.get("python") or {}
        if not py.get("stacks"):
            d.findings.append(finding("no-python-stacks", "%s: no Python stacks (%s)"
                                      % (process_text(proc), py.get("reason") or "unknown"), pid=proc["pid"]))
    workers = [p for p in d.procs.values() if d.roles.get(p["pid"]) == "compile-worker" and p.get("exited_at") is None]
    if workers:
        busy = [p for p in workers if (d.most_telling_thread(p["pid"]) or _NoView).kind in ("cpu", "compile")]
        compiling = any(v.kind == "compile" for v in d.chain)
        text = "inductor compile-worker pool: %d of %d workers busy" % (len(busy), len(workers))
        if not busy and not compiling:
            text += "; an idle pool is left over from earlier compiles and does not mean compiling"
        d.findings.append(finding("compile-workers", text))
    if compilers:
        d.findings.append(finding("compiler-processes", "%d compiler/linker processes ran during the window (%s)" % (
            sum(compilers.values()), ", ".join("%s x%d" % (c, n) for c, n in compilers.most_common()))))
    for view in d.views:
        d_share = sum(n for label, n in view.activity.items() if label.startswith("D:")) / max(view.n_samples, 1)
        if d_share >= 0.2:
            d.findings.append(finding("d-state", "%s in uninterruptible sleep (D) %s of the window"
                                      % (view.label, pct(d_share)), view))


def _step_text(d, view):
    """"main 812/812 (poll on pipe:[123])" or "4 DataLoader worker(s): 4 io (read ...)"."""
    activity, count = view.activity.most_common(1)[0] if view.activity else (view.kind, 0)
    activity = "on CPU" if activity == "running" else activity
    what = detail_text(view.top_detail())
    inner = "%s %s" % (view.kind, activity) if view.kind not in (activity,) else activity
    if what and activity != "on CPU":
        inner += " on %s" % what
    group = d.group_of.get((view.pid, view.tid))
    if group:
        return "%s (e.g. pid %d: %s)" % (group, view.pid, inner)
    role = d.roles.get(view.pid) or "thread"
    return "%s %d/%d '%s' (%s)" % (role, view.pid, view.tid, view.name, inner)


def _resource_text(d):
    """The resource at the end of a chain, when it is one: storage throughput."""
    if not d.chain or d.chain[-1].kind != "io":
        return ""
    pids = {w.pid for w in d.workers} or {d.chain[-1].pid}
    duration = (d.capture.get("window") or {}).get("duration_s") or 0
    read_bytes = sum(((d.procs.get(pid) or {}).get("io") or {}).get("read_bytes", 0) for pid in pids)
    if not duration:
        return ""
    return " → storage at %.1f MB/s" % (read_bytes / duration / 1e6)


def _ranks(d):
    from .ranks import group, rank_rows, signature, suspects
    rows = rank_rows(d)
    if not rows:
        return None
    odd = {r["pid"] for r in suspects(rows)}
    for row in rows:
        row["suspect"] = row["pid"] in odd
    return {"rows": rows, "groups": [{"shape": sig, "ranks": [r["rank"] for r in members]}
                                     for sig, members in group(rows)]}


def _result(d, verdict):
    threads = {}
    for view in d.views:
        threads["%d:%d" % (view.pid, view.tid)] = {
            "kind": view.kind,
            "share": round(view.share, 3),
            "samples": view.n_samples,
            "stack_samples": view.n_stack_samples,
            "residency": {k: round(v / view.n_samples, 3) for k, v in view.activity.most_common()}
            if view.n_samples else {},
        }
    return {
        "verdict": verdict,
        "findings": d.findings,
        "roles": {str(pid): role for pid, role in d.roles.items()},
        "chain": [{"pid": v.pid, "tid": v.tid, "name": v.name, "kind": v.kind,
                   "role": d.roles.get(v.pid), "text": _step_text(d, v)} for v in d.chain],
        "chain_text": " → ".join(_step_text(d, v) for v in d.chain) + _resource_text(d),
        "ranks": _ranks(d),
        "threads": threads,
    }
