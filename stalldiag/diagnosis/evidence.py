"""The verdict's evidence: the numbers a reader asks for, as lines, from the scene, the findings
and the decision (nothing here finds anything: detectors.py and the registry's rows do)."""
from .explain import describe_thread, process_text
from .registry import table
from .registry.names import M
from ..vocab import Category


def lines(scene, findings, decision):
    g, focus, culprit = scene.g, scene.focus, decision.culprit
    out = [describe_thread(view) for view in scene.chain]
    if culprit.pid != focus.pid:
        out.append("%s is %s of %s" % (process_text(g.procs[culprit.pid]), g.roles.get(culprit.pid, "child"),
                                        process_text(g.procs[focus.pid])))
    out += process_lines(g, culprit)
    out += framework_lines(scene, findings)
    out += gpu_lines(scene, findings, decision.category)
    # the other rows whose sentence is a line of the evidence (the job's settings that explain it)
    placed = table.GPU_ROWS | {M.DATALOADER_STARVED, M.COMPILE_TIME}
    out += [table.sentence(g, f) for f in table.kept(findings, decision.category)
            if table.row(f).evidence_line and f.kind not in placed]
    return out


def process_lines(g, culprit):
    proc = g.procs[culprit.pid]
    io, ctx = proc.io, proc.ctx_switches
    duration = g.window.duration_s or 0
    out = []
    if io:
        out.append("pid %d during %.1f s: %d read / %d write syscalls, %d bytes read from storage, "
                   "%d bytes read in all" % (culprit.pid, duration, io.get("syscr", 0), io.get("syscw", 0),
                                             io.get("read_bytes", 0), io.get("rchar", 0)))
    if ctx:
        out.append("pid %d context switches: %d voluntary, %d involuntary"
                   % (culprit.pid, ctx["voluntary"], ctx["involuntary"]))
    return out


def _said(g, findings, kind):
    return [table.sentence(g, f) for f in findings if f.kind == kind]


def framework_lines(scene, findings):
    """DataLoader starvation, compilation time, rank groups."""
    from .detectors import rank_groups_of
    from .formatter import rank_groups_text
    g = scene.g
    out = _said(g, findings, M.DATALOADER_STARVED) + _said(g, findings, M.COMPILE_TIME)
    groups = rank_groups_of(scene)
    if groups:
        out.append(rank_groups_text(g, *groups))
        out += ["ranks %s never started" % f.facts["missing"] for f in findings if f.kind == M.MISSING_RANKS]
    return out


def gpu_lines(scene, findings, category):
    """The GPU numbers behind the verdict, and the sentences of the GPU rows the registry puts in
    the evidence (those that apply to the category)."""
    g = scene.g
    if not g.gpus:
        return []
    used = []
    for pid in [v.pid for v in scene.chain] + list(g.procs):
        for index in g.devices_of(pid):
            if index in g.gpus and index not in used:
                used.append(index)
    shown = used or sorted(g.gpus)
    out = [g.gpus[index].text() for index in shown]
    out += [table.sentence(g, f) for f in table.kept(findings, category)
            if f.kind in table.GPU_ROWS and table.row(f).evidence_line]
    if category == Category.COMPILATION:
        active = [g.gpus[i] for i in shown if not g.gpus[i].idle]
        if active:
            out.append("GPU activity during compilation (%s) is expected: autotuning benchmarks run kernels"
                       % ", ".join("GPU %d %.0f%%" % (dev.index, dev.util) for dev in active))
    return out
