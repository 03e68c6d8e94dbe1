"""The multi-host recipe, run for real on a one-node Slurm cluster.

A session fixture brings up Debian's munged, slurmctld and slurmd (installed by
the README's test command) with a slurm.conf for this host, in a temporary
directory, and stops them after.  The node's Slurm name differs from the
hostname so that a report named by Slurm's node name is told apart from one
named by gethostname().  Jobs are 2 gloo ranks on CPU where rank 1 hangs in its
own code while rank 0 waits in all_reduce; the Slurm recipe is read
from docs/reference.md and run as printed.
"""
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

import pytest

from helpers import ROOT, assert_one_line_error, run_stalldiag

pytestmark = pytest.mark.alone

SLURM_FIXTURES = ROOT / "fixtures" / "slurm"
DAEMONS = ("munged", "slurmctld", "slurmd")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(what, check, timeout=60, interval=0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = check()
        if result:
            return result
        time.sleep(interval)
    raise AssertionError("timed out after %d s waiting for %s" % (timeout, what))


class Cluster:
    def __init__(self, base):
        self.base = base
        self.hostname = socket.gethostname().split(".")[0]
        self.node = "sd-" + self.hostname          # Slurm's name for this host, not its hostname
        self.conf = base / "slurm.conf"
        self.daemons = []
        self.env = dict(os.environ, SLURM_CONF=str(self.conf))

    def write_config(self):
        for sub in ("state", "spool", "log", "munge"):
            (self.base / sub).mkdir(mode=0o755)
        key = self.base / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        template = (SLURM_FIXTURES / "slurm.conf.in").read_text()
        self.conf.write_text(template.format(
            base=self.base, hostname=self.hostname, node=self.node, cpus=os.cpu_count(),
            ctld_port=free_port(), slurmd_port=free_port(), first_job=random.randrange(100000, 900000)))

    def start(self):
        """Start the three daemons in the foreground, as our children; the seconds until the node is idle."""
        t0 = time.monotonic()
        munge = self.base / "munge"
        self._spawn("munged", ["munged", "--foreground", "--force", "--socket=%s" % (munge / "munge.socket"),
                               "--key-file=%s" % (munge / "munge.key"), "--pid-file=%s" % (munge / "munged.pid"),
                               "--seed-file=%s" % (munge / "seed"), "--log-file=%s" % (self.base / "log" / "munged.log")])
        _wait_for("munged's socket", (munge / "munge.socket").exists, timeout=20)
        self._spawn("slurmctld", ["slurmctld", "-D", "-f", str(self.conf)])
        self._spawn("slurmd", ["slurmd", "-D", "-f", str(self.conf), "-N", self.node])
        _wait_for("node %s to be idle" % self.node, lambda: self.node_state().startswith("idle"), timeout=60)
        return time.monotonic() - t0

    def _spawn(self, name, argv):
        log = open(self.base / "log" / (name + ".out"), "w")
        self.daemons.append((name, subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=self.env)))

    def node_state(self):
        for name, popen in self.daemons:
            if popen.poll() is not None:
                raise AssertionError("%s exited with %s: %s" % (name, popen.returncode, self.logs()))
        out = subprocess.run(["sinfo", "-h", "-N", "-n", self.node, "-o", "%T"], env=self.env,
                             capture_output=True, text=True)
        return out.stdout.strip()

    def logs(self):
        return "\n".join("%s: %s" % (p.name, p.read_text()[-1500:]) for p in sorted((self.base / "log").iterdir()))

    def run(self, *argv, **kwargs):
        return subprocess.run(list(argv), env=self.env, capture_output=True, text=True, timeout=120, **kwargs)

    def stop(self):
        self.run("scancel", "--user=root")
        for name, popen in reversed(self.daemons):
            popen.send_signal(signal.SIGTERM)
            try:
                popen.wait(timeout=20)
            except subprocess.TimeoutExpired:
                popen.kill()
                popen.wait()


@pytest.fixture(scope="session")
def slurm(tmp_path_factory):
    for tool in DAEMONS + ("srun", "sbatch"):
        assert shutil.which(tool), "%s is not installed: run the README's test command (apt-get install ... " \
                                   "slurm-wlm munge)" % tool
    cluster = Cluster(tmp_path_factory.mktemp("slurm"))
    cluster.write_config()
    try:
        cluster.bringup_s = cluster.start()
        cluster.version = cluster.run("srun", "--version").stdout.strip()
        yield cluster
    finally:
        cluster.stop()


