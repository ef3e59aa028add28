#!/usr/bin/env bash
# flamekit svg: the file (escaping, data block, static picture, options, bad
# input), then the viewer in a real browser (headless chromium driven by
# test/browser.js): exact search figures against the folded input, zoom,
# the first screen at 1280x800, inline HTML, <object>/<iframe>, the top
# functions table, callers/callees, keyboard access, names.
# timeout: 600
. "$(dirname "$0")/lib.sh"

svg() { "$FLAMEKIT" svg "$@"; }
# xp FILE XPATH: string value (namespace-free XPath via local-name()).
xp() { xmllint --xpath "string($2)" "$1" 2>/dev/null; }
# the data block's lines (names first)
data() { xp "$1" "//*[local-name()='metadata'][@class='fk-data']"; }
dattr() { xp "$1" "//*[local-name()='metadata'][@class='fk-data']/@$2"; }
# names NAME is one of the data block's names (one per line)
has_name() { data "$1" | sed 1d | head -n "$(dattr "$1" data-names)" | grep -Fxq -- "$2"; }
# frames in the static picture (one subpath each)
nstatic() { xp "$1" "//*[local-name()='g'][@class='fk-static']" >/dev/null; grep -o 'h-[0-9.]*z' "$1" | wc -l; }
nlabels() { xp "$1" "count(//*[local-name()='g'][@class='fk-static']/*[local-name()='text'])"; }
need xmllint || { skip "all" "xmllint not found: apt-get install libxml2-utils"; exit 0; }

# sum STACKS: total count of folded lines
sum() { awk '{ s += $NF } END { print s + 0 }' "$1"; }
# matched FOLDED ERE [PREFIX]: samples whose stack has a frame matching ERE,
# among the stacks under the frame at PREFIX (a;b;c); then the stacks'
# total under PREFIX
matched() {
    awk -v re="$2" -v pre="${3:-}" '{
        c = $NF; s = $0; sub(/ [0-9]+$/, "", s)
        if (pre != "" && !(s == pre || index(s, pre ";") == 1)) next
        all += c
        n = split(s, f, ";"); for (i = 1; i <= n; i++) if (f[i] ~ re) { m += c; break }
    } END { print m + 0, all + 0 }' "$1"
}
# pct_ok SHOWN N D: SHOWN ("4.33%") is 100*N/D to the digits shown
pct_ok() {
    awk -v s="$1" -v n="$2" -v d="$3" 'BEGIN {
        sub(/%$/, "", s); dec = index(s, ".") ? length(s) - index(s, ".") : 0
        v = d > 0 ? 100 * n / d : 0; e = v - s; if (e < 0) e = -e
        exit !(e <= 0.5 * 10 ^ -dec + 1e-9)
    }'
}
# nth FILE NAME N: the Nth value printed as NAME
nth() { awk -v k="$2=" -v n="$3" 'index($0, k) == 1 && ++i == n { print substr($0, length(k) + 1); exit }' "$1"; }
fmtint() { echo "$1" | sed ':a;s/\B[0-9]\{3\}\>/,&/;ta'; }
# check_matched WHAT TEXT N D [ZN ZD]: "Matched: N samples, P% (Q% of zoom: ZN)"
check_matched() {
    local what=$1 t=$2 n=$3 d=$4 zn=${5:-} zd=${6:-} p q
    local want="^Matched: $(fmtint "$n") samples, ([0-9.]+%)"
    [ -n "$zn" ] && want="$want \\(([0-9.]+%) of zoom: $(fmtint "$zn")\\)$" || want="$want\$"
    if ! [[ $t =~ $want ]]; then
        fail "$what" "expected $n of $d${zn:+ and $zn of $zd in the zoom}, got: $t"
        return
    fi
    p=${BASH_REMATCH[1]} q=${BASH_REMATCH[2]:-}
    if ! pct_ok "$p" "$n" "$d" || { [ -n "$zn" ] && ! pct_ok "$q" "$zn" "$zd"; }; then
        fail "$what" "percentages do not match $n/$d${zn:+, $zn/$zd}: $t"
        return
    fi
    pass "$what ($t)"
}

