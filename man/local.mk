# man pages
dist_man_MANS += man/flamekit.1
