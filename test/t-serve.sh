#!/usr/bin/env bash
# flamekit serve with real clients on 127.0.0.1: curl (auth and limit
# matrix), go tool pprof over mutual TLS (Go's /debug/pprof/profile), and
# headless Chromium clicking the page's button.
# timeout: 280
. "$(dirname "$0")/lib.sh"
need curl || { skip "serve" "curl not installed"; exit 0; }
need openssl || { skip "serve" "openssl not installed"; exit 0; }
TOK_A=alice-token-0123456789abcdef
TOK_B=bob-token-fedcba9876543210xyz
printf '# name:token\nalice:%s\n\nbob:%s\n' "$TOK_A" "$TOK_B" >"$T/tokens"
chmod 600 "$T/tokens"

# serve NAME ARGS...: start a server on a free port (port 0, the port it
# printed); sets PORT, LOG.
serve() {
    local n=$1; shift
    LOG=$T/$n.log
    "$FLAMEKIT" serve --listen 127.0.0.1:0 "$@" 2>"$LOG" &
    local pid=$!
    fk_cleanup "kill $pid 2>/dev/null; wait $pid 2>/dev/null"
    eval "PID_$n=$pid"
    PORT=
    for _ in $(seq 1 50); do
        PORT=$(sed -n 's/.*listening on https\{0,1\}:\/\/127\.0\.0\.1:\([0-9]*\)\/.*/\1/p' "$LOG")
        [ -n "$PORT" ] && return 0
        kill -0 $pid 2>/dev/null || break
        sleep 0.1
    done
    fail "serve $n: did not start" "$(cat "$LOG")"
    return 1
}
# code ARGS...: HTTP status of a curl request (body in $T/body, headers in $T/hdr)
code() { curl -s -o "$T/body" -D "$T/hdr" -w '%{http_code}' --max-time 60 "$@"; }
hdr() { tr -d '\r' <"$T/hdr" | sed -n "s/^$1: //Ip" | head -1; }

# ---- refusals at start-up
o=$("$FLAMEKIT" serve --listen 0.0.0.0:0 --token-file "$T/tokens" 2>&1); rc=$?
check_eq "beyond loopback without TLS: refused (exit 2)" 2 "$rc"
check_grep "... saying why and what to do" 'without TLS.*--tls-cert' "$o"
o=$("$FLAMEKIT" serve --listen 127.0.0.1:0 2>&1); rc=$?
check_eq "no token file and no client CA: refused (exit 2)" 2 "$rc"
cp "$T/tokens" "$T/tokens-open" && chmod 644 "$T/tokens-open"
o=$("$FLAMEKIT" serve --listen 127.0.0.1:0 --token-file "$T/tokens-open" 2>&1); rc=$?
check_eq "token file readable by others: refused (exit 1)" 1 "$rc"
check_grep "... naming the fix" 'chmod 600' "$o"
printf 'alice:short\n' >"$T/tokens-short" && chmod 600 "$T/tokens-short"
o=$("$FLAMEKIT" serve --listen 127.0.0.1:0 --token-file "$T/tokens-short" 2>&1); rc=$?
check_eq "short token: refused (exit 1)" 1 "$rc"

