#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# gpu-session.sh -- everything one GPU-machine call does, in order, each
# step under its own time limit, with one short table printed last.
#
#   bash scripts/gpu-session.sh [STEPS...]
#
# Steps (default: build check fused bench): build (configure and make from
# .carry/fusedblas-*.tar.gz), check (make check, every GPU test executed),
# sanitize (the GPU tests under compute-sanitizer), fused (the fused
# kernels' selftest and timings), bench (bench/gpu-bench.sh), sass (tensor
# core instructions in the 16-bit kernels), drawn (torch_compare.py
# --drawn: 24 shapes drawn at random, seed $FB_DRAWN_SEED or the hour;
# the library and module by absolute paths, as the library requires of a
# module). The device tool brings back at most 8 files from $OUT, so every
# step writes under $WORK and the logs come back as one tarball,
# $OUT/gpu-session.tar.gz.
set -u
steps=${*:-build check fused bench}
ROOT=$(pwd)
FINAL_OUT=${OUT:-$ROOT/gpu-session-out}
WORK=/tmp/fb-session
mkdir -p "$WORK" "$FINAL_OUT"
export FB_GPU_WORK=$WORK/check
summary=$WORK/summary.txt
: >"$summary"
t_start=$(date +%s)

step() { # name limit command...
  local name=$1 limit=$2; shift 2
  local t0=$(date +%s)
  echo "=== $name (limit ${limit}s)"
  mkdir -p "$WORK/$name"
  OUT=$WORK/$name timeout "$limit" "$@" >"$WORK/$name/console.log" 2>&1
  local rc=$?
  tail -n 25 "$WORK/$name/console.log"
  printf '%-9s rc=%-3s %4ss  %s\n' "$name" "$rc" "$(( $(date +%s) - t0 ))" \
    "$(tail -n 1 "$WORK/$name/console.log" | cut -c1-90)" >>"$summary"
}

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
for s in $steps; do
  case $s in
    build)    step build 300 bash scripts/gpu-check.sh build ;;
    check)    step check 420 bash scripts/gpu-check.sh check ;;
    sanitize) step sanitize 420 bash scripts/gpu-check.sh sanitize memcheck racecheck ;;
    fused)    step fused 200 sh scripts/fused-selftest.sh --no-sanitize ;;
    fusedsan) step fusedsan 300 sh scripts/fused-selftest.sh --quick ;;
    bench)    step bench 280 sh bench/gpu-bench.sh "$WORK/check/build" ;;
    sass)     step sass 60 bash scripts/check-sass.sh "$WORK/check/build" ;;
    drawn)    step drawn 240 sh -c 'b=$1; python3 bench/torch_compare.py \
                --drawn "${FB_DRAWN_SEED:-$(date +%Y%m%d%H)}" --count 24 \
                --budget 0 --lib "$b/.libs/libfusedblas.so" \
                --module "$b/lib/cuda/.libs/fusedblas_cuda.so"' sh \
                "$WORK/check/build" ;;
    *) echo "unknown step $s" ;;
  esac
done
bash scripts/gpu-check.sh summary >"$WORK/check-summary.txt" 2>&1
tar -czf "$FINAL_OUT/gpu-session.tar.gz" -C "$WORK" . 2>/dev/null
echo
echo "=== gpu-check summary"; tail -n 20 "$WORK/check-summary.txt"
echo "=== steps ($(( $(date +%s) - t_start ))s in all)"; cat "$summary"
