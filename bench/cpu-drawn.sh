#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# cpu-drawn.sh -- the CPU backend against oneDNN on shapes drawn at
# random: row counts from 1 to 1023, the widths of many model families,
# gemm + bias + act and gated MLPs in fp32 and bf16 (fp16 now and then),
# each call capped at about 3e10 flops so that a 2-core machine takes
# seconds a shape. A fresh set each seed, so that no rule is fitted to it
# (torch_compare.py --drawn does the same on the GPU).
#
#   bench/cpu-drawn.sh BENCH [SEED] [COUNT]
#
# BENCH is a built bench/fusedblas-bench; SEED defaults to the hour,
# COUNT to 20. Prints one line a shape: fusedblas/cpu and oneDNN medians
# (ms), their ratio (> 1: fusedblas faster) and the path that ran; shapes
# where oneDNN is faster are marked.
set -u
bench=${1:?usage: cpu-drawn.sh BENCH [SEED] [COUNT]}
seed=${2:-$(date +%Y%m%d%H)}
count=${3:-20}
RANDOM=$seed

rows=(1 2 3 5 9 13 20 31 37 50 65 97 130 200 257 384 500 640 1023)
widths=("896 4864" "1024 2816" "1280 5120" "1536 8960" "1600 6400"
        "2048 5632" "2048 8192" "2304 9216" "2560 6912" "2880 7680"
        "3072 8192" "3200 8640" "4096 11008" "4096 14336" "768 3072"
        "64 256" "128 512" "256 1024" "512 2048" "320 1280")
acts=(gelu_tanh silu gelu_erf relu none)

pick() { # NAME ARRAY...: a random element
    local -n arr=$1
    echo "${arr[RANDOM % ${#arr[@]}]}"
}

printf '%-5s %-5s %-22s %-10s %10s %10s %7s  %s\n' routine dtype shape act \
    "cpu ms" "oneDNN ms" "x" "path"
n=0
tries=0
while [ "$n" -lt "$count" ] && [ "$tries" -lt $((count * 20)) ]; do
    tries=$((tries + 1))
    m=$(pick rows)
    read -r k h <<<"$(pick widths)"
    r=$((RANDOM % 10))
    dtype=$([ "$r" -lt 5 ] && echo f32 || { [ "$r" -lt 9 ] && echo bf16 || echo f16; })
    act=$(pick acts)
    if [ $((RANDOM % 2)) -eq 0 ]; then
        routine=gemm
        if [ $((RANDOM % 3)) -eq 0 ]; then shape="$m,$h,$k"; else shape="$m,$k,$h"; fi
        flops=$((2 * m * k * h))
    else
        routine=mlp
        [ "$act" = none ] && act=silu
        [ "$act" = relu ] && act=gelu_tanh
        shape="$m,$k,$h,$k"
        flops=$((6 * m * k * h))
    fi
    [ "$flops" -gt 30000000000 ] && continue
    n=$((n + 1))
    out=$("$bench" --backend cpu --dtype "$dtype" --routine "$routine" \
        --shape "$shape" --act "$act" --reps 10 --no-check 2>/dev/null |
        grep -E '^cpu ')
    ours=$(awk '$5 == "fusedblas/cpu" { v = $6; if ($7 == "us") v /= 1000; print v }' <<<"$out")
    dnn=$(awk '$5 == "onednn" { v = $6; if ($7 == "us") v /= 1000; print v }' <<<"$out")
    path=$(awk '$5 == "fusedblas/cpu" { print $NF }' <<<"$out")
    ratio=$(awk -v a="${ours:-0}" -v b="${dnn:-0}" \
        'BEGIN { if (a > 0 && b > 0) printf "%.2f", b / a; else print "-" }')
    mark=$(awk -v x="$ratio" 'BEGIN { if (x != "-" && x + 0 < 1) print " <" }')
    printf '%-5s %-5s %-22s %-10s %10s %10s %7s  %s%s\n' "$routine" "$dtype" \
        "$shape" "$act" "${ours:--}" "${dnn:--}" "$ratio" "$path" "$mark"
done