# ---- tokens over plain HTTP on loopback
serve plain --token-file "$T/tokens" --max-seconds 5 --rate 600 || exit 0
U=http://127.0.0.1:$PORT
check_eq "no token: 401" 401 "$(code "$U/profile?seconds=1")"
check_grep "401 names the way in" 'Bearer' "$(hdr WWW-Authenticate)"
check_eq "wrong token: 401" 401 "$(code -H "Authorization: Bearer wrong-token-0123456789" "$U/profile?seconds=1")"
check_eq "seconds above the cap: 400" 400 "$(code -H "Authorization: Bearer $TOK_A" "$U/profile?seconds=6")"
check_grep "... naming the limit" 'limit of 5 s' "$(cat "$T/body")"
check_eq "bad target: 400" 400 "$(code -H "Authorization: Bearer $TOK_A" "$U/profile?target=bogus")"
check_eq "pid that does not exist: 404" 404 "$(code -H "Authorization: Bearer $TOK_A" "$U/profile?target=pid:999999999")"
check_grep "... says so" 'no process with pid 999999999' "$(cat "$T/body")"
# The reason is the library's own (target resolution), not a copy in serve
# that could drift from it, nor "the server's log says why".
check_grep "... in the library's words, with the fix" "no process with pid 999999999; check it with 'ps -p 999999999'" "$(cat "$T/body")"
# A malformed pid list is the request's mistake (400), not a target that
# is missing (404): the library tells the two apart (fk_profile_check).
# Pid 1 exists, so only the malformed word can refuse it.
check_eq "malformed pid list: 400" 400 "$(code -H "Authorization: Bearer $TOK_A" "$U/profile?target=pid:1,abc&seconds=1")"
check_grep "... in the library's words, with the fix" "'abc' is not a process id; give PID\\[,PID...\\]" "$(cat "$T/body")"
check_eq "pid list without a pid: 400" 400 "$(code -H "Authorization: Bearer $TOK_A" "$U/profile?target=pid:,&seconds=1")"
check_grep "... says so" 'no process id given' "$(cat "$T/body")"
check_eq "cgroup that does not exist: 404" 404 "$(code -H "Authorization: Bearer $TOK_A" "$U/profile?target=cgroup:fk-no-such-cgroup-$$&seconds=1")"
check_grep "... says why, in the library's words" "'fk-no-such-cgroup-$$' is neither a cgroup v2 directory" "$(cat "$T/body")"
check_eq "user that does not exist: 404" 404 "$(code -H "Authorization: Bearer $TOK_A" "$U/profile?target=user:fk-no-such-user&seconds=1")"
check_grep "... says why and what to give" "no user 'fk-no-such-user'; give a user name or a numeric uid" "$(cat "$T/body")"
check_eq "bad format: 400" 400 "$(code -H "Authorization: Bearer $TOK_A" "$U/profile?format=png")"
check_eq "unknown page: 404" 404 "$(code -H "Authorization: Bearer $TOK_A" "$U/nope")"
check_eq "POST elsewhere: 405" 405 "$(code -X POST -H "Authorization: Bearer $TOK_A" "$U/profile")"

# a real capture of our workload: SVG with the contract's file name
"$FK_BUILD/test/progs/hot" 60 & hp=$!   # outlives the four captures below on a loaded host
fk_cleanup "kill $hp 2>/dev/null"
c=$(code -H "Authorization: Bearer $TOK_A" "$U/profile?target=pid:$hp&seconds=2&format=svg")
check_eq "pid capture as SVG: 200" 200 "$c"
check_grep "Content-Disposition: attachment; HOST.YYYYMMDD_HHMMSS_UTC.SCOPE.flamegraph.svg" \
    '^attachment; filename="[^"/]+\.[0-9]{8}_[0-9]{6}_UTC\.pid-'"$hp"'\.flamegraph\.svg"$' "$(hdr Content-Disposition)"
