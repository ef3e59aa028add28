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
# two flamekits the per-round ratio of their g (this build / baseline);
# flamekit's CPU over its whole run and within its window alone (its
# steady state: no start, no exit); and the switch program's own time per
# hit (kernel.bpf_stats_enabled, in windows of their own after the rounds)
# on the target's switches and on the switches it only filters out
# (FK_BENCH_PAIRED_STATS=0: not, to keep a short call's time for rounds).
# Each round's g is printed too ("round R g per CPU/wall second: ..."), and
# each flamekit's CPU within its windows ("round R flamekit CPU ..."), so
# rounds of several runs -- calls of a few minutes each -- can be pooled:
#
#   python3 offcpu-paired.py --pool LOG...
#
# prints the same summaries over every round of the logs.
#
# FK_BENCH_PAIRED_KEEP=DIR keeps the storms' ticks (every 100 ms: wall
# ns, round trips, CPU ns) and the windows (windows.json) in DIR, and
#
#   python3 offcpu-paired.py --ticks DIR [SECONDS...]
#
# recomputes each round's g from the first SECONDS of every window (the
# whole window too): how the rounds' spread falls with the window's
# length, judged on the same rounds -- whether longer windows, or more
# short ones, narrow the interval for the same quiet time.
#
# The storms run at the least CPU weight (a cgroup of their own in the
# cpu controller: cgroup v2's cpu.weight 1 where the v2 tree has it, else
# v1's cpu.shares 2; FK_BENCH_PAIRED_WEIGHT=same: the default weight, as
# before): at equal weight a storm pinned to a CPU kept that CPU's kernel
# threads (kworkers, kdamond) waiting for a minute and more here (the
# kernel's workqueue watchdog said so), and any task mapping a perf ring
# then waited behind one of them holding the lock all perf files share,
# flamekit among them. At the least weight anything else runnable on the
# CPU runs first; what it takes is not the storm's CPU time, so the
# figures per CPU second are as before (flamekit is not in that cgroup:
# its own CPU still comes out of the storms' wall time). The run prints
# the kernel threads that waited longest for a CPU, and the watchdog's
# complaints, while it ran.
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import shutil
import select
import signal

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pybench import boot_mean, paired_g, paired_rounds, rate  # noqa: E402  (one of each)


# A flamekit run's wall time past its window before it is stopped.
ATTACH_SLACK_S = 60
# The storms stop this long after a window (flamekit's ready line + its
# length), and get this long back at speed after flamekit exits.
STOP_AFTER_S = 0.3
WARM_S = 0.5
# The switch program's stats windows last at most this long.
STATS_S = 2.0
STATS_SLACK_S = 0.5


def stuck(pid, debugger=True):
    """Where a run that overstays is, to stderr: each thread's state, wait
    channel and kernel stack, the host's tasks in D state, and with
    debugger its user stacks (gdb stops it while it reads them)."""
    def read(path):
        try:
            with open(path) as f:
                return f.read().strip()
        except OSError as e:
            return "(%s)" % e.strerror
    for task in sorted(glob.glob("/proc/%d/task/*" % pid)):
        stat = read(task + "/stat")
        print("paired: stuck thread %s (%s) state %s wchan %s\n  %s" %
              (os.path.basename(task), read(task + "/comm"), stat.rsplit(")", 1)[-1].split()[:1],
               read(task + "/wchan"), read(task + "/stack").replace("\n", "\n  ")),
              file=sys.stderr)
    if debugger and shutil.which("gdb"):     # and user space, where there is a debugger
        # (gdb cannot stop a thread in D state: its attach waits; at its
        # timeout it is killed and the stacks above are all there is --
        # uncaught, that ended a call with no summary)
        try:
            subprocess.run(["gdb", "-p", str(pid), "-batch", "-ex", "thread apply all bt 12"],
                           stdout=sys.stderr, stderr=subprocess.DEVNULL, timeout=60)
        except subprocess.TimeoutExpired:
            print("paired: gdb could not stop %d within 60 s" % pid, file=sys.stderr)
    for task in glob.glob("/proc/[0-9]*/task/[0-9]*"):
        if read(task + "/stat").rsplit(")", 1)[-1].split()[:1] == ["D"]:
            print("paired: D state: %s (%s) %s" % (task, read(task + "/comm"),
                                                   read(task + "/stack").replace("\n", " | ")),
                  file=sys.stderr)
    sys.stderr.flush()


