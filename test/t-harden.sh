#!/usr/bin/env bash
# Issue 12, what a hostile user or profiled process can plant: a FIFO,
# symlink or device at -o (svg, collapse, merge, diff, fetchd --port-file),
# a foreign or world-writable -o DIR, a function named "f 1000000000"
# (svg, merge and collapse must agree on its counts), C1 controls in a
# summary, http://127.attacker.example, secrets on a command line.
# timeout: 300
. "$(dirname "$0")/lib.sh"

# ---- 1. output paths ---------------------------------------------------
printf 'main;a 3\nmain;b 1\n' >"$T/in.folded"
printf 'p 1 1.0: 1 cpu-clock:\n\t1 a (/x)\n\t2 main (/x)\n\n' >"$T/in.perf"
# writer NAME OUT: the command NAME writing to OUT (a hang is exit 124)
writer() {
    local F=(timeout 20 "$FLAMEKIT")
    case $1 in
    svg) "${F[@]}" svg -o "$2" "$T/in.folded" ;;
    diff) "${F[@]}" diff -o "$2" "$T/in.folded" "$T/in.folded" ;;
    collapse) "${F[@]}" collapse -o "$2" "$T/in.perf" ;;
    merge) "${F[@]}" merge -o "$2" "$T/in.folded" ;;
    merge-svg) "${F[@]}" merge --svg "$2" -o "$T/merged.folded" "$T/in.folded" ;;
    esac
}
for w in svg diff collapse merge merge-svg; do
    # another user's FIFO: refused at once (no reader needed, so no hang)
    mkfifo "$T/fifo"
    out=$(writer "$w" "$T/fifo" 2>&1); rc=$?
    if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$rc" -lt 128 ]; then pass "$w: FIFO at -o refused (exit $rc, no hang)"; else fail "$w: FIFO at -o refused (exit $rc, no hang)" "$out"; fi
    check_grep "$w: FIFO at -o: one line naming the fix" "refusing to write $T/fifo: it is a FIFO, not a regular file; remove it or choose another output path" "$out"
    if [ -p "$T/fifo" ]; then pass "$w: the FIFO is left a FIFO"; else fail "$w: the FIFO is left a FIFO"; fi
    check_eq "$w: no temporary left beside it" "" "$(ls "$T" | grep '^fifo\.tmp\.')"
    rm -f "$T/fifo"

    # a symlink at -o: replaced by a regular file, its target untouched
    echo precious >"$T/target"
    ln -sfn "$T/target" "$T/link"
    check "$w: symlink at -o: written" writer "$w" "$T/link"
    if [ -f "$T/link" ] && [ ! -L "$T/link" ] && [ -s "$T/link" ]; then pass "$w: the symlink is replaced by a regular file"; else fail "$w: the symlink is replaced by a regular file" "$(ls -l "$T/link")"; fi
    check_eq "$w: the symlink's target is untouched" precious "$(cat "$T/target")"
    # a symlink to a device: the link goes, the device stays
    ln -sfn /dev/zero "$T/link"
    check "$w: symlink to /dev/zero at -o: written" writer "$w" "$T/link"
    if [ -f "$T/link" ] && [ ! -L "$T/link" ] && [ -c /dev/zero ]; then pass "$w: symlink to a device replaced, device kept"; else fail "$w: symlink to a device replaced, device kept"; fi
    rm -f "$T/link" "$T/target"

    # /dev/null is written in place and stays the null device
    check "$w: -o /dev/null works" writer "$w" /dev/null
    if [ -c /dev/null ] && [ "$(stat -c %t:%T /dev/null)" = 1:3 ]; then pass "$w: /dev/null is still the null device"; else fail "$w: /dev/null is still the null device" "$(ls -l /dev/null)"; fi
done
# another device node (root can make one anywhere): refused, never renamed over
if mknod "$T/zero" c 1 5 2>/dev/null; then
    out=$("$FLAMEKIT" svg -o "$T/zero" "$T/in.folded" 2>&1); rc=$?
    check_eq "a device at -o: exit 1" 1 "$rc"
    check_grep "a device at -o: says it is a device" "refusing to write $T/zero: it is a device" "$out"
    if [ -c "$T/zero" ]; then pass "a device at -o: the device node stays"; else fail "a device at -o: the device node stays"; fi
