# benchmarks: make bench