# --- a real profile: perf record of a real workload, our own conversion ---
real=""
if need perf; then
    head -c 3000000 /dev/urandom | base64 >"$T/data"
    if perf record -q -F 999 -g -o "$T/perf.data" -- sh -c "xz -1 -c '$T/data' >/dev/null; gzip -c '$T/data' >/dev/null" >/dev/null 2>&1 &&
        perf script -i "$T/perf.data" 2>/dev/null >"$T/perf.txt"; then
        # perf script: a header line per sample, indented frames leaf first, a blank line
        awk '/^[^ \t]/ { comm = $1; n = 0; next }
             /^[ \t]+[0-9a-f]+ / { sym = $2; sub(/\+0x[0-9a-f]+$/, "", sym); if (sym == "") sym = "[unknown]"; f[n++] = sym; next }
             /^$/ { if (comm != "") { s = comm; for (i = n - 1; i >= 0; i--) s = s ";" f[i]; c[s]++ }; comm = "" }
             END { for (s in c) print s, c[s] }' "$T/perf.txt" | sort >"$T/real.folded"
        check "real profile renders" svg --names full -o "$T/real.svg" "$T/real.folded"
        check "real profile SVG is well-formed XML" xmllint --noout "$T/real.svg"
        check "real profile: xz is in the data block" has_name "$T/real.svg" xz
        check_eq "data block: the root counts every sample" "$(sum "$T/real.folded")" "$(dattr "$T/real.svg" data-c1)"
        real=$T/real.folded
    else
        skip "real profile" "perf record failed here"
    fi
else
    skip "real profile" "perf not found: apt-get install linux-perf"
fi

# --- the file: data block and static picture ---
printf 'a;b 30\na;c 10\na;b;d 15\n' >"$T/p.folded"
svg "$T/p.folded" >"$T/p.svg"
check "small SVG is well-formed" xmllint --noout "$T/p.svg"
check_eq "document title" "Flame Graph" "$(xp "$T/p.svg" "/*[local-name()='svg']/*[local-name()='title']")"
check_eq "data block: 5 frames (all, a, b, c, d)" 5 "$(dattr "$T/p.svg" data-nodes)"
check_eq "data block: 5 names" 5 "$(dattr "$T/p.svg" data-names)"
check_eq "static picture: a label per wide frame" 5 "$(nlabels "$T/p.svg")"
check_grep "static picture: the root spans the usable width" 'M10 [0-9]+h1180v15h-1180z' "$T/p.svg"
check_grep "static picture: b is 45/55 of it" 'h965.5v15h-965.5z' "$T/p.svg"
sort -r "$T/p.folded" | svg >"$T/unsorted.svg"
check "unsorted input gives the same SVG" cmp "$T/p.svg" "$T/unsorted.svg"

# --- pruning: narrow frames leave the picture, never the data ---
{ echo "big 999000"; for i in $(seq 1 1000); do echo "many;leaf$i 1"; done; } >"$T/prune.folded"
svg "$T/prune.folded" >"$T/prune.svg"
check_eq "narrow frames: not in the static picture (only all, big, many)" 3 "$(nstatic "$T/prune.svg")"
check "narrow frames: in the data block" has_name "$T/prune.svg" leaf777
check_eq "narrow frames: every frame in the data block (all, big, many, 1000 leaves)" 1003 "$(dattr "$T/prune.svg" data-nodes)"
printf 'a;b 96\na;c 4\n' | svg --minwidth 5% >"$T/pct.svg"
check_eq "--minwidth 5%: a 4% frame is not drawn statically" 3 "$(nlabels "$T/pct.svg")"
check_grep "--minwidth 5%: told to the script" 'data-minw="5" data-minwpct="1"' "$T/pct.svg"

# --- escaping of hostile names ---
printf 'main;<script>alert(1)</script> 5\nmain;a&b 3\nmain;say "hi" it'"'"'s 2\nmain;x]]>y 2\nmain;ctl\001\002\033z 1\nmain;bad\377\376utf8 1\nmain;<img src=x onerror=alert(2)>;</g></svg> 4\n' >"$T/evil.folded"
svg --title '<b>&title' --subtitle '"sub"' --notes '</desc><script>x</script>' "$T/evil.folded" >"$T/evil.svg"
check "hostile names: well-formed XML" xmllint --noout "$T/evil.svg"
check_eq "one <script> element only (ours)" 1 "$(xp "$T/evil.svg" "count(//*[local-name()='script'])")"
check "script name kept as text" has_name "$T/evil.svg" '<script>alert(1)</script>'
check "ampersand kept as text" has_name "$T/evil.svg" 'a&b'
check "quotes kept" has_name "$T/evil.svg" "say \"hi\" it's"
check "]]> kept as text" has_name "$T/evil.svg" 'x]]>y'
check "control characters become U+FFFD" has_name "$T/evil.svg" 'ctl���z'
check "invalid UTF-8 bytes become U+FFFD" has_name "$T/evil.svg" 'bad��utf8'
check_eq "no element from names" 0 "$(xp "$T/evil.svg" "count(//*[local-name()='img'])")"
check_eq "title escaped" '<b>&title' "$(xp "$T/evil.svg" "//*[@class='fk-title']")"
check_eq "document title escaped" '<b>&title' "$(xp "$T/evil.svg" "/*[local-name()='svg']/*[local-name()='title']")"
check_grep "notes embedded as text" '<desc class="fk-notes">&lt;/desc&gt;&lt;script&gt;' "$T/evil.svg"
svg --notes "$(printf 'line one\nline two')" "$T/p.folded" >"$T/notes.svg"
check_eq "notes keep their line breaks" "$(printf 'line one\nline two')" "$(xp "$T/notes.svg" "//*[@class='fk-notes']")"
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
    "$(xp "$T/meta.svg" "//*[@class='fk-meta']" | sed -n 's/.*"host": *"\([^"]*\)".*/\1/p' | sed 's,\\/,/,g')"
