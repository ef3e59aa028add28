# man pages
dist_man_MANS += man/flamekit.1
dist_man_MANS += man/fetchd-grpc.1
dist_man_MANS += man/fetchd-sock.1
dist_man_MANS += man/fetchd-client.1
dist_man_MANS += man/fetch-bench.1
