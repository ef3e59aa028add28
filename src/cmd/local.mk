# subcommands: one file each
flamekit_SOURCES += src/cmd/remote.c
