"""Diagnosis: a pure function from a capture to a verdict and findings (no I/O).

A pipeline, one module a step, each reading what the step before produced:
  threads.py + state.py   what each thread did, and the state it is really in
                          (kernel accounting: running, spinning, throttled,
                          stopped, frozen, blocked, D state)
  graph.py                the threads, processes, roles and what the probes resolved
  edges.py                the wait-for edges out of a waiting thread, as data (types.Edge)
  walk.py                 from the thread that should make progress along the edges;
                          cycles found on the graph; its end is the root cause
  category.py             what the run is blocked on: the root cause's kind, from a table
  formatter.py            every sentence of the edges' and the walk's findings
  progress.py             the one progress model (thread, window, watch interval)
verdict.py writes the summary; evidence.py adds the numbers around it.
"""
from .evidence import barrier_incomplete, event_loop_blocked, event_loop_waiting, unseen_wakers, framework_evidence, general_findings, gpu_evidence, process_evidence
from .explain import describe_thread, detail_text, frame_text, process_text  # noqa: F401
from .registry import as_dict, qualifiers_of
from .graph import WaitGraph
from .verdict import CATEGORIES, choose_category, halted_phrase, summary_of, undrained_pipe  # noqa: F401
from .types import Finding
from .confidence import assess as assess_confidence
from .polls import detect as poll_findings
from .resources import detect as resource_findings
from .gpu import detect as gpu_findings
from .walk import walk, workers_of

# The public API: diagnose(), and the facts and words a report and its renderers may read of a
# capture without a diagnosis (what a process's GPUs and files did, how a frame or a wait reads).
# Everything else in this package is internal to the pipeline.
from .gpu import device_summaries, devices_of, visible_devices  # noqa: E402,F401
from .progress import file_changes, stdio_changes  # noqa: E402,F401
from .ranks import group as rank_groups_of, suspects as suspect_ranks  # noqa: E402,F401
from .threads import sample_kind  # noqa: E402,F401


def diagnose(capture):
    """Return {"verdict", "findings", "roles", "chain", "threads", "gpu_devices"} for a capture."""
    d = WaitGraph(capture)
    focus = d.focus_thread()
    if focus is None:
        verdict = {"category": "unknown", "summary": "Nothing was sampled: the target exited or "
                   "could not be read", "pid": (capture.get("request") or {}).get("pid"), "tid": None,
                   "confidence": "low", "evidence": [],
                   "progress": {"state": "no progress seen", "evidence": ["nothing was sampled"]}}
        return _result(d, verdict)

    d.walk = walk(d, focus)
    d.chain = d.walk.chain
    d.findings.extend(as_dict(item, d) for item in d.walk.findings)
    culprit = d.chain[-1]
    pipe = undrained_pipe(d)
    if pipe is not None:
        culprit = pipe[2]   # the reader that does not drain the pipe, wherever the walk ended
    event_loop_blocked(d, culprit)
    event_loop_waiting(d, culprit)
    barrier_incomplete(d, culprit)
    unseen_wakers(d, [culprit] if culprit is d.chain[0] else [d.chain[0], culprit])
    d.findings.extend(as_dict(item, d) for item in poll_findings(d, culprit))
    d.findings.extend(as_dict(item, d) for item in resource_findings(d, culprit))
    retry = d.retry(culprit) if (culprit.pid, culprit.tid) not in d.file_waits else None
    if retry:
        d.findings.append(dict(as_dict(Finding.about("retry-loop", culprit, retrier=culprit, **retry), d),
                               failing=retry["failing"]))
    gpu_found = gpu_findings(d, culprit)   # (qualifiers: kept where the category applies)
    category, through = choose_category(d, focus, culprit)
    evidence = []
    for view in d.chain:
        evidence.append(describe_thread(view))
    if culprit.pid != focus.pid:
        evidence.append("%s is %s of %s" % (process_text(d.procs[culprit.pid]),
                                             d.roles.get(culprit.pid, "child"), process_text(d.procs[focus.pid])))
    process_evidence(d, culprit, evidence)
    framework_evidence(d, focus, culprit, evidence)
    gpu_evidence(d, category, evidence, gpu_found)
    verdict = {
        "category": category,
        "summary": "; ".join([summary_of(d, category, focus, culprit, through)] + qualifiers_of(d.findings, category)),
        "pid": culprit.pid,
        "tid": culprit.tid,
        "thread_name": culprit.name,
        "confidence": None,   # from the evidence, once progress is known (confidence.py)
        "evidence": evidence,
        # how the walk ended: None (no edge out of the culprit), a terminal edge's kind, or the
        # kind of the edge that closed a cycle
        "walk_end": d.walk.end.kind if d.walk.end is not None else None,
    }
    general_findings(d)
    _progress(d, verdict, focus)
    sure = assess_confidence(d, focus, culprit, category, verdict["progress"])
    verdict["confidence"] = sure["level"]
    verdict["confidence_rests_on"] = sure["rests_on"]
    if sure["level"] != "high":
        verdict["alternatives"] = sure["alternatives"]
        verdict["to_settle"] = sure["to_settle"]
    return _result(d, verdict)


