#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# man_examples.sh -- the program in each page's EXAMPLES section compiles
# against the built library, with this build's warning flags, and runs
# successfully. Prints TAP.
#
# The program is the .EX/.EE block of EXAMPLES that defines main(). It is
# turned back into C by undoing the few roff escapes the pages use (\e \- \&
# \(aq \(dq \(ha \(ti); any other escape in the block is a failure, since a
# reader copying the rendered page would get something else. Each program
# checks its own results and exits non-zero when they are wrong.
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
mandir=$FB_ABS_SRCDIR/man
la=$FB_ABS_BUILDDIR/libfusedblas.la
if test ! -r "$la"; then
    echo "1..0 # SKIP $la not built"
    exit 0
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/fb-man-examples.XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT
trap 'exit 1' HUP INT TERM

n=0
failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; }
diag() { sed 's/^/# /'; }

# The real pages (not .so links).
pages=''
for p in $FB_MAN3_PAGES; do
    f=$mandir/man3/${p##*/}
    head -n 1 "$f" | grep -q '^\.so ' || pages="$pages ${p##*/}"
done
set -- $pages
echo "1..$(($# * 3))"

for p in $pages; do
    name=${p%.3}
    raw=$work/$name.roff
    src=$work/$name.c
    # The first .EX block inside EXAMPLES that defines main().
    awk '/^\.SH / { in_ex = ($2 == "EXAMPLES") }
         in_ex && /^\.EX/ { blk = ""; on = 1; next }
         on && /^\.EE/ { on = 0; if (blk ~ /main\(/ && !done) { printf "%s", blk; done = 1 }; next }
         on { blk = blk $0 "\n" }' "$mandir/man3/$p" >"$raw"
    if test ! -s "$raw"; then
        not_ok "$p: has a C program in EXAMPLES"
        not_ok "$p: example compiles (no program)"
        not_ok "$p: example runs (no program)"
        continue
    fi
    # Only the escapes we know how to undo.
    odd=$(sed -e 's/\\e//g; s/\\-//g; s/\\&//g; s/\\(aq//g; s/\\(dq//g' \
              -e 's/\\(ha//g; s/\\(ti//g' "$raw" | grep -n '\\')
    if test -n "$odd"; then
        not_ok "$p: has a C program in EXAMPLES, with only known escapes"
        printf '%s\n' "$odd" | diag
    else
        ok "$p: has a C program in EXAMPLES ($(wc -l <"$raw") lines)"
    fi
    # \e last, so that the backslashes it makes are not read as escapes.
    sed -e 's/\\-/-/g; s/\\&//g; s/\\(aq/'"'"'/g; s/\\(dq/"/g' \
        -e 's/\\(ha/^/g; s/\\(ti/~/g; s/\\e/\\/g' "$raw" >"$src"

    # Link through libtool against the uninstalled library; libtool makes
    # a wrapper that finds it at run time.
    if out=$(cd "$work" && $FB_LIBTOOL --quiet --tag=CC --mode=link \
                 $FB_CC $FB_CPPFLAGS -I"$FB_ABS_SRCDIR/include" $FB_CFLAGS \
                 $FB_LDFLAGS -o "$name$FB_EXEEXT" "$name.c" "$la" -lm 2>&1) &&
       test -z "$out"; then
        ok "$p: example compiles and links without a warning"
    else
        not_ok "$p: example compiles and links without a warning"
        printf '%s\n' "$out" | diag
        not_ok "$p: example runs (not built)"
        continue
    fi
    if out=$(cd "$work" && "./$name$FB_EXEEXT" 2>&1); then
        ok "$p: example runs and succeeds"
        printf '%s\n' "$out" | diag
    else
        rc=$?
        not_ok "$p: example runs and succeeds (exit status $rc)"
        printf '%s\n' "$out" | diag
    fi
done

test $failed -eq 0 || echo "# $failed of $n failed"
# The "not ok" lines are the verdict (a non-zero exit would add an ERROR).
exit 0
