# subcommands: one file each
flamekit_SOURCES += src/cmd/upload.c
