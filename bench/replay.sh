#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The capture engine's cost per sample, replayed (bench/replay.c): a window
# of raw ring records is recorded once while python3.11 runs deep stacks on
# every CPU, then replayed on one core through decode -> unwind -> locate
# -> aggregate (and the wake-ups' symbol loading), then named.
#  (1) python3.11 input: the workers' own samples (pid target), 999 Hz.
#      Target >= 250,000 samples/s/core; median and p99 us per sample.
#  (2) host input: every process, 999 Hz (what 'flamekit host -F 999' sees).
#  (3) a 128-CPU host at 99 Hz for 60 s (12,700 samples/s): the host input
#      replayed into one engine until it holds 762,000 samples: RSS
#      (target <= 128 MB) and whether one core keeps up (rate >= 12,700/s).
# samples/s/core is the process's CPU time (the replaying thread and the
# kallsyms reader) less reading the recording, which is streamed through
# a 1 MB buffer, so RSS is the engine's. A streamed record was read just
# before it is replayed: its stack copy is warmer in the cache than live,
# where the copy is tens of ms old. In one run (not quiet), the same
# engine took about 16 % less CPU streamed than from the whole file in
# memory (the driver before 2026-12-05): compare rates only between
# drivers that read alike, and in (4) use a baseline built with this
# driver. Median and p99 per sample are wall time (monotonic
# clock around each sample: a preempted sample counts its wait, so read
# them on a quiet machine). The first pass includes reading each binary's
# CFI and symbols and kallsyms, the later passes are steady state: the
# steady rate is the extra samples of 10 passes over 1 per extra CPU second,
# the first pass's fixed cost what 1 pass took beyond that.
# The workers are stopped (SIGSTOP) once recorded: replays run on a machine
# they do not load, and their address spaces stay for the /proc scan.
#  (4) with FK_BASELINE (a baseline build directory holding bench/replay,
#      e.g. main built in /tmp/base/build): (1) by both builds, alternating
#      FK_BENCH_PAIRS times (default 3) on the same recording; ratios
#      new/base of the medians; and whether one pass's folded output is
#      byte-identical (replay run FILE 1 FOLDED).
# env: FK_BUILD (build dir), FK_BENCH_REPLAY_SECS (recorded window, default 10),
#      FK_BASELINE, FK_BENCH_PAIRS
set -euo pipefail
src=${FK_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
build=${FK_BUILD:-$src/build}
replay=$build/bench/replay
secs=${FK_BENCH_REPLAY_SECS:-10}
PY=/usr/bin/python3.11
[ -x "$replay" ] || { echo "bench/replay: SKIP: $replay not built (make check-programs)"; exit 0; }
command -v "$PY" >/dev/null || { echo "bench/replay: SKIP: $PY not found"; exit 0; }
work=$(mktemp -d "${TMPDIR:-/tmp}/fk-bench-replay.XXXXXX")
pids=()
cleanup() { for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
echo "bench/replay: load average at start: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"
# the deep-stack workload of bench/unwind.sh
sed -n '/^cat >busy.py <<.EOF.$/,/^EOF$/p' "$src/bench/unwind.sh" | sed '1d;$d' >"$work/busy.py"
for ((i = 0; i < $(nproc); i++)); do "$PY" "$work/busy.py" 100000 & pids+=($!); done
sleep 1
list=$(IFS=,; echo "${pids[*]}")
fig() { sed -n 's/^replay-figures: //p' "$1"; }
val() { tr ' ' '\n' <<<"$1" | sed -n "s/^$2=//p"; }

"$replay" record "$work/py.rec" "$secs" 999 "$list" >"$work/py.log"
"$replay" record "$work/host.rec" "$secs" 999 >"$work/host.log"
kill -STOP "${pids[@]}"
# steady rate and first-pass fixed ms from a 1-pass and a 10-pass run
steady() {  # steady FIG1 FIG10 -> "RATE FIXED_MS"
    awk -v n1="$(val "$1" samples)" -v c1="$(val "$1" cpu_s)" -v n10="$(val "$2" samples)" \
        -v c10="$(val "$2" cpu_s)" 'BEGIN { r = c10 > c1 ? (n10 - n1) / (c10 - c1) : 0
        printf "%.0f %.1f\n", r, (r > 0 ? 1e3 * (c1 - n1 / r) : 0) }'
}
echo "(1) python3.11 input: $(sed 's/^recorded //' "$work/py.log")"
"$replay" run "$work/py.rec" 1 >"$work/py1.out"
"$replay" run "$work/py.rec" 10 >"$work/py10.out"
for r in py1 py10; do
    f=$(fig "$work/$r.out")
    printf '    %-14s %8s samples/s/core (target >= 250000); median %s us, p99 %s us per sample (wall); RSS %s MB\n' \
        "${r/py/passes: }" "$(val "$f" rate)" "$(val "$f" median_us)" "$(val "$f" p99_us)" "$(val "$f" rss_mb)"
done
read -r rate fixed < <(steady "$(fig "$work/py1.out")" "$(fig "$work/py10.out")")
echo "    steady state: $rate samples/s/core; first pass's fixed cost $fixed ms (kallsyms, CFI, symbols)"
f=$(fig "$work/py1.out")
echo "    complete user stacks: $(val "$f" complete) of $(val "$f" unwound)"
echo "(2) host input: $(sed 's/^recorded //' "$work/host.log")"
"$replay" run "$work/host.rec" 3 >"$work/host.out"
f=$(fig "$work/host.out")
printf '    %8s samples/s/core; median %s us, p99 %s us per sample (wall)\n' "$(val "$f" rate)" \
    "$(val "$f" median_us)" "$(val "$f" p99_us)"
n=$(val "$f" samples)
rounds=$(( n > 0 ? (762000 * 3 + n - 1) / n : 1 ))
"$replay" run "$work/host.rec" "$rounds" >"$work/big.out"
f=$(fig "$work/big.out")
echo "(3) 128 CPUs x 99 Hz x 60 s = 762,000 samples: the host input x$rounds into one engine: $(val "$f" samples) samples,"
printf '    %s samples/s/core (needs >= 12700), RSS %s MB (target <= 128)\n' "$(val "$f" rate)" "$(val "$f" rss_mb)"

if [ -n "${FK_BASELINE:-}" ]; then
    breplay=$FK_BASELINE/bench/replay
    [ -x "$breplay" ] || { echo "bench/replay: FK_BASELINE has no bench/replay ($breplay)" >&2; exit 2; }
    pairs=${FK_BENCH_PAIRS:-3}
    rows=()
    for ((p = 0; p < pairs; p++)); do
        row=
        for bin in "$breplay" "$replay"; do
            "$bin" run "$work/py.rec" 1 >"$work/b1.out"
            "$bin" run "$work/py.rec" 10 >"$work/b10.out"
            f1=$(fig "$work/b1.out"); f10=$(fig "$work/b10.out")
            row+="$(val "$f10" rate) $(val "$f10" median_us) $(steady "$f1" "$f10") "
        done
        rows+=("$row")
    done
    "$breplay" run "$work/py.rec" 1 "$work/base.folded" >/dev/null
    "$replay" run "$work/py.rec" 1 "$work/new.folded" >/dev/null
    if [ ! -f "$work/base.folded" ]; then
        echo "(4) folded output: not compared (the baseline's replay does not write it)"
    elif cmp -s "$work/base.folded" "$work/new.folded"; then
        echo "(4) folded output of one pass: identical ($(wc -l <"$work/new.folded") stacks)"
    else
        echo "(4) folded output of one pass: DIFFERS from the baseline's"
    fi
    echo "(4) python3.11 input, $pairs alternating pairs (base then new; 10 passes): rate, median us, steady rate, first-pass ms"
    printf '    base %s %s %s %s | new %s %s %s %s\n' ${rows[@]}
    printf '%s\n' "${rows[@]}" | awk '
    function med(a, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
                                   return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
    { n++; for (k = 1; k <= 4; k++) { b[k, n] = $k; w[k, n] = $(k + 4) } }
    END { split("samples/s/core,median us per sample,steady samples/s/core,first-pass fixed ms", name, ",")
          for (k = 1; k <= 4; k++) { for (i = 1; i <= n; i++) { x[i] = b[k, i]; y[i] = w[k, i] }
              mb = med(x, n); mn = med(y, n)
              printf "    %-28s base %10.2f new %10.2f ratio new/base %.2fx\n", name[k], mb, mn, (mb > 0 ? mn / mb : 0) } }'
fi
