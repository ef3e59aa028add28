/* SPDX-License-Identifier: GPL-2.0-only */
/* fetch-bench's report: medians and ranges of each setting's figures and
 * of the gRPC/socket ratios (taken within a round), report.md (the talk's
 * table, a sentence per row, the verdicts against the talk, the sweeps,
 * the ratios, the flame graphs), report.json (every run and figure) and
 * the summary on stdout. See bench.h. */
#include "fetchd/bench.h"
#include "util/outfile.h"
#include "cmd/term.h"

#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

const char *const mode_name[NMODES] = { "sock", "grpc-conn", "grpc-shared" };
static const char *const mode_label[NMODES] = { "socket", "gRPC, a connection per client",
                                                "gRPC, one shared connection" };

/* ---- statistics ---- */

/* A median and range over n values (n: the rounds they came from). */
struct stat3 { double med, min, max; int n; };

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static struct stat3 stat_of(const double *v, int n)
{
    double *s = fk_calloc((size_t)n, sizeof *s);
    memcpy(s, v, sizeof *s * (size_t)n);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    struct stat3 r = { n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2, s[0], s[n - 1], n };
    free(s);
    return r;
}

/* The figures of a run, by name: what the tables and report.json show. */
enum fig {
    F_MIBS, F_CAP_MIBS, F_FETCHES_S, F_UTIL, F_SERVER_PCT, F_SERVER_S_GIB, F_CSW_GIB, F_GIT_S_GIB, F_CLIENT_S_GIB, F_CLIENT_PROCS_S_GIB, F_SC_S_GIB, F_ALLOC_B_GIB,
    F_ALLOC_CALLS_GIB, F_ALLOC_CALLS_FETCH, F_ALLOC_B_FETCH, F_RSS, F_ANON, F_LOAD, F_MACHINE, F_PROBE, F_INTR_FETCH,
    F_INTR_GIB, NFIGS
};
static const struct {
    const char *key, *label;
    bool alloc;
} figs[NFIGS] = {
    [F_MIBS] = { "throughput_mib_s", "throughput MiB/s (wall clock)", false },
    [F_CAP_MIBS] = { "cpu_bound_throughput_mib_s", "throughput MiB/s if CPU-bound", false },
    [F_FETCHES_S] = { "fetches_per_s", "fetches/s", false },
    [F_UTIL] = { "cpu_utilisation_pct", "CPU utilisation % (server+git+clients, of all CPUs)", false },
    [F_SERVER_PCT] = { "server_cpu_pct", "server CPU % of one CPU", false },
    [F_SERVER_S_GIB] = { "server_cpu_s_per_gib", "server CPU s/GiB", false },
    /* gRPC's CPU per GiB moves with it, ~10-13 us per switch (fetch-bench(1)) */
    [F_CSW_GIB] = { "server_context_switches_per_gib", "server context switches/GiB", false },
    [F_GIT_S_GIB] = { "git_cpu_s_per_gib", "git CPU s/GiB", false },
    [F_CLIENT_S_GIB] = { "client_cpu_s_per_gib", "clients CPU s/GiB", false },
    /* the client processes alone, beside it: not in any ratio (md_header) */
    [F_CLIENT_PROCS_S_GIB] = { "client_processes_cpu_s_per_gib", "client processes' own CPU s/GiB", false },
    [F_SC_S_GIB] = { "server_client_cpu_s_per_gib", "server + clients CPU s/GiB", false },
    [F_ALLOC_B_GIB] = { "alloc_bytes_per_gib", "allocated bytes/GiB", true },
    [F_ALLOC_CALLS_GIB] = { "alloc_calls_per_gib", "allocations/GiB", true },
    [F_ALLOC_CALLS_FETCH] = { "alloc_calls_per_fetch", "allocations/fetch", true },
    [F_ALLOC_B_FETCH] = { "alloc_bytes_per_fetch", "allocated bytes/fetch", true },
    [F_RSS] = { "peak_rss_mib", "server peak RSS MiB", false },
    [F_ANON] = { "anon_rss_mib", "server anonymous RSS MiB (heap, stacks)", false },
    [F_LOAD] = { "load1", "load1 after the run", false },
    [F_MACHINE] = { "machine_busy_pct", "machine busy % (everyone's work)", false },
    [F_PROBE] = { "machine_probe_ms", "machine probe CPU ms (a fixed piece of work: the machine's speed)", false },
    /* the socket server's CPU per fetch follows it, ~14 us an interrupt
     * (fetch-bench(1); intr_fit below) */
    [F_INTR_FETCH] = { "interrupts_per_fetch", "the machine's interrupts/fetch", false },
    [F_INTR_GIB] = { "interrupts_per_gib", "the machine's interrupts/GiB", false },
};


static double figure(const struct obs *o, enum fig f)
{
    double gib = o->bytes / (double)(1ull << 30);
    switch (f) {
    case F_MIBS: return o->bytes / (1 << 20) / o->wall;
    case F_CAP_MIBS: return o->bytes / (1 << 20) * ncpus / (o->server_cpu + o->git_cpu + o->client_cpu);
    case F_FETCHES_S: return o->fetches / o->wall;
    case F_UTIL: return 100 * (o->server_cpu + o->git_cpu + o->client_cpu) / (o->wall * ncpus);
    case F_SERVER_PCT: return 100 * o->server_cpu / o->wall;
    case F_SERVER_S_GIB: return o->server_cpu / gib;
    case F_CSW_GIB: return o->server_csw / gib;
    case F_GIT_S_GIB: return o->git_cpu / gib;
    case F_CLIENT_S_GIB: return o->client_cpu / gib;
    case F_CLIENT_PROCS_S_GIB: return o->client_procs_cpu / gib;
    case F_SC_S_GIB: return (o->server_cpu + o->client_cpu) / gib;
    case F_ALLOC_B_GIB: return o->alloc_bytes / gib;
    case F_ALLOC_CALLS_GIB: return o->alloc_calls / gib;
    case F_ALLOC_CALLS_FETCH: return o->alloc_calls / o->fetches;
    case F_ALLOC_B_FETCH: return o->alloc_bytes / o->fetches;
    case F_RSS: return o->rss_mib;
    case F_ANON: return o->anon_mib;
    case F_LOAD: return o->load1;
    case F_MACHINE: return o->machine_busy;
    case F_PROBE: return o->probe_ms;
    case F_INTR_FETCH: return o->interrupts / o->fetches;
    case F_INTR_GIB: return o->interrupts / gib;
    default: return 0;
    }
}


/* Ratios of gRPC (a mode) to the socket server, within each round. */
enum ratio { R_CPU, R_CAP, R_THR, R_ALLOC, R_SC, NRATIOS };
static const struct {
    const char *key, *label;
} ratio_info[NRATIOS] = {
    [R_CPU] = { "server_cpu_per_gib_grpc_over_sock", "server CPU/GiB gRPC/socket" },
    [R_CAP] = { "cpu_bound_throughput_sock_over_grpc", "throughput if CPU-bound socket/gRPC" },
    [R_THR] = { "throughput_sock_over_grpc", "throughput (wall clock) socket/gRPC" },
    [R_ALLOC] = { "alloc_bytes_per_gib_grpc_over_sock", "allocated bytes/GiB gRPC/socket" },
    /* The server's CPU moves with how much of the TCP work on each side
     * lands in the server's or the clients' accounting; their sum does not
     * (bench-net.c). */
    [R_SC] = { "server_client_cpu_per_gib_grpc_over_sock", "server + clients CPU/GiB gRPC/socket" },
};

static double ratio_of(const struct obs *g, const struct obs *s, enum ratio r)
{
    switch (r) {
    case R_CPU: return figure(g, F_SERVER_S_GIB) / figure(s, F_SERVER_S_GIB);
    case R_CAP: return figure(s, F_CAP_MIBS) / figure(g, F_CAP_MIBS);
    case R_THR: return figure(s, F_MIBS) / figure(g, F_MIBS);
    case R_SC: return figure(g, F_SC_S_GIB) / figure(s, F_SC_S_GIB);
    default: return figure(g, F_ALLOC_B_GIB) / figure(s, F_ALLOC_B_GIB);
    }
}

/* The rounds a figure is taken over: those where the host was normal
 * around the runs it needs (no probe said slow and no other work crowded
 * the CPUs: fetch-bench.c's retake_slow) when there are at least
 * MIN_NORMAL_ROUNDS of them (or every round is); else those where no run
 * it needs was crowded, when at least MIN_NORMAL_ROUNDS were so; else
 * every round. A run in a slow spell measures the host: in one quiet
 * invocation three rounds of a setting taken in such a spell raised
 * gRPC's CPU per GiB 30-60 % and the socket server's 15-20 %, and moved
 * the ratio's median 21 % from the next two invocations'. A crowded run
 * measures other work besides (session 16: a pair with 2 normal rounds
 * fell back to all 5, one crowded at 50 % other work, and its median
 * moved 11 % from the next invocation's), so it goes before a run a probe
 * merely called slow. */
enum rounds_used { USE_NORMAL, USE_UNCROWDED, USE_ALL };

/* clients: the figure counts the clients' CPU, so a run whose probe on
 * the clients' CPU said slow is left out too (fetch-bench.c,
 * run_clients_slow); the servers' figures keep it. */
static bool round_slow(const struct setting *g, const struct setting *s, int i, bool clients)
{
    return g->o[i].slow || (s && s->o[i].slow) || (clients && (g->o[i].clients_slow || (s && s->o[i].clients_slow)));
}

static bool round_crowded(const struct setting *g, const struct setting *s, int i)
{
    return run_crowded(g, i) || (s && run_crowded(s, i));
}

