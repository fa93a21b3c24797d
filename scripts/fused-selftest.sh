#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# fused-selftest.sh -- build and run the cuda-fused selftest
# (tests/fused_selftest.cu) on a GPU machine: correctness of every fused
# kernel against a float64 reference, compute-sanitizer (memcheck,
# racecheck) on the small shapes, the SASS check, then the benchmark
# tables (fused vs cuBLAS + elementwise kernels, and PyTorch eager when
# python3 has torch). Run from the repository root.
#   scripts/fused-selftest.sh [--quick] [--no-sanitize] [--no-torch]
#                             [--sanitize-only]
# Logs (six files) go to $OUT, or ./fused-selftest-out; objects and the
# binary to $FUSED_BUILD (default /tmp/fused-selftest-build), since only a
# few files come back from the GPU machine. $FUSED_NVCCFLAGS goes to every
# nvcc (A/B builds of a variant under a macro). Order: build, SASS check,
# PyTorch eager (not with --quick; bounded by 70 s), the selftest (its
# benchmark table is the last thing it prints), then the sanitizers (slow,
# each bounded by $SANITIZE_TIMEOUT seconds, default 100).
# Budget: about 3 minutes with --no-sanitize, 5 with --quick (sanitizers
# on, no torch, fewer cases) -- what scripts/gpu-session.sh allows.
set -u
quick=; sanitize=1; torch=1; run=1
for a in "$@"; do
    case $a in
    --quick) quick=--quick ;;
    --no-sanitize) sanitize= ;;
    --no-torch) torch= ;;
    --sanitize-only) run=; torch= ;;  # build, SASS, the sanitizers
    *) echo "usage: $0 [--quick] [--no-sanitize] [--no-torch] [--sanitize-only]" >&2; exit 2 ;;
    esac
