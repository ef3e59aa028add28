#!/bin/sh
# gRPC vs socket git-fetch servers (fetch-bench, short run): prints the
# table and the gRPC/socket ratios of CPU per GiB, throughput, allocations.
set -eu
out=${FK_BUILD:-.}/bench-fetch.out
"${FK_BUILD:-.}/fetch-bench" --repo-size "${FETCH_BENCH_SIZE:-64M}" --clients 2 \
    --duration "${FETCH_BENCH_T:-5s}" --output "$out"