static enum rounds_used rounds_used(const struct setting *g, const struct setting *s, bool clients)
{
    int normal = 0, uncrowded = 0;
    for (int i = 0; i < opt.rounds; i++) {
        normal += !round_slow(g, s, i, clients);
        uncrowded += !round_crowded(g, s, i);
    }
    if (normal >= MIN_NORMAL_ROUNDS || normal == opt.rounds)
        return USE_NORMAL;
    return uncrowded >= MIN_NORMAL_ROUNDS ? USE_UNCROWDED : USE_ALL;
}

static bool use_round(const struct setting *g, const struct setting *s, int i, enum rounds_used u, bool clients)
{
    return u == USE_ALL || (u == USE_NORMAL ? !round_slow(g, s, i, clients) : !round_crowded(g, s, i));
}

/* The figures and ratios that count the clients' CPU. */
static bool fig_counts_clients(enum fig f)
{
    return f == F_CAP_MIBS || f == F_UTIL || f == F_CLIENT_S_GIB || f == F_CLIENT_PROCS_S_GIB || f == F_SC_S_GIB;
}

static bool ratio_counts_clients(enum ratio r)
{
    return r == R_CAP || r == R_SC;
}

static struct stat3 ratio_stat(const struct setting *g, const struct setting *s, enum ratio r)
{
    double v[1000];
    int n = 0;
    bool cl = ratio_counts_clients(r);
    enum rounds_used u = rounds_used(g, s, cl);
    for (int i = 0; i < opt.rounds; i++)
        if (use_round(g, s, i, u, cl))
            v[n++] = ratio_of(&g->o[i], &s->o[i], r);
    return stat_of(v, n);
}

static struct stat3 fig_stat(const struct setting *st, enum fig f)
{
    double v[1000];
    int n = 0;
    bool cl = fig_counts_clients(f);
    enum rounds_used u = rounds_used(st, NULL, cl);
    for (int i = 0; i < opt.rounds; i++)
        if (use_round(st, NULL, i, u, cl))
            v[n++] = figure(&st->o[i], f);
    return stat_of(v, n);
}

/* ---- the socket server's CPU at its setting's median interrupts ---- */

/* The socket server's CPU per fetch follows the machine's interrupts per
 * fetch from run to run (about 14 us of its CPU an interrupt on the virtual
 * machine it was measured on, correlation 0.96: fetch-bench(1)), and how
 * many interrupts a fetch takes is chance: how often a side was asleep when
 * the other's segments came. So beside the measured figures the report
 * prices each socket run at its setting's median interrupts per GiB:
 *
 *     y - k (x - median x)
 *
 * y its server CPU per GiB, x its interrupts per GiB, the median over the
 * rounds the setting's figure is taken over, and k the CPU an interrupt:
 * the slope of y on x over the socket settings of one cache state (their
 * runs the server's figure is taken over, each setting centred on its own
 * means, so that settings differing in both do not make it). gRPC's runs
 * are not priced: they take about ten times the interrupts a fetch, alike
 * in every state. A fit is used only when it has INTR_FIT_MIN_RUNS runs
 * from two settings at least and an interrupt costs CPU (k > 0); the
 * measured figures stay the report's own. */
#define INTR_FIT_MIN_RUNS 6
struct intr_fit {
    double k, r;                /* s of server CPU an interrupt; the correlation */
    int runs, settings;
    bool used;                  /* priced with it */
    const char *why;            /* else why not */
};

static double sock_priced(const struct setting *s, int r, const struct intr_fit *fit);

/* Whether a priced figure takes round r of socket setting s: its own, or a
 * ratio of it with a gRPC setting. */
static bool sock_round_priced(const struct setting *s, int r)
{
    if (use_round(s, NULL, r, rounds_used(s, NULL, false), false))
        return true;
    for (int k = 0; k < npairs; k++)
        if (pairs[k].s == s && use_round(pairs[k].g, s, r, rounds_used(pairs[k].g, s, false), false))
            return true;
    return false;
}

static struct intr_fit intr_fit_of(int cache)
{
    double sxx = 0, syy = 0, sxy = 0;
    struct intr_fit f = { 0 };
    for (int i = 0; i < nsettings; i++) {
        const struct setting *s = &settings[i];
        if (s->mode != M_SOCK || s->cache != cache)
            continue;
        enum rounds_used u = rounds_used(s, NULL, false);
        double mx = 0, my = 0;
        int n = 0;
        for (int r = 0; r < opt.rounds; r++)
            if (use_round(s, NULL, r, u, false)) {
                mx += figure(&s->o[r], F_INTR_GIB);
                my += figure(&s->o[r], F_SERVER_S_GIB);
                n++;
            }
        if (n < 2)
            continue;
        mx /= n;
        my /= n;
        for (int r = 0; r < opt.rounds; r++)
            if (use_round(s, NULL, r, u, false)) {
                double dx = figure(&s->o[r], F_INTR_GIB) - mx, dy = figure(&s->o[r], F_SERVER_S_GIB) - my;
                sxx += dx * dx;
                syy += dy * dy;
                sxy += dx * dy;
            }
        f.runs += n;
        f.settings++;
    }
    f.k = sxx > 0 ? sxy / sxx : 0;
    f.r = sxx > 0 && syy > 0 ? sxy / sqrt(sxx * syy) : 0;
    f.why = f.runs < INTR_FIT_MIN_RUNS || f.settings < 2 ? "too few runs (6 of 2 settings at least)"
            : f.k <= 0 ? "no CPU an interrupt" : NULL;
    /* A run a priced figure takes priced at nothing or less (a slow spell's
     * run far from its setting's interrupts, which only a ratio short of
     * normal rounds takes): not priced. */
    for (int i = 0; i < nsettings && !f.why; i++)
        if (settings[i].mode == M_SOCK && settings[i].cache == cache)
            for (int r = 0; r < opt.rounds && !f.why; r++)
                if (sock_round_priced(&settings[i], r) && sock_priced(&settings[i], r, &f) <= 0)
                    f.why = "a run it takes priced at nothing or less";
    f.used = !f.why;
    return f;
}

/* A socket run's server CPU per GiB at its setting's median interrupts
 * (fit: its cache state's, used). */
static double sock_priced(const struct setting *s, int r, const struct intr_fit *fit)
{
    double xref = fig_stat(s, F_INTR_GIB).med;
    return figure(&s->o[r], F_SERVER_S_GIB) - fit->k * (figure(&s->o[r], F_INTR_GIB) - xref);
}

static struct stat3 sock_priced_stat(const struct setting *s, const struct intr_fit *fit)
{
    double v[1000];
    int n = 0;
    enum rounds_used u = rounds_used(s, NULL, false);
    for (int i = 0; i < opt.rounds; i++)
        if (use_round(s, NULL, i, u, false))
            v[n++] = sock_priced(s, i, fit);
    return stat_of(v, n);
}

/* The gRPC/socket server CPU per GiB ratio with the socket run priced, over
 * the rounds the measured ratio is taken over. */
static struct stat3 ratio_priced_stat(const struct setting *g, const struct setting *s, const struct intr_fit *fit)
{
    double v[1000];
    int n = 0;
    enum rounds_used u = rounds_used(g, s, false);
    for (int i = 0; i < opt.rounds; i++)
        if (use_round(g, s, i, u, false))
            v[n++] = figure(&g->o[i], F_SERVER_S_GIB) / sock_priced(s, i, fit);
    return stat_of(v, n);
}

/* ---- formatting ---- */

static const char *human(double v, char *buf, size_t n)
{
    const char *u[] = { "B", "KiB", "MiB", "GiB", "TiB" };
    int i = 0;
    while (v >= 1024 && i < 4) {
        v /= 1024;
        i++;
    }
    snprintf(buf, n, i == 0 ? "%.0f %s" : "%.1f %s", v, u[i]);
    return buf;
}

/* A number with about three significant digits. */
static const char *num(double v, char *buf, size_t n)
{
    double a = fabs(v);
    snprintf(buf, n, a >= 100 ? "%.0f" : a >= 10 ? "%.1f" : a >= 1 ? "%.2f" : "%.3f", v);
    return buf;
}

static const char *cell(enum fig f, struct stat3 s, char *buf, size_t n)
{
    char a[32], b[32], c[32];
    bool bytes = f == F_ALLOC_B_GIB || f == F_ALLOC_B_FETCH;
    if (bytes)
        snprintf(buf, n, "%s (%s–%s)", human(s.med, a, sizeof a), human(s.min, b, sizeof b), human(s.max, c, sizeof c));
    else
        snprintf(buf, n, "%s (%s–%s)", num(s.med, a, sizeof a), num(s.min, b, sizeof b), num(s.max, c, sizeof c));
    return buf;
}

static const char *rcell(struct stat3 s, char *buf, size_t n)
{
    char a[32], b[32], c[32];
    snprintf(buf, n, "%s× (%s–%s)", num(s.med, a, sizeof a), num(s.min, b, sizeof b), num(s.max, c, sizeof c));
    return buf;
}

static json_t *jstat(struct stat3 s)
{
    return json_pack("{s:f,s:f,s:f,s:i}", "median", s.med, "min", s.min, "max", s.max, "n", s.n);
}

struct setting *find_setting(int size, int cache, int n, enum mode m)
{
    for (int i = 0; i < nsettings; i++)
        if (settings[i].size == size && settings[i].cache == cache && settings[i].nclients == n &&
            settings[i].mode == m)
            return &settings[i];
    return NULL;
}

void headline(int *size, int *n, enum mode *gm)
{
    *size = nrepos - 1;
    *n = opt.clients[opt.nclients - 1];
    for (int i = 0; i < opt.nclients; i++)
        if (opt.clients[i] == 4)
            *n = 4;
    *gm = opt.modes[M_GRPC_SHARED] && *n > 1 ? M_GRPC_SHARED : M_GRPC_CONN;
}

