"""Diagnosis: a pure function from a capture to a verdict and findings (no I/O).

A pipeline, one step a module, each returning a record the next reads and none changing what an
earlier one made:
  graph.py        the capture's facts, read once: threads (with their kernel state and kind,
                  frozen once built), processes, roles, what the probes resolved
  walk.py         Walk: from the thread that should make progress along the wait-for edges
                  (edges.py) to the root; cycles; a pipe nobody drains
  detectors       Findings: the registry's rows (registry/table.py), run in its precedence
                  order, each a detector of the scene (scene.py)
  category.py     Decision: the category, the culprit, the first link of another category, the
                  mechanism the verdict rests on, and what it rests on (its basis)
  verdict.py      Words: the summary (the first row found that leads it) and the evidence
  progress.py     Progress: is the run making progress
  confidence.py   Confidence: how sure, from the decision's basis; below high, what it does not
                  know, the alternatives and what would settle them
Findings stay typed (types.Finding) until the report is written: their sentences and report
kinds are given only then (registry/table.as_report).
"""
from dataclasses import field
from typing import Any, Dict, List, Optional

from ..records import typed_record
from .category import decide_category
from .confidence import Confidence, assess as assess_confidence
from .detectors import run as run_rows
from .explain import describe_thread, detail_text, edge_words, frame_text, process_text  # noqa: F401
from .graph import WaitGraph
from .blockers import progress_of
from .progress import Progress
from .registry import table
from .scene import Scene
from .verdict import CATEGORIES, Words, words  # noqa: F401
from .walk import Walk, walk

# The public API: diagnose(), and the facts and words a report and its renderers may read of a
# capture without a diagnosis (what a process's GPUs and files did, how a frame or a wait reads).
# Everything else in this package is internal to the pipeline.
from .gpu import device_summaries, devices_of, visible_devices  # noqa: E402,F401
from .progress import file_changes, stdio_changes  # noqa: E402,F401
from .ranks import group as rank_groups_of, suspects as suspect_ranks  # noqa: E402,F401
# the ranks' Flight Recorders compared (merge runs it over every host's records)
from .collectives import analyze as collective_gaps, sentence as collective_gap_text  # noqa: E402,F401
from .threads import sample_kind  # noqa: E402,F401
from .timeline import sample_key  # noqa: E402,F401
from ..vocab import Category, EdgeKind, Kind, Level, ProgressState# noqa: E402


@typed_record(frozen=True)
class Diagnosis:
    """Every step's record, for the report to write out."""
    graph: Any
    walk: Optional[Walk]
    findings: List[Any] = field(default_factory=list)      # types.Finding, in precedence order
    decision: Any = None                                    # category.Decision
    words: Optional[Words] = None
    progress: Optional[Progress] = None
    confidence: Optional[Confidence] = None

    def as_dict(self):
        """The report's contract: {"verdict", "findings", "roles", "chain", "chain_text", "ranks",
        "threads", "gpu_devices"}; findings get their sentences and report kinds here."""
        return _result(self)


def diagnose(capture):
    """The report's contract of a capture's diagnosis (Diagnosis.as_dict)."""
    return diagnose_record(capture).as_dict()


def diagnose_record(capture):
    g = WaitGraph(capture)
    focus = g.focus_thread()
    if focus is None:
        return Diagnosis(g, None)
    scene = Scene(g, walk(g, focus))
    findings = run_rows(table.MECHANISMS, scene, "scene")
    decision = decide_category(scene, findings)
    said = words(scene, findings, decision)
    progress = progress_of(scene, findings)
    findings = findings + run_rows(table.MECHANISMS, scene.with_progress(progress), "progress")
    findings = table.kept(findings, decision.category)
    sure = assess_confidence(scene, findings, decision, progress)
    return Diagnosis(g, scene.walk, findings, decision, said, progress, sure)


def walk_of(capture):
    """Only the wait-for walk of a capture (None when no thread should make progress): what a
    probe asks of the window so far, to choose whose objects to read, at a third of a diagnosis."""
    g = WaitGraph(capture)
    focus = g.focus_thread()
    return walk(g, focus) if focus is not None else None


def settled_by_walk(walk_record):
    """The walk ended at a mechanism that rests on a closed chain of facts (a cycle of stuck
    threads, a pipe nobody drains: registry rows that rest on "closed"), which decides the verdict
    and its confidence whatever the waits' objects hold: reading them would change neither."""
    return walk_record is not None and any(table.closed(f) for f in walk_record.findings)


def _verdict(result):
    decision, sure = result.decision, result.confidence
    culprit = decision.culprit
    end = result.walk.end
    verdict = {
        "category": decision.category,
        "summary": result.words.summary,
        "pid": culprit.pid,
        "tid": culprit.tid,
        "thread_name": culprit.name,
        "confidence": sure.level,
        "evidence": list(result.words.evidence),
        # how the walk ended: None (no edge out of the culprit), a terminal edge's kind, or the
        # kind of the edge that closed a cycle
        "walk_end": str(end.kind) if end is not None else None,
        # the registry row the verdict rests on, if one does
        "mechanism": str(decision.mechanism.kind) if decision.mechanism is not None else None,
        "progress": result.progress.as_dict(),
        "confidence_rests_on": sure.rests_on,
    }
    if sure.level != Level.HIGH:
        verdict["unknown"] = list(sure.unknown)
        verdict["alternatives"] = list(sure.alternatives)
        verdict["to_settle"] = list(sure.to_settle)
    return verdict


def _nothing(g):
    return {"category": Category.UNKNOWN, "summary": "Nothing was sampled: the target exited or could not be read",
            "pid": g.root_pid, "tid": None, "confidence": Level.LOW, "evidence": [],
            "progress": {"state": ProgressState.NONE_SEEN, "evidence": ["nothing was sampled"]}}


