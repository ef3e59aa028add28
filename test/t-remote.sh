#!/usr/bin/env bash
# flamekit remote against real private sshds on 127.0.0.1 (ports 17100-17199):
# round trip, --deploy, two hosts in parallel, ssh and remote failures, a
# stream cut mid-file, Ctrl-C, unknown host keys.
# timeout: 300
# (a hang guard, not a speed bound: 33-49 s on a quiet 2-CPU CI, 121 s at
# load 16 when its ~100 checks each wait for real sshds and captures)
. "$(dirname "$0")/lib.sh"
for p in /usr/sbin/sshd ssh ssh-keygen xmllint; do
    need "$p" || { skip "remote tests" "$p not installed"; exit 0; }
done
FAKE=$FK_BUILD/test/progs/fake-capture
[ -x "$FAKE" ] || { skip "remote tests" "test/progs/fake-capture not built"; exit 0; }

ssh-keygen -q -t ed25519 -N '' -f "$T/hostkey" </dev/null
ssh-keygen -q -t ed25519 -N '' -f "$T/id" </dev/null
ssh-keygen -q -t ed25519 -N '' -f "$T/id_other" </dev/null
cp "$T/id.pub" "$T/authorized_keys"
mkdir -p /run/sshd

# Start an sshd on a free port in our range; its port goes into variable $2.
# The far side's temporaries go to $T/rtmp (sshd SetEnv): other flamekit
# runs on this shared machine cannot be mistaken for ours.
mkdir -p "$T/rtmp"
start_sshd() {
    local name=$1 port try
    for try in 1 2 3 4 5 6 7 8; do
        port=$((17100 + RANDOM % 100))
        cat > "$T/sshd_$name.conf" <<EOC
Port $port
ListenAddress 127.0.0.1
HostKey $T/hostkey
AuthorizedKeysFile $T/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PidFile $T/sshd_$name.pid
LogLevel ERROR
SetEnv TMPDIR=$T/rtmp
EOC
        /usr/sbin/sshd -D -f "$T/sshd_$name.conf" -E "$T/sshd_$name.log" </dev/null >/dev/null 2>&1 &
        local pid=$!
        for _ in $(seq 50); do
            if ssh-keyscan -T 1 -p "$port" 127.0.0.1 >/dev/null 2>&1; then
                fk_cleanup "kill $pid 2>/dev/null; wait $pid 2>/dev/null"
                printf -v "$2" %s "$port"
                printf -v "SSHD_PID_$name" %s "$pid"
                return 0
            fi
            kill -0 $pid 2>/dev/null || break
            sleep 0.05
        done
        kill $pid 2>/dev/null; wait $pid 2>/dev/null
    done
    return 1
}
start_sshd a P1 || { fail "start sshd a" "$(cat "$T"/sshd_a.log 2>/dev/null)"; exit 0; }
start_sshd b P2 || { fail "start sshd b" "$(cat "$T"/sshd_b.log 2>/dev/null)"; exit 0; }
while PCLOSED=$((17100 + RANDOM % 100)); [ "$PCLOSED" = "$P1" ] || [ "$PCLOSED" = "$P2" ] ||
    ss -ltn 2>/dev/null | grep -q "127.0.0.1:$PCLOSED "; do :; done

