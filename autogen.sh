#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# Generate configure and the Makefile.in files in a git checkout (a release
# tarball has them): ./autogen.sh && ./configure && make (or make distcheck).
set -eu
cd "$(dirname "$0")"
autoreconf -fi || {
    echo "autogen.sh: autoreconf failed; apt-get install autoconf automake pkg-config" >&2
    exit 1
}
