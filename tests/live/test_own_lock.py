"""A lock file its own process holds through another lock object (issue 39, holders proven): the
kernel names the holder, the job's own pid, and the verdict says so; it never says that no live
process holds the lock."""
import subprocess
import sys

from helpers import ROOT, inspect_json, kill_pids, wait_for

WORKLOAD = ROOT / "fixtures" / "workloads" / "filelock_held_by_itself.py"


def test_a_lock_file_held_by_its_own_process(tmp_path):
    log = tmp_path / "out"
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, str(WORKLOAD), str(tmp_path)], stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_for(lambda: "READY" in log.read_text(), what="the lock taken")
        # by hand first: /proc/locks holds the job's flock on the file
        inode = str((tmp_path / "index.lock").stat().st_ino)
        locks = open("/proc/locks").read()
        assert any(line.split()[4] == str(proc.pid) and line.split()[5].endswith(":" + inode)
                   for line in locks.splitlines()), locks
        report = inspect_json(proc.pid, duration=3)
        verdict = report["verdict"]
        assert verdict["category"] == "locks", verdict["summary"]
        assert "no live process" not in verdict["summary"], verdict["summary"]
        assert "its own process" in verdict["summary"], verdict["summary"]
    finally:
        kill_pids([proc.pid])
