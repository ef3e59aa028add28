# serve: flamekit serve's HTTP(S) front end above the profile runner
# (libmicrohttpd, TLS and client certificates through GnuTLS); the page is
# share/serve.html, compiled in like the SVG assets.
libflamekit_a_SOURCES += src/lib/serve/serve.c src/lib/serve/serve.h \
	src/lib/serve/auth.c src/lib/serve/auth.h
nodist_libflamekit_a_SOURCES += src/lib/serve/page.c
BUILT_SOURCES += src/lib/serve/page.c
CLEANFILES += src/lib/serve/page.c
EXTRA_DIST += share/serve.html
libflamekit_a_CFLAGS += $(MHD_CFLAGS) $(GNUTLS_CFLAGS)
FK_LIBS += $(MHD_LIBS) $(GNUTLS_LIBS)
src/lib/serve/page.c: $(srcdir)/src/lib/render/embed.sh $(srcdir)/share/serve.html
	$(AM_V_GEN)$(MKDIR_P) src/lib/serve && \
	$(SHELL) $(srcdir)/src/lib/render/embed.sh $@ $(srcdir)/share/serve.html fk_serve_page
