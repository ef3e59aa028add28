# render stage: SVG flame graphs. share/flamegraph.{js,css} are compiled in
# through a generated C file (build-aux/embed.sh), so one binary is
# self-sufficient.
libflamekit_a_SOURCES += src/lib/render/svg.c src/lib/render/svg.h src/lib/render/assets.h
nodist_libflamekit_a_SOURCES += src/lib/render/assets.c
BUILT_SOURCES += src/lib/render/assets.c
CLEANFILES += src/lib/render/assets.c
EXTRA_DIST += share/flamegraph.js share/flamegraph.css
src/lib/render/assets.c: $(srcdir)/build-aux/embed.sh $(srcdir)/share/flamegraph.js $(srcdir)/share/flamegraph.css
	$(AM_V_GEN)$(MKDIR_P) src/lib/render && \
	$(SHELL) $(srcdir)/build-aux/embed.sh $@ \
	  $(srcdir)/share/flamegraph.js fk_svg_js $(srcdir)/share/flamegraph.css fk_svg_css
# render stage: pprof (.pb.gz) through the protobuf-c messages of stacks/
libflamekit_a_SOURCES += src/lib/render/pprof.c src/lib/render/pprof.h
