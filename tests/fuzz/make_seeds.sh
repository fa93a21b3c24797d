#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# make_seeds.sh -- writes the fuzzer's seed corpus (tests/fuzz/corpus/) in
# the input layout that tests/fuzz/fuzz_gemm.c documents. Run it from
# anywhere after changing that layout; commit the result.
#
#   byte 0 routine   1 flags   2 act   3 value mode   4-7 sizes
#   8-10 ld padding  11 alpha  12 beta  13-16 spoiled argument(s)
#   then (operand, element, special) triples
set -euo pipefail
out="$(cd "$(dirname "$0")" && pwd)/corpus"
rm -rf "$out"
mkdir -p "$out"

# seed NAME BYTE... (decimal)
seed() {
    local name=$1
    shift
    local s=""
    for b in "$@"; do
        s+=$(printf '\\x%02x' "$b")
    done
    printf "$s" >"$out/$name"
}

# gemm: routine (0 s, 1 h, 2 b); flags = colmajor | transa<<1 | transb<<3
# | bias<<5 | nullhandle<<6 | bad<<7
n=0
for r in 0 1 2; do
    # nn.Linear: row-major, B transposed, bias, each activation
    for act in 0 1 2 3 4; do
        seed "gemm${r}_linear_act${act}" $r $((2 << 3 | 1 << 5)) $act $((act % 6)) \
            7 9 13 0 0 1 0 0 0
        n=$((n + 1))
    done
    # column-major, both transposed, padded leading dimensions, beta != 0
    seed "gemm${r}_colmajor_tt_beta" $r $((1 | 1 << 1 | 1 << 3 | 1 << 5)) 2 1 \
        11 5 17 0 3 2 1 3 3
    # the NULL handle, k = 0 (C = act(beta C + bias)), alpha NaN
    seed "gemm${r}_k0_alpha_nan" $r $((1 << 5 | 1 << 6)) 1 0 \
        6 6 0 0 1 1 1 8 3
    # alpha = 0 with a NaN in A: BLAS does not read A
    seed "gemm${r}_alpha0_nan_in_A" $r $((1 << 1)) 0 0 \
        4 5 6 0 0 0 0 1 0 0 0 0 0 0 3 0
    # specials placed in A, B and the bias: NaN, +Inf, -Inf, subnormal
    seed "gemm${r}_specials" $r $((1 << 5)) 1 3 \
        5 6 7 0 0 0 0 0 0 0 0 0 0 \
        0 2 0  1 3 1  2 1 2  3 4 5  0 9 6  1 7 7
    # extremes: subnormals and near-overflow values
    seed "gemm${r}_extremes" $r $((1 | 1 << 5)) 4 4 \
        9 8 11 1 1 1 0 0 0
done

# gemm, bad arguments: every position, one way each, and a pair (the
# lowest must be reported). Byte b spoils position 1 + b % 17 (0 picks one
# at random): pos + 16 names position pos.
for pos in 1 2 3 4 5 6 7 9 10 11 12 14 15 16 17; do
    seed "gemm0_bad_pos${pos}" 0 $((1 << 7 | 1 << 5)) 1 0 \
        5 6 7 0 0 0 0 0 0 $((pos + 16)) 1 0 0
done
seed "gemm1_bad_pair_ldc_then_m" 1 $((1 << 7)) 0 0 \
    5 6 7 0 0 0 0 0 0 14 $((0x80 | 2)) 4 0
seed "gemm2_bad_huge_m_quick_return" 2 $((1 << 7)) 0 0 \
    5 0 7 0 0 0 0 0 0 4 3 0 0
seed "gemm0_bad_ld_overflow" 0 $((1 << 7)) 0 0 \
    5 6 7 0 0 0 0 0 0 9 5 0 0

# mlp: routine 3; flags = dtype | bg<<2 | bu<<3 | bd<<4 | nullhandle<<6
# | bad<<7; sizes m k h n
for dt in 0 1 2; do
    for act in 0 1 2 3 4; do
        seed "mlp_dt${dt}_act${act}" 3 $((dt | 7 << 2)) $act $((act % 3)) \
            5 16 24 8 1 2 0 0 0
    done
    seed "mlp_dt${dt}_nobias_decode" 3 $dt 2 1 1 32 40 16 0 0 0 0 0
    seed "mlp_dt${dt}_h0" 3 $((dt | 1 << 4)) 2 1 4 8 0 8 0 0 0 0 0
    seed "mlp_dt${dt}_k0" 3 $((dt | 7 << 2)) 4 0 4 0 8 8 0 0 0 0 0
    seed "mlp_dt${dt}_specials" 3 $((dt | 7 << 2)) 1 5 \
        3 6 5 4 0 0 0 0 0 0 0 0 0 \
        0 1 0  1 2 1  3 3 2  5 4 7  7 5 9
done
for pos in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17; do
    seed "mlp_bad_pos${pos}" 3 $((1 << 7 | 7 << 2)) 2 0 \
        3 5 6 4 0 0 0 0 0 $((pos + 16)) 1 0 0
done
seed "mlp_bad_weight_overflow" 3 $((1 << 7)) 2 0 3 5 6 4 0 0 0 0 0 5 4 0 0

# Found by make fuzz (2026-11-22): a bf16 product below 2^-126 that the
# AVX512-BF16 kernel flushed to 0 (the kernel now declines such calls).
seed "bgemm_bf16_product_below_2m126" 2 1 0 1 13 48 1 13 7 73 0 0 0 0 248 127 \
    48 1 13 48 1 13 7 73 13 0 1 7 9 13 0 0 0

# Found by make fuzz, kept as they came.
# hgemm: alpha 2e30, an infinite result on the far side of the bound.
seed "hgemm_fp16_inf_either_sign" 1 33 0 137 59 33 64 1 0 5 6 7 0 0 0 0 0 1 0 \
    5 6 7 0 0 0 0 0 59 0 14 130 4 0
# the fp32 MLP with nothing to prefetch (no arithmetic on a NULL pointer).
seed "mlp_f32_kernel_null_prefetch" 3 3 5 2 38 4 156 2 0 3 5 2 4 0 0 0 0 0 0 0 \
    16 0 33 1 0 0 0 0 33 0 0 0
# bgemm, one row of B with ld INT64_MAX: the bf16 packer must not form
# offsets for rows that do not exist.
seed "gemm2_bad_ld_max_one_row" 2 165 165 165 165 165 97 165 4 4 4 4 4 96 6 0 \
    84 0 126 90 0 0 203 1 1 129 8 3

echo "make_seeds.sh: $(ls "$out" | wc -l) seeds in $out"
