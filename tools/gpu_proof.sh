#!/usr/bin/env bash
# Run on the GPU machine (device tool): start each GPU workload, bring it to its
# stall (SIGSTOP / cgroup freezer of one rank where the case says), inspect it
# with stalldiag, and keep every JSON report under $OUT for fixtures/captures/.
#   bash tools/gpu_proof.sh [case ...]
#   cases: ddp_stopped allgather_frozen straggler straggler_uneven launch launch_autograd output_h2d
#          gpu_neighbour memory_held memory_held_cpu_first silent cgroup_v2 (issue 26: neighbours, limits, PCIe)
#          (older: matmul spin starved compile jax nccl)
# $OUT gets only <case>.json and summary.txt (the device tool brings back 8 files at most);
# workload logs and text reports stay in $LOGS.
set -u
cd "$(dirname "$0")/.."
export PYTHONPATH=/tmp/site:$PWD:${PYTHONPATH:-} PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
# NVLink multicast must stay off on the shared hosts (device/KINDS.md).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
OUT=${OUT:-/tmp/gpu-proof}; LOGS=${LOGS:-/tmp/gpu-proof-logs}; mkdir -p "$OUT" "$LOGS"
DURATION=${DURATION:-6}
if [ -d .whl ] && ! [ -x /tmp/site/bin/py-spy ]; then   # wheels carried from the dev machine
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 3
fi
FREEZER=""   # the cgroup a frozen rank was moved into, thawed before the kill

freeze() {  # pid: cgroup freezer (v2, else v1), else SIGSTOP; prints what was done
  local pid=$1 cg
  if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
    cg=/sys/fs/cgroup/stalldiag-freeze
    if mkdir -p $cg 2>/dev/null && echo "$pid" > $cg/cgroup.procs 2>/dev/null && echo 1 > $cg/cgroup.freeze 2>/dev/null; then
      FREEZER=$cg; sleep 0.5; echo "froze $pid: cgroup v2 $cg events: $(tr '\n' ' ' < $cg/cgroup.events)"; return
    fi
  elif [ -d /sys/fs/cgroup/freezer ]; then
    cg=/sys/fs/cgroup/freezer/stalldiag-freeze
    if mkdir -p $cg 2>/dev/null && echo "$pid" > $cg/cgroup.procs 2>/dev/null && echo FROZEN > $cg/freezer.state 2>/dev/null; then
      FREEZER=$cg; sleep 0.5; echo "froze $pid: cgroup v1 $cg state $(cat $cg/freezer.state)"; return
    fi
  fi
  echo "no usable cgroup freezer: SIGSTOP $pid instead"; kill -STOP "$pid"
}

thaw() {
  [ -n "$FREEZER" ] || return 0
  if [ -f "$FREEZER/cgroup.freeze" ]; then echo 0 > "$FREEZER/cgroup.freeze"; else echo THAWED > "$FREEZER/freezer.state"; fi
}

run_case() {  # name nready action command...   (action: none | stop1 | freeze1)
  local name=$1 nready=$2 action=$3; shift 3
  local log=$LOGS/$name.log
  echo "=== $name: $*"
  (cd fixtures/workloads && exec setsid "$@") > "$log" 2>&1 &
  local pid=$!
  for _ in $(seq 1 240); do [ "$(grep -c '^READY' "$log")" -ge "$nready" ] && break; sleep 0.5; done
  local ranks; ranks=$(awk '/^RANK /{print $3}' "$log"); local rank1; rank1=$(awk '/^RANK 1 /{print $3}' "$log")
  if [ "$(grep -c '^READY' "$log")" -lt "$nready" ]; then
    echo "$name: never ready"; tail -15 "$log"; kill -9 -- -$pid $ranks 2>/dev/null; return
  fi
  echo "launcher $pid; $(grep '^RANK' "$log" | tr '\n' ' ')"
  sleep 3
  case $action in
    stop1)   kill -STOP "$rank1"; echo "SIGSTOP rank 1 pid $rank1"; sleep 2 ;;
    freeze1) freeze "$rank1"; sleep 2 ;;
  esac
  nvidia-smi --query-gpu=index,utilization.gpu,memory.used,clocks.sm,power.draw --format=csv,noheader
  python3 -m stalldiag inspect "$pid" --children --duration "$DURATION" -o "$OUT/$name.json" > "$LOGS/$name.txt" 2>&1
  echo "rc=$?"; head -3 "$LOGS/$name.txt"
  [ -f "$OUT/$name.json" ] && python3 - "$OUT/$name.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); c = r["capture"]; g = c["gpu"]
for dev in sorted({s[1] for s in g.get("samples", [])}):
    util = [s[2] for s in g["samples"] if s[1] == dev]
    gpm = [s for s in g.get("gpm", []) if s[1] == dev]
    mean = lambda xs: sum(xs) / len(xs) if xs else float("nan")
    print("  gpu%d util %.0f%% SM %.1f%% tensor %.1f%% (GPM n=%d)" % (
        dev, mean(util), mean([x[2] for x in gpm if x[2] is not None]), mean([x[4] for x in gpm if x[4] is not None]), len(gpm)))
for p in c["processes"]:
    rank = (p.get("env") or {}).get("RANK")
    top = sorted(p["threads"], key=lambda t: -(t.get("cpu_seconds") or 0))[:3]
    for t in top:
        states = {}
        for s in t.get("samples", []):
            states[s[1]] = states.get(s[1], 0) + 1
        print("  pid %d rank %s %-16s cpu %.2fs states %s ctx %s sched %s" % (
            p["pid"], rank, t["name"][:16], t.get("cpu_seconds") or 0, states, t.get("ctx"), t.get("sched")))
