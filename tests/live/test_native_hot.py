"""Native snapshots of the busiest processes at the window's end (probes/native.py, issue 33):
a thread at 100% of a core in one Python line is named by the native code its CPU goes to."""
import pytest

from helpers import inspect_json

pytestmark = pytest.mark.live


@pytest.mark.alone
def test_a_runaway_regex_is_named_below_python(launch):
    w = launch("runaway_regex.py", settle=0.5)
    report = inspect_json(w.pid, "--native-dumps", "3", duration=2)
    native = report["capture"]["native"]
    assert native and str(w.pid) in native["processes"], report["capture"]["limitations"]
    verdict = report["verdict"]
    assert verdict["category"] == "cpu", verdict["summary"]
    assert "below Python" in verdict["summary"] and "regex engine" in verdict["summary"], verdict["summary"]


def test_native_snapshots_are_opt_in_the_target_is_never_stopped_otherwise(launch):
    w = launch("runaway_regex.py", settle=0.5)
    report = inspect_json(w.pid, duration=1)
    assert report["capture"]["native"] is None
    assert "below Python" not in report["verdict"]["summary"]
