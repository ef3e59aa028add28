/* SPDX-License-Identifier: GPL-2.0-only */
/* fetch-bench's model, shared by the runner (fetch-bench.c: repositories,
 * servers, clients, rounds) and the report (bench-report.c: statistics,
 * report.md, report.json, the summary): the options, the settings and the
 * observations of each round. */
#ifndef FETCHD_BENCH_H
#define FETCHD_BENCH_H

#include "fetchd/fetchd.h"

#include <sched.h>

#define MAX_SIZES 4
#define MAX_NCLIENTS 8
enum mode { M_SOCK, M_GRPC_CONN, M_GRPC_SHARED, NMODES };
extern const char *const mode_name[NMODES];

struct bench_opts {
    const char *repo, *out, *shim;
    uint64_t sizes[MAX_SIZES];
    int nsizes;
    int clients[MAX_NCLIENTS];
    int nclients;
    bool modes[NMODES];
    bool cache_modes[2];        /* [0] without, [1] with the pack cache */
    uint64_t work, chunk, profile_ms;
    uint64_t grpc_window;       /* gRPC clients' HTTP/2 window with no BDP probing, or 0: 64K */
    bool grpc_bdp;              /* gRPC clients probe BDP and grow their window (gRPC's default) */
    uint64_t min_run_ms;        /* --work: a run shorter than this in the first
                                   round gets more fetches, and runs again */
    int fetches, rounds;
    bool profile;
    bool no_pin;                /* else servers and clients on CPUs of their own */
    bool loopback;              /* else (pinned, root) over a veth pair (bench-net.c) */
    bool no_probes;             /* no machine probes: every probe reads 0, no run is slow or retaken */
    const char *tcp_cc;         /* TCP congestion control in the veth pair's namespaces */
    bool delayed_acks;          /* veth: the clients' ACKs delayed as by default, not quickack */
};
extern struct bench_opts opt;

#define OBS_THREAD_GROUPS 8

