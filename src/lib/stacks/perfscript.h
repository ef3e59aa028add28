/* SPDX-License-Identifier: GPL-2.0-only */
/* Streaming parser of `perf script` text into folded stacks. One pass, no
 * regular expressions. Stacks are kept as sequences of frame-name ids, so
 * memory follows distinct names and stacks (bounded caches aside), not the
 * stack text; the output is "comm;outer;...;leaf COUNT" (root first),
 * sorted, like stackcollapse-perf.pl's. */
#ifndef FK_PERFSCRIPT_H
#define FK_PERFSCRIPT_H

#include "stacktab.h"
#include "folded.h"
#include "util/buf.h"
#include "util/hindex.h"

struct fk_perfscript_opts {
    bool pid;               /* process name becomes comm-PID */
    bool tid;               /* comm-PID/TID */
    bool kernel;            /* append _[k] to kernel frames */
    bool jit;               /* append _[j] to perf-PID.map frames */
    bool tag_inlined;       /* append _[i] to frames perf marks "(inlined)" */
    bool no_inline;         /* drop frames perf marks "(inlined)" */
    bool addrs;             /* "[object <ip>]" for unknown symbols (the Perl tool's --addrs) */
    bool offsets;           /* keep "+0x1f" symbol offsets (one frame per call site) */
    bool period;            /* weight by the sample period, not 1 per sample */
    const char *event;      /* count only this event; NULL = the first seen */
};

struct fk_perfscript {
    struct fk_perfscript_opts o;
    struct fk_stacktab *tab;    /* filled by finish; may be NULL */
    struct fk_parse_stats *st;
    char *event;                /* the event counted (first seen or o.event) */
    size_t event_len;           /* strlen(event) */
    bool event_defaulted;
    char *other_event;          /* first event skipped, for the warning */
    uint64_t samples;           /* samples counted */
    uint64_t skipped_events;    /* samples of other events */
    /* the sample being read */
    bool in_sample, keep;
    uint64_t weight;
    uint32_t *stk;              /* frame name ids, written backwards from the end */
    size_t stk_cap, stk_pos;
    struct fk_buf pname;        /* a process name being made; scratch */
    struct fk_buf frame;        /* the names of the frame line being parsed, each NUL-ended */
    uint32_t nparts;            /* how many (an inline chain "a->b" has several) */
    uint32_t *chains;           /* inline chains' name ids: n, ids (leaf first) */
    size_t nchains, chains_cap;
    uint64_t nframes;
    uint64_t stk_hash;          /* of the ids pushed so far (fk_hash_ids order) */
    /* Stacks are kept as name ids: memory follows unique names and stacks,
     * not stack text (deep stacks repeat long names). */
    struct fk_stacktab names;   /* frame name -> id (its index) */
    /* Unique stacks: records of 32-bit words, "count (2 words), n, n name
     * ids root first", indexed by the hash of the ids (kept as the frames
     * are pushed, so a sample's stack is hashed with no second pass). */
    struct fk_perfscript_stacks {
        uint32_t *w;
        size_t len, cap;        /* words */
        size_t n;               /* stacks */
        struct fk_hindex index; /* id hash -> record's word offset */
        bool overflow;          /* some count saturated at UINT64_MAX */
        /* A sample is counted two samples late, so that its two look-ups
         * (index slot, then record) are fetched while the next samples are
         * read: [0] waits for its slot, [1] for its record. */
        struct fk_pending_stack {
            uint32_t *ids;      /* a copy of the sample's ids */
            size_t n, cap;
            uint64_t h, weight;
            uint32_t cand;      /* [1]: record offset + 1 the slot named, 0 none */
            bool used;
        } pend[2];
    } stacks;
    /* Frame lines repeat (the same function in every sample): the text
     * after a line's ip (its key) maps to its frames, and each key
     * remembers the key that followed it last time, checked in place
     * before anything is hashed (stacks repeat). Bounded: beyond max
     * words nothing new is kept. The records are in blocks that never
     * move (a full block is followed by a new one, not copied: a copy
     * leaves the old block a hole the heap has touched), all named by
     * word offsets from the first. */
    struct fk_perfscript_keys {
        uint32_t *w;            /* the first block: records are named from here */
        size_t len, cap;        /* offsets from w of the current block's next free word and end */
        size_t used, max;       /* words in records, and their bound */
        uint32_t *block[24];    /* the blocks, to free */
        unsigned nblocks;
        struct fk_hindex index; /* key hash -> record's word offset */
    } keys;
    uint32_t kprev;             /* record offset + 1 of this sample's last frame line, 0 none */
    bool kstart;                /* no frame line read yet in this sample */
    uint32_t pname_id;          /* name id of this sample's process name */
    bool java;                  /* it is a java process (its names lose an 'L') */
    /* A sample's first frame line is predicted by its process: the key
     * the last sample of that process name began with (record offset + 1,
     * 0 none), by name id. */
    uint32_t *kfirst;
    size_t kfirst_cap;
    /* Process names by a hash of the name, with their ids: samples of a
     * host-wide capture alternate between processes, and a name is found
     * here without a look at the name table. */
    struct fk_pname_slot {
        uint32_t id1;           /* name id + 1, 0 empty */
        uint8_t len;
        char name[27];
    } *pcache;
    /* Key records by a hash of a frame line's ip digits (line_slot), the
     * last seen there: the second guess for a line when the predicted
     * key is not it. */
    uint32_t *lcache;
    /* Sample headers of the usual shape that were parsed whole ("comm
     * pid [cpu] time: period event:", blanks after), the last one by a
     * hash of its first 8 bytes: a header that differs from the one in
     * its slot only in the digits of its cpu and time (and of its pid
     * when the process name does not show it) is the same process name,
     * event and weight (header_again): most headers of the shallow
     * bench input (host-wide, its processes interleaved). NULL until
     * the first such header. */
    struct fk_last_header {
        char text[96];
        unsigned char var[96];  /* 0xff where a digit may differ */
        size_t len;             /* 0: none */
        uint32_t pname_id;
        bool java;
        uint64_t weight;
    } *lh;
};

void fk_perfscript_init(struct fk_perfscript *p, const struct fk_perfscript_opts *o,
                        struct fk_stacktab *tab, struct fk_parse_stats *st);
/* Feed one line (without its newline); the line may be modified. */
void fk_perfscript_line(struct fk_perfscript *p, char *line, size_t len, uint64_t lineno);
/* End of input: count the last sample; fill the table given to init (if
 * not NULL) with the folded stacks. */
void fk_perfscript_finish(struct fk_perfscript *p);
/* Write the folded stacks, sorted bytewise (as fk_folded_write orders
 * them), through sink; false when the sink fails. Call after finish. */
bool fk_perfscript_write(const struct fk_perfscript *p,
                         bool (*sink)(void *ctx, const void *data, size_t len), void *ctx);
/* Some count saturated at 2^64-1. */
static inline bool fk_perfscript_overflow(const struct fk_perfscript *p)
{
    return p->stacks.overflow;
}
void fk_perfscript_free(struct fk_perfscript *p);
/* The input's size in bytes, when it is known before it is read (see
 * fk_lineread_plain_size), given before the first line: the tables that
 * grow with the input start at sizes that suit it. Only memory (layout
 * and peak) depends on it, never the output. */
void fk_perfscript_expect(struct fk_perfscript *p, uint64_t bytes);
/* Parse an open reader's lines to its end ("-" = stdin, gzip transparent:
 * util/lineread.h); false on a read error (r->error). */
struct fk_lineread;
bool fk_perfscript_read_lines(struct fk_perfscript *p, struct fk_lineread *r);

#endif
