# engine: one capture run through the stages (a runner above them, below
# the profile runner): the phases over one engine struct (config, open,
# the loop in capture.c, naming), event kinds and stack hooks as plug-ins.
# It alone ties capture/ to symbols/, unwind/ and stacks/; it includes no
# render/, deliver/, profile/ or serve/ header (test/t-layers.sh).
libflamekit_a_SOURCES += src/lib/engine/capture.c src/lib/engine/capture.h
libflamekit_a_SOURCES += src/lib/engine/engine.h src/lib/engine/config.c
libflamekit_a_SOURCES += src/lib/engine/open.c src/lib/engine/naming.c
libflamekit_a_SOURCES += src/lib/engine/evkind.c src/lib/engine/evkind.h
# the Python stack hook (unwind/python.h through engine/evkind.h)
libflamekit_a_SOURCES += src/lib/engine/pyframes.c src/lib/engine/pyframes.h
# the off-CPU kind: sched_switch/sched_wakeup, weighed by blocked time
libflamekit_a_SOURCES += src/lib/engine/offcpu.c src/lib/engine/offcpu.h
