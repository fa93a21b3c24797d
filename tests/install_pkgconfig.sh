#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# install_pkgconfig.sh -- `make install` gives a user what the pages
# promise: the header, the library, fusedblas.pc and a man page for every
# routine; and the examples build and run with nothing but
# `pkg-config --cflags --libs fusedblas`, dynamically and (--static)
# against the static library. Prints TAP.
#
# Installs this build tree into a temporary DESTDIR. The installed
# fusedblas.pc names the configured prefix, which the staged files are not
# under yet; so the staged copy's path variables are moved under DESTDIR
# (a packager's relocation, and the only edit made). Everything else in it
# -- Cflags, Libs, Libs.private, Requires.private -- is used as installed.
# Cleans up with `make uninstall`, which must leave no file behind.
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
pkg_config=${FB_PKG_CONFIG:-pkg-config}
if ! command -v "$pkg_config" >/dev/null 2>&1; then
    echo "1..0 # SKIP pkg-config not installed"
    exit 0
fi

stage=$(mktemp -d "${TMPDIR:-/tmp}/fb-install.XXXXXX") || exit 99
trap 'chmod -R u+w "$stage" 2>/dev/null; rm -rf "$stage"' EXIT
trap 'exit 1' HUP INT TERM
mkdir "$stage/root" "$stage/work"
root=$stage/root
work=$stage/work

n=0
failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; }
skip() { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }
diag() { sed 's/^/# /'; }

examples=$(cd "$FB_ABS_SRCDIR/examples" && ls ./*.c | sed 's|^\./||; s|\.c$||')
set -- $examples
nex=$#
echo "1..$((7 + 4 * nex))"

# A make of this tree, but not of the `make check` running this test: no
# jobserver, no command-line variables of the outer make.
submake() {
    (unset MAKEFLAGS MFLAGS; cd "$FB_ABS_BUILDDIR" && $FB_MAKE "$@")
}

# 1. make install into DESTDIR.
if submake install DESTDIR="$root" >"$stage/install.log" 2>&1; then
    ok "make install DESTDIR=<tmp> ($FB_PREFIX)"
else
    not_ok "make install DESTDIR=<tmp> ($FB_PREFIX)"
    tail -n 30 "$stage/install.log" | diag
fi

# 2. The files a user needs are there.
missing=''
for f in "$FB_INCLUDEDIR/fusedblas.h" "$FB_PKGCONFIGDIR/fusedblas.pc" \
         "$FB_MAN3DIR/fusedblas.3"; do
    test -r "$root$f" || missing="$missing $f"
done
ls "$root$FB_LIBDIR"/libfusedblas.* >/dev/null 2>&1 ||
    missing="$missing $FB_LIBDIR/libfusedblas.*"
for p in $FB_MAN3_PAGES; do
    test -r "$root$FB_MAN3DIR/${p##*/}" || missing="$missing $FB_MAN3DIR/${p##*/}"
done
if test -z "$missing"; then
    ok "installed: fusedblas.h, libfusedblas, fusedblas.pc, $(echo $FB_MAN3_PAGES | wc -w) man pages"
else
    not_ok "installed: fusedblas.h, libfusedblas, fusedblas.pc, the man pages"
    echo "missing:$missing" | diag
fi

# 3. `man NAME` finds and renders a page for every installed page name,
#    the .so links included.
man_probe=''
if command -v man >/dev/null 2>&1; then
    # A minimised system (some container images) has a man that prints a
    # notice instead of pages: a probe on the overview page tells.
    man_probe=$(MANWIDTH=80 MANPAGER=cat PAGER=cat \
                man -M "$root${FB_MAN3DIR%/man3}" 3 fusedblas 2>&1 | head -n 3)
    case $man_probe in
        *fusedblas*) ;;
        *) man_probe="man renders no page here: $(printf '%s' "$man_probe" | head -n 1)" ;;
    esac
fi
case $man_probe in
    "man renders no page here"*) skip_reason=$man_probe ;;
    *) skip_reason='' ;;
