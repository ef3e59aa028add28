#!/usr/bin/env bash
# Runs the C unit-test programs built by 'make check' (test/unit-*). Their
# own PASS/FAIL lines count, and so does how they end: a program that exits
# non-zero or dies by a signal (an ASan report after some PASS lines) is a
# FAIL even if it printed none.
. "$(dirname "$0")/lib.sh"

# run_unit PROGRAM: its lines, then a FAIL line unless it exited 0.
run_unit() {
    local name rc
    name=$(basename "$1")
    "$1"; rc=$?
    if [ $rc -ge 128 ]; then fail "$name: killed by signal $((rc - 128))"
    elif [ $rc -ne 0 ]; then fail "$name: exited with status $rc"
    else pass "$name: exited 0"; fi
}

# The check itself can fail: a program that passes a check and then
# crashes, and one that exits 1 quietly, must each give a FAIL.
printf '#!/bin/sh\necho "PASS: fake: a check"\nkill -SEGV $$\n' >"$T/unit-crash"
printf '#!/bin/sh\necho "PASS: fake: a check"\nexit 1\n' >"$T/unit-exit1"
chmod +x "$T/unit-crash" "$T/unit-exit1"
check_grep "a unit program killed by a signal is a FAIL" '^FAIL: .*unit-crash: killed by signal 11' "$(run_unit "$T/unit-crash")"
check_grep "a unit program that exits 1 is a FAIL" '^FAIL: .*unit-exit1: exited with status 1' "$(run_unit "$T/unit-exit1")"

n=0
for u in "$FK_BUILD"/test/unit-*; do
    [ -x "$u" ] || continue
    n=$((n + 1))
    run_unit "$u"
done
[ $n -gt 0 ] && pass "$n unit programs ran" || fail "no unit programs in $FK_BUILD/test (make check-programs)"

# The library never writes to the terminal (src/cmd/term.h prints for the
# programs): no member of libflamekit.a names stdout or stderr, a printing
# function, or the programs' terminal. The one exception is fk_die in
# util/fk.c (out of memory, an internal limit: the process ends).
if need nm && [ -f "$FK_BUILD/libflamekit.a" ]; then
    talk='stdout|stderr|printf|__printf_chk|vprintf|__vprintf_chk|puts|putchar|perror|psignal|warn|warnx|err|errx|fk_warn|fk_error|fk_warn_line|fk_opt_error|fk_opt_parse'
    bad=$(nm -A -u "$FK_BUILD/libflamekit.a" 2>/dev/null |
          awk -v re="^($talk)$" '{ n = $NF; sub(/@.*/, "", n) }
               n ~ re && !(n == "stderr" && $1 ~ /:libflamekit_a-fk\.o:$/) { print $1, n }' | sort -u)
    check_eq "the library writes nothing to the terminal (libflamekit.a's undefined symbols)" "" "$bad"
    check_grep "the check sees the one exception (fk_die's stderr in util/fk.c)" 'libflamekit_a-fk\.o:.* stderr' \
        "$(nm -A -u "$FK_BUILD/libflamekit.a" 2>/dev/null)"
else
    skip "the library writes nothing to the terminal" "no nm or no libflamekit.a"
fi
