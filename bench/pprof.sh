#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Benchmark for pprof output: what writing HOST.TIME.SCOPE.pb.gz adds to a
# capture's end-of-window -> finished-SVG time, on the compile + compression
# workload of bench/capture.sh (all CPUs, 999 Hz windows).
#  (a) per capture, from its own timings (post_capture_ms in the JSON): the
#      wall time waiting for the pprof thread and writing the file added,
#      against the rest of the end-to-SVG time. Target <= 5 %.
#  (b) the CPU the pprof encoding and compression took (on a second thread).
#  (c) .pb.gz size against .folded.gz.
#  (d) with FK_BASELINE=/path/to/flamekit (a build without pprof output, e.g.
#      main before it): captures alternate between the two binaries and the
#      median end-to-SVG times are compared.
# env: FLAMEKIT, FK_BASELINE, FK_BENCH_WINDOW (s, default 10), FK_BENCH_ROUNDS
#      (default 3).
set -euo pipefail
src=${FK_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
fk=${FLAMEKIT:-$src/build/flamekit}
base=${FK_BASELINE:-}
win=${FK_BENCH_WINDOW:-10}
rounds=${FK_BENCH_ROUNDS:-3}
work=$(mktemp -d "${TMPDIR:-/tmp}/fk-bench-pprof.XXXXXX")
pids=()
stop_workload() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; pids=(); }
trap 'stop_workload; rm -rf "$work"' EXIT

. "$src/bench/workload.sh"

# capture BIN DIR: one window; prints "end_to_svg_ms" (window end -> exit).
capture() {
    workload $((win + 1)); sleep 0.5
    "$1" host -q -F 999 -d "${win}s" -o "$2" >/dev/null 2>"$2.err"
    local done_ns; done_ns=$(date +%s%N)
    stop_workload
    python3 - "$(ls "$2"/*.json)" "$done_ns" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
end = d["start_unix_ns"] + d["duration_s"] * 1e9
print("%.1f" % ((int(sys.argv[2]) - end) / 1e6))
PY
}

echo "bench/pprof: workload: gcc + gzip loops on $(nproc) CPUs; $rounds windows of ${win}s at 999 Hz"
: >"$work/rows"
for ((r = 1; r <= rounds; r++)); do
    e=$(capture "$fk" "$work/fk$r")
    j=$(ls "$work"/fk$r/*.json)
    pb=$(stat -c %s "$work"/fk$r/*.pb.gz)
    fo=$(stat -c %s "$work"/fk$r/*.folded.gz)
    python3 - "$j" "$e" "$pb" "$fo" >>"$work/rows" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); t = d["post_capture_ms"]; e = float(sys.argv[2])
print(e, t["pprof"], t["pprof_encode_cpu"], t["naming"], sys.argv[3], sys.argv[4], d["samples"], d["unique_stacks"])
PY
    if [ -n "$base" ]; then
        b=$(capture "$base" "$work/base$r")
        echo "$b" >>"$work/base"
    fi
done
python3 - "$work/rows" "${base:+$work/base}" <<'PY'
import statistics, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1])]
for e, w, c, n, pb, fo, s, u in rows:
    print("(a) end-to-SVG %.0f ms (naming %.0f ms), pprof wait+write %.1f ms = %.2f %% of the rest; "
          "(b) pprof encode+gzip CPU %.1f ms on the second thread = %.2f %%; "
          "(c) .pb.gz %d bytes vs .folded.gz %d bytes = %.2fx (%d samples, %d stacks)"
          % (e, n, w, 100 * w / (e - w), c, 100 * c / (e - w), pb, fo, pb / fo, s, u))
med = lambda i: statistics.median(r[i] for r in rows)
worst = max(100 * r[1] / (r[0] - r[1]) for r in rows)
print("(a) pprof adds %.2f %% (worst of %d) to end-to-SVG, median %.1f ms of %.0f ms (target <= 5 %%)"
      % (worst, len(rows), med(1), med(0)))
print("(c) .pb.gz / .folded.gz median %.2fx" % statistics.median(r[4] / r[5] for r in rows))
if len(sys.argv) > 2 and sys.argv[2]:
    b = [float(l) for l in open(sys.argv[2])]
    print("(d) median end-to-SVG: with pprof %.0f ms, baseline %.0f ms: ratio %.3f"
          % (med(0), statistics.median(b), med(0) / statistics.median(b)))
PY
