#!/bin/sh
# gRPC vs socket git-fetch servers: fetch-bench's default sweep (fixed work,
# 5 interleaved rounds, about 6 minutes on 2 quiet CPUs). Prints the
# gRPC/socket ratios (median and range) per setting; the report is in
# $FK_BUILD/bench-fetch.out/report.md. FETCH_BENCH_ARGS adds options
# (e.g. "-p" for flame graphs, "-R 3 -n 1,4" for a shorter run).
# The two previous runs' outputs are kept as bench-fetch.out.prev and
# .prev2, and the invocations are compared (bench/fetch-agree.sh): the
# target is every ratio's median within 10 % across them.
set -eu
if [ ! -x "${FK_BUILD:-.}/fetch-bench" ]; then
    echo "fetch: skipped: fetch-bench not built (configure found no gRPC/protobuf-c, or --disable-fetchd)"
    exit 0
fi
out=${FK_BUILD:-.}/bench-fetch.out
if [ -f "$out/report.json" ]; then
    rm -rf "$out.prev2"
    if [ -f "$out.prev/report.json" ]; then mv "$out.prev" "$out.prev2"; fi
    rm -rf "$out.prev"
    mv "$out" "$out.prev"
fi
# shellcheck disable=SC2086 # FETCH_BENCH_ARGS is a list of options
"${FK_BUILD:-.}/fetch-bench" ${FETCH_BENCH_ARGS:-} --output "$out"
if [ -f "$out.prev/report.json" ] && command -v jq >/dev/null; then
    set -- "$out.prev" "$out"
    if [ -f "$out.prev2/report.json" ]; then set -- "$out.prev2" "$@"; fi
    echo "agreement of the last $# invocations ($*):"
    if sh "$(dirname "$0")/fetch-agree.sh" "$@"; then
        echo "fetch: target met: every ratio's median within 10 % across the last $# invocations"
    else
        echo "fetch: target missed: some ratios' medians differ by more than 10 % across the last $# invocations (fetch-agree.sh -v lists them)"
    fi
fi
