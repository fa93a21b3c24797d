#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# exports.sh -- the shared library, the header and the manual pages name
# the same routines, with the same prototypes. Prints TAP.
#
#   exported  `nm -D --defined-only` on the built libfusedblas.so
#   declared  the FB_EXPORT prototypes of include/fusedblas.h
#   pages     man/man3/NAME.3 for each name (real page or .so link), the
#             NAME sections of the real pages, and their SYNOPSIS prototypes
#
# Checks: only functions are exported; exported == declared; every exported
# name has a page of its own name whose NAME section lists it and whose
# SYNOPSIS gives the header's prototype (after whitespace is normalised);
# every name a page lists or prototypes is exported; the version macros the
# pages quote are the header's.
#
# Environment: top_srcdir and top_builddir (from the Makefile's
# AM_TESTS_ENVIRONMENT); man/build-env.sh in the build tree.

LC_ALL=C
export LC_ALL
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
env_file=$top_builddir/man/build-env.sh
if test ! -r "$env_file"; then
    echo "1..0 # SKIP $env_file missing: run this through make check"
    exit 0
fi
. "$env_file"
mandir=$FB_ABS_SRCDIR/man
header=$FB_ABS_SRCDIR/include/fusedblas.h
la=$FB_ABS_BUILDDIR/libfusedblas.la
dlname=$(sed -n "s/^dlname='\(.*\)'$/\1/p" "$la" 2>/dev/null)
so=$FB_ABS_BUILDDIR/.libs/$dlname
if test -z "$dlname" || test ! -r "$so"; then
    echo "1..0 # SKIP no shared libfusedblas built (configured --disable-shared?)"
    exit 0
fi
nm=${FB_NM:-nm}

work=$(mktemp -d "${TMPDIR:-/tmp}/fb-exports.XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT
trap 'exit 1' HUP INT TERM

n=0
failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; }
diag() { sed 's/^/# /'; }
check() { # check DESCRIPTION DETAIL: ok when DETAIL is empty
    if test -z "$2"; then ok "$1"; else not_ok "$1"; printf '%s\n' "$2" | diag; fi
}

