#!/usr/bin/env bash
# timeout: 180
# The installed layout works, from the Debian packages when FK_DEB_DIR names
# where scripts/build-deb left them (unpacked with dpkg-deb -x into a
# temporary root), else from 'make install DESTDIR=' of this build: the
# binary runs and captures from there and needs no library the host may
# lack, its man pages render, the bash completion loads and completes, the
# systemd units are in place, parse and are not enabled.
. "$(dirname "$0")/lib.sh"
R=$T/root
mkdir -p "$R"
fetchd=0
if [ -n "${FK_DEB_DIR:-}" ]; then
    deb=$(ls "$FK_DEB_DIR"/flamekit_*.deb 2>/dev/null | head -n 1)
    fdeb=$(ls "$FK_DEB_DIR"/flamekit-fetchd_*.deb 2>/dev/null | head -n 1)
    if [ -z "$deb" ] || [ -z "$fdeb" ]; then
        fail "flamekit and flamekit-fetchd .deb files in $FK_DEB_DIR (scripts/build-deb makes them)" "$(ls -l "$FK_DEB_DIR" 2>&1)"
        exit 0
    fi
    for d in "$deb" "$fdeb"; do check "dpkg-deb -x $(basename "$d")" dpkg-deb -x "$d" "$R"; done
    fetchd=1
    bindir=/usr/bin mandir=/usr/share/man pkglibexecdir=/usr/libexec/flamekit
    compdir=/usr/share/bash-completion/completions unitdir=/lib/systemd/system
    want_version=$(dpkg-deb -f "$deb" Version)
else
    if ! make -s -C "$FK_BUILD" install DESTDIR="$R" >"$T/install.log" 2>&1; then
        fail "make install DESTDIR=" "$(tail -n 20 "$T/install.log")"
        exit 0
    fi
    pass "make install DESTDIR="
    eval "$(make -s -C "$FK_BUILD" -f Makefile -f - fk-print-dirs <<'MK'
fk-print-dirs:
	@echo "bindir='$(bindir)' mandir='$(mandir)' pkglibexecdir='$(pkglibexecdir)'"
	@echo "compdir='$(bashcompletiondir)' unitdir='$(systemdsystemunitdir)'"
MK
)"
    [ -x "$FK_BUILD/fetchd-sock" ] && fetchd=1
    want_version=$("$FLAMEKIT" --version | awk '{ print $2 }')
fi
FK=$R$bindir/flamekit
[ -x "$FK" ] || { fail "flamekit installed in $bindir" "$(find "$R" -type f | head -n 30)"; exit 0; }

# --- the binary: version, libraries ---
v=$("$FK" --version 2>&1)
check_grep "installed flamekit --version: $want_version, libperf's source" \
    "^flamekit ${want_version//./\\.}([- ][^ ]*)? \(libperf from linux-source 6\.12\." "$v"
