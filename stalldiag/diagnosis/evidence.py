"""Evidence and findings around a verdict: the numbers a reader asks for.

Process counters, DataLoader starvation, compilation time, rank groups, GPU
activity, and findings that stand on their own (exited processes, missing
stacks, D state, compile workers).
"""
from collections import Counter

from .explain import detail_text, frame_text
from .registry import as_dict
from .motion import stuck
from .types import Finding



def say(d, kind, view=None, pid=None, **facts):
    """Add a Finding (formatter.py writes its sentence) and return that sentence, for the
    evidence list that repeats it."""
    item = as_dict(Finding.about(kind, view, pid=pid, **facts), d)
    d.findings.append(item)
    return item["summary"]


def process_evidence(d, culprit, evidence):
    proc = d.procs[culprit.pid]
    io = proc.io
    duration = d.window.duration_s or 0
    if io:
        evidence.append("pid %d during %.1f s: %d read / %d write syscalls, %d bytes read from storage, "
                        "%d bytes read in all" % (culprit.pid, duration, io.get("syscr", 0), io.get("syscw", 0),
                                                  io.get("read_bytes", 0), io.get("rchar", 0)))
    ctx = proc.ctx_switches
    if ctx:
        evidence.append("pid %d context switches: %d voluntary, %d involuntary"
                        % (culprit.pid, ctx["voluntary"], ctx["involuntary"]))


def framework_evidence(d, focus, culprit, evidence):
    """DataLoader starvation, compilation time, rank groups: the numbers a reader asks for."""
    duration = d.window.duration_s or 0
    if focus.kind == "dataloader":
        starved = focus.context_share.get("dataloader", focus.share)
        from .walk import workers_of
        workers = workers_of(d)
        read_bytes = sum(d.procs[w.pid].io.get("read_bytes", 0) for w in workers)
        rchar = sum(d.procs[w.pid].io.get("rchar", 0) for w in workers)
        files = sorted({detail_text(w.top_detail()) for w in workers if w.kind == "io" and w.top_detail()})
        evidence.append(say(d, "dataloader-starved", focus, loop=focus, starved=starved,
                            states=Counter(w.kind for w in workers), duration=duration,
                            read_bytes=read_bytes, rchar=rchar, files=files))
    compiling = [v for v in d.chain if v.kind == "compile"]
    if compiling:
        v = compiling[0]
        share = v.context_share.get("compile", 0)
        target = _compiled_function(v)
        evidence.append(say(d, "compiling", v, compiler=v, share=share, duration=duration, target=target,
                            runs=_compile_episodes(v)))
    groups = None
    if any(v.kind in ("collective", "rendezvous") or v.kind == "cuda" and str(d.roles.get(v.pid)).startswith("rank ")
           for v in d.chain):
        from .edges import rank_groups
        groups = rank_groups(d)
    if groups:
        waiting, outliers = groups
        from .formatter import rank_groups_text
        evidence.append(rank_groups_text(d, waiting, outliers))
        from .edges import ranks_of
        ranks = ranks_of(d)
        waits = [ranks[pid] for pid in waiting if pid in ranks]
        lines = {tuple((v.user_frame() or [None] * 3)[1:3]) for v in waits}
        if not outliers and len(waits) >= 2 and len(lines) >= 2 and all(stuck(v) for v in waits):
            say(d, "collective-mismatch", waits[0], ranks=waits)
        missing = _missing_ranks(d)
        if missing:
            say(d, "missing-ranks", missing=missing[0], world=missing[1])
            evidence.append("ranks %s never started" % missing[0])


def gpu_evidence(d, category, evidence, found):
    """The GPU numbers behind the verdict, and the GPU rows (gpu.detect, found before the
    category) that apply to its category: reported, and their sentence in the evidence where
    the registry says so."""
    from .registry import BY_KIND, with_category
    if not d.gpus:
        return
    used = []
    for pid in [v.pid for v in d.chain] + list(d.procs):
        for index in d.devices_of(pid):
            if index in d.gpus and index not in used:
                used.append(index)
    shown = used or sorted(d.gpus)
    for index in shown:
        evidence.append(d.gpus[index].text())
    for item in with_category(found, category):
        said = as_dict(item, d)
        d.findings.append(said)
        if BY_KIND[item.kind].evidence_line:
            evidence.append(said["summary"])
    if category == "compilation":
        active = [d.gpus[i] for i in shown if not d.gpus[i].idle]
        if active:
            evidence.append("GPU activity during compilation (%s) is expected: autotuning benchmarks run kernels"
                            % ", ".join("GPU %d %.0f%%" % (g.index, g.util) for g in active))
    for event in d.gpu.xid_events:
        say(d, "xid", event=event)
    for dev_info in d.gpu.devices:
        start, end = dev_info.ecc_uncorrected_start, dev_info.ecc_uncorrected_end
        if isinstance(start, int) and isinstance(end, int) and end > start:
            say(d, "ecc", index=dev_info.index, errors=end - start)
    for dev in d.gpus.values():
        slow = dev.clock_reasons & (0x8 | 0x40 | 0x80)
        if slow:
            say(d, "gpu-throttled", gpu=dev, reasons=slow)


