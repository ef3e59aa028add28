#!/usr/bin/env bash
# flamekit-fault-lab and flamekit faults: known faults, counted and sampled
# one in N, attributed to the touching function; --user-only; bad input.
# timeout: 480
. "$(dirname "$0")/lib.sh"
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
# MADV_PAGEOUT may leave a few pages resident (still on a per-CPU LRU batch
# under load): every page it did reclaim must fault again, the rest not.
left=$(( $(kv "$T/pageout.kv" pageout anon_kb) / 4 ))
check_range "lab: retouch after reclaim faults every reclaimed page" \
    "$(kv "$T/pageout.kv" retouch minflt_delta)" $((20480 - left)) 20480
"$LAB" -s 8M -k -r none --json >"$T/kernel.json" 2>&1
if need jq; then
    check_eq "lab: --json, kernel-mode touch also one fault per page" 2048 \
        "$(jq -r 'select(.step == "touch") | .minflt_delta' "$T/kernel.json")"
fi
"$LAB" -s 8M -m "$T" --kv >"$T/file.kv" 2>&1
check_eq "lab: --file-touch, one major fault per page" 2048 "$(kv "$T/file.kv" touch majflt_delta)"
check_fails "lab: unknown option" "$LAB" --frobnicate
check_fails "lab: bad size" "$LAB" -s 12Q
check_fails "lab: bad release" "$LAB" -r sometimes
o=$("$LAB" --loops 2>&1); check_grep "lab: missing argument named" "needs an argument" "$o"
check_grep "lab: --help" '^Usage: flamekit-fault-lab' "$("$LAB" --help)"

