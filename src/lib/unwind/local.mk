# unwind (symbolize stage, above symbols/): the online stack walker over
# the per-binary CFI rows (regs.h: the registers and rows it steps with,
# which symbols/cfi.c compiles) and Go pclntab that symbols/ keeps with each DSO
libflamekit_a_SOURCES += src/lib/unwind/regs.c src/lib/unwind/regs.h
libflamekit_a_SOURCES += src/lib/unwind/unwind.c src/lib/unwind/unwind.h
# CPython 3.11 frames read from the target (process_vm_readv) and spliced
# into the unwound native stacks
libflamekit_a_SOURCES += src/lib/unwind/python.c src/lib/unwind/python.h
