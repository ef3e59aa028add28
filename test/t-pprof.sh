#!/usr/bin/env bash
# pprof out: every capture also writes .pb.gz; Go's own pprof (go tool pprof,
# Debian's golang-go) must read it and agree with the folded output.
# timeout: 240
. "$(dirname "$0")/lib.sh"
need go || { skip "pprof out" "go not installed (apt-get install golang-go)"; exit 0; }
export GOCACHE=$T/gocache GOFLAGS= GO111MODULE=off HOME=$T
HOT=$FK_BUILD/test/progs/hot
[ -x "$HOT" ] || { fail "test/progs/hot not built"; exit 0; }
cp "$HOT" "$T/hot" && chmod 755 "$T" "$T/hot"
HOT=$T/hot
pp() { go tool pprof "$@" 2>"$T/pprof.err"; }
tot() { awk '{s += $NF} END {print s + 0}' "$@"; }

# `go tool pprof -traces` as folded lines: the comm label as root frame,
# frames caller first, counts summed over samples (pids) of the same stack.
traces_folded() {
    awk '
    function flush() { if (n) { s = comm; for (i = n; i >= 1; i--) s = s (s == "" ? "" : ";") f[i]; sum[s] += v }
                       n = 0; comm = "" }
    /^-----------\+/ { flush(); started = 1; next }
    !started { next }
    substr($0, 11, 1) == ":" { k = substr($0, 1, 10); gsub(/ /, "", k); if (k == "comm") comm = substr($0, 14); next }
    substr($0, 1, 10) ~ /[^ ]/ { v = substr($0, 1, 10); gsub(/ /, "", v); n = 1; f[1] = substr($0, 14); next }
    n && substr($0, 1, 13) == "             " { f[++n] = substr($0, 14); next }
    END { flush(); for (s in sum) print s, sum[s] }
    ' | LC_ALL=C sort
}