need xmllint && check "the SVG is well-formed" xmllint --noout "$T/body"
check_grep "the SVG shows the workload" 'hot_three' "$T/body"
c=$(code -H "Authorization: Bearer $TOK_B" "$U/profile?target=pid:$hp&seconds=1&format=pprof")
check_eq "pid capture as pprof: 200" 200 "$c"
check "... a gzip'ed profile" gzip -t "$T/body"
cp "$T/body" "$T/cap.pb.gz"
check_grep "... flamekit reads it back" ';hot_(three|one)' "$("$FLAMEKIT" collapse "$T/cap.pb.gz")"
c=$(code --compressed -H "Authorization: Bearer $TOK_A" "$U/profile?target=pid:$hp&seconds=1&format=folded&kind=faults")
check_eq "faults as folded: 200" 200 "$c"
c=$(code -H "Authorization: Bearer $TOK_A" "$U/profile?target=pid:$hp&seconds=1&format=json&kind=offcpu")
check_eq "offcpu as JSON: 200" 200 "$c"
check_grep "... an off-CPU capture" '"profile": "offcpu"' "$T/body"
check_grep "... with its switch accounting" '"switches_seen": [0-9]+' "$T/body"
# where a sleeper waits, as folded ns: its named sleep under [S], and the
# file named as the CLI's
"$FK_BUILD/test/progs/offcpu-truth" sleeps 30 >/dev/null & sp=$!
fk_cleanup "kill $sp 2>/dev/null"
c=$(code --compressed -H "Authorization: Bearer $TOK_A" "$U/profile?target=pid:$sp&seconds=1&format=folded&kind=offcpu")
check_eq "offcpu as folded: 200" 200 "$c"
check_grep "... the sleeper's wait_10ms under [S]" '^truth-a;\[S\];.*;wait_10ms;.* [0-9]+$' "$T/body"
check_grep "... named HOST.STAMP.pid-N.offcpu.folded.gz" '^attachment; filename="[^"/]+\.[0-9]{8}_[0-9]{6}_UTC\.pid-'"$sp"'\.offcpu\.folded\.gz"$' "$(hdr Content-Disposition)"
kill $sp 2>/dev/null; wait $sp 2>/dev/null
c=$(code -H "Authorization: Bearer $TOK_A" "$U/profile?target=pid:$hp&seconds=1&format=json")
check_eq "metadata as JSON: 200" 200 "$c"
check_grep "... the capture's metadata, command serve" '"command": "serve"' "$T/body"

# one capture at a time: the second gets 429 with Retry-After
code -H "Authorization: Bearer $TOK_A" "$U/profile?seconds=4&format=pprof" >"$T/first.code" &
first=$!
sleep 1
c=$(curl -s -o "$T/body2" -D "$T/hdr2" -w '%{http_code}' -H "Authorization: Bearer $TOK_B" "$U/profile?seconds=1")
wait $first
check_eq "second concurrent capture: 429" 429 "$c"
check_grep "... with Retry-After" '^Retry-After: [0-9]+' "$(tr -d '\r' <"$T/hdr2")"
check_eq "... while the first one completes: 200" 200 "$(cat "$T/first.code")"

# the Go endpoint: 400 above the cap, like Go
check_eq "/debug/pprof/profile above the cap: 400" 400 "$(code -H "Authorization: Bearer $TOK_A" "$U/debug/pprof/profile?seconds=30")"

# browser sign-in: cookie HttpOnly SameSite=Strict; a cross-site cookie is not enough
c=$(code -d "token=$TOK_B" "$U/login")
check_eq "sign-in: 303 to the page" 303 "$c"
ck=$(hdr Set-Cookie)
check_grep "... cookie HttpOnly, SameSite=Strict" 'HttpOnly.*SameSite=Strict' "$ck"
cv=$(printf '%s' "$ck" | sed 's/;.*//')
check_nogrep "... holding a session id, never the token" "$TOK_B" "$ck"
check_grep "... of 64 random hex digits" '^fk_session=[0-9a-f]{64}$' "$cv"
check_eq "the token itself as a cookie: 401" 401 "$(code -H "Cookie: fk_session=$TOK_B" "$U/profile?seconds=1")"
check_eq "... nor under the old cookie name" 401 "$(code -H "Cookie: fk_token=$TOK_B" "$U/profile?seconds=1")"
check_eq "page with the cookie: 200" 200 "$(code -H "Cookie: $cv" "$U/")"
check_grep "... is the capture page" 'id="go"' "$T/body"
check_eq "cookie sent cross-site: 401" 401 "$(code -H "Cookie: $cv" -H 'Sec-Fetch-Site: cross-site' "$U/profile?seconds=1")"
check_eq "sign-in posted from another site: 403" 403 "$(code -H 'Origin: https://evil.example' -d "token=$TOK_B" "$U/login")"
check_eq "wrong token at sign-in: 401" 401 "$(code -d "token=nope-nope-nope-nope" "$U/login")"
check_eq "the page without credentials: the sign-in form" 200 "$(code "$U/")"
check_grep "... a password field" 'type="password"' "$T/body"

