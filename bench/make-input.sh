#!/usr/bin/env bash
# Make (once) and cache a benchmark input: real `perf script` text from a
# 2-CPU `perf record -F 999 -a -g` of this machine under a workload, plus its
# folded form. Prints two lines: the path of the perf-script text, then the
# path of the folded file. Later runs reuse the cache
# (${FLAMEKIT_CACHE:-~/.cache/flamekit}/bench); delete a file to remake it.
# usage: bench/make-input.sh [KIND]
#   shallow (default)  gcc compiling C on one CPU, xz and gzip on the other
#                      (~65 MB, median stack depth ~10)
#   deep               node running npm (ls, pack) and a JIT-heavy script
#                      with --perf-basic-prof, gcc compiles, xz -9 (median
#                      depth ~20: what `flamekit collapse` is tuned on)
#   deep2              held out, never tuned on: g++ compiling C++ with the
#                      standard library, node parsing and sorting JSON, npm
#                      pack, zstd and xz -e
# The deep workloads are recorded on every CPU for their own cgroup only
# (perf record -a -G), so their shape does not depend on what else runs.
# env: FLAMEKIT = flamekit binary used for the folded file; FK_BENCH_SECONDS
#      = recording length (default: 140 shallow, 90 deep and deep2);
#      FK_BENCH_MB = keep the first samples up to this size (default 65).
# Progress goes to stderr; stdout has only the two paths.
set -euo pipefail
kind=${1:-shallow}
cache=${FLAMEKIT_CACHE:-$HOME/.cache/flamekit}/bench
src=${FK_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
case $kind in
shallow) txt=$cache/perf-script.txt folded=$cache/perf-script.folded secs=${FK_BENCH_SECONDS:-140} ;;
deep | deep2)
    txt=$cache/perf-script-$kind.txt folded=$cache/perf-script-$kind.folded
    secs=${FK_BENCH_SECONDS:-90} ;;
*) echo "make-input: unknown kind '$kind' (shallow, deep or deep2)" >&2; exit 2 ;;
esac
mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9

need() { command -v "$1" >/dev/null || { echo "make-input: $1 not found; apt-get install $2" >&2; exit 1; }; }

# Each workload runs in its own process group so it can be stopped whole,
# in $work with a private /tmp ($work/tmp) so node's /tmp/perf-PID.map files
# stay in $work; perf script reads them through the same private /tmp. The
# commands use paths relative to $work (which may itself be under /tmp).
pids=()
private_tmp() { unshare -m bash -c 'cd "$0" && mount --bind tmp /tmp && exec bash -c "$1"' "$work" "$1"; }
# (set -m: a process group per job, but one session, so nice works across
# jobs: a session per job would be its own scheduler autogroup)
set -m
# A deep workload runs in a cgroup of its own and perf records every CPU
# for that cgroup only: on a shared machine, other people's work would
# otherwise set the input's shape (the shallow input is host-wide).
cg= cgname=
spawn() {
    bash -c "${cg:+echo \$\$ >'$cg/cgroup.procs' || exit 1; }$(declare -f private_tmp); work='$work'; private_tmp \"\$0\"" "$1" >/dev/null 2>&1 &
    pids+=($!)
}
stop_all() {
    local p
    set +m      # no job notices
    for p in "${pids[@]}"; do kill -- "-$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    if [ -n "$cg" ]; then rmdir "$cg" 2>/dev/null || true; fi
}