## flamekit faults: real captures of the lab.
# jnum KEY.PATH FILE: a value from the metadata (flamekit-metadata(5)).
jnum() { python3 -c 'import json,sys; v=json.load(open(sys.argv[2]))
for k in sys.argv[1].split("."): v=v[k]
print(str(v).lower() if isinstance(v, bool) else v)' "$1" "$2" 2>/dev/null; }
# weight FOLDED.gz REGEX: total count of the stacks matching REGEX.
weight() { zcat "$1" | awk -v re="$2" '{ n = $NF; $NF = ""; if ($0 ~ re) s += n } END { print s + 0 }'; }
total() { zcat "$1" | awk '{ s += $NF } END { print s + 0 }'; }
# check_verdict WHAT JSON: the one-in-N check said ok; on failure, its figures.
check_verdict() {
    local v; v=$(jnum faults.verdict "$2")
    [ "$v" = ok ] && { pass "$1"; return; }
    fail "$1" "verdict: ${v:-none}; $(jnum faults.summary "$2"); accepted $(jnum faults.accepted_estimate_range "$2"); lost records $(jnum lost_records "$2") ($(jnum lost "$2") samples), lost samples $(jnum lost_samples "$2"), unwritten $(jnum faults.unwritten_samples "$2"), throttled $(jnum throttled "$2"), stop: $(jnum stop_reason "$2")"
}
# fk_faults NAME ARGS...: capture into $T/NAME, lab output in $T/NAME.out.
fk_faults() {
    local n=$1; shift
    "$FLAMEKIT" faults -q -o "$T/$n" "$@" >"$T/$n.out" 2>"$T/$n.err"
}
files() { J=$(ls "$T/$1"/*.json 2>/dev/null | head -1); F=$(ls "$T/$1"/*.folded.gz 2>/dev/null | head -1); S=$(ls "$T/$1"/*.flamegraph.svg 2>/dev/null | head -1); }

# 80M touched, released with MADV_DONTNEED, touched again: 2 x 20480 faults.
if fk_faults dn run -- "$LAB" -s 80M -r dontneed --kv; then
    pass "faults run: lab captured"
    files dn
    check_grep "faults run: files named HOST.TIME.run-CMD.faults.*" '^[^/]+\.[0-9]{8}_[0-9]{6}_UTC\.run-flamekit-fault-lab\.faults\.json$' "$(basename "$J")"
    C=$(jnum faults.counted "$J"); E=$(jnum faults.estimate "$J"); N=$(( $(jnum samples_read "$J") + $(jnum lost_samples "$J") )); I=$(jnum faults.counters "$J")
    labtotal=$(kv "$T/dn.out" total minflt)
    # The counters start at exec; the lab's own count also has the fork's faults.
    check_range "faults run: counted total = the lab's faults (40960 touches + startup)" "$C" 40960 "$((labtotal + 5))"
    check_range "faults run: samples x 100 within the counters' remainders of the count" "$E" "$((C - I * 99))" "$((C + 100))"
    check_range "faults run: one in 100, not one per fault (samples / count x 100)" \
        "$(awk -v n="$N" -v c="$C" 'BEGIN { print n / c * 100 }')" 0.98 1.01
    check_verdict "faults run: verdict ok" "$J"
    check_eq "faults run: folded counts are samples x period" "$E" "$(total "$F")"
    lab=$(weight "$F" '^flamekit-fault-')
    under=$(weight "$F" '^flamekit-fault-.*;(touch_pages|retouch_pages)( |$)')
    check_range "faults run: >= 80% of the lab's faults under touch_pages/retouch_pages" \
        "$(awk -v u="$under" -v l="$lab" 'BEGIN { print l ? u / l : 0 }')" 0.8 1
    check_range "faults run: touch and retouch each about half" \
        "$(awk -v a="$(weight "$F" ';run_experiment;touch_pages')" -v l="$lab" 'BEGIN { print l ? a / l : 0 }')" 0.4 0.6
    check_grep "faults run: SVG counts page faults" 'page faults' "$S"
    check_grep "faults run: SVG carries the verification summary" 'samples ≈ [0-9]+ faults \(1 in 100\); counted' "$S"
    if need xmllint; then check "faults run: SVG is well-formed XML" xmllint --noout "$S"; fi
    check_grep "faults run: metadata has the period" '"period": 100' "$J"
    check_grep "faults run: metadata records the invocation" '"invocation": "flamekit faults -q -o ' "$J"
    check_eq "faults run: no PERF_SAMPLE_PERIOD" false "$(jnum faults.sample_period_in_sample_type "$J")"
else
    fail "faults run: lab captured" "$(cat "$T/dn.err")"
fi

# -c 1000 and --minor: the period is honoured for every event we offer.
for ev in "page-faults:-c 1000" "minor-faults:--minor -c 250" "faults:-e faults -c 50"; do
    name=${ev%%:*}; args=${ev#*:}
    # shellcheck disable=SC2086
    if fk_faults "p-$name" $args run -- "$LAB" -s 40M -r none --kv; then
        files "p-$name"; k=$(jnum event.period "$J")
        C=$(jnum faults.counted "$J"); N=$(( $(jnum samples_read "$J") + $(jnum lost_samples "$J") )); I=$(jnum faults.counters "$J")
        check_range "$name every $k: counted >= the 10240 touches" "$C" 10240 12000
        check_range "$name every $k: samples = count / $k (within remainders)" "$N" "$(( (C - I * (k - 1)) / k ))" "$(( C / k + 1 ))"
    else
        fail "$name $args: capture" "$(cat "$T/p-$name.err")"
    fi
done

# --major: a file read back after dropping it from the page cache.
if fk_faults major --major -c 10 run -- "$LAB" -s 8M -m "$T" --kv; then
    files major
    C=$(jnum faults.counted "$J"); N=$(( $(jnum samples_read "$J") + $(jnum lost_samples "$J") )); I=$(jnum faults.counters "$J")
    check_range "--major: counted = the 2048 major faults" "$C" 2048 2100
    check_range "--major every 10: samples = count / 10 (within remainders)" "$N" "$(( (C - I * 9) / 10 ))" "$(( C / 10 + 1 ))"
    lab=$(weight "$F" '^flamekit-fault-')
    check_range "--major: >= 80% under read_file_pages" \
        "$(awk -v u="$(weight "$F" ';read_file_pages( |$)')" -v l="$lab" 'BEGIN { print l ? u / l : 0 }')" 0.8 1
    check_grep "--major: named HOST.TIME.SCOPE.faults" '\.run-flamekit-fault-lab\.faults\.json$' "$(basename "$J")"
    check_eq "--major: the event in the metadata" major-faults "$(jnum event.name "$J")"
else
    fail "--major: capture" "$(cat "$T/major.err")"
fi

# Other events, same check: context switches of a pipe ping-pong, a tracepoint.
pingpong() { "$FLAMEKIT" faults -q -o "$T/$1" "${@:2}" run -- sh -c 'yes | head -c 50000000 >/dev/null' >"$T/$1.out" 2>"$T/$1.err"; }
for ev in "cs:-e context-switches -c 10" "sched_switch:-e sched:sched_switch -c 10"; do
    name=${ev%%:*}; args=${ev#*:}
    # shellcheck disable=SC2086
    if pingpong "e-$name" $args; then
        files "e-$name"
        C=$(jnum faults.counted "$J"); N=$(( $(jnum samples_read "$J") + $(jnum lost_samples "$J") )); I=$(jnum faults.counters "$J")
        if [ "${C:-0}" -ge 60 ]; then
            check_range "-e $name every 10: samples = count / 10 (within remainders), not one per hit" \
                "$N" "$(( (C - I * 9) / 10 ))" "$(( C / 10 + 1 ))"
        else
            skip "-e $name: period check" "only ${C:-0} events counted"
        fi
        check_verdict "-e $name: verdict ok" "$J"
    else
        fail "-e $name: capture" "$(cat "$T/e-$name.err")"
    fi
done

# Kernel-mode faults: read() from /dev/zero into 20480 untouched pages.
if fk_faults kern run -- "$LAB" -s 80M -k -r none --kv; then
    files kern
    C=$(jnum faults.counted "$J")
    check_range "kernel-touch: counted includes the 20480 kernel-mode faults" "$C" 20480 21000
    lab=$(weight "$F" '^flamekit-fault-')
    k=$(weight "$F" ';read_into_pages;.*ksys_read_\[k\]')
    check_range "kernel-touch: >= 80% under read_into_pages -> kernel read path" \
        "$(awk -v u="$k" -v l="$lab" 'BEGIN { print l ? u / l : 0 }')" 0.8 1
else
    fail "kernel-touch: capture" "$(cat "$T/kern.err")"
fi
if fk_faults kuser --user-only run -- "$LAB" -s 80M -k -r none --kv; then
    files kuser
    C=$(jnum faults.counted "$J")
    check_range "--user-only: the kernel-mode faults are not counted" "$C" 0 1000
    check_eq "--user-only: no read_into_pages stacks" 0 "$(weight "$F" 'read_into_pages')"
    check_eq "--user-only: no kernel frames" 0 "$(weight "$F" '_\[k\]')"
    check_eq "--user-only: recorded in the metadata (event.kernel false)" false "$(jnum event.kernel "$J")"
else
    fail "--user-only: capture" "$(cat "$T/kuser.err")"
fi
if fk_faults uuser --user-only run -- "$LAB" -s 40M -r none --kv; then
    files uuser
    check_range "--user-only: user-mode touches still counted" "$(jnum faults.counted "$J")" 10240 11000
fi

# pid: attach to a running process that becomes the lab (exec: same pid)
# once flamekit says its events are on (--ready-fd). A lab that started
# touching on a timer raced the attach: under ASan at load 17 the attach
# took longer than its 500 ms and 8560 of the 10240 touches were counted.
mkfifo "$T/pid.go"
sh -c 'read -r _ && exec "$@"' lab "$LAB" -s 40M -r none --kv <"$T/pid.go" >"$T/pid.lab" 2>&1 &
labpid=$!
fk_cleanup "kill $labpid 2>/dev/null"
if fk_faults pid -d 20 --ready-fd 3 pid "$labpid" 3>"$T/pid.go"; then
    files pid
    check_range "faults pid: the touches after attach are counted" "$(jnum faults.counted "$J")" 10240 11000
    check_verdict "faults pid: ends when the process exits, verdict ok" "$J"
    check_grep "faults pid: scope in the name" "\.pid-$labpid\.faults\.json$" "$(basename "$J")"
else
    fail "faults pid: capture" "$(cat "$T/pid.err")"
fi
wait "$labpid" 2>/dev/null

# host / user: host-wide counters; the lab's faults must be there, and the
# host-wide one-in-N check holds (lost samples are read exactly with the
# count, PERF_FORMAT_LOST, so a busy host cannot make it fail). The lab
# starts once flamekit says its events are on (--ready-fd) and runs three
# loops of 10240 fresh pages; flamekit is stopped (Ctrl-C) once the lab has
# exited. All of the lab's touches are in the window however long a
# host-wide start takes and however slowly a starved lab goes (a lab that
# looped through a fixed 2 s window was starved below one loop at load 18-52
# under ASan: 6,000 touches in the graph, verdict ok), so the graph must hold what the lab counted itself (its touch
# steps' minflt_delta): one in N, so to within the period's rounding per
# run of touches on a CPU (10 %), less what flamekit lost (the larger of
# lost and lost_samples, x N, as the one-in-N check allows). It may hold
# more when other tasks' faults on the lab's CPU follow its samples: a
# profiler woken at samples, and running there before the lab, made the
# lab over-sampled by 2-22 % (flamekit before it read the rings on a
# timer, evkind.c; perf record by 5 %), and other tasks may still do it,
# hence 1.5 x at most.
# The lab runs under a name of this run's own (its comm is the name it was
# exec'd by), so another lab on the host (a suite run beside this one) is
# not counted as this one's.
ln -s "$LAB" "$T/fklab-$$"
for tgt in "host:host" "user:user root"; do
    name=${tgt%%:*}; args=${tgt#*:}
    # shellcheck disable=SC2086
    "$FLAMEKIT" faults -q -o "$T/t-$name" -d 300 --ready-fd 3 $args \
        >"$T/t-$name.out" 2>"$T/t-$name.err" 3>"$T/t-$name.ready" &
    fkp=$!
    fk_cleanup "kill $fkp 2>/dev/null"
    if wait_for_file "$T/t-$name.ready" 120; then
        "$T/fklab-$$" -s 40M -r none -n 3 --kv >"$T/t-$name.lab" 2>&1
    fi
    kill -INT "$fkp" 2>/dev/null
    if wait "$fkp"; then
        files "t-$name"
        check_verdict "faults $name: verdict ok" "$J"
        # per-CPU counters: every sample carries its counter's count, so
        # samples the kernel counted but never wrote are seen, not guessed
        check_grep "faults $name: samples counted but never written are checked" '^[0-9]+$' \
            "$(jnum faults.unwritten_samples "$J")"
        touched=$(awk '$1 == "step=touch" { for (i = 2; i <= NF; i++) if ($i ~ /^minflt_delta=/) { sub(/.*=/, "", $i); s += $i } } END { print s + 0 }' "$T/t-$name.lab")
        check_eq "faults $name: the lab touched 3 x 10240 pages in the window" 30720 "$touched"
        lost=$(jnum lost_samples "$J"); l2=$(jnum lost "$J"); [ "${l2:-0}" -gt "${lost:-0}" ] && lost=$l2
        lostw=$(( ${lost:-0} * $(jnum faults.period "$J") ))
        check_range "faults $name: the lab's touches are in the graph" \
            "$(weight "$F" "^fklab-$$;.*;touch_pages")" $((touched * 9 / 10 - lostw)) $((touched * 3 / 2))
    else
        fail "faults $name: capture" "$(cat "$T/t-$name.err")"
    fi
done

# cgroup: checked on the target. The lab runs in a cgroup of its own; the
# cgroup's own counters (per CPU, limited to the cgroup) give its exact
# fault count, and the estimate from its samples must agree with it. The
# samples come from host-wide counters, so which task takes a sample at a
# period boundary is a matter of interleaving: a sound bound is 10% (runs
# here are within 1-2%), plus 20 periods for small counts. Samples the
# kernel could not write (a slow or starved reader) may have been the
# cgroup's: the estimate then lies between the folded total and that plus
# every lost sample (estimate_of_target_max), and the count must agree with
# that range.
cg2=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
if [ -n "$cg2" ] && mkdir "$cg2/fk-faults-$$" 2>/dev/null; then
    fk_cgroup_cleanup "$cg2/fk-faults-$$"
    # as for host and user: the lab runs its loops inside the window (a lab
    # looping through a fixed 2 s window was starved below one loop at load
    # 17 under ASan: 9,952 faults counted), in the cgroup from before its exec
    "$FLAMEKIT" faults -o "$T/t-cgroup" -d 300 --ready-fd 3 cgroup "fk-faults-$$" \
        >"$T/t-cgroup.out" 2>"$T/t-cgroup.err" 3>"$T/t-cgroup.ready" &
    fkp=$!
    fk_cleanup "kill $fkp 2>/dev/null"
    if wait_for_file "$T/t-cgroup.ready" 120; then
        sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' lab "$cg2/fk-faults-$$" \
            "$LAB" -s 40M -r none -n 2 --kv >"$T/t-cgroup.lab" 2>&1
    fi
    kill -INT "$fkp" 2>/dev/null
    if wait "$fkp"; then
        files t-cgroup
        tc=$(jnum faults.target_count "$J"); est=$(jnum faults.estimate_of_target "$J"); max=$(jnum faults.estimate_of_target_max "$J")
        touched=$(awk '$1 == "step=touch" { for (i = 2; i <= NF; i++) if ($i ~ /^minflt_delta=/) { sub(/.*=/, "", $i); s += $i } } END { print s + 0 }' "$T/t-cgroup.lab")
        check_eq "faults cgroup: the lab touched 2 x 10240 pages in the window" 20480 "$touched"
        check_range "faults cgroup: the cgroup's own count has the lab's loops" "${tc:-0}" "$touched" 100000000
        check_range "faults cgroup: the estimate of the cgroup agrees with its own count (ratio, lost samples either way)" \
            "$(awk -v e="$est" -v m="${max:-0}" -v c="${tc:-0}" 'BEGIN { print (!c ? 0 : e > c ? e / c : m < c ? m / c : 1) }')" \
            "$(awk -v c="${tc:-1}" 'BEGIN { print 0.9 - 20 * 100 / c }')" "$(awk -v c="${tc:-1}" 'BEGIN { print 1.1 + 20 * 100 / c }')"
        # (the shell that put it there takes a few faults in its exec)
        check_eq "faults cgroup: everything in the graph is the lab's" "$(total "$F")" \
            "$(( $(weight "$F" '^flamekit-fault-') + $(weight "$F" '^sh;') ))"
        check_eq "faults cgroup: the metadata says the check covers the host" host "$(jnum faults.checked_on "$J")"
        check_grep "faults cgroup: the summary gives the cgroup's own count" "the cgroup's own count: [0-9]+ faults" "$(cat "$T/t-cgroup.out" "$T/t-cgroup.err")"
    else
        fail "faults cgroup: capture" "$(cat "$T/t-cgroup.err")"
    fi
else
    skip "faults cgroup" "no writable cgroup2 mount"
fi

# --stdout: one framed stream on stdout, the command's own output on stderr.
mkdir "$T/tmp"
if TMPDIR=$T/tmp "$FLAMEKIT" faults -q --stdout run -- "$LAB" -s 4M -r none --kv >"$T/stream" 2>"$T/stream.err"; then
    check_eq "--stdout: the stream's magic first" FKS1 "$(head -c 4 "$T/stream")"
    for suf in folded.gz pb.gz json flamegraph.svg; do
        check_grep "--stdout: carries the .$suf" "run-flamekit-fault-lab\.faults\.$suf" "$(strings "$T/stream" | grep -F ".$suf")"
    done
    check_nogrep "--stdout: the command's output stays out of the stream" 'step=total' "$(strings "$T/stream")"
    check_grep "--stdout: the command's output goes to stderr" 'step=total' "$T/stream.err"
    check_eq "--stdout: no temporary directory left" "" "$(ls "$T/tmp")"
else
    fail "--stdout: capture" "$(cat "$T/stream.err")"
fi

# SIGINT mid-capture: complete results, verified, the reason recorded.
# A lab faults all through the window (an idle host's few dozen faults
# are fewer than the counters' remainders can hold: no check at all).
"$LAB" -s 8M -r dontneed -n 100000000 --kv >/dev/null 2>&1 &
ilab=$!
fk_cleanup "kill $ilab 2>/dev/null"
"$FLAMEKIT" faults -q -o "$T/int" -d 60 host >"$T/int.out" 2>"$T/int.err" &
fp=$!
sleep 1.5
kill -INT "$fp"
wait "$fp"
irc=$?
kill "$ilab" 2>/dev/null
wait "$ilab" 2>/dev/null
if [ $irc = 0 ]; then
    files int
    check_grep "SIGINT: stop reason recorded" '"stop_reason": "signal"' "$J"
    check_verdict "SIGINT: verdict ok" "$J"
    check "SIGINT: complete folded file" gzip -t "$F"
else
    fail "SIGINT: exit 0 with results" "$(cat "$T/int.err")"
fi

# Safety floors and bad input.
o=$("$FLAMEKIT" faults -c 5 run -- true 2>&1); rc=$?
check_eq "-c below the floor: usage error" 2 "$rc"
check_grep "-c below the floor: says why and names the override" 'at least 10.*--unsafe' "$o"
if fk_faults unsafe -c 5 --unsafe run -- "$LAB" -s 4M -r none --kv; then
    files unsafe
    check_eq "-c 5 --unsafe: allowed, verified" ok "$(jnum faults.verdict "$J")"
else
    fail "-c 5 --unsafe" "$(cat "$T/unsafe.err")"
fi
o=$("$FLAMEKIT" faults -d 10m host 2>&1); rc=$?
check_eq "-d above 300s: usage error" 2 "$rc"
check_fails "unknown option" "$FLAMEKIT" faults --frobnicate host
check_fails "no target" "$FLAMEKIT" faults
check_fails "unknown target" "$FLAMEKIT" faults moon
check_fails "bad pid" "$FLAMEKIT" faults pid 12x
check_fails "pid that does not exist" "$FLAMEKIT" faults -o "$T/nope" pid 999999999
check_fails "unknown event" "$FLAMEKIT" faults -e bogus-event run -- true
check_fails "unknown tracepoint" "$FLAMEKIT" faults -e sched:no_such_tracepoint run -- true
o=$("$FLAMEKIT" faults -e cpu-clock run -- true 2>&1)
check_grep "cpu-clock refused with a pointer to CPU profiles" 'timer' "$o"
check_fails "--minor and --major together" "$FLAMEKIT" faults --minor --major run -- true
check_fails "run without a command" "$FLAMEKIT" faults run --
check_fails "command that does not exist" "$FLAMEKIT" faults -o "$T/nocmd" run -- /nonexistent/cmd
check_fails "unknown user" "$FLAMEKIT" faults user no-such-user-here
check_fails "cgroup that does not exist" "$FLAMEKIT" faults cgroup /no/such/cgroup
# (A path under a regular file: unwritable even for root.)
: >"$T/plainfile"
o=$("$FLAMEKIT" faults -o "$T/plainfile/out" run -- true 2>&1); rc=$?
check_eq "unwritable output directory: exit 125 (run: flamekit failed)" 125 "$rc"
check_grep "unwritable output directory: named" 'plainfile/out' "$o"
check_grep "faults --help" '^usage: flamekit faults' "$("$FLAMEKIT" faults --help)"

# Options between 'run' and '--'; a failed start leaves nothing behind;
# 'faults run' exits with the command's status.
mkdir "$T/cwd"
if (cd "$T/cwd" && "$FLAMEKIT" faults -q run -o "$T/after" -c 50 -- "$LAB" -s 4M -r none --kv) >/dev/null 2>"$T/after.err"; then
    files after
    check_eq "faults run -o DIR -c N -- CMD: options after 'run' apply" 50 "$(jnum event.period "$J")"
    check_eq "faults run -o DIR -- CMD: nothing in the current directory" "" "$(ls -A "$T/cwd")"
else
    fail "faults run -o DIR -- CMD" "$(cat "$T/after.err")"
fi
o=$(cd "$T/cwd" && "$FLAMEKIT" faults run -- /nonexistent/cmd 2>&1); rc=$?
check_eq "faults run: a command that does not exist exits 127" 127 "$rc"
check_eq "faults run: ... and leaves no directory" "" "$(ls -A "$T/cwd")"
"$FLAMEKIT" faults -q -o "$T/newdir" run -- /nonexistent/cmd >/dev/null 2>&1
check "faults run: ... nor the -o directory it created" test ! -e "$T/newdir"
(cd "$T/cwd" && "$FLAMEKIT" faults --bogus run -- true) >/dev/null 2>&1
check_eq "faults: a bad option leaves nothing" "" "$(ls -A "$T/cwd")"
o=$("$FLAMEKIT" faults -o "$T/false" run -- false 2>&1); rc=$?
check_eq "faults run: exit status of the command" 1 "$rc"
check_nogrep "faults run -- false: no '(0.0%)' that reads like a failure" '\(0\.0%\)' "$o"
check_grep "faults run -- false: says the count is too small to compare" 'below one period per counter' "$o"
# SIGTERM to 'faults run' ends the capture and reaches the command, like
# 'run': complete files, the command's status (killed by SIGTERM: 143).
"$FLAMEKIT" faults -q -o "$T/term" run -- sleep 30 >/dev/null 2>"$T/term.err" &
fp=$!
for _ in $(seq 100); do pgrep -P "$fp" -x sleep >/dev/null && break; sleep 0.05; done
sleep 0.3
kill -TERM "$fp"
wait "$fp"; rc=$?
check_eq "faults run: SIGTERM passed on, exit status 128+15" 143 "$rc"
files term
check_eq "faults run: SIGTERM: the command's end recorded" 15 "$(jnum target.exit_signal "$J")"
check "faults run: SIGTERM: complete folded file" gzip -t "$F"
o=$("$FLAMEKIT" faults run -- 2>&1); rc=$?
check_eq "faults run with nothing after --: usage error" 2 "$rc"
