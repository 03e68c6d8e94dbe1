#!/usr/bin/env bash
# One device call (issue 40), the budget being short: the ImageNet example inspected 3 times on
# this card (IMAGENET=0 skips it), a blind GPU round's first run, then how long a native snapshot
# stops a CUDA process (bench/native_stop.py); every report is written under $OUT as it is
# made, so a call cut off by its time limit still brings back what ran.
#   OUT=... bash tools/gpu_session.sh fixtures/repro/gpu_round_a.json fixtures/repro/gpu_round_b.json
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpu-session}; mkdir -p "$OUT"
export PYTHONPATH=/tmp/site:$PWD:${PYTHONPATH:-} PATH=/tmp/site/bin:$PATH
[ -x /tmp/site/bin/py-spy ] || python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 3
start=$(date +%s)
if [ "${IMAGENET:-1}" = 1 ]; then
  OUT="$OUT/imagenet" LOGS="$OUT/imagenet/logs" RUNS=3 DURATION=${IMAGENET_S:-6} bash tools/gpu_imagenet.sh
  echo "imagenet: $(( $(date +%s) - start )) s" >> "$OUT/timing.txt"
fi
for manifest in "$@"; do
  name=$(basename "$manifest" .json)
  OUT="$OUT/$name" LOGS="$OUT/$name/logs" MANIFEST="$manifest" DURATION=${ROUND_S:-6} bash tools/gpu_round.sh
  echo "$name: $(( $(date +%s) - start )) s" >> "$OUT/timing.txt"
done
python3 bench/native_stop.py --dumps ${DUMPS:-10} --target plain,torch,cuda --out "$OUT/native_stop.json" > "$OUT/native_stop.txt" 2>&1
echo "native_stop: $(( $(date +%s) - start )) s" >> "$OUT/timing.txt"
