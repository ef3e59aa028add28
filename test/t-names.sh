#!/usr/bin/env bash
# Names for code without symbols: stripped functions named by their FDE's
# start (test binary and Debian's liblzma under xz), MiniDebugInfo
# (.gnu_debugdata), debug files from a real debuginfod server, and JIT maps
# written late (java -XX:+DumpPerfMapAtExit, jcmd Compiler.perfmap, node).
# timeout: 420
. "$(dirname "$0")/lib.sh"
LOOKUP=$FK_BUILD/test/progs/symlookup
PROG=$FK_BUILD/test/progs/symprog
unset DEBUGINFOD_URLS   # only the debuginfod part below uses a server

# vaddr NAME: the ELF address of function NAME in the unstripped test program
vaddr() { nm "$PROG" | awk -v n="$1" '$3 == n { print $1; exit }' | sed 's/^0*//'; }

# 1. A stripped binary: every address in a function is named by its start
if need strip && need nm; then
    mkdir -p "$T/fde" && strip -s -o "$T/fde/symprog" "$PROG"
    start_prog addrs "$T/fde/symprog" addrs
    read -r a b <<<"$addrs"
    out=$("$LOOKUP" "$PROG_PID" "$(printf '%x' $((0x$a + 4)))" "$(printf '%x' $((0x$a + 9)))" "$b" | tr '\n' ' ')
    stop_prog
    check_eq "stripped: two addresses of one function, one name (its FDE start)" \
        "[symprog+0x$(vaddr fk_symprog_alpha)] [symprog+0x$(vaddr fk_symprog_alpha)] [symprog+0x$(vaddr fk_symprog_beta)] " "$out"
fi

