#!/usr/bin/env bash
# flamekit collapse: a real perf recording of a known workload, golden
# inputs for the perf script formats, and bad input.
# timeout: 200
. "$(dirname "$0")/lib.sh"
C() { "$FLAMEKIT" collapse "$@"; }
TAB=$(printf '\t')
# FlameGraph and inferno, fetched outside the project: FLAMEGRAPH_DIR /
# INFERNO_DIR (work trees), else ~/.cache/flamekit/{FlameGraph,inferno}, else
# git mirrors at /work/.mirror/{brendangregg+FlameGraph,jonhoo+inferno}/repo.
# Nothing is fetched here: without them the comparisons are skipped.
suite_dir() {  # suite_dir NAME ENVDIR CACHE MIRROR -> prints a directory or nothing
    local name=$1 env=$2 cache=$3 mirror=$4
    if [ -n "$env" ] && [ -d "$env" ]; then echo "$env"; return; fi
    if [ -d "$cache" ]; then echo "$cache"; return; fi
    if [ -d "$mirror" ] && need git; then
        mkdir -p "$T/$name" && git --git-dir="$mirror" archive HEAD | tar -x -C "$T/$name" 2>/dev/null && echo "$T/$name"
    fi
}
fgd=$(suite_dir fg "${FLAMEGRAPH_DIR:-}" "$HOME/.cache/flamekit/FlameGraph" /work/.mirror/brendangregg+FlameGraph/repo)
ifd=$(suite_dir inferno "${INFERNO_DIR:-}" "$HOME/.cache/flamekit/inferno" /work/.mirror/jonhoo+inferno/repo)

# --- a real recording: perf record -F 999 -g of test/progs/collapse-spin ---
spin=$FK_BUILD/test/progs/collapse-spin
if ! need perf; then
    skip "real perf recording" "perf not installed; apt-get install linux-perf"
elif ! perf record -q -F 999 -g -o "$T/spin.data" -- "$spin" 1500 >"$T/rec.log" 2>&1; then
    fail "perf record of collapse-spin" "$(cat "$T/rec.log")"