# audit: one line per request, with who
check_grep "audit line names the token" 'audit .* who=token:alice GET /profile target=pid:[0-9]+ kind=cpu seconds=2 format=svg status=200' "$LOG"
check_grep "audit line for a refusal" 'audit .* who=- GET /profile status=401' "$LOG"
# an error answer is logged with its reason, as the client was told it
check_grep "audit: a refused target's line says why" "audit .* who=token:alice GET /profile target=pid:999999999 .*status=404 .* why=\"no process with pid 999999999; check it with 'ps -p 999999999'\"" "$LOG"
check_grep "audit: the why of a 401" 'audit .* who=- GET /profile status=401 .* why="[^"]+"' "$LOG"
code -H "Authorization: Bearer $TOK_A" "$U/profile?target=pid:1%0Aforged%20line" >/dev/null
check_nogrep "audit: a line break in a query value cannot forge a line" '^forged' "$LOG"
check_eq "audit: every line of the log is ours" 0 "$(grep -vc '^flamekit serve: ' "$LOG")"

# per-client rate limit
serve rate --token-file "$T/tokens" --rate 5 || exit 0
R=http://127.0.0.1:$PORT
for i in 1 2 3 4 5; do code -H "Authorization: Bearer $TOK_A" "$R/nope" >/dev/null; done
check_eq "rate limit: the 6th request in a minute gets 429" 429 "$(code -H "Authorization: Bearer $TOK_A" "$R/nope")"
check_grep "... with Retry-After" '^[0-9]+$' "$(hdr Retry-After)"
# failed attempts spend their address's budget, not a token holder's on
# the same address (another local user, an ssh -L tunnel)
serve rate2 --token-file "$T/tokens" --rate 5 || exit 0
R=http://127.0.0.1:$PORT
for i in 1 2 3; do code -H "Authorization: Bearer wrong-token-0123456789" "$R/nope" >/dev/null; done
check_eq "rate: wrong tokens from an address run out its budget" 429 "$(code "$R/nope")"
check_eq "... a token holder on that address is still served" 404 "$(code -H "Authorization: Bearer $TOK_A" "$R/nope")"

