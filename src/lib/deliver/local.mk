# deliver: result stream (--stdout / remote), object-storage upload
libflamekit_a_SOURCES += src/lib/deliver/stream.c src/lib/deliver/stream.h src/lib/deliver/upload.h
libflamekit_a_SOURCES += src/lib/deliver/remote.c src/lib/deliver/remote.h
libflamekit_a_SOURCES += src/lib/deliver/merge.c src/lib/deliver/merge.h

# 'make flamekit-portable': a flamekit for 'flamekit remote --deploy' on
# hosts without our libraries. libelf, libdw, jansson, zlib and the
# compression libraries libdw uses are linked statically (Debian ships
# their .a files); glibc, libm and libcurl stay dynamic (libcurl4 is the
# one runtime package the target host needs). See flamekit-remote(1).
FK_PORTABLE_STATIC = -Wl,-Bstatic -ldw -lelf -ljansson -lz -llzma -lbz2 -Wl,-Bdynamic
flamekit-portable: $(flamekit_OBJECTS) libflamekit.a
	$(AM_V_CCLD)$(flamekit_LINK) $(flamekit_OBJECTS) libflamekit.a $(LIBPERF_LIBS) $(FK_PORTABLE_STATIC) $(CURL_LIBS) -lm -lpthread
CLEANFILES += flamekit-portable
