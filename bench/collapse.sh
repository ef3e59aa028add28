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
# there, else /usr/bin/time; output into a pipe) over rounds after a
# warm-up: each round runs every tool once (flamekit, the Perl tool and,
# with FK_BASELINE, a previous flamekit build), in an order that rotates
# from round to round, so that what the machine does meanwhile (other
# load, CPU frequency, caches warmed by the run before) falls on every
# tool alike. A ratio is taken within each round, then the median and the
# range (lowest-highest) of the rounds' ratios are reported: the speed of
# the Perl tool itself moves with the machine's state (1.6-1.8x between
# two sessions here), and a ratio from one round does not. Also peak RSS,
# and the memory of a 10x concatenated input (memory must follow unique
# stacks). Targets: CPU >= 40x less on every input (median of the
# rounds), peak RSS no higher than the Perl tool's, 10x input <= 1.2x
# memory.
# env: FLAMEKIT (binary), FLAMEGRAPH_DIR (default ~/.cache/flamekit/FlameGraph),
#      FK_BASELINE (a previous flamekit binary or its build directory, e.g.
#      of the commit a change starts from: measured in the same rounds; its
#      ratios are reported, and "new/old", the rounds' CPU of FLAMEKIT over
#      FK_BASELINE's),
#      FK_BENCH_RUNS (rounds, default 7, at least 5),
#      FK_BENCH_INPUTS (default "deep deep2 shallow"; an item with a '/' is
#      a file of `perf script` text of your own, e.g. a fresh held-out
#      capture: perf record -g -- WORKLOAD; perf script > /tmp/held.txt).
set -euo pipefail
src=${FK_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
fk=${FLAMEKIT:-$src/build/flamekit}
fg=${FLAMEGRAPH_DIR:-$HOME/.cache/flamekit/FlameGraph}
base=${FK_BASELINE:-}
[ -n "$base" ] && [ -d "$base" ] && base=$base/flamekit    # a build directory
runs=${FK_BENCH_RUNS:-7}
[ "$runs" -ge 5 ] || { echo "bench/collapse: FK_BENCH_RUNS must be at least 5" >&2; exit 2; }
if [ ! -f "$fg/stackcollapse-perf.pl" ]; then
    echo "bench/collapse: SKIP: baseline missing: no $fg/stackcollapse-perf.pl." >&2
    echo "  get it: git clone https://github.com/brendangregg/FlameGraph $fg   (or set FLAMEGRAPH_DIR)" >&2
    exit 0
fi
if [ -n "$base" ] && ! "$base" collapse --help >/dev/null 2>&1; then
    echo "bench/collapse: FK_BASELINE=$base is not a flamekit binary with collapse" >&2
    exit 2
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

# the tools: flamekit (new), the Perl tool, the previous build (FK_BASELINE)
tools=(new perl)
[ -n "$base" ] && tools+=(old)
# tool_cmd NAME INPUT -> cmd=(...)
tool_cmd() {
    case $1 in
    new) cmd=("$fk" collapse "$2") ;;
    old) cmd=("$base" collapse "$2") ;;
    perl) cmd=(perl "$fg/stackcollapse-perf.pl" "$2") ;;
    esac
}

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
# stats: numbers on stdin -> "median lowest highest"
stats() {
    sort -g | awk '{ v[NR] = $1 } END {
        m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
        print m, v[1], v[NR] }'
}
# rounds N INPUT: N rounds of every tool, after a warm-up of each; round i
# starts at tool i (mod the number of tools) and goes on in order. Each
# tool's CPU ms per round -> $tmp/cpu.TOOL (one line a round)
rounds() {
    local n=$1 txt=$2 i j k t nt=${#tools[@]}
    taskset -c 0 timeout 1 sh -c 'while :; do :; done' || true
    for t in "${tools[@]}"; do
        tool_cmd "$t" "$txt"
        taskset -c 0 "${cmd[@]}" >/dev/null 2>&1 || true
        : >"$tmp/cpu.$t"
    done
    for ((i = 0; i < n; i++)); do
        declare -A got=()
        for ((j = 0; j < nt; j++)); do
            k=$(( (i + j) % nt ))
            t=${tools[$k]}
            tool_cmd "$t" "$txt"
            cpu_once "${cmd[@]}"
            got[$t]=$c
        done
        for t in "${tools[@]}"; do echo "${got[$t]}" >>"$tmp/cpu.$t"; done
        unset got
    done
}
# ratio_stats A B: per round CPU of A over B -> "median lowest highest"
ratio_stats() {
    paste "$tmp/cpu.$1" "$tmp/cpu.$2" | awk '{ print $1 / ($2 > 0 ? $2 : 1) }' | stats
}

fail=0
for kind in ${FK_BENCH_INPUTS:-deep deep2 shallow}; do
    case $kind in
    */*) [ -f "$kind" ] || { echo "bench/collapse: no input file $kind" >&2; exit 2; }
         txt=$kind ;;
    *) { read -r txt; read -r _folded; } < <(FLAMEKIT=$fk "$src/bench/make-input.sh" "$kind") ;;
    esac
    mb=$(awk -v b="$(stat -c %s "$txt")" 'BEGIN{printf "%.1f", b / 1048576}')
    rounds "$runs" "$txt"
    rss_once "$fk" collapse "$txt"; fk_r=$rss
    cp "$tmp/out" "$tmp/fk.folded"
    rss_once perl "$fg/stackcollapse-perf.pl" "$txt"; pl_r=$rss
    mv "$tmp/out" "$tmp/pl.folded"
    old_r=0
    if [ -n "$base" ]; then rss_once "$base" collapse "$txt"; old_r=$rss; fi
    "$fk" collapse --period "$txt" >"$tmp/fkp.folded"
    differ=$(diff "$tmp/pl.folded" "$tmp/fkp.folded" | grep -c '^>' || true)
    read -r samples depth < <(awk '{ c = $NF; s = $0; sub(/ [0-9]+$/, "", s); n = split(s, f, ";"); h[n] += c; t += c }
        END { for (d = 1; d < 100000; d++) { a += h[d]; if (a >= t / 2) { print t, d; exit } } }' "$tmp/fk.folded")
    read -r fc fc_lo fc_hi < <(stats <"$tmp/cpu.new")
    read -r pc pc_lo pc_hi < <(stats <"$tmp/cpu.perl")
    read -r r r_lo r_hi < <(ratio_stats perl new)
    oc=0 oc_lo=0 oc_hi=0 ro=0 ro_lo=0 ro_hi=0 no=0 no_lo=0 no_hi=0
    if [ -n "$base" ]; then
        read -r oc oc_lo oc_hi < <(stats <"$tmp/cpu.old")
        read -r ro ro_lo ro_hi < <(ratio_stats perl old)
        read -r no no_lo no_hi < <(ratio_stats new old)
    fi
    awk -v k="$kind" -v mb="$mb" -v s="$samples" -v d="$depth" -v u="$(wc -l <"$tmp/fk.folded")" -v df="$differ" \
        -v fc="$fc" -v fcl="$fc_lo" -v fch="$fc_hi" -v fm="$fk_r" \
        -v pc="$pc" -v pcl="$pc_lo" -v pch="$pc_hi" -v pm="$pl_r" \
        -v oc="$oc" -v ocl="$oc_lo" -v och="$oc_hi" -v om="$old_r" -v old="$base" \
        -v r="$r" -v rl="$r_lo" -v rh="$r_hi" -v ro="$ro" -v rol="$ro_lo" -v roh="$ro_hi" \
        -v no="$no" -v nol="$no_lo" -v noh="$no_hi" -v n="$runs" 'BEGIN {
        printf "%s: %s MB of perf script text, %d samples, median depth %d, %d stacks\n", k, mb, s, d, u
        printf "  %-26s %28s %12s\n", "tool (taskset -c 0)", "CPU ms: median (range)", "peak RSS MB"
        printf "  %-26s %10.0f (%6.0f - %6.0f) %12.1f\n", "stackcollapse-perf.pl", pc, pcl, pch, pm / 1024
        printf "  %-26s %10.1f (%6.1f - %6.1f) %12.1f\n", "flamekit collapse", fc, fcl, fch, fm / 1024
        if (old != "")
            printf "  %-26s %10.1f (%6.1f - %6.1f) %12.1f\n", "FK_BASELINE collapse", oc, ocl, och, om / 1024
        mr = fm / pm
        printf "  CPU %.1fx less than the Perl tool (median of %d rounds; range %.1f-%.1fx) (target >= 40x): %s\n", r, n, rl, rh, (r >= 40) ? "MET" : "NOT MET"
        if (old != "") {
            printf "  FK_BASELINE: %.1fx less than the Perl tool (range %.1f-%.1fx)\n", ro, rol, roh
            printf "  new/old CPU %.3f (range %.3f-%.3f), same rounds\n", no, nol, noh
        }
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
