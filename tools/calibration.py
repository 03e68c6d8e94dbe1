"""Right and wrong per confidence level, over live runs of real workloads.

    python3 tools/calibration.py [--repros RESULTS.json ...] [--tests LOG.jsonl ...]

--repros: results.json files that tools/run_repros.py wrote (one row per reproduced
hang, "right" judged against its manifest).  --tests: the JSON lines a live pytest run
wrote with STALLDIAG_CALIBRATION_LOG=FILE set (one row per verdict a test asked for,
right when the test passed: every such test asserts what the verdict must say).  Only
tests of workloads with a known answer count (held-out sets, stall families, chains).
"""
import argparse
import collections
import json

# Test files whose workloads each state the verdict a correct diagnosis gives.
VERDICT_TESTS = ("test_dead_coordinators_and_pool_deadlocks", "test_locks_storage_and_halted_ranks",
                 "test_pools_sockets_and_healthy_jobs", "test_stopped_workers_and_contention",
                 "test_inspect_workloads", "test_stdlib_waits", "test_chains", "test_target_pythons",
                 "test_retry_loops", "test_event_loops", "test_pipeline_mechanisms", "test_progress",
                 "test_reproduced")
LEVELS = ("high", "medium", "low")


def rows_of(repros, tests):
    rows = []
    for path in repros:
        with open(path) as f:
            for r in json.load(f):
                if "error" not in r:
                    rows.append({"source": "repro", "id": r["id"], "confidence": r.get("confidence"),
                                 "right": r["right"], "category": r["got"]})
    for path in tests:
        with open(path) as f:
            for line in f:
                r = json.loads(line)
                if any(("/" + name) in "/" + r["test"] for name in VERDICT_TESTS):
                    rows.append({"source": "test", "id": r["test"], "confidence": r.get("confidence"),
                                 "right": r["passed"], "category": r.get("category")})
    return rows


def table(rows):
    counts = collections.Counter((r["confidence"], r["right"]) for r in rows)
    lines = ["| confidence | right | wrong | right among them |", "|---|---|---|---|"]
    for level in LEVELS:
        right, wrong = counts[(level, True)], counts[(level, False)]
        share = "%.0f%%" % (100.0 * right / (right + wrong)) if right + wrong else "-"
        lines.append("| %s | %d | %d | %s |" % (level, right, wrong, share))
    unknown_high = sum(1 for r in rows if r["category"] == "unknown" and r["confidence"] == "high")
    lines.append("")
    lines.append("%d verdicts; 'unknown' said at high: %d" % (len(rows), unknown_high))
    wrong_high = [r["id"] for r in rows if r["confidence"] == "high" and not r["right"]]
    if wrong_high:
        lines.append("wrong at high: " + ", ".join(wrong_high))
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repros", nargs="*", default=[])
    parser.add_argument("--tests", nargs="*", default=[])
    args = parser.parse_args()
    print(table(rows_of(args.repros, args.tests)))


if __name__ == "__main__":
    main()
