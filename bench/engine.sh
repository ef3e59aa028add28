#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The capture engine's live cost (issue 20's targets), this build against a
# baseline build in the same run, captures alternating (base, new, base,
# new...) while python3.11 runs deep stacks on every CPU:
#  (1) 'flamekit host -F 999' (dwarf stacks, --python off so Python frame
#      reads, bench/python.sh's subject, stay out -- FK_BENCH_PYTHON=on
#      keeps them: the default capture, the Python gate's path; --no-svg:
#      rendering is not the engine's): flamekit's CPU (user+sys) per sample over the
#      whole run (target <= 4 us), and split into a fixed cost (kallsyms,
#      the /proc scan, naming, files) and a per-sample cost: two windows,
#      SHORT and LONG seconds; per sample = extra CPU / extra samples,
#      fixed = the short run's CPU less its samples' share.
#      And steady: the CPU its threads took (schedstat, ns) from 3 s into
#      the LONG run to 1 s before its end, per sample at the run's mean
#      rate: no start-up, naming or files, no rusage tick rounding, so
#      the quietest per-sample figure; split into the ring reader's
#      thread (flamekit-reader) and the rest (the engine's thread, symbol
#      loading). Beside it, over the same span, the run time of the BPF
#      programs flamekit attached (the Python gate's, with --python on),
#      per sample and per run (kernel BPF statistics, switched on for the
#      capture with BPF_ENABLE_STATS): they run in the sampled tasks'
#      context, so no flamekit thread's CPU holds them.
#  (2) 'flamekit host -F 99 -d LONG99' (the default frequency, dwarf):
#      share of one core (target <= 1 % for 60 s), and its BPF programs'
#      ns a run over its steady span: at 99 Hz a CPU runs the Python
#      gate's program once every ~10 ms, with all it touches cold (4-6x
#      its 999 Hz cost a run), so a 999 Hz figure misses it.
# Ratios are new/base of the medians over the pairs, and per pair: each
# pair's ratio (new/base of that pair's two captures, run back to back;
# the 2nd, 4th... pairs run new first, so a drift in the host's load
# does not favour one build), their range, the geometric mean with its 95 % interval
# (Student's t on the log ratios) and the median with its sign-test
# interval (order statistics; the coverage it reaches is printed: 93.8 %
# at 5 pairs, 97.9 % at 10). A lever is shown only when the interval
# lies on one side of 1. Without FK_BASELINE only this build's figures
# are printed.
# FK_BENCH_LOAD=mixed runs other programs instead of the python3.11
# workers (a check on inputs the engine was not tuned on): 'xz -9' of a
# 48 MB file of the system's shared libraries (C, no frame pointers: CFI
# unwinding) on even CPUs, node on a recursive and allocating script (JIT
# code, V8's frames) on odd ones. FK_BENCH_LOAD=stdlib runs Debian's
# python3 on standard-library work instead (bench/pystdlib.py: shallow
# chains of many functions, the Python gate's costly case at 99 Hz; e.g.
# FK_BENCH_PYTHON=on FK_BENCH_LONG=0 FK_BENCH_LONG99=20).
# env: FLAMEKIT, FK_BASELINE (a baseline build directory holding flamekit,
#      e.g. main built in /tmp/base/build), FK_BENCH_PAIRS (default 3),
#      FK_BENCH_SHORT (s, default 2), FK_BENCH_LONG (s, default 12; 0 skips (1)),
#      FK_BENCH_LONG99 (s, default 60; 0 skips (2)), FK_BENCH_LOAD (python,
#      the default, mixed or stdlib), FK_BENCH_PYTHON (flamekit's --python: off,
#      the default, or on).
set -euo pipefail
src=${FK_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
fk=${FLAMEKIT:-${FK_BUILD:-$src/build}/flamekit}
base=${FK_BASELINE:+$FK_BASELINE/flamekit}
pairs=${FK_BENCH_PAIRS:-3}
short=${FK_BENCH_SHORT:-2}
long=${FK_BENCH_LONG:-12}
long99=${FK_BENCH_LONG99:-60}
load=${FK_BENCH_LOAD:-python}
pymode=${FK_BENCH_PYTHON:-off}
case $pymode in on|off) ;; *) echo "bench/engine: FK_BENCH_PYTHON is on or off, not '$pymode'" >&2; exit 2 ;; esac
PY=/usr/bin/python3.11
case $load in
python) command -v "$PY" >/dev/null || { echo "bench/engine: SKIP: $PY not found"; exit 0; } ;;
mixed) for c in xz node; do
           command -v "$c" >/dev/null || { echo "bench/engine: SKIP: $c not found"; exit 0; }
       done ;;
