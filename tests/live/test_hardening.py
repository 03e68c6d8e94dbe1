"""Hardening: every bad input and fault gets its message and exit code, on real processes."""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from helpers import ROOT, WORKLOADS, assert_one_line_error, inspect_json, run_stalldiag

pytestmark = pytest.mark.alone

NOBODY = 65534


def children_of(pid):
    return [int(c) for c in open("/proc/%d/task/%d/children" % (pid, pid)).read().split()]


# --- targets that must be refused -------------------------------------------------------


def test_zombie_refused(launch):
    w = launch("zombie_parent.py")
    zombie = children_of(w.pid)[0]
    assert open("/proc/%d/stat" % zombie).read().rsplit(")", 1)[1].split()[0] == "Z"
    assert_one_line_error(run_stalldiag("inspect", zombie, "--duration", 0), 4, "zombie")


def test_stalldiag_itself_refused():
    # exec keeps the shell's pid, so $$ is stalldiag's own pid
    proc = subprocess.run(["sh", "-c", 'exec "$0" -m stalldiag inspect $$ --duration 0', sys.executable],
                          capture_output=True, text=True, cwd=str(ROOT))
    assert_one_line_error(proc, 4, "stalldiag itself")


# --- permissions -------------------------------------------------------------------------

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="creating another user's process needs root")


@needs_root
def test_unprivileged_user_against_a_root_process(launch, tmp_path):
    """Run stalldiag as 'nobody' (privileges dropped inside the interpreter: the pyenv
    interpreter under /root is not reachable by other users) against a root process."""
    import tempfile
    w = launch("deadlock.py")
    shared = tempfile.mkdtemp(prefix="stalldiag-nobody-")   # pytest's tmp_path is private to root
    os.chmod(shared, 0o777)
    out = os.path.join(shared, "r.json")
    code = ("import sys, os, json, ctypes, pwd, platform, socket, struct, tempfile, pynvml, psutil, difflib\n"
            "import stalldiag.cli, stalldiag.session, stalldiag.report, stalldiag.render\n"
            "import stalldiag.probes.syscall_counts, stalldiag.permissions, stalldiag.diagnosis.progress\n"
            "os.setgroups([]); os.setresgid(%d, %d, %d); os.setresuid(%d, %d, %d)\n"
            "sys.argv = ['stalldiag', 'inspect', '%d', '--duration', '2', '-o', '%s']\n"
            "stalldiag.cli.main()\n" % ((NOBODY,) * 6 + (w.pid, out)))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=str(ROOT),
                          env=dict(os.environ, STALLDIAG_PYSPY=shutil.which("py-spy") or "py-spy"))
    assert_one_line_error(proc, 5, "permission denied reading PID %d" % w.pid)
    assert "sudo" in proc.stderr
    with open(out) as f:
        report = json.load(f)
    shutil.rmtree(shared, ignore_errors=True)
    limitations = "\n".join(report["limitations"])
    assert "permission denied reading its" in limitations and "current syscalls" in limitations
    assert "still observed: thread states" in limitations
    # a denied read is never reported as idle
    assert report["verdict"]["category"] not in ("sleep",)
    main = report["processes"][0]
    assert main["threads"] and all("unreadable" in t["residency"] for t in main["threads"])


@needs_root
@pytest.mark.skipif(not shutil.which("setpriv"), reason="setpriv (util-linux) not installed")
def test_root_without_cap_sys_ptrace_says_how_to_add_it(tmp_path):
    target = subprocess.Popen(["setpriv", "--reuid=%d" % NOBODY, "--regid=%d" % NOBODY, "--clear-groups",
                               "sleep", "600"], start_new_session=True)
    try:
        time.sleep(0.3)
        proc = subprocess.run(["setpriv", "--inh-caps=-sys_ptrace", "--bounding-set=-sys_ptrace",
                               sys.executable, "-m", "stalldiag", "inspect", str(target.pid), "--duration", "1",
                               "-o", str(tmp_path / "r.json")], capture_output=True, text=True, cwd=str(ROOT))
    finally:
        target.kill()
        target.wait()
    assert_one_line_error(proc, 5, "CAP_SYS_PTRACE")
    assert "--cap-add SYS_PTRACE" in proc.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["processes"][0]["threads"][0]["samples"] >= 5   # states still sampled


