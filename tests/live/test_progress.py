"""Progress versus silence on a real healthy run whose output is invisible."""
import json
import os
import subprocess
import sys
import threading
import time

import pytest

from helpers import ROOT, WORKLOADS, inspect_json

pytestmark = pytest.mark.alone

torch = pytest.importorskip("torch")


def test_healthy_but_silent_run_is_making_progress_with_silent_output(tmp_path):
    log = tmp_path / "train.log"
    checkpoint = tmp_path / "model.pt"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    with open(log, "w") as out:
        launched = time.time()
        popen = subprocess.Popen([sys.executable, str(WORKLOADS / "silent_training.py"), str(checkpoint)],
                                 stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not checkpoint.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert checkpoint.exists()
        time.sleep(1.0)
        report = inspect_json(popen.pid, duration=4)
        finished = time.time()
    finally:
        popen.kill()
        popen.wait()
    assert log.stat().st_size == 0 or log.read_text().count("step") < 10000
    verdict = report["verdict"]
    assert verdict["progress"]["state"] == "making progress"
    assert any("model.pt" in line for line in verdict["progress"]["evidence"])
    silent = next(f for f in report["findings"] if f["kind"] == "silent-output")
    # the log has not changed since the run started
    assert abs(silent["unchanged_s"] - (finished - launched)) < 3.0, silent
    assert "PYTHONUNBUFFERED" in silent["summary"]
    assert "logging" in silent["summary"]
    main = report["processes"][0]
    assert main["stdio"]["1"]["kind"] == "file" and main["stdio"]["1"]["bytes"] == 0


def test_a_deadlocked_run_is_no_progress_and_not_silent_output(launch, tmp_path):
    w = launch("deadlock.py")
    report = inspect_json(w.pid)
    assert report["verdict"]["progress"]["state"] == "no progress seen"
    assert not any(f["kind"] == "silent-output" for f in report["findings"])


def test_a_file_another_process_writes_in_the_jobs_directory_is_not_its_progress(launch, tmp_path):
    """The job writes only heartbeats to a pipe; meanwhile someone else writes a file in the
    directory it names on its command line.  That file is not the job's progress."""
    w = launch("pipe_chatter.py", tmp_path)
    writer = threading.Thread(target=lambda: [time.sleep(0.5), (tmp_path / "notes.txt").write_bytes(b"x" * 200000)])
    writer.start()
    report = inspect_json(w.pid, duration=2)
    writer.join()
    progress = report["verdict"]["progress"]
    assert not any("notes.txt" in line for line in progress["evidence"]), progress
