#!/bin/sh
# Seeds for fuzz-elfsyms: a small program built here, stripped (names from
# FDEs), with MiniDebugInfo (.gnu_debugdata), and with its symbol table.
# usage: fuzz/seed-elfsyms.sh CORPUS-DIR
set -eu
out=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/s.c" <<'C'
#include <stdio.h>
static volatile unsigned long sink;
__attribute__((noinline)) static void hot(unsigned long n) { for (unsigned long i = 0; i < n; i++) sink += i; }
__attribute__((noinline)) void cold(void) { puts("cold"); }
int main(int argc, char **argv) { (void)argv; hot((unsigned long)argc * 1000); if (argc > 5) cold(); return 0; }
C
gcc -O1 -g0 -o "$tmp/s" "$tmp/s.c"
cp "$tmp/s" "$out/symtab"
strip -s -o "$out/stripped" "$tmp/s"
nm "$tmp/s" --format=posix --defined-only | awk '$2 ~ /^[Tt]$/ { print $1 }' > "$tmp/keep"
objcopy -S --keep-symbols="$tmp/keep" "$tmp/s" "$tmp/mini"
xz "$tmp/mini"
objcopy --add-section .gnu_debugdata="$tmp/mini.xz" "$out/stripped" "$out/minidebuginfo"