echo '{"a":' >"$T/badmeta.json"
check_fails "bad metadata JSON fails" svg --metadata "$T/badmeta.json" "$T/p.folded"
echo '[1,2]' >"$T/arr.json"
check_fails "metadata must be an object" svg --metadata "$T/arr.json" "$T/p.folded"

# --- palettes (static colours; the script computes the same, checked below) ---
printf 'java;do_sys_open_[k] 5\njava;Interpreter_[j] 5\njava;java/lang/Thread.run 5\njava;std::vector 5\n' >"$T/java.folded"
for p in hot mem io java js perl red green blue aqua yellow purple orange wakeup chain; do
    svg --colors "$p" --hash "$T/java.folded" >"$T/pal-$p.svg" || { fail "palette $p"; continue; }
done
pass "every palette renders"
# the java palette: kernel orange (#be..ff 5a..9b 00..37), JIT green
check_grep "java palette: a kernel frame is orange" 'fill="#(b[e-f]|[c-f][0-9a-f])[5-9a][0-9a-f][0-3][0-9a-f]"' "$T/pal-java.svg"

# --- names: C++ and Rust ---
printf 'app;std::vector<int, std::allocator<int> >::push_back(int const&) [clone .isra.0] 3\napp;std::vector<int, std::allocator<int> >::push_back(int&&) 2\napp;Foo::operator()(int) const 1\napp;core::fmt::write::h0123456789abcdef 1\napp;(anonymous namespace)::run(char*) 1\napp;py_func (/srv/app.py:12) 1\napp;do_idle_[k] 1\napp;Bar::get() const_[j] 1\n' >"$T/cxx.folded"
svg "$T/cxx.folded" >"$T/cxx.svg"
check "--names short (default): no parameter list, no clone suffix" has_name "$T/cxx.svg" 'std::vector<int, std::allocator<int> >::push_back'
check_eq "--names short: overloads merge into one frame" 9 "$(dattr "$T/cxx.svg" data-nodes)"
check "--names short: operator() keeps its own parentheses" has_name "$T/cxx.svg" 'Foo::operator()'
check "--names short: Rust hash dropped" has_name "$T/cxx.svg" 'core::fmt::write'
check "--names short: (anonymous namespace) kept" has_name "$T/cxx.svg" '(anonymous namespace)::run'
check "--names short: a location after a space is not a parameter list" has_name "$T/cxx.svg" 'py_func (/srv/app.py:12)'
check "--names short: annotation kept" has_name "$T/cxx.svg" 'Bar::get_[j]'
check_eq "--names short: full names kept for the tooltip" 6 "$(dattr "$T/cxx.svg" data-fulls)"
svg --names full "$T/cxx.folded" >"$T/cxxfull.svg"
check "--names full keeps names as they are" has_name "$T/cxxfull.svg" 'std::vector<int, std::allocator<int> >::push_back(int const&) [clone .isra.0]'
check_eq "--names full: no full-name list" 0 "$(dattr "$T/cxxfull.svg" data-fulls)"

