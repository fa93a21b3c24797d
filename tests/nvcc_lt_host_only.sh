#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# nvcc_lt_host_only.sh -- lib/cuda/nvcc-lt.sh compiles a CUDA source
# without device passes exactly when neither it nor a header it includes
# from the project holds device code; everything else keeps nvcc's device
# compile. Prints TAP.
#
# A host-only object has no .nv_fatbin section; a device compile always
# has one (an empty device program too). The sources are made up here, in
# a project directory of their own: host code calling the CUDA runtime; a
# __device__ variable (which a host compiler takes without a word); a
# kernel in a plain .h header; a .cuh include; the header case again with
# the project directory spelled relatively, as an in-tree build spells it;
# and the host source without --project-dir.
#
# Environment: top_srcdir and top_builddir (from the Makefile's
# AM_TESTS_ENVIRONMENT); man/build-env.sh in the build tree.

top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
env_file=$top_builddir/man/build-env.sh
if test ! -r "$env_file"; then
    echo "1..0 # SKIP $env_file missing: run this through make check"
    exit 0
fi
. "$env_file"
if test -z "$FB_NVCC"; then
    echo "1..0 # SKIP built without CUDA (no nvcc)"
    exit 0
fi
if ! command -v readelf >/dev/null 2>&1; then
    echo "1..0 # SKIP readelf not installed"
    exit 0
fi
script=$FB_ABS_SRCDIR/lib/cuda/nvcc-lt.sh

tmp=$(mktemp -d "${TMPDIR:-/tmp}/fb-nvcc-lt.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM
proj=$tmp/proj
mkdir "$proj" "$tmp/obj"

n=0
failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; }
diag() { sed 's/^/# /'; }

cat >"$proj/plain.h" <<'EOF'
int plain_count(void);
EOF
cat >"$proj/host.cu" <<'EOF'
#include <cuda_runtime.h>
#include "plain.h"
int plain_count(void)
{
    int n = 0;
    return cudaGetDeviceCount(&n) == cudaSuccess ? n : -1;
}
EOF
cat >"$proj/devvar.cu" <<'EOF'
#include <cuda_runtime.h>
__device__ int device_counter;
int devvar_host(void) { return 1; }
EOF
cat >"$proj/kernel.h" <<'EOF'
template <typename T> __global__ void zero_kernel(T *p) { p[threadIdx.x] = 0; }
EOF
cat >"$proj/viaheader.cu" <<'EOF'
#include <cuda_runtime.h>
#include "kernel.h"
int launch_zero(float *p)
{
    void *args[] = {&p};
    return (int)cudaLaunchKernel((const void *)&zero_kernel<float>, dim3(1),
                                 dim3(32), args, 0, 0);
}
EOF
cat >"$proj/thing.cuh" <<'EOF'
static inline int thing(void) { return 2; }
EOF
cat >"$proj/viacuh.cu" <<'EOF'
#include "thing.cuh"
int via_cuh(void) { return thing(); }
EOF

# Flags kept small (one target) so the device compiles stay short; the
# decision does not depend on them.
flags="-std=c++17 -gencode arch=compute_80,code=sm_80 -I$proj"

# compile NAME.cu [nvcc-lt.sh options]: 0 if it compiled to a .lo whose
# object exists; the log in $tmp/NAME.log.
compile() {
    name=$1
    shift
    sh "$script" "$@" "$tmp/obj/$name.lo" "$proj/$name.cu" \
        "$FB_NVCC" $flags >"$tmp/$name.log" 2>&1 &&
        test -f "$tmp/obj/.libs/$name.o" &&
        grep -q "^pic_object='.libs/$name.o'" "$tmp/obj/$name.lo"
}
has_fatbin() {
    readelf -S "$tmp/obj/.libs/$1.o" | grep -q '\.nv_fatbin'
}

echo "1..6"

# 1. Host code: no device passes, no fatbinary.
if compile host --project-dir "$proj" && ! has_fatbin host; then
    ok "host code (CUDA runtime calls, a plain header) is compiled without device passes"
else
    not_ok "host code (CUDA runtime calls, a plain header) is compiled without device passes"
    diag <"$tmp/host.log"
fi

# 2.-4. Device code in the source, in a .h header, behind a .cuh include.
for item in "devvar:a __device__ variable in the source" \
            "viaheader:a kernel in an included project .h header" \
            "viacuh:a .cuh include"; do
    name=${item%%:*}
    what=${item#*:}
    if compile "$name" --project-dir "$proj" && has_fatbin "$name"; then
        ok "$what: device compile"
    else
        not_ok "$what: device compile"
        diag <"$tmp/$name.log"
    fi
done

# 5. The project directory spelled relatively (an in-tree build's "."):
# the header's kernel is still found.
rm -rf "$tmp/obj"
mkdir "$tmp/obj"
if (cd "$tmp" && sh "$script" --project-dir ./proj/../proj obj/viaheader.lo \
        proj/viaheader.cu "$FB_NVCC" $flags) >"$tmp/rel.log" 2>&1 &&
    has_fatbin viaheader; then
    ok "a relative --project-dir finds the header's kernel: device compile"
else
    not_ok "a relative --project-dir finds the header's kernel: device compile"
    diag <"$tmp/rel.log"
fi

# 6. Without --project-dir nothing is decided: the full compile.
if compile host && has_fatbin host; then
    ok "without --project-dir: device compile"
else
    not_ok "without --project-dir: device compile"
    diag <"$tmp/host.log"
fi

test "$failed" -eq 0
