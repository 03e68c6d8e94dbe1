"""The HTML report and the speedscope export, from the saved fixture captures.

A real headless Chromium opening the page is in tests/live/test_html_browser.py.
"""
import copy
import html
import json
import re

import pytest

from helpers import CAPTURES
from stalldiag.capture import load_report
from stalldiag.render import html as html_render
from stalldiag.render import speedscope
from stalldiag.report import build

FIXTURES = ["nccl_hang", "dataloader_slow_io", "gloo_hang", "gpu_compile_autotune", "deadlock"]
DATA_RE = re.compile(r'<script type="application/json" id="stalldiag-data">(.*?)</script>', re.S)
# a reference that makes the browser fetch from the network: src=, href=, CSS url(), @import
NETWORK_RE = re.compile(r"""(?:\b(?:src|href|action|poster|srcset)\s*=\s*["']?\s*(?:https?:)?//)"""
                        r"""|url\(\s*["']?\s*(?:https?:)?//|@import""", re.I)


def report_of(name):
    return build(load_report(str(CAPTURES / ("%s.json" % name))))


def embedded_data(page):
    found = DATA_RE.findall(page)
    assert len(found) == 1, "expected one embedded JSON block"
    return json.loads(found[0])


# --- the page ------------------------------------------------------------------

@pytest.mark.parametrize("name", FIXTURES)
def test_html_is_one_self_contained_document(name):
    report = report_of(name)
    page = html_render.render(report)
    assert page.lstrip().lower().startswith("<!doctype html>")
    assert page.count("<html") == 1 and page.count("</html>") == 1
    assert page.count("<body") == 1 and page.count("</body>") == 1
    assert not NETWORK_RE.search(page), NETWORK_RE.search(page).group(0)
    assert "<link" not in page.lower()
    assert not re.search(r"<script[^>]*\bsrc\s*=", page, re.I)
    # the verdict, readable without JS
    v = report.verdict
    assert html.escape(v.summary, quote=True) in page
    assert html.escape(report.chain_text, quote=True) in page
    for line in v.evidence or []:
        assert html.escape(line, quote=True) in page
    data = embedded_data(page)
    assert set(data) >= {"timeline", "flame", "gpu", "verdict"}
    assert data["timeline"]["rows"], "no timeline rows"
    assert len(page.encode("utf-8")) < 3_000_000


def test_embedded_data_matches_the_capture():
    report = report_of("nccl_hang")
    data = embedded_data(html_render.render(report))
    cap = report.capture
    threads = sum(1 for p in cap["processes"] for t in p["threads"] if t.get("samples"))
    assert len(data["timeline"]["rows"]) == threads
    # the flame graph holds every py-spy sample
    expected = sum(n for p in cap["processes"] for t in p["threads"] for _sid, n in t.get("stack_samples") or [])
    got = sum(n for p in data["flame"]["procs"] for t in p["threads"] for _s, n in t["stacks"])
    assert got == expected > 0
    assert data["gpu"]["available"] and data["gpu"]["devices"][0]["util"]
    assert data["gpu"]["devices"][0]["sm"], "nccl_hang has GPM samples"
    # every segment inside the window, categories and labels valid
    cats, labels = data["timeline"]["categories"], data["timeline"]["labels"]
    for row in data["timeline"]["rows"]:
        for a, b, cat, lab in row["segs"]:
            assert 0 <= a <= b and 0 <= cat < len(cats) and 0 <= lab < len(labels)


def test_gpu_not_available_is_said_in_plain_html():
    report = report_of("dataloader_slow_io")
    page = html_render.render(report)
    assert "GPU: not available (" in page
    assert embedded_data(page)["gpu"]["available"] is False


