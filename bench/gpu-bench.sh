#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# gpu-bench.sh -- the benchmark's GPU run, inside an already-built tree.
#
#   bench/gpu-bench.sh [BUILD_DIR]        (default: the current directory)
#
# Runs fusedblas-bench on the GPU paths (cuda-lt, cuda-fused, cuda; the
# eager and GEMM-only baselines come with them), then torch_compare.py
# (PyTorch eager and torch.compile) when PyTorch is importable. Writes into
# $OUT (default BUILD_DIR/gpu-bench-out): gpu-table.txt (and .md), gpu.csv,
# gpu-ceilings.csv, plots/*.png, torch-table.txt, torch.csv, and the
# progress logs; prints a short table last. About 4 minutes on an H100/H200;
# each step has its own time limit so that one hung step cannot eat the rest.
# Exit status: non-zero if a step failed or a result disagreed.

set -u
build=$(cd "${1:-.}" && pwd) || exit 2
src=$(cd "$(dirname "$0")/.." && pwd) || exit 2
OUT=${OUT:-$build/gpu-bench-out}
mkdir -p "$OUT/plots" || exit 2

bench=$build/bench/fusedblas-bench
lib=$build/.libs/libfusedblas.so
FUSEDBLAS_CUDA_MODULE=${FUSEDBLAS_CUDA_MODULE:-$build/lib/cuda/.libs/fusedblas_cuda.so}
export FUSEDBLAS_CUDA_MODULE
if test ! -x "$bench"; then
  echo "gpu-bench.sh: $bench not built (run make check or make bench first)" >&2
  exit 2
fi
if test ! -f "$FUSEDBLAS_CUDA_MODULE"; then
  echo "gpu-bench.sh: no CUDA module at $FUSEDBLAS_CUDA_MODULE" >&2
  exit 2
fi

{
  date -u '+%Y-%m-%d %H:%M UTC'
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm \
    --format=csv,noheader 2>/dev/null || echo "nvidia-smi: unavailable"
  uptime
} >"$OUT/machine.txt"
cat "$OUT/machine.txt"

status=0

# 1. fusedblas-bench, GPU paths and their baselines (at most ~2.5 minutes:
#    cases not started within --budget are listed as not run).
echo "== fusedblas-bench --backend gpu (progress: $OUT/gpu-progress.txt)"
timeout 160 "$bench" --backend gpu --budget 110 --csv "$OUT/gpu.csv" --md "$OUT/gpu-table.md" \
  --plot-dir "$OUT/plots" \
  >"$OUT/gpu-table.txt" 2>"$OUT/gpu-progress.txt"
rc=$?
if test $rc -ne 0; then
  echo "fusedblas-bench exited with $rc (124: timed out); tail of its progress:"
  tail -n 15 "$OUT/gpu-progress.txt"
  status=1
fi

# 2. PyTorch eager and torch.compile, same workloads (at most 1.5 minutes;
#    torch.compile only while within --budget).
if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' \
    2>/dev/null; then
  echo "== torch_compare.py (progress: $OUT/torch-progress.txt)"
  timeout 90 python3 "$src/bench/torch_compare.py" --lib "$lib" \
    --module "$FUSEDBLAS_CUDA_MODULE" --csv "$OUT/torch.csv" --budget 50 \
    >"$OUT/torch-table.txt" 2>"$OUT/torch-progress.txt"
  rc=$?
  if test $rc -ne 0; then
    echo "torch_compare.py exited with $rc (124: timed out); tail of its progress:"
    tail -n 15 "$OUT/torch-progress.txt"
    status=1
  fi
else
  echo "== no PyTorch with CUDA here: torch_compare.py skipped" | tee "$OUT/torch-table.txt"
fi

# 3. The short table: headline cases from the C benchmark (times in us;
#    x = speedup over cuBLAS + eager kernels), then PyTorch's table.
echo
echo "== GPU headline (full table: $OUT/gpu-table.txt)"
grep -A1 '^GPU' "$OUT/gpu-table.txt" | head -n 2
if test -f "$OUT/gpu.csv"; then
  # CSV fields 1-28 hold no commas (path and note come last, quoted).
  awk -F, '
    NR == 1 || $1 != "gpu" { next }
    {
      key = $2 " " $4 " " ($3 == "gemm" ? $7 "," $8 "," $10 : $7 "," $8 "," $9 "," $10)
      if (!(key in seen)) { seen[key] = 1; order[++n] = key }
      t[key, $11] = ($13 == "ok") ? sprintf("%.1f", $16 * 1e6) : $13
      if ($28 == "BAD") bad[key] = 1
    }
    END {
      fmt = "%-34s %10s %10s %10s %11s %10s %7s %s\n"
      printf fmt, "workload dtype shape", "eager", "gemm-only", "cuda-lt", "cuda-fused", "cuda", "x best", ""
      for (i = 1; i <= n; i++) {
        k = order[i]
        if (k !~ /^(seed-mlp bf16|seed-linear bf16|decode-mlp bf16 (1|16),|decode-mlp f32 16,|decode-gemm bf16 16,|decode-mlp-768 bf16 16,|tiny-mlp bf16 65536,64,256,64|prefill-mlp bf16 8192,)/)
          continue
        e = t[k, "cublas+eager"]; best = ""
        split("fusedblas/cuda-lt fusedblas/cuda-fused fusedblas/cuda", ours, " ")
        for (j = 1; j <= 3; j++) {
          v = t[k, ours[j]]
          if (v ~ /^[0-9.]+$/ && (best == "" || v + 0 < best + 0)) best = v
        }
        x = (best != "" && e ~ /^[0-9.]+$/) ? sprintf("%.2f", e / best) : "-"
        printf fmt, k, e, t[k, "cublas-gemm-only"], t[k, "fusedblas/cuda-lt"],
               t[k, "fusedblas/cuda-fused"], t[k, "fusedblas/cuda"], x, (k in bad) ? "BAD" : ""
      }
    }' "$OUT/gpu.csv"
fi
echo
echo "== PyTorch comparison ($OUT/torch-table.txt)"
cat "$OUT/torch-table.txt"
exit $status
