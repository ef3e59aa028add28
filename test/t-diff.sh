#!/usr/bin/env bash
# flamekit diff: widths from AFTER, red grew / blue shrank, the legend, the
# per-frame relative change, new and vanished frames, label contrast,
# --normalize, --negate, two-column input, bad input.
# timeout: 300
. "$(dirname "$0")/lib.sh"

xp() { xmllint --xpath "string($2)" "$1" 2>/dev/null; }
dattr() { xp "$1" "//*[local-name()='metadata'][@class='fk-data']/@$2"; }
nth() { awk -v k="$2=" -v n="$3" 'index($0, k) == 1 && ++i == n { print substr($0, length(k) + 1); exit }' "$1"; }
rgb() { local f=$1; printf '%d %d %d\n' "0x${f:1:2}" "0x${f:3:2}" "0x${f:5:2}"; }
need xmllint || { skip "all" "xmllint not found: apt-get install libxml2-utils"; exit 0; }

printf 'main;grew 10\nmain;shrank 40\nmain;same 20\nmain;gone 5\n' >"$T/before"
printf 'main;grew 50\nmain;shrank 10\nmain;same 20\nmain;new 5\n' >"$T/after"
check "diff renders" "$FLAMEKIT" diff -o "$T/d.svg" "$T/before" "$T/after"
check "diff SVG is well-formed" xmllint --noout "$T/d.svg"
check_grep "default title" 'Differential Flame Graph' "$T/d.svg"
check_eq "data block: both totals (BEFORE 75, AFTER 85)" "75 85" "$(dattr "$T/d.svg" data-c1) $(dattr "$T/d.svg" data-c2)"
check_eq "data block: frames of both profiles (all, main, 5 leaves)" 7 "$(dattr "$T/d.svg" data-nodes)"
check_grep "static legend: grew, shrank, new" 'grew</text>.*shrank</text>.*new \(not in before\)</text>' "$(tr -d '\n' <"$T/d.svg")"
check_grep "static legend: what width and colour mean" 'width: after; colour: after - before' "$T/d.svg"
check_grep "static picture: a new frame is marked (dashed)" '<path class="new" fill=' "$T/d.svg"

"$FLAMEKIT" diff --negate -o "$T/n.svg" "$T/before" "$T/after"
check_grep "--negate: the legend says so" 'width: before; colour: before - after' "$T/n.svg"
check_grep "--negate: legend: red shrank, vanished frames" 'shrank</text>.*grew</text>.*vanished \(not in after\)</text>' "$(tr -d '\n' <"$T/n.svg")"
check_grep "--negate: a vanished frame is marked (dotted)" '<path class="gone" fill=' "$T/n.svg"

