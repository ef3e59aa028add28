# stacks: the stack table, folded format, perf-script parsing
libflamekit_a_SOURCES += src/lib/stacks/stacktab.c src/lib/stacks/stacktab.h \
	src/lib/stacks/folded.c src/lib/stacks/folded.h
libflamekit_a_SOURCES += src/lib/stacks/perfscript.c src/lib/stacks/perfscript.h
libflamekit_a_SOURCES += src/lib/stacks/names.c src/lib/stacks/names.h