/* One run: what was moved, in what time, at what cost. */
struct obs {
    double wall, bytes, fetches, server_cpu, git_cpu, client_cpu, client_minflt, alloc_calls, alloc_bytes;
    double server_csw, client_csw;  /* context switches of the server's threads, of the clients */
    double server_minflt;       /* the server process's minor page faults (not git's) */
    /* server_cpu and client_cpu: with sides, each side's own CPU plus the
     * work done in no task on its CPUs where the kernel keeps every task's
     * time per CPU (tasks_known), else the busy time of the servers' CPUs
     * less git's and of the clients' CPUs (fetch-bench.c, "each side's
     * CPU"); without sides these two: the server's threads' task-clock,
     * the client processes' own CPU */
    double server_threads_cpu, client_procs_cpu;
    /* the CPU time of the server's cgroup (its threads, ended ones
     * included, and git; NAN without one); git's as its task-clock
     * counters saw it; the server's own: its cgroup's time in a run
     * without git, else its threads' (git_cpu then takes the rest of the
     * cgroup's: fetch-bench.c, run) */
    double server_cgroup_cpu, git_task_clock, server_own_cpu;
    /* with sides: the CPU time between the marks each side's busy time was
     * taken from (its CPUs' seconds; the run's, or more when a mark was
     * read late): that busy time is within it */
    double server_cpus_elapsed, client_cpus_elapsed;
    /* with sides: each side's CPUs' busy time over the run, and where the
     * kernel gives it per CPU (tasks_known: cpuacct's root) every task's
     * CPU time on them, whoever's: the busy time less it is the interrupt
     * and softirq work done while they were idle. Each side's CPU is then
     * its own (server_own_cpu; the client processes') plus that
     * work, not other tasks' time on its CPUs (fetch-bench.c, "each side's
     * CPU"). */
    double server_cpus_busy, client_cpus_busy, server_cpus_tasks, client_cpus_tasks;
    bool tasks_known;
    /* with tasks_known and softirqd_known: the time of each side's CPUs'
     * softirq threads (ksoftirqd/N), a task whose work is the receive
     * work deferred there: counted in that side's CPU */
    double server_cpus_softirqd, client_cpus_softirqd;
    bool softirqd_known;
    /* on the veth pair: the packets and bytes the servers' end sent over
     * the run (TCP segments as the kernel handed them to the device, up to
     * 64 KiB each) and the packets it received (the clients' ACKs and
     * requests); 0 on loopback */
    double server_tx_packets, server_tx_bytes, server_rx_packets;
    bool sides;
    /* The server's context switches in the run by thread (fetch-bench.c,
     * threads_csw): its main thread, the threads alive after the run
     * grouped by name (those named as the process: its call or connection
     * threads), and the threads that ended during it, together. */
    struct thread_csw {
        char name[16];
        int threads;
        double csw;
    } by_thread[OBS_THREAD_GROUPS];
    int nby_thread;
    int server_threads;         /* alive after the run */
    double rss_mib, load1;
    double anon_mib;            /* the server's anonymous RSS after the run: heap, stacks (its own state) */
    double machine_busy;        /* %, every process on the machine */
    /* the machine's interrupts over the run (/proc/stat "intr": every
     * CPU's, inter-processor ones included): on the veth pair each wake-up
     * of the other side's CPU (RPS) is one, and the socket server's CPU
     * per fetch with the cache follows them (fetch-bench(1)) */
    double interrupts;
    /* of them (/proc/interrupts), those the servers' CPUs and the clients'
     * took: NAN when not pinned on sides or not readable */
    double server_cpus_interrupts, client_cpus_interrupts;
    double probe_ms;            /* the machine's speed: a fixed piece of work, CPU ms, before the run */
    double cprobe_ms;           /* its speed at compute (compute_probe_ms), before the run */
    double probe_after_ms, cprobe_after_ms;     /* both again after the run */
    /* the memory probe on the clients' CPUs before and after the run: the
     * clients' vCPU has slow spells of its own (fetch-bench.c, run_clients_slow) */
    double client_probe_ms, client_probe_after_ms;
    int retakes;                /* times the run was taken again (the host was slow) */
    bool slow;                  /* kept though a probe said the host was slow */
    bool clients_slow;          /* kept though a probe on the clients' CPUs said it was slow */
    bool alloc_counted;
};

/* A setting: one fetch size, cache or not, a client count, a mode. */
struct setting {
    int size, cache, nclients;
    enum mode mode;
    int fetches;                /* per client */
    struct obs *o;              /* [rounds] */
};

struct repo {
    char *path, *name;
    struct fk_buf req;
    uint64_t fetch_bytes;       /* one response */
};

/* A gRPC setting and the socket setting it is compared with. */
struct pair { struct setting *g, *s; };

extern struct repo repos[MAX_SIZES];
extern int nrepos;
extern struct setting *settings;
extern int nsettings;
extern struct pair *pairs;
extern int npairs;
extern int ncpus;
extern char pin_desc[192];   /* where servers and clients run (--no-pin) */
extern char net_desc[512];   /* how clients reach the servers (--loopback) */
/* Runs taken again because a probe around them took longer than
 * SLOW_PROBE x the reference of its kind, the PROBE_REF_PCT-th percentile
 * of its probes so far (the host was slow), and runs kept though slow (the
 * retake budget spent). */
#define SLOW_PROBE 1.15
#define PROBE_REF_PCT 10
/* What a gRPC client process grows its heap by after its warm-up. */
#define CLIENT_HEAP_MIB 32
/* A run whose clients' CPUs were busy beyond the client processes' own
 * CPU (other processes, kernel threads, receive work while idle:
 * fetch-bench.c, client_cpus_others_pct) over OTHERS_MAX_PCT % of the
 * time and over OTHERS_MARGIN_PCT points above its setting's lowest run
 * is crowded, and taken as slow. On a quiet machine 2-15 % (the socket
 * server with the cache on 10.8 MiB fetches 17-30 %: its clients' receive
 * work while idle), with other work 38-82 %. */
