# unwind (symbolize stage): CFI rows, Go pclntab, the online stack walker
libflamekit_a_SOURCES += src/lib/unwind/cfi.c src/lib/unwind/cfi.h
libflamekit_a_SOURCES += src/lib/unwind/gopclntab.c src/lib/unwind/gopclntab.h
libflamekit_a_SOURCES += src/lib/unwind/unwind.c src/lib/unwind/unwind.h
