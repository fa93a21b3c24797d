#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# gnuplot_at_run_time.sh -- `make bench` draws its plots with the gnuplot
# it finds in PATH when it runs, not with what configure saw: a gnuplot
# installed after configure is used. Prints TAP.
#
# Runs `make bench` in this build tree on one small CPU case, with a
# stand-in gnuplot first in PATH that records what it is asked to draw,
# and GNUPLOT empty on make's command line (what a configure that found no
# gnuplot used to leave in the Makefile); then with GNUPLOT naming a
# second stand-in, which must be the one used.
#
# Environment: top_builddir (from the Makefile's AM_TESTS_ENVIRONMENT);
# man/build-env.sh in the build tree.

top_builddir=${top_builddir:-.}
env_file=$top_builddir/man/build-env.sh
if test ! -r "$env_file"; then
    echo "1..0 # SKIP $env_file missing: run this through make check"
    exit 0
fi
. "$env_file"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/fb-gnuplot.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM

n=0
failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; }
diag() { sed 's/^/# /'; }

# A stand-in gnuplot: answers the benchmark's probe for pngcairo and
# records the script it is asked to draw (with the directory it ran in).
stub() {
    mkdir -p "$1"
    cat >"$1/gnuplot" <<EOF
#!/bin/sh
if test "x\$1" = x-e; then exit 0; fi
echo "\$(pwd)/\$1" >>'$2'
EOF
    chmod +x "$1/gnuplot"
}
stub "$tmp/path-bin" "$tmp/drawn-by-path"
stub "$tmp/named-bin" "$tmp/drawn-by-name"

# A make of this tree, but not of the `make check` running this test: no
# jobserver, no command-line variables of the outer make.
submake() {
    (unset MAKEFLAGS MFLAGS GNUPLOT; cd "$FB_ABS_BUILDDIR" &&
     PATH="$tmp/path-bin:$PATH" $FB_MAKE "$@")
}
flags='--quick --backend cpu --routine gemm --group seed-linear --dtype f32 --no-check --reps 3'

echo "1..3"

# 1. Nothing about gnuplot was decided at configure time.
if grep '^GNUPLOT *=' "$FB_ABS_BUILDDIR/Makefile" >"$tmp/grep.log"; then
    not_ok "the Makefile fixes no gnuplot at configure time"
    diag <"$tmp/grep.log"
else
    ok "the Makefile fixes no gnuplot at configure time"
fi

# 2. GNUPLOT empty: the gnuplot in PATH at run time draws.
if submake bench GNUPLOT= BENCH_OUT="$tmp/out1" BENCH_FLAGS="$flags" \
        >"$tmp/bench1.log" 2>&1 &&
    grep -qx "$tmp/out1/plots.gp" "$tmp/drawn-by-path" 2>/dev/null; then
    ok "make bench draws with the gnuplot found in PATH when it runs"
else
    not_ok "make bench draws with the gnuplot found in PATH when it runs"
    tail -n 20 "$tmp/bench1.log" | diag
fi

# 3. GNUPLOT given: that one draws, not the one in PATH.
rm -f "$tmp/drawn-by-path"
if submake bench GNUPLOT="$tmp/named-bin/gnuplot" BENCH_OUT="$tmp/out2" \
        BENCH_FLAGS="$flags" >"$tmp/bench2.log" 2>&1 &&
    grep -qx "$tmp/out2/plots.gp" "$tmp/drawn-by-name" 2>/dev/null &&
    test ! -e "$tmp/drawn-by-path"; then
    ok "make bench GNUPLOT=PATH draws with that gnuplot"
else
    not_ok "make bench GNUPLOT=PATH draws with that gnuplot"
    tail -n 20 "$tmp/bench2.log" | diag
fi

test "$failed" -eq 0
