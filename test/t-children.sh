#!/usr/bin/env bash
# No sample of a tree goes missing: 'run' puts the command in a cgroup of
# its own and samples per CPU in cgroup mode, so short-lived children are
# sampled from their first instruction (a shell loop of /bin/true, against
# the tree's own CPU time from rusage); the one-in-N check of a tree's page
# faults holds there and says "wrong" on inherited per-task events (the
# issue: 12 samples for 45,841 faults, verdict "ok"), "too-few-samples" on
# one task too short to check (no longer "ok" either); the cgroup is gone
# after every exit (the command done, Ctrl-C, a daemon left behind, a
# command that cannot start). 'pid' on a process in a small cgroup of its
# own follows its tree there (a busy outsider in the same cgroup dropped),
# elsewhere it keeps per-task events and says short children may be missed.
# Off-CPU and Python frames of a tree of short children under run (the
# cgroup path, and inherited per-task events): a child's sleeps are its
# blocks, its exit no block; each interpreter's function has its CPU time.
# 1,000 children under run are each counted; a pid used by a member's
# child, an outsider's, then a member's again is judged afresh each time.
# The frame-pointer call graph keeps the rings small at 999 Hz: what is
# tested here is which samples are kept, not how stacks are unwound.
# (About 20 captures: 178 s plain and 236 s under ASan at moderate load;
# at load 23 with four busy loops beside, the 300 s default ran out.)
# timeout: 420
. "$FK_SRC/test/lib.sh"