def _progress(d, verdict, focus):
    """Every verdict says whether the run is making progress; a silent healthy run is a finding."""
    from .progress import assess, blockers, silent_output
    verdict["progress"] = assess(d.window, d.proc_list, d.views, d.gpus, blockers(d))
    silent = silent_output(d.window, d.procs.get(focus.pid), verdict["progress"])
    if silent:
        item = as_dict(Finding.about("silent-output", pid=focus.pid, **silent), d)
        item["unchanged_s"] = silent["unchanged_s"]
        item["stdio"] = {str(k): v for k, v in silent["stdio"].items()}
        d.findings.insert(0, item)


def _step_text(d, view):
    """"main 812/812 (poll on pipe:[123])" or "4 DataLoader worker(s): 4 io (read ...)"."""
    activity, _share = view.main_activity()
    what = detail_text(view.top_detail())
    inner = "%s %s" % (view.kind, activity) if view.kind not in (activity,) else activity
    if what and not activity.startswith("on CPU"):
        inner += " on %s" % what
    edge = d.walk.into[d.chain.index(view)] if d.walk and view in d.chain else None
    if edge is not None and edge.kind == "workers":
        group = "%d DataLoader workers: %s" % (len(edge.facts["workers"]), ", ".join(
            "%d %s" % (n, k) for k, n in edge.facts["kinds"].most_common()))
        return "%s (e.g. pid %d: %s)" % (group, view.pid, inner)
    role = d.roles.get(view.pid) or "thread"
    return "%s %d/%d '%s' (%s)" % (role, view.pid, view.tid, view.name, inner)


def _resource_text(d):
    """The resource at the end of a chain, when it is one: storage throughput."""
    if not d.chain or d.chain[-1].kind != "io":
        return ""
    pids = {w.pid for w in workers_of(d)} or {d.chain[-1].pid}
    duration = d.window.duration_s or 0
    read_bytes = sum(d.procs[pid].io.get("read_bytes", 0) for pid in pids if pid in d.procs)
    write_bytes = sum(d.procs[pid].io.get("write_bytes", 0) for pid in pids if pid in d.procs)
    if not duration:
        return ""
    if write_bytes > read_bytes:
        return " → storage at %.1f MB/s written" % (write_bytes / duration / 1e6)
    return " → storage at %.1f MB/s" % (read_bytes / duration / 1e6)


def _ranks(d):
    from .ranks import group, rank_rows, suspects
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
            "state": view.state.condition if view.state else None,
            "state_text": view.state.phrase if view.state else None,
            "residency": {k: round(v / view.n_samples, 3) for k, v in view.activity.most_common()}
            if view.n_samples else {},
        }
    return {
        "verdict": verdict,
        "findings": d.findings,
        "roles": {str(pid): role for pid, role in d.roles.items()},
        "chain": [{"pid": v.pid, "tid": v.tid, "name": v.name, "kind": v.kind,
                   "role": d.roles.get(v.pid), "text": _step_text(d, v),
                   "edge": edge.kind if edge is not None else None}
                  for v, edge in zip(d.chain, d.walk.into if d.walk else [None] * len(d.chain))],
        "chain_text": " → ".join(_step_text(d, v) for v in d.chain) + _resource_text(d),
        "ranks": _ranks(d),
        "threads": threads,
        "gpu_devices": {str(pid): d.devices_of(pid) for pid in d.procs},   # read once, for the report
    }

