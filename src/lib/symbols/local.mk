# symbols stage: process table, DSOs, ELF/kallsyms/perf-map symbols, debuginfod,
# per-binary CFI rows (cfi) and Go pclntab (gopclntab) for the unwinder
libflamekit_a_SOURCES += src/lib/symbols/symbols.h src/lib/symbols/symbols-int.h
libflamekit_a_SOURCES += src/lib/symbols/symbols.c src/lib/symbols/symbols-elf.c
libflamekit_a_SOURCES += src/lib/symbols/kcache.c
libflamekit_a_SOURCES += src/lib/symbols/debuginfod.h src/lib/symbols/debuginfod.c
# files and JIT /tmp directories pinned as records leave the rings
libflamekit_a_SOURCES += src/lib/symbols/pins.c src/lib/symbols/pins.h
libflamekit_a_SOURCES += src/lib/symbols/cfi.c src/lib/symbols/cfi.h
libflamekit_a_SOURCES += src/lib/symbols/gopclntab.c src/lib/symbols/gopclntab.h
# libelf, libdw and liblzma loaded on first use (elf-dyn.c): an archive of
# its own, after libflamekit.a in FK_LIBS; flamekit-portable links the
# libraries statically instead.
noinst_LIBRARIES += libfkelfdyn.a
libfkelfdyn_a_SOURCES = src/lib/symbols/elf-dyn.c src/lib/symbols/elf-dyn.h
libfkelfdyn_a_CFLAGS = $(AM_CFLAGS)