needed=$(readelf -d "$FK" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
check_nogrep "libcurl, libdebuginfod, libcrypto, Nettle, libmicrohttpd, GnuTLS, libelf, libdw, liblzma, libbpf and gRPC are not linked (loaded when needed, or fetchd's)" \
    'libcurl|libdebuginfod|libcrypto|libnettle|libmicrohttpd|libgnutls|libelf|libdw|liblzma|libbpf|libgrpc|libgpr' "$needed"
check_nogrep "every library flamekit needs is on this host" 'not found' "$(ldd "$FK" 2>&1)"

if [ -n "${FK_DEB_DIR:-}" ]; then
    dep=$(dpkg-deb -f "$deb" Depends)
    for lib in libelf1 libdw1 liblzma5 libbpf1; do
        check_grep "flamekit Depends on $lib (loaded at run time, not linked)" "(^|[ ,])$lib([ ,(]|\$)" "$dep"
    done
    # every library the binary links comes with a Depends on its package
    for so in $needed; do
        pkg=$(dpkg -S "/lib/x86_64-linux-gnu/$so" 2>/dev/null | head -n 1 | cut -d: -f1)
        [ -n "$pkg" ] || pkg=$(dpkg -S "/usr/lib/x86_64-linux-gnu/$so" 2>/dev/null | head -n 1 | cut -d: -f1)
        case $pkg in libc6|'') continue ;; esac
        check_grep "flamekit Depends on $pkg (it links $so)" "(^|[ ,])$pkg([ ,(]|\$)" "$dep"
    done
    check_nogrep "flamekit does not Depend on libcurl" 'libcurl' "$dep"
    rec=$(dpkg-deb -f "$deb" Recommends)
    check_grep "flamekit Recommends libcurl4 (for upload)" 'libcurl4' "$rec"
    check_grep "flamekit Recommends libmicrohttpd12 and libgnutls30 (for serve)" 'libmicrohttpd12.*libgnutls30|libgnutls30.*libmicrohttpd12' "$rec"
    check_grep "flamekit Recommends libnettle8 (SHA-256 for upload and serve)" 'libnettle8' "$rec"
    check_nogrep "flamekit does not Depend on libmicrohttpd" 'libmicrohttpd' "$dep"
    check_grep "flamekit Built-Using names the kernel source of libperf" '^linux(-6\.12)? \(= 6\.12\.' \
        "$(dpkg-deb -f "$deb" Built-Using)"
    check_grep "flamekit-fetchd Depends on gRPC and git" 'libgrpc.*git|git.*libgrpc' "$(dpkg-deb -f "$fdeb" Depends)"
    check_nogrep "nothing installed under /usr/local" '/usr/local' "$(dpkg-deb -c "$deb"; dpkg-deb -c "$fdeb")"
fi

# --- a real capture from the installed binary ---
if [ "$(id -u)" -ne 0 ]; then
    skip "installed flamekit host -d 5" "needs root for perf_event_open on all CPUs"
else
    timeout -k 5 90 "$FK" host -d 5 -o "$T/out" >"$T/host.log" 2>&1
    rc=$?
    if [ $rc -eq 0 ]; then pass "installed flamekit host -d 5 exits 0"
    else fail "installed flamekit host -d 5 exits 0 (rc $rc; 124: still running after 90 s)" "$(tail -n 5 "$T/host.log")"; fi
    for ext in flamegraph.svg folded.gz json; do
        n=$(find "$T/out" -name "*.host.$ext" | wc -l)
        check_eq "flamekit host -d 5 wrote one .$ext" 1 "$n"
    done
    svg=$(find "$T/out" -name '*.flamegraph.svg' | head -n 1)
    check_grep "the SVG has its embedded script" '<script' "${svg:-/dev/null}"
    json=$(find "$T/out" -name '*.json' | head -n 1)
    check_grep "the metadata records the installed version" "\"version\": *\"${want_version//./\\.}" "${json:-/dev/null}"
fi

# --- man pages ---
page=$(find "$R$mandir/man1" -name 'flamekit-record.1*' | head -n 1)
if [ -z "$page" ]; then
    fail "flamekit-record(1) installed in $mandir/man1" "$(ls "$R$mandir/man1" 2>&1)"
