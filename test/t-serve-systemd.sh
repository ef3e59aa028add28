#!/usr/bin/env bash
# The shipped share/systemd/flamekit-serve.service under a real systemd as
# PID 1: a Debian 12 tree (test/servers/debian-tree.sh, built once and
# kept) booted with systemd-nspawn, the unit and the flamekit-portable
# binary bound in, the unit started at boot with a token file. A profile
# request through it must capture (the old unit denied perf_event_open
# with @debug and left no capabilities under SecureBits=noroot-locked),
# and systemd-analyze security rates the running unit.
# timeout: 1500
. "$(dirname "$0")/lib.sh"
UNIT=${FK_SERVE_UNIT:-$FK_SRC/share/systemd/flamekit-serve.service}
BIN=$FK_BUILD/flamekit-portable
TREE=${FK_DEBIAN_TREE:-/var/cache/flamekit-test/bookworm}

[ "$(id -u)" = 0 ] || { skip "serve under systemd" "needs root (systemd-nspawn)"; exit 0; }
need systemd-nspawn || { skip "serve under systemd" "systemd-nspawn not installed (apt-get install systemd-container)"; exit 0; }
need curl || { skip "serve under systemd" "curl not installed"; exit 0; }
[ -x "$BIN" ] || { skip "serve under systemd" "no $BIN (make flamekit-portable)"; exit 0; }
# the plain build's run covers the unit; a sanitized binary needs its
# runtime in the tree and outside the unit's system call filter
sanitized &&
    { skip "serve under systemd" "sanitizer build (the unit is tested with the plain build)"; exit 0; }
why=$("$FK_SRC/test/servers/debian-tree.sh" "$TREE" 2>&1); rc=$?
[ $rc = 77 ] && { skip "serve under systemd" "no Debian 12 tree to boot: $why"; exit 0; }
[ $rc = 0 ] || { fail "the Debian 12 tree for systemd-nspawn was built" "$why"; exit 0; }

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
PORT=
for _ in $(seq 1 100); do
    p=$((18000 + RANDOM % 1000))
    port_free $p && { PORT=$p; break; }
done
[ -n "$PORT" ] || { fail "a free port"; exit 0; }
TOK=systemd-unit-token-0123456789abcdef
mkdir -p "$T/etc" "$T/units"
printf 'sre:%s\n' "$TOK" >"$T/etc/tokens" && chmod 600 "$T/etc/tokens"
printf 'FLAMEKIT_SERVE_LISTEN=127.0.0.1:%s\nFLAMEKIT_SERVE_ARGS=--token-file /etc/flamekit/tokens --max-seconds 5\n' \
    "$PORT" >"$T/etc/serve.env"
# a workload to profile, and the security rating printed on the console
printf '[Service]\nExecStart=/usr/bin/sha256sum /dev/zero\n' >"$T/units/fk-spin.service"
printf '[Unit]\nAfter=flamekit-serve.service\n[Service]\nType=oneshot\nStandardOutput=journal+console\nExecStart=/usr/bin/systemd-analyze security --no-pager flamekit-serve.service\n' \
    >"$T/units/fk-analyze.service"
# ExecStart names "flamekit" (PATH lookup): /usr/local/bin as a package would
name=fk-$$
systemd-nspawn -q -b -D "$TREE" -M "$name" --volatile=overlay --register=no --keep-unit \
    --capability=CAP_PERFMON,CAP_SYSLOG,CAP_IPC_LOCK,CAP_SYS_PTRACE,CAP_SYS_RESOURCE,CAP_DAC_READ_SEARCH \
    --system-call-filter=perf_event_open \
    --bind-ro="$BIN:/usr/local/bin/flamekit" --bind-ro="$T/etc:/etc/flamekit" \
    --bind-ro="$UNIT:/etc/systemd/system/flamekit-serve.service" \
    --bind-ro="$T/units/fk-spin.service:/etc/systemd/system/fk-spin.service" \
    --bind-ro="$T/units/fk-analyze.service:/etc/systemd/system/fk-analyze.service" \
    systemd.wants=flamekit-serve.service systemd.wants=fk-spin.service systemd.wants=fk-analyze.service \
    </dev/null >"$T/console.log" 2>&1 &
NS=$!
fk_cleanup "kill $NS 2>/dev/null; for w in \$(seq 1 100); do kill -0 $NS 2>/dev/null || break; sleep 0.2; done; kill -9 $NS 2>/dev/null; wait $NS 2>/dev/null"
up=
for _ in $(seq 1 300); do
    kill -0 $NS 2>/dev/null || break
    grep -q 'listening on http://127.0.0.1' "$T/console.log" 2>/dev/null && { up=1; break; }
    c=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$PORT/favicon.ico" 2>/dev/null)
    [ "$c" = 404 ] && { up=1; break; }
    sleep 0.2
done
if [ -z "$up" ]; then
    fail "flamekit-serve.service came up under systemd-nspawn" "$(tail -n 20 "$T/console.log")"
    exit 0
fi
pass "flamekit-serve.service came up under systemd as PID 1"
code=$(curl -s -o "$T/p.folded" -w '%{http_code}' --compressed --max-time 60 \
    -H "Authorization: Bearer $TOK" "http://127.0.0.1:$PORT/profile?target=host&seconds=4&format=folded")
check_eq "a profile request through the unit: 200" 200 "$code"
check_grep "... a capture of the workload in the container (sha256sum stacks)" '^sha256sum;' "$T/p.folded"
check_grep "... with kernel symbols (kallsyms readable under the sandbox)" '_\[k\]' "$T/p.folded"
n=$(awk '$1 ~ /^sha256sum;/ { s += $NF } END { print s + 0 }' "$T/p.folded")
check_range "... its samples (4 s at 99 Hz on one CPU, less when the host is loaded)" "$n" 40 800
# the score of the running unit, as systemd-analyze prints it there
for _ in $(seq 1 100); do grep -q 'Overall exposure level' "$T/console.log" && break; sleep 0.2; done
score=$(sed -n 's/.*Overall exposure level for flamekit-serve.service: \([0-9.]*\).*/\1/p' "$T/console.log" | head -n 1)
check_range "systemd-analyze security rates the running unit (exposure, lower is safer)" "${score:-99}" 0 3.5
echo "systemd-analyze security flamekit-serve.service: ${score:-none}"
