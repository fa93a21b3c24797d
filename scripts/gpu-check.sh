#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# gpu-check.sh -- build fusedblas from its dist tarball on a GPU machine,
# run `make check`, then run the GPU test programs under compute-sanitizer
# (memcheck, racecheck, initcheck), and print a short summary last.
#
# Run from the repository root on the GPU machine:
#
#     bash scripts/gpu-check.sh            # everything, in order
#     bash scripts/gpu-check.sh build      # only unpack, configure, make
#     bash scripts/gpu-check.sh check      # make check (after build)
#     bash scripts/gpu-check.sh sanitize [memcheck racecheck initcheck]
#     bash scripts/gpu-check.sh summary    # the table, from earlier phases
#
# Phases keep their state in $FB_GPU_WORK, so a machine that stays up
# between commands can run them one command at a time (each under a time
# limit). Every invocation copies the logs to $OUT (or ./gpu-check-out) and
# prints the summary of everything run so far.
#
# Input: the newest .carry/fusedblas-*.tar.gz (`make dist` output). The
# machine needs no network and no libtool (the tarball carries its own).
#
# Environment (all optional):
#   FB_GPU_WORK           work directory        (/tmp/fb-gpu-check)
#   FB_CUDA_ARCH          --with-cuda-arch list (the GPU's own, else 90)
#   FB_GPU_PROGRAMS       GPU test programs, relative to the build dir
#                         (default: every tests/test_gpu* program built)
#   FB_SANITIZER_TIMEOUT  seconds per sanitizer run (240)
#   FB_SANITIZER_ENV      environment of the sanitizer runs
#                         (FB_TEST_QUICK=1: test_gpu's sweeps without the
#                         large shapes, which would take hours under them)
#   FB_CONFIGURE_FLAGS    more configure arguments
#   JOBS                  make -j (the number of cores)
set -u
umask 022

ROOT=$(pwd)
WORK=${FB_GPU_WORK:-/tmp/fb-gpu-check}
OUTDIR=${OUT:-$ROOT/gpu-check-out}
LOGS=$WORK/logs
STATE=$WORK/state
BUILD=$WORK/build
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 8)}
PROGRAMS=${FB_GPU_PROGRAMS:-}
SAN_TIMEOUT=${FB_SANITIZER_TIMEOUT:-240}
SAN_ENV=${FB_SANITIZER_ENV-FB_TEST_QUICK=1}

mkdir -p "$LOGS" "$STATE" "$OUTDIR"

say() { printf '%s\n' "gpu-check: $*"; }
record() { printf '%s\n' "$2" >"$STATE/$1"; }
recall() { cat "$STATE/$1" 2>/dev/null || printf '%s\n' "${2:--}"; }

# ---- environment: CUDA, OpenBLAS ---------------------------------------

find_cuda() {
  local nvcc
  nvcc=$(command -v nvcc 2>/dev/null || true)
  if [ -z "$nvcc" ]; then
    for d in /usr/local/cuda/bin /usr/local/cuda-*/bin /opt/cuda/bin; do
      if [ -x "$d/nvcc" ]; then nvcc=$d/nvcc; break; fi
    done
  fi
  [ -n "$nvcc" ] || return 1
  CUDA_HOME=$(dirname "$(dirname "$nvcc")")
  export PATH="$CUDA_HOME/bin:$PATH"
  # The module needs libcudart and libcublasLt at dlopen time.
  if ! ldconfig -p 2>/dev/null | grep -q 'libcublasLt\.so'; then
    for d in lib64 lib targets/x86_64-linux/lib targets/sbsa-linux/lib; do
      if [ -e "$CUDA_HOME/$d/libcublasLt.so" ]; then
        export LD_LIBRARY_PATH="$CUDA_HOME/$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
        break
      fi
    done
  fi
  return 0
}

