#!/usr/bin/env bash
# Full user stacks for code without frame pointers (--call-graph auto/dwarf):
# Debian's python3.11 and xz, a C program built -O2 -fomit-frame-pointer, a
# Go program's frameless leaf, JIT code through the frame-pointer fallback,
# page-fault stacks, [truncated] with a tiny stack copy, a binary replaced
# on disk mid-capture, corrupt CFI. Each workload is also captured with
# --call-graph fp, where the same checks fail: the difference is the point.
# timeout: 300
. "$(dirname "$0")/lib.sh"
NOFP=$FK_BUILD/test/progs/nofp
NOFP2=$FK_BUILD/test/progs/nofp2
[ -x "$NOFP" ] && [ -x "$NOFP2" ] || { fail "test/progs/nofp not built"; exit 0; }
chmod 755 "$T"
cd "$T" || exit 0     # node writes isolate-*-v8.log files into its cwd
fk_perf_maps_cleanup  # and node --perf-basic-prof its /tmp/perf-PID.map

jget() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); v=d
for k in sys.argv[2].split("."): v=v[k]
print(v)' "$1" "$2" 2>/dev/null; }
# frac FOLDED COMM REGEX [WITHIN]: share of COMM's samples (those matching
# WITHIN, if given) whose stack matches REGEX, and their count: "0.97 812"
frac() {
    zcat "$1" | awk -v c="$2" -v re="$3" -v w="${4:-}" '
        { n = $NF; s = $0; sub(/ [0-9]+$/, "", s)
          if (index(s, c ";") != 1) next
          if (w != "" && s !~ w) next
          t += n; if (s ~ re) m += n }
        END { if (t) printf "%.3f %d\n", m / t, t; else print "0 0" }'
}
# rep N TEXT: TEXT N times (mawk has no regex intervals)
rep() { local i o=; for ((i = 0; i < $1; i++)); do o+=$2; done; printf '%s' "$o"; }
# cap NAME FLAMEKIT-ARGS...: a capture into $T/NAME; sets F and J
cap() {
    local name=$1; shift
    F= J=
    "$FLAMEKIT" "$@" >"$T/$name.out" 2>"$T/$name.err" || return 1
    F=$(ls "$T/$name"/*.folded.gz 2>/dev/null | head -1)
    J=$(ls "$T/$name"/*.json 2>/dev/null | head -1)
    [ -n "$F" ] && [ -n "$J" ]
}

# ---- Debian's python3.11 running pure Python ----
# busy.py runs for SECS of its own CPU time, not of wall time: on a loaded
# host a wall-time loop got 0.24 s of CPU in 2.5 s, and the interpreter's
# start-up (before Py_RunMain) was then a fifth of its 120 samples.
PY=/usr/bin/python3.11
cat >"$T/busy.py" <<'EOF'
import sys, time
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
class Shape:
    def __init__(self, w, h): self.w, self.h = w, h
    def area(self): return self.w * self.h
def shapes(n): return sum(Shape(i, i + 1).area() for i in range(n))
def strings(n): return len("".join(("%d-%s" % (i, "x" * (i % 7))).upper() for i in range(n)))
def sorting(n): return sorted({i: (i * 7919) % 1013 for i in range(n)}.items(), key=lambda kv: kv[1])[0]
end = time.process_time() + float(sys.argv[1])
while time.process_time() < end:
    fib(16); shapes(1000); strings(1000); sorting(1000)
EOF
if [ -x "$PY" ]; then
    if cap py run -q -F 499 -o "$T/py" -- "$PY" "$T/busy.py" 1.5; then
        check_eq "python3.11: auto resolves to dwarf" dwarf "$(jget "$J" callgraph.used)"
        check_eq "python3.11: metadata records the mode asked" auto "$(jget "$J" callgraph.mode)"
        read -r s n <<<"$(frac "$F" python3.11 ';__libc_start_main')"
        check_range "python3.11: stacks reach __libc_start_main ($n samples)" "$s" 0.90 1.0
        check_range "python3.11: enough samples" "$n" 100 1000000
        read -r s n <<<"$(frac "$F" python3.11 ';Py_BytesMain;Py_RunMain;')"
        check_range "python3.11: main's callees named in order" "$s" 0.85 1.0
        c=$(jget "$J" callgraph.unwind.complete) k=$(jget "$J" callgraph.unwind.stacks)
        check_range "python3.11: unwinder's own complete count ($c of $k)" "$(awk -v a="$c" -v b="$k" 'BEGIN{print b ? a / b : 0}')" 0.90 1.0
        # the copies are cut where the thread's stack ends (its argv and
        # environment are not kept) once two walks agreed, and none too short
        x=$(jget "$J" callgraph.unwind.stack_ends.cut)
        check_range "python3.11: stack copies cut at the thread's known end ($x of $k)" "$(awk -v a="$x" -v b="$k" 'BEGIN{print b ? a / b : 0}')" 0.5 1.0
        check_eq "python3.11: no copy cut too short" 0 "$(jget "$J" callgraph.unwind.stack_ends.cut_too_short)"
    else
        fail "python3.11: capture" "$(cat "$T/py.err")"
    fi
    if cap py-fp run -q -F 499 --call-graph fp -o "$T/py-fp" -- "$PY" "$T/busy.py" 1; then
        read -r s n <<<"$(frac "$F" python3.11 ';__libc_start_main')"
        check_range "python3.11 --call-graph fp: frame pointers lose main ($n samples)" "$s" 0 0.5
        check_eq "python3.11 --call-graph fp: metadata" fp "$(jget "$J" callgraph.used)"
    else
        fail "python3.11 fp: capture" "$(cat "$T/py-fp.err")"
    fi
else
    skip "python3.11" "no /usr/bin/python3.11 (apt-get install python3.11)"
fi
# the summary is printed without -q only
o=$("$FLAMEKIT" run -F 499 -o "$T/sum" -- "$NOFP" 0.5 2>&1)
check_grep "summary line names the mode and completeness" 'user stacks: dwarf, [0-9]+-byte copies: [0-9.]+% complete' "$o"

# ---- xz -9 (Debian's, stripped, liblzma without frame pointers) ----
# 2 MB: about 1.3 s of xz's CPU and 650 samples (6 MB took 2.8 s, and three
# runs of it a third of this file's time)
head -c 2000000 /usr/bin/python3.11 >"$T/xz.in" 2>/dev/null || head -c 2000000 "$FLAMEKIT" >"$T/xz.in"
if cap xz run -q -F 499 -o "$T/xz" -- xz -9 -T1 -c "$T/xz.in"; then
    read -r s n <<<"$(frac "$F" xz ';__libc_start_main')"
    check_range "xz -9: stacks reach __libc_start_main ($n samples)" "$s" 0.95 1.0
    read -r s n <<<"$(frac "$F" xz ';lzma_code;')"
    check_range "xz -9: lzma_code's callers kept" "$s" 0.5 1.0
else
    fail "xz: capture" "$(cat "$T/xz.err")"
fi
if cap xz-fp run -q -F 499 --call-graph fp -o "$T/xz-fp" -- xz -9 -T1 -c "$T/xz.in"; then
    read -r s n <<<"$(frac "$F" xz ';__libc_start_main')"
    check_range "xz -9 --call-graph fp: frame pointers lose main ($n samples)" "$s" 0 0.5
fi

# ---- C built -O2 -fomit-frame-pointer ----
if cap nofp run -q -F 499 -o "$T/nofp" -- "$NOFP" 2 8; then
    # the workload's samples (start-up and exit, longer under a sanitizer
    # and a loaded host, are not what is measured)
    read -r s n <<<"$(frac "$F" nofp ';main;nofp_outer;nofp_middle;' ';nofp_(middle|leaf)(;|$)')"
    check_range "-fomit-frame-pointer C: the workload's stacks reach main;nofp_outer;nofp_middle ($n samples)" "$s" 0.95 1.0
    read -r s n <<<"$(frac "$F" nofp "$(rep 9 ';nofp_middle');nofp_leaf" ';nofp_leaf')"
    check_range "-fomit-frame-pointer C: all 9 recursion levels above the leaf ($n samples)" "$s" 0.95 1.0
    check_eq "-fomit-frame-pointer C: no [truncated] at 8 levels" 0 "$(jget "$J" callgraph.unwind.truncated)"
    check_range "-fomit-frame-pointer C: copies cut at the thread's known end" "$(jget "$J" callgraph.unwind.stack_ends.cut)" 1 100000000
    check_eq "-fomit-frame-pointer C: no copy cut too short" 0 "$(jget "$J" callgraph.unwind.stack_ends.cut_too_short)"
    # how much of the copy complete walks read: ordered, within the copy,
    # every complete walk within 64 KiB
    w8=$(jget "$J" callgraph.unwind.stack_bytes_walked.median)
    p99=$(jget "$J" callgraph.unwind.stack_bytes_walked.p99) max=$(jget "$J" callgraph.unwind.stack_bytes_walked.max)
    check_range "-fomit-frame-pointer C: bytes walked, median ($w8)" "$w8" 1 "$p99"
    check_range "-fomit-frame-pointer C: bytes walked, p99 <= max <= the copy ($p99, $max)" "$max" "$p99" 32768
    check_eq "-fomit-frame-pointer C: every complete walk within 64 KiB" "$(jget "$J" callgraph.unwind.complete)" \
        "$(jget "$J" callgraph.unwind.stack_bytes_walked.complete_within.65536)"
else
    fail "nofp: capture" "$(cat "$T/nofp.err")"
fi
# 52 more recursion levels (a frame is at least a return address and a
# saved register) read more of the copy
if [ -z "${w8:-}" ]; then
    :
elif cap nofp60 run -q -F 499 -o "$T/nofp60" -- "$NOFP" 1.5 60; then
    w60=$(jget "$J" callgraph.unwind.stack_bytes_walked.median)
    check_range "-fomit-frame-pointer C: bytes walked at depth 60 ($w60) >= at depth 8 ($w8) + 52 x 16" \
        "$w60" $((w8 + 52 * 16)) 32768
    c=$(jget "$J" callgraph.unwind.complete) k=$(jget "$J" callgraph.unwind.stack_bytes_walked.complete_within.4096)
    check_range "-fomit-frame-pointer C: at depth 60 few complete walks fit 4 KiB ($k of $c)" \
        "$(awk -v a="$k" -v b="$c" 'BEGIN{print b ? a / b : 1}')" 0 0.2
else
    fail "nofp depth 60: capture" "$(cat "$T/nofp60.err")"
fi
if cap nofp-fp run -q -F 499 --call-graph fp -o "$T/nofp-fp" -- "$NOFP" 1.5 8; then
    read -r s n <<<"$(frac "$F" nofp ';main;nofp_outer;nofp_middle;')"
    check_range "-fomit-frame-pointer C with --call-graph fp: callers lost ($n samples)" "$s" 0 0.2
fi

# ---- [truncated]: a stack deeper than a tiny copy ----
if cap trunc run -q -F 499 --stack-size 1K -o "$T/trunc" -- "$NOFP" 1.5 60; then
    read -r s n <<<"$(frac "$F" nofp '^nofp;\[truncated\];')"
    check_range "--stack-size 1K: deep stacks marked [truncated] at their root ($n samples)" "$s" 0.8 1.0
    check_eq "--stack-size 1K: metadata stack size" 1024 "$(jget "$J" callgraph.stack_size)"
    check_range "--stack-size 1K: truncated counted" "$(jget "$J" callgraph.unwind.truncated)" 1 1000000
    check_grep "--stack-size 1K: the leaf is still named" '^nofp;\[truncated\];.*(nofp_leaf|msort_with_tmp)' "$(zcat "$F")"
else
    fail "truncation: capture" "$(cat "$T/trunc.err")"
fi

# ---- Go: the frameless leaf's caller ----
if need go; then
    mkdir -p "$T/go" && cp "$FK_SRC/test/progs/unwgo/main.go" "$T/go/"
    if (cd "$T/go" && GOCACHE=$T/go/cache GO111MODULE=off GOFLAGS= go build -o unwgo main.go) >"$T/go.log" 2>&1; then
        if cap go-out run -q -F 499 -o "$T/go-out" -- "$T/go/unwgo" 2; then
            # over the samples in the program's own code (a frame of package
            # main): the runtime's threads (sysmon, the scheduler), its
            # start-up and exit never pass runtime.main, and their share
            # grows with the host's load (12 of 91 samples at load 9)
            read -r s n <<<"$(frac "$F" unwgo ';runtime\.main;main\.main;main\.unwMid(;|$)' ';main\.')"
            check_range "Go: runtime.main;main.main;main.unwMid ($n samples in package main)" "$s" 0.9 1.0
            read -r s n <<<"$(frac "$F" unwgo ';main\.unwMid;main\.unwLeaf$' ';main\.unwLeaf$')"
            check_range "Go: the frameless leaf keeps its caller ($n leaf samples)" "$s" 0.9 1.0
        else
            fail "Go: capture" "$(cat "$T/go-out.err")"
        fi
        if cap go-fp run -q -F 499 --call-graph fp -o "$T/go-fp" -- "$T/go/unwgo" 1.5; then
            read -r s n <<<"$(frac "$F" unwgo ';main\.unwMid;main\.unwLeaf$' ';main\.unwLeaf$')"
            check_range "Go with --call-graph fp: the leaf's caller is lost ($n leaf samples)" "$s" 0 0.3
        fi
        # linked with -s -w: no symbols, no .debug_frame: .gopclntab only
        if (cd "$T/go" && GOCACHE=$T/go/cache GO111MODULE=off GOFLAGS= go build -ldflags='-s -w' -o unwgo-sw main.go) >>"$T/go.log" 2>&1 &&
            cap gosw run -q -F 499 -o "$T/gosw" -- "$T/go/unwgo-sw" 1.5; then
            read -r s n <<<"$(frac "$F" unwgo-sw ';main\.unwMid;main\.unwLeaf$' ';main\.unwLeaf$')"
            check_range "Go -s -w (.gopclntab SP deltas): the leaf keeps its caller ($n leaf samples)" "$s" 0.9 1.0
            read -r s n <<<"$(frac "$F" unwgo-sw ';runtime\.main;main\.main;' ';main\.')"
            check_range "Go -s -w: stacks in package main reach runtime.main ($n samples)" "$s" 0.9 1.0
        else
            fail "Go -s -w: build or capture" "$(cat "$T/go.log" "$T/gosw.err" 2>/dev/null)"
        fi
    else
        fail "Go: build" "$(cat "$T/go.log")"
    fi
else
    skip "Go" "no go (apt-get install golang-go)"
fi

# ---- JIT code without CFI: the frame-pointer fallback (node --perf-basic-prof) ----
if need node; then
    cat >"$T/jit.js" <<'EOF'
function fkJitInner(n) { let s = 0; for (let i = 0; i < n; i++) s = (s + i * 31) % 1000003; return s; }
function fkJitOuter(n) { let t = 0; for (let k = 0; k < 50; k++) t += fkJitInner(n); return t; }
// SECONDS of the process's own CPU time, not wall time: at load 22-29 an
// ASan run got 40 JIT samples in 2 s of wall time; a wall-clock backstop of 30x
const cpu = Number(process.argv[2]) * 1e6, end = Date.now() + 30000 * Number(process.argv[2]);
const used = () => { const u = process.cpuUsage(); return u.user + u.system; };
let x = 0; while (used() < cpu && Date.now() < end) x += fkJitOuter(20000);
console.log(x);
EOF
    if cap jit run -q -F 499 -o "$T/jit" -- node --perf-basic-prof "$T/jit.js" 2; then
        read -r s n <<<"$(frac "$F" node 'node::Start' 'fkJitOuter[^;]*_\[j\]')"
        check_range "node JIT: stacks through JIT frames reach node::Start ($n samples)" "$s" 0.9 1.0
        check_range "node JIT: enough JIT samples" "$n" 50 1000000
        check_range "node JIT: frame-pointer steps used" "$(jget "$J" callgraph.unwind.frame_pointer_steps)" 1 100000000
    else
        fail "node JIT: capture" "$(cat "$T/jit.err")"
    fi
else
    skip "node JIT" "no node (apt-get install nodejs)"
fi

# ---- page faults get the same stacks ----
if cap faults faults -q -c 20 -o "$T/faults" run -- xz -9 -T1 -c "$T/xz.in"; then
    check_eq "faults: dwarf stacks" dwarf "$(jget "$J" callgraph.used)"
    check_eq "faults: one-in-N still verified" ok "$(jget "$J" faults.verdict)"
    read -r s n <<<"$(frac "$F" xz ';__libc_start_main')"
    check_range "faults: xz's fault stacks reach __libc_start_main ($n faults)" "$s" 0.95 1.0
else
    fail "faults: capture" "$(cat "$T/faults.err")"
fi

# ---- a binary replaced on disk mid-capture: each process keeps its CFI ----
mkdir -p "$T/bin"
cp "$NOFP" "$T/bin/app" && chmod 755 "$T/bin/app"
# Each process runs for 1 s of its own CPU (NOFP_CLOCK=cpu), so their
# shares are about half each however a loaded host serves them (with wall
# time the old one took 0.853 at load 8); the old one, on at least 1 s of
# wall time, is still running when its file is replaced at 0.7 s.
cat >"$T/replace.sh" <<EOF
export NOFP_CLOCK=cpu
"$T/bin/app" 1 8 >/dev/null & old=\$!
sleep 0.7
cp "$NOFP2" "$T/bin/app.new" && mv "$T/bin/app.new" "$T/bin/app"
"$T/bin/app" 1 13 >/dev/null
wait \$old
EOF
if cap repl run -q -F 499 -o "$T/repl" -- sh "$T/replace.sh"; then
    # leaf samples of each process, complete from main down to the leaf:
    # 9 levels (the old binary, depth 8) or 14 (the new one, depth 13)
    read -r so n <<<"$(frac "$F" app ";main;nofp_outer$(rep 9 ';nofp_middle');nofp_leaf" ';nofp_leaf')"
    read -r sn n <<<"$(frac "$F" app ";main;nofp_outer$(rep 14 ';nofp_middle');nofp_leaf" ';nofp_leaf')"
    check_range "replaced binary: the old process's complete stacks ($n leaf samples)" "$so" 0.2 0.8
    check_range "replaced binary: the new process's complete stacks" "$sn" 0.2 0.8
    check_range "replaced binary: together all leaf samples" "$(awk -v a="$so" -v b="$sn" 'BEGIN{print a + b}')" 0.9 1.0
    read -r s n <<<"$(frac "$F" app ';__libc_start_main')"
    check_range "replaced binary: all app stacks complete ($n samples)" "$s" 0.9 1.0
else
    fail "replaced binary: capture" "$(cat "$T/repl.err")"
fi

# ---- corrupt CFI: shorter stacks, never a crash or a hang ----
python3 - "$NOFP" "$T/badcfi" <<'EOF'
import random, re, shutil, subprocess, sys
src, dst = sys.argv[1], sys.argv[2]
shutil.copy(src, dst)
hdr = subprocess.run(["readelf", "-S", "-W", dst], capture_output=True, text=True).stdout
rnd = random.Random(7)
with open(dst, "r+b") as f:
    for name in (".eh_frame_hdr", ".eh_frame"):
        m = re.search(r"\]\s+" + re.escape(name) + r"\s+\S+\s+[0-9a-f]+\s+([0-9a-f]+)\s+([0-9a-f]+)", hdr)
        off, size = int(m.group(1), 16), int(m.group(2), 16)
        f.seek(off); data = bytearray(f.read(size))
        for _ in range(max(1, size // 8)):
            data[rnd.randrange(size)] = rnd.randrange(256)
        data[0] = 1     # .eh_frame_hdr version: keep the table in use
        f.seek(off); f.write(data)
EOF
chmod 755 "$T/badcfi"
if cap badcfi-out run -q -F 999 -o "$T/badcfi-out" -- timeout 20 "$T/badcfi" 1.5; then
    check_range "corrupt CFI: samples captured" "$(jget "$J" samples)" 100 1000000
    check_grep "corrupt CFI: leaf frames still named" 'nofp_leaf|msort|nofp_cmp|nofp_middle' "$(zcat "$F")"
    check_range "corrupt CFI: early stops counted, not hidden" "$(jget "$J" callgraph.unwind.failed)" 1 1000000
else
    fail "corrupt CFI: capture" "$(cat "$T/badcfi-out.err")"
fi

# ---- options ----
o=$("$FLAMEKIT" run -q --call-graph lbr -- true 2>&1); rc=$?
check_eq "--call-graph lbr: usage error" 2 "$rc"
check_grep "--call-graph lbr: names the choices" 'auto, dwarf, fp' "$o"
o=$("$FLAMEKIT" run -q --stack-size 70000 -- true 2>&1); rc=$?
check_eq "--stack-size 70000: usage error" 2 "$rc"
check_grep "--stack-size 70000: names the limit" '65528' "$o"
check_fails "--stack-size 12x" "$FLAMEKIT" run -q --stack-size 12x -- true
check_fails "--stack-size with --call-graph fp" "$FLAMEKIT" run -q --call-graph fp --stack-size 8K -- true
o=$("$FLAMEKIT" faults -q --stack-size 1 run -- true 2>&1); rc=$?
check_eq "faults --stack-size 1: usage error" 2 "$rc"

# ---- unprivileged: limited rings are said, never silent ----
if [ "$(cat /proc/sys/kernel/perf_event_paranoid)" -ge 1 ] && need setpriv; then
    mkdir -p "$T/np" && chmod 777 "$T/np"
    o=$(cd "$T/np" && setpriv --reuid=nobody --regid=nogroup --clear-groups "$FLAMEKIT" run --no-kernel -o "$T/np/a" -- "$NOFP" 0.5 2>&1); rc=$?
    check_eq "unprivileged dwarf: capture succeeds" 0 "$rc"
    check_grep "unprivileged dwarf: ring limit said" 'perf rings limited to [0-9]+ KiB per CPU by kernel.perf_event_mlock_kb' "$o"
    o=$(cd "$T/np" && setpriv --reuid=nobody --regid=nogroup --clear-groups "$FLAMEKIT" run --no-kernel -F 999 --stack-size 65528 -o "$T/np/b" -- "$NOFP" 0.5 2>&1); rc=$?
    check_eq "unprivileged, rings too small: capture succeeds" 0 "$rc"
    check_grep "unprivileged, rings too small: auto falls back to frame pointers, saying why" 'user stacks by frame pointers: the perf rings are limited' "$o"
    J=$(ls "$T"/np/b/*.json 2>/dev/null | head -1)
    check_eq "unprivileged, rings too small: metadata" fp "$(jget "$J" callgraph.used)"
    o=$(cd "$T/np" && setpriv --reuid=nobody --regid=nogroup --clear-groups "$FLAMEKIT" run --no-kernel --call-graph dwarf -F 999 --stack-size 65528 -o "$T/np/c" -- "$NOFP" 0.5 2>&1); rc=$?
    check_eq "unprivileged, --call-graph dwarf: still dwarf (asked for)" dwarf "$(jget "$(ls "$T"/np/c/*.json 2>/dev/null | head -1)" callgraph.used)"
else
    skip "unprivileged" "perf_event_paranoid < 1 or no setpriv"
fi
