#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# A Debian 12 tree that boots under systemd-nspawn (systemd as PID 1), for
# tests of the shipped systemd units, built once and kept.
#   debian-tree.sh DIR   make DIR (debootstrap --variant=minbase bookworm
#                        with systemd, dbus and serve's run-time libraries)
#                        unless DIR/.flamekit-tree says it is complete;
#                        exits 0 when DIR is ready, 77 when it cannot be
#                        made here (reason on stderr), 1 on other failures.
# Building takes ~5 minutes and ~250 MB (the packages come from the
# mirror in /etc/apt/sources.list.d/debian.sources, else deb.debian.org);
# keep DIR outside temporary directories (default in the tests:
# /var/cache/flamekit-test/bookworm, $FK_DEBIAN_TREE).
set -u
dir=${1:-}
[ -n "$dir" ] || { echo "usage: $0 DIR" >&2; exit 2; }
stamp=$dir/.flamekit-tree
want="bookworm minbase systemd systemd-sysv dbus libmicrohttpd12 libgnutls30 libssl3 coreutils"
[ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && exit 0
mkdir -p "$(dirname "$dir")" || exit 1
# scripts/run-tests starts a build early, in the background, so the test that
# boots the tree finds it ready: one builder at a time, the others wait for it
exec 9>"$dir.lock" || exit 1
flock 9 || exit 1
[ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && exit 0
command -v debootstrap >/dev/null || { echo "debootstrap not installed (apt-get install debootstrap)" >&2; exit 77; }
[ "$(id -u)" = 0 ] || { echo "debootstrap needs root" >&2; exit 77; }
mirror=$(sed -n 's/^URIs: *\(http[^ ]*\/debian\)$/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n 1)
mirror=${mirror:-http://deb.debian.org/debian}
rm -rf "$dir.tmp" "$dir"
if ! timeout 1200 debootstrap --variant=minbase \
        --include=systemd,systemd-sysv,dbus,libmicrohttpd12,libgnutls30,libssl3 \
        bookworm "$dir.tmp" "$mirror" >"$dir.log" 2>&1; then
    echo "debootstrap bookworm from $mirror failed (see $dir.log): $(tail -n 1 "$dir.log")" >&2
    rm -rf "$dir.tmp"
    exit 77
fi
# no getty on the container's console; a root with no password is not needed
rm -f "$dir.tmp/etc/systemd/system/getty.target.wants/"* 2>/dev/null
echo flamekit-tree >"$dir.tmp/etc/hostname"
mv "$dir.tmp" "$dir" && echo "$want" >"$stamp"
