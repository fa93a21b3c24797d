#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# cpu_bf16_off.sh -- tests/test_cpu_bf16 with the AVX512-BF16 kernel
# switched off: every bf16 call must take the fp32 panels and still pass,
# as on a CPU without AVX512-BF16.
FUSEDBLAS_CPU_NO_BF16=1
export FUSEDBLAS_CPU_NO_BF16
exec "${top_builddir:-.}/tests/test_cpu_bf16" "$@"