# Sets OPENBLAS_HOW, and OPENBLAS_CFLAGS / OPENBLAS_LIBS (exported, which
# configure's PKG_CHECK_MODULES takes instead of asking pkg-config) when
# pkg-config cannot find OpenBLAS by itself.
find_openblas() {
  if pkg-config --exists openblas 2>/dev/null; then
    OPENBLAS_HOW="pkg-config openblas $(pkg-config --modversion openblas)"
    return 0
  fi
  local pc
  pc=$(find /usr /opt -name 'openblas.pc' 2>/dev/null | head -n 1)
  if [ -n "$pc" ]; then
    PKG_CONFIG_PATH="$(dirname "$pc")${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
    export PKG_CONFIG_PATH
    OPENBLAS_HOW="pkg-config openblas via $pc"
    return 0
  fi
  local prefixes="/usr /usr/local /opt/OpenBLAS /opt/openblas /opt/conda"
  local py
  py=$(python3 -c 'import sys; print(sys.prefix)' 2>/dev/null || true)
  [ -n "$py" ] && prefixes="$prefixes $py"
  local libdir="" lib="" incdir=""
  for p in $prefixes; do
    for d in "$p"/lib/x86_64-linux-gnu/openblas-openmp \
             "$p"/lib/x86_64-linux-gnu/openblas-pthread \
             "$p"/lib/x86_64-linux-gnu "$p"/lib64 "$p"/lib \
             "$p"/lib/aarch64-linux-gnu/openblas-openmp \
             "$p"/lib/aarch64-linux-gnu/openblas-pthread; do
      for f in libopenblas.so libopenblasp.so libopenblaso.so \
               libopenblas.so.0; do
        if [ -e "$d/$f" ]; then libdir=$d; lib=$f; break 3; fi
      done
    done
  done
  for p in $prefixes; do
    for d in "$p"/include/x86_64-linux-gnu/openblas-openmp \
             "$p"/include/x86_64-linux-gnu/openblas-pthread \
             "$p"/include/openblas "$p"/include \
             "$p"/include/aarch64-linux-gnu/openblas-openmp \
             "$p"/include/aarch64-linux-gnu/openblas-pthread; do
      if [ -e "$d/cblas.h" ]; then incdir=$d; break 2; fi
    done
  done
  if [ -z "$libdir" ] || [ -z "$incdir" ]; then
    OPENBLAS_HOW="not found (library: ${libdir:-none}, cblas.h: ${incdir:-none})"
    return 1
  fi
  export OPENBLAS_CFLAGS="-I$incdir"
  case $lib in
    *.so) OPENBLAS_LIBS="-L$libdir -l$(basename "$lib" .so | sed 's/^lib//')" ;;
    *) OPENBLAS_LIBS="$libdir/$lib" ;;  # runtime package only
  esac
  export OPENBLAS_LIBS
  export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  OPENBLAS_HOW="by hand: OPENBLAS_CFLAGS='$OPENBLAS_CFLAGS' OPENBLAS_LIBS='$OPENBLAS_LIBS'"
  return 0
}

gpu_arch() {
  if [ -n "${FB_CUDA_ARCH:-}" ]; then echo "$FB_CUDA_ARCH"; return; fi
  local cc
  cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null |
       head -n 1 | tr -d ' .')
  case $cc in
    [0-9][0-9]|[0-9][0-9][0-9]) echo "$cc" ;;
    *) echo 90 ;;
  esac
}

setup_env() {
  find_cuda || say "nvcc not found on PATH or in /usr/local/cuda*/bin"
  find_openblas || true
  say "OpenBLAS: $OPENBLAS_HOW"
}

# ---- phases -------------------------------------------------------------

