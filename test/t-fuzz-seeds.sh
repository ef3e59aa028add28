#!/usr/bin/env bash
# The fuzz targets' committed seeds (fuzz/corpus/NAME/), replayed once each
# through the target's own LLVMFuzzerTestOneInput (fuzz/replay-NAME, no
# libFuzzer), plus the empty input: in the default build, and under
# ASan+UBSan in the sanitizer build. A seed that crashes, trips a sanitizer
# or makes a target's own check abort is a FAIL. fuzz/run does the fuzzing.
# timeout: 120
. "$(dirname "$0")/lib.sh"

n=0
for src in "$FK_SRC"/fuzz/fuzz-*.c; do
    name=$(basename "$src" .c); name=${name#fuzz-}
    prog=$FK_BUILD/fuzz/replay-$name
    if [ ! -x "$prog" ]; then
        fail "$name: fuzz/replay-$name is not built (make check-programs)"
        continue
    fi
    n=$((n + 1))
    seeds=()
    [ -d "$FK_SRC/fuzz/corpus/$name" ] && seeds=("$FK_SRC/fuzz/corpus/$name"/*)
    out=$("$prog" "${seeds[@]}" 2>&1); rc=$?
    if [ $rc -ge 128 ]; then
        fail "$name: killed by signal $((rc - 128)) on its seeds" "$(printf '%s\n' "$out" | tail -n 15)"
    elif [ $rc -ne 0 ]; then
        fail "$name: exited with status $rc on its seeds" "$(printf '%s\n' "$out" | tail -n 15)"
    else
        check_eq "$name: the empty input and its ${#seeds[@]} committed seeds replay cleanly" \
            "${#seeds[@]}" "$(printf '%s\n' "$out" | grep -c '^replayed ')"
    fi
done
[ $n -gt 0 ] && pass "$n fuzz targets replayed" || fail "no fuzz targets replayed"
