#!/usr/bin/env bash
# Overhead of a 1-in-100 page-fault capture on a fault-heavy workload:
# the workload's own wall time and CPU time (user + system, where fault
# handling is accounted) under `flamekit faults -c 100` and under
# `perf record -e page-faults -c 100 -g`, each against the same workload
# unprofiled, all measured in this run (interleaved, median of REPS).
# Environment: FK_BENCH_REPS (default 7), FK_BENCH_LAB_ARGS.
set -eu
: "${FK_BUILD:?run through make bench}" "${FLAMEKIT:?run through make bench}"
LAB=$FK_BUILD/flamekit-fault-lab
REPS=${FK_BENCH_REPS:-7}
# 128M touched twice per loop (MADV_DONTNEED in between), 4 loops: 262144 faults.
read -r -a ARGS <<<"${FK_BENCH_LAB_ARGS:--s 128M -r dontneed -n 4 --kv}"
T=$(mktemp -d "${TMPDIR:-/tmp}/fk-bench-faults.XXXXXX")
trap 'rm -rf "$T"' EXIT

"$FLAMEKIT" faults --help >/dev/null 2>&1 || { echo "bench/faults.sh: this flamekit has no 'faults' command: skipped"; exit 0; }
have_perf=1; command -v perf >/dev/null 2>&1 || have_perf=0
# "WALL_US CPU_US" from the lab's total line.
times() { awk '$1 == "step=total" { for (i = 2; i <= NF; i++) { split($i, a, "="); v[a[1]] = a[2] } print v["elapsed_us"], v["cpu_us"] }' "$1"; }

run_base() { "$LAB" "${ARGS[@]}" >"$T/out" 2>"$T/err"; times "$T/out"; }
run_flamekit() {
    rm -rf "$T/fk"
    "$FLAMEKIT" faults -c 100 -q -o "$T/fk" run -- "$LAB" "${ARGS[@]}" >"$T/out" 2>"$T/err" \
        || { echo "bench/faults.sh: flamekit faults failed: $(tail -3 "$T/err")" >&2; exit 1; }
    times "$T/out"
}
run_perf() {
    perf record -q -e page-faults -c 100 -g -o "$T/perf.data" -- "$LAB" "${ARGS[@]}" >"$T/out" 2>"$T/err" \
        || { echo "bench/faults.sh: perf record failed: $(tail -3 "$T/err")" >&2; exit 1; }
    times "$T/out"
}

: >"$T/base" ; : >"$T/fkt"; : >"$T/perf"
run_base >/dev/null    # warm the page cache and the allocator
for ((r = 0; r < REPS; r++)); do
    run_base >>"$T/base"
    run_flamekit >>"$T/fkt"
    [ $have_perf = 1 ] && run_perf >>"$T/perf"
done
faults=$(awk '$1 == "step=total" { for (i = 2; i <= NF; i++) if ($i ~ /^minflt=/) { sub(/^minflt=/, "", $i); print $i } }' "$T/out")
# median COLUMN FILE
median() { awk -v c="$1" '{ print $c }' "$2" | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
bw=$(median 1 "$T/base"); bc=$(median 2 "$T/base")
printf 'workload: flamekit-fault-lab %s (%s faults), median of %d runs, 1 in 100\n' "${ARGS[*]}" "$faults" "$REPS"
printf '%-40s %10s %9s %10s %9s\n' "configuration" "wall ms" "slowdown" "cpu ms" "slowdown"
row() {
    awk -v n="$1" -v w="$2" -v c="$3" -v bw="$bw" -v bc="$bc" \
        'BEGIN { printf "%-40s %10.1f %8.1f%% %10.1f %8.1f%%\n", n, w / 1000, (w / bw - 1) * 100, c / 1000, (c / bc - 1) * 100 }'
}
row "unprofiled (baseline)" "$bw" "$bc"
fw=$(median 1 "$T/fkt"); fc=$(median 2 "$T/fkt")
row "flamekit faults -c 100 run --" "$fw" "$fc"
if [ $have_perf = 1 ]; then
    pw=$(median 1 "$T/perf"); pc=$(median 2 "$T/perf")
    row "perf record -e page-faults -c 100 -g" "$pw" "$pc"
    awk -v f="$fc" -v p="$pc" -v b="$bc" 'BEGIN { if ((p - b) > 0) printf "CPU overhead, flamekit / perf: %.2f\n", (f - b) / (p - b); else print "CPU overhead, flamekit / perf: perf overhead not measurable in this run" }'
else
    echo "perf not installed: perf comparison skipped"
fi
