# util: errors, allocation, atomic output files, line input (gzip-aware),
# safe opening of process-controlled files, the option parser, the result
# contract (names, metadata)
libflamekit_a_SOURCES += src/lib/util/fk.c src/lib/util/fk.h \
	src/lib/util/outfile.c src/lib/util/outfile.h \
	src/lib/util/lineread.c src/lib/util/lineread.h \
	src/lib/util/buf.c src/lib/util/buf.h \
	src/lib/util/safeopen.c src/lib/util/safeopen.h \
	src/lib/util/opt.c src/lib/util/opt.h \
	src/lib/util/result.c src/lib/util/result.h
