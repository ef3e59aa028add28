#!/usr/bin/env bash
# Symbolizer on real processes: a Go binary, a binary deleted while running,
# a process in another mount namespace, a JIT perf map; through symlookup
# (scan at first sight, locate, name after exit).
# timeout: 120
. "$FK_SRC/test/lib.sh"
LOOKUP=$FK_BUILD/test/progs/symlookup
PROG=$FK_BUILD/test/progs/symprog

# start_prog OUTVAR CMD...: run CMD with stdin from a fifo we hold open; the
# first line it prints goes into OUTVAR, its pid into $PROG_PID.
start_prog() {
    local var=$1; shift
    local fifo=$T/fifo.$RANDOM
    mkfifo "$fifo"
    "$@" < "$fifo" > "$fifo.out" 2>&1 &
    PROG_PID=$!
    exec {PROG_FD}> "$fifo"
    local i
    for ((i = 0; i < 100; i++)); do [ -s "$fifo.out" ] && break; sleep 0.05; done
    printf -v "$var" '%s' "$(head -n 1 "$fifo.out")"
}
stop_prog() { exec {PROG_FD}>&-; wait "$PROG_PID" 2>/dev/null; }
fk_cleanup '[ -n "${PROG_PID:-}" ] && kill $PROG_PID 2>/dev/null'

# 1. A Go binary (static, non-PIE; .symtab kept by default)
if need go; then
    mkdir -p "$T/go" && cp "$FK_SRC/test/progs/symgo/main.go" "$T/go/"
    if (cd "$T/go" && GOCACHE=$T/go/cache GO111MODULE=off GOFLAGS= go build -o symgo main.go) >"$T/go.log" 2>&1; then
        start_prog addr "$T/go/symgo" addrs
        out=$("$LOOKUP" "$PROG_PID" "$(printf '%x' $((0x$addr + 4)))")
        stop_prog
        check_eq "Go function via .symtab" "main.fkGoHot" "$out"
    else
        fail "go build" "$(cat "$T/go.log")"
    fi
else
    skip "Go function via .symtab" "golang-go not installed"
fi

# 2. Deleted while running, named after exit (-w: delete between locate and name)
cp "$PROG" "$T/victim"
start_prog addrs "$T/victim" addrs
read -r a b <<<"$addrs"
mkfifo "$T/go-on"
"$LOOKUP" -M -w "$PROG_PID" "$a" "$b" < "$T/go-on" > "$T/deleted.out" {PROG_FD}>&- &
lk=$!
exec {GO_FD}> "$T/go-on"
sleep 0.3; rm -f "$T/victim"; stop_prog
echo >&$GO_FD; exec {GO_FD}>&-; wait $lk
out=$(tr '\n' ' ' < "$T/deleted.out")
check_eq "binary deleted after first sight" "fk_symprog_alpha fk_symprog_beta " "$out"

# 3. Other mount namespace, through /proc/PID/root (-M: no map_files)
if need unshare; then
    mkdir -p "$T/ns"
    start_prog addrs unshare -m --propagation private sh -c \
        "mount -t tmpfs fk-ns '$T/ns' && cp '$PROG' '$T/ns/p' && exec '$T/ns/p' addrs"
    read -r a b <<<"$addrs"
    out=$("$LOOKUP" -M "$PROG_PID" "$a" | tr -d '\n')
    stop_prog
    check_eq "mount namespace via /proc/PID/root" "fk_symprog_alpha" "$out"
else
    skip "mount namespace" "no unshare"
fi

# 4. JIT perf map, annotated
start_prog addr "$PROG" jit
out=$("$LOOKUP" -a "$PROG_PID" "$(printf '%x' $((0x$addr + 2)))" | tr -d '\n')
stop_prog; rm -f "/tmp/perf-$PROG_PID.map"
check_eq "JIT frame from perf-PID.map" "fk_jit_hot_[j]" "$out"

# 5. JIT in its own pid + mount namespace: the map is /tmp/perf-NSPID.map in its root
if need unshare; then
    start_prog addr unshare -p -f -m --propagation private sh -c \
        "mount -t tmpfs fk-tmp /tmp && exec '$PROG' jit"
    inner=$(cat /proc/$PROG_PID/task/$PROG_PID/children 2>/dev/null | tr -d ' ')
    out=$("$LOOKUP" -a "${inner:-0}" "$(printf '%x' $((0x$addr + 2)))" | tr -d '\n')
    stop_prog
    check_eq "JIT map in another pid namespace" "fk_jit_hot_[j]" "$out"
fi
