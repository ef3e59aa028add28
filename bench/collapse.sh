#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Benchmark: flamekit collapse vs FlameGraph's stackcollapse-perf.pl on ~65 MB
# of real `perf script` text (bench/make-input.sh), on one core (taskset -c
# 0), side by side in one run, for three inputs:
#   deep     node/npm, gcc and xz (median stack depth ~21): what collapse is
#            tuned on
#   deep2    held out, never tuned on: g++, node JSON work, npm, zstd/xz
#   shallow  gcc and xz/gzip host capture (median depth ~3)
# Reports CPU time (user+sys from perf stat's task-clock when perf is
# there, else /usr/bin/time; output into a pipe) of alternating pairs
# (flamekit, then the Perl tool) after a warm-up, the median of the pairs'
# ratios, peak RSS, and the memory of a 10x concatenated input (memory must
# follow unique stacks). Targets: CPU >= 40x less on every input (median
# of the pairs), peak RSS no higher than the Perl tool's, 10x input <= 1.2x
# memory.
# env: FLAMEKIT (binary), FLAMEGRAPH_DIR (default ~/.cache/flamekit/FlameGraph),
#      FK_BENCH_RUNS (alternating pairs, default and minimum 5),
#      FK_BENCH_INPUTS (default "deep deep2 shallow"; an item with a '/' is
#      a file of `perf script` text of your own, e.g. a fresh held-out
#      capture: perf record -g -- WORKLOAD; perf script > /tmp/held.txt).
set -euo pipefail
src=${FK_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
fk=${FLAMEKIT:-$src/build/flamekit}
fg=${FLAMEGRAPH_DIR:-$HOME/.cache/flamekit/FlameGraph}
runs=${FK_BENCH_RUNS:-5}
[ "$runs" -ge 5 ] || { echo "bench/collapse: FK_BENCH_RUNS must be at least 5" >&2; exit 2; }
if [ ! -f "$fg/stackcollapse-perf.pl" ]; then
    echo "bench/collapse: SKIP: baseline missing: no $fg/stackcollapse-perf.pl." >&2
    echo "  get it: git clone https://github.com/brendangregg/FlameGraph $fg   (or set FLAMEGRAPH_DIR)" >&2
    exit 0
fi
for t in taskset perl; do command -v $t >/dev/null || { echo "bench/collapse: needs $t" >&2; exit 1; }; done
[ -x /usr/bin/time ] || { echo "bench/collapse: needs /usr/bin/time (apt-get install time)" >&2; exit 1; }
# outputs (17-60 MB) go to a tmpfs when there is one: both tools write the
# same bytes, and a disk file system's write-back is not collapsing work
tmpbase=${TMPDIR:-/tmp}
[ -d /dev/shm ] && [ -w /dev/shm ] && tmpbase=/dev/shm
tmp=$(mktemp -d "$tmpbase/fk-bench-collapse.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# the output goes into a pipe read on the other core, as in
# "perf script | flamekit collapse | flamekit svg" (writing 17 MB into a file
# costs ~15 ms of kernel time here whatever tool writes it)
reader=$(( $(nproc) > 1 ? 1 : 0 ))
# perf stat's task-clock counts CPU milliseconds with no 10 ms granularity
have_perf=0
perf stat -x, -e task-clock true >/dev/null 2>&1 && have_perf=1

# cpu_once CMD...: CPU ms of one run on core 0, output into a pipe read on
# the other core -> $c
cpu_once() {
    if [ $have_perf = 1 ]; then
        taskset -c 0 perf stat -x, -o "$tmp/stat" -e task-clock "$@" 2>"$tmp/err" \
            | taskset -c "$reader" cat >/dev/null \
            || { cat "$tmp/err" >&2; echo "bench/collapse: '$*' failed" >&2; exit 1; }
        c=$(awk -F, '/task-clock/ { print $1 }' "$tmp/stat")
    else
        taskset -c 0 /usr/bin/time -f '%U %S' -o "$tmp/time" "$@" 2>"$tmp/err" \
            | taskset -c "$reader" cat >/dev/null \
            || { cat "$tmp/err" >&2; echo "bench/collapse: '$*' failed" >&2; exit 1; }
        c=$(awk '{ print ($1 + $2) * 1000 }' "$tmp/time")
    fi
}
# peak RSS KB of one run under /usr/bin/time alone (perf stat's own memory
# would count otherwise) -> $rss; its output in $tmp/out
rss_once() {
    taskset -c 0 /usr/bin/time -f '%M' -o "$tmp/time" "$@" >"$tmp/out" 2>"$tmp/err" \
        || { cat "$tmp/err" >&2; exit 1; }
    rss=$(tail -1 "$tmp/time")
}
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# pairs N INPUT: N alternating runs of flamekit and the Perl tool (so load
# from others falls on both alike), after a warm-up of each; per-pair CPU
# ratios -> $fk_m $pl_m (median CPU ms) $ratio (median of the pair ratios)
# $ratio_lo (the lowest pair ratio)
pairs() {
    local n=$1 txt=$2 i fks=() pls=() rs=()
    taskset -c 0 timeout 1 sh -c 'while :; do :; done' || true
    taskset -c 0 "$fk" collapse "$txt" >/dev/null 2>&1 || true
    taskset -c 0 perl "$fg/stackcollapse-perf.pl" "$txt" >/dev/null 2>&1 || true
    for ((i = 0; i < n; i++)); do
        cpu_once "$fk" collapse "$txt"; local a=$c
        cpu_once perl "$fg/stackcollapse-perf.pl" "$txt"; local b=$c
        fks+=("$a") pls+=("$b") rs+=("$(awk -v a="$a" -v b="$b" 'BEGIN { print b / (a > 0 ? a : 1) }')")
    done
    fk_m=$(printf '%s\n' "${fks[@]}" | median)
    pl_m=$(printf '%s\n' "${pls[@]}" | median)
    ratio=$(printf '%s\n' "${rs[@]}" | median)
    ratio_lo=$(printf '%s\n' "${rs[@]}" | sort -n | head -1)
}

fail=0
for kind in ${FK_BENCH_INPUTS:-deep deep2 shallow}; do
    case $kind in
    */*) [ -f "$kind" ] || { echo "bench/collapse: no input file $kind" >&2; exit 2; }
         txt=$kind ;;
    *) { read -r txt; read -r _folded; } < <(FLAMEKIT=$fk "$src/bench/make-input.sh" "$kind") ;;
    esac
    mb=$(awk -v b="$(stat -c %s "$txt")" 'BEGIN{printf "%.1f", b / 1048576}')
    pairs "$runs" "$txt"
    rss_once "$fk" collapse "$txt"; fk_r=$rss
    cp "$tmp/out" "$tmp/fk.folded"
    rss_once perl "$fg/stackcollapse-perf.pl" "$txt"; pl_r=$rss
    "$fk" collapse --period "$txt" >"$tmp/fkp.folded"
    differ=$(diff "$tmp/out" "$tmp/fkp.folded" | grep -c '^>' || true)
    read -r samples depth < <(awk '{ c = $NF; s = $0; sub(/ [0-9]+$/, "", s); n = split(s, f, ";"); h[n] += c; t += c }
        END { for (d = 1; d < 100000; d++) { a += h[d]; if (a >= t / 2) { print t, d; exit } } }' "$tmp/fk.folded")
    awk -v k="$kind" -v mb="$mb" -v s="$samples" -v d="$depth" -v u="$(wc -l <"$tmp/fk.folded")" -v df="$differ" \
        -v fc="$fk_m" -v fm="$fk_r" -v pc="$pl_m" -v pm="$pl_r" -v r="$ratio" -v rl="$ratio_lo" -v n="$runs" 'BEGIN {
        printf "%s: %s MB of perf script text, %d samples, median depth %d, %d stacks\n", k, mb, s, d, u
        printf "  %-24s %14s %12s\n", "tool (taskset -c 0)", "CPU ms (median)", "peak RSS MB"
        printf "  %-24s %14.0f %12.1f\n", "stackcollapse-perf.pl", pc, pm / 1024
        printf "  %-24s %14.1f %12.1f\n", "flamekit collapse", fc, fm / 1024
        mr = fm / pm
        printf "  CPU %.1fx less (median of %d alternating pairs; lowest pair %.1fx) (target >= 40x): %s\n", r, n, rl, (r >= 40) ? "MET" : "NOT MET"
        printf "  peak RSS ratio %.2f (target <= 1): %s\n", mr, (mr <= 1) ? "MET" : "NOT MET"
        printf "  --period output vs stackcollapse-perf.pl: %d of %d lines differ (flamekit-collapse(1) says why)\n", df, u
        exit !(r >= 40 && mr <= 1)
    }' || fail=1
done

# memory vs input size: the deep input once and 10 times through a pipe
{ read -r txt; read -r _; } < <(FLAMEKIT=$fk "$src/bench/make-input.sh" deep)
rss_once sh -c 'cat "$1" | "$2" collapse -' sh "$txt" "$fk"; m1=$rss
rss_once sh -c 'for i in 1 2 3 4 5 6 7 8 9 10; do cat "$1"; done | "$2" collapse -' sh "$txt" "$fk"; m10=$rss
awk -v m1="$m1" -v m10="$m10" 'BEGIN { gr = m10 / m1
    printf "10x concatenated deep input (stdin): %.1f MB vs 1x %.1f MB = %.2fx (target <= 1.2x): %s\n", m10 / 1024, m1 / 1024, gr, (gr <= 1.2) ? "MET" : "NOT MET"
    exit !(gr <= 1.2) }' || fail=1
[ $fail = 0 ] && echo "bench/collapse: all targets met" || echo "bench/collapse: some target missed"
