# fuzz targets (clang -fsanitize=fuzzer), built by 'make fuzz'
EXTRA_DIST += fuzz/fuzz-svg.c fuzz/corpus/svg
