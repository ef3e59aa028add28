# man pages
dist_man_MANS += man/flamekit.1
dist_man_MANS += man/flamekit-remote.1
dist_man_MANS += man/flamekit-merge.1