def hold_tracepoint(name):
    """An fd of a disabled perf event on tracepoint name (category/event),
    or None: while it is open the kernel keeps its perf probe registered,
    so flamekit's own events on it neither register nor unregister it.
    Both wait for RCU grace periods (its close in
    synchronize_rcu_tasks_trace), which with both CPUs busy with a pinned
    storm took up to a minute each (quiet) and made 4 rounds outlast 6
    minutes. The cost it leaves on every switch, flamekit or not (a call
    into a probe that finds no event on its CPU), is the same in every
    window, "none" too."""
    import ctypes
    import struct
    for root in ("/sys/kernel/tracing", "/sys/kernel/debug/tracing"):
        try:
            with open("%s/events/%s/id" % (root, name)) as f:
                tp = int(f.read())
            break
        except (OSError, ValueError):
            continue
    else:
        return None
    # struct perf_event_attr (PERF_ATTR_SIZE_VER5, 112 bytes): type 2
    # (PERF_TYPE_TRACEPOINT), size, config = the id; flags bit 0: disabled
    attr = struct.pack("=IIQQQQQ", 2, 112, tp, 0, 0, 0, 1).ljust(112, b"\0")
    buf = ctypes.create_string_buffer(attr, 112)
    libc = ctypes.CDLL(None, use_errno=True)
    nr = {"x86_64": 298, "aarch64": 241}.get(os.uname().machine)
    if nr is None:
        return None
    fd = libc.syscall(nr, buf, 0, -1, -1, ctypes.c_ulong(0))   # this process, any CPU
    return fd if fd >= 0 else None


def prog_stats(pid):
    """{prog_id: (run_time_ns, run_cnt)} of process pid's BPF programs, from
    its fds' fdinfo; counted only while kernel.bpf_stats_enabled is 1."""
    progs = {}
    for fd in glob.glob("/proc/%d/fdinfo/*" % pid):
        try:
            with open(fd) as f:
                info = dict(line.split(":", 1) for line in f.read().splitlines() if ":" in line)
            progs[int(info["prog_id"])] = (int(info["run_time_ns"]), int(info["run_cnt"]))
        except (OSError, KeyError, ValueError):
            continue
    return progs


def cpu_ns(pid):
    """process pid's CPU time so far in ns: its threads' schedstat (a
    thread that already exited is not counted: flamekit's threads live
    from its start to its end)"""
    total = 0
    for task in glob.glob("/proc/%d/task/*/schedstat" % pid):
        try:
            with open(task) as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            continue
    return total


def busiest(p0, p1):
    """(ns, hits) between two prog_stats of the program that ran most (the
    switch program: it runs at every sched_switch)"""
    d = [(p1[i][0] - p0[i][0], p1[i][1] - p0[i][1]) for i in p1 if i in p0]
    return max(d, key=lambda x: x[1], default=(0, 0))


def ticks_of(path):
    """the storm's "at WALL_NS TRIPS CPU_NS" lines as (wall, cpu, trips)"""
    t = []
    with open(path) as f:
        for line in f:
            p = line.split()
            if len(p) == 4 and p[0] == "at":
                t.append((int(p[1]), int(p[3]), int(p[2])))
    return t


def recorded_of(meta):
    """(switch-outs recorded, least N, most N) from a capture's metadata,
    or None"""
    def find(o):
        if isinstance(o, dict):
            if "switches_recorded" in o:
                return o
            for v in o.values():
                f = find(v)
                if f is not None:
                    return f
        return None
    f = find(meta)
    if not f or not f.get("switches_recorded"):
        return None
    return f["switches_recorded"], f.get("one_in_min", 0), f.get("one_in_max", 0)


def cpu_cgroup_v1():
    """the cgroup v1 mount with the cpu controller, or None"""
    try:
        with open("/proc/self/mountinfo") as f:
            for line in f:
                pre, _, post = line.partition(" - ")
                p = post.split()
                if len(p) >= 3 and p[0] == "cgroup" and "cpu" in p[2].split(","):
                    return pre.split()[4]
    except OSError:
        pass
    return None


