/* SPDX-License-Identifier: GPL-2.0-only */
/* Unit tests for the stack table, folded parsing and atomic output. */
#include "unit.h"
#include "stacks/folded.h"
#include "util/lineread.h"
#include "util/outfile.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static void test_stacktab(void)
{
    struct fk_stacktab t;
    fk_stacktab_init(&t);
    char key[64];
    /* Enough keys to force several rehashes. */
    for (int round = 0; round < 3; round++)
        for (int i = 0; i < 5000; i++) {
            int n = snprintf(key, sizeof key, "main;f%d;g", i);
            fk_stacktab_add(&t, key, (size_t)n, (uint64_t)i + 1);
        }
    UNIT_CHECK("5000 unique stacks after 15000 adds", t.n == 5000);
    struct fk_stack *e = fk_stacktab_find(&t, "main;f41;g", 10);
    UNIT_CHECK("counts of one stack accumulate", e && e->count == 3 * 42);
    UNIT_CHECK("missing stack not found", !fk_stacktab_find(&t, "main;f41", 8));
    struct fk_stack **s = fk_stacktab_sorted(&t);
    int sorted = 1;
    for (size_t i = 1; i < t.n; i++)
        if (strcmp(s[i - 1]->key, s[i]->key) >= 0)
            sorted = 0;
    UNIT_CHECK("sorted bytewise", sorted);
    free(s);
    fk_stacktab_free(&t);
    fk_stacktab_init(&t);
    fk_stacktab_add(&t, "x", 1, UINT64_MAX - 1);
    UNIT_CHECK("no overflow flag yet", !t.overflow);
    fk_stacktab_add(&t, "x", 1, 5);
    UNIT_CHECK("overflow saturates and is flagged",
               t.overflow && fk_stacktab_find(&t, "x", 1)->count == UINT64_MAX);
    fk_stacktab_free(&t);
}

static void test_parse(void)
{
    const char *stack, *why;
    size_t sl;
    uint64_t c, c2;
    bool has2;
    char l1[] = "a;b c;d 42";
    UNIT_CHECK("frame with space parses",
               fk_folded_parse_line(l1, strlen(l1), &stack, &sl, &c, &c2, &has2, &why) &&
                   sl == 7 && c == 42 && !has2);
    char l2[] = "a;b 3 7";
    UNIT_CHECK("two counts parse as differential",
               fk_folded_parse_line(l2, strlen(l2), &stack, &sl, &c, &c2, &has2, &why) &&
                   has2 && c == 3 && c2 == 7 && sl == 3);
    char l3[] = "a;b 99999999999999999999";
    UNIT_CHECK("overflowing count rejected",
               !fk_folded_parse_line(l3, strlen(l3), &stack, &sl, &c, &c2, &has2, &why) &&
                   strstr(why, "64 bits"));
    char l4[] = "no count here";
    UNIT_CHECK("missing count rejected",
               !fk_folded_parse_line(l4, strlen(l4), &stack, &sl, &c, &c2, &has2, &why));
    char l5[] = " 5";
    UNIT_CHECK("empty stack rejected",
               !fk_folded_parse_line(l5, strlen(l5), &stack, &sl, &c, &c2, &has2, &why));
}

static void test_outfile_and_read(const char *dir)
{
    char *path = fk_asprintf("%s/out.folded.gz", dir);
    struct fk_outfile o;
    UNIT_CHECK("gz outfile opens", fk_outfile_open_gz(&o, path, 0644));
    struct stat st;
    UNIT_CHECK("final name absent before commit", stat(path, &st) != 0);
    for (int i = 0; i < 1000; i++)
        fk_outfile_printf(&o, "main;f%d %d\n", i % 10, 1);
    fk_outfile_write(&o, "tail 5", 6); /* no trailing newline */
    UNIT_CHECK("commit succeeds", fk_outfile_commit(&o));
    UNIT_CHECK("final name present after commit", stat(path, &st) == 0);
    struct fk_stacktab t;
    struct fk_parse_stats ps = { 0 };
    fk_stacktab_init(&t);
    UNIT_CHECK("gzip folded read back", fk_folded_read(path, &t, &ps));
    UNIT_CHECK("11 stacks, total 1005", t.n == 11 && t.total == 1005 && ps.bad == 0);
    fk_stacktab_free(&t);
    fk_parse_stats_free(&ps);

    struct fk_outfile a;
    char *p2 = fk_asprintf("%s/aborted", dir);
    fk_outfile_open(&a, p2, 0644);
    fk_outfile_abort(&a);
    UNIT_CHECK("aborted output leaves nothing", stat(p2, &st) != 0);
    free(path);
    free(p2);
}

int main(int argc, char **argv)
{
    unit_name = "unit-stacks";
    char tmpl[] = "/tmp/fk-unit.XXXXXX";
    const char *dir = mkdtemp(tmpl);
    if (!dir)
        return 2;
    test_stacktab();
    test_parse();
    test_outfile_and_read(dir);
    char *cmd = fk_asprintf("rm -rf '%s'", dir);
    if (system(cmd) != 0)
        return 2;
    free(cmd);
    (void)argc; (void)argv;
    return UNIT_END();
}