def test_capture_text_is_escaped():
    report = report_of("dataloader_slow_io")
    cap = report.capture
    evil = "<script>alert(1)</script> & \"quotes\" 'x' </script><!-- \udcff"
    proc = cap["processes"][0]
    proc["cmdline"] = ["python3", evil]
    proc["threads"][0]["name"] = evil
    proc["threads"][0]["python_name"] = evil
    cap["frames"][0] = [evil, "/tmp/<b>&.py", 1, None]
    cap["limitations"] = cap["limitations"] + [evil]
    report = build(cap)
    report.verdict.summary = evil
    page = html_render.render(report)
    page.encode("utf-8")   # no lone surrogates left: writable as UTF-8
    assert "<script>alert" not in page
    assert "<!--" not in page
    assert page.lower().count("<script") == 2  # the data block and the code, nothing else
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    data = embedded_data(page)
    names = [r["name"] for r in data["timeline"]["rows"]]
    assert any("<script>alert(1)</script>" in n for n in names)
    assert any(f[0].startswith("<script>alert(1)") for f in data["flame"]["frames"])
    json.loads(speedscope.render(report))


def test_a_capture_with_thousands_of_threads_stays_small():
    cap = load_report(str(CAPTURES / "nccl_hang.json"))
    proc = cap["processes"][1]
    base = proc["threads"]
    threads = []
    for i in range(2000):
        t = copy.deepcopy(base[i % len(base)])
        t["tid"] = 100000 + i
        # a different state every sample: the most segments a row can have
        t["samples"] = [[k / 10, "S", ("futex", "read", "poll", "running")[(k + i) % 4], None, None]
                        for k in range(600)]
        threads.append(t)
    proc["threads"] = threads
    cap["window"]["duration_s"] = 60.0
    report = build(cap)
    page = html_render.render(report)
    assert len(page.encode("utf-8")) < 3_000_000
    data = embedded_data(page)
    assert len(data["timeline"]["rows"]) == html_render.MAX_TIMELINE_THREADS
    assert data["timeline"]["total"] > 2000
    assert all(len(r["segs"]) <= html_render.MAX_SEGMENTS for r in data["timeline"]["rows"])
    assert "showing %d of %d threads" % (html_render.MAX_TIMELINE_THREADS, data["timeline"]["total"]) in page
    # the culprit thread is always kept
    v = report.verdict
    assert any(r["pid"] == v.pid and r["tid"] == v.tid and r["culprit"] for r in data["timeline"]["rows"])


# --- speedscope ----------------------------------------------------------------------

@pytest.mark.parametrize("name", FIXTURES)
def test_speedscope_export(name):
    report = report_of(name)
    doc = json.loads(speedscope.render(report))
    assert doc["$schema"] == "https://www.speedscope.app/file-format-schema.json"
    assert doc["exporter"].startswith("stalldiag ")
    assert isinstance(doc["name"], str)
    frames = doc["shared"]["frames"]
    assert all(isinstance(f["name"], str) for f in frames)
    cap = report.capture
    expected = sum(n for p in cap["processes"] for t in p["threads"] for _sid, n in t.get("stack_samples") or [])
    total = 0
    for prof in doc["profiles"]:
        assert prof["type"] == "sampled" and prof["unit"] == "none"
        assert re.match(r"pid \d+ tid \d+ ", prof["name"])
        assert prof["startValue"] == 0 and prof["endValue"] == len(prof["samples"]) == len(prof["weights"])
        assert all(w == 1 for w in prof["weights"])
        for sample in prof["samples"]:
            assert all(isinstance(i, int) and 0 <= i < len(frames) for i in sample)
        total += len(prof["samples"])
    assert total == expected > 0
    threads_with_stacks = sum(1 for p in cap["processes"] for t in p["threads"] if t.get("stack_samples"))
    assert len(doc["profiles"]) == threads_with_stacks


def test_speedscope_samples_are_root_first_in_time_order():
    report = report_of("nccl_hang")
    cap = report.capture
    doc = json.loads(speedscope.render(report))
    profiles = {p["name"].split(" ")[3]: p for p in doc["profiles"]}
    for proc in cap["processes"]:
        for thread in proc["threads"]:
            runs = thread.get("stack_samples") or []
            if not runs:
                continue
            prof = profiles[str(thread["tid"])]
            expanded = [list(reversed(cap["stacks"][sid])) for sid, n in runs for _ in range(n)]
            assert prof["samples"] == expanded
            leaf = cap["frames"][cap["stacks"][runs[0][0]][0]]
            assert doc["shared"]["frames"][prof["samples"][0][-1]]["name"] == leaf[0]