def least_weight(cg, i, made):
    """(directory, file) whose cgroup.procs copy i joins to run at the
    least CPU weight: its v2 cgroup cg if the cpu controller is there,
    else a v1 cpu cgroup made for it (appended to made); None where
    neither is, or FK_BENCH_PAIRED_WEIGHT=same."""
    if os.environ.get("FK_BENCH_PAIRED_WEIGHT", "least") == "same":
        return None
    if cg and os.path.exists(os.path.join(cg, "cpu.weight")):
        with open(os.path.join(cg, "cpu.weight"), "w") as f:
            f.write("1")
        return cg
    v1 = cpu_cgroup_v1()
    if not v1:
        return None
    d = os.path.join(v1, "fk-bench-offcpu-paired-%d-copy%d" % (os.getpid(), i))
    os.mkdir(d)
    made.append(d)
    with open(os.path.join(d, "cpu.shares"), "w") as f:
        f.write("2")
    return d


def kthread_waits():
    """{(pid, comm): (run_delay ns, timeslices)} of the kernel's threads
    (kthreadd's children): how long each waited for a CPU so far"""
    out = {}
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            with open(stat) as f:
                st = f.read()
            comm = st[st.index("(") + 1:st.rindex(")")]
            if st[st.rindex(")") + 2:].split()[1] != "2":
                continue
            with open(stat[:-4] + "schedstat") as f:
                sc = f.read().split()
            out[(int(stat.split("/")[2]), comm)] = (int(sc[1]), int(sc[2]))
        except (OSError, ValueError, IndexError):
            continue
    return out


