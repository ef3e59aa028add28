#!/usr/bin/env bash
# flamekit-fault-lab and flamekit faults: known faults, counted and sampled
# one in N, attributed to the touching function; --user-only; bad input.
# timeout: 240
. "$FK_SRC/test/lib.sh"
LAB=$FK_BUILD/flamekit-fault-lab

# kv VALUE-OF KEY from the lab's line for STEP: kv FILE STEP KEY
kv() { awk -v s="step=$2" -v k="$3" '$1 == s { for (i = 2; i <= NF; i++) { split($i, a, "="); if (a[1] == k) { print a[2]; exit } } }' "$1"; }

## The lab alone: its own getrusage counts are the ground truth we rely on.
"$LAB" -s 80M -r dontneed --kv >"$T/dontneed.kv" 2>&1
check_eq "lab: 80M is 20480 pages" 20480 "$(kv "$T/dontneed.kv" config pages)"
check_eq "lab: first touch takes one fault per page" 20480 "$(kv "$T/dontneed.kv" touch minflt_delta)"
check_eq "lab: MADV_DONTNEED retouch faults every page again" 20480 "$(kv "$T/dontneed.kv" retouch minflt_delta)"
check_range "lab: MADV_DONTNEED drops RSS at once (anon_kb after release)" "$(kv "$T/dontneed.kv" release anon_kb)" 0 4096
"$LAB" -s 80M -r free --kv >"$T/free.kv" 2>&1
check_range "lab: MADV_FREE keeps the pages as LazyFree (kB)" "$(kv "$T/free.kv" release lazyfree_kb)" 80000 82000
check_eq "lab: MADV_FREE retouch without reclaim takes no fault" 0 "$(kv "$T/free.kv" retouch minflt_delta)"
"$LAB" -s 80M -r free --pageout --kv >"$T/pageout.kv" 2>&1
check_range "lab: MADV_PAGEOUT reclaims lazy-free pages (anon_kb)" "$(kv "$T/pageout.kv" pageout anon_kb)" 0 4096
check_eq "lab: retouch after reclaim faults every page" 20480 "$(kv "$T/pageout.kv" retouch minflt_delta)"
"$LAB" -s 8M -k -r none --json >"$T/kernel.json" 2>&1
if need jq; then
    check_eq "lab: --json, kernel-mode touch also one fault per page" 2048 \
        "$(jq -r 'select(.step == "touch") | .minflt_delta' "$T/kernel.json")"
fi
check_fails "lab: unknown option" "$LAB" --frobnicate
check_fails "lab: bad size" "$LAB" -s 12Q
check_fails "lab: bad release" "$LAB" -r sometimes
o=$("$LAB" --loops 2>&1); check_grep "lab: missing argument named" "needs an argument" "$o"
check_grep "lab: --help" '^Usage: flamekit-fault-lab' "$("$LAB" --help)"
