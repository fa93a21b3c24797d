#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# .ci/reliability.sh -- sanitizer, valgrind, ThreadSanitizer and fuzz runs.
#
# Called by .ci/run after the README's `make check`; runs standalone too:
#   bash .ci/reliability.sh            (from anywhere; builds out of tree)
#   bash .ci/reliability.sh asan tsan  (only those stages: valgrind, fuzz,
#                                       asan, tsan; the default is all)
# Environment: FB_RELIABILITY_DIR (the build directories; default a fresh
# temporary one), FUZZ_SECONDS (default 60), JOBS (default nproc).
#
# Four builds of the CPU library, each out of tree and --without-cuda (the
# GPU suite gets compute-sanitizer on the GPU machine; here there is no
# device, and skipping nvcc keeps this well inside CI's time):
#   1. plain: every test program under valgrind (memcheck, leak check);
#      then `make fuzz`, the libFuzzer harness, for FUZZ_SECONDS.
#   2. --enable-sanitizers (gcc, ASan + UBSan): the whole `make check`.
#   3. ThreadSanitizer (clang): test_threads and test_handle_churn.
# Every stage stops the script on its first error; a summary of the counts
# is printed at the end.
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
jobs=${JOBS:-$(nproc)}
fuzz_seconds=${FUZZ_SECONDS:-60}
work=${FB_RELIABILITY_DIR:-$(mktemp -d /tmp/fb-reliability.XXXXXX)}
mkdir -p "$work"
start=$(date +%s)
summary=()
stages=${*:-valgrind fuzz asan tsan}
want() { case " $stages " in *" $1 "*) return 0 ;; esac; return 1; }

stage() { echo "reliability: $* ($(( $(date +%s) - start ))s)"; }
note() { summary+=("$*"); }

