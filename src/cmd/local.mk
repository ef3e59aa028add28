# subcommands: one file each
libflamekit_a_SOURCES += src/lib/capture/period_check.c src/lib/capture/period_check.h
