# benchmarks: make bench (FK_BENCHES += bench/NAME.sh, one per line)
FK_BENCHES += bench/collapse.sh
FK_BENCHES += bench/svg.sh
EXTRA_DIST += bench/svg.sh
FK_BENCHES += bench/fetch.sh
