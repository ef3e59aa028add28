#!/usr/bin/env bash
# Names for code without symbols: stripped functions named by their FDE's
# start (test binary and Debian's liblzma under xz), MiniDebugInfo
# (.gnu_debugdata), debug files from a real debuginfod server, and JIT maps
# written late (java -XX:+DumpPerfMapAtExit, jcmd Compiler.perfmap, node).
# timeout: 240
. "$FK_SRC/test/lib.sh"
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
        readelf --debug-dump=frames "$lzma" | awk '$4 == "FDE" { split($6, r, /[=.]/); print r[2] }' |
            sed 's/^0*//' | sort -u > "$T/fde.starts"
        n=$(wc -l < "$T/xz.frames")
        bad=$(sed "s/^\[$lb+0x//; s/\]\$//" "$T/xz.frames" | sort -u | comm -23 - "$T/fde.starts" | head -5)
        check_range "xz -9: distinct liblzma frames (one per function)" "$n" 3 40
        check_eq "xz -9: every liblzma frame is a function start from .eh_frame" "" "$bad"
        check_range "xz -9: share of xz samples in liblzma" \
            "$(share "$FOLDED" "\\[$lb\\+0x" '^xz;')" 0.70 1.0
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
        out=$("$LOOKUP" "$PROG_PID" "$a" "$(printf '%x' $((0x$b + 3)))" 2>&1 | tr '\n' ' ')
        ms=$(( ($(date +%s%N) - start) / 1000000 ))
        stop_prog
        case $v in
        symprog) check_eq "MiniDebugInfo: local functions named" "fk_symprog_alpha fk_symprog_beta " "$out" ;;
        *) check_eq "MiniDebugInfo: $v: function starts only" \
               "[$v+0x$(vaddr fk_symprog_alpha)] [$v+0x$(vaddr fk_symprog_beta)] " "$out"
           [ $v = bomb ] && check_range "MiniDebugInfo: oversized section given up (ms)" "$ms" 0 5000 ;;
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