else
    perf script -i "$T/spin.data" >"$T/spin.txt" 2>/dev/null
    nsamples=$(grep -cE '^\S.* [0-9.]+: +[0-9]+ [^ ]+: *$' "$T/spin.txt")
    check "collapse a real recording" C -o "$T/spin.folded" "$T/spin.txt"
    total=$(awk '{s += $NF} END {print s + 0}' "$T/spin.folded")
    check_eq "sum of counts = number of sample headers in perf script" "$nsamples" "$total"
    check_range "recording has about 1.5 s of 999 Hz samples" "$nsamples" 900 2200
    check_nogrep "every line is 'stack COUNT' with no empty frame" '(^;|;;|; |;$|^[^ ]*$|[^0-9]$)' "$T/spin.folded"
    sorted=$(LC_ALL=C sort -c "$T/spin.folded" 2>&1 && echo sorted)
    check_eq "output is sorted bytewise" "sorted" "$sorted"
    check_grep "workload's stack root-first: comm;...;main;spin_outer;spin_twice;spin_loop" \
        '^collapse-spin;.*main;spin_outer;spin_twice;spin_loop [0-9]+$' "$T/spin.folded"
    tw=$(awk '/;spin_outer;spin_twice;/ {s += $NF} END {print s + 0}' "$T/spin.folded")
    on=$(awk '/;spin_outer;spin_once;/ {s += $NF} END {print s + 0}' "$T/spin.folded")
    check_range "spin_twice has 2/3 of spin_outer's samples" \
        "$(awk -v a="$tw" -v b="$on" 'BEGIN { print (a + b) ? a / (a + b) : 0 }')" 0.60 0.73
    # --period: each cpu-clock sample weighs its period (ns)
    C --period "$T/spin.txt" >"$T/spin.period"
    psum=$(awk '{s += $NF} END {printf "%.0f", s}' "$T/spin.period")
    hsum=$(awk '/^[^\t]/ && NF >= 3 && $NF ~ /:$/ && $(NF-1) ~ /^[0-9]+$/ { s += $(NF-1) } END {printf "%.0f", s}' "$T/spin.txt")
    check_eq "--period sums the periods" "$hsum" "$psum"
    gzip -c "$T/spin.txt" >"$T/spin.txt.gz"
    check_eq "gzip input gives the same output" "$(cat "$T/spin.folded")" "$(C "$T/spin.txt.gz")"
    check_eq "stdin gives the same output" "$(cat "$T/spin.folded")" "$(C <"$T/spin.txt")"
    check_eq "'-' is stdin" "$(cat "$T/spin.folded")" "$(C - <"$T/spin.txt.gz")"
    C -o "$T/out.folded.gz" "$T/spin.txt"
    check_eq "-o NAME.gz writes gzip" "$(cat "$T/spin.folded")" "$(gzip -dc "$T/out.folded.gz")"
    perf script -i "$T/spin.data" -F comm,pid,tid,period,event,ip,sym,dso >"$T/spin-f.txt" 2>/dev/null
    check_eq "-F comm,pid,tid,period,event,ip,sym,dso gives the same stacks" \
        "$(cat "$T/spin.folded")" "$(C "$T/spin-f.txt")"
    perf script -i "$T/spin.data" --header >"$T/spin-h.txt" 2>/dev/null
    check_eq "--header output gives the same stacks" "$(cat "$T/spin.folded")" "$(C --strict "$T/spin-h.txt")"
    check_grep "--pid names comm-PID" '^collapse-spin-[0-9]+;' "$(C --pid "$T/spin-f.txt")"
    check_grep "--tid names comm-PID/TID" '^collapse-spin-[0-9]+/[0-9]+;' "$(C --tid "$T/spin-f.txt")"
    # A pure user-space spin may take no sample in the kernel: compare with
    # what perf itself printed as kernel frames.
    nk=$(grep -c '(\[kernel\.kallsyms\])$' "$T/spin.txt")
    if [ "$nk" -gt 0 ]; then
        check_grep "--kernel marks kernel frames _[k] ($nk in perf's output)" ';[a-z_0-9.]+_\[k\]' "$(C --kernel "$T/spin.txt")"
    else
        check_nogrep "--kernel marks nothing when perf printed no kernel frame" '_\[k\]' "$(C --kernel "$T/spin.txt")"
    fi
    # the Perl tool, when available, agrees with --period (it sums periods)
    fg=$fgd
    if [ -n "$fg" ] && [ -f "$fg/stackcollapse-perf.pl" ] && need perl; then
        perl "$fg/stackcollapse-perf.pl" "$T/spin.txt" >"$T/spin.perl" 2>/dev/null
        check_eq "--period output = stackcollapse-perf.pl's" "$(LC_ALL=C sort "$T/spin.perl")" "$(cat "$T/spin.period")"
        perl "$fg/stackcollapse-perf.pl" --kernel --pid "$T/spin.txt" >"$T/spin.perl" 2>/dev/null
        check_eq "--period --kernel --pid = stackcollapse-perf.pl's" "$(LC_ALL=C sort "$T/spin.perl")" "$(C --period --kernel --pid "$T/spin.txt")"
    else
        skip "comparison with stackcollapse-perf.pl" "no FlameGraph copy: set FLAMEGRAPH_DIR to a clone of https://github.com/brendangregg/FlameGraph"
    fi
fi

# --- golden inputs ---
golden() {  # golden WHAT EXPECTED [OPTIONS...] < INPUT
    local what=$1 want=$2; shift 2
    local got
    got=$(C "$@" 2>"$T/err"); check_eq "$what" "$want" "$got"
}
printf '%s\n' \
 "# ========" "# captured on    : Wed Dec  2 12:00:00 2026" "# cmdline : /usr/bin/perf record -g" "# ========" "#" \
 "my prog 100/101 [001] 10.000001:     250000 cpu-clock:ppp: " \
 "${TAB}    7f0000001234 std::vector<int, std::allocator<int> >::push_back(int const&)+0x24 (/usr/bin/my prog)" \
 "${TAB}    7f0000002000 ns::(anonymous namespace)::helper(char const*) [clone .isra.0]+0x10 (/usr/bin/my prog)" \
 "${TAB}    7f0000003000 operator new(unsigned long)+0x3 (/usr/lib/libstdc++.so.6)" \
 "${TAB}    7f0000004000 [unknown] (/usr/lib/libfoo.so.1 (deleted))" \
 "${TAB}    7f0000005000 do_it;now\"quoted\" (/tmp/old (deleted))" \
 "${TAB}    ffffffff81000000 entry_SYSCALL_64+0x10 ([kernel.kallsyms])" \
 "${TAB}    0 [unknown] ([unknown])" \
 "" \
 "my prog 100/101 [001] 10.001001:     250000 cpu-clock:ppp: " \
 "${TAB}    7f0000001234 std::vector<int, std::allocator<int> >::push_back(int const&)+0x99 (/usr/bin/my prog)" \
 "${TAB}    7f0000002000 ns::(anonymous namespace)::helper(char const*) [clone .isra.0]+0x10 (/usr/bin/my prog)" \
 "${TAB}    7f0000003000 operator new(unsigned long)+0x3 (/usr/lib/libstdc++.so.6)" \
 "${TAB}    7f0000004000 [unknown] (/usr/lib/libfoo.so.1 (deleted))" \
 "${TAB}    7f0000005000 do_it;now\"quoted\" (/tmp/old (deleted))" \
 "${TAB}    ffffffff81000000 entry_SYSCALL_64+0x10 ([kernel.kallsyms])" \
 "${TAB}    0 [unknown] ([unknown])" \
 "" \
 "go 7 8.5:  1 page-faults: " \
 "${TAB}    4a0000 net/http.(*Client).Do+0x5 (/usr/bin/go)" \
 "${TAB}    4a1000 inlined_fn (inlined)" \
 "${TAB}    4a2000 main.main+0x1 (/usr/bin/go)" \
 "" \
 "go 7 8.6:  1 page-faults: " \
 "${TAB}    4a0000 net/http.(*Client).Do+0x5 (/usr/bin/go)" >"$T/g1.txt"
