/* SPDX-License-Identifier: GPL-2.0-only */
/* The result contract: how capture results are named and what their
 * metadata says. Every capture writes
 *     HOST.YYYYMMDD_HHMMSS_UTC.SCOPE[.PROFILE].{flamegraph.svg,folded.gz,pb.gz,json}
 * (PROFILE is left out for CPU profiles: ".faults" for fault captures) and
 * the .json follows one versioned schema, flamekit-metadata(5). Names are
 * built and parsed only here; readers (upload, merge, remote) use
 * fk_result_parse and fk_result_meta_load.
 *
 * Invariants: HOST may contain dots, SCOPE and PROFILE are file-name words
 * ([A-Za-z0-9._-], never starting with '.'), the stamp is the capture's
 * start in UTC, and a name built here parses back to the same parts. */
#ifndef FK_RESULT_H
#define FK_RESULT_H

#include "fk.h"

#include <jansson.h>

/* The metadata schema version written into every .json ("schema": 2; 2: off-CPU
 * profiles, whose counts are nanoseconds). */
#define FK_RESULT_SCHEMA 2

/* The files of one result, in the order they are written. A new kind is
 * one line here and one in result.c's extension table. */
enum fk_result_kind {
    FK_RESULT_FOLDED,       /* .folded.gz: "frame;frame;... COUNT" lines, gzip */
    FK_RESULT_SVG,          /* .flamegraph.svg */
    FK_RESULT_PPROF,        /* .pb.gz: pprof profile (perftools.profiles.Profile), gzip */
    FK_RESULT_JSON,         /* .json: metadata, flamekit-metadata(5) */
    FK_RESULT_NKINDS
};

/* ".folded.gz", ".flamegraph.svg", ".pb.gz", ".json" */
const char *fk_result_ext(enum fk_result_kind k);

/* A file-name word from free text: [A-Za-z0-9._-] kept, others '_', at
 * most max bytes, never empty or starting with '.'. Caller frees. */
char *fk_result_word(const char *s, size_t max);

/* This host's name as a file-name word. Caller frees. */
char *fk_result_hostname(void);

/* "HOST.YYYYMMDD_HHMMSS_UTC.SCOPE[.PROFILE]" for a capture that started at
 * start_unix_ns; profile NULL or "cpu": no suffix. Caller frees. */
char *fk_result_base(const char *host, uint64_t start_unix_ns, const char *scope,
                     const char *profile);
/* "DIR/BASE.EXT". Caller frees. */
char *fk_result_path(const char *dir, const char *base, enum fk_result_kind k);

/* The parts of a result file name (the directory part is ignored). */
struct fk_result_name {
    char *host;             /* "db1.example.com" */
    char *scope;            /* "pid-42", "cgroup-system.slice" */
    char *profile;          /* "cpu" or "faults" */
    char *base;             /* HOST.STAMP.SCOPE[.PROFILE] */
    char stamp[20];         /* "20261202_151500_UTC" */
    char start_time[21];    /* "2026-12-02T15:15:00Z" */
    int kind;               /* enum fk_result_kind; -1 for .folded, .svg, .txt */
};
/* False (n zeroed) when the name does not follow the contract. */
bool fk_result_parse(const char *path, struct fk_result_name *n);
void fk_result_name_free(struct fk_result_name *n);

/* True when name (no directory part) is a file a capture writes: one of
 * the kinds above (fk_result_parse gives kind >= 0), made only of file-name
 * word characters ([A-Za-z0-9._-], not starting with '.'). What a remote
 * result stream may deliver into an output directory. */
bool fk_result_file_name_ok(const char *name);

/* The same result's file of another kind beside path (same directory and
 * base), or NULL when path is not a result name. Caller frees. */
char *fk_result_sibling(const char *path, enum fk_result_kind k);

/* The fields readers need from a metadata file; the strings live in root. */
struct fk_result_meta {
    json_t *root;
    int schema;                 /* 0: written before schema 1 */
    const char *profile;        /* "cpu", "faults" */
    const char *host;
    const char *start_time;     /* ISO 8601 UTC */
    const char *event;          /* event.name */
    const char *kernel_release; /* kernel.release */
    const char *scope;          /* target.scope */
    double duration_s;          /* -1 when absent */
    int64_t samples;            /* -1 when absent */
};
/* Load a .json; false (nothing printed) if missing, not a JSON object, or
 * of a newer schema than this flamekit knows. */
bool fk_result_meta_load(const char *path, struct fk_result_meta *m);
void fk_result_meta_free(struct fk_result_meta *m);
/* Any JSON object from path, for a graph's Info panel (svg --metadata);
 * NULL with why and the fix in err when unreadable or not an object. */
json_t *fk_result_meta_object(const char *path, char *err, size_t errlen);

#endif
