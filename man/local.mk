# man pages
dist_man_MANS += man/flamekit.1
dist_man_MANS += man/flamekit-fault-lab.1
dist_man_MANS += man/flamekit-faults.1
dist_man_MANS += man/flamekit-offcpu.1
dist_man_MANS += man/flamekit-record.1
dist_man_MANS += man/flamekit-host.1
dist_man_MANS += man/flamekit-pid.1
dist_man_MANS += man/flamekit-user.1
dist_man_MANS += man/flamekit-cgroup.1
dist_man_MANS += man/flamekit-run.1
dist_man_MANS += man/flamekit-svg.1
dist_man_MANS += man/flamekit-diff.1
dist_man_MANS += man/flamekit-collapse.1
dist_man_MANS += man/flamekit-upload.1
dist_man_MANS += man/flamekit-remote.1
dist_man_MANS += man/flamekit-merge.1
# The fetch servers' pages are installed with them and shipped either way
# (a conditional dist_man_MANS would not be shipped without gRPC).
EXTRA_DIST += man/fetchd-grpc.1
EXTRA_DIST += man/fetchd-sock.1
EXTRA_DIST += man/fetchd-client.1
EXTRA_DIST += man/fetch-bench.1
if FK_FETCHD
man_MANS += man/fetchd-grpc.1
man_MANS += man/fetchd-sock.1
man_MANS += man/fetchd-client.1
man_MANS += man/fetch-bench.1
endif
dist_man_MANS += man/flamekit-metadata.5
dist_man_MANS += man/flamekit-serve.1
