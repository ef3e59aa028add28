#!/usr/bin/env bash
# Files a profiled process plants for flamekit (root) to read: a FIFO perf
# map, a perf map that is a symlink out of a chroot, a chroot whose /tmp
# leads to ours, /dev/zero and huge perf maps under --max-memory, mapped
# files replaced by a FIFO or a device symlink after the mapping. Each
# reproduces an attack on a real capture; none may hang, read a host file
# or open a device.
# timeout: 240
. "$(dirname "$0")/lib.sh"
PROG=$FK_BUILD/test/progs/symprog

[ "$(id -u)" = 0 ] || { skip "hostile files" "needs root (captures, chroot, nobody)"; exit 0; }
# The workload runs as nobody and in a chroot: a copy outside $T (0700).
prog=/dev/shm/fk-harden-symprog.$$
cp "$PROG" "$prog" && chmod 755 "$prog" && fk_cleanup "rm -f '$prog'"
fk_perf_maps_cleanup
# (commands, not shell functions: the workload's pid must be the job's, to kill it)
as_nobody=(setpriv --reuid=nobody --regid=nogroup --clear-groups)

# capture NAME SECS ARGS...: flamekit ARGS bounded by SECS + 15 s; sets
# $rc, $secs (wall time), $FOLDED and the log $T/NAME.log.
capture() {
    local name=$1 limit=$2; shift 2
    local t0=$(date +%s%N)
    timeout -k 5 $((limit + 15)) "$FLAMEKIT" "$@" --no-svg -o "$T/$name" >"$T/$name.log" 2>&1
    rc=$?
    secs=$(( ($(date +%s%N) - t0) / 1000000000 ))
    FOLDED=$(ls "$T/$name"/*.folded.gz 2>/dev/null | head -n 1)
}
# got_folded NAME: capture NAME wrote its folded output (flamekit writes one
# even with no sample), else a failure with its exit status and log: a
# check on its contents must not vanish when the capture itself failed
# (one did under load, its check silently absent: 31 checks, not 32).
got_folded() {
    [ -n "$FOLDED" ] && return 0
    fail "capture $1 wrote its folded output" \
        "none (exit $rc, $secs s): $(tail -n 3 "$T/$1.log" 2>/dev/null | tr '\n' ' ' | cut -c1-400)"
    return 1
}
# start_jit CMD...: start_prog, then wait for its "jit pid PID at ADDR"
# line (a sanitized build may print warnings first) into $line
start_jit() {
    local i out
    start_prog line "$@"
    out=$(ls -t "$T"/fifo.*.out | head -n 1)
    for ((i = 0; i < 50; i++)); do
        line=$(grep -m1 '^jit pid ' "$out")
        [ -n "$line" ] && break
        sleep 0.1
    done
}
jit_pid() { awk '/^jit pid [0-9]+ at [0-9a-f]+$/ { print $3 }' <<<"$1"; }
jit_addr() { awk '/^jit pid [0-9]+ at [0-9a-f]+$/ { print $5 }' <<<"$1"; }

# 1. A FIFO perf map owned by nobody, for a process of nobody running JIT
# code: a host capture ends on time (the map is never opened) and says so.
start_jit "${as_nobody[@]}" "$prog" jitspin 30 atexit
pid=$(jit_pid "$line")
if [ -z "$pid" ]; then
    fail "nobody's JIT workload started" "$line"
else
    mkfifo "$(fk_perf_map_path "$pid")" && chown nobody:nogroup "/tmp/perf-$pid.map"
    capture fifo 3 host -q -d 3
    check_eq "FIFO perf map: host -d 3 exits 0" 0 "$rc"
    check_range "FIFO perf map: host -d 3 ends within 3 s + 8 s (s)" "$secs" 3 11
    check_grep "FIFO perf map: a message says it was skipped" \
        "perf map /tmp/perf-$pid\\.map of pid $pid skipped: not a regular file" "$T/fifo.log"
    # owner rule: a regular map owned by another user than the process's
    rm -f "/tmp/perf-$pid.map"
    echo "$(jit_addr "$line") 40 fk_foreign_owner" > "/tmp/perf-$pid.map"
    chown daemon "/tmp/perf-$pid.map"
    capture owner 2 pid "$pid" -d 2
    check_grep "perf map owned by another user: skipped, said" \
        "perf-$pid\\.map of pid $pid skipped: not owned by the process's user or root" "$T/owner.log"
    got_folded "owner" && check_nogrep "perf map owned by another user: not read" fk_foreign_owner "$(zcat "$FOLDED")"
    chown nobody "/tmp/perf-$pid.map"
    sed -i 's/fk_foreign_owner/fk_own_map/' "/tmp/perf-$pid.map"
    capture owned 2 pid "$pid" -d 2
    got_folded "owned" && check_range "perf map owned by the process's user: read (share of samples)" \
        "$(share "$FOLDED" ';fk_own_map_\[j\]$')" 0.5 1
    rm -f "/tmp/perf-$pid.map"
fi
kill "$PROG_PID" ${pid:+"$pid"} 2>/dev/null; stop_prog

# 2. A chroot made of the workload and its libraries.
R=$T/root
mkdir -p "$R/tmp"
cp "$prog" "$R/symprog"
for lib in $(ldd "$prog" | grep -o '/[^ ]*'); do
    mkdir -p "$R$(dirname "$lib")" && cp "$lib" "$R$lib"
done
# a. its /tmp/perf-PID.map is a symlink to a root-only host file
echo "secret" > "$T/secret"; chmod 600 "$T/secret"
start_jit chroot "$R" /symprog jitspin 30 atexit
pid=$(jit_pid "$line")
if [ -z "$pid" ]; then
    # (a sanitized build's runtime needs /proc, which this root lacks)
    skip "chroot, map symlinked to a host file" "the workload does not run in the minimal root: $line"
else
    echo "$(jit_addr "$line") 40 fk_host_secret" > "$T/secret"
    ln -s "$T/secret" "$R/tmp/perf-$pid.map"
    capture chroot 2 pid "$pid" -d 2
    check_eq "chroot, map symlinked to a host file: capture exits 0" 0 "$rc"
    if [ -n "$FOLDED" ]; then
        check_nogrep "chroot, map symlinked to a 0600 host file: its contents are not in the profile" \
            fk_host_secret "$(zcat "$FOLDED")"
        check_grep "chroot, map symlinked: JIT frames unnamed" '\[JIT\] tid' "$(zcat "$FOLDED")"
    fi
    check_grep "chroot, map symlinked: a message says it was skipped" \
        "perf-$pid\\.map of pid $pid skipped: a symbolic link" "$T/chroot.log"
    # control: the same map as a file inside the chroot is read
    rm -f "$R/tmp/perf-$pid.map"
    echo "$(jit_addr "$line") 40 fk_in_root" > "$R/tmp/perf-$pid.map"
    capture chroot-ok 2 pid "$pid" -d 2
    got_folded "chroot-ok" && check_range "chroot, map a file in its /tmp: read (share of samples)" \
        "$(share "$FOLDED" ';fk_in_root_\[j\]$')" 0.5 1
fi
kill "$PROG_PID" ${pid:+"$pid"} 2>/dev/null; stop_prog
# b. its /tmp is a symlink to our /tmp, where the same user planted a map:
# a process whose root is known is never looked up on our side
rm -rf "$R/tmp"; ln -s /tmp "$R/tmp"
start_jit chroot --userspec=nobody:nogroup "$R" /symprog jitspin 30 atexit
pid=$(jit_pid "$line")
if [ -z "$pid" ]; then
    skip "chroot whose /tmp is a symlink" "the workload does not run in the minimal root: $line"
else
    echo "$(jit_addr "$line") 40 fk_host_planted" > "/tmp/perf-$pid.map"
    chown nobody "/tmp/perf-$pid.map"
    capture chroot-tmp 2 pid "$pid" -d 2
    check_eq "chroot whose /tmp is a symlink: capture exits 0" 0 "$rc"
    got_folded "chroot-tmp" && check_nogrep "chroot whose /tmp is a symlink: our /tmp/perf-PID.map not read" \
        fk_host_planted "$(zcat "$FOLDED")"
    rm -f "/tmp/perf-$pid.map"
fi
kill "$PROG_PID" ${pid:+"$pid"} 2>/dev/null; stop_prog

# 3. Endless and huge maps under --max-memory 16M (--python off: the
# workload is C, and the Python gate's reserve, 4.5M for 2 CPUs at 99 Hz, would
# leave the map no room to be bounded by)
start_jit "$prog" jitspin 30 atexit
pid=$(jit_pid "$line")
if [ -z "$pid" ]; then
    fail "JIT workload started" "$line"
else
    ln -s /dev/zero "$(fk_perf_map_path "$pid")"
    capture zero 3 pid "$pid" -d 3 --max-memory 16M --python off
    check_eq "map symlinked to /dev/zero: capture exits 0" 0 "$rc"
    check_range "map symlinked to /dev/zero: ends within 3 s + 8 s (s)" "$secs" 3 11
    check_grep "map symlinked to /dev/zero: skipped, said" "perf-$pid\\.map of pid $pid skipped" "$T/zero.log"
    rm -f "/tmp/perf-$pid.map"
    # 150 MB of map (under the 256 MiB size cap): read up to the memory limit
    { echo "$(jit_addr "$line") 40 fk_huge_first"
      yes "7f0000000000 10 fk_filler_name_long_enough_to_weigh_in_memory" | head -c 150M; } > "/tmp/perf-$pid.map"
    rss=""
    if [ -x /usr/bin/time ]; then
        t0=$(date +%s%N)
        timeout -k 5 40 /usr/bin/time -f 'maxrss_kb=%M' -o "$T/huge.time" \
            "$FLAMEKIT" pid "$pid" -d 3 --max-memory 16M --python off --no-svg -o "$T/huge" >"$T/huge.log" 2>&1
        rc=$?; secs=$(( ($(date +%s%N) - t0) / 1000000000 ))
        rss=$(sed -n 's/^maxrss_kb=//p' "$T/huge.time")
        FOLDED=$(ls "$T/huge"/*.folded.gz 2>/dev/null | head -n 1)
    else
        capture huge 3 pid "$pid" -d 3 --max-memory 16M --python off
    fi
    check_eq "150 MB map, --max-memory 16M: capture exits 0" 0 "$rc"
    check_range "150 MB map, --max-memory 16M: ends within 3 s + 15 s (s)" "$secs" 3 18
    check_grep "150 MB map: read in part, said" "perf-$pid\\.map of pid $pid read in part" "$T/huge.log"
    peak=$(grep -o '"memory_peak_bytes": *[0-9]*' "$T/huge"/*.json 2>/dev/null | grep -o '[0-9]*$')
    check_range "150 MB map: memory counted stays within --max-memory 16M (bytes)" "${peak:-0}" 1 16777216
    # the old reader held the whole map: ~470 MB here
    [ -n "$rss" ] && check_range "150 MB map: peak RSS bounded (KiB)" "$rss" 1 160000
    rm -f "/tmp/perf-$pid.map"
fi
kill "$PROG_PID" ${pid:+"$pid"} 2>/dev/null; stop_prog

# 4. Mapped files replaced after the mapping (map, unmap, then a FIFO or a
# symlink to /dev/ptmx at the path the kernel reported), all while on CPU
mkdir -p "$T/race"
for kind in fifo ptmx; do
    rm -rf "$T/race"/*
    st=()
    # (LeakSanitizer cannot run under ptrace: off for this run)
    [ $kind = ptmx ] && need strace && st=(env ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
        strace -f -qq -y -e trace=open,openat,openat2 -o "$T/race-$kind.strace")
    t0=$(date +%s%N)
    timeout -k 5 40 "${st[@]}" "$FLAMEKIT" run --no-svg -F 499 -o "$T/race-$kind" -- \
        "$prog" replace 2 "$T/race" $kind >"$T/race-$kind.log" 2>&1
    rc=$?; secs=$(( ($(date +%s%N) - t0) / 1000000000 ))
    n=$(ls "$T/race" | wc -l)
    check_eq "mapped file replaced by a $kind ($n files): no hang, exit 0" 0 "$rc"
    check_range "mapped file replaced by a $kind: ends within 2 s + 15 s (s)" "$secs" 2 17
    FOLDED=$(ls "$T/race-$kind"/*.folded.gz 2>/dev/null | head -n 1)
    got_folded "race-$kind" && check_range "mapped file replaced by a $kind: samples in fk_symprog_alpha" \
        "$(share "$FOLDED" ';fk_symprog_alpha$')" 0.2 1
    if [ $kind = ptmx ]; then
        if [ ${#st[@]} -gt 0 ]; then
            # any open of the device but O_PATH (which opens nothing) is the attack
            check_nogrep "mapped file replaced by a /dev/ptmx symlink: the device is never opened" \
                'ptmx>$' "$(grep -v O_PATH "$T/race-$kind.strace")"
        else
            skip "mapped file replaced by a /dev/ptmx symlink: device never opened" "no strace"
        fi
    fi
done

# 5. A mapped file truncated by its owner while flamekit reads it through a
# mapping (the unwinder's CFI): SIGBUS must not kill the capture
t0=$(date +%s%N)
timeout -k 5 90 "$FLAMEKIT" run --call-graph dwarf -F 999 --no-svg -o "$T/trunc" -- \
    "$prog" truncate 1.5 "$T/trunc.bin" >"$T/trunc.log" 2>&1
rc=$?; secs=$(( ($(date +%s%N) - t0) / 1000000000 ))
check_eq "mapped file truncated during the capture: exit 0 (no SIGBUS)" 0 "$rc"
check_grep "mapped file truncated during the capture: file cut to 8 KiB" '^8192$' "$(stat -c %s "$T/trunc.bin" 2>/dev/null)"
# whether a read met the cut depends on timing; the count is always there
J=$(ls "$T/trunc"/*.json 2>/dev/null | head -n 1)
check_grep "metadata counts reads a truncation cut short (symbols.files_shrunk)" '^[0-9]+$' \
    "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["symbols"]["files_shrunk"])' "$J" 2>&1)"
FOLDED=$(ls "$T/trunc"/*.folded.gz 2>/dev/null | head -n 1)
# (its symbols may have been read in the window before it shrank: names
# then are those; read after, [trunc.bin+0x...]; either way every sample counts)
# The workload runs 3 s of its own CPU time (at 999 Hz about 3,000 samples),
# whatever the host's load: a capture the SIGBUS cut short gives far fewer
got_folded "trunc" && check_range "mapped file truncated: the workload sampled (3 s of CPU at 999 Hz)" \
    "$(zcat "$FOLDED" | awk '{ n += $NF } END { print n + 0 }')" 2000 3600
