#!/usr/bin/env bash
# flamekit diff: widths from AFTER, red grew / blue shrank, tooltips,
# --normalize, --negate, two-column input, bad input.
. "$FK_SRC/test/lib.sh"

xp() { xmllint --xpath "string($2)" "$1" 2>/dev/null; }
fattr() { xp "$1" "//*[local-name()='g'][*[local-name()='title'][starts-with(., '$2 (')]]/*[local-name()='rect']/@$3"; }
ftitle() { xp "$1" "//*[local-name()='title'][starts-with(., '$2 (')]"; }
rgb() { local f; f=$(fattr "$1" "$2" fill); printf '%d %d %d\n' "0x${f:1:2}" "0x${f:3:2}" "0x${f:5:2}"; }
need xmllint || { skip "all" "xmllint not found: apt-get install libxml2-utils"; exit 0; }

printf 'main;grew 10\nmain;shrank 40\nmain;same 20\nmain;gone 5\n' >"$T/before"
printf 'main;grew 50\nmain;shrank 10\nmain;same 20\nmain;new 5\n' >"$T/after"
check "diff renders" "$FLAMEKIT" diff -o "$T/d.svg" "$T/before" "$T/after"
check "diff SVG is well-formed" xmllint --noout "$T/d.svg"
check_grep "default title" 'Differential Flame Graph' "$T/d.svg"
# widths from AFTER (total 85)
check_range "width of grew from AFTER (50/85)" "$(fattr "$T/d.svg" grew width)" 694 695
check_range "width of shrank from AFTER (10/85)" "$(fattr "$T/d.svg" shrank width)" 138.7 138.9
check_eq "frame only in BEFORE has no width" "" "$(fattr "$T/d.svg" gone width)"
read -r r g b < <(rgb "$T/d.svg" grew)
check_eq "grew is red" "255 0 0" "$r $g $b"
read -r r g b < <(rgb "$T/d.svg" shrank)
check_range "shrank is blue (blue channel)" "$b" 255 255
check_range "shrank is blue (red channel lower)" "$r" 0 80
read -r r g b < <(rgb "$T/d.svg" same)
check_eq "unchanged is neutral" "225 225 225" "$r $g $b"
read -r r1 g1 b1 < <(rgb "$T/d.svg" new)
check_range "small growth is light red (g > 150)" "$g1" 150 254
check_eq "tooltip: both counts and delta" 'grew (50 samples, 58.82%; before 10; delta +40, +47.06%)' "$(ftitle "$T/d.svg" grew)"
check_eq "tooltip: negative delta" 'shrank (10 samples, 11.76%; before 40; delta -30, -35.29%)' "$(ftitle "$T/d.svg" shrank)"

# --negate: widths from BEFORE (total 75), shrinkage drawn red
"$FLAMEKIT" diff --negate -o "$T/n.svg" "$T/before" "$T/after"
check_range "--negate: width from BEFORE (40/75)" "$(fattr "$T/n.svg" shrank width)" 629.3 629.4
check_grep "--negate: frame only in BEFORE drawn" '<title>gone \(' "$T/n.svg"
read -r r g b < <(rgb "$T/n.svg" shrank)
check_eq "--negate: shrank is red" 255 "$r"
check_range "--negate: shrank's intensity is 30/40 of the largest change" "$g" 55 58
read -r r g b < <(rgb "$T/n.svg" grew)
check_range "--negate: grew is blue" "$b" 255 255

# --normalize: the same shape at twice the samples shows no change
printf 'a;x 10\na;y 30\n' >"$T/n1"
printf 'a;x 20\na;y 60\n' >"$T/n2"
"$FLAMEKIT" diff "$T/n1" "$T/n2" >"$T/raw.svg"
"$FLAMEKIT" diff --normalize "$T/n1" "$T/n2" >"$T/norm.svg"
read -r r g b < <(rgb "$T/raw.svg" y)
check_eq "without --normalize: y grew (red)" 255 "$r"
check_range "without --normalize: y grew by 30 of the largest 40" "$g" 55 58
read -r r g b < <(rgb "$T/norm.svg" y)
check_eq "--normalize: y unchanged" "225 225 225" "$r $g $b"
check_grep "--normalize: tooltip shows scaled BEFORE" '<title>y \(60 samples, 75.00%; before 60; delta \+0, \+0.00%\)' "$T/norm.svg"

"$FLAMEKIT" diff --normalize --negate "$T/n1" "$T/n2" >"$T/normneg.svg"
read -r r g b < <(rgb "$T/normneg.svg" y)
check_eq "--normalize --negate: y unchanged" "225 225 225" "$r $g $b"
check_range "--normalize --negate: width from BEFORE" "$(fattr "$T/normneg.svg" y width)" 885 885
check_grep "--normalize --negate: tooltip shows scaled AFTER" '<title>y \(30 samples, 75.00%; after 30; delta \+0, \+0.00%\)' "$T/normneg.svg"

# one two-column file, as difffolded.pl writes
printf 'main;grew 10 50\nmain;shrank 40 10\nmain;same 20 20\n' >"$T/two"
"$FLAMEKIT" diff "$T/two" >"$T/two.svg"
check_eq "two-column input: same colours as two files" "$(fattr "$T/d.svg" grew fill) $(fattr "$T/d.svg" shrank fill)" \
    "$(fattr "$T/two.svg" grew fill) $(fattr "$T/two.svg" shrank fill)"
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