workload_shallow() {
    spawn "$compile"
    head -c 16000000 /dev/urandom | base64 >"$work/data"
    cat "$src"/src/lib/*/*.c >>"$work/data" 2>/dev/null || true
    spawn "while :; do xz -6 -T1 -c data >/dev/null; gzip -6 -c data >/dev/null; done"
}

# npm's own package tree is the input npm works on: nothing is fetched.
npmdir() {
    local d
    for d in /usr/lib/node_modules/npm /usr/share/nodejs/npm /usr/local/lib/node_modules/npm; do
        [ -f "$d/package.json" ] && { echo "$d"; return; }
    done
    echo "make-input: npm's package directory not found" >&2
    exit 1
}

workload_deep() {
    need node nodejs; need npm npm; need xz xz-utils
    local npm
    npm=$(npmdir)
    mkdir -p "$work/npm"
    echo '{"name":"fk-bench","version":"1.0.0"}' >"$work/npm/package.json"
    cat >"$work/work.js" <<'EOF'
// A JIT-heavy workload with deep call chains: a recursive-descent parser
// and evaluator over generated nested expressions (3 frames per level).
let seed = 1;
function rnd(n) { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed % n; }
function gen(d) { return d <= 0 || rnd(4) === 0 ? String(1 + rnd(9)) : "(" + gen(d - 1) + "+-*"[rnd(3)] + gen(d - 1 - rnd(2)) + ")"; }
function parse(s) { let i = 0;
  function expr() { let v = term(); while (s[i] === "+" || s[i] === "-") { const op = s[i++]; const r = term(); v = op === "+" ? v + r : v - r; } return v; }
  function term() { let v = factor(); while (s[i] === "*") { i++; v = (v * factor()) % 1000003; } return v; }
  function factor() { if (s[i] === "(") { i++; const v = expr(); i++; return v; } return s.charCodeAt(i++) - 48; }
  return expr(); }
let acc = 0;
for (;;) { const e = gen(4 + rnd(9)); for (let k = 0; k < 50; k++) acc ^= parse(e); }
EOF
    export NODE_OPTIONS=--perf-basic-prof
    # npm (60-90 frames deep) now and then, the parser all the time (~21)
    spawn "cd npm && while :; do npm ls --all --prefix '$npm'; npm pack --dry-run '$npm'; sleep 3; done"
    spawn "node work.js"
    spawn "node work.js"
    # compiler and compressor (no frame pointers: shallow stacks) at a lower
    # priority, so most samples are node's deep ones as in a busy node host
    spawn "nice -n 5 bash -c '$compile'"
    head -c 8000000 /dev/urandom | base64 >"$work/data"
    spawn "while :; do nice -n 5 xz -9 -T1 -c data >/dev/null; done"
    unset NODE_OPTIONS
}

workload_deep2() {
    need node nodejs; need npm npm; need g++ g++; need xz xz-utils
    local npm
    npm=$(npmdir)
    mkdir -p "$work/npm"
    echo '{"name":"fk-bench2","version":"1.0.0"}' >"$work/npm/package.json"
    cat >"$work/t.cc" <<'EOF'
#include <algorithm>
#include <map>
#include <regex>
#include <string>
#include <vector>
std::map<std::string, std::vector<int>> f(const std::string &s)
{
    std::map<std::string, std::vector<int>> m;
    std::regex re("([a-z]+)([0-9]+)");
    for (std::sregex_iterator i(s.begin(), s.end(), re), e; i != e; ++i)
        m[(*i)[1]].push_back(std::stoi((*i)[2]));
    for (auto &kv : m)
        std::sort(kv.second.begin(), kv.second.end());
    return m;
}
EOF
    cat >"$work/json.js" <<'EOF'
// Builds, serialises, parses and sorts nested JSON documents.
function doc(n, d) { const o = { id: n, tags: [] }; for (let i = 0; i < 4; i++) o.tags.push("t" + ((n * 31 + i) % 101)); if (d > 0) o.kids = [doc(n * 3 + 1, d - 1), doc(n * 3 + 2, d - 1), doc(n * 3 + 3, d - 1)]; return o; }
function walk(o, f) { f(o); if (o.kids) o.kids.forEach(k => walk(k, f)); }
for (;;) { const s = JSON.stringify(doc(1, 7)); const o = JSON.parse(s); const ids = []; walk(o, x => ids.push(x.id)); ids.sort((a, b) => (a % 17) - (b % 17) || a - b); }
EOF
    export NODE_OPTIONS=--perf-basic-prof
    spawn "cd npm && while :; do npm pack --dry-run '$npm'; done"
    spawn "cd npm && while :; do npm ls --prefix '$npm'; npm view --offline . || true; done"
    spawn "node json.js"
    spawn "node json.js"
    spawn "while :; do nice -n 15 g++ -O2 -c t.cc -o t.o; done"
    head -c 8000000 /dev/urandom | base64 >"$work/data"
    if command -v zstd >/dev/null; then
        spawn "while :; do nice -n 15 zstd -q -19 -c data >/dev/null; nice -n 15 xz -e -6 -T1 -c data >/dev/null; done"
    else
        spawn "while :; do nice -n 15 xz -e -6 -T1 -c data >/dev/null; done"
    fi
    unset NODE_OPTIONS
}

if [ ! -s "$txt" ]; then
    need perf linux-perf; need gcc gcc
    need unshare util-linux
    # not under /tmp: the workloads see $work/tmp as their /tmp
    case $(realpath "$cache")/ in
    /tmp/*) echo "make-input: the cache ($cache) must not be under /tmp (set FLAMEKIT_CACHE)" >&2; exit 1 ;;
    esac
    work=$(mktemp -d "$cache/work.XXXXXX")
    mkdir "$work/tmp"
    # our C sources, compiled in a loop (a copy: $src may be under /tmp)
    cp -r "$src/src" "$work/src"
    compile='while :; do for f in $(find src -name "*.c" | head -40); do gcc -O2 -std=gnu11 -D_GNU_SOURCE -Isrc/lib -Isrc -c $f -o o.o || true; done; done'
    trap 'stop_all; rm -rf "$work"' EXIT
    filter=()
    if [ "$kind" != shallow ]; then
        cgroot=$(findmnt -n -t cgroup2 -o TARGET | head -1)
        if [ -n "$cgroot" ] && cgname=fk-bench.$$ && mkdir "$cgroot/$cgname"; then
            cg=$cgroot/$cgname
            filter=(-e cpu-clock -G "$cgname")
        else
            echo "make-input: no cgroup2 hierarchy: recording the whole host" >&2
        fi
    fi
    "workload_$kind"
    sleep 2
    echo "make-input: recording ${secs}s of perf record -F 999 -a -g ($kind workload)..." >&2
    perf record -q "${filter[@]}" -F 999 -a -g -o "$work/perf.data" -- sleep "$secs" >/dev/null 2>&1
    stop_all
    echo "make-input: perf script..." >&2
    private_tmp "perf script -i perf.data >perf-script.full 2>/dev/null"
    # the first samples up to ~FK_BENCH_MB MB, cut at a sample boundary
    LC_ALL=C awk -v max=$(( ${FK_BENCH_MB:-65} * 1000000 )) \
        '{ print } { n += length($0) + 1 } n >= max && $0 == "" { exit }' \
        "$work/perf-script.full" >"$work/perf-script.txt"
    mv "$work/perf-script.txt" "$txt"
    rm -f "$folded"
fi

if [ ! -s "$folded" ]; then
    fk=${FLAMEKIT:-}
    if [ -n "$fk" ] && "$fk" collapse --help >/dev/null 2>&1; then
        "$fk" collapse -o "$folded.tmp" "$txt"
    else
        fg=${FLAMEGRAPH_DIR:-$HOME/.cache/flamekit/FlameGraph}
        [ -f "$fg/stackcollapse-perf.pl" ] || {
            echo "make-input: need FLAMEKIT=path/to/flamekit (with collapse) or FlameGraph in $fg (git clone https://github.com/brendangregg/FlameGraph $fg)" >&2; exit 1; }
        perl "$fg/stackcollapse-perf.pl" "$txt" >"$folded.tmp"
    fi
    mv "$folded.tmp" "$folded"
fi
echo "$txt"
echo "$folded"
