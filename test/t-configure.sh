#!/usr/bin/env bash
# timeout: 480
# configure on a host without gRPC (its pkg-config files hidden): the
# profiler is still configured, the fetch servers are left out with the
# package to install named; --enable-fetchd makes that an error;
# --disable-fetchd needs nothing; a tarball made from such a build still
# ships the fetch servers' sources.
. "$(dirname "$0")/lib.sh"
# configure's outcome does not depend on how the build under test was
# compiled: the plain build's suite runs it, the sanitizer suite need not.
if sanitized; then skip "configure" "sanitizer build: configure is checked in the plain build"; exit 0; fi
[ -x "$FK_SRC/configure" ] || { skip "configure" "no configure in $FK_SRC (autoreconf -fi)"; exit 0; }
need pkg-config || { skip "configure" "pkg-config not installed"; exit 0; }

# A pkg-config directory with every library of this host but gRPC.
mkdir -p "$T/pc"
for d in $(pkg-config --variable pc_path pkg-config | tr ':' ' '); do
    for pc in "$d"/*.pc; do
        [ -f "$pc" ] || continue
        case $(basename "$pc") in grpc*|gpr*) continue ;; esac
        [ -e "$T/pc/$(basename "$pc")" ] || ln -s "$pc" "$T/pc/"
    done
done
# configure finds libperf through --with-libperf, as this build did.
libperf=$(sed -n "s/^LIBPERF_CFLAGS = -I\(.*\)\/include *$/\1/p" "$FK_BUILD/Makefile")
[ -n "$libperf" ] || { fail "libperf prefix from $FK_BUILD/Makefile"; skip_rest "no libperf prefix"; }
# The first run fills a cache of the compiler's and headers' checks
# (autoconf's --cache-file; pkg-config's answers are never cached, so each
# run still decides on gRPC itself); the other two start from copies of it
# and run at once, beside the first build's 'make distdir'.
noconf() {  # noconf DIR ARGS...: configure without gRPC
    local dir=$1; shift
    mkdir -p "$dir"
    [ -f "$T/config.cache" ] && cp "$T/config.cache" "$dir.cache"
    (cd "$dir" && PKG_CONFIG_LIBDIR=$T/pc \
        "$FK_SRC/configure" --cache-file="$dir.cache" --with-libperf="$libperf" "$@") >"$dir.log" 2>&1
}

noconf "$T/auto"
auto_rc=$?
[ -f "$T/auto.cache" ] && cp "$T/auto.cache" "$T/config.cache"
noconf "$T/enable" --enable-fetchd & enable_pid=$!
noconf "$T/disable" --disable-fetchd & disable_pid=$!
# The conditional lists (fetch servers, their man pages) still ship.
make -s -C "$T/auto" distdir distdir="$T/dist" >"$T/distdir.log" 2>&1 & distdir_pid=$!
wait $enable_pid; enable_rc=$?
wait $disable_pid; disable_rc=$?
wait $distdir_pid; distdir_rc=$?

check_eq "configure without gRPC exits 0 (the profiler needs none)" 0 "$auto_rc"
sum=$(sed -n '/will build:/,$p' "$T/auto.log")
check_grep "the summary says the profiler is built" 'flamekit \(profiler\).* yes' "$sum"
check_grep "the summary says the fetch servers are not, and what to install" \
    'fetch servers, fetch-bench +no \(not found: apt-get install libgrpc-dev,' "$sum"
check_grep "the summary names libperf's kernel source" 'libperf +linux-source 6\.12\.' "$sum"
check_nogrep "the Makefile links no gRPC into the profiler" '^FK_LIBS = .*grpc' "$T/auto/Makefile"

if [ $enable_rc -ne 0 ]; then pass "--enable-fetchd without gRPC fails"; else fail "--enable-fetchd without gRPC fails (exited 0)"; fi
check_grep "--enable-fetchd names the packages to install" \
    'error: --enable-fetchd: gRPC not found: apt-get install libgrpc-dev$' "$T/enable.log"

check_eq "configure --disable-fetchd exits 0" 0 "$disable_rc"
check_grep "--disable-fetchd is given as the reason" 'fetch servers, fetch-bench +no \(--disable-fetchd\)' "$T/disable.log"

if [ $distdir_rc -eq 0 ]; then
    missing=""
    for f in src/fetchd/fetchd-grpc.c src/fetchd/server.c src/fetchd/fetchd.proto man/fetchd-sock.1 man/fetch-bench.1; do
        [ -f "$T/dist/$f" ] || missing="$missing $f"
    done
    check_eq "a tarball from a build without fetchd ships the fetch servers" "" "$missing"
else
    fail "make distdir in a build without fetchd" "$(tail -n 10 "$T/distdir.log")"
fi
