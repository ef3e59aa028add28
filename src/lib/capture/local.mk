# capture stage: the perf side of a capture and nothing later -- targets
# and their filters, the record decoder, the time-ordering queue, the ring
# reader's thread, a pid's process tree, host facts, software events and
# tracepoint layouts, the one-in-N check, off-CPU block accounting. Its
# files include only util/ and capture/ (test/t-layers.sh checks it); the
# engine that ties capture to symbols, unwind and stacks is src/lib/engine.
libflamekit_a_SOURCES += src/lib/capture/sample.c src/lib/capture/sample.h
libflamekit_a_SOURCES += src/lib/capture/ring.c src/lib/capture/ring.h
# the rings copied out on a thread of its own (draining never waits on symbol I/O)
libflamekit_a_SOURCES += src/lib/capture/reader.c src/lib/capture/reader.h
# where each thread's stack ends (what the reader keeps of its stack copies)
libflamekit_a_SOURCES += src/lib/capture/stackend.c src/lib/capture/stackend.h
libflamekit_a_SOURCES += src/lib/capture/target.c src/lib/capture/target.h
# a pid target's process tree followed from FORK/EXIT records (cgroup mode)
libflamekit_a_SOURCES += src/lib/capture/tree.c src/lib/capture/tree.h
libflamekit_a_SOURCES += src/lib/capture/sysinfo.c src/lib/capture/sysinfo.h
libflamekit_a_SOURCES += src/lib/capture/period_check.c src/lib/capture/period_check.h
libflamekit_a_SOURCES += src/lib/capture/swevent.c src/lib/capture/swevent.h
libflamekit_a_SOURCES += src/lib/capture/tracefs.c src/lib/capture/tracefs.h
libflamekit_a_SOURCES += src/lib/capture/blocktime.c src/lib/capture/blocktime.h
# in-kernel programs built from instructions at run time, loaded with libbpf
libflamekit_a_SOURCES += src/lib/capture/bpf.c src/lib/capture/bpf.h
# the ring reader woken for Python samples only (a perf-event program, a BPF ring buffer)
libflamekit_a_SOURCES += src/lib/capture/pygate.c src/lib/capture/pygate.h
# libbpf loaded on first use (bpf-dyn.c): an archive of its own, after
# libflamekit.a in FK_LIBS, so commands that load no program (collapse, svg,
# diff...) do not load it; flamekit-portable links libbpf statically instead.
noinst_LIBRARIES += libfkbpfdyn.a
libfkbpfdyn_a_SOURCES = src/lib/capture/bpf-dyn.c src/lib/capture/bpf-dyn.h
libfkbpfdyn_a_CFLAGS = $(AM_CFLAGS)
# off-CPU switch timing in the kernel (sched_switch program, blocks in a BPF ring buffer)
libflamekit_a_SOURCES += src/lib/capture/swtime.c src/lib/capture/swtime.h
# a pid's tree kept in the kernel: per-CPU samples of other processes dropped there
libflamekit_a_SOURCES += src/lib/capture/bpftree.c src/lib/capture/bpftree.h
