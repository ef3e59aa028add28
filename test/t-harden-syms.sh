#!/usr/bin/env bash
# Symbol tables a profiled process plants for flamekit (root) to read:
# crafted executables (test/progs/symbomb) run as nobody, whose thousands
# of symbols name one 1 MiB string, or each a different suffix of it, or
# sit in a few KiB of xz (.gnu_debugdata) that decompress to megabytes.
# Before interning, name caps and budgets, 600 symbols took a 32M capture
# to 750 MB and stopped it early; 5,000 ran it out of memory (no files).
# Each capture must run its whole duration within --max-memory, the files
# over their budget skipped and counted, serve must outlive the request.
# timeout: 200
. "$(dirname "$0")/lib.sh"
GEN=$FK_BUILD/test/progs/symbomb

[ "$(id -u)" = 0 ] || { skip "crafted symbol tables" "needs root (captures, nobody)"; exit 0; }
need setpriv || { skip "crafted symbol tables" "setpriv not installed"; exit 0; }
# outside $T (0700): nobody runs them
D=/dev/shm/fk-harden-syms.$$
mkdir -m 755 "$D" && fk_cleanup "rm -rf '$D'"
"$GEN" "$D/same600" 600 1048576 same &&
    "$GEN" "$D/same5000" 5000 1048576 same &&
    "$GEN" "$D/suffix5000" 5000 1048576 suffix &&
    "$GEN" "$D/xz5000" 5000 1048576 same debugdata || { fail "symbomb wrote the crafted files"; exit 0; }
check_range "the xz file is small (bytes)" "$(stat -c %s "$D/xz5000")" 1 65536

json() {    # json FILE KEY.KEY...: one value of the metadata
    python3 -c 'import json,sys
v = json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."): v = v[k]
print(v)' "$1" "$2" 2>/dev/null
}
# bomb NAME: start $D/NAME as nobody, its pid in $BOMB
bomb() {
    setpriv --reuid=nobody --regid=nogroup --clear-groups "$D/$1" &
    BOMB=$!
    fk_cleanup "kill $BOMB 2>/dev/null"
    sleep 0.3
}
# under a 3 GB address-space limit (the old code asked for 4 GiB at once);
# a sanitizer build reserves terabytes of shadow: its RSS is the bound
# (and its runtime, shadow and quarantine, adds 70-130 MB of RSS here)
vlimit=3000000 rss_max=131072
sanitized && vlimit=unlimited rss_max=262144
# capture NAME ARGS...: flamekit ARGS under that limit, its peak RSS in
# $rss (KiB), exit code in $rc, metadata in $J, folded stacks in $FOLDED
capture() {
    local n=$1; shift
    ( ulimit -v $vlimit
      exec timeout -k 5 40 /usr/bin/time -f 'maxrss_kb=%M' -o "$T/$n.time" \
        "$FLAMEKIT" "$@" --no-svg -o "$T/$n" ) >"$T/$n.log" 2>&1
    rc=$?
    rss=$(sed -n 's/^maxrss_kb=//p' "$T/$n.time" 2>/dev/null)
    J=$(ls "$T/$n"/*.json 2>/dev/null | head -n 1)
    FOLDED=$(ls "$T/$n"/*.folded.gz 2>/dev/null | head -n 1)
}
[ -x /usr/bin/time ] || { skip "crafted symbol tables" "/usr/bin/time not installed (apt-get install time)"; exit 0; }

# what every capture must show: its whole duration, within the limit
bounded() {    # bounded NAME SECS
    check_eq "$1: exits 0" 0 "$rc"
    check_eq "$1: runs its whole duration (stop reason)" duration "$(json "$J" stop_reason)"
    check_range "$1: memory counted within --max-memory 32M (bytes)" "$(json "$J" memory_peak_bytes)" 1 33554432
    # a 32M capture's RSS: 11 MB (pid), 23 MB (host) here; ASan 80-155 MB;
    # the old code 750 MB and more
    check_range "$1: peak RSS (KiB)" "${rss:-0}" 1 $rss_max
}

# 1. Many symbols naming one 1 MiB string: interned, cut to 4096 bytes, read
for n in same600 same5000; do
    bomb $n
    capture $n pid "$BOMB" -d 2 --max-memory 32M
    bounded "$n (pid -d 2)"
    check_eq "$n: nothing skipped (symbols.files_over_budget)" 0 "$(json "$J" symbols.files_over_budget)"
    [ -n "$FOLDED" ] && check_range "$n: its frames named from its table (share of samples)" \
        "$(share "$FOLDED" ';A+$')" 0.5 1
    [ -n "$FOLDED" ] && check_range "$n: longest frame name cut at 4096 bytes" \
        "$(zcat "$FOLDED" | awk '{ sub(/ [0-9]+$/, ""); n = split($0, f, ";"); for (i = 1; i <= n; i++) if (length(f[i]) > m) m = length(f[i]) } END { print m + 0 }')" 1 4096
    kill $BOMB 2>/dev/null; wait $BOMB 2>/dev/null
done

# 2. Distinct suffixes (5,000 x 4 KiB names) and an xz decompression bomb:
# over their budget, skipped, counted, said; the capture goes on
for n in suffix5000 xz5000; do
    bomb $n
    capture $n pid "$BOMB" -d 2 --max-memory 32M
    bounded "$n (pid -d 2)"
    check_eq "$n: skipped and counted (symbols.files_over_budget)" 1 "$(json "$J" symbols.files_over_budget)"
    check_grep "$n: a message says so" "symbols of $D/$n skipped: .*memory budget" "$T/$n.log"
    [ -n "$FOLDED" ] && check_range "$n: its frames named by file and address (share of samples)" \
        "$(share "$FOLDED" ";\\[$n\\+0x[0-9a-f]+\\]$")" 0.5 1
    kill $BOMB 2>/dev/null; wait $BOMB 2>/dev/null
done

# 3. A host-wide profile is not cut short by one user's file
bomb same5000
capture host host -d 1 --max-memory 32M
bounded "host -d 1 beside same5000"
kill $BOMB 2>/dev/null; wait $BOMB 2>/dev/null

# 4. serve answers a profile of such a process and keeps serving
need curl || { skip "serve and a crafted binary" "curl not installed"; exit 0; }
TOK=harden-syms-token-0123456789abcdef
printf 'sre:%s\n' "$TOK" >"$T/tokens" && chmod 600 "$T/tokens"
( ulimit -v $vlimit; exec "$FLAMEKIT" serve --listen 127.0.0.1:0 --token-file "$T/tokens" --max-seconds 5 ) 2>"$T/serve.log" &
SPID=$!
fk_cleanup "kill $SPID 2>/dev/null; wait $SPID 2>/dev/null"
PORT=
for _ in $(seq 1 50); do
    PORT=$(sed -n 's/.*listening on http:\/\/127\.0\.0\.1:\([0-9]*\)\/.*/\1/p' "$T/serve.log")
    [ -n "$PORT" ] && break
    sleep 0.1
done
if [ -z "$PORT" ]; then
    fail "serve started" "$(cat "$T/serve.log")"
else
    for n in suffix5000 same5000; do
        bomb $n
        code=$(curl -s -o "$T/serve-$n.out" -w '%{http_code}' --max-time 60 \
            -H "Authorization: Bearer $TOK" "http://127.0.0.1:$PORT/profile?seconds=2&target=pid:$BOMB")
        check_eq "serve: a profile of $n answers 200" 200 "$code"
        kill $BOMB 2>/dev/null; wait $BOMB 2>/dev/null
    done
    check "serve: still running after both" kill -0 $SPID
fi
