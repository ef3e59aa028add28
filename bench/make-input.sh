#!/usr/bin/env bash
# Make (once) and cache the benchmark input: ~65 MB of `perf script` text from
# a 2-CPU `perf record -F 999 -a -g` of this machine compiling C and
# compressing data, plus its folded form. Prints two lines: the path of the
# perf-script text, then the path of the folded file. Later runs reuse the
# cache (${FLAMEKIT_CACHE:-~/.cache/flamekit}/bench); delete it to remake.
# usage: bench/make-input.sh     (env: FLAMEKIT = flamekit binary used for
#        the folded file; FK_BENCH_SECONDS = recording length, default 140,
#        which gives ~65 MB here)
# Progress goes to stderr; stdout has only the two paths.
set -euo pipefail
cache=${FLAMEKIT_CACHE:-$HOME/.cache/flamekit}/bench
src=${FK_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
txt=$cache/perf-script.txt
folded=$cache/perf-script.folded
secs=${FK_BENCH_SECONDS:-140}
mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9

if [ ! -s "$txt" ]; then
    command -v perf >/dev/null || { echo "make-input: perf not found; apt-get install linux-perf" >&2; exit 1; }
    command -v gcc >/dev/null || { echo "make-input: gcc not found; apt-get install gcc" >&2; exit 1; }
    work=$(mktemp -d "${TMPDIR:-/tmp}/fk-bench-input.XXXXXX")
    trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
    # The workload: one CPU compiles our C sources in a loop, the other
    # compresses a file with xz and gzip in turn.
    cfiles=$(find "$src/src" -name '*.c' | head -40)
    (while :; do for f in $cfiles; do
        gcc -O2 -std=gnu11 -D_GNU_SOURCE -I"$src/src/lib" -I"$src/src" -c "$f" -o "$work/o.o" 2>/dev/null || true
    done; done) &
    head -c 16000000 /dev/urandom | base64 >"$work/data"
    cat "$src"/src/lib/*/*.c >>"$work/data" 2>/dev/null || true
    (while :; do xz -6 -T1 -c "$work/data" >/dev/null; gzip -6 -c "$work/data" >/dev/null; done) &
    sleep 1
    echo "make-input: recording ${secs}s of perf record -F 999 -a -g (compiles + compression)..." >&2
    perf record -q -F 999 -a -g -o "$work/perf.data" -- sleep "$secs" >/dev/null 2>&1
    kill $(jobs -p) 2>/dev/null || true
    wait 2>/dev/null || true
    echo "make-input: perf script..." >&2
    perf script -i "$work/perf.data" >"$work/perf-script.txt" 2>/dev/null
    mv "$work/perf-script.txt" "$txt"
    rm -f "$folded"
fi

if [ ! -s "$folded" ]; then
    fk=${FLAMEKIT:-}
    if [ -n "$fk" ] && "$fk" collapse --help >/dev/null 2>&1; then
        "$fk" collapse -o "$folded.tmp" "$txt"
    else
        fg=${FLAMEGRAPH_DIR:-$HOME/.cache/flamekit/FlameGraph}
        [ -f "$fg/stackcollapse-perf.pl" ] || {
            echo "make-input: need FLAMEKIT=path/to/flamekit (with collapse) or FlameGraph in $fg (git clone https://github.com/brendangregg/FlameGraph $fg)" >&2; exit 1; }
        perl "$fg/stackcollapse-perf.pl" "$txt" >"$folded.tmp"
    fi
    mv "$folded.tmp" "$folded"
fi
echo "$txt"
echo "$folded"
