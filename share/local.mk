# share: SVG script/style (compiled in), completion, systemd
bin_PROGRAMS += flamekit-fault-lab
flamekit_fault_lab_SOURCES = share/fault-lab.c
flamekit_fault_lab_CFLAGS = $(FK_LAB_CFLAGS)
flamekit_fault_lab_LDFLAGS =
flamekit_fault_lab_LDADD =
# The lab is a measuring instrument: never sanitizer-instrumented (shadow memory
# would add faults), frame pointers (no shrink-wrapping or tail calls, so the
# frame exists from the first instruction) so stacks name every function.
FK_LAB_CFLAGS = -std=gnu11 -Wall -Wextra -Wformat=2 -D_GNU_SOURCE -O2 -fno-omit-frame-pointer $(FK_NO_SHRINK_WRAP) -fno-optimize-sibling-calls
bashcompletiondir = $(datadir)/bash-completion/completions
dist_bashcompletion_DATA = share/bash-completion/flamekit
# The units go to --with-systemdsystemunitdir (default: next to the example
# environment file, for the admin to copy; see flamekit-upload(1)).
dist_systemdsystemunit_DATA = share/systemd/flamekit-host-profile.service
dist_systemdsystemunit_DATA += share/systemd/flamekit-host-profile.timer
fkexampledir = $(datadir)/flamekit/systemd
dist_fkexample_DATA = share/systemd/upload.env.example
dist_systemdsystemunit_DATA += share/systemd/flamekit-serve.service