stdlib) command -v /usr/bin/python3 >/dev/null || { echo "bench/engine: SKIP: /usr/bin/python3 not found"; exit 0; } ;;
*) echo "bench/engine: FK_BENCH_LOAD is python, mixed or stdlib, not '$load'" >&2; exit 2 ;;
esac
if [ -n "$base" ] && [ ! -x "$base" ]; then
    echo "bench/engine: FK_BASELINE has no flamekit ($base)" >&2
    exit 2
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/fk-bench-engine.XXXXXX")
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
echo "bench/engine: load average at start: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs; load: $load; --python $pymode"
nb=1; [ -n "$base" ] && nb=2
total=$(( pairs * nb * (short + long + long99 + 30) ))
if [ "$load" = python ]; then
    sed -n '/^cat >busy.py <<.EOF.$/,/^EOF$/p' "$src/bench/unwind.sh" | sed '1d;$d' >"$work/busy.py"
    for ((i = 0; i < $(nproc); i++)); do "$PY" "$work/busy.py" "$total" & pids+=($!); done
elif [ "$load" = stdlib ]; then
    for ((i = 0; i < $(nproc); i++)); do /usr/bin/python3 "$src/bench/pystdlib.py" "$total" & pids+=($!); done
else
    find /usr/lib -name '*.so*' -type f -size +100k 2>/dev/null | sort | xargs cat 2>/dev/null |
        head -c $((48 << 20)) >"$work/big" || true
    cat >"$work/busy.js" <<'EOF'
function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
function tree(d) { return d ? { l: tree(d - 1), r: tree(d - 1), s: "n" + d } : null; }
function weigh(t) { return t ? 1 + weigh(t.l) + weigh(t.r) : 0; }
const end = Date.now() + 1000 * Number(process.argv[2]);
let sink = 0;
while (Date.now() < end) {
    sink += fib(20) + weigh(tree(12)) + JSON.stringify(tree(8)).length;
    sink += [...Array(2000).keys()].map(i => (i * 7919) % 1013).sort((a, b) => a - b)[3];
}
console.log(sink > 0 ? "" : "?");
EOF
    for ((i = 0; i < $(nproc); i++)); do
        if ((i % 2 == 0)); then
            (trap 'kill $x 2>/dev/null; exit 0' TERM; end=$((SECONDS + total))
             while ((SECONDS < end)); do xz -9 -T1 -c "$work/big" >/dev/null & x=$!; wait $x; done) &
        else
            node "$work/busy.js" "$total" >/dev/null &
        fi
        pids+=($!)
    done
fi
sleep 1

