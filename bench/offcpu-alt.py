# SPDX-License-Identifier: GPL-2.0-only
# The switch storm's throughput lost under flamekit offcpu, the profiled
# storm alternating within each window (bench/offcpu.sh, part "alt"): the
# lower-noise form of offcpu-paired.py's figure.
#
#   python3 offcpu-alt.py TRUTH WINDOWS WINDOW_S SWITCH_S[,SWITCH_S...] CGROUP_ROOT FLAMEKIT [BASELINE [THIRD]]
#   python3 offcpu-alt.py --keep DIR      (the summary again, from a kept run)
#
# WINDOW_S is each window's phases, rounded down to whole groups of four
# (8 s at 0.5 s: 16 phases); flamekit runs EDGE_S longer at each end.
#
# Why: offcpu-paired.py's q (one storm profiled for a whole window, the
# other the control) carries the two vCPUs' speed ratio, which wanders
# slowly here (session 22: correlation 0.93 over 0.5 s, 0.59 over 6 s), so
# the two windows of a round, seconds apart, do not cancel it and longer
# windows do not narrow the figure (sd 0.15 at 1 s, 0.11 at 8 s). Here the
# roles swap every SWITCH_S inside one window, where the ratio has not
# moved yet.
#
# How: two storms (TRUTH storm), one pinned to each of the first two CPUs
# at the least CPU weight (offcpu-paired.py's least_weight: v2 cpu.weight 1
# or v1 cpu.shares 2), each in a cgroup v2 of its own under CGROUP_ROOT (a
# v2 directory); a third, "prof", is flamekit's target (`offcpu cgroup`)
# for a whole window, and the bench moves the storms between their own
# cgroups and prof: one in prof at a time, in the order A B B A A B B A ...
# (a multiple of four phases, so a drift linear over four phases cancels
# too), A being copy 0 or 1 by turns from window to window. The moves
# change no CPU weight (prof has the least weight too where v2 has one;
# v1's cpu cgroups are not touched), both storms make the same number of
# them, and the bench's own CPU, taken from either storm, is not in a rate
# per CPU second. "none" windows make the same moves with no flamekit
# (the method's own noise: centred on 1 by symmetry). Windows run fk none
# none fk ..., each SWITCH_S of the list for four windows in turn; with
# BASELINE (another build's flamekit, e.g. main's) fk base none none base
# fk ..., six windows a turn, and the difference of the two builds' losses
# per group of six; with THIRD too (fk2: a setting of FLAMEKIT's, say) fk
# base fk2 none none fk2 base fk, eight a turn. FLAMEKIT and BASELINE may carry offcpu's options after
# the binary ("build/flamekit --switch-budget 1000").
#
# Per phase x = log(rate of the copy in prof / the other's), round trips
# per CPU second from the storms' 100 ms ticks (the first SKIP_S after a
# phase starts left out); a window's log g is its phases' mean, its
# interval a bootstrap over its groups of four. 1 - g is what the profiled
# storm loses against one whose switches the program only filters out
# (flamekit's own CPU, taken from both, cancels: offcpu-paired.py reports
# it). A storm profiled alone also pays the filter: after the windows,
# flamekit runs once on the empty prof with kernel.bpf_stats_enabled on,
# giving the program's time per filtered switch (the stats' own two clock
# reads included: an upper bound); times the storms' switch-outs per CPU
# second in the "none" windows (two a round trip) that is the share of an
# unprofiled storm's CPU the filter costs, added to the loss. The stats'
# own cost (two clock reads a run, ~76 ns a hit on this VM) is timed in
# the same windows: an empty raw tracepoint program the bench attaches
# to sched_switch beside flamekit's, whose time a hit is nothing but
# that; the filter's cost is given with it and without (the program's
# own). What the kernel does around a program is not timed: a tracepoint
# program's perf record, built at every switch, or a raw tracepoint's
# call.
#
# flamekit's own CPU in each window (its threads' CPU time from ready to
# the window's end, % of a core) is printed per window and summed up.
#
# FK_BENCH_PAIRED_KEEP=DIR keeps the ticks and phases for --keep.
import json
import math
import os
import select
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import importlib.util
import ctypes
import struct

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pybench import boot_mean, rate  # noqa: E402  (one of each)
_spec = importlib.util.spec_from_file_location(
    "offcpu_paired", os.path.join(os.path.dirname(os.path.abspath(__file__)), "offcpu-paired.py"))
P = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(P)   # its storm, weight, tracepoint and stats helpers