else
    skip "a device at -o" "mknod not permitted"
fi
# a socket at -o
if need python3; then
    python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' "$T/sock"
    out=$("$FLAMEKIT" collapse -o "$T/sock" "$T/in.perf" 2>&1); rc=$?
    check_eq "a socket at -o: exit 1" 1 "$rc"
    if [ -S "$T/sock" ]; then pass "a socket at -o: left alone"; else fail "a socket at -o: left alone"; fi
fi
# fetchd --port-file: the same helper
if [ -x "$FK_BUILD/fetchd-sock" ]; then
    mkdir -p "$T/repos"
    mkfifo "$T/port.fifo"
    timeout 10 "$FK_BUILD/fetchd-sock" --repo-root "$T/repos" --port-file "$T/port.fifo" >/dev/null 2>"$T/fetchd.err"; rc=$?
    if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ]; then pass "fetchd-sock --port-file FIFO refused (exit $rc)"; else fail "fetchd-sock --port-file FIFO refused (exit $rc)" "$(cat "$T/fetchd.err")"; fi
    if [ -p "$T/port.fifo" ]; then pass "fetchd-sock: the FIFO is left a FIFO"; else fail "fetchd-sock: the FIFO is left a FIFO"; fi
fi

# an existing -o DIR another user owns, or world writable without the
# sticky bit: refused before the capture
mkdir -p "$T/foreign" "$T/open"
chown nobody "$T/foreign"
chmod 0777 "$T/open"
out=$(timeout 30 "$FLAMEKIT" run -q -o "$T/foreign" -- true 2>&1); rc=$?
if [ "$rc" -ne 0 ]; then pass "foreign-owned -o DIR refused (exit $rc)"; else fail "foreign-owned -o DIR refused"; fi
check_grep "foreign-owned -o DIR: says whose it is" "refusing output directory $T/foreign: it is owned by uid $(id -u nobody)" "$out"
check_eq "foreign-owned -o DIR: nothing written" "" "$(ls -A "$T/foreign")"
out=$(timeout 30 "$FLAMEKIT" run -q -o "$T/open" -- true 2>&1); rc=$?
if [ "$rc" -ne 0 ]; then pass "world-writable -o DIR refused (exit $rc)"; else fail "world-writable -o DIR refused"; fi
check_grep "world-writable -o DIR: names the fix" "world writable without the sticky bit.*chmod go-w" "$out"
check_eq "world-writable -o DIR: nothing written" "" "$(ls -A "$T/open")"
chmod 1777 "$T/open"
out=$(timeout 30 "$FLAMEKIT" run -q -o "$T/open" -- true 2>&1); rc=$?
check_eq "sticky world-writable -o DIR (like /tmp) is fine" 0 "$rc"
# no -o: the new directory goes into the working directory, which must not
# let others rename it away (world writable without the sticky bit)
mkdir -m 0777 "$T/cwd-open"
chmod 0777 "$T/cwd-open"
out=$(cd "$T/cwd-open" && timeout 30 "$FLAMEKIT" run -q -- true 2>&1); rc=$?
if [ "$rc" -ne 0 ]; then pass "no -o in a world-writable directory: refused (exit $rc)"; else fail "no -o in a world-writable directory: refused"; fi
check_grep "no -o in a world-writable directory: names the fix" 'refusing output directory \.: .*sticky bit.*choose another with -o' "$out"
check_eq "no -o in a world-writable directory: nothing written" "" "$(ls -A "$T/cwd-open")"
# in a sticky shared -o DIR anyone may plant a FIFO at the name a capture
# will write (the stamp is the start second): the capture fails, no hang
mkdir -m 1777 "$T/shared"
hw=$(hostname | sed 's/[^A-Za-z0-9._-]/_/g' | cut -c1-64)
now=$(date +%s)
for s in $(seq -2 8); do
    mkfifo "$T/shared/$hw.$(date -u -d "@$((now + s))" +%Y%m%d_%H%M%S)_UTC.run-true.folded.gz"
