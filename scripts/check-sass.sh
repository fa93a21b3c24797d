#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# check-sass.sh -- assert from the disassembly that the cuda-fused kernels
# run on the paths they claim: every 16-bit (bf16/fp16) fbf:: kernel uses
# tensor cores (HMMA or HGMMA in its SASS), and no fp32 fbf:: kernel does
# (fp32 means true fp32 unless the handle allows TF32).
#   scripts/check-sass.sh FILE|BUILD-DIR...
# FILE: the module .so, objects, or the selftest binary; a directory
# stands for the CUDA module built under it (lib/cuda/.libs/*.so).
# Needs cuobjdump (and nvdisasm) on PATH.
set -u
[ $# -ge 1 ] || { echo "usage: $0 FILE|BUILD-DIR..." >&2; exit 2; }
status=0
files=
for a in "$@"; do
    if [ -d "$a" ]; then
        found=$(find "$a" -path '*lib/cuda/.libs/fusedblas_cuda.so' 2>/dev/null | head -n 1)
        [ -n "$found" ] || { echo "check-sass: no lib/cuda/.libs/fusedblas_cuda.so under $a"; exit 1; }
        files="$files $found"
    else
        files="$files $a"
    fi
done
for f in $files; do
    if ! cuobjdump --dump-sass "$f" >/tmp/check-sass.$$ 2>&1; then
        echo "check-sass: cuobjdump failed on $f"; cat /tmp/check-sass.$$
        rm -f /tmp/check-sass.$$; exit 1
    fi
    # One line per fbf kernel and architecture: name, tensor-core count.
    awk '/Function :/ { name = $3; n[name] += 0 }
         /[^A-Z]H(G)?MMA/ { n[name]++ }
         END { for (k in n) print k, n[k] }' /tmp/check-sass.$$ |
        grep '^_ZN3fbf' | sort >/tmp/check-sass-k.$$
    rm -f /tmp/check-sass.$$
    if [ ! -s /tmp/check-sass-k.$$ ]; then
        echo "check-sass: no fbf kernels in $f"; status=1
    fi
    while read -r name count; do
        case $name in
        *13__nv_bfloat16*|*6__half*)
            if [ "$count" -gt 0 ]; then echo "ok   $count tensor-core instructions: $name"
            else echo "FAIL no HMMA/HGMMA in 16-bit kernel: $name"; status=1; fi ;;
        *kernelIf*|*_f32_kernel*)
            if [ "$count" -eq 0 ]; then echo "ok   fp32 on CUDA cores: $name"
            else echo "FAIL tensor cores in an fp32 kernel: $name"; status=1; fi ;;
        *) echo "info $count tensor-core instructions: $name" ;;
        esac
    done </tmp/check-sass-k.$$
    rm -f /tmp/check-sass-k.$$
done
exit $status