/* ---- report ---- */

static const char *size_label(int i, char *buf, size_t n)
{
    char h[32];
    snprintf(buf, n, "%s fetch", human((double)repos[i].fetch_bytes, h, sizeof h));
    return buf;
}

/* How --work and --min-run-time sized the runs. */
static const char *work_note(char *buf, size_t n)
{
    char w[32];
    snprintf(buf, n, " (%s per run, more where the first round's run took under %.1f s: raised then until "
             "it lasts that long, and again where the second round's took under three quarters of it; the "
             "same in every later round)", human((double)opt.work, w, sizeof w), (double)opt.min_run_ms / 1000);
    return buf;
}

/* A verdict line of "where the data disagrees with the talk". */
enum agree { DISAGREES, AGREES, CANNOT_TELL };
static void verdict(struct fk_outfile *md, json_t *arr, const char *claim, enum agree agrees, const char *fmt, ...)
    FK_PRINTF(5, 6);
static void verdict(struct fk_outfile *md, json_t *arr, const char *claim, enum agree agrees, const char *fmt, ...)
{
    static const char *const word[] = { "disagrees", "agrees", "cannot tell" };
    char what[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    fk_outfile_printf(md, "- %s **%c%s.** — %s\n", claim, word[agrees][0] - 'a' + 'A', word[agrees] + 1, what);
    json_array_append_new(arr, json_pack("{s:s,s:s,s:s}", "claim", claim, "verdict", word[agrees], "data", what));
}

/* Every figure of every run is a finite number, or the run was broken
 * (no bytes, no time, no CPU counted): never a report with holes. */
void bench_check_figures(void)
{
    for (int i = 0; i < nsettings; i++)
        for (int r = 0; r < opt.rounds; r++)
            for (int f = 0; f < NFIGS; f++) {
                double v = figure(&settings[i].o[r], (enum fig)f);
                if ((!figs[f].alloc || settings[i].o[r].alloc_counted) && (!isfinite(v) || v < 0))
                    fk_die("%s, %d clients, %s cache, round %d: %s is %g (no bytes, time or CPU counted?)",
                           mode_name[settings[i].mode], settings[i].nclients, settings[i].cache ? "with" : "no", r + 1,
                           figs[f].key, v);
            }
}

/* The talk's table: the headline setting (headline()), its socket and
 * gRPC settings with and without the cache, NULL where not run. */
struct talk {
    int hs, hn;
    enum mode hg;
    bool have_both;             /* the socket server and a gRPC mode ran */
    struct setting *T[2][2];    /* [grpc][cache] */
};
static const char *const colname[2][2] = { { "socket", "socket + cache" }, { "gRPC", "gRPC + cache" } };
/* Its rows, each with a sentence on what it shows. */
static const enum fig rows[] = { F_MIBS, F_CAP_MIBS, F_UTIL, F_MACHINE, F_SERVER_PCT, F_SERVER_S_GIB,
                                 F_ALLOC_B_GIB, F_ALLOC_CALLS_GIB, F_RSS };

static void talk_settings(struct talk *t)
{
    headline(&t->hs, &t->hn, &t->hg);
    t->have_both = opt.modes[M_SOCK] && (opt.modes[M_GRPC_CONN] || opt.modes[M_GRPC_SHARED]);
    for (int c = 0; c < 2; c++) {
        t->T[0][c] = opt.cache_modes[c] ? find_setting(t->hs, c, t->hn, M_SOCK) : NULL;
        t->T[1][c] = opt.cache_modes[c] ? find_setting(t->hs, c, t->hn, t->hg) : NULL;
    }
}

/* Which gRPC is compared, the first thing a reader of the figures needs:
 * by default the clients probe no bandwidth-delay product (fetch-bench.c,
 * fetchd_client_window), so that runs repeat, at a price to gRPC. */
static void md_grpc_window(struct fk_outfile *md)
{
    if (opt.grpc_bdp) {
        fk_outfile_printf(md, "**gRPC here runs with BDP probing (--grpc-bdp)**: its clients grow their HTTP/2 "
                          "window from their estimate of the link's bandwidth-delay product, as gRPC does by "
                          "default. How often they then announce window, and with it the gRPC server's context "
                          "switches and CPU per GiB, changes from one client process to the next, so these gRPC "
                          "figures do not repeat from run to run. Without --grpc-bdp (64 KiB, no probing) they "
                          "repeat, and gRPC's server uses 1.2–2.3× the CPU per GiB it uses here.\n\n");
        return;
    }
    char w[64] = "";
    if (opt.grpc_window && opt.grpc_window != 64u << 10) {
        char h[32];
        snprintf(w, sizeof w, " (%s asked for: gRPC 1.51 announces it once, then 64 KiB)",
                 human((double)opt.grpc_window, h, sizeof h));
    }
    fk_outfile_printf(md, "**gRPC here runs with BDP probing off**: its clients keep HTTP/2's default 64 KiB "
                      "window%s instead of growing it from their estimate of the link's bandwidth-delay product, as "
                      "gRPC does by default. With probing, the gRPC server switched between two rates of context "
                      "switches from one client process to the next and its figures did not repeat; without, a "
                      "client announces window once per 32 KiB message in every run. That costs gRPC: each window "
                      "update wakes its server's poller thread, and its server's CPU per GiB is 1.2–2.3× what it "
                      "is with probing (measured here on 1.4 MiB fetches with the cache), so every gRPC/socket CPU "
                      "ratio below is higher by as much (one client: about 3× against about 2×). `fetch-bench "
                      "--grpc-bdp` gives the figures with gRPC's own window.\n\n", w);
}

/* The title, the machine, the repositories, how CPU is counted. */
static void md_header(struct fk_outfile *md, const char *cpu_source, double secs_total, const char *release)
{
    char b1[320], b2[160], b3[160];
    fk_outfile_printf(md, "# fetch-bench: gRPC against a plain socket, serving git fetches\n\n");
    md_grpc_window(md);
    fk_outfile_printf(md,
                      "Machine: %d CPUs, Linux %s; the clients run on the same machine. %d rounds; in each, every "
                      "setting runs once, in the same order, so a change in the machine's load meets all "
                      "settings alike. Each client makes one warm-up fetch (not counted), then all clients start "
                      "together and make a set number of fetches%s. Figures are median (min–max) over the rounds; "
                      "ratios are taken within a round, then summarised. CPUs: %s. Network: %s. gRPC messages of "
                      "%s; the gRPC clients' HTTP/2 window: %s. The benchmark took %.0f s.\n\n",
                      ncpus, release, opt.rounds, opt.fetches ? "" : work_note(b1, sizeof b1), pin_desc,
                      net_desc, human((double)opt.chunk, b2, sizeof b2),
                      opt.grpc_bdp ? "gRPC's own (BDP probing)" : opt.grpc_window ?
                      human((double)opt.grpc_window, b3, sizeof b3) : "64 KiB, no BDP probing (fetch-bench(1))",
                      secs_total);
    fk_outfile_printf(md, "Repositories (generated text, one commit, packed with a bitmap, so git reuses the "
                      "pack):");
    for (int i = 0; i < nrepos; i++)
        fk_outfile_printf(md, "%s `%s` (%s per fetch)", i ? ";" : "", repos[i].name,
                          human((double)repos[i].fetch_bytes, b1, sizeof b1));
    fk_outfile_printf(md, ". gRPC messages of %llu bytes.\n\n", (unsigned long long)opt.chunk);
    bool sides = nsettings > 0 && settings[0].o[0].sides, tasks = sides && settings[0].o[0].tasks_known;
    fk_outfile_printf(md, "CPU: %s. Server = %s; git = its git upload-pack "
                      "children; clients = %s. CPU utilisation = "
                      "(server + git + clients) / (wall time × %d CPUs). Allocations: calls and bytes of "
                      "malloc/calloc/realloc in the server process (fetchd-malloc.so). Peak RSS: the server's "
                      "VmHWM during the run (reset before it). The clients keep the memory they free "
                      "(glibc's trim and mmap thresholds raised), so that gRPC's read buffers are not given back "
                      "to the kernel and faulted in again on every read, and a gRPC client grows its heap by %d MiB "
                      "per call in flight (up to 4 times that) of touched memory after its warm-up, so that the heap's growth over the timed fetches "
                      "(holes left by read buffers of changing sizes) faults in no fresh pages; the servers keep "
                      "glibc's defaults. A gRPC "
                      "client process runs all its calls (grpc-shared: one per client) from one thread through "
                      "one completion queue, and reads each message's bytes where they were received.\n\n",
                      cpu_source,
                      tasks ? "the server's own CPU over the run (its threads', ended connection threads included; "
                      "where no git ran, its cgroup's) plus what ran in no task on the servers' CPUs (their busy "
                      "time less every task's time on them: the receive work done while they were idle) and in their "
                      "softirq threads (ksoftirqd: receive work deferred there), not other tasks on those CPUs "
                      "(server_own_cpu_s, server_cpus_busy_s, server_cpus_tasks_s, server_cpus_ksoftirqd_s in "
                      "report.json)"
                      : sides ? "the servers' CPUs' busy time over the run less git's (the server process's own threads "
                      "and the receive work done on those CPUs; the threads alone are server_threads_cpu_s in "
                      "report.json)" : "the server process's own threads (where no git ran, its cgroup's CPU time)",
                      tasks ? "the client processes' own CPU over their timed fetches plus what ran in no task on "
                      "the clients' CPUs (their busy time less every task's time on them: the receive work done "
                      "while they were idle) and in their softirq threads, not other tasks on those CPUs "
                      "(client_processes_cpu_s, client_cpus_busy_s, client_cpus_tasks_s, client_cpus_ksoftirqd_s in "
                      "report.json). The figures and ratios that count the clients (server + clients CPU, "
                      "throughput if CPU-bound, CPU utilisation) take this, not the processes' own CPU (the "
                      "sweeps give it beside, client processes' own CPU s/GiB): a packet's receive work is "
                      "charged to the process it interrupted when the clients' CPU was busy and to no task when "
                      "it was idle, so the parts trade places from run to run and only their sum is the clients' "
                      "(with the cache on 10.8 MiB fetches, 4 gRPC clients a connection each, over three default "
                      "sweeps: the processes 1.68, 1.69 and 1.86 s/GiB, the work in no task 0.23, 0.16 and 0.11, "
                      "all of it 1.95, 1.89 and 2.01), and the server + clients ratio is meant to stay the same "
                      "wherever the TCP work of a fetch lands"
                      : sides ? "the clients' CPUs' busy time over the run (the client processes alone: "
                      "client_processes_cpu_s)" : "the client processes over their timed fetches",
                      ncpus, CLIENT_HEAP_MIB);
}

/* The machine's speed over the whole benchmark, the probes before the runs
 * (memory, compute): per-setting CPU figures move with it, ratios within a
 * round do not. */
static void probe_stats(struct stat3 probe[2])
{
    double *pv = fk_calloc((size_t)(nsettings * opt.rounds) + 1, sizeof *pv);
    for (int k = 0; k < 2; k++) {
        int np = 0;
        for (int i = 0; i < nsettings; i++)
            for (int r = 0; r < opt.rounds; r++)
                pv[np++] = k ? settings[i].o[r].cprobe_ms : settings[i].o[r].probe_ms;
        probe[k] = stat_of(pv, np);
    }
    free(pv);
}

/* A host slow for most of the sweep: the median of a kind of probe before
 * the runs over SLOW_PROBE x its reference (a low percentile), that is
 * more than half of the runs began on a slow host. Then few rounds are
 * normal, the medians are taken over every round, and the sweep's CPU
 * figures and ratios are those of a slow host: in session 15's second
 * quiet call the memory probe's median was 31.4 ms against a reference of
 * 19.2 (164 %; 76 of 110 runs slow) and its gRPC/socket CPU ratios were
 * higher than the first call's in all 14 settings. Over the sweeps of
 * sessions 13-15's quiet calls the memory probe's median was 91-111 % of
 * its reference, or 149-164 % (four sweeps on a slow host); the compute
 * probe's at most 113 %. over[]: each kind's median over its reference. */
static bool host_slow_most(double over[2])
{
    struct stat3 probe[2];
    probe_stats(probe);
    const double ref[2] = { probe_ref[PROBE_MEM].ref_ms, probe_ref[PROBE_COMPUTE].ref_ms };
    for (int k = 0; k < 2; k++)
        over[k] = ref[k] > 0 ? probe[k].med / ref[k] : 0;
    return !opt.no_probes && (over[0] > SLOW_PROBE || over[1] > SLOW_PROBE);
}

/* The probes, the slow and crowded runs: how far the figures are the servers'. */
static void md_machine_speed(struct fk_outfile *md, json_t *jr)
{
    struct stat3 probe[2];
    probe_stats(probe);
    double over[2];
    bool slow_most = host_slow_most(over);
    double *pv = fk_calloc((size_t)(nsettings * opt.rounds) + 1, sizeof *pv);
    int np = 0;
    for (int i = 0; i < nsettings; i++)
        for (int r = 0; r < opt.rounds; r++)
            pv[np++] = client_cpus_others_pct(&settings[i].o[r]);
    struct stat3 others = stat_of(pv, np);
    free(pv);
    if (opt.no_probes)
        fk_outfile_printf(md, "The machine's speed was not probed (--no-probes): no run was called slow or taken "
                          "again, and the probes read 0.\n\n");
    else
        fk_outfile_printf(md, "The machine's speed: two fixed pieces of work on the servers' CPU before and after each "
                          "run, one bound by memory (%s) and one by the core (%s), took %.2f ms (%.2f–%.2f) and %.2f ms "
                          "(%.2f–%.2f) of CPU before the %d runs. On a virtual machine they take longer when the host "
                          "is busier; the CPU per GiB of every setting (git's most) moves with them, the gRPC/socket "
                          "ratios, taken within a round, much less. A run where any of the four probes was over %.0f %% "
                          "of the reference of its kind, the %dth percentile of its probes (before: %.2f and %.2f ms; "
                          "after: %.2f and %.2f ms), was taken "
                          "while the host was slow (in two default sweeps' slow runs the gRPC server's CPU per GiB was "
                          "2–67 %% over its setting's median, the socket server's 0–161 %%, the most with the cache on "
                          "10.8 MiB fetches, whose clients then sent 2.5 times the ACKs per fetch): its round's runs of the settings it is compared with are taken again "
                          "together later (a slow spell lasts tens of seconds), once the probes are back to normal, at "
                          "most twice, while retakes cost under %.0f %% of the rounds' time: between rounds, without waiting, "
                          "where a ratio of a group could not otherwise have %d normal rounds; after the rounds, the "
                          "groups with a ratio short of %d normal rounds first (those of the servers' figures before "
                          "those that count the clients' CPU), waiting up to %d s for a spell to pass; a retake replaces "
                          "the round's runs only when it is better (normal for the servers' figures, then for every "
                          "figure, then fewer slow runs). The probes time their "
                          "work in CPU time and miss other processes sharing the CPUs, which each side's busy time "
                          "counts: a run whose clients' CPUs were busy beyond the client processes' own CPU over "
                          "%d %% of the time and %d points above its setting's lowest run (other work: here %.0f %% "
                          "(%.0f–%.0f); 2–16 %% on a quiet machine, the socket server's clients on large fetches with "
                          "the cache included, 38–82 %% in a call shared with other work) is crowded and taken as slow too. Runs taken "
                          "again: %d (%d between rounds; %d group rounds put back); kept though slow: %d, %d of them crowded (the retake pass took %.0f s, %.0f s "
                          "of it waiting for normal probes; %d wait(s) ended with the host still slow, %d with other "
                          "work; it ended %s). "
                          "Every median and range is over the "
                          "rounds where no run it needs was slow, when at least %d rounds were so, else over the rounds "
                          "where none was crowded, when at least that many were so, else over every round; "
                          "report.json gives each one's count as n.%s\n\n",
                          "integer mixing, scattered reads and writes in 64 MiB", "integer mixing in 16 KiB",
                          probe[0].med, probe[0].min, probe[0].max, probe[1].med, probe[1].min, probe[1].max,
                          nsettings * opt.rounds, SLOW_PROBE * 100, PROBE_REF_PCT, probe_ref[PROBE_MEM].ref_ms,
                          probe_ref[PROBE_COMPUTE].ref_ms, probe_ref[PROBE_MEM_AFTER].ref_ms,
                          probe_ref[PROBE_COMPUTE_AFTER].ref_ms, RETAKE_BUDGET * 100, MIN_NORMAL_ROUNDS,
                          MIN_NORMAL_ROUNDS, RETAKE_WAIT_S, OTHERS_MAX_PCT, OTHERS_MARGIN_PCT, others.med, others.min,
                          others.max, runs_retaken, retake_pass.between_rounds_runs, retake_pass.rounds_put_back, runs_slow_kept, runs_crowded_kept, retake_pass.secs, retake_pass.wait_s,
                          retake_pass.waits_slow, retake_pass.waits_crowded, retake_pass.ended, MIN_NORMAL_ROUNDS,
                          runs_crowded_kept ? " **Other work shared the benchmark's CPUs in runs kept: their CPU "
                          "figures are not the servers' alone; compare this sweep with others (bench/fetch-agree.sh) "
                          "or run it again on a quiet machine.**" : "");
    if (!opt.no_probes) {
        double *cv = fk_calloc((size_t)(nsettings * opt.rounds) + 1, sizeof *cv);
        int nc = 0;
        for (int i = 0; i < nsettings; i++)
            for (int r = 0; r < opt.rounds; r++)
                cv[nc++] = settings[i].o[r].client_probe_ms;
        struct stat3 cp = stat_of(cv, nc);
        free(cv);
        fk_outfile_printf(md, "The clients' CPU has slow spells of its own, which the probes on the servers' CPU do not "
                          "see (the client processes' CPU per fetch then 1.2–1.9× its setting's median, the memory "
                          "probe on the clients' CPU 1.5–2.0× its reference): that probe, before and after each run on "
                          "the clients' CPU, took %.2f ms (%.2f–%.2f) before the runs (references: before %.2f ms, "
                          "after %.2f ms). A run where it was over %.0f %% of its reference is taken again with the "
                          "slow ones; kept (%d runs here), it is left out of the figures that count the clients' CPU "
                          "(clients' CPU, server + clients CPU, throughput if CPU-bound, CPU utilisation, and their "
                          "ratios) as a slow run is, and kept in the servers' own.\n\n",
                          cp.med, cp.min, cp.max, probe_ref[PROBE_CLIENT_MEM].ref_ms,
                          probe_ref[PROBE_CLIENT_MEM_AFTER].ref_ms, SLOW_PROBE * 100, runs_clients_slow_kept);
    }
    if (slow_most)
        fk_outfile_printf(md, "**The host was slow for most of this sweep:** the probes' medians before the runs "
                          "were %.0f %% (memory) and %.0f %% (compute) of their references, over %.0f %%, so most runs "
                          "began on a slow host, few rounds were normal and the medians are mostly over every round. "
                          "Its CPU figures and gRPC/socket ratios are a slow host's (the gRPC server's CPU per GiB "
                          "rises more than the socket server's): do not compare them with a sweep on a normal host "
                          "(bench/fetch-agree.sh names such sweeps); run it again when the host is quiet.\n\n",
                          100 * over[0], 100 * over[1], SLOW_PROBE * 100);
    json_object_set_new(jr, "machine_probe_ms", jstat(probe[0]));
    json_object_set_new(jr, "compute_probe_ms", jstat(probe[1]));
    json_object_set_new(jr, "probe_reference_ms", json_real(probe_ref[PROBE_MEM].ref_ms));
    json_object_set_new(jr, "compute_probe_reference_ms", json_real(probe_ref[PROBE_COMPUTE].ref_ms));
    json_object_set_new(jr, "probe_after_reference_ms", json_real(probe_ref[PROBE_MEM_AFTER].ref_ms));
    json_object_set_new(jr, "compute_probe_after_reference_ms", json_real(probe_ref[PROBE_COMPUTE_AFTER].ref_ms));
    json_object_set_new(jr, "runs_retaken", json_integer(runs_retaken));
    json_object_set_new(jr, "runs_slow_kept", json_integer(runs_slow_kept));
    json_object_set_new(jr, "runs_crowded_kept", json_integer(runs_crowded_kept));
    json_object_set_new(jr, "runs_clients_slow_kept", json_integer(runs_clients_slow_kept));
    json_object_set_new(jr, "client_probe_reference_ms", json_real(probe_ref[PROBE_CLIENT_MEM].ref_ms));
    json_object_set_new(jr, "client_probe_after_reference_ms", json_real(probe_ref[PROBE_CLIENT_MEM_AFTER].ref_ms));
    json_object_set_new(jr, "retake_pass", json_pack("{s:f,s:f,s:i,s:i,s:s,s:i,s:f,s:i}", "seconds", retake_pass.secs,
                                                      "wait_seconds", retake_pass.wait_s, "waits_still_slow",
                                                      retake_pass.waits_slow, "waits_crowded",
                                                      retake_pass.waits_crowded, "ended", retake_pass.ended,
                                                      "runs_between_rounds", retake_pass.between_rounds_runs,
                                                      "rounds_seconds", retake_pass.rounds_s,
                                                      "rounds_put_back", retake_pass.rounds_put_back));
    json_object_set_new(jr, "probe_median_over_reference",
                        json_pack("{s:f,s:f}", "memory", over[0], "compute", over[1]));
    json_object_set_new(jr, "host_slow_most_of_sweep", json_boolean(slow_most));
    json_object_set_new(jr, "client_cpus_others_pct", jstat(others));
}

static void md_talk_table(struct fk_outfile *md, const struct talk *t)
{
    char b1[320], sl[64];
    int hs = t->hs, hn = t->hn;
    enum mode hg = t->hg;
    struct setting *const (*T)[2] = t->T;
    fk_outfile_printf(md, "## The talk's table\n\n%s, %d client%s, %s against the socket server.\n\n",
                      size_label(hs, sl, sizeof sl), hn, hn > 1 ? "s" : "", mode_label[hg]);
    fk_outfile_printf(md, "| |");
    for (int g = 1; g >= 0; g--)
        for (int c = 0; c < 2; c++)
            if (T[g][c])
                fk_outfile_printf(md, " %s |", colname[g][c]);
    fk_outfile_printf(md, "\n|---|");
    for (int g = 1; g >= 0; g--)
        for (int c = 0; c < 2; c++)
            if (T[g][c])
                fk_outfile_printf(md, "---|");
    fk_outfile_printf(md, "\n");
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        enum fig f = rows[r];
        fk_outfile_printf(md, "| %s |", figs[f].label);
        for (int g = 1; g >= 0; g--)
            for (int c = 0; c < 2; c++)
                if (T[g][c])
                    fk_outfile_printf(md, " %s |", figs[f].alloc && !T[g][c]->o[0].alloc_counted
                                                        ? "not counted" : cell(f, fig_stat(T[g][c], f), b1, sizeof b1));
        fk_outfile_printf(md, "\n");
    }
    fk_outfile_printf(md, "\n");
}

