"""A bug in diagnosis or rendering never loses what was sampled (issue 12).

stalldiag runs as a real subprocess on a real stalled workload; the fault is
injected by replacing one stalldiag function in that subprocess before the
command line starts (no hook in stalldiag itself). Once the fault is gone,
`stalldiag report` on the saved capture renders the real verdict.
"""
import json
import os
import re
import signal
import subprocess
import sys
import time

from helpers import ROOT, run_stalldiag

PARTIAL = 9     # README: "diagnosis or a renderer failed"

FAULTS = {
    # a TypeError deep in the diagnosis, like the one a Python 3.10 target once caused
    # (its message names its caller: the frame stalldiag must report as where it failed)
    "diagnosis": ("import os, sys, stalldiag.diagnosis as m\n"
                  "def fault(*a, **k):\n"
                  "    caller = sys._getframe(1)\n"
                  "    where = '%s:%d in %s' % (os.path.relpath(caller.f_code.co_filename, ROOT), caller.f_lineno,\n"
                  "                             caller.f_code.co_name)\n"
                  "    raise TypeError('%d format: a real number is required, not NoneType [' + where + ']')\n"
                  "m.decide_category = fault\n").replace("ROOT", repr(str(ROOT))),
    "html": "import stalldiag.render.html as m\n"
            "def fault(report):\n"
            "    raise RuntimeError('injected html fault')\n"
            "m.render = fault\n",
    "markdown": "import stalldiag.render.markdown as m\n"
                "def fault(report):\n"
                "    raise RuntimeError('injected markdown fault')\n"
                "m.render = fault\n",
}


def faulty_argv(fault, *args):
    """`stalldiag ARGS` in a fresh interpreter with one stalldiag function replaced by a faulty one."""
    code = FAULTS[fault] + "import sys\nfrom stalldiag.cli import main\nsys.argv = ['stalldiag'] + sys.argv[1:]\nmain()\n"
    return [sys.executable, "-c", code] + [str(a) for a in args]


def faulty_stalldiag(fault, *args, cwd=ROOT, env=None):
    env = dict(os.environ if env is None else env, PYTHONPATH=str(ROOT))
    return subprocess.run(faulty_argv(fault, *args), capture_output=True, text=True, timeout=120, cwd=str(cwd),
                          env=env)


def outputs(tmp_path, *names):
    args = []
    for name in names:
        args += ["-o", tmp_path / name]
    return args


def assert_full_capture(report, pid):
    cap = report["capture"]
    proc = next(p for p in cap["processes"] if p["pid"] == pid)
    assert len(proc["threads"]) >= 2 and all(t["samples"] for t in proc["threads"])
    assert any(t.get("stack_samples") for t in proc["threads"]), "the Python stacks were lost"
    assert cap["frames"] and cap["stacks"]


def test_a_diagnosis_error_keeps_the_capture_and_the_other_outputs(launch, tmp_path):
    w = launch("deadlock.py")
    proc = faulty_stalldiag("diagnosis", "inspect", w.pid, "--duration", 2,
                            *outputs(tmp_path, "r.json", "r.md", "r.html", "r.txt"))
    assert proc.returncode == PARTIAL, proc.stderr
    err = proc.stderr.strip().splitlines()
    assert len(err) == 1, proc.stderr                                  # one line, no traceback
    assert "diagnosis failed: TypeError" in err[0] and str(tmp_path / "r.json") in err[0]
    caller = re.search(r"\[(stalldiag/\S+ in \w+)\]", err[0]).group(1)     # where the fault was called from
    assert "(at %s)" % caller in err[0]                                   # the innermost stalldiag frame

    report = json.loads((tmp_path / "r.json").read_text())
    assert_full_capture(report, w.pid)
    [failure] = report["failures"]
    assert failure["stage"] == "diagnosis" and failure["type"] == "TypeError"
    assert failure["where"] == caller and failure["where"].startswith("stalldiag/diagnosis/")
    assert any(line.startswith("diagnosis failed: TypeError") for line in report["limitations"])
    assert not any("failed" in line for line in report["capture"]["limitations"])   # the bug is not the capture's
    assert report["verdict"]["category"] == "unknown"

    md = (tmp_path / "r.md").read_text()
    assert "diagnosis failed: TypeError" in md and str(w.pid) in md                  # rendered what it could
    assert "diagnosis failed" in (tmp_path / "r.txt").read_text()
    assert (tmp_path / "r.html").stat().st_size > 0
    assert "VERDICT: UNKNOWN" in proc.stdout

    # the fault gone, the saved capture re-renders with the real verdict
    again = run_stalldiag("report", tmp_path / "r.json", "--json", "-o", tmp_path / "again.md")
    assert again.returncode == 0, again.stderr
    fixed = json.loads(again.stdout)
    assert fixed["verdict"]["category"] == "locks" and not fixed["failures"]
    assert any(f["kind"] == "deadlock" for f in fixed["findings"])
    assert not any("failed" in line for line in fixed["limitations"])
    assert "deadlock" in (tmp_path / "again.md").read_text().lower()


