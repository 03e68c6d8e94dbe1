"""Run stalldiag on each reproduced hang of fixtures/repro/manifest.json and score the verdict.

    python3 tools/run_repros.py [--duration S] [--out DIR] [--python VERSION] [--round R]
                                [--manifest FILE] [id ...]

Each reproduction (written by someone who saw neither stalldiag's code nor a
list of its mechanisms, from a public issue thread it cites) is started from
the checkout's root, left to settle for its settle_s after its READY line, inspected with
--children, then killed with its process group.  A row is right when the
category is the manifest's truth.blocked_on, and "no progress" is said of a
run whose truth is progress "none".  Reports are kept in --out for reading.

A row's id names what it reproduces; its "round" (ra, rb, ... rl) says which set of blind
helpers wrote it (docs/validation.md tells the rounds): --round rk runs that set's rows.
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from stalldiag.targets import descendants  # noqa: E402


# the progress state that contradicts a truth's progress ("cannot tell" contradicts none): a stall
# said to advance, a run that advances (however slowly) said to show no progress
CONTRADICTS = {"none": "making progress", "some": "no progress seen", "slow": "no progress seen"}


def manifests(paths=None):
    """Every row of the manifest, round by round (or of the manifests `paths`: a blind round not
    yet committed, whose files are named relative to it); a row the product defines otherwise
    (fixtures/repro/adjudicated.json, with why) carries its adjudicated category in truth and the
    manifest's in truth["manifest_said"]."""
    rows = []
    for path in paths or [os.path.join(ROOT, "fixtures", "repro", "manifest.json")]:
        with open(path) as f:
            for row in json.load(f):
                if paths and not os.path.exists(os.path.join(ROOT, row["file"])):
                    row["file"] = os.path.join(os.path.dirname(os.path.abspath(path)), row["file"])
                rows.append(row)
    adjudicated_path = os.path.join(ROOT, "fixtures", "repro", "adjudicated.json")
    adjudicated = json.load(open(adjudicated_path)) if os.path.exists(adjudicated_path) else {}
    for row in rows:
        if row["id"] in adjudicated:
            row["truth"] = dict(row["truth"], blocked_on=adjudicated[row["id"]]["blocked_on"],
                                manifest_said=row["truth"]["blocked_on"])
    return rows


def interpreter(version):
    if not version or version == "%d.%d" % sys.version_info[:2] or shutil.which("pyenv") is None:
        return sys.executable      # (a machine without pyenv runs every row under this Python)
    prefix = subprocess.run(["pyenv", "prefix", version], capture_output=True, text=True).stdout.strip()
    return os.path.join(prefix, "bin", "python3") if prefix else sys.executable


def _ready_pid(path, default):
    """The pid a reproduction's `READY <pid>` line names (the process a user would inspect:
    the job's main process, which may be a child of what was started), else default."""
    try:
        with open(path, errors="replace") as f:
            for line in f:
                words = line.split()
                if len(words) >= 2 and words[0] == "READY" and words[1].isdigit():
                    return int(words[1])
    except OSError:
        pass
    return default


READY_WAIT_S = 180   # longest wait for a reproduction's READY line before inspecting it anyway


def _writes_ready(row):
    """The reproduction announces its stall with a READY line (the rounds from rm on do; a row
    whose launcher writes it through a helper module says so: "writes_ready": true)."""
    if row.get("writes_ready") is not None:
        return bool(row["writes_ready"])
    with open(os.path.join(ROOT, row["file"]), errors="replace") as f:
        return "READY" in f.read()


