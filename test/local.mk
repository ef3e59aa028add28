# test programs: unit tests (test/unit-*) and workloads (test/progs)
check_PROGRAMS += test/unit-stacks
test_unit_stacks_SOURCES = test/unit/unit-stacks.c test/unit/unit.h
test_unit_stacks_CFLAGS = $(libflamekit_a_CFLAGS)
test_unit_stacks_LDADD = $(FK_LIBS)
EXTRA_DIST += test/run test/lib.sh
check_PROGRAMS += test/progs/collapse-spin
test_progs_collapse_spin_SOURCES = test/progs/collapse-spin.c
check_PROGRAMS += test/unit-svg
test_unit_svg_SOURCES = test/unit/unit-svg.c test/unit/unit.h
test_unit_svg_CFLAGS = $(libflamekit_a_CFLAGS)
test_unit_svg_LDADD = $(FK_LIBS)
EXTRA_DIST += test/t-svg.sh test/t-diff.sh
