#!/usr/bin/env bash
# fetchd-grpc and fetchd-sock: fetches git accepts, the pack cache, errors,
# disconnects, the concurrency limit and SIGTERM draining; hostile clients
# (slow, non-reading, trickling, many from one address), cache-key
# collisions and repositories that point out of --repo-root.
# timeout: 420
. "$(dirname "$0")/lib.sh"
B=$FK_BUILD
[ -x "$B/fetchd-sock" ] || { skip "fetchd" "fetch servers not built: configure found no gRPC/protobuf-c, or --disable-fetchd"; exit 0; }
need git || { skip "fetchd" "git not installed"; exit 0; }

# A small repository with two branches and a tag, and one outside the root.
mkdir -p "$T/repos" "$T/outside"
git init -q --bare "$T/repos/r.git"
git init -q "$T/w"
(cd "$T/w" && for i in $(seq 1 40); do head -c 15000 /dev/urandom | base64 >"f$i"; done &&
 git add . && git -c user.email=t@t -c user.name=t commit -qm one &&
 echo two >two && git add two && git -c user.email=t@t -c user.name=t commit -qm two && git tag v1 &&
 git push -q "$T/repos/r.git" HEAD:refs/heads/main HEAD~1:refs/heads/old v1) || { fail "make test repository"; exit 0; }
git init -q --bare "$T/outside/secret.git"
ln -s "$T/outside" "$T/repos/link"

# A hook that makes upload-pack stall (for disconnect/limit/drain tests):
# it sends the first 70000 bytes of the pack, sleeps $(cat slow), sends the rest.
echo 20 >"$T/slow"
cat >"$T/hook" <<HOOK
#!/bin/sh
touch "$T/started"; "\$@" >"$T/hook.\$\$" || exit 1
head -c 70000 "$T/hook.\$\$"; sleep "\$(cat "$T/slow")"; tail -c +70001 "$T/hook.\$\$"; rm -f "$T/hook.\$\$"
HOOK
chmod +x "$T/hook"

start() { # NAME PROGRAM ARGS...: start a server, wait for its port file
    local name=$1 prog=$2; shift 2
    "$B/$prog" --repo-root "$T/repos" --port-file "$T/$name.port" -v "$@" 2>"$T/$name.log" &
    eval "${name}_pid=$!"
    fk_cleanup "kill -9 $! 2>/dev/null"
    wait_for_file "$T/$name.port" 5
    eval "${name}_addr=127.0.0.1:$(cat "$T/$name.port" 2>/dev/null)"
}
start grpc fetchd-grpc --cache-dir "$T/gcache" --chunk-size 16K
start sock fetchd-sock --cache-dir "$T/scache"
[ -s "$T/grpc.port" ] && [ -s "$T/sock.port" ] || { fail "servers start" "$(cat "$T"/*.log)"; exit 0; }
pass "servers start and report their ports"

fdcount() { ls "/proc/$1/fd" | wc -l; }
children() { ps -o pid= --ppid "$1" | wc -l; }
grpc_fd0=$(fdcount $grpc_pid); sock_fd0=$(fdcount $sock_pid)

# git-side proof: index the pack, set the refs, check out, fsck.
git_accepts() { # PACK REFS DIR
    git init -q "$3" && git -C "$3" index-pack --stdin <"$1" >/dev/null &&
    while read -r oid ref; do git -C "$3" update-ref "$ref" "$oid" || return 1; done <"$2" &&
    git -C "$3" checkout -q main && git -C "$3" fsck --no-progress --no-dangling &&
    [ -f "$3/two" ] && [ "$(git -C "$3" rev-parse main)" = "$(git -C "$T/w" rev-parse HEAD)" ]
}
for s in grpc sock; do
    eval addr=\$${s}_addr
    check "$s: fetch all refs" "$B/fetchd-client" --$s "$addr" -o "$T/$s.pack" -R "$T/$s.refs" r.git
    check_eq "$s: three refs wanted" 3 "$(wc -l <"$T/$s.refs" 2>/dev/null)"
    check "$s: git index-pack + checkout + fsck accept the fetch" git_accepts "$T/$s.pack" "$T/$s.refs" "$T/clone-$s"
    check "$s: second fetch (cache hit)" "$B/fetchd-client" --$s "$addr" -o "$T/$s.2.pack" r.git
    check "$s: cache hit gives an identical pack" cmp "$T/$s.pack" "$T/$s.2.pack"
    check_grep "$s: second response came from the cache" "cache hit" "$T/$s.log"
    check "$s: fetch one ref" "$B/fetchd-client" --$s "$addr" -r old -o "$T/$s.old.pack" r.git
    o=$("$B/fetchd-client" --$s "$addr" -o "$T/x" nosuch.git 2>&1)
    check_grep "$s: unknown repository is a clear error" "repository not found: nosuch.git" "$o"
    for bad in ../outside/secret.git /etc link/secret.git r.git/../../outside/secret.git; do
        o=$("$B/fetchd-client" --$s "$addr" -o "$T/x" "$bad" 2>&1)
        check_grep "$s: path escape '$bad' refused" "escapes the repository root|must be relative" "$o"
    done
    printf 'garbage' >"$T/bad.body"
    o=$("$B/fetchd-client" --$s "$addr" -b "$T/bad.body" -o "$T/x" r.git 2>&1)
    check_grep "$s: malformed request is a clear error" "malformed request" "$o"
    check "$s: still serving after errors" "$B/fetchd-client" -q --$s "$addr" -o "$T/$s.3.pack" r.git
done
check "grpc and sock send the same pack" cmp "$T/grpc.pack" "$T/sock.pack"

# LRU bound: room for one response only; a response larger than the bound is not kept.
start small fetchd-sock --cache-dir "$T/small" --cache-size 1M
start tiny fetchd-sock --cache-dir "$T/tiny" --cache-size 100K
"$B/fetchd-client" -q --sock "$small_addr" -o "$T/x" r.git && "$B/fetchd-client" -q --sock "$small_addr" -r old -o "$T/x" r.git
check_eq "cache: the older entry is evicted beyond --cache-size" 1 "$(ls "$T/small" | wc -l)"
"$B/fetchd-client" -q --sock "$tiny_addr" -o "$T/x" r.git
check_eq "cache: a response larger than --cache-size is not kept, no temporaries left" 0 "$(ls -A "$T/tiny" | wc -l)"

# Garbage on the socket itself.
o=$(exec 3<>"/dev/tcp/127.0.0.1/$(cat "$T/sock.port")"; printf 'HELLO there\n' >&3; timeout 5 cat <&3)
check_grep "sock: malformed header is a clear error" "^ERR malformed request" "$o"
check_eq "grpc: no fd leaked" "$grpc_fd0" "$(fdcount $grpc_pid)"
check_eq "sock: no fd leaked" "$sock_fd0" "$(fdcount $sock_pid)"
check_eq "no git children left" "0 0" "$(children $grpc_pid) $(children $sock_pid)"

