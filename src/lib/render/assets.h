/* SPDX-License-Identifier: GPL-2.0-only */
/* share/flamegraph.{js,css}, compiled in by build-aux/embed.sh (assets.c is generated). */
#ifndef FK_RENDER_ASSETS_H
#define FK_RENDER_ASSETS_H

#include <stddef.h>

extern const char fk_svg_js[];
extern const size_t fk_svg_js_len;
extern const char fk_svg_css[];
extern const size_t fk_svg_css_len;

#endif
