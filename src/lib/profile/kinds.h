/* SPDX-License-Identifier: GPL-2.0-only */
/* What differs between profiles, as hooks the runner calls (kinds.c). A
 * new profile is one more table entry; everything else (targets, limits,
 * files, metadata, delivery) is the runner's. */
#ifndef FK_PROFILE_KINDS_H
#define FK_PROFILE_KINDS_H

#include "profile/profile.h"

struct fk_profile_ops {
    const char *name;           /* metadata "profile", result-name suffix (result.h) */
    const char *colors;         /* SVG palette */
    const struct fk_evkind *evkind;     /* the engine's event kind (engine/evkind.h) */
    /* The sampling event for rq: 0, or FK_EXIT_USAGE with one phrase in err. */
    int (*event)(const struct fk_profile_request *rq, struct fk_event *ev, const char **unit,
                 const char **countname, char *err, size_t errlen);
    /* Before the capture (may be NULL): the kind's capture options (an
     * event kind and its options, measured before the window), kept in res. */
    int (*prepare)(const struct fk_profile_request *rq, struct fk_profile_result *res,
                   struct fk_capture_opts *co);
    /* After the capture (may be NULL): e.g. verify one in N. */
    void (*after)(const struct fk_profile_request *rq, struct fk_profile_result *res);
    /* False when the result must not count as a success (--strict). */
    bool (*ok)(const struct fk_profile_request *rq, const struct fk_profile_result *res);
    /* SVG title and subtitle (caller frees). */
    char *(*title)(const struct fk_profile_request *rq, const struct fk_profile_result *res);
    char *(*subtitle)(const struct fk_profile_request *rq, const struct fk_profile_result *res);
    /* The profile's own metadata object (may be NULL: none). */
    json_t *(*meta)(const struct fk_profile_request *rq, const struct fk_profile_result *res);
    /* The summary's top frames: how much of a folded stack to look at, its
     * last frame being the one shown (may be NULL: all of it, the leaf). */
    size_t (*top_end)(const char *stack, size_t len);
    /* Summary lines after the common ones (may be NULL). */
    void (*summary)(FILE *out, const struct fk_profile_request *rq,
                    const struct fk_profile_result *res);
};

const struct fk_profile_ops *fk_profile_ops(enum fk_profile_kind kind);

#endif
