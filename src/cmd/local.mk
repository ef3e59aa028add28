# subcommands: one file each; commands.def is the table src/flamekit.c includes
flamekit_SOURCES += src/cmd/commands.def
libflamekit_a_SOURCES += src/lib/capture/period_check.c src/lib/capture/period_check.h
libflamekit_a_SOURCES += src/lib/capture/swevent.c src/lib/capture/swevent.h
flamekit_SOURCES += src/cmd/svg.c
flamekit_SOURCES += src/cmd/diff.c
flamekit_SOURCES += src/cmd/collapse.c
flamekit_SOURCES += src/cmd/upload.c
flamekit_SOURCES += src/cmd/merge.c
flamekit_SOURCES += src/cmd/faults.c
flamekit_SOURCES += src/cmd/host.c
flamekit_SOURCES += src/cmd/pid.c
flamekit_SOURCES += src/cmd/user.c
flamekit_SOURCES += src/cmd/cgroup.c
flamekit_SOURCES += src/cmd/run.c
flamekit_SOURCES += src/cmd/remote.c