# ticks after a phase starts before its rate counts (half a tick)
SKIP_S = 0.05
# flamekit's window is this much longer than the phases (its start and end)
EDGE_S = 0.2
# the stats window's length
STATS_S = 2.0


def empty_program():
    """(prog fd, link fd) of an empty program (r0 = 0; exit) on the raw
    tracepoint sched_switch, loaded through bpf(2), or None"""
    libc = ctypes.CDLL(None, use_errno=True)
    nr_bpf = {"x86_64": 321, "aarch64": 280}.get(os.uname().machine)
    if nr_bpf is None:
        return None
    insns = ctypes.create_string_buffer(struct.pack("<BBhiBBhi", 0xb7, 0, 0, 0, 0x95, 0, 0, 0), 16)
    lic = ctypes.create_string_buffer(b"GPL")
    # union bpf_attr for BPF_PROG_LOAD (5): prog_type 17 (RAW_TRACEPOINT),
    # insn_cnt, insns, license, log_level/size/buf, kern_version, prog_flags, prog_name
    attr = ctypes.create_string_buffer(struct.pack(
        "=IIQQIIQII16s", 17, 2, ctypes.addressof(insns), ctypes.addressof(lic), 0, 0, 0, 0, 0,
        b"fk_bench_empty").ljust(128, b"\0"), 128)
    prog = libc.syscall(nr_bpf, 5, attr, 128)
    if prog < 0:
        return None
    name = ctypes.create_string_buffer(b"sched_switch")
    # BPF_RAW_TRACEPOINT_OPEN (17): name, prog_fd
    attr = ctypes.create_string_buffer(struct.pack("=QI", ctypes.addressof(name), prog).ljust(
        128, b"\0"), 128)
    link = libc.syscall(nr_bpf, 17, attr, 128)
    if link < 0:
        os.close(prog)
        return None
    return prog, link


def fd_stats(fd):
    """(run_time_ns, run_cnt) of this process's program fd"""
    with open("/proc/self/fdinfo/%d" % fd) as f:
        info = dict(line.split(":", 1) for line in f.read().splitlines() if ":" in line)
    return int(info["run_time_ns"]), int(info["run_cnt"])


def move(cg, pid):
    with open(os.path.join(cg, "cgroup.procs"), "w") as f:
        f.write(str(pid))


def flamekit(fk, secs, out, cg):
    """a flamekit offcpu on cgroup cg (a path under the v2 mount) for secs,
    started and ready: its Popen. fk: the binary, and any options of
    offcpu after it (\"PATH --switch-budget 1000\")"""
    r, w = os.pipe()
    fk = shlex.split(fk)
    p = subprocess.Popen([fk[0], "offcpu"] + fk[1:] +
                         ["-q", "--no-svg", "-d", "%dms" % int(secs * 1000),
                          "--ready-fd", str(w), "-o", out, "cgroup", cg],
                         stdout=subprocess.DEVNULL, pass_fds=(w,))
    os.close(w)
    ready = select.select([r], [], [], P.ATTACH_SLACK_S)[0] and os.read(r, 64)
    os.close(r)
    if not ready:
        p.kill()
        p.wait()
        sys.exit("alt: flamekit was not ready within %d s" % P.ATTACH_SLACK_S)
    return p


def finish(p, ws, out):
    """waits for flamekit with the storms stopped (its exit is slow with
    both CPUs busy: offcpu-paired.py), returns its metadata"""
    for w in ws:
        os.kill(w.pid, signal.SIGSTOP)
    try:
        rc = p.wait(timeout=P.ATTACH_SLACK_S)
    except subprocess.TimeoutExpired:
        P.stuck(p.pid)
        p.kill()
        sys.exit("alt: flamekit ran %d s past its window" % P.ATTACH_SLACK_S)
    finally:
        for w in ws:
            os.kill(w.pid, signal.SIGCONT)
    if rc:
        sys.exit("alt: flamekit failed (status %d)" % rc)
    with open([os.path.join(out, x) for x in os.listdir(out) if x.endswith(".json")][0]) as f:
        meta = json.load(f)
    shutil.rmtree(out)
    time.sleep(P.WARM_S)
    return meta