def run_one(row, duration, out_dir, python=None):
    argv = [interpreter(python or row.get("python")), os.path.join(ROOT, row["file"])] + \
        [str(a) for a in row.get("args") or []]
    stdout_path = os.path.join(out_dir, row["id"] + ".stdout")
    with open(stdout_path, "w") as stdout:
        popen = subprocess.Popen(argv, cwd=ROOT, stdout=stdout, stderr=subprocess.STDOUT,
                                 start_new_session=True, env=dict(os.environ, **(row.get("env") or {})))
    try:
        # the stall is steady settle_s after the READY line (a race may take a while to hit,
        # and a line written inside the window would read as output advancing); the first
        # rounds' scripts write none, and their settle_s counts from the start
        deadline = time.monotonic() + (READY_WAIT_S if _writes_ready(row) else 0)
        while _ready_pid(stdout_path, None) is None and popen.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(row.get("settle_s", 5))
        if popen.poll() is not None:
            return {"id": row["id"], "error": "exited with %s before the inspection" % popen.returncode}
        out = os.path.join(out_dir, row["id"] + ".json")
        target = _ready_pid(stdout_path, popen.pid)
        proc = subprocess.run([sys.executable, "-m", "stalldiag", "inspect", str(target), "--children",
                               "--duration", str(duration), "-o", out], capture_output=True, text=True,
                              cwd=ROOT, timeout=duration + 120)
        if proc.returncode != 0 or not os.path.exists(out):
            return {"id": row["id"], "error": (proc.stderr or proc.stdout).strip()[-300:]}
        with open(out) as f:
            verdict = json.load(f)["verdict"]
    finally:
        tree = [popen.pid] + descendants(popen.pid)
        for pid in tree:
            try:
                os.killpg(os.getpgid(pid), signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        popen.wait()
    truth = row["truth"]
    progress_ok = verdict["progress"]["state"] != CONTRADICTS.get(truth.get("progress"))
    return {"id": row["id"], "want": truth["blocked_on"], "manifest_said": truth.get("manifest_said"), "report": out,
            "got": verdict["category"],
            "right": verdict["category"] == truth["blocked_on"] and progress_ok,
            "progress": verdict["progress"]["state"], "progress_ok": progress_ok,
            "confidence": verdict.get("confidence"),
            "summary": verdict["summary"], "cite": row.get("cite")}


# the progress a verdict must not say of each truth of the real-framework corpus ("exits": the run
# ends in the window, and the headline must say so)
NEVER = {"none": "making progress", "some": "no progress seen", "slow": "no progress seen",
         "exits": "no progress seen"}


def corpus_rows():
    """Every case of the real-framework corpus (fixtures/real/manifest_*.json)."""
    import glob
    rows = []
    for path in sorted(glob.glob(os.path.join(ROOT, "fixtures", "real", "manifest_*.json"))):
        with open(path) as f:
            rows.extend(json.load(f))
    return rows


def corpus_report(path):
    """The report (its verdict, chain and capture) of a JSON report a run wrote, built again from
    its capture by this checkout's diagnosis."""
    from stalldiag.capture import load_report
    from stalldiag.report import build_report
    loaded = load_report(path)
    capture = loaded.get("capture", loaded)
    return dict(build_report(capture), capture=capture)


def judge_corpus(row, report):
    """None when a corpus case's report meets its truth, else what is wrong: the category, the
    progress it must not say, the culprit (a thread whose stacks show one of culprit_frames, or a
    stopped process where the truth says culprit_stopped), an exit's headline."""
    from stalldiag.diagnosis.graph import WaitGraph
    truth, verdict = row["truth"], report["verdict"]
    if truth["progress"] == "exits":
        if not verdict["summary"].startswith("Exited") or verdict["progress"]["state"] == NEVER["exits"]:
            return "the run exited in the window; the verdict says: %s" % verdict["summary"][:300]
        return None
    if verdict["category"] != truth["blocked_on"]:
        return "category %s, want %s: %s" % (verdict["category"], truth["blocked_on"], verdict["summary"][:300])
    if verdict["progress"]["state"] == NEVER.get(truth["progress"]):
        return "progress %s of a run whose truth is %s" % (verdict["progress"]["state"], truth["progress"])
    wanted = set(truth.get("culprit_frames") or ())
    if not wanted and not truth.get("culprit_stopped"):
        return None
    g = WaitGraph(report["capture"])
    view = next((v for v in g.views if (v.pid, v.tid) == (verdict.get("pid"), verdict.get("tid"))), None)
    if truth.get("culprit_stopped"):
        ok = view is not None and g.halted(view)
    else:
        # the culprit's frames, or, where the culprit is a holder outside the job (a lock's), the
        # frames of the job's thread that waits on it (the chain's step before it)
        chain = [(step.get("pid"), step.get("tid")) for step in report.get("chain") or []]
        named = [view] + ([v for v in g.views if (v.pid, v.tid) == chain[-2]] if len(chain) > 1 and view is not None
                          and g.procs.get(view.pid) is not None and g.procs[view.pid].outside_tree else [])
        ok = bool(wanted & {f[0].rsplit(".", 1)[-1] for v in named if v is not None for frames, _n in v.stacks
                            for f in frames or []})
    if not ok:
        return "culprit %s/%s, want %s: %s" % (verdict.get("pid"), verdict.get("tid"), truth["culprit"][:200],
                                               verdict["summary"][:300])
    return None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--duration", type=float, default=5)
    parser.add_argument("--out", default="/tmp/stalldiag-repro")
    parser.add_argument("--python", default=None, help="run every reproduction under this pyenv version")
    parser.add_argument("--round", action="append", default=[], help="only the rows of this round (ra ... rl)")
    parser.add_argument("--manifest", action="append", help="run this manifest's rows (default: the checkout's)")
    parser.add_argument("ids", nargs="*")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    rows = [r for r in manifests(args.manifest) if (not args.ids or r["id"] in args.ids)
            and (not args.round or r.get("round") in args.round)]
    results = []
    for row in rows:
        result = run_one(row, args.duration, args.out, args.python)
        results.append(result)
        if "error" in result:
            print("%-42s ERROR %s" % (result["id"], result["error"]), flush=True)
        else:
            print("%-42s %-5s want %-11s got %-11s %-6s %s | %s" % (
                result["id"], "ok" if result["right"] else "MISS", result["want"], result["got"],
                result["confidence"], result["progress"], result["summary"][:160]), flush=True)
    right = sum(1 for r in results if r.get("right"))
    print("%d of %d right" % (right, len(results)))
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
