# SPDX-License-Identifier: GPL-2.0-only
# Python workloads with known shares, for test/t-python.sh and
# bench/python.sh. usage: python3.11 pytruth.py MODE SECONDS [OUT.json]
# Every mode spends its time in functions named for the test, in a known
# ratio, and writes what it did (work units per function) to OUT.json:
#   ratio      work_a : work_b = 3 : 1 (same loop, 3x the iterations);
#              also each one's CPU seconds (work_a_cpu, work_b_cpu)
#   recursion  rec_a (recursive, depth 30) : flat_b = 1 : 1; also each
#              one's CPU seconds (rec_a_cpu, flat_b_cpu)
#   generators gen_a (a generator's body) : consume_b (its consumer) = 3 : 1
#   threads    two threads, thread_a and thread_b, each counting its work
#              and its own CPU seconds (thread_a_cpu, thread_b_cpu): the GIL
#              gives them about equal CPU, but a vCPU the host steals from
#              makes one thread's units dearer, so CPU is their truth
#   extension  zlib.compress called from py_compress : py_loop = ~1 : 1
#   steady     two threads named fk-steady-a and fk-steady-b (the folded
#              stacks' roots) whose Python stacks never change while they
#              spin: deep_a x 41 under spin_a, deep_b x 13 under spin_b;
#              the second starts after a quarter of the CPU seconds, or
#              once the file $FK_STEADY_GO exists (a thread new to a
#              capture). Every sample of a thread must carry exactly its
#              chain, however the chain was read.
# The work unit is a fixed loop, so counts give the truth shares of the
# work; a CPU profile's truth is the CPU time, which the counts miss by the
# fixed cost of each call (work_b's unit costs about 4 % more than
# work_a's), so where a call can be timed it is, with the thread's CPU
# clock around the call (a system call per 0.4 ms unit: 0.1 %).
import json
import os
import random
import sys
import threading
import time
import zlib

UNIT = 10000
# Each call's work varies, 0.5-1.5 times its mean, in a seeded sequence.
# With fixed lengths the workload repeats every 0.5-1 ms on this VM, close
# to a multiple of 999 Hz's period (1.001 ms), and timer samples then dwell
# on one phase of the cycle: pinned recursion runs under ASan came out
# 3.5-6.5 points (3-6.5 binomial sd) off the truth, either sign, whenever
# the period was within ~8 % of a multiple of the cycle, and within 1.6 sd
# at every cycle length with varied lengths. A profile's truth must not
# depend on such a beat. Imported (bench/pybench.py), the lengths stay
# fixed: the throughput runs count calls.
VARY = None
DONE = {}


def units(name, k):
    """the iterations for one call of NAME (K units on average), counted"""
    n = k * UNIT
    if VARY:
        n = int(n * (0.5 + VARY.random()))
    DONE[name] = DONE.get(name, 0) + n
    return n


def spin(n):
    s = 0
    for i in range(n):
        s += i * i
    return s


def work_a():
    return spin(units("work_a", 3))


def work_b():
    return spin(units("work_b", 1))


def rec_a(depth):
    if depth == 0:
        return spin(units("rec_a", 1))
    return rec_a(depth - 1)


def flat_b():
    return spin(units("flat_b", 1))


def gen_a(n):
    for _ in range(n):
        yield spin(units("gen_a", 3))


def consume_b(n):
    t = 0
    for v in gen_a(n):
        t += v
        spin(units("consume_b", 1))
    return t


def thread_a(stop, counts):
    while not stop.is_set():
        spin(UNIT)
        counts["thread_a"] += 1
    counts["thread_a_cpu"] = time.thread_time()


def thread_b(stop, counts):
    while not stop.is_set():
        spin(UNIT)
        counts["thread_b"] += 1
    counts["thread_b_cpu"] = time.thread_time()


DATA = bytes(range(256)) * 2048


def py_compress():
    return zlib.compress(DATA, 6)


def py_loop():
    return spin(units("py_loop", 1))


def spin_a(stop):
    x = 0
    while not stop:
        x += 1


def spin_b(stop):
    x = 0
    while not stop:
        x += 1


def deep_a(n, stop):
    return deep_a(n - 1, stop) if n else spin_a(stop)


def deep_b(n, stop):
    return deep_b(n - 1, stop) if n else spin_b(stop)


def steady(name, prctl, deep, depth, stop):
    prctl(15, name.encode(), 0, 0, 0)   # PR_SET_NAME
    deep(depth, stop)


def done(name):
    """the work units NAME did"""
    return DONE.get(name, 0) / UNIT


def main():
    global VARY
    VARY = random.Random(1)
    mode, secs = sys.argv[1], float(sys.argv[2])
    out = sys.argv[3] if len(sys.argv) > 3 else None
    end = time.process_time() + secs
    counts = {}
    clock = time.thread_time
    if mode == "ratio":
        n = 0
        ca = cb = 0.0
        while time.process_time() < end:
            for _ in range(8):
                t0 = clock()
                work_a()
                t1 = clock()
                work_b()
                t2 = clock()
                ca += t1 - t0
                cb += t2 - t1
            n += 8
        counts = {"work_a": done("work_a"), "work_b": done("work_b"), "work_a_cpu": ca, "work_b_cpu": cb}
    elif mode == "recursion":
        n = 0
        ca = cb = 0.0
        while time.process_time() < end:
            t0 = clock()
            rec_a(30)
            t1 = clock()
            flat_b()
            t2 = clock()
            ca += t1 - t0
            cb += t2 - t1
            n += 1
        counts = {"rec_a": done("rec_a"), "flat_b": done("flat_b"), "rec_a_cpu": ca, "flat_b_cpu": cb}
    elif mode == "generators":
        n = 0
        while time.process_time() < end:
            consume_b(10)
            n += 10
        counts = {"gen_a": done("gen_a"), "consume_b": done("consume_b")}
    elif mode == "threads":
        counts = {"thread_a": 0, "thread_b": 0}
        stop = threading.Event()
        ts = [threading.Thread(target=thread_a, args=(stop, counts)),
              threading.Thread(target=thread_b, args=(stop, counts))]
        for t in ts:
            t.start()
        while time.process_time() < end:
            time.sleep(0.05)
        stop.set()
        for t in ts:
            t.join()
    elif mode == "extension":
        n = 0
        while time.process_time() < end:
            py_compress()
            py_loop()
            n += 1
        counts = {"py_compress": n, "py_loop": done("py_loop")}
    elif mode == "steady":
        import ctypes
        prctl = ctypes.CDLL(None).prctl
        stop = []   # the threads read it at every turn: set by appending
        ts = [threading.Thread(target=steady, args=("fk-steady-a", prctl, deep_a, 40, stop)),
              threading.Thread(target=steady, args=("fk-steady-b", prctl, deep_b, 12, stop))]
        ts[0].start()
        go = os.environ.get("FK_STEADY_GO")
        while not (os.path.exists(go) if go else time.process_time() >= end - 0.75 * secs):
            time.sleep(0.01)
        ts[1].start()
        while time.process_time() < end:
            time.sleep(0.02)
        stop.append(1)
        for t in ts:
            t.join()
    else:
        sys.exit("unknown mode " + mode)
    if out:
        with open(out, "w") as f:
            json.dump(counts, f)


if __name__ == "__main__":
    main()