class Job:
    def __init__(self, cluster, jobid, out):
        self.cluster, self.id, self.out = cluster, jobid, out

    def state(self):
        return self.cluster.run("squeue", "-h", "-j", self.id, "-o", "%T").stdout.strip()

    def wait_ready(self, timeout=120):
        def ready():
            if self.state() not in ("PENDING", "CONFIGURING", "RUNNING"):
                raise AssertionError("job %s ended: %s\n%s" % (self.id, self.out.read_text(),
                                                                self.cluster.logs()))
            return self.out.exists() and "READY" in self.out.read_text()
        _wait_for("job %s's rank 0 to reach the collective that hangs" % self.id, ready, timeout=timeout)
        time.sleep(1.0)  # let rank 1 settle in its loop

    def rank_pids(self):
        """{rank: pid} of the job's rank processes on this node, read from their environment."""
        ranks = {}
        for entry in os.listdir("/proc"):
            try:
                with open("/proc/%s/environ" % entry, "rb") as f:
                    env = dict(kv.split("=", 1) for kv in f.read().decode(errors="replace").split("\0") if "=" in kv)
                with open("/proc/%s/cmdline" % entry, "rb") as f:
                    argv = f.read().decode(errors="replace").split("\0")
            except (OSError, ValueError):
                continue
            # the ranks, not srun's client or torchrun, whose command lines name the script too
            is_rank = os.path.basename(argv[0]).startswith("python") and "torch.distributed.run" not in argv
            if env.get("SLURM_JOB_ID") == self.id and is_rank and any(re.search(r"gloo_(ranks|hang)\.py$", a)
                                                                      for a in argv):
                ranks[int(env.get("RANK", env.get("SLURM_PROCID")))] = int(entry)
        return ranks