phase_build() {
  rm -rf "${WORK:?}/src" "${BUILD:?}" "${STATE:?}"/*
  mkdir -p "$WORK/src" "$BUILD"
  local tarball
  tarball=$(ls -t "$ROOT"/.carry/fusedblas-*.tar.gz 2>/dev/null | head -n 1)
  if [ -z "$tarball" ]; then
    record configure "FAIL (no .carry/fusedblas-*.tar.gz)"
    say "no .carry/fusedblas-*.tar.gz under $ROOT"
    return 1
  fi
  record tarball "$(basename "$tarball")"
  tar -xzf "$tarball" -C "$WORK/src" || { record configure "FAIL (untar)"; return 1; }
  local src
  src=$(ls -d "$WORK"/src/fusedblas-*/ | head -n 1)
  record srcdir "$src"

  local arch
  arch=$(gpu_arch)
  say "configuring in $BUILD (CUDA archs: $arch)"
  # shellcheck disable=SC2086
  (cd "$BUILD" && "$src/configure" --with-cuda --with-cuda-arch="$arch" \
      ${FB_CONFIGURE_FLAGS:-}) >"$LOGS/configure.log" 2>&1
  local rc=$?
  if [ $rc -ne 0 ]; then
    record configure "FAIL (exit $rc)"
    say "configure failed; the end of config.log:"
    tail -n 60 "$BUILD/config.log" 2>/dev/null
    echo "----- configure output, last lines -----"
    tail -n 30 "$LOGS/configure.log"
    cat "$BUILD/config.log" >>"$LOGS/configure.log" 2>/dev/null
    return 1
  fi
  local cuda blas
  cuda=$(sed -n 's/^ *CUDA  *//p' "$LOGS/configure.log" | head -n 1)
  blas=$(sed -n 's/^ *BLAS  *//p' "$LOGS/configure.log" | head -n 1)
  record configure "ok (CUDA: ${cuda:-?}; BLAS: ${blas:-?}; archs $arch)"

  say "building with -j$JOBS"
  (cd "$BUILD" && make -j"$JOBS") >"$LOGS/build.log" 2>&1
  rc=$?
  local warnings
  warnings=$(grep -c 'warning' "$LOGS/build.log")
  if [ $rc -ne 0 ]; then
    record build "FAIL (exit $rc, $warnings warning lines)"
    say "make failed; last lines:"
    tail -n 40 "$LOGS/build.log"
    return 1
  fi
  if [ ! -e "$BUILD/lib/cuda/.libs/fusedblas_cuda.so" ]; then
    record build "FAIL (no lib/cuda/.libs/fusedblas_cuda.so: CUDA not configured?)"
    return 1
  fi
  record build "ok ($warnings warning lines)"
  return 0
}

# automake's "# PASS: n" lines, as "PASS n FAIL n ...".
check_counts() {
  awk '/^# (TOTAL|PASS|SKIP|XFAIL|FAIL|XPASS|ERROR):/ && !seen[$2]++ {
         gsub(":", "", $2); printf "%s %s  ", $2, $3 }' "$1"
}

