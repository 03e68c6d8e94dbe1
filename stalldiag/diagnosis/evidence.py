"""Evidence and findings around a verdict: the numbers a reader asks for.

Process counters, DataLoader starvation, compilation time, rank groups, GPU
activity, and findings that stand on their own (exited processes, missing
stacks, D state, compile workers).
"""
from collections import Counter

from .explain import detail_text, frame_text, pct, process_text
from .graph import finding

LAUNCH_BOUND_SM = 10.0   # GPM SM activity under which a computing host thread, not the GPU, sets the pace

def process_evidence(d, culprit, evidence):
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


def framework_evidence(d, focus, culprit, evidence):
    """DataLoader starvation, compilation time, rank groups: the numbers a reader asks for."""
    duration = (d.capture.get("window") or {}).get("duration_s") or 0
    if focus.kind == "dataloader":
        starved = focus.context_share.get("dataloader", focus.share)
        from . import workers_of
        workers = workers_of(d)
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
    groups = None
    if any(v.kind in ("collective", "rendezvous") or v.kind == "cuda" and str(d.roles.get(v.pid)).startswith("rank ")
           for v in d.chain):
        from .edges import rank_groups
        groups = rank_groups(d)
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


def gpu_evidence(d, focus, culprit, category, evidence):
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
    culprit_devs = [d.gpus[i] for i in devices_of(d.capture, culprit.pid) if i in d.gpus]
    if category == "cpu" and culprit_devs and focus.kind != "dataloader":
        dev = culprit_devs[0]
        if dev.has_gpm and (dev.sm or 0) < LAUNCH_BOUND_SM and culprit.state is not None \
                and culprit.state.condition == "computing":
            text = ("launch-bound: GPU %d is nearly idle (utilization %.0f%%, SM %.1f%%) while %s spends the "
                    "window on the CPU issuing work: the host, not the GPU, sets the pace (small kernels, "
                    "Python overhead; CUDA graphs or larger batches help)" % (
                        dev.index, dev.util or 0, dev.sm or 0, culprit.label))
            d.findings.append(finding("launch-bound", text, culprit))
            evidence.append(text)
            phrase = "; launch-bound: GPU %d SM %.1f%%" % (dev.index, dev.sm or 0)
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
            from ..knowledge.gpu import reasons_text
            d.findings.append(finding("gpu-throttled", "GPU %d clocks slowed by %s" % (
                dev.index, ", ".join(reasons_text(slow)))))
    return phrase


def _rank_label(d, pid):
    return "%s (pid %d)" % (d.roles.get(pid), pid)


def _missing_ranks(d):
    from ..knowledge.ranks import RANK_VARS, WORLD_SIZE_VARS, first_var
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


def unseen_wakers(d, views):
    """Waits of the chain whose waker the probe could not see, and why (the other end on another
    host, nobody holding the write end, a set that cannot be read), and the mount a file wait
    is on: what a reader needs when the walk had to stop there."""
    said = set()
    for view in views:
        for record in d.wakers.get((view.pid, view.tid), []):
            key = (record.get("wait"), record.get("target"))
            if key in said:
                continue
            if record.get("why_unseen"):
                said.add(key)
                d.findings.append(finding("waker-unseen", "%s waits on %s (%s): its waker cannot be seen: %s" % (
                    view.label, record.get("target") or record.get("wait"), record.get("syscall") or record.get("wait"),
                    record["why_unseen"]), view))
            mount = record.get("mount")
            if mount and mount.get("fstype"):
                said.add(key)
                served = ", ".join("pid %s (%s)" % (s.get("pid"), s.get("comm")) for s in mount.get("served_by") or [])
                d.findings.append(finding("mount", "%s waits on %s, on %s (%s from %s%s)%s" % (
                    view.label, record.get("target"), mount.get("mountpoint"), mount.get("fstype"),
                    mount.get("source") or "?", ", server %s" % mount["server"] if mount.get("server") else "",
                    "; served by %s" % served if served else ""), view))
                if record.get("kernel_stack"):
                    d.findings[-1]["summary"] += "; kernel stack: %s" % " < ".join(record["kernel_stack"][:6])


def event_loop_blocked(d, view):
    """A thread that runs an asyncio event loop, held all window in one step (a synchronous
    sleep, read or computation inside a coroutine): no other task of the loop runs."""
    from ..knowledge import frames as frame_table
    from .graph import doing_call
    from .progress import STUCK_SHARE, stuck
    if not frame_table.in_event_loop_step(view.top_stack) or view.top_stack_count < 0.9 * view.n_stack_samples:
        return
    if not (stuck(view) or view.state is not None and view.state.condition in ("computing", "spinning")
            and view.share >= STUCK_SHARE):
        return
    d.findings.append(finding(
        "event-loop-blocked", "%s runs an asyncio event loop, and one step has held it for the whole window: "
        "%s at %s inside a coroutine or callback, without awaiting, so no other task of that loop runs "
        "(await an async call instead, or move the work to an executor)" % (
            view.label, doing_call(view), frame_text(view.user_frame()) or "?"), view))


def event_loop_waiting(d, view):
    """An event loop between steps with nothing outside its process to wait on (event_loop.py):
    idle, or waiting for a wake-up only its own threads can send."""
    from .formatter import as_dict
    from .types import Finding
    loop = d.loops.get((view.pid, view.tid))
    if loop is None or loop["outside"] or view.kind not in ("poll", "loop-wakeup"):
        return
    if view.kind == "loop-wakeup":
        others = [v for v in d.by_pid.get(view.pid, []) if v is not view and v.top_stack]
        item = Finding.about("event-loop-wakeup", view, loop_thread=view, threads=others,
                             wakeup=[fd.get("target") or "fd %s" % fd.get("fd") for fd in loop["wakeup"]])
    else:
        item = Finding.about("event-loop-idle", view, loop_thread=view, timeout_ms=loop["timeout_ms"],
                             listeners=[fd.get("local") or fd.get("target") for fd in loop["listeners"]])
    d.findings.append(as_dict(item, d))


def general_findings(d):
    cap = d.capture
    from .graph import unnumbered_ranks
    guessed = unnumbered_ranks(cap, d.roles)
    if guessed:
        d.findings.append(finding("unnumbered-ranks", "pids %s run torch.distributed (gloo/NCCL/TCP-store threads) "
                                  "with no RANK variable: they are numbered here by pid, which may not be their "
                                  "rank" % ", ".join(map(str, guessed))))
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

