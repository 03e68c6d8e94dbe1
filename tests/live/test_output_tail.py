"""Last lines written (probes/output_tail.py) and failed calls (--syscalls exact), against real
processes: a job that only retries, with stdout, stderr and a log in files; a process whose
stdout is a pipe, which must be neither read nor drained."""
import json
import os
import subprocess
import sys

import pytest

from helpers import WORKLOADS, kill_groups, run_stalldiag, wait_for
from stalldiag.probes import output_tail
from stalldiag.probes.syscall_counts import BACKENDS
from stalldiag.render import render
from stalldiag.report import build

SECRETS = ("hunter2", "sk-live-abcdef")


@pytest.fixture
def spawn():
    started = []

    def _spawn(argv, **kwargs):
        popen = subprocess.Popen(argv, cwd=str(WORKLOADS), start_new_session=True, **kwargs)
        started.append(popen)
        return popen

    yield _spawn
    kill_groups(started)


def text_of(path):
    try:
        return path.read_text()
    except OSError:
        return ""


@pytest.fixture
def retrying(spawn, tmp_path):
    """retry_connect_refused.py with stdout, stderr and its log in files, a few attempts in."""
    out, err, log = tmp_path / "out.txt", tmp_path / "err.txt", tmp_path / "job.log"
    with open(out, "w") as stdout, open(err, "w") as stderr:
        popen = spawn([sys.executable, "-u", str(WORKLOADS / "retry_connect_refused.py"), str(log), "100"],
                      stdout=stdout, stderr=stderr)
    wait_for(lambda: "READY" in text_of(out) and "attempt 3)" in text_of(log))
    return popen, out, err, log


def test_the_last_lines_of_stdout_stderr_and_the_log_redacted(retrying):
    popen, out, err, log = retrying
    tails = output_tail.of_process(popen.pid)
    assert tails["stdout"]["path"] == str(out)
    assert any("Connection refused" in line for line in tails["stdout"]["lines"])
    assert tails["stderr"]["lines"] == ["client starting, log in %s" % log]
    [entry] = tails["logs"]
    assert entry["path"] == str(log)
    assert any("connection refused, retrying" in line for line in entry["lines"])
    secret_lines = [line for line in entry["lines"] if "Authorization" in line]
    assert secret_lines and all("Bearer ***" in line and "password=***" in line for line in secret_lines)
    for stream in (tails["stdout"], tails["stderr"], entry):
        assert 0 < len(stream["lines"]) <= output_tail.MAX_LINES
        assert all(len(line) <= output_tail.MAX_LINE for line in stream["lines"])
        assert not any(secret in line for line in stream["lines"] for secret in SECRETS)
        assert 0 <= stream["age_s"] < 60 and stream["size"] > 0
    assert tails["stdout"]["age_s"] < 5 and entry["age_s"] < 5    # it writes every 0.2 s


