# flamekit-fault-lab: the page-fault experiment and the faults tests'
# workload with a known number of faults (man/flamekit-fault-lab.1). It
# links nothing of flamekit's (no library, no option parser of ours): a
# measuring instrument must not get a sanitizer's or allocator's faults.
bin_PROGRAMS += flamekit-fault-lab
flamekit_fault_lab_SOURCES = src/lab/fault-lab.c
flamekit_fault_lab_CFLAGS = $(FK_LAB_CFLAGS)
flamekit_fault_lab_LDFLAGS =
flamekit_fault_lab_LDADD =
# The lab is a measuring instrument: never sanitizer-instrumented (shadow memory
# would add faults), frame pointers (no shrink-wrapping or tail calls, so the
# frame exists from the first instruction) so stacks name every function.
FK_LAB_CFLAGS = -std=gnu11 -Wall -Wextra -Wformat=2 -D_GNU_SOURCE -O2 -fno-omit-frame-pointer $(FK_NO_SHRINK_WRAP) -fno-optimize-sibling-calls
