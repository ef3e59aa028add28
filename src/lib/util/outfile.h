/* SPDX-License-Identifier: GPL-2.0-only */
/* Output files that appear complete or not at all: we write to a temporary
 * name in the target directory and rename() into place on commit. "-" means
 * stdout and the null device is written in place (no rename; errors are
 * still checked). The final path may be missing, a regular file or a
 * symlink (replaced, never followed); a FIFO, socket, device or directory
 * there is refused (checked at open and again before the rename): flamekit
 * runs as root, and another user's FIFO or a planted device must neither
 * receive the output nor be replaced. Every output file goes through here.
 * A signal cannot leave a
 * temporary behind as long as the caller's handlers only set a flag while
 * files are written (the capture commands keep theirs installed). */
#ifndef FK_OUTFILE_H
#define FK_OUTFILE_H

#include "fk.h"

struct fk_outfile {
    char *path;     /* final name */
    char *tmp;      /* temporary name, NULL for stdout */
    FILE *fp;
    int fd;
    bool gzip;      /* fp writes through zlib when true */
    void *gz;       /* gzFile */
};

/* Create path's temporary twin with the given mode (e.g. 0644). On failure
 * false, with one line naming the path in err (as every false below). */
bool fk_outfile_open(struct fk_outfile *o, const char *path, int mode, char *err, size_t errlen);
/* Same, gzip-compressed (level 6); write with fk_outfile_write. */
bool fk_outfile_open_gz(struct fk_outfile *o, const char *path, int mode, char *err,
                        size_t errlen);
/* Write bytes (works for both plain and gzip); false on error (errno). */
bool fk_outfile_write(struct fk_outfile *o, const void *data, size_t len);
bool fk_outfile_printf(struct fk_outfile *o, const char *fmt, ...) FK_PRINTF(2, 3);
/* Flush, fsync, close and rename into place; false (and the temporary
 * removed) if any step failed. */
bool fk_outfile_commit(struct fk_outfile *o, char *err, size_t errlen);
/* The last step of commit, for writers that make their own temporary in
 * path's directory (the remote stream reader): rename tmp to path under the
 * rule above (tmp left for the caller on failure). */
bool fk_outfile_place(const char *tmp, const char *path, char *err, size_t errlen);
/* Discard: close and unlink the temporary. Safe to call twice. */
void fk_outfile_abort(struct fk_outfile *o);

/* An existing output directory (-o DIR) files will be created in: a
 * directory owned by the effective user (a symlink to it owned by that
 * user or root; own: checked), not group/world writable unless sticky (as
 * /tmp): another user could otherwise swap or plant names in it between
 * our checks. Otherwise false, with one line saying why in err. */
bool fk_outdir_check(const char *dir, bool own, char *err, size_t errlen);

#endif
