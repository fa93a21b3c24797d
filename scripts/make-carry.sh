#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# make-carry.sh -- the dist tarball of what is committed (HEAD), into
# .carry/ for the GPU machine (which has no libtool, so it builds from a
# tarball). Built from a clean export, so uncommitted work never travels.
set -e
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git -C "$root" archive --format=tar HEAD | tar -x -C "$tmp"
cd "$tmp"
./bootstrap >/dev/null 2>&1
mkdir build && cd build
../configure -q --without-cuda --without-dnnl >/dev/null
make -s dist >/dev/null
mkdir -p "$root/.carry"
rm -f "$root"/.carry/fusedblas-*.tar.gz
cp fusedblas-*.tar.gz "$root/.carry/"
ls -la "$root"/.carry/
