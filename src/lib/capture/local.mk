# capture stage: libperf engine, targets, host facts, software events and
# the one-in-N check
libflamekit_a_SOURCES += src/lib/capture/capture.c src/lib/capture/capture.h
libflamekit_a_SOURCES += src/lib/capture/target.c src/lib/capture/sysinfo.c
libflamekit_a_SOURCES += src/lib/capture/period_check.c src/lib/capture/period_check.h
libflamekit_a_SOURCES += src/lib/capture/swevent.c src/lib/capture/swevent.h
libflamekit_a_SOURCES += src/lib/capture/tracefs.c src/lib/capture/tracefs.h
libflamekit_a_SOURCES += src/lib/capture/blocktime.c src/lib/capture/blocktime.h
