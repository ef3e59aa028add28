# subcommands: one file each
flamekit_SOURCES += src/cmd/remote.c
flamekit_SOURCES += src/cmd/svg.c
flamekit_SOURCES += src/cmd/diff.c
flamekit_SOURCES += src/cmd/collapse.c
flamekit_SOURCES += src/cmd/upload.c
flamekit_SOURCES += src/cmd/merge.c
