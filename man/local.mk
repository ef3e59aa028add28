# man pages
dist_man_MANS += man/flamekit.1
dist_man_MANS += man/flamekit-svg.1
dist_man_MANS += man/flamekit-diff.1
dist_man_MANS += man/flamekit-collapse.1
dist_man_MANS += man/flamekit-upload.1
dist_man_MANS += man/flamekit-remote.1
dist_man_MANS += man/flamekit-merge.1
