#!/usr/bin/env bash
# fetchd-grpc and fetchd-sock: fetches git accepts, the pack cache, errors,
# disconnects, the concurrency limit and SIGTERM draining.
# timeout: 120
. "$FK_SRC/test/lib.sh"
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
    for _ in $(seq 1 100); do [ -s "$T/$name.port" ] && break; sleep 0.05; done
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
for s in grpc sock; do
    check "$s --help" "$B/fetchd-$s" --help
    check_fails "$s: unknown option" "$B/fetchd-$s" --bogus
    check_fails "$s: --repo-root required" "$B/fetchd-$s"
done
check "fetchd-client --version" "$B/fetchd-client" --version
check "fetch-bench --help" "$B/fetch-bench" --help
check_fails "fetch-bench: bad --clients" "$B/fetch-bench" --clients 0

# A tiny benchmark run: four runs, a table, the reports.
if FLAMEKIT_CACHE="$T/fkcache" "$B/fetch-bench" -S 2M -n 2 -t 300ms -o "$T/bench" >"$T/bench.out" 2>"$T/bench.err"; then
    pass "fetch-bench runs"
    check_grep "fetch-bench: table has the four runs" "sock\+cache" "$T/bench.out"
    check_grep "fetch-bench: ratios printed" "server CPU per GiB" "$T/bench.out"
    check_eq "fetch-bench: report.json has four runs" 4 "$(grep -c '"server":' "$T/bench/report.json")"
    check "fetch-bench: report.md written" test -s "$T/bench/report.md"
    check "fetch-bench: repository generated in the cache" test -d "$T/fkcache/fetch-bench/repo-2M.git"
else
    fail "fetch-bench runs" "$(cat "$T/bench.err")"
fi
