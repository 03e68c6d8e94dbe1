"""`stalldiag report` re-diagnoses a saved capture: the same verdict, offline."""
import json

from helpers import CAPTURES, inspect_json, run_stalldiag


def test_saved_report_rerenders_to_the_same_verdict(launch, tmp_path):
    w = launch("deadlock.py")
    out_json, out_md = tmp_path / "r.json", tmp_path / "r.md"
    proc = run_stalldiag("inspect", w.pid, "--duration", 2, "-o", out_json, "-o", out_md)
    assert proc.returncode == 0, proc.stderr
    assert oct(out_json.stat().st_mode & 0o777) == "0o600"
    saved = json.loads(out_json.read_text())
    md = out_md.read_text()
    assert md.startswith("# stalldiag: locks")
    assert "<details>" in md and "## Threads and syscalls" in md
    again = run_stalldiag("report", out_json, "--json")
    assert again.returncode == 0, again.stderr
    replayed = json.loads(again.stdout)
    assert replayed["verdict"] == saved["verdict"]
    assert replayed["processes"] == saved["processes"]


def test_bundled_deadlock_capture_replays():
    proc = run_stalldiag("report", CAPTURES / "deadlock.json", "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["verdict"]["category"] == "locks"
    assert report["verdict"]["thread_name"] in ("writer", "MainThread")


def test_json_contract_fields(launch):
    w = launch("cpu_loop.py")
    report = inspect_json(w.pid, duration=1)
    for key in ("schema_version", "tool", "window", "verdict", "findings", "processes", "gpus",
                "limitations", "capture"):
        assert key in report
    assert report["tool"]["name"] == "stalldiag"
    for key in ("category", "summary", "pid", "tid", "confidence", "evidence"):
        assert key in report["verdict"]
    for key in ("start", "duration_s", "samples"):
        assert key in report["window"]
    proc = report["processes"][0]
    for key in ("pid", "ppid", "role", "cmdline", "threads"):
        assert key in proc
    assert proc["role"] == "main"
