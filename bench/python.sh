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
#      sample, the read delay, flamekit's peak RSS and the memory it
#      charged to --max-memory (the gate's queues apart).
#      FK_BENCH_BASE=FLAMEKIT adds another build's --python on to the
#      rotation and gives the ratio of the two: the extra per Python
#      sample, and paired per rotation CPU per sample, RSS and memory.
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
#  (6) observer bias: six short interpreters (FK_BENCH_BIAS_SPIN, 0.15 s
#      of CPU each in fk_child_spin: 899 samples at FK_BENCH_BIAS_HZ, 999)
#      forked one after another by a
#      shell in a small cgroup of their own beside a busy outsider in it and
#      FK_BENCH_LOOPS (4) nice-0 loops outside; `flamekit pid -F HZ` on the
#      shell (the cgroup tree), then `flamekit host -F HZ` over the same
#      work (the interpreter copied under a name of its own): fk_child_spin's
#      samples / (6 x SPIN x HZ) and the interpreters' samples /
#      (their CPU time x HZ), --python on and off (FK_BENCH_BASE: its
#      --python on too), FK_BENCH_BIAS_REPS (2) rounds. Each run also
#      gives the capture's own samples over CPUs x HZ x its duration (a
#      loss of every process's samples rather than a bias against the
#      interpreters; near 1 host-wide, where every CPU is busy), its lost
#      samples, the reader's moves and the reads' consistency and delay.
# Hold /tmp/fk-bench.lock while it runs on a shared machine; the load
# average at the start is printed, and the delays depend on it.
# env: FLAMEKIT, FK_BENCH_CPU (CPU-seconds per run, default 5), FK_BENCH_REPS
# (pairs, 3), FK_BENCH_HZ ("99 999"), FK_BENCH_MODES ("ratio generators"),
# FK_BENCH_ROUNDS (throughput rounds, 8), FK_BENCH_WINDOW (seconds, 2),
# FK_BENCH_PARTS ("cost throughput paired stopped"), FK_BENCH_PAIRED_ROUNDS,
# FK_BENCH_BASE, FK_BENCH_LOOPS, FK_BENCH_BIAS_REPS, FK_BENCH_BIAS_HZ,
# FK_BENCH_BIAS_SPIN (part "bias" runs only when named)
set -euo pipefail
src=${FK_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
build=${FK_BUILD:-$src/build}
fk=${FLAMEKIT:-$build/flamekit}
cpu=${FK_BENCH_CPU:-5}
reps=${FK_BENCH_REPS:-3}
parts=${FK_BENCH_PARTS:-cost throughput paired stopped}
bias_hz=${FK_BENCH_BIAS_HZ:-999} bias_spin=${FK_BENCH_BIAS_SPIN:-0.15}
bias_want=$(awk -v h="$bias_hz" -v s="$bias_spin" 'BEGIN { printf "%d", 6 * s * h }')
PY=/usr/bin/python3.11
TRUTH=$src/test/progs/pytruth.py
BENCH=$src/bench/pybench.py
[ -x "$PY" ] || { echo "bench/python: SKIP: $PY not found"; exit 0; }
work=$(mktemp -d "${TMPDIR:-/tmp}/fk-bench-python.XXXXXX")
# (part 6's loops and cgroup too, when it is interrupted)
bias_pids=() bias_cg=""
trap 'for p in "${bias_pids[@]}"; do kill "$p" 2>/dev/null; done; [ -z "$bias_cg" ] || rmdir "$bias_cg" 2>/dev/null; rm -rf "$work"' EXIT
cd "$work"
echo "bench/python: load average at start: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"
# pybench.py prints each line as it is made, with this prefix: no sed in
# a pipe (a time limit's SIGTERM to the process group took sed with it,
# and both lost what they held: a quiet call's cost part printed nothing)
export FK_BENCH_PREFIX="bench/python: "

case " $parts " in *" cost "*)
    # each run takes the target's CPU seconds of wall time at least (more
    # on a busy host): say how long, so a time limit can be set to fit
    per=2; [ -z "${FK_BENCH_BASE:-}" ] || per=3     # on, off (, base) per pair
    n=$(( $(wc -w <<<"${FK_BENCH_HZ:-99 999}") * $(wc -w <<<"${FK_BENCH_MODES:-ratio generators}") * reps * per ))
    echo "bench/python: part cost: $n runs of $cpu s of the target's CPU each (at least $(awk -v n="$n" -v c="$cpu" 'BEGIN { printf "%.0f", n * (c + 0.5) }') s)"
    for hz in ${FK_BENCH_HZ:-99 999}; do
        for mode in ${FK_BENCH_MODES:-ratio generators}; do
            "$PY" "$BENCH" cost "$fk" "$PY" "$TRUTH" "$hz" "$mode" "$reps" "$cpu" \
                ${FK_BENCH_BASE:+"$FK_BENCH_BASE"}
        done
    done
esac

case " $parts " in *" throughput "*)
    for mode in ${FK_BENCH_MODES:-ratio generators}; do
        "$PY" "$BENCH" throughput "$fk" "$PY" "$TRUTH" 99 "$mode" "${FK_BENCH_ROUNDS:-8}" \
            "${FK_BENCH_WINDOW:-2}"
    done
esac

case " $parts " in *" paired "*)
    for mode in ${FK_BENCH_MODES:-ratio generators}; do
        "$PY" "$BENCH" paired "$fk" "$PY" "$TRUTH" 99 "$mode" "${FK_BENCH_PAIRED_ROUNDS:-24}" 1 \
            ${FK_BENCH_BASE:+"$FK_BENCH_BASE"}
    done
esac