def test_without_a_json_output_the_capture_goes_to_a_named_file(launch, tmp_path):
    w = launch("deadlock.py")
    work = tmp_path / "cwd"
    work.mkdir()
    proc = faulty_stalldiag("diagnosis", "inspect", w.pid, "--duration", 1, "-o", tmp_path / "r.md", cwd=work)
    assert proc.returncode == PARTIAL, proc.stderr
    [saved] = list(work.glob("stalldiag-capture-%d-*.json" % w.pid))
    assert "no -o .json was given: the capture is saved in %s" % saved in proc.stderr
    assert "stalldiag report %s" % saved in proc.stderr
    assert oct(saved.stat().st_mode & 0o777) == "0o600"
    report = json.loads(saved.read_text())
    assert_full_capture(report, w.pid)
    assert report["failures"][0]["stage"] == "diagnosis"
    assert (tmp_path / "r.md").exists()
    again = run_stalldiag("report", saved, "--json")
    assert again.returncode == 0 and json.loads(again.stdout)["verdict"]["category"] == "locks", again.stderr


def test_an_unwritable_working_directory_falls_back_to_tmpdir(launch, tmp_path):
    w = launch("deadlock.py")
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    env = dict(os.environ, TMPDIR=str(tmpdir))
    # /proc: a working directory that even root cannot create files in
    proc = faulty_stalldiag("diagnosis", "inspect", w.pid, "--duration", 1, cwd="/proc", env=env)
    assert proc.returncode == PARTIAL, proc.stderr
    [saved] = list(tmpdir.glob("stalldiag-capture-%d-*.json" % w.pid))
    assert str(saved) in proc.stderr
    assert_full_capture(json.loads(saved.read_text()), w.pid)


def test_a_renderer_error_still_writes_json_and_markdown(launch, tmp_path):
    w = launch("deadlock.py")
    proc = faulty_stalldiag("html", "inspect", w.pid, "--duration", 2,
                            *outputs(tmp_path, "r.json", "r.md", "r.html"))
    assert proc.returncode == PARTIAL, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert "html rendering failed: RuntimeError: injected html fault" in proc.stderr
    assert str(tmp_path / "r.json") in proc.stderr
    assert not (tmp_path / "r.html").exists()                 # no empty or half file
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["verdict"]["category"] == "locks"           # the diagnosis itself was fine
    assert_full_capture(report, w.pid)
    assert [f["stage"] for f in report["failures"]] == ["html rendering"]
    assert any(line.startswith("html rendering failed") for line in report["limitations"])
    assert "locks" in (tmp_path / "r.md").read_text()
    again = run_stalldiag("report", tmp_path / "r.json", "-o", tmp_path / "again.html")
    assert again.returncode == 0, again.stderr
    assert "<html" in (tmp_path / "again.html").read_text().lower()


def test_a_markdown_error_is_recorded_in_the_json(launch, tmp_path):
    w = launch("deadlock.py")
    proc = faulty_stalldiag("markdown", "inspect", w.pid, "--duration", 1, "--json", "-o", tmp_path / "r.md",
                            cwd=tmp_path)
    assert proc.returncode == PARTIAL, proc.stderr
    stdout_report = json.loads(proc.stdout)                     # --json on stdout still printed
    assert stdout_report["failures"][0]["stage"] == "markdown rendering"
    assert not (tmp_path / "r.md").exists()
    [saved] = list(tmp_path.glob("stalldiag-capture-%d-*.json" % w.pid))   # stdout alone may be lost: a file too
    assert json.loads(saved.read_text())["failures"] == stdout_report["failures"]


def test_watch_keeps_the_capture_of_a_stall_it_could_not_diagnose(launch, tmp_path):
    w = launch("deadlock.py")
    watch = subprocess.Popen(faulty_argv("diagnosis", "watch", w.pid, "--every", "1s", "--stall-after", "2s",
                                         "--duration", "1", "--report-dir", tmp_path),
                             cwd=str(ROOT), text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             env=dict(os.environ, PYTHONPATH=str(ROOT)))
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not list(tmp_path.glob("stalldiag-*.json")):
            time.sleep(0.2)
        time.sleep(1)
        assert watch.poll() is None, "watch ended on a diagnosis bug"
    finally:
        watch.send_signal(signal.SIGINT)
        out, err = watch.communicate(timeout=30)
    assert watch.returncode == 130, err
    [saved] = list(tmp_path.glob("stalldiag-*.json"))
    report = json.loads(saved.read_text())
    assert_full_capture(report, w.pid)
    assert report["failures"][0]["stage"] == "diagnosis"
    assert "stalldiag watch: error: diagnosis failed: TypeError" in out and str(saved) in out
    again = run_stalldiag("report", saved, "--json")
    assert again.returncode == 0 and json.loads(again.stdout)["verdict"]["category"] == "locks", again.stderr
