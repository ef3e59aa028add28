#!/usr/bin/env bash
# Every command has a man page; every man page is mandoc -Tlint clean;
# make install puts them (and the binary) in place.
. "$FK_SRC/test/lib.sh"
for c in $("$FLAMEKIT" --help | awk '/^Commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 }'); do
    [ "$c" = version ] && continue
    if [ -f "$FK_SRC/man/flamekit-$c.1" ]; then pass "man page for $c"; else fail "man page for $c missing (man/flamekit-$c.1)"; fi
done
if need mandoc; then
    for m in "$FK_SRC"/man/*.[15]; do
        o=$(mandoc -Tlint -W warning "$m" 2>&1)
        if [ -z "$o" ]; then pass "mandoc -Tlint $(basename "$m")"; else fail "mandoc -Tlint $(basename "$m")" "$o"; fi
    done
else
    skip "mandoc lint" "mandoc not installed"
fi
# Every man page is installed by make install.
if make -s -C "$FK_BUILD" install DESTDIR="$T/inst" >"$T/install.log" 2>&1; then
    pass "make install"
    missing=""
    for m in "$FK_SRC"/man/*.[15]; do
        [ -n "$(find "$T/inst" -name "$(basename "$m")*" -path "*man[15]*")" ] || missing="$missing $(basename "$m")"
    done
    check_eq "make install installs every man page" "" "$missing"
    check "make install installs flamekit" test -x "$(find "$T/inst" -path '*/bin/flamekit' | head -1)"
else
    fail "make install" "$(tail -5 "$T/install.log")"
fi
