#!/usr/bin/env python3
"""`stalldiag merge` at the scale of a large job: thousands of ranks, one of them stuck.

It writes N per-host JSON reports (8 ranks a host) made from two real captures, then times
`python3 -m stalldiag merge DIR/*.json` as a child process: wall time, the child's peak RSS
(resource.getrusage(RUSAGE_CHILDREN) of a fresh interpreter that only runs the merge), and the
bytes and lines it printed; and checks that the merged verdict names the stuck rank.

How the hosts are made: each capture (default fixtures/captures/gloo_hang.json and
slurm_srun_ranks.json, both a torchrun job of two ranks where rank 0 waits in all_reduce and
rank 1 sleeps in its data preparation) gives a host template: its launcher, and its waiting rank
cloned 8 times (pids, thread ids, RANK, LOCAL_RANK, WORLD_SIZE rewritten). The first half of the
hosts come from the first capture, the second half from the second (so the job has two large
classes of stacks: the same all_reduce reached from two scripts); one rank (--stuck) is instead a
clone of its capture's sleeping rank. Each host's report is what `stalldiag inspect -o x.json`
writes: the diagnosis and the capture inside (report.build_report), with its own hostname
(node0001...).

    python3 bench/merge_scale.py --ranks 4096,16384 --runs 3
    python3 bench/merge_scale.py --ranks 4096 --runs 1 --profile      # and a cProfile of one merge --jobs 1
    python3 bench/merge_scale.py --dir /tmp/merge-scale ...            # keep (and reuse) the host reports
"""
import argparse
import copy
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
CAPTURES = os.path.join(REPO, "fixtures", "captures")
RANKS_PER_HOST = 8
DEFAULT_CAPTURES = ("gloo_hang", "slurm_srun_ranks")


def _rank_of(proc):
    from stalldiag.knowledge.ranks import RANK_VARS, first_var
    return first_var(proc.get("env"), RANK_VARS)


def template(name):
    """(capture without its rank processes, its rank 0's process, its rank 1's): in the default
    captures rank 0 waits in all_reduce and rank 1 is the stuck one."""
    from stalldiag.capture import load_report
    cap = load_report(os.path.join(CAPTURES, name + ".json"))
    ranks = rank_processes(cap)
    base = dict(cap, processes=[p for p in cap["processes"] if _rank_of(p) is None])
    return base, ranks[0], ranks[1] if len(ranks) > 1 else ranks[0]


def rank_processes(cap):
    """The capture's processes with a rank variable, by rank."""
    return sorted((p for p in cap["processes"] if _rank_of(p) is not None), key=_rank_of)


def clone_rank(proc, pid, rank, local_rank, world_size, host_index):
    """A copy of a rank's process as another rank: its pid and thread ids, and its RANK vars."""
    out = copy.deepcopy(proc)
    old_pid = proc["pid"]
    out["pid"] = pid
    out["nspid"] = [pid]
    threads = []
    for i, thread in enumerate(out.get("threads") or []):
        thread["tid"] = pid if thread["tid"] == old_pid else pid + 1 + i
        threads.append(thread)
    from stalldiag.knowledge.ranks import LOCAL_RANK_VARS, RANK_VARS, WORLD_SIZE_VARS
    env = dict(out.get("env") or {})
    for names, value in ((RANK_VARS, rank), (LOCAL_RANK_VARS, local_rank), (WORLD_SIZE_VARS, world_size)):
        for name in names:          # whichever variables the launcher set (torchrun's, Slurm's, ...)
            if name in env:
                env[name] = str(value)
    if not any(name in env for name in RANK_VARS):
        env["RANK"] = str(rank)
    if "GROUP_RANK" in env:
        env["GROUP_RANK"] = str(host_index)
    if "LOCAL_WORLD_SIZE" in env:
        env["LOCAL_WORLD_SIZE"] = str(RANKS_PER_HOST)
    out["env"] = env
    return out


def host_capture(tmpl, host_index, world_size, stuck=None, hostname=None, per_host=RANKS_PER_HOST, sources=None):
    """The capture of host number host_index (per_host ranks from host_index * per_host), with rank
    `stuck` (if it is on this host) a clone of the template's stuck rank. sources: the process each
    local rank is a clone of, instead (a list of per_host processes)."""
    base, waiting, stuck_proc = tmpl
    cap = copy.copy(base)
    cap["host"] = dict(base.get("host") or {}, hostname=hostname or "node%04d" % (host_index + 1))
    launcher = next((p for p in base["processes"] if p["pid"] == waiting.get("ppid")), None)
    processes = list(base["processes"])
    for local in range(per_host):
        rank = host_index * per_host + local
        source = sources[local] if sources else stuck_proc if rank == stuck else waiting
        proc = clone_rank(source, 20000 + 10 * local, rank, local, world_size, host_index)
        if launcher is not None:
            proc["ppid"] = launcher["pid"]
        processes.append(proc)
    cap["processes"] = processes
    return cap