# 2. Debian's xz: liblzma is stripped (exported symbols only); its internal
# functions must each be one frame, at an FDE start that readelf lists.
lzma=$(ldd "$(command -v xz)" 2>/dev/null | awk '/liblzma/ { print $3 }')
if [ -n "$lzma" ] && need readelf; then
    lzma=$(readlink -f "$lzma"); lb=$(basename "$lzma")
    head -c 2000000 /dev/urandom | base64 > "$T/xz.in"
    if run_capture xz xz -9 -k -c -T1 "$T/xz.in"; then
        zcat "$FOLDED" | sed 's/ [0-9]*$//' | tr ';' '\n' | grep -F "[$lb+0x" | sort -u > "$T/xz.frames"
        # FDE ranges (pc=START..END). A frame inside one must be named by its
        # start; a pc in no FDE (.init's few instructions, run once by the
        # loader: 0x4000 was sampled once in CI run 12) has nothing to be
        # named by and keeps its address.
        readelf --debug-dump=frames "$lzma" | awk '$4 == "FDE" { split($6, r, /[=.]+/); print r[2], r[3] }' \
            > "$T/fde.ranges"
        n=$(wc -l < "$T/xz.frames")
        bad=$(sed "s/^\[$lb+0x//; s/\]\$//" "$T/xz.frames" | sort -u |
            awk -v ranges="$T/fde.ranges" '
                function hex(h,   i, v, c) { v = 0; h = tolower(h)
                    for (i = 1; i <= length(h); i++) { c = index("0123456789abcdef", substr(h, i, 1)) - 1; v = v * 16 + c }
                    return v }
                BEGIN { while ((getline l < ranges) > 0) { split(l, f, " "); s[++k] = hex(f[1]); e[k] = hex(f[2]) } }
                { a = hex($1); for (i = 1; i <= k; i++) if (a >= s[i] && a < e[i]) { if (a != s[i]) print $1; break } }' |
            head -5)
        check_range "xz -9: distinct liblzma frames (one per function)" "$n" 3 40
        check_eq "xz -9: every liblzma frame in an .eh_frame FDE is named by its start" "" "$bad"
        check_range "xz -9: share of xz samples in liblzma" \
            "$(share "$FOLDED" "\\[$lb\\+0x" '^xz;')" 0.70 1.0
    fi
    # .init and .fini have no FDE and no .dynsym entry: named _init and _fini
    # from the dynamic section (DT_INIT, DT_FINI), sized by their sections,
    # so the PLT right after .init keeps its own name.
    init=$(readelf -dW "$lzma" | awk '$2 == "(INIT)" { print $3 }')
    fini=$(readelf -dW "$lzma" | awk '$2 == "(FINI)" { print $3 }')
    plt=$(readelf -SW "$lzma" | sed 's/^ *\[ *[0-9]*\] *//' | awk '$1 == ".plt" { print $3 }')
    [ -n "$plt" ] && plt=$(printf '0x%x' "$((16#$plt))")
    if [ -n "$init" ] && [ -n "$fini" ] && [ -n "$plt" ]; then
        mkfifo "$T/xz.fifo"; exec {xzfd}<>"$T/xz.fifo"
        xz -c < "$T/xz.fifo" > /dev/null & xzpid=$!
        for ((i = 0; i < 100; i++)); do grep -q "$lb" /proc/$xzpid/maps 2>/dev/null && break; sleep 0.05; done
        base=$(awk -v f="$lzma" '$6 == f && $3 == "00000000" { split($1, a, "-"); print a[1]; exit }' /proc/$xzpid/maps)
        out=$("$LOOKUP" "$xzpid" "$(printf '%x' $((0x$base + init)))" "$(printf '%x' $((0x$base + init + 5)))" \
            "$(printf '%x' $((0x$base + fini)))" "$(printf '%x' $((0x$base + plt)))" | tr '\n' ' ')
        kill $xzpid; exec {xzfd}>&-; wait $xzpid 2>/dev/null
        check_eq "liblzma: DT_INIT and DT_FINI named _init and _fini, the PLT after .init not" \
            "_init _init _fini [$lb+$plt] " "$out"
    else
        skip "liblzma: _init and _fini" "no DT_INIT, DT_FINI or .plt in $lb"
    fi
else
    skip "xz -9 liblzma frames" "no xz linked with liblzma"
fi

# 3. MiniDebugInfo (.gnu_debugdata), made the way Fedora's find-debuginfo
# does: the function symbols .dynsym lacks, xz-compressed, in a section of
# the stripped binary. Debian ships no such binary; other vendors' do.
# mini LIB: the names of LIB's function symbols from its .gnu_debugdata
if need objcopy && need xz && need nm; then
    d=$T/mini; mkdir -p "$d"
    nm -D --format=posix --defined-only "$PROG" | awk '{ print $1 }' | sort > "$d/dynsyms"
    nm --format=posix --defined-only "$PROG" | awk '$2 ~ /^[Tt]$/ { print $1 }' | sort > "$d/funcsyms"
    comm -13 "$d/dynsyms" "$d/funcsyms" > "$d/keep"
    objcopy --only-keep-debug "$PROG" "$d/debug" &&
        objcopy -S --remove-section .gdb_index --remove-section .comment --keep-symbols="$d/keep" "$d/debug" "$d/mini" &&
        strip --strip-all -R .comment -o "$d/plain" "$PROG" && xz -k "$d/mini" &&
        objcopy --add-section .gnu_debugdata="$d/mini.xz" "$d/plain" "$d/symprog"
    # a corrupt section, and one that inflates past the cap (128 MiB of zeros)
    head -c $(( $(stat -c %s "$d/mini.xz") / 2 )) "$d/mini.xz" > "$d/trunc.xz"
    objcopy --add-section .gnu_debugdata="$d/trunc.xz" "$d/plain" "$d/trunc"
    head -c 134217728 /dev/zero | xz -1 > "$d/bomb.xz"
    objcopy --add-section .gnu_debugdata="$d/bomb.xz" "$d/plain" "$d/bomb"
    check_eq "MiniDebugInfo: test binary has no .symtab" "" "$(readelf -S "$d/symprog" | grep -F .symtab)"
    for v in symprog plain trunc bomb; do
        start_prog addrs "$d/$v" addrs
        read -r a b <<<"$addrs"
        start=$(date +%s%N)
        out=$("$LOOKUP" "$PROG_PID" "$a" "$(printf '%x' $((0x$b + 3)))" 2>"$d/$v.err" | tr '\n' ' ')
        ms=$(( ($(date +%s%N) - start) / 1000000 ))
        stop_prog
        case $v in
        symprog) check_eq "MiniDebugInfo: local functions named" "fk_symprog_alpha fk_symprog_beta " "$out" ;;
        *) check_eq "MiniDebugInfo: $v: function starts only" \
               "[$v+0x$(vaddr fk_symprog_alpha)] [$v+0x$(vaddr fk_symprog_beta)] " "$out"
           [ $v = bomb ] && check_range "MiniDebugInfo: oversized section given up (ms)" "$ms" 0 5000
           [ $v = bomb ] && check_grep "MiniDebugInfo: bomb: the section given up is said" \
               "symbols of .*/bomb skipped: .*memory budget" "$(cat "$d/$v.err")" ;;
        esac
    done
