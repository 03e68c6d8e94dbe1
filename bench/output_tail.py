"""What reading the last lines costs: output_tail.collect over N processes that log (by hand).

    python3 bench/output_tail.py [N]
"""
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from stalldiag.probes import output_tail  # noqa: E402


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    tmp = tempfile.mkdtemp(prefix="stalldiag-bench-tail-")
    procs = []
    for i in range(n):
        log = os.path.join(tmp, "log%d.txt" % i)
        code = ("import time, logging\nlogging.basicConfig(filename=%r, level=logging.INFO)\n"
                "for n in range(300): logging.info('step %%d loss 0.%%d', n, n)\n"
                "print('READY', flush=True); time.sleep(60)\n" % log)
        with open(os.path.join(tmp, "out%d.txt" % i), "w") as out:
            procs.append(subprocess.Popen([sys.executable, "-c", code], stdout=out, stderr=subprocess.STDOUT))
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not all(
                "READY" in open(os.path.join(tmp, "out%d.txt" % i)).read() for i in range(n)):
            time.sleep(0.1)
        times = []
        for _ in range(5):
            t0 = time.perf_counter()
            output_tail.collect([p.pid for p in procs])
            times.append((time.perf_counter() - t0) * 1000)
        print("output_tail.collect of %d processes: best %.1f ms, median %.1f ms" % (
            n, min(times), sorted(times)[len(times) // 2]))
    finally:
        for p in procs:
            p.kill()
            p.wait()


if __name__ == "__main__":
    main()
