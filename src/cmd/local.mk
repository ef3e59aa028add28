# The programs' terminal (term.h): diagnostics, --help, --version and usage
# lines; every program links it (FK_LIBS), the library never calls it.
noinst_LIBRARIES += libfkcmd.a
libfkcmd_a_SOURCES = src/cmd/term.c src/cmd/term.h
# subcommands: one file each, and the capture commands' shared front end;
# commands.def is the table src/flamekit.c includes (commands.h declares it)
flamekit_SOURCES += src/cmd/commands.def src/cmd/commands.h
flamekit_SOURCES += src/cmd/capture-cli.c src/cmd/capture-cli.h
flamekit_SOURCES += src/cmd/capture-options.c src/cmd/capture-options.h
flamekit_SOURCES += src/cmd/svg-cli.c src/cmd/svg-cli.h
flamekit_SOURCES += src/cmd/svg.c
flamekit_SOURCES += src/cmd/diff.c
flamekit_SOURCES += src/cmd/collapse.c
flamekit_SOURCES += src/cmd/upload.c
flamekit_SOURCES += src/cmd/merge.c
flamekit_SOURCES += src/cmd/faults.c
flamekit_SOURCES += src/cmd/offcpu.c
flamekit_SOURCES += src/cmd/host.c
flamekit_SOURCES += src/cmd/pid.c
flamekit_SOURCES += src/cmd/user.c
flamekit_SOURCES += src/cmd/cgroup.c
flamekit_SOURCES += src/cmd/run.c
flamekit_SOURCES += src/cmd/remote.c
flamekit_SOURCES += src/cmd/serve.c
