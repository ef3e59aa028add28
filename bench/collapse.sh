#!/usr/bin/env bash
# Benchmark: flamekit collapse vs FlameGraph's stackcollapse-perf.pl on
# ~65 MB of real `perf script` text (bench/make-input.sh), one core
# (taskset -c 0). Reports wall time (best of N), peak RSS, the ratios, and
# the memory of a 10x concatenated input (memory must follow unique stacks).
# Targets: >= 30x faster, peak RSS no higher, 10x input <= 1.2x memory.
# env: FLAMEKIT (binary), FLAMEGRAPH_DIR (default ~/.cache/flamekit/FlameGraph),
#      FK_BENCH_RUNS (default 5 for flamekit, 3 for the Perl tool).
set -euo pipefail
src=${FK_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
fk=${FLAMEKIT:-$src/build/flamekit}
fg=${FLAMEGRAPH_DIR:-$HOME/.cache/flamekit/FlameGraph}
runs=${FK_BENCH_RUNS:-5}
if [ ! -f "$fg/stackcollapse-perf.pl" ]; then
    echo "bench/collapse: SKIP: baseline missing: no $fg/stackcollapse-perf.pl." >&2
    echo "  get it: git clone https://github.com/brendangregg/FlameGraph $fg   (or set FLAMEGRAPH_DIR)" >&2
    exit 0
fi
for t in taskset perl; do command -v $t >/dev/null || { echo "bench/collapse: needs $t" >&2; exit 1; }; done
[ -x /usr/bin/time ] || { echo "bench/collapse: needs /usr/bin/time (apt-get install time)" >&2; exit 1; }
{ read -r txt; read -r _folded; } < <(FLAMEKIT=$fk "$src/bench/make-input.sh")
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fk-bench-collapse.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# measure RUNS CMD...: best wall seconds, mean CPU seconds (user+sys) and max
# peak RSS (KB) -> $best $cpu $rss. CPU time is less disturbed than wall time
# when other work shares the machine; both are reported.
measure() {
    local runs=$1; shift
    best= rss=0 cpu=0
    for ((i = 0; i < runs; i++)); do
        taskset -c 0 /usr/bin/time -f '%e %M %U %S' -o "$tmp/time" "$@" >"$tmp/out" 2>"$tmp/err" \
            || { cat "$tmp/err" >&2; echo "bench/collapse: '$*' failed" >&2; exit 1; }
        read -r e m u sy <"$tmp/time"
        cpu=$(awk -v c="$cpu" -v u="$u" -v s="$sy" -v n="$runs" 'BEGIN { print c + (u + s) / n }')
        # /usr/bin/time has 10 ms resolution: good enough for >0.05 s runs
        if [ -z "$best" ] || awk -v a="$e" -v b="$best" 'BEGIN{exit !(a < b)}'; then best=$e; fi
        if [ "$m" -gt "$rss" ]; then rss=$m; fi
    done
}
mb=$(awk -v b="$(stat -c %s "$txt")" 'BEGIN{printf "%.1f", b / 1048576}')
samples=$(grep -c -E '^[^[:space:]#].* [0-9]+ [^ ]+: *$' "$txt" || true)

measure "$runs" "$fk" collapse "$txt"; fk_t=$best fk_m=$rss fk_c=$cpu
cp "$tmp/out" "$tmp/fk.folded"
"$fk" collapse --period "$txt" >"$tmp/fkp.folded"
measure $(( runs > 3 ? 3 : runs )) perl "$fg/stackcollapse-perf.pl" "$txt"; pl_t=$best pl_m=$rss pl_c=$cpu
LC_ALL=C sort "$tmp/out" >"$tmp/pl.folded"
uniq_fk=$(wc -l <"$tmp/fk.folded"); uniq_pl=$(wc -l <"$tmp/pl.folded")
differ=$(diff "$tmp/pl.folded" "$tmp/fkp.folded" | grep -c '^>' || true)

# memory vs input size: the same input once and 10 times through a pipe
measure 1 sh -c 'cat "$1" | "$2" collapse -' sh "$txt" "$fk"; m1=$rss
measure 1 sh -c 'for i in 1 2 3 4 5 6 7 8 9 10; do cat "$1"; done | "$2" collapse -' sh "$txt" "$fk"; m10=$rss
# (sh and cat are tiny; /usr/bin/time reports the largest process of the tree)

ft=$(awk -v t="$fk_t" 'BEGIN { print (t < 0.01) ? 0.01 : t }')
fc=$(awk -v t="$fk_c" 'BEGIN { print (t < 0.01) ? 0.01 : t }')
awk -v mb="$mb" -v s="$samples" -v ufk="$uniq_fk" -v upl="$uniq_pl" -v d="$differ" \
    -v ft="$ft" -v fc="$fc" -v pc="$pl_c" -v fm="$fk_m" -v pt="$pl_t" -v pm="$pl_m" -v m1="$m1" -v m10="$m10" 'BEGIN {
    printf "input: %s MB of perf script text, %d samples (perf record -F 999 -a -g, compiles + compression)\n", mb, s
    printf "%-24s %8s %8s %8s %12s %8s\n", "tool (taskset -c 0)", "wall s", "CPU s", "MB/s", "peak RSS MB", "stacks"
    printf "%-24s %8.2f %8.2f %8.1f %12.1f %8d\n", "stackcollapse-perf.pl", pt, pc, mb / pt, pm / 1024, upl
    printf "%-24s %8.3f %8.3f %8.1f %12.1f %8d\n", "flamekit collapse", ft, fc, mb / ft, fm / 1024, ufk
    sp = pt / ft; sc = pc / fc; mr = fm / pm; gr = m10 / m1
    printf "speed-up vs stackcollapse-perf.pl: wall %.1fx, CPU %.1fx (target >= 30x): %s\n", sp, sc, (sp >= 30 && sc >= 30) ? "MET" : "NOT MET"
    printf "peak RSS ratio flamekit/perl: %.2f (target <= 1): %s\n", mr, (mr <= 1) ? "MET" : "NOT MET"
    printf "10x concatenated input (stdin): %.1f MB vs 1x %.1f MB = %.2fx (target <= 1.2x): %s\n", m10 / 1024, m1 / 1024, gr, (gr <= 1.2) ? "MET" : "NOT MET"
    printf "--period output vs stackcollapse-perf.pl: %d of %d lines differ (see flamekit-collapse(1): comm parsing, [vdso] naming, trailing spaces)\n", d, ufk
}'
