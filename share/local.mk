# share: SVG script/style (compiled in), completion, systemd
bin_PROGRAMS += flamekit-fault-lab
flamekit_fault_lab_SOURCES = share/fault-lab.c
flamekit_fault_lab_CFLAGS = $(FK_LAB_CFLAGS)
flamekit_fault_lab_LDFLAGS =
# The lab is a measuring instrument: never sanitizer-instrumented (shadow memory
# would add faults), frame pointers (no shrink-wrapping or tail calls, so the
# frame exists from the first instruction) so stacks name every function.
FK_LAB_CFLAGS = -std=gnu11 -Wall -Wextra -Wformat=2 -D_GNU_SOURCE -O2 -fno-omit-frame-pointer $(FK_NO_SHRINK_WRAP) -fno-optimize-sibling-calls
bashcompletiondir = $(datadir)/bash-completion/completions
dist_bashcompletion_DATA = share/bash-completion/flamekit
fksystemddir = $(datadir)/flamekit/systemd
dist_fksystemd_DATA = share/systemd/flamekit-host-profile.service share/systemd/flamekit-host-profile.timer share/systemd/upload.env.example share/systemd/flamekit-serve.service
