# deliver: result stream (--stdout / remote), object-storage upload
libflamekit_a_SOURCES += src/lib/deliver/stream.c src/lib/deliver/stream.h src/lib/deliver/upload.h
libflamekit_a_SOURCES += src/lib/deliver/curl-dyn.c src/lib/deliver/curl-dyn.h src/lib/deliver/upload.c src/lib/deliver/s3creds.c src/lib/deliver/s3creds.h src/lib/deliver/sigv4.c src/lib/deliver/sigv4.h
# SHA-256 and HMAC for SigV4 come from OpenSSL's libcrypto (libssl-dev).
libflamekit_a_CFLAGS += $(LIBCRYPTO_CFLAGS)
FK_LIBS += $(LIBCRYPTO_LIBS)
libflamekit_a_SOURCES += src/lib/deliver/remote.c src/lib/deliver/remote.h
libflamekit_a_SOURCES += src/lib/deliver/merge.c src/lib/deliver/merge.h

# 'make flamekit-portable': a flamekit for 'flamekit remote --deploy' on
# hosts without our libraries. libelf, libdw, jansson, protobuf-c, zlib and the
# compression libraries libdw uses are linked statically (Debian ships
# their .a files, libmicrohttpd too); glibc, libm, libcrypto and libgnutls
# (on every Debian/Ubuntu host: apt needs it) stay dynamic; libcurl is loaded only to upload (libcurl4 is the
# one runtime package the target host may lack). See flamekit-remote(1).
FK_PORTABLE_STATIC = -Wl,-Bstatic -lmicrohttpd -ldw -lelf -ljansson -lprotobuf-c -lz -llzma -lbz2 -Wl,-Bdynamic
flamekit-portable: $(flamekit_OBJECTS) libflamekit.a
	$(AM_V_CCLD)$(flamekit_LINK) $(flamekit_OBJECTS) libflamekit.a $(LIBPERF_LIBS) $(FK_PORTABLE_STATIC) $(LIBCRYPTO_LIBS) $(GNUTLS_LIBS) -lm -lpthread
CLEANFILES += flamekit-portable
