"""Where a request is (issue 39): a client waiting on a service it started, which either never read
the request (it waits in the service's receive queue) or read it and never answered.  The kernel's
socket queues, read at the window's end, say which; the verdict says it beside the client's wait."""
import subprocess
import sys

import pytest

from helpers import ROOT, inspect_json, kill_pids, wait_for

WORKLOAD = ROOT / "fixtures" / "workloads" / "request_to_silent_service.py"


@pytest.mark.parametrize("mode,words", [
    ("unread", "it never read the request"),
    ("read", "it read what was sent and has not answered"),
])
def test_the_verdict_says_where_the_request_is(mode, words, tmp_path):
    log = tmp_path / "out"
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, str(WORKLOAD), mode], stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    try:
        wait_for(lambda: "READY" in log.read_text(), what="the request sent")
        children = [int(p) for p in open("/proc/%d/task/%d/children" % (proc.pid, proc.pid)).read().split()]
        # by hand first: the service's end of the connection holds the request, or not (ss -tn)
        port = next(line.split()[1] for line in log.read_text().splitlines() if line.startswith("PORT"))
        ss = subprocess.run(["ss", "-tnH", "state", "established", "( sport = :%s )" % port],
                            capture_output=True, text=True).stdout
        assert ss.strip() and (ss.split()[0] != "0") == (mode == "unread"), ss
        report = inspect_json(proc.pid, "--children", duration=2)
        verdict = report["verdict"]
        assert verdict["category"] == "network", verdict["summary"]
        assert (verdict["pid"], verdict["tid"]) == (proc.pid, proc.pid), verdict["summary"]
        assert words in verdict["summary"], verdict["summary"]
        assert verdict["progress"]["state"] != "making progress"
    finally:
        kill_pids(children if "children" in dir() else [])
        kill_pids([proc.pid])
