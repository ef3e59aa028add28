#!/usr/bin/env bash
# flamekit svg: real input, escaping, geometry, pruning, options, bad input,
# and zoom/search in a real browser (headless chromium).
# timeout: 240
. "$FK_SRC/test/lib.sh"

svg() { "$FLAMEKIT" svg "$@"; }
# xp FILE XPATH: string value (namespace-free XPath via local-name()).
xp() { xmllint --xpath "string($2)" "$1" 2>/dev/null; }
# The frame whose title starts with "NAME (": attribute of its rect.
fattr() { xp "$1" "//*[local-name()='g'][*[local-name()='title'][starts-with(., '$2 (')]]/*[local-name()='rect']/@$3"; }
nframes() { xp "$1" "count(//*[local-name()='g'][*[local-name()='title']])"; }
need xmllint || { skip "all" "xmllint not found: apt-get install libxml2-utils"; exit 0; }

# --- a real profile: perf record of a real workload, our own conversion ---
if need perf; then
    head -c 3000000 /dev/urandom | base64 >"$T/data"
    if perf record -q -F 999 -g -o "$T/perf.data" -- sh -c "xz -1 -c '$T/data' >/dev/null; gzip -c '$T/data' >/dev/null" >/dev/null 2>&1 &&
        perf script -i "$T/perf.data" 2>/dev/null >"$T/perf.txt"; then
        # perf script: a header line per sample, indented frames leaf first, a blank line
        awk '/^[^ \t]/ { comm = $1; n = 0; next }
             /^[ \t]+[0-9a-f]+ / { sym = $2; if (sym == "") sym = "[unknown]"; f[n++] = sym; next }
             /^$/ { if (comm != "") { s = comm; for (i = n - 1; i >= 0; i--) s = s ";" f[i]; c[s]++ }; comm = "" }
             END { for (s in c) print s, c[s] }' "$T/perf.txt" | sort >"$T/real.folded"
        check "real profile renders" svg -o "$T/real.svg" "$T/real.folded"
        check "real profile SVG is well-formed XML" xmllint --noout "$T/real.svg"
        check_grep "real profile shows xz" '<title>xz \(' "$T/real.svg"
        total=$(awk '{ s += $NF } END { print s }' "$T/real.folded")
        check_grep "root frame counts every sample" "<title>all \\($(echo "$total" | sed ':a;s/\B[0-9]\{3\}\>/,&/;ta') samples, 100.00%\\)" "$T/real.svg"
    else
        skip "real profile" "perf record failed here"
    fi
else
    skip "real profile" "perf not found: apt-get install linux-perf"
fi

# --- geometry: widths proportional to counts ---
printf 'a;b 30\na;c 10\na;b;d 15\n' >"$T/p.folded"
svg "$T/p.folded" >"$T/p.svg"
check "small SVG is well-formed" xmllint --noout "$T/p.svg"
wa=$(fattr "$T/p.svg" a width); wb=$(fattr "$T/p.svg" b width); wc=$(fattr "$T/p.svg" c width); wd=$(fattr "$T/p.svg" d width)
check_eq "root child spans the usable width" 1180 "$wa"
check_range "width(b)/width(c) = (30+15)/10" "$(awk -v b="$wb" -v c="$wc" 'BEGIN { print b / c }')" 4.49 4.51
check_range "width(d)/width(b) = 15/45" "$(awk -v b="$wb" -v d="$wd" 'BEGIN { print d / b }')" 0.333 0.334
xb=$(fattr "$T/p.svg" b x); xc=$(fattr "$T/p.svg" c x); xd=$(fattr "$T/p.svg" d x)
check_eq "children sorted by name, b first at the left" 10 "$xb"
check_range "c starts where b ends" "$(awk -v xb="$xb" -v wb="$wb" -v xc="$xc" 'BEGIN { print xc - (xb + wb) }')" -0.11 0.11
check_eq "a child starts at its parent's left edge" "$xb" "$xd"
yb=$(fattr "$T/p.svg" b y); yd=$(fattr "$T/p.svg" d y)
check_range "flame graph: children above parents" "$((yb - yd))" 16 16
check_grep "tooltip has count and percentage" '<title>b \(45 samples, 81\.82%\)</title>' "$T/p.svg"
svg --inverted "$T/p.folded" >"$T/inv.svg"
yb=$(fattr "$T/inv.svg" b y); yd=$(fattr "$T/inv.svg" d y)
check_range "inverted: children below parents" "$((yd - yb))" 16 16
check_grep "inverted default title" 'Icicle Graph' "$T/inv.svg"
svg --reverse "$T/p.folded" >"$T/rev.svg"
check_eq "reverse: leaf d becomes a root child" "$(fattr "$T/rev.svg" d width)" \
    "$(awk 'BEGIN { printf "%.1f", 1180 * 15 / 55 }' | sed 's/\.0$//')"
