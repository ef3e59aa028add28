# SPDX-License-Identifier: GPL-2.0-only
# The switch storm's throughput lost under flamekit offcpu, the profiled
# storm alternating within each window (bench/offcpu.sh, part "alt"): the
# lower-noise form of offcpu-paired.py's figure.
#
#   python3 offcpu-alt.py TRUTH WINDOWS WINDOW_S SWITCH_S[,SWITCH_S...] CGROUP_ROOT FLAMEKIT
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
# none fk ..., each SWITCH_S of the list for four windows in turn.
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
# unprofiled storm's CPU the filter costs, added to the loss.
#
# FK_BENCH_PAIRED_KEEP=DIR keeps the ticks and phases for --keep.
import json
import math
import os
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import importlib.util

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


def move(cg, pid):
    with open(os.path.join(cg, "cgroup.procs"), "w") as f:
        f.write(str(pid))


def flamekit(fk, secs, out, cg):
    """a flamekit offcpu on cgroup cg (a path under the v2 mount) for secs,
    started and ready: its Popen"""
    r, w = os.pipe()
    p = subprocess.Popen([fk, "offcpu", "-q", "--no-svg", "-d", "%dms" % int(secs * 1000),
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
    made, v1, ws, phases, stats = [], [], [], [], None
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
            if mode == "fk":
                p = flamekit(fk, n * sw + 2 * EDGE_S, fkout, target)
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
                meta = finish(p, ws, fkout)
                rec = P.recorded_of(meta)
                print("alt: window %d fk: %s recorded at N %s..%s, window %.2f s" % (
                    w_i, rec[0] if rec else 0, rec[1] if rec else "-", rec[2] if rec else "-",
                    meta["duration_s"]), flush=True)
                lo, hi = meta["start_unix_ns"], meta["start_unix_ns"] + int(meta["duration_s"] * 1e9)
                # (a phase outside flamekit's window is not a profiled one)
                phases[:] = [x for x in phases if x[0] != w_i or (x[5] >= lo and x[6] <= hi)]
        stats = filter_cost(fk, ws, work, target)
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
                json.dump({"phases": phases, "window": win, "stats": stats}, f)
        for d in reversed(made + v1):
            try:
                os.rmdir(d)
            except OSError as e:
                print("alt: rmdir %s: %s" % (d, e), file=sys.stderr)
        shutil.rmtree(work, ignore_errors=True)
    summary(t, phases, stats)


def filter_cost(fk, ws, work, target):
    """(ns, hits) of the switch program over STATS_S with flamekit on the
    empty prof (every hit filtered out), kernel.bpf_stats_enabled on; None
    where the kernel cannot time it"""
    path = "/proc/sys/kernel/bpf_stats_enabled"
    if not os.path.exists(path):
        return None
    was = open(path).read().strip()
    out = os.path.join(work, "fk")
    try:
        with open(path, "w") as f:
            f.write("1")
        p = flamekit(fk, STATS_S + 2 * EDGE_S, out, target)
        time.sleep(EDGE_S)
        s0 = P.prog_stats(p.pid)
        time.sleep(STATS_S)
        s1 = P.prog_stats(p.pid)
        finish(p, ws, out)
    finally:
        with open(path, "w") as f:
            f.write(was)
    return P.busiest(s0, s1)


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


def summary(t, phases, stats):
    logs = window_logs(t, phases)
    if not logs:
        print("alt: no window has a whole group of four phases (the storms starved: a busy host?)")
    none_rt = [rate(t[c], lo, hi)[0] for w_i, mode, sw, k, inn, lo, hi in phases if mode == "none"
               for c in (0, 1) if rate(t[c], lo, hi)]
    add = None
    if stats and stats[1] and none_rt:
        ns = stats[0] / stats[1]
        per_s = 2 * statistics.median(none_rt)
        add = ns * per_s / 1e9
        print("filtered switches: %.0f ns a hit (kernel.bpf_stats_enabled, its clock reads "
              "included), %d hits in %.1f s; an unprofiled storm's %.0f switch-outs per CPU "
              "second (\"none\" phases' median) -> %.2f %% of its CPU" %
              (ns, stats[1], STATS_S, per_s, 100 * add))
    print("loss = 1 - g, g = the profiled storm's round trips per CPU second / the filtered "
          "one's (per window: its phases' mean log, 95 % over its groups of four; over "
          "windows: median, mean with a 95 % bootstrap interval)")
    for sw in sorted(set(k[1] for k in logs)):
        means = {}
        for mode in ("fk", "none"):
            v = logs.get((mode, sw), [])
            for w_i, quads in v:
                m, lo, hi = boot_mean(quads) if len(quads) > 1 else (quads[0],) * 3
                print("  switch %.2f s window %2d %-4s loss %6.2f %% (%6.2f..%6.2f %%), %d groups" %
                      (sw, w_i, mode, loss(m), loss(hi), loss(lo), len(quads)))
            means[mode] = [statistics.fmean(q) for _, q in v]
        for mode in ("fk", "none"):
            v = means[mode]
            if len(v) >= 2:
                m, lo, hi = boot_mean(v)
                print("switch %.2f s, %-4s: loss median %.2f %%, mean %.2f %% (95 %% %.2f..%.2f %%),"
                      " windows %.2f..%.2f %%, sd of a window's log g %.4f, %d windows" %
                      (sw, mode, loss(statistics.median(v)), loss(m), loss(hi), loss(lo),
                       loss(max(v)), loss(min(v)), statistics.stdev(v), len(v)))
                if mode == "fk" and add is not None:
                    print("switch %.2f s, fk + the filter (a storm profiled alone, at most: the "
                          "stats' clock reads included): loss mean %.2f %% (95 %% %.2f..%.2f %%)" %
                          (sw, loss(m) + 100 * add, loss(hi) + 100 * add, loss(lo) + 100 * add))
    allfk = [statistics.fmean(q) for (mode, sw), v in logs.items() if mode == "fk" for _, q in v]
    if len(allfk) >= 2:
        m, lo, hi = boot_mean(allfk)
        print("all fk windows: loss median %.2f %%, mean %.2f %% (95 %% %.2f..%.2f %%), %d windows%s" %
              (loss(statistics.median(allfk)), loss(m), loss(hi), loss(lo), len(allfk),
               "" if add is None else "; with the filter at most %.2f %% (95 %% %.2f..%.2f %%)" %
               (loss(m) + 100 * add, loss(hi) + 100 * add, loss(lo) + 100 * add)))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--keep"]:
        with open(os.path.join(sys.argv[2], "phases.json")) as f:
            k = json.load(f)
        summary([P.ticks_of(os.path.join(sys.argv[2], "storm%d" % i)) for i in (0, 1)],
                [tuple(x) for x in k["phases"]], k.get("stats"))
    else:
        main(sys.argv[1:])
