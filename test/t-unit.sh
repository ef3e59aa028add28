#!/usr/bin/env bash
# Runs the C unit-test programs built by 'make check' (test/unit-*).
. "$FK_SRC/test/lib.sh"
for u in "$FK_BUILD"/test/unit-*; do
    [ -x "$u" ] || continue
    "$u" || true    # its own PASS/FAIL lines are the result
done
