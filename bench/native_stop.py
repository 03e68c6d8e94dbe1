"""How long one native snapshot stops its target (issue 40: "the target never stopped for more than a
few milliseconds at a time").

    python3 bench/native_stop.py [--dumps 20] [--target plain|torch] [--out FILE]

`py-spy dump --native` (stalldiag's probes/native.py, --native-dumps N) must stop the process while
it unwinds its threads' native stacks.  The stop is measured from inside the target: a thread of
it reads the monotonic clock in a loop and keeps every gap between two reads over GAP_S; a gap that
overlaps a snapshot is that snapshot's stop (plus the scheduler's noise, measured by the same loop
in a baseline of the same length with no snapshot).  The torch target loads libtorch (hundreds of
MB of native code to unwind through) and runs matmuls in a second thread while it is measured; the
cuda target does them on the GPU (libcuda's threads, a CUDA context), for the GPU machine.
Run it on an idle machine: a busy one adds its own gaps to both phases.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from stalldiag.probes.stacks import find_pyspy  # noqa: E402

GAP_S = 0.0005

TARGET = r'''
import json, os, sys, threading, time
mode, out, stop = sys.argv[1], sys.argv[2], sys.argv[3]
if mode in ("torch", "cuda"):
    import torch
    torch.set_num_threads(1)
    device = "cuda" if mode == "cuda" else "cpu"
    a = torch.randn(1024 if device == "cuda" else 256, 1024 if device == "cuda" else 256, device=device)
    def work():
        while True:
            b = a @ a
            if device == "cuda":
                torch.cuda.synchronize()
    threading.Thread(target=work, daemon=True).start()
print("READY", flush=True)
gaps, clock, exists = [], time.monotonic, os.path.exists
last, n = clock(), 0
while True:
    now = clock()
    if now - last > %(gap)s:
        gaps.append([last, now - last])
    last = now
    n += 1
    if n %% 20000 == 0 and exists(stop):
        break
json.dump(gaps, open(out, "w"))
os._exit(0)   # (a daemon thread inside a torch op at exit makes C++ terminate)
''' % {"gap": GAP_S}


def run(target, dumps, spacing, baseline_s, binary):
    out, stop = tempfile.mktemp(suffix=".json"), tempfile.mktemp(suffix=".stop")
    proc = subprocess.Popen([sys.executable, "-c", TARGET, target, out, stop], stdout=subprocess.PIPE, text=True)
    proc.stdout.readline()
    time.sleep(1.0)
    base = (time.monotonic(), time.monotonic() + baseline_s)
    time.sleep(baseline_s)
    spans, ok = [], 0
    for _ in range(dumps):
        start = time.monotonic()
        done = subprocess.run([binary, "dump", "--pid", str(proc.pid), "--json", "--native"], capture_output=True)
        spans.append((start, time.monotonic()))
        ok += done.returncode == 0
        time.sleep(spacing)
    open(stop, "w").close()
    proc.wait()
    os.unlink(stop)
    gaps = json.load(open(out))
    os.unlink(out)
    in_base = [g for t, g in gaps if base[0] <= t <= base[1]]
    per_dump = [max([g for t, g in gaps if s - 0.001 <= t <= e] + [0.0]) for s, e in spans]
    return {"target": target, "dumps": dumps, "dumps_ok": ok, "baseline_s": baseline_s,
            "baseline_max_gap_ms": round(1000 * max(in_base + [0.0]), 2),
            "baseline_gaps_over_0.5ms": len(in_base),
            "stop_ms_per_dump": sorted(round(1000 * g, 2) for g in per_dump),
            "dump_wall_ms": sorted(round(1000 * (e - s), 1) for s, e in spans)}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dumps", type=int, default=20)
    parser.add_argument("--spacing", type=float, default=0.25)
    parser.add_argument("--target", default="plain,torch", help="plain, torch, cuda (comma-separated)")
    parser.add_argument("--out")
    args = parser.parse_args()
    binary = find_pyspy()
    if binary is None:
        sys.exit("py-spy is not on PATH")
    results = []
    for target in args.target.split(","):
        r = run(target, args.dumps, args.spacing, args.dumps * args.spacing, binary)
        stops = r["stop_ms_per_dump"]
        print("%-6s %d/%d dumps: stop median %.1f ms, max %.1f ms; baseline max gap %.1f ms (%d gaps over 0.5 ms); "
              "dump wall median %.0f ms" % (target, r["dumps_ok"], r["dumps"], stops[len(stops) // 2], stops[-1],
                                            r["baseline_max_gap_ms"], r["baseline_gaps_over_0.5ms"],
                                            r["dump_wall_ms"][len(stops) // 2]))
        results.append(r)
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"machine": os.uname().nodename, "date": time.strftime("%Y-%m-%d"), "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
