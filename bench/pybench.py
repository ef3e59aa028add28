# SPDX-License-Identifier: GPL-2.0-only
# Measures for bench/python.sh (Python frames, unwind/python.c).
#
#   python3 pybench.py cost FLAMEKIT PY TRUTH HZ MODE REPS CPU [BASE]
#       flamekit's own CPU (every thread of it: its rusage from wait4) for
#       `flamekit pid -F HZ` attached to PY TRUTH MODE, which runs for CPU
#       seconds of its own CPU, --python on and
#       off alternately, REPS pairs (and with BASE, a second flamekit, its
#       --python on in the same rotation). Per pair: the extra CPU per
#       Python sample, (on/sample - off/sample) * samples / Python samples;
#       printed: the median and min..max over the pairs (BASE: the ratio of
#       the medians), the share of Python samples fully consistent, reads
#       and bytes per spliced sample, samples served by a read shared with
#       an earlier one, and the read delay.
#   python3 pybench.py throughput FLAMEKIT PY TRUTH HZ MODE ROUNDS WINDOW_S
#       the target's throughput under --python on, off and no capture: one
#       long-lived workload, captures attached to it in interleaved rounds,
#       each window's work rate read from the workload's own counter. One
#       process for every mode (same memory layout, same warm caches),
#       rounds interleaved (drift cancels) and compared pairwise within a
#       round: the spread of separate processes (+-8 % run to run) does not
#       enter the ratio. Printed per mode: work per CPU second and per wall
#       second; per pair of modes: the ratio's median and min..max.
#   python3 pybench.py paired FLAMEKIT PY TRUTH HZ MODE ROUNDS WINDOW_S [BASE]
#       the throughput lost at HZ, with the VM's own speed (+-25 % between
#       2 s windows here) taken out: two copies of the workload run at once,
#       one pinned to each of the first two CPUs; in each window flamekit
#       (--python on or off) is attached to one of them and the other is the
#       control. Within a window, q = the profiled copy's work per CPU
#       second / the control's (what slows the whole VM slows both). Per
#       round both copies take the profiled part in turn, and
#       g = sqrt(q(copy 0 profiled) * q(copy 1 profiled)) cancels the
#       CPUs' own speeds; 1 - g is the loss. "none" windows (nothing
#       attached, the copies' roles still alternated) give the method's
#       own noise: g centred on 1. Printed per mode: g's median and mean
#       over the rounds with a 95 % bootstrap interval of the mean, and
#       on/off per round. The same for work per wall second (which also
#       carries flamekit's own CPU, taken from whichever copy it preempts).
#       With BASE (another flamekit), its --python on windows join each
#       round ("base"), and on/base per round is printed too.
#   Every line is printed as it is made, flushed, after FK_BENCH_PREFIX
#   (bench/python.sh: "bench/python: "): a run cut short by a time limit
#   (fk-quiet's) keeps what it printed; cost prints each run as it ends,
#   and on SIGTERM or SIGINT its figures over the pairs complete by then.
#   python3.11 pybench.py work TRUTH MODE TICKS
#       the throughput workload: MODE "ratio" (TRUTH's work_a then work_b)
#       or "generators" (its consume_b: a generator's body and its
#       consumer), TRUTH being test/progs/pytruth.py; every TICK_CPU seconds
#       of its own CPU it appends "wall_ns cpu_ns units" to TICKS.
import glob
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

TICK_CPU = 0.02
PREFIX = os.environ.get("FK_BENCH_PREFIX", "")


def say(line):
    """one line of results, out at once: whatever stops this run later
    (fk-quiet's time limit: SIGTERM to the whole process group, sed in a
    pipe with it) leaves the lines said before it"""
    print(PREFIX + line, flush=True)


class Stopped(Exception):
    """SIGTERM or SIGINT: cost ends with the pairs it has"""


def stop(signum, frame):
    raise Stopped()


def work(truth, mode, ticks):
    sys.path.insert(0, os.path.dirname(truth))
    sys.dont_write_bytecode = True      # no __pycache__ left in the source tree
    import pytruth      # its functions: the shapes the cost runs sample
    out = open(ticks, "a", buffering=1)
    units = 0
    nxt = time.process_time_ns()
    while True:
        if mode == "ratio":
            pytruth.work_a()
            pytruth.work_b()
        else:
            pytruth.consume_b(1)
        units += 1
        if units % 4 == 0:      # the clock read (a system call) stays rare
            cpu = time.process_time_ns()
            if cpu >= nxt:
                out.write("%d %d %d\n" % (time.time_ns(), cpu, units))
                nxt = cpu + int(TICK_CPU * 1e9)


def spread(v, fmt="%.1f"):
    return (fmt + " (" + fmt + ".." + fmt + ")") % (statistics.median(v), min(v), max(v))


