# benchmarks: make bench (BENCH_SCRIPTS += bench/NAME.sh, one per line)
