"""The typed report (render/model.py): the renderers' one input, and the JSON contract it serialises to.

- Renderers read only the Report: with its capture taken away, every format renders the same.
- Report.to_dict() is the JSON report: today's keys, report_version, the diagnosis's dicts as written.
- One renderer per format behind render.Renderer; the table picks the format of an output path.
- merge.incident() is a pure function of per-host Reports, rendered through the same renderers.
"""
import dataclasses
import json

import pytest

from helpers import CAPTURES
from stalldiag import render
from stalldiag.capture import load_report
from stalldiag.diagnosis import diagnose
from stalldiag.merge import incident
from stalldiag.render.model import REPORT_VERSION, Finding, Report, Verdict
from stalldiag.report import build, build_report, fallback_report, record_failure

CASES = ["nccl_hang", "dataloader_slow_io", "deadlock", "gpu_compile_autotune", "gloo_hang"]
REPORT_KEYS = ["report_version", "schema_version", "tool", "window", "verdict", "chain", "chain_text", "ranks",
               "findings", "processes", "syscall_counts", "gpus", "gpu_available", "gpu_window", "limitations",
               "failures", "capture"]


def capture(name):
    return load_report(str(CAPTURES / ("%s.json" % name)))


def fallback(name):
    report = fallback_report(capture(name))
    try:
        raise TypeError("injected")
    except TypeError as exc:
        record_failure(report, "diagnosis", exc)
    return report


@pytest.mark.parametrize("name", CASES)
def test_renderers_read_the_report_and_never_its_capture(name):
    for report in (build(capture(name)), fallback(name)):
        blind = dataclasses.replace(report, capture={})
        for fmt in ("text", "markdown", "html", "speedscope"):
            assert render.render(blind, fmt) == render.render(report, fmt), fmt
        assert render.render(blind, "text", color=True) == render.render(report, "text", color=True)


@pytest.mark.parametrize("name", CASES)
def test_the_json_report_is_the_dict_it_always_was_plus_its_version(name):
    cap = capture(name)
    report = build(cap)
    data = json.loads(render.render(report, "json"))
    assert list(data) == REPORT_KEYS
    assert data["report_version"] == REPORT_VERSION == report.report_version
    assert data == json.loads(json.dumps(build_report(cap), default=str))
    # the diagnosis's dicts as it wrote them: same keys, same order, same values
    result = diagnose(cap)
    for key in ("verdict", "chain", "chain_text", "ranks", "findings"):
        assert json.dumps(data[key]) == json.dumps(result[key], default=str), key
    assert data["capture"] == json.loads(json.dumps(cap, default=str))


def test_the_fallback_report_keeps_its_shape():
    data = json.loads(render.render(fallback("deadlock"), "json"))
    assert "gpu_window" not in data and data["ranks"] == {} and data["chain"] == []
    assert data["failures"][0]["stage"] == "diagnosis" and data["verdict"]["category"] == "unknown"
    thread = data["processes"][0]["threads"][0]
    assert list(thread) == ["tid", "name", "comm", "cpu_seconds", "samples"] and thread["samples"] > 0
    assert not any("failed" in line for line in data["capture"]["limitations"])   # the bug is the report's


def test_open_records_keep_keys_they_do_not_name_in_order():
    verdict = {"summary": "s", "category": "io", "pid": 1, "tid": 2, "new_fact": [1, 2],
               "progress": {"state": "cannot tell", "evidence": [], "why": "x"}}
    v = Verdict.read(verdict)
    assert v.category == "io" and v.progress.state == "cannot tell" and v.extra == {"new_fact": [1, 2]}
    assert json.dumps(v.to_dict()) == json.dumps(verdict)
    finding = {"kind": "deadlock", "summary": "...", "pid": 3, "tid": None, "cycle": [1, 2]}
    assert Finding.read(finding).to_dict() == finding and list(Finding.read(finding).to_dict()) == list(finding)
    built = Verdict(category="cpu", summary="busy")       # built here, not read: every field, in order
    assert list(built.to_dict())[:3] == ["category", "summary", "pid"]


def test_every_renderer_is_one_format_behind_one_interface():
    assert set(render.RENDERERS) == {"text", "markdown", "html", "json", "speedscope"}
    report = build(capture("deadlock"))
    for fmt, renderer in render.RENDERERS.items():
        assert isinstance(renderer, render.Renderer) and renderer.format == fmt and renderer.extensions
        assert isinstance(renderer.render(report), str)
    paths = {"r.json": "json", "R.JSON": "json", "r.speedscope.json": "speedscope", "x.Speedscope.Json": "speedscope",
             "r.md": "markdown", "r.markdown": "markdown", "r.txt": "text", "r.html": "html", "r.htm": "html",
             "r.pdf": None, "r": None, "dir.md/r": None}
    assert {path: render.format_for_path(path) for path in paths} == paths
    with pytest.raises(ValueError):
        render.render(report, "pdf")


