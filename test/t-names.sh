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
