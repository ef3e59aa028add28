/* SPDX-License-Identifier: GPL-2.0-only */
/* libFuzzer target: folded input -> SVG renderer. The first byte picks the
 * options; the output must stay well-formed text: valid UTF-8, no control
 * characters but newline and tab, and no markup from the input (no "<script"
 * after the embedded script, every '<' starting one of the renderer's own
 * tags). */
#include "fuzz.h"
#include "render/svg.h"
#include "stacks/folded.h"
#include "util/buf.h"

#include <stdlib.h>
#include <string.h>

static void one_line(void *ctx, char *line, size_t len, uint64_t lineno)
{
    (void)lineno;
    const char *stack, *why;
    size_t slen;
    uint64_t c, c2;
    bool has2;
    if (fk_folded_parse_line(line, len, true, &stack, &slen, &c, &c2, &has2, &why))
        fk_stacktab_add2(ctx, stack, slen, c, has2 ? c2 : 0);
}

static bool valid_utf8(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        size_t k = c < 0x80 ? 0 : (c & 0xe0) == 0xc0 ? 1 : (c & 0xf0) == 0xe0 ? 2 : (c & 0xf8) == 0xf0 ? 3 : 9;
        if (k == 9 || i + k >= n)
            return false;
        if (c < 0x20 && c != '\n' && c != '\t')
            return false;
        for (size_t j = 1; j <= k; j++)
            if ((s[i + j] & 0xc0) != 0x80)
                return false;
        i += k + 1;
    }
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    unsigned flags = data[0];
    data++, size--;
    struct fk_stacktab t;
    fk_stacktab_init(&t);
    fuzz_each_line(data, size, one_line, &t);
    struct fk_svg_opts o;
    fk_svg_opts_init(&o);
    o.inverted = flags & 1;
    o.reverse = flags & 2;
    o.flamechart = flags & 4;
    o.diff = flags & 8;
    o.negate = flags & 16;
    o.normalize = flags & 32;
    if (flags & 64)
        o.minwidth = 0;
    if (flags & 128) {
        o.colors = "java";
        o.rand = true;
        o.subtitle = "sub<&>";
        o.full_names = true;
    }
    struct fk_buf out = FK_BUF_INIT;
    if (!fk_svg_render(&t, &o, fuzz_buf_sink, &out))
        abort();
    const char *svg = fk_buf_cstr(&out);
    if (!valid_utf8((const unsigned char *)svg, out.len))
        abort();
    const char *frames = strstr(svg, "<g class=\"fk-static\">");
    if (!frames || strstr(frames, "<script") || strstr(frames, "]]>"))
        abort();
    /* after the script every tag is one the renderer writes */
    static const char *const tags[] = { "<path ", "<text ", "</text>", "<rect ", "</g>", "</svg>",
                                        "<g class=\"fk-static\">", "<g class=\"fk-legend\">",
                                        "<metadata class=\"fk-data\" ", "</metadata>" };
    for (const char *p = strchr(frames, '<'); p; p = strchr(p + 1, '<')) {
        bool known = false;
        for (size_t i = 0; i < sizeof tags / sizeof tags[0] && !known; i++)
            known = !strncmp(p, tags[i], strlen(tags[i]));
        if (!known)
            abort();
    }
    fk_buf_free(&out);
    fk_stacktab_free(&t);
    return 0;
}
