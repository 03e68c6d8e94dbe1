"""Finding the run without a PID, per-rank tables, and merging per-host reports."""
import json
import socket
import sys

import pytest

from helpers import assert_one_line_error, run_stalldiag

pytestmark = pytest.mark.alone

torch = pytest.importorskip("torch")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torchrun(launch):
    argv = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2",
            "--master_port=%d" % free_port(), "gloo_hang.py"]
    return launch("gloo_hang.py", argv=argv, settle=1.0)


def ranks_of(report):
    return {p["role"]: p["pid"] for p in report["processes"] if p["role"].startswith("rank")}


def test_without_a_pid_the_torchrun_job_is_found_and_every_rank_inspected(launch):
    w = torchrun(launch)
    proc = run_stalldiag("inspect", "--children", "--duration", 3, "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["capture"]["request"]["pid"] == w.pid
    assert report["capture"]["request"]["discovered"] == "launcher"
    assert set(ranks_of(report)) == {"rank 0", "rank 1"}
    assert report["verdict"]["category"] == "collective"
    assert report["verdict"]["pid"] == ranks_of(report)["rank 1"]
    rows = report["ranks"]["rows"]
    assert [r["rank"] for r in rows] == [0, 1]
    assert [r["suspect"] for r in rows] == [False, True]
    assert rows[0]["local_rank"] == 0 and rows[0]["state"] == "collective"


def test_two_unrelated_jobs_are_listed_and_refused(launch, tmp_path):
    # a token on both command lines keeps unrelated Python processes of the machine out of it
    token = "job-%s" % tmp_path.name
    a = launch("sleep_loop.py", token)
    b = launch("cpu_loop.py", token)
    proc = run_stalldiag("inspect", "--duration", 0, "--match", token)
    assert proc.returncode == 8, proc.stderr
    first, *table = proc.stderr.strip().splitlines()
    assert first.startswith("stalldiag: error: 2 runs could be the one: give a PID or --match REGEX")
    listed = "\n".join(table)
    assert str(a.pid) in listed and str(b.pid) in listed
    assert "Traceback" not in proc.stderr
    picked = run_stalldiag("inspect", "--duration", 0, "--match", "cpu_loop.py %s" % token, "--json")
    assert picked.returncode == 0, picked.stderr
    assert json.loads(picked.stdout)["capture"]["request"]["pid"] == b.pid


def test_merge_of_per_host_captures_names_the_hung_rank_and_its_host(launch, tmp_path):
    torchrun(launch)
    probe = run_stalldiag("inspect", "--children", "--duration", 0, "--json")
    ranks = ranks_of(json.loads(probe.stdout))
    files = []
    for host, role in (("node-a", "rank 0"), ("node-b", "rank 1")):
        out = tmp_path / ("%s.json" % host)
        proc = run_stalldiag("inspect", ranks[role], "--duration", 2, "--host-label", host, "-o", out)
        assert proc.returncode == 0, proc.stderr
        files.append(out)
    merged_md = tmp_path / "incident.md"
    proc = run_stalldiag("merge", *files, "-o", merged_md, "--json")
    assert proc.returncode == 0, proc.stderr
    merged = json.loads(proc.stdout)
    assert merged["verdict"]["category"] == "collective"
    assert (merged["verdict"]["host"], merged["verdict"]["rank"]) == ("node-b", 1)
    assert [h["host"] for h in merged["hosts"]] == ["node-a", "node-b"]
    text = merged_md.read_text()
    assert text.startswith("# stalldiag merge: collective")
    assert "rank 1 on host node-b is the outlier" in text


def test_merge_of_a_bad_file_is_a_clean_error(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    assert_one_line_error(run_stalldiag("merge", bad), 6, "invalid or truncated JSON")
