/* SPDX-License-Identifier: GPL-2.0-only */
/* How frame names are shown. A folded frame may end in an annotation
 * ("_[k]" kernel, "_[j]" JIT, "_[i]" inlined: stackcollapse-perf.pl's
 * convention; "_[p]" a Python function, flamekit's own, read from the
 * interpreter by unwind/python.c) and, when it comes from a C++ or Rust demangler, carry a
 * parameter list, qualifiers, "[clone .isra.0]" suffixes or a Rust hash.
 * Renderers and summaries show the short form; nothing here changes what
 * is stored. */
#ifndef FK_NAMES_H
#define FK_NAMES_H

#include "util/buf.h"

enum fk_name_kind { FK_NAME_PLAIN, FK_NAME_KERNEL, FK_NAME_JIT, FK_NAME_INLINED, FK_NAME_PYTHON };

/* Length of s[0..n) without its annotation suffix; *kind says which it was. */
size_t fk_name_base(const char *s, size_t n, enum fk_name_kind *kind);

/* The short form of s[0..n): without the parameter list of a function (and
 * the qualifiers after it), "[clone ...]" suffixes and a Rust
 * "::h0123456789abcdef" hash; the annotation suffix is kept. Returns s when
 * the short form is a prefix of s (*len = its length, often n), else the
 * form written into out (replacing out's contents). */
const char *fk_name_short(const char *s, size_t n, struct fk_buf *out, size_t *len);

/* For text summaries: the short form with the annotation spelled out,
 * "do_idle (kernel)", appended to out (raw bytes: the caller runs
 * fk_text_sanitize for its terminal). */
void fk_name_display(const char *s, size_t n, struct fk_buf *out);

#endif