phase_check() {
  [ -d "$BUILD" ] || { record check "not run (no build)"; return 1; }
  say "make check"
  (cd "$BUILD" && make -j"$JOBS" check) >"$LOGS/check.log" 2>&1
  local rc=$?
  # Each test's own log, for the failures.
  if [ -f "$BUILD/test-suite.log" ]; then
    echo "===== test-suite.log =====" >>"$LOGS/check.log"
    cat "$BUILD/test-suite.log" >>"$LOGS/check.log"
  fi
  # Programs that skipped entirely (1..0 # SKIP): a GPU one defeats the
  # purpose of this run; the others are listed for information.
  local skipped_whole="" skipped_other="" t name
  for t in "$BUILD"/tests/*.log; do
    [ -e "$t" ] || continue
    grep -q '^1\.\.0 *# *SKIP' "$t" || continue
    name=$(basename "$t" .log)
    case $name in
      test_gpu*) skipped_whole="$skipped_whole $name" ;;
      *) skipped_other="$skipped_other $name" ;;
    esac
  done
  local counts
  counts=$(check_counts "$LOGS/check.log")
  if [ $rc -ne 0 ]; then
    record check "FAIL (exit $rc) ${counts}"
  else
    record check "ok ${counts}"
  fi
  record check_skipped_whole "${skipped_whole:- none}"
  record check_skipped_other "${skipped_other:- none}"
  return $rc
}

# Run one program (a libtool wrapper in the build tree) under a tool
# ("plain" for none) and record its TAP counts and sanitizer errors.
run_program() {
  local prog=$1 tool=$2
  local log="$LOGS/$tool.log"
  local key
  local order
  case $tool in plain) order=0 ;; memcheck) order=1 ;; racecheck) order=2 ;;
    initcheck) order=3 ;; *) order=4 ;; esac
  key=$(printf '%s' "$prog-$order$tool" | tr '/' '_')
  if [ ! -e "$BUILD/$prog" ]; then
    record "run_$key" "$prog|$tool|missing|||||"
    return 1
  fi
  local tmp="$WORK/run.$$.log"
  local -a cmd extra_env
  case $tool in
    plain) cmd=(); extra_env=() ;;
    *) cmd=(compute-sanitizer --tool "$tool" --print-limit 50)
       read -r -a extra_env <<<"$SAN_ENV" ;;
  esac
  case $tool-$prog in
    *-tests/test_threads)
      # Each call's start and end go to the log, so that a run that stops
      # moving shows which calls are in flight.
      extra_env+=(FB_TEST_TRACE=1) ;;
  esac
  case $tool-$prog in
    racecheck-tests/test_threads)
      # racecheck itself loses track of kernel launches made from 8 host
      # threads at once ("Internal Sanitizer Error: Detected a failure to
      # track a kernel launch", in each of 3 runs on an H200, 2026-11-22),
      # and then, in 2 of the 3, all 8 calls in flight never returned.
      # Run alone, each GPU arrangement passes racecheck at 8 threads.
      # racecheck's hazards lie within one block's shared memory, which
      # the number of host threads does not change, so it runs this
      # program at 2 threads; plain, memcheck and initcheck keep 8.
      extra_env+=(FB_TEST_THREADS=2) ;;
  esac
  say "running $prog${cmd:+ under ${cmd[*]}} ${extra_env[*]}"
  (cd "$BUILD" &&
   env FUSEDBLAS_CUDA_MODULE="$BUILD/lib/cuda/.libs/fusedblas_cuda.so" \
       top_srcdir="$(recall srcdir)" top_builddir="$BUILD" "${extra_env[@]}" \
       timeout "$SAN_TIMEOUT" ./libtool --mode=execute "${cmd[@]}" "./$prog") \
      >"$tmp" 2>&1
  local rc=$?
  {
    echo "===== $prog under $tool (exit $rc) ====="
    cat "$tmp"
  } >>"$log"
  local ok notok skip errors
  ok=$(grep -c '^ok ' "$tmp")
  notok=$(grep -c '^not ok ' "$tmp")
  skip=$(grep -Ec '^(ok .*# *SKIP|1\.\.0 *# *SKIP)' "$tmp")
  errors=-
  if [ "$tool" != plain ]; then
    # memcheck and initcheck end with "ERROR SUMMARY: N errors", racecheck
    # with "RACECHECK SUMMARY: N hazards displayed (E errors, W warnings)".
    errors=$(sed -n -e 's/.*ERROR SUMMARY: \([0-9][0-9]*\) error.*/\1/p' \
                    -e 's/.*RACECHECK SUMMARY: \([0-9][0-9]*\) hazard.*/\1/p' \
             "$tmp" | tail -n 1)
    [ -n "$errors" ] || errors="?"
  fi
  local exitword=$rc
  [ $rc -eq 124 ] && exitword="TIMEOUT(${SAN_TIMEOUT}s)"
  record "run_$key" "$prog|$tool|$ok|$notok|$skip|$errors|$exitword"
  rm -f "$tmp"
}

# The GPU test programs: FB_GPU_PROGRAMS, else every tests/test_gpu*
# program that `make check` built (libtool wrappers: no extension).
gpu_programs() {
  if [ -n "$PROGRAMS" ]; then echo "$PROGRAMS"; return; fi
  local list="" f
  for f in "$BUILD"/tests/test_gpu*; do
    case $f in *.*) continue ;; esac
    [ -f "$f" ] && [ -x "$f" ] && list="$list tests/$(basename "$f")"
  done
  echo "${list:-tests/test_gpu}"
}

