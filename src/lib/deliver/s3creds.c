/* SPDX-License-Identifier: GPL-2.0-only */
/* Credential and settings lookup for uploads. Order (first wins):
 *   key:    --profile -> AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY ->
 *           upload.conf -> ~/.aws/credentials [AWS_PROFILE or default]
 *   region: --region -> AWS_REGION/AWS_DEFAULT_REGION -> upload.conf ->
 *           ~/.aws/config profile
 * Secrets are never printed: messages name the file or variable only. */
#include "deliver/s3creds.h"
#include "util/buf.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct kv {
    char *k, *v;
};

struct section {
    struct kv *kv;
    size_t n, cap;
};

static void section_free(struct section *s)
{
    for (size_t i = 0; i < s->n; i++) {
        free(s->kv[i].k);
        explicit_bzero(s->kv[i].v, strlen(s->kv[i].v));
        free(s->kv[i].v);
    }
    free(s->kv);
    memset(s, 0, sizeof *s);
}

static const char *section_get(const struct section *s, const char *k)
{
    for (size_t i = 0; i < s->n; i++)
        if (!strcmp(s->kv[i].k, k))
            return s->kv[i].v;
    return NULL;
}

static char *trim(char *p)
{
    while (isspace((unsigned char)*p))
        p++;
    char *e = p + strlen(p);
    while (e > p && isspace((unsigned char)e[-1]))
        *--e = 0;
    return p;
}

/* Read the keys of [want] (want NULL: every line, sections ignored) from an
 * INI-style file. Returns -1 when the file does not exist, 0 when the
 * section is absent, 1 when found; a read error other than ENOENT sets
 * *read_error and says why in err. st gets the file's status. */
