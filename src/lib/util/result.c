/* SPDX-License-Identifier: GPL-2.0-only */
/* The result contract (result.h): names built and parsed in one place, the
 * metadata read in one place. */
#include "result.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *const exts[FK_RESULT_NKINDS] = {
    [FK_RESULT_FOLDED] = ".folded.gz",
    [FK_RESULT_SVG] = ".flamegraph.svg",
    [FK_RESULT_PPROF] = ".pb.gz",
    [FK_RESULT_JSON] = ".json",
};

/* Suffixes of files made from results by hand (flamekit collapse -o x.folded). */
static const char *const other_exts[] = { ".folded", ".svg", ".txt", ".gz" };

/* Profiles that name themselves after the scope; CPU profiles do not. */
static const char *const profiles[] = { "faults", "offcpu" };

const char *fk_result_ext(enum fk_result_kind k)
{
    return (unsigned)k < FK_RESULT_NKINDS ? exts[k] : "";
}

char *fk_result_word(const char *s, size_t max)
{
    size_t n = strnlen(s, max);
    char *r = fk_strndup(s, n);
    for (char *p = r; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '.' && *p != '-' && *p != '_')
            *p = '_';
    if (!*r || r[0] == '.') {
        free(r);
        r = fk_strdup("x");
    }
    return r;
}

char *fk_result_hostname(void)
{
    char host[256];
    if (gethostname(host, sizeof host - 1) != 0 || !host[0])
        snprintf(host, sizeof host, "localhost");
    host[sizeof host - 1] = 0;
    return fk_result_word(host, 64);
}

char *fk_result_base(const char *host, uint64_t start_unix_ns, const char *scope,
                     const char *profile)
{
    time_t t = (time_t)(start_unix_ns / 1000000000ull);
    struct tm tm;
    char stamp[32];
    gmtime_r(&t, &tm);
    strftime(stamp, sizeof stamp, "%Y%m%d_%H%M%S_UTC", &tm);
    if (profile && *profile && strcmp(profile, "cpu"))
        return fk_asprintf("%s.%s.%s.%s", host, stamp, scope, profile);
    return fk_asprintf("%s.%s.%s", host, stamp, scope);
}

char *fk_result_path(const char *dir, const char *base, enum fk_result_kind k)
{
    return fk_asprintf("%s/%s%s", dir, base, fk_result_ext(k));
}

static bool digits(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isdigit((unsigned char)p[i]))
            return false;
    return true;
}

bool fk_result_parse(const char *path, struct fk_result_name *n)
{
    memset(n, 0, sizeof *n);
    const char *slash = strrchr(path, '/');
    const char *name = slash ? slash + 1 : path;
    /* ".YYYYMMDD_HHMMSS_UTC." is 21 characters; hosts may contain dots. */
    const char *st = NULL;
    for (const char *p = strchr(name, '.'); p; p = strchr(p + 1, '.'))
        if (p > name && strlen(p) > 21 && digits(p + 1, 8) && p[9] == '_' &&
            digits(p + 10, 6) && !strncmp(p + 16, "_UTC.", 5)) {
            st = p;
            break;
        }
    if (!st)
        return false;
    const char *rest = st + 21;
    size_t rn = strlen(rest);
    n->kind = -1;
    for (int k = 0; k < FK_RESULT_NKINDS && n->kind < 0; k++)
        if (fk_ends_with(rest, rn, exts[k])) {
            n->kind = k;
            rn -= strlen(exts[k]);
        }
    for (size_t i = 0; n->kind < 0 && i < sizeof other_exts / sizeof other_exts[0]; i++)
        if (fk_ends_with(rest, rn, other_exts[i])) {
            rn -= strlen(other_exts[i]);
            break;
        }
    if (rn == 0 || rest[0] == '.')
        return false;
    size_t sn = rn;
    const char *profile = "cpu";
    for (size_t i = 0; i < sizeof profiles / sizeof profiles[0]; i++) {
        size_t pl = strlen(profiles[i]);
        if (rn > pl + 1 && rest[rn - pl - 1] == '.' && !memcmp(rest + rn - pl, profiles[i], pl)) {
            sn = rn - pl - 1;
            profile = profiles[i];
        }
    }
    n->host = fk_strndup(name, (size_t)(st - name));
    n->scope = fk_strndup(rest, sn);
    n->profile = fk_strdup(profile);
    n->base = fk_strndup(name, (size_t)(rest + rn - name));
    memcpy(n->stamp, st + 1, 19);
    const char *s = st + 1;
    snprintf(n->start_time, sizeof n->start_time, "%.4s-%.2s-%.2sT%.2s:%.2s:%.2sZ", s, s + 4,
             s + 6, s + 9, s + 11, s + 13);
    return true;
}