check_grep "reverse: a is above d" '<title>a \(15 samples' "$T/rev.svg"
sort -r "$T/p.folded" | svg >"$T/unsorted.svg"
check "unsorted input gives the same SVG" cmp "$T/p.svg" "$T/unsorted.svg"
printf 'a;y 1\na;x 1\n' | svg --flamechart >"$T/chart.svg"
check_eq "flamechart keeps input order (y left of x)" 10 "$(fattr "$T/chart.svg" y x)"
printf 'a;y 1\na;x 1\n' | svg >"$T/nochart.svg"
check_eq "flame graph sorts (x left of y)" 10 "$(fattr "$T/nochart.svg" x x)"

# --- pruning ---
{ echo "big 99999"; echo "big;tiny 1"; } >"$T/prune.folded"
svg "$T/prune.folded" >"$T/prune.svg"
check_nogrep "frame under 0.1 px is pruned by default" '<title>tiny ' "$T/prune.svg"
svg --minwidth 0 "$T/prune.folded" >"$T/prune0.svg"
check_grep "--minwidth 0 keeps it" '<title>tiny ' "$T/prune0.svg"
printf 'a;b 96\na;c 4\n' | svg --minwidth 5% >"$T/pct.svg"
check_nogrep "--minwidth 5% drops a 4% frame" '<title>c ' "$T/pct.svg"
check_grep "--minwidth 5% keeps a 96% frame" '<title>b ' "$T/pct.svg"

