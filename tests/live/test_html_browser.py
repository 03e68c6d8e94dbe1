"""The HTML report in a real headless Chromium (selenium): the inline JS drew the timeline, flame
graph and GPU charts without errors, and the page reads without JS.  From the saved fixture
captures (the page itself is checked offline in tests/replay/test_html_report.py).

The tests skip when /usr/bin/chromium, /usr/bin/chromedriver or selenium is missing; to run them:

    apt-get update && apt-get install -y chromium chromium-driver
    pip install selenium
"""
import os
import struct
import zlib

import pytest

from helpers import CAPTURES
from stalldiag.capture import load_report
from stalldiag.render import html as html_render
from stalldiag.report import build

pytestmark = pytest.mark.alone


def report_of(name):
    return build(load_report(str(CAPTURES / ("%s.json" % name))))


CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"


def _browser_missing():
    for path in (CHROMIUM, CHROMEDRIVER):
        if not os.path.exists(path):
            return "%s not installed (apt-get install -y chromium chromium-driver)" % path
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium not installed (pip install selenium)"
    return None


@pytest.fixture(scope="module")
def driver(tmp_path_factory):
    reason = _browser_missing()
    if reason:
        pytest.skip("headless browser test: " + reason)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--no-first-run", "--disable-quic", "--window-size=1400,2200",
                "--user-data-dir=%s" % tmp_path_factory.mktemp("chromium-profile")):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    drv = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    drv.set_page_load_timeout(60)
    yield drv
    drv.quit()


def _png_pixels_vary(png):
    """True when a PNG is not one flat colour: decode IHDR + IDAT, unfilter, count colours."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, b"", None
    while pos < len(png):
        length, kind = struct.unpack(">I4s", png[pos:pos + 8])
        chunk = png[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", chunk)
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + length
    width, height, depth, color_type = header[:4]
    assert depth == 8 and color_type in (2, 6), header
    bpp = 3 if color_type == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    prev = bytearray(stride)
    colours = set()
    for y in range(height):
        line = raw[y * (stride + 1):(y + 1) * (stride + 1)]
        ftype, cur = line[0], bytearray(line[1:])
        for i in range(stride):
            a = cur[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if ftype == 1:
                cur[i] = (cur[i] + a) & 255
            elif ftype == 2:
                cur[i] = (cur[i] + b) & 255
            elif ftype == 3:
                cur[i] = (cur[i] + (a + b) // 2) & 255
            elif ftype == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                cur[i] = (cur[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        if y % 8 == 0:
            for x in range(0, stride, bpp * 4):
                colours.add(bytes(cur[x:x + 3]))
        prev = cur
    return len(colours)


def _open(driver, tmp_path, name):
    path = tmp_path / ("%s.html" % name)
    path.write_text(html_render.render(report_of(name)), encoding="utf-8")
    driver.get_log("browser")   # drop anything left from a previous page
    driver.get(path.as_uri())
    return driver


def _severe(driver):
    return [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]


def _count(driver, css):
    return driver.execute_script("return document.querySelectorAll(arguments[0]).length", css)


@pytest.mark.parametrize("name", ["nccl_hang", "dataloader_slow_io"])
def test_page_draws_in_a_real_browser(driver, tmp_path, name):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    report = report_of(name)
    _open(driver, tmp_path, name)
    assert not _severe(driver)
    cap = report.capture
    threads = sum(1 for p in cap["processes"] for t in p["threads"] if t.get("samples"))
    # the timeline: a row per thread, segments drawn
    assert _count(driver, "#timeline svg g.row") == threads
    assert _count(driver, "#timeline svg rect.seg") >= threads
    assert "could not draw" not in driver.find_element(By.ID, "timeline").text
    # hover a segment: the tooltip names the thread and a time
    seg = driver.find_elements(By.CSS_SELECTOR, "#timeline svg rect.seg")[0]
    ActionChains(driver).move_to_element(seg).perform()
    tip = driver.find_element(By.ID, "tip")
    assert tip.is_displayed() and "tid" in tip.text and " s" in tip.text
    # the flame graph: all processes first, then one process via the selector
    assert _count(driver, "#flame svg rect.fl") > 3
    svg = driver.find_element(By.ID, "flame-svg")
    assert svg.get_attribute("data-view") == "all"
    select = Select(driver.find_element(By.ID, "flame-select"))
    pids = [o.get_attribute("value") for o in select.options if o.get_attribute("value") != "all"]
    assert len(pids) >= 2
    before = _count(driver, "#flame svg rect.fl")
    select.select_by_value(pids[-1])
    svg = driver.find_element(By.ID, "flame-svg")
    assert svg.get_attribute("data-view") == pids[-1]
    after = _count(driver, "#flame svg rect.fl")
    assert 0 < after < before
    first_label = driver.execute_script("return document.querySelector('#flame svg text').textContent")
    assert first_label.startswith("pid %s" % pids[-1])
    # hover a frame: function, file:line and samples
    frame = driver.find_elements(By.CSS_SELECTOR, "#flame svg rect.fl")[-1]
    ActionChains(driver).move_to_element(frame).perform()
    assert "sample" in driver.find_element(By.ID, "tip").text
    # merging threads drops the thread level, and brings it back
    tid_labels = "return [...document.querySelectorAll('#flame svg text')].filter(t => t.textContent.startsWith('tid ')).length"
    assert driver.execute_script(tid_labels) >= 1
    driver.find_element(By.ID, "flame-threads").click()
    assert driver.execute_script(tid_labels) == 0 and _count(driver, "#flame svg rect.fl") > 1
    driver.find_element(By.ID, "flame-threads").click()
    assert driver.execute_script(tid_labels) >= 1
    # GPU: a line per device, or the plain "not available" line
    if report.gpu.available:
        assert _count(driver, "#gpu svg path.gpu-util") == len(report.gpu.devices)
        assert _count(driver, "#gpu svg path.gpu-sm") >= 1
    else:
        assert "GPU: not available" in driver.find_element(By.ID, "gpu-section").text
    assert not _severe(driver)
    png = driver.get_screenshot_as_png()
    assert _png_pixels_vary(png) > 20, "the screenshot is (nearly) one colour"
    target = os.environ.get("STALLDIAG_SCREENSHOT_DIR")
    if target:
        with open(os.path.join(target, "stalldiag-%s.png" % name), "wb") as f:
            f.write(png)


def test_page_text_is_readable_without_js(driver, tmp_path):
    """With the charts' script gone the verdict, evidence and tables are still there."""
    report = report_of("gloo_hang")
    page = html_render.render(report)
    code_start = page.rindex("<script>")
    page = page[:code_start] + page[page.index("</script>", code_start) + len("</script>"):]
    path = tmp_path / "nojs.html"
    path.write_text(page, encoding="utf-8")
    driver.get(path.as_uri())
    body = driver.find_element("tag name", "body").text
    assert report.verdict.summary in body
    assert "Processes" in body and str(report.processes[0].pid) in body
    assert _count(driver, "#processes table.procs tbody tr") == len(report.processes)