# Slow servers (the hook stalls mid-pack), one connection at a time.
export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=uploadpack.packObjectsHook GIT_CONFIG_VALUE_0="$T/hook"
start sgrpc fetchd-grpc --max-conns 1
start ssock fetchd-sock --max-conns 1
unset GIT_CONFIG_COUNT GIT_CONFIG_KEY_0 GIT_CONFIG_VALUE_0
wait_started() { for _ in $(seq 1 100); do [ -e "$T/started" ] && return 0; sleep 0.05; done; return 1; }
wait_no_children() { # PID: up to 3 s
    for _ in $(seq 1 60); do [ "$(children "$1")" = 0 ] && return 0; sleep 0.05; done; return 1
}
for s in sgrpc ssock; do
    eval addr=\$${s}_addr pid=\$${s}_pid
    t=${s#s}
    fd0=$(fdcount $pid)
    "$B/fetchd-client" --$t "$addr" --stop-after 30000 -o "$T/x" r.git 2>"$T/$s.stop"; rc=$?
    check_eq "$s: client hung up mid-stream" 3 "$rc"
    check "$s: disconnect kills and reaps git (no children within 3 s)" wait_no_children $pid
    check_nogrep "$s: no git left in the hook" "." "$(pgrep -f "$T/hook" || true)"
    check_eq "$s: no fd leaked after the disconnect" "$fd0" "$(fdcount $pid)"
    # Concurrency limit: one stalled fetch holds the only slot.
    rm -f "$T/started"
    "$B/fetchd-client" --$t "$addr" -o "$T/$s.held" r.git 2>/dev/null & held=$!
    wait_started
    o=$("$B/fetchd-client" --$t "$addr" -o "$T/x" r.git 2>&1)
    check_grep "$s: --max-conns 1 refuses a second client with a clear error" "busy.*max-conns" "$o"
    kill $held; wait $held 2>/dev/null
    check "$s: killed client's git reaped" wait_no_children $pid
    # SIGTERM drains: the in-flight fetch completes, the server exits 0.
    echo 1 >"$T/slow"
    for _ in $(seq 1 40); do [ "$(children "$pid")" = 0 ] && break; sleep 0.05; done
    rm -f "$T/started"
    "$B/fetchd-client" --$t "$addr" -o "$T/$s.drain.pack" r.git 2>"$T/$s.drain.err" & inflight=$!
    wait_started; sleep 0.1
    kill -TERM $pid
    wait $inflight; crc=$?
    wait $pid; src=$?
    [ "$crc" = 0 ] && pass "$s: in-flight fetch completed during drain" || fail "$s: in-flight fetch completed during drain" "$(cat "$T/$s.drain.err" "$T/$s.log")"
    check "$s: drained fetch is the right pack" cmp "$T/$s.drain.pack" "$T/sock.pack"
    check_eq "$s: SIGTERM exit status" 0 "$src"
    check_fails "$s: no longer accepting after SIGTERM" "$B/fetchd-client" --$t "$addr" -o "$T/x" r.git
    echo 20 >"$T/slow"
done
# ---- hostile clients (issue 12)
# A repository whose pack (8 MB of random data) is larger than what the
# socket buffers of a client that stops reading absorb.
# Written straight into a pack, uncompressed (random data does not
# compress; zlib on it took seconds on a loaded machine).
git init -q --bare "$T/repos/big.git"
{ printf 'blob\nmark :1\ndata 8000000\n'; head -c 8000000 /dev/urandom
  printf '\ncommit refs/heads/main\ncommitter t <t@t> 1700000000 +0000\ndata 4\nbig\nM 100644 :1 blob\n\n'; } |
    git -C "$T/repos/big.git" -c core.compression=0 -c pack.compression=0 fast-import --quiet ||
    fail "make the big repository"
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f\n", b - a }'; }
# served_within LIMIT CLIENT-ARGS...: retry a fetch (the server answers
# "busy" at once while its slots are held) until it succeeds; prints the
# seconds it took, or "never" after LIMIT seconds.
served_within() {
    local limit=$1 t0; shift; t0=$(now)
    while :; do
        timeout 30 "$B/fetchd-client" -q "$@" 2>>"$T/legit.err" && { since "$t0"; return 0; }
        awk -v a="$t0" -v b="$(now)" -v l="$limit" 'BEGIN { exit !(b - a > l) }' && { echo never; return 1; }
        sleep 0.3
    done
}
# wait_grep FILE REGEX SECONDS
wait_grep() { local i; for ((i = 0; i < $3 * 10; i++)); do grep -Eq -- "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done; return 1; }
lim="--timeout 8s --rate-window 2s"
# fetchd-sock, all 3 slots taken by: a header sent one byte every 2 s; a
# fetch that stops reading; a body trickled at 64K/s (above --min-rate)
# that would take 250 s. Old code: the first and second kept their slots
# forever (per-recv timeout; SO_SNDTIMEO never applied to the poll loop).
start hsock fetchd-sock --max-conns 3 --max-per-peer 3 $lim --min-rate 16K
port=$(cat "$T/hsock.port")
timeout 60 "$B/fetchd-client" --sock "$hsock_addr" --hold-after 1 -o "$T/x1" big.git 2>"$T/hold.err" & hold=$!
fk_cleanup "kill $hold 2>/dev/null"
wait_grep "$T/hold.err" holding 10 || fail "sock: the non-reading client got its response started" "$(cat "$T/hold.err" "$T/hsock.log")"
(trap '' PIPE; exec 3<>"/dev/tcp/127.0.0.1/$port" || exit 1
 for c in F E T C H D 1 ' ' u p l o a d; do printf %s "$c" >&3 2>/dev/null || break; sleep 2; done
 now >"$T/slowhdr.end") & slowhdr=$!
fk_cleanup "kill $slowhdr 2>/dev/null"
(trap '' PIPE; exec 3<>"/dev/tcp/127.0.0.1/$port" || exit 1
 printf 'FETCHD1 upload-pack 16000000 big.git\n' >&3
 for _ in $(seq 1 60); do head -c 65536 /dev/zero >&3 2>/dev/null || break; sleep 1; done
 now >"$T/trickle.end") & trickle=$!
fk_cleanup "kill $trickle 2>/dev/null"
sleep 0.3
t0=$(now)
o=$("$B/fetchd-client" --sock "$hsock_addr" -o "$T/x" r.git 2>&1)
check_grep "sock: all slots held by the three attackers" "busy.*max-conns" "$o"
took=$(served_within 20 --sock "$hsock_addr" -o "$T/hsock.pack" r.git)
check_range "sock: a legitimate fetch is served while attackers hold every slot (seconds)" "$took" 0 10
check "sock: ... and it is the right pack" cmp "$T/hsock.pack" "$T/sock.pack"
check "sock: slow header dropped (client too slow)" wait_grep "$T/hsock.log" "dropped: client too slow" 5
# (the non-reader's "dropped" line follows its "git killed" line: wait for the count)
for _ in $(seq 1 100); do [ "$(grep -c "dropped: client too slow" "$T/hsock.log")" -ge 2 ] && break; sleep 0.1; done
check_eq "sock: the slow and the non-reading client are both dropped by --min-rate" 2 \
    "$(grep -c "dropped: client too slow" "$T/hsock.log")"
check "sock: the trickling client is dropped at the --timeout deadline" wait_grep "$T/hsock.log" "dropped: request deadline passed" 10
wait $slowhdr $trickle 2>/dev/null
check "sock: the slow header writer saw its connection closed" test -s "$T/slowhdr.end"
check "sock: the trickling writer saw its connection closed" test -s "$T/trickle.end"
check_range "sock: the trickling writer was cut off near --timeout 8s (seconds)" \
    "$(awk -v a="$t0" -v b="$(cat "$T/trickle.end" 2>/dev/null || now)" 'BEGIN { printf "%.1f", b - a }')" 2 14
kill $hold 2>/dev/null; wait $hold 2>/dev/null
check_eq "sock: no git children left after the drops" 0 "$(children $hsock_pid)"

# fetchd-grpc, both slots taken by: a fetch that stops reading; one that
# takes a 32K message every 3 s (11K/s, below --min-rate 64K). Old code:
# the sends waited on HTTP/2 flow control without a deadline.
start hgrpc fetchd-grpc --max-conns 2 --max-per-peer 2 $lim --min-rate 64K --handshake-timeout 2s
timeout 60 "$B/fetchd-client" --grpc "$hgrpc_addr" --hold-after 1 -o "$T/x2" big.git 2>"$T/ghold.err" & ghold=$!
fk_cleanup "kill $ghold 2>/dev/null"
timeout 60 "$B/fetchd-client" --grpc "$hgrpc_addr" --read-delay 3s -o "$T/x3" big.git 2>"$T/gslow.err" & gslow=$!
fk_cleanup "kill $gslow 2>/dev/null"
wait_grep "$T/ghold.err" holding 10 || fail "grpc: the non-reading client got its response started" "$(cat "$T/ghold.err" "$T/hgrpc.log")"
# Both attackers' pack calls admitted (a loaded machine can take seconds to start a client).
for _ in $(seq 1 200); do [ "$(grep -c 'upload-pack call admitted' "$T/hgrpc.log")" -ge 2 ] && break; sleep 0.1; done
o=$("$B/fetchd-client" --grpc "$hgrpc_addr" -o "$T/x" r.git 2>&1)
check_grep "grpc: all slots held by the two attackers" "busy.*max-conns" "$o"
took=$(served_within 20 --grpc "$hgrpc_addr" -o "$T/hgrpc.pack" r.git)
check_range "grpc: a legitimate fetch is served while attackers hold every slot (seconds)" "$took" 0 10
check "grpc: ... and it is the right pack" cmp "$T/hgrpc.pack" "$T/sock.pack"
for _ in $(seq 1 140); do [ "$(grep -c "dropped: client too slow" "$T/hgrpc.log")" -ge 2 ] && break; sleep 0.1; done
check_eq "grpc: the non-reading and the slow reader are dropped by --min-rate" 2 \
    "$(grep -c "dropped: client too slow" "$T/hgrpc.log")"
check_nogrep "grpc: the slow reader was not served in full" "big.git: pack served" "$T/hgrpc.log"
kill $ghold $gslow 2>/dev/null; wait $ghold $gslow 2>/dev/null
check_eq "grpc: no git children left after the drops" 0 "$(children $hgrpc_pid)"
# A connection that never speaks HTTP/2 is closed after --handshake-timeout
# (the gRPC default is 120 s).
t0=$(now)
(exec 3<>"/dev/tcp/127.0.0.1/$(cat "$T/hgrpc.port")"; timeout 15 cat <&3 >/dev/null)
check_range "grpc: a silent connection is closed after --handshake-timeout 2s (seconds)" "$(since "$t0")" 1 6

# --max-per-peer: one address cannot take every slot.
start psock fetchd-sock --max-conns 4 --max-per-peer 1
start pgrpc fetchd-grpc --max-conns 4 --max-per-peer 1
for s in psock pgrpc; do
    eval addr=\$${s}_addr
    t=${s#p}
    rm -f "$T/phold.err"
    timeout 60 "$B/fetchd-client" --$t "$addr" --hold-after 1 -o "$T/x4" big.git 2>"$T/phold.err" & phold=$!
    wait_grep "$T/phold.err" holding 10
    o=$("$B/fetchd-client" --$t "$addr" -o "$T/x" r.git 2>&1)
    check_grep "$s: a second request from the same address is refused (--max-per-peer 1)" "busy: 1 .* from your address.*max-per-peer" "$o"
    kill $phold; wait $phold 2>/dev/null
done
check_fails "sock: --max-per-peer above --max-conns is a usage error" timeout 5 "$B/fetchd-sock" --repo-root "$T/repos" --max-conns 2 --max-per-peer 3

# Cache poisoning: a crafted request for `old` whose fk_hash (the old cache
# key) equals that of the request `fetchd-client -r main` sends. The
# victim must still get main's pack.
main_oid=$(git -C "$T/w" rev-parse HEAD); old_oid=$(git -C "$T/w" rev-parse HEAD~1)
if o=$("$B/test/progs/fetchd-collide" "$main_oid" "$old_oid" "$T/victim.body" "$T/attack.body" 2>&1); then
    pass "cache: crafted request collides with the victim's under fk_hash ($o)"
else
    fail "cache: crafted request collides with the victim's under fk_hash" "$o"
fi
start csock fetchd-sock --cache-dir "$T/ccache-sock"
start cgrpc fetchd-grpc --cache-dir "$T/ccache-grpc"
for s in csock cgrpc; do
    eval addr=\$${s}_addr
    t=${s#c}
    check "$s: the crafted request is served (git accepts it)" timeout 20 "$B/fetchd-client" -q --$t "$addr" -b "$T/attack.body" -o "$T/$s.attack.pack" r.git
    check "$s: victim fetch of main after the crafted one" timeout 20 "$B/fetchd-client" -q --$t "$addr" -r main -o "$T/$s.victim.pack" -R "$T/$s.victim.refs" r.git
    check "$s: the victim got main's pack (git index-pack + checkout + fsck)" git_accepts "$T/$s.victim.pack" "$T/$s.victim.refs" "$T/clone-$s-victim"
    check_eq "$s: two cache entries, one per request" 2 "$(ls "$T/ccache-$t" | wc -l)"
    # The collision targeted the real request: the same body is a cache hit.
    timeout 20 "$B/fetchd-client" -q --$t "$addr" -b "$T/victim.body" -o "$T/x" r.git
    check_eq "$s: the victim's body is byte for byte what fetchd-client -r main sends (cache hit)" 1 "$(grep -c "cache hit" "$T/$s.log")"
    check_grep "$s: cache keys are SHA-256" "^[0-9a-f]{64}$" "$(ls "$T/ccache-$t" | head -1)"
done
# The cache ignores (and removes) entries keyed the old way.
mkdir -p "$T/oldkeys" && echo stale >"$T/oldkeys/0123456789abcdef-0123456789abcdef-0123456789abcdef"
start osock fetchd-sock --cache-dir "$T/oldkeys"
check_eq "cache: entries with old fk_hash keys are removed at start" 0 "$(ls "$T/oldkeys" | wc -l)"

# Repositories that point out of --repo-root: a work tree whose .git is a
# symlink, alternates, an objects symlink. Old code served the first two in full.
git init -q "$T/sw" && (cd "$T/sw" && echo secret >secret && git add secret &&
    git -c user.email=t@t -c user.name=t commit -qm secret && git push -q "$T/outside/secret.git" HEAD:refs/heads/main)
secret_oid=$(git -C "$T/sw" rev-parse HEAD)
mkdir -p "$T/repos/wt" && ln -s "$T/outside/secret.git" "$T/repos/wt/.git"
git init -q --bare "$T/repos/alt.git"
echo "$T/outside/secret.git/objects" >"$T/repos/alt.git/objects/info/alternates"
git -C "$T/repos/alt.git" update-ref refs/heads/main "$secret_oid"
git init -q --bare "$T/repos/objlink.git" && rm -rf "$T/repos/objlink.git/objects" &&
    ln -s "$T/outside/secret.git/objects" "$T/repos/objlink.git/objects"
for s in grpc sock; do
    eval addr=\$${s}_addr
    o=$(timeout 20 "$B/fetchd-client" --$s "$addr" -o "$T/x" wt 2>&1)
    check_grep "$s: a .git symlink out of the root is refused" "escapes the repository root: wt/.git resolves outside it" "$o"
    o=$(timeout 20 "$B/fetchd-client" --$s "$addr" -o "$T/x" alt.git 2>&1)
    check_grep "$s: alternates out of the root are refused" "escapes the repository root: alt.git's objects/info/alternates resolves outside it" "$o"
    o=$(timeout 20 "$B/fetchd-client" --$s "$addr" -o "$T/x" objlink.git 2>&1)
    check_grep "$s: an objects symlink out of the root is refused" "escapes the repository root: objlink.git's objects resolves outside it" "$o"
done
# Symlinks and alternates that stay inside the root still work.
mkdir -p "$T/repos/wt2" && ln -s ../r.git "$T/repos/wt2/.git"
git clone -q --bare --shared "$T/repos/r.git" "$T/repos/shared.git"
check "sock: a .git symlink inside the root is served" timeout 20 "$B/fetchd-client" -q --sock "$sock_addr" -o "$T/x" wt2
check "sock: alternates inside the root are served" timeout 20 "$B/fetchd-client" -q --sock "$sock_addr" -o "$T/x" shared.git

for s in grpc sock; do
    check "$s --help" "$B/fetchd-$s" --help
    check_fails "$s: unknown option" "$B/fetchd-$s" --bogus
    check_fails "$s: --repo-root required" "$B/fetchd-$s"
done
check "fetchd-client --version" "$B/fetchd-client" --version
check "fetch-bench --help" "$B/fetch-bench" --help
check_fails "fetch-bench: bad --clients" "$B/fetch-bench" --clients 0

# fetch-bench's report: every setting and ratio with a median and a range
# of finite numbers, the talk's table with a "median (min–max)" in every
# cell and a sentence per row, the verdicts against the talk.
check_report() { # DIR SETTINGS RATIOS ROUNDS ALLOC: silent and 0 when well-formed
    local d=$1 cell='[0-9.]+( [KMG]?i?B)? \([0-9.]+( [KMG]?i?B)?–[0-9.]+( [KMG]?i?B)?\)'
    [ "$5" = true ] || cell="($cell|not counted)"  # servers built with AddressSanitizer
    jq -e --argjson ns "$2" --argjson nr "$3" --argjson rounds "$4" --argjson alloc "$5" '
        def stat: type == "object" and ([.median, .min, .max] | all(type == "number" and . >= 0))
                  and .min <= .median and .median <= .max and (.n | type == "number" and . >= 1);
        # the rounds a median is over: those with no slow run, when at
        # least 3 (or every round) are so, else those with no crowded run,
        # when at least 3 are so, else every round ($k normal, $u uncrowded)
        def used($k; $u): if $k >= 3 or $k == $rounds then $k elif $u >= 3 then $u else $rounds end;
        def figs: ["throughput_mib_s", "cpu_bound_throughput_mib_s", "fetches_per_s", "cpu_utilisation_pct",
                   "server_cpu_pct", "server_cpu_s_per_gib", "server_context_switches_per_gib", "git_cpu_s_per_gib", "client_cpu_s_per_gib",
                   "client_processes_cpu_s_per_gib", "peak_rss_mib", "load1", "machine_busy_pct", "machine_probe_ms",
                   "interrupts_per_fetch", "interrupts_per_gib"]
                  + if $alloc then ["alloc_bytes_per_gib", "alloc_calls_per_gib", "alloc_calls_per_fetch",
                                    "alloc_bytes_per_fetch"] else [] end;
        def clientfigs: ["cpu_bound_throughput_mib_s", "cpu_utilisation_pct", "client_cpu_s_per_gib",
                         "client_processes_cpu_s_per_gib", "server_client_cpu_s_per_gib"];
        . as $top | .settings as $S
        | (.settings | length) == $ns
        and all(.settings[]; (.runs | length) == $rounds and .fetches_per_client >= 1
                and (.figures as $f | all(figs[]; . as $k | $f[$k] | stat))
                and .figures.throughput_mib_s.min > 0 and .figures.server_cpu_s_per_gib.min > 0
                # the figures that count the clients CPU leave out the runs slow on the clients CPU too
                and (([.runs[] | select(.host_slow | not)] | length) as $k
                     | ([.runs[] | select((.host_slow or .clients_slow) | not)] | length) as $kc
                     | ([.runs[] | select(.crowded | not)] | length) as $u
                     | all(.figures | to_entries[];
                           .value.n == used(if .key | IN(clientfigs[]) then $kc else $k end; $u)))
                and all(.runs[]; .bytes > 0 and .wall_s > 0 and .fetches >= 1
                        # a server waits for its requests, a client for its responses
                        and .server_context_switches >= 1 and .client_context_switches >= 1))
        and (.ratios | length) == $nr
        and all(.ratios[]; all(.server_cpu_per_gib_grpc_over_sock, .cpu_bound_throughput_sock_over_grpc,
                               .throughput_sock_over_grpc; stat and .min > 0)
                and (($alloc | not) or (.alloc_bytes_per_gib_grpc_over_sock | stat and .min > 0))
                # over the rounds where neither run of the pair was slow
                and (. as $r | [$S[] | select(.fetch_bytes == $r.fetch_bytes and .cache == $r.cache
                                              and .clients == $r.clients)] as $p
                     | ($p[] | select(.server == "sock") | .runs) as $s
                     | ($p[] | select(.server == $r.grpc_mode) | .runs) as $g
                     | ([range($rounds) | select(($s[.].host_slow or $g[.].host_slow) | not)] | length) as $k
                     | ([range($rounds) | select(($s[.].host_slow or $g[.].host_slow or $s[.].clients_slow
                                                    or $g[.].clients_slow) | not)] | length) as $kc
                     | ([range($rounds) | select(($s[.].crowded or $g[.].crowded) | not)] | length) as $u
                     | .server_cpu_per_gib_grpc_over_sock.n == used($k; $u)
                       and .throughput_sock_over_grpc.n == used($k; $u)
                       and .cpu_bound_throughput_sock_over_grpc.n == used($kc; $u)
                       and .server_client_cpu_per_gib_grpc_over_sock.n == used($kc; $u)))
        and (.talk | length) == 8
        and all(.talk[]; (.claim | length) > 0 and (.verdict | IN("agrees", "disagrees", "cannot tell")))
        and (.table_sentences | length) == 9 and (.pinning | length) > 0
        and .machine_probes == true and (.machine_probe_ms | stat and .min > 0) and .probe_reference_ms > 0
        and (.compute_probe_ms | stat and .min > 0) and .compute_probe_reference_ms > 0
        # the references are a low percentile, not the median
        and .probe_reference_ms <= .machine_probe_ms.median and .compute_probe_reference_ms <= .compute_probe_ms.median
        and .probe_after_reference_ms > 0 and .compute_probe_after_reference_ms > 0
        # a run is slow when any probe around it took over 115 % of the reference of its kind (a low percentile)
        # or when the clients CPUs were busy beyond the client processes over 35 % of the time and
        # 15 points above the lowest run of the setting (crowded)
        and all(.settings[]; ([.runs[].client_cpus_others_pct // 100] | min) as $low | all(.runs[];
              ((.client_cpus_others_pct | not) or (.client_cpus_elapsed_s > 0 and
                   (.client_cpus_others_pct - 100 * (.client_processes_cpu_s as $p | [.client_cpus_busy_s, $p] | max - $p)
                                                  / .client_cpus_elapsed_s
                    | fabs) < 1e-6))
              and .crowded == ((.client_cpus_others_pct // 0) > ([35, $low + 15] | max))))
        and all(.settings[].runs[]; .compute_probe_ms > 0 and .machine_probe_after_ms > 0 and .compute_probe_after_ms > 0
              and .host_slow == (.machine_probe_ms > 1.15 * $top.probe_reference_ms
                                 or .compute_probe_ms > 1.15 * $top.compute_probe_reference_ms
                                 or .machine_probe_after_ms > 1.15 * $top.probe_after_reference_ms
                                 or .compute_probe_after_ms > 1.15 * $top.compute_probe_after_reference_ms
                                 or .crowded))
        # the memory probe on the clients CPU: its own slow runs, left out of the clients figures only
        and .client_probe_reference_ms > 0 and .client_probe_after_reference_ms > 0
        and all(.settings[].runs[]; .client_probe_ms > 0 and .client_probe_after_ms > 0
              and .clients_slow == (.client_probe_ms > 1.15 * $top.client_probe_reference_ms
                                    or .client_probe_after_ms > 1.15 * $top.client_probe_after_reference_ms))
        and ([.settings[].runs[] | select(.clients_slow)] | length) == .runs_clients_slow_kept
        and (.runs_retaken | type == "number" and . >= 0) and (.runs_slow_kept | type == "number" and . >= 0)
        and ([.settings[].runs[] | select(.host_slow)] | length) == .runs_slow_kept
        and ([.settings[].runs[] | select(.crowded)] | length) == .runs_crowded_kept
        and (.client_cpus_others_pct | stat)
        # slow for most of the sweep: the median of a kind of probe before the runs over 115 % of its reference
        and (.probe_median_over_reference as $o
             | ($o.memory - .machine_probe_ms.median / .probe_reference_ms | fabs) < 1e-6
             and ($o.compute - .compute_probe_ms.median / .compute_probe_reference_ms | fabs) < 1e-6
             and .host_slow_most_of_sweep == ($o.memory > 1.15 or $o.compute > 1.15))
        and ([.settings[].runs[].retakes] | add) <= .runs_retaken
        # the retake pass: its time, its waits (within its time), how it ended; a pass that ended
        # on other work waited in vain at least once, and one that did nothing waited for nothing
        and (.retake_pass | .seconds >= 0 and .wait_seconds >= 0 and .wait_seconds <= .seconds + 1e-6
             and .waits_still_slow >= 0 and .waits_crowded >= 0
             and (.ended | IN("with no slow run left to take again", "with its budget (15 % of the rounds'"'"' time) spent",
                              "on a slow spell that outlasted its wait (10 s)", "on other work on the clients'"'"' CPUs"))
             and ((.ended | startswith("on a slow")) == (.waits_still_slow > 0))
             and .waits_still_slow + .waits_crowded <= 1
             and (.runs_between_rounds | type == "number" and . >= 0 and . <= $top.runs_retaken)
             # the budget is a share of the time of the rounds, which the pass is not part of
             and .rounds_seconds > 0 and .seconds <= 0.15 * .rounds_seconds + 10
             # group rounds whose retake came out no better, the old runs kept: one a retake at most
             and (.rounds_put_back | type == "number" and . >= 0 and . <= $top.runs_retaken)
             and ((.ended | startswith("on other")) == (.waits_crowded > 0)))
        and (if .runs_retaken == 0 and .runs_slow_kept == 0 then .retake_pass.wait_seconds == 0 else true end)
        and all(.settings[].runs[]; .machine_probe_ms > 0 and (.retakes | IN(0, 1, 2)) and (.host_slow | type == "boolean"))' "$d/report.json" >/dev/null || { echo "report.json malformed"; return 1; }
    # The talk's table: a header of four columns, nine rows, every cell "M (A–B)".
    awk -v cell="^ $cell \$" '/^## The talk.s table/ { t = 1; next } t && /^## / { t = 0 }
         t && /^\| \|/ { hdr = ($0 ~ /gRPC \| gRPC \+ cache \| socket \| socket \+ cache \|$/) }
         t && /^\| [a-zA-Z]/ { rows++; n = split($0, c, "|"); if (n != 7) bad = bad " columns:" $0
             for (i = 3; i < n; i++) if (c[i] !~ cell) bad = bad " cell:" c[i] }
         t && /^- \*\*/ { sent++ }
         END { if (!hdr || rows != 9 || sent != 9 || bad != "") { print "table: header " hdr ", rows " rows ", sentences " sent bad; exit 1 } }' "$d/report.md" || return 1
    # report.md says so in bold exactly when report.json does
    [ "$(grep -c '^\*\*The host was slow for most of this sweep:\*\*' "$d/report.md")" = \
      "$(jq 'if .host_slow_most_of_sweep then 1 else 0 end' "$d/report.json")" ] || { echo "report.md and report.json disagree on a slow host"; return 1; }
    grep -q '^## Against the talk' "$d/report.md" && grep -q '^## Sweeps' "$d/report.md" \
        && grep -q '^## Ratios' "$d/report.md" || { echo "report.md lacks a section"; return 1; }
}

# fetch-bench's repositories are kept outside $T, so the second suite and
# later runs reuse them (making them is git fast-import and repack, seconds
# on a loaded machine): each is named by a SHA-256 of what makes it, so a
# changed generator or git makes a new one. FK_TEST_CACHE moves them; not
# writable (not root): in $T, made every run.
fbcache=${FK_TEST_CACHE:-/var/cache/flamekit-test}
mkdir -p "$fbcache" 2>/dev/null && [ -w "$fbcache" ] || fbcache=$T/fkcache
# A small sweep: two sizes, 2 clients (two connections, or two calls on
# one), every server and gRPC mode, with and without the cache, three
# rounds (the first warms the servers' thread stacks; a median of three is
# not moved by it), one fetch per client. It checks fields and agreement,
# not speed: 1 client more would only make it longer.
if FLAMEKIT_CACHE="$fbcache" timeout 240 "$B/fetch-bench" -S 1M,2M -n 2 -R 3 -f 1 -o "$T/bench" \
        >"$T/bench.out" 2>"$T/bench.err"; then
    pass "fetch-bench runs"
    alloc=$(jq '.settings[0].figures | has("alloc_bytes_per_gib")' "$T/bench/report.json")
    # Its repositories: one per size, named by their content's key, packed
    # with a bitmap, whole (git fsck: a kept one may be years old).
    repos_ok() {
        local r n=0
        for r in $(jq -r '.repositories[].repository' "$T/bench/report.json"); do
            n=$((n + 1))
            [[ $r == "$fbcache"/fetch-bench/packed-[12]M-[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f].git ]] &&
                ls "$r"/objects/pack/*.bitmap >/dev/null && git -C "$r" fsck --no-progress --no-dangling >/dev/null 2>&1 || { echo "$r"; return 1; }
        done
        [ "$n" = 2 ] || { echo "$n repositories"; return 1; }
    }
    check "fetch-bench: repositories generated, named by their content, packed, whole" repos_ok
    # 2 sizes x 2 cache modes x (sock, grpc-conn, grpc-shared); ratios: the 2 gRPC ones.
    check "fetch-bench: report.json and report.md complete and well-formed" check_report "$T/bench" 12 8 3 "$alloc"
    check_eq "fetch-bench: a summary line per ratio" 8 "$(grep -c 'server CPU/GiB .*throughput ' "$T/bench.out")"
    # As root on 2 CPUs or more, the clients reach the servers over a veth
    # pair between two network namespaces (no loopback split of the
    # clients' receive work); the report says which.
    if [ "$(id -u)" = 0 ] && [ "$(nproc)" -ge 2 ]; then
        check_eq "fetch-bench: clients over the veth pair" veth "$(jq -r .network_kind "$T/bench/report.json")"
        check_grep "fetch-bench: report.md names the network" "Network: veth between two network namespaces" "$T/bench/report.md"
        # Its own TCP congestion control, not the host's (bbr paces each
        # connection with a timer): reno unless told; one a namespace
        # cannot take fails the sweep, naming the ones it can.
        check_grep "fetch-bench: the veth pair's TCP congestion control, reno by default" \
            "TCP congestion control reno)" "$T/bench/report.md"
        tcpcc_bad() { local o; o=$("$B/fetch-bench" --no-probes -S 1M -n 1 -R 1 -f 1 --tcp-congestion no-such-cc \
                                   -o "$T/bench-cc" 2>&1) && return 1
                      printf '%s\n' "$o"; [[ $o == *"--tcp-congestion no-such-cc"*"tcp_allowed_congestion_control: "*reno* ]]; }
        check "fetch-bench: a bad --tcp-congestion fails, naming the allowed ones" tcpcc_bad
        # The clients' route has quickack (an ACK per segment: delayed, the
        # ACKs per fetch, and the socket server's CPU, follow how fast the
        # clients read); --delayed-acks leaves TCP's default.
        check_grep "fetch-bench: the clients' route with quickack by default" \
            "the clients' route with quickack: every segment acknowledged at once" "$T/bench/report.md"
        delayed_ok() { "$B/fetch-bench" --no-probes -S 1M -n 1 -R 1 -f 1 -s sock -c on --delayed-acks \
                           -o "$T/bench-dack" >"$T/bench-dack.out" 2>&1 || { cat "$T/bench-dack.out"; return 1; }
                       grep -F "the clients' ACKs delayed as by default (--delayed-acks)" "$T/bench-dack/report.md" &&
                       ! grep -F "quickack" "$T/bench-dack/report.md"; }
        check "fetch-bench: --delayed-acks leaves the clients' ACKs delayed, and says so" delayed_ok
        # The servers' end of the pair sent every byte fetched (and framing:
        # a tenth at most) and received the clients' ACKs and requests.
        # (on failure: each run outside, with its counts)
        check "fetch-bench: the servers' veth end's packets and bytes in every run" jq -e -r '
            [.settings[] | .server as $s | .runs[]
             | select((.server_tx_bytes >= .bytes and .server_tx_bytes <= 1.1 * .bytes + 65536
                       and .server_tx_packets >= 1 and .server_tx_bytes / .server_tx_packets <= 65536 + 256
                       and .server_rx_packets >= 1) | not)
             | "\($s): bytes \(.bytes) sent \(.server_tx_bytes) in \(.server_tx_packets) packets, received \(.server_rx_packets)"]
            | if length == 0 then true else (.[], false) end' "$T/bench/report.json"
        # The machine's interrupts in every run: a number, and on the veth
        # pair at least one a fetch (each fetch's packets wake the other
        # side's CPU by RPS: 68-127 a 10.8 MiB fetch with the cache).
        # (on failure: each run outside, with its counts)
        check "fetch-bench: the machine's interrupts in every run, at least one a fetch" jq -e -r '
            [.settings[] | .server as $s | .runs[]
             | select(((.interrupts | type) == "number" and .interrupts >= .fetches) | not)
             | "\($s): \(.fetches) fetches, interrupts \(.interrupts)"]
            | if length == 0 then true else (.[], false) end' "$T/bench/report.json"
        # ... split by side (/proc/interrupts' columns of each side's CPUs):
        # each side's at least one a fetch (the other side's packets raise
        # RPS interrupts there), the two together the machine's (read a
        # moment apart: 10 % + 50 of slack).
        check "fetch-bench: the interrupts of each side's CPUs in every run, the machine's together" jq -e -r '
            [.settings[] | .server as $s | .runs[]
             | select(((.server_cpus_interrupts | type) == "number" and (.client_cpus_interrupts | type) == "number"
                       and .server_cpus_interrupts >= .fetches and .client_cpus_interrupts >= .fetches
                       and (.server_cpus_interrupts + .client_cpus_interrupts - .interrupts | fabs) <= 0.1 * .interrupts + 50) | not)
             | "\($s): \(.fetches) fetches, interrupts \(.interrupts): servers CPUs \(.server_cpus_interrupts), clients \(.client_cpus_interrupts)"]
            | if length == 0 then true else (.[], false) end' "$T/bench/report.json"
        # Pinned on the veth pair, each side's CPU is its CPUs' busy time
        # (its receive softirq work included): at least what its tasks
        # were counted, at most its CPUs' time over the run (a run's marks
        # are taken just outside its wall-clock window: 0.2 s of slack; a
        # mark read late, its thread waiting for a loaded CPU, widens it:
        # then at most the CPU time between the marks).
        # (on failure: the accounting, or each run that broke a bound, with
        # its figures)
        check "fetch-bench: each side's CPU is its CPUs' busy time, within their time" jq -e -r '
            (.cpus / 2 | floor) as $sc | (.cpus - $sc) as $cc
            | if (.cpu_accounting | test("busy time")) | not then "cpu_accounting: \(.cpu_accounting)", false
              else [.settings[] | .server as $s | .runs[]
                    | select(((.server_threads_cpu_s | type == "number")
                              and .server_cpu_s >= .server_threads_cpu_s and .client_cpu_s >= .client_processes_cpu_s
                              and .server_cpu_s + .git_cpu_s <= ([(.wall_s + 0.2) * $sc, .server_cpus_elapsed_s] | max) + 0.001
                              and .client_cpu_s <= ([(.wall_s + 0.2) * $cc, .client_cpus_elapsed_s] | max) + 0.001) | not)
                    | "\($s): wall \(.wall_s) s on \($sc)+\($cc) CPUs (between the marks \(.server_cpus_elapsed_s)+\(.client_cpus_elapsed_s) s): server \(.server_cpu_s) (threads \(.server_threads_cpu_s)), git \(.git_cpu_s), clients \(.client_cpu_s) (processes \(.client_processes_cpu_s))"]
                   | if length == 0 then true else (.[], false) end
              end' "$T/bench/report.json"
        # Where the kernel keeps every task's time per CPU (cgroup v1
        # cpuacct's root), the clients' CPU is their processes' own plus
        # what ran in no task on their CPUs (busy less every task's time)
        # and in their softirq threads (ksoftirqd, a task among them), not
        # other tasks' time there; elsewhere their CPUs' busy time.
        # (on failure: the accounting, or each run whose clients' CPU is
        # neither, with its times)
        tasks=false
        for f in /sys/fs/cgroup/cpuacct/cpuacct.usage_percpu /sys/fs/cgroup/cpu,cpuacct/cpuacct.usage_percpu; do
            [ -r "$f" ] && tasks=true
        done
        check "fetch-bench: the clients' CPU is their processes' plus what ran in no task on their CPUs" \
            jq -e -r --argjson tasks "$tasks" '
            if $tasks and (.cpu_accounting | test("cpuacct.usage_percpu") | not) then "cpu_accounting: \(.cpu_accounting)", false
            else [.settings[] | .server as $s | .runs[]
                  | (if $tasks then (.client_cpus_tasks_s // null) as $t
                     | if $t == null or (.client_cpus_ksoftirqd_s | type) != "number" then null
                       else .client_processes_cpu_s + ([.client_cpus_busy_s - $t, 0] | max) + .client_cpus_ksoftirqd_s end
                     else ([.client_cpus_busy_s, .client_processes_cpu_s] | max) end) as $want
                  | select($want == null or (.client_cpu_s - $want | fabs) > 1e-6
                           or ($tasks and ((.server_cpus_tasks_s | type) != "number"
                                           or .client_cpus_ksoftirqd_s < 0 or .client_cpus_ksoftirqd_s > .client_cpus_tasks_s)))
                  | "\($s): clients \(.client_cpu_s), want \($want) (processes \(.client_processes_cpu_s), busy \(.client_cpus_busy_s), tasks \(.client_cpus_tasks_s), ksoftirqd \(.client_cpus_ksoftirqd_s))"]
                 | if length == 0 then true else (.[], false) end
            end' "$T/bench/report.json"
        # The server's likewise: its own CPU plus what ran in no task on its
        # CPUs and in their softirq threads, not other tasks there. Its own is its threads' task-clock,
        # or where no git ran (under 1 ms of git's counters) its cgroup's
        # CPU time (the scheduler's, its ended connection threads' whole
        # lives in it); where git ran, git's is the cgroup's less the
        # threads', at least what its counters saw. Every run has its
        # cgroup's time where a cgroup2 file system is mounted.
        # (on failure: each run whose figures break this, with its times)
        cg2=false
        grep -q ' cgroup2 ' /proc/mounts && cg2=true
        check "fetch-bench: the server's CPU is its own plus what ran in no task on its CPUs; git's its cgroup's rest" \
            jq -e -r --argjson tasks "$tasks" --argjson cg2 "$cg2" '
            [.settings[] | .server as $s | .runs[]
             | (.server_cgroup_cpu_s // null) as $cg | (.git_task_clock_s // 0) as $gp
             | (if $cg == null then .server_threads_cpu_s
                elif $gp >= 0.001 then .server_threads_cpu_s
                else ([.server_threads_cpu_s, $cg] | max) end) as $own
             | (if $cg == null or $gp < 0.001 and $cg > .server_threads_cpu_s then (if $cg == null then $gp else 0 end)
                else ([$gp, $cg - .server_threads_cpu_s] | max) end) as $git
             | (if $tasks then $own + ([.server_cpus_busy_s - .server_cpus_tasks_s, 0] | max) + .server_cpus_ksoftirqd_s
                else null end) as $want
             | select(($cg2 and $cg == null) or (.server_own_cpu_s - $own | fabs) > 1e-6 or (.git_cpu_s - $git | fabs) > 1e-6
                      or ($tasks and (.server_cpu_s - $want | fabs) > 1e-6))
             | "\($s): server \(.server_cpu_s), want \($want) (own \(.server_own_cpu_s), want \($own); threads \(.server_threads_cpu_s), cgroup \($cg), busy \(.server_cpus_busy_s), tasks \(.server_cpus_tasks_s), ksoftirqd \(.server_cpus_ksoftirqd_s)); git \(.git_cpu_s), want \($git) (counters \($gp))"]
            | if length == 0 then true else (.[], false) end' "$T/bench/report.json"
    fi
    # The server's switches by thread: its main thread first; gRPC's own
    # threads by name beside the call threads (the socket server has none
    # of its own); the threads alive after the run are the groups'; the
    # switches the /proc counts of those threads saw are within what the
    # server's counter saw (read a moment apart: 20 + 2 % of slack).
    check "fetch-bench: the server's context switches by thread" jq -e '
        all(.settings[]; .server as $s | all(.runs[] | select(.server_context_switches > 0);
            .server_context_switches_by_thread as $b | .server_context_switches as $t
            | $b.main.threads == 1 and ([$b[].threads] | add) == .server_threads_after
              and ([$b | to_entries[] | select(.key != "ended") | .value.context_switches] | add) <= $t * 1.02 + 20
              and (($b | keys - ["main", "calls", "ended"] | length > 0) == ($s != "sock"))))' "$T/bench/report.json"
    # The socket server's CPU at its setting's median interrupts: the fit
    # of each cache state (the slope of server CPU/GiB on interrupts/GiB
    # over the socket settings' runs their figure is over, each setting
    # centred) and each priced figure as report.json's runs give them;
    # priced only with 6 runs of 2 settings and CPU an interrupt, and then
    # beside every ratio of that cache state, over its rounds.
    # (on failure: what differs)
    check "fetch-bench: the socket server's CPU priced at its setting's median interrupts, from the runs" jq -e -r '
        def med: sort | if length % 2 == 1 then .[length / 2 | floor] else (.[length / 2 - 1] + .[length / 2]) / 2 end;
        def used: [.[] | select(.host_slow | not)] as $k | [.[] | select(.crowded | not)] as $u
                  | if ($k | length) >= 3 or ($k | length) == length then $k elif ($u | length) >= 3 then $u else . end;
        def near($a; $b): ($a - $b | fabs) <= 1e-6 * ([1e-9, ($a | fabs), ($b | fabs)] | max);
        . as $top | ([.settings[] | select(.server == "sock") | .cache] | unique) as $caches
        | [(if (.socket_interrupt_fit | map(.cache)) == $caches then empty
            else "fits for caches \(.socket_interrupt_fit | map(.cache)), socket settings with \($caches)" end),
           (.socket_interrupt_fit[] | . as $f
           | [$top.settings[] | select(.server == "sock" and .cache == $f.cache)
              | { s: ., xy: ([.runs[] | (.bytes / 1073741824) as $g
                              | { x: (.interrupts / $g), y: (.server_cpu_s / $g), host_slow, crowded }] | used) }] as $set
           | [$set[].xy | select(length >= 2)] as $fitted
           | [$fitted[] | (map(.x) | add / length) as $mx | (map(.y) | add / length) as $my
              | .[] | { dx: (.x - $mx), dy: (.y - $my) }] as $d
           | ([$d[] | .dx * .dx] | add // 0) as $xx | (if $xx > 0 then ([$d[] | .dx * .dy] | add) / $xx else 0 end) as $k
           | (if near($f.us_per_interrupt; $k * 1e6) and $f.runs == ($d | length) and $f.settings == ($fitted | length)
                 and ($f.r | . >= -1 and . <= 1) and (($f.priced | not) or ($f.runs >= 6 and $f.settings >= 2 and $k > 0))
                 and ($f.priced or ($f.not_priced_because | type == "string" and length > 0))
              then empty else "cache \($f.cache): fit \($f) against k \($k * 1e6) us over \($d | length) runs" end),
             ($set[] | .s.figures.server_cpu_s_per_gib_at_median_interrupts as $p
              | (.xy | map(.x) | med) as $xm | (.xy | map(.y - $k * (.x - $xm)) | med) as $want
              | if ($f.priced | not) and $p == null then empty
                elif $f.priced and $p != null and near($p.median; $want) and $p.n == (.xy | length) and $p.min > 0 then empty
                else "cache \($f.cache), \(.s.clients) clients, \(.s.fetch_bytes) bytes: priced \($p) against \($want)" end),
             ($top.ratios[] | select(.cache == $f.cache)
              | .server_cpu_per_gib_grpc_over_sock_at_median_interrupts as $p
              | if ($f.priced | not) and $p == null then empty
                elif $f.priced and $p != null and $p.min > 0 and $p.min <= $p.median and $p.median <= $p.max
                     and $p.n == .server_cpu_per_gib_grpc_over_sock.n then empty
                else "ratio cache \(.cache), \(.clients) clients, \(.grpc_mode): priced \($p)" end))]
        | if length == 0 then true else (.[], false) end' "$T/bench/report.json"
    # The check fails on a report with a figure missing, or a cell malformed.
    mkdir -p "$T/bad1" "$T/bad2"
    cp "$T/bench/report.md" "$T/bad1/" && jq 'del(.settings[3].figures.server_cpu_s_per_gib)' "$T/bench/report.json" >"$T/bad1/report.json"
    check_fails "fetch-bench: the check finds a missing figure" check_report "$T/bad1" 12 8 3 "$alloc"
    cp "$T/bench/report.json" "$T/bad2/" && sed '0,/^| throughput MiB\/s (wall clock) | [0-9.]* (/s//| throughput MiB\/s (wall clock) | nan (/' "$T/bench/report.md" >"$T/bad2/report.md"
    check_fails "fetch-bench: the check finds a malformed cell" check_report "$T/bad2" 12 8 3 "$alloc"
    # bench/fetch-agree.sh: a sweep agrees with itself, also taken in
    # pieces; one ratio's median 20 % off is named, in a sweep whose
    # fetches are a few bytes longer (git's progress lines vary).
    agree="$FK_SRC/bench/fetch-agree.sh"
    mkdir -p "$T/pieces/a" "$T/pieces/b" "$T/off"
    jq '.ratios |= .[:4]' "$T/bench/report.json" >"$T/pieces/a/report.json"
    jq '.ratios |= .[4:]' "$T/bench/report.json" >"$T/pieces/b/report.json"
    o=$(sh "$agree" "$T/bench" "$T/pieces" 2>&1)
    check_grep "fetch-agree: a sweep agrees with itself in pieces" "server CPU/GiB gRPC/socket: 8 of 8 within 10 %" "$o"
    check_grep "fetch-agree: the gRPC server's switches per GiB, the same in both" \
        "gRPC server context switches/GiB, median per sweep: ([1-9][0-9]*) \\1\$" "$o"
    # ... and priced at a common CPU per switch: the same in both too.
    check_grep "fetch-agree: the gRPC server's CPU per context switch, from the runs" \
        "gRPC server CPU per context switch: -?[0-9.]+ us \\(r = -?[0-9.]+, [1-9][0-9]* runs" "$o"
    # With every run called slow (a loaded host against a low percentile of
    # its probes: CI run 33 priced "0 runs"), the slope takes the runs the
    # medians take: all of them.
    mkdir -p "$T/allslow/a" "$T/allslow/b"
    jq '.settings[].runs[] |= (.host_slow = true)' "$T/bench/report.json" >"$T/allslow/a/report.json"
    jq '.settings[].runs[] |= (.host_slow = true)' "$T/pieces/a/report.json" >"$T/allslow/b/report.json"
    check_grep "fetch-agree: runs all called slow are still priced (the medians' runs)" \
        "gRPC server CPU per context switch: -?[0-9.]+ us \\(r = -?[0-9.]+, [1-9][0-9]* runs" \
        "$(sh "$agree" "$T/allslow/a" "$T/allslow/b" 2>&1)"
    check_grep "fetch-agree: switch-normalised ratios agree with themselves in pieces" \
        "server CPU/GiB gRPC/socket, gRPC at the median switches/GiB of its setting: 8 of 8 within 10 %" "$o"
    # The socket server by its interrupts: a slope for each cache state from
    # the runs, and the ratios priced so (those of a cache state with CPU an
    # interrupt; none without) agree with themselves too.
    check_grep "fetch-agree: the socket server's CPU per interrupt, from the runs" \
        "socket server CPU per interrupt: no cache -?[0-9.]+ us \\(r = -?[0-9.]+, [1-9][0-9]* runs\\), cache -?[0-9.]+ us \\(r = -?[0-9.]+, [1-9][0-9]* runs\\)" "$o"
    check_grep "fetch-agree: interrupt-priced ratios agree with themselves in pieces" \
        "server CPU/GiB gRPC/socket, socket at the median interrupts/GiB of its setting: ([0-8]) of \\1 within 10 %\$" "$o"
    check_grep "fetch-agree: the report's own priced ratios agree with themselves in pieces" \
        "socket at its own sweep's median interrupts \\(the report's\\): ([0-8]) of \\1 within 10 %\$" "$o"
    check_grep "fetch-agree: no sweep slow throughout against the other" "no sweep slower throughout" "$o"
    jq '.ratios[5].server_cpu_per_gib_grpc_over_sock.median *= 1.2 | (.repositories[], .ratios[], .settings[]).fetch_bytes += 7
        | .probe_reference_ms *= 1.3' \
        "$T/bench/report.json" >"$T/off/report.json"
    o=$(sh "$agree" -v "$T/bench" "$T/off" 2>&1); rc=$?
    check_eq "fetch-agree: a ratio 20 % off fails" 1 "$rc"
    check_grep "fetch-agree: names it" "server CPU/GiB gRPC/socket: 7 of 8 within 10 %" "$o"
    check_grep "fetch-agree: its spread" " spread 20 %" "$o"
    check_grep "fetch-agree: a sweep whose probe reference is 30 % higher is named slow throughout" \
        "host slower throughout .*: $T/off:" "$o"
    # A host slow for most of a sweep passes its own reference (a low
    # percentile of its probes) but not the median: named.
    jq '.settings[].runs[] |= (.machine_probe_ms *= 1.5)' "$T/bench/report.json" >"$T/slowmost.json"
    mkdir -p "$T/slowmost" && mv "$T/slowmost.json" "$T/slowmost/report.json"
    check_grep "fetch-agree: a sweep whose probes' median is 150 % of its reference is named slow for most of it" \
        "host slow for most of the sweep .*[ ]$T/slowmost \\([0-9]+/[0-9]+ %\\)" "$(sh "$agree" "$T/bench" "$T/slowmost" 2>&1)"
    # Other work on the CPUs, which the probes miss: a sweep with crowded
    # runs kept is named.
    jq '.runs_crowded_kept = 3 | .settings[].runs[] |= (.client_cpus_others_pct = 60)' "$T/bench/report.json" >"$T/crowd.json"
    mkdir -p "$T/crowd" && mv "$T/crowd.json" "$T/crowd/report.json"
    check_grep "fetch-agree: a sweep with crowded runs kept is named" \
        "other work on the CPUs .*[ ]$T/crowd \\(median 60 %, 3 crowded runs kept\\)" "$(sh "$agree" "$T/bench" "$T/crowd" 2>&1)"
    check_fails "fetch-agree: one sweep is a usage error" sh "$agree" "$T/bench"
    # The socket server's state is per request: the same allocations per fetch for both sizes.
    for c in false true; do
        [ "$alloc" = true ] || { skip "fetch-bench: socket allocations per fetch, cache $c, 2M against 1M repository" \
                                      "allocations not counted: $(grep -m1 'not counted' "$T/bench.err")"; continue; }
        calls=$(jq -r --argjson c $c '[.settings[] | select(.server == "sock" and .cache == $c and .clients == 2)
                                       | .figures.alloc_calls_per_fetch.median] | "\(.[0]) \(.[1])"' "$T/bench/report.json")
        check_range "fetch-bench: socket allocations per fetch, cache $c, 2M against 1M repository" \
            "$(echo "$calls" | awk '{ print $2 / $1 }')" 0.9 1.1
    done
    if [ "$alloc" = true ]; then
        check_range "fetch-bench: gRPC allocates about a byte per byte served" \
            "$(jq '[.settings[] | select(.server != "sock") | .figures.alloc_bytes_per_gib.median] | min / 1073741824' "$T/bench/report.json")" 0.8 2
    else
        skip "fetch-bench: gRPC allocates about a byte per byte served" "allocations not counted: $(grep -m1 'not counted' "$T/bench.err")"
    fi
else
    fail "fetch-bench runs" "$(cat "$T/bench.err")"
fi
# SIGTERM mid-sweep: exit 1 saying so, no report, no server or cgroup left.
# (no machine probes: this sweep's checks need no figures)
FLAMEKIT_CACHE="$fbcache" "$B/fetch-bench" -S 1M -n 1 -R 500 -f 1 -c on -s sock --no-probes -o "$T/stop" \
    2>"$T/stop.err" & bp=$!
wait_grep "$T/stop.err" "round 1/500 done" 60
kill -TERM $bp; wait $bp; rc=$?
check_eq "fetch-bench: SIGTERM mid-sweep exits 1" 1 "$rc"
check_grep "fetch-bench: ... saying so" "stopped by signal 15 .*no report written" "$T/stop.err"
check "fetch-bench: ... no report" test ! -e "$T/stop/report.json"
check_eq "fetch-bench: ... no server left" "" "$(pgrep -f "$T/stop/" || true)"
check_eq "fetch-bench: ... no cgroup left" "" "$(find /sys/fs/cgroup -maxdepth 3 -name "fetch-bench.$bp.*" 2>/dev/null)"
check_eq "fetch-bench: ... no veth end left in this namespace" "" "$(ls /sys/class/net | grep "^fkb${bp}[sc]$" || true)"
check_fails "fetch-bench: bad --repo-size" "$B/fetch-bench" -S 4M,x
check_fails "fetch-bench: bad --servers" "$B/fetch-bench" -s grpc,tcp
check_fails "fetch-bench: --grpc-bdp with --grpc-window" "$B/fetch-bench" --grpc-bdp --grpc-window 1M

# -p: a flame graph of each server, linked from report.md.
if "$B/flamekit" pid --help >/dev/null 2>&1; then
    # (its gRPC clients with a fixed window: fetches complete with one, the report says so;
    # no machine probes: its checks need no figures, and the report says that too)
    if FLAMEKIT_CACHE="$fbcache" timeout 120 "$B/fetch-bench" -S 1M -n 2 -R 1 -f 1 -c on -s sock,grpc-shared -p \
            --grpc-window 4M --no-probes --profile-time 2s -o "$T/benchp" >"$T/benchp.out" 2>"$T/benchp.err"; then
        check_eq "fetch-bench --no-probes: in report.json, every probe 0, no run slow" "false 0" \
            "$(jq -r '[.machine_probes, ([.settings[].runs[] | select(.host_slow or .machine_probe_ms != 0
                      or .compute_probe_after_ms != 0)] | length) + (if .host_slow_most_of_sweep then 1 else 0 end)]
                      | join(" ")' "$T/benchp/report.json")"
        check_grep "fetch-bench --no-probes: in report.md" "speed was not probed" "$T/benchp/report.md"
        check_eq "fetch-bench --grpc-window: in report.json" 4194304 "$(jq .grpc_client_window "$T/benchp/report.json")"
        check_grep "fetch-bench --grpc-window: in report.md" "HTTP/2 window: 4(\\.0)? MiB" "$T/benchp/report.md"
        check_eq "fetch-bench: gRPC clients without BDP probing by default" "0 false" \
            "$(jq -r '"\(.grpc_client_window) \(.grpc_bdp_probe)"' "$T/bench/report.json")"
        check_grep "fetch-bench: ... report.md says so" "HTTP/2 window: 64 KiB, no BDP probing" "$T/bench/report.md"
        # ... first, with its price and the option that gives gRPC's own
        # window, and again where the gRPC/socket CPU ratios are
        check_eq "fetch-bench: report.md's headline: BDP probing off, its price, --grpc-bdp" 1 \
            "$(sed -n 3p "$T/bench/report.md" | grep -c '^\*\*gRPC here runs with BDP probing off\*\*.* 1\.2–2\.3× what it is with probing.*--grpc-bdp')"
        check_grep "fetch-bench: ... in the server CPU row" "^- \*\*server CPU s/GiB\.\*\*.*BDP probing off.*--grpc-bdp" "$T/bench/report.md"
        check_grep "fetch-bench: ... above the ratios" "^Within each round, then median \(min–max\)\. gRPC with BDP probing off" "$T/bench/report.md"
        check_grep "fetch-bench --grpc-window: the headline says what gRPC 1.51 does with it" \
            "^\*\*gRPC here runs with BDP probing off\*\*.*4(\.0)? MiB asked for" "$T/benchp/report.md"
        check_nogrep "fetch-bench: a repository made once is reused" "generating" "$T/benchp.err"
        links=$(grep -o '](profile-[^)]*\.svg)' "$T/benchp/report.md" | tr -d '()]' | sort -u)
        n=$(printf '%s\n' "$links" | grep -c svg)
        if [ "$n" = 2 ]; then pass "fetch-bench -p: two flame graphs linked"
        else fail "fetch-bench -p: two flame graphs linked (got $n)" "$(cat "$T/benchp.err" "$T"/benchp/profile-*.log)"; fi
        for l in $links; do check_grep "fetch-bench -p: $l is a flame graph" "<svg" "$T/benchp/$l"; done
        # Each server runs in a cgroup of its own, so flamekit pid samples
        # per CPU there: the socket server's short connection threads (a
        # per-task capture sampled none of them) and gRPC's call threads.
        for s in sock:conn_thread grpc:worker_thread; do
            d="$T/benchp/profile-${s%%:*}+cache"
            check_eq "fetch-bench -p: ${s%%:*} server sampled in its own cgroup" cgroup \
                "$(jq -r .target.tree.mode "$d"/*.json 2>/dev/null)"
            check_grep "fetch-bench -p: ${s%%:*} server's profile names ${s#*:}" ";${s#*:}[; ]" \
                "$(gzip -dc "$d"/*.folded.gz 2>/dev/null | head -c 1000000)"
        done
    else
        fail "fetch-bench -p runs" "$(cat "$T/benchp.err")"
    fi
fi