: > "$T/empty_known_hosts"
for p in "$P1" "$P2"; do echo "[127.0.0.1]:$p $(cut -d' ' -f1,2 "$T/hostkey.pub")"; done > "$T/known_hosts"
host_block() {  # NAME PORT IDENTITY KNOWN_HOSTS
    cat <<EOC
Host $1
  HostName 127.0.0.1
  Port $2
  User root
  IdentityFile $3
  IdentitiesOnly yes
  BatchMode yes
  UserKnownHostsFile $4
  GlobalKnownHostsFile /dev/null
  ${5:-StrictHostKeyChecking yes}
  ConnectTimeout 5
EOC
}
{
    host_block h1 "$P1" "$T/id" "$T/known_hosts"
    host_block h2 "$P2" "$T/id" "$T/known_hosts"
    host_block hclosed "$PCLOSED" "$T/id" "$T/known_hosts"
    host_block hauth "$P1" "$T/id_other" "$T/known_hosts"
    host_block hunknown "$P1" "$T/id" "$T/empty_known_hosts"
    host_block hunknown_default "$P1" "$T/id" "$T/empty_known_hosts" "# StrictHostKeyChecking: ssh's default"
} > "$T/ssh_config"
export FLAMEKIT_SSH="ssh -F $T/ssh_config"
check "test sshd accepts our key" ssh -F "$T/ssh_config" h1 true

fresh() { rm -rf "$T/out"; mkdir -p "$T/out"; }
nfiles() { find "$T/out" -mindepth 1 | wc -l; }