static void md_table_sentences(struct fk_outfile *md, json_t *jr, const struct talk *t)
{
    char b1[320], b2[160], b3[160];
    bool have_both = t->have_both;
    struct setting *const (*T)[2] = t->T;
    /* One sentence per row: what it shows, from the ratios. */
    json_t *jsent = json_object();
    enum { NROWS = sizeof rows / sizeof rows[0] };
    char sent[NROWS][1200];
    for (size_t r = 0; r < NROWS; r++)
        sent[r][0] = 0;
    for (int c = 0; c < 2 && have_both; c++) {
        if (!T[0][c] || !T[1][c])
            continue;
        struct setting *G = T[1][c], *S = T[0][c];
        const char *w = c ? "With the pack cache" : "Without the cache";
        for (size_t r = 0; r < NROWS; r++) {
            enum fig f = rows[r];
            struct stat3 g = fig_stat(G, f), so = fig_stat(S, f);
            char x[600] = "";
            switch (f) {
            case F_MIBS:
                snprintf(x, sizeof x, "%s, the socket server moved %s the bytes per second of gRPC (wall clock: "
                         "what the machine's other load left to the benchmark).", w,
                         rcell(ratio_stat(G, S, R_THR), b1, sizeof b1));
                break;
            case F_CAP_MIBS:
                snprintf(x, sizeof x, "%s, on CPUs given to the benchmark alone it would move %s (bytes per CPU "
                         "second of server, git and clients, times %d CPUs).", w,
                         rcell(ratio_stat(G, S, R_CAP), b1, sizeof b1), ncpus);
                break;
            case F_UTIL:
                snprintf(x, sizeof x, "%s, the benchmark's processes kept %.0f%% of the CPUs busy with gRPC and "
                         "%.0f%% with the socket server%s.", w, g.med, so.med,
                         g.med < 80 || so.med < 80 ? " (below 100%: waiting on git's start-up, or other work on "
                         "this shared machine took the rest)" : "");
                break;
            case F_MACHINE:
                snprintf(x, sizeof x, "%s, the machine was %.0f%% busy during the gRPC runs and %.0f%% during the "
                         "socket runs, counting everyone's work%s.", w, g.med, so.med,
                         g.med >= 90 || so.med >= 90 ? ": other work took what the benchmark did not use" : "");
                break;
            case F_SERVER_PCT:
                snprintf(x, sizeof x, "%s, the gRPC server process itself used %.0f%% of a CPU and the socket "
                         "server %.0f%%.", w, g.med, so.med);
                break;
            case F_SERVER_S_GIB:
                snprintf(x, sizeof x, "%s, gRPC's server spent %s the socket server's CPU per GiB served; "
                         "server and clients together %s (the steadier figure: how the TCP work of a transfer "
                         "divides between the server's and the clients' accounting moves from run to run)%s.", w,
                         rcell(ratio_stat(G, S, R_CPU), b1, sizeof b1), rcell(ratio_stat(G, S, R_SC), b2, sizeof b2),
                         sent[r][0] ? ""     /* said once per row */
                         : opt.grpc_bdp ? "; gRPC with BDP probing (--grpc-bdp): its figures change from run to run"
                                        : "; gRPC with BDP probing off (HTTP/2's 64 KiB window): its CPU per GiB "
                                          "is 1.2–2.3× what it is with probing (--grpc-bdp, which varies from run "
                                          "to run)");
                break;
            case F_ALLOC_B_GIB:
                if (G->o[0].alloc_counted && S->o[0].alloc_counted)
                    snprintf(x, sizeof x, "%s, gRPC allocated %s per GiB served, %s the socket server, which "
                             "allocated %s per fetch.", w, human(g.med, b1, sizeof b1),
                             rcell(ratio_stat(G, S, R_ALLOC), b2, sizeof b2),
                             human(fig_stat(S, F_ALLOC_B_FETCH).med, b3, sizeof b3));
                else
                    snprintf(x, sizeof x, "%s, allocations were not counted (servers built with AddressSanitizer, "
                             "or no fetchd-malloc.so).", w);
                break;
            case F_ALLOC_CALLS_GIB:
                if (G->o[0].alloc_counted && S->o[0].alloc_counted)
                    snprintf(x, sizeof x, "%s, gRPC made %s allocations per %llu-byte message and the socket "
                             "server %s per fetch.", w,
                             num(g.med / ((double)(1ull << 30) / (double)opt.chunk), b1, sizeof b1),
                             (unsigned long long)opt.chunk, num(fig_stat(S, F_ALLOC_CALLS_FETCH).med, b2, sizeof b2));
                else
                    snprintf(x, sizeof x, "%s, allocations were not counted.", w);
                break;
            case F_RSS: {
                struct stat3 ga = fig_stat(G, F_ANON), sa = fig_stat(S, F_ANON);
                snprintf(x, sizeof x, "%s, the gRPC server peaked at %.1f MiB resident and the socket server at "
                         "%.1f MiB; of that, %.1f and %.1f MiB were anonymous memory after the run (heap and "
                         "thread stacks: the server's own state), the rest the pages of its program and libraries%s.", w, g.med,
                         so.med, ga.med, sa.med,
                         c ? " (with the cache both load Nettle for the cache's SHA-256 keys: about 0.3 MiB, "
                             "mostly pages shared with every process that uses it)" : "");
                break;
            }
            default:
                break;
            }
            if (x[0])
                snprintf(sent[r] + strlen(sent[r]), sizeof sent[r] - strlen(sent[r]), "%s%s", sent[r][0] ? " " : "",
                         x);
        }
    }
    for (size_t r = 0; r < NROWS; r++)
        if (sent[r][0]) {
            fk_outfile_printf(md, "- **%s.** %s\n", figs[rows[r]].label, sent[r]);
            json_object_set_new(jsent, figs[rows[r]].key, json_string(sent[r]));
        }
    fk_outfile_printf(md, "\n");
    json_object_set_new(jr, "table_sentences", jsent);

}

