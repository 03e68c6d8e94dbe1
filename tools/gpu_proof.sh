#!/usr/bin/env bash
# Run on the GPU machine (device tool): start each GPU workload, inspect it with
# stalldiag, and keep every JSON report under $OUT for fixtures/captures/.
#   bash tools/gpu_proof.sh [case ...]     (cases: matmul spin starved compile jax nccl)
set -u
cd "$(dirname "$0")/.."
export PYTHONPATH=$PWD:${PYTHONPATH:-} PATH=/tmp/site/bin:$PATH
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
OUT=${OUT:-/tmp/gpu-proof}; mkdir -p "$OUT"
DURATION=${DURATION:-6}

run_case() {  # name settle_s command...
  local name=$1 settle=$2; shift 2
  local log=$OUT/$name.log
  echo "=== $name: $*"
  (cd fixtures/workloads && exec setsid "$@") > "$log" 2>&1 &
  local pid=$!
  for _ in $(seq 1 240); do grep -q '^READY' "$log" && break; sleep 0.5; done
  grep -q '^READY' "$log" || { echo "$name: never ready"; tail -5 "$log"; kill -9 -- -$pid; return; }
  sleep "$settle"
  nvidia-smi --query-gpu=index,utilization.gpu,memory.used,clocks.sm,power.draw --format=csv,noheader
  python3 -m stalldiag inspect "$pid" --children --duration "$DURATION" -o "$OUT/$name.json" > "$OUT/$name.txt" 2>&1
  echo "rc=$?"; head -4 "$OUT/$name.txt"
  python3 - "$OUT/$name.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); g = r["capture"]["gpu"]
for dev in sorted({s[1] for s in g["samples"]}):
    util = [s[2] for s in g["samples"] if s[1] == dev]
    gpm = [s for s in g["gpm"] if s[1] == dev]
    print("gpu%d util mean %.0f%% max %d%%; GPM n=%d sm_util %s occ %s tensor %s; note=%s" % (
        dev, sum(util) / len(util), max(util), len(gpm),
        [x[2] for x in gpm][:6], [x[3] for x in gpm][:3], [x[4] for x in gpm][:3], g.get("gpm_note")))
print("procs", g["processes"], "util", {k: v[:2] for k, v in g["process_util"].items()})
PY
  kill -9 -- -$pid 2>/dev/null; sleep 1; pkill -9 -f fixtures/workloads 2>/dev/null
}

cases=${*:-matmul spin starved compile jax nccl}
for c in $cases; do
  case $c in
    matmul)  run_case gpu_matmul 2 python3 -u gpu_matmul.py ;;
    spin)    run_case gpu_spin_kernel 2 python3 -u gpu_spin_kernel.py ;;
    starved) run_case gpu_starved_dataloader 3 python3 -u gpu_starved_dataloader.py ;;
    compile) run_case gpu_compile_autotune 8 python3 -u gpu_compile_autotune.py ;;
    jax)     run_case jax_compile 2 python3 -u jax_compile.py ;;
    nccl)    run_case nccl_hang 3 python3 -m torch.distributed.run --nproc_per_node=2 --master_port=29555 nccl_hang.py ;;
  esac
done
ls -la "$OUT"