done
out=$(timeout 30 "$FLAMEKIT" run -q -o "$T/shared" -- true 2>&1); rc=$?
if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ]; then pass "FIFO planted at a capture's file name: refused (exit $rc, no hang)"; else fail "FIFO planted at a capture's file name: refused (exit $rc, no hang)" "$out"; fi
check_grep "FIFO planted at a capture's file name: says so" 'refusing to write .*run-true\.folded\.gz: it is a FIFO' "$out"
check_eq "FIFO planted at a capture's file name: only the FIFOs remain" "11 0" "$(find "$T/shared" -mindepth 1 -type p | wc -l) $(find "$T/shared" -mindepth 1 ! -type p | wc -l)"

# ---- 2. a function named "f 1000000000" ----------------------------------
# svgtotal SVG: the total count in the SVG's data block (first node record)
svgtotal() {
    local d names fulls
    d=$(xmllint --xpath "string(//*[local-name()='metadata'][@class='fk-data'])" "$1" 2>/dev/null)
    names=$(xmllint --xpath "string(//*[local-name()='metadata'][@class='fk-data']/@data-names)" "$1")
    fulls=$(xmllint --xpath "string(//*[local-name()='metadata'][@class='fk-data']/@data-fulls)" "$1")
    printf '%s\n' "$d" | sed -n "$((names + ${fulls:-0} + 2))p" | awk '
        BEGIN { D = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_" }
        { v = 0; k = 0
          for (i = 1; i <= length($0); i++) {
              x = index(D, substr($0, i, 1)) - 1
              if (x >= 32) { v = v * 32 + x - 32; continue }
              v = v * 32 + x; if (++k == 3) { print v; exit } v = 0 } }'
}
sumfolded() { "$FLAMEKIT" merge "$1" | awk '{ s += $NF } END { print s + 0 }'; }
need xmllint || { skip "folded names" "xmllint not found"; }
if need xmllint; then
    # folded text has no escapes (FlameGraph's format): the last number is the count everywhere
    printf 'main;f 1000000000 2\nmain;g 1\n' >"$T/evil.folded"
    "$FLAMEKIT" svg -o "$T/evil.svg" "$T/evil.folded"
    check_eq "other tool's folded: svg reads the last number (3, not 1000000001)" 3 "$(svgtotal "$T/evil.svg")"
    check_eq "other tool's folded: merge agrees" 3 "$(sumfolded "$T/evil.folded")"
    check_grep "other tool's folded: merge keeps the name as it is" '^main;f 1000000000 2$' "$("$FLAMEKIT" merge "$T/evil.folded")"
    # perf script input with such a function: collapse writes it as the Perl tool, all agree
    printf 'p 1 1.0: 1 cpu-clock:\n\t1 f 1000000000 (/x)\n\t2 main (/x)\n\np 1 1.1: 1 cpu-clock:\n\t1 f 1000000000 (/x)\n\t2 main (/x)\n\np 1 1.2: 1 cpu-clock:\n\t3 g (/x)\n\t2 main (/x)\n\n' >"$T/evil.perf"
    "$FLAMEKIT" collapse -o "$T/c.folded" "$T/evil.perf"
    check_eq "collapse keeps the name" 'p;main;f 1000000000 2' "$(grep '^p;main;f' "$T/c.folded")"
    "$FLAMEKIT" svg -o "$T/c.svg" "$T/c.folded"
    check_eq "collapse -> svg: 3 samples" 3 "$(svgtotal "$T/c.svg")"
    check_eq "collapse -> merge: 3 samples" 3 "$(sumfolded "$T/c.folded")"
    # a backslash in a middle frame, a frame ending in " DIGITS" mid-stack:
    # written as they are (no escapes in folded text)
    printf 'c 2 2.0: 1 cpu-clock:\n\t1 leaf (/x)\n\t2 C:\\w (/x)\n\t3 m 42 (/x)\n\nc 2 2.1: 1 cpu-clock:\n\t1 leaf (/x)\n\n' >"$T/esc.perf"
    check_eq "collapse: names as they are, in any position" 'c;leaf 1
c;m 42;C:\w;leaf 1' "$("$FLAMEKIT" collapse "$T/esc.perf")"
    "$FLAMEKIT" diff -o "$T/c-diff.svg" "$T/c.folded" "$T/c.folded"
    check "collapse -> diff (two files, one count each) draws" test -s "$T/c-diff.svg"
    # a real capture of a program whose function is named that way
    if need objcopy && [ -x "$FK_BUILD/test/progs/hot" ]; then
        objcopy --redefine-sym hot_three='evil 1000000000' "$FK_BUILD/test/progs/hot" "$T/hot-evil"
        timeout 60 "$FLAMEKIT" run -q -o "$T/cap" -- "$T/hot-evil" 1 >/dev/null 2>"$T/cap.err"
        fold=$(ls "$T"/cap/*.folded.gz 2>/dev/null | head -1)
        if [ -n "$fold" ]; then
            n=$(sed -n 's/^  "samples": \([0-9]*\),*$/\1/p' "${fold%.folded.gz}.json")
            check_grep "capture: the folded file keeps the name" ';evil 1000000000 [0-9]+$' "$(zcat "$fold")"
            check_eq "capture's own SVG counts the samples" "$n" "$(svgtotal "${fold%.folded.gz}.flamegraph.svg")"
            "$FLAMEKIT" svg -o "$T/cap.svg" "$fold"
            check_eq "flamekit svg of the capture's folded file: the same samples (not ~1e9)" "$n" "$(svgtotal "$T/cap.svg")"
            check_eq "flamekit merge of it: the same samples" "$n" "$(sumfolded "$fold")"
            "$FLAMEKIT" collapse --sample-type samples -o "$T/cap-pprof.folded" "${fold%.folded.gz}.pb.gz"
            check_eq "flamekit collapse of its pprof: the same samples" "$n" "$(sumfolded "$T/cap-pprof.folded")"
            check_grep "collapse of its pprof keeps the name too" ';evil 1000000000 [0-9]+$' "$T/cap-pprof.folded"
        else
            fail "capture of hot-evil" "$(cat "$T/cap.err")"
        fi
    else
        skip "capture with a function named 'evil 1000000000'" "objcopy or test/progs/hot missing"
    fi
fi

# ---- 3. terminal text: C1 controls and invalid UTF-8 in a summary --------
timeout 60 "$FLAMEKIT" run -d 2s -o "$T/c1" -- sh -c 'exit 0' $'x\xc2\x9b31mC1\x9bRAW\x1b[2JESC' >"$T/c1.err" 2>&1
check_grep "summary: the command line is shown, neutralised" 'command: sh -c exit 0 x\?31mC1\?RAW\?\[2JESC' "$T/c1.err"
if LC_ALL=C grep -q $'\xc2[\x80-\x9f]\|\x9b\|\x1b' "$T/c1.err"; then fail "summary: no C0/C1 control or invalid UTF-8 reaches the terminal" "$(cat -v "$T/c1.err")"; else pass "summary: no C0/C1 control or invalid UTF-8 reaches the terminal"; fi
# a symbol name (what any binary can carry) in the top frames
if need objcopy && [ -x "$FK_BUILD/test/progs/hot" ]; then
    objcopy --redefine-sym hot_three=$'c1\xc2\x9b[31mname\x1b]0;x\x07' "$FK_BUILD/test/progs/hot" "$T/hot-c1"
    timeout 60 "$FLAMEKIT" run -o "$T/c1b" -- "$T/hot-c1" 1 >"$T/c1b.err" 2>&1
    check_grep "summary: a symbol's name is shown, neutralised" '%  c1\?\[31mname\?\]0.x\?$' "$T/c1b.err"
    if LC_ALL=C grep -q $'\xc2[\x80-\x9f]\|\x1b\|\x07' "$T/c1b.err"; then fail "summary: no control from a symbol name reaches the terminal" "$(cat -v "$T/c1b.err")"; else pass "summary: no control from a symbol name reaches the terminal"; fi
fi

# ---- 4. --allow-http's loopback check: the parsed host ---------------------
echo data >"$T/up.txt"
for url in 'http://127.attacker.example/b/k?X-Amz-Signature=00' 'http://127.0.0.1.attacker.example:80/b/k?X-Amz-Signature=00' \
           'http://localhost.attacker.example/b/k?X-Amz-Signature=00'; do
    out=$(timeout 30 "$FLAMEKIT" upload --retries 0 --connect-timeout 2s "$T/up.txt" "$url" 2>&1); rc=$?
    host=${url#http://}; host=${host%%/*}
    check_eq "plain http to $host: exit 1" 1 "$rc"
    check_grep "plain http to $host: refused without --allow-http" "refusing plain http to $host: use https, or --allow-http" "$out"
done
out=$(AWS_ACCESS_KEY_ID=x AWS_SECRET_ACCESS_KEY=y timeout 30 "$FLAMEKIT" upload --retries 0 --endpoint http://127.attacker.example "$T/up.txt" s3://b/p/ 2>&1); rc=$?
check_grep "--endpoint http://127.attacker.example: refused" "refusing plain http to 127.attacker.example" "$out"
if need python3; then
    # a PUT server on 127.0.0.1: plain http there needs no --allow-http
    python3 -c '
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_PUT(s):
        s.rfile.read(int(s.headers.get("Content-Length", 0)))
        s.send_response(200); s.send_header("ETag", "\"e\""); s.send_header("Content-Length", "0"); s.end_headers()
    def log_message(s, *a): pass
srv = http.server.HTTPServer(("127.0.0.1", 0), H)
print(srv.server_port, flush=True)
srv.serve_forever()' >"$T/put.port" 2>/dev/null &
    putpid=$!
    fk_cleanup "kill $putpid 2>/dev/null"
    for _ in $(seq 100); do [ -s "$T/put.port" ] && break; sleep 0.05; done
    port=$(head -1 "$T/put.port")
    out=$(timeout 30 "$FLAMEKIT" upload --retries 0 "$T/up.txt" "http://127.0.0.1:$port/b/k?X-Amz-Signature=00" 2>&1); rc=$?
    check_eq "plain http to 127.0.0.1:PORT is allowed (uploaded, exit 0)" 0 "$rc"
    check_nogrep "127.0.0.1:PORT: not refused" 'refusing plain http' "$out"
fi

# ---- 5. --redact-args: no secret argv word in what --upload publishes ------
mkdir -p "$T/wd-hunter3dir"
(cd "$T/wd-hunter3dir" && timeout 60 "$FLAMEKIT" run --redact-args -o "$T/red" -- sh -c 'exit 0' --password=hunter2 >"$T/red.out" 2>&1)
json=$(ls "$T"/red/*.json 2>/dev/null | head -1)
if [ -n "$json" ]; then
    check_nogrep "--redact-args: the secret argv word is not in the .json" 'hunter2' "$json"
    check_nogrep "--redact-args: the working directory is not in the .json" 'hunter3dir' "$json"
    leak=$(for f in "$T"/red/*; do case $f in *.gz) zcat "$f" ;; *) cat "$f" ;; esac | grep -l hunter >/dev/null && echo "$f"; done)
    check_eq "--redact-args: no file of the result holds it (svg, pb.gz, folded.gz)" "" "$leak"
    check_nogrep "--redact-args: nor the summary" 'hunter' "$T/red.out"
    check_grep "--redact-args: the .json says so" '"args_redacted": true' "$json"
    check_grep "--redact-args: the command keeps its program" '"description": "command: sh \(arguments redacted\)"' "$json"
    check_grep "--redact-args: invocation is the subcommand" '"invocation": "flamekit run"' "$json"
else
    fail "--redact-args capture" "$(cat "$T/red.out")"
fi
# without it the metadata has the arguments (what the man pages warn about)
(cd "$T/wd-hunter3dir" && timeout 60 "$FLAMEKIT" run -q -o "$T/nored" -- sh -c 'exit 0' --password=hunter2 >/dev/null 2>&1)
check_grep "without --redact-args the .json holds the arguments (documented)" 'hunter2' "$(cat "$T"/nored/*.json)"
check_grep "--redact-args is in --help (and so in bash completion)" '--redact-args' "$("$FLAMEKIT" run --help)"
