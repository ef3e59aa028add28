# SPDX-License-Identifier: GPL-2.0-only
# Sourced by bench/capture.sh and bench/pprof.sh: their shared workload.
# workload SECS: one compile loop (gcc -O2 of stacks/stacktab.c) and one
# compression loop (gzip -6 of 20 MB of urandom) per pair of CPUs, in the
# background for SECS seconds; their pids are appended to the caller's
# array pids. Needs src (the source tree) and work (a scratch directory).
workload() {
    local secs=$1 n i
    n=$(nproc)
    for ((i = 0; i < (n + 1) / 2; i++)); do
        ( end=$((SECONDS + secs)); while [ $SECONDS -lt $end ]; do
            gcc -O2 -I"$src/src/lib" -I"$src/src" -D_GNU_SOURCE -std=gnu11 -c "$src/src/lib/stacks/stacktab.c" -o "$work/x$i.o" 2>/dev/null || true; done ) &
        pids+=($!)
        ( end=$((SECONDS + secs)); while [ $SECONDS -lt $end ]; do
            head -c 20000000 /dev/urandom | gzip -6 >/dev/null; done ) &
        pids+=($!)
    done
}
