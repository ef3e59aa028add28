# Sourced by every test/t-*.sh. Results are lines "PASS: name: what",
# "FAIL: name: what", "SKIP: name: what (why)"; test/run counts them.
# A file also runs on its own, from anywhere, like git's t/tNNNN-*.sh:
#   test/t-NAME.sh [--build=DIR] [--run=SPEC] [-i] [-v]
# --build: the build tree (default: $FK_BUILD, else build/ in the source
# tree); --run: only the checks SPEC selects (numbers as the file counts
# them, ranges a-b, a- or -b, or words of their description, comma
# separated; a leading ! excludes), the others are SKIPped without running
# what they check; -i: stop at the first failure; -v: the checks' numbers.
set -u
FK_SRC=${FK_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
_fk_run='' _fk_immediate='' _fk_verbose=''
for _fk_a in "$@"; do
    case $_fk_a in
    --build=*) FK_BUILD=$(cd "${_fk_a#--build=}" && pwd) || exit 2; FLAMEKIT=$FK_BUILD/flamekit ;;
    --run=*) _fk_run=${_fk_a#--run=} ;;
    -i|--immediate) _fk_immediate=1 ;;
    -v|--verbose) _fk_verbose=1 ;;
    -h|--help) sed -n '3,10p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "$(basename "$0"): unknown option $_fk_a (--build=DIR, --run=SPEC, -i, -v)" >&2; exit 2 ;;
    esac
done
if [ -z "${FK_BUILD:-}" ]; then
    if [ -x "$FK_SRC/build/flamekit" ]; then FK_BUILD=$FK_SRC/build; else FK_BUILD=$FK_SRC; fi
fi
FLAMEKIT=${FLAMEKIT:-$FK_BUILD/flamekit}
[ -x "$FLAMEKIT" ] || { echo "$(basename "$0"): $FLAMEKIT not built (--build=DIR, or make first)" >&2; exit 2; }
export FK_SRC FK_BUILD FLAMEKIT
# python3 is the system's (Debian's /usr/bin/python3, what install-deps
# installs): a version manager's shim ahead of it in PATH (pyenv's
# ~/.pyenv/shims/python3, a script that resolves the version on each
# call) cost 0.35 s a call on an idle machine here, several seconds under
# load, and the files call python3 hundreds of times a suite.
case ":$PATH:" in
*/.pyenv/shims:*)
    PATH=$(printf '%s\n' "$PATH" | tr : '\n' | grep -v '/\.pyenv/shims$' | paste -sd: -)
    export PATH ;;