# --- escaping of hostile names ---
printf 'main;<script>alert(1)</script> 5\nmain;a&b 3\nmain;say "hi" it'"'"'s 2\nmain;x]]>y 2\nmain;ctl\001\002\033z 1\nmain;bad\377\376utf8 1\nmain;<img src=x onerror=alert(2)>;</g></svg> 4\n' >"$T/evil.folded"
svg --title '<b>&title' --subtitle '"sub"' --notes '</desc><script>x</script>' "$T/evil.folded" >"$T/evil.svg"
check "hostile names: well-formed XML" xmllint --noout "$T/evil.svg"
check_eq "one <script> element only (ours)" 1 "$(xp "$T/evil.svg" "count(//*[local-name()='script'])")"
check_eq "script name kept as text" '<script>alert(1)</script> (5 samples, 27.78%)' \
    "$(xp "$T/evil.svg" "//*[local-name()='title'][starts-with(., '<script>')]")"
check_eq "ampersand kept as text" 'a&b (3 samples, 16.67%)' "$(xp "$T/evil.svg" "//*[local-name()='title'][starts-with(., 'a&')]")"
check_grep "quotes kept" '<title>say &quot;hi&quot; it.s \(' "$T/evil.svg"
check_eq "]]> kept as text" 'x]]>y (2 samples, 11.11%)' "$(xp "$T/evil.svg" "//*[local-name()='title'][starts-with(., 'x]')]")"
check_eq "control characters become U+FFFD" 'ctl���z (1 samples, 5.56%)' "$(xp "$T/evil.svg" "//*[local-name()='title'][starts-with(., 'ctl')]")"
check_eq "invalid UTF-8 bytes become U+FFFD" 'bad��utf8 (1 samples, 5.56%)' "$(xp "$T/evil.svg" "//*[local-name()='title'][starts-with(., 'bad')]")"
check_eq "no element from names" 0 "$(xp "$T/evil.svg" "count(//*[local-name()='img'])")"
check_eq "title escaped" '<b>&title' "$(xp "$T/evil.svg" "//*[@id='fk-title']")"
check_grep "notes embedded as text" '<desc id="fk-notes">&lt;/desc&gt;&lt;script&gt;' "$T/evil.svg"
svg --notes "$(printf 'line one\nline two')" "$T/p.folded" >"$T/notes.svg"
check_eq "notes keep their line breaks" "$(printf 'line one\nline two')" "$(xp "$T/notes.svg" "//*[@id='fk-notes']")"
svg "$T/evil.folded" >"$T/evil2.svg"
svg "$T/evil.folded" >"$T/evil3.svg"
check "output is deterministic" cmp "$T/evil2.svg" "$T/evil3.svg"
svg --rand "$T/evil.folded" >"$T/r1.svg"; svg --rand "$T/evil.folded" >"$T/r2.svg"
check "--rand output is reproducible too" cmp "$T/r1.svg" "$T/r2.svg"

# --- metadata ---
printf '{"host":"web-1</metadata><script>alert(3)</script>","kernel":"6.1","cpus":2,"topology":{"nodes":1}}\n' >"$T/meta.json"
svg --metadata "$T/meta.json" "$T/p.folded" >"$T/meta.svg"
check "metadata SVG is well-formed" xmllint --noout "$T/meta.svg"
check_eq "metadata round-trips as JSON text" "web-1</metadata><script>alert(3)</script>" \
    "$(xp "$T/meta.svg" "//*[@id='fk-meta']" | sed -n 's/.*"host": *"\([^"]*\)".*/\1/p' | sed 's,\\/,/,g')"
check_grep "Info button when metadata is there" 'id="fk-infobtn"' "$T/meta.svg"
echo '{"a":' >"$T/badmeta.json"
check_fails "bad metadata JSON fails" svg --metadata "$T/badmeta.json" "$T/p.folded"
echo '[1,2]' >"$T/arr.json"
check_fails "metadata must be an object" svg --metadata "$T/arr.json" "$T/p.folded"

# --- palettes ---
printf 'java;do_sys_open_[k] 5\njava;Interpreter_[j] 5\njava;java/lang/Thread.run 5\njava;std::vector 5\n' >"$T/java.folded"
svg --colors java "$T/java.folded" >"$T/java.svg"
rgb() { local f; f=$(fattr "$1" "$2" fill); printf '%d %d %d\n' "0x${f:1:2}" "0x${f:3:2}" "0x${f:5:2}"; }
read -r r g b < <(rgb "$T/java.svg" 'do_sys_open_[k]')
check_range "java palette: kernel frame is orange (red high)" "$r" 190 255
check_range "java palette: kernel frame is orange (blue low)" "$b" 0 55
read -r r g b < <(rgb "$T/java.svg" 'Interpreter_[j]')
check_range "java palette: JIT frame is green" "$((g - r))" 40 255
read -r r g b < <(rgb "$T/java.svg" 'std::vector')
check_range "java palette: C++ frame is yellow (blue low)" "$b" 0 110
for p in hot mem io java js perl red green blue aqua yellow purple orange wakeup chain; do
    svg --colors "$p" --hash "$T/p.folded" >"$T/pal.svg" || { fail "palette $p"; continue; }
done
pass "every palette renders"

# --- size limits ---
{ printf 'main;'; head -c 1000000 /dev/zero | tr '\0' 'x'; echo ' 7'; } >"$T/long.folded"
check "1 MB frame name renders" svg -o "$T/long.svg" "$T/long.folded"
check "1 MB frame name: well-formed" xmllint --noout "$T/long.svg"
check_range "1 MB frame name: label truncated" "$(xp "$T/long.svg" "string-length(//*[local-name()='text'][starts-with(., 'xxx')])")" 10 200
{ seq -f 'f%g' 10000 | paste -sd';'; } | sed 's/$/ 3/' >"$T/deep.folded"
check "10,000-deep stack renders" svg -o "$T/deep.svg" "$T/deep.folded"
check_eq "10,000-deep stack: every frame drawn" 10001 "$(nframes "$T/deep.svg")"
check "10,000-deep stack: well-formed" xmllint --noout "$T/deep.svg"

# --- bad input and options ---
: >"$T/empty"
out=$(svg "$T/empty" 2>&1); rc=$?
check_eq "empty input exits 1" 1 "$rc"
check_grep "empty input says so" 'no stacks' "$out"
out=$(printf '# just a comment\n' | svg 2>&1 >/dev/null); rc=$?
check_eq "comment-only stdin exits 1" 1 "$rc"
printf 'a;b 3\nthis line has no count\na;c 2\nnor this\n' >"$T/mal.folded"
out=$(svg -o "$T/mal.svg" "$T/mal.folded" 2>&1); rc=$?
check_eq "malformed lines skipped, exit 0" 0 "$rc"
check_eq "one warning for two bad lines" 1 "$(printf '%s\n' "$out" | grep -c 'skipped 2 malformed lines; first at line 2')"
out=$(svg --strict -o "$T/strict.svg" "$T/mal.folded" 2>&1); rc=$?
check_eq "--strict: malformed line is an error" 1 "$rc"
check "--strict: no output file" test ! -e "$T/strict.svg"
check_fails "missing input file" svg "$T/nope.folded"
out=$(svg -o "$T/no/such/dir/x.svg" "$T/p.folded" 2>&1); rc=$?
check_eq "unwritable output exits 1" 1 "$rc"
gzip -c "$T/p.folded" >"$T/p.folded.gz"
svg "$T/p.folded.gz" >"$T/gz.svg"
check "gzip input read transparently" cmp "$T/p.svg" "$T/gz.svg"
for bad in "--minwidth abc" "--minwidth 120%" "--colors plaid" "--width 5" "--bogus" "--negate"; do
    # shellcheck disable=SC2086
    out=$(svg $bad "$T/p.folded" 2>&1 >/dev/null); rc=$?
    check_eq "usage error: $bad exits 2" 2 "$rc"
done
out=$(svg --title 2>&1); rc=$?
check_eq "--title without its value: usage error" 2 "$rc"
check_grep "--title without its value: says so (not 'unknown option')" "option '--title' needs a value" "$out"
check_grep "--help to stdout" '^usage: flamekit svg' "$(svg --help)"
check "binary garbage does not crash" sh -c "head -c 200000 /dev/urandom | '$FLAMEKIT' svg >/dev/null 2>&1; test \$? -lt 128"

# --- a real browser: scripted click (zoom) and Ctrl-F search via the DOM ---
chrome=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$chrome" ]; then
    skip "browser zoom/search" "chromium not found: apt-get install chromium"
    exit 0
fi
# dom FILE FRAGMENT OUT: load file://FILE#FRAGMENT, dump the DOM after scripts ran
dom() {
    local prof; prof=$(mktemp -d "$T/chrome.XXXXXX")
    timeout 60 "$chrome" --headless --no-sandbox --disable-gpu --disable-background-networking \
        --disable-component-update --disable-sync --no-first-run --user-data-dir="$prof" \
        --virtual-time-budget=3000 --dump-dom "file://$1#$2" >"$3" 2>"$T/chrome.err"
}
printf 'main;foo;bar 10\nmain;foo;baz 5\nmain;foo;bar;barfoo 4\nmain;qux 5\nmain;<script>document.documentElement.setAttribute("pwned","1")</script> 5\n' >"$T/b.folded"
svg --minwidth 0 "$T/b.folded" >"$T/b.svg"
# click "foo", then Ctrl-F "bar" (matches bar and its child barfoo: count bar
# once), then hover "baz"
dom "$T/b.svg" "fktest=foo/bar&fkhover=baz" "$T/dom.svg"
if ! [ -s "$T/dom.svg" ]; then
    fail "browser: chromium produced no DOM" "$(tail -5 "$T/chrome.err")"
    exit 0
fi
check "browser DOM is well-formed" xmllint --noout "$T/dom.svg"
check_grep "test hook clicked a frame" 'data-fktest="clicked [0-9]+"' "$T/dom.svg"
check_nogrep "hostile name did not execute" 'pwned=' "$T/dom.svg"
check_eq "zoom: clicked frame spans the width" 1180.0 "$(fattr "$T/dom.svg" foo width)"
check_eq "zoom: child rescaled (bar = 14/19 of foo)" 869.5 "$(fattr "$T/dom.svg" bar width)"
check_eq "zoom: second child placed after the first" 879.5 "$(fattr "$T/dom.svg" baz x)"
check_eq "zoom: sibling hidden" hide "$(xp "$T/dom.svg" "//*[local-name()='g'][*[local-name()='title'][starts-with(., 'qux (')]]/@class")"
check_eq "zoom: ancestor kept, faded" anc "$(xp "$T/dom.svg" "//*[local-name()='g'][*[local-name()='title'][starts-with(., 'main (')]]/@class")"
check_grep "zoom: Reset Zoom visible" 'id="fk-unzoom" class="btn"' "$T/dom.svg"
check_eq "search: matching frame highlighted" match "$(xp "$T/dom.svg" "//*[local-name()='g'][*[local-name()='title'][starts-with(., 'bar (')]]/@class")"
check_eq "search: nested match highlighted" match "$(xp "$T/dom.svg" "//*[local-name()='g'][*[local-name()='title'][starts-with(., 'barfoo (')]]/@class")"
check_eq "search: non-match not highlighted" "" "$(xp "$T/dom.svg" "//*[local-name()='g'][*[local-name()='title'][starts-with(., 'baz (')]]/@class")"
# bar = 14 of 29 total (barfoo's 4 inside bar not counted twice); 14 of foo's 19
check_eq "search: matched % counts outermost matches once, relative to zoom too" \
    "Matched: 48.28% (73.68% of zoom)" "$(xp "$T/dom.svg" "//*[@id='fk-matched']")"
check_eq "hover: status bar shows name, count, share of all and of the zoom" \
    "Function: baz (5 samples, 17.24%) [26.32% of zoomed foo]" "$(xp "$T/dom.svg" "//*[@id='fk-details']")"
idx=$(sed -n 's/.*data-fktest="clicked \([0-9]*\)".*/\1/p' "$T/dom.svg")
check_grep "state kept in the URL" "data-state=\"x=$idx&amp;s=bar" "$T/dom.svg"
# restoring state from the URL (what a shared link does)
dom "$T/b.svg" "x=$idx&s=qux" "$T/dom2.svg"
check_eq "URL state: zoom restored" 1180.0 "$(fattr "$T/dom2.svg" foo width)"
check_eq "URL state: search restored" "Matched: 17.24% (0.00% of zoom)" "$(xp "$T/dom2.svg" "//*[@id='fk-matched']")"

# search ignoring case
dom "$T/b.svg" "s=(?i)QUX" "$T/dom3.svg"
check_eq "search: (?i) ignores case" "Matched: 17.24%" "$(xp "$T/dom3.svg" "//*[@id='fk-matched']")"
# a pruned sibling leaves a gap the script must keep when zooming: aa (1 of
# 1,000,000: 0.001 px) is pruned; zooming into big (1,000) must put zz at
# 10 + 1180/1000 px, not at big's left edge
printf 'other 999000\nbig;aa 1\nbig;zz 999\n' | svg >"$T/gap.svg"
check_nogrep "gap: tiny sibling pruned" '<title>aa ' "$T/gap.svg"
dom "$T/gap.svg" "fktest=big" "$T/domgap.svg"
check_eq "gap: zoomed frame spans the width" 1180.0 "$(fattr "$T/domgap.svg" big width)"
check_eq "gap: frame after a pruned sibling keeps its offset" 11.2 "$(fattr "$T/domgap.svg" zz x)"
# keys: Esc resets the zoom; i opens the Info panel with the metadata
dom "$T/b.svg" "fktest=foo&fkkeys=Escape" "$T/domesc.svg"
check_eq "Esc resets the zoom" "$(fattr "$T/b.svg" foo width)" "$(fattr "$T/domesc.svg" foo width | sed 's/\.0$//')"
check_eq "Esc shows the hidden sibling again" "" "$(xp "$T/domesc.svg" "//*[local-name()='g'][*[local-name()='title'][starts-with(., 'qux (')]]/@class")"
dom "$T/meta.svg" "fktest=a&fkkeys=i" "$T/dominfo.svg"
check_eq "i opens the Info panel" "" "$(xp "$T/dominfo.svg" "//*[@id='fk-info']/@class")"
check_eq "Info panel shows metadata as text" "host: web-1</metadata><script>alert(3)</script>" \
    "$(xp "$T/dominfo.svg" "//*[@id='fk-info']/*[local-name()='text'][1]")"
check_eq "Info panel flattens nested objects" "topology.nodes: 1" \
    "$(xp "$T/dominfo.svg" "//*[@id='fk-info']/*[local-name()='text'][4]")"
check_eq "metadata did not execute" 1 "$(xp "$T/dominfo.svg" "count(//*[local-name()='script'])")"
# the script rebuilds the tree of an icicle graph (depth counted downwards)
svg --inverted --minwidth 0 "$T/b.folded" >"$T/binv.svg"
dom "$T/binv.svg" "fktest=foo/bar" "$T/dominv.svg"
check_eq "inverted: zoom spans the width" 1180.0 "$(fattr "$T/dominv.svg" foo width)"
check_eq "inverted: child rescaled" 869.5 "$(fattr "$T/dominv.svg" bar width)"
check_eq "inverted: matched share" "Matched: 48.28% (73.68% of zoom)" "$(xp "$T/dominv.svg" "//*[@id='fk-matched']")"
