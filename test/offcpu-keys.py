#!/usr/bin/env python3
# Off-CPU profiles as comparable shares, for test/t-offcpu.sh and
# bench/offcpu.sh: flamekit offcpu's folded stacks and the reference
# bpftrace program's output (test/offcpu-ref.bt) both become
# "kernel stack -> share of blocked time", the kernel stack from the
# outermost frame to __schedule (both read it with the kernel's unwinder,
# so a difference is a difference in the accounting, not in unwinding).
#
#   offcpu-keys.py folded FILE.folded.gz     KEY<TAB>NS lines
#   offcpu-keys.py bpftrace FILE             the same from bpftrace's output
#   offcpu-keys.py compare A B [N]           top-N keys of A (by share): the
#                                            largest share difference in
#                                            points, then one line per key
import gzip
import re
import sys


def kernel_key(frames):
    """frames root->leaf names; the kernel part up to __schedule."""
    k = [f for f in frames]
    if "__schedule" in k:
        k = k[:k.index("__schedule") + 1]
    return ";".join(k) if k else "[no kernel stack]"


def folded(path):
    sums = {}
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", errors="replace") as f:
        for line in f:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            if not stack:
                continue
            frames = stack.split(";")[1:]
            if "--" in frames:              # --wakers: the blocked part only
                frames = frames[:frames.index("--")]
            if frames and frames[0] == "[on-CPU]":
                continue
            kern = [fr[:-4] for fr in frames if fr.endswith("_[k]")]
            key = kernel_key(kern)
            sums[key] = sums.get(key, 0) + int(count)
    return sums


def bpftrace(path):
    sums = {}
    entry = None
    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("@off["):
                entry = {"part": 0, "k": []}
                continue
            if entry is None:
                continue
            m = re.match(r"^\]: (\d+)$", line)
            if m:
                key = kernel_key(list(reversed(entry["k"])))
                sums[key] = sums.get(key, 0) + int(m.group(1))
                entry = None
            elif line.strip() == ",":
                entry["part"] += 1
            elif entry["part"] == 0 and line.strip():
                entry["k"].append(re.sub(r"\+\d+$", "", line.strip()))
    return sums


def shares(s):
    tot = sum(s.values()) or 1
    return {k: 100.0 * v / tot for k, v in s.items()}


def load(path):
    return folded(path) if ".folded" in path else bpftrace(path)


def main():
    if sys.argv[1] == "folded":
        for k, v in sorted(folded(sys.argv[2]).items(), key=lambda kv: -kv[1]):
            print(f"{k}\t{v}")
    elif sys.argv[1] == "bpftrace":
        for k, v in sorted(bpftrace(sys.argv[2]).items(), key=lambda kv: -kv[1]):
            print(f"{k}\t{v}")
    elif sys.argv[1] == "compare":
        a, b = shares(load(sys.argv[2])), shares(load(sys.argv[3]))
        n = int(sys.argv[4]) if len(sys.argv) > 4 else 10
        top = sorted(a, key=lambda k: -a[k])[:n]
        worst = max((abs(a[k] - b.get(k, 0.0)) for k in top), default=100.0)
        print(f"{worst:.2f}")
        for k in top:
            print(f"{a[k]:6.2f} {b.get(k, 0.0):6.2f}  {k[-120:]}")
    else:
        sys.exit("usage: offcpu-keys.py folded|bpftrace FILE | compare A B [N]")


main()