fi
# A real vendor library with MiniDebugInfo, where one is installed
# (google-cloud-cli bundles a CentOS-built libffi).
ffi=$(ls /usr/lib/google-cloud-sdk/platform/bundledpythonunix/lib/python3*/site-packages/cffi.libs/libffi-*.so* 2>/dev/null | head -n 1)
if [ -n "$ffi" ] && readelf -S "$ffi" 2>/dev/null | grep -q gnu_debugdata && need python3; then
    objcopy --dump-section .gnu_debugdata="$T/ffi.xz" "$ffi" "$T/ffi.copy" && xz -dc "$T/ffi.xz" > "$T/ffi.mini"
    # a local function with a size, and one address inside it
    read -r fv fs fn < <(nm -S "$T/ffi.mini" | awk '$3 == "t" && $2 != "" { print $1, $2, $4; exit }')
    start_prog ready python3 -c 'import ctypes, sys; ctypes.CDLL(sys.argv[1]); print("ready", flush=True); sys.stdin.read()' "$ffi"
    base=$(awk -v f="$ffi" '$6 == f && $3 == "00000000" { split($1, r, "-"); print r[1]; exit }' /proc/$PROG_PID/maps)
    out=$("$LOOKUP" "$PROG_PID" "$(printf '%x' $((0x$base + 0x$fv + 0x$fs / 2)))" | tr -d '\n')
    stop_prog
    check_eq "MiniDebugInfo of a vendor library ($(basename "$ffi")): $fn" "$fn" "$out"
else
    skip "MiniDebugInfo of a vendor library" "none installed; Debian ships no .gnu_debugdata"
fi

# 4. JIT maps that appear after the first sample. Maps left in /tmp by the
# programs below are removed at exit.
fk_perf_maps_cleanup

# a. written at exit, in a private /tmp of another mount + pid namespace: only
# reachable through the /tmp the symbolizer held while the process lived
if need unshare; then
    nsprog=/dev/shm/fk-names-symprog.$$
    cp "$PROG" "$nsprog" && fk_cleanup "rm -f '$nsprog'"
    if run_capture jitns unshare -p -f -m --propagation private sh -c \
        "mount -t tmpfs fk-tmp /tmp && exec '$nsprog' jitspin 1.5 atexit"; then
        check_range "JIT map written at exit in a private /tmp: samples in fk_jit_hot" \
            "$(share "$FOLDED" ';fk_jit_hot_\[j\]$' "^$(basename "$nsprog" | cut -c1-15);(.*;)?__libc_start_call_main;" "$FK_SANITIZER_FRAMES")" 0.80 1.0
    fi
fi

