# deliver: result stream (--stdout / remote), object-storage upload
libflamekit_a_SOURCES += src/lib/deliver/stream.c src/lib/deliver/stream.h src/lib/deliver/upload.h
libflamekit_a_SOURCES += src/lib/deliver/curl-dyn.c src/lib/deliver/curl-dyn.h src/lib/deliver/upload.c src/lib/deliver/s3creds.c src/lib/deliver/s3creds.h src/lib/deliver/sigv4.c src/lib/deliver/sigv4.h
# SHA-256 and HMAC for SigV4 come from OpenSSL's libcrypto (libssl-dev),
# loaded on first use (util/crypto-dyn.c): headers only here.
libflamekit_a_CFLAGS += $(LIBCRYPTO_CFLAGS)
libflamekit_a_SOURCES += src/lib/deliver/remote.c src/lib/deliver/remote.h

# 'make flamekit-portable': a flamekit for 'flamekit remote --deploy' on
# hosts without our libraries. libelf, libdw, jansson, protobuf-c, zlib and the
# compression libraries libdw uses are linked statically (Debian ships
# their .a files); glibc and libm stay dynamic. libcurl (upload),
# libcrypto (upload, serve), libmicrohttpd and GnuTLS (serve) are loaded
# only by the commands that use them. See flamekit-remote(1).
FK_PORTABLE_STATIC = -Wl,-Bstatic -ldw -lelf -ljansson -lprotobuf-c -lz -llzma -lbz2 -Wl,-Bdynamic
flamekit-portable: $(flamekit_OBJECTS) libflamekit.a
	$(AM_V_CCLD)$(flamekit_LINK) $(flamekit_OBJECTS) libflamekit.a $(LIBPERF_LIBS) $(FK_PORTABLE_STATIC) -lm -lpthread
CLEANFILES += flamekit-portable