def test_markdown_shows_recorded_locals():
    cap = capture("deadlock")
    thread = next(t for p in cap["processes"] for t in p["threads"] if t.get("stack_samples"))
    thread["locals"] = [{"function": "step", "line": 3, "locals": {"batch": "42"}},
                        {"function": "empty", "line": 9, "locals": {}}]
    md = render.render(build(cap), "markdown")
    assert "locals of `step`: `batch=42`" in md and "locals of `empty`" not in md


def _host(name, hostname):
    cap = capture(name)
    cap["host"] = dict(cap.get("host") or {}, hostname=hostname)
    return build(cap)


def test_merge_is_a_pure_function_of_the_host_reports():
    reports = [("a.json", _host("gloo_hang", "node-a")), ("b.json", _host("deadlock", "node-b"))]
    merged = incident(reports)
    assert merged.merged_from == ["a.json", "b.json"]
    assert [(h.host, h.category) for h in merged.hosts] == [("node-a", "collective"), ("node-b", "locks")]
    assert [r.host for r in merged.ranks] == ["node-a", "node-a"] and [r.file for r in merged.ranks] == ["a.json"] * 2
    odd = [r for r in merged.ranks if r.suspect]
    assert len(odd) == 1 and (merged.verdict.host, merged.verdict.rank) == ("node-a", odd[0].rank)
    assert merged.verdict.category == "collective" and "is the outlier" in merged.verdict.summary
    assert sum(len(g.ranks) for g in merged.groups) == len(merged.ranks)
    # the same Incident through the same renderers
    md = render.render_incident(merged, "markdown")
    assert md.startswith("# stalldiag merge: collective") and "| node-b | locks | " in md
    assert render.render_incident(merged, "text").startswith("MERGED VERDICT: COLLECTIVE")
    data = json.loads(render.render_incident(merged, "json"))
    assert list(data) == ["merged_from", "verdict", "hosts", "ranks", "groups"]
    assert list(data["ranks"][0])[-2:] == ["suspect", "file"] and data["verdict"]["suspects"]
    # no ranks anywhere: the per-host verdicts
    none = incident([("c.json", _host("deadlock", "node-c"))])
    assert none.verdict.category == "locks" and none.verdict.host is None and not none.ranks


def test_merge_of_ranks_alike_names_no_outlier():
    report = _host("nccl_hang", "node-a")
    for row in report.ranks.rows:       # every rank in the same collective, with the same stack
        row.state, row.where, row.stack = "collective", "all_reduce", report.ranks.rows[0].stack
    merged = incident([("a.json", report)])
    assert "no outlier rank" in merged.verdict.summary and not any(r.suspect for r in merged.ranks)
    assert "suspects" not in merged.verdict.to_dict()


def test_a_report_is_built_once_and_typed():
    report = build(capture("nccl_hang"))
    assert isinstance(report, Report) and report.diagnosed
    rows = [t for p in report.processes for t in p.threads if t.timeline]
    assert rows and all(s.cls.band for t in rows for s in t.timeline)
    assert report.gpu.available and report.gpu.series and report.gpu.summaries
    assert sum(run.samples for p in report.processes for t in p.threads for run in t.stack_runs) > 0


def test_the_fallback_report_survives_what_broke_the_diagnosis():
    """The fallback reads timelines, tails, failed calls and GPU charts where it can; a malformed
    part is left out, the rest is still rendered and the capture kept whole."""
    cap = capture("deadlock")
    cap["processes"][0]["threads"][0]["samples"] = [[0.0, "S", "futex", [1], None]]   # unhashable detail
    cap["output_tail"] = {"not-a-pid": {"stdout": {"path": "/x", "lines": ["boom"]}}}
    cap["exact_syscalls"] = {"errors": [[1, 2, {"connect": "garbage"}]]}
    cap["gpu"] = {"available": True, "devices": [{"index": 0}], "samples": 5}
    report = fallback_report(cap)
    assert not report.output_tails and not report.failed_calls and not report.gpu.available
    assert not report.processes[0].threads[0].timeline and report.processes[0].threads[0].samples == 1
    for fmt in ("text", "markdown", "html", "speedscope", "json"):
        assert render.render(report, fmt)
    assert json.loads(render.render(report, "json"))["capture"]["output_tail"] == cap["output_tail"]