def lockups():
    """the kernel log's workqueue-watchdog lines so far (None: unreadable)"""
    try:
        r = subprocess.run(["dmesg"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return [x for x in r.stdout.splitlines() if "workqueue lockup" in x] if r.returncode == 0 \
        else None


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
    held = hold_tracepoint("sched/sched_switch")
    print("paired: sched:sched_switch's perf probe held registered for the whole run: %s" %
          ("yes" if held is not None else "no (flamekit's starts and ends may wait long)"))
    work = tempfile.mkdtemp(prefix="fk-bench-offcpu-paired.")
    modes = [n for n, _ in fks] + ["none"]
    secs = 86400       # killed at the end (a loaded host may take long to start each run)
    outs = [os.path.join(work, "storm%d" % i) for i in (0, 1)]
    cgs, ws, fkcpu, fkwall = [], [], {n: [] for n, _ in fks}, {n: [] for n, _ in fks}
    v1cgs = []          # cpu cgroups (v1) made for the storms' weight
    fksteady = {n: [] for n, _ in fks}
    fkrounds = {}       # (flamekit, round) -> [(CPU share, us a recorded switch-out)] by copy
    try:
        for i in (0, 1):
            cg = None
            if cgroot:
                cg = os.path.join(cgroot, "copy%d" % i)
                os.mkdir(cg)
                cgs.append(cg)
            weight = least_weight(cg, i, v1cgs)
            if i == 0:
                print("paired: the storms' CPU weight: %s" %
                      ("the least (%s)" % ("cgroup v2 cpu.weight 1" if weight == cg else
                                           "cgroup v1 cpu.shares 2")
                       if weight else "the default"))
            with open(outs[i], "w") as out:
                # the copy joins its cgroups before it runs (a shell moves
                # itself, then execs taskset and the storm)
                cmd = ["taskset", "-c", str(i), truth, "storm", str(secs)]
                for d in dict.fromkeys(x for x in (weight, cg) if x):
                    cmd = ["sh", "-c", 'echo $$ >"$0/cgroup.procs" && exec "$@"', d] + cmd
                ws.append(subprocess.Popen(cmd, stdout=out, stderr=subprocess.DEVNULL))
        waits0, lock0 = kthread_waits(), lockups()
        end = time.time() + 20
        while time.time() < end and min(len(ticks_of(x)) for x in outs) < 10:
            time.sleep(0.1)     # both started and warm
        fkpath = dict(fks)
        stop_ns = [0]
        nattach = [0]
        gave_up = []

        def give_up(p, why):
            """A flamekit that overstays: killed, waited for a little (one
            in D state cannot be killed: it is left), and the rounds end
            with the figures of those done, not with nothing."""
            p.kill()
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                print("paired: pid %d cannot be killed (D state): left" % p.pid, file=sys.stderr)
            gave_up.append(why)
            print("paired: %s: stopped (where its threads were: above); the figures below are "
                  "of the rounds done" % why, file=sys.stderr, flush=True)

        # stats windows: (ns, hits) by (flamekit, "target" or "control")
        hits = {(n, w): [] for n, _ in fks for w in ("target", "control")}

        def attach(c, m, stats=None):
            """One window of flamekit m on copy c; stats "target" or "control":
            instead a window of STATS_S at most timing the switch program
            with one copy stopped -- the other copy (the control) for
            "target", copy c itself for "control" -- so its hits are the
            profiled copy's switch-outs, or only switches it filters out."""
            if gave_up:
                return 0, 0     # the rounds end (what is done is kept)
            rnd = nattach[0] // (2 * len(fks)) if not stats else None
            if not stats:
                nattach[0] += 1
            out = os.path.join(work, "%s-%d" % (m, c))
            before = os.times()
            t0 = time.monotonic()
            steady = None
            rfd, wfd = os.pipe()
            # (a stats window outlasts its timing by STATS_SLACK_S: flamekit
            # must not close its program before the second reading)
            secs = min(window, STATS_S) + STATS_SLACK_S if stats else window
            p = subprocess.Popen([fkpath[m], "offcpu", "-q", "--no-svg", "-d",
                                  "%dms" % int(secs * 1000), "--ready-fd", str(wfd), "-o", out,
                                  "pid", str(ws[c].pid)], stdout=subprocess.DEVNULL, pass_fds=(wfd,))
            os.close(wfd)
            t_launch = time.time_ns()
            ready, waited = b"", 0
            while not ready and waited < ATTACH_SLACK_S and p.poll() is None:
                if select.select([rfd], [], [], 5)[0]:
                    ready = os.read(rfd, 16) or b"closed"
                else:
                    waited += 5
                    if waited in (15, 30):
                        stuck(p.pid, False)     # where a slow start is, not stopping it
            os.close(rfd)
            stopped = False
            try:
                if not ready.startswith(b"ready") and p.poll() is None:
                    stuck(p.pid)
                    give_up(p, "flamekit %s on copy %d did not open its window in %d s" %
                            (m, c, ATTACH_SLACK_S))
                    return 0, 0
                if ready.startswith(b"ready") and stats:
                    quiet = ws[1 - c] if stats == "target" else ws[c]
                    os.kill(quiet.pid, signal.SIGSTOP)
                    stopped = True
                    time.sleep(0.1)     # its last switches before the window
                    p0 = prog_stats(p.pid)
                    time.sleep(min(window, STATS_S))
                    p1 = prog_stats(p.pid)
                    ns_hits = busiest(p0, p1)
                    if ns_hits[1] > 0:
                        hits[(m, stats)].append(ns_hits)
                    else:
                        print("paired: %s: no program hits counted (%d programs seen, then %d)" %
                              (m, len(p0), len(p1)), file=sys.stderr)
                    time.sleep(STATS_SLACK_S - 0.1 + STOP_AFTER_S)
                    stop_ns[0] = time.time_ns()
                    for w in ws:
                        os.kill(w.pid, signal.SIGSTOP)
                elif ready.startswith(b"ready"):
                    # Both storms stop just after the window, until flamekit
                    # is done: with both CPUs busy, its exit took 10-31 s
                    # (quiet; its close of the tracepoint events waits for
                    # an RCU tasks-trace grace period, its files' fsync for
                    # the disk), which made 4 rounds outlast 6 minutes. The
                    # rates are taken within the window alone.
                    # flamekit's own CPU in the window (its steady state:
                    # no start, no exit), from its threads' schedstat
                    c0, w0 = cpu_ns(p.pid), time.monotonic()
                    time.sleep(window - 0.05)
                    c1, w1 = cpu_ns(p.pid), time.monotonic()
                    if c1 > c0:
                        steady = (c1 - c0) / ((w1 - w0) * 1e9)
                    time.sleep(0.05 + STOP_AFTER_S)
                    stop_ns[0] = time.time_ns()
                    for w in ws:
                        os.kill(w.pid, signal.SIGSTOP)
                    stopped = True
                try:
                    rc = p.wait(timeout=ATTACH_SLACK_S)
                except subprocess.TimeoutExpired:
                    stuck(p.pid)
                    give_up(p, "flamekit %s on copy %d ran %d s past its %.1f s window" %
                            (m, c, ATTACH_SLACK_S, window))
                    return 0, 0
            finally:
                if stopped:
                    for w in ws:
                        os.kill(w.pid, signal.SIGCONT)
            if rc:
                sys.exit("paired: flamekit %s on copy %d failed (status %d)" % (m, c, rc))
            done = time.monotonic() - t0
            time.sleep(WARM_S)  # the storms back at speed before the next window
            took = done
            after = os.times()
            # where a slow run went, as it happens (a run killed from
            # outside still shows how far it got)
            meta = json.load(open(glob.glob(out + "/*.json")[0]))
            lo = meta["start_unix_ns"]
            hi = lo + int(meta["duration_s"] * 1e9)
            if stopped and hi > stop_ns[0]:
                # (its rates would hold stopped time: this window is left
                # out -- its round's g for this flamekit -- not the call)
                print("paired: flamekit %s on copy %d: its window ended after the storms were "
                      "stopped: left out" % (m, c), file=sys.stderr, flush=True)
                shutil.rmtree(out)
                return 0, 0
            rec = recorded_of(meta)
            per_rec = ""
            if steady is not None and rec:
                fksteady[m].append(steady)
                # flamekit's CPU per recorded switch-out: its CPU in the
                # window over the window's recorded rate (N follows the
                # storm's rate, so the rate recorded moves from window to
                # window; this does not)
                us = 1e6 * steady * meta["duration_s"] / rec[0]
                fkrounds.setdefault((m, rnd), []).append((steady, us))
                per_rec = ", flamekit %.2f %% of a core in it, %.0f recorded/s at N %d..%d: " \
                    "%.2f us a recorded switch-out" % (100 * steady, rec[0] / meta["duration_s"],
                                                      rec[1], rec[2], us)
            print("paired: %s on copy %d: %.1f s for a %.1f s window (%.1f s before it, %.1f s "
                  "after it, the storms stopped)%s" % (m, c, took, window, (lo - t_launch) / 1e9,
                                                       took - (lo - t_launch) / 1e9 -
                                                       meta["duration_s"], per_rec),
                  file=sys.stderr, flush=True)
            shutil.rmtree(out)
            if stats:
                return lo, hi
            fkwall[m].append(took)
            fkcpu[m].append((after.children_user + after.children_system -
                             before.children_user - before.children_system) / meta["duration_s"])
            return lo, hi
        windows = paired_rounds(rounds, window, [n for n, _ in fks], attach)
        # The switch program's own time per hit, timed by the kernel in two
        # more windows per flamekit after the rounds (kernel.bpf_stats_enabled
        # costs every BPF program two clock reads a run -- ~76 ns a hit here
        # -- so it is off while the rounds measure the loss). It runs at
        # every sched_switch of both CPUs, and a hit of the target's costs
        # more than one it filters out: one window with the control stopped
        # (its hits are the target's), one with the target stopped (the
        # control's, which it only filters).
        stats_path = "/proc/sys/kernel/bpf_stats_enabled"
        was = open(stats_path).read().strip() if os.path.exists(stats_path) else None
        if was is not None and os.environ.get("FK_BENCH_PAIRED_STATS", "1") != "0":
            try:
                with open(stats_path, "w") as f:
                    f.write("1")
                for n, _ in fks:
                    for what in ("target", "control"):
                        attach(0, n, stats=what)
            finally:
                with open(stats_path, "w") as f:
                    f.write(was)
        time.sleep(0.3)
        t = [ticks_of(x) for x in outs]
        keep = os.environ.get("FK_BENCH_PAIRED_KEEP")
        if keep:
            os.makedirs(keep, exist_ok=True)
            for i in (0, 1):
                shutil.copy(outs[i], os.path.join(keep, "storm%d" % i))
            with open(os.path.join(keep, "windows.json"), "w") as f:
                json.dump({"rounds": rounds, "window": window, "modes": [n for n, _ in fks],
                           "windows": windows}, f)
        waits1, lock1 = kthread_waits(), lockups()
    finally:
        for w in ws:
            w.kill()
            w.wait()
        for cg in cgs + v1cgs:
            os.rmdir(cg)
        shutil.rmtree(work)
    # the kernel's threads that waited longest for a CPU while the storms
    # ran (a starved CPU's kworkers wait tens of seconds)
    secs_run = (max(x[-1][0] for x in t if x) - min(x[0][0] for x in t if x)) / 1e9 \
        if all(t) else 0
    grew = sorted(((w1[0] - waits0[k][0], w1[1] - waits0[k][1], k) for k, w1 in waits1.items()
                   if k in waits0), reverse=True)
    print("kernel threads' wait for a CPU over the %.0f s run, longest: %s" % (secs_run, ", ".join(
        "%s (%d) %.3f s in %d runs" % (k[1], k[0], ns / 1e9, n) for ns, n, k in grew[:4])))
    if lock0 is not None and lock1 is not None:
        new_lock = lock1[len(lock0):] if lock1[:len(lock0)] == lock0 else lock1
        print("workqueue lockups the kernel reported meanwhile: %d%s" %
              (len(new_lock), (" (" + new_lock[-1].strip() + ")") if new_lock else ""))
    g = paired_g(windows, t, rounds, [n for n, _ in fks])
    for c in (0, 1):
        # (rate: round trips per CPU second, per wall second)
        v = [rate(t[c], lo, hi) for r, cc, m, lo, hi in windows
             if cc == c and m == "none" and rate(t[c], lo, hi)]
        if v:
            print("copy %d (CPU %d) unprofiled: %.0f..%.0f round trips per CPU second, "
                  "%.0f..%.0f per wall second (\"none\" windows)" %
                  (c, c, min(x[0] for x in v), max(x[0] for x in v),
                   min(x[1] for x in v), max(x[1] for x in v)))
    secs = min(window, STATS_S)
    for (n, what), v in hits.items():
        if v:
            ns, cnt = sum(x[0] for x in v), sum(x[1] for x in v)
            print("flamekit %s: switch program %.0f ns per hit (kernel.bpf_stats_enabled, its "
                  "~76 ns included), %.0f hits/s, %.2f %% of a core: %s" %
                  (n, ns / cnt, cnt / (secs * len(v)), 100 * ns / (secs * len(v) * 1e9),
                   "the target's switches (the control stopped)" if what == "target" else
                   "switches it filters out (the target stopped, the control running)"))
    for k, what in ((0, "CPU"), (1, "wall")):
        for r in range(rounds):
            print("round %d g per %s second: %s" % (r, what, " ".join(
                "%s=%.4f" % (m, g[(m, k)][r]) for m in modes if r in g[(m, k)])))
    per_round = {}      # (m, 0: CPU share, 1: us a recorded switch-out) -> {round: geo mean}
    for (m, r), v in fkrounds.items():
        if len(v) == 2:
            for j in (0, 1):
                per_round.setdefault((m, j), {})[r] = (v[0][j] * v[1][j]) ** 0.5
    for j, what in ((0, "CPU share within the window"), (1, "CPU us a recorded switch-out")):
        for r in range(rounds):
            v = ["%s=%.5f" % (m, per_round[(m, j)][r]) for m, _ in fks
                 if r in per_round.get((m, j), {})]
            if v:
                print("round %d flamekit %s: %s" % (r, what, " ".join(v)))
    summary(g, per_round, range(rounds), [n for n, _ in fks])
    for n, v in fkcpu.items():
        if v:
            print("flamekit %s: CPU over its whole run per window second, %% of a core: "
                  "median %.2f, min..max %.2f..%.2f" %
                  (n, 100 * statistics.median(v), 100 * min(v), 100 * max(v)))
    for n, v in fksteady.items():
        if v:
            print("flamekit %s: CPU within its window (no start, no exit), %% of a core: "
                  "median %.2f, min..max %.2f..%.2f" %
                  (n, 100 * statistics.median(v), 100 * min(v), 100 * max(v)))
    for n, v in fkwall.items():
        if v:
            print("flamekit %s: wall time per run (a %.1f s window): median %.1f s, min..max "
                  "%.1f..%.1f s" % (n, window, statistics.median(v), min(v), max(v)))


def summary(g, per_round, rounds, names):
    """g: {(mode, 0 CPU / 1 wall): {round: g}}; per_round: {(flamekit, 0
    CPU share / 1 us a recorded switch-out): {round: value}}; rounds: an
    iterable of round keys (a number, or a (log, round) pair pooled)"""
    modes = list(names) + ["none"]
    rounds = list(rounds)
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
        for i, a0 in enumerate(names):
            for a1 in names[i + 1:]:
                v = [g[(a0, k)][r] / g[(a1, k)][r] for r in g[(a0, k)] if r in g[(a1, k)]]
                if len(v) >= 2:
                    show("%s / %s" % (a0, a1), v)
    # flamekit's CPU within its window, per round (the geometric mean of
    # its two windows, one per copy), and per recorded switch-out, each
    # flamekit over each other one round by round
    for j, what in ((0, "CPU share within the window"), (1, "CPU per recorded switch-out")):
        print("flamekit's %s, per round%s:" % (what, " (a share of a core)" if j == 0 else " (us)"))
        for m in names:
            v = list(per_round.get((m, j), {}).values())
            if len(v) >= 2:
                show(m, v)
        print("flamekit's %s, per round, ratio:" % what)
        for i, a0 in enumerate(names):
            for a1 in names[i + 1:]:
                p0, p1 = per_round.get((a0, j), {}), per_round.get((a1, j), {})
                v = [p0[r] / p1[r] for r in p0 if r in p1]
                if len(v) >= 2:
                    show("%s / %s" % (a0, a1), v)


def pool(logs):
    """The summaries over the rounds of several runs' output (their
    "round R ..." lines), each run's rounds kept apart by its log."""
    g, per_round, rounds, names = {}, {}, [], []
    for i, path in enumerate(logs):
        with open(path) as f:
            for line in f:
                p = line.split()
                if len(p) < 4 or p[0] != "round" or not p[1].isdigit():
                    continue
                r = (i, int(p[1]))
                if r not in rounds:
                    rounds.append(r)
                head = " ".join(p[2:])
                if head.startswith("g per CPU second:") or head.startswith("g per wall second:"):
                    k, vals = (0 if p[4] == "CPU" else 1), p[6:]
                    for x in vals:
                        m, v = x.split("=")
                        g.setdefault((m, k), {})[r] = float(v)
                        if m != "none" and m not in names:
                            names.append(m)
                elif head.startswith("flamekit CPU share within the window:"):
                    for x in p[8:]:
                        m, v = x.split("=")
                        per_round.setdefault((m, 0), {})[r] = float(v)
                elif head.startswith("flamekit CPU us a recorded switch-out:"):
                    for x in p[8:]:
                        m, v = x.split("=")
                        per_round.setdefault((m, 1), {})[r] = float(v)
    for m in names + ["none"]:
        for k in (0, 1):
            g.setdefault((m, k), {})
    print("pooled: %d rounds from %d runs (%s)" % (len(rounds), len(logs), " ".join(logs)))
    summary(g, per_round, rounds, names)


def sub_windows(keep, lengths):
    """Each round's g from the first T seconds of every window, for each T
    of lengths and the whole window, from a run kept with
    FK_BENCH_PAIRED_KEEP: the spread of g(none), of g(flamekit), and of
    their ratio per round, against T."""
    with open(os.path.join(keep, "windows.json")) as f:
        w = json.load(f)
    t = [ticks_of(os.path.join(keep, "storm%d" % i)) for i in (0, 1)]
    names, rounds = w["modes"], w["rounds"]
    print("sub-windows of %d rounds of %.1f s windows (%s): per CPU second, by the first T s "
          "of each window" % (rounds, w["window"], keep))
    for T in sorted(set([x for x in lengths if x < w["window"]] + [w["window"]])):
        cut = [(r, c, m, lo, min(hi, lo + int(T * 1e9))) for r, c, m, lo, hi in w["windows"]
               if hi > lo]
        g = paired_g(cut, t, rounds, names)
        print("T %.1f s:" % T)
        for m in names + ["none"]:
            v = list(g[(m, 0)].values())
            if len(v) >= 2:
                show("%s (sd %.4f)" % (m, statistics.stdev(v)), v)
        for m in names:
            v = [g[(m, 0)][r] / g[("none", 0)][r] for r in g[(m, 0)] if r in g[("none", 0)]]
            if len(v) >= 2:
                show("%s / none (sd %.4f)" % (m, statistics.stdev(v)), v)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--pool"]:
        pool(sys.argv[2:])
    elif sys.argv[1:2] == ["--ticks"]:
        sub_windows(sys.argv[2], [float(x) for x in sys.argv[3:]] or [1, 2, 4])
    else:
        main(sys.argv[1:])