# --- size limits ---
{ printf 'main;'; head -c 1000000 /dev/zero | tr '\0' 'x'; echo ' 7'; } >"$T/long.folded"
check "1 MB frame name renders" svg -o "$T/long.svg" "$T/long.folded"
check "1 MB frame name: well-formed" xmllint --noout "$T/long.svg"
check_range "1 MB frame name: label truncated" "$(xp "$T/long.svg" "string-length(//*[local-name()='text'][starts-with(., 'xxx')])")" 10 200
{ seq -f 'f%g' 10000 | paste -sd';'; } | sed 's/$/ 3/' >"$T/deep.folded"
check "10,000-deep stack renders" svg -o "$T/deep.svg" "$T/deep.folded"
check_eq "10,000-deep stack: every frame in the data" 10001 "$(dattr "$T/deep.svg" data-nodes)"
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
for bad in "--minwidth abc" "--minwidth 120%" "--colors plaid" "--width 5" "--bogus" "--negate" "--names medium"; do
    # shellcheck disable=SC2086
    out=$(svg $bad "$T/p.folded" 2>&1 >/dev/null); rc=$?
    check_eq "usage error: $bad exits 2" 2 "$rc"
done
out=$(svg --title 2>&1); rc=$?
check_eq "--title without its value: usage error" 2 "$rc"
check_grep "--title without its value: says so (not 'unknown option')" "option '--title' needs a value" "$out"
check_grep "--help to stdout" '^usage: flamekit svg' "$(svg --help)"
check_grep "--help lists --names" '--names short\|full' "$(svg --help)"
check "binary garbage does not crash" sh -c "head -c 200000 /dev/urandom | '$FLAMEKIT' svg >/dev/null 2>&1; test \$? -lt 128"

# --- a real browser ---
if ! have_browser; then
    skip "browser" "node or chromium not found: apt-get install nodejs chromium"
    exit 0
fi
if sanitized; then
    # The viewer is the script embedded byte for byte in every SVG: what the
    # browser checks does not depend on how flamekit was built, and the
    # sanitized SVG writer ran above. The plain build's suite drives it.
    skip "browser" "sanitizer build: the viewer's script is checked in the plain build"
    exit 0
fi

# geometry, zoom, hover, search, hostile names, on a small graph at 1200 px
printf 'main;foo;bar 10\nmain;foo;baz 5\nmain;foo;bar;barfoo 4\nmain;qux 5\nmain;<script>document.documentElement.setAttribute("pwned","1")</script> 5\nmain;Quux 1\n' >"$T/b.folded"
svg "$T/b.folded" >"$T/b.svg"
browser "open:$T/b.svg,1200,600" title frame:main frame:foo frame:bar frame:baz frame:qux label:bar \
    zoom:main\;foo frame:foo frame:bar frame:baz frame:qux frame:main search:bar hover:baz state \
    key:Escape key:Escape frame:foo frame:qux >"$T/b.out" 2>"$T/b.err"
if ! [ -s "$T/b.out" ]; then
    fail "browser: no output" "$(tail -5 "$T/b.err")"
    exit 0
fi
check_eq "browser: no script error" "" "$(val "$T/b.out" error)$(val "$T/b.out" exception)"
check_eq "browser: document title" "Flame Graph" "$(val "$T/b.out" title)"
read -r x w y cls _ <<<"$(val "$T/b.out" frame.main)"
check_eq "layout: the root's child spans the usable width (1200 - 2 x 10)" "10.0 1180.0" "$x $w"
read -r xf wf yf _ <<<"$(val "$T/b.out" frame.foo)"
read -r xb wb yb _ <<<"$(val "$T/b.out" frame.bar)"
read -r xz wz _ <<<"$(val "$T/b.out" frame.baz)"
check_range "layout: width(foo)/width(main) = 19/30" "$(awk -v a="$wf" -v b="$w" 'BEGIN { print a / b }')" 0.633 0.634
check_eq "layout: children in name order, bar first at its parent's edge" "$xf" "$xb"
check_range "layout: baz starts where bar ends" "$(awk -v a="$xb" -v b="$wb" -v c="$xz" 'BEGIN { print c - (a + b) }')" -0.11 0.11
check_eq "layout: children above parents (16 px rows)" 16 "$((yf - yb))"
check_eq "layout: a label fits in a wide frame" "bar" "$(val "$T/b.out" label.bar)"
check_eq "zoom: the clicked frame spans the width" "10.0 1180.0" "$(nth "$T/b.out" frame.foo 2 | cut -d' ' -f1,2)"
check_eq "zoom: child rescaled (bar = 14/19 of foo)" 869.5 "$(nth "$T/b.out" frame.bar 2 | cut -d' ' -f2)"
check_eq "zoom: second child placed after the first" 879.5 "$(nth "$T/b.out" frame.baz 2 | cut -d' ' -f1)"
check_grep "zoom: sibling hidden" ' hide ' "$(nth "$T/b.out" frame.qux 2)"
check_grep "zoom: ancestor kept, faded" '^10.0 1180.0 [0-9]+ anc' "$(nth "$T/b.out" frame.main 2)"
# bar = 14 of 35 (barfoo's 4 inside bar not counted twice); 14 of foo's 19
check_matched "search: outermost matches once, in all and in the zoom" "$(val "$T/b.out" matched)" 14 30 14 19
check_eq "hover: status line shows name, count, share of all and of the zoom" \
    "Function: baz (5 samples, 16.7%); 26.3% of zoomed foo" "$(val "$T/b.out" details.baz)"
check_grep "hover: the tooltip names the frame" '^baz' "$(val "$T/b.out" tooltip.baz)"
check_grep "state kept in the URL" "^x=[0-9]+&s=bar$" "$(val "$T/b.out" state)"
check_eq "Esc resets the zoom" "$(nth "$T/b.out" frame.foo 1)" "$(nth "$T/b.out" frame.foo 3)"
check_eq "Esc shows the hidden sibling again" "$(nth "$T/b.out" frame.qux 1)" "$(nth "$T/b.out" frame.qux 3)"
check_nogrep "hostile name did not execute" 'pwned' "$(cat "$T/b.out")"
zoomnode=$(val "$T/b.out" zoom.node)

# restoring state from the URL (what a shared link does); ignoring case
browser "open:$T/b.svg#x=$zoomnode&s=qux,1200,600" frame:foo matched "open:$T/b.svg#s=(?i)QU,1200,600" matched \
    "open:$T/b.svg#i=1&s=^qu,1200,600" matched >"$T/url.out" 2>"$T/url.err"
check_eq "URL state: zoom restored" "10.0 1180.0" "$(val "$T/url.out" frame.foo | cut -d' ' -f1,2)"
check_matched "URL state: search restored" "$(nth "$T/url.out" matched 1)" 5 30 0 19
check_matched "search: (?i) ignores case" "$(nth "$T/url.out" matched 2)" 6 30
check_matched "search: case toggle kept in the URL" "$(nth "$T/url.out" matched 3)" 6 30

# every sample counted: 1,000 frames of 0.0012 px each, too narrow to draw
browser "open:$T/prune.svg,1200,600" search:^leaf drawn zoom:many drawn matched >"$T/pr.out" 2>"$T/pr.err"
check_matched "narrow frames: search counts every one" "$(nth "$T/pr.out" matched 1)" 1000 1000000
check_eq "narrow frames: not drawn at the top level (all, big, many)" 3 "$(nth "$T/pr.out" drawn 1)"
check_eq "narrow frames: drawn once zoomed (1.18 px each)" 1002 "$(nth "$T/pr.out" drawn 2)"
check_matched "narrow frames: exact in the zoom too" "$(nth "$T/pr.out" matched 2)" 1000 1000000 1000 1000

# exact Matched on the real profile, for several patterns, zoomed and not
if [ -n "$real" ]; then
    zpath=$(awk '{ split($0, f, ";"); sub(/ [0-9]+$/, "", f[2]); if (f[2] != "") c[f[1] ";" f[2]] += $NF } END { for (k in c) if (c[k] > best) { best = c[k]; b = k } print b }' "$real")
    pats=(xz 'lzma|deflate' '^do_' 'page_fault' 'memcpy|memmove' '^\[unknown\]$')
    steps=()
    for p in "${pats[@]}"; do steps+=("search:${p//,/%2C}"); done
    steps+=("zoom:$zpath")
    for p in "${pats[@]}"; do steps+=("search:${p//,/%2C}"); done
    browser "open:$T/real.svg" "${steps[@]}" >"$T/real.out" 2>"$T/real.err"
    total=$(sum "$real")
    k=0
    nonzero=0
    for p in "${pats[@]}"; do
        k=$((k + 1))
        read -r n _ < <(matched "$real" "$p")
        [ "$n" -gt 0 ] && nonzero=$((nonzero + 1))
        check_matched "real profile: Matched /$p/ counts every sample once" "$(nth "$T/real.out" matched "$k")" "$n" "$total"
    done
    check_range "real profile: patterns that match something" "$nonzero" 2 6
    for p in "${pats[@]}"; do
        k=$((k + 1))
        read -r n _ < <(matched "$real" "$p")
        read -r zn zt < <(matched "$real" "$p" "$zpath")
        check_matched "real profile: Matched /$p/ zoomed into $zpath" "$(nth "$T/real.out" matched "$k")" "$n" "$total" "$zn" "$zt"
    done
fi

# the first screen: a tall graph (120 frames deep) at 1280x800 starts at its
# base with the controls, status line and Matched on screen
{ seq -f 'f%g' 120 | paste -sd';' | sed 's/$/ 30/'; echo 'f1;g 10'; } >"$T/tall.folded"
svg --metadata "$T/meta.json" "$T/tall.folded" >"$T/tall.svg"
browser "open:$T/tall.svg,1280,800" viewport search:^f1$ viewport detailsVisible info >"$T/vp.out" 2>"$T/vp.err"
check_range "first screen: the graph is taller than the window" "$(val "$T/vp.out" svgHeight)" 1000 100000
check_range "first screen: scrolled to the base" "$(val "$T/vp.out" scrollY)" 500 100000
check_eq "first screen: fills the window's width" 1280 "$(val "$T/vp.out" svgWidth)"
for k in base search top details matched; do
    check_eq "first screen: $k visible at 1280x800" yes "$(nth "$T/vp.out" "visible.$k" 2)"
done
check_grep "first screen: Matched shown" '^Matched: 40 samples' "$(val "$T/vp.out" matched)"
check_grep "first screen: hover details shown" '^Function: all \(40 samples, 100%\)' "$(val "$T/vp.out" details.base)"
check_eq "Info panel: opens where the user is" yes "$(val "$T/vp.out" info.visible)"
check_grep "Info panel: metadata as text" 'host: web-1</metadata><script>alert\(3\)</script>' "$(val "$T/vp.out" info.lines)"
check_grep "Info panel: nested objects flattened" 'topology.nodes: 1' "$(val "$T/vp.out" info.lines)"
check_eq "Info panel: Esc closes it" none "$(val "$T/vp.out" info.closed)"
browser "open:$T/p.svg,1280,800" info >"$T/noinfo.out" 2>&1
check_eq "no metadata: no Info button" no "$(val "$T/noinfo.out" info.button)"
check_eq "no metadata: i opens nothing" none "$(val "$T/noinfo.out" info.open)"

# pasted into an HTML page, twice, next to the page's own classes; and in
# <object> and <iframe>
{
    echo '<!DOCTYPE html><html><head><title>incident 42</title></head><body>'
    echo '<p class="hide" style="font-size: 20px">the page: class "hide" is the page'"'"'s own</p>'
    grep -v '^<?xml' "$T/b.svg"
    echo '<p>and a second graph</p>'
    grep -v '^<?xml' "$T/p.svg"
    echo '</body></html>'
} >"$T/page.html"
browser "open:$T/page.html" pageGraphs pageZoom:1,a\;b pageSearch:0,bar >"$T/page.out" 2>"$T/page.err"
check_eq "inline HTML: no script error" "" "$(val "$T/page.out" error)$(val "$T/page.out" exception)"
check_eq "inline HTML: both graphs running" "2 2" "$(val "$T/page.out" page.graphs)"
check_eq "inline HTML: the style does not touch the page" "block 20px" "$(val "$T/page.out" page.hiddenPara) $(val "$T/page.out" page.paraFont)"
check_grep "inline HTML: zooming the second graph leaves the first" '^\[\{"zoom":0,.*\},\{"zoom":[1-9]' "$(val "$T/page.out" page.state)"
check_grep "inline HTML: searching the first graph leaves the second" '^Matched: 14 samples, 46.7% \|  $' "$(val "$T/page.out" page.matched)"
printf '<!DOCTYPE html><html><body><object data="%s" type="image/svg+xml" width="900" height="300"></object><iframe src="%s" width="900" height="300"></iframe></body></html>\n' "p.svg" "p.svg" >"$T/frames.html"
browser "open:$T/frames.html" frames:a\;b >"$T/frames.out" 2>"$T/frames.err"
check_eq "object and iframe: both graphs running" "ok ok" "$(val "$T/frames.out" frames.graphs)"
check_eq "object: a click zooms" true "$(val "$T/frames.out" frames.zoom0)"
check_eq "iframe: a click zooms" true "$(val "$T/frames.out" frames.zoom1)"

# top functions table and callers/callees, against the folded input
# (self: samples where the function is the leaf; total: samples with the
# function on the stack, once however often it recurses)
printf 'main;a;b 30\nmain;a;c;b 20\nmain;d;b;b 10\nmain;a 5\nmain;d 4\nmain;c 1\n' >"$T/tf.folded"
svg "$T/tf.folded" >"$T/tf.svg"
selftotal() {
    awk -v want="$2" '{ c = $NF; s = $0; sub(/ [0-9]+$/, "", s); n = split(s, f, ";")
        if (f[n] == want) self += c
        for (i = 1; i <= n; i++) if (f[i] == want) { total += c; break } }
        END { print self + 0, total + 0 }' "$1"
}
browser "open:$T/tf.svg" top:3 top:3,Total topClick:b sandwich:b >"$T/tf.out" 2>"$T/tf.err"
check_eq "top table: no script error" "" "$(val "$T/tf.out" error)$(val "$T/tf.out" exception)"
for r in 1 2 3; do
    IFS='|' read -r name self total _ <<<"$(nth "$T/tf.out" "top.$r" 1)"
    read -r es et < <(selftotal "$T/tf.folded" "$name")
    check_eq "top table (by self), row $r: $name self and total" "$es $et" "${self//,/} ${total//,/}"