def _step_text(g, walk, view):
    """"main 812/812 (poll on pipe:[123])" or "4 DataLoader worker(s): 4 io (read ...)"."""
    activity, _share = view.main_activity()
    what = detail_text(view.top_detail())
    inner = "%s %s" % (view.kind, activity) if view.kind not in (activity,) else activity
    if what and not activity.startswith("on CPU"):
        inner += " on %s" % what
    edge = walk.into[walk.chain.index(view)] if view in walk.chain else None
    if edge is not None and edge.kind == EdgeKind.WORKERS:
        group = "%d DataLoader workers: %s" % (len(edge.facts["workers"]), ", ".join(
            "%d %s" % (n, k) for k, n in edge.facts["kinds"].most_common()))
        return "%s (e.g. pid %d: %s)" % (group, view.pid, inner)
    role = g.roles.get(view.pid) or "thread"
    return "%s %d/%d '%s' (%s)" % (role, view.pid, view.tid, view.name, inner)


def _chain(g, walk, ranks=0):
    """The chain's steps as the report writes them: each with what it waits on (`activity`,
    `waits_on`) and, from the edge that led to it, what the step before waits for in words
    (`waits_for`), for the HTML picture's arrows; the last with how the walk ended (`end`): the
    edge that closed a cycle and the step it led back to, a terminal edge, or the resource the
    chain ends on."""
    steps = []
    for v, edge in zip(walk.chain, walk.into):
        activity, _share = v.main_activity()
        steps.append({"pid": v.pid, "tid": v.tid, "name": v.name, "kind": v.kind, "role": g.roles.get(v.pid),
                      "text": _step_text(g, walk, v), "edge": str(edge.kind) if edge is not None else None,
                      "activity": activity, "waits_on": detail_text(v.top_detail()),
                      "waits_for": edge_words(edge, ranks)})
    end, resource = walk.end, _resource_text(g, walk)[len(" → "):] or None
    if end is not None or resource:
        back = next((i for i, v in enumerate(walk.chain) if walk.cycle and v is walk.cycle[0]), None)
        steps[-1]["end"] = {"edge": str(end.kind) if end is not None else None, "cycle_to": back,
                            "resource": resource,
                            "waits_for": edge_words(end, ranks) if end is not None else "storage" if resource else None}
    return steps


def _resource_text(g, walk):
    """The resource at the end of a chain, when it is one: storage throughput."""
    if walk.chain[-1].kind != Kind.IO:
        return ""
    pids = {w.pid for w in walk.workers} or {walk.chain[-1].pid}
    duration = g.window.duration_s or 0
    read_bytes = sum(g.procs[pid].io.get("read_bytes", 0) for pid in pids if pid in g.procs)
    write_bytes = sum(g.procs[pid].io.get("write_bytes", 0) for pid in pids if pid in g.procs)
    if not duration:
        return ""
    if write_bytes > read_bytes:
        return " → storage at %.1f MB/s written" % (write_bytes / duration / 1e6)
    return " → storage at %.1f MB/s" % (read_bytes / duration / 1e6)


def _ranks(g):
    from .ranks import group, rank_rows, suspects
    rows = rank_rows(g)
    if not rows:
        return None
    odd = {r["pid"] for r in suspects(rows)}
    for row in rows:
        row["suspect"] = row["pid"] in odd
    return {"rows": rows, "groups": [{"shape": sig, "ranks": [r["rank"] for r in members]}
                                     for sig, members in group(rows)]}


def _threads(g):
    threads = {}
    for view in g.views:
        threads["%d:%d" % (view.pid, view.tid)] = {
            "kind": view.kind,
            "share": round(view.share, 3),
            "samples": view.n_samples,
            "stack_samples": view.n_stack_samples,
            "state": view.state.condition if view.state else None,
            "state_text": view.state.phrase if view.state else None,
            "residency": {k: round(v / view.n_samples, 3) for k, v in view.activity.most_common()}
            if view.n_samples else {},
        }
    return threads


def _process_facts(g):
    """What the report shows of each process that the diagnosis reads anyway: each distinct /proc
    sample's class, the files it read, wrote and opened, its stdout and stderr, its GPUs."""
    from .gpu import visible_devices
    from .motion import file_changes
    from .progress import stdio_changes
    from .timeline import sample_classes
    window_end = (g.window.start or 0) + (g.window.duration_s or 0)
    devices = [{"index": d.index, "uuid": d.uuid or ""} for d in g.gpu.devices]
    return [{"pid": proc.pid, "sample_classes": sample_classes(proc), "files": file_changes(proc),
             "stdio": stdio_changes(proc, window_end), "gpu_devices": g.devices_of(proc.pid),
             "visible_devices": visible_devices(proc.env, devices)} for proc in g.proc_list]


def _result(result):
    g, walk = result.graph, result.walk
    out = {
        "roles": {str(pid): role for pid, role in g.roles.items()},
        "ranks": _ranks(g),
        "threads": _threads(g),
        "gpu_devices": {str(pid): g.devices_of(pid) for pid in g.procs},   # read once, for the report
        # for the report's timelines, files and GPU window: read once here, never again after
        "processes": _process_facts(g),
        "gpu_summaries": g.gpus,
    }
    if walk is None:
        return dict(out, verdict=_nothing(g), findings=[], chain=[], chain_text="")
    return dict(
        out,
        verdict=_verdict(result),
        findings=[table.as_report(g, item) for item in result.findings],
        chain=_chain(g, walk, len(out["ranks"]["rows"]) if out["ranks"] else 0),
        chain_text=" → ".join(_step_text(g, walk, v) for v in walk.chain) + _resource_text(g, walk))