def _write_host(job):
    """Write one host's report (a worker's task): (path, template name, host index, ranks, stuck,
    whole report or the bare capture)."""
    from stalldiag.report import build_report
    path, name, host, n_ranks, stuck, full = job
    cap = host_capture(template(name), host, n_ranks, stuck)
    with open(path, "w") as f:
        json.dump(build_report(cap) if full else {"capture": cap}, f, default=str)
    return path


def write_hosts(directory, n_ranks, stuck, captures=DEFAULT_CAPTURES, jobs=None, full_reports=True):
    """Write n_ranks / 8 per-host reports into directory (the first half of the hosts from the
    first capture, the rest from the second); return their paths. full_reports=False writes only
    each capture (what merge reads; quicker to make)."""
    n_hosts = n_ranks // RANKS_PER_HOST
    tasks = [(os.path.join(directory, "node%04d.json" % (host + 1)),
              captures[min(len(captures) - 1, host * len(captures) // n_hosts)], host, n_ranks, stuck, full_reports)
             for host in range(n_hosts)]
    if jobs == 1 or n_hosts < 16:
        return [_write_host(t) for t in tasks]
    import multiprocessing
    with multiprocessing.get_context("fork").Pool(jobs) as pool:
        return pool.map(_write_host, tasks, chunksize=16)


# Runs the merge as its only child: wall time, the child's CPU time and largest RSS (getrusage of
# RUSAGE_CHILDREN: the merge and its worker processes, each waited for), and the RSS of the whole
# tree (the merge and its workers together) sampled every 50 ms with psutil.
HELPER = """
import json, resource, subprocess, sys, threading, time
import psutil
t = time.monotonic()
p = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
peak = [0]
def watch():
    try:
        me = psutil.Process(p.pid)
        while p.poll() is None:
            try:
                total = me.memory_info().rss + sum(c.memory_info().rss for c in me.children(recursive=True))
            except psutil.Error:
                total = 0
            peak[0] = max(peak[0], total)
            time.sleep(0.05)
    except psutil.Error:
        pass
threading.Thread(target=watch, daemon=True).start()
out, err = p.communicate()
wall = time.monotonic() - t
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
sys.stderr.write(err.decode(errors="replace"))
sys.stdout.write(json.dumps({"rc": p.returncode, "wall": wall, "cpu": usage.ru_utime + usage.ru_stime,
                             "rss_kib": usage.ru_maxrss, "tree_rss": peak[0], "out": out.decode(errors="replace")}))
"""


CHECKOUT = REPO      # the stalldiag timed: this checkout, or --checkout DIR


def time_merge(paths, extra=(), profile=None):
    """Run `stalldiag merge` in a fresh interpreter: a dict of wall s, CPU s, peak RSS MiB (largest
    process; the tree's), stdout bytes and lines, and stdout itself."""
    argv = [sys.executable]
    if profile:
        argv += ["-m", "cProfile", "-o", profile]
    argv += ["-m", "stalldiag", "merge"] + list(paths) + list(extra)
    env = dict(os.environ, PYTHONPATH=CHECKOUT + (os.pathsep + os.environ["PYTHONPATH"]
                                                   if os.environ.get("PYTHONPATH") else ""))
    proc = subprocess.run([sys.executable, "-c", HELPER] + argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          env=env, cwd=CHECKOUT)
    if proc.returncode != 0:
        raise SystemExit("merge helper failed: %s" % proc.stderr.decode(errors="replace")[-2000:])
    r = json.loads(proc.stdout)
    if r["rc"] != 0:
        raise SystemExit("stalldiag merge exited %d: %s" % (r["rc"], proc.stderr.decode(errors="replace")[-2000:]))
    out = r["out"]
    return {"wall_s": round(r["wall"], 2), "cpu_s": round(r["cpu"], 2), "peak_rss_mib": round(r["rss_kib"] / 1024, 1),
            "tree_rss_mib": round(r["tree_rss"] / 2**20, 1), "out_bytes": len(out.encode()),
            "out_lines": out.count("\n"), "out": out}


def _stats(values):
    return min(values), statistics.median(values), max(values)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ranks", default="4096,16384", help="comma-separated job sizes (multiples of 8)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--captures", default=",".join(DEFAULT_CAPTURES),
                    help="two captures in fixtures/captures (names without .json)")
    ap.add_argument("--stuck", type=int, default=None,
                    help="the stuck rank (default: 3/4 of the job + 5: on a host of the second capture)")
    ap.add_argument("--jobs", type=int, default=None, help="merge --jobs (default: merge's own default)")
    ap.add_argument("--dir", default=None, help="keep the host reports here, and reuse them (default: a temporary "
                                                "directory)")
    ap.add_argument("--profile", action="store_true", help="also write a cProfile of one merge --jobs 1 "
                                                           "(merge-RANKS.prof)")
    ap.add_argument("--checkout", default=None, help="time the stalldiag of this checkout instead (a worktree of "
                                                      "another branch, for a before/after); the reports are made "
                                                      "by this one")
    ap.add_argument("--out", default=None, help="write the raw numbers here (JSON)")
    args = ap.parse_args()
    global CHECKOUT
    if args.checkout:
        CHECKOUT = os.path.abspath(args.checkout)
    captures = tuple(args.captures.split(","))
    extra = ["--jobs", str(args.jobs)] if args.jobs else []
    results = []
    for n in [int(x) for x in args.ranks.split(",")]:
        stuck = args.stuck if args.stuck is not None else 3 * n // 4 + 5
        with tempfile.TemporaryDirectory(prefix="merge-scale-") as tmp:
            directory = os.path.join(args.dir, "%d-stuck%d" % (n, stuck)) if args.dir else tmp
            os.makedirs(directory, exist_ok=True)
            t = time.monotonic()
            paths = sorted(os.path.join(directory, name) for name in os.listdir(directory) if name.endswith(".json"))
            if len(paths) != n // RANKS_PER_HOST:
                paths = write_hosts(directory, n, stuck, captures)
            made = time.monotonic() - t
            size = sum(os.path.getsize(p) for p in paths)
            log("%d ranks: %d host reports (%.1f MB) ready in %.1f s" % (n, len(paths), size / 1e6, made))
            as_json = json.loads(time_merge(paths, ["--json"] + extra)["out"])
            verdict = as_json["verdict"]
            right = verdict.get("rank") == stuck and [s["rank"] for s in verdict.get("suspects") or []] == [stuck]
            log("  verdict: rank %s on %s, suspects %s (%s)" % (
                verdict.get("rank"), verdict.get("host"), [s["rank"] for s in verdict.get("suspects") or []],
                "right" if right else "WRONG: the stuck rank is %d" % stuck))
            runs = []
            for i in range(args.runs):
                run = time_merge(paths, extra)
                out = run.pop("out")
                runs.append(run)
                log("  run %d: %.2f s wall, %.1f s CPU, %.0f MiB (largest process), %.0f MiB (tree), %d bytes, "
                    "%d lines" % (i + 1, run["wall_s"], run["cpu_s"], run["peak_rss_mib"], run["tree_rss_mib"],
                                  run["out_bytes"], run["out_lines"]))
            if args.profile:
                prof = os.path.join(REPO, "merge-%d.prof" % n)
                time_merge(paths, ["--jobs", "1"], profile=prof)
                log("  profile (--jobs 1): %s" % prof)
            results.append({"ranks": n, "hosts": len(paths), "stuck": stuck, "right_outlier": right,
                            "reports_mb": round(size / 1e6, 1), "load_before": os.getloadavg(), "runs": runs,
                            "terminal": out})
    print(table(results))
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"date": datetime.date.today().isoformat(), "machine": platform.node(),
                       "cpus": os.cpu_count(), "python": platform.python_version(), "results": results}, f, indent=1)


def table(results):
    lines = ["| ranks | hosts (report MB) | right outlier | wall s | CPU s | peak RSS MiB, largest process "
             "| peak RSS MiB, merge + workers | output bytes / lines |",
             "|---|---|---|---|---|---|---|---|"]
    for r in results:
        def col(key, fmt="%.1f"):
            lo, mid, hi = _stats([x[key] for x in r["runs"]])
            return " / ".join(fmt % v for v in (lo, mid, hi))
        lines.append("| %d | %d (%.0f) | %s | %s | %s | %s | %s | %d / %d |" % (
            r["ranks"], r["hosts"], r["reports_mb"], "yes" if r["right_outlier"] else "NO", col("wall_s"),
            col("cpu_s"), col("peak_rss_mib", "%.0f"), col("tree_rss_mib", "%.0f"), r["runs"][0]["out_bytes"],
            r["runs"][0]["out_lines"]))
    lines.append("")
    lines.append("(min / median / max of %d runs)" % len(results[0]["runs"]) if results else "")
    return "\n".join(lines)


def log(line):
    print(line, file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
