# test programs: unit tests (test/unit-*) and workloads (test/progs)
check_PROGRAMS += test/unit-stacks
test_unit_stacks_SOURCES = test/unit/unit-stacks.c test/unit/unit.h
test_unit_stacks_CFLAGS = $(libflamekit_a_CFLAGS)
test_unit_stacks_LDADD = $(FK_LIBS)
EXTRA_DIST += test/run test/lib.sh
check_PROGRAMS += test/unit-stream
test_unit_stream_SOURCES = test/unit/unit-stream.c test/unit/unit.h
test_unit_stream_CFLAGS = $(libflamekit_a_CFLAGS)
test_unit_stream_LDADD = $(FK_LIBS)
check_PROGRAMS += test/progs/fake-capture
test_progs_fake_capture_SOURCES = test/progs/fake-capture.c
test_progs_fake_capture_CFLAGS = $(libflamekit_a_CFLAGS)
test_progs_fake_capture_LDADD = $(FK_LIBS)
check_PROGRAMS += test/progs/remote-spin
test_progs_remote_spin_CFLAGS = $(AM_CFLAGS) -O1 -fno-omit-frame-pointer