esac
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$FK_SRC/test/lsan.supp:print_suppressions=0:intercept_tls_get_addr=0}
TNAME=${FK_TEST_NAME:-$(basename "$0" .sh)}
T=$(mktemp -d "${TMPDIR:-/tmp}/fk-$TNAME.XXXXXX")
_fk_cleanups=()
fk_cleanup() { _fk_cleanups+=("$1"); }
_fk_exit() {
    local i
    for ((i = ${#_fk_cleanups[@]} - 1; i >= 0; i--)); do eval "${_fk_cleanups[$i]}" || true; done
    [ -n "${FK_KEEP_TMP:-}" ] || rm -rf "$T"
}
trap _fk_exit EXIT
# fk_cgroup_cleanup DIR: DIR is a cgroup v2 directory the test made. At
# exit its processes (its sub-cgroups' too) are killed and it is removed,
# deepest first, waiting up to 5 s for the kernel to let the last ones go:
# a plain rmdir registered before the workload's kill ran first and failed
# on a test cut short, leaving empty fk-* cgroups behind.
fk_cgroup_cleanup() { fk_cleanup "_fk_cgroup_rm '$1'"; }
# fk_perf_maps_cleanup: the /tmp/perf-PID.map files that appear while the
# test runs (JIT maps of node and java, maps the test plants) are removed at
# exit. One left behind is read for the next process given that pid (pids
# wrap at 32768 here): t-names once found node's map from t-unwind where it
# planted a symlink ("ln: ... File exists"), and its check got no warning.
fk_perf_maps_cleanup() {
    ls /tmp/perf-*.map 2>/dev/null | sort > "$T/perf-maps.before"
    fk_cleanup 'ls /tmp/perf-*.map 2>/dev/null | sort | comm -13 "$T/perf-maps.before" - | xargs -r rm -f'
}
# fk_perf_map_path PID: /tmp/perf-PID.map for a process of the test that
# writes no map of its own, with any stale file there (a dead process's
# that had the pid before) removed, so the test plants on an empty path.
fk_perf_map_path() { rm -f "/tmp/perf-$1.map"; echo "/tmp/perf-$1.map"; }
_fk_cgroup_rm() {
    [ -d "$1" ] || return 0
    [ -e "$1/cgroup.kill" ] && echo 1 >"$1/cgroup.kill" 2>/dev/null
    local i d
    for i in $(seq 100); do
        for d in $(find "$1" -depth -type d 2>/dev/null); do rmdir "$d" 2>/dev/null; done
        [ -d "$1" ] || return 0
        sleep 0.05
    done
    echo "$(basename "$0"): cannot remove the test's cgroup $1: $(wc -l <"$1/cgroup.procs") processes left in it" >&2
}

# Checks are numbered in the order they report (--run). After skip_rest
# WHY (a setup step failed, or what the rest needs is missing) every later
# check reports SKIP instead of running.
_fk_n=0 _fk_rest=''
# _fk_selected N WHAT: whether --run selects check N. Items are read in
# order, each selecting (or with a leading !, deselecting) what it names;
# a first item that deselects starts from everything selected.
_fk_selected() {
    [ -z "$_fk_run" ] && return 0
    local item neg lo hi sel=0 hit
    case $_fk_run in '!'*) sel=1 ;; esac
    local IFS=,
    for item in $_fk_run; do
        neg=0; case $item in '!'*) neg=1; item=${item#!} ;; esac
        hit=0
        case $item in
        '') ;;
        *[!0-9-]*) case $2 in *"$item"*) hit=1 ;; esac ;;
        *-*) lo=${item%-*} hi=${item#*-}; [ "$1" -ge "${lo:-1}" ] && [ "$1" -le "${hi:-999999}" ] && hit=1 ;;
        *) [ "$1" -eq "$item" ] && hit=1 ;;
        esac
        [ $hit = 1 ] && sel=$((1 - neg))
    done
    [ $sel = 1 ]
}
# _fk_gate WHAT: numbers the next check; false (and SKIP reported) when
# --run leaves it out or skip_rest was called.
_fk_gate() {
    _fk_n=$((_fk_n + 1))
    if [ -n "$_fk_rest" ]; then echo "SKIP: $TNAME: $1 ($_fk_rest)"; return 1; fi
    if ! _fk_selected "$_fk_n" "$1"; then echo "SKIP: $TNAME: $1 (--run)"; return 1; fi
    [ -z "$_fk_verbose" ] || echo "# $_fk_n"
    return 0
}
# FK_TEST_TIMES=FILE: each check's second (bash's $SECONDS since the file
# started) goes to FILE, to find where a test file spends its time.
_fk_pass() {
    echo "PASS: $TNAME: $1"
    [ -z "${FK_TEST_TIMES:-}" ] || echo "$SECONDS $TNAME: $1" >>"$FK_TEST_TIMES"
}
_fk_fail() {
    echo "FAIL: $TNAME: $1"; [ $# -gt 1 ] && printf '%s\n' "$2" | head -n 20 | sed 's/^/    /'
    [ -z "$_fk_immediate" ] || exit 1
    return 0
}
pass() { _fk_gate "$1" && _fk_pass "$1"; return 0; }
fail() { _fk_gate "$1" && _fk_fail "$@"; return 0; }
skip() { _fk_n=$((_fk_n + 1)); echo "SKIP: $TNAME: $1 (${2:-skipped})"; }
skip_rest() { _fk_rest=$1; }

# check WHAT CMD...: passes when CMD exits 0.
check() {
    local w=$1; shift; local o
    _fk_gate "$w" || return 0
    if o=$("$@" 2>&1); then _fk_pass "$w"; else _fk_fail "$w" "$o"; fi
}
# check_fails WHAT CMD...: passes when CMD exits non-zero (and did not crash).
check_fails() {
    local w=$1; shift; local o rc
    _fk_gate "$w" || return 0
    o=$("$@" 2>&1); rc=$?
    if [ $rc -eq 0 ]; then _fk_fail "$w (exited 0)" "$o"
    elif [ $rc -ge 128 ]; then _fk_fail "$w (killed by signal $((rc - 128)))" "$o"
    else _fk_pass "$w"; fi
}
check_eq() { if [ "$2" = "$3" ]; then pass "$1"; else fail "$1" "expected: $2
     got: $3"; fi; }
# check_grep WHAT REGEX FILE-OR-STRING
check_grep() {
    if [ -f "$3" ]; then grep -Eq -- "$2" "$3"; else printf '%s' "$3" | grep -Eq -- "$2"; fi \
        && pass "$1" || fail "$1" "no match for /$2/ in: $(if [ -f "$3" ]; then head -c 600 "$3"; else printf '%s' "$3" | head -c 600; fi)"
}
check_nogrep() {
    if [ -f "$3" ]; then grep -Eq -- "$2" "$3"; else printf '%s' "$3" | grep -Eq -- "$2"; fi \
        && fail "$1" "unexpected match for /$2/" || pass "$1"
}
# check_range WHAT VALUE LOW HIGH (numbers, may be fractional)
check_range() {
    if awk -v v="$2" -v lo="$3" -v hi="$4" 'BEGIN { exit !(v + 0 >= lo + 0 && v + 0 <= hi + 0) }'; then
        pass "$1 ($2 in [$3, $4])"
    else
        fail "$1" "value $2 not in [$3, $4]"
    fi
}
need() { command -v "$1" >/dev/null 2>&1; }
# Headless Chromium (Debian's chromium) driven by test/browser.js over the
# DevTools pipe: browser STEP... runs test/svg-scenarios.js steps and prints
# their "name=value" lines; val FILE NAME reads one back.
chromium_bin() { local c; for c in "${FK_CHROMIUM:-}" /usr/bin/chromium /usr/bin/chromium-browser; do [ -n "$c" ] && [ -x "$c" ] && { echo "$c"; return 0; }; done; return 1; }
# sanitized: flamekit is an AddressSanitizer build (slower, and its runtime
# maps libasan); checks of what does not depend on the build run only in the
# plain build's suite.
sanitized() { ldd "$FLAMEKIT" 2>/dev/null | grep -q libasan; }
have_browser() { need node && chromium_bin >/dev/null; }
# One Chromium serves every browser call of a test file (browser.js
# --serve; a launch and close took 1.5-2 s on a quiet host, 10 s and more
# under load, more than most calls' steps): a call sends its steps and its stdout and stderr as /proc paths of copies
# of them (fd 1 itself is the request fifo while printf writes to it), so
# the output goes where the call's redirections say; then it waits up to
# 150 s for the exit status. A server gone or silent is ended; the next
# call starts a new one.
browser() {
    if [ -n "${_fk_browser_pid:-}" ] && ! kill -0 "$_fk_browser_pid" 2>/dev/null; then
        browser_stop
    fi
    if [ -z "${_fk_browser_pid:-}" ]; then
        local q=$T/browser.$BASHPID
        rm -f "$q.req" "$q.ans"
        mkfifo "$q.req" "$q.ans" || return 1
        FK_CHROMIUM=$(chromium_bin) node "$FK_SRC/test/browser.js" --serve "$FK_SRC/test/svg-scenarios.js" \
            "$q.req" "$q.ans" </dev/null >>"$q.log" 2>&1 &
        _fk_browser_pid=$! _fk_browser_log=$q.log
        # read-write opens: neither waits for the other side
        exec {_fk_browser_req}<>"$q.req" {_fk_browser_ans}<>"$q.ans"
    fi
    local out err rc= i
    exec {out}>&1 {err}>&2
    printf '%s\0' $(($# + 2)) "/proc/$BASHPID/fd/$out" "/proc/$BASHPID/fd/$err" "$@" >&"$_fk_browser_req"
    for ((i = 0; i < 150; i++)); do
        read -r -t 1 rc <&"$_fk_browser_ans" && break
        rc=
        kill -0 "$_fk_browser_pid" 2>/dev/null || break
    done
    exec {out}>&- {err}>&-
    [ -n "$rc" ] && return "$rc"
    echo "browser: no answer from browser.js: $(tail -c 600 "$_fk_browser_log" 2>/dev/null)" >&2
    browser_stop
    return 1
}
# End the browser server (the cleanup at exit does): an empty request
# lets it close Chromium; it and its Chromium are killed if it has not
# ended in 10 s.
browser_stop() {
    [ -n "${_fk_browser_pid:-}" ] || return 0
    printf '0\0' >&"$_fk_browser_req" 2>/dev/null
    exec {_fk_browser_req}>&- {_fk_browser_ans}>&-
    local i
    for ((i = 0; i < 100; i++)); do kill -0 "$_fk_browser_pid" 2>/dev/null || break; sleep 0.1; done
    pkill -9 -P "$_fk_browser_pid" 2>/dev/null
    kill -9 "$_fk_browser_pid" 2>/dev/null
    wait "$_fk_browser_pid" 2>/dev/null
    _fk_browser_pid=
}
fk_cleanup browser_stop
val() { awk -v k="$2=" 'index($0, k) == 1 { print substr($0, length(k) + 1); exit }' "$1"; }

# wait_for_file FILE SECONDS: until FILE is non-empty (a port, a "ready"
# line, a program's first output), polled every 50 ms; 1 if it never is
wait_for_file() {
    local i
    for ((i = 0; i < $2 * 20; i++)); do [ -s "$1" ] && return 0; sleep 0.05; done
    return 1
}

# ---- live programs and captures (symbolizer tests)
# start_prog OUTVAR CMD...: run CMD with stdin from a fifo we hold open; the
# first line it prints goes into OUTVAR, its pid into $PROG_PID.
start_prog() {
    local var=$1; shift
    local fifo=$T/fifo.$RANDOM
    mkfifo "$fifo"
    "$@" < "$fifo" > "$fifo.out" 2>&1 &
    PROG_PID=$!
    exec {PROG_FD}> "$fifo"
    wait_for_file "$fifo.out" 5
    printf -v "$var" '%s' "$(head -n 1 "$fifo.out")"
}
stop_prog() { exec {PROG_FD}>&-; wait "$PROG_PID" 2>/dev/null; }
fk_cleanup '[ -n "${PROG_PID:-}" ] && kill $PROG_PID 2>/dev/null'
# share FOLDED REGEX [FILTER [EXCLUDE]]: share (0..1) of samples whose stack
# matches REGEX among those matching FILTER (default: all) and not EXCLUDE.
# The sanitizer runtime's own frames (start-up, interceptors, the leak scan
# at exit), for EXCLUDE: they take a varying part of a short life.
FK_SANITIZER_FRAMES='__(sanitizer|lsan|asan|ubsan|interceptor)'
share() {
    zcat "$1" | awk -v re="$2" -v f="${3:-.}" -v x="${4:-}" '
        { n = $NF; s = $0; sub(/ [0-9]+$/, "", s) }
        s ~ f && (x == "" || s !~ x) { tot += n; if (s ~ re) hit += n }
        END { printf "%.3f\n", tot ? hit / tot : 0 }'
}
run_capture() {   # run_capture NAME CMD...: folded.gz path in $FOLDED
    local name=$1; shift
    rm -rf "$T/$name"
    "$FLAMEKIT" run -q --no-svg -F 499 -o "$T/$name" -- "$@" >"$T/$name.log" 2>&1
    FOLDED=$(ls "$T/$name"/*.folded.gz 2>/dev/null | head -n 1)
    [ -n "$FOLDED" ] || { fail "$name: capture produced no folded output" "$(cat "$T/$name.log")"; return 1; }
}
# verify_units WHAT DIR FLAMEKIT-BINARY: systemd-analyze verify the
# host-profile service and timer found in DIR, with ExecStart pointed at the
# given binary (verify checks that the program exists and is executable).
verify_units() {
    need systemd-analyze || { skip "$1" "systemd-analyze not installed"; return 0; }
    local d
    d=$(mktemp -d "$T/units.XXXXXX")
    sed "s#^ExecStart=flamekit #ExecStart=$3 #" "$2/flamekit-host-profile.service" >"$d/flamekit-host-profile.service"
    cp "$2/flamekit-host-profile.timer" "$d/"
    check "$1" systemd-analyze verify --man=no "$d/flamekit-host-profile.service" "$d/flamekit-host-profile.timer"
}
