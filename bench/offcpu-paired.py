# SPDX-License-Identifier: GPL-2.0-only
# The switch storm's throughput lost under flamekit offcpu, with the VM's own
# speed taken out (bench/offcpu.sh, part "paired"): the unpaired storm runs
# of one process at a time spread 41.5k-45.9k round trips/s here with
# nothing attached, wider than the 3 % to be shown.
#
#   python3 offcpu-paired.py TRUTH ROUNDS WINDOW_S [CGROUP_ROOT] NAME=FLAMEKIT...
#
# Two storms (TRUTH storm: two threads ping-ponging a byte through pipes)
# run at once, one pinned to each of the first two CPUs (both its threads on
# that CPU: every round trip is two switch-outs, no idle), each in a cgroup
# v2 of its own under CGROUP_ROOT when given (flamekit then follows a pid
# target with per-CPU events in it, as in part "storm"). In each window
# one flamekit (or none) is attached to one copy and the other is the
# control; q = the profiled copy's round trips per CPU second / the
# control's, so what slows the whole VM slows both and cancels. Per round
# every (flamekit, copy) pair and "none" take a window in a rotating order,
# and g = sqrt(q(copy 0 profiled) * q(copy 1 profiled)) cancels the CPUs'
# own speeds; 1 - g is the loss. "none" windows (nothing attached, roles
# still alternated) give the method's own noise, g centred on 1. The same
# per wall second, which also carries flamekit's own CPU taken from
# whichever copy its threads preempt (flamekit is not pinned). Printed per
# flamekit: g's median and mean with a 95 % bootstrap interval, per CPU and
# per wall second, the per-round ratio g / g(none), and between the first
# two flamekits the per-round ratio of their g (this build / baseline).
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import shutil
import signal

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pybench import boot_mean, paired_g, paired_rounds, rate  # noqa: E402  (one of each)


def ticks_of(path):
    """the storm's "at WALL_NS TRIPS CPU_NS" lines as (wall, cpu, trips)"""
    t = []
    with open(path) as f:
        for line in f:
            p = line.split()
            if len(p) == 4 and p[0] == "at":
                t.append((int(p[1]), int(p[3]), int(p[2])))
    return t


def show(what, v):
    mean, lo, hi = boot_mean(v)
    print("  %-34s median %.4f, mean %.4f (95%% interval %.4f..%.4f), min..max %.4f..%.4f, "
          "%d rounds" % (what, statistics.median(v), mean, lo, hi, min(v), max(v), len(v)))


def main(a):
    # a timeout's TERM ends the storms and removes the cgroups too
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    truth, rounds, window = a[0], int(a[1]), float(a[2])
    cgroot = None
    if len(a) > 3 and "=" not in a[3]:
        cgroot, a = a[3], a[:3] + a[4:]
    fks = [x.split("=", 1) for x in a[3:]]
    if (os.cpu_count() or 1) < 2:
        print("paired: SKIP: fewer than 2 CPUs")
        return
    work = tempfile.mkdtemp(prefix="fk-bench-offcpu-paired.")
    modes = [n for n, _ in fks] + ["none"]
    secs = 86400       # killed at the end (a loaded host may take long to start each run)
    outs = [os.path.join(work, "storm%d" % i) for i in (0, 1)]
    cgs, ws, fkcpu = [], [], {n: [] for n, _ in fks}
    try:
        for i in (0, 1):
            cg = None
            if cgroot:
                cg = os.path.join(cgroot, "copy%d" % i)
                os.mkdir(cg)
                cgs.append(cg)
            with open(outs[i], "w") as out:
                # the copy joins its cgroup before it runs (a shell moves
                # itself, then execs taskset and the storm)
                cmd = ["taskset", "-c", str(i), truth, "storm", str(secs)]
                if cg:
                    cmd = ["sh", "-c", 'echo $$ >"$0/cgroup.procs" && exec "$@"', cg] + cmd
                ws.append(subprocess.Popen(cmd, stdout=out, stderr=subprocess.DEVNULL))
        end = time.time() + 20
        while time.time() < end and min(len(ticks_of(x)) for x in outs) < 10:
            time.sleep(0.1)     # both started and warm
        fkpath = dict(fks)

        def attach(c, m):
            out = os.path.join(work, "%s-%d" % (m, c))
            before = os.times()
            subprocess.run([fkpath[m], "offcpu", "-q", "--no-svg", "-d",
                            "%dms" % int(window * 1000), "-o", out, "pid",
                            str(ws[c].pid)], check=True, stdout=subprocess.DEVNULL)
            after = os.times()
            meta = json.load(open(glob.glob(out + "/*.json")[0]))
            shutil.rmtree(out)
            fkcpu[m].append((after.children_user + after.children_system -
                             before.children_user - before.children_system) / meta["duration_s"])
            lo = meta["start_unix_ns"]
            return lo, lo + int(meta["duration_s"] * 1e9)
        windows = paired_rounds(rounds, window, [n for n, _ in fks], attach)
        time.sleep(0.3)
        t = [ticks_of(x) for x in outs]
    finally:
        for w in ws:
            w.kill()
            w.wait()
        for cg in cgs:
            os.rmdir(cg)
        shutil.rmtree(work)
    g = paired_g(windows, t, rounds, [n for n, _ in fks])
    for c in (0, 1):
        v = [rate(t[c], lo, hi)[1] for r, cc, m, lo, hi in windows
             if cc == c and m == "none" and rate(t[c], lo, hi)]
        if v:
            print("copy %d (CPU %d) unprofiled: %.0f..%.0f round trips per wall second" %
                  (c, c, min(v), max(v)))
    for k, what in ((0, "CPU"), (1, "wall")):
        print("round trips per %s second, profiled copy / control:" % what)
        for m in modes:
            v = list(g[(m, k)].values())
            if len(v) >= 2:
                show(m, v)
        for m in modes[:-1]:
            v = [g[(m, k)][r] / g[("none", k)][r] for r in g[(m, k)] if r in g[("none", k)]]
            if len(v) >= 2:
                show("%s / none" % m, v)
        if len(fks) >= 2:
            a0, a1 = fks[0][0], fks[1][0]
            v = [g[(a0, k)][r] / g[(a1, k)][r] for r in g[(a0, k)] if r in g[(a1, k)]]
            if len(v) >= 2:
                show("%s / %s" % (a0, a1), v)
    for n, v in fkcpu.items():
        if v:
            print("flamekit %s: CPU over its whole run per window second, %% of a core: "
                  "median %.2f, min..max %.2f..%.2f" %
                  (n, 100 * statistics.median(v), 100 * min(v), 100 * max(v)))


if __name__ == "__main__":
    main(sys.argv[1:])
