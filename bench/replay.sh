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
# samples/s/core is CPU time of the replaying thread; median and p99 per
# sample are wall time (monotonic clock around each sample: a preempted
# sample counts its wait, so read them on a quiet machine). The first pass includes
# reading each binary's CFI and symbols, the later passes are steady state.
# env: FK_BUILD (build dir), FK_BENCH_REPLAY_SECS (recorded window, default 10)
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
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
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
echo "(1) python3.11 input: $(sed 's/^recorded //' "$work/py.log")"
"$replay" run "$work/py.rec" 1 >"$work/py1.out"
"$replay" run "$work/py.rec" 10 >"$work/py10.out"
for r in py1 py10; do
    f=$(fig "$work/$r.out")
    printf '    %-14s %8s samples/s/core (target >= 250000); median %s us, p99 %s us per sample (wall); RSS %s MB\n' \
        "${r/py/passes: }" "$(val "$f" rate)" "$(val "$f" median_us)" "$(val "$f" p99_us)" "$(val "$f" rss_mb)"
done
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
