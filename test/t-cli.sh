#!/usr/bin/env bash
# The dispatcher: help, version, unknown commands.
. "$(dirname "$0")/lib.sh"
check_grep "--help lists commands" '^Commands:' "$("$FLAMEKIT" --help)"
# The version: scripts/version's (configure.ac's release refined by git
# describe), then what libperf was built from (configure, build-libperf's stamp).
v=$("$FLAMEKIT" --version)
check_eq "--version prints scripts/version's version" "$(sh "$FK_SRC/scripts/version" "$FK_SRC")" \
    "$(printf '%s\n' "$v" | sed -n 's/^flamekit \([^ ]*\) (libperf from .*)$/\1/p')"
check_grep "--version names the kernel source libperf was built from" \
    '^flamekit [0-9]+\.[0-9]+\.[0-9]+[^ ]* \(libperf from linux-source 6\.12\.[0-9]+[^ ]*\)$' "$v"
out=$("$FLAMEKIT" frobnicate 2>&1); rc=$?
check_eq "unknown command exits 2" 2 "$rc"
check_grep "unknown command names itself and --help" "'frobnicate' is not a flamekit command; see 'flamekit --help'" "$out"
out=$("$FLAMEKIT" 2>&1); rc=$?
check_eq "no command exits 2" 2 "$rc"
# Every command in --help answers --help with its own usage and exit 0.
for c in $("$FLAMEKIT" --help | awk '/^Commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 }'); do
    o=$("$FLAMEKIT" "$c" --help 2>&1); rc=$?
    if [ $rc -eq 0 ] && [ -n "$o" ]; then pass "$c --help"; else fail "$c --help (rc $rc)" "$o"; fi
done
# Bash completion reads the generated --help: commands, options, and which
# options take a path (their placeholder says FILE or DIR).
comp() { # comp WORD...: the completions of the last word
    (cd "$T" && PATH=$(dirname "$FLAMEKIT"):$PATH bash -c '. "$1"; shift
        COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _flamekit; printf "%s\n" "${COMPREPLY[@]}"' \
        comp "$FK_SRC/share/bash-completion/flamekit" flamekit "$@" 2>/dev/null | sort | tr '\n' ' ')
}
mkdir -p "$T/somedir"
check_grep "completion: commands" '(^| )faults ' "$(comp fa)"
check_eq "completion: a capture option from the table" "--max-memory " "$(comp host --max-m)"
check_eq "completion: -o DIR completes paths" "somedir " "$(comp host -o som)"
check_eq "completion: an option of faults only" "--user-only " "$(comp faults --user)"