void fk_result_name_free(struct fk_result_name *n)
{
    free(n->host);
    free(n->scope);
    free(n->profile);
    free(n->base);
    memset(n, 0, sizeof *n);
}

bool fk_result_file_name_ok(const char *name)
{
    if (!name[0] || name[0] == '.')
        return false;
    for (const char *p = name; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '.' && *p != '-' && *p != '_')
            return false;
    struct fk_result_name n;
    if (!fk_result_parse(name, &n))
        return false;
    bool ok = n.kind >= 0;
    fk_result_name_free(&n);
    return ok;
}

char *fk_result_sibling(const char *path, enum fk_result_kind k)
{
    struct fk_result_name n;
    if (!fk_result_parse(path, &n))
        return NULL;
    const char *slash = strrchr(path, '/');
    char *r = fk_asprintf("%.*s%s%s", slash ? (int)(slash + 1 - path) : 0, path, n.base,
                          fk_result_ext(k));
    fk_result_name_free(&n);
    return r;
}

static const char *str_at(json_t *o, const char *a, const char *b)
{
    json_t *v = json_object_get(o, a);
    if (b)
        v = json_object_get(v, b);
    return json_string_value(v);
}

json_t *fk_result_meta_object(const char *path, char *err, size_t errlen)
{
    json_error_t e;
    json_t *j = json_load_file(path, JSON_REJECT_DUPLICATES, &e);
    if (!j) {
        snprintf(err, errlen, "%s:%d: bad JSON: %s (--metadata wants a JSON object)", path,
                 e.line, e.text);
        return NULL;
    }
    if (!json_is_object(j)) {
        snprintf(err, errlen, "%s: --metadata wants a JSON object ({...}), not another JSON value",
                 path);
        json_decref(j);
        return NULL;
    }
    return j;
}

bool fk_result_meta_load(const char *path, struct fk_result_meta *m)
{
    memset(m, 0, sizeof *m);
    m->duration_s = -1;
    m->samples = -1;
    json_t *j = json_load_file(path, JSON_REJECT_DUPLICATES, NULL);
    if (!j)
        return false;
    json_t *schema = json_object_get(j, "schema");
    if (!json_is_object(j) || (schema && !json_is_integer(schema)) ||
        json_integer_value(schema) > FK_RESULT_SCHEMA) {
        json_decref(j);
        return false;
    }
    m->root = j;
    m->schema = (int)json_integer_value(schema);
    m->profile = str_at(j, "profile", NULL);
    m->host = str_at(j, "host", NULL);
    if (!m->host)       /* before schema 1 */
        m->host = str_at(j, "hostname", NULL);
    m->start_time = str_at(j, "start_time", NULL);
    m->event = str_at(j, "event", "name");
    m->kernel_release = str_at(j, "kernel", "release");
    m->scope = str_at(j, "target", "scope");
    json_t *d = json_object_get(j, "duration_s"), *s = json_object_get(j, "samples");
    if (json_is_number(d))
        m->duration_s = json_number_value(d);
    if (json_is_integer(s))
        m->samples = json_integer_value(s);
    return true;
}

void fk_result_meta_free(struct fk_result_meta *m)
{
    json_decref(m->root);
    memset(m, 0, sizeof *m);
}