# --normalize and two-column input: static colours
printf 'a;x 10\na;y 30\n' >"$T/n1"
printf 'a;x 20\na;y 60\n' >"$T/n2"
"$FLAMEKIT" diff "$T/n1" "$T/n2" >"$T/raw.svg"
"$FLAMEKIT" diff --normalize "$T/n1" "$T/n2" >"$T/norm.svg"
check_grep "without --normalize: y grew (red)" '<path fill="#ff[0-9a-f]{4}"' "$T/raw.svg"
check_eq "--normalize: nothing changed (every frame neutral)" '#e1e1e1' "$(grep -o '<path[^>]*fill="[^"]*"' "$T/norm.svg" | cut -d'"' -f2 | sort -u | paste -sd' ')"
check_grep "--normalize: the scale is told to the script" 'data-scale1="2"' "$T/norm.svg"
printf 'main;grew 10 50\nmain;shrank 40 10\nmain;same 20 20\n' >"$T/two"
"$FLAMEKIT" diff "$T/two" >"$T/two.svg"
"$FLAMEKIT" diff <"$T/two" >"$T/two-stdin.svg"
check "two-column input from stdin" cmp "$T/two.svg" "$T/two-stdin.svg"

# hostile names stay text in diffs too
printf 'm;<script>alert(1)</script> 1\n' >"$T/e1"
printf 'm;<script>alert(1)</script> 3\nm;a&b 1\n' >"$T/e2"
"$FLAMEKIT" diff "$T/e1" "$T/e2" >"$T/e.svg"
check "hostile diff: well-formed" xmllint --noout "$T/e.svg"
check_eq "hostile diff: one script element" 1 "$(xp "$T/e.svg" "count(//*[local-name()='script'])")"

# bad input
: >"$T/empty"
out=$("$FLAMEKIT" diff "$T/empty" "$T/empty" 2>&1); rc=$?
check_eq "two empty profiles exit 1" 1 "$rc"
check_grep "two empty profiles: says so" 'nothing to compare' "$out"
out=$("$FLAMEKIT" diff "$T/before" "$T/empty" 2>&1); rc=$?
check_eq "empty AFTER exits 1" 1 "$rc"
check_grep "empty AFTER: suggests --negate" 'negate' "$out"
out=$("$FLAMEKIT" diff "$T/before" 2>&1); rc=$?
check_eq "one single-column file exits 1" 1 "$rc"
out=$("$FLAMEKIT" diff a b c 2>&1); rc=$?
check_eq "three files: usage error" 2 "$rc"
out=$("$FLAMEKIT" diff - - 2>&1 </dev/null); rc=$?
check_eq "stdin twice: usage error" 2 "$rc"
check_fails "missing file" "$FLAMEKIT" diff "$T/before" "$T/nope"
check_grep "--help to stdout" '^usage: flamekit diff' "$("$FLAMEKIT" diff --help)"

# --- in a real browser: legend on screen, figures, colours, contrast ---
if ! have_browser; then
    skip "browser" "node or chromium not found: apt-get install nodejs chromium"
    exit 0
fi
browser "open:$T/d.svg,1200,500" legend frame:grew frame:shrank frame:same frame:new frame:gone \
    hover:grew hover:shrank hover:new contrast top:6,Change >"$T/d.out" 2>"$T/d.err"
check_eq "browser: no script error" "" "$(val "$T/d.out" error)$(val "$T/d.out" exception)"
check_grep "legend shown" '^grew \| shrank \| new \(not in before\) \| width: after' "$(val "$T/d.out" legend)"
check_eq "legend on screen" yes "$(val "$T/d.out" legend.visible)"
read -r x w _ _ fill <<<"$(val "$T/d.out" frame.grew)"
check_range "width of grew from AFTER (50/85 of 1180)" "$w" 694 695
read -r r g b <<<"$(rgb "$fill")"
check_eq "grew: the largest change, saturated red" "255 0 0" "$r $g $b"
read -r _ w _ _ fill <<<"$(val "$T/d.out" frame.shrank)"
check_range "width of shrank from AFTER (10/85)" "$w" 138.7 138.9
read -r r g b <<<"$(rgb "$fill")"
check_eq "shrank: blue, 30/40 of the largest change" "56 56 255" "$r $g $b"
check_eq "unchanged is neutral" "#e1e1e1" "$(val "$T/d.out" frame.same | awk '{ print $NF }')"
read -r _ _ _ cls fill <<<"$(val "$T/d.out" frame.new)"
check_eq "a new frame is marked (class new)" new "$cls"
read -r r g b <<<"$(rgb "$fill")"
check_range "a new frame is clearly red (5 of the largest 40, shown at >= 60%)" "$g" 0 90
check_eq "a vanished frame has no width in AFTER" none "$(val "$T/d.out" frame.gone | sed 's/^undrawn$/none/')"
check_eq "grew: count, relative change and share-of-total delta" \
    "Function: grew (50 samples, 58.8%); before 10; change +40 (+400% for this frame, +47.1% of total)" "$(val "$T/d.out" details.grew)"
check_eq "shrank: relative change" \
    "Function: shrank (10 samples, 11.8%); before 40; change −30 (−75% for this frame, −35.3% of total)" "$(val "$T/d.out" details.shrank)"
check_eq "new: said so" \
    "Function: new (5 samples, 5.88%); before 0; change +5 (new for this frame, +5.88% of total)" "$(val "$T/d.out" details.new)"
check_range "every label readable on its fill (contrast >= 4.5)" "$(val "$T/d.out" contrast.min)" 4.5 21
check_grep "top table in a diff: sorted by change, grew first" '^grew\|' "$(val "$T/d.out" top.1)"

# every fill: a graph of many sizes of change, labels chosen for contrast
{ for i in $(seq 1 40); do echo "m;f$i $((100 + i * 7))"; done; } >"$T/c1"
{ for i in $(seq 1 40); do echo "m;f$i $((100 + (i % 7) * 53 + (i % 3) * 400))"; done; } >"$T/c2"
"$FLAMEKIT" diff "$T/c1" "$T/c2" >"$T/c.svg"
browser "open:$T/c.svg,2400,500" contrast >"$T/c.out" 2>&1
check_range "many fills: every label has contrast >= 4.5" "$(val "$T/c.out" contrast.min)" 4.5 21

browser "open:$T/n.svg,1200,500" legend frame:gone hover:gone >"$T/n.out" 2>"$T/n.err"
check_grep "--negate: legend shown" '^shrank \| grew \| vanished \(not in after\) \| width: before' "$(val "$T/n.out" legend)"
read -r _ w _ cls _ <<<"$(val "$T/n.out" frame.gone)"
check_eq "--negate: a vanished frame is drawn and marked" gone "$cls"
check_eq "--negate: its figures" \
    "Function: gone (5 samples, 6.67%); after 0; change −5 (vanished for this frame, −6.67% of total)" "$(val "$T/n.out" details.gone)"
browser "open:$T/norm.svg,1200,500" hover:y >"$T/norm.out" 2>&1
check_eq "--normalize: BEFORE scaled, no change" \
    "Function: y (60 samples, 75.0%); before 60; change ±0 (±0.0% for this frame, ±0% of total)" "$(val "$T/norm.out" details.y)"
