# capture stage: the engine (phases over one engine struct: config, open,
# the loop in capture.c, naming), the record decoder, the ring reader, event
# kinds, targets and their filters, host facts, software events and the
# one-in-N check
libflamekit_a_SOURCES += src/lib/capture/capture.c src/lib/capture/capture.h
# the Python stack hook (unwind/python.h through capture/evkind.h)
libflamekit_a_SOURCES += src/lib/capture/pyframes.c src/lib/capture/pyframes.h
libflamekit_a_SOURCES += src/lib/capture/engine.h src/lib/capture/config.c
libflamekit_a_SOURCES += src/lib/capture/open.c src/lib/capture/naming.c
libflamekit_a_SOURCES += src/lib/capture/sample.c src/lib/capture/sample.h
libflamekit_a_SOURCES += src/lib/capture/ring.c src/lib/capture/ring.h
# the rings copied out on a thread of its own (draining never waits on symbol I/O)
libflamekit_a_SOURCES += src/lib/capture/reader.c src/lib/capture/reader.h
libflamekit_a_SOURCES += src/lib/capture/evkind.c src/lib/capture/evkind.h
libflamekit_a_SOURCES += src/lib/capture/target.c src/lib/capture/target.h
# a pid target's process tree followed from FORK/EXIT records (cgroup mode)
libflamekit_a_SOURCES += src/lib/capture/tree.c src/lib/capture/tree.h
libflamekit_a_SOURCES += src/lib/capture/sysinfo.c
libflamekit_a_SOURCES += src/lib/capture/period_check.c src/lib/capture/period_check.h
libflamekit_a_SOURCES += src/lib/capture/swevent.c src/lib/capture/swevent.h
libflamekit_a_SOURCES += src/lib/capture/tracefs.c src/lib/capture/tracefs.h
libflamekit_a_SOURCES += src/lib/capture/blocktime.c src/lib/capture/blocktime.h
libflamekit_a_SOURCES += src/lib/capture/offcpu.c src/lib/capture/offcpu.h