v = r["verdict"]
print("  VERDICT %s pid %s tid %s: %s" % (v["category"], v.get("pid"), v.get("tid"), v["summary"]))
PY
  # never leave a rank stopped or frozen: thaw and continue before the kill
  thaw; [ -n "$rank1" ] && kill -CONT "$rank1" 2>/dev/null
  kill -9 -- -$pid 2>/dev/null; kill -9 $ranks 2>/dev/null; sleep 2
  [ -n "$FREEZER" ] && rmdir "$FREEZER" 2>/dev/null; FREEZER=""
}

neighbour() {  # script: start a process outside the inspected job (its own session), wait for READY
  local log=$LOGS/neighbour-$1.log
  (cd fixtures/workloads && exec setsid python3 -u "$1") > "$log" 2>&1 &
  for _ in $(seq 1 120); do grep -q '^READY' "$log" && break; sleep 0.5; done
  NEIGHBOUR=$(awk '/^READY/{print $2; exit}' "$log"); echo "neighbour $1: pid $NEIGHBOUR"
}

cgroup_v2_files() {  # a cgroup v2 with limits, its files saved for the readers' tests (one tar)
  [ -f /sys/fs/cgroup/cgroup.controllers ] || { echo "not a cgroup v2 host"; return; }
  local cg=/sys/fs/cgroup/stalldiag.slice dev; dev=$(awk '$2==0 && $1!~/^(7|11)$/ {print $1":"$2; exit}' /proc/partitions)
  mkdir -p $cg && echo "+cpu +cpuset +memory +io" > /sys/fs/cgroup/cgroup.subtree_control
  echo 268435456 > $cg/memory.max; mkdir -p $cg/job; echo "+cpu +cpuset +memory +io" > $cg/cgroup.subtree_control
  echo "50000 100000" > $cg/job/cpu.max; echo 0 > $cg/job/cpuset.cpus; echo "$dev rbps=4000000" > $cg/job/io.max
  sleep 300 & local sleeper=$!; echo $sleeper > $cg/job/cgroup.procs
  local dir=/tmp/cgroup_v2; mkdir -p $dir/sys_fs_cgroup/stalldiag.slice/job
  cp /proc/$sleeper/cgroup $dir/proc_cgroup; grep cgroup /proc/self/mountinfo > $dir/mountinfo
  for f in memory.max memory.current memory.stat cpu.max; do cp $cg/$f $dir/sys_fs_cgroup/stalldiag.slice/ 2>/dev/null; done
  for f in memory.max memory.current memory.stat cpu.max cpu.stat cpuset.cpus.effective io.max; do
    cp $cg/job/$f $dir/sys_fs_cgroup/stalldiag.slice/job/ 2>/dev/null; done
  uname -r > $dir/kernel; tar -C /tmp -czf "$OUT/cgroup_v2.tgz" cgroup_v2; echo "saved v2 files of $cg/job"
  kill $sleeper; sleep 0.2; rmdir $cg/job $cg 2>/dev/null
}

torchrun() { echo python3 -m torch.distributed.run --nproc_per_node=2 --master_port="$1"; }
cases=${*:-ddp_stopped allgather_frozen straggler straggler_uneven launch launch_autograd}
for c in $cases; do
  case $c in
    ddp_stopped)      run_case gpu_ddp_stopped_rank 2 stop1 $(torchrun 29561) gpu_ddp_stopped_rank.py ;;
    allgather_frozen) run_case gpu_allgather_stopped 2 freeze1 $(torchrun 29562) gpu_allgather_stopped.py ;;
    straggler)        run_case gpu_straggler 2 none $(torchrun 29563) gpu_straggler.py ;;
    straggler_uneven) run_case gpu_straggler_uneven_batches 2 none $(torchrun 29564) gpu_straggler_uneven_batches.py ;;
    launch)           run_case gpu_launch_bound 1 none python3 -u gpu_launch_bound.py ;;
    launch_autograd)  run_case gpu_launch_bound_autograd 1 none python3 -u gpu_launch_bound_autograd.py ;;
    gpu_neighbour)    neighbour gpu_matmul_neighbour.py; run_case gpu_shared_with_neighbour 1 none python3 -u gpu_matmul_steps.py
                      kill -9 "$NEIGHBOUR" 2>/dev/null ;;
    memory_held)      neighbour gpu_memory_holder.py; run_case gpu_memory_held_outside 1 none python3 -u gpu_memory_wait_retry.py
                      kill -9 "$NEIGHBOUR" 2>/dev/null ;;
    memory_held_cpu_first)  neighbour gpu_memory_holder.py
                      run_case gpu_memory_held_cpu_first 1 none python3 -u gpu_memory_wait_retry.py cpu-first
                      kill -9 "$NEIGHBOUR" 2>/dev/null ;;
    silent)           run_case gpu_healthy_silent 1 none python3 -u gpu_matmul_steps.py --silent ;;
    cgroup_v2)        cgroup_v2_files ;;
    output_h2d)       run_case gpu_output_advances_h2d 1 none python3 -u gpu_output_advances_h2d.py ;;
    matmul)  run_case gpu_matmul 1 none python3 -u gpu_matmul.py ;;
    spin)    run_case gpu_spin_kernel 1 none python3 -u gpu_spin_kernel.py ;;
    starved) run_case gpu_starved_dataloader 1 none python3 -u gpu_starved_dataloader.py ;;
    compile) run_case gpu_compile_autotune 1 none python3 -u gpu_compile_autotune.py ;;
    jax)     run_case jax_compile 1 none python3 -u jax_compile.py ;;
    nccl)    run_case nccl_hang 1 none $(torchrun 29555) nccl_hang.py ;;
  esac
done
ls -la "$OUT"
