#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# gpu-tp-check.sh -- tensor parallelism over NCCL on a machine with two
# GPUs, in a configured and built tree: the TP tests (one process per GPU,
# then one thread per GPU), the CPU-side checks, the benchmark rows
# (bench/tp_bench.c) and the PyTorch baseline, then a short table last.
# Within 8 minutes: each step gets what is left of that budget.
#
# Run from the build directory (or set FB_BUILD_DIR):
#
#     bash /path/to/src/scripts/gpu-tp-check.sh
#
# NCCL: FUSEDBLAS_NCCL_LIBRARY if set, else the system's libnccl.so.2
# (ldconfig, the usual directories), else PyTorch's (torch/lib, or the
# nvidia-nccl wheel's). NCCL_NVLS_ENABLE=0 keeps NVLink multicast off.
# Logs go to $OUT (or ./gpu-tp-out).
set -u
BUILD=${FB_BUILD_DIR:-$(pwd)}
SRC=$(cd "$(dirname "$0")/.." && pwd)
OUTDIR=${OUT:-$BUILD/gpu-tp-out}
BUDGET=${FB_TP_BUDGET:-470}
mkdir -p "$OUTDIR"
DEADLINE=$((SECONDS + BUDGET))
export NCCL_NVLS_ENABLE=0

say() { printf 'gpu-tp-check: %s\n' "$*"; }

# The time a step may take: its own cap, or what is left of the budget.
allow() {
  local left=$((DEADLINE - SECONDS - 5))
  if [ "$left" -lt "$1" ]; then echo $((left > 1 ? left : 1)); else echo "$1"; fi
}

find_nccl() {
  local f d
  if [ -n "${FUSEDBLAS_NCCL_LIBRARY:-}" ] && [ -f "$FUSEDBLAS_NCCL_LIBRARY" ]; then
    echo "$FUSEDBLAS_NCCL_LIBRARY"; return
  fi
  f=$(ldconfig -p 2>/dev/null | awk '/libnccl\.so\.2 /{print $NF; exit}')
  if [ -n "$f" ] && [ -f "$f" ]; then echo "$f"; return; fi
  for d in /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/local/cuda/lib64 \
           /usr/local/lib; do
    if [ -f "$d/libnccl.so.2" ]; then echo "$d/libnccl.so.2"; return; fi
  done
  for d in $(python3 -c "import torch, os; print(os.path.dirname(torch.__file__) + '/lib')" 2>/dev/null) \
           $(python3 -c "import nvidia.nccl as n; print(list(n.__path__)[0] + '/lib')" 2>/dev/null); do
    if [ -f "$d/libnccl.so.2" ]; then echo "$d/libnccl.so.2"; return; fi
  done
}

NCCL_LIB=$(find_nccl)
if [ -z "$NCCL_LIB" ]; then
  say "no libnccl.so.2 found (system or PyTorch): the TP tests will skip"
else
  FUSEDBLAS_NCCL_LIBRARY=$(readlink -f "$NCCL_LIB")
  export FUSEDBLAS_NCCL_LIBRARY
  say "NCCL: $FUSEDBLAS_NCCL_LIBRARY"
fi
export FUSEDBLAS_CUDA_MODULE="$BUILD/lib/cuda/.libs/fusedblas_cuda.so"
nvidia-smi -L 2>/dev/null | head -n 4

say "building the TP programs"
timeout "$(allow 150)" make -C "$BUILD" -j"$(nproc)" lib/cuda/fusedblas_cuda.la \
  tests/test_gpu_tp tests/test_tp_checks tests/libnccl.la bench/tp_bench \
  >"$OUTDIR/build.log" 2>&1
build_rc=$?
tail -n 3 "$OUTDIR/build.log"

# A TAP program's verdict: its summary line, or why there is none.
run_tap() { # name timeout command...
  local name=$1 cap=$2; shift 2
  say "running $name"
  (cd "$BUILD" && timeout "$(allow "$cap")" "$@") >"$OUTDIR/$name.log" 2>&1
  local rc=$?
  grep -E '^(not ok|Bail out!|1\.\.0)' "$OUTDIR/$name.log" | head -n 20
  local summary
  summary=$(grep -E '^# [0-9]+ test points' "$OUTDIR/$name.log" | tail -n 1)
  if grep -q '^1\.\.0' "$OUTDIR/$name.log"; then
    summary="SKIP: $(grep '^1\.\.0' "$OUTDIR/$name.log" | head -n 1)"
  elif [ "$rc" = 124 ]; then
    summary="TIMED OUT (step limit); ${summary:-no summary}"
  fi
  printf '%-24s rc=%-3s %s\n' "$name" "$rc" "${summary:-no summary}" >>"$OUTDIR/table.txt"
}

