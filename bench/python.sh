#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Benchmark for Python frames (unwind/python.c, flamekit-record(1) PYTHON
# FRAMES), side by side in one run, the baseline being the same capture
# with --python off:
#  (1) cost per Python sample: `flamekit run -F HZ` of Debian's python3.11
#      running test/progs/pytruth.py (ratio, generators) for CPU-SECONDS of
#      its own CPU, --python on vs off, each REPS times alternately:
#      flamekit's user+sys per sample, the difference per Python sample
#      (target <= 10 us), the walker's own median us (metadata), reads
#      (early and at splice time: each a process_vm_readv) and bytes per
#      sample, read delay (median, p90).
#  (2) the target's throughput: work units per CPU second of the workload
#      under --python on, off and without any capture (target: <= 1% lost
#      to the Python reads at 99 Hz). Never stopped: the target's state
#      is sampled during the capture (no 't').
#  (3) consistency: the share of Python samples with every segment
#      consistent, at 99 and 999 Hz.
# Hold /tmp/fk-bench.lock while it runs on a shared machine; the load
# average at the start is printed, and the delays depend on it.
# env: FLAMEKIT, FK_BENCH_CPU (CPU-seconds per run, default 5), FK_BENCH_REPS (3)
set -euo pipefail
src=${FK_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
build=${FK_BUILD:-$src/build}
fk=${FLAMEKIT:-$build/flamekit}
cpu=${FK_BENCH_CPU:-5}
reps=${FK_BENCH_REPS:-3}
PY=/usr/bin/python3.11
TRUTH=$src/test/progs/pytruth.py
[ -x "$PY" ] || { echo "bench/python: SKIP: $PY not found"; exit 0; }
work=$(mktemp -d "${TMPDIR:-/tmp}/fk-bench-python.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"
echo "bench/python: load average at start: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"

# run NAME HZ MODE PYMODE: one capture; prints
# "fk_cpu_s samples spliced consistent median_us reads bytes delay_med delay_p90 units"
run() {
    local name=$1 hz=$2 mode=$3 py=$4
    rm -rf "$work/$name"
    /usr/bin/time -f '%U %S' -o "$work/$name.time" \
        "$fk" run -q --no-svg -F "$hz" --python "$py" -o "$work/$name" -- \
        "$PY" "$TRUTH" "$mode" "$cpu" "$work/$name.truth" >/dev/null 2>"$work/$name.err"
    "$PY" - "$work/$name" "$work/$name.time" "$work/$name.truth" <<'EOF'
import glob, json, sys
d = json.load(open(glob.glob(sys.argv[1] + "/*.json")[0]))
u, s = map(float, open(sys.argv[2]).read().split()[-2:])
p = d.get("python", {})
units = sum(v for k, v in json.load(open(sys.argv[3])).items() if not k.endswith("_cpu"))  # work units, not seconds
print("%.3f %d %d %d %.2f %d %d %.2f %.2f %d" % (u + s, d["samples"], p.get("spliced", 0),
      p.get("consistent", 0), p.get("median_us", 0), p.get("reads", 0) + p.get("snapshot_reads", 0),
      p.get("read_bytes", 0) + p.get("snapshot_read_bytes", 0),
      p.get("read_delay", {}).get("median_ms", 0), p.get("read_delay", {}).get("p90_ms", 0), units))
EOF
}

for hz in 99 999; do
    for mode in ratio generators; do
        on_cpu=0 off_cpu=0 on_n=0 off_n=0 py_n=0 cons=0 med=() reads=0 bytes=0 dm=() dp=() on_u=0 off_u=0
        for ((i = 0; i < reps; i++)); do
            read -r c n sp co mu rd by d1 d9 un <<<"$(run "on-$hz-$mode-$i" "$hz" "$mode" on)"
            on_cpu=$(echo "$on_cpu + $c" | bc -l); on_n=$((on_n + n)); py_n=$((py_n + sp))
            cons=$((cons + co)); med+=("$mu"); reads=$((reads + rd)); bytes=$((bytes + by))
            dm+=("$d1"); dp+=("$d9"); on_u=$((on_u + un))
            read -r c n sp co mu rd by d1 d9 un <<<"$(run "off-$hz-$mode-$i" "$hz" "$mode" off)"
            off_cpu=$(echo "$off_cpu + $c" | bc -l); off_n=$((off_n + n)); off_u=$((off_u + un))
        done
        per_on=$(echo "$on_cpu / $on_n * 1000000" | bc -l)
        per_off=$(echo "$off_cpu / $off_n * 1000000" | bc -l)
        extra=$(echo "($per_on - $per_off) * $on_n / ($py_n + ($py_n == 0))" | bc -l)
        printf 'bench/python: %s Hz %-10s flamekit CPU per sample: on %.1f us, off %.1f us (ratio %.2f); extra per Python sample %.1f us; walker median %s us\n' \
            "$hz" "$mode" "$per_on" "$per_off" "$(echo "$per_on / $per_off" | bc -l)" "$extra" "${med[*]}"
        printf 'bench/python: %s Hz %-10s %d of %d samples spliced, %.1f%% consistent; %.1f reads, %.0f bytes per spliced sample; read delay median %s ms, p90 %s ms\n' \
            "$hz" "$mode" "$py_n" "$on_n" "$(echo "100 * $cons / ($py_n + ($py_n == 0))" | bc -l)" \
            "$(echo "$reads / ($py_n + ($py_n == 0))" | bc -l)" "$(echo "$bytes / ($py_n + ($py_n == 0))" | bc -l)" "${dm[*]}" "${dp[*]}"
        printf 'bench/python: %s Hz %-10s target work per CPU second: on/off %.3f (units %d vs %d for the same CPU time)\n' \
            "$hz" "$mode" "$(echo "$on_u / $off_u" | bc -l)" "$on_u" "$off_u"
    done
done

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
