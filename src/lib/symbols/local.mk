# symbols stage: process table, DSOs, ELF/kallsyms/perf-map symbols, debuginfod
libflamekit_a_SOURCES += src/lib/symbols/symbols.h src/lib/symbols/symbols-int.h
libflamekit_a_SOURCES += src/lib/symbols/symbols.c src/lib/symbols/symbols-elf.c
libflamekit_a_SOURCES += src/lib/symbols/debuginfod.h src/lib/symbols/debuginfod.c
