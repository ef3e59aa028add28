# deliver: result stream (--stdout / remote), object-storage upload
libflamekit_a_SOURCES += src/lib/deliver/stream.c src/lib/deliver/stream.h src/lib/deliver/upload.h
libflamekit_a_SOURCES += src/lib/deliver/remote.c src/lib/deliver/remote.h
libflamekit_a_SOURCES += src/lib/deliver/merge.c src/lib/deliver/merge.h