printf '%s' "${TAB}    4a2000 main.main+0x1 (/usr/bin/go)" >>"$T/g1.txt"   # no trailing newline
stk='my_prog;[unknown];entry_SYSCALL_64;do_it:nowquoted;[libfoo.so.1];operator new;ns::(anonymous namespace)::helper;std::vector<int, std::allocator<int> >::push_back'
golden "headers, spaces, templates, [unknown], deleted, ';' and quotes" "$stk 2" --strict <"$T/g1.txt"
golden "--kernel annotates only the kernel frame" "${stk/entry_SYSCALL_64/entry_SYSCALL_64_[k]} 2" --kernel <"$T/g1.txt"
golden "--period weights by period" "$stk 500000" --period <"$T/g1.txt"
check_grep "several events: warns which one it counted" "counted only 'cpu-clock:ppp'.*2 samples" "$(cat "$T/err")"
golden "--event-filter picks the second event; Go names, inline frames, no final newline" \
    "go;main.main;inlined_fn;net/http.(*Client).Do 1
go;main.main;net/http.(*Client).Do 1" --event-filter=page-faults <"$T/g1.txt"
golden "--no-inline drops (inlined) frames" "go;main.main;net/http.(*Client).Do 2" --event-filter=page-faults --no-inline <"$T/g1.txt"
golden "--tag-inlined marks inlined frames _[i]" \
    "go;main.main;inlined_fn_[i];net/http.(*Client).Do 1
go;main.main;net/http.(*Client).Do 1" --tag-inlined --event-filter=page-faults <"$T/g1.txt"
golden "--event-filter=cpu-clock matches cpu-clock:ppp" "$stk 2" --event-filter=cpu-clock <"$T/g1.txt"
golden "--addrs: addresses of unknown symbols, offsets stripped (as the Perl tool)" \
    "my_prog;[unknown <0>];entry_SYSCALL_64;do_it:nowquoted;[libfoo.so.1 <7f0000004000>];operator new;ns::(anonymous namespace)::helper;std::vector<int, std::allocator<int> >::push_back 2" --addrs <"$T/g1.txt"
golden "--offsets keeps offsets" \
    "my_prog;[unknown];entry_SYSCALL_64+0x10;do_it:nowquoted;[libfoo.so.1];operator new+0x3;ns::(anonymous namespace)::helper+0x10;std::vector<int, std::allocator<int> >::push_back+0x24 1
my_prog;[unknown];entry_SYSCALL_64+0x10;do_it:nowquoted;[libfoo.so.1];operator new+0x3;ns::(anonymous namespace)::helper+0x10;std::vector<int, std::allocator<int> >::push_back+0x99 1" --offsets <"$T/g1.txt"
# -F variants: no callchain (ip/sym on the header line), no time, no cpu, tid only
printf '%s\n' \
 "sh 1234/1234 cpu-clock: 55d0 main+0x1 (/bin/sh)" \
 "sh 1234/1234 cpu-clock: 55d0 main+0x2 (/bin/sh)" \
 "sh 1234/1235    1001 cpu-clock: ffffffff81000000 schedule+0x1 ([kernel.kallsyms])" \
 "  kworker/0:1   99 [000]  5.0: cpu-clock: " "${TAB}ffffffff81000000 worker_thread+0x1 ([kernel.kallsyms])" >"$T/g2.txt"
