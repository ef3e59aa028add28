#!/usr/bin/env bash
# Real captures on this machine: flamekit host|pid|user|cgroup|run.
# timeout: 240
. "$(dirname "$0")/lib.sh"
HOT=$FK_BUILD/test/progs/hot
[ -x "$HOT" ] || { fail "test/progs/hot not built"; skip_rest "test/progs/hot not built"; }
cp "$HOT" "$T/hot" && chmod 755 "$T" "$T/hot"
HOT=$T/hot

# share STACKS-FILE: hot_three / (hot_three + hot_one), and the total.
share() { zcat "$1" | awk '/;hot_three( |;)/{a+=$NF} /;hot_one( |;)/{b+=$NF} END{ if (a+b) printf "%.3f %d\n", a/(a+b), a+b; else print "0 0" }'; }
folded() { ls "$1"/*.folded.gz 2>/dev/null | head -1; }
jget() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); v=d
for k in sys.argv[2].split("."): v=v[k]
print(v)' "$1" "$2"; }

# run: known proportions 3:1, exit status passed through
# (at least 0.8 s of CPU, about 400 samples: the share's range is +-4 sd
# of a binomial share then; at load 28 a 2 s run got 98 samples, 2.7 sd)
out=$(FK_HOT_MIN_CPU=0.8 FK_HOT_CPU="$T/run.cpu" "$FLAMEKIT" run -q -F 499 -o "$T/run" -- "$HOT" 2 2>&1); rc=$?
check_eq "run: exit status of the command" 0 "$rc"
f=$(folded "$T/run")
if [ -n "$f" ]; then
    read -r s n <<<"$(share "$f")"
    check_range "run: hot_three share of hot_three+hot_one is 3/4 ($n samples)" "$s" 0.66 0.84
    # the CPU time the workload got (less than its 2 s on a loaded machine)
    # at 499 Hz: nothing may go missing
    cpu=$(cat "$T/run.cpu" 2>/dev/null)
    check_range "run: samples = the workload's CPU seconds ($cpu) x 499 Hz" \
        "$(awk -v n="$n" -v c="${cpu:-0}" 'BEGIN { printf "%.3f", (c > 0 ? n / (c * 499) : 0) }')" 0.85 1.10
    check_grep "run: stacks start with the command name" '^hot;' "$(zcat "$f")"
else
    fail "run: no folded output" "$out"
fi
"$FLAMEKIT" run -q -o "$T/run7" -- sh -c 'exit 7' >/dev/null 2>&1
check_eq "run: exit status 7 passed through" 7 "$?"
o=$("$FLAMEKIT" run -q -o "$T/runx" -- /nonexistent/cmd 2>&1); rc=$?
check_eq "run: missing command exits 127" 127 "$rc"
check_grep "run: missing command is named" 'cannot run /nonexistent/cmd' "$o"

# pid: a running workload, children forked during the capture included
# (the workload's clock starts when flamekit says ready: its fork at 0.3 s
# is then inside the 2 s window however slowly flamekit starts)
FK_HOT_START="$T/pid.ready" "$HOT" 3 fork & hp=$!
fk_cleanup "kill $hp 2>/dev/null"
"$FLAMEKIT" pid -q -F 499 -d 2 --ready-fd 3 -o "$T/pid" "$hp" >/dev/null 2>&1 3>"$T/pid.ready"
check_eq "pid: capture succeeds" 0 "$?"
check_eq "pid --ready-fd 3: says ready (even with -q)" ready "$(cat "$T/pid.ready")"
f=$(folded "$T/pid")
if [ -n "$f" ]; then
    read -r s n <<<"$(share "$f")"
    check_range "pid: hot_three share is 3/4 ($n samples)" "$s" 0.64 0.86
    check_grep "pid: child forked during the capture is profiled" ';child_burn( |;)' "$(zcat "$f")"
    j=$(ls "$T"/pid/*.json)
    check_eq "pid: metadata target kind" pid "$(jget "$j" target.kind)"
    check_eq "pid: metadata pid" "[$hp]" "$(jget "$j" target.pids | tr -d ' ')"
    case $(basename "$f") in *".pid-$hp.folded.gz") pass "pid: file name has SCOPE pid-$hp" ;; *) fail "pid: file name" "$f" ;; esac
else
    fail "pid: no folded output"
fi
wait "$hp" 2>/dev/null

# pid exiting mid-capture ends the capture early with complete outputs
# (timed from the workload's own exit, which comes 1 s after flamekit is
# ready: flamekit's start-up is not part of how soon it notices). How soon
# the window closed after the exit is the metadata's window end; writing
# the outputs afterwards takes what the host gives (seconds for a sanitized
# build at load 28), bounded only by the 20 s it must not wait out.
FK_HOT_START="$T/pidexit.ready" FK_HOT_END="$T/pidexit.end" "$HOT" 1 & hp=$!
"$FLAMEKIT" pid -q -d 20 --ready-fd 3 -o "$T/pidexit" "$hp" >/dev/null 2>&1 3>"$T/pidexit.ready"; rc=$?
hot_end=$(cat "$T/pidexit.end" 2>/dev/null || echo 0)
el=$(( ($(date +%s%N) - hot_end) / 1000000 ))
check_eq "pid exits mid-capture: success" 0 "$rc"
check_range "pid exits mid-capture: flamekit is done well before its -d 20 (ms after the exit)" "$el" 0 15000
j=$(ls "$T"/pidexit/*.json 2>/dev/null)
if [ -n "$j" ]; then
    check_eq "pid exits mid-capture: stop reason" "target exited" "$(jget "$j" stop_reason)"
    check_range "pid exits mid-capture: the window closed soon after the exit (ms)" \
        "$(python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); print(round((m["start_unix_ns"] + m["duration_s"] * 1e9 - int(sys.argv[2])) / 1e6))' "$j" "$hot_end")" -50 1000
else
    fail "pid exits: no json"
fi
wait "$hp" 2>/dev/null

o=$("$FLAMEKIT" pid -d 1 --ready-fd 3 999999 2>&1 3>"$T/none.ready"); rc=$?
check_eq "nonexistent pid: exit 1" 1 "$rc"
check_eq "nonexistent pid: --ready-fd closed without ready" "" "$(cat "$T/none.ready")"
o2=$("$FLAMEKIT" pid -d 1 --ready-fd 7 $$ 2>&1); rc=$?
check_eq "--ready-fd of a closed descriptor: usage error" 2 "$rc"
check_grep "--ready-fd of a closed descriptor: named" 'ready-fd 7: not an open file descriptor' "$o2"
check_eq "nonexistent pid: one line" 1 "$(printf '%s\n' "$o" | wc -l)"
check_grep "nonexistent pid: named" 'no process with pid 999999' "$o"
o=$("$FLAMEKIT" pid -d 1 1,abc 2>&1); rc=$?
check_eq "malformed pid list: usage error" 2 "$rc"
check_grep "malformed pid list: named, with the fix" "'abc' is not a process id; give PID" "$o"

# host: our workload is in there, metadata complete, SVG well-formed
FK_HOT_START="$T/host.ready" "$HOT" 2 & hp=$!
fk_cleanup "kill $hp 2>/dev/null"
"$FLAMEKIT" host -F 199 -d 2 --ready-fd 3 -o "$T/host" >"$T/host.out" 2>&1 3>"$T/host.ready"; rc=$?
[ -s "$T/host.ready" ] || kill $hp 2>/dev/null  # never ready: no 60 s wait below
check_eq "host: capture succeeds" 0 "$rc"
f=$(folded "$T/host")
[ -n "$f" ] && check_grep "host: workload stacks present" '^hot;.*hot_three' "$(zcat "$f")" || fail "host: no folded"
check_grep "host: summary lists top frames" 'top frames' "$T/host.out"
check_nogrep "host: summary names frames without _[k]/_[j] tags" '_\[[kj]\]' "$(sed -n '/top frames/,$p' "$T/host.out")"
check_grep "host: summary reports lost and throttled" 'lost [0-9]+ records, throttled [0-9]+' "$T/host.out"
j=$(ls "$T"/host/*.json 2>/dev/null)
if [ -n "$j" ]; then
    miss=$(python3 - "$j" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
need = ["schema", "invocation", "argv", "version", "host", "kernel.release", "os", "cpu.model", "cpu.online",
        "memory.total_bytes", "numa", "start_time", "duration_s", "event.name", "event.frequency_hz",
        "samples", "lost", "throttled", "target.kind", "limits.max_memory_bytes"]
miss = []
for k in need:
    v = d
    try:
        for p in k.split("."): v = v[p]
    except (KeyError, TypeError):
        miss.append(k)
print(" ".join(miss))
PY
)
    check_eq "host: metadata fields present" "" "$miss"
    check_eq "host: event on this VM" cpu-clock "$(jget "$j" event.name)"
fi
s=$(ls "$T"/host/*.flamegraph.svg 2>/dev/null)
if [ -n "$s" ] && need xmllint; then check "host: SVG passes xmllint" xmllint --noout "$s"; fi
[ -n "$s" ] && check_grep "host: metadata embedded in the SVG" 'perf_event_max_sample_rate' "$s"
check_eq "host: output dir mode 0700 (default new dir)" 700 "$(cd "$T" && "$FLAMEKIT" host -q -d 200ms >/dev/null 2>&1; stat -c %a "$T"/*.host 2>/dev/null | head -1)"
wait "$hp" 2>/dev/null

# user: only the user's processes (workload as nobody, a root spinner beside it;
# both start their clocks when flamekit says ready, as in the pid case)
cp "$HOT" "$T/hotroot"
FK_HOT_START="$T/user.ready" "$T/hotroot" 2 & rp=$!
FK_HOT_START="$T/user.ready" setpriv --reuid=nobody --regid=nogroup --clear-groups "$HOT" 2 & np=$!
fk_cleanup "kill $rp $np 2>/dev/null"
sleep 0.1
"$FLAMEKIT" user -q -F 199 -d 2 --ready-fd 3 -o "$T/user" nobody >/dev/null 2>&1 3>"$T/user.ready"; rc=$?
[ -s "$T/user.ready" ] || kill $rp $np 2>/dev/null  # never ready: no 60 s wait below
check_eq "user: capture succeeds" 0 "$rc"
f=$(folded "$T/user")
if [ -n "$f" ]; then
    check_grep "user: nobody's workload present" '^hot;.*hot_three' "$(zcat "$f")"
    check_nogrep "user: root's spinner absent" '^hotroot;' "$(zcat "$f")"
else fail "user: no folded"; fi
wait "$rp" "$np" 2>/dev/null

# cgroup: a cgroup v2 dir with the workload moved in
cg2=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
if [ -n "$cg2" ] && mkdir "$cg2/fk-test-$$" 2>/dev/null; then
    fk_cgroup_cleanup "$cg2/fk-test-$$"
    # the workloads' clocks start when flamekit says ready: an ASan build's
    # start under CI load took longer than a fixed 3 s workload ran (CI run 34)
    FK_HOT_START="$T/cg.ready" "$HOT" 2 & cp_=$!
    FK_HOT_START="$T/cg.ready" "$T/hotroot" 2 & rp=$!
    fk_cleanup "kill $cp_ $rp 2>/dev/null"
    echo "$cp_" >"$cg2/fk-test-$$/cgroup.procs"
    "$FLAMEKIT" cgroup -q -F 199 -d 2 --ready-fd 3 -o "$T/cg" "fk-test-$$" >"$T/cg.out" 2>&1 3>"$T/cg.ready"; rc=$?
    [ -s "$T/cg.ready" ] || kill $cp_ $rp 2>/dev/null  # never ready: no 60 s wait below
    check_eq "cgroup: capture succeeds" 0 "$rc"
    f=$(folded "$T/cg")
    if [ -n "$f" ]; then
        check_grep "cgroup: workload inside present" '^hot;.*hot_three' "$(zcat "$f")"
        check_nogrep "cgroup: process outside absent" '^hotroot;' "$(zcat "$f")"
    else fail "cgroup: no folded" "$(cat "$T/cg.out")"; fi
    wait "$cp_" "$rp" 2>/dev/null
    o=$("$FLAMEKIT" cgroup -d 1 /no/such/cgroup 2>&1)
    check_eq "cgroup: bad path exits 1" 1 "$?"
    # a container's scope as runtimes name it: matched by its full id,
    # never by a part of a path component
    id=$(printf '%064x' $$)
    if mkdir "$cg2/fk-test-$$/docker-$id.scope" 2>/dev/null; then
        fk_cgroup_cleanup "$cg2/fk-test-$$/docker-$id.scope"
        sleep 30 & sp=$!
        fk_cleanup "kill $sp 2>/dev/null"
        echo "$sp" >"$cg2/fk-test-$$/docker-$id.scope/cgroup.procs"
        o=$("$FLAMEKIT" cgroup -q -d 1 --no-svg -o "$T/cgid" "$id" 2>&1)
        check_eq "cgroup:ID: a full container id names its scope" 0 "$?"
        check_grep "... that scope" "docker-$id\\.scope" "$(cat "$T"/cgid/*.json 2>/dev/null)"
        o=$("$FLAMEKIT" cgroup -q -d 1 --no-svg -o "$T/cgpart" "test-$$" 2>&1)
        check_eq "cgroup: part of a path component names nothing (exit 1)" 1 "$?"
        o=$("$FLAMEKIT" cgroup -q -d 1 --no-svg -o "$T/cgshort" "${id:52}" 2>&1)
        check_eq "cgroup: part of a container id names nothing (exit 1)" 1 "$?"
        kill "$sp" 2>/dev/null; wait "$sp" 2>/dev/null
    fi
else
    skip "cgroup" "no writable cgroup2 mount"
fi

# SIGINT mid-capture: complete outputs, reason signal
"$FLAMEKIT" host -q -d 60 -o "$T/int" >/dev/null 2>&1 & fp=$!
sleep 1.5
kill -INT "$fp"
wait "$fp"; rc=$?
check_eq "SIGINT: exit 0" 0 "$rc"
j=$(ls "$T"/int/*.json 2>/dev/null)
[ -n "$j" ] && check_eq "SIGINT: stop reason" signal "$(jget "$j" stop_reason)" || fail "SIGINT: no json"
f=$(folded "$T/int")
[ -n "$f" ] && check "SIGINT: folded.gz complete" gzip -t "$f" || fail "SIGINT: no folded"
s=$(ls "$T"/int/*.svg 2>/dev/null)
[ -n "$s" ] && need xmllint && check "SIGINT: SVG complete" xmllint --noout "$s"
check_eq "SIGINT: no temporary files left" 0 "$(ls "$T/int" | grep -c tmp)"

# unprivileged (perf_event_paranoid 2): one clear line
if [ "$(cat /proc/sys/kernel/perf_event_paranoid)" -ge 2 ]; then
    mkdir -m 700 "$T/np"
    chown nobody "$T/np"    # its own directory: a root-owned 0777 one is refused (issue 12)
    o=$(setpriv --reuid=nobody --regid=nogroup --clear-groups "$FLAMEKIT" host -d 1 -o "$T/np" 2>&1); rc=$?
    check_eq "unprivileged: exit 1" 1 "$rc"
    check_grep "unprivileged: error names perf_event_paranoid and a fix" 'perf_event_paranoid is [0-9].*(root|sysctl)' "$o"
    check_eq "unprivileged: said once" 1 "$(printf '%s\n' "$o" | grep -c perf_event_paranoid)"
else
    skip "unprivileged" "perf_event_paranoid < 2"
fi

# unwritable output directory: refused before capturing
o=$("$FLAMEKIT" host -d 1 -o /proc/self 2>&1); rc=$?
check_eq "unwritable -o: exit 1" 1 "$rc"
check_grep "unwritable -o: says so" 'cannot write into /proc/self' "$o"

# bad options: usage errors
"$FLAMEKIT" host -d 10x >/dev/null 2>&1; check_eq "bad duration: exit 2" 2 "$?"
"$FLAMEKIT" host -d 301 >/dev/null 2>&1; check_eq "duration cap: exit 2" 2 "$?"
"$FLAMEKIT" host -F 1000 >/dev/null 2>&1; check_eq "frequency cap: exit 2" 2 "$?"
"$FLAMEKIT" host --bogus >/dev/null 2>&1; check_eq "unknown option: exit 2" 2 "$?"
o=$("$FLAMEKIT" host --max-memory 2>&1); rc=$?
check_eq "option without its value: exit 2" 2 "$rc"
check_grep "option without its value: named, with an example" "^flamekit host: option '--max-memory' needs a value \(e\.g\. 256M\)" "$o"
o=$("$FLAMEKIT" pid -d 2>&1)
check_grep "short option without its value" "option '-d' needs a value \(e\.g\. 30s\)" "$o"
o=$("$FLAMEKIT" host -d 10x 2>&1)
check_grep "bad value: what the option wants" "option '-d' wants a duration like 30s, 2m or 500ms, not '10x'" "$o"
"$FLAMEKIT" run -q -o "$T/neverdir" -- /nonexistent/cmd >/dev/null 2>&1
check "run: a command that cannot start leaves no -o directory" test ! -e "$T/neverdir"
mkdir "$T/empty" && (cd "$T/empty" && "$FLAMEKIT" run -q -- /nonexistent/cmd) >/dev/null 2>&1
check_eq "run: ... and no new directory" "" "$(ls -A "$T/empty")"
"$FLAMEKIT" host --help | grep -q -- --unsafe-limits; check_eq "--help documents --unsafe-limits" 0 "$?"

# --stdout: a valid stream (magic, CRCs, four files, end record), nothing else
"$FLAMEKIT" host -q -d 500ms --stdout >"$T/stream" 2>"$T/stream.err"
check_eq "--stdout: exit 0" 0 "$?"
res=$(python3 - "$T/stream" <<'PY'
import struct, sys, zlib
b = open(sys.argv[1], "rb").read()
assert b[:4] == b"FKS1", "magic"
i, files, end = 4, [], None
while i < len(b):
    t = b[i:i+1]; nl, = struct.unpack(">H", b[i+1:i+3]); dl, = struct.unpack(">Q", b[i+3:i+11])
    rec = b[i:i+11+nl+dl]; crc, = struct.unpack(">I", b[i+11+nl+dl:i+15+nl+dl])
    assert zlib.crc32(rec) & 0xffffffff == crc, "crc"
    name = b[i+11:i+11+nl].decode(); data = b[i+11+nl:i+11+nl+dl]
    if t == b"F": files.append(name)
    elif t == b"E": end = data.split(b"\n")[0].decode()
    i += 15 + nl + dl
exts = sorted(f.split(".", 3)[-1] for f in files)
print(end, " ".join(exts))
PY
)
check_eq "--stdout: stream has the four files and status 0" "0 flamegraph.svg folded.gz json pb.gz" "$res"

# memory cap: a limit that cannot hold the kernel's symbol table and the
# Python gate's maps and queues is refused before the capture starts, naming each and
# the least limit (at which a command sampled in the kernel must run to its
# end); before, such a capture stopped at the limit 37-150 ms in, and did
# not say why
o=$("$FLAMEKIT" host -d 1 --max-memory 3M -o "$T/memk" 2>&1); rc=$?
check_eq "memory cap below the kernel's symbol table: exit 2" 2 "$rc"
check_grep "memory cap below the kernel's table: one line naming it, the gate and the least limit" \
    "^flamekit host: --max-memory 3M cannot hold the kernel's symbol table \([0-9.]+M here\), the Python gate's ring, maps and queues for [0-9]+ CPUs? \([0-9.]+M\) and 2M for the capture: give at least [0-9]+M, or --no-kernel, or --python off; see 'flamekit host --help'$" "$o"
check_eq "memory cap below the kernel's table: the error is all it prints" 1 "$(printf '%s\n' "$o" | wc -l)"
check_eq "memory cap below the kernel's table: nothing written" no "$([ -e "$T/memk" ] && echo yes || echo no)"
least=$(printf '%s\n' "$o" | sed -n 's/.*give at least \([0-9]*\)M.*/\1/p')
# dd spends its time in the kernel: its first sample reads the kernel's
# table (a sleep is seldom sampled: at the least limit of 9455819..64203b4,
# which left out the gate, a sleep's capture ran to its end only when
# nothing sampled it)
"$FLAMEKIT" run -q --no-svg --max-memory "${least:-0}M" -o "$T/meml" -- \
    dd if=/dev/zero of=/dev/null bs=1k count=100000 >/dev/null 2>&1
check_eq "memory cap: the least limit named (${least:-none}M) is accepted" 0 "$?"
j=$(ls "$T"/meml/*.json 2>/dev/null)
check_eq "memory cap: at the least limit named a command's capture runs to its end" "command exited" \
    "$([ -n "$j" ] && jget "$j" stop_reason)"
check "memory cap: ... with kernel frames in it" zgrep -q '_\[k\]' "$T"/meml/*.folded.gz
# memory cap: stops cleanly, says so, files complete -- at a limit the
# fixed tables fit, reached by a Python program whose stacks are random
# walks through ten functions (a new stack at nearly every sample: the
# stack table grew ~14 KB a sample here; the limit was passed 0.2 s in at
# 7M, before the gate's queues counted: 8.6M with them, 11M the least;
# the least named without kernel frames is taken, 12M with the gate's
# pool of blocks for 2 CPUs -- named at the capture's 999 Hz: the gate's
# ring holds what the perf rings hold, 7M at the default 99 Hz)
nkleast=$("$FLAMEKIT" host -F 999 --no-kernel --max-memory 3M -d 1 2>&1 | sed -n 's/.*give at least \([0-9]*\)M.*/\1/p')
printf '%s\n' 'import random, time' 'R = random.Random(7)' 'def step(d):' '    if d == 0:' \
    '        return sum(range(300))' '    return F[R.randrange(10)](d - 1)' \
    'def f0(d): return step(d)' 'def f1(d): return step(d)' 'def f2(d): return step(d)' \
    'def f3(d): return step(d)' 'def f4(d): return step(d)' 'def f5(d): return step(d)' \
    'def f6(d): return step(d)' 'def f7(d): return step(d)' 'def f8(d): return step(d)' \
    'def f9(d): return step(d)' 'F = [f0, f1, f2, f3, f4, f5, f6, f7, f8, f9]' \
    'end = time.monotonic() + 30' 'while time.monotonic() < end:' '    step(14)' >"$T/manystacks.py"
python3 "$T/manystacks.py" & mp=$!
fk_cleanup "kill $mp 2>/dev/null"
start=$(date +%s)
o=$("$FLAMEKIT" host -F 999 -d 20 --no-kernel --max-memory "${nkleast:-0}M" -o "$T/mem" 2>&1); rc=$?
kill $mp 2>/dev/null; wait $mp 2>/dev/null
check_eq "memory cap: exit 0" 0 "$rc"
check_grep "memory cap: summary says so" 'memory limit' "$o"
check_range "memory cap: stopped early (s)" $(( $(date +%s) - start )) 0 15
j=$(ls "$T"/mem/*.json 2>/dev/null)
[ -n "$j" ] && check_eq "memory cap: metadata memory_limited" True "$(jget "$j" memory_limited)" || fail "memory cap: no json"
"$FLAMEKIT" host --max-memory 2G >/dev/null 2>&1; check_eq "memory above the cap without --unsafe-limits: exit 2" 2 "$?"
"$FLAMEKIT" host -q --stdout >/dev/null </dev/null 2>&1 -d 100ms; check_eq "--stdout to a non-tty works" 0 "$?"
# run --stdout: the command's own stdout must not corrupt the stream
"$FLAMEKIT" run -q --stdout -- sh -c 'echo hello from the command' >"$T/rs" 2>"$T/rs.err"
check_eq "run --stdout: stream starts with the magic" FKS1 "$(head -c 4 "$T/rs")"
check_grep "run --stdout: command's stdout went to stderr" 'hello from the command' "$T/rs.err"
# The Python gate's program wakes the reader for a process it does not know
# only when its executable is named python* (capture/pygate.c
# emit_exe_check): 150 short shells, no Python, wake it
# at most a few times (each woke it at its first sample before, 150 and
# more); a python3 among them still wakes it at once and is found.
"$FLAMEKIT" run -q --no-svg -F 999 -o "$T/gate" -- sh -c \
    'for i in $(seq 150); do sh -c "i=0; while [ \$i -lt 2000 ]; do i=\$((i+1)); done"; done' \
    >/dev/null 2>&1
j=$(ls "$T"/gate/*.json 2>/dev/null | head -1)
if [ -n "$j" ] && [ "$(jget "$j" reader.wakeups)" = "python gate" ]; then
    check_range "gate: 150 new non-Python processes: reader wake-ups" "$(jget "$j" reader.python_wakeups)" 0 10
    "$FLAMEKIT" run -q --no-svg -F 999 -o "$T/gate-py" -- sh -c \
        'for i in $(seq 20); do sh -c "i=0; while [ \$i -lt 2000 ]; do i=\$((i+1)); done"; done; python3 -c "sum(range(3000000))"' \
        >/dev/null 2>&1
    j=$(ls "$T"/gate-py/*.json 2>/dev/null | head -1)
    check_range "gate: a python3 after them wakes the reader" "$(jget "$j" reader.python_wakeups)" 1 100000
    check_range "gate: ... and is found" "$(jget "$j" python.processes)" 1 5
else
    skip "gate: new processes' wake-ups" "no Python gate here"
fi
# options after the operand (as flamekit remote appends --stdout)
"$HOT" 2 & hp=$!
"$FLAMEKIT" pid "$hp" -q -d 500ms --stdout >"$T/ps" 2>/dev/null
check_eq "pid PID --stdout: option after the operand" FKS1 "$(head -c 4 "$T/ps")"
wait "$hp" 2>/dev/null