# ---- CPU capture of a known workload
"$FLAMEKIT" run -q -F 499 -o "$T/run" -- "$HOT" 2 >"$T/run.out" 2>&1
check_eq "run: capture succeeds" 0 "$?"
pb=$(ls "$T"/run/*.pb.gz 2>/dev/null | head -1)
folded=$(ls "$T"/run/*.folded.gz 2>/dev/null | head -1)
if [ -z "$pb" ] || [ -z "$folded" ]; then
    fail "run: .pb.gz and .folded.gz written" "$(ls -l "$T/run"; cat "$T/run.out")"
    exit 0
fi
pass "run: .pb.gz written beside .folded.gz"
check "run: .pb.gz is gzip" gzip -t "$pb"
check_eq "run: .pb.gz mode 0644" 644 "$(stat -c %a "$pb")"

raw=$(pp -raw "$pb") || fail "go tool pprof -raw reads the file" "$(cat "$T/pprof.err")"
check_grep "raw: sample types samples/count and cpu/nanoseconds" 'samples/count cpu/nanoseconds' "$raw"
check_grep "raw: period type cpu/nanoseconds, period 1e9/499" 'PeriodType: cpu nanoseconds' "$raw"
check_grep "raw: period" '^Period: 2004008$' "$raw"
bid=$(readelf -n "$HOT" | awk '/Build ID/ {print $3}')
check_grep "raw: the workload's mapping with its build-id" " $T/hot $bid \\[FN\\]" "$raw"
check_grep "raw: comm label" '^ +comm:\[hot\]$' "$raw"
check_grep "raw: pid label" '^ +pid:\[[0-9]+\]$' "$raw"

# every stack and count agrees with the folded file (sample counts); pprof
# shows C++ names without their parameter lists (an ASan build's runtime)
cxxshort() { perl -pe '1 while s/<[^<>;]*>//g; s/(::[A-Za-z_0-9~]+)\([^;]*\)( const)?/$1/g' | awk '{k = $0; sub(/ [0-9]+$/, "", k); s[k] += $NF}
    END {for (k in s) print k, s[k]}' | LC_ALL=C sort; }
pp -sample_index=samples -traces "$pb" | traces_folded | cxxshort >"$T/traces.folded"
zcat "$folded" | LC_ALL=C sort >"$T/run.folded"
cxxshort <"$T/run.folded" >"$T/run-short.folded"
if cmp -s "$T/traces.folded" "$T/run-short.folded"; then
    pass "traces: every stack and count equals the folded output ($(wc -l <"$T/run.folded") stacks)"
else
    fail "traces: stacks differ from the folded output" "$(diff "$T/traces.folded" "$T/run-short.folded" | head -20)"
fi
# cpu nanoseconds = samples x period
tot_s=$(awk '{s += $NF} END {print s}' "$T/run.folded")
tot_ns=$(pp -raw "$pb" | awk '/^Samples:/ {on=1; next} /^Locations/ {on=0} on && $2 ~ /^[0-9]+:$/ {s += $2} END {print s}')
check_eq "raw: cpu nanoseconds are samples x period" "$((tot_s * 2004008))" "$tot_ns"

# -top: the hottest function's flat count is the folded leaf sum
top=$(pp -sample_index=samples -top -nodecount=5 "$pb")
first=$(printf '%s\n' "$top" | awk '/flat%/ {getline; print $1, $6; exit}')
read -r flat name <<<"$first"
leaf=$(awk -v n="$name" '{k = $0; sub(/ [0-9]+$/, "", k); c = split(k, f, ";"); if (f[c] == n) s += $NF} END {print s + 0}' "$T/run.folded")
check_eq "top: flat of $name equals its folded leaf count" "$leaf" "$flat"
check_grep "top: hot_three among the top functions" 'hot_three' "$top"

if need dot; then
    pp -svg -output "$T/run.svg" "$pb"
    check_eq "svg: go tool pprof -svg renders the profile" 0 "$?"
    if need xmllint; then check "svg: well-formed" xmllint --noout "$T/run.svg"; fi
    check_grep "svg: names the hot function" 'hot_three' "$T/run.svg"
else
    skip "svg: go tool pprof -svg" "graphviz not installed (apt-get install graphviz)"
fi
check_grep "comments: the invocation" 'invocation=flamekit run' "$(pp -comments "$pb")"

# ---- kernel frames stay told apart: a command that lives in the kernel
"$FLAMEKIT" run -q -F 499 -o "$T/kern" -- dd if=/dev/urandom of=/dev/null bs=1M count=100 >"$T/kern.out" 2>&1
kpb=$(ls "$T"/kern/*.pb.gz 2>/dev/null | head -1)
if [ -n "$kpb" ]; then
    check_grep "kernel: a [kernel.kallsyms] mapping" ' \[kernel\.kallsyms\] ' "$(pp -raw "$kpb")"
    check_grep "kernel: frames end in _[k] in go tool pprof -traces" '^ {13}[A-Za-z_0-9.]+_\[k\]$' "$(pp -traces "$kpb")"
    check_grep "kernel: and in -top" ' [A-Za-z_0-9.]+_\[k\]$' "$(pp -top "$kpb")"
else
    fail "kernel: dd capture" "$(cat "$T/kern.out")"
fi

# ---- faults: faults/count weighted by the period, equal to the folded counts
# (the fault lab: 16M touched, released, touched again = 8192 faults)
"$FLAMEKIT" faults -q -c 100 -o "$T/faults" run -- "$FK_BUILD/flamekit-fault-lab" -s 16M -r dontneed >"$T/faults.out" 2>&1
check_eq "faults: capture succeeds" 0 "$?"
fpb=$(ls "$T"/faults/*.pb.gz 2>/dev/null | head -1)
ffolded=$(ls "$T"/faults/*.folded.gz 2>/dev/null | head -1)
if [ -n "$fpb" ] && [ -n "$ffolded" ]; then
    raw=$(pp -raw "$fpb")
    check_grep "faults: sample types samples/count faults/count" 'samples/count faults/count' "$raw"
    check_grep "faults: period 100" '^Period: 100$' "$raw"
    pp -traces "$fpb" | traces_folded | cxxshort >"$T/ftraces.folded"
    zcat "$ffolded" | cxxshort >"$T/faults.folded"
    if cmp -s "$T/ftraces.folded" "$T/faults.folded"; then
        pass "faults: traces (faults/count) equal the folded output"
    else
        fail "faults: traces differ from the folded output" "$(diff "$T/ftraces.folded" "$T/faults.folded" | head)"
    fi
    check_range "faults: the lab's faults sampled (faults/count)" "$(tot "$T/faults.folded")" 7000 12000
    pp -sample_index=samples -traces "$fpb" | traces_folded |
        awk '{s += $NF} END {print s}' >"$T/fs"
    check_eq "faults: faults = samples x 100" "$(awk '{s += $NF} END {print s}' "$T/faults.folded")" "$(( $(cat "$T/fs") * 100 ))"
else
    fail "faults: .pb.gz and .folded.gz written" "$(ls -l "$T/faults"; cat "$T/faults.out")"
fi

# ---- --stdout streams the .pb.gz too
"$FLAMEKIT" run -q --stdout -- "$HOT" 0.3 >"$T/stream.bin" 2>"$T/stream.err"
check_grep "stdout: the stream carries the .pb.gz" '\.run-hot\.pb\.gz' "$(tr -c '[:print:]' '\n' <"$T/stream.bin")"

# ---- pprof in: flamekit's own .pb.gz folds back to the capture's stacks
"$FLAMEKIT" collapse --sample-type samples -o "$T/back.folded" "$pb"
check "in: collapse of our .pb.gz (samples) equals the folded output" cmp "$T/back.folded" "$T/run.folded"
zcat "$pb" | "$FLAMEKIT" collapse --sample-type 0 >"$T/back0.folded"
check "in: uncompressed, from stdin, type by index: the same" cmp "$T/back0.folded" "$T/run.folded"
"$FLAMEKIT" svg -o "$T/back.svg" "$pb"
check "in: svg of our .pb.gz is well-formed" xmllint --noout "$T/back.svg"
check_grep "in: svg counts cpu nanoseconds (the default, last sample type)" 'data-countname="nanoseconds"' "$T/back.svg"

# ---- pprof in: a Go program's own runtime/pprof CPU and heap profiles
mkdir -p "$T/go" && cp "$FK_SRC/test/progs/gopprof/main.go" "$T/go/"
if ! (cd "$T/go" && go build -o gopprof main.go) >"$T/go.log" 2>&1; then
    fail "go build of the gopprof workload" "$(cat "$T/go.log")"
    exit 0
fi
mkdir -p "$T/g1" "$T/g2"
"$T/go/gopprof" "$T/g1" 1.5 3 && "$T/go/gopprof" "$T/g2" 1.5 1
check_eq "go: the workload wrote its profiles" "cpu.pprof heap.pprof cpu.pprof heap.pprof" \
    "$(cd "$T" && ls g1 g2 | grep pprof | tr '\n' ' ' | sed 's/ $//')"
gcpu=$T/g1/cpu.pprof gheap=$T/g1/heap.pprof

# Go's traces, inlined frames expanded, as folded lines (no comm label)
gotraces() { pp -traces "$@" | sed 's/ (inline)$//' | traces_folded | awk '$NF > 0'; }
"$FLAMEKIT" collapse --sample-type samples "$gcpu" >"$T/gcpu.folded"
gotraces -sample_index=samples "$gcpu" >"$T/gcpu.traces"
if cmp -s "$T/gcpu.folded" "$T/gcpu.traces"; then
    pass "go cpu: every stack and count equals go tool pprof -traces ($(wc -l <"$T/gcpu.folded") stacks)"
else
    fail "go cpu: stacks differ from go tool pprof -traces" "$(diff "$T/gcpu.folded" "$T/gcpu.traces" | head)"
fi
check_grep "go cpu: the inlined call is a frame of its own" ';main\.goHotThree;main\.mix( |;)' "$T/gcpu.folded"
"$FLAMEKIT" collapse "$gcpu" >"$T/gcpu.ns.folded"
# Go records cpu = samples x period (10 ms at its 100 Hz): the default type is cpu
period=$(pp -raw "$gcpu" | awk '/^Period: / {print $2}')
awk -v p="$period" '{$NF = $NF * p; print}' "$T/gcpu.folded" >"$T/gcpu.ns.expect"
check "go cpu: the default type is cpu nanoseconds (samples x period $period)" cmp "$T/gcpu.ns.folded" "$T/gcpu.ns.expect"
# The 3:1 split is sampled by Go's 100 Hz SIGPROF, one sample per 10 ms of
# the program's CPU: ~150 quiet, fewer on a loaded host. The bound is 4.5
# binomial sd of the samples actually taken (n >= 30, or it proves nothing).
read -r n s lo hi < <(awk '/;main\.goHotThree( |;)/ {a += $NF} /;main\.goHotOne( |;)/ {b += $NF}
    END {n = a + b; sd = n ? sqrt(0.75 * 0.25 / n) : 1
         printf "%d %.3f %.3f %.3f\n", n, n ? a / n : 0, 0.75 - 4.5 * sd, 0.75 + 4.5 * sd}' "$T/gcpu.folded")
check_range "go cpu: samples of goHotThree and goHotOne" "$n" 30 100000
# (the cmp above makes the nanosecond split the same as the sample split)
check_range "go cpu: goHotThree's share of the two is 3/4 (4.5 sd of its samples)" "$s" "$lo" "$hi"
"$FLAMEKIT" svg -o "$T/gcpu.svg" "$gcpu"
check "go cpu: svg well-formed" xmllint --noout "$T/gcpu.svg"
check_grep "go cpu: svg draws main.goHotThree" '^main\.goHotThree$' "$T/gcpu.svg"

"$FLAMEKIT" collapse --sample-type inuse_objects "$gheap" >"$T/gheap.folded"
gotraces -sample_index=inuse_objects "$gheap" >"$T/gheap.traces"
check "go heap: inuse_objects stacks equal go tool pprof -traces" cmp "$T/gheap.folded" "$T/gheap.traces"
"$FLAMEKIT" collapse "$gheap" >"$T/gheap-space.folded"
big=$(awk '{k = $0; sub(/ [0-9]+$/, "", k)} k ~ /;main\.goAllocBig$/ {s += $NF} END {print s + 0}' "$T/gheap-space.folded")
small=$(awk '{k = $0; sub(/ [0-9]+$/, "", k)} k ~ /;main\.goAllocSmall$/ {s += $NF} END {print s + 0}' "$T/gheap-space.folded")
check_range "go heap: default type inuse_space: goAllocBig keeps 3 MiB" "$big" 3145728 3200000
check_range "go heap: goAllocSmall keeps 1 MiB" "$small" 1048576 1100000
"$FLAMEKIT" svg -o "$T/gheap.svg" "$gheap"
check_grep "go heap: svg counts bytes" 'data-countname="bytes"' "$T/gheap.svg"
o=$("$FLAMEKIT" svg --sample-type nosuch "$gheap" 2>&1 >/dev/null); rc=$?
check_eq "go heap: unknown --sample-type exits 1" 1 "$rc"
check_grep "go heap: ... naming the types there are" "^flamekit svg: .*no sample type 'nosuch'.*alloc_objects \(count\), alloc_space \(bytes\), inuse_objects \(count\), inuse_space \(bytes\)" "$o"
check_eq "go heap: ... in one line" 1 "$(printf '%s\n' "$o" | wc -l)"

# diff and merge of two Go profiles: 3:1 work before, 1:1 after
"$FLAMEKIT" diff --normalize -o "$T/gdiff.svg" "$gcpu" "$T/g2/cpu.pprof"
check "go diff: renders, well-formed" xmllint --noout "$T/gdiff.svg"
# The frames' colours as the viewer draws them (the widest frame of each
# name) against the colour formula of flamekit-diff(1), from the two
# profiles as go tool pprof reads them (cpu nanoseconds, flamekit's default
# type: samples x period, checked above). Not "goHotOne grew": Go's SIGPROF samples do not split as the work
# does under load (1:1 work was sampled 88:47 at load 18 here, and a CI run
# drew a 3:1-sampled AFTER), so which way a frame moved is the profiles'
# fact; the check is that the graph shows that fact. The largest delta is
# the file's (it is over the drawn frames), at least these frames' own.
for k in 1 2; do
    f=$gcpu; [ $k = 1 ] || f=$T/g2/cpu.pprof
    gotraces -sample_index=samples "$f" |
        awk -v p="$(pp -raw "$f" | awk '/^Period: / {print $2}')" '{$NF = sprintf("%.0f", $NF * p); print}' >"$T/gd$k.traces"
done
maxdelta=$(sed -n 's/.* data-maxdelta="\([^"]*\)".*/\1/p' "$T/gdiff.svg")
# expected NAME: "c1 c2 colour" of the widest (largest AFTER) frame of NAME
diffcolour() {
    awk -v name="$1" -v maxd="$maxdelta" '
    { k = $0; sub(/ [0-9]+$/, "", k); m = split(k, f, ";"); p = ""
      for (i = 1; i <= m; i++) { p = p (i > 1 ? ";" : "") f[i]; c[FILENAME == ARGV[1], p] += $NF; if (f[i] == name) is[p] = 1 }
      t[FILENAME == ARGV[1]] += $NF }
    END { best = ""; for (p in is) if (best == "" || c[0, p] > c[0, best]) best = p
          c1 = c[1, best] + 0; c2 = c[0, best] + 0; d = c2 - c1 * (t[0] / t[1])
          r = maxd > 0 ? (d < 0 ? -d : d) / maxd : 0; if (r > 1) r = 1
          if (c1 == 0 && d != 0 && r < 0.6) r = 0.6
          v = sprintf("%02x", int(225 * (1 - r) + 0.5))
          col = d > 0 ? "#ff" v v : d < 0 ? "#" v v "ff" : "#e1e1e1"
          printf "%.0f %.0f %s %s\n", c1, c2, col, ((d < 0 ? -d : d) <= maxd * (1 + 1e-12)) ? "bounded" : "over" }
    ' "$T/gd1.traces" "$T/gd2.traces"
}
if have_browser; then
    browser "open:$T/gdiff.svg,1200,600" frame:main.goHotOne frame:main.goHotThree >"$T/gdiff.out" 2>&1
    split=$(for f in "$T/gd1.traces" "$T/gd2.traces"; do
        awk '/;main\.goHotThree( |;)/ {a += $NF} /;main\.goHotOne( |;)/ {b += $NF} END {printf "%.0f:%.0f ", a, b}' "$f"; done)
    for fn in main.goHotOne main.goHotThree; do
        read -r c1 c2 want bound < <(diffcolour "$fn")
        got=$(val "$T/gdiff.out" "frame.$fn")
        check_eq "go diff: $fn's delta is within the file's largest" bounded "$bound"
        if [ "${got##* }" = "$want" ]; then
            pass "go diff: $fn drawn in the colour of its delta (normalized)"
        else
            fail "go diff: $fn drawn in the colour of its delta (normalized)" \
                "expected $want for cpu ns $c1 before, $c2 after (largest delta $maxdelta); the viewer drew: $got
goHotThree:goHotOne cpu ns before:after $split"
        fi
    done
else
    skip "go diff: colours" "node or chromium not found: apt-get install nodejs chromium"
fi
"$FLAMEKIT" merge --sample-type samples "$gcpu" "$T/g2/cpu.pprof" >"$T/gmerge.folded"
"$FLAMEKIT" collapse --sample-type samples "$T/g2/cpu.pprof" >"$T/g2.folded"
check_eq "go merge: counts add up" "$(( $(tot "$T/gcpu.folded") + $(tot "$T/g2.folded") ))" "$(tot "$T/gmerge.folded")"

# ---- bad input: one clear line, exit 1
bad() {  # bad WHAT REGEX FILE
    local o rc
    o=$("$FLAMEKIT" svg "$3" 2>&1 >/dev/null); rc=$?
    if [ $rc -eq 1 ] && [ "$(printf '%s\n' "$o" | wc -l)" -eq 1 ] && printf '%s' "$o" | grep -Eq -- "$2"; then
        pass "bad input: $1"
    else
        fail "bad input: $1 (exit $rc)" "$o"
    fi
}
head -c 300 "$gheap" >"$T/trunc.gz"
bad "truncated gzip" 'gzip data is truncated' "$T/trunc.gz"
# cut in the middle of a field (after a few whole ones), wherever this
# run's profile puts its field boundaries
zcat "$gheap" | python3 -c '
import sys
d = sys.stdin.buffer.read()
def varint(i):
    x = s = 0
    while True:
        b = d[i]; i += 1; x |= (b & 0x7f) << s; s += 7
        if b < 0x80: return x, i
i = n = 0
while i < len(d):
    t, j = varint(i)
    if t & 7 == 2:
        l, j = varint(j)
        if n >= 3 and l >= 2:
            sys.stdout.buffer.write(d[:j + l // 2]); break
        j += l
    else:
        _, j = varint(j)
    i, n = j, n + 1
' >"$T/trunc.pb"
bad "truncated profile" 'pprof profile is truncated' "$T/trunc.pb"
printf '\x0a\x02\x08\x05\x32\x00' >"$T/stridx.pb"
bad "string index out of range" 'string index 5 out of range' "$T/stridx.pb"
printf '\x0a\x02\x08\x00\x12\x04\x08\x07\x10\x01\x32\x00' >"$T/noloc.pb"
bad "a location that does not exist" 'location 7, which does not exist' "$T/noloc.pb"
head -c 4096 /dev/urandom | gzip >"$T/random.gz"
bad "not a profile (random, gzip'ed)" 'neither folded stacks nor a pprof profile' "$T/random.gz"