done
check_eq "top table: sorted by self, b first" b "$(nth "$T/tf.out" top.1 1 | cut -d'|' -f1)"
check_eq "top table: sorted by total, main first (70)" "main|0|70" "$(nth "$T/tf.out" top.1 2 | cut -d'|' -f1-3)"
check_eq "top table: then b (60: recursion counted once)" "b|60|60" "$(nth "$T/tf.out" top.2 2 | cut -d'|' -f1-3)"
check_eq "top table: then a (55)" "a|5|55" "$(nth "$T/tf.out" top.3 2 | cut -d'|' -f1-3)"
check_matched "top table: clicking a row searches it" "$(val "$T/tf.out" matched)" 60 70
check_eq "top table: closed after the click" none "$(val "$T/tf.out" panel)"
# callers of b (the outermost b of each stack): a 30, c 20, d 10; its
# callees: b 10 (the recursion in main;d;b;b)
check_eq "callers/callees: callers of b" "b:60,a:30,c:20,d:10" "$(val "$T/tf.out" callers)"
check_eq "callers/callees: callees of b" "b:60,b:10" "$(val "$T/tf.out" callees)"
check_grep "callers/callees: the page shows a caller's share" '^Function: a \(30 samples, 42.9%\); 50.0% of b \(as caller\)' "$(val "$T/tf.out" sandwich.details)"
check_eq "callers/callees: Esc returns to the graph" '"graph"' "$(val "$T/tf.out" mode.after)"
# the same from the folded input, computed here: direct callers of the
# outermost b and the frames right after it
read -r want_callers < <(awk '{ c = $NF; s = $0; sub(/ [0-9]+$/, "", s); n = split(s, f, ";")
    for (i = 1; i <= n; i++) if (f[i] == "b") { k = i > 1 ? f[i - 1] : ""; cc[k] += c; t += c; break } }
    END { printf "b:%d", t; for (k in cc) printf ",%s:%d", k, cc[k]; print "" }' "$T/tf.folded" | tr ',' '\n' | sort | paste -sd,)