golden "-F without callchains, right-aligned comm" "kworker/0:1;worker_thread 1
sh;main 2
sh;schedule 1" --strict <"$T/g2.txt"
golden "--tid with pid/tid and with tid only" "kworker/0:1-?/99;worker_thread 1
sh-1234/1234;main 2
sh-1234/1235;schedule 1" --tid <"$T/g2.txt"
printf 'a 1 1.0: 5 cpu-clock:\n\t1 f (/x)\n' | gzip -c >"$T/g3.gz"
golden "gzip on stdin" "a;f 1" <"$T/g3.gz"

# --- stackcollapse-perf.pl's bytes (issue 25): one minimal input per
# difference found on the public suites; each expected line is what the
# Perl tool writes for it ---
printf 'java 10 cycles:\nffff0001 leaf (/x)\nffff0002 main (/x)\n\n' >"$T/r1"
golden "unindented frame lines are frames" "java;main;leaf 1" --strict <"$T/r1"
printf 'cc1 cpu-clock: 55d0 main (/usr/bin/cc1)\ncc1 cpu-clock: 55d1 parse (/usr/bin/cc1)\n' >"$T/r1b"
golden "... but a line whose second word is an event is a header (-F comm,event,ip,sym,dso)" \
    "cc1;main 1
cc1;parse 1" --strict <"$T/r1b"
printf 'java 10 [000] 1.0: 1 cycles:\n\t7f01 Lpkg/A;::outer->Lpkg/B;::mid->Lpkg/C;::inner (/tmp/perf-10.map)\n\t7f02 Lpkg/Main;::main (/tmp/perf-10.map)\n\n' >"$T/r2"
golden "'->' inline chains: frames, _[i] on the inlined, L stripped" \
    "java;pkg/Main:::main;pkg/A:::outer;pkg/B:::mid_[i];pkg/C:::inner_[i] 1" <"$T/r2"
golden "'->' inline chains with --jit: _[j] on the outer frame only" \
    "java;pkg/Main:::main_[j];pkg/A:::outer_[j];pkg/B:::mid_[i];pkg/C:::inner_[i] 1" --jit <"$T/r2"
printf 'ab 1 1.0: 1 cpu-clock:\n\t7f01 f+0x10 (/x)\n\t7f02 [unknown] (/lib/y.so)\n\t7f03 g+0x2 (/x)\n\nab 1 1.1: 1 cpu-clock:\n\t7f05 f+0x20 (/x)\n\t7f02 [unknown] (/lib/y.so)\n\t7f03 g+0x2 (/x)\n\n' >"$T/r3"
golden "--addrs: addresses of unknown symbols only, offsets stripped" "ab;g;[y.so <7f02>];f 2" --addrs <"$T/r3"
printf 'node 1 1.0: 1 cpu-clock:\n\t13a80b608e0a RegExp:[&<>\\"\\'"'"'] (/tmp/perf-7539.map)\n\n' >"$T/r4"
golden "backslashes are not doubled" 'node;RegExp:[&<>\\] 1' <"$T/r4"
printf 'ab 1 1.0: 1 cpu-clock:\n\tffffffff81000001 [unknown] ([kernel.kallsyms])\n\t7fff01 [unknown] ([vdso])\n\t7f03 main (/x)\n\n' >"$T/r5"
golden "unknown symbols in bracketed objects: [[kernel.kallsyms]], [[vdso]]" \
    "ab;main;[[vdso]];[[kernel.kallsyms]] 1" <"$T/r5"
golden "... with --addrs" "ab;main;[[vdso] <7fff01>];[[kernel.kallsyms] <ffffffff81000001>] 1" --addrs <"$T/r5"
printf 'go 7 1.0: 1 cpu-clock:\n\t4a1000 inlined_fn (inlined)\n\t4a2000 main.main+0x1 (/usr/bin/go)\n\n' >"$T/r6"
golden "--all does not tag perf's (inlined) frames" "go;main.main;inlined_fn 1" --all <"$T/r6"
printf 'ab 1 1.0: 1 cpu-clock:\n\t401000 std::function<int (int)>::operator()(int) const+0x10 (/x)\n\t401100 main (/x)\n\n' >"$T/r7"
printf 'ab 1 1.0: 1 cpu-clock:\n\t401000 (anonymous namespace)::helper(int)+0x10 (/x)\n\t401100 main (/x)\n\n' >"$T/r10"
golden "a symbol starting with '(' is dropped, (anonymous namespace) too" "ab;main 1" <"$T/r10"
golden "a name cut at '(' keeps the blank before it" "ab;main;std::function<int  1" <"$T/r7"
check_eq "... and merge reads that name back whole" "ab;main;std::function<int " \
    "$(C "$T/r7" | "$FLAMEKIT" merge - | sed 's/ [0-9]*$//')"