static void md_against_talk(struct fk_outfile *md, json_t *jr, const struct talk *t)
{
    char b1[320], b2[160], b3[160], b4[160];
    int hn = t->hn;
    bool have_both = t->have_both;
    struct setting *const (*T)[2] = t->T;
    /* Where the data disagrees with the talk. */
    json_t *jv = json_array();
    if (have_both && T[0][0] && T[1][0] && T[0][1] && T[1][1]) {
        fk_outfile_printf(md, "## Against the talk\n\n");
        struct stat3 thr0 = ratio_stat(T[1][0], T[0][0], R_THR), cap0 = ratio_stat(T[1][0], T[0][0], R_CAP);
        verdict(md, jv, "The talk: the socket server (rpctest) doubles throughput without the cache.",
                cap0.med >= 1.6 && cap0.med <= 2.5 ? AGREES : DISAGREES,
                "here %s on CPUs given to the benchmark alone (%s by the wall clock); without the cache git "
                "upload-pack's CPU dominates both.", rcell(cap0, b1, sizeof b1), rcell(thr0, b2, sizeof b2));
        struct stat3 g0 = fig_stat(T[1][0], F_CAP_MIBS), g1 = fig_stat(T[1][1], F_CAP_MIBS);
        verdict(md, jv, "The talk: adding the pack cache gives gRPC more throughput.", g1.med > g0.med * 1.1 ? AGREES : DISAGREES,
                "here %s MiB/s with the cache against %s without, if CPU-bound.", num(g1.med, b1, sizeof b1),
                num(g0.med, b2, sizeof b2));
        /* Utilisation says something only when the benchmark had the
         * machine: when others kept it busy, they decided the share. */
        struct stat3 ug0 = fig_stat(T[1][0], F_UTIL), ug1 = fig_stat(T[1][1], F_UTIL);
        struct stat3 us0 = fig_stat(T[0][0], F_UTIL), us1 = fig_stat(T[0][1], F_UTIL);
        double busy = 0;
        for (int g = 0; g < 2; g++)
            for (int c = 0; c < 2; c++)
                if (fig_stat(T[g][c], F_MACHINE).med > busy)
                    busy = fig_stat(T[g][c], F_MACHINE).med;
        bool shared = busy >= 90;
        char why[300];
        snprintf(why, sizeof why, " The machine was up to %.0f%% busy with everyone's work (load1 %.1f): other work "
                 "took what the benchmark did not, so its share says nothing about saturation.", busy,
                 fig_stat(T[0][1], F_LOAD).med);
        verdict(md, jv, "The talk: with the cache gRPC's machine is slightly less utilised (about 77%), "
                "still nearly saturated.", shared ? CANNOT_TELL : ug1.med < ug0.med && ug1.med >= 60 ? AGREES : DISAGREES,
                "here %.0f%% with the cache against %.0f%% without.%s", ug1.med, ug0.med, shared ? why : "");
        verdict(md, jv, "The talk: the socket server without the cache saturates the CPUs (about 100%).",
                shared ? CANNOT_TELL : us0.med >= 90 ? AGREES : DISAGREES, "here %.0f%%.%s", us0.med, shared ? why : "");
        verdict(md, jv, "The talk: the socket server with the cache does not saturate the CPUs (load about 0.6).",
                shared ? CANNOT_TELL : us1.med < 90 ? AGREES : DISAGREES,
                "here %.0f%%; the clients run on the same CPUs as the server, so a faster server makes them busier."
                "%s", us1.med, shared ? why : "");
        struct stat3 cpu0 = ratio_stat(T[1][0], T[0][0], R_CPU), cpu1 = ratio_stat(T[1][1], T[0][1], R_CPU);
        verdict(md, jv, "The talk: gRPC spends more CPU queueing messages than writing them, i.e. more server "
                "CPU per byte than the socket server.", cpu0.med > 1 && cpu1.med > 1 ? AGREES : DISAGREES,
                "here %s without the cache and %s with it%s.", rcell(cpu0, b1, sizeof b1), rcell(cpu1, b2, sizeof b2),
                cpu0.min <= 1 || cpu1.min <= 1 ? " (the median; not in every round)" : "");
        static const char alloc_claim[] = "The talk: gRPC allocates in proportion to the bytes sent (115 GB in 30 s).",
                          sock_claim[] = "The talk: the socket server with the cache allocates a constant amount "
                                         "per request (5 MB in 30 s).";
        if (!T[1][0]->o[0].alloc_counted || !T[0][1]->o[0].alloc_counted) {
            const char *uncounted = "allocations were not counted: fetchd-malloc.so was not found, or the "
                                    "servers are built with AddressSanitizer, whose allocator a preloaded one "
                                    "cannot replace";
            verdict(md, jv, alloc_claim, CANNOT_TELL, "%s.", uncounted);
            verdict(md, jv, sock_claim, CANNOT_TELL, "%s.", uncounted);
        } else {
            struct stat3 ag = fig_stat(T[1][0], F_ALLOC_B_GIB);
            verdict(md, jv, alloc_claim,
                    ag.med >= 0.5 * (double)(1ull << 30) ? AGREES : DISAGREES, "here %s allocated per GiB served.",
                    human(ag.med, b1, sizeof b1));
            /* Per fetch, the socket server across sizes. */
            double lo = 1e300, hi = 0;
            for (int i = 0; i < nrepos; i++) {
                struct setting *s = find_setting(i, 1, hn, M_SOCK);
                if (s) {
                    double v = fig_stat(s, F_ALLOC_B_FETCH).med;
                    lo = v < lo ? v : lo;
                    hi = v > hi ? v : hi;
                }
            }
            verdict(md, jv, sock_claim, nrepos < 2 || hi <= lo * 1.1 ? AGREES : DISAGREES,
                    "here %s to %s per fetch over fetches of %s to %s.", human(lo, b1, sizeof b1),
                    human(hi, b2, sizeof b2), human((double)repos[0].fetch_bytes, b3, sizeof b3),
                    human((double)repos[nrepos - 1].fetch_bytes, b4, sizeof b4));
        }
        fk_outfile_printf(md, "\n");
    }
    json_object_set_new(jr, "talk", jv);

}

