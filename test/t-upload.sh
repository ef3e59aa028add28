#!/usr/bin/env bash
# timeout: 180
# flamekit upload against a real S3 server: Ceph radosgw started on
# 127.0.0.1 (test/servers/radosgw.sh), plus a stalling and a 503 server.
. "$(dirname "$0")/lib.sh"
# Options that need a value say so (they used to be "unknown option").
o=$("$FLAMEKIT" upload --endpoint 2>&1); rc=$?
check_eq "--endpoint without its value: usage error" 2 "$rc"
check_grep "--endpoint without its value: says so" "option '--endpoint' needs a value" "$o"
o=$("$FLAMEKIT" upload --part-size 1M a s3://b/ 2>&1)
check_grep "--part-size below S3's minimum: named with the bound" "option '--part-size' wants a size of at least 5M" "$o"
RGW=$FK_SRC/test/servers/radosgw.sh
STALLSRV=$FK_BUILD/test/progs/stallsrv

# No real credentials or config of the machine may leak into the tests.
unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN AWS_PROFILE AWS_REGION \
    AWS_DEFAULT_REGION AWS_ENDPOINT_URL AWS_ENDPOINT_URL_S3 AWS_SHARED_CREDENTIALS_FILE \
    AWS_CONFIG_FILE FLAMEKIT_UPLOAD_CONFIG XDG_CONFIG_HOME
export HOME=$T/home
mkdir -p "$HOME"

# Things that need no server first.
o=$("$FLAMEKIT" upload --secret x f s3://b/ 2>&1); rc=$?
check_eq "there is no --secret option (secrets stay out of argv)" 2 "$rc"
echo x >"$T/x.txt"
o=$(AWS_ACCESS_KEY_ID=AKIDTEST AWS_SECRET_ACCESS_KEY=s "$FLAMEKIT" upload --endpoint http://192.0.2.1 "$T/x.txt" s3://b/ 2>&1); rc=$?
check_eq "plain http to a non-loopback endpoint: exit 1" 1 "$rc"
check_grep "plain http refused with the fix" "refusing plain http to 192.0.2.1: use https, or --allow-http" "$o"
o=$("$FLAMEKIT" upload "$T/x.txt" s3://b/ 2>&1); rc=$?
check_eq "no credentials: exit 1" 1 "$rc"
check_grep "no credentials: says where to put them" "no credentials: set AWS_ACCESS_KEY_ID" "$o"

out=$("$RGW" start "$T/rgw" 2>&1); rc=$?
if [ $rc -eq 77 ]; then skip "upload to radosgw" "$out"; exit 0; fi
if [ $rc -ne 0 ]; then fail "radosgw starts" "$out"; exit 0; fi
fk_cleanup "'$RGW' stop '$T/rgw'"
. "$T/rgw/env"
pass "radosgw started on $RGW_ENDPOINT"
E=$RGW_ENDPOINT

# The test's own S3 client (curl signs too; credentials only in this test).
s3() { curl -s --max-time 20 --aws-sigv4 aws:amz:us-east-1:s3 --user "$RGW_ACCESS:$RGW_SECRET" \
    -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' "$@"; }
# Every flamekit output goes to all.out, to check no secret ever appears.
up() { "$FLAMEKIT" upload "$@" >"$T/o" 2>&1; local rc=$?; cat "$T/o" >>"$T/all.out"; cat "$T/o"; return $rc; }
WRONG=wrong-secret-$RANDOM$RANDOM

check_eq "bucket created" 200 "$(s3 -o /dev/null -w '%{http_code}' -X PUT "$E/fkt")"
# The server itself must reject a wrong secret, or the 403 tests prove nothing.
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 20 --aws-sigv4 aws:amz:us-east-1:s3 \
    --user "$RGW_ACCESS:$WRONG" -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' -T "$T/x.txt" "$E/fkt/x.txt")
check_eq "radosgw rejects a wrong secret with 403" 403 "$code"
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 20 -T "$T/x.txt" "$E/fkt/x.txt")
check_eq "radosgw rejects an anonymous PUT with 403" 403 "$code"

export AWS_ACCESS_KEY_ID=$RGW_ACCESS AWS_SECRET_ACCESS_KEY=$RGW_SECRET
D=$T/out
mkdir -p "$D"
base=web-1.example.com.20261202_151735_UTC.pid-4242
head -c 30000 /dev/urandom | od -An -tx1 | sed 's/^/<text>/; s/$/<\/text>/' >"$D/$base.flamegraph.svg"
printf 'main;work;spin 42\nmain;idle 7\n' | gzip >"$D/$base.folded.gz"
printf '{"host":"web-1.example.com","scope":"pid-4242"}\n' >"$D/$base.json"

# Round trip: three result files, bytes compared after download.
o=$(up --endpoint "$E" "$D/$base.flamegraph.svg" "$D/$base.folded.gz" "$D/$base.json" s3://fkt/hourly/); rc=$?
check_eq "upload of svg, folded.gz and json exits 0" 0 "$rc"
check_eq "prints the three object URLs" "$E/fkt/hourly/$base.flamegraph.svg
$E/fkt/hourly/$base.folded.gz
$E/fkt/hourly/$base.json" "$o"
for ext in flamegraph.svg folded.gz json; do
    s3 -o "$T/dl" "$E/fkt/hourly/$base.$ext"
    check "round trip $ext: downloaded bytes equal" cmp "$T/dl" "$D/$base.$ext"
done
s3 -I "$E/fkt/hourly/$base.flamegraph.svg" | tr -d '\r' >"$T/head"
check_grep "svg Content-Type image/svg+xml" '^Content-Type: image/svg\+xml$' "$T/head"
check_grep "x-amz-meta-host from the file name" '^x-amz-meta-host: web-1\.example\.com$' "$T/head"
check_grep "x-amz-meta-scope from the file name" '^x-amz-meta-scope: pid-4242$' "$T/head"
check_grep "x-amz-meta-start-time from the file name" '^x-amz-meta-start-time: 2026-12-02T15:17:35Z$' "$T/head"
check_grep "folded.gz Content-Type application/gzip" '^Content-Type: application/gzip$' "$(s3 -I "$E/fkt/hourly/$base.folded.gz" | tr -d '\r')"
check_grep "json Content-Type application/json" '^Content-Type: application/json$' "$(s3 -I "$E/fkt/hourly/$base.json" | tr -d '\r')"
o=$(up --endpoint "$E" --meta ticket=INC-123 "$D/$base.json" s3://fkt/meta); rc=$?
check_eq "--meta upload exits 0 (prefix without slash)" "0 $E/fkt/meta/$base.json" "$rc $o"
check_grep "--meta adds x-amz-meta-ticket" '^x-amz-meta-ticket: INC-123$' "$(s3 -I "$E/fkt/meta/$base.json" | tr -d '\r')"
printf 'odd name\n' >"$D/a b+c.txt"
o=$(up --endpoint "$E" "$D/a b+c.txt" s3://fkt/odd/); rc=$?
check_eq "key with space and plus: exit 0, URL encoded" "0 $E/fkt/odd/a%20b%2Bc.txt" "$rc $o"
check_eq "key with space and plus: bytes arrive" "odd name" "$(s3 "$E/fkt/odd/a%20b%2Bc.txt")"

# Addressing: virtual-host (curl resolves *.localhost to loopback) and gs://
# (region auto) against the same server; gs:// and AWS defaults offline.
o=$(up --endpoint "http://localhost:$RGW_PORT" --virtual-host "$D/$base.json" s3://fkt/vh/); rc=$?
check_eq "virtual-host addressing: exit 0, bucket in the host name" "0 http://fkt.localhost:$RGW_PORT/vh/$base.json" "$rc $o"
check "virtual-host addressing: bytes arrive" cmp <(s3 "$E/fkt/vh/$base.json") "$D/$base.json"
o=$(up --endpoint "$E" "$D/$base.json" gs://fkt/gs/); rc=$?
check_eq "gs:// with an endpoint (path style, region auto): exit 0" "0 $E/fkt/gs/$base.json" "$rc $o"
check_grep "gs:// maps to storage.googleapis.com, path style, region auto" \
    '^https://storage\.googleapis\.com/b1/k\.svg\?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=[^&]*%2Fauto%2Fs3%2Faws4_request&' \
    "$(up --presign gs://b1/k.svg)"
check_grep "s3:// defaults to AWS, virtual host" '^https://bkt1\.s3\.eu-west-1\.amazonaws\.com/k\.svg\?.*%2Feu-west-1%2Fs3%2F' \
    "$(up --region eu-west-1 --presign s3://bkt1/k.svg)"
check_grep "s3:// bucket with dots falls back to path style" '^https://s3\.us-east-1\.amazonaws\.com/my\.b1/k\.svg\?' \
    "$(up --presign s3://my.b1/k.svg)"

# Multipart: 12 MB in 5 MiB parts (S3's minimum part size).
head -c 12000000 /dev/urandom >"$D/big.bin"
o=$(up --endpoint "$E" --part-size 5M --multipart-threshold 5M "$D/big.bin" s3://fkt/mp/); rc=$?
check_eq "multipart upload exits 0" 0 "$rc"
s3 -o "$T/dl" "$E/fkt/mp/big.bin"
check "multipart round trip: bytes equal" cmp "$T/dl" "$D/big.bin"
check_grep "multipart ETag says 3 parts" '^ETag: "[0-9a-f]+-3"$' "$(s3 -I "$E/fkt/mp/big.bin" | tr -d '\r')"
o=$(AWS_SECRET_ACCESS_KEY=$WRONG up --endpoint "$E" --part-size 5M --multipart-threshold 5M "$D/big.bin" s3://fkt/mp2/); rc=$?
check_eq "multipart with a wrong secret: exit 1" 1 "$rc"
check_grep "multipart with a wrong secret: access denied" "access denied" "$o"
# A part refused after the upload started (bucket quota below one part):
# the multipart upload must be aborted, not left holding parts.
s3 -o /dev/null -X PUT "$E/fkquota"
rgwadm() { radosgw-admin --conf "$T/rgw/ceph.conf" "$@" >/dev/null 2>&1; }
if rgwadm quota set --quota-scope=bucket --bucket=fkquota --max-size=4194304 &&
    rgwadm quota enable --quota-scope=bucket --bucket=fkquota; then
    o=$(up --endpoint "$E" --part-size 5M --multipart-threshold 5M "$D/big.bin" s3://fkquota/mp/); rc=$?
    check_eq "part refused by quota: exit 1" 1 "$rc"
    check_grep "part refused by quota: names the part and the quota" "part 1 of 3: quota of bucket 'fkquota' or its owner exceeded \(HTTP 403 QuotaExceeded\)" "$o"
    l=$(s3 "$E/fkquota?uploads=")
    check_grep "multipart listing works (control)" '<ListMultipartUploadsResult' "$l"
    check_nogrep "failed multipart upload was aborted" '<Upload>' "$l"
    s3 -o /dev/null -X POST "$E/fkquota/control?uploads="
    check_grep "an unaborted multipart upload would show (control)" '<Upload><Key>control</Key>' "$(s3 "$E/fkquota?uploads=")"
else
    skip "multipart abort" "radosgw-admin quota set failed"
fi

# Presigned URLs: flamekit --presign signs, the uploader needs no credentials.
url=$(up --endpoint "$E" --presign s3://fkt/shared/$base.json); rc=$?
check_eq "--presign exits 0" 0 "$rc"
check_grep "--presign prints a SigV4 query-signed URL" "^$E/fkt/shared/$base\.json\?X-Amz-Algorithm=AWS4-HMAC-SHA256&.*&X-Amz-Signature=[0-9a-f]{64}$" "$url"
o=$(env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY "$FLAMEKIT" upload "$D/$base.json" "$url" 2>&1); rc=$?
check_eq "upload to a presigned URL without credentials: exit 0, URL without query" "0 $E/fkt/shared/$base.json" "$rc $o"
# the URL kept out of the command line (/proc/PID/cmdline is world-readable)
printf '%s\n' "$url" >"$T/url.txt"
o=$(env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY "$FLAMEKIT" upload --to-from "$T/url.txt" "$D/$base.json" 2>&1); rc=$?
check_eq "presigned URL from a file (--to-from FILE): exit 0" "0 $E/fkt/shared/$base.json" "$rc $o"
o=$(printf '%s\n' "$url" | env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY "$FLAMEKIT" upload --to-from - "$D/$base.json" 2>&1); rc=$?
check_eq "presigned URL from standard input (--to-from -): exit 0" "0 $E/fkt/shared/$base.json" "$rc $o"
o=$("$FLAMEKIT" upload --to-from /dev/null "$D/$base.json" 2>&1); rc=$?
check_eq "--to-from an empty file: usage error (exit 2)" 2 "$rc"
check_grep "... naming what it wants" 'want the destination' "$o"
get=$(up --endpoint "$E" --presign=get --expires 10m s3://fkt/shared/$base.json)
curl -s --max-time 20 -o "$T/dl" "$get"
check "presigned GET downloads the same bytes" cmp "$T/dl" "$D/$base.json"
check_grep "presigned PUT kept the Content-Type" '^Content-Type: application/json$' "$(s3 -I "$E/fkt/shared/$base.json" | tr -d '\r')"
bad=${url%[0-9a-f]}$( [ "${url: -1}" = 0 ] && echo 1 || echo 0)
o=$(env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY "$FLAMEKIT" upload "$D/$base.json" "$bad" 2>&1); rc=$?
check_eq "tampered presigned URL: exit 1" 1 "$rc"
check_grep "tampered presigned URL: access denied, the file stays" "access denied by 127\.0\.0\.1:$RGW_PORT \(HTTP 403.*the file stays at $D/$base\.json" "$o"
check_nogrep "tampered presigned URL: the signature is not echoed" "X-Amz-Signature" "$o"

# Wrong credentials: 403 reported with the key id's last 4 characters only.
o=$(AWS_SECRET_ACCESS_KEY=$WRONG up --endpoint "$E" "$D/$base.json" s3://fkt/w/); rc=$?
check_eq "wrong secret: exit 1" 1 "$rc"
check_grep "wrong secret: access denied, check credentials, key id hint" \
    "access denied \(HTTP 403 SignatureDoesNotMatch\): check credentials \(key id \.\.\.${RGW_ACCESS: -4} from AWS_ACCESS_KEY_ID" "$o"
check_grep "wrong secret: says where the file stays" "the file stays at $D/$base\.json" "$o"
check_nogrep "wrong secret: the whole key id is not printed" "$RGW_ACCESS" "$o"
check "wrong secret: the local file is still there" test -s "$D/$base.json"
o=$(AWS_ACCESS_KEY_ID=NOSUCHKEY0000 up --endpoint "$E" "$D/$base.json" s3://fkt/w/); rc=$?
check_grep "unknown key id: access denied (InvalidAccessKeyId)" "access denied \(HTTP 403 InvalidAccessKeyId\)" "$o"

# Bucket missing.
o=$(up --endpoint "$E" "$D/$base.json" s3://no-such-bucket/x/); rc=$?
check_eq "missing bucket: exit 1" 1 "$rc"
check_grep "missing bucket: NoSuchBucket named" "bucket 'no-such-bucket' does not exist at 127\.0\.0\.1:$RGW_PORT \(NoSuchBucket\)" "$o"

# One of two files missing: the other still arrives, exit 1.
o=$(up --endpoint "$E" "$D/nonexistent.svg" "$D/$base.json" s3://fkt/partial/); rc=$?
check_eq "one file missing: exit 1" 1 "$rc"
check_grep "one file missing: the other one's URL printed" "^$E/fkt/partial/$base\.json$" "$o"
check_grep "one file missing: counted" "1 of 2 files not uploaded" "$o"

# Credentials from a shared credentials profile and from flamekit's config.
mkdir -p "$HOME/.aws" "$HOME/.config/flamekit"
printf '[default]\naws_access_key_id = NOPE\naws_secret_access_key = nope\n\n[fk]\naws_access_key_id = %s\naws_secret_access_key = %s\n' \
    "$RGW_ACCESS" "$RGW_SECRET" >"$HOME/.aws/credentials"
o=$(env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY AWS_PROFILE=fk "$FLAMEKIT" upload --endpoint "$E" "$D/$base.json" s3://fkt/prof/ 2>&1); rc=$?
check_eq "AWS_PROFILE from ~/.aws/credentials: exit 0" "0 $E/fkt/prof/$base.json" "$rc $o"
mv "$HOME/.aws/credentials" "$T/creds"
o=$(env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY AWS_SHARED_CREDENTIALS_FILE="$T/creds" "$FLAMEKIT" upload --profile fk --endpoint "$E" "$D/$base.json" s3://fkt/prof2/ 2>&1); rc=$?
check_eq "--profile with AWS_SHARED_CREDENTIALS_FILE: exit 0" 0 "$rc"
o=$(env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY "$FLAMEKIT" upload --profile nosuch "$D/$base.json" s3://fkt/ 2>&1); rc=$?
check_grep "unknown --profile named" "profile 'nosuch' not found in $HOME/.aws/credentials" "$o"
printf '[default]\nregion = xx-default-1\n[profile fk]\nregion = xx-test-1\n' >"$HOME/.aws/config"
check_grep "region from the profile in ~/.aws/config" '%2Fxx-test-1%2Fs3%2F' "$(AWS_PROFILE=fk up --presign s3://bkt1/k.svg)"
check_grep "AWS_REGION beats ~/.aws/config" '%2Fxx-env-1%2Fs3%2F' "$(AWS_REGION=xx-env-1 up --presign s3://bkt1/k.svg)"
check_grep "session token goes into a presigned URL" '&X-Amz-Security-Token=tok%2Bx&X-Amz-SignedHeaders=host&' "$(AWS_SESSION_TOKEN=tok+x up --presign s3://bkt1/k.svg)"
rm -f "$HOME/.aws/config"
conf=$HOME/.config/flamekit/upload.conf
printf '# flamekit upload\nendpoint = %s\naccess_key_id = %s\nsecret_access_key = %s\n' "$E" "$RGW_ACCESS" "$RGW_SECRET" >"$conf"
chmod 644 "$conf"
o=$(env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY "$FLAMEKIT" upload "$D/$base.json" s3://fkt/conf/ 2>&1); rc=$?
cat <<<"$o" >>"$T/all.out"
check_eq "world-readable upload.conf with a secret: exit 1" 1 "$rc"
check_grep "world-readable upload.conf: refused with the chmod fix" "refusing $conf: it holds a secret but is readable by group/others \(mode 0644\); run: chmod 600 $conf" "$o"
chmod 600 "$conf"
o=$(env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY "$FLAMEKIT" upload "$D/$base.json" s3://fkt/conf/ 2>&1); rc=$?
check_eq "mode 0600 upload.conf (endpoint and key from it): exit 0" "0 $E/fkt/conf/$base.json" "$rc $o"
rm -f "$conf"

# Capture commands: --upload sends the files they wrote (endpoint from the
# environment, as in the systemd unit).
if "$FLAMEKIT" run --help 2>/dev/null | grep -q -- '--upload'; then
    work='i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done'
    o=$(AWS_ENDPOINT_URL_S3=$E "$FLAMEKIT" run -q -o "$T/cap" --upload s3://fkt/cap/ -- sh -c "$work" 2>&1); rc=$?
    echo "$o" >>"$T/all.out"
    check_eq "flamekit run --upload: exit 0" 0 "$rc"
    check_eq "flamekit run --upload: one URL per written file" 4 "$(grep -c "^$E/fkt/cap/.*\.run-sh\.\(folded\.gz\|pb\.gz\|flamegraph\.svg\|json\)$" <<<"$o")"
    pb=$(ls "$T"/cap/*.pb.gz 2>/dev/null | head -1)
    if [ -n "$pb" ]; then
        s3 -I "$E/fkt/cap/$(basename "$pb")" | tr -d '\r' >"$T/pbhead"
        check_grep "flamekit run --upload: the .pb.gz, scope from its name" '^x-amz-meta-scope: run-sh$' "$T/pbhead"
    else
        fail "flamekit run --upload: wrote a .pb.gz" "$o"
    fi
    svg=$(ls "$T"/cap/*.flamegraph.svg 2>/dev/null | head -1)
    if [ -n "$svg" ]; then
        s3 -o "$T/dl" "$E/fkt/cap/$(basename "$svg")"
        check "flamekit run --upload: svg bytes equal" cmp "$T/dl" "$svg"
        s3 -I "$E/fkt/cap/$(basename "$svg")" | tr -d '\r' >"$T/caphead"
        check_grep "flamekit run --upload: scope metadata" '^x-amz-meta-scope: run-sh$' "$T/caphead"
        check_grep "flamekit run --upload: event from the JSON beside it" '^x-amz-meta-event: [a-z-]+$' "$T/caphead"
        check_grep "flamekit run --upload: kernel from the JSON beside it" "^x-amz-meta-kernel: $(uname -r | sed 's/[.+]/\\&/g')$" "$T/caphead"
        check_grep "flamekit run --upload: samples from the JSON beside it" '^x-amz-meta-samples: [0-9]+$' "$T/caphead"
    else
        fail "flamekit run --upload: wrote an svg" "$o"
    fi
    # an off-CPU capture uploads the same four files, named .offcpu., and
    # what lands is what was written: the sleeps' blocked time under [S]
    truth=$FK_BUILD/test/progs/offcpu-truth
    o=$(AWS_ENDPOINT_URL_S3=$E "$FLAMEKIT" offcpu -q -o "$T/ocap" --upload s3://fkt/off/ run -- "$truth" sleeps 0.5 2>&1); rc=$?
    echo "$o" >>"$T/all.out"
    check_eq "flamekit offcpu --upload: exit 0" 0 "$rc"
    check_eq "flamekit offcpu --upload: one URL per written file" 4 "$(grep -c "^$E/fkt/off/.*\.run-offcpu-truth\.offcpu\.\(folded\.gz\|pb\.gz\|flamegraph\.svg\|json\)$" <<<"$o")"
    fo=$(ls "$T"/ocap/*.offcpu.folded.gz 2>/dev/null | head -1)
    if [ -n "$fo" ]; then
        s3 -o "$T/odl" "$E/fkt/off/$(basename "$fo")"
        check "flamekit offcpu --upload: folded bytes equal" cmp "$T/odl" "$fo"
        check_grep "flamekit offcpu --upload: the sleeps' blocked time under [S]" '^truth-a;\[S\];.*;wait_10ms;' "$(zcat "$T/odl")"
    else
        fail "flamekit offcpu --upload: wrote a .offcpu.folded.gz" "$o"
    fi
    o=$(AWS_ENDPOINT_URL_S3=$E "$FLAMEKIT" run -q -o "$T/cap2" --upload s3://no-such-bucket/ -- true 2>&1); rc=$?
    echo "$o" >>"$T/all.out"
    check_eq "flamekit run --upload to a missing bucket: exit 1" 1 "$rc"
    check_grep "flamekit run --upload failure: NoSuchBucket, the files stay" "NoSuchBucket.*the file stays at $T/cap2/" "$o"
    check_eq "flamekit run --upload failure: the four files are still there" 4 "$(ls "$T/cap2" | wc -l)"
    o=$("$FLAMEKIT" run --stdout --upload s3://fkt/ -- true 2>&1); rc=$?
    check_eq "--stdout with --upload: usage error" 2 "$rc"
    o=$("$FLAMEKIT" run --upload "$url" -- true 2>&1); rc=$?
    check_eq "capture --upload refuses a presigned URL (it would land in the JSON's argv)" 2 "$rc"
else
    skip "capture --upload" "flamekit run has no --upload in this build"
fi

# Server down: connection refused fails at once, not after retries.
port=
for _ in $(seq 1 100); do
    p=$((17000 + RANDOM % 100))
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { port=$p; break; }
done
t0=$(date +%s%N)
o=$(up --endpoint "http://127.0.0.1:$port" "$D/$base.json" s3://fkt/down/); rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
check_eq "server down: exit 1" 1 "$rc"
check_grep "server down: cannot connect, names the endpoint" "cannot connect to 127\.0\.0\.1:$port: .*is the endpoint right and the server up\?" "$o"
check_range "server down: fails quickly (ms)" "$ms" 0 3000

# A server that accepts and never answers: bounded by --timeout.
"$STALLSRV" stall "$T/stall.port" >/dev/null 2>&1 &
spid=$!
fk_cleanup "kill $spid"
for _ in $(seq 1 50); do [ -s "$T/stall.port" ] && break; sleep 0.05; done
sport=$(cat "$T/stall.port")
t0=$(date +%s%N)
o=$(up --endpoint "http://127.0.0.1:$sport" --timeout 3s "$D/$base.json" s3://fkt/stall/); rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
check_eq "stalled server: exit 1" 1 "$rc"
check_grep "stalled server: timed out, clear message" "timed out talking to 127\.0\.0\.1:$sport.*server stalled or unreachable" "$o"
check_range "stalled server: gives up at --timeout 3s (ms)" "$ms" 2500 6000
t0=$(date +%s%N)
o=$(up --endpoint "http://127.0.0.1:$sport" --stall-timeout 1s --retries 1 --timeout 30s "$D/$base.json" s3://fkt/stall/); rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
check_grep "stall timeout: retried once, then gave up" "after 2 attempts" "$o"
check_range "stall timeout 1s x 2 attempts + backoff (ms)" "$ms" 1500 7000

# 5xx: retried with backoff, then reported.
"$STALLSRV" 503 "$T/503.port" >"$T/503.log" 2>&1 &
epid=$!
fk_cleanup "kill $epid"
for _ in $(seq 1 50); do [ -s "$T/503.port" ] && break; sleep 0.05; done
o=$(up --endpoint "http://127.0.0.1:$(cat "$T/503.port")" --retries 2 --timeout 20s "$D/$base.json" s3://fkt/busy/); rc=$?
check_eq "503 server: exit 1" 1 "$rc"
check_grep "503 server: reported with the code and attempts" "HTTP 503 from 127\.0\.0\.1:[0-9]+ SlowDown: busy \(after 3 attempts\)" "$o"
check_grep "503 server: retry messages" "retrying in [0-9.]+ s \(attempt 2 of 3\)" "$o"
check_eq "503 server: 1 + 2 retries = 3 requests" 3 "$(grep -c request "$T/503.log")"

# No output of any run above contains the secret or the wrong secret.
check_nogrep "the secret never appears in any output" "$RGW_SECRET" "$T/all.out"
check_nogrep "the wrong secret never appears in any output" "$WRONG" "$T/all.out"