check_eq "callers/callees: direct callers match the folded input" "$want_callers" "$(val "$T/tf.out" callers | tr ',' '\n' | sort | paste -sd,)"

# keyboard only; a bad regex and its message
browser "open:$T/b.svg" keyboard:BAR badRegex >"$T/kb.out" 2>"$T/kb.err"
check_grep "keyboard: Tab reaches the Search button" 'Search frames by regular expression' "$(val "$T/kb.out" kb.tabbed)"
check_grep "keyboard: Enter on Search opens the search box" '^input:Search frames' "$(val "$T/kb.out" kb.afterEnter)"
check_eq "keyboard: a search typed and entered (case matters: no match)" "Matched: 0 samples, 0%" "$(val "$T/kb.out" kb.matched)"
check_grep "keyboard: Tab from Search reaches the case toggle" '^Ignore case in searches: off' "$(val "$T/kb.out" kb.focus2)"
check_eq "keyboard: Space presses it" true "$(val "$T/kb.out" kb.pressed)"
check_matched "keyboard: the search again, ignoring case" "$(val "$T/kb.out" kb.matchedCase)" 14 30
check_eq "keyboard: Esc clears the search" " " "$(val "$T/kb.out" kb.cleared)"
check_grep "bad regex: says so" '^bad regular expression: a\(b' "$(val "$T/kb.out" bad.msg)"
check_eq "bad regex: the message goes with Esc" " " "$(val "$T/kb.out" bad.after)"

# names: short labels, full names in the tooltip; colours as in the file
browser "open:$T/cxx.svg" "hover:std::vector<int%2C std::allocator<int> >::push_back" >"$T/cxx.out" 2>"$T/cxx.err"
pb='std::vector<int, std::allocator<int> >::push_back'
check_grep "names: the tooltip lists the full names" 'push_back\(int const&\) \[clone \.isra\.0\]' "$(val "$T/cxx.out" "tooltip.$pb")"
check_grep "names: the status line shows the short name" '^Function: std::vector<int, std::allocator<int> >::push_back \(5 samples' "$(val "$T/cxx.out" "details.$pb")"
for p in hot java; do
    browser "open:$T/pal-$p.svg,1200,400" frame:do_sys_open_[k] frame:std::vector >"$T/pal.out" 2>&1
    want=$(grep -o '<path fill="#[0-9a-f]*"' "$T/pal-$p.svg" | cut -d'"' -f2 | paste -sd' ')
    ok=yes
    for f in $(grep '^frame\.' "$T/pal.out" | awk '{ print $NF }'); do
        case " $want " in *" $f "*) ;; *) ok="no: $f not in $want" ;; esac
    done
    check_eq "palette $p: the script's colours are the file's" yes "$ok"
done
