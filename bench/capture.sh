#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Benchmark for the capture commands' frame-pointer path (--call-graph fp;
# the default, DWARF stacks, is bench/unwind.sh), on a compile + compression
# workload over all CPUs:
#  (a) end of the capture window -> finished SVG: flamekit host vs
#      perf record -F 999 -a -g + perf script | stackcollapse-perf.pl |
#      flamegraph.pl, both capturing the same 20 s window at 999 Hz
#      (run side by side). Target >= 10x.
#  (b) flamekit's own CPU (user+sys) during a 60 s all-CPU 99 Hz capture
#      <= 1% of one core; peak RSS <= 64 MB.
#  (c) agreement: the top 20 self frames' shares, flamekit vs perf +
#      FlameGraph, max difference in percentage points.
# env: FLAMEKIT, FLAMEGRAPH_DIR (default ~/.cache/flamekit/FlameGraph; clone
#      https://github.com/brendangregg/FlameGraph there, never commit it),
#      FK_BENCH_WINDOW (s, default 20), FK_BENCH_LONG (s, default 60).
set -euo pipefail
src=${FK_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
fk=${FLAMEKIT:-$src/build/flamekit}
fgdir=${FLAMEGRAPH_DIR:-${FLAMEKIT_CACHE:-$HOME/.cache/flamekit}/FlameGraph}
win=${FK_BENCH_WINDOW:-20}
long=${FK_BENCH_LONG:-60}
if [ ! -f "$fgdir/flamegraph.pl" ]; then
    echo "bench/capture: SKIP: no flamegraph.pl in $fgdir (clone brendangregg/FlameGraph there)"
    exit 0
fi
command -v perf >/dev/null || { echo "bench/capture: SKIP: perf not found (apt-get install linux-perf)"; exit 0; }
work=$(mktemp -d "${TMPDIR:-/tmp}/fk-bench-capture.XXXXXX")
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

. "$src/bench/workload.sh"
now_ns() { date +%s%N; }
ms() { echo $(( ($2 - $1) / 1000000 )); }

echo "bench/capture: workload: gcc + gzip loops on $(nproc) CPUs; window ${win}s at 999 Hz"
# The workload ends with the window, so each tool's processing is timed on
# an otherwise quiet machine. For (a) each tool captures its own window of
# the same workload (so neither's post-processing competes with the
# other's); for (c) both capture one window side by side.
stop_workload() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; pids=(); }
fk_json() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$@"; }

# (a1) flamekit alone
workload $((win + 1)); sleep 0.5
"$fk" host -q --call-graph fp -F 999 -d "${win}s" -o "$work/fk" >/dev/null 2>"$work/fk.err"
fk_done=$(now_ns)
stop_workload
j=$(ls "$work"/fk/*.json)
fk_end=$(fk_json "$j" 'int(d["start_unix_ns"] + d["duration_s"] * 1e9)')
fk_post=$(ms "$fk_end" "$fk_done")
fk_samples=$(fk_json "$j" 'd["samples"]')

# (a2) perf + FlameGraph alone
workload $((win + 1)); sleep 0.5
perf record -q -F 999 -a -g -o "$work/perf.data" -- sh -c "sleep $win; date +%s%N >'$work/perf.end'" \
    >/dev/null 2>"$work/perf.err"
perf_rec=$(now_ns)
stop_workload
perf script -i "$work/perf.data" 2>/dev/null | perl "$fgdir/stackcollapse-perf.pl" --kernel >"$work/perf.folded"
perl "$fgdir/flamegraph.pl" "$work/perf.folded" >"$work/perf.svg"
perf_done=$(now_ns)
perf_fin=$(ms "$(cat "$work/perf.end")" "$perf_rec")
perf_post=$(ms "$(cat "$work/perf.end")" "$perf_done")
perf_samples=$(perf script -i "$work/perf.data" -F period 2>/dev/null | wc -l)
echo "(a) perf record finishing ${perf_fin} ms, then perf script | stackcollapse-perf.pl | flamegraph.pl $((perf_post - perf_fin)) ms"
echo "(a) window end -> SVG: flamekit ${fk_post} ms ($fk_samples samples), perf+FlameGraph ${perf_post} ms ($perf_samples samples)"
awk -v a="$perf_post" -v b="$fk_post" 'BEGIN { if (b < 1) b = 1; printf "(a) ratio: flamekit is %.1fx faster (target >= 10x)\n", a / b }'

# (c) one window captured by both
workload $((win + 1)); sleep 0.5
perf record -q -F 999 -a -g -o "$work/perf2.data" -- sleep "$win" >/dev/null 2>&1 &
pp=$!
"$fk" host -q --call-graph fp -F 999 -d "${win}s" -o "$work/fk2" >/dev/null 2>&1
wait "$pp"
stop_workload
perf script -i "$work/perf2.data" 2>/dev/null | perl "$fgdir/stackcollapse-perf.pl" --kernel >"$work/perf2.folded"

# (c) agreement of the top 20 self frames
python3 - "$work"/fk2/*.folded.gz "$work/perf2.folded" <<'PY'
import gzip, re, sys
def leaves(path, opener):
    c, tot = {}, 0
    with opener(path, "rt", errors="replace") as f:
        for line in f:
            stack, _, n = line.rstrip("\n").rpartition(" ")
            if not stack: continue
            n = int(n); leaf = stack.rsplit(";", 1)[-1]
            # unresolved frames: ours "[dso+0x1a2b]", perf's "[dso]" / "[unknown]"
            leaf = re.sub(r"^\[[^\]]*\](_\[k\])?$", "[unknown]", leaf)
            leaf = re.sub(r"_\[j\]$", "", leaf)   # our JIT annotation
            c[leaf] = c.get(leaf, 0) + n; tot += n
    return {k: 100.0 * v / tot for k, v in c.items()}
a = leaves(sys.argv[1], gzip.open); b = leaves(sys.argv[2], open)
top = sorted(b, key=b.get, reverse=True)[:20]
worst = 0
for k in top:
    d = abs(a.get(k, 0) - b[k]); worst = max(worst, d)
print("(c) top 20 self frames (perf %% / flamekit %%):")
for k in top[:20]:
    print("      %6.2f %6.2f  %s" % (b[k], a.get(k, 0), k[:70]))
print("(c) agreement: max difference %.2f percentage points over perf's top 20" % worst)
PY

# (b) our own overhead during a long 99 Hz capture
workload $((long + 5))
sleep 1
python3 - "$fk" "$long" "$work/fk3" <<'PY'
import os, subprocess, sys
fk, secs, out = sys.argv[1], sys.argv[2], sys.argv[3]
p = subprocess.Popen([fk, "host", "-q", "--call-graph", "fp", "-d", secs + "s", "-o", out])
# its own rusage (and its waited children's): RUSAGE_CHILDREN would add
# whatever this interpreter's start-up ran (a pyenv shim: ~0.3 s, 6,500 faults)
_, status, ru = os.wait4(p.pid, 0)
if status:
    sys.exit("flamekit failed (wait status %d)" % status)
cpu = ru.ru_utime + ru.ru_stime
print("(b) flamekit host -d %ss at 99 Hz: user %.2f s + sys %.2f s = %.2f%% of one core (target <= 1%%); peak RSS %.1f MB (target <= 64)"
      % (secs, ru.ru_utime, ru.ru_stime, 100.0 * cpu / float(secs), ru.ru_maxrss / 1024.0))
PY
