# fetch servers and their benchmark (see src/fetchd/fetchd.h), built unless
# configure found no gRPC/protobuf-c or was given --disable-fetchd.
# The protobuf messages are generated into the build tree by protoc-c.
EXTRA_DIST += src/fetchd/fetchd.proto
if FK_FETCHD
noinst_LIBRARIES += libfetchd.a
FETCHD_CFLAGS = $(AM_CFLAGS) -I$(top_srcdir)/src -I$(top_builddir)/src $(GRPC_CFLAGS) $(PROTOBUF_C_CFLAGS)
FETCHD_LIBS = libfetchd.a libfkcmd.a libflamekit.a $(GRPC_LIBS) $(PROTOBUF_C_LIBS) $(ZLIB_LIBS) -lpthread
libfetchd_a_CFLAGS = $(FETCHD_CFLAGS)
libfetchd_a_SOURCES = src/fetchd/fetchd.h src/fetchd/repo.c src/fetchd/child.c \
	src/fetchd/cache.c src/fetchd/pkt.c src/fetchd/client.c src/fetchd/server.c
nodist_libfetchd_a_SOURCES = src/fetchd/fetchd.pb-c.c src/fetchd/fetchd.pb-c.h
BUILT_SOURCES += src/fetchd/fetchd.pb-c.c src/fetchd/fetchd.pb-c.h
CLEANFILES += src/fetchd/fetchd.pb-c.c src/fetchd/fetchd.pb-c.h

src/fetchd/fetchd.pb-c.c: src/fetchd/fetchd.proto
	$(AM_V_GEN)$(MKDIR_P) src/fetchd && \
	$(PROTOC_C) --proto_path=$(dir $<) --c_out=src/fetchd $< && \
	touch $@
src/fetchd/fetchd.pb-c.h: src/fetchd/fetchd.pb-c.c
	@test -f $@ || { rm -f $<; $(MAKE) $(AM_MAKEFLAGS) $<; }

bin_PROGRAMS += fetchd-grpc fetchd-sock fetchd-client fetch-bench
fetchd_grpc_SOURCES = src/fetchd/fetchd-grpc.c
fetchd_grpc_CFLAGS = $(FETCHD_CFLAGS)
fetchd_grpc_LDADD = $(FETCHD_LIBS)
fetchd_sock_SOURCES = src/fetchd/fetchd-sock.c
fetchd_sock_CFLAGS = $(FETCHD_CFLAGS)
fetchd_sock_LDADD = $(FETCHD_LIBS)
fetchd_client_SOURCES = src/fetchd/fetchd-client.c
fetchd_client_CFLAGS = $(FETCHD_CFLAGS)
fetchd_client_LDADD = $(FETCHD_LIBS)
fetch_bench_SOURCES = src/fetchd/fetch-bench.c src/fetchd/bench.h src/fetchd/bench-report.c \
	src/fetchd/bench-net.c
fetch_bench_CFLAGS = $(FETCHD_CFLAGS) $(JANSSON_CFLAGS) -DFK_PKGLIBEXECDIR='"$(pkglibexecdir)"'
fetch_bench_LDADD = $(FETCHD_LIBS) $(JANSSON_LIBS) -lm

# The allocation-counting preload (no sanitizers: it replaces malloc).
pkglibexec_PROGRAMS = fetchd-malloc.so
fetchd_malloc_so_SOURCES = src/fetchd/malloc-count.c
fetchd_malloc_so_CFLAGS = -std=gnu11 -O2 -Wall -Wextra -fPIC -D_GNU_SOURCE
fetchd_malloc_so_LDFLAGS = -shared
fetchd_malloc_so_LDADD =
endif
