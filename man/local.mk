# man pages
dist_man_MANS += man/flamekit.1
dist_man_MANS += man/flamekit-record.1
dist_man_MANS += man/flamekit-host.1
dist_man_MANS += man/flamekit-pid.1
dist_man_MANS += man/flamekit-user.1
dist_man_MANS += man/flamekit-cgroup.1
dist_man_MANS += man/flamekit-run.1