# keys NAME: the metadata of capture NAME flattened into $T/NAME.keys
# (one python3 start per capture: each costs seconds on a loaded host)
keys() { python3 -c 'import json,sys
def walk(p, v):
    if isinstance(v, dict):
        for k in v: walk(p + [k], v[k])
    else:
        print(".".join(p) + "=" + (str(v).lower() if isinstance(v, bool) else str(v)))
walk([], json.load(open(sys.argv[1])))' "$(json "$1")" >"$T/$1.keys" 2>/dev/null; }
jnum() { val "$T/$1.keys" "$2"; }
json() { ls "$T/$1"/*.json 2>/dev/null | head -1; }
folded() { ls "$T/$1"/*.folded.gz 2>/dev/null | head -1; }
# comm_samples FOLDED REGEX: samples whose comm (first field) matches REGEX
comm_samples() { zcat "$1" | awk -v re="$2" '{ n = $NF; split($0, f, ";"); if (f[1] ~ re) s += n } END { print s + 0 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f\n", (b > 0 ? a / b : 0) }'; }
# Statistical floor: samples of a tree are its CPU time over the period,
# give or take sqrt(n) (which period boundaries fall in a short child is a
# matter of phase): 5 standard deviations below, and at most the 10% the
# issue allows. expected N -> the least ratio that is sound and required.
floor_ratio() { awk -v n="$1" 'BEGIN { f = 1 - 5 / sqrt(n > 1 ? n : 1); print (f > 0.9 ? 0.9 : f) }'; }
CG2=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
# cgroups left behind by the flamekit of pid $1
leftover() { [ -n "$CG2" ] && find "$CG2" -maxdepth 8 -type d -name "flamekit-run.$1.*" 2>/dev/null | wc -l || echo 0; }

if [ -z "$CG2" ] || [ "$(id -u)" != 0 ]; then
    skip_rest "no cgroup2 mount, or not root: 'run' uses per-task events (checked in t-capture)"
fi

# Unique command names, so the tree's samples are told apart.
tag=c$$
cp /bin/true "$T/fktrue$tag"
cp "$(command -v bash)" "$T/fkloop$tag"
LOOP=$T/fkloop$tag
TRUE=$T/fktrue$tag
F=999

## A shell loop of /bin/true: the issue's case (0 samples for 7 s of CPU
## on per-task events). The truth is the tree's rusage (/usr/bin/time).
"$FLAMEKIT" run -F $F --call-graph fp -o "$T/true" -- \
    /usr/bin/time -f '%U %S' -o "$T/true.time" "$LOOP" -c "for i in \$(seq 200); do $TRUE; done" \
    >"$T/true.out" 2>&1 &
fk=$!
wait $fk
rc=$?
keys true
if [ $rc = 0 ] && [ -s "$T/true.keys" ]; then
    cpu=$(awk 'NR == 1 { print $1 + $2 }' "$T/true.time")
    want=$(awk -v c="$cpu" -v f=$F 'BEGIN { printf "%d\n", c * f }')
    n=$(jnum true samples)
    check_eq "run: the tree is followed in a cgroup" cgroup "$(jnum true target.tree.mode)"
    # rusage is in ticks of 10 ms: +-1 on top of the samples' spread
    q=$(awk -v c="$cpu" 'BEGIN { print 0.02 / (c > 0.01 ? c : 0.01) }')
    check_range "run: samples >= 90% of the tree's CPU x $F Hz ($n for ${cpu}s)" "$(ratio "$n" "$want")" \
        "$(awk -v f="$(floor_ratio "$want")" -v q="$q" 'BEGIN { print f - q }')" \
        "$(awk -v w="$want" -v q="$q" 'BEGIN { print 1 + 5 / sqrt(w > 1 ? w : 1) + q }')"
    check_range "run: 200 children seen forked" "$(jnum true target.tree.forks)" 200 300
    check_range "run: ... and exit" "$(jnum true target.tree.exits)" 200 300
    check_range "run: the short children have their share" "$(comm_samples "$(folded true)" "^fktrue$tag")" \
        $((want / 20)) 100000000
    check_grep "run: the summary says how the tree was followed" 'tree: per-CPU events in the cgroup' "$T/true.out"
    check_eq "run: no cgroup left behind" 0 "$(leftover $fk)"
else
    fail "run: shell loop of /bin/true" "$(head -5 "$T/true.out")"
fi

## Page faults of a tree, one in 100 (the issue's case): the estimate is
## the tree's count less at most one period per CPU counter.
"$FLAMEKIT" faults -c 100 --call-graph fp -o "$T/faults" run -- "$LOOP" -c "for i in \$(seq 100); do $TRUE; done" \
    >"$T/faults.out" 2>&1 &
fk=$!
if wait $fk; then
    keys faults
    c=$(jnum faults faults.counted); e=$(jnum faults faults.estimate_of_target)
    check_range "faults run: the count has every child's faults (100 x exec)" "$c" 5000 100000000
    check_range "faults run: the estimate is the tree's count less a period per CPU at most" "$e" \
        $((c - $(nproc) * 99)) "$c"
    check_eq "faults run: verdict ok" ok "$(jnum faults faults.verdict)"
    check_eq "faults run: counters are the CPUs'" "$(nproc)" "$(jnum faults faults.counters)"
    check_eq "faults run: no cgroup left behind" 0 "$(leftover $fk)"
else
    fail "faults run: loop of /bin/true" "$(head -5 "$T/faults.out")"
fi

## One short task at 1 in 1000: its few faults fit in the CPU counters'
## remainders, so any estimate from 0 up agrees with them -- nothing was
## verified, and the verdict and the warning say so rather than "ok".
if "$FLAMEKIT" faults -c 1000 --call-graph fp -o "$T/short" run -- "$TRUE" >"$T/short.out" 2>&1; then
    keys short
    c=$(jnum short faults.counted)
    check_range "faults run, one short task: a few faults counted" "$c" 1 $(($(nproc) * 999))
    check_eq "faults run, one short task: verdict too-few-samples" too-few-samples "$(jnum short faults.verdict)"
    check_grep "faults run, one short task: the warning says why" 'too few to verify 1 in 1000' "$T/short.out"
else
    fail "faults run: one short task" "$(head -5 "$T/short.out")"
fi

## The same on inherited per-task events (no cgroup2 in a private mount
## namespace): the children never reach a period, and the check says so.
if need unshare && unshare -m true 2>/dev/null; then
    unshare -m sh -c "umount '$CG2' && exec \"\$0\" \"\$@\"" "$FLAMEKIT" faults -c 100 --call-graph fp \
        -o "$T/pertask" run -- "$LOOP" -c "for i in \$(seq 100); do $TRUE; done" >"$T/pertask.out" 2>&1
    keys pertask
    check_eq "faults run, per-task: followed per task" per-task "$(jnum pertask target.tree.mode)"
    check_eq "faults run, per-task: why (no cgroup2)" "no cgroup2 file system is mounted" \
        "$(jnum pertask target.tree.why_not_cgroup)"
    check_eq "faults run, per-task: the metadata says short children may be missed" true \
        "$(jnum pertask target.tree.short_children_may_be_missed)"
    check_eq "faults run, per-task: verdict wrong (samples went missing)" wrong "$(jnum pertask faults.verdict)"
    check_grep "faults run, per-task: the warning names the cause" 'per-task' "$T/pertask.out"
else
    skip "faults run, per-task" "no unshare -m"
fi

## Off-CPU of a tree: 20 short children, each asleep 50 ms, are blocked
## members of the tree from their start. An exiting child's last switch-out
## (do_task_dead, after its EXIT record) is no block: it used to stay open
## to the capture's end, 20 children giving 18 s "other" in a 1.8 s window.
cp "$(command -v sleep)" "$T/fksleep$tag"
# seconds in capture $1's folded stacks matching the awk pattern $2
secs() { zcat "$(folded "$1")" | awk -v re="$2" '$0 ~ re { s += $NF } END { printf "%.3f\n", s / 1e9 }'; }
sleeps="^fksleep$tag;\\\\[S\\\\];.*nanosleep"
"$FLAMEKIT" offcpu --call-graph fp -o "$T/offrun" run -- "$LOOP" -c "for i in \$(seq 20); do $T/fksleep$tag 0.05; done" \
    >"$T/offrun.out" 2>&1
rc=$?
keys offrun
if [ $rc = 0 ] && [ -s "$T/offrun.keys" ]; then
    fo=$(folded offrun)
    win=$(jnum offrun duration_s)
    slept=$(secs offrun "$sleeps")
    all=$(secs offrun "^fksleep$tag;")
    check_eq "offcpu run: the tree is followed in a cgroup" cgroup "$(jnum offrun target.tree.mode)"
    check_range "offcpu run: the children's sleeps are there (20 x 50 ms, in s)" "$slept" 0.95 "$win"
    check_range "offcpu run: the children's off-CPU time fits the window ($win s; sequential children)" \
        "$all" 0.95 "$win"
    check_range "offcpu run: every child's last switch-out is no block" "$(jnum offrun offcpu.exit_switches)" 20 100
    check_eq "offcpu run: nothing off CPU in do_task_dead" 0 "$(zcat "$fo" | grep -c 'do_task_dead')"
else
    fail "offcpu run: loop of short sleeps" "exit $rc: $(head -5 "$T/offrun.out")"
fi

## The same loop on inherited per-task events (cgroup2 unmounted in a
## private mount namespace): each child is timed from its fork (the
## in-kernel program follows forks), and the first child's exit does not
## stop the timing (a program attached to an inherited event was taken off
## the tracepoint then: 0 s of the children's sleeps, "blocks dropped").
if need unshare && unshare -m true 2>/dev/null; then
    unshare -m sh -c "umount '$CG2' && exec \"\$0\" \"\$@\"" "$FLAMEKIT" offcpu --call-graph fp \
        -o "$T/offpt" run -- "$LOOP" -c "for i in \$(seq 20); do $T/fksleep$tag 0.05; done" >"$T/offpt.out" 2>&1
    rc=$?
    keys offpt
    if [ $rc = 0 ] && [ -s "$T/offpt.keys" ]; then
        check_eq "offcpu run, per-task: followed per task" per-task "$(jnum offpt target.tree.mode)"
        slept=$(secs offpt "$sleeps")
        win=$(jnum offpt duration_s)
        check_range "offcpu run, per-task: the children's sleeps are there (20 x 50 ms, in s; $(jnum offpt offcpu.block_source) blocks, $(jnum offpt offcpu.switch_ins_lost) switch-ins lost, $(jnum offpt offcpu.bpf_switch_ins_unseen) not shown by the kernel)" \
            "$slept" 0.95 "$win"
        # a switch-in the kernel did not show (Linux 6.18: a child's sleep
        # switched out twice) is timed from the child's CPU time, not
        # dropped: a child's 50 ms went missing in 5 of 40 ASan runs
        check_eq "offcpu run, per-task: every switch-in the kernel did not show is timed" \
            "$(jnum offpt offcpu.bpf_switch_ins_unseen)" "$(jnum offpt offcpu.bpf_switch_ins_unseen_timed)"
        # sequential children's sleeps past the window are invented time
        # (2.317 s in a 2.242 s window once, at load; not reproduced in 26
        # runs): keep the capture and its thread accounting to find where
        if awk -v s="$slept" -v w="$win" 'BEGIN { exit !(s > w) }'; then
            rm -rf "$FK_BUILD/test/out/t-children.offpt" && cp -r "$T/offpt" "$FK_BUILD/test/out/t-children.offpt"
            python3 -c 'import json,sys; o=json.load(open(sys.argv[1]))["offcpu"]
print("    offcpu accounting:", json.dumps({k: o.get(k) for k in ("threads_exact", "threads_estimated", "threads_estimated_by", "threads_cut_to_window", "exit_switches", "blocked_ns_by_state", "blocks_open_at_end", "bpf_switches_picked", "bpf_blocks_recorded", "bpf_switch_ins_unseen", "bpf_switches_unseen", "bpf_unseen_bound_ns", "switches_recorded")}))' "$(json offpt)"
        fi
    else
        fail "offcpu run, per-task: loop of short sleeps" "exit $rc: $(head -5 "$T/offpt.out")"
    fi
else
    skip "offcpu run, per-task" "no unshare -m"
fi

# spin_share WHAT DIR GOT WANT: fk_child_spin's samples against its CPU time
# x the frequency. Under load it has failed (726 of 899 once, ASan run; the
# pid case 0.72 and 0.81): on failure the capture's metadata and stacks are
# kept beside the log and its Python keys and where the interpreters'
# samples went are printed, so the failure itself says where they went.
spin_share() {
    local r lo hi j fo
    r=$(ratio "$3" "$4") lo=$(floor_ratio "$4") hi=$(awk -v w="$4" 'BEGIN { print 1 + 5 / sqrt(w) + 0.05 }')
    if awk -v v="$r" -v lo="$lo" -v hi="$hi" 'BEGIN { exit !(v >= lo && v <= hi) }'; then
        pass "$1 ($3 samples, $4 expected) ($r in [$lo, $hi])"
        return
    fi
    j=$(json "$2") fo=$(folded "$2")
    cp "$j" "$FK_BUILD/test/out/$TNAME-$2.json" 2>/dev/null
    cp "$fo" "$FK_BUILD/test/out/$TNAME-$2.folded.gz" 2>/dev/null
    fail "$1 ($3 samples, $4 expected)" \
        "value $r not in [$lo, $hi]; $(grep '^python\.' "$T/$2.keys" | tr '\n' ' ' | head -c 1500); samples by comm and first frame: $(zcat "$fo" | awk '{ split($1, f, ";"); s[f[1] ";" f[2]] += $NF } END { for (k in s) print s[k], k }' | sort -rn | head -8 | tr '\n' ' ')"
}

## Python frames of a tree: six short interpreters (Debian's python3.11,
## 0.15 s of CPU each in fk_child_spin) forked by a shell under run, each
## sampled in the command's cgroup from its start and read as its samples
## leave the ring: the function's samples are its CPU time x the frequency.
PY=/usr/bin/python3.11
if [ -x "$PY" ]; then
    printf '%s\n' 'import time' 'def fk_child_spin(t):' '    e = time.process_time() + t' \
        '    while time.process_time() < e:' '        pass' 'fk_child_spin(0.15)' >"$T/fkpy.py"
    "$FLAMEKIT" run -F $F -o "$T/py" -- "$LOOP" -c "for i in 1 2 3 4 5 6; do $PY $T/fkpy.py; done" >"$T/py.out" 2>&1
    rc=$?
    keys py
    if [ $rc = 0 ] && [ -s "$T/py.keys" ]; then
        want=$(awk -v f=$F 'BEGIN { printf "%d\n", 6 * 0.15 * f }')
        got=$(zcat "$(folded py)" | awk '/;fk_child_spin_\[p\]/ { s += $NF } END { print s + 0 }')
        check_eq "python run: the tree is followed in a cgroup" cgroup "$(jnum py target.tree.mode)"
        spin_share "python run: the children's Python function has its CPU time" py "$got" "$want"
    else
        fail "python run: a shell's short interpreters" "exit $rc: $(head -5 "$T/py.out")"
    fi
    ## The same on inherited per-task events (cgroup2 unmounted in a private
    ## mount namespace): each interpreter is read from its own samples, its
    ## mappings from the records its inherited event gives.
    if need unshare && unshare -m true 2>/dev/null; then
        unshare -m sh -c "umount '$CG2' && exec \"\$0\" \"\$@\"" "$FLAMEKIT" run -F $F -o "$T/pypt" -- \
            "$LOOP" -c "for i in 1 2 3 4 5 6; do $PY $T/fkpy.py; done" >"$T/pypt.out" 2>&1
        rc=$?
        keys pypt
        if [ $rc = 0 ] && [ -s "$T/pypt.keys" ]; then
            want=$(awk -v f=$F 'BEGIN { printf "%d\n", 6 * 0.15 * f }')
            got=$(zcat "$(folded pypt)" | awk '/;fk_child_spin_\[p\]/ { s += $NF } END { print s + 0 }')
            check_eq "python run, per-task: followed per task" per-task "$(jnum pypt target.tree.mode)"
            spin_share "python run, per-task: the children's Python function has its CPU time" pypt "$got" "$want"
            # (on failure, the capture's Python accounting and the stacks
            # concerned: both have failed once under load, not reproduced)
            pyacct=$("$PY" -c 'import json, sys; d = json.load(open(sys.argv[1])); p = d.get("python", {})
print(json.dumps({k: p.get(k) for k in ("walks", "samples", "spliced", "chains", "chains_retaken", "chains_refused", "processes", "processes_forgotten", "snapshots_used", "read_delay")}), "lost", d.get("lost_samples"), "reader", json.dumps(d.get("reader", {}).get("python_chains")))' "$(ls "$T"/pypt/*.json | head -1)" 2>&1)
            invalid=$(jnum pypt python.walks.invalid)
            if [ "$invalid" = 0 ]; then
                pass "python run, per-task: no invalid walk"
            else
                fail "python run, per-task: no invalid walk" "$invalid invalid; $pyacct"
            fi
            # (a chain read at the sample whose code object was freed before
            # it was named -- start-up code run once -- is read again from
            # the target: python.chains_retaken) and past the interpreters'
            # start-up, every sample is spliced but those flamekit counts as
            # frameless: an eval call sampled before it linked its frame (or
            # after it unlinked it) with no Python frame under it, a walk
            # that reached the root with nothing (walks ok + limit - spliced:
            # a walk that reached the root with frames is always spliced;
            # seen once in CI 59, 1 of 1189 samples). Any other sample left
            # with its eval frame fails, and so do frameless walks beyond a
            # prologue's share (1 %).
            past=$(zcat "$(folded pypt)" | awk '/;_PyEval_EvalFrameDefault[; ]/ && !/;Py_InitializeFromConfig;/ { s += $NF } END { print s + 0 }')
            frameless=$(( $(jnum pypt python.walks.ok) + $(jnum pypt python.walks.limit) - $(jnum pypt python.spliced) ))
            pysamples=$(jnum pypt python.samples)
            if [ "$past" -le "$frameless" ] && [ $((frameless * 100)) -le "$pysamples" ]; then
                pass "python run, per-task: every sample past the interpreters' start-up is spliced ($past left, $frameless frameless)"
            else
                fail "python run, per-task: every sample past the interpreters' start-up is spliced" \
                    "$past not spliced, $frameless frameless of $pysamples; $pyacct; stacks: $(zcat "$(folded pypt)" | awk '/;_PyEval_EvalFrameDefault[; ]/ && !/;Py_InitializeFromConfig;/' | awk '{ print $NF, $0 }' | sort -rn | head -3 | cut -d' ' -f2- | cut -c1-400)"
            fi
        else
            fail "python run, per-task: a shell's short interpreters" "exit $rc: $(head -5 "$T/pypt.out")"
        fi
    else
        skip "python run, per-task" "no unshare -m"
    fi
else
    skip "python run: a shell's short interpreters" "no $PY"
fi

## Ctrl-C: the capture ends, the command is stopped by its own Ctrl-C,
## the cgroup goes. With --no-priority: every thread of flamekit stays at
## its own nice through the window (by default, as root, the capture's
## threads run 10 levels higher), and the metadata says it was refused.
# nices PID: the nice values of PID's threads, sorted, unique
nices() { for s in /proc/"$1"/task/*/stat; do sed 's/.*) //' "$s" 2>/dev/null | awk '{ print $17 }'; done | sort -un | paste -sd' '; }
own_nice=$(nice)
"$FLAMEKIT" run -q --no-priority --ready-fd 3 -o "$T/int" -- sh -c 'sleep 30' >"$T/int.out" 2>&1 3>"$T/int.ready" &
fk=$!
for _ in $(seq 200); do [ -s "$T/int.ready" ] && [ "$(leftover $fk)" = 1 ] && break; sleep 0.05; done
check_eq "Ctrl-C: the command runs in flamekit's cgroup" 1 "$(leftover $fk)"
sleep 0.3
check_eq "--no-priority: flamekit's threads stay at its own nice in the window" "$own_nice" "$(nices $fk)"
kill -INT $fk
cg=$(find "$CG2" -maxdepth 8 -type d -name "flamekit-run.$fk.*" 2>/dev/null | head -1)
[ -n "$cg" ] && kill -INT $(cat "$cg/cgroup.procs") 2>/dev/null
wait $fk
check_eq "Ctrl-C: no cgroup left behind" 0 "$(leftover $fk)"
keys int
check_eq "--no-priority: the metadata says the raise was refused" "true false $own_nice" \
    "$(jnum int reader.nice_refused) $(jnum int reader.nice_raised) $(jnum int reader.nice)"
check_eq "default: the capture's threads were raised 10 levels (root)" \
    "false true $((own_nice - 10 < -20 ? -20 : own_nice - 10))" \
    "$(jnum true reader.nice_refused) $(jnum true reader.nice_raised) $(jnum true reader.nice)"

## A daemon left behind: moved back to flamekit's cgroup, still running,
## and the cgroup goes.
"$FLAMEKIT" run -q -o "$T/daemon" -- sh -c "setsid sleep 20 </dev/null >/dev/null 2>&1 & echo \$! >'$T/daemon.pid'" \
    >"$T/daemon.out" 2>&1 &
fk=$!
wait $fk
dp=$(cat "$T/daemon.pid" 2>/dev/null)
fk_cleanup "kill $dp 2>/dev/null"
check_eq "daemon: no cgroup left behind" 0 "$(leftover $fk)"
check "daemon: the daemon still runs" kill -0 "$dp"
check_eq "daemon: ... in flamekit's cgroup" "$(sed -n 's/^0:://p' /proc/self/cgroup)" \
    "$(sed -n 's/^0:://p' "/proc/$dp/cgroup" 2>/dev/null)"
kill "$dp" 2>/dev/null

## A command that cannot start.
"$FLAMEKIT" run -q -o "$T/nocmd" -- "$T/no-such-command" >"$T/nocmd.out" 2>&1 &
fk=$!
wait $fk
check_eq "no command: exit 127" 127 $?
check_eq "no command: no cgroup left behind" 0 "$(leftover $fk)"

## pid: a running shell loop in a small cgroup of its own (a service's),
## with a busy outsider beside it: per-CPU events in that cgroup, the
## loop's tree kept by its fork/exit records, the outsider dropped. The
## tree's CPU in the window comes from /proc/PID/stat (its own time and its
## reaped children's) read about every 0.1 s, each reading stamped with the
## times just before and just after it: the readings that bracket the
## window from inside and from outside bound its CPU from below and above,
## however late a loaded host runs the reader. The target is never moved.
svc=$CG2/fk-children-$$
if mkdir "$svc" 2>/dev/null; then
    fk_cgroup_cleanup "$svc"
    "$LOOP" -c "echo \$\$ >$svc/cgroup.procs; exec $LOOP -c 'while :; do $TRUE; done'" &
    lp=$!
    fk_cleanup "kill $lp 2>/dev/null"
    cp /bin/sh "$T/fkout$tag"
    "$T/fkout$tag" -c "echo \$\$ >$svc/cgroup.procs; while :; do :; done" &
    op=$!
    fk_cleanup "kill $op 2>/dev/null"
    ( while kill -0 "$lp" 2>/dev/null; do
          t1=$EPOCHREALTIME
          v=$(awk '{ print $14 + $15 + $16 + $17 }' "/proc/$lp/stat" 2>/dev/null)
          echo "$t1 $EPOCHREALTIME $v"
          sleep 0.1
      done ) >"$T/pidcpu" 2>/dev/null &
    sp=$!
    fk_cleanup "kill $sp 2>/dev/null"
    sleep 0.5
    if "$FLAMEKIT" pid -F $F --call-graph fp -d 3 -o "$T/pid" "$lp" >"$T/pid.out" 2>&1; then
        keys pid
        s0=$(jnum pid start_unix_ns); d=$(jnum pid duration_s)
        # ticks (USER_HZ 100) in the window, from below (readings taken wholly
        # inside it) and from above (the nearest readings wholly outside it),
        # and the samples each makes at $F Hz (want: their midpoint's)
        read -r tin tout win want wout < <(awk -v s="$s0" -v d="$d" -v f=$F 'BEGIN { e = s + d * 1e9 }
    NF == 3 { t1 = $1 * 1e9; t2 = $2 * 1e9; v = $3
      if (t2 <= s) ao = v
      if (t1 >= s && ai == "") ai = v
      if (t2 <= e) bi = v
      if (t1 >= e && bo == "") bo = v }
    END { i = o = 0
          if (ao != "" && bo != "" && ai != "" && bi != "") { i = bi - ai; o = bo - ao }
          printf "%d %d %d %d %d\n", i, o, i / 100 * f, int((i + o) / 2) / 100 * f, o / 100 * f }' "$T/pidcpu")
        n=$(jnum pid samples)
        # each reading sums four fields truncated to ticks: 4 ticks either
        # way on top of the bracket, and the samples' own spread
        check_range "pid: samples >= 90% of the tree's CPU in the window x $F Hz ($n for $tin..$tout ticks)" \
            "$(ratio "$n" "$want")" \
            "$(awk -v f="$(floor_ratio "$win")" -v wi="$win" -v w="$want" -v t="$tin" \
                'BEGIN { print (w > 0 ? f * wi / w : 0) * (t > 4 ? (t - 4) / t : 0) }')" \
            "$(awk -v wo="$wout" -v w="$want" -v t="$tout" \
                'BEGIN { print (w > 0 ? (1 + 5 / sqrt(wo > 1 ? wo : 1)) * wo / w : 0) * (t + 4) / (t > 0 ? t : 1) }')"
        check_range "pid: the children forked in the window are followed" "$(jnum pid target.tree.forks)" 10 100000000
        check_range "pid: the short children have their share" "$(comm_samples "$(folded pid)" "^fktrue$tag")" \
            $((want / 20)) 100000000
        check_range "pid: the outsider's samples are dropped, and counted" \
            "$(jnum pid target.tree.samples_outside)" 1 100000000
        check_eq "pid: ... none in the graph" 0 "$(comm_samples "$(folded pid)" "^fkout$tag")"
        check_eq "pid: the target was not moved" "${svc#"$CG2"}" "$(sed -n 's/^0:://p' "/proc/$lp/cgroup")"
    else
        fail "pid: capture of a running loop in its cgroup" "$(head -5 "$T/pid.out")"
    fi
    ## off-CPU by pid in the same cgroup: a loop of short sleeping children
    ## is the tree's (each sleeps 50 ms), their last switch-outs too (after
    ## their EXIT records, no block); the busy outsider, whose preemptions
    ## are blocks of its own, is dropped. The loop (bash, for its clock)
    ## stamps the time after each child is reaped: a child reaped between
    ## two stamps inside the window slept its 50 ms wholly inside it. (Not
    ## the capture's fork count: it also counts the child found running at
    ## the start and any forked as the events were enabled, before the
    ## window -- two such once, 1.581 s of sleeps for 34 forks.) Every
    ## switch-out is recorded (--every 1), so every child's one sleep is:
    ## under the budget, beside bpftrace's sched_switch probes, the loop's
    ## bursts (22-29 switch-outs in a millisecond, 107-227 in 10) raised N
    ## to 2-6 and the children whose sleep was not picked had no stack to
    ## carry their time (0.48-0.80 s of 0.99-1.56 s shown); the budget has
    ## tests of its own (t-offcpu).
    cp "$(command -v bash)" "$T/fkbash$tag"
    "$LOOP" -c "echo \$\$ >$svc/cgroup.procs; exec $T/fkbash$tag -c 'while :; do $T/fksleep$tag 0.05; echo \$EPOCHREALTIME; done >$T/offpid.stamps'" &
    slp=$!
    fk_cleanup "kill $slp 2>/dev/null"
    sleep 0.3
    if "$FLAMEKIT" offcpu --call-graph fp --every 1 -d 2 -o "$T/offpid" pid "$slp" >"$T/offpid.out" 2>&1; then
        keys offpid
        fo=$(folded offpid)
        win=$(jnum offpid duration_s)
        all=$(zcat "$fo" | awk -v re="^fksleep$tag;" '$0 ~ re { s += $NF } END { printf "%.3f\n", s / 1e9 }')
        slept=$(zcat "$fo" | awk -v re="^fksleep$tag;\\[S\\];.*nanosleep" '$0 ~ re { s += $NF } END { printf "%.3f\n", s / 1e9 }')
        kf=$(jnum offpid target.tree.forks)
        # children reaped between two stamps inside the window
        inside=$(awk -v s="$(jnum offpid start_unix_ns)" -v d="$win" \
            'BEGIN { s /= 1e9; e = s + d } { if (p != "" && p >= s && $1 <= e) n++; p = $1 } END { print n + 0 }' \
            "$T/offpid.stamps")
        check_eq "offcpu pid: followed in its own small cgroup" cgroup "$(jnum offpid target.tree.mode)"
        check_eq "offcpu pid: every switch-out recorded (N = 1)" 1 "$(jnum offpid offcpu.one_in_max)"
        check_range "offcpu pid: the children's sleeps are there ($inside slept wholly in the window, 50 ms each; $kf forked)" \
            "$slept" "$(awk -v k="$inside" 'BEGIN { print (k > 0 ? k * 0.05 : 0.05) }')" "$win"
        check_range "offcpu pid: ... and their off-CPU time fits the window ($win s)" "$all" "$slept" \
            "$(awk -v w="$win" 'BEGIN { print w + 0.1 }')"
        check_range "offcpu pid: a child's last switch-out, after its EXIT, is the tree's (no block)" \
            "$(jnum offpid offcpu.exit_switches)" "$((inside > 0 ? inside : 1))" 1000
        check_eq "offcpu pid: the outsider is not in the graph" 0 "$(comm_samples "$fo" "^fkout$tag")"
    else
        fail "offcpu pid: a loop of short sleepers in its cgroup" "$(head -5 "$T/offpid.out")"
    fi
    ## The same loop sampled one switch-out in 5: a child whose one sleep
    ## was not picked has no stack, but the program knows its exact total
    ## (its last switch-out): it stays in the graph under
    ## "fksleep;[not recorded]", so the children's time (summed by pid from
    ## the pprof profile: a child picked only before its exec is named
    ## fkbash) still holds every sleep inside the window, and no more than
    ## the window (the children run one after another). Before, 0.48-0.80 s
    ## of 0.99-1.56 s of sleeps were shown.
    if "$FLAMEKIT" offcpu --call-graph fp --every 5 -d 2 -o "$T/offpid5" pid "$slp" >"$T/offpid5.out" 2>&1; then
        keys offpid5
        fo=$(folded offpid5)
        win=$(jnum offpid5 duration_s)
        inside=$(awk -v s="$(jnum offpid5 start_unix_ns)" -v d="$win" \
            'BEGIN { s /= 1e9; e = s + d } { if (p != "" && p >= s && $1 <= e) n++; p = $1 } END { print n + 0 }' \
            "$T/offpid.stamps")
        nr=$(zcat "$fo" | awk -v re="^fksleep$tag;\\[not recorded\\] " '$0 ~ re { s += $NF } END { printf "%.3f\n", s / 1e9 }')
        check_range "offcpu pid, 1 in 5: children with no switch-out recorded keep their exact totals ($(jnum offpid5 offcpu.threads_not_recorded) threads, $nr s under [not recorded])" \
            "$(jnum offpid5 offcpu.threads_not_recorded)" 1 1000
        check_eq "offcpu pid, 1 in 5: the outsider is not in the graph (nor under [not recorded])" 0 \
            "$(comm_samples "$fo" "^fkout$tag")"
        if command -v go >/dev/null; then
            kids=$(cd "$T" && timeout 60 go tool pprof -raw "$(ls "$T"/offpid5/*.pb.gz | head -1)" 2>/dev/null |
                awk -v lp="$slp" '/^ +[0-9]+ +[0-9]+:/ { w = $2; sub(":", "", w) }
                    /pid:\[/ { p = $1; gsub(/[^0-9]/, "", p); if (p != lp) c += w }
                    END { printf "%.3f\n", c / 1e9 }')
            check_range "offcpu pid, 1 in 5: the children's off-CPU time holds their sleeps ($inside slept wholly in the window, 50 ms each; $nr s not recorded)" \
                "$kids" "$(awk -v k="$inside" 'BEGIN { print (k > 0 ? k * 0.05 : 0.05) }')" "$win"
        else
            skip "offcpu pid, 1 in 5: the children's off-CPU time by pid" "go not installed"
        fi
    else
        fail "offcpu pid, 1 in 5: a loop of short sleepers in its cgroup" "$(head -5 "$T/offpid5.out")"
    fi
    kill "$slp" 2>/dev/null; wait "$slp" 2>/dev/null
    ## Python frames by pid in the same cgroup (per-CPU events, the tree
    ## kept by its fork/exit records, the Python stacks read as the samples
    ## leave the ring): a shell in it waits until flamekit is ready, then
    ## runs six short interpreters (fkpy.py above: 0.15 s of CPU each in
    ## fk_child_spin) and exits, which ends the capture. The function's
    ## samples are its CPU time x the frequency, as under run. The busy
    ## outsider is stopped first (its samples dropped are checked above):
    ## beside it, under load, the interpreters got fewer samples than their
    ## CPU time and the outsider more, the cgroup's count and samples
    ## agreeing (fk_child_spin 0.93-0.96 of 899 at load 15-30; 0.72 and
    ## 0.81 in failures). That is the Python reads' doing, not the tree's:
    ## with --python off the interpreters had 1.01 of their own CPU time
    ## beside the outsider, perf record -G 1.00, and with the reads but the
    ## cgroup theirs alone fk_child_spin had 0.99-1.00. (Each sample read
    ## early has the reader preempt the interpreter on its CPU, follow_cpu
    ## in engine/capture.c; how that moves samples to a neighbour is not
    ## yet measured: open, with Python frames.)
    kill "$op" 2>/dev/null; wait "$op" 2>/dev/null
    if [ -x "$PY" ]; then
        : >"$T/pypid.ready"
        "$LOOP" -c "echo \$\$ >$svc/cgroup.procs; while [ ! -s $T/pypid.ready ]; do sleep 0.05; done
            for i in 1 2 3 4 5 6; do $PY $T/fkpy.py; done" &
        pyp=$!
        fk_cleanup "kill $pyp 2>/dev/null"
        sleep 0.3
        timeout 120 "$FLAMEKIT" pid -F $F -d 60 --ready-fd 3 -o "$T/pypid" "$pyp" >"$T/pypid.out" 2>&1 \
            3>"$T/pypid.ready"
        rc=$?
        wait "$pyp" 2>/dev/null
        keys pypid
        if [ $rc = 0 ] && [ -s "$T/pypid.keys" ]; then
            want=$(awk -v f=$F 'BEGIN { printf "%d\n", 6 * 0.15 * f }')
            fo=$(folded pypid)
            got=$(zcat "$fo" | awk '/;fk_child_spin_\[p\]/ { s += $NF } END { print s + 0 }')
            check_eq "python pid: followed in its own small cgroup, ends with the tree" "cgroup:$svc target exited" \
                "$(jnum pypid target.tree.mode):$(jnum pypid target.tree.cgroup_dir) $(jnum pypid stop_reason)"
            spin_share "python pid: the children's Python function has its CPU time" pypid "$got" "$want"
            check_range "python pid: ... read in every interpreter forked in the window" \
                "$(jnum pypid target.tree.forks)" 6 100000000
        else
            fail "python pid: a shell's short interpreters in its cgroup" "exit $rc: $(head -5 "$T/pypid.out")"
        fi
    else
        skip "python pid: a shell's short interpreters in its cgroup" "no $PY"
    fi
    ## the tree's end ends the capture (killed 1 s after flamekit says
    ## ready: a sanitizer build on a loaded host can take longer than that
    ## to attach, and a tree gone before the capture is another case)
    : >"$T/pidend.ready"
    ( wait_for_file "$T/pidend.ready" 60; sleep 1; kill "$lp" ) &
    "$FLAMEKIT" pid -q --call-graph fp -d 20 --ready-fd 3 -o "$T/pidend" "$lp" >"$T/pidend.out" 2>&1 \
        3>"$T/pidend.ready"
    keys pidend
    check_eq "pid: the capture ends when the tree has exited" "target exited" "$(jnum pidend stop_reason)"
    kill "$sp" 2>/dev/null; wait "$lp" "$op" "$sp" 2>/dev/null
else
    skip "pid: in a cgroup of its own" "cannot make a cgroup under $CG2"
fi

## Many short children, and pid reuse (the issue: correct accounting,
## never a hang). 'run' of 1,000 children made one after another (10,000
## by hand: 23.7 s of CPU on this VM, too long for a test): each fork and
## exit counted, the samples the tree's CPU time from rusage (most of a
## child's time is its fork and exit, under the parent's name).
FORKER=$FK_BUILD/test/progs/forker
if [ -x "$FORKER" ]; then
    timeout 120 "$FLAMEKIT" run -q -F $F --call-graph fp -o "$T/kids" -- "$FORKER" kids 1000 0 \
        >"$T/kids.cpu" 2>"$T/kids.out"
    rc=$?
    keys kids
    if [ $rc = 0 ] && [ -s "$T/kids.keys" ]; then
        want=$(awk -v c="$(cat "$T/kids.cpu")" -v f=$F 'BEGIN { printf "%d\n", c * f }')
        n=$(jnum kids samples)
        # (a sanitized forker's leak check at exit makes a task of its own)
        kf=$(jnum kids target.tree.forks)
        check_range "1,000 children: every fork counted" "$kf" 1000 1005
        check_eq "1,000 children: ... and every exit, the command's too" "$((kf + 1))" "$(jnum kids target.tree.exits)"
        check_range "1,000 children: samples >= 90% of the tree's CPU x $F Hz ($n for $(cat "$T/kids.cpu") s)" \
            "$(ratio "$n" "$want")" "$(floor_ratio "$want")" "$(awk -v w="$want" 'BEGIN { print 1 + 5 / sqrt(w > 1 ? w : 1) + 0.02 }')"
    else
        fail "1,000 children under run" "exit $rc: $(head -5 "$T/kids.out")"
    fi
    ## pid in a small cgroup, a pid used three times in the window: a
    ## member's child (fkfirst), then an outsider's child in the same cgroup
    ## (fkreuse: dropped), then a member's child again (fkagain: kept). The
    ## pids are made through /proc/sys/kernel/ns_last_pid.
    svr=$CG2/fk-children-reuse-$$
    if mkdir "$svr" 2>/dev/null; then
        fk_cgroup_cleanup "$svr"
        sh -c "echo \$\$ >$svr/cgroup.procs; exec '$FORKER' member '$T/go' '$T/reuse.pid' '$T/reuse.done'" &
        mp=$!
        sh -c "echo \$\$ >$svr/cgroup.procs; exec '$FORKER' outsider '$T/reuse.pid' '$T/reuse.done'" &
        op=$!
        fk_cleanup "kill $mp $op 2>/dev/null"
        sleep 0.2
        timeout 60 "$FLAMEKIT" pid -q -F $F --call-graph fp -d 30 --ready-fd 3 -o "$T/reuse" "$mp" \
            >"$T/reuse.out" 2>&1 3>"$T/reuse.ready" &
        fk=$!
        wait_for_file "$T/reuse.ready" 20
        touch "$T/go"
        wait $fk; rc=$?
        wait $mp; mrc=$?
        wait $op
        keys reuse
        if [ $rc != 0 ] || [ ! -s "$T/reuse.keys" ]; then
            fail "pid reuse: the capture" "exit $rc: $(head -5 "$T/reuse.out")"
        elif [ $mrc != 0 ] || [ "$(cat "$T/reuse.done" 2>/dev/null)" != 1 ]; then
            skip "pid reuse" "the pid could not be had again (member $mrc, outsider $(cat "$T/reuse.done" 2>/dev/null))"
        else
            fo=$(folded reuse)
            check_eq "pid reuse: followed in the cgroup, ends with the tree" "cgroup target exited" \
                "$(jnum reuse target.tree.mode) $(jnum reuse stop_reason)"
            check_range "pid reuse: the member's first child has its share" "$(comm_samples "$fo" '^fkfirst')" 40 100000000
            check_range "pid reuse: ... the member's child with its pid again too" "$(comm_samples "$fo" '^fkagain')" 40 100000000
            check_eq "pid reuse: the outsider's child with that pid in between is not in the graph" 0 \
                "$(comm_samples "$fo" '^fkreuse')"
            check_range "pid reuse: ... it is counted as outside" "$(jnum reuse target.tree.samples_outside)" 40 100000000
        fi
    else
        skip "pid reuse" "cannot make a cgroup under $CG2"
    fi
else
    fail "test/progs/forker not built"
fi

## pid in a cgroup that is not small (here the root): with BPF, per-CPU
## events over the host and the tree kept in the kernel (capture/bpftree.h):
## a shell waits until flamekit is ready, then runs 400 short children
## (each never runs a whole period of 99 Hz: no samples on per-task
## events, as before this mode: 0 for 1.8 s of CPU) and
## exits, which ends the capture. Its CPU for the loop is the difference of
## bash's own 'times' (itself and its reaped children) taken around it; a
## busy outsider in the same (root) cgroup is dropped in the kernel.
## A child started before the capture whose leader has ended (pthread_exit:
## a zombie in /proc) spins 0.3 s in its other thread meanwhile: it is
## seeded by that thread (before, not followed at all), and the capture
## still ends with the tree (the zombie leader seeded would keep it open).
: >"$T/pidroot.ready"
"$LOOP" -c "$FORKER zleader $T/pidroot.ready 0.3 & while [ ! -s $T/pidroot.ready ]; do sleep 0.05; done; times >$T/pidroot.t0
    i=0; while [ \$i -lt 400 ]; do $TRUE; i=\$((i + 1)); done; wait; times >$T/pidroot.t1" &
rp=$!
cp /bin/sh "$T/fkrootout$tag"
"$T/fkrootout$tag" -c "while :; do :; done" &
rop=$!
fk_cleanup "kill $rp $rop 2>/dev/null"
cgof=$(sed -n 's/^0:://p' "/proc/$rp/cgroup")
sleep 0.2
timeout 120 "$FLAMEKIT" pid -q -F 99 --call-graph fp -d 60 --ready-fd 3 -o "$T/pidroot" "$rp" \
    >"$T/pidroot.out" 2>&1 3>"$T/pidroot.ready"
rc=$?
wait "$rp" 2>/dev/null
kill "$rop" 2>/dev/null; wait "$rop" 2>/dev/null
keys pidroot
# CPU seconds of a 'times' output: its four m:s fields summed
tsum() { awk '{ for (i = 1; i <= NF; i++) { split($i, p, "m"); s += p[1] * 60 + p[2] } } END { printf "%.3f\n", s }' "$1"; }
if [ "$cgof" = / ] && [ $rc = 0 ] && [ -s "$T/pidroot.keys" ] && [ -s "$T/pidroot.t1" ]; then
    cpu=$(awk -v a="$(tsum "$T/pidroot.t0")" -v b="$(tsum "$T/pidroot.t1")" 'BEGIN { printf "%.3f\n", b - a }')
    want=$(awk -v c="$cpu" -v f=99 'BEGIN { printf "%d\n", c * f }')
    n=$(jnum pidroot samples)
    if [ "$(jnum pidroot target.tree.mode)" = bpf ]; then
        check_eq "pid in the root cgroup: short children are not missed (BPF tree), ends with the tree" \
            "false target exited" "$(jnum pidroot target.tree.short_children_may_be_missed) $(jnum pidroot stop_reason)"
        # (above, no tighter bound than the window on every CPU: under
        # load this VM gave 1.4-1.8 of the loop's rusage in samples, on
        # per-task events too -- not yet explained)
        check_range "pid in the root cgroup: samples >= 90% of the tree's CPU x 99 Hz (less 5 sd) ($n for ${cpu}s)" \
            "$(ratio "$n" "$want")" "$(floor_ratio "$want")" \
            "$(awk -v w="$want" -v d="$(jnum pidroot duration_s)" -v f=99 -v c="$(nproc)" \
                'BEGIN { print (w > 0 ? d * f * c / w : 0) }')"
        check_range "pid in the root cgroup: the short children have their share" \
            "$(comm_samples "$(folded pidroot)" "^fktrue$tag")" $((want / 20)) 100000000
        check_range "pid in the root cgroup: the 400 children are followed" "$(jnum pidroot target.tree.forks)" 400 100000000
        check_range "pid in the root cgroup: a child whose leader had ended (a zombie) is followed by its thread (0.3 s)" \
            "$(comm_samples "$(folded pidroot)" '^fkzthread')" 10 100000000
        # (a full in-kernel map is counted: unit-bpf fills one of 2)
        check_eq "pid in the root cgroup: every task fitted in the in-kernel tree" 0 \
            "$(jnum pidroot target.tree.not_followed)"
        check_eq "pid in the root cgroup: the busy outsider is not in the graph" 0 \
            "$(comm_samples "$(folded pidroot)" "^fkrootout$tag")"
    else
        # no BPF here: per-task events, and why
        check_eq "pid in the root cgroup, no BPF: per-task, short children may be missed" "per-task true" \
            "$(jnum pidroot target.tree.mode) $(jnum pidroot target.tree.short_children_may_be_missed)"
        check_grep "pid in the root cgroup, no BPF: the metadata says why" 'BPF tree filter' "$(json pidroot)"
    fi
    check_eq "pid in the root cgroup: why not cgroup" "the target is in the root cgroup (the whole host)" \
        "$(jnum pidroot target.tree.why_not_cgroup | sed 's/;.*//')"
elif [ "$cgof" = / ]; then
    fail "pid in the root cgroup: a shell's short children" "exit $rc: $(head -5 "$T/pidroot.out")"
else
    check_range "pid outside the root cgroup: a mode is said" "$(jnum pidroot target.tree.mode | wc -c)" 4 100
fi
