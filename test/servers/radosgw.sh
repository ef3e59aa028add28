#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# A throw-away single-node Ceph radosgw (real S3 with SigV4 checks) on
# 127.0.0.1, for tests.
#   radosgw.sh start DIR   start mon + memstore OSD + radosgw under DIR; on
#                          success writes DIR/env (RGW_PORT RGW_ENDPOINT
#                          RGW_ACCESS RGW_SECRET) and exits 0; exits 77 when
#                          Ceph is not installed or cannot run here (reason
#                          on stderr), 1 on other failures.
#   radosgw.sh stop DIR    stop the daemons started in DIR.
# Ports are picked from FK_PORT_LO..FK_PORT_HI (default 17000-17099).
set -u
cmd=${1:-}; dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: $0 start|stop DIR" >&2; exit 2; }
lo=${FK_PORT_LO:-17000}; hi=${FK_PORT_HI:-17099}

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
pick_port() {
    local p n
    for n in $(seq 1 200); do
        p=$((lo + RANDOM % (hi - lo + 1)))
        [ "$p" != "${1:-}" ] && port_free "$p" && { echo "$p"; return 0; }
    done
    return 1
}

stop() {
    local f pid
    for f in "$dir"/pid.radosgw "$dir"/pid.osd "$dir"/pid.mon; do
        [ -f "$f" ] || continue
        pid=$(cat "$f")
        kill "$pid" 2>/dev/null
        for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null
        rm -f "$f"
    done
    return 0
}

case $cmd in
stop) stop; exit 0 ;;
start) ;;
*) echo "usage: $0 start|stop DIR" >&2; exit 2 ;;
esac

for b in ceph ceph-mon ceph-osd radosgw radosgw-admin monmaptool; do
    command -v "$b" >/dev/null 2>&1 || { echo "radosgw.sh: $b not installed (scripts/install-deps --tests installs radosgw ceph-mon ceph-osd ceph-common)" >&2; exit 77; }
done
[ "$(id -u)" -eq 0 ] || { echo "radosgw.sh: needs root (ceph daemons)" >&2; exit 77; }

mkdir -p "$dir" && dir=$(cd "$dir" && pwd) || exit 1
fsid=$(cat /proc/sys/kernel/random/uuid)
monport=$(pick_port) || { echo "radosgw.sh: no free port in $lo-$hi" >&2; exit 1; }
rgwport=$(pick_port "$monport") || { echo "radosgw.sh: no free port in $lo-$hi" >&2; exit 1; }
conf=$dir/ceph.conf
# Started in each suite: the monitor commits each change (the OSD's boot,
# each of radosgw's pools) after paxos' 1 s propose interval, and each pool
# is created with 32 placement groups for one memstore OSD. With commits at
# once and one group a pool it listens in half the time (24 -> 11 s from
# start to a user made, medians of 4 beside a loaded host).
mkdir -p "$dir/mon" "$dir/osd" "$dir/rgw" "$dir/run" "$dir/log"
cat >"$conf" <<CONF
[global]
fsid = $fsid
mon host = v2:127.0.0.1:$monport
mon initial members = a
auth cluster required = none
auth service required = none
auth client required = none
ms mon client mode = crc
ms client mode = crc
ms cluster mode = crc
ms service mode = crc
run dir = $dir/run
admin socket = $dir/run/\$name.asok
log file = $dir/log/\$name.log
pid file = $dir/run/\$name.pid
osd pool default size = 1
osd pool default min size = 1
mon allow pool size one = true
mon warn on pool no redundancy = false
osd crush chooseleaf type = 0
paxos propose interval = 0.01
paxos min wait = 0.001
osd pool default pg num = 1
osd pool default pgp num = 1
osd pool default pg autoscale mode = off
[mon.a]
mon data = $dir/mon
[osd.0]
osd data = $dir/osd
osd objectstore = memstore
memstore device bytes = 1073741824
osd max object size = 134217728
[client.rgw]
rgw frontends = beast endpoint=127.0.0.1:$rgwport
rgw data = $dir/rgw
rgw dns name = localhost
CONF
C=(--conf "$conf")
fail() { echo "radosgw.sh: $1 (logs in $dir/log)" >&2; stop; exit 1; }

monmaptool --create --fsid "$fsid" --addv a "[v2:127.0.0.1:$monport]" "$dir/monmap" >/dev/null 2>&1 || fail "monmaptool failed"
ceph-mon "${C[@]}" --mkfs -i a --monmap "$dir/monmap" >"$dir/log/mkfs-mon.out" 2>&1 || fail "ceph-mon --mkfs failed"
ceph-mon "${C[@]}" -i a -f >"$dir/log/mon.out" 2>&1 &
echo $! >"$dir/pid.mon"
ceph "${C[@]}" --connect-timeout 15 osd create >/dev/null 2>"$dir/log/osd-create.err" || fail "monitor did not answer"
ceph-osd "${C[@]}" -i 0 --mkfs >"$dir/log/mkfs-osd.out" 2>&1 || fail "ceph-osd --mkfs failed"
ceph-osd "${C[@]}" -i 0 -f >"$dir/log/osd.out" 2>&1 &
echo $! >"$dir/pid.osd"
radosgw "${C[@]}" -n client.rgw -f >"$dir/log/rgw.out" 2>&1 &
echo $! >"$dir/pid.radosgw"
# radosgw creates its pools on first start; wait for its HTTP port.
ok=
for _ in $(seq 1 600); do
    kill -0 "$(cat "$dir/pid.radosgw")" 2>/dev/null || fail "radosgw exited"
    if curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$rgwport/"; then ok=1; break; fi
    sleep 0.1
done
[ -n "$ok" ] || fail "radosgw did not listen on 127.0.0.1:$rgwport within 60 s"
access=FKTEST$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n' | tr a-f A-F)
secret=$(od -An -N24 -tx1 /dev/urandom | tr -d ' \n')
radosgw-admin "${C[@]}" user create --uid=fktest --display-name=fktest \
    --access-key="$access" --secret-key="$secret" >"$dir/log/user.out" 2>&1 || fail "radosgw-admin user create failed"
cat >"$dir/env" <<ENV
RGW_PORT=$rgwport
RGW_ENDPOINT=http://127.0.0.1:$rgwport
RGW_ACCESS=$access
RGW_SECRET=$secret
ENV
chmod 600 "$dir/env"
exit 0
