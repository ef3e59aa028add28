# subcommands: one file each
flamekit_SOURCES += src/cmd/remote.c
flamekit_SOURCES += src/cmd/svg.c
flamekit_SOURCES += src/cmd/diff.c
flamekit_SOURCES += src/cmd/collapse.c
flamekit_SOURCES += src/cmd/upload.c
flamekit_SOURCES += src/cmd/merge.c
flamekit_SOURCES += src/cmd/host.c
flamekit_SOURCES += src/cmd/pid.c
flamekit_SOURCES += src/cmd/user.c
flamekit_SOURCES += src/cmd/cgroup.c
flamekit_SOURCES += src/cmd/run.c