#define OTHERS_MAX_PCT 35
#define OTHERS_MARGIN_PCT 15
extern int runs_retaken, runs_slow_kept, runs_crowded_kept;
extern int runs_clients_slow_kept;     /* runs kept though the clients' probe said slow */
/* The retake pass after the rounds (fetch-bench.c, retake_slow): its
 * seconds; the seconds it spent waiting for normal probes, retakes or
 * not; the waits that ended with the host still slow or its clients'
 * CPUs crowded (either ends the pass); why it ended (no slow run left to
 * take again, its budget spent, a slow spell outlasting its wait, other
 * work, a signal). A slow spell that outlasts the budget leaves every
 * slow run kept: in session 17's second default sweep one began in the
 * last round and the pass spent its budget (about 50 s) on waits of 5 s
 * per group, each ending still slow: 0 taken again, 57 kept. */
struct retake_pass {
    double secs, wait_s;
    int waits_slow, waits_crowded;
    const char *ended;
    int between_rounds_runs;    /* of runs_retaken, those taken again between rounds */
    double rounds_s;            /* the rounds' own time, of which the budget is a share */
    int rounds_put_back;        /* group rounds whose retake was no better: the old runs kept */
};
/* The retakes' budget, a share of the rounds' own time (waits and retakes
 * between rounds and after them all count against it); the pass's one
 * wait for a slow spell to pass, itself cut short by the budget
 * (fetch-bench.c, retake_slow). */
#define RETAKE_BUDGET 0.15
#define RETAKE_BUDGET_SPENT "with its budget (15 % of the rounds' time) spent"
#define RETAKE_WAIT_S 10
#define RETAKE_WAIT_TEXT "10 s"
/* A median is taken over the rounds where the runs it needs were normal
 * when at least this many were (bench-report.c, rounds_used). */
#define MIN_NORMAL_ROUNDS 3
extern struct retake_pass retake_pass;
double client_cpus_others_pct(const struct obs *o);
double server_cpus_others_pct(const struct obs *o);
bool run_crowded(const struct setting *s, int r);
/* The probes around each run (obs: probe_ms, cprobe_ms, probe_after_ms,
 * cprobe_after_ms on the servers' CPUs; client_probe_ms,
 * client_probe_after_ms on the clients') and the PROBE_REF_PCT-th
 * percentile of each kind so far, its reference. */
enum { PROBE_MEM, PROBE_COMPUTE, PROBE_MEM_AFTER, PROBE_COMPUTE_AFTER, PROBE_CLIENT_MEM, PROBE_CLIENT_MEM_AFTER,
       NPROBES };
struct probe_ref {
    double *seen;
    int n, cap;
    double ref_ms;
};
extern struct probe_ref probe_ref[NPROBES];

struct setting *find_setting(int size, int cache, int n, enum mode m);
/* The setting the talk's table shows: the largest fetch, 4 clients (or the
 * largest count), gRPC on one shared connection (how gRPC multiplexes). */
void headline(int *size, int *n, enum mode *gm);
/* Dies unless every figure of every run is a finite number. */
void bench_check_figures(void);
/* report.md and report.json in opt.out; profiles[grpc][cache]: flame graph
 * paths relative to it, or NULL. Exits on a write error. */
void bench_write_reports(const char *cpu_source, char *profiles[2][2], double secs_total);
/* The gRPC/socket ratios on stdout. */
void bench_print_summary(void);

/* bench-net.c: the servers and the clients in network namespaces of their
 * own, joined by a veth pair whose ends receive on the servers' and the
 * clients' CPUs (RPS), so each side's TCP receive work is charged to its
 * own processes. false (why set) when that cannot be set up: the caller
 * stays on loopback. */
bool bench_net_setup(const cpu_set_t *server_cpus, const cpu_set_t *client_cpus, const char *tcp_cc, char *why,
                     size_t n);
bool bench_net_active(void);
const char *bench_net_server_ip(void);     /* what the servers listen on */
/* The calling thread into the servers' or the clients' namespace (no-op
 * on loopback), and back to fetch-bench's own. */
void bench_net_enter_server(void);
void bench_net_enter_client(void);
void bench_net_leave(void);
void bench_net_describe(const cpu_set_t *server_cpus, const cpu_set_t *client_cpus, char *out, size_t n);

#endif
