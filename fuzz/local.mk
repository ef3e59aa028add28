# fuzz targets (clang -fsanitize=fuzzer), built by 'make fuzz'
