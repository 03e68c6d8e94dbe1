"""Progress that never misleads, on real processes: the job's own output advancing is progress
whatever its threads wait on; a job that only retries a failing call is not progressing however
much it writes."""
import pytest

from helpers import inspect_json

pytestmark = pytest.mark.alone


def test_a_job_whose_log_advances_is_making_progress_while_it_waits(launch, tmp_path):
    log = tmp_path / "train.log"
    w = launch("log_steps_while_waiting.py", log, settle=0.5)
    report = inspect_json(w.pid, duration=3)
    progress = report["verdict"]["progress"]
    assert progress["state"] == "making progress", progress
    assert any(str(log) in line for line in progress["evidence"]), progress


def test_a_job_whose_stdout_file_advances_is_making_progress(launch, tmp_path):
    out = tmp_path / "stdout.txt"
    import subprocess
    import sys
    from helpers import WORKLOADS
    with open(out, "w") as f:
        # stdout itself is the log: fd 1 is a file that grows a line a second
        popen = subprocess.Popen([sys.executable, "-u", "-c",
                                  "import time\nn=0\nwhile True:\n time.sleep(0.9); n+=1; print('step', n)"],
                                 cwd=str(WORKLOADS), stdout=f, start_new_session=True)
    try:
        import time
        time.sleep(1.0)
        report = inspect_json(popen.pid, duration=3)
    finally:
        popen.kill()
        popen.wait()
    progress = report["verdict"]["progress"]
    assert progress["state"] == "making progress", progress
    assert any(str(out) in line for line in progress["evidence"]), progress


def test_a_job_that_only_retries_is_not_making_progress(launch, tmp_path):
    w = launch("retry_connect_refused.py", tmp_path / "retry.log", settle=0.5)
    report = inspect_json(w.pid, duration=3)
    verdict = report["verdict"]
    assert verdict["progress"]["state"] == "no progress seen", verdict["progress"]
    assert verdict["category"] == "network", verdict["summary"]


def test_a_commit_per_row_import_is_storage_bound_and_progressing(launch, tmp_path):
    w = launch("commit_per_row.py", tmp_path, settle=0.5)
    report = inspect_json(w.pid, duration=3)
    verdict = report["verdict"]
    assert verdict["progress"]["state"] == "making progress", verdict["progress"]
    assert verdict["category"] == "io", verdict["summary"]