# beyond the Perl tool, as inferno: versioned vmlinux, modules, jitdump objects
printf 'sw 0 [000] 1.0: 1 cycles:\n\tffffc0 mod_fn+0x1 (/lib/modules/6.1/kernel/x.ko)\n\tffffb0 do_idle+0x2 (/usr/lib/debug/boot/vmlinux-6.1.0-13-amd64)\n\tffffa0 [unknown] (/usr/lib/debug/boot/vmlinux-6.1.0-13-amd64)\n\n' >"$T/r8"
golden "--kernel tags versioned vmlinux files and .ko modules" \
    "sw;[vmlinux-6.1.0-13-amd64]_[k];do_idle_[k];mod_fn_[k] 1" --kernel <"$T/r8"
printf 'sp 1 1.0: 1 cycles:\n\tf7 fib+0x3 (/tmp/jitted-31-41.so)\n\t40 main (/bin/sp)\n\n' >"$T/r9"
golden "--jit tags jitdump objects" "sp;main;fib_[j] 1" --jit <"$T/r9"
# an ip with a control byte is no ip, however long the line (the ip test
# a word at a time took bytes 0x10-0x19 for digits: found by fuzz-perfscript)
printf 'ab 1 1.0: 1 cpu-clock:\n\t10\0221 fn_with_long_name (/x)\n\t7f03 main (/x)\n\n' >"$T/r12"
golden "an ip with a control byte is not a frame line" "ab;main 1" <"$T/r12"
# a header like one seen before but for one field (a header that differs
# only in its cpu and time digits is taken without a parse)
printf 'ab 10/10 [000] 1.000001: 100 cpu-clock: \n\t1 f (/x)\n\nab 10/10 [001] 1.000002: 100 cpu-clock: \n\t1 f (/x)\n\nab 10/11 [000] 1.000003: 100 cpu-clock: \n\t1 f (/x)\n\nab 10/10 [000] 1.000004: 300 cpu-clock: \n\t1 f (/x)\n\nab 10/10 [000] 1.000005: 100 page-faults: \n\t1 f (/x)\n\nab 10/10 [000] 1.000006: 100 cpu-clock: 2 g (/x)\n\nac 10/10 [000] 1.000007: 100 cpu-clock: \n\t1 f (/x)\n\nab 10/10 [000] 12.00008: 100 cpu-clock: \n\t1 f (/x)\n\n' >"$T/r11"
golden "headers alike but for a tid, period, event, sample ip or comm" "ab-10/10;f 600
ab-10/10;g 100
ab-10/11;f 100
ac-10/10;f 100" --tid --period <"$T/r11"
# the pid's digits too, but only while no option shows the pid
printf 'ab 10/10 [000] 1.000001: 100 cpu-clock: \n\t1 f (/x)\n\nab 11/11 [000] 1.000002: 100 cpu-clock: \n\t1 f (/x)\n\nab 12/12 [001] 1.000003: 100 cpu-clock: \n\t1 g (/x)\n\nab 13/13 [000] 1.000004: 100 cpu-clock: \n\t1 f (/x)\n\nab 13/14 [000] 1.000005: 100 cpu-clock: \n\t1 f (/x)\n\n' >"$T/r13"
golden "headers alike but for a pid: one process name" "ab;f 4
ab;g 1" <"$T/r13"
golden "headers alike but for a pid: --pid names each" "ab-10;f 1
ab-11;f 1
ab-12;g 1
ab-13;f 2" --pid <"$T/r13"
golden "headers alike but for a pid: --tid names each" "ab-10/10;f 1
ab-11/11;f 1
ab-12/12;g 1
ab-13/13;f 1
ab-13/14;f 1" --tid <"$T/r13"

# --- the public regression suites, side by side with today's Perl tool ---
# FlameGraph's test.sh (every test/perf-*.txt x --pid --tid --kernel --jit
# --all --addrs, and example-perf-stacks.txt.gz) and inferno's
# tests/data/collapse-perf inputs (fgd, ifd: see the top).
if ! need perl; then
    skip "public collapse suites" "perl not installed"
elif [ -z "$fgd" ] || [ ! -f "$fgd/stackcollapse-perf.pl" ]; then
    skip "public collapse suites" "no FlameGraph copy: set FLAMEGRAPH_DIR to a clone of https://github.com/brendangregg/FlameGraph"