def one_run(fk, py, truth, hz, mode, cpu, pymode, work_dir, tag):
    out = os.path.join(work_dir, tag)
    # flamekit attached to the workload (not its parent): its own rusage
    # from wait4 is then every flamekit thread's CPU and nothing else's --
    # the ring reader's thread, which makes the early reads, included
    # (perf stat --no-inherit of `flamekit run` counted the engine's thread
    # alone, and with inheritance the command's CPU too)
    w = subprocess.Popen([py, truth, mode, str(cpu), out + ".truth"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    f = None
    status = 0
    try:
        f = subprocess.Popen([fk, "pid", "-q", "--no-svg", "-F", str(hz), "-d", "5m",
                              "--python", pymode, "-o", out, str(w.pid)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            _, status, ru = os.wait4(f.pid, 0)
        except BaseException:
            f.kill()
            f.wait()
            raise
        f.returncode = 0
    finally:
        if f is None or f.returncode is None or status:
            w.kill()
        w.wait()
    if status:
        sys.exit("flamekit failed (wait status %d)" % status)
    task_ms = (ru.ru_utime + ru.ru_stime) * 1e3
    meta = json.load(open(glob.glob(out + "/*.json")[0]))
    p = meta.get("python", {})
    d = p.get("read_delay", {})
    r = dict(cpu_s=task_ms / 1e3, n=meta["samples"], py=p.get("spliced", 0),
             consistent=p.get("consistent", 0), shared=p.get("snapshots_shared", 0),
             reads=p.get("reads", 0) + p.get("snapshot_reads", 0),
             bytes=p.get("read_bytes", 0) + p.get("snapshot_read_bytes", 0),
             delay_med=d.get("median_ms", 0), delay_p90=d.get("p90_ms", 0),
             rss_kb=ru.ru_maxrss, mem=meta.get("memory_peak_bytes", 0),
             queues=meta.get("reader", {}).get("python_chains", {}).get("queue_bytes", 0))
    shutil.rmtree(out)
    return r


def cost(fk, py, truth, hz, mode, reps, cpu, base=None):
    work_dir = tempfile.mkdtemp(prefix="fk-pybench.")
    runs = {"on": [], "off": [], "base": []}
    stopped = False
    try:
        for i in range(reps):
            order = [("on", fk, "on"), ("off", fk, "off")] + ([("base", base, "on")] if base else [])
            for tag, binary, pymode in order[i % len(order):] + order[:i % len(order)]:
                x = one_run(binary, py, truth, hz, mode, cpu, pymode, work_dir,
                            "%s-%d" % (tag, i))
                runs[tag].append(x)
                say("%s Hz %-10s %-4s run %d: flamekit CPU %.3f s, %d samples (%.1f us/sample), "
                    "%d Python samples spliced, peak RSS %d KiB" %
                    (hz, mode, tag, i, x["cpu_s"], x["n"], x["cpu_s"] / max(x["n"], 1) * 1e6,
                     x["py"], x["rss_kb"]))
    except (Stopped, KeyboardInterrupt):
        stopped = True
    finally:
        shutil.rmtree(work_dir, ignore_errors=True)
    # pairs whose every run ended
    done = min(len(v) for k, v in runs.items() if k != "base" or base)
    if stopped:
        say("%s Hz %-10s stopped (a signal) after %d of %d pairs%s" %
            (hz, mode, done, reps, ": the figures below are theirs" if done else ""))
    if not done:
        return
    for k in runs:
        del runs[k][done:]
    off = runs["off"]
    for tag in ("on", "base") if base else ("on",):
        extra = [(x["cpu_s"] / x["n"] - y["cpu_s"] / y["n"]) * x["n"] / max(x["py"], 1) * 1e6
                 for x, y in zip(runs[tag], off)]
        on = runs[tag]
        py_n = sum(x["py"] for x in on) or 1
        say("%s Hz %-10s %-4s extra flamekit CPU per Python sample: %s us; per sample on %s, "
              "off %s us" % (hz, mode, tag, spread(extra),
                             spread([x["cpu_s"] / x["n"] * 1e6 for x in on]),
                             spread([x["cpu_s"] / x["n"] * 1e6 for x in off])))
        say("%s Hz %-10s %-4s %d of %d samples spliced, %.1f%% consistent; %.2f reads, "
              "%.0f bytes per spliced sample, %.1f%% served by a shared read; read delay "
              "median %s ms, p90 %s ms" %
              (hz, mode, tag, py_n, sum(x["n"] for x in on),
               100.0 * sum(x["consistent"] for x in on) / py_n,
               sum(x["reads"] for x in on) / py_n, sum(x["bytes"] for x in on) / py_n,
               100.0 * sum(x["shared"] for x in on) / py_n,
               " ".join("%.2f" % x["delay_med"] for x in on),
               " ".join("%.2f" % x["delay_p90"] for x in on)))
        if tag == "on":
            on_extra = statistics.median(extra)
        say("%s Hz %-10s %-4s flamekit's peak RSS %s KiB, memory charged %s KiB, of which "
              "the gate's queues %s KiB" %
              (hz, mode, tag, spread([x["rss_kb"] for x in on], "%.0f"),
               spread([x["mem"] / 1024 for x in on], "%.0f"),
               spread([x["queues"] / 1024 for x in on], "%.0f")))
    if base:
        say("%s Hz %-10s extra per Python sample, this build / base: %.2f" %
              (hz, mode, on_extra / statistics.median(extra)))
        # paired: run i of each build came in the same rotation
        for what, key in (("CPU per sample", None), ("peak RSS", "rss_kb"),
                          ("memory charged", "mem")):
            r = [(x["cpu_s"] / x["n"]) / (y["cpu_s"] / y["n"]) if key is None else x[key] / y[key]
                 for x, y in zip(runs["on"], runs["base"])]
            say("%s Hz %-10s %s, this build / base, paired: %s" %
                  (hz, mode, what, spread(r, "%.3f")))


def ticks_of(path):
    t = []
    with open(path) as f:
        for line in f:
            p = line.split()
            if len(p) == 3:
                t.append(tuple(int(x) for x in p))
    return t


def rate(ticks, lo, hi):
    """(units per CPU second, units per wall second) between the first tick
    at or after lo and the last at or before hi (wall ns); None if fewer
    than two."""
    inside = [t for t in ticks if lo <= t[0] <= hi]
    if len(inside) < 2:
        return None
    a, b = inside[0], inside[-1]
    return ((b[2] - a[2]) / ((b[1] - a[1]) / 1e9), (b[2] - a[2]) / ((b[0] - a[0]) / 1e9))


def throughput(fk, py, truth, hz, mode, rounds, window):
    work_dir = tempfile.mkdtemp(prefix="fk-pybench.")
    ticks = os.path.join(work_dir, "ticks")
    open(ticks, "w").close()
    w = subprocess.Popen([py, os.path.abspath(__file__), "work", truth, mode, ticks],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(1.0)     # started, warm
        windows = {"on": [], "off": [], "none": []}
        order = ["on", "off", "none"]
        for r in range(rounds):
            for m in order[r % 3:] + order[:r % 3]:
                if m == "none":
                    lo = time.time_ns()
                    time.sleep(window)
                    windows[m].append((lo, time.time_ns()))
                    continue
                out = os.path.join(work_dir, "%s-%d" % (m, r))
                subprocess.run([fk, "pid", "-q", "--no-svg", "-F", str(hz), "-d",
                                "%dms" % int(window * 1000), "--python", m, "-o", out,
                                str(w.pid)], check=True, stdout=subprocess.DEVNULL)
                meta = json.load(open(glob.glob(out + "/*.json")[0]))
                lo = meta["start_unix_ns"]
                windows[m].append((lo, lo + int(meta["duration_s"] * 1e9)))
                shutil.rmtree(out)
        time.sleep(2 * TICK_CPU)
        t = ticks_of(ticks)
    finally:
        w.kill()
        w.wait()
        shutil.rmtree(work_dir)
    rates = {m: [rate(t, lo, hi) for lo, hi in v] for m, v in windows.items()}
    for m in ("on", "off", "none"):
        cpu = [x[0] for x in rates[m] if x]
        wall = [x[1] for x in rates[m] if x]
        say("%s Hz %s %-4s work per CPU second %s, per wall second %s (%d windows)" %
              (hz, mode, m, spread(cpu, "%.0f"), spread(wall, "%.0f"), len(cpu)))
    for a, b in (("on", "off"), ("on", "none"), ("off", "none")):
        for k, what in ((0, "CPU"), (1, "wall")):
            q = [x[k] / y[k] for x, y in zip(rates[a], rates[b]) if x and y]
            say("%s Hz %s %s/%s work per %s second: %s over %d rounds" %
                  (hz, mode, a, b, what, spread(q, "%.4f"), len(q)))


def boot_mean(v, n=2000):
    """the mean of v and a 95 % bootstrap interval of it"""
    import random
    rnd = random.Random(1)
    m = sorted(statistics.fmean(rnd.choices(v, k=len(v))) for _ in range(n))
    return statistics.fmean(v), m[int(0.025 * n)], m[int(0.975 * n) - 1]


def paired_rounds(rounds, window, modes, attach):
    """The windows of a paired run, (round, profiled copy, mode, lo, hi):
    per round each of modes and "none" (nothing attached) for each copy, in
    an order that turns each round; attach(copy, mode) runs a capture of
    window seconds and returns its (lo, hi) wall ns."""
    windows = []
    order = [(c, m) for m in list(modes) + ["none"] for c in (0, 1)]
    for r in range(rounds):
        k = r % len(order)
        for c, m in order[k:] + order[:k]:
            if m == "none":
                lo = time.time_ns()
                time.sleep(window)
                windows.append((r, c, m, lo, time.time_ns()))
            else:
                windows.append((r, c, m) + tuple(attach(c, m)))
    return windows


def paired_g(windows, t, rounds, modes):
    """g per (mode, 0: per CPU second, 1: per wall second): {round:
    sqrt(q(copy 0 profiled) * q(copy 1 profiled))}, q being the profiled
    copy's rate over the control's in a window; t: each copy's ticks."""
    q = {}      # (round, mode, copy) -> (CPU q, wall q)
    for r, c, m, lo, hi in windows:
        a, b = rate(t[c], lo, hi), rate(t[1 - c], lo, hi)
        if a and b:
            q[(r, m, c)] = (a[0] / b[0], a[1] / b[1])
    return {(m, k): {r: (q[(r, m, 0)][k] * q[(r, m, 1)][k]) ** 0.5
                     for r in range(rounds) if (r, m, 0) in q and (r, m, 1) in q}
            for m in list(modes) + ["none"] for k in (0, 1)}


def paired(fk, py, truth, hz, mode, rounds, window, base=None):
    if (os.cpu_count() or 1) < 2:
        say("%s Hz %s paired: SKIP: fewer than 2 CPUs" % (hz, mode))
        return
    modes = ("on", "off") + (("base",) if base else ())
    work_dir = tempfile.mkdtemp(prefix="fk-pybench.")
    ticks = [os.path.join(work_dir, "ticks%d" % i) for i in (0, 1)]
    ws = []
    try:
        for i in (0, 1):
            open(ticks[i], "w").close()
            ws.append(subprocess.Popen(["taskset", "-c", str(i), py, os.path.abspath(__file__),
                                        "work", truth, mode, ticks[i]],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        end = time.time() + 20
        while time.time() < end and min(len(ticks_of(x)) for x in ticks) < 10:
            time.sleep(0.1)     # both started and warm
        def attach(c, m):
            out = os.path.join(work_dir, "%s-%d" % (m, c))
            binary, pymode = (base, "on") if m == "base" else (fk, m)
            subprocess.run([binary, "pid", "-q", "--no-svg", "-F", str(hz), "-d",
                            "%dms" % int(window * 1000), "--python", pymode, "-o", out,
                            str(ws[c].pid)], check=True, stdout=subprocess.DEVNULL)
            meta = json.load(open(glob.glob(out + "/*.json")[0]))
            shutil.rmtree(out)
            lo = meta["start_unix_ns"]
            return lo, lo + int(meta["duration_s"] * 1e9)
        windows = paired_rounds(rounds, window, modes, attach)
        time.sleep(2 * TICK_CPU)
        t = [ticks_of(x) for x in ticks]
    finally:
        for w in ws:
            w.kill()
            w.wait()
        shutil.rmtree(work_dir)
    g = paired_g(windows, t, rounds, modes)
    for k, what in ((0, "CPU"), (1, "wall")):
        for m in modes + ("none",):
            v = list(g[(m, k)].values())
            if len(v) < 2:
                continue
            mean, lo, hi = boot_mean(v)
            say("%s Hz %s paired %-4s work per %s second, profiled/control: median %.4f, "
                  "mean %.4f (95%% interval %.4f..%.4f), min..max %.4f..%.4f, %d rounds" %
                  (hz, mode, m, what, statistics.median(v), mean, lo, hi, min(v), max(v), len(v)))
        for a, b in (("on", "off"),) + ((("on", "base"),) if base else ()):
            v = [g[(a, k)][r] / g[(b, k)][r] for r in g[(a, k)] if r in g[(b, k)]]
            if len(v) >= 2:
                mean, lo, hi = boot_mean(v)
                say("%s Hz %s paired %s/%s work per %s second: median %.4f, mean %.4f "
                      "(95%% interval %.4f..%.4f), %d rounds" %
                      (hz, mode, a, b, what, statistics.median(v), mean, lo, hi, len(v)))


if __name__ == "__main__":
    a = sys.argv
    if a[1] == "work":
        work(a[2], a[3], a[4])
    elif a[1] == "cost":
        signal.signal(signal.SIGTERM, stop)
        cost(a[2], a[3], a[4], int(a[5]), a[6], int(a[7]), float(a[8]),
             a[9] if len(a) > 9 else None)
    elif a[1] == "paired":
        paired(a[2], a[3], a[4], int(a[5]), a[6], int(a[7]), float(a[8]),
               a[9] if len(a) > 9 else None)
    else:
        throughput(a[2], a[3], a[4], int(a[5]), a[6], int(a[7]), float(a[8]))
