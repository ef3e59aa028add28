# test programs: unit tests (test/unit-*) and workloads (test/progs)
check_PROGRAMS += test/unit-stacks
test_unit_stacks_SOURCES = test/unit/unit-stacks.c test/unit/unit.h
test_unit_stacks_CFLAGS = $(libflamekit_a_CFLAGS)
test_unit_stacks_LDADD = $(FK_LIBS)
EXTRA_DIST += test/run test/lib.sh
check_PROGRAMS += test/unit-upload
test_unit_upload_SOURCES = test/unit/unit-upload.c test/unit/unit.h
test_unit_upload_CFLAGS = $(libflamekit_a_CFLAGS)
test_unit_upload_LDADD = $(FK_LIBS)
check_PROGRAMS += test/progs/stallsrv
EXTRA_DIST += test/servers/radosgw.sh
check_PROGRAMS += test/unit-symbols
test_unit_symbols_SOURCES = test/unit/unit-symbols.c test/unit/unit.h
test_unit_symbols_CFLAGS = $(libflamekit_a_CFLAGS)
test_unit_symbols_LDADD = $(FK_LIBS)
check_PROGRAMS += test/progs/symprog