else
    # The Perl tool's two defects, excused by giving it the input it reads
    # right (flamekit-collapse(1)): a blank line after the last sample, and
    # perf's [unknown] for an empty symbol field.
    # Its outputs are kept between runs, outside the tree (FK_PERL_REF_CACHE,
    # default ~/.cache/flamekit/perl-ref): the ASan suite reuses the default
    # suite's. An entry is named by what its bytes depend on: perl_salt (the
    # script's bytes, perl's version and this function's text, which says
    # how an input is given to Perl), the option and the input's checksum;
    # its first line is the checksum of the rest (a torn or corrupted entry
    # is run again, never used). A hit costs four small programs, not nine
    # (at load 16-33 the lookups of 78 pairs took 35 s of this file's 200,
    # the ASan flamekit's 78 runs 49 s). One pair, drawn at random, is
    # run through Perl first and must equal its entry, or the whole cache
    # is set aside for this run and every pair runs through Perl.
    prc=${FK_PERL_REF_CACHE:-$HOME/.cache/flamekit/perl-ref}
    mkdir -p "$prc" 2>/dev/null || prc=
    [ -z "$prc" ] || find "$prc" -name '.new.*' -mmin +60 -delete 2>/dev/null    # left by a killed run
    ref_hits=0 ref_runs=0
    perl_ref() {  # perl_ref INPUT [OPTION] > folded (REF_FRESH=1: always run Perl)
        local ent= sum= tmp rc=0
        if [ -n "$prc" ]; then
            sum=$(sha256sum <"$1")
            ent=$prc/${perl_salt:0:32}${2:-}-${sum%% *}
            if [ -z "${REF_FRESH:-}" ] && [ -f "$ent" ] &&
               { IFS= read -r sum && cat >"$T/ref.hit"; } <"$ent" &&
               tmp=$(sha256sum <"$T/ref.hit") && [ "$sum" = "${tmp%% *}" ]; then
                ref_hits=$((ref_hits + 1))
                cat "$T/ref.hit"
                return
            fi
        fi
        ref_runs=$((ref_runs + 1))
        { sed -E 's/^([[:space:]]*[0-9a-fA-F]+)  \(/\1 [unknown] (/' "$1"; echo; } >"$T/ref.in"
        perl "$fgd/stackcollapse-perf.pl" ${2:+"$2"} "$T/ref.in" >"$T/ref.out" 2>/dev/null || rc=$?
        cat "$T/ref.out"
        # only what Perl finished is kept (killed, its output may be cut)
        [ $rc = 0 ] && [ -n "$ent" ] && tmp=$(mktemp "$prc/.new.XXXXXX" 2>/dev/null) &&
            { sum=$(sha256sum <"$T/ref.out") && echo "${sum%% *}" && cat "$T/ref.out"; } >"$tmp" &&
            mv -f "$tmp" "$ent"
        return 0
    }
    # (the salt covers this function's text too: a change to how Perl is
    # run starts a new cache)
    perl_salt=$({ sha256sum <"$fgd/stackcollapse-perf.pl"; perl -e 'print "$^V\n"'; declare -f perl_ref; } | sha256sum)
    if [ -n "$prc" ]; then
        spot_in=("$fgd"/test/perf-*.txt) spot_opt=(--pid --tid --kernel --jit --all --addrs)
        spot_f=${spot_in[RANDOM % ${#spot_in[@]}]} spot_o=${spot_opt[RANDOM % ${#spot_opt[@]}]}
        h=$ref_hits
        perl_ref "$spot_f" "$spot_o" >"$T/spot.cached"
        if [ "$ref_hits" != "$h" ]; then
            REF_FRESH=1 perl_ref "$spot_f" "$spot_o" >"$T/spot.fresh"
            if ! cmp -s "$T/spot.cached" "$T/spot.fresh"; then
                echo "    $prc: its entry for $(basename "$spot_f") $spot_o differs from Perl's output: the cache is not used in this run"
                prc= ref_hits=0
            fi
        fi
    fi
    pairs=0 same=0 differ=
    suite_pair() {  # suite_pair NAME INPUT [OPTION]
        pairs=$((pairs + 1))
        perl_ref "$2" "${3:-}" >"$T/p.out"
        C --period ${3:+"$3"} "$2" >"$T/f.out" 2>/dev/null
        if cmp -s "$T/p.out" "$T/f.out"; then same=$((same + 1)); else differ="$differ $1${3:+:$3}"; fi
    }
    for opt in --pid --tid --kernel --jit --all --addrs; do
        for f in "$fgd"/test/perf-*.txt; do suite_pair "$(basename "$f")" "$f" "$opt"; done
    done
    if [ -f "$fgd/example-perf-stacks.txt.gz" ]; then
        gzip -dc "$fgd/example-perf-stacks.txt.gz" >"$T/example-perf-stacks.txt"
        suite_pair example-perf-stacks.txt "$T/example-perf-stacks.txt"
    fi
    idata=${ifd:+$ifd/tests/data/collapse-perf}
    if [ -n "$idata" ] && [ -d "$idata" ]; then
        for f in "$idata"/*.txt; do
            b=$(basename "$f" .txt)
            case $b in
            single-line-stacks)
                # no call chains (perf right-aligns the comm): the Perl tool
                # writes nothing; flamekit = the Perl tool on the same samples
                # written with call chains
                awk '{ n = split($0, w, " "); for (i = 1; i <= n && w[i] !~ /:$/; i++) ;
                       for (j = i + 1; j <= n && w[j] !~ /:$/; j++) ;
                       h = ""; for (k = 1; k <= j; k++) h = h (k > 1 ? " " : "") w[k]; print h
                       f = ""; for (k = j + 1; k <= n; k++) f = f " " w[k]; print "\t" f; print "" }' "$f" >"$T/sl.txt"
                check_eq "inferno single-line-stacks = the Perl tool on them with call chains" \
                    "$(perl_ref "$T/sl.txt")" "$(C --period "$f" 2>/dev/null)"
                ;;
            versioned-vmlinux | sourcepawn-jitdump)
                o=--kernel; [ "$b" = sourcepawn-jitdump ] && o=--jit
                check_eq "inferno $b ${o}: inferno's expected file" \
                    "$(cat "$idata/results/$b-collapsed-${o#--}.txt")" "$(C --period "$o" "$f")"
                ;;
            *) suite_pair "inferno/$b.txt" "$f" ;;
            esac
        done
    else
        skip "inferno's collapse-perf inputs" "no inferno copy: set INFERNO_DIR to a clone of https://github.com/jonhoo/inferno"
    fi
    check_eq "public suites: every pair ($pairs) = stackcollapse-perf.pl's bytes" "$pairs" "$same"
    [ -z "$differ" ] || printf '    differ:%s\n' "$differ"
    echo "    Perl's outputs: $ref_runs run now, $ref_hits from ${prc:-no cache}"
    check_range "public suites: FlameGraph's 78 pairs at least were run" "$pairs" 78 1000
    # the man page lists what remains
    man=$FK_SRC/man/flamekit-collapse.1
    for what in 'last sample' 'empty symbol field' 'right-aligned' 'deleted' \
        'Fl -event-filter' 'Fl -inline' 'jitted-PID-N.so' 'Fl -offsets'; do
        check_grep "flamekit-collapse(1) lists the difference: $what" "$what" \
            "$(sed -n '/^\.Sh DIFFERENCES FROM STACKCOLLAPSE-PERF.PL/,/^\.Sh EXIT/p' "$man")"
    done
fi

# --- bad input ---
check_eq "empty input: no output" "" "$(C </dev/null 2>"$T/err")"
check_grep "empty input: warns" "empty input" "$(cat "$T/err")"
check "empty input exits 0" C /dev/null
head -c 300000 /dev/urandom >"$T/garbage"
C "$T/garbage" >"$T/out" 2>"$T/err"; rc=$?
check_eq "binary garbage: exits 0 without --strict" 0 "$rc"
check_eq "binary garbage: one malformed-lines warning" 1 "$(grep -ac 'malformed line' "$T/err")"
head -c 500000 "$FLAMEKIT" >"$T/elf"
check "an ELF binary as input: exits 0" C -o "$T/elf.folded" "$T/elf"
check_grep "binary garbage: warning names first bad line" 'skipped [0-9]+ malformed lines?; first at line [0-9]+' "$(cat "$T/err")"
check_fails "binary garbage: --strict fails" C --strict "$T/garbage"
C --strict "$T/garbage" >/dev/null 2>"$T/err"
check_grep "--strict: one error line naming line and fix" '^flamekit collapse: .*:[0-9]+: .*drop --strict' "$(head -1 "$T/err" | LC_ALL=C tr -c '\n -~' '?')"
printf 'p 1 1.0: 1 cpu-clock:\n\t1 good (/x)\nthis is not perf output\n\n' >"$T/bad1"
C --strict -o "$T/strict.folded" "$T/bad1" 2>/dev/null
check "--strict failure leaves no output file" test ! -e "$T/strict.folded"
{ printf 'p 1 1.0: 1 cpu-clock:\n\t1 '; head -c 1048576 /dev/zero | tr '\0' x; printf ' (/x)\n\n'; } >"$T/big"
check_eq "1 MB frame name kept whole" "$((1048576 + 2 + 1 + 2))" "$(C "$T/big" | wc -c)"
awk 'BEGIN { print "deep 1 1.0: 1 cpu-clock:"; for (i = 10000; i >= 1; i--) printf "\t%x f%d (/x)\n", i, i; print "" }' >"$T/deep"
check_eq "10,000-deep stack has 10,001 frames" 10001 "$(C "$T/deep" | awk -F';' '{print NF}')"
printf 'p 1 1.0: 18446744073709551615 cpu-clock:\n\t1 f (/x)\n\np 1 1.1: 18446744073709551615 cpu-clock:\n\t1 f (/x)\n' >"$T/ovf"
check_eq "huge periods count as samples by default" "p;f 2" "$(C "$T/ovf")"
check_fails "--period overflow fails" C --period -o "$T/ovf.folded" "$T/ovf"
check_grep "--period overflow: clear message" 'exceeds 2\^64-1' "$(C --period "$T/ovf" 2>&1 >/dev/null)"
check "--period overflow leaves no output file" test ! -e "$T/ovf.folded"
printf 'p 1 1.0: 99999999999999999999 cpu-clock:\n\t1 f (/x)\n' >"$T/ovf2"
check_grep "--period: a period beyond 64 bits is a malformed line" 'does not fit in 64 bits' "$(C --period "$T/ovf2" 2>&1 >/dev/null)"
out=$(C --bogus 2>&1); rc=$?
check_eq "unknown option exits 2" 2 "$rc"
check_eq "unknown option: one line" 1 "$(printf '%s\n' "$out" | wc -l)"
check_grep "unknown option: names it" "unknown option '--bogus'" "$out"
check_fails "missing file fails" C "$T/nonexistent"
check_grep "missing file: names it" "cannot open .*nonexistent" "$(C "$T/nonexistent" 2>&1)"
# a FIFO at -o (anyone's, in /tmp) is refused, not fed (issue 12; t-harden)
mkfifo "$T/fifo"
out=$(printf 'a 1 1.0: 5 cpu-clock:\n\t1 f (/x)\n' | timeout 10 "$FLAMEKIT" collapse -o "$T/fifo" 2>&1); rc=$?
check_eq "-o FIFO is refused (exit 1, no hang)" 1 "$rc"
check_grep "-o FIFO: says so" 'it is a FIFO' "$out"
check "-o FIFO leaves it a FIFO" test -p "$T/fifo"
printf 'a 1 1.0: 5 cpu-clock:\n\t1 f (/x)\n' | C -o /dev/null
check "-o /dev/null is written in place (the device is not replaced)" test -c /dev/null
check_eq "--help exits 0 on stdout" 0 "$(C --help >/dev/null 2>&1; echo $?)"
check_grep "--help says counts are samples" 'number of samples' "$(C --help)"

# --- the batch heap: collapse marks the heap its tables grow in for huge
# pages (a first touch of a 4 KiB page costs ~11 us in a VM; fk.h) ---
if [ ! -r /sys/kernel/mm/transparent_hugepage/enabled ]; then
    skip "heap marked for huge pages" "kernel without transparent huge pages"
elif grep -q '\[never\]' /sys/kernel/mm/transparent_hugepage/enabled; then
    skip "heap marked for huge pages" "transparent huge pages set to never here"
else
    mkfifo "$T/in.fifo"
    "$FLAMEKIT" collapse -o "$T/fifo.folded" "$T/in.fifo" 2>"$T/fifo.err" &
    cpid=$!
    # it opens the FIFO after choosing its heap: blocked there, it has chosen
    hg=
    for _ in $(seq 100); do
        hg=$(awk '/^[0-9a-f]+-[0-9a-f]+ / { heap = / \[heap\]$/ } heap && /^VmFlags:/ && / hg/ { print "hg"; exit }' \
            "/proc/$cpid/smaps" 2>/dev/null)
        [ -n "$hg" ] && break
        grep -q 'libasan' "/proc/$cpid/maps" 2>/dev/null && break
        sleep 0.1
    done
    # a sanitizer's malloc keeps no brk heap: nothing to mark there
    asan=$(grep -c 'libasan' "/proc/$cpid/maps" 2>/dev/null)
    printf 'a 1 1.0: 5 cpu-clock:\n\t1 f (/x)\n' >"$T/in.fifo"
    wait "$cpid"
    if [ "${asan:-0}" -gt 0 ]; then
        skip "collapse's heap is marked for huge pages" "AddressSanitizer's allocator"
    else
        check_eq "collapse's heap is marked for huge pages (VmFlags hg)" hg "$hg"
    fi
    check_eq "... and the output is right" "a;f 1" "$(cat "$T/fifo.folded")"
fi
