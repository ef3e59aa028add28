/* SPDX-License-Identifier: GPL-2.0-only */
/* Unit tests for the stack table, folded parsing and atomic output. */
#include "stacks/names.h"
#include "unit.h"
#include "stacks/folded.h"
#include "util/lineread.h"
#include "util/outfile.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
               fk_folded_parse_line(l1, strlen(l1), true, &stack, &sl, &c, &c2, &has2, &why) &&
                   sl == 7 && c == 42 && !has2);
    char l2[] = "a;b 3 7";
    UNIT_CHECK("two counts parse as differential",
               fk_folded_parse_line(l2, strlen(l2), true, &stack, &sl, &c, &c2, &has2, &why) &&
                   has2 && c == 3 && c2 == 7 && sl == 3);
    char l3[] = "a;b 99999999999999999999";
    UNIT_CHECK("overflowing count rejected",
               !fk_folded_parse_line(l3, strlen(l3), true, &stack, &sl, &c, &c2, &has2, &why) &&
                   strstr(why, "64 bits"));
    char l4[] = "no count here";
    UNIT_CHECK("missing count rejected",
               !fk_folded_parse_line(l4, strlen(l4), true, &stack, &sl, &c, &c2, &has2, &why));
    char l5[] = " 5";
    UNIT_CHECK("empty stack rejected",
               !fk_folded_parse_line(l5, strlen(l5), true, &stack, &sl, &c, &c2, &has2, &why));
    /* issue 12: only diff input reads two counts; a frame named
     * "f 1000000000" is part of the stack everywhere else */
    char l6[] = "a;f 1000000000 5";
    UNIT_CHECK("one count unless asked: 'f 1000000000' is a frame name",
               fk_folded_parse_line(l6, strlen(l6), false, &stack, &sl, &c, &c2, &has2, &why) &&
                   !has2 && c == 5 && sl == 14 && !memcmp(stack, "a;f 1000000000", 14));
    /* folded text has no escapes (FlameGraph's format): backslashes are
     * bytes, one blank separates the count, a name may end in a space */
    char l7[] = "a\\\\b;C:\\x20q;f\\x0al 5";
    static const char w7[] = "a\\\\b;C:\\x20q;f\\x0al";
    UNIT_CHECK("backslashes read as they are",
               fk_folded_parse_line(l7, strlen(l7), true, &stack, &sl, &c, &c2, &has2, &why) &&
                   !has2 && c == 5 && sl == strlen(w7) && !memcmp(stack, w7, sl));
    char l8[] = "a;std::function<int  5";
    UNIT_CHECK("one blank before the count: a name's final space stays",
               fk_folded_parse_line(l8, strlen(l8), false, &stack, &sl, &c, &c2, &has2, &why) &&
                   c == 5 && sl == 20 && !memcmp(stack, "a;std::function<int ", 20));
    char l9[] = "a;b\tc\t6";
    UNIT_CHECK("a tab separates the count too (flamegraph.pl's \\s)",
               fk_folded_parse_line(l9, strlen(l9), false, &stack, &sl, &c, &c2, &has2, &why) &&
                   c == 6 && sl == 5 && !memcmp(stack, "a;b\tc", 5));
}

static void test_outfile_and_read(const char *dir)
{
    char *path = fk_asprintf("%s/out.folded.gz", dir);
    struct fk_outfile o;
    char err[512] = "";
    UNIT_CHECK("gz outfile opens", fk_outfile_open_gz(&o, path, 0644, err, sizeof err));
    struct stat st;
    UNIT_CHECK("final name absent before commit", stat(path, &st) != 0);
    for (int i = 0; i < 1000; i++)
        fk_outfile_printf(&o, "main;f%d %d\n", i % 10, 1);
    fk_outfile_write(&o, "tail 5", 6); /* no trailing newline */
    UNIT_CHECK("commit succeeds", fk_outfile_commit(&o, err, sizeof err));
    UNIT_CHECK("final name present after commit", stat(path, &st) == 0);
    struct fk_stacktab t;
    struct fk_parse_stats ps = { 0 };
    fk_stacktab_init(&t);
    UNIT_CHECK("gzip folded read back", fk_folded_read(path, &t, &ps, err, sizeof err));
    UNIT_CHECK("11 stacks, total 1005", t.n == 11 && t.total == 1005 && ps.bad == 0);
    fk_stacktab_free(&t);
    fk_parse_stats_free(&ps);

    struct fk_outfile a;
    char *p2 = fk_asprintf("%s/aborted", dir);
    fk_outfile_open(&a, p2, 0644, err, sizeof err);
    fk_outfile_abort(&a);
    UNIT_CHECK("aborted output leaves nothing", stat(p2, &st) != 0);

    /* a directory at the final name: refused, the reason in err */
    err[0] = 0;
    UNIT_CHECK("a directory at the output path is refused, the reason as a value",
               !fk_outfile_open(&a, dir, 0644, err, sizeof err) &&
               strstr(err, "it is a directory, not a regular file"));
    free(path);
    free(p2);
}

/* The size a reader knows before reading: a plain file's bytes after the
 * offset it was opened at; nothing for gzip or a pipe. */
