"""Every row of the knowledge tables matches something real in a saved capture.

A row nobody has seen is a guess; this keeps the tables honest.  Captures are
recorded from the workloads in fixtures/workloads (tools/record_captures.py,
tools/gpu_proof.sh).
"""
import json
import re

import pytest

from helpers import CAPTURES
from stalldiag.knowledge import blocking
from stalldiag.knowledge import frames as frame_table
from stalldiag.knowledge import processes as process_table


def _captures():
    for path in sorted(CAPTURES.glob("*.json")):
        yield path.name, json.loads(path.read_text())["capture"]


CAPTURE_DATA = list(_captures())


def _frames():
    for name, cap in CAPTURE_DATA:
        for frame in cap["frames"]:
            yield name, frame


def _row_id(row):
    return "%s:%s:%s" % (row.framework, row.kind, row.function[:30])


# file paths py-spy reports in forms the captures may lack: relative, other prefixes, frozen
OTHER_FILES = ["threading.py", "queue.py", "/usr/lib/python3.8/threading.py", "<frozen importlib._bootstrap>",
               "/opt/conda/lib/python3.10/site-packages/torch/_inductor/codegen/triton.py",
               "/x/site-packages/triton/backends/nvidia/compiler.py", "/x/site-packages/filelock/_core/_acquire.py",
               "/x/site-packages/torch/distributed/elastic/rendezvous/dynamic_rendezvous.py",
               "/usr/lib/python3.11/pdb.py", "/usr/lib/python3.11/getpass.py", "/usr/lib/python3.11/code.py",
               "/x/site-packages/click/termui.py"]


@pytest.mark.parametrize("row", frame_table.FRAME_PATTERNS + frame_table.FRAMEWORK_PATTERNS, ids=_row_id)
def test_a_row_needle_never_hides_a_match(row):
    """A row's regexes run only on frames whose file contains its needle: every file the
    pattern matches must contain it, or matching would silently lose frames."""
    needle = frame_table.file_needle(row.file)
    file_re = re.compile(row.file)
    files = {frame[1] for _name, frame in _frames() if frame[1]} | set(OTHER_FILES)
    matched = [f for f in files if file_re.search(f)]
    assert matched, row
    assert [f for f in matched if needle not in f] == []


@pytest.mark.parametrize("pattern, needle", [
    (r"(^|/)threading\.py$", "threading.py"),
    (r"torch/_dynamo/(convert_frame|guards)", "torch/_dynamo/"),
    (r"^abc", "abc"),
    (r"ab?c", "a"),                 # b may be absent
    (r"ab+c", "a"),
    (r"x\.py$|y\.py$", ""),       # alternation at the top: no needle
    (r"(?i)foo", ""),
    (r"a[|]b", "a"),                # a '|' in a class is not an alternation
])
def test_file_needle(pattern, needle):
    assert frame_table.file_needle(pattern) == needle


@pytest.mark.parametrize("row", frame_table.FRAME_PATTERNS + frame_table.FRAMEWORK_PATTERNS, ids=_row_id)
def test_frame_row_matches_a_captured_frame(row):
    found = [name for name, frame in _frames()
             if frame_table.match_frame(frame[0], frame[1], rows=[row]) is not None]
    assert found, "no saved capture has a frame matching %s" % (row,)


@pytest.mark.parametrize("row", process_table.PROCESS_PATTERNS, ids=lambda r: "%s:%s" % (r.framework, r.role))
def test_process_row_matches_a_captured_process(row):
    found = []
    for name, cap in CAPTURE_DATA:
        for proc in cap["processes"]:
            if process_table.match_process(proc.get("comm"), proc.get("cmdline"), rows=[row]) is not None:
                found.append(name)
    assert found, "no saved capture has a process matching %s" % (row,)


@pytest.mark.parametrize("pattern", frame_table.SOURCE_PATTERNS, ids=lambda p: p[0])
def test_source_pattern_matches_a_captured_line(pattern):
    regex = pattern[1]
    lines = [f[3]["code"] for _n, f in _frames() if len(f) > 3 and isinstance(f[3], dict)]
    assert any(regex.search(line) for line in lines)


def test_file_wait_tables_match_saved_captures():
    """The hand-written-loop table is matched by a real capture, like every knowledge row."""
    import json
    from helpers import CAPTURES
    from stalldiag.knowledge import frames as table
    frames = [f for path in CAPTURES.glob("*.json") for f in json.loads(path.read_text())["capture"]["frames"]]
    for library, loop_re, body_re in table.FILE_WAIT_SOURCES:
        assert any(len(f) > 3 and f[3] and body_re.search(f[3]["code"] or "")
                   and any(loop_re.search(w["code"]) for w in f[3]["within"]) for f in frames), library
    rows = {r.framework for r in table.FRAME_PATTERNS if r.kind == "file-wait"}
    assert set(table.FILE_WAIT_PATHS) <= rows


def test_the_saved_captures_read_without_error():
    """Every stack of every saved capture goes through both lookups; the waits they name are rows of
    the kinds the recorded workloads stalled in."""
    captures = sorted(CAPTURES.glob("*.json"))
    if not captures:
        pytest.skip("no saved captures")
    seen = set()
    for path in captures:
        capture = json.loads(path.read_text())["capture"]
        frame_table = capture["frames"]
        for stack in capture["stacks"]:
            frames_ = [frame_table[i] for i in stack]
            hit = blocking.blocking_frame(frames_)
            blocking.background_thread(frames_)
            if hit:
                seen.add((blocking.module_of(frames_[hit[0]][1])[1],) + hit[1].key)
    for key in [(11, "selectors", "EpollSelector.select"), (11, "threading", "Condition.wait"),
                (8, "threading", "Condition.wait"),              # from the bare name `wait` on 3.8
                (13, "selectors", "_PollLikeSelector.select")]:
        assert key in seen, key
