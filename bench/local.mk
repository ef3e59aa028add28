# benchmarks: make bench (FK_BENCHES += bench/NAME.sh, one per line)
FK_BENCHES += bench/faults.sh
EXTRA_DIST += bench/faults.sh
FK_BENCHES += bench/collapse.sh
FK_BENCHES += bench/svg.sh
FK_BENCHES += bench/capture.sh
EXTRA_DIST += bench/capture.sh
EXTRA_DIST += bench/svg.sh