@pytest.fixture
def submit(slurm, tmp_path):
    jobs = []

    def _submit(script):
        env = dict(slurm.env, PYTHON=sys.executable, MASTER_PORT=str(free_port()),
                   STALLDIAG_FIXTURES=str(SLURM_FIXTURES))
        out = tmp_path / "job.out"
        proc = subprocess.run(["sbatch", "--parsable", "--output=%s" % out, str(SLURM_FIXTURES / script)],
                              env=env, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        job = Job(slurm, proc.stdout.strip().split(";")[0], out)
        jobs.append(job)
        job.wait_ready()
        return job

    yield _submit
    for job in jobs:
        slurm.run("scancel", job.id)
    for job in jobs:  # the node has CPUs for one job at a time: the next test's job must not pend
        _wait_for("job %s to end" % job.id, lambda: job.state() == "", timeout=60)


def readme_slurm_recipe():
    """The shell block under the "Slurm (one task per node" paragraph of docs/reference.md, as printed."""
    readme = (ROOT / "docs" / "reference.md").read_text()
    match = re.search(r"^Slurm \(one task per node.*?```\n(.*?)```", readme, re.S | re.M)
    assert match, "docs/reference.md has no Slurm recipe"
    return match.group(1)


@pytest.mark.parametrize("script", ["srun_ranks.sbatch", "torchrun_ranks.sbatch"],
                         ids=["slurm-srun-ranks", "slurm-torchrun"])
def test_slurm_readme_recipe_names_the_hung_rank_its_node_and_pid(slurm, submit, tmp_path, script):
    assert shutil.which("stalldiag"), "the recipe runs `stalldiag`: pip install -e . first"
    job = submit(script)
    ranks = job.rank_pids()
    assert sorted(ranks) == [0, 1]
    incident = tmp_path / "incident"
    # the two placeholders the README names: $JOBID and the shared directory
    recipe = readme_slurm_recipe().replace("/shared/incident", str(incident))
    proc = subprocess.run(["bash", "-euo", "pipefail", "-c", recipe], cwd=str(tmp_path),
                          env=dict(slurm.env, JOBID=job.id), capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, (proc.stdout, proc.stderr, slurm.logs())
    # srun expands %N in --output to the node's short hostname; the report inside carries Slurm's node name
    per_node = incident / (slurm.hostname + ".json")
    assert sorted(p.name for p in incident.iterdir()) == [slurm.hostname + ".err", slurm.hostname + ".json"]
    assert (incident / (slurm.hostname + ".err")).read_text() == ""
    report = json.loads(per_node.read_text())
    assert report["capture"]["request"]["discovered"].startswith("Slurm job %s step " % job.id)
    assert report["capture"]["host"]["hostname"] == slurm.node != socket.gethostname()
    rows = {r["rank"]: r for r in report["ranks"]["rows"]}
    assert {r: rows[r]["pid"] for r in rows} == ranks
    assert [rows[0]["state"], rows[1]["suspect"]] == ["collective", True]
    assert rows[1]["where"] == "stuck_in_data_prep"        # py-spy read rank 1's stack from inside the step
    if script == "srun_ranks.sbatch":
        # ranks from Slurm's own variables: RANK is not set, SLURM_PROCID / SLURM_LOCALID are
        env = {p["pid"]: p["env"] for p in report["processes"]}
        assert all("RANK" not in env[pid] and env[pid]["SLURM_PROCID"] == str(r) for r, pid in ranks.items())
        assert [rows[r]["local_rank"] for r in (0, 1)] == [0, 1]
    merged_md = (tmp_path / "incident.md").read_text()
    assert "rank 1 on host %s is the outlier" % slurm.node in merged_md
    assert "| 1 | %s | %d |" % (slurm.node, ranks[1]) in merged_md
    merged = run_stalldiag("merge", per_node, "--json")
    assert merged.returncode == 0, merged.stderr
    verdict = json.loads(merged.stdout)["verdict"]
    assert (verdict["category"], verdict["rank"], verdict["host"], verdict["pid"]) == (
        "collective", 1, slurm.node, ranks[1])


def test_slurm_inspect_slurm_job_runs_srun_on_every_node_and_merges(slurm, submit, tmp_path):
    job = submit("srun_ranks.sbatch")
    ranks = job.rank_pids()
    proc = subprocess.run([sys.executable, "-m", "stalldiag", "inspect", "--slurm-job", job.id, "--duration", "3",
                           "-o", str(tmp_path / "incident.md"), "--json"], cwd=str(tmp_path), env=slurm.env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    merged = json.loads(proc.stdout)
    [per_node] = merged["merged_from"]
    assert re.fullmatch(r"%s/stalldiag-slurm-%s-[0-9-]+/%s\.json" % (tmp_path, job.id, slurm.hostname), per_node)
    assert (merged["verdict"]["host"], merged["verdict"]["rank"], merged["verdict"]["pid"]) == (
        slurm.node, 1, ranks[1])
    assert "rank 1 on host %s is the outlier" % slurm.node in (tmp_path / "incident.md").read_text()


def test_slurm_job_errors_are_one_line(slurm, tmp_path):
    unknown = subprocess.run([sys.executable, "-m", "stalldiag", "inspect", "--slurm-job", "1"], cwd=str(tmp_path),
                             env=slurm.env, capture_output=True, text=True, timeout=60)
    assert_one_line_error(unknown, 3, "Slurm job 1: no such job")
    bare = tmp_path / "bin"
    bare.mkdir()
    (bare / "python3").symlink_to(sys.executable)
    no_srun = subprocess.run([str(bare / "python3"), "-m", "stalldiag", "inspect", "--slurm-job", "1"],
                             cwd=str(ROOT), env=dict(slurm.env, PATH=str(bare)), capture_output=True, text=True,
                             timeout=60)
    assert_one_line_error(no_srun, 2, "needs Slurm's srun on PATH")


def test_slurm_inspect_outside_a_step_is_unchanged_by_slurm(slurm):
    """SLURM_JOB_ID without a job of that id on this node: a clear error, not a random target."""
    proc = subprocess.run([sys.executable, "-m", "stalldiag", "inspect", "--duration", "0"], cwd=str(ROOT),
                          env=dict(slurm.env, SLURM_JOB_ID="1", SLURM_STEP_ID="0"), capture_output=True, text=True,
                          timeout=60)
    assert_one_line_error(proc, 3, "Slurm job 1 has no processes on")