# hostile maps: a FIFO is never opened (no hang), a symlink never followed
for kind in fifo symlink; do
    start_prog addr "$PROG" jit nomap
    m=$(fk_perf_map_path "$PROG_PID")
    if [ $kind = fifo ]; then mkfifo "$m"; else echo "$addr 40 fk_planted" > "$T/planted.map"; ln -s "$T/planted.map" "$m"; fi
    out=$(timeout 20 "$LOOKUP" -a "$PROG_PID" "$(printf '%x' $((0x$addr + 2)))" 2>"$T/hostile.err"; echo "rc=$?")
    rm -f "$m"; stop_prog
    check_eq "perf map that is a $kind: not read" "[JIT] tid $PROG_PID""_[j] rc=0" "$(echo $out)"
    check_grep "perf map that is a $kind: skipped, said" "perf map /tmp/perf-$PROG_PID\\.map of pid $PROG_PID skipped" "$T/hostile.err"
done
# a map last written before the process started (an earlier process's, the
# pid reused) is not read, said; the same map written after it started is
start_prog addr "$PROG" jit nomap
m=$(fk_perf_map_path "$PROG_PID")
for age in stale fresh; do
    echo "$addr 40 fk_planted" >"$m"
    [ $age = fresh ] || touch -d '-1 hour' "$m"
    out=$(timeout 20 "$LOOKUP" -a "$PROG_PID" "$(printf '%x' $((0x$addr + 2)))" 2>"$T/age.err"; echo "rc=$?")
    if [ $age = stale ]; then
        check_eq "perf map older than its process: not read" "[JIT] tid $PROG_PID""_[j] rc=0" "$(echo $out)"
        check_grep "perf map older than its process: skipped, said" \
            "perf map /tmp/perf-$PROG_PID\\.map of pid $PROG_PID skipped: it was last written before the process started" "$T/age.err"
    else
        check_eq "perf map written after its process started: read" "fk_planted_[j] rc=0" "$(echo $out)"
    fi
done
rm -f "$m"; stop_prog

# b. java -XX:+DumpPerfMapAtExit: the JVM writes its map when it exits
if need java && need javac; then
    mkdir -p "$T/java"
    cat > "$T/java/Hot.java" <<'JAVA'
