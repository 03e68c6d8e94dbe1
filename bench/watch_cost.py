"""Cost of one `stalldiag watch` light check, on an idle tree of N processes (run by hand).

    python3 bench/watch_cost.py [N]

Prints stalldiag's CPU per light check, with and without the py-spy dump that runs
only when CPU time grew, and what that is per hour at --every 60s.
"""
import os
import resource
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from stalldiag import targets  # noqa: E402
from stalldiag.watch import Snapshot, stack_signature  # noqa: E402


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    tree = subprocess.Popen([sys.executable, os.path.join(ROOT, "bench", "targets", "idle_tree.py"), str(n)],
                            stdout=subprocess.PIPE, text=True)
    tree.stdout.readline()
    time.sleep(1)
    pids = [tree.pid] + targets.descendants(tree.pid)
    rounds = 20
    t = time.process_time()
    for _ in range(rounds):
        Snapshot(tree.pid, children=True)
    snapshot_ms = (time.process_time() - t) / rounds * 1000
    c = children_cpu()
    for _ in range(5):
        stack_signature(pids)
    dump_ms = (children_cpu() - c) / 5 * 1000
    tree.kill()
    print("tree: %d processes, about 10 threads each" % len(pids))
    print("light check, /proc part: %.2f ms CPU" % snapshot_ms)
    print("light check, py-spy dumps (only when CPU grew; at most 4 processes): %.1f ms CPU" % dump_ms)
    print("at --every 60s: %.3f%% of a core without dumps, %.3f%% with" % (
        snapshot_ms / 600, (snapshot_ms + dump_ms) / 600))


if __name__ == "__main__":
    main()
