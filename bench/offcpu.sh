#!/usr/bin/env bash
# Off-CPU profiling cost and choices, all measured in this run:
#  1. a switch storm (two threads ping-ponging a byte through pipes, test/
#     progs/offcpu-truth storm): its round trips per second unprofiled,
#     under flamekit offcpu (default budget, and one in 1), and under the
#     bpftrace reference (test/offcpu-ref.bt); flamekit's own CPU (% of one
#     core over the window), peak RSS and window-end-to-files time;
#  2. the stack copy for blocked stacks: complete user stacks at 4, 8, 16
#     and 32 KiB on programs nobody here wrote (python3, xz) and the truth
#     workload;
#  3. the share of blocked time in short blocks, for --min-block.
# Environment: FK_BENCH_SECS (window, default 4), FK_BENCH_REPS (default 3).
set -eu
: "${FK_BUILD:?run through make bench}" "${FLAMEKIT:?run through make bench}"
FK_SRC=${FK_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
TRUTH=$FK_BUILD/test/progs/offcpu-truth
SECS=${FK_BENCH_SECS:-4}
REPS=${FK_BENCH_REPS:-3}
T=$(mktemp -d "${TMPDIR:-/tmp}/fk-bench-offcpu.XXXXXX")
trap 'rm -rf "$T"; [ -n "${W:-}" ] && kill $W 2>/dev/null; true' EXIT
"$FLAMEKIT" offcpu --help >/dev/null 2>&1 || { echo "bench/offcpu.sh: no 'offcpu' command: skipped"; exit 0; }
[ -x "$TRUTH" ] || { echo "bench/offcpu.sh: build the test programs first (make check-programs)"; exit 1; }
have_bt=1; command -v bpftrace >/dev/null 2>&1 || have_bt=0
jget() { python3 -c 'import json,sys; v=json.load(open(sys.argv[2]))
for k in sys.argv[1].split("."): v=v[k]
print(v)' "$1" "$2"; }
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# storm MODE: round trips/s of a storm of SECS + 2 s, with MODE profiling
# it for SECS from 1 s in; "fk" lines: CPU %, RSS MB, post-capture ms.
storm() {
    local mode=$1 out=$T/storm.$1
    "$TRUTH" storm $((SECS + 2)) >"$out" &
    W=$!
    # both threads up (a loaded machine may take a while)
    for ((i = 0; i < 100; i++)); do [ "$(ls /proc/$W/task 2>/dev/null | wc -l)" -ge 2 ] && break; sleep 0.05; done
    sleep 0.3
    case $mode in
    none) ;;
    fk-*)
        local extra=()
        [ "$mode" = fk-every1 ] && extra=(--every 1)
        rm -rf "$T/fk"
        /usr/bin/time -f '%U %S %M' -o "$T/time" \
            "$FLAMEKIT" offcpu -q --no-svg "${extra[@]}" -d "$SECS" -o "$T/fk" pid $W 2>"$T/fk.err" \
            || { echo "flamekit offcpu failed: $(tail -3 "$T/fk.err")" >&2; exit 1; }
        local j; j=$(ls "$T"/fk/*.json)
        read -r u s m <"$T/time"
        local post
        post=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))["post_capture_ms"]; print(round(sum(v for k, v in d.items() if k in ("naming", "folded", "svg", "pprof")), 1))' "$j")
        echo "fk $mode $(awk -v u="$u" -v s="$s" -v d="$SECS" 'BEGIN { printf "%.2f", 100 * (u + s) / d }') $((m / 1024)) $post $(jget offcpu.one_in "$j") $(jget offcpu.switches_seen "$j") $(jget offcpu.switches_recorded "$j") $(jget offcpu.switch_rate_before "$j")" >>"$T/fkstats"
        ;;
    bpftrace)
        timeout $((SECS + 10)) bpftrace "$FK_SRC/test/offcpu-ref.bt" $W >"$T/bt.out" 2>&1 &
        local b=$!
        sleep "$SECS"
        kill -INT $b 2>/dev/null; wait $b 2>/dev/null || true
        ;;
    esac
    wait $W
    W=
    awk '$1 == "round_trips_per_s" { print $2 }' "$out"
}

echo "== switch storm: $SECS s windows, median of $REPS interleaved runs"
modes="none fk-default fk-every1"
[ $have_bt = 1 ] && modes="$modes bpftrace"
: >"$T/fkstats"
for ((r = 0; r < REPS; r++)); do
    for m in $modes; do storm "$m" >>"$T/rate.$m"; done
done
base=$(median <"$T/rate.none")
printf '%-34s %14s %10s\n' "configuration" "round trips/s" "loss"
for m in $modes; do
    v=$(median <"$T/rate.$m")
    awk -v n="$m" -v v="$v" -v b="$base" 'BEGIN { printf "%-34s %14.0f %9.1f%%\n", n, v, (1 - v / b) * 100 }'
done
for m in fk-default fk-every1; do
    awk -v m="$m" '$2 == m' "$T/fkstats" | sort -k3 -n | awk -v m="$m" '
        { v[NR] = $0 } END { split(v[int((NR + 1) / 2)], a, " ");
          printf "flamekit %-12s CPU %5.2f%% of a core, RSS %d MB, window end to files %.0f ms, N=%s, switches seen %s, recorded %s, rate before %s/s\n",
                 m, a[3], a[4], a[5], a[6], a[7], a[8], a[9] }'
done

echo "== stack copy for blocked stacks: complete user stacks (dwarf)"
printf '%-28s %8s %8s %8s %8s\n' "workload" "4K" "8K" "16K" "32K"
complete_row() {
    local name=$1; shift
    local row; row=$(printf '%-28s' "$name")
    for ss in 4K 8K 16K 32K; do
        rm -rf "$T/ss"
        "$FLAMEKIT" offcpu -q --no-svg --stack-size $ss -o "$T/ss" run -- "$@" >/dev/null 2>"$T/ss.err" || { row="$row   failed"; continue; }
        local j; j=$(ls "$T"/ss/*.json)
        row="$row $(python3 -c 'import json,sys; u=json.load(open(sys.argv[1]))["callgraph"]["unwind"]; print("%7.1f%%" % (100 * u["complete"] / max(u["stacks"], 1)))' "$j")"
    done
    echo "$row"
}
complete_row "offcpu-truth mutex 2" "$TRUTH" mutex 2
cat >"$T/py.py" <<'EOF'
import os, threading, time, queue
q = queue.Queue(maxsize=4)
def produce():
    for i in range(400):
        q.put(os.urandom(256))
def consume():
    for i in range(400):
        q.get(); time.sleep(0.002)
def nested(n, f):
    return nested(n - 1, f) if n else f()
ts = [threading.Thread(target=nested, args=(20, produce)), threading.Thread(target=nested, args=(20, consume))]
[t.start() for t in ts]; [t.join() for t in ts]
EOF
complete_row "python3 queue + sleeps" python3 "$T/py.py"
head -c 20000000 /dev/urandom >"$T/rand"
printf 'import sys, time\nwhile sys.stdin.buffer.read(65536):\n    time.sleep(0.005)\n' >"$T/slow.py"
complete_row "xz -3 into a slow pipe" sh -c "xz -3 -T1 <'$T/rand' | python3 '$T/slow.py'"

echo "== short blocks (--min-block): share of blocked time in blocks under 10us, 100us, 1ms"
rm -rf "$T/mb"
"$FLAMEKIT" offcpu -q --no-svg -d "$SECS" -o "$T/mb" host >/dev/null 2>&1
j=$(ls "$T"/mb/*.json)
tot=$(jget weight_total "$j")
for mb in 10us 100us 1ms; do
    rm -rf "$T/mb2"
    "$FLAMEKIT" offcpu -q --no-svg -d "$SECS" --min-block $mb -o "$T/mb2" host >/dev/null 2>&1
    j2=$(ls "$T"/mb2/*.json)
    awk -v mb="$mb" -v s="$(jget offcpu.blocks_short_ns "$j2")" -v k="$(jget weight_total "$j2")" -v n="$(jget offcpu.blocks_short "$j2")" -v b="$(jget offcpu.blocks "$j2")" \
        'BEGIN { printf "host, --min-block %-6s: %5.2f%% of blocked time and %5.1f%% of blocks dropped\n", mb, 100 * s / (s + k), 100 * n / (n + b) }'
done
