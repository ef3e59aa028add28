/* SPDX-License-Identifier: GPL-2.0-only */
/* The result contract (util/result.h): names built parse back, readers
 * find the parts and the metadata beside a file. */
#include "unit.h"
#include "util/result.h"

#include <stdlib.h>
#include <unistd.h>

int main(void)
{
    unit_name = "unit-result";
    /* 2026-12-02T15:17:35Z */
    uint64_t t = 1796224655ull * 1000000000ull + 123;
    char *b = fk_result_base("db1.example.com", t, "pid-42", "cpu");
    UNIT_CHECK("cpu base has no profile part", !strcmp(b, "db1.example.com.20261202_151735_UTC.pid-42"));
    char *p = fk_result_path("/out", b, FK_RESULT_SVG);
    UNIT_CHECK("path", !strcmp(p, "/out/db1.example.com.20261202_151735_UTC.pid-42.flamegraph.svg"));
    struct fk_result_name n;
    UNIT_CHECK("parses back", fk_result_parse(p, &n));
    UNIT_CHECK("host with dots", n.host && !strcmp(n.host, "db1.example.com"));
    UNIT_CHECK("scope", n.scope && !strcmp(n.scope, "pid-42"));
    UNIT_CHECK("profile cpu", n.profile && !strcmp(n.profile, "cpu"));
    UNIT_CHECK("kind svg", n.kind == FK_RESULT_SVG);
    UNIT_CHECK("base", n.base && !strcmp(n.base, b));
    UNIT_CHECK("start time", !strcmp(n.start_time, "2026-12-02T15:17:35Z"));
    fk_result_name_free(&n);
    free(p);
    free(b);

    b = fk_result_base("h", t, "cgroup-system.slice", "faults");
    p = fk_result_path(".", b, FK_RESULT_FOLDED);
    UNIT_CHECK("faults base", !strcmp(b, "h.20261202_151735_UTC.cgroup-system.slice.faults"));
    UNIT_CHECK("faults parses", fk_result_parse(p, &n) && !strcmp(n.scope, "cgroup-system.slice") &&
               !strcmp(n.profile, "faults") && n.kind == FK_RESULT_FOLDED);
    fk_result_name_free(&n);
    char *j = fk_result_sibling(p, FK_RESULT_JSON);
    UNIT_CHECK("sibling json", j && !strcmp(j, "./h.20261202_151735_UTC.cgroup-system.slice.faults.json"));
    free(j);
    free(p);
    free(b);

    UNIT_CHECK("hand-made .folded keeps the host", fk_result_parse("x/h.20261202_151735_UTC.host.folded", &n) &&
               !strcmp(n.host, "h") && n.kind == -1 && !strcmp(n.scope, "host"));
    fk_result_name_free(&n);
    UNIT_CHECK("no stamp: not a result", !fk_result_parse("notes.txt", &n) && !n.host);
    UNIT_CHECK("bad stamp: not a result", !fk_result_parse("h.2026120_151735_UTC.x.svg", &n));
    UNIT_CHECK("no scope: not a result", !fk_result_parse("h.20261202_151735_UTC..json", &n));
    UNIT_CHECK("no host: not a result", !fk_result_parse(".20261202_151735_UTC.host.json", &n));
    char *w = fk_result_word("a b/c;d", 64);
    UNIT_CHECK("word: unsafe characters become _", !strcmp(w, "a_b_c_d"));
    free(w);
    w = fk_result_word("..", 64);
    UNIT_CHECK("word: never starts with a dot", w[0] != '.');
    free(w);

    /* metadata beside a file */
    char dir[] = "/tmp/unit-result.XXXXXX";
    if (mkdtemp(dir)) {
        char *mp = fk_asprintf("%s/m.json", dir);
        FILE *f = fopen(mp, "w");
        fputs("{\"schema\": 1, \"host\": \"db1\", \"profile\": \"faults\", \"duration_s\": 2.5, "
              "\"samples\": 42, \"event\": {\"name\": \"page-faults\"}, \"kernel\": {\"release\": \"6.1\"}, "
              "\"target\": {\"scope\": \"host\"}}", f);
        fclose(f);
        struct fk_result_meta m;
        UNIT_CHECK("meta loads", fk_result_meta_load(mp, &m));
        UNIT_CHECK("meta fields", m.schema == 1 && !strcmp(m.host, "db1") && m.samples == 42 &&
                   m.duration_s == 2.5 && !strcmp(m.event, "page-faults") &&
                   !strcmp(m.kernel_release, "6.1") && !strcmp(m.scope, "host") && !strcmp(m.profile, "faults"));
        fk_result_meta_free(&m);
        f = fopen(mp, "w");
        fputs("{\"schema\": 99}", f);
        fclose(f);
        UNIT_CHECK("a newer schema is refused", !fk_result_meta_load(mp, &m));
        f = fopen(mp, "w");
        fputs("[1]", f);
        fclose(f);
        UNIT_CHECK("not an object is refused", !fk_result_meta_load(mp, &m));
        unlink(mp);
        free(mp);
        rmdir(dir);
    }
    /* Result file names a remote stream may deliver (issue 12, item 11). */
    UNIT_CHECK("a result name is a result file name",
               fk_result_file_name_ok("db1.example.com.20261202_151735_UTC.pid-42.flamegraph.svg"));
    UNIT_CHECK("a faults json is a result file name",
               fk_result_file_name_ok("h.20261202_151735_UTC.host.faults.json"));
    UNIT_CHECK("Makefile is not", !fk_result_file_name_ok("Makefile"));
    UNIT_CHECK("a hidden file is not", !fk_result_file_name_ok(".h.20261202_151735_UTC.pid-1.json"));
    UNIT_CHECK("a hand-made .svg is not",
               !fk_result_file_name_ok("h.20261202_151735_UTC.pid-1.svg"));
    UNIT_CHECK("a result name with a tail is not",
               !fk_result_file_name_ok("h.20261202_151735_UTC.pid-1.json.sh"));
    UNIT_CHECK("a space or a slash is not",
               !fk_result_file_name_ok("h x.20261202_151735_UTC.pid-1.json") &&
               !fk_result_file_name_ok("../h.20261202_151735_UTC.pid-1.json"));

    /* Terminal text (item 8): C0, DEL, C1 (UTF-8 and raw) and invalid UTF-8. */
    {
        char tx[] = "a\033[2Jb\xc2\x9b" "c\x9b" "d\x7f\te\xc3\xa9\xe2\x82\xac\xf0\x9f\x94\xa5"
                   "\xc0\xaf\xed\xa0\x80\xe2\x82";
        fk_text_sanitize(tx);
        UNIT_CHECK("sanitize: controls and bad UTF-8 become '?', good UTF-8 stays",
                   !strcmp(tx, "a?[2Jb?c?d?\te\xc3\xa9\xe2\x82\xac\xf0\x9f\x94\xa5???????"));
        char u[] = "\xc2\x85\xc2\xa0";
        UNIT_CHECK("sanitize: NEL (U+0085) goes, NBSP (U+00A0) stays",
                   fk_text_sanitize_n(u, 4) == 3 && !memcmp(u, "?\xc2\xa0", 3));
    }
    return UNIT_END();
}