@pytest.mark.parametrize("name", ["deadlock", "gloo_hang", "child_shell_slow_reader"])
def test_chain_picture_renders_in_a_real_browser(driver, tmp_path, name):
    """The wait-for chain's inline SVG: drawn with no console error, a nonzero box, a node per
    thread on the chain, the culprit's node outlined and labelled, a deadlock's cycle arrow."""
    report = report_of(name)
    _open(driver, tmp_path, name)
    assert not _severe(driver)
    box = driver.execute_script("var r = document.getElementById('chain-svg').getBoundingClientRect();"
                                "return [r.width, r.height];")
    assert box[0] > 100 and box[1] > 50, box
    assert _count(driver, "#chain-svg g.node.chain") == len({(s.pid, s.tid) for s in report.chain})
    assert _count(driver, "#chain-svg g.arrow") >= len(report.chain) - 1
    v = report.verdict
    culprit = driver.execute_script(
        "var g = document.querySelectorAll('#chain-svg g.node.culprit');"
        "if (g.length !== 1) return null;"
        "var r = g[0].querySelector('rect').getBoundingClientRect();"
        "return [g[0].getAttribute('data-pid'), g[0].getAttribute('data-tid'), r.width, r.height, g[0].textContent,"
        " getComputedStyle(g[0].querySelector('rect')).stroke];")
    assert culprit is not None, "no single culprit node"
    pid, tid, width, height, text, stroke = culprit
    assert (pid, tid) == (str(v.pid), str(v.tid)) and width > 0 and height > 0
    assert "CULPRIT" in text and stroke == "rgb(176, 0, 0)"
    cycles = _count(driver, "#chain-svg g.arrow.cycle")
    assert cycles == (1 if name == "deadlock" else 0)
    # the picture shows without JavaScript: it is in the page as written, not drawn by the script
    assert 'id="chain-svg"' in html_render.render(report)
    target = os.environ.get("STALLDIAG_SCREENSHOT_DIR")
    if target:
        png = driver.find_element("id", "chain-picture").screenshot_as_png
        with open(os.path.join(target, "stalldiag-chain-%s.png" % name), "wb") as f:
            f.write(png)


def test_chain_picture_with_a_hostile_thread_name_in_a_real_browser(driver, tmp_path):
    cap = load_report(str(CAPTURES / "deadlock.json"))
    evil = "<img src=x onerror=\"document.title='pwned'\"><script>document.title='pwned'</script>"
    for thread in cap["processes"][0]["threads"]:
        thread["python_name"] = evil
    path = tmp_path / "hostile.html"
    path.write_text(html_render.render(build(cap)), encoding="utf-8")
    driver.get_log("browser")
    driver.get(path.as_uri())
    assert driver.title != "pwned" and not _severe(driver)
    assert _count(driver, "#chain-svg img") == 0 and _count(driver, "script") == 2
    names = driver.execute_script("return [...document.querySelectorAll('#chain-svg g.node.chain text')]"
                                  ".map(t => t.textContent)")
    assert any(evil[:20] in n for n in names)   # shown as text (shortened to fit its node)
    assert _count(driver, "#chain-svg g.node.culprit") == 1