# bias_run FLAMEKIT TARGET(pid|host) TAG [flamekit options]: part 6, one run
bias_run() {
    local fk=$1 target=$2 tag=$3 cg2 svc pyp rc i
    shift 3
    cg2=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
    svc=$cg2/fk-bench-python-$$
    mkdir "$svc" || return 1
    bias_cg=$svc bias_pids=()
    rm -rf "$work/bias" && mkdir "$work/bias"
    "$work/fkout" -c "echo \$\$ >$svc/cgroup.procs; while :; do :; done" &
    bias_pids+=($!)
    for ((i = 0; i < ${FK_BENCH_LOOPS:-4}; i++)); do
        sh -c 'while :; do :; done' &
        bias_pids+=($!)
    done
    : >"$work/ready"
    "$work/fkshell" -c "echo \$\$ >$svc/cgroup.procs; while [ ! -s $work/ready ]; do sleep 0.05; done
        for i in 1 2 3 4 5 6; do $work/python-fkb $work/fkpy.py; done; times >$work/times" &
    pyp=$!
    bias_pids+=($pyp)
    sleep 0.3
    if [ "$target" = pid ]; then
        timeout 120 "$fk" pid -q --no-svg -F "$bias_hz" -d 60 --ready-fd 3 -o "$work/bias/out" "$@" "$pyp" \
            >/dev/null 2>&1 3>"$work/ready"
        rc=$?
    else
        # host-wide: until the shell is done (its times written)
        timeout 120 "$fk" host -q --no-svg -F "$bias_hz" -d 60 --ready-fd 3 -o "$work/bias/out" "$@" \
            >/dev/null 2>&1 3>"$work/ready" &
        local fp=$!
        wait "$pyp"
        kill -INT "$fp" 2>/dev/null
        wait "$fp"
        rc=$?
    fi
    wait "$pyp" 2>/dev/null
    for i in "${bias_pids[@]}"; do kill "$i" 2>/dev/null; done
    wait "${bias_pids[@]}" 2>/dev/null
    rmdir "$svc"
    bias_cg="" bias_pids=()
    local fo spin pys cpu
    fo=$(ls "$work"/bias/out/*.folded.gz 2>/dev/null | head -1)
    [ "$rc" = 0 ] && [ -n "$fo" ] || { echo "bench/python: bias $target $tag: flamekit failed ($rc)"; return 0; }
    spin=$(zcat "$fo" | awk '/^python-fkb;.*;fk_child_spin_\[p\]/ { s += $NF } END { print s + 0 }')
    pys=$(zcat "$fo" | awk '/^python-fkb;/ { s += $NF } END { print s + 0 }')
    # the shell's children's CPU time: the second line of `times`
    cpu=$(sed -n 2p "$work/times" | awk '{ split($1, a, "m"); split($2, b, "m"); sub("s", "", a[2]);
        sub("s", "", b[2]); print a[1] * 60 + a[2] + b[1] * 60 + b[2] }')
    awk -v t="$target" -v g="$tag" -v s="$spin" -v p="$pys" -v c="$cpu" -v l="$(cut -d' ' -f1 /proc/loadavg)" \
        -v hz="$bias_hz" -v e="$bias_want" \
        'BEGIN { printf "bench/python: bias %-4s %-4s fk_child_spin %d of %d (%.3f); interpreters %d samples for %.3f s of CPU (%.3f); load %s\n", t, g, s, e, s / e, p, c, (c > 0 ? p / (c * hz) : 0), l }'
    # what tells a bias against the interpreters from a loss of every
    # process's samples: the capture's samples over CPUs x HZ x its
    # duration, the kernel's lost samples; and how the reads went: the
    # reader's moves, consistency, read delay
    "$PY" -c 'import glob, json, sys
d = json.load(open(glob.glob(sys.argv[1] + "/*.json")[0]))
p, r = d.get("python", {}), d.get("reader", {})
print("bench/python: bias %-4s %-4s   all samples %.3f of CPUs x HZ x %.1f s, %d lost; reader moves %d; "
      "consistent %s, read delay median %s ms" % (sys.argv[2], sys.argv[3],
      d["samples"] / (d["duration_s"] * int(sys.argv[4]) * int(sys.argv[5])), d["duration_s"], d["lost_samples"],
      r.get("cpu_moves", 0), "%.3f" % p["consistent_share"] if "consistent_share" in p else "-",
      p.get("read_delay", {}).get("median_ms", "-")))' "$work/bias/out" "$target" "$tag" "$(nproc)" "$bias_hz" \
        || echo "bench/python: bias $target $tag: no metadata"
}

case " $parts " in *" bias "*)
    if [ "$(id -u)" != 0 ] || ! awk '$9 == "cgroup2" { f = 1 } END { exit !f }' /proc/self/mountinfo; then
        echo "bench/python: bias: SKIP: needs root and cgroup2"
    else
        printf '%s\n' 'import time' 'def fk_child_spin(t):' '    e = time.process_time() + t' \
            '    while time.process_time() < e:' '        pass' "fk_child_spin($bias_spin)" >"$work/fkpy.py"
        cp /bin/sh "$work/fkout"
        cp "$PY" "$work/python-fkb"    # a name of their own, host-wide
        cp "$(command -v bash)" "$work/fkshell"
        set +e      # (exit statuses are looked at: loops killed, flamekit's own)
        for ((r = 0; r < ${FK_BENCH_BIAS_REPS:-2}; r++)); do
            for target in pid host; do
                bias_run "$fk" $target on
                bias_run "$fk" $target off --python off
                [ -z "${FK_BENCH_BASE:-}" ] || bias_run "$FK_BENCH_BASE" $target base
            done
        done
        set -e
    fi
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