static void md_sweeps(struct fk_outfile *md)
{
    char b1[320], sl[64];
    /* Sweeps. */
    fk_outfile_printf(md, "## Sweeps\n\nEach setting: median (min–max) over %d rounds.\n\n", opt.rounds);
    static const enum fig sweep_figs[] = { F_MIBS, F_CAP_MIBS, F_SERVER_S_GIB, F_CSW_GIB, F_INTR_FETCH, F_GIT_S_GIB, F_CLIENT_S_GIB,
                                           F_CLIENT_PROCS_S_GIB, F_UTIL,
                                           F_ALLOC_B_GIB, F_ALLOC_CALLS_FETCH, F_RSS, F_ANON };
    for (int i = 0; i < nrepos; i++)
        for (int c = 0; c < 2; c++) {
            if (!opt.cache_modes[c])
                continue;
            fk_outfile_printf(md, "### %s, %s\n\n| clients | server | fetches/client |", size_label(i, sl, sizeof sl),
                              c ? "pack cache" : "no cache");
            for (size_t k = 0; k < sizeof sweep_figs / sizeof sweep_figs[0]; k++)
                fk_outfile_printf(md, " %s |", figs[sweep_figs[k]].label);
            fk_outfile_printf(md, "\n|---|---|---|");
            for (size_t k = 0; k < sizeof sweep_figs / sizeof sweep_figs[0]; k++)
                fk_outfile_printf(md, "---|");
            fk_outfile_printf(md, "\n");
            for (int q = 0; q < opt.nclients; q++)
                for (int m = 0; m < NMODES; m++) {
                    struct setting *s = find_setting(i, c, opt.clients[q], (enum mode)m);
                    if (!s)
                        continue;
                    fk_outfile_printf(md, "| %d | %s | %d |", s->nclients, mode_name[m], s->fetches);
                    for (size_t k = 0; k < sizeof sweep_figs / sizeof sweep_figs[0]; k++) {
                        enum fig f = sweep_figs[k];
                        fk_outfile_printf(md, " %s |", figs[f].alloc && !s->o[0].alloc_counted
                                                            ? "not counted" : cell(f, fig_stat(s, f), b1, sizeof b1));
                    }
                    fk_outfile_printf(md, "\n");
                }
            fk_outfile_printf(md, "\n");
        }

}

