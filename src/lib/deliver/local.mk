# deliver: result stream (--stdout / remote), object-storage upload
libflamekit_a_SOURCES += src/lib/deliver/stream.c src/lib/deliver/stream.h src/lib/deliver/upload.h
libflamekit_a_SOURCES += src/lib/deliver/curl-dyn.c src/lib/deliver/curl-dyn.h src/lib/deliver/upload.c src/lib/deliver/s3creds.c src/lib/deliver/s3creds.h src/lib/deliver/sigv4.c src/lib/deliver/sigv4.h
# SHA-256 and HMAC for SigV4 come from GNU Nettle (nettle-dev), loaded on
# first use (util/crypto-dyn.c): headers only here.
libflamekit_a_CFLAGS += $(NETTLE_CFLAGS)
libflamekit_a_SOURCES += src/lib/deliver/remote.c src/lib/deliver/remote.h