# --- probes that are missing or failing ------------------------------------------------------


def test_pyspy_missing_degrades_to_proc_data(launch):
    w = launch("sleep_loop.py")
    proc = subprocess.run([sys.executable, "-m", "stalldiag", "inspect", str(w.pid), "--duration", "1", "--json"],
                          capture_output=True, text=True, cwd=str(ROOT),
                          env=dict(os.environ, STALLDIAG_PYSPY="/nonexistent/py-spy"))
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert any("py-spy not found" in line for line in report["limitations"])
    assert report["verdict"]["category"] == "sleep"          # from /proc alone
    assert report["processes"][0]["python"] is False


def test_old_pyspy_is_refused_by_version(launch, tmp_path):
    old = tmp_path / "py-spy"
    wheel_dir = tmp_path / "wheel"
    got = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                          "--platform", "manylinux1_x86_64", "--python-version", "3.8", "py-spy==0.3.3",
                          "-d", str(wheel_dir)], capture_output=True, text=True)
    if got.returncode != 0:
        pytest.skip("could not download py-spy 0.3.3 from PyPI: %s" % got.stderr.strip()[-200:])
    import zipfile
    wheel = next(wheel_dir.glob("*.whl"))
    with zipfile.ZipFile(wheel) as z:
        member = next(n for n in z.namelist() if n.endswith("/py-spy"))
        old.write_bytes(z.read(member))
    old.chmod(0o755)
    w = launch("sleep_loop.py")
    proc = subprocess.run([sys.executable, "-m", "stalldiag", "inspect", str(w.pid), "--duration", "1", "--json"],
                          capture_output=True, text=True, cwd=str(ROOT), env=dict(os.environ, STALLDIAG_PYSPY=str(old)))
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert any("py-spy 0.3.3 is older than" in line for line in report["limitations"])


def test_no_nvml_is_a_named_limitation(launch):
    try:
        import pynvml
        pynvml.nvmlInit()
        pytest.skip("this machine has a working NVML")
    except Exception:
        pass
    w = launch("sleep_loop.py")
    report = inspect_json(w.pid, duration=1)
    assert any(line.startswith("GPU: not available (") for line in report["limitations"])


# --- output paths ------------------------------------------------------------------------------


def test_unwritable_output_refused_before_sampling(launch):
    w = launch("sleep_loop.py")
    started = time.monotonic()
    proc = run_stalldiag("inspect", w.pid, "--duration", 30, "-o", "/proc/stalldiag-report.json")
    assert time.monotonic() - started < 10
    assert_one_line_error(proc, 7, "not writable")


def test_umask_option_sets_report_mode(launch, tmp_path):
    w = launch("sleep_loop.py")
    out = tmp_path / "r.md"
    assert run_stalldiag("inspect", w.pid, "--duration", 0, "-o", out, "--umask", "022").returncode == 0
    assert oct(out.stat().st_mode & 0o777) == "0o644"


# --- interrupted ---------------------------------------------------------------------------------


