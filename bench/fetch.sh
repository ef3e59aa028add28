#!/bin/sh
# gRPC vs socket git-fetch servers: fetch-bench's default sweep (fixed work,
# 5 interleaved rounds, a few minutes on 2 CPUs). Prints the gRPC/socket
# ratios (median and range) per setting; the report is in
# $FK_BUILD/bench-fetch.out/report.md. FETCH_BENCH_ARGS adds options
# (e.g. "-p" for flame graphs, "-R 3 -n 1,4" for a shorter run).
set -eu
if [ ! -x "${FK_BUILD:-.}/fetch-bench" ]; then
    echo "fetch: skipped: fetch-bench not built (configure found no gRPC/protobuf-c, or --disable-fetchd)"
    exit 0
fi
out=${FK_BUILD:-.}/bench-fetch.out
# shellcheck disable=SC2086 # FETCH_BENCH_ARGS is a list of options
"${FK_BUILD:-.}/fetch-bench" ${FETCH_BENCH_ARGS:-} --output "$out"