# The same test programs as `make check` runs, TAP counts from their logs.
tap_totals() { # DIR -> "P passed, F failed, S skipped, T todo" over every .log
    awk '/^ok /{ if (/# SKIP/) s++; else p++ }
         /^not ok /{ if (/# TODO/) t++; else f++ }
         END { printf "%d passed, %d failed, %d skipped, %d known defects (TODO)", p, f, s, t }' \
        $(find "$1/tests" -name '*.log' ! -name 'test-suite.log')
}

if [ -f "$src/config.status" ]; then
    # Configured in place (.ci/run's README command leaves it so), which
    # makes Autoconf refuse any out-of-tree configure of it: build from a
    # copy of the files git knows (tracked, and untracked but not ignored),
    # bootstrapped anew.
    copy=$work/src
    rm -rf "$copy"
    mkdir -p "$copy"
    (cd "$src" && { git ls-files -z; git ls-files -z --others --exclude-standard; } |
        tar --null -T - -cf -) | (cd "$copy" && tar -xf -)
    (cd "$copy" && ./bootstrap >"$work/bootstrap.log" 2>&1) \
        || { cat "$work/bootstrap.log"; exit 1; }
    src=$copy
elif [ ! -x "$src/configure" ]; then
    (cd "$src" && ./bootstrap)
fi

configure() { # DIR ARGS... : a fresh out-of-tree configure
    local dir=$1
    shift
    rm -rf "$dir"
    mkdir -p "$dir"
    (cd "$dir" && "$src/configure" -q --without-cuda "$@")
}

# ---- 1. plain build: valgrind over every test program, then the fuzzer ----
plain=$work/plain
if want valgrind || want fuzz; then
    stage "plain build"
    configure "$plain" --enable-werror
    make -C "$plain" -s -j"$jobs" all >/dev/null
    make -C "$plain" -s -j"$jobs" check TESTS= >/dev/null # build, run nothing
fi

# The fuzzer's build is one clang command over every library source (about
# seven minutes of one core): it runs in the background, beside valgrind,
# and the fuzz stage waits for it. Its own process group, so that an early
# exit stops the compiler too.
fuzz_build=
stop_fuzz_build() {
    if [ -n "$fuzz_build" ]; then
        kill -- -"$fuzz_build" 2>/dev/null || true
    fi
}
trap stop_fuzz_build EXIT
if want fuzz; then
    stage "fuzz harness build (in the background)"
    setsid -w make -C "$plain" tests/fuzz/fuzz_gemm >"$work/fuzz-build.log" 2>&1 &
    fuzz_build=$!
fi

# valgrind: memcheck errors and leaks fail the program (and so the run).
# "Possibly lost" blocks do not: the one valgrind finds (320 bytes) is the
# thread-local-storage vector (DTV) that glibc's pthread_create allocates
# for each thread of libgomp's pool, threads that are still alive, parked,
# at exit (only a pointer into the block's middle remains visible to
# valgrind). A leak of ours would be "definitely" or "indirectly" lost,
# which do fail. No suppression file is used.
if want valgrind; then
stage "valgrind: every test program"
valgrind_cmd="$plain/libtool --mode=execute valgrind -q --error-exitcode=1 \
--leak-check=full --errors-for-leak-kinds=definite,indirect \
--show-leak-kinds=definite,indirect --num-callers=30"
# OMP_NUM_THREADS=2: the OpenMP paths run with a team, as on a user's
# machine; valgrind serialises the threads anyway, so the programs run
# side by side (-j), one core each.
# FB_TEST_MAX_WORK: test_rounding's sampled cases capped at 2^20
# multiply-adds (n narrowed; its reported shapes and every dtype, layout,
# transpose, padding and offset stay): its full sweep, 2^26 a case, is by
# far the slowest program under valgrind. The uncapped sweep runs in the
# README's make check, in distcheck and in the ASan + UBSan make check
# below.
FB_TEST_MAX_WORK=1048576 OMP_NUM_THREADS=2 \
make -C "$plain" -s -j"$jobs" check LOG_COMPILER="$valgrind_cmd" \
    >"$work/valgrind.log" 2>&1 \
    || { tail -80 "$plain/tests/test-suite.log" 2>/dev/null; exit 1; }
note "valgrind (memcheck + leak check): $(tap_totals "$plain") TAP points"
fi

if want fuzz; then
stage "fuzz: waiting for the harness build"
build_status=0
wait "$fuzz_build" || build_status=$?
fuzz_build=
if [ "$build_status" -ne 0 ]; then
    tail -60 "$work/fuzz-build.log"
    echo "reliability: the fuzz harness did not build"
    exit 1
fi
stage "fuzz: $fuzz_seconds s"
fuzz_log=$work/fuzz.log
if ! make -C "$plain" fuzz FUZZ_SECONDS="$fuzz_seconds" >"$fuzz_log" 2>&1; then
    tail -60 "$fuzz_log"
    echo "reliability: the fuzzer failed; the input is in $plain/tests/fuzz/artifacts/"
    exit 1
fi
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$fuzz_log")
secs=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$fuzz_log")
note "fuzz: ${execs:-?} executions in ${secs:-?} s ($(ls "$src/tests/fuzz/corpus" | wc -l) seeds)"
grep '^fuzz_gemm:' "$fuzz_log" | sed 's/^/  /' || true
fi

# ---- 2. ASan + UBSan over the whole make check ------------------------------
# gcc's ASan with libgomp and OpenBLAS (neither instrumented) reports
# nothing of theirs: no suppressions. halt_on_error: the first report ends
# the program with a failure.
asan=$work/asan
if want asan; then
stage "ASan + UBSan build, make check"
configure "$asan" --enable-sanitizers --enable-werror CC=gcc
ASAN_OPTIONS=halt_on_error=1:detect_leaks=1:abort_on_error=0 \
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    make -C "$asan" -s -j"$jobs" check >"$work/asan.log" 2>&1 \
    || { tail -80 "$asan/tests/test-suite.log" 2>/dev/null; exit 1; }
note "ASan + UBSan make check: $(tap_totals "$asan") TAP points"
fi

# ---- 3. ThreadSanitizer ----------------------------------------------------
# clang, as the brief asks, built the way the fuzzer is (tests/fuzz/): the
# library's three OpenMP queries answered serially by
# tests/fuzz/serial_omp/omp.h (--disable-openmp), the CPU feature test by
# tests/fuzz/clang_cpu_supports.h. Serial OpenMP is the point, not a
# shortcut: TSan cannot see libgomp's barriers (libgomp is not
# instrumented), so OpenMP teams would report false races; this is the
# same as OMP_NUM_THREADS=1 (set too, for OpenBLAS's own OpenMP). The races
# TSan judges are then exactly those between test_threads' 8 pthreads (own
# handles, NULL handles, handles made and destroyed around every call) and
# between test_handle_churn's threads. .ci/tsan.supp lists the races let
# pass, each with its reason. (gcc's TSan cannot be used here: the
# library's target_clones ifunc resolvers run, instrumented, before the
# TSan runtime starts, and the program dies in the dynamic loader.)
if want tsan; then
stage "ThreadSanitizer build (clang), test_threads and test_handle_churn"
tsan=$work/tsan
configure "$tsan" --disable-openmp CC=clang \
    CFLAGS="-g -O1 -fsanitize=thread -isystem $src/tests/fuzz/serial_omp \
-include $src/tests/fuzz/clang_cpu_supports.h" LDFLAGS="-fsanitize=thread"
make -C "$tsan" -s -j"$jobs" libfusedblas.la tests/test_threads \
    tests/test_handle_churn >"$work/tsan-build.log" 2>&1 \
    || { tail -40 "$work/tsan-build.log"; exit 1; }
for t in test_threads test_handle_churn; do
    OMP_NUM_THREADS=1 \
    TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=$src/.ci/tsan.supp \
        "$tsan/libtool" --mode=execute "$tsan/tests/$t" >"$work/tsan-$t.log" 2>&1 \
        || { tail -80 "$work/tsan-$t.log"; exit 1; }
    if grep -q '^not ok' "$work/tsan-$t.log"; then
        cat "$work/tsan-$t.log"
        exit 1
    fi
    note "TSan $t: $(grep -c '^ok' "$work/tsan-$t.log") TAP points passed, no race reported"
done
fi

# ---- summary ------------------------------------------------------------------
bad=$(grep -h -o '[0-9]* bad-argument cases' "$asan"/tests/test_badargs.log 2>/dev/null | head -1 || true)
[ -n "$bad" ] && note "bad input: $bad (test_badargs)"
stage "done"
printf 'reliability: %s\n' "${summary[@]}"
echo "reliability: passed in $(( $(date +%s) - start ))s (builds in $work)"
