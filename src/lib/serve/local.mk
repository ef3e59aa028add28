# serve: flamekit serve's HTTP(S) front end above the profile runner
# (libmicrohttpd, TLS and client certificates through GnuTLS); the page is
# share/serve.html, compiled in like the SVG assets.
libflamekit_a_SOURCES += src/lib/serve/serve.c src/lib/serve/serve.h \
	src/lib/serve/auth.c src/lib/serve/auth.h \
	src/lib/serve/mhd-dyn.c src/lib/serve/mhd-dyn.h
nodist_libflamekit_a_SOURCES += src/lib/serve/page.c
BUILT_SOURCES += src/lib/serve/page.c
CLEANFILES += src/lib/serve/page.c
EXTRA_DIST += share/serve.html
# Headers only: both libraries are loaded when serve starts (mhd-dyn.c).
libflamekit_a_CFLAGS += $(MHD_CFLAGS) $(GNUTLS_CFLAGS)
src/lib/serve/page.c: $(srcdir)/build-aux/embed.sh $(srcdir)/share/serve.html
	$(AM_V_GEN)$(MKDIR_P) src/lib/serve && \
	$(SHELL) $(srcdir)/build-aux/embed.sh $@ $(srcdir)/share/serve.html fk_serve_page