# ---- mutual TLS: a throw-away CA, server and client certificates
mkdir -p "$T/pki" && cd "$T/pki" || exit 0
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
key ca.key && openssl req -x509 -key ca.key -out ca.pem -days 2 -subj /CN=fk-test-ca 2>/dev/null
key other.key && openssl req -x509 -key other.key -out other.pem -days 2 -subj /CN=fk-other-ca 2>/dev/null
sign() {  # sign NAME CN EXT [CA]
    key "$1.key" && openssl req -new -key "$1.key" -out "$1.csr" -subj "/CN=$2" 2>/dev/null &&
        openssl x509 -req -in "$1.csr" -CA "${4:-ca}.pem" -CAkey "${4:-ca}.key" -CAcreateserial \
            -out "$1.pem" -days 2 -extfile <(printf '%s\n' "$3") 2>/dev/null
}
sign srv 127.0.0.1 $'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth'
sign alice alice-laptop 'extendedKeyUsage=clientAuth'
sign mallory mallory 'extendedKeyUsage=clientAuth' other
# expired: issued for January 2020 by the right CA
key old.key && openssl req -new -key old.key -out old.csr -subj /CN=old-laptop 2>/dev/null
printf '[ca]\ndefault_ca=d\n[d]\ndatabase=index.txt\nnew_certs_dir=.\ncertificate=ca.pem\nprivate_key=ca.key\nserial=serial\ndefault_md=sha256\npolicy=p\n[p]\ncommonName=supplied\n' >ca.cnf
: >index.txt; echo 01 >serial
openssl ca -batch -config ca.cnf -in old.csr -out old.pem -startdate 20200101000000Z -enddate 20200201000000Z >/dev/null 2>&1
cd - >/dev/null
for f in srv alice mallory old; do [ -s "$T/pki/$f.pem" ] || { fail "test PKI: $f.pem not made"; exit 0; }; done
P=$T/pki
serve mtls --tls-cert "$P/srv.pem" --tls-key "$P/srv.key" --client-ca "$P/ca.pem" --max-seconds 5 || exit 0
S=https://127.0.0.1:$PORT
check_eq "mTLS: no client certificate: 401" 401 "$(code --cacert "$P/ca.pem" "$S/profile?seconds=1")"
check_eq "mTLS: certificate of another CA: 401" 401 "$(code --cacert "$P/ca.pem" --cert "$P/mallory.pem" --key "$P/mallory.key" "$S/profile?seconds=1")"
check_eq "mTLS: a server certificate of the same CA: 401" 401 "$(code --cacert "$P/ca.pem" --cert "$P/srv.pem" --key "$P/srv.key" "$S/profile?seconds=1")"
check_grep "... says it is not made for clients" 'clientAuth' "$(cat "$T/body")"
check_eq "mTLS: expired certificate: 401" 401 "$(code --cacert "$P/ca.pem" --cert "$P/old.pem" --key "$P/old.key" "$S/profile?seconds=1")"
check_grep "... says expired" 'expired' "$(cat "$T/body")"
check_eq "mTLS: valid certificate: 200" 200 "$(code --cacert "$P/ca.pem" --cert "$P/alice.pem" --key "$P/alice.key" "$S/profile?seconds=1&format=pprof")"
check_grep "audit names the certificate" 'who=cert:alice-laptop GET /profile' "$LOG"
check_eq "mTLS server refuses plain HTTP" 000 "$(code "http://127.0.0.1:$PORT/" || true)"

# go tool pprof over mutual TLS. Debian's Go 1.19 'go tool pprof' fetches
# URLs with its own client and ignores -tls_cert/-tls_key/-tls_ca (later Go
# releases pass them on), so the fetch runs through the same google/pprof
# driver Go ships in its source tree (GOROOT/src/cmd/vendor), built here as
# the standalone pprof with a two-line main; go tool pprof then reads the
# profile it saved.
if need go; then
    export HOME=$T GOCACHE=$T/gocache GOFLAGS= GO111MODULE=off
    gr=$(go env GOROOT)
    mkdir -p "$T/gopath/src/github.com" "$T/gopath/src/golang.org/x" "$T/gopath/src/fkpprof"
    cp -r "$gr/src/cmd/vendor/github.com/." "$T/gopath/src/github.com/" 2>/dev/null
    cp -r "$gr/src/cmd/vendor/golang.org/x/." "$T/gopath/src/golang.org/x/" 2>/dev/null
    printf 'package main\n\nimport "github.com/google/pprof/driver"\n\nfunc main() { driver.PProf(&driver.Options{}) }\n' \
        >"$T/gopath/src/fkpprof/main.go"
    if (cd "$T/gopath/src/fkpprof" && GOPATH=$T/gopath go build -o "$T/pprof-bin" .) >"$T/pprof-build.log" 2>&1; then
        out=$(cd "$T" && PPROF_TMPDIR=$T/saved timeout 90 "$T/pprof-bin" -tls_cert "$P/alice.pem" -tls_key "$P/alice.key" \
            -tls_ca "$P/ca.pem" -top "$S/debug/pprof/profile?seconds=2" 2>&1); rc=$?
        check_eq "pprof fetches /debug/pprof/profile over mutual TLS" 0 "$rc"
        check_grep "... a CPU profile with flamekit's comments" 'invocation=flamekit serve' "$out"
        saved=$(ls "$T"/saved/pprof.*.pb.gz 2>/dev/null | head -1)
        check_grep "... go tool pprof reads what it saved: Type cpu" 'Type: cpu' "$(go tool pprof -top "${saved:-/nonexistent}" 2>&1)"
        out=$(cd "$T" && PPROF_TMPDIR=$T/saved2 timeout 60 "$T/pprof-bin" -tls_ca "$P/ca.pem" -top "$S/debug/pprof/profile?seconds=1" 2>&1)
        check_grep "pprof without a client certificate: 401, no profile" '401 Unauthorized' "$out"
        check_nogrep "... nothing fetched" 'Type: cpu' "$out"
        check_grep "audit: the fetch by certificate" 'who=cert:alice-laptop GET /debug/pprof/profile target=host kind=cpu seconds=2 format=pprof status=200' "$LOG"
    else
        fail "building pprof from Go's own sources" "$(tail -5 "$T/pprof-build.log")"
    fi
