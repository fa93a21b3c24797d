#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# man_lint.sh -- every manual page is well-formed, in man-pages(7) order,
# names this release, and refers only to pages that exist. Prints TAP.
#
# For each page the tarball ships (dist_man3_MANS):
#   - a ".so" link page is one line, ".so man3/TARGET.3", whose target is a
#     real page that lists the link's name in its NAME section;
#   - a real page passes `mandoc -Tlint -W warning` with no message, and,
#     where groff is installed, `groff -man -t -ww -z` at the width of an
#     80-column terminal (what man(1) uses) with no warning;
#   - its .SH sections are the required ones, in man-pages(7) order;
#   - its .TH names "fusedblas VERSION" of this build;
#   - every NAME(3) it refers to is one of our pages or a known system page;
#   - its code examples fit an 80-column terminal (70 columns + indent).
# Also: every page in man/man3 is shipped, and vice versa.
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

# Section 3 pages not ours that the pages may cite.
system_pages3=' abort dlopen exit '

n=0
failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; }
diag() { sed 's/^/# /'; }

pages=''
for p in $FB_MAN3_PAGES; do
    pages="$pages ${p##*/}"
done

is_link() { head -n 1 "$mandir/man3/$1" | grep -q '^\.so '; }

# The names a real page documents: its NAME section, up to the "\-".
name_list() {
    awk '/^\.SH /{ s = $2; next } s == "NAME" && !/^\./ { t = t " " $0 }
         END { sub(/\\-.*/, "", t); print t }' "$1" |
        tr ',' '\n' | sed 's/[[:space:]]//g; /^$/d'
}

# Test points: 1 per link page; 5 per real page, 6 where groff is here.
groff_ok=no
command -v groff >/dev/null 2>&1 && groff_ok=yes
mandoc=${FB_MANDOC:-mandoc}
mandoc_ok=no
command -v "$mandoc" >/dev/null 2>&1 && mandoc_ok=yes
plan=1
for p in $pages; do
    if is_link "$p"; then
        plan=$((plan + 1))
    else
        plan=$((plan + 5))
        test $groff_ok = yes && plan=$((plan + 1))
    fi
done
echo "1..$plan"