def test_a_pipe_stdout_is_neither_read_nor_drained(spawn, tmp_path):
    err = tmp_path / "err.txt"
    code = ("import sys, time; sys.stdout.write('pending data\\n'); sys.stdout.flush(); "
            "sys.stderr.write('ready\\n'); sys.stderr.flush(); time.sleep(60)")
    with open(err, "w") as stderr:
        popen = spawn([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=stderr)
    wait_for(lambda: "ready" in text_of(err))
    tails = output_tail.of_process(popen.pid)
    assert "stdout" not in tails                         # a pipe: not a regular file
    assert tails["stderr"]["lines"] == ["ready"]
    assert os.read(popen.stdout.fileno(), 100) == b"pending data\n"   # still there for its reader


def test_only_text_files_open_for_writing_are_logs(spawn, tmp_path):
    """A checkpoint (binary) and a file open read-only are not logs; a log opened twice, once."""
    ckpt, config, log, err = (tmp_path / n for n in ("model.pt", "config.txt", "train.log", "err.txt"))
    config.write_text("lr: 0.1 (error budget)\n")
    code = ("import sys, time\n"
            "c = open(%r, 'wb'); c.write(bytes(range(256)) * 64); c.flush()\n"
            "r = open(%r)\n"
            "a = open(%r, 'a'); a.write('step 1 loss 0.5\\n'); a.flush(); b = open(%r, 'a')\n"
            "sys.stderr.write('ready\\n'); sys.stderr.flush(); time.sleep(60)\n" % (str(ckpt), str(config),
                                                                                str(log), str(log)))
    with open(err, "w") as stderr:
        popen = spawn([sys.executable, "-c", code], stdout=subprocess.DEVNULL, stderr=stderr)
    wait_for(lambda: "ready" in text_of(err))
    tails = output_tail.of_process(popen.pid)
    assert [e["path"] for e in tails["logs"]] == [str(log)]
    assert tails["logs"][0]["lines"] == ["step 1 loss 0.5"]
    assert "stdout" not in tails                         # /dev/null


def test_twenty_processes_each_get_their_own_tails(spawn, tmp_path):
    pids = []
    for i in range(20):
        out, log = tmp_path / ("out%d.txt" % i), tmp_path / ("log%d.txt" % i)
        code = ("import sys, time, logging\n"
                "logging.basicConfig(filename=%r, level=logging.INFO)\n"
                "for n in range(300): logging.info('step %%d loss 0.%%d', n, n)\n"
                "print('READY', flush=True); time.sleep(60)\n" % str(log))
        with open(out, "w") as stdout:
            pids.append(spawn([sys.executable, "-c", code], stdout=stdout, stderr=subprocess.STDOUT).pid)
    wait_for(lambda: all("READY" in text_of(tmp_path / ("out%d.txt" % i)) for i in range(20)))
    tails = output_tail.collect(pids)      # its cost: bench/output_tail.py
    assert len(tails) == 20
    for pid in pids:
        per = tails[str(pid)]
        assert per["stderr"] == {"path": per["stdout"]["path"], "same_as": "stdout"}   # 2>&1
        assert per["logs"][0]["lines"][-1] == "INFO:root:step 299 loss 0.299"


def test_inspect_reports_the_last_lines_in_every_format(retrying, tmp_path):
    popen, _out, _err, log = retrying
    paths = [tmp_path / ("report" + ext) for ext in (".json", ".md", ".html", ".txt")]
    args = ["inspect", "--children", "--duration", 3]
    for path in paths:
        args += ["-o", path]
    proc = run_stalldiag(*(args + [popen.pid]))
    assert proc.returncode == 0, proc.stderr
    report = json.loads(paths[0].read_text())
    tails = report["capture"]["output_tail"][str(popen.pid)]
    assert set(tails) == {"stdout", "stderr", "logs"} and tails["logs"][0]["path"] == str(log)
    md, page, text = (p.read_text() for p in paths[1:])
    assert "## Last lines written" in md and "! " in md
    assert 'id="output-tail"' in page and '<span class="err">' in page
    assert "Last lines written" in text and "connection refused, retrying" in text
    for written in (paths[0].read_text(), md, page, text):
        assert not any(secret in written for secret in SECRETS)
    # no section when nothing was written to a regular file
    report["capture"]["output_tail"] = {}
    report = build(report["capture"])
    assert "Last lines written" not in render(report, "text")
    assert "Last lines written" not in render(report, "markdown")
    assert 'id="output-tail"' not in render(report, "html")


@pytest.mark.alone
@pytest.mark.parametrize("backend", ["bpftrace", "perf", "strace"])
def test_exact_counts_say_which_calls_failed(retrying, backend):
    if backend not in [b.name for b in BACKENDS if b.available()]:
        pytest.skip("%s is not usable here (not installed, or not root)" % backend)
    popen = retrying[0]
    proc = run_stalldiag("inspect", popen.pid, "--children", "--duration", 3, "--syscalls", "exact",
                         "--syscalls-backend", backend, "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    exact = report["capture"]["exact_syscalls"]
    if exact is None:
        pytest.skip("%s did not attach here: %s" % (backend, [l for l in report["limitations"] if "exact" in l]))
    failed = {}
    for pid, _tid, per in exact["errors"]:
        if pid == popen.pid:
            for name, entry in per.items():
                failed.setdefault(name, []).append(entry)
    connect = failed["connect"]
    assert sum(e["errors"] for e in connect) >= 5        # ~15 attempts in 3 s
    assert sum(e["errors"] for e in failed["openat"]) >= 5
    assert exact["errnos_known"] == (backend != "perf")
    if exact["errnos_known"]:
        assert sum(e["errnos"].get("ECONNREFUSED", 0) for e in connect) >= 5
        assert sum(e["errnos"].get("ENOENT", 0) for e in failed["openat"]) >= 5
    assert report["syscall_counts"]["tree"]["connect"] >= 5   # the calls are still counted as before
