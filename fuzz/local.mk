# fuzz targets (clang -fsanitize=fuzzer), built by 'make fuzz'
EXTRA_DIST += fuzz/run fuzz/fuzz-perfscript.c fuzz/fuzz-folded.c fuzz/corpus
EXTRA_DIST += fuzz/fuzz-svg.c fuzz/corpus/svg
EXTRA_DIST += fuzz/fuzz-pprof.c fuzz/corpus/pprof