# 1. Round trip with the stand-in capture.
fresh
out=$("$FLAMEKIT" remote --status lines --remote-path "$FAKE" -o "$T/out" h1 -- run -- sleep 0 2>"$T/err"); rc=$?
check_eq "round trip exits 0" 0 "$rc"
check_eq "round trip: three files land locally" 3 "$(nfiles)"
check_eq "round trip: stdout lists the three local paths" 3 "$(printf '%s\n' "$out" | grep -c "^$T/out/")"
svg=$(ls "$T"/out/*.flamegraph.svg 2>/dev/null | head -1)
check "round trip: SVG is valid XML" xmllint --noout "$svg"
check_grep "round trip: folded.gz has the workload's stacks" '^sleep;main;fake_hot_function 90$' \
    "$(zcat "$T"/out/*.run-sleep.folded.gz 2>&1)"
check_grep "round trip: names carry host, UTC time and scope" "^$(hostname)\.[0-9]{8}_[0-9]{6}_UTC\.run-sleep\.json$" \
    "$(ls "$T/out" | grep json)"
check_grep "round trip: remote progress shown with the host" '^h1: flamekit|^h1: done: 3 files' "$(cat "$T/err")"

# 1b. The real capture, when this build has one that writes --stdout.
if "$FLAMEKIT" run --help 2>&1 | grep -q -- '--stdout'; then
    fresh
    "$FLAMEKIT" remote --status lines --remote-path "$FLAMEKIT" -o "$T/out" h1 -- \
        run -- "$FK_BUILD/test/progs/remote-spin" 1000 >"$T/real.out" 2>"$T/real.err"; rc=$?
    check_eq "real capture round trip exits 0" 0 "$rc" 
    svg=$(ls "$T"/out/*.svg 2>/dev/null | head -1)
    check "real capture: SVG valid" xmllint --noout "$svg"
    check_grep "real capture: folded has the workload's function" 'remote_spin_hot' "$(zcat "$T"/out/*.folded.gz 2>&1)"
    check_eq "real capture: SVG, folded.gz, pb.gz and JSON land locally" 4 "$(nfiles)"
    if need python3; then check "real capture: JSON metadata parses" python3 -m json.tool "$(ls "$T"/out/*.json | head -1)"; fi
    # --deploy of this very binary, running a real capture.
    fresh
    before=$(find "$T/rtmp" -maxdepth 1 -name 'flamekit.??????' | sort)
    "$FLAMEKIT" remote --status lines --deploy -o "$T/out" h1 -- run -- "$FK_BUILD/test/progs/remote-spin" 500 >/dev/null 2>"$T/err"; rc=$?
    check_eq "real capture with --deploy exits 0" 0 "$rc"
    check_grep "real capture with --deploy: the workload's function" 'remote_spin_hot' "$(zcat "$T"/out/*.folded.gz 2>&1)"
    check_eq "real capture with --deploy: deployed copy removed" "$before" "$(find "$T/rtmp" -maxdepth 1 -name 'flamekit.??????' | sort)"
    # off-CPU over ssh: blocked time of a known workload, the same files
    fresh
    "$FLAMEKIT" remote --status lines --remote-path "$FLAMEKIT" -o "$T/out" h1 -- \
        offcpu run -- "$FK_BUILD/test/progs/offcpu-truth" sleeps 0.5 >/dev/null 2>"$T/err"; rc=$?
    check_eq "remote offcpu exits 0" 0 "$rc"
    check_grep "remote offcpu: the sleeps' blocked time under [S]" '^truth-a;\[S\];.*;wait_10ms;' \
        "$(zcat "$T"/out/*.offcpu.folded.gz 2>&1)"
    check_eq "remote offcpu: SVG, folded.gz, pb.gz and JSON land locally" 4 "$(nfiles)"
    HAVE_REAL=1
else
    skip "real capture round trip" "this build has no 'run --stdout' yet"
    HAVE_REAL=
fi

# Default output directory: ~/Downloads if it exists, else the current one.
mkdir -p "$T/home/Downloads" "$T/home2" "$T/cwd"
out=$(HOME=$T/home "$FLAMEKIT" remote --status lines --remote-path "$FAKE" h1 -- run -- true 2>/dev/null)
check_grep "no -o: results go to ~/Downloads" "^$T/home/Downloads/.*\.flamegraph\.svg$" "$out"
out=$(cd "$T/cwd" && HOME=$T/home2 "$FLAMEKIT" remote --status lines --remote-path "$FAKE" h1 -- run -- true 2>/dev/null)
check_eq "no -o and no ~/Downloads: results go to the current directory" 3 "$(ls "$T/cwd" | wc -l)"

# 2. --deploy: copied to a private temporary directory, run, removed.
fresh
"$FLAMEKIT" remote --status lines --deploy-binary "$FAKE" -o "$T/out" h1 -- run --where "$T/where" -- true >/dev/null 2>"$T/err"; rc=$?
check_eq "deploy exits 0" 0 "$rc"
check_eq "deploy: three files" 3 "$(nfiles)"
read -r ddir dmode < "$T/where" 2>/dev/null || ddir=
check_grep "deploy: ran from a mktemp directory of mode 700" '^'"$T"'/rtmp/flamekit\.[A-Za-z0-9]{6} 700$' "$ddir ${dmode:-}"
if [ -n "$ddir" ] && [ ! -e "$ddir" ]; then pass "deploy: temporary directory removed"; else fail "deploy: temporary directory removed" "$ddir still there"; fi
check_grep "deploy: progress says the binary was copied" "^h1: flamekit copied \($(stat -c %s "$FAKE") bytes\)" "$(cat "$T/err")"
# The real binary deploys too (its answer proves it ran on the far side).
fresh
"$FLAMEKIT" remote --status lines --deploy -o "$T/out" h1 -- no-such-command >/dev/null 2>"$T/err"; rc=$?
check_eq "deploy of this binary: unknown capture command fails" 1 "$rc"
check_grep "deploy of this binary: its own error comes back verbatim" "^h1: flamekit: 'no-such-command' is not a flamekit command" "$(cat "$T/err")"
check_eq "deploy of this binary: no local files" 0 "$(nfiles)"
check_eq "deploy: no flamekit.* temporaries left on the host" "" "$(ls -A "$T/rtmp")"

# The portable build ('make flamekit-portable'), when built: few runtime needs.
if [ -x "$FK_BUILD/flamekit-portable" ]; then
    # Direct needs (NEEDED entries); libcurl4's own dependencies come with it.
    extra=$(readelf -d "$FK_BUILD/flamekit-portable" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' |
        grep -vE '^(linux-vdso\.so|/lib64/ld-linux|libc\.so|libm\.so|libasan\.so|libubsan\.so|libstdc\+\+\.so|libgcc_s\.so)')
    check_eq "flamekit-portable needs only libc and libm (upload and serve load their libraries)" "" "$extra"
    fresh
    if [ -n "$HAVE_REAL" ]; then
        "$FLAMEKIT" remote --status lines --deploy-binary "$FK_BUILD/flamekit-portable" -o "$T/out" h1 -- run -- "$FK_BUILD/test/progs/remote-spin" 500 >/dev/null 2>"$T/err"
        check_grep "flamekit-portable deploys and captures" 'remote_spin_hot' "$(zcat "$T"/out/*.folded.gz 2>&1)"
    else
        "$FLAMEKIT" remote --status lines --deploy-binary "$FK_BUILD/flamekit-portable" -o "$T/out" h1 -- no-such-command >/dev/null 2>"$T/err"
        check_grep "flamekit-portable deploys and runs" "^h1: flamekit: 'no-such-command' is not a flamekit command" "$(cat "$T/err")"
    fi
else
    skip "flamekit-portable deploy" "not built (make flamekit-portable)"
fi

# 3. Two hosts in parallel: each workload waits to see the other's start.
# Run one after the other, the first would wait out its 20 s and not see
# the second; in parallel both go on at once. (The two starts can be a
# second or more apart on a loaded host, ssh's and the capture's own start:
# the stand-in lets the workload run up to 30 s, not its usual 1 s.)
fresh
rm -f "$T"/start.* "$T"/saw.*
wl="touch $T/start.\$\$; i=0; while [ \$(ls $T | grep -c '^start\.') -lt 2 ] && [ \$i -lt 2000 ]; do sleep 0.01; i=\$((i+1)); done; [ \$(ls $T | grep -c '^start\.') -ge 2 ] && touch $T/saw.\$\$"
"$FLAMEKIT" remote --status lines --remote-path "$FAKE" -o "$T/out" h1 h2 -- run --wait 30 -- sh -c "$wl" >/dev/null 2>"$T/err"; rc=$?
check_eq "two hosts: exit 0" 0 "$rc"
check_eq "two hosts: six files (same machine: one set prefixed with its alias)" 6 "$(nfiles)"
fresh
"$FLAMEKIT" remote --status lines --remote-path "$FAKE" -o "$T/out" h1 h2 -- run --fixed-time -- true >/dev/null 2>&1
check_eq "two hosts, same file names: the later host's set gets its alias as prefix" 3 "$(ls "$T/out" | grep -cE '^h[12]\.')"
check_eq "two hosts, same file names: six files" 6 "$(nfiles)"
check_eq "two hosts ran at the same time (each saw the other start)" 2 "$(ls "$T" | grep -c '^saw\.')"
check_grep "two hosts: summary" '^2 of 2 hosts succeeded$' "$(cat "$T/err")"

# 4. ssh failures: one clear line naming the host, exit 1, nothing written.
fresh
out=$("$FLAMEKIT" remote --status lines --remote-path "$FAKE" -o "$T/out" hclosed -- pid 1 2>&1); rc=$?
check_eq "connection refused exits 1" 1 "$rc"
check_grep "connection refused: host and ssh's reason" '^hclosed: FAILED: ssh failed \(exit 255\): .*Connection refused' "$out"
out=$("$FLAMEKIT" remote --status lines --remote-path "$FAKE" -o "$T/out" hauth -- pid 1 2>&1); rc=$?
check_eq "auth failure exits 1" 1 "$rc"
check_grep "auth failure: host and ssh's reason" '^hauth: FAILED: ssh failed \(exit 255\): .*Permission denied' "$out"
out=$("$FLAMEKIT" remote --status lines -o "$T/out" h1 -- pid 1 2>&1); rc=$?
check_grep "flamekit missing remotely: says how to fix it" '^h1: FAILED: flamekit not found on the host.*--deploy' "$out"
check_eq "ssh failures leave no files" 0 "$(nfiles)"
# one bad host does not spoil the good one
out=$("$FLAMEKIT" remote --status lines --remote-path "$FAKE" -o "$T/out" hclosed h1 -- run -- true 2>&1); rc=$?
check_eq "one of two hosts fails: exit 1" 1 "$rc"
check_grep "one of two hosts fails: summary" '1 of 2 hosts succeeded' "$out"
check_eq "one of two hosts fails: the good host's files land" 3 "$(nfiles)"

# 5. Remote capture failure: its message verbatim with the host; no files.
fresh
out=$("$FLAMEKIT" remote --status lines --remote-path "$FAKE" -o "$T/out" h1 -- pid 999999999 2>&1); rc=$?
check_eq "nonexistent PID exits 1" 1 "$rc"
check_grep "nonexistent PID: remote error verbatim with the host" "^h1: flamekit pid: no process with PID 999999999; check it with 'ps -p 999999999'$" "$out"
check_grep "nonexistent PID: summary" '^h1: FAILED: remote capture failed \(status 1\): flamekit pid: no process' "$out"
check_eq "nonexistent PID: no local files" 0 "$(nfiles)"

out=$("$FLAMEKIT" remote --status lines --remote-path "$FAKE" -o "$T/out" h1 -- evil 2>&1)
check_grep "remote text: control characters are neutralised (C0, C1, invalid UTF-8)" '^h1: flamekit evil: bad\?\[2J\?2J\?thing é$' "$out"
if printf '%s' "$out" | LC_ALL=C grep -q $'\xc2[\x80-\x9f]\|\x9b'; then fail "remote text: no C1 control reaches the terminal"; else pass "remote text: no C1 control reaches the terminal"; fi
if printf '%s' "$out" | grep -q $'\033'; then fail "remote text: no escape byte reaches the terminal"; else pass "remote text: no escape byte reaches the terminal"; fi

# 6. Stream cut mid-file (remote process killed), and a corrupted stream.
fresh
"$FLAMEKIT" remote --status lines --remote-path "$FAKE" -o "$T/out" h1 -- slow "$T/slow.pid" >/dev/null 2>"$T/err" &
rpid=$!
for _ in $(seq 100); do [ -n "$(find "$T/out" -name '.s.*slow*fkpart*' -size +0 2>/dev/null)" ] && break; sleep 0.05; done
check_grep "stream cut: partial data sits in a hidden temporary" 'fkpart' "$(ls -A "$T/out")"
kill "$(cat "$T/slow.pid")" 2>/dev/null
wait $rpid; rc=$?
check_eq "stream cut exits 1" 1 "$rc"
check_grep "stream cut: clear error with the host" '^h1: FAILED: stream cut in the middle of a file \(s.20261202_000000_UTC.slow.json: 1000 of 1048576 bytes\)' "$(cat "$T/err")"
check_eq "stream cut: no file left (not even a temporary)" 0 "$(nfiles)"
out=$("$FLAMEKIT" remote --status lines --remote-path "$FAKE" -o "$T/out" h1 -- garble 2>&1); rc=$?
check_eq "corrupted stream exits 1" 1 "$rc"
check_grep "corrupted stream: checksum error" '^h1: FAILED: checksum mismatch' "$out"
check_eq "corrupted stream: no files" 0 "$(nfiles)"

# 6d. A hostile remote plants a file no capture writes (a Makefile beside a
# real result name, valid stream, status 0): the whole stream is refused.
for planted in Makefile .bashrc 'x.20261202_000000_UTC.s.json.sh'; do
    fresh
    out=$(timeout 60 "$FLAMEKIT" remote --status lines --remote-path "$FAKE" -o "$T/out" h1 -- plant "$planted" 2>&1); rc=$?
    check_eq "planted $planted: exit 1" 1 "$rc"
    check_grep "planted $planted: named as not a result file" '^h1: FAILED: not a flamekit result file name' "$out"
    check_eq "planted $planted: nothing written" 0 "$(nfiles)"
done

# 6e. An output directory another user owns, or world-writable without the
# sticky bit, is refused before anything runs.
fresh
chmod 0777 "$T/out"
out=$(timeout 60 "$FLAMEKIT" remote --status lines --remote-path "$FAKE" -o "$T/out" h1 -- run -- true 2>&1); rc=$?
check_eq "world-writable -o DIR: exit 1" 1 "$rc"
check_grep "world-writable -o DIR: says why and the fix" 'refusing output directory .*world writable without the sticky bit.*chmod go-w' "$out"
check_eq "world-writable -o DIR: nothing written" 0 "$(nfiles)"
chmod 0755 "$T/out"
chown nobody "$T/out"
out=$(timeout 60 "$FLAMEKIT" remote --status lines --remote-path "$FAKE" -o "$T/out" h1 -- run -- true 2>&1); rc=$?
check_eq "foreign-owned -o DIR: exit 1" 1 "$rc"
check_grep "foreign-owned -o DIR: says why" "refusing output directory .*owned by uid $(id -u nobody)" "$out"
check_eq "foreign-owned -o DIR: nothing written" 0 "$(nfiles)"
chown root "$T/out"

# 6a. The connection itself cut mid-file (the sshd session process killed).
fresh
rm -f "$T/slow.pid"
"$FLAMEKIT" remote --status lines --remote-path "$FAKE" -o "$T/out" h1 -- slow "$T/slow.pid" >/dev/null 2>"$T/err" &
rpid=$!
for _ in $(seq 100); do [ -n "$(find "$T/out" -name '.s.*slow*fkpart*' -size +0 2>/dev/null)" ] && break; sleep 0.05; done
spid=$(cat "$T/slow.pid" 2>/dev/null)
sess=$(pgrep -P "$SSHD_PID_a" | head -1)
[ -n "$sess" ] && kill -KILL "$sess"
wait $rpid; rc=$?
check_eq "connection cut exits 1" 1 "$rc"
check_grep "connection cut: clear error with the host" '^h1: FAILED: stream cut in the middle of a file' "$(cat "$T/err")"
check_eq "connection cut: no file left" 0 "$(nfiles)"
for _ in $(seq 60); do kill -0 "$spid" 2>/dev/null || break; sleep 0.05; done
if [ -n "$spid" ] && ! kill -0 "$spid" 2>/dev/null; then pass "connection cut: remote capture stopped"; else fail "connection cut: remote capture stopped" "pid $spid alive"; kill "$spid" 2>/dev/null; fi

# 6b. Ctrl-C locally stops the remote capture too (no orphan), removes temporaries.
rm -f "$T/slow.pid"
"$FLAMEKIT" remote --status lines --remote-path "$FAKE" -o "$T/out" h1 -- slow "$T/slow.pid" >/dev/null 2>"$T/err" &
rpid=$!
for _ in $(seq 100); do [ -n "$(find "$T/out" -name '.s.*slow*fkpart*' -size +0 2>/dev/null)" ] && break; sleep 0.05; done
spid=$(cat "$T/slow.pid" 2>/dev/null)
kill -INT $rpid
wait $rpid; rc=$?
check_eq "interrupted: exit 130" 130 "$rc"
check_eq "interrupted: no files left" 0 "$(nfiles)"
for _ in $(seq 60); do kill -0 "$spid" 2>/dev/null || break; sleep 0.05; done
if [ -n "$spid" ] && ! kill -0 "$spid" 2>/dev/null; then pass "interrupted: remote capture stopped"; else fail "interrupted: remote capture stopped" "pid $spid alive"; kill "$spid" 2>/dev/null; fi

# 6c. Interrupted --deploy: the capture stops and the deployed copy is removed.
fresh
rm -f "$T/slow.pid"
"$FLAMEKIT" remote --status lines --deploy-binary "$FAKE" -o "$T/out" h1 -- slow "$T/slow.pid" >/dev/null 2>"$T/err" &
rpid=$!
for _ in $(seq 100); do [ -n "$(find "$T/out" -name '.s.*slow*fkpart*' -size +0 2>/dev/null)" ] && break; sleep 0.05; done
spid=$(cat "$T/slow.pid" 2>/dev/null)
sdir=$(dirname "$(readlink "/proc/$spid/exe" 2>/dev/null)" 2>/dev/null)
check_grep "interrupted deploy: capture ran from the deployed copy" '^'"$T"'/rtmp/flamekit\.' "$sdir"
kill -INT $rpid
wait $rpid
for _ in $(seq 60); do [ -e "$sdir" ] || break; sleep 0.05; done
if [ -n "$sdir" ] && [ ! -e "$sdir" ]; then pass "interrupted deploy: deployed copy removed"; else fail "interrupted deploy: deployed copy removed" "$sdir"; fi
kill "$spid" 2>/dev/null
check_eq "interrupted deploy: no files" 0 "$(nfiles)"

# 7. Unknown host key with StrictHostKeyChecking yes: refused, nothing runs.
fresh
rm -f "$T/where"
out=$("$FLAMEKIT" remote --status lines --remote-path "$FAKE" -o "$T/out" hunknown -- run --where "$T/where" -- true 2>&1); rc=$?
check_eq "unknown host key exits 1" 1 "$rc"
check_grep "unknown host key: ssh's verdict with the host" '^hunknown: FAILED: ssh failed \(exit 255\): Host key verification failed' "$out"
if [ ! -e "$T/where" ]; then pass "unknown host key: no capture ran"; else fail "unknown host key: no capture ran"; fi
check_eq "unknown host key: no files" 0 "$(nfiles)"
out=$("$FLAMEKIT" remote --status lines --remote-path "$FAKE" -o "$T/out" hunknown_default -- run --where "$T/where" -- true 2>&1); rc=$?
check_eq "unknown host key, ssh's default checking (batch mode): exits 1" 1 "$rc"
check_grep "unknown host key, default checking: ssh's verdict" '^hunknown_default: FAILED: ssh failed \(exit 255\): Host key verification failed' "$out"
if [ ! -e "$T/where" ]; then pass "unknown host key, default checking: no capture ran"; else fail "unknown host key, default checking: no capture ran"; fi
check_eq "unknown host key: known_hosts left alone (no key accepted for us)" 0 "$(wc -c < "$T/empty_known_hosts")"

# 8. --open hands the SVG to xdg-open; --sudo; usage errors.
fresh
mkdir -p "$T/bin"
printf '#!/bin/sh\necho "$1" > %s/opened\n' "$T" > "$T/bin/xdg-open"
chmod +x "$T/bin/xdg-open"
PATH="$T/bin:$PATH" "$FLAMEKIT" remote --status lines --open --remote-path "$FAKE" -o "$T/out" h1 -- run -- true >/dev/null 2>&1
for _ in $(seq 40); do [ -s "$T/opened" ] && break; sleep 0.05; done
check_grep "--open passes the local SVG to xdg-open" "^$T/out/.*\.flamegraph\.svg$" "$T/opened"
if need sudo; then
    fresh
    check "--sudo runs the remote flamekit through sudo -n" "$FLAMEKIT" remote --status lines --sudo --remote-path "$FAKE" -o "$T/out" h1 -- run -- true
    fresh
    check "--sudo --deploy runs the deployed copy through sudo -n" "$FLAMEKIT" remote --status lines --sudo --deploy-binary "$FAKE" -o "$T/out" h1 -- run -- true
fi
out=$("$FLAMEKIT" remote h1 pid 1 2>&1); rc=$?
check_eq "missing -- is a usage error" 2 "$rc"
check_grep "missing --: says what to add" "missing '--'" "$out"
out=$("$FLAMEKIT" remote h1 -- pid 1 --stdout 2>&1); rc=$?
check_eq "--stdout in capture args is refused" 2 "$rc"
out=$("$FLAMEKIT" remote --bogus h1 -- pid 1 2>&1); rc=$?
check_eq "unknown option exits 2" 2 "$rc"
