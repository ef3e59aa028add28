#!/usr/bin/env bash
# Overhead of a 1-in-100 page-fault capture on a fault-heavy workload:
# the workload's own wall time under `flamekit faults -c 100` and under
# `perf record -e page-faults -c 100 -g`, each against the same workload
# unprofiled, all measured in this run (interleaved, median of REPS).
# Environment: FK_BENCH_REPS (default 5), FK_BENCH_LAB_ARGS.
set -eu
: "${FK_BUILD:?run through make bench}" "${FLAMEKIT:?run through make bench}"
LAB=$FK_BUILD/flamekit-fault-lab
REPS=${FK_BENCH_REPS:-5}
# 128M touched twice per loop (MADV_DONTNEED in between), 4 loops: 262144 faults.
read -r -a ARGS <<<"${FK_BENCH_LAB_ARGS:--s 128M -r dontneed -n 4 --kv}"
T=$(mktemp -d "${TMPDIR:-/tmp}/fk-bench-faults.XXXXXX")
trap 'rm -rf "$T"' EXIT

"$FLAMEKIT" faults --help >/dev/null 2>&1 || { echo "bench/faults.sh: this flamekit has no 'faults' command: skipped"; exit 0; }
have_perf=1; command -v perf >/dev/null 2>&1 || have_perf=0
elapsed() { awk '$1 == "step=total" { for (i = 2; i <= NF; i++) if ($i ~ /^elapsed_us=/) { sub(/^elapsed_us=/, "", $i); print $i } }' "$1"; }

run_base() { "$LAB" "${ARGS[@]}" >"$T/out" 2>"$T/err"; elapsed "$T/out"; }
run_flamekit() {
    rm -rf "$T/fk"
    "$FLAMEKIT" faults -c 100 -q -o "$T/fk" run -- "$LAB" "${ARGS[@]}" >"$T/out" 2>"$T/err" \
        || { echo "bench/faults.sh: flamekit faults failed: $(tail -3 "$T/err")" >&2; exit 1; }
    elapsed "$T/out"
}
run_perf() {
    perf record -q -e page-faults -c 100 -g -o "$T/perf.data" -- "$LAB" "${ARGS[@]}" >"$T/out" 2>"$T/err" \
        || { echo "bench/faults.sh: perf record failed: $(tail -3 "$T/err")" >&2; exit 1; }
    elapsed "$T/out"
}

base=() fk=() pf=()
run_base >/dev/null    # warm the page cache and the allocator
for ((r = 0; r < REPS; r++)); do
    base+=("$(run_base)")
    fk+=("$(run_flamekit)")
    [ $have_perf = 1 ] && pf+=("$(run_perf)")
done
faults=$(awk '$1 == "step=total" { for (i = 2; i <= NF; i++) if ($i ~ /^minflt=/) { sub(/^minflt=/, "", $i); print $i } }' "$T/out")
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
mb=$(median "${base[@]}")
mf=$(median "${fk[@]}")
printf 'workload: flamekit-fault-lab %s (%s faults), median of %d runs, 1 in 100\n' "${ARGS[*]}" "$faults" "$REPS"
printf '%-44s %12s %10s\n' "configuration" "workload ms" "slowdown"
row() { awk -v n="$1" -v t="$2" -v b="$mb" 'BEGIN { printf "%-44s %12.1f %9.1f%%\n", n, t / 1000, (t / b - 1) * 100 }'; }
row "unprofiled (baseline)" "$mb"
row "flamekit faults -c 100 run --" "$mf"
if [ $have_perf = 1 ]; then
    mp=$(median "${pf[@]}")
    row "perf record -e page-faults -c 100 -g" "$mp"
    awk -v f="$mf" -v p="$mp" -v b="$mb" 'BEGIN { printf "flamekit overhead / perf overhead: %.2f\n", ((p - b) > 0) ? (f - b) / (p - b) : 0 }'
else
    echo "perf not installed: perf comparison skipped"
fi
