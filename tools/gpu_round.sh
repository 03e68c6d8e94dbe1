#!/usr/bin/env bash
# Run on the GPU machine (device tool): a blind GPU round's reproductions (a manifest of rows,
# each printing READY once its stall or slowdown is steady), each inspected with --children by
# tools/run_repros.py.  $OUT gets round.tar.gz (every JSON report and stdout) and results.txt.
#   MANIFEST=fixtures/repro/gpu_round_a.json bash tools/gpu_round.sh
set -u
cd "$(dirname "$0")/.."
export PYTHONPATH=/tmp/site:$PWD:${PYTHONPATH:-} PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/gpu-round}; LOGS=${LOGS:-/tmp/gpu-round-logs}; mkdir -p "$OUT" "$LOGS"
if [ -d .whl ] && ! [ -x /tmp/site/bin/py-spy ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 3
fi
nvidia-smi --query-gpu=name --format=csv,noheader | head -1 > "$OUT/results.txt"
python3 tools/run_repros.py --manifest "${MANIFEST:?}" --duration "${DURATION:-8}" --out "$LOGS" >> "$OUT/results.txt" 2>&1
tar -czf "$OUT/round.tar.gz" -C "$LOGS" .