elif need man; then
    out=$(MANPATH=$R$mandir MANWIDTH=80 man -P cat flamekit-record 2>&1)
    check_grep "man flamekit-record renders from the installed tree" '^SYNOPSIS' "$out"
    check_grep "man flamekit-record shows its commands" 'flamekit host' "$out"
    # The pages are the same files whatever the build (about 0.2 s of CPU
    # each to render): the plain build's suite, distcheck and the packages
    # render them all, the sanitized suite need not.
    if sanitized; then
        skip "every installed man page renders without a message" "sanitizer build: the plain build's runs render them"
    else
        bad=""
        for p in "$R$mandir"/man1/*; do
            o=$(MANWIDTH=80 man -l -P cat "$p" 2>&1 >/dev/null) || bad="$bad $(basename "$p")"
            [ -z "$o" ] || bad="$bad $(basename "$p"):$o"
        done
        check_eq "every installed man page renders without a message" "" "$bad"
    fi
else
    skip "man renders" "man not installed: apt-get install man-db"
fi

# --- bash completion ---
comp=$R$compdir/flamekit
if [ ! -f "$comp" ]; then
    fail "bash completion installed as $compdir/flamekit" "$(ls "$R$compdir" 2>&1)"
else
    out=$(bash --norc --noprofile -c '
        . "$1" || exit 1
        complete -p flamekit
        COMP_WORDS=("$2" ho); COMP_CWORD=1; _flamekit; echo "commands: ${COMPREPLY[*]}"
        COMP_WORDS=("$2" host --dur); COMP_CWORD=2; _flamekit; echo "options: ${COMPREPLY[*]}"
    ' _ "$comp" "$FK" 2>&1)
    check_grep "completion loads and registers _flamekit" '^complete -F _flamekit flamekit$' "$out"
    check_grep "completion completes a command from the installed binary" '^commands: host$' "$out"
    check_grep "completion completes an option" '^options: --duration$' "$out"
fi

# --- systemd units: present, parse, not enabled ---
units="flamekit-host-profile.service flamekit-host-profile.timer"
for u in $units; do
    check "$u installed in $unitdir" test -f "$R$unitdir/$u"
done
if [ -n "${FK_DEB_DIR:-}" ] && need systemctl && need deb-systemd-helper; then
    # Run the package's postinst the way dpkg would, against the unpacked
    # root (DPKG_ROOT): the timer stays disabled, the service is static.
    mkdir -p "$T/ctl"
    dpkg-deb -e "$deb" "$T/ctl"
    if [ -f "$T/ctl/postinst" ]; then
        DPKG_ROOT=$R DPKG_MAINTSCRIPT_PACKAGE=flamekit DPKG_MAINTSCRIPT_NAME=postinst \
            sh "$T/ctl/postinst" configure '' >"$T/postinst.log" 2>&1
        check_eq "postinst configure exits 0 (DPKG_ROOT=unpacked root)" 0 "$?"
    fi
    check_grep "systemctl --root lists both units" \
        'flamekit-host-profile.service +static.*flamekit-host-profile.timer +disabled' \
        "$(systemctl --root="$R" list-unit-files 'flamekit*' 2>&1 | tr '\n' ' ')"
    check_eq "the timer is disabled after installation" disabled \
        "$(systemctl --root="$R" is-enabled flamekit-host-profile.timer 2>&1)"
    # The control: enabling it is seen (the check above can fail).
    DPKG_ROOT=$R DPKG_MAINTSCRIPT_PACKAGE=flamekit deb-systemd-helper enable flamekit-host-profile.timer >/dev/null 2>&1
    check_eq "an enabled timer is seen as enabled (control)" enabled \
        "$(systemctl --root="$R" is-enabled flamekit-host-profile.timer 2>&1)"
elif [ -n "${FK_DEB_DIR:-}" ]; then
    skip "postinst leaves the timer disabled" "systemctl or deb-systemd-helper not installed"
else
    check_eq "no unit enabled by make install (nothing under /etc/systemd)" "" \
        "$(find "$R/etc/systemd" 2>/dev/null)"
fi
verify_units "systemd-analyze verify the installed service and timer" "$R$unitdir" "$FK"

# --- the fetch servers ---
if [ $fetchd = 1 ]; then
    for p in fetchd-grpc fetchd-sock fetchd-client fetch-bench; do
        check_grep "installed $p --version" "^$p \(flamekit\) " "$("$R$bindir/$p" --version 2>&1)"
        check "$p(1) installed" test -n "$(find "$R$mandir/man1" -name "$p.1*")"
    done
    check_grep "fetch-bench's allocation counter installed in $pkglibexecdir" 'Type: +DYN' \
        "$(readelf -h "$R$pkglibexecdir/fetchd-malloc.so" 2>&1)"
else
    check_eq "no fetch server installed in a --disable-fetchd build" "" "$(ls "$R$bindir" | grep -E '^fetch')"
fi
