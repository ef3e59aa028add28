#!/bin/sh
# Seeds for fuzz-record: ring records shaped like the engine's -- a dwarf-mode
# sample (ip, tid, time, cpu, period, a kernel callchain, user registers, a
# stack copy), an MMAP2 and a COMM with their sample_id_all trailers, and a
# tracepoint sample with raw data and an identifier (off-CPU's layout).
# usage: fuzz/seed-record.sh CORPUS-DIR
set -eu
out=$1
perl -e '
use strict;
sub q64 { pack("Q<*", @_) }
sub rec { my ($type, $misc, $body) = @_; pack("L<S<S<", $type, $misc, 8 + length $body) . $body }
# PERF_SAMPLE_IP|TID|TIME|CPU|PERIOD|CALLCHAIN|REGS_USER|STACK_USER = 0x3000 | 0x1|0x2|0x4|0x80|0x100|0x20
my $st = 0x1 | 0x2 | 0x4 | 0x80 | 0x100 | 0x20 | 0x1000 | 0x2000;
my $mask = 0xff0fff;     # 20 registers (x86-64 perf order without segments)
my $nregs = 20;
my $sample = q64(0x401000, (42 << 32) | 42, 1000, 1, 10101010,
                 3, 0xfffffffffffffe00, 0xffffffff81000000, 0xffffffff81000100,
                 2, (0x7ffc0000) x $nregs,
                 64) . ("\x11" x 64) . q64(48);
my $mmap2 = pack("L<L<Q<Q<Q<L<L<Q<Q<L<L<", 42, 42, 0x400000, 0x1000, 0, 8, 1, 1234, 0, 5, 2)
          . "/usr/bin/true\0\0\0" . q64((42 << 32) | 42, 999, 1);
my $comm = pack("L<L<", 42, 42) . "true\0\0\0\0" . q64((42 << 32) | 42, 998, 1);
open my $f, ">", "$ARGV[0]/dwarf.bin" or die;
binmode $f;
print $f q64($st, $mask) . "\x01" . rec(9, 2, $sample) . rec(10, 2, $mmap2) . rec(3, 0x2000, $comm);
close $f;
# IDENTIFIER|IP|TID|TIME|CPU|CALLCHAIN|RAW = 0x10000|0x1|0x2|0x4|0x80|0x20|0x400
my $st2 = 0x10000 | 0x1 | 0x2 | 0x4 | 0x80 | 0x20 | 0x400;
my $raw = "\x00" x 60;    # u32 size 60 + 60 bytes = 64
my $tp = q64(77, 0xffffffff81000000, (7 << 32) | 7, 2000, 0, 1, 0xffffffff81000000)
       . pack("L<", 60) . $raw;
my $sw = q64((7 << 32) | 7, 2001, 0, 77);      # SWITCH: trailer only (TID, TIME, CPU, IDENTIFIER)
open $f, ">", "$ARGV[0]/tracepoint.bin" or die;
binmode $f;
print $f q64($st2, 0) . "\x01" . rec(9, 1, $tp) . rec(14, 0x2000, $sw);
close $f;
' "$out"