# One prototype per line, "NAME<TAB>normalised prototype".
normalise='
    { s = $0
      gsub(/FB_EXPORT|FB_WARN_UNUSED/, " ", s)
      gsub(/[ \t]+/, " ", s); sub(/^ /, "", s); sub(/ $/, "", s)
      gsub(/\( /, "(", s); gsub(/ \)/, ")", s); gsub(/ ,/, ",", s)
      gsub(/,/, ", ", s); gsub(/,  /, ", ", s); gsub(/\* /, "*", s)
      gsub(/ \(/, "(", s)
      name = s; sub(/\(.*/, "", name); sub(/.*[ *]/, "", name)
      if (name != "") print name "\t" s }'

# The header: drop preprocessor lines (and their continuations) and
# comments, then each ";"-terminated statement that carries FB_EXPORT.
awk '
    cont { cont = /\\$/; next }
    /^[ \t]*#/ { cont = /\\$/; next }
    { text = text " " $0 }
    END {
        while ((i = index(text, "/*")) > 0) {
            rest = substr(text, i + 2)
            text = substr(text, 1, i - 1) " " substr(rest, index(rest, "*/") + 2)
        }
        n = split(text, st, ";")
        for (k = 1; k <= n; k++) if (st[k] ~ /FB_EXPORT/) print st[k]
    }' "$header" | awk "$normalise" | sort >"$work/declared"

# The library: every defined dynamic symbol but the linker's own.
$nm -D --defined-only "$so" |
    awk 'NF >= 3 { name = $3; sub(/@.*/, "", name)
                   if (name !~ /^(_init|_fini|_edata|_end|__bss_start)$/)
                       print name "\t" $2 }' | sort >"$work/exported_types"
cut -f1 "$work/exported_types" >"$work/exported"
cut -f1 "$work/declared" >"$work/declared_names"

# The pages: a real page's NAME names, and the prototypes of its SYNOPSIS
# (text of its .B/.BI/... lines between .nf and .fi, roff escapes undone).
real_pages=''
for p in $FB_MAN3_PAGES; do
    p=${p##*/}
    head -n 1 "$mandir/man3/$p" | grep -q '^\.so ' || real_pages="$real_pages $p"
done
: >"$work/listed"
: >"$work/synopsis"
: >"$work/other_synopsis"
for p in $real_pages; do
    f=$mandir/man3/$p
    awk '/^\.SH /{ s = $2; next } s == "NAME" && !/^\./ { t = t " " $0 }
         END { sub(/\\-.*/, "", t); print t }' "$f" |
        tr ',' '\n' | sed 's/[[:space:]]//g; /^$/d' |
        sed "s|\$|	$p|" >>"$work/listed"
    awk -v other="$work/other_synopsis" '
        function words(s, alternate,   out, q, sep) {
            sub(/^\.[A-Z]+[ \t]*/, "", s)
            out = ""; sep = alternate ? "" : " "
            while (s != "") {
                if (s ~ /^[ \t]/) { sub(/^[ \t]+/, "", s); continue }
                if (substr(s, 1, 1) == "\"") {
                    s = substr(s, 2); q = index(s, "\"")
                    if (q == 0) q = length(s) + 1
                } else {
                    q = match(s, /[ \t]/); if (q == 0) q = length(s) + 1
                }
                out = out (out == "" ? "" : sep) substr(s, 1, q - 1)
                s = substr(s, q + 1)
            }
            return out
        }
        /^\.SH / { s = $2; next }
        s != "SYNOPSIS" { next }
        /^\.nf/ { on = 1; next }
        /^\.fi/ { on = 0; next }
        !on { next }
        {
            if ($0 ~ /^\.(B|I)[ \t]/) t = words($0, 0)
            else if ($0 ~ /^\.(BI|IB|BR|RB|IR|RI)[ \t]/) t = words($0, 1)
            else if ($0 ~ /^\./) next
            else t = $0
            gsub(/\\-/, "-", t); gsub(/\\\(dq/, "\"", t); gsub(/\\e/, "\\", t)
            if (t ~ /^[ \t]*(#|typedef)/) { print t >> other; next }
            stmt = stmt " " t
            if (t ~ /;[ \t]*$/) { sub(/;[ \t]*$/, "", stmt); print stmt; stmt = "" }
        }' "$f" | awk "$normalise" >>"$work/synopsis"
done
sort -o "$work/synopsis" "$work/synopsis"

# ---- checks ---------------------------------------------------------------
nexp=$(wc -l <"$work/exported")
echo "1..$((6 + 2 * nexp))"

check "libfusedblas exports only functions ($nexp of them, from $dlname)" \
    "$(awk -F'\t' '$2 != "T" { print $1 " has nm type " $2 }' "$work/exported_types")"
check "every exported symbol is declared in include/fusedblas.h" \
    "$(comm -23 "$work/exported" "$work/declared_names" | sed 's/$/: exported, not declared/')"
check "every function fusedblas.h declares is exported" \
    "$(comm -13 "$work/exported" "$work/declared_names" | sed 's/$/: declared, not exported/')"
check "every name a page's NAME section lists is exported (the overview fusedblas aside)" \
    "$(cut -f1 "$work/listed" | grep -vx fusedblas | sort -u |
       comm -23 - "$work/exported" | sed 's/$/: in a NAME section, not exported/')"
check "every routine a SYNOPSIS prototypes is exported" \
    "$(cut -f1 "$work/synopsis" | sort -u | comm -23 - "$work/exported" |
       sed 's/$/: in a SYNOPSIS, not exported/')"

# Version macros quoted in pages, against the header's.
bad=''
set -f
while IFS= read -r line; do
    set -- $line
    test "$1" = "#define" || continue
    case $3 in "/*"*) continue ;; esac   # a comment, not a value
    want=$(sed -n "s/^#define $2 \(.*\)/\1/p" "$header" | sed 's/[[:space:]]*$//')
    test "$want" = "$3" || bad="$bad
$2: page says '$3', fusedblas.h says '$want'"
done <"$work/other_synopsis"
check "the #define values the pages quote are fusedblas.h's" "${bad#?}"
set +f

while IFS= read -r sym; do
    f=$mandir/man3/$sym.3
    why=''
    if test ! -r "$f"; then
        why="no man3/$sym.3"
    elif head -n 1 "$f" | grep -q '^\.so '; then
        target=$(sed -n 's|^\.so man3/||p' "$f")
        grep -q "^$sym	$target\$" "$work/listed" ||
            why="man3/$sym.3 links to $target, whose NAME does not list $sym"
    else
        grep -q "^$sym	$sym.3\$" "$work/listed" ||
            why="man3/$sym.3 does not list $sym in NAME"
    fi
    if test -z "$why"; then ok "man $sym: a page documents it"; else not_ok "man $sym: $why"; fi

    want=$(grep "^$sym	" "$work/declared" | cut -f2)
    got=$(grep "^$sym	" "$work/synopsis" | cut -f2)
    if test -n "$got" && test "$got" = "$want"; then
        ok "$sym: SYNOPSIS gives the header's prototype"
    else
        not_ok "$sym: SYNOPSIS gives the header's prototype"
        printf 'header: %s\npage:   %s\n' "$want" "${got:-(none)}" | diag
    fi
done <"$work/exported"

test $failed -eq 0 || echo "# $failed of $n failed"
# The "not ok" lines are the verdict (a non-zero exit would add an ERROR).
exit 0
