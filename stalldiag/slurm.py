"""Slurm: which processes of a job run on this node, and one command for every node of a job.

Beside a running job, `srun --overlap --jobid=JOB` starts stalldiag in a new
step of that job; SLURM_JOB_ID and SLURM_STEP_ID in its environment say which
job it was sent to.  The job's other steps are found by their slurmstepd
("slurmstepd: [JOB.STEP]"), which is the parent of every task srun starts, so
no PID or pattern is needed.

`stalldiag inspect --slurm-job JOB` runs the README's line itself: Slurm's own
srun starts one stalldiag per node, srun writes each node's JSON report to
DIR/HOST.json (its --output %N: the node's short hostname), and the reports
are merged.
"""
import os
import re
import shutil
import subprocess
import sys
import time

from . import procfs
from .errors import OutputError, StalldiagError, last_line
from .targets import descendants

STEPD = re.compile(r"^slurmstepd: \[(\d+)(?:\+\d+)?\.([\w-]+)\]")
# srun needs a moment beyond the window to start the step and collect its output
SRUN_MARGIN_S = 60


def node_name(env=None):
    """Slurm's name for this node, where Slurm set one (inside a job step)."""
    return (os.environ if env is None else env).get("SLURMD_NODENAME") or None


def job_steps(job):
    """{step: slurmstepd pid} of job JOB on this node (steps such as "0", "batch", "extern")."""
    steps = {}
    for pid in procfs.pids():
        try:
            if procfs.comm(pid) != "slurmstepd":
                continue
            match = STEPD.match(" ".join(procfs.cmdline(pid)))
        except procfs.ProcfsError:
            continue
        if match and match.group(1) == str(job):
            steps[match.group(2)] = pid
    return steps


def _is_stalldiag(pid):
    """`stalldiag ...` or `python -m stalldiag ...` (not any program under a directory named stalldiag)."""
    try:
        return any(arg == "stalldiag" or arg.endswith("/stalldiag") for arg in procfs.cmdline(pid)[:3])
    except procfs.ProcfsError:
        return False


def step_target(env=None):
    """(slurmstepd pid, why) of the job step to inspect when stalldiag runs inside a step, else None.

    The candidates are the job's steps on this node other than our own, the
    extern step and steps that only run stalldiag.  The steps srun started
    (numbered) hold the ranks; the batch step (the script, and srun's client)
    only when there is no other, as when the script runs torchrun itself.
    The step with the most processes wins; the others are named."""
    env = os.environ if env is None else env
    job = env.get("SLURM_JOB_ID")
    if not job:
        return None
    own = env.get("SLURM_STEP_ID") or env.get("SLURM_STEPID")
    trees = {}
    for step, pid in job_steps(job).items():
        if step in (own, "extern"):
            continue
        tree = descendants(pid)
        if tree and not all(_is_stalldiag(p) for p in tree):
            trees[step] = (pid, len(tree))
    node = node_name(env) or "this node"
    if not trees:
        raise StalldiagError("Slurm job %s has no processes on %s besides stalldiag's own step" % (job, node),
                             code="no-such-process")
    pool = [s for s in trees if s != "batch"] or list(trees)
    best = max(pool, key=lambda s: (trees[s][1], s))
    why = "Slurm job %s step %s on %s, %d processes" % (job, best, node, trees[best][1])
    others = sorted(s for s in trees if s != best)
    if others:
        why += "; not inspected: step %s" % ", ".join(others)
    return trees[best][0], why


def _srun():
    srun = shutil.which("srun")
    if srun is None:
        raise StalldiagError("--slurm-job needs Slurm's srun on PATH, and it is not there", code="usage")
    return srun