done
out=${OUT:-fused-selftest-out}
build=${FUSED_BUILD:-/tmp/fused-selftest-build}
mkdir -p "$out" "$build"
bin=$build/fused_selftest
# every fused kernel and the shape rule; not the e4m3 prefill driver,
# which calls into the module (staging, cuBLASLt) and is tested through
# the library (tests/test_fp8); the selftest stubs it out so that the e4m3
# MLP driver runs its register kernels
srcs=$(ls lib/cuda/fused/*.cu | grep -v -e fused_fp8_prefill.cu)
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv 2>&1 | tee "$out/gpu.txt"
echo "== build (nvcc $(nvcc --version | sed -n 's/.*release \([0-9.]*\).*/\1/p'))"
# One nvcc per file, in parallel (the tiny kernels alone are 48
# instantiations); -lineinfo: compute-sanitizer then names source lines.
objs=; pids=
: >"$out/build.log"
for f in tests/fused_selftest.cu $srcs; do
    o=$build/$(basename "$f" .cu).o
    objs="$objs $o"
    nvcc -std=c++17 -O3 -lineinfo -gencode arch=compute_90a,code=sm_90a \
        -Xptxas -v -DFB_HAVE_SM90A=1 -DFBF_SANDBOX ${FUSED_NVCCFLAGS:-} \
        -Iinclude -Ilib/common -Ilib/cuda \
        -c "$f" -o "$o" \
        >"$o.log" 2>&1 &
    pids="$pids $!"
done
ok=1
for p in $pids; do wait "$p" || ok=; done
cat "$build"/*.o.log >>"$out/build.log"
if [ -z "$ok" ] || ! nvcc -gencode arch=compute_90a,code=sm_90a -o "$bin" \
        $objs -lcublas >>"$out/build.log" 2>&1; then
    grep -v "^ptxas info" "$out/build.log" | head -n 60; echo "BUILD FAILED"; exit 1
fi
grep -E "spill|stack frame" "$out/build.log" | sort | uniq -c | sed 's/^/  /'
status=0
echo "== SASS"
sh scripts/check-sass.sh "$bin" || status=1
[ -n "$quick" ] && torch=
if [ -n "$torch" ] && python3 -c 'import torch' 2>/dev/null; then
    echo "== PyTorch eager on the same GPU (median of CUDA-event timings)"
    timeout 70 python3 - $quick >"$out/torch.log" 2>&1 <<'PY'
import sys, torch
import torch.nn.functional as F
quick = '--quick' in sys.argv
dev = 'cuda'
L2 = torch.cuda.get_device_properties(0).L2_cache_size
def med(fn, sets, iters=60, warm=5):
    for i in range(warm): fn(i % sets)
    torch.cuda.synchronize()
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(iters)]
    for i, (a, b) in enumerate(ev):
        a.record(); fn(i % sets); b.record()
    torch.cuda.synchronize()
    t = sorted(a.elapsed_time(b) * 1e3 for a, b in ev)
    return t[len(t) // 2]
def nsets(wbytes):
    return min(32, 3 * L2 // wbytes + 1)
def mlp(dt, m, k, h, n, bias, act='tanh'):
    actf = F.silu if act == 'silu' else (lambda z: F.gelu(z, approximate=act))
    es = torch.tensor([], dtype=dt).element_size()
    S = nsets((2 * h * k + n * h + m * (k + n)) * es)
    W = [dict(x=torch.randn(m, k, device=dev, dtype=dt),
              wg=torch.randn(h, k, device=dev, dtype=dt) / k**.5,
              wu=torch.randn(h, k, device=dev, dtype=dt) / k**.5,
              wd=torch.randn(n, h, device=dev, dtype=dt) / h**.5,
              bg=torch.randn(h, device=dev, dtype=dt) if bias else None,
              bu=torch.randn(h, device=dev, dtype=dt) if bias else None,
              bd=torch.randn(n, device=dev, dtype=dt) if bias else None) for _ in range(S)]
    def fn(i):
        w = W[i]
        g = actf(F.linear(w['x'], w['wg'], w['bg']))
        return F.linear(g * F.linear(w['x'], w['wu'], w['bu']), w['wd'], w['bd'])
    us = med(fn, S)
    print(f"torch eager mlp {str(dt)[6:]} m={m} {k}->{h}->{n}{' bias' if bias else ''}: {us:.1f} us")
def linear(dt, m, k, n, act='tanh'):
    es = torch.tensor([], dtype=dt).element_size()
    S = nsets((n * k + m * (k + n)) * es)
    W = [(torch.randn(m, k, device=dev, dtype=dt), torch.randn(n, k, device=dev, dtype=dt) / k**.5,
          torch.randn(n, device=dev, dtype=dt)) for _ in range(S)]
    f = (lambda i: F.gelu(F.linear(*W[i]), approximate=act)) if act else (lambda i: F.linear(*W[i]))
    us = med(f, S)
    print(f"torch eager linear{'+gelu_' + act if act else ''} {str(dt)[6:]} {m} x {k}->{n} bias: {us:.1f} us")
torch.backends.cuda.matmul.allow_tf32 = False
for m in ([16] if quick else [1, 4, 16, 32]):
    mlp(torch.bfloat16, m, 4096, 11008, 4096, False)
if not quick:
    mlp(torch.float16, 16, 4096, 11008, 4096, False)
    mlp(torch.float32, 16, 4096, 11008, 4096, False)
mlp(torch.bfloat16, 16, 768, 3072, 768, True)
mlp(torch.bfloat16, 65536, 64, 256, 64, False)
if not quick:
    mlp(torch.bfloat16, 1 << 20, 64, 256, 64, False)
    mlp(torch.float16, 65536, 128, 128, 128, True, 'silu')
    mlp(torch.float32, 65536, 64, 256, 64, False)
linear(torch.bfloat16, 16, 4096, 11008)
linear(torch.bfloat16, 1024, 32, 64, None)
if not quick:
    linear(torch.bfloat16, 65536, 128, 128)
PY
fi
[ -s "$out/torch.log" ] && cat "$out/torch.log"
if [ -n "$run" ]; then
    echo "== selftest"
    "$bin" $quick >"$out/selftest.log" 2>&1
    grep -v -e '^PASS' -e '^bench ' "$out/selftest.log"
    grep -q '^FAIL' "$out/selftest.log" && status=1
    grep -q ' 0 failed$' "$out/selftest.log" || status=1
fi
if [ -n "$sanitize" ]; then
    for tool in memcheck racecheck; do
        echo "== compute-sanitizer --tool $tool (small shapes)"
        timeout "${SANITIZE_TIMEOUT:-100}" compute-sanitizer --tool $tool \
            --error-exitcode 9 "$bin" --small >"$out/sanitize-$tool.log" 2>&1
        rc=$?
        if [ $rc = 0 ]; then
            tail -n 1 "$out/sanitize-$tool.log"
        elif [ $rc = 124 ]; then
            grep -c '^PASS' "$out/sanitize-$tool.log" | sed 's/$/ checks passed before the time limit/'
            grep -E '^(FAIL|=========)' "$out/sanitize-$tool.log" | head -n 20
            echo "sanitizer $tool: timed out (raise SANITIZE_TIMEOUT)"
        else
            tail -n 30 "$out/sanitize-$tool.log"; echo "SANITIZER $tool FAILED"
            status=1
        fi
    done
fi
echo "fused-selftest: $( [ $status = 0 ] && echo OK || echo FAILED )"
exit $status
