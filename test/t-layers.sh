#!/usr/bin/env bash
# The library's layout is its architecture (the brief): data flows one way,
# target -> capture -> symbolize/unwind -> aggregate -> render -> deliver,
# and no stage includes a later one; the runners sit above the stages
# (engine: one capture through them; profile: capture -> render -> deliver;
# serve: profiles on request). This reads every #include "dir/..." of
# src/lib and fails on one that reaches up, or into a directory the table
# below does not place. The checker is first run on a copy of the tree
# with a backward include planted, to show that it can fail.
. "$(dirname "$0")/lib.sh"

# rank of each directory of src/lib: a file may include its own directory
# and lower ranks only. symbols/ and unwind/ are one stage (the unwinder
# asks the symbolizer for CFI, the symbolizer knows the registers).
RANKS='util=0 capture=1 symbols=2 unwind=2 stacks=3 render=4 deliver=5 engine=6 profile=7 serve=8'

# check_layers LIBDIR: one line per include that breaks the order
# ("file: includes dir/x.h (a is above b)"); nothing when all is well.
# The target stage (capture/target.[ch]) is the first: util/ and itself.
check_layers() {
    (cd "$1" && grep -H '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' */*.[ch] /dev/null) |
        awk -v ranks="$RANKS" '
        BEGIN { n = split(ranks, kv, " "); for (i = 1; i <= n; i++) { split(kv[i], p, "="); rank[p[1]] = p[2] } }
        {
            file = $0; sub(/:.*/, "", file)
            inc = $0; sub(/^[^"]*"/, "", inc); sub(/".*/, "", inc)
            dir = file; sub(/\/.*/, "", dir)
            if (!(dir in rank)) { if (!(dir in told)) print file ": directory " dir " has no place in the layer table (test/t-layers.sh)"; told[dir] = 1; next }
            if (file ~ /^capture\/target\.[ch]$/ && inc !~ /^util\// && inc != "capture/target.h") {
                print file ": the target stage includes " inc; next
            }
            if (inc !~ /\//) next                     # its own directory
            idir = inc; sub(/\/.*/, "", idir)
            if (!(idir in rank)) print file ": includes " inc ", from no known layer"
            else if (rank[idir] > rank[dir]) print file ": includes " inc " (" idir " is above " dir ")"
        }'
}

# The checker can fail: a copy of the tree with one backward include in
# capture/ and one in target.c.
cp -r "$FK_SRC/src/lib" "$T/lib"
printf '#include "symbols/symbols.h"\n' >>"$T/lib/capture/ring.c"
printf '#include "capture/ring.h"\n' >>"$T/lib/capture/target.c"
planted=$(check_layers "$T/lib")
check_grep "the checker finds a stage including a later one" 'capture/ring\.c: includes symbols/symbols\.h' "$planted"
check_grep "the checker finds the target stage including capture" 'capture/target\.c: the target stage includes capture/ring\.h' "$planted"
mkdir "$T/lib/newdir" && printf '#include "util/fk.h"\n' >"$T/lib/newdir/x.c"
check_grep "the checker names a directory with no layer" 'newdir/x\.c: directory newdir has no place' "$(check_layers "$T/lib")"

# The tree itself.
check_eq "no stage of src/lib includes a later one" "" "$(check_layers "$FK_SRC/src/lib")"
# capture/ in particular: the engine (src/lib/engine) ties it to the later stages
check_eq "capture/ includes only util/ and capture/" "" \
    "$(grep -h '^#include "' "$FK_SRC"/src/lib/capture/*.[ch] | grep -v '"util/\|"capture/\|"[^/]*"$')"
