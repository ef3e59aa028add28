#!/usr/bin/env bash
# flamekit serve under slow and hostile clients on 127.0.0.1: connections
# that send one header line every 0.5 s from several loopback addresses
# (they held every slot: a token holder from 127.0.0.9 waited 20 s and
# more), a request that never completes (the idle timeout never fired),
# and methods carrying terminal escapes into the audit log before
# authentication.
# timeout: 150
. "$(dirname "$0")/lib.sh"
need python3 || { skip "serve under slow clients" "python3 not installed"; exit 0; }
need curl || { skip "serve under slow clients" "curl not installed"; exit 0; }
TOK=harden-serve-token-0123456789abcdef
printf 'sre:%s\n' "$TOK" >"$T/tokens" && chmod 600 "$T/tokens"

serve() {   # serve NAME ARGS...: PORT, LOG
    LOG=$T/$1.log; shift
    "$FLAMEKIT" serve --listen 127.0.0.1:0 --token-file "$T/tokens" "$@" 2>"$LOG" &
    local pid=$!
    fk_cleanup "kill $pid 2>/dev/null; wait $pid 2>/dev/null"
    PORT=
    for _ in $(seq 1 50); do
        PORT=$(sed -n 's/.*listening on http:\/\/127\.0\.0\.1:\([0-9]*\)\/.*/\1/p' "$LOG")
        [ -n "$PORT" ] && return 0
        sleep 0.1
    done
    fail "serve $1 started" "$(cat "$LOG")"
    return 1
}

# slow PORT NADDR PERADDR SECONDS: NADDR*PERADDR connections from
# 127.0.0.1..NADDR, each sending a request line and then one header line
# every 0.5 s for SECONDS; meanwhile, after 2 s, a token holder asks for /
# from 127.0.0.9. Prints "served SECS" (its wait, or "served none") and
# "open N" (slow connections the server had not closed after SECONDS).
slow() {
    python3 - "$@" "$TOK" <<'PY'
import socket, sys, threading, time
port, naddr, per, secs, tok = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
conns = []
for a in range(1, naddr + 1):
    for _ in range(per):
        s = socket.socket()
        s.bind(("127.0.0.%d" % a, 0))
        s.settimeout(2)
        try:
            s.connect(("127.0.0.1", port))
            s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")
            conns.append(s)
        except OSError:
            s.close()
alive = set(range(len(conns)))
result = {}
def legit():
    time.sleep(2)
    t0 = time.time()
    s = socket.socket()
    s.bind(("127.0.0.9", 0))
    s.settimeout(secs + 10)
    try:
        s.connect(("127.0.0.1", port))
        s.sendall(("GET / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nConnection: close\r\n\r\n" % tok).encode())
        data = s.recv(64)
        if data.startswith(b"HTTP/1.1 200"):
            result["served"] = time.time() - t0
    except OSError:
        pass
    s.close()
th = threading.Thread(target=legit)
th.start()
t_end = time.time() + secs
i = 0
while time.time() < t_end:
    time.sleep(0.5)
    i += 1
    for k in list(alive):
        try:
            conns[k].sendall(b"X-Slow-%d: %d\r\n" % (i, i))
        except OSError:
            alive.discard(k)
th.join()
print("served %s" % ("%.1f" % result["served"] if "served" in result else "none"))
print("open %d" % len(alive))
PY
}

# 1. 64 slow connections from 4 addresses (the review's attack): the
# per-address limit (8) leaves slots; a token holder is served at once
serve slow4 --timeout 15 || exit 0
out=$(slow "$PORT" 4 16 6)
w=$(sed -n 's/^served //p' <<<"$out")
check_range "64 slow-header connections from 4 addresses: a token holder is served (s)" "${w/none/99}" 0 3
# 2. 128 from 16 addresses, past every limit: the oldest still-arriving
# requests are closed to keep slots free
out=$(slow "$PORT" 16 8 6)
w=$(sed -n 's/^served //p' <<<"$out")
check_range "128 slow-header connections from 16 addresses: a token holder is served (s)" "${w/none/99}" 0 3
check_grep "closing them is logged" 'closed: the oldest of too many requests' "$LOG"

# 3. The whole request within --timeout of accept, however slowly it trickles
serve deadline --timeout 3 || exit 0
out=$(slow "$PORT" 2 4 6)
check_eq "requests trickling past --timeout 3: all 8 closed by 6 s" "open 0" "$(grep '^open' <<<"$out")"
check_grep "... and logged" 'closed: request not complete within 3 s' "$LOG"

# 4. The audit log: a method with terminal escapes, C1 bytes, a tab and a
# bare CR, answered before authentication, is logged as a placeholder
serve audit || exit 0
python3 - "$PORT" <<'PY'
import socket, sys
for m in [b"\x1b]0;pwned\x07GET", b"G\x1b[31mET", b"PO\xc2\x9bST", b"GE\tT", b"DE\rLETE", b"PROPFIND"]:
    s = socket.socket()
    s.settimeout(5)
    s.connect(("127.0.0.1", int(sys.argv[1])))
    s.sendall(m + b" /x\x1b[2J HTTP/1.1\r\nHost: x\r\n\r\n")
    try:
        s.recv(4096)
    except OSError:
        pass
    s.close()
PY
sleep 0.3
bad=$(LC_ALL=C tr -d '\n -~' <"$LOG" | wc -c)
check_eq "audit log: no control, escape or C1 byte from the clients (bytes)" 0 "$bad"
check_grep "audit log: unknown methods logged as a placeholder" 'audit .* \(other-method\) /x' "$LOG"
check_nogrep "audit log: no method text of theirs" 'pwned|PROPFIND' "$LOG"