esac
if command -v man >/dev/null 2>&1 && test -z "$skip_reason"; then
    bad=''
    for p in $FB_MAN3_PAGES; do
        name=${p##*/}
        name=${name%.3}
        out=$(MANWIDTH=80 MANPAGER=cat PAGER=cat \
              man -M "$root${FB_MAN3DIR%/man3}" 3 "$name" 2>&1) ||
            { bad="$bad $name(no page)"; continue; }
        printf '%s\n' "$out" | grep -q "$name" || bad="$bad $name(not in the page)"
    done
    if test -z "$bad"; then
        ok "man -M <installed mandir> 3 NAME renders a page naming NAME, for every page"
    else
        not_ok "man -M <installed mandir> 3 NAME renders a page naming NAME, for every page"
        echo "failed:$bad" | diag
    fi
else
    skip "man NAME renders every installed page" "${skip_reason:-man(1) not installed}"
fi

# 4. The staged fusedblas.pc, relocated under DESTDIR.
pcdir=$work/pkgconfig
mkdir "$pcdir"
if test -r "$root$FB_PKGCONFIGDIR/fusedblas.pc"; then
    awk -v root="$root" -v prefix="$FB_PREFIX" '
        /^[A-Za-z_]+=/ {
            eq = index($0, "="); v = substr($0, eq + 1)
            if (substr(v, 1, length(prefix)) == prefix &&
                (length(v) == length(prefix) || substr(v, length(prefix) + 1, 1) == "/"))
                $0 = substr($0, 1, eq) root v
        }
        { print }' "$root$FB_PKGCONFIGDIR/fusedblas.pc" >"$pcdir/fusedblas.pc"
fi
PKG_CONFIG_PATH=$pcdir${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
export PKG_CONFIG_PATH
if version=$("$pkg_config" --modversion fusedblas 2>&1) &&
   test "$version" = "$FB_PACKAGE_VERSION" &&
   cflags=$("$pkg_config" --cflags fusedblas 2>&1) &&
   libs=$("$pkg_config" --libs fusedblas 2>&1) &&
   static_libs=$("$pkg_config" --static --libs fusedblas 2>&1); then
    ok "pkg-config fusedblas: version $version"
    {
        echo "fusedblas.pc as installed (paths under DESTDIR):"
        cat "$pcdir/fusedblas.pc"
        echo "--cflags:        $cflags"
        echo "--libs:          $libs"
        echo "--static --libs: $static_libs"
    } | diag
else
    not_ok "pkg-config fusedblas: version $FB_PACKAGE_VERSION (got '$version')"
    cat "$pcdir/fusedblas.pc" 2>&1 | diag
fi

# Each example: compile with the pkg-config flags alone (and -lm where the
# example calls libm itself), then run. The CUDA module, if the build made
# one, is the staged copy; otherwise there is none to find.
module=$root$FB_PKGLIBDIR/fusedblas_cuda.so
if test -r "$module"; then
    FUSEDBLAS_CUDA_MODULE=$module
    export FUSEDBLAS_CUDA_MODULE
else
    unset FUSEDBLAS_CUDA_MODULE
fi
run_example() { # run_example NAME KIND BINARY
    if out=$(env LD_LIBRARY_PATH="$root$FB_LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
                 "$3" 2>&1); then
        ok "$1 ($2) runs and succeeds"
        printf '%s\n' "$out" | diag
    else
        not_ok "$1 ($2) runs and succeeds (exit status $?)"
        printf '%s\n' "$out" | diag
    fi
}
build_example() { # build_example NAME KIND OUTPUT PKG-CONFIG-FLAGS...
    name=$1 kind=$2 exe=$3
    shift 3
    libm=''
    grep -q '<math.h>' "$FB_ABS_SRCDIR/examples/$name.c" && libm=-lm
    # shellcheck disable=SC2046
    if out=$($FB_CC $FB_SANITIZE_CFLAGS -o "$exe" \
                 "$FB_ABS_SRCDIR/examples/$name.c" \
                 $("$pkg_config" "$@" fusedblas) $libm 2>&1); then
        ok "$name ($kind): cc $name.c \$(pkg-config $* fusedblas)${libm:+ $libm}"
        return 0
    fi
    not_ok "$name ($kind): cc $name.c \$(pkg-config $* fusedblas)${libm:+ $libm}"
    printf '%s\n' "$out" | diag
    n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $name ($kind) runs (not built)"
    return 1
}

for ex in $examples; do
    build_example "$ex" shared "$work/$ex-shared" --cflags --libs &&
        run_example "$ex" shared "$work/$ex-shared"
done

# 5. Static: hide the shared library so that -lfusedblas can only mean
#    libfusedblas.a, link with --static's flags, and check that the program
#    does not need libfusedblas.so at run time.
if test -r "$root$FB_LIBDIR/libfusedblas.a"; then
    mkdir "$stage/hidden"
    mv "$root$FB_LIBDIR"/libfusedblas.so* "$stage/hidden/" 2>/dev/null
    for ex in $examples; do
        build_example "$ex" static "$work/$ex-static" --static --cflags --libs &&
            run_example "$ex" static "$work/$ex-static"
    done
    needs=''
    for ex in $examples; do
        test -x "$work/$ex-static" || continue
        if command -v readelf >/dev/null 2>&1 &&
           readelf -d "$work/$ex-static" | grep -q 'NEEDED.*libfusedblas'; then
            needs="$needs $ex"
        fi
    done
    if test -z "$needs"; then
        ok "the static builds do not load libfusedblas.so"
    else
        not_ok "the static builds do not load libfusedblas.so:$needs"
    fi
    mv "$stage/hidden"/* "$root$FB_LIBDIR/" 2>/dev/null
else
    for ex in $examples; do
        skip "$ex (static) builds" "no libfusedblas.a (configured --disable-static?)"
        skip "$ex (static) runs" "no libfusedblas.a"
    done
    skip "the static builds do not load libfusedblas.so" "no libfusedblas.a"
fi

# 6. make uninstall leaves no file behind.
if submake uninstall DESTDIR="$root" >"$stage/uninstall.log" 2>&1; then
    ok "make uninstall DESTDIR=<tmp>"
else
    not_ok "make uninstall DESTDIR=<tmp>"
    tail -n 30 "$stage/uninstall.log" | diag
fi
left=$(find "$root" -type f -o -type l)
if test -z "$left"; then
    ok "make uninstall leaves no file behind"
else
    not_ok "make uninstall leaves no file behind"
    printf '%s\n' "$left" | sed "s|^$root||" | diag
fi

test $failed -eq 0 || echo "# $failed of $n failed"
# The "not ok" lines are the verdict (a non-zero exit would add an ERROR).
exit 0
