/* SPDX-License-Identifier: GPL-2.0-only */
/* Tracepoints as the running kernel describes them in tracefs: the root
 * (mounted on demand, as perf does), an event's id, and its raw record's
 * layout from events/SYSTEM/NAME/format. Offsets and sizes are read, never
 * assumed: they moved between kernels (sched_switch's prev_state was an
 * int before 4.x, a long since). The file is kernel text, but parsing is
 * bounded and every field is checked against the record size by the
 * caller (fk_tp_get). */
#ifndef FK_TRACEFS_H
#define FK_TRACEFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* "/sys/kernel/tracing" (or the debugfs path) with an events/ directory,
 * mounting tracefs when root and absent; NULL when there is none. */
const char *fk_tracefs_root(void);

#define FK_TP_MAX_FIELDS 32

struct fk_tp_field {
    char name[32];
    uint16_t offset, size;
    bool is_signed;
};

struct fk_tp_format {
    char name[64];          /* "sched:sched_switch" */
    uint64_t id;
    struct fk_tp_field f[FK_TP_MAX_FIELDS];
    unsigned n;
    /* __print_flags pairs of the print format ({ 0x1, "S" }...): letters
     * by bit, for state fields; nflags 0 when the format has none */
    struct { uint64_t bit; char letter[4]; } flags[16];
    unsigned nflags;
};

/* Read events/SYSTEM/NAME/{id,format}. false with one line in err. */
bool fk_tp_format_load(const char *system, const char *name, struct fk_tp_format *fmt,
                       char *err, size_t errlen);
/* Parse a format file's text (fk_tp_format_load's core; tests feed it). */
bool fk_tp_format_parse(const char *text, size_t len, struct fk_tp_format *fmt);

/* The field called name, or NULL. */
const struct fk_tp_field *fk_tp_field(const struct fk_tp_format *fmt, const char *name);

/* Field f of a raw record (PERF_SAMPLE_RAW data of rawlen bytes) as an
 * integer (1, 2, 4 or 8 bytes, sign-extended when signed); false when the
 * record is too short or the field is not an integer. */
bool fk_tp_get(const struct fk_tp_field *f, const void *raw, size_t rawlen, int64_t *v);

#endif
