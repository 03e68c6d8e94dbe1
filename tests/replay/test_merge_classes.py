"""`stalldiag merge` of saved captures spread over synthetic hosts, and of a 512-rank job.

Each capture of a job with ranks (torchrun's gloo and NCCL jobs, DDP, the GPU captures) becomes
four hosts: three whose every rank is a clone of the capture's healthy rank, and the capture
itself with its ranks renumbered after theirs. The merge must find, among all the ranks, the
outliers the capture's own report found (renumbered), put every other rank in the classes of the
healthy ones, and stay short. The 512-rank job (bench/merge_scale.py's hosts, two real captures,
one stuck rank) is merged as the command line does it, reading the files in worker processes.
"""
import html
import importlib.util
import json
import re
from pathlib import Path

import pytest

from stalldiag import render
from stalldiag.capture import load_report
from stalldiag.diagnosis import diagnose
from stalldiag.merge import merge_reports

ROOT = Path(__file__).resolve().parents[2]
CAPTURES = ROOT / "fixtures" / "captures"
NETWORK = re.compile(r"""(?:\b(?:src|href|action)\s*=\s*["']?\s*(?:https?:)?//)|url\(|@import|<script""", re.I)


def _bench():
    spec = importlib.util.spec_from_file_location("merge_scale", ROOT / "bench" / "merge_scale.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bench = _bench()

# the saved captures of jobs whose ranks carry a rank variable (RANK, SLURM_PROCID, ...)
JOBS = ["gloo_hang", "slurm_srun_ranks", "nccl_hang", "ddp_gloo_healthy_caught_asleep", "repro_ddp_uneven_inputs",
        "gpu_ddp_stopped_rank", "gpu_allgather_stopped", "gpu_straggler", "gpu_straggler_uneven_batches",
        "mpirun_launcher"]
HOSTS = 4


def write_job(name, directory):
    """Four host reports of one capture; returns (paths, the ranks the merge should call outliers)."""
    cap = load_report(str(CAPTURES / (name + ".json")))
    own = diagnose(cap)["ranks"]["rows"]
    odd = [r["rank"] for r in own if r["suspect"]]
    procs = bench.rank_processes(cap)
    assert [bench._rank_of(p) for p in procs] == [r["rank"] for r in own]
    healthy = next(p for p, r in zip(procs, own) if not r["suspect"])
    base = dict(cap, processes=[p for p in cap["processes"] if bench._rank_of(p) is None])
    per_host, world = len(procs), HOSTS * len(procs)
    paths = []
    for host in range(HOSTS):
        last = host == HOSTS - 1
        host_cap = dict(base, host=dict(cap.get("host") or {}, hostname="node-%d" % (host + 1)))
        host_cap["processes"] = list(base["processes"]) + [
            # each clone keeps the pid of the rank it stands in for: what NVML saw of that pid stays its
            dict(bench.clone_rank(p if last else healthy, orig["pid"], host * per_host + i, i, world, host),
                 ppid=orig.get("ppid"))
            for i, (p, orig) in enumerate(zip(procs, procs))]
        path = directory / ("node-%d.json" % (host + 1))
        path.write_text(json.dumps({"capture": host_cap}, default=str))
        paths.append(str(path))
    return paths, [(HOSTS - 1) * per_host + rank for rank in odd]


@pytest.mark.parametrize("name", JOBS)
def test_merged_hosts_find_the_captures_outliers_among_clones_of_its_healthy_rank(name, tmp_path):
    paths, odd = write_job(name, tmp_path)
    merged = merge_reports(paths, jobs=1)
    n = len(merged.ranks)
    assert n == HOSTS * (n // HOSTS) and sorted(r.rank for r in merged.ranks) == list(range(n))
    assert [r.rank for r in merged.ranks if r.suspect] == odd, [(r.rank, r.state, r.where) for r in merged.ranks]
    classes = merged.groups
    assert sum(c.count for c in classes) == n and classes == sorted(classes, key=lambda c: -c.count)
    assert sorted(r for c in classes if c.outlier for r in c.ranks) == odd
    # every clone of the healthy rank is in the largest class, on every host
    assert classes[0].count >= (HOSTS - 1) * (n // HOSTS) and not classes[0].outlier
    assert classes[0].hosts[:HOSTS - 1] == ["node-%d" % h for h in range(1, HOSTS)]
    v = merged.verdict
    if odd:
        assert (v.rank, v.host) == (odd[0], "node-%d" % HOSTS) and "is the outlier" in v.summary
        for c in classes:
            if c.outlier and c.stack:
                assert c.diverges is not None and c.diverges.from_class < c.index
        assert "rank %d" % odd[0] in v.consensus
    else:
        assert "no outlier rank" in v.summary and v.rank is None
    # short, in every format, and the same Incident behind each
    text = render.render_incident(merged, "text")
    assert text.startswith("MERGED VERDICT: ") and len(text.splitlines()) < 60
    assert "Classes of ranks by stack: %d" % len(classes) in text
    md = render.render_incident(merged, "markdown")
    for rank in odd:
        pid = next(r.pid for r in merged.ranks if r.rank == rank)
        assert "| %d | node-%d | %d |" % (rank, HOSTS, pid) in md
    page = render.render_incident(merged, "html")
    assert page.startswith("<!DOCTYPE html>") and not NETWORK.search(page)
    assert html.escape(v.summary, quote=True) in page
    assert page.count('class="outlier"') == len(odd)
    data = json.loads(render.render_incident(merged, "json"))
    assert len(data["ranks"]) == n and [g["count"] for g in data["groups"]] == [c.count for c in classes]
    assert all(r["stack"] for r in data["ranks"])


def test_a_hosts_report_shows_its_ranks_classes_in_every_format():
    from stalldiag.report import build
    report = build(load_report(str(CAPTURES / "gloo_hang.json")))
    text = render.render(report, "text")
    assert "Ranks: 2 in 2 classes by stack" in text
    assert "diverges from #1 below train (gloo_hang.py:54), into stuck_in_data_prep (gloo_hang.py:41)" in text
    md = render.render(report, "markdown")
    assert "| 2 **outlier** | 1 | 1 | vm |" in md
    page = render.render(report, "html")
    assert '<section id="ranks">' in page and page.count('class="outlier"') == 1


def test_an_old_report_without_stacks_still_merges(tmp_path):
    """A report written before rank rows had stacks: its capture is re-diagnosed, so the rows have them."""
    old = json.loads((CAPTURES / "gloo_hang.json").read_text())
    assert "stack" not in json.dumps(old.get("ranks") or {})
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old))
    merged = merge_reports([str(path)], jobs=1)
    assert merged.verdict.rank == 1 and merged.groups[1].diverges is not None


# --- a job of 512 ranks ---------------------------------------------------------------------

def test_a_512_rank_merge_finds_the_stuck_rank_and_prints_a_few_lines(tmp_path, capsys):
    from stalldiag.cli import cli
    stuck = 389
    paths = bench.write_hosts(str(tmp_path), 512, stuck, jobs=1, full_reports=False)
    assert len(paths) == 64
    cli.main(["merge", *paths, "--jobs", "2", "-o", str(tmp_path / "incident.html"),
              "-o", str(tmp_path / "incident.md"), "-o", str(tmp_path / "incident.json")], standalone_mode=False)
    text = capsys.readouterr().out
    lines = text.splitlines()
    assert lines[0] == "MERGED VERDICT: COLLECTIVE" and len(lines) < 40, text
    assert lines[1].startswith("rank %d on host node0049 is the outlier" % stuck)
    assert "ranks 0-255: collective in all_reduce (torch.distributed), at sync_gradients (gloo_hang.py:45); " \
           "ranks 256-388,390-511: collective in all_reduce" in lines[2]
    assert "rank %d diverged from #2 below main (gloo_ranks.py:41): sleep in stuck_in_data_prep" % stuck in lines[2]
    assert "Hosts: 64 reports, 64 hosts node[0001-0064], 512 ranks" in text
    assert "  #1  256 ranks 0-255 on 32 hosts node[0001-0032]" in lines
    assert "  #3  1 rank %d on node0049   OUTLIER" % stuck in lines
    md = (tmp_path / "incident.md").read_text()
    assert len(md.splitlines()) < 60 and "| 389 | node0049 |" in md
    page = (tmp_path / "incident.html").read_text()
    assert page.count('class="outlier"') == 1 and len(page) < 200_000
    data = json.loads((tmp_path / "incident.json").read_text())      # the JSON keeps every rank
    assert len(data["ranks"]) == 512 and data["verdict"]["suspects"] == [
        {"host": "node0049", "rank": stuck, "pid": 20050}]
    # every rank on a line, when asked for
    cli.main(["merge", *paths, "--jobs", "2", "--ranks", "all"], standalone_mode=False)
    every = capsys.readouterr().out.splitlines()
    assert every[:len(lines) - 2] == lines[:-2] and every[len(lines) - 2:len(lines)] == ["", "Ranks"]
    assert len(every) == len(lines) + 512 and every[-1].startswith("  rank 511 ")


def test_a_forked_ranks_inherited_parent_frames_are_not_its_stack():
    rows = diagnose(load_report(str(CAPTURES / "repro_ddp_uneven_batches.json")))["ranks"]["rows"]
    for r in rows:     # mp.spawn's fork: Popen._launch and the parent's main() are the parent's
        functions = [f[0] for f in r["stack"]]
        assert "Popen._launch" not in functions and "start_processes" not in functions, functions
        assert r["stack_depth"] == len(r["stack"]) <= 16 and functions[-1] == "BaseProcess._bootstrap"
