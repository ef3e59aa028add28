# man pages
dist_man_MANS += man/flamekit.1
dist_man_MANS += man/flamekit-fault-lab.1
dist_man_MANS += man/flamekit-faults.1
