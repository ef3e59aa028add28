# share: SVG script/style (compiled in), completion, systemd
bin_PROGRAMS += flamekit-fault-lab
flamekit_fault_lab_SOURCES = share/fault-lab.c
flamekit_fault_lab_CFLAGS = $(FK_LAB_CFLAGS)
flamekit_fault_lab_LDFLAGS =
# The lab is a measuring instrument: never sanitizer-instrumented (shadow memory
# would add faults), always frame pointers so stacks name its functions.
FK_LAB_CFLAGS = -std=gnu11 -Wall -Wextra -Wformat=2 -D_GNU_SOURCE -O2 -fno-omit-frame-pointer
bashcompletiondir = $(datadir)/bash-completion/completions
dist_bashcompletion_DATA = share/bash-completion/flamekit
