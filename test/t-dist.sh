#!/usr/bin/env bash
# timeout: 120
# The release tarball ('make dist') holds every file git tracks, except the
# few git-only files listed in GIT_ONLY below, and nothing else but the files
# autotools generate: a file committed without its line in the Makefile
# fragment of its directory fails here, with the line to add.
# The versions in configure.ac, debian/changelog and the ChangeLog's release
# line agree.
. "$(dirname "$0")/lib.sh"
# The tarball's contents do not depend on how the build was compiled.
if sanitized; then skip "tarball" "sanitizer build: the tarball is checked in the plain build"; exit 0; fi

# Tracked but not shipped, each for a reason:
#   .gitignore, .gitattributes: git's own settings, meaningless in a tarball.
GIT_ONLY='.gitignore .gitattributes'
# Shipped but not tracked: what autoreconf and 'make dist' generate.
GENERATED='configure Makefile.in aclocal.m4 .tarball-version
 build-aux/ar-lib build-aux/compile build-aux/depcomp build-aux/install-sh build-aux/missing'

src_real=$(cd "$FK_SRC" && pwd -P)
if ! need git || [ "$(git -C "$FK_SRC" rev-parse --show-toplevel 2>/dev/null)" != "$src_real" ]; then
    skip "tarball completeness" "$FK_SRC is not a git checkout (a tarball build)"
    exit 0
fi

# The fragment that lists FILE: the nearest local.mk above it, else Makefile.am.
fragment() {
    local d
    d=$(dirname "$1")
    while [ "$d" != . ]; do
        [ -f "$FK_SRC/$d/local.mk" ] && { echo "$d/local.mk"; return; }
        d=$(dirname "$d")
    done
    echo Makefile.am
}

# 'make distdir' copies exactly what 'make dist' packs, without compressing.
if ! make -s -C "$FK_BUILD" distdir distdir="$T/dist" >"$T/distdir.log" 2>&1; then
    fail "make distdir" "$(tail -n 20 "$T/distdir.log")"
    exit 0
fi
pass "make distdir"
(cd "$T/dist" && find . \( -type f -o -type l \) | sed 's|^\./||' | LC_ALL=C sort) >"$T/shipped"
git -C "$FK_SRC" ls-files | LC_ALL=C sort >"$T/tracked"
printf '%s\n' $GIT_ONLY | LC_ALL=C sort >"$T/git-only"
printf '%s\n' $GENERATED | LC_ALL=C sort >"$T/generated"

missing=$(LC_ALL=C comm -23 "$T/tracked" "$T/shipped" | LC_ALL=C comm -23 - "$T/git-only")
if [ -z "$missing" ]; then
    pass "every tracked file is in the tarball ($(wc -l <"$T/tracked") tracked)"
else
    for f in $missing; do
        case $f in
        *.c|*.h) how="to the _SOURCES list of the program that builds it, or EXTRA_DIST += $f" ;;
        man/*.1) how="dist_man_MANS += $f" ;;
        *) how="EXTRA_DIST += $f" ;;
        esac
        fail "$f is tracked but not in the tarball: add it to $(fragment "$f") ($how)"
    done
fi

extra=$(LC_ALL=C comm -13 "$T/tracked" "$T/shipped" | LC_ALL=C comm -23 - "$T/generated")
if [ -z "$extra" ]; then
    pass "the tarball holds nothing but tracked and generated files"
else
    for f in $extra; do
        fail "$f is in the tarball but not in git: git add it, or remove it from the dist lists (a directory in EXTRA_DIST ships everything in it)"
    done
fi

# One version: configure.ac's fk_version is the release debian/changelog
# packages and the ChangeLog's release line names.
base=$(sed -n 's/^m4_define(\[fk_version\], \[\(.*\)\])$/\1/p' "$FK_SRC/configure.ac")
check_grep "configure.ac defines fk_version" '^[0-9]+\.[0-9]+\.[0-9]+$' "$base"
if need dpkg-parsechangelog; then
    check_eq "debian/changelog packages configure.ac's version" "$base" \
        "$(dpkg-parsechangelog -l "$FK_SRC/debian/changelog" -S Version 2>&1)"
else
    check_grep "debian/changelog packages configure.ac's version" "^flamekit \($base\) " "$(head -n 1 "$FK_SRC/debian/changelog")"
fi
check_grep "ChangeLog has the release line of $base" "^	\* Release $base\b" "$FK_SRC/ChangeLog"
