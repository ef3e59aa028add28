#!/usr/bin/env bash
# Repository hygiene: only the product is tracked. A tracked editor backup,
# swap file, merge leftover or personal note fails here; only the ChangeLog
# is merged with merge=union (a union merge duplicates lines of code lists).
. "$(dirname "$0")/lib.sh"

# stray NAME...: the names that look like editor/backup/merge/note files.
stray() {
    printf '%s\n' "$@" | grep -E '(^|/)(#[^/]*#|\.#[^/]*|[^/]*~|[^/]*\.(swp|swo|orig|rej|bak|tmp)|[^/]*\.tmp\.[0-9]+|NOTES?([-_.][^/]*)?|[^/]*-NOTES?(\.[^/]*)?|scratch[^/]*)$' || true
}
check_eq "the pattern catches strays" \
    "configure~ src/.#x.c src/#x.c# a.c.swp NOTE-FROM-LEAD.md x.orig y.rej out.svg.tmp.123 NOTES" \
    "$(stray configure~ src/.#x.c src/#x.c# a.c.swp NOTE-FROM-LEAD.md x.orig y.rej out.svg.tmp.123 NOTES src/notes.c README | tr '\n' ' ' | sed 's/ $//')"

# A tarball unpacked inside a clone (make distcheck) is inside that clone's
# work tree but is not its top: only a checkout of its own is checked.
top=$(git -C "$FK_SRC" rev-parse --show-toplevel 2>/dev/null)
if [ -z "$top" ] || [ "$(cd "$top" && pwd -P)" != "$(cd "$FK_SRC" && pwd -P)" ]; then
    skip "tracked files" "$FK_SRC is not a git checkout of its own (a tarball)"
    exit 0
fi
mapfile -t files < <(git -C "$FK_SRC" ls-files)
check_eq "no editor backups, swap files, merge leftovers or notes are tracked" "" "$(stray "${files[@]}")"
unions=$(git -C "$FK_SRC" ls-files | git -C "$FK_SRC" check-attr --stdin merge | awk -F': ' '$3 == "union" { print $1 }')
check_eq "merge=union only for the ChangeLog" "ChangeLog" "$unions"
