#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Benchmark for Python frames (unwind/python.c, flamekit-record(1) PYTHON
# FRAMES), the baseline being the same capture with --python off
# (bench/pybench.py does the measuring):
#  (1) cost per Python sample: `flamekit pid -F HZ` attached to Debian's
#      python3.11 running test/progs/pytruth.py (ratio, generators) for
#      CPU-SECONDS of its own CPU, --python on and off alternately, REPS
#      pairs: flamekit's own CPU (all its threads: its rusage), the extra
#      per Python sample (median
#      and spread over the pairs; target <= 10 us), reads and bytes per
#      sample, the read delay. FK_BENCH_BASE=FLAMEKIT adds another build's
#      --python on to the rotation and gives the ratio of the two.
#  (2) consistency: the share of Python samples with every segment
#      consistent, at 99 and 999 Hz, from the same runs.
#  (3) the target's throughput: one long-lived workload, --python on, off
#      and no capture attached to it in interleaved rounds, its work per
#      CPU second and per wall second in each window (target: <= 1% lost to
#      the Python reads at 99 Hz), the ratio on/off per round: median and
#      spread.
#  (4) never stopped: the target's state is sampled during a capture (no
#      't').
#  (5) the throughput lost, with the VM's own speed taken out (paired): two
#      copies of the workload at once, one per CPU, flamekit attached to
#      one of them in each window, the other the control; the profiled
#      copy's work per CPU second over the control's, the copies' roles
#      swapped to cancel the CPUs' speeds: mean and 95 % bootstrap interval
#      over FK_BENCH_PAIRED_ROUNDS (24) rounds of 1 s windows, --python on,
#      off, and nothing attached (the method's own noise, centred on 1);
#      with FK_BENCH_BASE, that build's --python on in each round too.
# Hold /tmp/fk-bench.lock while it runs on a shared machine; the load
# average at the start is printed, and the delays depend on it.
# env: FLAMEKIT, FK_BENCH_CPU (CPU-seconds per run, default 5), FK_BENCH_REPS
# (pairs, 3), FK_BENCH_HZ ("99 999"), FK_BENCH_MODES ("ratio generators"),
# FK_BENCH_ROUNDS (throughput rounds, 8), FK_BENCH_WINDOW (seconds, 2),
# FK_BENCH_PARTS ("cost throughput paired stopped"), FK_BENCH_PAIRED_ROUNDS,
# FK_BENCH_BASE
set -euo pipefail
src=${FK_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
build=${FK_BUILD:-$src/build}
fk=${FLAMEKIT:-$build/flamekit}
cpu=${FK_BENCH_CPU:-5}
reps=${FK_BENCH_REPS:-3}
parts=${FK_BENCH_PARTS:-cost throughput paired stopped}
PY=/usr/bin/python3.11
TRUTH=$src/test/progs/pytruth.py
BENCH=$src/bench/pybench.py
[ -x "$PY" ] || { echo "bench/python: SKIP: $PY not found"; exit 0; }
work=$(mktemp -d "${TMPDIR:-/tmp}/fk-bench-python.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"
echo "bench/python: load average at start: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"

case " $parts " in *" cost "*)
    for hz in ${FK_BENCH_HZ:-99 999}; do
        for mode in ${FK_BENCH_MODES:-ratio generators}; do
            "$PY" "$BENCH" cost "$fk" "$PY" "$TRUTH" "$hz" "$mode" "$reps" "$cpu" \
                ${FK_BENCH_BASE:+"$FK_BENCH_BASE"} | sed 's/^/bench\/python: /'
        done
    done
esac

case " $parts " in *" throughput "*)
    for mode in ${FK_BENCH_MODES:-ratio generators}; do
        "$PY" "$BENCH" throughput "$fk" "$PY" "$TRUTH" 99 "$mode" "${FK_BENCH_ROUNDS:-8}" \
            "${FK_BENCH_WINDOW:-2}" | sed 's/^/bench\/python: /'
    done
esac

case " $parts " in *" paired "*)
    for mode in ${FK_BENCH_MODES:-ratio generators}; do
        "$PY" "$BENCH" paired "$fk" "$PY" "$TRUTH" 99 "$mode" "${FK_BENCH_PAIRED_ROUNDS:-24}" 1 \
            ${FK_BENCH_BASE:+"$FK_BENCH_BASE"} | sed 's/^/bench\/python: /'
    done
esac

case " $parts " in *" stopped "*)
    # never stopped: the target's state during a capture, every 10 ms
    "$PY" "$TRUTH" threads "$cpu" >/dev/null 2>&1 &
    tp=$!
    "$fk" pid -q --no-svg -F 999 -d 3 -o "$work/stopped" "$tp" >/dev/null 2>&1 &
    fp=$!
    states=""
    for ((i = 0; i < 250; i++)); do
        s=$(awk '{print $3}' "/proc/$tp/stat" 2>/dev/null) || break
        states+=$s
        sleep 0.01
    done
    wait "$fp" || true
    kill "$tp" 2>/dev/null || true
    echo "bench/python: target states seen during a capture: $(echo "$states" | fold -w1 | sort | uniq -c | tr '\n' ' ')(t = stopped: must be absent)"
esac