static void md_ratios(struct fk_outfile *md, json_t *jr, bool have_both)
{
    char b1[320], b2[160];
    /* Ratios. */
    json_t *jratios = json_array();
    if (have_both) {
        fk_outfile_printf(md, "## Ratios, gRPC against the socket server\n\nWithin each round, then median "
                          "(min–max). %s\n\n| fetch | cache | clients | gRPC | %s | %s | %s | %s | %s |\n"
                          "|---|---|---|---|---|---|---|---|---|\n",
                          opt.grpc_bdp ? "gRPC with BDP probing (--grpc-bdp): its CPU figures change from run to run."
                                       : "gRPC with BDP probing off (HTTP/2's 64 KiB window; see the top): its CPU "
                                         "ratios are 1.2–2.3× what they are with probing (--grpc-bdp).",
                          ratio_info[R_CPU].label, ratio_info[R_CAP].label,
                          ratio_info[R_THR].label, ratio_info[R_ALLOC].label, ratio_info[R_SC].label);
        for (int k = 0; k < npairs; k++) {
            struct setting *g = pairs[k].g, *s = pairs[k].s;
            int i = g->size, c = g->cache;
            json_t *o = json_pack("{s:I,s:b,s:i,s:s}", "fetch_bytes", (json_int_t)repos[i].fetch_bytes, "cache", c,
                                  "clients", g->nclients, "grpc_mode", mode_name[g->mode]);
            fk_outfile_printf(md, "| %s | %s | %d | %s |", human((double)repos[i].fetch_bytes, b1, sizeof b1),
                              c ? "yes" : "no", g->nclients, mode_name[g->mode]);
            for (int r = 0; r < NRATIOS; r++) {
                if (r == R_ALLOC && !(g->o[0].alloc_counted && s->o[0].alloc_counted)) {
                    fk_outfile_printf(md, " not counted |");
                    continue;
                }
                struct stat3 st = ratio_stat(g, s, (enum ratio)r);
                fk_outfile_printf(md, " %s |", rcell(st, b2, sizeof b2));
                json_object_set_new(o, ratio_info[r].key, jstat(st));
            }
            struct intr_fit fit = intr_fit_of(c);
            if (fit.used)
                json_object_set_new(o, "server_cpu_per_gib_grpc_over_sock_at_median_interrupts",
                                    jstat(ratio_priced_stat(g, s, &fit)));
            fk_outfile_printf(md, "\n");
            json_array_append_new(jratios, o);
        }
        fk_outfile_printf(md, "\n");
    }
    json_object_set_new(jr, "ratios", jratios);

}

/* The socket server's CPU at its setting's median interrupts (intr_fit):
 * the fit of each cache state, and the server CPU ratio so priced beside the
 * measured one. */
static void md_interrupts(struct fk_outfile *md, json_t *jr, bool have_both)
{
    char b1[160], b2[160], b3[160], b4[160], b5[160];
    struct intr_fit fit[2] = { intr_fit_of(0), intr_fit_of(1) };
    json_t *jf = json_array();
    if (!opt.modes[M_SOCK]) {
        json_object_set_new(jr, "socket_interrupt_fit", jf);
        return;
    }
    fk_outfile_printf(md, "## The socket server's CPU at its median interrupts per fetch\n\n"
                      "The socket server's CPU per fetch follows the machine's interrupts per fetch from run to "
                      "run (each a call to the host on a virtual machine; fetch-bench(1)), and how many a fetch "
                      "takes is chance. Here each socket run is also priced at its setting's median interrupts: "
                      "its server CPU per GiB less k × (its interrupts per GiB − the setting's median), k the "
                      "server CPU an interrupt, the slope over the socket settings of one cache state, each "
                      "setting centred on its own means (over the rounds its figure is taken over). The "
                      "measured figures above stay the report's; these are what they would have been had "
                      "every run taken its setting's median interrupts.\n\n");
    for (int c = 0; c < 2; c++) {
        if (!opt.cache_modes[c])
            continue;
        json_t *jc = json_pack("{s:b,s:f,s:f,s:i,s:i,s:b}", "cache", c, "us_per_interrupt", fit[c].k * 1e6, "r",
                               fit[c].r, "runs", fit[c].runs, "settings", fit[c].settings, "priced", fit[c].used);
        if (!fit[c].used)
            json_object_set_new(jc, "not_priced_because", json_string(fit[c].why));
        json_array_append_new(jf, jc);
        fk_outfile_printf(md, "- %s: %s µs of server CPU an interrupt (r = %.2f, %d runs of %d settings)%s%s\n",
                          c ? "With the cache" : "Without the cache", num(fit[c].k * 1e6, b1, sizeof b1), fit[c].r,
                          fit[c].runs, fit[c].settings, fit[c].used ? "" : "; not priced: ",
                          fit[c].used ? "" : fit[c].why);
    }
    json_object_set_new(jr, "socket_interrupt_fit", jf);
    if (!have_both || !(fit[0].used || fit[1].used)) {
        fk_outfile_printf(md, "\n");
        return;
    }
    fk_outfile_printf(md, "\n| fetch | cache | clients | gRPC | socket interrupts/fetch | socket server CPU s/GiB | "
                      "at the median interrupts | %s | at the median interrupts |\n|---|---|---|---|---|---|---|---|---|\n",
                      ratio_info[R_CPU].label);
    for (int k = 0; k < npairs; k++) {
        struct setting *g = pairs[k].g, *s = pairs[k].s;
        if (!fit[g->cache].used)
            continue;
        fk_outfile_printf(md, "| %s | %s | %d | %s | %s | %s | %s | %s |", human((double)repos[g->size].fetch_bytes, b1, sizeof b1),
                          g->cache ? "yes" : "no", g->nclients, mode_name[g->mode],
                          cell(F_INTR_FETCH, fig_stat(s, F_INTR_FETCH), b2, sizeof b2),
                          cell(F_SERVER_S_GIB, fig_stat(s, F_SERVER_S_GIB), b3, sizeof b3),
                          cell(F_SERVER_S_GIB, sock_priced_stat(s, &fit[g->cache]), b4, sizeof b4),
                          rcell(ratio_stat(g, s, R_CPU), b5, sizeof b5));
        fk_outfile_printf(md, " %s |\n", rcell(ratio_priced_stat(g, s, &fit[g->cache]), b1, sizeof b1));
    }
    fk_outfile_printf(md, "\n");
}

static void md_socket_allocs(struct fk_outfile *md)
{
    char b1[320], b2[160], sl[64];
    /* Socket allocations per fetch across sizes. */
    if (opt.modes[M_SOCK] && nrepos > 1 && find_setting(0, opt.cache_modes[0] ? 0 : 1, opt.clients[0], M_SOCK)->o[0].alloc_counted) {
        fk_outfile_printf(md, "## The socket server's allocations per fetch, by fetch size\n\n| cache | clients |");
        for (int i = 0; i < nrepos; i++)
            fk_outfile_printf(md, " %s |", size_label(i, sl, sizeof sl));
        fk_outfile_printf(md, "\n|---|---|");
        for (int i = 0; i < nrepos; i++)
            fk_outfile_printf(md, "---|");
        fk_outfile_printf(md, "\n");
        for (int c = 0; c < 2; c++)
            for (int q = 0; q < opt.nclients && opt.cache_modes[c]; q++) {
                fk_outfile_printf(md, "| %s | %d |", c ? "yes" : "no", opt.clients[q]);
                for (int i = 0; i < nrepos; i++) {
                    struct setting *s = find_setting(i, c, opt.clients[q], M_SOCK);
                    struct stat3 n = fig_stat(s, F_ALLOC_CALLS_FETCH), b = fig_stat(s, F_ALLOC_B_FETCH);
                    fk_outfile_printf(md, " %s calls, %s |", num(n.med, b1, sizeof b1), human(b.med, b2, sizeof b2));
                }
                fk_outfile_printf(md, "\n");
            }
        fk_outfile_printf(md, "\n");
    }

}