def _missing_ranks(d):
    from ..knowledge.ranks import RANK_VARS, WORLD_SIZE_VARS, first_var
    seen, world = set(), None
    for proc in d.procs.values():
        rank = first_var(proc.env, RANK_VARS)
        if rank is not None:
            seen.add(rank)
        world = first_var(proc.env, WORLD_SIZE_VARS) or world
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
            key = (record.wait, record.target)
            if key in said:
                continue
            if record.why_unseen:
                said.add(key)
                say(d, "waker-unseen", view, waiter=view, record=record)
            mount = record.mount
            if mount and mount.get("fstype"):
                said.add(key)
                say(d, "mount", view, waiter=view, record=record)


def event_loop_blocked(d, view):
    """A thread that runs an asyncio event loop, held all window in one step (a synchronous
    sleep, read or computation inside a coroutine): no other task of the loop runs."""
    from ..knowledge import frames as frame_table
    from .motion import STUCK_SHARE, stuck
    if not frame_table.in_event_loop_step(view.top_stack) or view.top_stack_count < 0.9 * view.n_stack_samples:
        return
    if not (stuck(view) or view.state is not None and view.state.condition in ("computing", "spinning")
            and view.share >= STUCK_SHARE):
        return
    say(d, "event-loop-blocked", view, loop_thread=view)


def barrier_incomplete(d, view):
    """Every party seen at view's process-shared barrier waits, and none runs (barriers.py)."""
    for call, members in d.barriers:
        if view in members and all(stuck(v) for v in members):
            say(d, "barrier-incomplete", view, call=call, parties=members)


def event_loop_waiting(d, view):
    """An event loop between steps with nothing outside its process to wait on (event_loop.py):
    idle, or waiting for a wake-up only its own threads can send."""
    loop = d.loops.get((view.pid, view.tid))
    if loop is None or loop["outside"] or view.kind not in ("poll", "loop-wakeup"):
        return
    if view.kind == "loop-wakeup":
        others = [v for v in d.by_pid.get(view.pid, []) if v is not view and v.top_stack]
        say(d, "event-loop-wakeup", view, loop_thread=view, threads=others,
            wakeup=[fd.get("target") or "fd %s" % fd.get("fd") for fd in loop["wakeup"]])
    else:
        say(d, "event-loop-idle", view, loop_thread=view, timeout_ms=loop["timeout_ms"],
            listeners=[fd.get("local") or fd.get("target") for fd in loop["listeners"]])


def general_findings(d):
    """Findings that stand on their own: guessed rank numbers, children not inspected, exited
    processes, missing stacks, compile workers and compilers, threads in D state."""
    cap = d.capture
    from .graph import unnumbered_ranks
    guessed = unnumbered_ranks(d.proc_list, d.roles)
    if guessed:
        say(d, "unnumbered-ranks", pids=guessed, parties=sorted(d.barrier_pids & set(guessed)))
    skipped = cap.get("skipped_children") or 0
    if skipped:
        say(d, "skipped-children", pid=d.root_pid, count=skipped)
    compilers = Counter()
    for proc in d.proc_list:
        if d.roles.get(proc.pid) == "compiler":
            compilers[proc.comm or "?"] += 1
            continue  # short-lived by nature: summarised below, not one line each
        if proc.exited_at is not None:
            say(d, "exited", pid=proc.pid, proc=proc)
        if not proc.python.get("stacks") and proc.exited_at is None:
            say(d, "no-python-stacks", pid=proc.pid, proc=proc)
    workers = [p for p in d.proc_list if d.roles.get(p.pid) == "compile-worker" and p.exited_at is None]
    if workers:
        busy = [p for p in workers if (d.most_telling_thread(p.pid) or _NoView).kind in ("cpu", "compile")]
        say(d, "compile-workers", busy=len(busy), workers=len(workers),
            compiling=any(v.kind == "compile" for v in d.chain))
    if compilers:
        say(d, "compiler-processes", compilers=compilers)
    for view in d.views:
        d_share = sum(n for label, n in view.activity.items() if label.startswith("D:")) / max(view.n_samples, 1)
        if d_share >= 0.2:
            say(d, "d-state", view, thread=view, share=d_share)
