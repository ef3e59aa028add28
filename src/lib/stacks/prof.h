/* SPDX-License-Identifier: GPL-2.0-only */
/* A structured profile: what a pprof Profile holds (sample types, samples
 * of location lists with values and labels, locations with their mapping,
 * address and function lines, mappings, functions, one string table), in
 * flat arrays. The capture engine builds one at the end of a capture from
 * its unique stacks; the pprof reader fills one from a file. Folded stacks
 * are drawn from it by fk_prof_fold, so a capture's folded output and its
 * pprof output come from the same structure and cannot disagree.
 *
 * Invariants: string 0 is ""; every string, mapping, function and location
 * reference is in range (ids are 1-based indices, 0 = none); every sample
 * has exactly ntypes values. Memory grows with unique stacks, locations and
 * names, never with the number of raw samples. */
#ifndef FK_PROF_H
#define FK_PROF_H

#include "stacktab.h"

struct fk_prof_type {
    uint32_t type, unit;        /* strings: "cpu", "nanoseconds" */
};

struct fk_prof_mapping {
    uint64_t start, limit, offset;
    uint32_t file, build_id;    /* strings */
    bool has_functions, has_filenames, has_lines, has_inline;
};

struct fk_prof_func {
    uint32_t name, system_name, file;   /* strings */
    int64_t start_line;
};

struct fk_prof_line {
    uint32_t func;              /* 1-based */
    int64_t line;
};

struct fk_prof_loc {
    uint64_t addr;
    uint32_t mapping;           /* 1-based, 0 = none */
    uint32_t line0, nlines;     /* lines[line0 .. +nlines): innermost first */
    bool folded;
};

struct fk_prof_label {
    uint32_t key, str, unit;    /* strings; str 0 = a numeric label */
    int64_t num;
};

struct fk_prof_sample {
    size_t loc0;                /* locids[loc0 .. +nlocs): leaf first (samples
                                 * may share a list) */
    uint32_t nlocs;
    uint32_t nlabels;
    size_t label0;              /* labels[label0 .. +nlabels) */
    /* values: vals[index * ntypes .. +ntypes) */
};

struct fk_prof {
    struct fk_stacktab strs;    /* string i is strs.v[i] (insertion order) */
    struct fk_prof_type *types;
    size_t ntypes;
    uint32_t default_type;      /* string: type name shown first, 0 = the last type */
    struct fk_prof_type period_type;
    int64_t period, time_nanos, duration_nanos;
    uint32_t *comments;
    size_t ncomments, capcomments;

    struct fk_prof_mapping *maps;
    size_t nmaps, capmaps;
    struct fk_prof_func *funcs;
    size_t nfuncs, capfuncs;
    struct fk_prof_loc *locs;
    size_t nlocs, caplocs;
    struct fk_prof_line *lines;
    size_t nlines, caplines;

    struct fk_prof_sample *samples;
    size_t nsamples, capsamples;
    uint64_t *locids;           /* 1-based location ids, as pprof stores them */
    size_t nlocids, caplocids;
    int64_t *vals;
    size_t capvals;
    struct fk_prof_label *labels;
    size_t nlabels, caplabels;
};

void fk_prof_init(struct fk_prof *p);
void fk_prof_free(struct fk_prof *p);
/* Bytes held (for memory limits and benchmarks). */
size_t fk_prof_bytes(const struct fk_prof *p);

/* The string's index, adding it if new (strings are unique in a table built
 * this way). A string with a NUL byte is cut at it. */
uint32_t fk_prof_str(struct fk_prof *p, const char *s, size_t len);
static inline uint32_t fk_prof_strz(struct fk_prof *p, const char *s)
{
    return fk_prof_str(p, s, __builtin_strlen(s));
}
static inline const char *fk_prof_s(const struct fk_prof *p, uint32_t i)
{
    return p->strs.v[i].key;
}
static inline size_t fk_prof_slen(const struct fk_prof *p, uint32_t i)
{
    return p->strs.v[i].len;
}

/* Sample types must all be added before the first sample. */
void fk_prof_add_type(struct fk_prof *p, const char *type, const char *unit);
void fk_prof_add_comment(struct fk_prof *p, const char *text);
/* Return the new object's 1-based id. */
uint32_t fk_prof_add_mapping(struct fk_prof *p, const struct fk_prof_mapping *m);
uint32_t fk_prof_add_func(struct fk_prof *p, uint32_t name, uint32_t system_name, uint32_t file,
                          int64_t start_line);
/* A location whose lines are added next with fk_prof_add_line. */
uint32_t fk_prof_add_loc(struct fk_prof *p, uint32_t mapping, uint64_t addr);
void fk_prof_add_line(struct fk_prof *p, uint32_t func, int64_t line);
/* A sample: location ids leaf first, ntypes values; its labels follow
 * with fk_prof_add_label. */
void fk_prof_add_sample(struct fk_prof *p, const uint64_t *locids, size_t n, const int64_t *vals);
/* A sample with the location list of the earlier sample `like` (the list
 * is shared, not copied: a capture's samples per (pid, stack) name the
 * same stacks in many processes). */
void fk_prof_add_sample_like(struct fk_prof *p, size_t like, const int64_t *vals);
void fk_prof_add_label(struct fk_prof *p, uint32_t key, uint32_t str, int64_t num, uint32_t unit);
static inline const int64_t *fk_prof_vals(const struct fk_prof *p, size_t sample)
{
    return p->vals + sample * p->ntypes;
}

/* pprof tools name a profile after its first mapping: move the executable
 * (not a shared library, not a "[pseudo]" file) that most samples pass
 * through to the front. */
void fk_prof_main_mapping_first(struct fk_prof *p);

/* The index of a sample type given by name ("inuse_space") or number
 * ("2"); NULL or "" picks the default: default_type if set and present,
 * else the last one (as pprof does). -1 if there is none such. */
int fk_prof_type_index(const struct fk_prof *p, const char *want);
/* "alloc_objects, alloc_space, ..." for error messages. Caller frees. */
char *fk_prof_type_list(const struct fk_prof *p);

/* Folded stacks from one sample type: "comm;root;...;leaf" (the "comm"
 * label as the root frame when a sample has one), inlined calls expanded
 * caller first. A frame with no function is named from its mapping
 * ("[libc.so.6+0x1a2b]") or "[unknown]"; ';' and line breaks in names
 * become ':' and ' ' as in captures. Samples whose value is zero or
 * negative are skipped (negative ones counted in *skipped if not NULL:
 * pprof's difference profiles have them). Returns false
 * (nothing reported) if the folded text would exceed max_bytes. */
bool fk_prof_fold(const struct fk_prof *p, int type, size_t max_bytes, struct fk_stacktab *out,
                  uint64_t *skipped);

/* Make a name safe as one folded frame, in place (';' -> ':', CR/LF/TAB -> ' '). */
void fk_prof_frame_sanitize(char *s, size_t n);

#endif
