#!/bin/sh
# gRPC vs socket git-fetch servers (fetch-bench, short run): prints the
# table and the gRPC/socket ratios of CPU per GiB, throughput, allocations.
set -eu
if [ ! -x "${FK_BUILD:-.}/fetch-bench" ]; then
    echo "fetch: skipped: fetch-bench not built (configure found no gRPC/protobuf-c, or --disable-fetchd)"
    exit 0
fi
out=${FK_BUILD:-.}/bench-fetch.out
"${FK_BUILD:-.}/fetch-bench" --repo-size "${FETCH_BENCH_SIZE:-64M}" --clients 2 \
    --duration "${FETCH_BENCH_T:-5s}" --output "$out"
