#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# gpu-profile.sh -- Nsight Compute on the fused kernels, one launch each,
# through fusedblas-bench on the library's own cuda-fused path.
#
#   bash scripts/gpu-profile.sh BUILD_DIR [NAME:ROUTINE:DTYPE:SHAPE ...]
#
# Default cases: the tiny MLP (64 -> 256 -> 64, m = 65536, bf16) and the
# decode MLP (m = 1 and 16, 4096 -> 11008 -> 4096, bf16). For each, ncu
# (clocks left alone, as METHOD.md asks) profiles the fourth launch of the
# fused kernel and writes its sections to $OUT/ncu-NAME.txt; the lines that
# say where the time goes (duration, throughputs, issue, stalls) are
# printed last.
set -u
build=$(cd "${1:?usage: gpu-profile.sh BUILD_DIR [cases]}" && pwd) || exit 2
shift
OUT=${OUT:-$build/gpu-profile-out}
mkdir -p "$OUT"
export FUSEDBLAS_CUDA_MODULE=$build/lib/cuda/.libs/fusedblas_cuda.so
bench=$build/bench/fusedblas-bench
cases=${*:-tiny:mlp:bf16:65536,64,256,64 decode1:mlp:bf16:1,4096,11008,4096 decode16:mlp:bf16:16,4096,11008,4096}
sections="--section SpeedOfLight --section ComputeWorkloadAnalysis \
 --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats \
 --section SchedulerStats --section WarpStateStats --section InstructionStats"
# NCU_FULL=1: every section, the stall reasons by source line included
# (slower: about a minute a case).
[ "${NCU_FULL:-0}" = 1 ] && sections="--set full --import-source yes"
# NCU_STALLS=1: the stall reasons per issued instruction and the busy
# fraction of each pipe, as plain metrics (printed in full below).
[ "${NCU_STALLS:-0}" = 1 ] && sections="$sections --metrics \
regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,\
regex:sm__pipe_.*_cycles_active\.avg\.pct_of_peak_sustained_active,\
regex:sm__inst_executed_pipe_.*\.avg\.pct_of_peak_sustained_active"
for c in $cases; do
  IFS=: read -r name routine dtype shape <<<"$c"
  echo "== $name ($routine $dtype $shape)"
  # shellcheck disable=SC2086
  timeout 120 ncu --clock-control none -k regex:'(tiny|decode)_(mlp|gemm)(_f32)?_kernel' \
    --launch-skip 3 --launch-count 1 $sections \
    "$bench" --backend cuda-fused --routine "$routine" --dtype "$dtype" \
    --shape "$shape" --reps 5 --no-check >"$OUT/ncu-$name.txt" 2>&1
  echo "   rc $?"
  grep -E 'tiny|decode|Duration|Compute \(SM\) Throughput|Memory Throughput|DRAM Throughput|Issue Slots Busy|Executed Ipc Active|Achieved Occupancy|Registers Per|No Eligible|One or More Eligible|Warp Cycles Per Issued|Stall|L1/TEX Hit|L2 Hit' \
    "$OUT/ncu-$name.txt" | head -40
  if [ "${NCU_STALLS:-0}" = 1 ]; then
    grep -E 'stalled|pipe_' "$OUT/ncu-$name.txt" |
      awk '$NF+0 >= 0.5 {print}' | sort -k3 -g -r | head -40
  fi
done