else
    skip "pprof over mutual TLS" "go not installed"
fi

# ---- headless Chromium: sign in, click, the SVG lands in the download directory
chrome=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$chrome" ] || ! need node; then
    skip "browser download" "chromium or node not installed"
else
    mkdir -p "$T/dl"
    o=$(timeout 120 node --experimental-websocket "$FK_SRC/test/progs/serve-click.js" "$chrome" \
        "http://127.0.0.1:$(sed -n 's/.*127\.0\.0\.1:\([0-9]*\)\/.*/\1/p' "$T/plain.log" | head -1)/" \
        "$TOK_A" 2 "$T/dl" "$T/chrome-profile" 2>"$T/click.err"); rc=$?
    check_eq "browser: signed in, clicked, downloaded" 0 "$rc"
    [ $rc -eq 0 ] || printf '%s\n' "$(grep -v Warning "$T/click.err" | head -5)"
    check_grep "browser: a live countdown while capturing" '^capturing: [0-9]+ s left$' "$o"
    f=$(ls "$T"/dl/*.flamegraph.svg 2>/dev/null | head -1)
    check_grep "browser: the SVG is in the download directory, named by the contract" \
        '\.[0-9]{8}_[0-9]{6}_UTC\.host\.flamegraph\.svg$' "name: $(basename "${f:-none}")"
    [ -n "$f" ] && need xmllint && check "browser: the downloaded SVG is well-formed" xmllint --noout "$f"
fi

# ---- the systemd unit: valid, sandboxed, rated
U=$FK_SRC/share/systemd/flamekit-serve.service
for k in ProtectSystem=strict PrivateTmp=yes NoNewPrivileges=yes 'CapabilityBoundingSet=CAP_PERFMON '; do
    check_grep "unit: $k" "^$k" "$U"
done
check_nogrep "unit: no CAP_SYS_ADMIN" '^CapabilityBoundingSet=.*CAP_SYS_ADMIN' "$U"
check_nogrep "unit: processes stay visible to the profiler" '^(ProtectProc=invisible|ProcSubset=pid)' "$U"
if need systemd-analyze; then
    sed "s#^ExecStart=flamekit #ExecStart=$FLAMEKIT #" "$U" >"$T/flamekit-serve.service"
    check "unit: systemd-analyze verify" systemd-analyze verify --man=no "$T/flamekit-serve.service"
    score=$(systemd-analyze security --offline=yes "$T/flamekit-serve.service" 2>/dev/null |
        sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\) .*/\1/p')
    check_range "unit: systemd-analyze security exposure (lower is safer)" "${score:-99}" 0 3.0
else
    skip "unit: systemd-analyze" "systemd-analyze not installed"
fi