static void test_plain_size(const char *dir)
{
    char *plain = fk_asprintf("%s/plain.txt", dir), *gz = fk_asprintf("%s/out.folded.gz", dir);
    FILE *f = fopen(plain, "w");
    for (int i = 0; f && i < 1000; i++)
        fprintf(f, "line %04d\n", i);      /* 10 bytes each */
    UNIT_CHECK("plain input written", f && fclose(f) == 0);
    struct fk_lineread r;
    size_t n;
    bool eof;
    UNIT_CHECK("a plain file's size is known", fk_lineread_open(&r, plain) &&
               fk_lineread_peek(&r, 1, &n, &eof) && fk_lineread_plain_size(&r) == 10000);
    fk_lineread_close(&r);
    UNIT_CHECK("a gzip file's is not", fk_lineread_open(&r, gz) &&
               fk_lineread_peek(&r, 1, &n, &eof) && fk_lineread_plain_size(&r) == 0);
    fk_lineread_close(&r);
    /* stdin: redirected from the file 30 bytes in, then a pipe */
    int saved = dup(STDIN_FILENO), fd = open(plain, O_RDONLY), pfd[2];
    bool redirected = saved >= 0 && fd >= 0 && lseek(fd, 30, SEEK_SET) == 30 &&
                      dup2(fd, STDIN_FILENO) == STDIN_FILENO;
    UNIT_CHECK("stdin redirected from a file: the bytes after its offset",
               redirected && fk_lineread_open(&r, "-") && fk_lineread_peek(&r, 1, &n, &eof) &&
               fk_lineread_plain_size(&r) == 9970 && !strncmp(fk_lineread_next(&r, &n), "line 0003", 9));
    fk_lineread_close(&r);
    bool piped = pipe(pfd) == 0 && write(pfd[1], "x\n", 2) == 2 && close(pfd[1]) == 0 &&
                 dup2(pfd[0], STDIN_FILENO) == STDIN_FILENO;
    UNIT_CHECK("a pipe's is not", piped && fk_lineread_open(&r, "-") &&
               fk_lineread_peek(&r, 1, &n, &eof) && fk_lineread_plain_size(&r) == 0);
    fk_lineread_close(&r);
    if (saved >= 0)
        dup2(saved, STDIN_FILENO), close(saved);
    if (fd >= 0)
        close(fd);
    if (piped)
        close(pfd[0]);
    free(plain);
    free(gz);
}

static bool short_is(const char *in, const char *want)
{
    struct fk_buf b = FK_BUF_INIT;
    size_t n;
    const char *s = fk_name_short(in, strlen(in), &b, &n);
    bool ok = n == strlen(want) && !memcmp(s, want, n);
    if (!ok)
        printf("    short(%s) = %.*s\n", in, (int)n, s);
    fk_buf_free(&b);
    return ok;
}

static bool display_is(const char *in, const char *want)
{
    struct fk_buf b = FK_BUF_INIT;
    fk_name_display(in, strlen(in), &b);
    bool ok = !strcmp(fk_buf_cstr(&b), want);
    if (!ok)
        printf("    display(%s) = %s\n", in, fk_buf_cstr(&b));
    fk_buf_free(&b);
    return ok;
}

static void test_names(void)
{
    UNIT_CHECK("short: C++ parameter list", short_is("ns::f(int, char const*)", "ns::f"));
    UNIT_CHECK("short: qualifiers after the list",
               short_is("std::vector<int, std::allocator<int> >::size() const", "std::vector<int, std::allocator<int> >::size"));
    UNIT_CHECK("short: ref qualifiers and noexcept", short_is("A::get() const && noexcept", "A::get"));
    UNIT_CHECK("short: clone suffixes", short_is("f(int) [clone .isra.0] [clone .cold]", "f"));
    UNIT_CHECK("short: clone without a list", short_is("g [clone .part.0]", "g"));
    UNIT_CHECK("short: Rust hash", short_is("core::fmt::write::h0123456789abcdef", "core::fmt::write"));
    UNIT_CHECK("short: not a Rust hash (15 digits)", short_is("a::h0123456789abcde", "a::h0123456789abcde"));
    UNIT_CHECK("short: operator() keeps its parentheses", short_is("F::operator()(int) const", "F::operator()"));
    UNIT_CHECK("short: lambda context kept", short_is("f()::{lambda(int)#1}::operator()(int) const", "f()::{lambda(int)#1}::operator()"));
    UNIT_CHECK("short: (anonymous namespace) kept", short_is("(anonymous namespace)::run(char*)", "(anonymous namespace)::run"));
    UNIT_CHECK("short: a name that is all parentheses stays", short_is("(anonymous namespace)", "(anonymous namespace)"));
    UNIT_CHECK("short: a location after a space stays", short_is("func (/srv/app.py:12)", "func (/srv/app.py:12)"));
    UNIT_CHECK("short: operator& is a name, not a qualifier", short_is("ns::operator&", "ns::operator&"));
    UNIT_CHECK("short: C names unchanged", short_is("do_syscall_64", "do_syscall_64"));
    UNIT_CHECK("short: Go method unchanged", short_is("main.(*T).Run", "main.(*T).Run"));
    UNIT_CHECK("short: annotation kept after the cut", short_is("A::get() const_[j]", "A::get_[j]"));
    UNIT_CHECK("short: unbalanced stays", short_is("f(int", "f(int"));
    UNIT_CHECK("display: kernel", display_is("do_idle_[k]", "do_idle (kernel)"));
    UNIT_CHECK("display: JIT", display_is("LazyCompile:~f_[j]", "LazyCompile:~f (JIT)"));
    UNIT_CHECK("display: inlined", display_is("g_[i]", "g (inlined)"));
    UNIT_CHECK("display: short form too", display_is("ns::f(int)_[i]", "ns::f (inlined)"));
    UNIT_CHECK("display: plain", display_is("main", "main"));
    UNIT_CHECK("display: only an annotation stays as it is", display_is("_[k]", "_[k]"));
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
    test_plain_size(dir);
    test_names();
    char *cmd = fk_asprintf("rm -rf '%s'", dir);
    if (system(cmd) != 0)
        return 2;
    free(cmd);
    (void)argc; (void)argv;
    return UNIT_END();
}