# one capture: prints "CPU_S SAMPLES LOST STEADY_US READER_US PROG_US
# PROG_NS" (LOST: records the kernel dropped; a cheaper build that loses
# records has not proven its cost; STEADY_US, READER_US: 0 for runs under
# 5 s; PROG_US, PROG_NS: its BPF programs' run time per sample and per
# run over the steady span, 0 without them or without BPF statistics)
run() {  # run FLAMEKIT HZ SECS
    local out=$work/out.$RANDOM
    python3 - "$1" "$2" "$3" "$out" "$pymode" <<'PY'
import ctypes, glob, json, os, subprocess, sys, time
fk, hz, secs, out, pymode = sys.argv[1:6]
# BPF_ENABLE_STATS (bpf command 32, type BPF_STATS_RUN_TIME): the kernel
# times every BPF program's runs while this fd is open (-1: not allowed)
attr = (ctypes.c_uint32 * 32)()
ctypes.CDLL(None, use_errno=True).syscall(321, 32, ctypes.byref(attr), 128)
p = subprocess.Popen([fk, "host", "-q", "--python", pymode, "--no-svg", "-F", hz, "-d", secs + "s",
                      "-o", out])
def threads():
    """{tid: (ns on CPU, is the reader)} of flamekit's threads now"""
    ts = {}
    for d in glob.glob("/proc/%d/task/*" % p.pid):
        try:
            with open(d + "/schedstat") as f:
                ns = int(f.read().split()[0])
            with open(d + "/comm") as f:
                ts[d] = (ns, f.read().strip() == "flamekit-reader")
        except (OSError, ValueError, IndexError):
            pass
    return ts, time.monotonic()
def progs():
    """(run ns, runs) of flamekit's BPF programs now, each program once"""
    seen = {}
    for fd in glob.glob("/proc/%d/fdinfo/*" % p.pid):
        try:
            with open(fd) as f:
                d = dict(l.split(":", 1) for l in f.read().splitlines() if ":" in l)
            if "run_time_ns" in d:
                seen[d.get("prog_id", fd).strip()] = (int(d["run_time_ns"]), int(d["run_cnt"]))
        except (OSError, ValueError):
            pass
    return sum(v[0] for v in seen.values()), sum(v[1] for v in seen.values())
steady = int(secs) >= 5
if steady:
    head = min(3, int(secs) // 3)   # kallsyms, the /proc scan, first symbols
    time.sleep(head)
    a, ta = threads()
    pa = progs()
    time.sleep(int(secs) - head - 1)
    b, tb = threads()
    pb = progs()
# its own rusage (and its waited children's): RUSAGE_CHILDREN would add
# whatever this interpreter's start-up ran (a pyenv shim: ~0.3 s, 6,500 faults)
_, status, ru = os.wait4(p.pid, 0)
if status:
    sys.exit("flamekit failed (wait status %d)" % status)
d = json.load(open(glob.glob(out + "/*.json")[0]))
su = ru_ = pu = pn = 0.0
if steady and d["samples"] and d.get("duration_s"):
    n = d["samples"] / d["duration_s"] * (tb - ta)   # samples in the window, at the mean rate
    for t, (ns, reader) in b.items():
        dn = ns - a.get(t, (0, reader))[0]
        su += dn / 1e3 / n
        ru_ += dn / 1e3 / n if reader else 0
    if pb[1] > pa[1]:
        pu = (pb[0] - pa[0]) / 1e3 / n
        pn = (pb[0] - pa[0]) / (pb[1] - pa[1])
print("%.4f %d %d %.3f %.3f %.3f %.1f" % (ru.ru_utime + ru.ru_stime, d["samples"], d.get("lost", 0), su, ru_,
                                          pu, pn))
PY
    rm -rf "$out"
}

builds=(new)
[ -n "$base" ] && builds=(base new)
declare -A figs
for ((p = 0; p < pairs; p++)); do
    order=("${builds[@]}")
    ((p % 2 == 1 && ${#builds[@]} == 2)) && order=(new base)
    for b in "${order[@]}"; do
        bin=$fk; [ "$b" = base ] && bin=$base
        cs=0 ns=0 cl=0 nl=0 ls=0 ll=0 l99=0 su=0 ru=0 pu=0 pn=0
        if [ "$long" -gt 0 ]; then
            read -r cs ns ls _ _ _ _ < <(run "$bin" 999 "$short")
            read -r cl nl ll su ru pu pn < <(run "$bin" 999 "$long")
        fi
        c99=0 pn99=0
        [ "$long99" -gt 0 ] && read -r c99 _ l99 _ _ _ pn99 < <(run "$bin" 99 "$long99")
        figs[$b]+="$cs $ns $cl $nl $c99 $((ls + ll + l99)) $su $ru $pu $pn $pn99"$'\n'
    done
done
# per build: medians of whole-run us/sample, per-sample us, fixed ms, 99 Hz %,
# steady us/sample, the reader's part of it, its BPF programs' us/sample
# and ns/run; lost records over all its captures
summary() {
    awk -v short="$short" -v long99="$long99" '
    function med(a, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
                                   return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
    NF == 11 { n++; whole[n] = 1e6 * $3 / ($4 ? $4 : 1); lost += $6
              per = ($4 > $2) ? ($3 - $1) / ($4 - $2) : 0; ps[n] = 1e6 * per
              fx[n] = 1e3 * ($1 - per * $2); pc[n] = long99 ? 100 * $5 / long99 : 0
              st[n] = $7; rd[n] = $8; pu[n] = $9; pn[n] = $10; p99[n] = $11 }
    END { printf "%.2f %.2f %.0f %.3f %d %.2f %.2f %.3f %.0f %.0f\n", med(whole, n), med(ps, n), med(fx, n), med(pc, n), lost,
                 med(st, n), med(rd, n), med(pu, n), med(pn, n), med(p99, n) }'
}
declare -A s
for b in "${builds[@]}"; do
    s[$b]=$(printf '%s' "${figs[$b]}" | summary)
    read -r w ps fx pc lost st rd pu pn p99 <<<"${s[$b]}"
    printf '(%s)' "$b"
    [ "$long" -gt 0 ] && printf ' 999 Hz: %s us CPU/sample over a %ss run (target <= 4); per sample %s us + fixed %s ms; steady %s us/sample (reader %s), BPF programs in the sampled tasks %s us/sample (%s ns a run);' \
        "$w" "$long" "$ps" "$fx" "$st" "$rd" "$pu" "$pn"
    [ "$long99" -gt 0 ] && printf ' 99 Hz %ss: %s %% of a core (target <= 1), BPF programs %s ns a run;' "$long99" "$pc" "$p99"
    printf ' lost records: %s\n' "$lost"
    printf '%s' "${figs[$b]}" | sed "s/^/    ($b) cpu_s samples (${short}s), cpu_s samples (${long}s), cpu_s (99 Hz), lost, steady us, reader us, BPF us, BPF ns a run, BPF ns a run (99 Hz): /"
done
if [ -n "$base" ]; then
    read -r bw bps bfx bpc _ bst _ <<<"${s[base]}"
    read -r nw nps nfx npc _ nst _ <<<"${s[new]}"
    awk -v bw="$bw" -v nw="$nw" -v bps="$bps" -v nps="$nps" -v bfx="$bfx" -v nfx="$nfx" \
        -v bpc="$bpc" -v npc="$npc" -v bst="$bst" -v nst="$nst" -v long99="$long99" 'function r(a, b) { return a > 0 ? b / a : 0 }
        BEGIN { printf "ratio new/base (medians of %s pairs): us/sample %.2fx, per sample %.2fx, fixed %.2fx, steady %.2fx", '"$pairs"', r(bw, nw), r(bps, nps), r(bfx, nfx), r(bst, nst)
                if (long99 > 0) printf ", 99 Hz core share %.2fx", r(bpc, npc)
                printf "\n" }'
    # per pair: line i of base's figures against line i of new's
    paste -d' ' <(printf '%s' "${figs[base]}") <(printf '%s' "${figs[new]}") | awk -v long="$long" -v long99="$long99" '
    function sort(a, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t } }
    function tq(df) {   # Student t, 0.975 quantile
        split("12.706 4.303 3.182 2.776 2.571 2.447 2.365 2.306 2.262 2.228 2.201 2.179 2.160 2.145 2.131 2.120 2.110 2.101 2.093 2.086 2.080 2.074 2.069 2.064 2.060 2.056 2.052 2.048 2.045 2.042", q, " ")
        return df <= 30 ? q[df] : 1.96 }
    function report(name, r, n,   i, s, ss, m, sd, h, k, c, p, cov, lo, hi, list) {
        if (n < 1) return
        for (i = 1; i <= n; i++) { list = list sprintf(" %.3f", r[i]); s += log(r[i]) }
        m = s / n
        for (i = 1; i <= n; i++) ss += (log(r[i]) - m) ^ 2
        sort(r, n)
        printf "  %s per pair:%s\n", name, list
        printf "    range %.3f-%.3f, %d of %d below 1; geometric mean %.3fx", r[1], r[n], below(r, n), n, exp(m)
        if (n >= 2) { sd = sqrt(ss / (n - 1)); h = tq(n - 1) * sd / sqrt(n)
                      printf " (95 %% interval %.3f-%.3f)", exp(m - h), exp(m + h) }
        # sign test: [r(k), r(n+1-k)] covers the median with 1 - 2 P(Binomial(n, 1/2) < k);
        # the largest k (narrowest interval) with P(B < k) <= 2.5 %, at least 1
        k = 1; c = 0; p = 0.5 ^ n
        for (i = 0; 2 * i < n; i++) { c += p; if (c > 0.025) break; k = i + 1; p = p * (n - i) / (i + 1) }
        c = 0; p = 0.5 ^ n
        for (i = 0; i < k; i++) { c += p; p = p * (n - i) / (i + 1) }
        cov = 100 * (1 - 2 * c)
        printf "; median %.3fx (%.1f %% interval %.3f-%.3f)\n", (n % 2 ? r[(n + 1) / 2] : (r[n / 2] + r[n / 2 + 1]) / 2), cov, r[k], r[n + 1 - k]
    }
    function below(r, n,   i, b) { for (i = 1; i <= n; i++) b += r[i] < 1; return b }
    NF == 22 { n++
        if ($4 > 0 && $15 > 0 && $3 > 0) { nw++; w[nw] = ($14 / $15) / ($3 / $4) }
        if ($4 > $2 && $15 > $13 && $3 > $1 && $14 > $12) { b = ($3 - $1) / ($4 - $2); a = ($14 - $12) / ($15 - $13)
                                                             if (b > 0 && a > 0) { np++; ps[np] = a / b } }
        if ($7 > 0 && $18 > 0) { ns++; st[ns] = $18 / $7 }
        if ($8 > 0 && $19 > 0) { nr++; rd[nr] = $19 / $8 }
        if ($9 > 0 && $20 > 0) { nb++; bp[nb] = $20 / $9; nt++; sb[nt] = ($18 + $20) / ($7 + $9) }
        if ($10 > 0 && $21 > 0) { nn++; bn[nn] = $21 / $10 }
        if ($11 > 0 && $22 > 0) { n9++; b9[n9] = $22 / $11 }
        if ($5 > 0 && $16 > 0) { nc++; cc[nc] = $16 / $5 } }
    END { print "pairs, new/base of each pair (the 2nd, 4th... ran new first):"
          if (long > 0) { report("steady us/sample", st, ns); report("reader us/sample", rd, nr)
                          report("BPF programs us/sample (in the sampled tasks)", bp, nb)
                          report("BPF programs ns a run", bn, nn)
                          report("steady + BPF programs us/sample", sb, nt)
                          report("whole-run us/sample", w, nw); report("per sample (long - short)", ps, np) }
          if (long99 > 0) { report("99 Hz core share", cc, nc); report("99 Hz BPF programs ns a run", b9, n9) } }'
fi
