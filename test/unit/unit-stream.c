/* SPDX-License-Identifier: GPL-2.0-only */
/* Unit tests for the result stream: round trip, and that every truncation
 * and every flipped byte is detected and leaves no file behind. */
#include "unit.h"
#include "deliver/stream.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[] = "/tmp/fk-unit-stream.XXXXXX";

static size_t count_entries(void)
{
    DIR *d = opendir(dir);
    size_t n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            n++;
    if (d)
        closedir(d);
    return n;
}

static void clear_dir(void)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            char *p = fk_asprintf("%s/%s", dir, e->d_name);
            unlink(p);
            free(p);
        }
    if (d)
        closedir(d);
}

/* A stream with two files and an end record, in memory. */
static char *make_stream(size_t *len, int status, const char *msg, size_t big)
{
    char path[] = "/tmp/fk-unit-stream-w.XXXXXX";
    int fd = mkstemp(path);
    struct fk_stream_writer w;
    char *payload = fk_malloc(big + 1);
    for (size_t i = 0; i < big; i++)
        payload[i] = (char)('a' + i % 26);
    fk_stream_begin(&w, fd);
    fk_stream_file(&w, "h.20261202_151500_UTC.pid.flamegraph.svg", "<svg/>\n", 7);
    fk_stream_file(&w, "h.20261202_151500_UTC.pid.folded.gz", payload, big);
    fk_stream_end(&w, status, msg);
    free(payload);
    off_t n = lseek(fd, 0, SEEK_END);
    char *buf = fk_malloc((size_t)n);
    if (pread(fd, buf, (size_t)n, 0) != n)
        abort();
    close(fd);
    unlink(path);
    *len = (size_t)n;
    return buf;
}

static bool read_mem(const char *buf, size_t len, size_t chunk, struct fk_stream_reader *r)
{
    fk_stream_reader_init(r, dir);
    for (size_t off = 0; off < len; off += chunk)
        fk_stream_reader_feed(r, buf + off, len - off < chunk ? len - off : chunk);
    return fk_stream_reader_finish(r, "alias");
}

int main(void)
{
    unit_name = "unit-stream";
    if (!mkdtemp(dir))
        return 1;
    size_t len;
    char *s = make_stream(&len, 0, "", 300);
    struct fk_stream_reader r;

    bool ok = read_mem(s, len, 1, &r);
    UNIT_CHECK("byte-by-byte read commits both files", ok && r.nfiles == 2 && count_entries() == 2);
    UNIT_CHECK("end status 0", r.status == 0);
    struct stat st;
    UNIT_CHECK("file has its size", r.nfiles == 2 && r.files[1].path &&
                                        stat(r.files[1].path, &st) == 0 && st.st_size == 300);
    fk_stream_reader_free(&r);

    ok = read_mem(s, len, 4096, &r);
    UNIT_CHECK("existing names: second copy gets the prefix", ok && r.files[0].path &&
                                        strstr(r.files[0].path, "/alias.h.2026") && count_entries() == 4);
    fk_stream_reader_free(&r);
    clear_dir();

    int bad_trunc = 0;
    for (size_t cut = 0; cut < len; cut++) {
        if (read_mem(s, cut, 7, &r) || count_entries() != 0 || !r.error)
            bad_trunc++;
        fk_stream_reader_free(&r);
    }
    UNIT_CHECK("every truncation is rejected and leaves no file", bad_trunc == 0);

    int bad_flip = 0;
    for (size_t i = 0; i < len; i++) {
        s[i] ^= 0x20;
        if (read_mem(s, len, 512, &r) || count_entries() != 0)
            bad_flip++;
        fk_stream_reader_free(&r);
        s[i] ^= 0x20;
    }
    UNIT_CHECK("every flipped byte is rejected and leaves no file", bad_flip == 0);

    char *s2 = fk_realloc(s, len + 1);
    s2[len] = 'x';
    UNIT_CHECK("trailing garbage is rejected", !read_mem(s2, len + 1, 100, &r) && count_entries() == 0);
    fk_stream_reader_free(&r);
    free(s2);

    s = make_stream(&len, 3, "flamekit pid: no process 999999", 10);
    ok = read_mem(s, len, 100, &r);
    UNIT_CHECK("remote failure: no files, status and message kept",
               !ok && r.status == 3 && r.message && !strcmp(r.message, "flamekit pid: no process 999999") &&
                   count_entries() == 0);
    fk_stream_reader_free(&r);
    free(s);

    /* Hostile headers: a huge length or a path name must not be accepted. */
    unsigned char evil[4 + 11 + 6] = "FKS1";
    evil[4] = 'F';
    evil[6] = 6;
    memset(evil + 7, 0xff, 8);
    memcpy(evil + 15, "a.svg1", 6);
    fk_stream_reader_init(&r, dir);
    UNIT_CHECK("2^64-byte file is refused at its header",
               fk_stream_reader_feed(&r, evil, sizeof evil) == FK_STREAM_BROKEN && count_entries() == 0);
    fk_stream_reader_free(&r);
    memset(evil + 7, 0, 8);
    memcpy(evil + 15, "../x.s", 6);
    fk_stream_reader_init(&r, dir);
    UNIT_CHECK("name with '/' is refused",
               fk_stream_reader_feed(&r, evil, sizeof evil) == FK_STREAM_BROKEN && count_entries() == 0);
    fk_stream_reader_free(&r);
    memcpy(evil + 15, ".hidde", 6);
    fk_stream_reader_init(&r, dir);
    UNIT_CHECK("hidden name is refused",
               fk_stream_reader_feed(&r, evil, sizeof evil) == FK_STREAM_BROKEN);
    fk_stream_reader_free(&r);
    memcpy(evil + 15, "Makefi", 6);
    fk_stream_reader_init(&r, dir);
    UNIT_CHECK("a name no capture writes (Makefile) is refused",
               fk_stream_reader_feed(&r, evil, sizeof evil) == FK_STREAM_BROKEN &&
               strstr(r.error, "not a flamekit result file name") && count_entries() == 0);
    fk_stream_reader_free(&r);

    /* The per-host cap: a valid name promising more than 1 GiB is refused
     * at its header (it was 4 GiB), before a byte is written. */
    static const char okname[] = "h.20261202_151500_UTC.pid.json";
    unsigned char big[4 + 11 + sizeof okname - 1] = "FKS1";
    big[4] = 'F';
    big[6] = sizeof okname - 1;
    uint64_t want = FK_STREAM_MAX_FILE_DEFAULT + 1;
    for (int i = 0; i < 8; i++)
        big[7 + i] = (unsigned char)(want >> (56 - 8 * i));
    memcpy(big + 15, okname, sizeof okname - 1);
    fk_stream_reader_init(&r, dir);
    UNIT_CHECK("a file above the 1 GiB cap is refused at its header",
               FK_STREAM_MAX_FILE_DEFAULT <= (1ull << 30) &&
               fk_stream_reader_feed(&r, big, sizeof big) == FK_STREAM_BROKEN &&
               strstr(r.error, "exceeds the size limit") && count_entries() == 0);
    fk_stream_reader_free(&r);

    rmdir(dir);
    return UNIT_END();
}
