#!/usr/bin/env bash
# t-offcpu on the fallback path: switch-ins from the kernel's
# context-switch records (flamekit offcpu --no-bpf), as on a host where the
# in-kernel program cannot load; every check of t-offcpu holds on both.
# timeout: 420
FK_TEST_NAME=t-offcpu-records FK_TEST_OFFCPU_PATH=records exec bash "$(dirname "$0")/t-offcpu.sh" "$@"
