#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Benchmark for trees and ring loss (issue: no sample of the target goes
# missing). Parts (FK_BENCH_PARTS, default "1 2"):
#  (1) trees: a shell loop of /bin/true under 'flamekit run' and attached
#      by 'flamekit pid' (in a small cgroup of its own, and in flamekit's
#      cgroup), at 99 Hz: samples against the tree's CPU time from rusage
#      (/usr/bin/time) x the frequency. Target: >= 0.90.
#  (2) cold host: 200 distinct small binaries (-O2, no frame pointers,
#      2,000 functions each), each busy ~5% of a CPU, the page cache
#      dropped after they started (their symbol and unwind tables are read
#      from disk by the capture); 'flamekit host -d 10' at each rate of
#      FK_BENCH_RATES (default "99 999"), page cache FK_BENCH_CACHES
#      (default "warm cold"), default call graph: lost records against
#      samples read. Targets: 0 lost at 99 Hz, <= 1% at 999 Hz.
#      The binaries are stopped (SIGSTOP) after each window (flamekit's
#      --ready-fd + FK_BENCH_STOP_AFTER, default 15 s, checked afterwards
#      against the window in the metadata; 710df15 at 999 Hz, cold, ended
#      its window 9.8 s late: FK_BENCH_STOP_AFTER=30 for it) until the next
#      capture: records are lost only in the window, and naming at
#      flamekit's own priority among ~170 runnable tasks would otherwise
#      take minutes.
#      With FK_BASELINE (a baseline build directory holding flamekit) each
#      capture is taken with the baseline first, then this build, the
#      cache dropped before each cold one.
#      A capture that fails (exit status, over its time limit, no
#      metadata, binaries stopped before its window ended) is printed as
#      FAILED, and the script exits 1 after the others.
#  (3) trees under run against host (FK_BENCH_PARTS=3; FK_BENCH_TREES,
#      default "true python make git"): a loop of 2,000 /bin/true, 200
#      python3 -c pass (Debian's /usr/bin/python3), 5 x (make clean;
#      make -j2) of a 17-file C project, 7 x git clone --no-local of
#      FK_BENCH_REPO (default this source tree) -- each ~6-7 s of CPU, so
#      that host's ~650 samples of it move by ~4% (one sd), not the 13% of
#      the 0.6 s tree of 20 python3 -c pass it had before -- each taken
#      at 99 Hz in each way of FK_BENCH_TREE_BY (default "run"): 'flamekit
#      run'; 'pid' on the tree started in flamekit's cgroup (the root
#      here: the BPF tree filter); 'pid-pertask' the same with bpf(2)
#      refused (per-task events) -- with 'flamekit host' over the same
#      window: samples of each against the tree's CPU time (rusage) x the
#      frequency, and the tree capture's over host's (host's counted by the
#      command names the tree capture saw), with host's own relative sd
#      (1/sqrt(its samples)). Targets: >= 0.90, within 10% of host.
#      Parts 3 and 4 on all four trees, run and pid, fit one quiet call:
#        FK_BENCH_PARTS="3 4" FK_BENCH_TREE_BY="run pid" fk-quiet bench/children.sh
#  (4) page faults of the same trees (FK_BENCH_PARTS=4, FK_BENCH_TREES):
#      'flamekit faults run' (1 in 100): the estimate (samples x 100)
#      against the faults flamekit counted for the command's cgroup and
#      against the tree's own minor + major faults from rusage, with the
#      one-in-N verdict; then the same capture on inherited per-task
#      events (cgroup2 unmounted in a private mount namespace), whose
#      short children are never sampled: its verdict must say so.
#      Target: estimate within 10% of the counted faults.
#  (5) one busy process (FK_BENCH_PARTS=5; needs FK_BASELINE): 'flamekit
#      pid -d FK_BENCH_WINDOW (default 15)' on xz -T2 compressing an
#      endless stream (two busy threads, one process, no children), in
#      flamekit's cgroup (the root here: per-task events) and in a small
#      cgroup of its own (the tree followed per CPU in it), the baseline
#      and this build taken in turn FK_BENCH_ROUNDS times (default 3):
#      flamekit's CPU (user+sys) and peak RSS from its own rusage, and
#      samples per CPU second of xz in the window x the frequency (its
#      completeness). Target: CPU and RSS within 10% of the baseline's.
#      In flamekit's cgroup each round also takes 'flamekit host' over the
#      same window: what following the tree on per-CPU events over the
#      whole host would cost at least (every CPU's samples read, most
#      dropped), the alternative to per-task events for a pid in the root
#      cgroup (flamekit-record(1), Following a tree); FK_BENCH_HOST=0 leaves
#      that row out (a 5-round quiet call then fits the 6-minute hold).
#      Each row also gives flamekit's largest Rss and AnonHugePages seen in
#      its smaps_rollup (read every 0.2 s), its minor faults and
#      memory_peak_bytes; FK_BENCH_NOTHP=1 adds a row in flamekit's cgroup:
#      this build with transparent huge pages refused (the cost of its heap
#      on huge pages against its saving; FK_BENCH_WINDOW=10 then fits).
#  (6) many children (FK_BENCH_PARTS=6): 'flamekit run' of a shell loop of
#      N /bin/true for each N of FK_BENCH_CHILDREN (default "1000 10000"),
#      at 99 Hz (with FK_BASELINE, the baseline's run first): the forks and
#      exits the tree saw, samples against the tree's CPU time (rusage) x
#      the frequency, flamekit's peak RSS and its own count of the bytes
#      it held (memory_peak_bytes), and what each grew per child from one
#      N to the next. Target: bounded memory -- growth per child is the
#      samples' (each (pid, stack) an entry), not per-process state.
#      FK_BENCH_NOTHP=1 runs both builds with transparent huge pages
#      refused: peak RSS in 4 KiB pages, not whole 2 MiB heap pages.
# Needs root (cgroups, drop_caches). Take quiet figures under the lock, one
# rate per call (each fits the 6-minute hold):
#   FK_BENCH_PARTS=2 FK_BENCH_RATES=99 FK_BASELINE=DIR fk-quiet bench/children.sh
# env: FLAMEKIT, FK_BASELINE, FK_BENCH_PARTS, FK_BENCH_RATES,
# FK_BENCH_CACHES, FK_BENCH_TIMEOUT (seconds per capture, default 90),
# FK_BENCH_STOP_AFTER, FK_BENCH_WINDOW, FK_BENCH_ROUNDS, FK_BENCH_HOST,
# FK_BENCH_TREES, FK_BENCH_TREE_BY, FK_BENCH_NOTHP, FK_BENCH_KEEP (a
# directory: each capture's metadata and rusage are copied there at the
# end, to look at a round afterwards).
set -euo pipefail
src=${FK_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
fk=${FLAMEKIT:-${FK_BUILD:-$src/build}/flamekit}
parts=${FK_BENCH_PARTS:-1 2}
rates=${FK_BENCH_RATES:-99 999}
caches=${FK_BENCH_CACHES:-warm cold}
limit=${FK_BENCH_TIMEOUT:-90}
stop=${FK_BENCH_STOP_AFTER:-15}
failed=0
base=${FK_BASELINE:+$FK_BASELINE/flamekit}
builds=new
if [ -n "$base" ]; then
    [ -x "$base" ] || { echo "bench/children: FK_BASELINE has no flamekit ($base)" >&2; exit 2; }
    builds="base new"
fi
for need in cc python3 /usr/bin/time timeout; do
    command -v "$need" >/dev/null || { echo "bench/children: SKIP: $need not found"; exit 0; }
done
[ "$(id -u)" = 0 ] || { echo "bench/children: SKIP: needs root"; exit 0; }
work=$(mktemp -d "${TMPDIR:-/tmp}/fk-bench-children.XXXXXX")
pids=()
cg=
cg5=
cleanup() {
    set +e      # (a process already gone must not end the clean-up)
    if [ -n "${FK_BENCH_KEEP:-}" ] && mkdir -p "$FK_BENCH_KEEP"; then
        for d in "$work"/*/; do
            [ -e "$d" ] || continue
            for j in "$d"*.json; do [ -e "$j" ] && cp "$j" "$FK_BENCH_KEEP/$(basename "$d").json"; done
        done
        cp "$work"/*.time "$FK_BENCH_KEEP/" 2>/dev/null
    fi
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; kill -CONT "$p" 2>/dev/null; done
    if [ -n "${tp:-}" ]; then     # a part-3 tree (its shell may wait on its fifo)
        kill $(pgrep -P "$tp") "$tp" 2>/dev/null
    fi
    wait 2>/dev/null
    [ -n "$cg" ] && rmdir "$cg" 2>/dev/null
    if [ -n "$cg5" ]; then     # (its stream's last cat ends on SIGPIPE)
        for _ in $(seq 100); do rmdir "$cg5" 2>/dev/null && break; sleep 0.05; done
    fi
    rm -rf "$work"
}
trap cleanup EXIT
cd "$work"
# python3 is the system's (Debian's /usr/bin/python3), not a version
# manager's shim ahead of it in PATH (pyenv's: a script that resolves the
# version on each start, ~0.3 s idle, ~1 s under load): the python tree
# below is Debian's interpreter, and this script's own calls are cheap
case :$PATH: in
*/.pyenv/shims:*)
    PATH=$(printf '%s\n' "$PATH" | tr : '\n' | grep -v '/\.pyenv/shims$' | paste -sd: -)
    ;;
esac
py=$(command -v python3)
# meta FILE KEY...: values of the metadata's (dotted) keys, one per line
meta() { "$py" -c 'import json,sys; d=json.load(open(sys.argv[1]))
for k in sys.argv[2:]:
    v = d
    for p in k.split("."): v = v.get(p, "?") if isinstance(v, dict) else "?"
    print(v)' "$@"; }
echo "bench/children: load average at start: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"
# ./nothp PROGRAM ARG...: PROGRAM with transparent huge pages refused
# (PR_SET_THP_DISABLE, kept across exec), for FK_BENCH_NOTHP=1
if [ "${FK_BENCH_NOTHP:-0}" = 1 ]; then
    printf '%s\n' '#include <sys/prctl.h>' '#include <unistd.h>' '#include <stdio.h>' \
        'int main(int c, char **v) { if (c < 2 || prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0)) { perror("prctl"); return 2; }' \
        '    execv(v[1], v + 1); perror("execv"); return 2; }' >nothp.c
    cc -O2 -o nothp nothp.c
fi

if [[ " $parts " == *" 1 "* ]]; then
    cg2=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
    # tree CMD...: the loop, its CPU time in tree.time
    loop='sleep 2; for i in $(seq 500); do /bin/true; done'
    "$fk" run -q -o run -- /usr/bin/time -f '%U %S' -o run.time bash -c "${loop#sleep 2; }" >/dev/null 2>&1
    read -r n mode <<<"$(meta run/*.json samples target.tree.mode | paste -sd' ')"
    c=$(awk '{ print $1 + $2 }' run.time)
    echo "(1) run, 500 x /bin/true, 99 Hz: $n samples ($mode) for ${c}s of CPU (rusage): ratio $(awk -v n="$n" -v c="$c" 'BEGIN { printf "%.3f", n / (c * 99) }')"
    pidcase() {   # pidcase NAME CGROUP|-
        local name=$1 dir=$2
        /usr/bin/time -f '%U %S' -o "$name.time" bash -c "[ $dir = - ] || echo \$\$ >$dir/cgroup.procs; exec bash -c '$loop'" &
        local tp=$!
        sleep 0.5
        local bp; bp=$(pgrep -P "$tp")
        "$fk" pid -q -d 60 -o "$name" "$bp" >/dev/null 2>&1
        wait "$tp"
        local c; c=$(awk '{ print $1 + $2 }' "$name.time")
        read -r n mode <<<"$(meta "$name"/*.json samples target.tree.mode | paste -sd' ')"
        echo "(1) pid ($name), 500 x /bin/true, 99 Hz: $n samples ($mode) for ${c}s of CPU (rusage): ratio $(awk -v n="$n" -v c="$c" 'BEGIN { printf "%.3f", n / (c * 99) }')"
    }
    if [ -n "$cg2" ] && mkdir "$cg2/fk-bench-children-$$" 2>/dev/null; then
        cg=$cg2/fk-bench-children-$$
        pidcase own-cgroup "$cg"
    fi
    pidcase shared-cgroup -
fi

if [[ " $parts " == *" 2 "* ]]; then
    # One program, 200 distinct binaries (each its own build-id): a loop
    # that burns ~5 ms through a few frames every ~100 ms.
    "$py" - >prog.c <<'EOF'
n = 2000
print("#include <time.h>\n#include <unistd.h>\nvolatile unsigned long sink;")
for i in range(n):
    print(f"__attribute__((noinline)) unsigned long fn{i}(unsigned long x) {{ return x * {2 * i + 3}ul + (x >> {i % 13 + 1}); }}")
print("typedef unsigned long (*fp)(unsigned long);\nstatic fp table[] = {" + ",".join(f"fn{i}" for i in range(n)) + "};")
print("""
static double cpu(void) { struct timespec t; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t); return t.tv_sec + t.tv_nsec / 1e9; }
__attribute__((noinline)) static void burn(double s) { double e = cpu() + s; unsigned long x = sink; while (cpu() < e) for (int i = 0; i < 4000; i++) x = table[(x >> 7) % (sizeof table / sizeof *table)](x); sink = x; }
__attribute__((noinline)) static void work(void) { burn(0.005); }
int main(void) { for (;;) { work(); usleep(95000); } }
""")
EOF
    cc -O2 -fomit-frame-pointer -o prog prog.c
    mkdir bins
    # 200 copies, a distinct build-id in each, by one interpreter
    "$py" - <<'EOF'
import os, struct
b0 = open("prog", "rb").read()
k = b0.find(b"GNU\0")
assert k > 0
for i in range(1, 201):
    b = bytearray(b0)
    b[k + 4:k + 8] = struct.pack("<I", i)
    with open(f"bins/cold{i}", "wb") as f:
        f.write(b)
    os.chmod(f"bins/cold{i}", 0o755)
EOF
    sync
    for i in $(seq 200); do "bins/cold$i" & pids+=($!); done
    sleep 2
    now_ns() { date +%s%N; }
    for hz in $rates; do
        for cache in $caches; do
            for build in $builds; do
                bin=$fk; [ "$build" = base ] && bin=$base
                tag=$build-$cache$hz
                [ $cache = cold ] && { sync; echo 3 >/proc/sys/vm/drop_caches; }
                kill -CONT "${pids[@]}" 2>/dev/null || true
                : >"$tag.ready"
                t0=$(now_ns)
                /usr/bin/time -f '%U %S' -o "$tag.time" timeout -k 5 "$limit" \
                    "$bin" host -q -F "$hz" -d 10 --ready-fd 3 -o "$tag" \
                    >/dev/null 2>"$tag.err" 3>"$tag.ready" &
                fp=$!
                while [ ! -s "$tag.ready" ] && kill -0 $fp 2>/dev/null; do sleep 0.05; done
                stop_ns=
                if [ -s "$tag.ready" ]; then
                    # the window ends ~10 s after ready, later when flamekit's
                    # loop is late: the binaries stop $stop s after ready
                    end=$(( $(now_ns) + stop * 1000000000 ))
                    while kill -0 $fp 2>/dev/null && [ "$(now_ns)" -lt $end ]; do sleep 0.1; done
                    stop_ns=$(now_ns)
                    kill -STOP "${pids[@]}" 2>/dev/null || true
                fi
                rc=0
                wait $fp || rc=$?
                ms=$(( ($(now_ns) - t0) / 1000000 ))
                json=$(ls "$tag"/*.json 2>/dev/null | head -1 || true)
                why=
                late=
                if [ $rc -ne 0 ]; then
                    why="exit status $rc"
                    [ $rc = 124 ] && why="$why (over ${limit} s)"
                elif [ -z "$json" ]; then
                    why="no metadata"
                else
                    read -r n lost lr dsos st dur nice <<<"$(meta "$json" samples_read lost lost_records symbols.dsos start_unix_ns duration_s reader.nice | paste -sd' ')"
                    late=$(awk -v s="$st" -v d="$dur" -v x="$stop_ns" 'BEGIN { if (x != "") printf "%.1f", (s + d * 1e9 - x) / 1e9 }')
                    if [ -n "$stop_ns" ] && awk -v l="$late" 'BEGIN { exit !(l > 0) }'; then
                        why="the binaries were stopped ${late} s before the window ($dur s) ended (FK_BENCH_STOP_AFTER)"
                    fi
                fi
                if [ -n "$why" ]; then
                    failed=1
                    echo "(2) $build: host -F $hz -d 10, 200 binaries, page cache $cache: FAILED: $why; stderr: $(tail -c 300 "$tag.err" | tr '\n' ' ')"
                    [ -n "${late:-}" ] || continue
                fi
                echo "(2) $build: host -F $hz -d 10, 200 binaries, page cache $cache:${late:+${why:+ (not valid)}} $n samples read, $lr lost records ($lost samples, $(awk -v l="$lost" -v n="$n" 'BEGIN { printf "%.2f%%", (l + n) ? 100 * l / (l + n) : 0 }')), flamekit $(awk '{ print $1 "+" $2 }' "$tag.time") s CPU, $dsos DSOs, nice $nice, window $dur s, ${ms} ms"
            done
        done
    done
fi
if [[ " $parts " == *" 3 "* || " $parts " == *" 4 "* ]]; then
    # The fork-heavy trees of parts 3 and 4.
    mkdir proj
    for i in $(seq 16); do
        { echo "int f$i(int x);"; for j in $(seq 40); do echo "static int g${i}_$j(int x) { return x * $j + (x >> 3); }"; done
          echo "int f$i(int x) { return $(for j in $(seq 40); do printf 'g%s_%s(x) + ' "$i" "$j"; done) 0; }"; } >"proj/f$i.c"
    done
    echo 'int main(void) { return 0; }' >proj/main.c
    printf 'OBJ = %s main.o\nprog: $(OBJ)\n\t$(CC) -o $@ $(OBJ)\n%%.o: %%.c\n\t$(CC) -O2 -c $<\nclean:\n\trm -f *.o prog\n' \
        "$(for i in $(seq 16); do printf 'f%s.o ' "$i"; done)" >proj/Makefile
    repo=${FK_BENCH_REPO:-$src}
    declare -A wl=(
        [true]="for i in \$(seq 2000); do /bin/true; done"
        [python]="for i in \$(seq 200); do $py -c pass; done"
        [make]="for i in \$(seq 5); do make -s -C $work/proj clean >/dev/null; make -s -j2 -C $work/proj; done"
        [git]="for i in \$(seq 7); do rm -rf $work/clone; git clone -q --no-local $repo $work/clone; done"
    )
fi
if [[ " $parts " == *" 3 "* ]]; then
    # Fork-heavy trees under 'run' or attached by 'pid' (FK_BENCH_TREE_BY),
    # with 'flamekit host' over the same window: samples per CPU second of
    # the tree (rusage, /usr/bin/time) for each, and host's over the
    # tree's. host's share of the tree is its samples whose command name
    # is one of those the tree's capture saw. A 'pid' tree is started
    # here (flamekit's cgroup: the root on this host), its shell held on
    # a fifo until 'flamekit pid --ready-fd' is ready; pid-pertask takes
    # it with bpf(2) refused (test/progs/seccomp-deny): per-task events.
    deny=$(dirname "$fk")/test/progs/seccomp-deny
    for w in ${FK_BENCH_TREES:-true python make git}; do
      for by in ${FK_BENCH_TREE_BY:-run}; do
        tag=$by-$w
        if [ $by = pid-pertask ] && [ ! -x "$deny" ]; then
            echo "(3) $tag: SKIP: no $deny (make check-programs)"
            continue
        fi
        : >"h-$tag.ready"
        "$fk" host -q -d 120 --ready-fd 3 -o "h-$tag" >/dev/null 2>"h-$tag.err" 3>"h-$tag.ready" &
        hp=$!
        while [ ! -s "h-$tag.ready" ] && kill -0 $hp 2>/dev/null; do sleep 0.05; done
        rc=0
        case $by in
        run)
            "$fk" run -q -o "r-$tag" -- /usr/bin/time -f '%U %S' -o "$tag.time" bash -c "${wl[$w]}" \
                >/dev/null 2>"r-$tag.err" || rc=$?
            ;;
        pid|pid-pertask)
            mkfifo "go-$tag"
            /usr/bin/time -f '%U %S' -o "$tag.time" bash -c "read -r _ <go-$tag; ${wl[$w]}" &
            tp=$!
            bp=
            for _ in $(seq 200); do bp=$(pgrep -P "$tp") && break; sleep 0.02; done
            pre=()
            [ $by = pid-pertask ] && pre=("$deny" bpf)
            : >"p-$tag.ready"
            "${pre[@]}" "$fk" pid -q -d 120 --ready-fd 3 -o "r-$tag" "$bp" >/dev/null \
                2>"r-$tag.err" 3>"p-$tag.ready" &
            fp=$!
            while [ ! -s "p-$tag.ready" ] && kill -0 $fp 2>/dev/null; do sleep 0.05; done
            echo go >"go-$tag"
            wait "$tp" || rc=$?
            tp=
            wait "$fp" || rc=$?
            ;;
        *)
            echo "bench/children: FK_BENCH_TREE_BY: '$by' is not run, pid or pid-pertask" >&2
            exit 2
            ;;
        esac
        kill -INT $hp 2>/dev/null
        hrc=0; wait $hp || hrc=$?
        rj=$(ls "r-$tag"/*.json 2>/dev/null | head -1 || true)
        hj=$(ls "h-$tag"/*.json 2>/dev/null | head -1 || true)
        if [ $rc != 0 ] || [ $hrc != 0 ] || [ -z "$rj" ] || [ -z "$hj" ]; then
            failed=1
            echo "(3) $tag: FAILED: $by exit $rc, host exit $hrc; $(tail -c 200 "r-$tag.err" "h-$tag.err" | tr '\n' ' ')"
            continue
        fi
        cpu=$(awk '{ print $1 + $2 }' "$tag.time")
        read -r hz mode lost forks stop <<<"$(meta "$rj" event.frequency_hz target.tree.mode lost target.tree.forks stop_reason | paste -sd' ')"
        zcat "r-$tag"/*.folded.gz | awk '{ split($0, f, ";"); print f[1] }' | sort -u >"$tag.comms"
        rn=$(zcat "r-$tag"/*.folded.gz | awk '{ s += $NF } END { print s + 0 }')
        hn=$(zcat "h-$tag"/*.folded.gz | awk 'NR == FNR { c[$0] = 1; next } { split($0, f, ";"); if (f[1] in c) s += $NF } END { print s + 0 }' "$tag.comms" -)
        awk -v w="$w" -v by="$by" -v c="$cpu" -v hz="$hz" -v r="$rn" -v h="$hn" -v m="$mode" -v l="$lost" \
            -v st="$stop" -v fk="$forks" 'BEGIN {
            printf "(3) %s under %s (%s): %.2f s of CPU (rusage); %s %d samples (%.3f of CPU x %d Hz), host %d (%.3f, sd %.1f%%); %s/host %.3f; lost %s; forks %s; ended: %s\n",
                w, by, m, c, by, r, r / (c * hz), hz, h, h / (c * hz), (h ? 100 / sqrt(h) : 0), by, (h ? r / h : 0), l, fk, st }'
      done
    done
fi
if [[ " $parts " == *" 4 "* ]]; then
    # faults run on each tree, in the command's cgroup and on per-task
    # events: estimate vs flamekit's count and vs the tree's rusage
    pertask=
    unshare -m true 2>/dev/null && pertask=1
    cg2=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
    for w in ${FK_BENCH_TREES:-true python make git}; do
        for how in cgroup ${pertask:+per-task}; do
            pre=()
            [ $how = per-task ] && pre=(unshare -m sh -c "umount '$cg2' && exec \"\$0\" \"\$@\"")
            rc=0
            "${pre[@]}" "$fk" faults -q -c 100 -o "f-$how-$w" run -- /usr/bin/time -f '%R %F' -o "f-$how-$w.time" \
                bash -c "${wl[$w]}" >/dev/null 2>"f-$how-$w.err" || rc=$?
            fj=$(ls "f-$how-$w"/*.json 2>/dev/null | head -1 || true)
            if [ $rc != 0 ] || [ -z "$fj" ]; then
                failed=1
                echo "(4) $w, $how: FAILED: exit $rc; $(tail -c 200 "f-$how-$w.err" | tr '\n' ' ')"
                continue
            fi
            read -r mode counted est verdict lost <<<"$(meta "$fj" target.tree.mode faults.counted \
                faults.estimate_of_target faults.verdict lost | paste -sd' ')"
            ru=$(awk '{ print $1 + $2 }' "f-$how-$w.time")
            awk -v w="$w" -v m="$mode" -v c="$counted" -v e="$est" -v r="$ru" -v v="$verdict" -v l="$lost" 'BEGIN {
                printf "(4) %s, faults run (%s): estimate %d; counted %d (%.3f); rusage %d (%.3f); verdict %s; lost %s\n",
                    w, m, e, c, (c ? e / c : 0), r, (r ? e / r : 0), v, l }'
        done
    done
fi
if [[ " $parts " == *" 5 "* ]]; then
    [ -n "$base" ] || { echo "(5) SKIP: needs FK_BASELINE (the build to compare with)"; }
    command -v xz >/dev/null || { echo "(5) SKIP: no xz"; base=; }
fi
if [[ " $parts " == *" 5 "* ]] && [ -n "$base" ]; then
    win=${FK_BENCH_WINDOW:-15}
    # compressible input (source text, ~8 MB), fed without end
    find "$src/src" -name '*.[ch]' -exec cat {} + >text1
    for _ in $(seq 8); do cat text1; done >text
    cg2=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
    places=here
    if [ -n "$cg2" ] && mkdir "$cg2/fk-bench-busy-$$" 2>/dev/null; then
        cg5=$cg2/fk-bench-busy-$$
        places="here own-cgroup"
    fi
    # busy PLACE: start the stream; sets xp (xz's pid)
    busy() {
        local dir=-; [ "$1" = own-cgroup ] && dir=$cg5
        bash -c "[ $dir = - ] || echo \$\$ >$dir/cgroup.procs; exec bash -c 'while :; do cat text; done | xz -T2 -6 >/dev/null'" &
        pids+=($!)
        local i
        for i in $(seq 100); do xp=$(pgrep -x xz -P $! 2>/dev/null || true); [ -n "$xp" ] && break; sleep 0.05; done
    }
    ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
    # FK_BENCH_NOTHP=1: a third row in flamekit's cgroup, this build with
    # transparent huge pages refused: what its heap on huge pages
    # (fk_heap_for_batch) costs or saves
    nothp=
    [ "${FK_BENCH_NOTHP:-0}" = 1 ] && nothp=nothp
    # watch_mem PID: while PID (time, then timeout, then flamekit) runs,
    # flamekit's largest Rss and AnonHugePages in smaps_rollup (KB), read
    # every 0.2 s: is a round's peak RSS a huge page more of its heap?
    watch_mem() {
        local t=$1 f= c rss=0 huge=0 r h
        while kill -0 "$t" 2>/dev/null; do
            if [ -z "$f" ]; then
                c=$(pgrep -P "$t" 2>/dev/null | head -1 || true)
                [ -n "$c" ] && f=$(pgrep -P "$c" 2>/dev/null | head -1 || true)
            fi
            if [ -n "$f" ] && read -r r h < <(awk '$1 == "Rss:" { r = $2 } $1 == "AnonHugePages:" { h = $2 }
                    END { if (r != "") print r, h + 0 }' "/proc/$f/smaps_rollup" 2>/dev/null); then
                [ "$r" -gt "$rss" ] && rss=$r
                [ "$h" -gt "$huge" ] && huge=$h
            fi
            sleep 0.2
        done
        echo "$rss $huge"
    }
    for place in $places; do
        busy "$place"
        [ -n "$xp" ] || { failed=1; echo "(5) $place: FAILED: xz did not start"; continue; }
        sleep 2     # its threads up
        for round in $(seq "${FK_BENCH_ROUNDS:-3}"); do
            hostrow=
            [ "$place" = here ] && [ "${FK_BENCH_HOST:-1}" != 0 ] && hostrow=host
            for build in base new $([ "$place" = here ] && echo $nothp) $hostrow; do
                bin=$fk; [ "$build" = base ] && bin=$base
                what=(pid -q -d "$win" -o "p-$place-$build-$round" "$xp")
                [ "$build" = nothp ] && { bin=./nothp; what=("$fk" "${what[@]}"); }
                [ "$build" = host ] && what=(host -q -d "$win" -o "p-$place-$build-$round")
                tag=p-$place-$build-$round
                t0=$(ticks "$xp")
                rc=0
                /usr/bin/time -f '%U %S %M %R' -o "$tag.time" timeout -k 5 "$limit" \
                    "$bin" "${what[@]}" >/dev/null 2>"$tag.err" &
                tp=$!       # (watch_mem's process substitutions set $!)
                watch_mem "$tp" >"$tag.smaps"
                wait "$tp" || rc=$?
                t1=$(ticks "$xp")
                pj=$(ls "$tag"/*.json 2>/dev/null | head -1 || true)
                if [ $rc != 0 ] || [ -z "$pj" ]; then
                    failed=1
                    echo "(5) $place, $build, round $round: FAILED: exit $rc; $(tail -c 200 "$tag.err" | tr '\n' ' ')"
                    continue
                fi
                read -r n hz dur mode lost complete stacks mem <<<"$(meta "$pj" samples event.frequency_hz duration_s \
                    target.tree.mode lost callgraph.unwind.complete callgraph.unwind.stacks memory_peak_bytes | paste -sd' ')"
                # host: xz's samples are those of its command name
                [ "$build" = host ] && { mode=host; n=$(zcat "$tag"/*.folded.gz | awk '/^xz;/ { s += $NF } END { print s + 0 }'); }
                awk -v p="$place" -v b="$build" -v r="$round" -v n="$n" -v hz="$hz" -v d="$dur" -v m="$mode" \
                    -v l="$lost" -v c="$complete" -v s="$stacks" -v t="$((t1 - t0))" -v tm="$(cat "$tag.time")" \
                    -v mem="$mem" -v sm="$(cat "$tag.smaps")" 'BEGIN {
                    split(tm, x, " "); split(sm, y, " ")
                    printf "(5) %s, %s, round %d (%s): flamekit %.3f s CPU, %d KB peak RSS (smaps: Rss %d KB, AnonHugePages %d KB at most; %d minor faults; memory_peak_bytes %s); %d samples for %.2f s of xz CPU (%.3f of it x %d Hz); %s of %s stacks complete; lost %s\n",
                        p, b, r, m, x[1] + x[2], x[3], y[1], y[2], x[4], mem, n, t / 100, (t ? n / (t / 100 * hz) : 0), hz, c, s, l }'
            done
        done
        # the stream's processes, by id: its loop's subshell, xz, the shell
        kill $(pgrep -P "${pids[-1]}") "${pids[-1]}" 2>/dev/null || true
        wait "${pids[-1]}" 2>/dev/null || true
        for _ in $(seq 100); do kill -0 "$xp" 2>/dev/null || break; sleep 0.05; done
    done
    # ratios: new / base per place, median and range over the rounds
    for place in $places; do
        for b in new $nothp; do
            for f in 1 2; do
                for r in $(seq "${FK_BENCH_ROUNDS:-3}"); do
                    [ -s "p-$place-base-$r.time" ] && [ -s "p-$place-$b-$r.time" ] || continue
                    awk -v f=$f 'NR == FNR { b = (f == 1 ? $1 + $2 : $3); next } { n = (f == 1 ? $1 + $2 : $3); print (b ? n / b : 0) }' \
                        "p-$place-base-$r.time" "p-$place-$b-$r.time"
                done | sort -n | awk -v p="$place" -v b="$b" -v what="$([ $f = 1 ] && echo CPU || echo 'peak RSS')" '{ v[NR] = $1 }
                    END { if (NR) printf "(5) %s: flamekit %s %s/base: median %.3f, range %.3f-%.3f over %d rounds\n",
                          p, what, b, v[int((NR + 1) / 2)], v[1], v[NR], NR }'
            done
        done
    done
fi
if [[ " $parts " == *" 6 "* ]]; then
    for build in $builds; do
        bin=$fk; [ "$build" = base ] && bin=$base
        prev=
        for n in ${FK_BENCH_CHILDREN:-1000 10000}; do
            tag=c6-$build-$n
            rc=0
            pre=(); [ "${FK_BENCH_NOTHP:-0}" = 1 ] && pre=(./nothp)
            /usr/bin/time -f '%U %S %M' -o "$tag.fk" timeout -k 5 "$limit" \
                "${pre[@]}" "$bin" run -q -o "$tag" -- /usr/bin/time -f '%U %S' -o "$tag.time" \
                bash -c "for i in \$(seq $n); do /bin/true; done" >/dev/null 2>"$tag.err" || rc=$?
            cj=$(ls "$tag"/*.json 2>/dev/null | head -1 || true)
            if [ $rc != 0 ] || [ -z "$cj" ]; then
                failed=1
                echo "(6) $build, $n children: FAILED: exit $rc; $(tail -c 200 "$tag.err" | tr '\n' ' ')"
                continue
            fi
            read -r samples hz forks exits mem lost mode <<<"$(meta "$cj" samples event.frequency_hz \
                target.tree.forks target.tree.exits memory_peak_bytes lost target.tree.mode | paste -sd' ')"
            read -r _ _ rss <"$tag.fk"
            cpu=$(awk '{ print $1 + $2 }' "$tag.time")
            awk -v b="$build" -v n="$n" -v s="$samples" -v hz="$hz" -v f="$forks" -v x="$exits" -v m="$mem" \
                -v r="$rss" -v c="$cpu" -v l="$lost" -v md="$mode" -v p="$prev" 'BEGIN {
                printf "(6) %s, %d x /bin/true under run (%s): forks %s, exits %s; %d samples for %.2f s of CPU (%.3f of it x %d Hz), lost %s; flamekit peak RSS %d KB, memory_peak_bytes %d",
                    b, n, md, f, x, s, c, (c ? s / (c * hz) : 0), hz, l, r, m
                if (p != "") { split(p, q, " "); printf "; per child since %d: RSS %+.0f B, memory_peak_bytes %+.0f B", q[1], (r - q[2]) * 1024 / (n - q[1]), (m - q[3]) / (n - q[1]) }
                printf "\n" }'
            prev="$n $rss $mem"
        done
    done
fi
echo "bench/children: done in ${SECONDS} s$([ $failed = 0 ] || echo ", a capture FAILED")"
exit $failed