: >"$OUTDIR/table.txt"
printf '%-24s rc=%-3s %s\n' "build" "$build_rc" "(make of the TP programs)" >>"$OUTDIR/table.txt"
run_tap test_gpu_tp-processes 150 ./tests/test_gpu_tp processes
run_tap test_gpu_tp-threads 150 ./tests/test_gpu_tp threads
run_tap test_tp_checks 60 ./tests/test_tp_checks

# The man page's EXAMPLES program, linked with this NCCL and the CUDA
# runtime (make check compiles it without them, where it runs nothing).
run_example() {
  local src=$OUTDIR/mlp_geglu_forward_tp-example.c exe=$OUTDIR/tp-example
  awk '/^\.SH / { in_ex = ($2 == "EXAMPLES") }
       in_ex && /^\.EX/ { blk = ""; on = 1; next }
       on && /^\.EE/ { on = 0; if (blk ~ /main\(/ && !done) { printf "%s", blk; done = 1 }; next }
       on { blk = blk $0 "\n" }' "$SRC/man/man3/mlp_geglu_forward_tp.3" |
    sed -e 's/\\-/-/g; s/\\&//g; s/\\(aq/'"'"'/g; s/\\(dq/"/g' \
        -e 's/\\(ha/^/g; s/\\(ti/~/g; s/\\e/\\/g' >"$src"
  local cuda_ld nccl_dir
  cuda_ld=$(sed -n 's/^CUDA_LDFLAGS = //p' "$BUILD/Makefile")
  nccl_dir=$(dirname "${FUSEDBLAS_NCCL_LIBRARY:-/nonexistent/x}")
  local rpath=$BUILD/.libs:$nccl_dir
  for f in $cuda_ld; do case $f in -L*) rpath=$rpath:${f#-L} ;; esac; done
  if ! ${CC:-cc} -std=c11 -O1 -I"$SRC/include" -o "$exe" "$src" \
       -L"$BUILD/.libs" -lfusedblas -Wl,--no-as-needed \
       "${FUSEDBLAS_NCCL_LIBRARY:-}" $cuda_ld \
       -lcudart -lm -lpthread -Wl,-rpath,"$rpath" >"$OUTDIR/example.log" 2>&1; then
    printf '%-24s rc=%-3s %s\n' "man-example" "-" "does not build (example.log)" >>"$OUTDIR/table.txt"
    return
  fi
  local mode rc
  for mode in threads processes; do
    timeout "$(allow 60)" "$exe" "$mode" >>"$OUTDIR/example.log" 2>&1
    rc=$?
    printf '%-24s rc=%-3s %s\n' "man-example-$mode" "$rc" \
      "$(tail -n 1 "$OUTDIR/example.log")" >>"$OUTDIR/table.txt"
  done
}
if [ -n "${FUSEDBLAS_NCCL_LIBRARY:-}" ]; then
  say "running the EXAMPLES program of mlp_geglu_forward_tp(3)"
  run_example
fi

say "running bench/tp_bench"
(cd "$BUILD" && timeout "$(allow 150)" ./bench/tp_bench) >"$OUTDIR/tp_bench.log" 2>&1
bench_rc=$?
cat "$OUTDIR/tp_bench.log"

torch_rc=skipped
if python3 -c "import torch; assert torch.cuda.device_count() >= 2" 2>/dev/null; then
  say "running the PyTorch baseline"
  timeout "$(allow 120)" python3 "$SRC/bench/tp_torch_baseline.py" \
    >"$OUTDIR/torch_baseline.log" 2>&1
  torch_rc=$?
  tail -n 4 "$OUTDIR/torch_baseline.log"
fi

echo
echo "==== gpu-tp-check summary ($(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1), ${SECONDS}s) ===="
echo "NCCL: ${FUSEDBLAS_NCCL_LIBRARY:-none}"
cat "$OUTDIR/table.txt"
printf '%-24s rc=%s\n' "tp_bench" "$bench_rc"
grep '^tp_bench:' "$OUTDIR/tp_bench.log"
printf '%-24s rc=%s\n' "torch_baseline" "$torch_rc"
grep '^torch_baseline:' "$OUTDIR/torch_baseline.log" 2>/dev/null
exit 0
