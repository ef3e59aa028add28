#!/usr/bin/env bash
# flamekit merge: folded profiles (plain and gzip) into one, host frames, SVG.
# timeout: 60
. "$(dirname "$0")/lib.sh"
printf 'app;main;work 30\napp;main;idle 10\n' > "$T/db1.example.com.20261202_151500_UTC.pid-42.folded"
printf 'app;main;work 5\nbad line\napp;main;io 7\n' | gzip > "$T/db2.20261202_151501_UTC.host.folded.gz"
printf 'app;main;work 1\n' > "$T/plain.folded"

out=$("$FLAMEKIT" merge "$T"/db1.*.folded "$T"/db2.*.folded.gz 2>"$T/err"); rc=$?
check_eq "merge exits 0" 0 "$rc"
check_eq "merge sums equal stacks, sorted" "app;main;idle 10
app;main;io 7
app;main;work 35" "$out"
check_grep "merge warns once about the malformed line" 'skipped 1 malformed line' "$(cat "$T/err")"

out=$("$FLAMEKIT" merge -p "$T"/db1.*.folded "$T"/db2.*.folded.gz other=$T/plain.folded 2>/dev/null)
check_eq "--host-prefix: host frame from the file name or HOST=FILE" "db1.example.com;app;main;idle 10
db1.example.com;app;main;work 30
db2;app;main;io 7
db2;app;main;work 5
other;app;main;work 1" "$out"

out=$("$FLAMEKIT" merge --host-prefix "$T/plain.folded" 2>/dev/null)
check_eq "--host-prefix without a timestamp: base name" "plain;app;main;work 1" "$out"

"$FLAMEKIT" merge -p -o "$T/all.folded.gz" --svg "$T/all.svg" "$T"/db1.*.folded "$T"/db2.*.folded.gz 2>/dev/null; rc=$?
check_eq "merge -o .gz --svg exits 0" 0 "$rc"
check_eq "merge -o OUT.gz is gzip with all stacks" 4 "$(zcat "$T/all.folded.gz" | wc -l)"
if need xmllint; then check "merged SVG is valid XML" xmllint --noout "$T/all.svg"; fi
check_grep "merged SVG shows both host frames" 'db1\.example\.com' "$T/all.svg"
check_grep "merged SVG shows the second host" '>db2<|db2 \(' "$T/all.svg"

# Round trip: the merged profile itself merges with the same totals.
tot() { awk '{ s += $NF } END { print s }'; }
check_eq "total count is kept" 52 "$(zcat "$T/all.folded.gz" | tot)"

# Errors: missing file, empty input, usage.
out=$("$FLAMEKIT" merge "$T/nope.folded" 2>&1); rc=$?
check_eq "missing input exits 1" 1 "$rc"
check_grep "missing input named" 'nope\.folded' "$out"
: > "$T/empty.folded"
out=$("$FLAMEKIT" merge "$T/empty.folded" -o "$T/e.out" 2>&1); rc=$?
check_eq "empty input exits 1" 1 "$rc"
if [ ! -e "$T/e.out" ]; then pass "empty input writes no output file"; else fail "empty input writes no output file"; fi
out=$("$FLAMEKIT" merge 2>&1); rc=$?
check_eq "no files is a usage error" 2 "$rc"
out=$("$FLAMEKIT" merge --frob x 2>&1); rc=$?
check_eq "unknown option exits 2" 2 "$rc"