def main(a):
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    truth, nwin, win = a[0], int(a[1]), float(a[2])
    sws, root, fk = [float(x) for x in a[3].split(",")], a[4], a[5]
    base = a[6] if len(a) > 6 else None
    builds = {"fk": fk}
    for name, b in zip(("base", "fk2"), a[6:8]):
        builds[name] = b
    # the windows' modes a turn: the builds, nothing attached twice, the
    # builds again backwards (a drift linear over a turn cancels)
    turn = list(builds) + ["none", "none"] + list(reversed(builds))
    if (os.cpu_count() or 1) < 2:
        print("alt: SKIP: fewer than 2 CPUs")
        return
    mnt = [x.split()[4] for x in open("/proc/self/mountinfo") if " - cgroup2 " in x][0]
    held = P.hold_tracepoint("sched/sched_switch")
    print("alt: sched:sched_switch's perf probe held registered: %s" %
          ("yes" if held is not None else "no"))
    work = tempfile.mkdtemp(prefix="fk-bench-offcpu-alt.")
    outs = [os.path.join(work, "storm%d" % i) for i in (0, 1)]
    own = [os.path.join(root, "copy%d" % i) for i in (0, 1)]
    prof = os.path.join(root, "prof")
    made, v1, ws, phases, stats, fkcpu = [], [], [], [], {}, []
    try:
        for d in own + [prof]:
            os.mkdir(d)
            made.append(d)
        if os.path.exists(os.path.join(prof, "cpu.weight")):
            with open(os.path.join(prof, "cpu.weight"), "w") as f:
                f.write("1")
        for i in (0, 1):
            weight = P.least_weight(own[i], i, v1)
            if i == 0:
                print("alt: the storms' CPU weight: %s" % ("the default" if not weight else
                      "the least (%s)" % ("cgroup v2 cpu.weight 1" if weight == own[i]
                                          else "cgroup v1 cpu.shares 2")))
            cmd = ["taskset", "-c", str(i), truth, "storm", "86400"]
            for d in dict.fromkeys(x for x in (weight, own[i]) if x):
                cmd = ["sh", "-c", 'echo $$ >"$0/cgroup.procs" && exec "$@"', d] + cmd
            with open(outs[i], "w") as out:
                ws.append(subprocess.Popen(cmd, stdout=out, stderr=subprocess.DEVNULL))
        end = time.time() + 20
        while time.time() < end and min(len(P.ticks_of(x)) for x in outs) < 10:
            time.sleep(0.1)
        where = [own[0], own[1]]

        def put(i, cg):
            if where[i] != cg:
                move(cg, ws[i].pid)
                where[i] = cg
        target = "/" + os.path.relpath(prof, mnt)
        for w_i in range(nwin):
            if base:    # fk base [fk2] none none [fk2] base fk
                mode = turn[w_i % len(turn)]
                sw = sws[(w_i // len(turn)) % len(sws)]
            else:
                mode = "fk" if ((w_i + 1) // 2) % 2 == 0 else "none"
                sw = sws[(w_i // 4) % len(sws)]
            first = (w_i // 2) % 2
            # WINDOW_S of phases, in whole groups of four (flamekit's
            # window is EDGE_S longer at each end)
            n = max(4, int(win / sw + 1e-9) // 4 * 4)
            # the first copy is in prof before flamekit starts: its rate
            # measurement before the window sees a storm, as on a real target
            put(1 - first, own[1 - first])
            put(first, prof)
            p, fkout = None, os.path.join(work, "fk")
            if mode != "none":
                p = flamekit(builds[mode], n * sw + 2 * EDGE_S, fkout, target)
                c0, m0 = P.cpu_ns(p.pid), time.monotonic()
            time.sleep(EDGE_S)
            t0 = time.monotonic()
            for k in range(n):
                inn = first ^ (((k + 1) // 2) % 2)
                put(1 - inn, own[1 - inn])
                put(inn, prof)
                lo = time.time_ns()
                time.sleep(max(0.0, t0 + (k + 1) * sw - time.monotonic()))
                phases.append((w_i, mode, sw, k, inn, lo, time.time_ns()))
            put(0, own[0])
            put(1, own[1])
            if p:
                cpu = (P.cpu_ns(p.pid) - c0) / 1e9 / (time.monotonic() - m0)
                fkcpu.append((mode, sw, cpu))
                meta = finish(p, ws, fkout)
                rec = P.recorded_of(meta)
                how = meta.get("offcpu", {}).get("bpf_attach")
                print("alt: window %d %s: %s recorded at N %s..%s, window %.2f s, flamekit %.2f %% "
                      "of a core%s" % (
                          w_i, mode, rec[0] if rec else 0, rec[1] if rec else "-",
                          rec[2] if rec else "-", meta["duration_s"], 100 * cpu,
                          ", " + how if how else ""), flush=True)
                lo, hi = meta["start_unix_ns"], meta["start_unix_ns"] + int(meta["duration_s"] * 1e9)
                # (a phase outside flamekit's window is not a profiled one)
                phases[:] = [x for x in phases if x[0] != w_i or (x[5] >= lo and x[6] <= hi)]
        for mode, b in builds.items():
            if mode != "fk2":   # (a setting of fk's: the same program)
                stats[mode] = filter_cost(b, ws, work, target)
        time.sleep(0.3)
        t = [P.ticks_of(x) for x in outs]
    finally:
        for w in ws:
            w.kill()
            w.wait()
        keep = os.environ.get("FK_BENCH_PAIRED_KEEP")
        if keep and ws:     # (a run stopped early keeps what it has)
            os.makedirs(keep, exist_ok=True)
            for i in (0, 1):
                shutil.copy(outs[i], os.path.join(keep, "storm%d" % i))
            with open(os.path.join(keep, "phases.json"), "w") as f:
                json.dump({"phases": phases, "window": win, "stats": stats, "fkcpu": fkcpu}, f)
        for d in reversed(made + v1):
            try:
                os.rmdir(d)
            except OSError as e:
                print("alt: rmdir %s: %s" % (d, e), file=sys.stderr)
        shutil.rmtree(work, ignore_errors=True)
    summary(t, phases, stats, fkcpu)


def filter_cost(fk, ws, work, target):
    """(ns, hits, empty ns, empty hits) of the switch program and of an
    empty one beside it (the stats' own cost; 0 0 where it would not load)
    over STATS_S with flamekit on the empty prof (every hit filtered out),
    kernel.bpf_stats_enabled on; None where the kernel cannot time it"""
    path = "/proc/sys/kernel/bpf_stats_enabled"
    if not os.path.exists(path):
        return None
    was = open(path).read().strip()
    out = os.path.join(work, "fk")
    empty = None
    try:
        with open(path, "w") as f:
            f.write("1")
        empty = empty_program()
        p = flamekit(fk, STATS_S + 2 * EDGE_S, out, target)
        time.sleep(EDGE_S)
        s0, e0 = P.prog_stats(p.pid), fd_stats(empty[0]) if empty else (0, 0)
        time.sleep(STATS_S)
        s1, e1 = P.prog_stats(p.pid), fd_stats(empty[0]) if empty else (0, 0)
        finish(p, ws, out)
    finally:
        with open(path, "w") as f:
            f.write(was)
        for fd in empty or ():
            os.close(fd)
    return P.busiest(s0, s1) + (e1[0] - e0[0], e1[1] - e0[1])


def window_logs(t, phases):
    """{(mode, switch_s): [(window, [mean log q of each group of four
    phases, A B B A])]}"""
    by = {}
    for w_i, mode, sw, k, inn, lo, hi in phases:
        a, b = rate(t[inn], lo + int(SKIP_S * 1e9), hi), rate(t[1 - inn], lo + int(SKIP_S * 1e9), hi)
        if a and b and a[0] > 0 and b[0] > 0:   # (a starved storm's phase: its group is left out)
            by.setdefault((w_i, mode, sw), {}).setdefault(k // 4, []).append(math.log(a[0] / b[0]))
    out = {}
    for (w_i, mode, sw), groups in sorted(by.items()):
        # (a group counts whole: A B B A, balanced)
        quads = [statistics.fmean(x) for _, x in sorted(groups.items()) if len(x) == 4]
        if quads:
            out.setdefault((mode, sw), []).append((w_i, quads))
    return out


def loss(x):
    return 100 * (1 - math.exp(x))


def summary(t, phases, stats, fkcpu=()):
    logs = window_logs(t, phases)
    if not logs:
        print("alt: no window has a whole group of four phases (the storms starved: a busy host?)")
    if isinstance(stats, (list, tuple)):    # (a run kept before builds were named)
        stats = {"fk": stats}
    stats = stats or {}
    none_rt = [rate(t[c], lo, hi)[0] for w_i, mode, sw, k, inn, lo, hi in phases if mode == "none"
               for c in (0, 1) if rate(t[c], lo, hi)]
    per_s = 2 * statistics.median(none_rt) if none_rt else None
    add = {}    # mode: (share with the stats' reads, share of the program's own or None)
    for mode, st in sorted(stats.items()):
        if not st or not st[1] or not per_s:
            continue
        ns = st[0] / st[1]
        own = ns - st[2] / st[3] if len(st) > 3 and st[3] else None
        add[mode] = (ns * per_s / 1e9, None if own is None else own * per_s / 1e9)
        print("filtered switches (%s): %.0f ns a hit (kernel.bpf_stats_enabled, its clock reads "
              "included), %d hits in %.1f s%s; an unprofiled storm's %.0f switch-outs per CPU "
              "second (\"none\" phases' median) -> %.2f %% of its CPU%s" % (
                  mode, ns, st[1], STATS_S,
                  "" if own is None else "; the stats' own %.0f ns a hit (an empty program beside "
                  "it, %d hits): the program's own %.0f ns" % (st[2] / st[3], st[3], own),
                  per_s, 100 * add[mode][0],
                  "" if own is None else " with the stats' reads, %.2f %% without" %
                  (100 * add[mode][1])))
    if "fk" in add:     # (fk2 is a setting of fk's: its program alike)
        add.setdefault("fk2", add["fk"])
    print("loss = 1 - g, g = the profiled storm's round trips per CPU second / the filtered "
          "one's (per window: its phases' mean log, 95 % over its groups of four; over "
          "windows: median, mean with a 95 % bootstrap interval)")
    modes = [m for m in ("fk", "base", "fk2", "none") if any(k[0] == m for k in logs)]
    for sw in sorted(set(k[1] for k in logs)):
        means = {}
        for mode in modes:
            v = logs.get((mode, sw), [])
            for w_i, quads in v:
                m, lo, hi = boot_mean(quads) if len(quads) > 1 else (quads[0],) * 3
                print("  switch %.2f s window %2d %-4s loss %6.2f %% (%6.2f..%6.2f %%), %d groups" %
                      (sw, w_i, mode, loss(m), loss(hi), loss(lo), len(quads)))
            means[mode] = [statistics.fmean(q) for _, q in v]
        for mode in modes:
            v = means[mode]
            if len(v) >= 2:
                m, lo, hi = boot_mean(v)
                print("switch %.2f s, %-4s: loss median %.2f %%, mean %.2f %% (95 %% %.2f..%.2f %%),"
                      " windows %.2f..%.2f %%, sd of a window's log g %.4f, %d windows" %
                      (sw, mode, loss(statistics.median(v)), loss(m), loss(hi), loss(lo),
                       loss(max(v)), loss(min(v)), statistics.stdev(v), len(v)))
                if mode in add:
                    with_reads, own = add[mode]
                    print("switch %.2f s, %-4s + the filter (a storm profiled alone): loss mean "
                          "%.2f %% (95 %% %.2f..%.2f %%)%s" % (
                              sw, mode, loss(m) + 100 * (own if own is not None else with_reads),
                              loss(hi) + 100 * (own if own is not None else with_reads),
                              loss(lo) + 100 * (own if own is not None else with_reads),
                              "; with the stats' reads, at most, %.2f %%" %
                              (loss(m) + 100 * with_reads) if own is not None else
                              " (the stats' clock reads included: at most)"))
    turn = 8 if "fk2" in modes else 6
    for one, other in (("fk", "base"), ("fk2", "fk")):
        if other not in modes or one not in modes:
            continue
        # per turn of windows (fk base [fk2] none none [fk2] base fk): the
        # two builds' mean log g, one's less the other's
        by = {}
        for (mode, sw), v in logs.items():
            for w_i, quads in v:
                if mode in (one, other):
                    by.setdefault(w_i // turn, {}).setdefault(mode, []).append(
                        statistics.fmean(quads))
        d = [statistics.fmean(x[one]) - statistics.fmean(x[other]) for x in by.values()
             if one in x and other in x]
        if len(d) >= 2:
            m, lo, hi = boot_mean(d)
            print("%s over %s, per turn of %d windows: g ratio %.4f (95 %% %.4f..%.4f), loss "
                  "%.2f points less (%.2f..%.2f), %d turns" % (
                      one, other, turn, math.exp(m), math.exp(lo), math.exp(hi),
                      100 * (math.exp(m) - 1), 100 * (math.exp(lo) - 1),
                      100 * (math.exp(hi) - 1), len(d)))
    for mode in ("fk", "base", "fk2"):
        c = [100 * x[2] for x in fkcpu if x[0] == mode]
        if len(c) >= 2:
            m, lo, hi = boot_mean(c)
            print("flamekit (%s) within its windows: %.2f %% of a core (median; mean %.2f %%, 95 %% "
                  "%.2f..%.2f %%), %d windows" % (mode, statistics.median(c), m, lo, hi, len(c)))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--keep"]:
        with open(os.path.join(sys.argv[2], "phases.json")) as f:
            k = json.load(f)
        summary([P.ticks_of(os.path.join(sys.argv[2], "storm%d" % i)) for i in (0, 1)],
                [tuple(x) for x in k["phases"]], k.get("stats"), k.get("fkcpu", []))
    else:
        main(sys.argv[1:])