static int ini_read(const char *path, const char *want, struct section *out, struct stat *st,
                    bool *read_error, char *err, size_t errlen)
{
    *read_error = false;
    FILE *f = fopen(path, "re");
    if (!f) {
        if (errno == ENOENT || errno == ENOTDIR)
            return -1;
        snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
        *read_error = true;
        return -1;
    }
    if (st && fstat(fileno(f), st) != 0) {
        snprintf(err, errlen, "cannot stat %s: %s", path, strerror(errno));
        fclose(f);
        *read_error = true;
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    bool in = want == NULL, found = want == NULL;
    while (getline(&line, &cap, f) >= 0) {
        char *p = trim(line);
        if (!*p || *p == '#' || *p == ';')
            continue;
        if (*p == '[') {
            if (!want)
                continue;
            char *e = strchr(p, ']');
            if (e)
                *e = 0;
            in = !strcmp(trim(p + 1), want);
            found |= in;
            continue;
        }
        if (!in)
            continue;
        char *eq = strchr(p, '=');
        if (!eq)
            continue;
        *eq = 0;
        out->kv = fk_grow(out->kv, &out->cap, out->n + 1, sizeof *out->kv);
        out->kv[out->n].k = fk_strdup(trim(p));
        out->kv[out->n].v = fk_strdup(trim(eq + 1));
        out->n++;
    }
    bool failed = ferror(f);
    if (line) {
        explicit_bzero(line, cap);
        free(line);
    }
    fclose(f);
    if (failed) {
        snprintf(err, errlen, "cannot read %s", path);
        *read_error = true;
        return -1;
    }
    return found ? 1 : 0;
}

static char *home_path(const char *rel)
{
    const char *home = getenv("HOME");
    if (!home || !*home) {
        struct passwd *pw = getpwuid(getuid());
        home = pw ? pw->pw_dir : "/";
    }
    return fk_asprintf("%s/%s", home, rel);
}

static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

static char *dup_or_null(const char *s)
{
    return s && *s ? fk_strdup(s) : NULL;
}

/* The keys of PROFILE in the shared credentials file, into s (source set only
 * when found): 1 found, 0 no such profile or no file, -1 a read error in err. */
static int keys_from_profile(struct fk_s3_settings *s, const char *cred_path, const char *profile,
                             char *err, size_t errlen)
{
    struct section p = { 0 };
    bool rerr;
    int r = ini_read(cred_path, profile, &p, NULL, &rerr, err, errlen);
    if (!rerr && r > 0) {
        s->key_id = dup_or_null(section_get(&p, "aws_access_key_id"));
        s->secret = dup_or_null(section_get(&p, "aws_secret_access_key"));
        s->token = dup_or_null(section_get(&p, "aws_session_token"));
        s->source = fk_asprintf("profile '%s' in %s", profile, cred_path);
    }
    section_free(&p);
    return rerr ? -1 : r > 0;
}

char *fk_s3_key_hint(const char *key_id)
{
    size_t n = key_id ? strlen(key_id) : 0;
    size_t show = n / 2 < 4 ? n / 2 : 4;
    return fk_asprintf("...%s", key_id ? key_id + n - show : "");
}

/* flamekit's own config file: explicit path, $FLAMEKIT_UPLOAD_CONFIG,
 * $XDG_CONFIG_HOME or ~/.config/flamekit/upload.conf, /etc/flamekit/upload.conf. */
static int load_flamekit_conf(const struct fk_upload_opts *o, struct section *conf, char **path_out,
                              char *err, size_t errlen)
{
    char *cands[4] = { 0 };
    size_t nc = 0;
    bool explicit_path = false;
    if (o->config) {
        cands[nc++] = fk_strdup(o->config);
        explicit_path = true;
    } else if (env("FLAMEKIT_UPLOAD_CONFIG")) {
        cands[nc++] = fk_strdup(env("FLAMEKIT_UPLOAD_CONFIG"));
        explicit_path = true;
    } else {
        if (env("XDG_CONFIG_HOME"))
            cands[nc++] = fk_asprintf("%s/flamekit/upload.conf", env("XDG_CONFIG_HOME"));
        else
            cands[nc++] = home_path(".config/flamekit/upload.conf");
        cands[nc++] = fk_strdup("/etc/flamekit/upload.conf");
    }
    int rc = 0;
    for (size_t i = 0; i < nc && rc == 0; i++) {
        struct stat st;
        bool rerr;
        int r = ini_read(cands[i], NULL, conf, &st, &rerr, err, errlen);
        if (rerr) {
            rc = -1;
            break;
        }
        if (r < 0) {
            if (explicit_path) {
                snprintf(err, errlen, "config file %s does not exist", cands[i]);
                rc = -1;
            }
            continue;
        }
        if ((section_get(conf, "secret_access_key") || section_get(conf, "aws_secret_access_key") ||
             section_get(conf, "session_token") || section_get(conf, "aws_session_token")) &&
            (st.st_mode & 077)) {
            snprintf(err, errlen, "refusing %s: it holds a secret but is readable by group/others "
                     "(mode %04o); run: chmod 600 %s", cands[i], (unsigned)(st.st_mode & 07777), cands[i]);
            rc = -1;
            break;
        }
        *path_out = cands[i];
        cands[i] = NULL;
        rc = 1;
    }
    for (size_t i = 0; i < nc; i++)
        free(cands[i]);
    return rc;
}

static const char *conf_get(const struct section *c, const char *k)
{
    const char *v = section_get(c, k);
    if (!v) {
        char *ak = fk_asprintf("aws_%s", k);
        v = section_get(c, ak);
        free(ak);
    }
    return v && *v ? v : NULL;
}

bool fk_s3_settings_load(struct fk_s3_settings *s, const struct fk_upload_opts *o, char *err,
                         size_t errlen)
{
    memset(s, 0, sizeof *s);
    if (errlen)
        err[0] = 0;
    struct section conf = { 0 };
    char *conf_path = NULL;
    bool ok = false;
    char *cred_path = env("AWS_SHARED_CREDENTIALS_FILE") ? fk_strdup(env("AWS_SHARED_CREDENTIALS_FILE"))
                                                          : home_path(".aws/credentials");
    char *cfg_path = env("AWS_CONFIG_FILE") ? fk_strdup(env("AWS_CONFIG_FILE")) : home_path(".aws/config");
    const char *profile = o->profile ? o->profile : env("AWS_PROFILE") ? env("AWS_PROFILE") : "default";

    int crc = load_flamekit_conf(o, &conf, &conf_path, err, errlen);
    if (crc < 0)
        goto out;

    /* The key. */
    if (o->profile) {
        int r = keys_from_profile(s, cred_path, profile, err, errlen);
        if (r < 0)
            goto out;
        if (r == 0) {
            snprintf(err, errlen, "profile '%s' not found in %s", profile, cred_path);
            goto out;
        }
    } else if (env("AWS_ACCESS_KEY_ID") || env("AWS_SECRET_ACCESS_KEY")) {
        s->key_id = dup_or_null(env("AWS_ACCESS_KEY_ID"));
        s->secret = dup_or_null(env("AWS_SECRET_ACCESS_KEY"));
        s->token = dup_or_null(env("AWS_SESSION_TOKEN"));
        s->source = fk_strdup("AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY in the environment");
    } else if (crc > 0 && (conf_get(&conf, "access_key_id") || conf_get(&conf, "secret_access_key"))) {
        s->key_id = dup_or_null(conf_get(&conf, "access_key_id"));
        s->secret = dup_or_null(conf_get(&conf, "secret_access_key"));
        s->token = dup_or_null(conf_get(&conf, "session_token"));
        s->source = fk_strdup(conf_path);
    } else if (keys_from_profile(s, cred_path, profile, err, errlen) < 0) {
        goto out;
    }
    if (!s->source) {
        snprintf(err, errlen, "no credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, add a "
                 "profile to %s, or write ~/.config/flamekit/upload.conf (mode 0600); see "
                 "flamekit-upload(1)", cred_path);
        goto out;
    }
    if (!s->key_id || !s->secret) {
        snprintf(err, errlen, "incomplete credentials in %s: need both an access key id and a secret "
                 "access key", s->source);
        goto out;
    }

    /* Region and the other settings. */
    if (o->region)
        s->region = fk_strdup(o->region);
    else if (env("AWS_REGION"))
        s->region = fk_strdup(env("AWS_REGION"));
    else if (env("AWS_DEFAULT_REGION"))
        s->region = fk_strdup(env("AWS_DEFAULT_REGION"));
    else if (crc > 0 && conf_get(&conf, "region"))
        s->region = fk_strdup(conf_get(&conf, "region"));
    else {
        struct section p = { 0 };
        char *sect = strcmp(profile, "default") ? fk_asprintf("profile %s", profile) : fk_strdup("default");
        bool rerr;
        if (ini_read(cfg_path, sect, &p, NULL, &rerr, err, errlen) > 0)
            s->region = dup_or_null(section_get(&p, "region"));
        free(sect);
        section_free(&p);
        if (rerr)
            goto out;
    }
    if (crc > 0) {
        s->endpoint = dup_or_null(conf_get(&conf, "endpoint"));
        s->ca_file = dup_or_null(conf_get(&conf, "ca_file"));
        const char *a = conf_get(&conf, "addressing");
        if (a && !strcmp(a, "path"))
            s->addressing = 1;
        else if (a && (!strcmp(a, "virtual") || !strcmp(a, "virtual-host")))
            s->addressing = 2;
        else if (a) {
            snprintf(err, errlen, "%s: addressing must be 'path' or 'virtual', not '%s'", conf_path, a);
            goto out;
        }
    }
    if (!s->endpoint)
        s->endpoint = dup_or_null(env("AWS_ENDPOINT_URL_S3") ? env("AWS_ENDPOINT_URL_S3") : env("AWS_ENDPOINT_URL"));
    ok = true;
out:
    section_free(&conf);
    free(conf_path);
    free(cred_path);
    free(cfg_path);
    if (!ok)
        fk_s3_settings_free(s);
    return ok;
}

static void wipe_free(char *p)
{
    if (p) {
        explicit_bzero(p, strlen(p));
        free(p);
    }
}

void fk_s3_settings_free(struct fk_s3_settings *s)
{
    free(s->key_id);
    wipe_free(s->secret);
    wipe_free(s->token);
    free(s->source);
    free(s->region);
    free(s->endpoint);
    free(s->ca_file);
    memset(s, 0, sizeof *s);
}
