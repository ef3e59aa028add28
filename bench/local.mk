# benchmarks: make bench (FK_BENCHES += bench/NAME.sh, one per line)
FK_BENCHES += bench/faults.sh
EXTRA_DIST += bench/faults.sh
