#!/usr/bin/env bash
# Run on the GPU machine (device tool): pytorch/examples imagenet/main.py --dummy (carried in
# .carry/imagenet/, fetched from the public repository, not committed), inspected RUNS times with
# stalldiag --children once it trains, a few seconds apart.  Issue 40: every time the input
# pipeline (4 DataLoader workers at a core each feeding a GPU that waits), with the workers' hot
# code named.  $OUT gets imagenet.tar.gz (every JSON report) and summary.txt.
set -u
cd "$(dirname "$0")/.."
export PYTHONPATH=/tmp/site:$PWD:${PYTHONPATH:-} PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/gpu-imagenet}; LOGS=${LOGS:-/tmp/gpu-imagenet-logs}; mkdir -p "$OUT" "$LOGS/reports"
RUNS=${RUNS:-3}; DURATION=${DURATION:-10}; WORKERS=${WORKERS:-4}
if [ -d .whl ] && ! [ -x /tmp/site/bin/py-spy ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 3
fi
card=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr ' ' '_')
setsid python3 .carry/imagenet/main.py --dummy -a resnet50 -j "$WORKERS" -b 256 --gpu 0 -p 10 > "$LOGS/imagenet.log" 2>&1 &
job=$!
for i in $(seq 60); do grep -q "Epoch: \[0\]\[ *20/" "$LOGS/imagenet.log" 2>/dev/null && break; sleep 2; done
for run in $(seq "$RUNS"); do
  python3 -m stalldiag inspect "$job" --children --duration "$DURATION" -o "$LOGS/reports/imagenet_${card}_$run.json" \
    -o "$LOGS/reports/imagenet_${card}_$run.txt" > /dev/null 2>&1
  echo "== run $run on $card" >> "$OUT/summary.txt"; head -4 "$LOGS/reports/imagenet_${card}_$run.txt" >> "$OUT/summary.txt"
  sleep 5
done
tail -3 "$LOGS/imagenet.log" >> "$OUT/summary.txt"
kill -9 -- -"$job" 2>/dev/null
tar -czf "$OUT/imagenet.tar.gz" -C "$LOGS/reports" .
