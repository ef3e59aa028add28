#!/usr/bin/env bash
# Symbolizer on real processes: a Go binary, a binary deleted while running,
# a process in another mount namespace, a JIT perf map; through symlookup
# (scan at first sight, locate, name after exit).
# timeout: 240
. "$(dirname "$0")/lib.sh"
LOOKUP=$FK_BUILD/test/progs/symlookup
PROG=$FK_BUILD/test/progs/symprog


# 1. A Go binary (static, non-PIE; .symtab kept by default)
if need go; then
    mkdir -p "$T/go" && cp "$FK_SRC/test/progs/symgo/main.go" "$T/go/"
    if (cd "$T/go" && GOCACHE=$T/go/cache GO111MODULE=off GOFLAGS= go build -o symgo main.go) >"$T/go.log" 2>&1; then
        start_prog addr "$T/go/symgo" addrs
        out=$("$LOOKUP" "$PROG_PID" "$(printf '%x' $((0x$addr + 4)))")
        stop_prog
        check_eq "Go function via .symtab" "main.fkGoHot" "$out"
        # stripped (-ldflags=-s): no .symtab, names from .gopclntab
        if (cd "$T/go" && GOCACHE=$T/go/cache GO111MODULE=off GOFLAGS= go build -ldflags=-s -o symgo-s main.go) >>"$T/go.log" 2>&1; then
            start_prog addr "$T/go/symgo-s" addrs
            out=$("$LOOKUP" "$PROG_PID" "$(printf '%x' $((0x$addr + 4)))")
            stop_prog
            check_eq "stripped Go function via .gopclntab" "main.fkGoHot" "$out"
        fi
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
# delete once symlookup has located (not after a fixed 0.3 s: an ASan
# symlookup at load 40 had not yet, and named nothing)
for _ in $(seq 600); do grep -qx located "$T/deleted.out" && break; sleep 0.05; done
rm -f "$T/victim"; stop_prog
echo >&$GO_FD; exec {GO_FD}>&-; wait $lk
out=$(grep -vx located "$T/deleted.out" | tr '\n' ' ')
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
    # The program must stay reachable after the private /tmp hides the
    # build tree (which may itself live under /tmp): run a copy from /dev/shm.
    nsprog=/dev/shm/fk-symprog.$$
    cp "$PROG" "$nsprog" && fk_cleanup "rm -f '$nsprog'"
    start_prog addr unshare -p -f -m --propagation private sh -c \
        "mount -t tmpfs fk-tmp /tmp && exec '$nsprog' jit"
    inner=$(cat /proc/$PROG_PID/task/$PROG_PID/children 2>/dev/null | tr -d ' ')
    out=$("$LOOKUP" -a "${inner:-0}" "$(printf '%x' $((0x$addr + 2)))" | tr -d '\n')
    stop_prog
    check_eq "JIT map in another pid namespace" "fk_jit_hot_[j]" "$out"
fi

# ---- End to end: real captures with flamekit run, assertions on the folded output
# a. binary deleted mid-capture (0.5 s into a 2 s run)
cp "$PROG" "$T/deleted-prog"
if run_capture deleted sh -c "(sleep 0.5; rm -f '$T/deleted-prog') & exec '$T/deleted-prog' spin 2"; then
    check_eq "deleted mid-capture: binary is gone" "no" "$([ -e "$T/deleted-prog" ] && echo yes || echo no)"
    # under main, as in b.: an ASan start-up at load 10 was a fifth of the
    # samples (alpha 0.571 and beta 0.196 of all: 0.744 : 0.256 between them)
    a=$(share "$FOLDED" ';fk_symprog_alpha(;|$)' '^deleted-prog;(.*;)?main;')
    b=$(share "$FOLDED" ';fk_symprog_beta(;|$)' '^deleted-prog;(.*;)?main;')
    check_range "deleted mid-capture: fk_symprog_alpha share" "$a" 0.60 0.88
    check_range "deleted mid-capture: fk_symprog_beta share" "$b" 0.12 0.40
    check_nogrep "deleted mid-capture: no unresolved program frames" 'deleted-prog\+0x' "$(zcat "$FOLDED")"
fi

# b. a process in another mount namespace, binary on its private tmpfs
if need unshare; then
    mkdir -p "$T/ns2"
    if run_capture mntns unshare -m --propagation private sh -c \
        "mount -t tmpfs fk-ns '$T/ns2' && cp '$PROG' '$T/ns2/nsprog' && exec '$T/ns2/nsprog' spin 1.5"; then
        # under main: start-up (a sanitizer's, on a loaded host) is not the program's
        a=$(share "$FOLDED" ';fk_symprog_(alpha|beta)(;|$)' '^nsprog;(.*;)?main;')
        check_range "mount namespace: main's samples in the program's functions" "$a" 0.90 1.0
        check_nogrep "mount namespace: no unresolved program frames" 'nsprog\+0x' "$(zcat "$FOLDED")"
    fi
