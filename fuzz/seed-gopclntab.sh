#!/bin/sh
# Seeds for fuzz-gopclntab: the .gopclntab section of a small Go program
# (test/progs/symgo), when Go is installed; else none.
# usage: fuzz/seed-gopclntab.sh CORPUS-DIR
set -eu
out=$1
top=$(cd "$(dirname "$0")/.." && pwd)
command -v go >/dev/null || exit 0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$top/test/progs/symgo/main.go" "$tmp/"
(cd "$tmp" && GOCACHE=$tmp/cache GO111MODULE=off GOFLAGS= go build -ldflags=-s -o prog main.go)
objcopy -O binary --only-section=.gopclntab "$tmp/prog" "$out/symgo.gopclntab"