def job_nodes(job):
    """The nodes of running job JOB, or a one-line error if it is unknown or not running."""
    squeue = shutil.which("squeue") or "squeue"
    try:
        out = subprocess.run([squeue, "-h", "-j", str(job), "-o", "%T %N"], capture_output=True, text=True,
                             timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise StalldiagError("cannot ask Slurm about job %s: %s" % (job, exc), code="usage")
    fields = out.stdout.split()
    why = (out.stderr.strip().splitlines() or ["not in squeue"])[-1]
    if out.returncode != 0 and "Invalid job id" not in out.stderr:
        raise StalldiagError("cannot ask Slurm about job %s: %s" % (job, why), code="usage")
    if not fields:
        raise StalldiagError("Slurm job %s: no such job (%s)" % (job, why), code="no-such-process")
    if fields[0] != "RUNNING":
        raise StalldiagError("Slurm job %s is %s, not running: nothing to inspect" % (job, fields[0]),
                             code="no-such-process")
    try:
        names = subprocess.run(["scontrol", "show", "hostnames", fields[1]], capture_output=True, text=True,
                               timeout=60).stdout.split()
    except (OSError, subprocess.TimeoutExpired):
        names = []
    return names or [fields[1]]


def srun_line(job, report_dir, inspect_args):
    """The README's multi-host line: one stalldiag per node of JOB, beside it; srun writes
    each node's JSON report to REPORT_DIR/HOST.json and its errors to HOST.err."""
    return [_srun(), "--overlap", "--jobid=%s" % job, "--ntasks-per-node=1",
            "--output=%s" % os.path.join(report_dir, "%N.json"), "--error=%s" % os.path.join(report_dir, "%N.err"),
            sys.executable, "-m", "stalldiag", "inspect", "--json"] + list(inspect_args)


def inspect_job(job, config, report_dir=None):
    """Run stalldiag on every node of JOB through srun; the paths of the per-node JSON reports.

    They go to a new directory ./stalldiag-slurm-JOB-TIME (or REPORT_DIR), which
    must be on a filesystem every node of the job writes to: each node's
    slurmstepd opens its --output file, named by srun's %N (the node's short
    hostname).  Fewer reports than nodes is a one-line error with what the
    nodes' stalldiag (or srun) last wrote on stderr."""
    if config.pid is not None:
        raise StalldiagError("--slurm-job finds the job's processes on each node itself: give no PID", code="usage")
    _srun()
    nodes = job_nodes(job)
    report_dir = os.path.abspath(report_dir or "stalldiag-slurm-%s-%s" % (job, time.strftime("%Y%m%d-%H%M%S")))
    try:
        os.makedirs(report_dir)
    except OSError as exc:
        raise OutputError("%s: cannot create the directory for the per-node reports: %s" % (
            report_dir, exc.strerror or exc))
    argv = srun_line(job, report_dir, config.inspect_args())
    try:
        proc = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=config.duration + SRUN_MARGIN_S)
    except subprocess.TimeoutExpired:
        raise StalldiagError("srun for Slurm job %s did not finish within %d s" % (
            job, config.duration + SRUN_MARGIN_S), code="internal")
    srun_said = (proc.stderr.strip().splitlines() or [""])[-1]
    if "Invalid job id" in proc.stderr:
        raise StalldiagError("Slurm job %s: no such job (%s)" % (job, srun_said), code="no-such-process")
    names = sorted(os.listdir(report_dir))
    reports = [os.path.join(report_dir, n) for n in names
               if n.endswith(".json") and os.path.getsize(os.path.join(report_dir, n)) > 0]
    if len(reports) < len(nodes):
        said = [_last_line(os.path.join(report_dir, n)) for n in names if n.endswith(".err")]
        said = "; ".join(sorted({line for line in said if line})) or srun_said or "nothing on stderr"
        raise StalldiagError("Slurm job %s: %d of %d nodes (%s) wrote no report to %s (on a filesystem every "
                             "node writes to?): %s" % (job, len(nodes) - len(reports), len(nodes), ",".join(nodes),
                                                       report_dir, said), code="partial")
    return reports


def _last_line(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return last_line(f.read()) or None
    except OSError:
        return None
