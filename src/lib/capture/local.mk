# capture stage: libperf engine, targets, record front end, host facts
libflamekit_a_SOURCES += src/lib/capture/capture.c src/lib/capture/capture.h
libflamekit_a_SOURCES += src/lib/capture/target.c src/lib/capture/sysinfo.c
libflamekit_a_SOURCES += src/lib/capture/record.c src/lib/capture/record.h
