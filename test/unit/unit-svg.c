/* SPDX-License-Identifier: GPL-2.0-only */
/* The renderer's library API as other stages use it (capture writes the SVG
 * of each capture with metadata through fk_svg_write/fk_svg_render). */
#include "render/svg.h"
#include "util/buf.h"
#include "unit.h"

#include <stdlib.h>
#include <unistd.h>

static bool collect(void *ctx, const void *data, size_t len)
{
    fk_buf_add(ctx, data, len);
    return true;
}

static int sink_calls;
static bool failing(void *ctx, const void *data, size_t len)
{
    (void)ctx, (void)data, (void)len;
    sink_calls++;
    return false;
}

static size_t count(const char *s, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(s, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

int main(void)
{
    unit_name = "unit-svg";
    struct fk_svg_opts o;
    fk_svg_opts_init(&o);
    UNIT_CHECK("defaults: 1200 px wide, 16 px frames, 0.1 px minwidth",
               o.width == 1200 && o.height == 16 && o.minwidth == 0.1);
    UNIT_CHECK("palette names checked", fk_svg_palette_ok("java") && !fk_svg_palette_ok("plaid") &&
                                        !fk_svg_palette_ok(NULL));

    struct fk_stacktab t;
    fk_stacktab_init(&t);
    struct fk_buf b = FK_BUF_INIT;
    UNIT_CHECK("empty table renders", fk_svg_render(&t, &o, collect, &b));
    const char *s = fk_buf_cstr(&b);
    UNIT_CHECK("empty table: says there were no stacks", strstr(s, "No stacks") != NULL);
    UNIT_CHECK("empty table: complete document", strstr(s, "</svg>\n") != NULL);
    UNIT_CHECK("empty table: no frames", count(s, "<path ") == 0 && strstr(s, "data-nodes=\"1\"") != NULL);

    fk_stacktab_add(&t, "cat;main;read", 13, 3);
    fk_stacktab_add(&t, "cat;main;write", 14, 1);
    json_t *meta = json_pack("{s:s, s:i}", "host", "db-1 <&>", "cpus", 2);
    o.metadata = meta;
    o.title = "CPU: db-1";
    o.countname = "faults";
    fk_buf_reset(&b);
    UNIT_CHECK("table with metadata renders", fk_svg_render(&t, &o, collect, &b));
    s = fk_buf_cstr(&b);
    UNIT_CHECK("five frames (all, cat, main, read, write)", strstr(s, "data-nodes=\"5\"") != NULL &&
                                                           count(s, "h-") == 5);
    UNIT_CHECK("countname used", strstr(s, "data-countname=\"faults\"") != NULL);
    UNIT_CHECK("names in the data block", strstr(s, "\nread\n") != NULL && strstr(s, "\nwrite\n") != NULL);
    UNIT_CHECK("metadata embedded, escaped",
               strstr(s, "<metadata class=\"fk-meta\">{&quot;host&quot;: &quot;db-1 &lt;&amp;&gt;&quot;") != NULL ||
               strstr(s, "<metadata class=\"fk-meta\">{&quot;host&quot;:&quot;db-1 &lt;&amp;&gt;&quot;") != NULL);
    UNIT_CHECK("document title", strstr(s, "<title>CPU: db-1</title>") != NULL);
    UNIT_CHECK("title used", strstr(s, ">CPU: db-1</text>") != NULL);
    UNIT_CHECK("table untouched", t.n == 2 && t.total == 4);

    sink_calls = 0;
    UNIT_CHECK("a failing sink makes render fail", !fk_svg_render(&t, &o, failing, NULL));
    UNIT_CHECK("a failing sink is not called again and again", sink_calls == 1);

    char dir[] = "/tmp/unit-svg.XXXXXX";
    if (mkdtemp(dir)) {
        char *path = fk_asprintf("%s/g.svg", dir);
        struct fk_outfile out;
        char err[512];
        bool ok = fk_outfile_open(&out, path, 0644, err, sizeof err) &&
                  fk_svg_write(&out, &t, &o) && fk_outfile_commit(&out, err, sizeof err);
        UNIT_CHECK("fk_svg_write into an fk_outfile, committed", ok);
        FILE *f = fopen(path, "r");
        char tail[16] = "";
        if (f && fseek(f, -7, SEEK_END) == 0 && fread(tail, 1, 7, f) == 7)
            tail[7] = 0;
        UNIT_CHECK("the committed file is complete", !strcmp(tail, "</svg>\n"));
        if (f)
            fclose(f);
        unlink(path);
        rmdir(dir);
        free(path);
    }
    json_decref(meta);
    fk_buf_free(&b);
    fk_stacktab_free(&t);
    return UNIT_END();
}
