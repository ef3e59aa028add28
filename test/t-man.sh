#!/usr/bin/env bash
# Every command has a man page; every man page is mandoc -Tlint clean;
# make install puts them (and the binary) in place.
. "$(dirname "$0")/lib.sh"
for c in $("$FLAMEKIT" --help | awk '/^Commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 }'); do
    [ "$c" = version ] && continue
    if [ -f "$FK_SRC/man/flamekit-$c.1" ]; then pass "man page for $c"; else fail "man page for $c missing (man/flamekit-$c.1)"; fi
    # NAME says flamekit-$c (for whatis); a bare .Nm would print that as the command.
    [ -f "$FK_SRC/man/flamekit-$c.1" ] &&
        check_nogrep "flamekit-$c.1 names the command 'flamekit $c' (no bare .Nm)" '^\.Nm$' "$FK_SRC/man/flamekit-$c.1"
done
if need mandoc; then
    for m in "$FK_SRC"/man/*.[15]; do
        o=$(mandoc -Tlint -W warning "$m" 2>&1)
        if [ -z "$o" ]; then pass "mandoc -Tlint $(basename "$m")"; else fail "mandoc -Tlint $(basename "$m")" "$o"; fi
    done
else
    skip "mandoc lint" "mandoc not installed"
fi
# apropos/whatis find every page under its file's name (lintian's
# bad-whatis-entry): NAME is "flamekit-host", the synopsis "flamekit host".
if need lexgrog; then
    for m in "$FK_SRC"/man/*.[15]; do
        n=$(basename "$m"); n=${n%.[15]}
        check_grep "whatis entry of $n" "^[^:]*: \"$n - " "$(lexgrog "$m" 2>&1)"
    done
else
    skip "whatis entries" "lexgrog not installed: apt-get install man-db"
fi
# Every man page is installed by make install.
if make -s -C "$FK_BUILD" install DESTDIR="$T/inst" >"$T/install.log" 2>&1; then
    pass "make install"
    missing=""
    for m in "$FK_SRC"/man/*.[15]; do
        # The fetch servers' pages come with them (not in a --disable-fetchd build).
        case $(basename "$m") in fetch*) [ -x "$FK_BUILD/fetchd-sock" ] || continue ;; esac
        [ -n "$(find "$T/inst" -name "$(basename "$m")*" -path "*man[15]*")" ] || missing="$missing $(basename "$m")"
    done
    check_eq "make install installs every man page" "" "$missing"
    check "make install installs flamekit" test -x "$(find "$T/inst" -path '*/bin/flamekit' | head -1)"
else
    fail "make install" "$(tail -5 "$T/install.log")"
fi