# Shipped pages and pages in the source tree are the same set.
unlisted=''
for f in "$mandir"/man3/*.3; do
    case " $pages " in *" ${f##*/} "*) ;; *) unlisted="$unlisted ${f##*/}" ;; esac
done
absent=''
for p in $pages; do
    test -r "$mandir/man3/$p" || absent="$absent $p"
done
if test -z "$unlisted$absent"; then
    ok "man/man3 holds exactly the pages dist_man3_MANS ships"
else
    not_ok "man/man3 holds exactly the pages dist_man3_MANS ships"
    echo "not in dist_man3_MANS:${unlisted:- none}; missing:${absent:- none}" | diag
fi

for p in $pages; do
    f=$mandir/man3/$p
    name=${p%.3}
    if is_link "$p"; then
        target=$(sed -n '1s|^\.so man3/\([A-Za-z0-9_]*\.3\)$|\1|p' "$f")
        why=''
        if test "$(wc -l <"$f")" -ne 1 || test -z "$target"; then
            why="not a single line '.so man3/PAGE.3'"
        elif test ! -r "$mandir/man3/$target" || is_link "$target"; then
            why="$target is not a real page"
        elif ! name_list "$mandir/man3/$target" | grep -qx "$name"; then
            why="$target does not list $name in its NAME section"
        fi
        if test -z "$why"; then
            ok "$p links to $target, which documents $name"
        else
            not_ok "$p is a link page: $why"
        fi
        continue
    fi

    # mandoc: every message at level warning or above is a failure.
    if test $mandoc_ok = no; then
        ok "$p: mandoc -Tlint # SKIP mandoc not installed"
    else
        out=$(cd "$mandir" && "$mandoc" -Tlint -W warning "man3/$p" 2>&1)
        if test -z "$out"; then
            ok "$p: mandoc -Tlint -W warning is silent"
        else
            not_ok "$p: mandoc -Tlint -W warning is silent"
            printf '%s\n' "$out" | diag
        fi
    fi

    # groff, as man(1) runs it on an 80-column terminal.
    if test $groff_ok = yes; then
        out=$(groff -man -t -ww -z -Tutf8 -rLL=78n "$f" 2>&1)
        if test -z "$out"; then
            ok "$p: groff -ww renders it without a warning"
        else
            not_ok "$p: groff -ww renders it without a warning"
            printf '%s\n' "$out" | diag
        fi
    fi

    # Sections: the required ones present, all in man-pages(7) order.
    order='NAME LIBRARY SYNOPSIS CONFIGURATION DESCRIPTION OPTIONS
           EXIT_STATUS RETURN_VALUE ERRORS ENVIRONMENT FILES ATTRIBUTES
           VERSIONS STANDARDS HISTORY NOTES CAVEATS BUGS EXAMPLES AUTHORS
           REPORTING_BUGS COPYRIGHT SEE_ALSO'
    sections=$(sed -n 's/^\.SH "*\([^"]*\)"*$/\1/p' "$f" | tr ' ' '_')
    why=''
    last=0
    for s in $sections; do
        i=0 at=0
        for o in $order; do
            i=$((i + 1))
            test "$o" = "$s" && at=$i
        done
        if test $at -eq 0; then
            why="$why; unknown section $s"
        elif test $at -le $last; then
            why="$why; $s out of order"
        fi
        last=$at
    done
    for r in NAME LIBRARY SYNOPSIS DESCRIPTION ATTRIBUTES EXAMPLES SEE_ALSO; do
        printf '%s\n' $sections | grep -qx "$r" || why="$why; no $r"
    done
    if test -z "$why"; then
        ok "$p: sections in man-pages(7) order: $(echo $sections)"
    else
        not_ok "$p: sections in man-pages(7) order${why}"
    fi

    # .TH names this release.
    th=$(sed -n 's/^\.TH .*"\(fusedblas [^"]*\)".*"fusedblas Manual"$/\1/p' "$f")
    if test "$th" = "fusedblas $FB_PACKAGE_VERSION"; then
        ok "$p: .TH says fusedblas $FB_PACKAGE_VERSION"
    else
        not_ok "$p: .TH says fusedblas $FB_PACKAGE_VERSION (it says '$th')"
    fi

    # Cross-references: .BR name (3) and the like.
    why=''
    for ref in $(sed -n 's/^\.[BI]R \([A-Za-z0-9_.-]*\) (\([0-9]\)).*/\1(\2)/p' "$f" |
                 sed 's/\\-/-/g' | sort -u); do
        rname=${ref%(*}
        rsec=${ref#*(}
        rsec=${rsec%)}
        test "$rsec" = 3 || continue       # other sections: system pages
        case " $pages " in *" $rname.3 "*) continue ;; esac
        case "$system_pages3" in *" $rname "*) continue ;; esac
        why="$why $ref"
    done
    if test -z "$why"; then
        ok "$p: every NAME(3) it cites exists"
    else
        not_ok "$p: cites pages that do not exist:$why"
    fi

    # Code in .EX blocks fits 80 columns once indented.
    long=$(awk '/^\.EX/ { f = 1; next } /^\.EE/ { f = 0 }
                f { l = $0; gsub(/\\e/, "\\", l); gsub(/\\-/, "-", l)
                    gsub(/\\\(../, "x", l)
                    if (length(l) > 70) print FNR ": " l }' "$f")
    if test -z "$long"; then
        ok "$p: example lines fit 70 columns"
    else
        not_ok "$p: example lines fit 70 columns"
        printf '%s\n' "$long" | diag
    fi
done

test $failed -eq 0 || echo "# $failed of $n failed"
# The "not ok" lines are the verdict (a non-zero exit would add an ERROR).
exit 0
