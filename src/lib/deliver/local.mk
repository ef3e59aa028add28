# deliver: result stream (--stdout / remote), object-storage upload
libflamekit_a_SOURCES += src/lib/deliver/stream.c src/lib/deliver/stream.h src/lib/deliver/upload.h
libflamekit_a_SOURCES += src/lib/deliver/upload.c src/lib/deliver/s3creds.c src/lib/deliver/s3creds.h src/lib/deliver/sigv4.c src/lib/deliver/sigv4.h
# SHA-256 and HMAC for SigV4 come from OpenSSL's libcrypto (libssl-dev).
libflamekit_a_CFLAGS += $(LIBCRYPTO_CFLAGS)
FK_LIBS += $(LIBCRYPTO_LIBS)