@pytest.mark.parametrize("sig,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signal_during_window_writes_what_was_sampled(launch, tmp_path, sig, code):
    w = launch("cpu_loop.py")
    out = tmp_path / "r.json"
    proc = subprocess.Popen([sys.executable, "-m", "stalldiag", "inspect", str(w.pid), "--duration", "60",
                             "-o", str(out)], cwd=str(ROOT), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(3)
    started = time.monotonic()
    proc.send_signal(sig)
    _out, err = proc.communicate(timeout=30)
    assert time.monotonic() - started < 10
    assert proc.returncode == code, err
    assert "Traceback" not in err
    report = json.loads(out.read_text())
    assert report["window"]["interrupted"] == signal.Signals(sig).name
    assert 1.0 < report["window"]["duration_s"] < 20
    assert report["verdict"]["category"] == "cpu"


# --- scale and odd data ---------------------------------------------------------------------------


def test_two_thousand_threads(launch, tmp_path):
    w = launch("many_threads.py", 2000, settle=1.0)
    out = tmp_path / "r.json"
    started = time.monotonic()
    proc = run_stalldiag("inspect", w.pid, "--duration", 4, "-o", out, "-o", tmp_path / "r.html",
                         "-o", tmp_path / "r.md")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    assert len(report["processes"][0]["threads"]) == 2000
    assert out.stat().st_size < 30 * 2**20
    assert (tmp_path / "r.html").stat().st_size < 5 * 2**20
    assert any("sampling rate lowered" in line for line in report["limitations"])


def test_two_hundred_processes(launch, tmp_path):
    w = launch("many_processes.py", 200, settle=1.0)
    out = tmp_path / "r.json"
    proc = run_stalldiag("inspect", w.pid, "--children", "--duration", 3, "-o", out, "-o", tmp_path / "r.html")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    assert len(report["processes"]) == 200
    assert all(p["threads"][0]["samples"] >= 1 for p in report["processes"])


@pytest.mark.parametrize("depth", [2000, 5000])
def test_deep_recursion_non_utf8_names_and_a_100kb_command_line(launch, tmp_path, depth):
    w = launch("odd_data.py", tmp_path, depth, "x" * 100_000, settle=1.0)
    outs = [tmp_path / n for n in ("r.json", "r.md", "r.html", "r.txt", "r.speedscope.json")]
    args = []
    for out in outs:
        args += ["-o", out]
    proc = run_stalldiag("inspect", w.pid, "--duration", 3, *args)
    assert proc.returncode == 0, proc.stderr
    for out in outs:
        out.read_bytes().decode("utf-8")   # every format is valid UTF-8
        assert out.stat().st_size < 5 * 2**20
    report = json.loads(outs[0].read_text())
    proc_entry = report["processes"][0]
    assert sum(len(a) for a in proc_entry["cmdline"]) < 10_000
    assert any("\ufffd" in (t["comm"] or "") for t in proc_entry["threads"])
    assert "shard-\ufffd\ufffd.fifo" in json.dumps(report, ensure_ascii=False)
    cap = report["capture"]
    if depth == 2000:
        assert max(len(s) for s in cap["stacks"]) <= 512     # recursion kept bounded
        assert any(f[0] == "recurse" for f in cap["frames"])
    else:
        # py-spy cannot read stacks this deep: said so, and /proc data still reported
        assert any(line.startswith("py-spy failed") for line in report["limitations"])
        assert proc_entry["threads"][0]["samples"] >= 5


def test_a_reused_pid_is_a_new_process_never_merged():
    """The sampler keys processes by (pid, start time): a different start time is another process."""
    from stalldiag.probes.threads import ThreadSampler
    from stalldiag.targets import process_key
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        pid, start = process_key(sleeper.pid)
        sampler = ThreadSampler(time.monotonic())
        stale = sampler.watch((pid, start - 1))     # "the process that had this pid before"
        sampler.tick()
        assert stale.exited_at is not None and not stale.threads
        fresh = sampler.watch((pid, start))
        sampler.tick()
        assert fresh is not stale and fresh.threads
        assert sorted(sampler.records) == [(pid, start - 1), (pid, start)]
    finally:
        sleeper.kill()
        sleeper.wait()


# Secrets: tests/unit/test_redaction.py (a table of forms) and tests/live/test_redaction_end_to_end.py (a
# real target through every format).
