#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# cpu_amx_off.sh -- tests/test_cpu_bf16 with the AMX kernel switched off:
# every bf16 call the kernels take must run on AVX512-BF16's and still
# pass, as on a CPU with AVX512-BF16 and no AMX.
FUSEDBLAS_CPU_NO_AMX=1
export FUSEDBLAS_CPU_NO_AMX
exec "${top_builddir:-.}/tests/test_cpu_bf16" "$@"