phase_sanitize() {
  local tools="$*"
  [ -n "$tools" ] || tools="memcheck racecheck initcheck"
  [ -d "$BUILD" ] || { say "no build: run the build phase first"; return 1; }
  # The test programs are check_PROGRAMS: build them without running them.
  (cd "$BUILD" && make -j"$JOBS" check TESTS=) >>"$LOGS/build.log" 2>&1 ||
    say "building the test programs failed (see build.log)"
  local prog
  command -v compute-sanitizer >/dev/null 2>&1 ||
    say "compute-sanitizer is not on PATH (looked after CUDA's bin)"
  for prog in $(gpu_programs); do
    # FB_SANITIZE_PLAIN=0: only the sanitizer runs (make check already ran
    # each program plainly).
    [ "${FB_SANITIZE_PLAIN:-1}" = 0 ] || run_program "$prog" plain
    for tool in $tools; do
      run_program "$prog" "$tool"
    done
  done
}

# ---- summary ------------------------------------------------------------

summary() {
  # Logs back to the caller (at most 8 files come back from $OUT).
  for f in configure build check plain memcheck racecheck initcheck; do
    [ -f "$LOGS/$f.log" ] && tail -c 15000000 "$LOGS/$f.log" >"$OUTDIR/$f.log"
  done
  local gpu
  gpu=$(nvidia-smi --query-gpu=name,compute_cap,driver_version \
        --format=csv,noheader 2>/dev/null | head -n 1)
  local verdict=PASS
  {
    echo
    echo "==================== fusedblas gpu-check summary ===================="
    printf '%-12s %s\n' "GPU" "${gpu:-none found by nvidia-smi}"
    printf '%-12s %s\n' "tarball" "$(recall tarball)"
    printf '%-12s %s\n' "OpenBLAS" "${OPENBLAS_HOW:-?}"
    printf '%-12s %s\n' "configure" "$(recall configure 'not run')"
    printf '%-12s %s\n' "build" "$(recall build 'not run')"
    printf '%-12s %s\n' "make check" "$(recall check 'not run')"
    printf '%-12s %s\n' "  skipped" "GPU programs skipped whole:$(recall check_skipped_whole ' -')"
    printf '%-12s %s\n' "" "other programs skipped whole:$(recall check_skipped_other ' -')"
    echo
    printf '%-22s %-10s %7s %7s %6s %10s  %s\n' program tool "ok" "not ok" skip \
      "san.errors" exit
    local any=0
    for f in "$STATE"/run_*; do
      [ -e "$f" ] || continue
      any=1
      IFS='|' read -r prog tool ok notok skip errors rc <"$f"
      printf '%-22s %-10s %7s %7s %6s %10s  %s\n' "$prog" "$tool" "$ok" \
        "$notok" "$skip" "$errors" "$rc"
      case $ok in missing) verdict=FAIL ;; esac
      [ "${notok:-0}" != 0 ] && [ "$ok" != missing ] && verdict=FAIL
      [ "${skip:-0}" != 0 ] && [ "$ok" != missing ] && verdict=FAIL
      case $errors in -|0) ;; *) verdict=FAIL ;; esac
      [ "$rc" != 0 ] && verdict=FAIL
    done
    [ $any -eq 1 ] || echo "(no GPU program has been run yet)"
    case $(recall configure) in ok*) ;; *) verdict=FAIL ;; esac
    case $(recall build) in ok*) ;; *) verdict=FAIL ;; esac
    case $(recall check) in ok*) ;; *) verdict=FAIL ;; esac
    case $(recall check_skipped_whole) in " none") ;; *) verdict=FAIL ;; esac
    echo
    echo "logs: $OUTDIR/{configure,build,check,plain,memcheck,racecheck,initcheck}.log"
    echo "RESULT: $verdict (PASS needs: every phase ok, no GPU test skipped,"
    echo "        no 'not ok', 0 sanitizer errors, every run exit 0)"
  } | tee "$OUTDIR/summary.txt"
}

# ---- main ---------------------------------------------------------------

phase=${1:-all}
[ $# -gt 0 ] && shift
setup_env
case $phase in
  all)
    if phase_build; then
      phase_check
      phase_sanitize "$@"
    fi
    ;;
  build) phase_build ;;
  check) phase_check ;;
  sanitize) phase_sanitize "$@" ;;
  summary) ;;
  *) echo "usage: $0 [all|build|check|sanitize [tools]|summary]" >&2; exit 2 ;;
esac
summary
grep -q '^RESULT: PASS' "$OUTDIR/summary.txt"

