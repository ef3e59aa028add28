# stacks: the stack table, folded format, perf-script parsing, merging
libflamekit_a_SOURCES += src/lib/stacks/stacktab.c src/lib/stacks/stacktab.h \
	src/lib/stacks/folded.c src/lib/stacks/folded.h
libflamekit_a_SOURCES += src/lib/stacks/perfscript.c src/lib/stacks/perfscript.h
libflamekit_a_SOURCES += src/lib/stacks/merge.c src/lib/stacks/merge.h
libflamekit_a_SOURCES += src/lib/stacks/names.c src/lib/stacks/names.h
# the structured profile (pprof's model) and pprof's protobuf messages,
# generated into the build tree by protoc-c from profile.proto
libflamekit_a_SOURCES += src/lib/stacks/prof.c src/lib/stacks/prof.h \
	src/lib/stacks/pprof-read.c src/lib/stacks/pprof-read.h \
	src/lib/stacks/input.c src/lib/stacks/input.h
nodist_libflamekit_a_SOURCES += src/lib/stacks/profile.pb-c.c src/lib/stacks/profile.pb-c.h
BUILT_SOURCES += src/lib/stacks/profile.pb-c.c src/lib/stacks/profile.pb-c.h
CLEANFILES += src/lib/stacks/profile.pb-c.c src/lib/stacks/profile.pb-c.h
EXTRA_DIST += src/lib/stacks/profile.proto
libflamekit_a_CFLAGS += $(PROTOBUF_C_CFLAGS)
FK_LIBS += $(PROTOBUF_C_LIBS)
src/lib/stacks/profile.pb-c.c: src/lib/stacks/profile.proto
	$(AM_V_GEN)$(MKDIR_P) src/lib/stacks && \
	$(PROTOC_C) --proto_path=$(dir $<) --c_out=src/lib/stacks $< && \
	touch $@
src/lib/stacks/profile.pb-c.h: src/lib/stacks/profile.pb-c.c
	@test -f $@ || { rm -f $<; $(MAKE) $(AM_MAKEFLAGS) $<; }