public class Hot {
    static long fkHotLoop(long n) { long s = 0; for (long i = 0; i < n; i++) s += (i * 7) ^ (s >>> 3); return s; }
    // Hot SECONDS [STOPFILE]: spin SECONDS, or until STOPFILE exists
    public static void main(String[] a) throws Exception {
        long end = System.nanoTime() + (long) (Double.parseDouble(a[0]) * 1e9), s = 0;
        java.io.File stop = a.length > 1 ? new java.io.File(a[1]) : null;
        System.out.println("ready " + ProcessHandle.current().pid());
        for (long k = 0; System.nanoTime() < end; k++) {
            s += fkHotLoop(100000);
            if (stop != null && k % 1000 == 0 && stop.exists()) break;
        }
        System.out.println(s == 42 ? "" : "done");
    }
}
JAVA
    if javac -d "$T/java" "$T/java/Hot.java" 2>"$T/javac.log"; then
        # share of the JVM's main thread ("java") samples with the method at the leaf
        jshare() { share "$FOLDED" ';long Hot\.fkHotLoop\(long\)_\[j\]$' '^java;'; }
        if run_capture javaexit java -XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit -cp "$T/java" Hot 3; then
            check_range "java -XX:+DumpPerfMapAtExit: samples in Hot.fkHotLoop" "$(jshare)" 0.50 1.0
        fi
        # c. without a map: no name (the control for d)
        if run_capture javanomap java -cp "$T/java" Hot 3; then
            check_range "java without a perf map: samples named Hot.fkHotLoop" "$(jshare)" 0 0
        fi
        # d. jcmd PID Compiler.perfmap mid-capture (from outside the capture)
        rm -rf "$T/javajcmd"
        # The JVM spins until jcmd has written the map (jcmd is a JVM too: slow
        # to attach on a loaded host), then a little longer.
        "$FLAMEKIT" run -q --no-svg -F 499 -o "$T/javajcmd" -- java -cp "$T/java" Hot 60 "$T/jcmd.stop" >"$T/jcmd.out" 2>"$T/javajcmd.log" &
        fk=$!
        jpid=
        for ((i = 0; i < 300; i++)); do
            jpid=$(awk '/^ready / { print $2 }' "$T/jcmd.out"); [ -n "$jpid" ] && break; sleep 0.1
        done
        sleep 1.5
        [ -n "$jpid" ] && timeout 50 jcmd "$jpid" Compiler.perfmap >"$T/jcmd.log" 2>&1
        sleep 0.5
        touch "$T/jcmd.stop"
        wait $fk
        check_grep "jcmd Compiler.perfmap wrote 0x addresses" '^0x[0-9a-f]+ 0x[0-9a-f]+ ' "/tmp/perf-$jpid.map"
        FOLDED=$(ls "$T/javajcmd"/*.folded.gz 2>/dev/null | head -n 1)
        if [ -n "$FOLDED" ]; then
            check_range "jcmd Compiler.perfmap mid-capture: samples in Hot.fkHotLoop" "$(jshare)" 0.50 1.0
        else
            fail "jcmd capture produced no folded output" "$(cat "$T/javajcmd.log")"
        fi
    else
        fail "javac" "$(cat "$T/javac.log")"
    fi
else
    skip "java JIT maps" "no java/javac"
fi

# e. node --perf-basic-prof: the map grows while it runs
if need node; then
    cat > "$T/hot.js" <<'JS'
function fkNodeHot(n) { let s = 0; for (let i = 0; i < n; i++) s = (s + i * 7) % 1000003; return s; }
const end = Date.now() + 2500; let t = 0;
while (Date.now() < end) t += fkNodeHot(100000);
console.log(t > 0 ? "done" : "");
JS
    cd "$T" || exit 1    # node writes isolate-*-v8.log files into its cwd
    if run_capture node node --perf-basic-prof "$T/hot.js"; then
        check_range "node --perf-basic-prof: samples in fkNodeHot" \
            "$(share "$FOLDED" ';[^;]*fkNodeHot[^;]*_\[j\]$' '^node;')" 0.50 1.0
    fi
    cd - >/dev/null || exit 1
else
    skip "node JIT map" "no node"
fi

# 5. debuginfod: a real server (elfutils' debuginfod) on 127.0.0.1, in a
# private network namespace, indexing the separated debug file of a stripped
# program; its names must come only through the server, within the bounds.
if need debuginfod && need gcc && need objcopy && need unshare && need nsenter && need curl; then
    d=$T/di; mkdir -p "$d/srv"
    cat > "$d/di.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
volatile unsigned long fk_di_sink;
__attribute__((noinline)) void fk_di_hot(unsigned long n) { for (unsigned long i = 0; i < n; i++) fk_di_sink += i * 5; }
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
int main(int argc, char **argv)
{
    if (argc > 1) { double end = now() + atof(argv[1]); while (now() < end) fk_di_hot(1000000); return 0; }
    printf("%lx\n", (unsigned long)&fk_di_hot); fflush(stdout);
    char c; while (read(0, &c, 1) > 0) {}
    return 0;
}
C
    gcc -g -O1 -o "$d/di" "$d/di.c" && objcopy --only-keep-debug "$d/di" "$d/srv/di.debug" &&
        strip -s -o "$d/di-stripped" "$d/di"
    bid=$(readelf -n "$d/di" | awk '/Build ID:/ { print $3 }')
    fde="[di-stripped+0x$(nm "$d/di" | awk '$3 == "fk_di_hot" { print $1 }' | sed 's/^0*//')]"
    unshare -n sleep 600 & NETNS=$!
    fk_cleanup "kill $NETNS 2>/dev/null"
    for ((i = 0; i < 50; i++)); do
        [ "$(readlink /proc/$NETNS/ns/net)" != "$(readlink /proc/self/ns/net)" ] && break; sleep 0.05
    done
    in_net() { nsenter -t "$NETNS" -n "$@"; }
    in_net ip link set lo up
    # a free port: in a fresh namespace any is; retry if the server cannot bind
    up=
    for try in 1 2 3 4 5; do
        port=$((20000 + RANDOM % 20000))
        # nsenter execs the server: $! is its pid
        nsenter -t "$NETNS" -n debuginfod -F -p "$port" -d "$d/db.sqlite" "$d/srv" > "$d/srv.log" 2>&1 &
        DI_PID=$!
        for ((i = 0; i < 150; i++)); do
            kill -0 $DI_PID 2>/dev/null || break
            code=$(in_net curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$port/buildid/$bid/debuginfo")
            [ "$code" = 200 ] && { up=1; break; }
            sleep 0.1
        done
        [ -n "$up" ] && break
        kill $DI_PID 2>/dev/null; wait $DI_PID 2>/dev/null
    done
    fk_cleanup "kill $DI_PID 2>/dev/null"
    URL=http://127.0.0.1:$port
    if [ -z "$up" ]; then
        fail "debuginfod server did not serve the debug file" "$(tail -5 "$d/srv.log")"
    else
        start_prog addr "$d/di-stripped"
        out=$(in_net env -u DEBUGINFOD_URLS DEBUGINFOD_CACHE_PATH="$d/c0" "$LOOKUP" "$PROG_PID" "$addr" 2>&1)
        check_eq "debuginfod: without DEBUGINFOD_URLS, no name" "$fde" "$out"
        out=$(in_net env -u DEBUGINFOD_URLS "$LOOKUP" -g "$PROG_PID" "$addr" 2>&1 | tail -n 1)
        check_eq "debuginfod: without DEBUGINFOD_URLS, no debug file" "debug file: none" "$out"
        t0=$(date +%s%N)
        out=$(in_net env DEBUGINFOD_URLS="$URL" DEBUGINFOD_CACHE_PATH="$d/c1" "$LOOKUP" "$PROG_PID" "$addr" 2>&1)
        echo "debuginfod: first lookup with fetch: $(( ($(date +%s%N) - t0) / 1000000 )) ms"
        check_eq "debuginfod: DEBUGINFOD_URLS set: named through the server" "fk_di_hot" "$out"
        # the fetched file, for the unwinder's .debug_frame (fk_sym_debug_file)
        out=$(in_net env DEBUGINFOD_URLS="$URL" DEBUGINFOD_CACHE_PATH="$d/c1" "$LOOKUP" -g "$PROG_PID" "$addr" 2>&1 | tr '\n' ' ')
        check_eq "debuginfod: the DSO's debug file is the fetched one" \
            "fk_di_hot debug file: $d/c1/$bid/debuginfo " "$out"
        check_grep "debuginfod: fetched into DEBUGINFOD_CACHE_PATH" . "$(ls "$d/c1/$bid/debuginfo" 2>/dev/null)"
        out=$(in_net env -u DEBUGINFOD_URLS DEBUGINFOD_CACHE_PATH="$d/c1" "$LOOKUP" "$PROG_PID" "$addr" 2>&1)
        check_eq "debuginfod: a warm cache is not used without DEBUGINFOD_URLS" "$fde" "$out"
        stop_prog
        # a capture, --debuginfod instead of the variable
        for how in option none; do
            opt=(); [ $how = option ] && opt=(--debuginfod "$URL")
            rm -rf "$T/dicap"
            in_net env -u DEBUGINFOD_URLS DEBUGINFOD_CACHE_PATH="$d/c2" "$FLAMEKIT" run -q --no-svg -F 499 \
                -o "$T/dicap" "${opt[@]}" -- "$d/di-stripped" 1.5 > "$T/dicap.log" 2>&1
            FOLDED=$(ls "$T/dicap"/*.folded.gz 2>/dev/null | head -n 1)
            if [ -z "$FOLDED" ]; then fail "debuginfod capture ($how)" "$(cat "$T/dicap.log")"; continue; fi
            s=$(share "$FOLDED" ';fk_di_hot$' '^di-stripped;')
            if [ $how = option ]; then
                check_range "flamekit run --debuginfod URL: samples in fk_di_hot" "$s" 0.90 1.0
                check_grep "flamekit run --debuginfod URL: metadata counts the fetch" '"found": *[1-9]' \
                    "$(cat "$T/dicap"/*.json)"
            else
                check_range "flamekit run without debuginfod: samples named fk_di_hot" "$s" 0 0
            fi
        done
        # the server gone: no name, at once
        kill $DI_PID; wait $DI_PID 2>/dev/null
        start_prog addr "$d/di-stripped"
        t0=$(date +%s%N)
        out=$(in_net env DEBUGINFOD_URLS="$URL" DEBUGINFOD_CACHE_PATH="$d/c3" "$LOOKUP" "$PROG_PID" "$addr" 2>&1)
        ms=$(( ($(date +%s%N) - t0) / 1000000 ))
        stop_prog
        check_eq "debuginfod: server stopped: no name" "$fde" "$out"
        check_range "debuginfod: server stopped: lookup time (ms)" "$ms" 0 3000
    fi
    # a server that accepts and never answers: each request and the total bounded
    nsenter -t "$NETNS" -n "$FK_BUILD/test/progs/stallsrv" stall "$d/stall.port" > /dev/null 2>&1 &
    ST_PID=$!
    fk_cleanup "kill $ST_PID 2>/dev/null"
    for ((i = 0; i < 50; i++)); do [ -s "$d/stall.port" ] && break; sleep 0.05; done
    args=(); pids=()
    for k in 1 2 3; do
        # distinct build-ids: three lookups (the client caches by build-id)
        gcc -O1 -Wl,--build-id=0x$(printf 'f1a3e%035x' $k) -o "$d/dis$k" "$d/di.c" && strip -s "$d/dis$k"
        start_prog addr "$d/dis$k"
        args+=("$PROG_PID:$addr"); pids+=("$PROG_PID:$PROG_FD")
    done
    t0=$(date +%s%N)
    out=$(in_net env DEBUGINFOD_URLS="http://127.0.0.1:$(cat "$d/stall.port")" DEBUGINFOD_CACHE_PATH="$d/c4" \
        "$LOOKUP" -T 1500,1000 "${args[0]%%:*}" "${args[@]}" 2>"$d/stall.err" | tr '\n' ' ')
    ms=$(( ($(date +%s%N) - t0) / 1000000 ))
    # each later program holds the earlier ones' fifos too: close all, then wait
    for p in "${pids[@]}"; do eval "exec ${p#*:}>&-"; done
    for p in "${pids[@]}"; do wait "${p%%:*}" 2>/dev/null; done
    check_grep "debuginfod: stalled server: no names" '^\[dis1\+0x[0-9a-f]+\] \[dis2\+0x[0-9a-f]+\] \[dis3\+0x[0-9a-f]+\] $' "$out"
    # 1 s for the first, the 0.5 s left for the second (each cancelled within
    # about a second: libdebuginfod reports progress once a second), no third
    check_range "debuginfod: stalled server: 3 lookups, 1 s per request, 1.5 s in all (ms)" "$ms" 1400 4500
    check_eq "debuginfod: budget spent: one warning" 1 "$(grep -c 'debuginfod: the 1.5 s for this capture are spent' "$d/stall.err")"
else
    skip "debuginfod" "needs debuginfod, gcc, objcopy, unshare, nsenter, curl"
fi