static void md_profiles(struct fk_outfile *md, json_t *jr, const struct talk *t, char *fk_profiles[2][2])
{
    char sl[64];
    int hs = t->hs, hn = t->hn;
    /* Flame graphs. */
    json_t *jprof = json_object();
    if (opt.profile) {
        fk_outfile_printf(md, "## Flame graphs\n\nCaptured with `flamekit pid` in separate runs after the rounds "
                          "(%s, %d clients), so the profiler's cost is in none of the figures above.\n\n",
                          size_label(hs, sl, sizeof sl), hn);
        for (int g = 1; g >= 0; g--)
            for (int c = 0; c < 2; c++)
                if (fk_profiles[g][c]) {
                    fk_outfile_printf(md, "- [%s](%s)\n", colname[g][c], fk_profiles[g][c]);
                    json_object_set_new(jprof, colname[g][c], json_string(fk_profiles[g][c]));
                }
        fk_outfile_printf(md, "\n");
    }
    json_object_set_new(jr, "profiles", jprof);
}
/* report.json's record of one run. */
static json_t *json_run(const struct setting *s, int r)
{
    const struct obs *b = &s->o[r];
    json_t *x = json_pack("{s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f}", "wall_s", b->wall, "bytes", b->bytes,
                          "fetches", b->fetches, "server_cpu_s", b->server_cpu, "git_cpu_s", b->git_cpu,
                          "client_cpu_s", b->client_cpu, "peak_rss_mib", b->rss_mib, "load1", b->load1);
    json_object_set_new(x, "anon_rss_mib", json_real(b->anon_mib));
    json_object_set_new(x, "client_page_faults", json_real(b->client_minflt));
    json_object_set_new(x, "server_page_faults", json_real(b->server_minflt));
    json_object_set_new(x, "server_tx_packets", json_real(b->server_tx_packets));
    json_object_set_new(x, "server_tx_bytes", json_real(b->server_tx_bytes));
    json_object_set_new(x, "server_rx_packets", json_real(b->server_rx_packets));
    json_object_set_new(x, "server_context_switches", json_real(b->server_csw));
    json_object_set_new(x, "client_context_switches", json_real(b->client_csw));
    if (b->nby_thread) {
        json_t *bt = json_object();
        for (int t = 0; t < b->nby_thread; t++)
            json_object_set_new(bt, b->by_thread[t].name,
                                json_pack("{s:i,s:f}", "threads", b->by_thread[t].threads,
                                          "context_switches", b->by_thread[t].csw));
        json_object_set_new(x, "server_context_switches_by_thread", bt);
        json_object_set_new(x, "server_threads_after", json_integer(b->server_threads));
    }
    if (isfinite(b->server_cgroup_cpu)) {
        json_object_set_new(x, "server_cgroup_cpu_s", json_real(b->server_cgroup_cpu));
        json_object_set_new(x, "git_task_clock_s", json_real(b->git_task_clock));
    }
    if (b->sides) {
        json_object_set_new(x, "server_threads_cpu_s", json_real(b->server_threads_cpu));
        json_object_set_new(x, "server_own_cpu_s", json_real(b->server_own_cpu));
        json_object_set_new(x, "client_processes_cpu_s", json_real(b->client_procs_cpu));
        json_object_set_new(x, "server_cpus_elapsed_s", json_real(b->server_cpus_elapsed));
        json_object_set_new(x, "client_cpus_elapsed_s", json_real(b->client_cpus_elapsed));
        json_object_set_new(x, "server_cpus_busy_s", json_real(b->server_cpus_busy));
        json_object_set_new(x, "client_cpus_busy_s", json_real(b->client_cpus_busy));
        if (b->tasks_known) {
            json_object_set_new(x, "server_cpus_tasks_s", json_real(b->server_cpus_tasks));
            json_object_set_new(x, "client_cpus_tasks_s", json_real(b->client_cpus_tasks));
        }
        if (b->tasks_known && b->softirqd_known) {
            json_object_set_new(x, "server_cpus_ksoftirqd_s", json_real(b->server_cpus_softirqd));
            json_object_set_new(x, "client_cpus_ksoftirqd_s", json_real(b->client_cpus_softirqd));
        }
        json_object_set_new(x, "client_cpus_others_pct", json_real(client_cpus_others_pct(b)));
        json_object_set_new(x, "server_cpus_others_pct", json_real(server_cpus_others_pct(b)));
    }
    json_object_set_new(x, "crowded", json_boolean(run_crowded(s, r)));
    json_object_set_new(x, "machine_busy_pct", json_real(b->machine_busy));
    json_object_set_new(x, "interrupts", json_real(b->interrupts));
    if (isfinite(b->server_cpus_interrupts) && isfinite(b->client_cpus_interrupts)) {
        json_object_set_new(x, "server_cpus_interrupts", json_real(b->server_cpus_interrupts));
        json_object_set_new(x, "client_cpus_interrupts", json_real(b->client_cpus_interrupts));
    }
    json_object_set_new(x, "machine_probe_ms", json_real(b->probe_ms));
    json_object_set_new(x, "compute_probe_ms", json_real(b->cprobe_ms));
    json_object_set_new(x, "machine_probe_after_ms", json_real(b->probe_after_ms));
    json_object_set_new(x, "compute_probe_after_ms", json_real(b->cprobe_after_ms));
    json_object_set_new(x, "retakes", json_integer(b->retakes));
    json_object_set_new(x, "host_slow", json_boolean(b->slow));
    json_object_set_new(x, "client_probe_ms", json_real(b->client_probe_ms));
    json_object_set_new(x, "client_probe_after_ms", json_real(b->client_probe_after_ms));
    json_object_set_new(x, "clients_slow", json_boolean(b->clients_slow));
    if (b->alloc_counted) {
        json_object_set_new(x, "alloc_calls", json_real(b->alloc_calls));
        json_object_set_new(x, "alloc_bytes", json_real(b->alloc_bytes));
    }
    return x;
}

/* report.json's record of a setting: its runs, its figures' medians and ranges. */
static json_t *json_setting(const struct setting *s)
{
    json_t *o = json_pack("{s:I,s:b,s:i,s:s,s:i}", "fetch_bytes", (json_int_t)repos[s->size].fetch_bytes, "cache",
                          s->cache, "clients", s->nclients, "server", mode_name[s->mode], "fetches_per_client",
                          s->fetches);
    json_t *runs = json_array();
    for (int r = 0; r < opt.rounds; r++)
        json_array_append_new(runs, json_run(s, r));
    json_object_set_new(o, "runs", runs);
    json_t *sum = json_object();
    for (int f = 0; f < NFIGS; f++)
        if (!figs[f].alloc || s->o[0].alloc_counted)
            json_object_set_new(sum, figs[f].key, jstat(fig_stat(s, (enum fig)f)));
    struct intr_fit fit = intr_fit_of(s->cache);
    if (s->mode == M_SOCK && fit.used)
        json_object_set_new(sum, "server_cpu_s_per_gib_at_median_interrupts", jstat(sock_priced_stat(s, &fit)));
    json_object_set_new(o, "figures", sum);
    return o;
}

/* report.json: the sweep (jr: what the report.md writers gathered), every
 * setting and run; taken by its decref. Exits on a write error. */
static void write_json(const char *cpu_source, const char *release, const struct talk *t, json_t *jr)
{
    char path[PATH_MAX + 16], err[512] = "";
    json_t *j = json_pack("{s:i,s:s,s:s,s:i,s:I,s:I,s:b,s:b,s:s,s:s,s:s}", "cpus", ncpus, "kernel", release,
                          "cpu_accounting", cpu_source, "rounds", opt.rounds, "chunk_size", (json_int_t)opt.chunk,
                          "grpc_client_window", (json_int_t)opt.grpc_window, "grpc_bdp_probe", opt.grpc_bdp,
                          "machine_probes", !opt.no_probes,
                          "pinning", pin_desc, "network", net_desc, "network_kind",
                          bench_net_active() ? "veth" : "loopback");
    json_t *jrepos = json_array();
    for (int i = 0; i < nrepos; i++)
        json_array_append_new(jrepos, json_pack("{s:s,s:I}", "repository", repos[i].path, "fetch_bytes",
                                                (json_int_t)repos[i].fetch_bytes));
    json_object_set_new(j, "repositories", jrepos);
    json_object_set_new(j, "headline", json_pack("{s:I,s:i,s:s}", "fetch_bytes", (json_int_t)repos[t->hs].fetch_bytes,
                                                 "clients", t->hn, "grpc_mode", mode_name[t->hg]));
    json_t *jset = json_array();
    for (int i = 0; i < nsettings; i++)
        json_array_append_new(jset, json_setting(&settings[i]));
    json_object_set_new(j, "settings", jset);
    json_object_update(j, jr);
    json_decref(jr);
    char *js = json_dumps(j, JSON_INDENT(2));
    struct fk_outfile jf;
    snprintf(path, sizeof path, "%s/report.json", opt.out);
    bool ok = fk_outfile_open(&jf, path, 0644, err, sizeof err);
    if (ok && !(fk_outfile_printf(&jf, "%s\n", js) && fk_outfile_commit(&jf, err, sizeof err))) {
        fk_outfile_abort(&jf);
        ok = false;
    }
    free(js);
    json_decref(j);
    if (!ok) {
        if (err[0])
            fk_error("%s", err);
        exit(1);
    }
}
void bench_write_reports(const char *cpu_source, char *fk_profiles[2][2], double secs_total)
{
    char path[PATH_MAX + 16], err[512] = "";
    struct fk_outfile md;
    snprintf(path, sizeof path, "%s/report.md", opt.out);
    if (!fk_outfile_open(&md, path, 0644, err, sizeof err))
        fk_die("%s", err);
    struct utsname un;
    uname(&un);
    struct talk t = { 0 };
    talk_settings(&t);
    json_t *jr = json_object();
    md_header(&md, cpu_source, secs_total, un.release);
    md_machine_speed(&md, jr);
    md_talk_table(&md, &t);
    md_table_sentences(&md, jr, &t);
    md_against_talk(&md, jr, &t);
    md_sweeps(&md);
    md_ratios(&md, jr, t.have_both);
    md_interrupts(&md, jr, t.have_both);
    md_socket_allocs(&md);
    md_profiles(&md, jr, &t, fk_profiles);
    if (!fk_outfile_commit(&md, err, sizeof err))
        fk_die("%s", err);
    write_json(cpu_source, un.release, &t, jr);
}

void bench_print_summary(void)
{
    char b1[160], b2[160], b3[160], b4[160], b5[160], sl[64];
    printf("gRPC against the socket server (median (min-max) of %d rounds, or of the rounds the host was not slow "
           "in where it was in some): server CPU per GiB gRPC/socket, "
           "throughput socket/gRPC if CPU-bound and by the wall clock, server and clients' CPU per GiB "
           "gRPC/socket, allocated bytes per GiB gRPC/socket\n",
           opt.rounds);
    for (int k = 0; k < npairs; k++) {
        struct setting *g = pairs[k].g, *s = pairs[k].s;
        struct stat3 cpu = ratio_stat(g, s, R_CPU);
        char nr[32] = "";
        if (cpu.n < opt.rounds)
            snprintf(nr, sizeof nr, " (%d rounds)", cpu.n);
        printf("%-14s %-8s %d clients %-11s%s server CPU/GiB %s  throughput %s (wall clock %s)  "
               "server+clients CPU/GiB %s",
               size_label(g->size, sl, sizeof sl), g->cache ? "cache" : "no cache", g->nclients, mode_name[g->mode],
               nr, rcell(cpu, b1, sizeof b1), rcell(ratio_stat(g, s, R_CAP), b2, sizeof b2),
               rcell(ratio_stat(g, s, R_THR), b4, sizeof b4), rcell(ratio_stat(g, s, R_SC), b5, sizeof b5));
        if (g->o[0].alloc_counted && s->o[0].alloc_counted)
            printf("  alloc/GiB %s", rcell(ratio_stat(g, s, R_ALLOC), b3, sizeof b3));
        printf("\n");
    }
    double over[2];
    if (host_slow_most(over))
        printf("the host was slow for most of the sweep (probes' medians %.0f %% and %.0f %% of their references): "
               "these figures are a slow host's, not comparable with a sweep on a normal host\n",
               100 * over[0], 100 * over[1]);
}
