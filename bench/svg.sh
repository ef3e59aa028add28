#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Benchmark: flamekit svg vs FlameGraph's flamegraph.pl on the same folded
# input (bench/make-input.sh: real perf records of this machine), at
# flamegraph.pl's default minwidth, in one run:
#   1. rendering: wall time (best of 7), peak RSS and SVG bytes of both,
#      and the ratios, on the shallow input, a ~50k-sample deep profile (the
#      deep and deep2 inputs together) and the shallow input 6x over.
#      Targets: >= 20x faster, RSS <= 1/2, bytes <= 0.85x (our SVG also
#      holds every frame too narrow to draw, for exact figures).
#   2. in the browser (headless Chromium, test/browser.js), the ~50k-sample
#      profile: load (navigation start to the end of the load event, our
#      script's drawing included), zoom into the busiest frame under the root
#      and a regex search, for both SVGs, best of 3.
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
folded() { FLAMEKIT=$fk "$src/bench/make-input.sh" "$1" | sed -n 2p; }
shallow=$(folded shallow)
deep=$(folded deep)
deep2=$(folded deep2)
for f in "$shallow" "$deep" "$deep2"; do
    [ -s "$f" ] || { echo "bench/svg: make-input gave no folded file"; exit 1; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/fk-bench-svg.XXXXXX")
trap 'rm -rf "$work"' EXIT
for i in 1 2 3 4 5 6; do cat "$shallow"; done >"$work/x6.folded"
cat "$deep" "$deep2" >"$work/50k.folded"

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
    local fb kb samples
    fb=$(stat -c %s "$work/fg.svg")
    kb=$(stat -c %s "$work/fk.svg")
    samples=$(awk '{ s += $NF } END { print s }' "$in")
    awk -v n="$name" -v in_b="$(stat -c %s "$in")" -v s="$samples" -v ft="$ft" -v fr="$fr" -v fb="$fb" \
        -v kt="$kt" -v kr="$kr" -v kb="$kb" 'BEGIN {
        printf "%s: input %.1f MB folded, %d samples\n", n, in_b / 1e6, s
        printf "  flamegraph.pl  %8.3f s  %7.1f MB RSS  %9d bytes SVG\n", ft / 1e6, fr / 1024, fb
        printf "  flamekit svg   %8.3f s  %7.1f MB RSS  %9d bytes SVG\n", kt / 1e6, kr / 1024, kb
        sp = ft / (kt > 0 ? kt : 1); rr = kr / fr; br = kb / fb
        printf "  speed-up %.1fx (target >= 20x)  RSS ratio %.2f (target <= 0.5)  SVG bytes ratio %.2f (target <= 0.85)\n", sp, rr, br
        exit !(sp >= 20 && rr <= 0.5 && br <= 0.85)
    }' || fail=1
}
bench "shallow input" "$shallow"
bench "deep + deep2 (~50k samples)" "$work/50k.folded"
bench "shallow 6x concatenated" "$work/x6.folded"

# --- browser timings on the ~50k-sample profile ---
chrome=$(command -v chromium || true)
if [ -z "$chrome" ] || ! command -v node >/dev/null; then
    echo "bench/svg: browser timings skipped: needs chromium and node"
else
    perl "$fgdir/flamegraph.pl" "$work/50k.folded" >"$work/fg50k.svg"
    "$fk" svg -o "$work/fk50k.svg" "$work/50k.folded"
    # the busiest frame under the root (comm), then its busiest child
    zpath=$(awk '{ c = $NF; split($0, f, ";"); sub(/ [0-9]+$/, "", f[2]); if (f[2] != "") t[f[1] ";" f[2]] += c }
        END { for (k in t) if (t[k] > b) { b = t[k]; p = k } print p }' "$work/50k.folded")
    re='malloc|memcpy|page_fault'
    best() { sort -n | head -1; }
    for tool in fg fk; do
        for i in 1 2 3; do
            FK_CHROMIUM=$chrome timeout 300 node "$src/test/browser.js" "$src/test/svg-scenarios.js" \
                "timings:$work/${tool}50k.svg,${zpath//,/%2C},$re" >"$work/t.$tool.$i" 2>"$work/t.err" ||
                { echo "bench/svg: browser run failed: $(tail -3 "$work/t.err")"; fail=1; }
        done
        for k in load.nav zoom.ms search.ms; do
            v=$(cat "$work"/t.$tool.* | sed -n "s/^$k=//p" | best)
            eval "${tool}_${k%%.*}=\$v"
        done
        eval "${tool}_matched=\$(sed -n 's/^matched=//p' \"\$work/t.$tool.1\")"
    done
    echo "browser (headless chromium, 1280x800), ~50k-sample profile, best of 3 (ms):"
    printf '  %-16s %10s %10s %10s\n' "" load zoom search
    printf '  %-16s %10s %10s %10s\n' "flamegraph.pl" "$fg_load" "$fg_zoom" "$fg_search"
    printf '  %-16s %10s %10s %10s\n' "flamekit svg" "$fk_load" "$fk_zoom" "$fk_search"
    echo "  zoom into: $zpath; search: /$re/"
    echo "  Matched shown: flamegraph.pl \"$fg_matched\", flamekit \"$fk_matched\""
fi
[ $fail = 0 ] && echo "bench/svg: all targets met" || echo "bench/svg: some target missed"
