"""stalldiag watch on real runs: a deadlock after healthy work, a recovery, an exit."""
import json
import signal
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest

from helpers import ROOT

pytestmark = pytest.mark.alone


def start_watch(pid, report_dir, *extra):
    return subprocess.Popen([sys.executable, "-m", "stalldiag", "watch", str(pid), "--every", "1s",
                             "--stall-after", "3s", "--duration", "2", "--report-dir", str(report_dir)]
                            + [str(e) for e in extra],
                            cwd=str(ROOT), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for(predicate, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return False


def test_a_silent_deadlock_after_healthy_work_gives_exactly_one_right_report(launch, tmp_path):
    w = launch("healthy_then_deadlock.py", 6, tmp_path / "train.log", settle=0)
    hook_log = tmp_path / "hook.txt"
    watch = start_watch(w.pid, tmp_path, "--exec", "sh -c 'echo \"$0\" >> %s' {}" % hook_log)
    try:
        assert wait_for(lambda: list(tmp_path.glob("stalldiag-*.json")), 60)
        time.sleep(5)      # more checks: a stall gives one report, not one per check
    finally:
        watch.send_signal(signal.SIGINT)
        out, err = watch.communicate(timeout=30)
    assert watch.returncode == 130, err
    reports = sorted(tmp_path.glob("stalldiag-*.json"))
    assert len(reports) == 1
    assert len(list(tmp_path.glob("stalldiag-*.md"))) == 1 and len(list(tmp_path.glob("stalldiag-*.html"))) == 1
    report = json.loads(reports[0].read_text())
    assert report["verdict"]["category"] == "locks"
    assert any(f["kind"] == "deadlock" for f in report["findings"])
    assert hook_log.read_text().strip() == str(reports[0]).replace(".json", ".md")
    assert "no progress for" in out and "stopped by SIGINT" in out


def test_a_run_that_recovers_is_re_armed(launch, tmp_path):
    w = launch("stall_then_recover.py", 3, 8, tmp_path / "train.log", settle=0)
    watch = start_watch(w.pid, tmp_path)
    try:
        assert wait_for(lambda: len(list(tmp_path.glob("stalldiag-*.json"))) >= 2, 90)
    finally:
        watch.send_signal(signal.SIGINT)
        out, err = watch.communicate(timeout=30)
    assert "re-armed" in out, out
    assert out.index("re-armed") < out.rindex("no progress for")
    for path in tmp_path.glob("stalldiag-*.json"):
        assert json.loads(path.read_text())["verdict"]["category"] == "sleep"


def test_watch_exits_cleanly_when_the_target_ends(launch, tmp_path):
    w = launch("exits_soon.py", 2, settle=0)
    watch = start_watch(w.pid, tmp_path)
    out, err = watch.communicate(timeout=60)
    assert watch.returncode == 0, err
    assert out.strip().splitlines()[-1].startswith("stalldiag watch: pid %d ended after" % w.pid)
    assert not list(tmp_path.glob("stalldiag-*.json"))   # it ended before 3 s without progress


def test_a_missing_report_dir_is_created_with_its_parents(launch, tmp_path):
    w = launch("deadlock.py")
    report_dir = tmp_path / "incidents" / "run-7" / "stalls"
    watch = start_watch(w.pid, report_dir)
    try:
        assert wait_for(lambda: list(report_dir.glob("stalldiag-*.json")), 60), "no report in the new directory"
    finally:
        watch.send_signal(signal.SIGINT)
        out, err = watch.communicate(timeout=30)
    assert watch.returncode == 130, err
    assert oct(report_dir.stat().st_mode & 0o777) == "0o700"      # reports may hold command lines
    assert json.loads(next(report_dir.glob("stalldiag-*.json")).read_text())["verdict"]["category"] == "locks"


@pytest.mark.parametrize("where", ["under a file", "in /proc"])
def test_a_report_dir_that_cannot_be_made_is_one_line_before_watching(launch, tmp_path, where):
    from helpers import assert_one_line_error
    w = launch("sleep_loop.py", settle=0)
    if where == "under a file":
        (tmp_path / "a-file").write_text("")
        report_dir = tmp_path / "a-file" / "reports"
    else:
        report_dir = "/proc/stalldiag-reports"       # even root cannot create it
    watch = start_watch(w.pid, report_dir)
    out, err = watch.communicate(timeout=30)
    assert_one_line_error(SimpleNamespace(returncode=watch.returncode, stderr=err), 7,
                          "--report-dir %s: cannot create it" % report_dir)
    assert out == ""                                  # it never started watching
