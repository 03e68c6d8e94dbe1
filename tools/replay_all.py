"""Replay every saved capture and print (or --write) its verdict in brief.

    python3 tools/replay_all.py [--write]

fixtures/verdicts.json holds, for each capture, the category, culprit, confidence and
progress it replays to; tests/replay/test_replay_verdicts.py holds the captures to it.  A change that
moves one rewrites the file with --write, and its commit says why the new verdict is right.
"""
import glob
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from stalldiag.capture import load_report  # noqa: E402
from stalldiag.report import build_report  # noqa: E402

GOLDEN = os.path.join(ROOT, "fixtures", "verdicts.json")


def brief(path):
    verdict = build_report(load_report(path))["verdict"]
    return {"category": verdict["category"], "pid": verdict.get("pid"), "tid": verdict.get("tid"),
            "confidence": verdict.get("confidence"), "progress": verdict["progress"]["state"]}


def all_briefs():
    return {os.path.basename(p)[:-5]: brief(p) for p in sorted(glob.glob(os.path.join(ROOT, "fixtures", "captures", "*.json")))
}


if __name__ == "__main__":
    briefs = all_briefs()
    if "--write" in sys.argv:
        with open(GOLDEN, "w") as f:
            json.dump(briefs, f, indent=1, sort_keys=True)
            f.write("\n")
    print(json.dumps(briefs, indent=1, sort_keys=True))
