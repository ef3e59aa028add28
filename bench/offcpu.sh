#!/usr/bin/env bash
# Off-CPU profiling cost and choices, all measured in this run:
#  1. a switch storm (two threads ping-ponging a byte through pipes, test/
#     progs/offcpu-truth storm): its round trips per second over the
#     profiler's window (from its own 100 ms reports) unprofiled, under
#     flamekit offcpu (default budget; one in 1 with FK_BENCH_OFFCPU_EVERY1=1)
#     and under the bpftrace reference (test/offcpu-ref.bt), interleaved in
#     one run; flamekit's own CPU (% of one core in the window's steady part,
#     and with start-up), us per switch-out, peak RSS, window-end-to-files
#     time; the throughput loss of both, side by side;
#  1b. "paired": the storm's throughput loss with the VM's own speed taken
#     out (bench/offcpu-paired.py: two storms pinned one per CPU, flamekit
#     attached to each in turn, the other the control, per CPU and per
#     wall second; with FK_BASELINE its flamekit in the same rotation),
#     FK_BENCH_ROUNDS rounds (default 4: about 4 s a window here) of FK_BENCH_PAIRED_SECS windows
#     (default 2);
#  1c. "alt": the same loss, lower noise (bench/offcpu-alt.py: the two
#     storms moved in and out of flamekit's target cgroup every
#     FK_BENCH_ALT_SWITCH s (default 0.5; a list such as 0.5,1 takes
#     each in turn, four windows each) within
#     FK_BENCH_ALT_WINDOWS windows (default 8, half of them "none") of
#     FK_BENCH_ALT_SECS s (default 8), with the filtered switches' cost
#     added: what a storm profiled alone loses; needs cgroup v2);
#  2. the stack copy for blocked stacks: complete user stacks at 4, 8, 16
#     and 32 KiB on programs nobody here wrote (python3, xz) and the truth
#     workload;
#  3. the share of blocked time in short blocks, for --min-block.
# The storm runs in a cgroup v2 of its own, as a service would (flamekit
# then follows pid targets per CPU in it; FK_BENCH_OFFCPU_CGROUP=0: in the
# bench's own cgroup, per-task events). With FK_BASELINE (a build
# directory holding another flamekit, e.g. main's) its default run
# (fk-base) is interleaved with this build's and the ratios printed.
# Environment: FK_BENCH_SECS (window, default 4), FK_BENCH_REPS (default 3),
# FK_BENCH_OFFCPU_PARTS (default "storm paired alt stack minblock").
set -eu
: "${FK_BUILD:?run through make bench}" "${FLAMEKIT:?run through make bench}"
FK_SRC=${FK_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
TRUTH=$FK_BUILD/test/progs/offcpu-truth
SECS=${FK_BENCH_SECS:-4}
REPS=${FK_BENCH_REPS:-3}
BASE=${FK_BASELINE:+$FK_BASELINE/flamekit}
if [ -n "$BASE" ] && [ ! -x "$BASE" ]; then echo "bench/offcpu.sh: FK_BASELINE has no flamekit ($BASE)" >&2; exit 2; fi
CG=
if [ "${FK_BENCH_OFFCPU_CGROUP:-1}" = 1 ]; then
    cg2=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
    if [ -n "$cg2" ] && mkdir "$cg2/fk-bench-offcpu-$$" 2>/dev/null; then CG=$cg2/fk-bench-offcpu-$$
    else echo "bench/offcpu.sh: no cgroup v2 directory to make: the storm runs in the bench's cgroup"; fi
fi
T=$(mktemp -d "${TMPDIR:-/tmp}/fk-bench-offcpu.XXXXXX")
trap 'rm -rf "$T"; [ -n "${W:-}" ] && kill $W 2>/dev/null && wait $W 2>/dev/null; [ -n "$CG" ] && rmdir "$CG"; true' EXIT
"$FLAMEKIT" offcpu --help >/dev/null 2>&1 || { echo "bench/offcpu.sh: no 'offcpu' command: skipped"; exit 0; }
[ -x "$TRUTH" ] || { echo "bench/offcpu.sh: build the test programs first (make check-programs)"; exit 1; }
have_bt=1; command -v bpftrace >/dev/null 2>&1 || have_bt=0
jget() { python3 -c 'import json,sys; v=json.load(open(sys.argv[2]))
for k in sys.argv[1].split("."): v=v[k]
print(v)' "$1" "$2"; }
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# now_ns: the wall clock (the storm's "at" lines are in it)
now_ns() { date +%s%N; }
# cpu_ticks PID: utime + stime of a process so far, in clock ticks
cpu_ticks() { awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat" 2>/dev/null; }
# storm_rate OUT FROM_NS TO_NS: the storm's round trips per second between
# two wall-clock times, from its "at NS TRIPS" lines (every 100 ms)
storm_rate() {
    awk -v a="$2" -v b="$3" '$1 == "at" && $2 >= a && !t0 { t0 = $2; n0 = $3 }
        $1 == "at" && $2 <= b { t1 = $2; n1 = $3 }
        END { if (t1 > t0) printf "%.0f\n", (n1 - n0) * 1e9 / (t1 - t0); else print 0 }' "$1"
}

# storm MODE: a storm of SECS + 3 s, MODE profiling it for SECS from 1 s
# in; its round trips per second over the profiler's window (none: the
# same stretch). fk lines: flamekit's CPU % of a core in the window's
# steady part (from 1 s in to 1 s before its end: no start-up, no
# kallsyms) and over the whole run, RSS MB, post-capture ms, N, switches.
storm() {
    local mode=$1 out=$T/storm.$1 from to
    "$TRUTH" storm $((SECS + 3)) >"$out" &
    W=$!
    [ -z "$CG" ] || echo $W >"$CG/cgroup.procs"
    # both threads up (a loaded machine may take a while)
    for ((i = 0; i < 100; i++)); do [ "$(ls /proc/$W/task 2>/dev/null | wc -l)" -ge 3 ] && break; sleep 0.05; done
    sleep 0.5
    case $mode in
    none)
        from=$(now_ns); sleep "$SECS"; to=$(now_ns)
        ;;
    fk-*)
        local extra=() fk=$FLAMEKIT
        [ "$mode" = fk-every1 ] && extra=(--every 1)
        [ "$mode" = fk-base ] && fk=$BASE
        rm -rf "$T/fk" "$T/ready"
        # (time's child, a shell that says its pid and execs flamekit:
        # never another flamekit found by name)
        rm -f "$T/fk.pid"
        /usr/bin/time -f '%U %S %M' -o "$T/time" sh -c 'echo $$ >"$0"; exec "$@"' "$T/fk.pid" \
            "$fk" offcpu -q --no-svg "${extra[@]}" -d "$SECS" --ready-fd 9 -o "$T/fk" pid $W \
            2>"$T/fk.err" 9>"$T/ready" &
        local f=$!
        for ((i = 0; i < 400; i++)); do grep -q ready "$T/ready" 2>/dev/null && break; sleep 0.01; done
        from=$(now_ns)
        local fp; fp=$(cat "$T/fk.pid" 2>/dev/null)
        [ -n "$fp" ] || { echo "flamekit's pid was not written" >&2; exit 1; }
        sleep 1
        local c1 t1; c1=$(cpu_ticks "$fp"); t1=$(now_ns)
        sleep "$(awk -v f="$from" -v s="$SECS" -v n="$(now_ns)" 'BEGIN { d = (f + (s - 1) * 1e9 - n) / 1e9; print (d > 0 ? d : 0) }')"
        local c2 t2; c2=$(cpu_ticks "$fp"); t2=$(now_ns)
        [ -n "$c1" ] && [ -n "$c2" ] || { echo "flamekit ended before its window's steady part was read" >&2; exit 1; }
        wait $f || { echo "flamekit offcpu failed: $(tail -3 "$T/fk.err")" >&2; exit 1; }
        to=$(( from + SECS * 1000000000 ))
        local j; j=$(ls "$T"/fk/*.json)
        read -r u s m <"$T/time"
        local steady post
        steady=$(awk -v c="$((c2 - c1))" -v hz="$(getconf CLK_TCK)" -v t="$((t2 - t1))" 'BEGIN { printf "%.2f", 100 * c / hz / (t / 1e9) }')
        post=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))["post_capture_ms"]; print(round(sum(v for k, v in d.items() if k in ("naming", "folded", "svg", "pprof")), 1))' "$j")
        echo "fk $mode $steady $(awk -v u="$u" -v s="$s" -v d="$SECS" 'BEGIN { printf "%.2f", 100 * (u + s) / d }') $((m / 1024)) $post $(jget offcpu.one_in "$j") $(jget offcpu.one_in_max "$j") $(jget offcpu.switches_seen "$j") $(jget offcpu.switches_recorded "$j") $(jget offcpu.switch_rate_before "$j") $(jget duration_s "$j") $(jget lost "$j") $(jget target.tree.mode "$j")" >>"$T/fkstats"
        ;;
    bpftrace)
        timeout $((SECS + 20)) bpftrace "$FK_SRC/test/offcpu-ref.bt" $W >"$T/bt.out" 2>&1 &
        local b=$!
        for ((i = 0; i < 500; i++)); do grep -q Attaching "$T/bt.out" 2>/dev/null && break; sleep 0.02; done
        from=$(now_ns)
        sleep "$SECS"
        to=$(now_ns)
        kill -INT $b 2>/dev/null; wait $b 2>/dev/null || true
        ;;
    esac
    wait $W
    W=
    storm_rate "$out" "$from" "$to"
}

PARTS=${FK_BENCH_OFFCPU_PARTS:-storm paired alt stack minblock}
if [[ " $PARTS " == *" storm "* ]]; then
echo "== switch storm: $SECS s windows, median of $REPS interleaved runs (the order turns each run)"
modes=(none fk-default)
[ -n "$BASE" ] && modes+=(fk-base)
[ "${FK_BENCH_OFFCPU_EVERY1:-0}" = 1 ] && modes+=(fk-every1)
[ $have_bt = 1 ] && modes+=(bpftrace)
: >"$T/fkstats"
for ((r = 0; r < REPS; r++)); do
    for ((k = 0; k < ${#modes[@]}; k++)); do
        m=${modes[$(( (k + r) % ${#modes[@]} ))]}
        storm "$m" >>"$T/rate.$m"
    done
done
base=$(median <"$T/rate.none")
printf '%-20s %14s %10s   %s\n' "configuration" "round trips/s" "loss" "(each run)"
for m in "${modes[@]}"; do
    v=$(median <"$T/rate.$m")
    awk -v n="$m" -v v="$v" -v b="$base" -v runs="$(tr '\n' ' ' <"$T/rate.$m")" 'BEGIN { printf "%-20s %14.0f %9.1f%%   %s\n", n, v, (1 - v / b) * 100, runs }'
done
for m in "${modes[@]}"; do
    case $m in fk-*) ;; *) continue ;; esac
    awk -v m="$m" '$2 == m' "$T/fkstats" | sort -k3 -n | awk -v m="$m" '
        { v[NR] = $0; all = all sprintf(" %s", $3) } END { split(v[int((NR + 1) / 2)], a, " ");
          rate = a[9] / a[12];
          printf "flamekit %-10s CPU %.2f%% of a core in the window (runs:%s), %.2f%% with start-up; %.3f us per switch-out at %.0f switch-outs/s (%.2f%% of a core at 64,000/s); RSS %d MB; window end to files %.0f ms; N %s before, %s at most; %s seen, %s recorded, %s lost; rate before %s/s; %s events\n",
                 m, a[3], all, a[4], a[3] / 100 / rate * 1e6, rate, a[3] / 100 / rate * 64000 * 100, a[5], a[6], a[7], a[8], a[9], a[10], a[13], a[11], a[14] }'
done
if [ -n "$BASE" ]; then
    # new / base, each the median of its runs
    cpu() { awk -v m="$1" '$2 == m { print $3 }' "$T/fkstats" | median; }
    us() { awk -v m="$1" '$2 == m { print $3 / 100 / ($9 / $12) * 1e6 }' "$T/fkstats" | median; }
    awk -v b="$base" -v f="$(median <"$T/rate.fk-default")" -v g="$(median <"$T/rate.fk-base")" \
        -v c="$(cpu fk-default)" -v cb="$(cpu fk-base)" -v u="$(us fk-default)" -v ub="$(us fk-base)" 'BEGIN {
        printf "same run, this build / baseline: throughput loss %.1f%% / %.1f%%; CPU in the window %.2f%% / %.2f%% of a core (%.2fx); per switch-out %.3f / %.3f us (%.2fx); throughput %.3fx\n",
               (1 - f / b) * 100, (1 - g / b) * 100, c, cb, c / cb, u, ub, u / ub, f / g }'
fi
if [ $have_bt = 1 ]; then
    awk -v b="$base" -v f="$(median <"$T/rate.fk-default")" -v t="$(median <"$T/rate.bpftrace")" 'BEGIN {
        printf "same run: throughput loss flamekit %.1f%%, bpftrace %.1f%%; flamekit keeps %.3fx the throughput bpftrace does\n",
               (1 - f / b) * 100, (1 - t / b) * 100, f / t }'
fi
fi

if [[ " $PARTS " == *" paired "* ]]; then
echo "== switch storm, paired: ${FK_BENCH_ROUNDS:-4} rounds of ${FK_BENCH_PAIRED_SECS:-2} s windows, a storm pinned to each CPU, one profiled, one the control"
python3 "$FK_SRC/bench/offcpu-paired.py" "$TRUTH" "${FK_BENCH_ROUNDS:-4}" "${FK_BENCH_PAIRED_SECS:-2}" \
    ${CG:+"$CG"} fk-default="$FLAMEKIT" ${BASE:+fk-base="$BASE"}
fi

if [[ " $PARTS " == *" alt "* ]]; then
if [ -z "$CG" ]; then echo "== switch storm, alternating: skipped (no cgroup v2 directory)"
else
echo "== switch storm, alternating: ${FK_BENCH_ALT_WINDOWS:-8} windows of ${FK_BENCH_ALT_SECS:-8} s, the profiled storm switched every ${FK_BENCH_ALT_SWITCH:-0.5} s"
python3 "$FK_SRC/bench/offcpu-alt.py" "$TRUTH" "${FK_BENCH_ALT_WINDOWS:-8}" "${FK_BENCH_ALT_SECS:-8}" \
    "${FK_BENCH_ALT_SWITCH:-0.5}" "$CG" "$FLAMEKIT"
fi
fi

if [[ " $PARTS " == *" stack "* ]]; then
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
fi

if [[ " $PARTS " == *" minblock "* ]]; then
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
fi