fi

# c. many short-lived processes (each ~10 ms of CPU)
if run_capture short sh -c "i=0; while [ \$i -lt 150 ]; do '$PROG' spin 0.01; i=\$((i+1)); done"; then
    tot=$(zcat "$FOLDED" | awk '/^symprog;/ { n += $NF } END { print n + 0 }')
    check_range "short-lived: samples of the 150 processes (a sanitizer's start-up adds many)" "$tot" 150 20000
    p=$(share "$FOLDED" '\[symprog\+0x' '^symprog;')
    check_range "short-lived: share with unresolved program frames" "$p" 0 0.01
    # Start-up (the dynamic linker) takes a part of each 10 ms life that
    # grows with the host's load: the program's own share is read under main.
    if sanitized; then
        # The sanitizer runtime's interceptors run inside main: leave them out.
        a=$(zcat "$FOLDED" | awk '{ n = $NF; s = $0; sub(/ [0-9]+$/, "", s) }
            s ~ /^symprog;(.*;)?main;/ && s !~ /__(sanitizer|lsan|asan|ubsan|interceptor)/ {
                tot += n; if (s ~ /;fk_symprog_(alpha|beta)(;|$)/) hit += n }
            END { printf "%.3f\n", tot ? hit / tot : 0 }')
        check_range "short-lived: share of main's samples in fk_symprog_* (sanitizer runtime left out)" "$a" 0.90 1.0
    else
        a=$(share "$FOLDED" ';fk_symprog_(alpha|beta)(;|$)' '^symprog;(.*;)?main;')
        check_range "short-lived: share of main's samples in fk_symprog_* (first-touch faults grow with load)" "$a" 0.75 1.0
        # A sample taken inside execve, after the old image is gone and
        # before the new one runs, has no user context at all: its user IP
        # is the old program's, in the new, still empty address space. Its
        # "[unknown]" is the truth, not a symbolizer's or unwinder's failure,
        # and its share grows with the host's load (exec's page faults and
        # allocations), so both figures below leave those samples out and
        # the in-exec share is checked on its own: such samples must be
        # exactly the kernel's exec path under one "[unknown]".
        inexec='^symprog;\[unknown\];entry_SYSCALL_64[^;]*;do_syscall_64[^;]*;__x64_sys_execve'
        e=$(share "$FOLDED" "$inexec" '^symprog;')
        check_range "short-lived: share of samples inside execve" "$e" 0 0.25
        # Likewise a sample taken in exit_group after exit_mm has dropped the
        # address space (freeing it, closing files: 4-5 % of these 10 ms
        # lives, more under load) has no user context: the kernel gives its
        # callchain alone, with no user frame. Such samples are set apart
        # too; the pattern is anchored at the comm, so a set-apart sample has
        # no user frame at all (one taken in exit_group before exit_mm keeps
        # its user stack and is checked below like any other).
        inexit='^symprog;entry_SYSCALL_64[^;]*;do_syscall_64[^;]*;([^;]*;)?__x64_sys_exit_group_\[k\];do_group_exit_\[k\];do_exit_\[k\]'
        x=$(share "$FOLDED" "$inexit" '^symprog;')
        check_range "short-lived: share of samples in exit after the address space is gone" "$x" 0 0.25
        # ld.so's entry point is an untyped symbol (_start) in its debug
        # file; _dl_start_user, where _start jumps once _dl_start returns,
        # has no caller either: both are the bottom of a complete stack.
        u=$(zcat "$FOLDED" | inexec=$inexec inexit=$inexit awk '{ n = $NF; s = $0; sub(/ [0-9]+$/, "", s) }
            s !~ /^symprog;/ || s ~ ENVIRON["inexec"] || s ~ ENVIRON["inexit"] { next }
            { tot += n; if (s ~ /\[unknown\]|\[[^];]*\+0x/) bad += n; if (s ~ /^symprog;(_start|_dl_start_user)(;|$)/) full += n }
            END { printf "%.3f %.3f\n", tot ? bad / tot : 0, tot ? full / tot : 0 }')
        check_range "short-lived: share with unresolved frames (start-up included, in-exec and in-exit apart)" "${u% *}" 0 0.03
        check_range "short-lived: stacks complete down to _start (in-exec and in-exit apart)" "${u#* }" 0.95 1.0
    fi
fi

# d. Go (frame pointers by default): full stacks down to runtime.main
if [ -x "$T/go/symgo" ] && run_capture gocap "$T/go/symgo" spin 1.5; then
    a=$(share "$FOLDED" ';main\.fkGoHot(;|$)' '^symgo;')
    r=$(share "$FOLDED" ';runtime\.main;' '^symgo;.*main\.fkGoHot')
    check_range "Go: samples in main.fkGoHot" "$a" 0.80 1.0
    check_range "Go: its stacks reach runtime.main" "$r" 0.90 1.0
fi

# 6. C++ names demangled (libstdc++'s __cxa_demangle, loaded at run time)
if need g++; then
    cat > "$T/cxx.cc" <<'CXX'
#include <cstdio>
#include <unistd.h>
namespace fkns { __attribute__((noinline)) void hot(unsigned long n) { static volatile unsigned long s; for (unsigned long i = 0; i < n; i++) s += i; } }
int main() { std::printf("%lx\n", (unsigned long)(void *)&fkns::hot); std::fflush(stdout); fkns::hot(10); char c; while (read(0, &c, 1) > 0) {} }
CXX
    if g++ -O1 -o "$T/cxx" "$T/cxx.cc" 2>"$T/cxx.log"; then
        start_prog addr "$T/cxx"
        out=$("$LOOKUP" "$PROG_PID" "$(printf '%x' $((0x$addr + 1)))" | tr -d '\n')
        stop_prog
        check_eq "C++ name demangled" "fkns::hot(unsigned long)" "$out"
    else
        fail "g++ build" "$(cat "$T/cxx.log")"
    fi
else
    skip "C++ name demangled" "no g++"
fi

# 7. stripped binary with its symbols in a .gnu_debuglink file (same dir, .debug/)
if need objcopy && need strip; then
    for where in same sub; do
        d=$T/dbg-$where; mkdir -p "$d/.debug"
        dbg=$d/symprog.debug; [ $where = sub ] && dbg=$d/.debug/symprog.debug
        objcopy --only-keep-debug "$PROG" "$dbg" && strip -s -o "$d/symprog" "$PROG" &&
            (cd "$(dirname "$dbg")" && objcopy --add-gnu-debuglink=symprog.debug "$d/symprog")
        start_prog addrs "$d/symprog" addrs
        read -r a b <<<"$addrs"
        out=$("$LOOKUP" "$PROG_PID" "$a" | tr -d '\n')
        stop_prog
        check_eq "stripped binary, debuglink ($where dir)" "fk_symprog_alpha" "$out"
    done
    # without the debug file: file+offset, never dropped
    rm -f "$T/dbg-same/symprog.debug"
    start_prog addrs "$T/dbg-same/symprog" addrs
    read -r a b <<<"$addrs"
    out=$("$LOOKUP" "$PROG_PID" "$a" | tr -d '\n')
    stop_prog
    check_grep "stripped binary without debug file: [symprog+0x...]" '^\[symprog\+0x[0-9a-f]+\]$' "$out"
fi

# 8. kallsyms addresses hidden (no CAP_SYSLOG in a user namespace): one warning
if need unshare && unshare -U -r true 2>/dev/null; then
    addr=$(awk '$3 == "schedule" { print $1; exit }' /proc/kallsyms)
    out=$(unshare -U -r "$LOOKUP" -k -a $$ "$addr" "$addr" 2>"$T/kw.err" | tr '\n' ' ')
    check_eq "hidden kallsyms: fallback name" "[kernel.kallsyms]_[k] [kernel.kallsyms]_[k] " "$out"
    check_eq "hidden kallsyms: exactly one warning" "1" "$(grep -c 'kptr_restrict' "$T/kw.err")"
fi

# 9. JIT code written after the capture started, map read after the process exited
if run_capture jitcap "$PROG" jitspin 1.5; then
    a=$(share "$FOLDED" ';fk_jit_hot_\[j\](;|$)' '^symprog;')
    check_range "JIT capture: samples in fk_jit_hot_[j]" "$a" 0.80 1.0
fi
jp=$(awk '/^jit pid / { print $3 }' "$T/jitcap.log" 2>/dev/null)
[ -n "$jp" ] && rm -f "/tmp/perf-$jp.map"

# 10. stripped binary, symbols in /usr/lib/debug/.build-id/xx/rest.debug
# (a private tmpfs on /usr/lib/debug for the symbolizer only)
bid=$(readelf -n "$PROG" 2>/dev/null | awk '/Build ID:/ { print $3 }')
if [ -n "$bid" ] && [ -d /usr/lib/debug ] && need unshare && need objcopy; then
    d=$T/bid; mkdir -p "$d"
    objcopy --only-keep-debug "$PROG" "$d/x.debug" && strip -s -o "$d/symprog" "$PROG"
    start_prog addrs "$d/symprog" addrs
    read -r a b <<<"$addrs"
    out=$(unshare -m --propagation private sh -c "mount -t tmpfs fk-dbg /usr/lib/debug &&
        mkdir -p /usr/lib/debug/.build-id/${bid:0:2} && cp '$d/x.debug' /usr/lib/debug/.build-id/${bid:0:2}/${bid:2}.debug &&
        '$LOOKUP' $PROG_PID $b" {PROG_FD}>&- | tr -d '\n')
    stop_prog
    check_eq "stripped binary, build-id debug file" "fk_symprog_beta" "$out"
fi
