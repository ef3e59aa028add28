#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Benchmark: flamekit svg vs FlameGraph's flamegraph.pl on the same folded
# input (bench/make-input.sh: a real perf record of this machine), at
# flamegraph.pl's default minwidth. Prints wall time, peak RSS and SVG bytes
# for both and the ratios. Targets: >= 20x faster, RSS <= 1/2, bytes <= 1x.
# Also a 6x concatenated input (~the 18 MB folded of the README baseline).
# env: FLAMEKIT (binary), FLAMEGRAPH_DIR (default ~/.cache/flamekit/FlameGraph;
#      git clone https://github.com/brendangregg/FlameGraph there; never commit it)
set -euo pipefail
src=${FK_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
fk=${FLAMEKIT:-$src/build/flamekit}
fgdir=${FLAMEGRAPH_DIR:-${FLAMEKIT_CACHE:-$HOME/.cache/flamekit}/FlameGraph}
if [ ! -f "$fgdir/flamegraph.pl" ]; then
    echo "bench/svg: SKIP: no flamegraph.pl in $fgdir (git clone https://github.com/brendangregg/FlameGraph \"$fgdir\", or set FLAMEGRAPH_DIR)"
    exit 0
fi
command -v perl >/dev/null || { echo "bench/svg: SKIP: perl not found"; exit 0; }
[ -x /usr/bin/time ] || { echo "bench/svg: SKIP: /usr/bin/time not found (apt-get install time)"; exit 0; }
inputs=$(FLAMEKIT=$fk "$src/bench/make-input.sh")
folded=$(printf '%s\n' "$inputs" | sed -n 2p)
[ -s "$folded" ] || { echo "bench/svg: make-input gave no folded file"; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/fk-bench-svg.XXXXXX")
trap 'rm -rf "$work"' EXIT
for i in 1 2 3 4 5 6; do cat "$folded"; done >"$work/x6.folded"

# run OUT CMD...: best wall time of 7 runs (us), then peak RSS (KB) of one
# more run under /usr/bin/time (kept out of the timed runs) -> "T R"
run() {
    local out=$1 best="" t0 t1 t
    shift
    for _ in 1 2 3 4 5 6 7; do
        # EPOCHREALTIME: no fork for the clock, which would weigh on 20 ms runs
        t0=${EPOCHREALTIME/[.,]/}
        "$@" >"$out"
        t1=${EPOCHREALTIME/[.,]/}
        t=$((t1 - t0))
        if [ -z "$best" ] || [ "$t" -lt "$best" ]; then best=$t; fi
    done
    /usr/bin/time -f '%M' -o "$work/rss" "$@" >"$out"
    echo "$best $(tail -1 "$work/rss")"
}

fail=0
bench() {
    local name=$1 in=$2
    read -r ft fr < <(run "$work/fg.svg" perl "$fgdir/flamegraph.pl" "$in")
    read -r kt kr < <(run "$work/fk.svg" "$fk" svg "$in")
    local fb kb
    fb=$(stat -c %s "$work/fg.svg")
    kb=$(stat -c %s "$work/fk.svg")
    awk -v n="$name" -v in_b="$(stat -c %s "$in")" -v ft="$ft" -v fr="$fr" -v fb="$fb" \
        -v kt="$kt" -v kr="$kr" -v kb="$kb" 'BEGIN {
        printf "%s: input %.1f MB folded\n", n, in_b / 1e6
        printf "  flamegraph.pl  %8.3f s  %7.1f MB RSS  %9d bytes SVG\n", ft / 1e6, fr / 1024, fb
        printf "  flamekit svg   %8.3f s  %7.1f MB RSS  %9d bytes SVG\n", kt / 1e6, kr / 1024, kb
        sp = ft / (kt > 0 ? kt : 1); rr = kr / fr; br = kb / fb
        printf "  speed-up %.1fx (target >= 20x)  RSS ratio %.2f (target <= 0.5)  SVG bytes ratio %.2f (target <= 1)\n", sp, rr, br
        exit !(sp >= 20 && rr <= 0.5 && br <= 1)
    }' || fail=1
}
bench "bench input" "$folded"
bench "6x concatenated" "$work/x6.folded"
[ $fail = 0 ] && echo "bench/svg: all targets met" || echo "bench/svg: some target missed"
