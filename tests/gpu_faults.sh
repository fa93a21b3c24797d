#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# gpu_faults.sh -- runs tests/test_gpu_faults (TAP) for make check, so that
# its log can be ordered after the other GPU tests' (tests/fuzz/Makefile.inc).
exec "${top_builddir:-.}/tests/test_gpu_faults" "$@"
