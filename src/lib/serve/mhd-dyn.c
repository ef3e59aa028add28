/* SPDX-License-Identifier: GPL-2.0-only */
/* libmicrohttpd and GnuTLS, loaded with dlopen() when flamekit serve starts.
 *
 * Linked, they are in every flamekit command: GnuTLS's constructor,
 * p11-kit and the relocations of ~10 libraries cost ~5 ms of start-up, a
 * tenth of a collapse or an svg that never serves anything. Only serve uses
 * them, so these definitions of the entry points serve.c and auth.c call
 * forward to the real ones (flamekit exports no symbols, so the libraries'
 * own calls never reach these). Invariant: fk_mhd_load() succeeded before
 * the first call; the forwarders die otherwise (a bug, not bad input). */
#include "serve/mhd-dyn.h"
#include "util/dynlib.h"
#include "util/fk.h"

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <microhttpd.h>
#include <stdarg.h>

static struct fk_dynlib libmhd = {
    .soname = "libmicrohttpd.so.12", .who = "flamekit serve", .package = "libmicrohttpd12",
    .newer = "libmicrohttpd12 0.9.71 or newer",
};
static struct fk_dynlib libgnutls = {
    .soname = "libgnutls.so.30", .who = "flamekit serve", .package = "libgnutls30",
    .newer = "libgnutls30 3.6 or newer",
};
static struct {
    struct MHD_Response *(*create_response_from_buffer)(size_t, void *,
                                                        enum MHD_ResponseMemoryMode);
    enum MHD_Result (*add_response_header)(struct MHD_Response *, const char *, const char *);
    enum MHD_Result (*queue_response)(struct MHD_Connection *, unsigned int,
                                      struct MHD_Response *);
    void (*destroy_response)(struct MHD_Response *);
    const union MHD_ConnectionInfo *(*get_connection_info)(struct MHD_Connection *,
                                                           enum MHD_ConnectionInfoType, ...);
    const char *(*lookup_connection_value)(struct MHD_Connection *, enum MHD_ValueKind,
                                           const char *);
    struct MHD_Daemon *(*start_daemon_va)(unsigned int, uint16_t, MHD_AcceptPolicyCallback,
                                          void *, MHD_AccessHandlerCallback, void *, va_list);
    const union MHD_DaemonInfo *(*get_daemon_info)(struct MHD_Daemon *,
                                                   enum MHD_DaemonInfoType, ...);
    void (*stop_daemon)(struct MHD_Daemon *);
    const gnutls_datum_t *(*certificate_get_peers)(gnutls_session_t, unsigned int *);
    int (*certificate_verify_peers2)(gnutls_session_t, unsigned int *);
    int (*x509_crt_init)(gnutls_x509_crt_t *);
    int (*x509_crt_import)(gnutls_x509_crt_t, const gnutls_datum_t *, gnutls_x509_crt_fmt_t);
    int (*x509_crt_get_dn_by_oid)(gnutls_x509_crt_t, const char *, unsigned, unsigned int,
                                  void *, size_t *);
    int (*x509_crt_get_dn)(gnutls_x509_crt_t, char *, size_t *);
    void (*x509_crt_deinit)(gnutls_x509_crt_t);
    int (*x509_crt_get_key_purpose_oid)(gnutls_x509_crt_t, unsigned, void *, size_t *, unsigned *);
} lib;

bool fk_mhd_load(char *err, size_t errlen)
{
    const struct fk_dynsym mhd[] = {
        { "MHD_create_response_from_buffer", (void **)&lib.create_response_from_buffer },
        { "MHD_add_response_header", (void **)&lib.add_response_header },
        { "MHD_queue_response", (void **)&lib.queue_response },
        { "MHD_destroy_response", (void **)&lib.destroy_response },
        { "MHD_get_connection_info", (void **)&lib.get_connection_info },
        { "MHD_lookup_connection_value", (void **)&lib.lookup_connection_value },
        { "MHD_start_daemon_va", (void **)&lib.start_daemon_va },
        { "MHD_get_daemon_info", (void **)&lib.get_daemon_info },
        { "MHD_stop_daemon", (void **)&lib.stop_daemon },
    };
    const struct fk_dynsym tls[] = {
        { "gnutls_certificate_get_peers", (void **)&lib.certificate_get_peers },
        { "gnutls_certificate_verify_peers2", (void **)&lib.certificate_verify_peers2 },
        { "gnutls_x509_crt_init", (void **)&lib.x509_crt_init },
        { "gnutls_x509_crt_import", (void **)&lib.x509_crt_import },
        { "gnutls_x509_crt_get_dn_by_oid", (void **)&lib.x509_crt_get_dn_by_oid },
        { "gnutls_x509_crt_get_dn", (void **)&lib.x509_crt_get_dn },
        { "gnutls_x509_crt_deinit", (void **)&lib.x509_crt_deinit },
        { "gnutls_x509_crt_get_key_purpose_oid", (void **)&lib.x509_crt_get_key_purpose_oid },
    };
    /* libmicrohttpd brings in the GnuTLS it was built with: the same one */
    return fk_dynlib_once(&libmhd, mhd, sizeof mhd / sizeof mhd[0], err, errlen) &&
           fk_dynlib_once(&libgnutls, tls, sizeof tls / sizeof tls[0], err, errlen);
}

static void need(void)
{
    if (libmhd.state <= 0 || libgnutls.state <= 0)
        fk_die("internal error: libmicrohttpd used before fk_mhd_load()");
}

struct MHD_Response *MHD_create_response_from_buffer(size_t size, void *buffer,
                                                     enum MHD_ResponseMemoryMode mode)
{
    need();
    return lib.create_response_from_buffer(size, buffer, mode);
}

enum MHD_Result MHD_add_response_header(struct MHD_Response *r, const char *h, const char *v)
{
    need();
    return lib.add_response_header(r, h, v);
}

enum MHD_Result MHD_queue_response(struct MHD_Connection *c, unsigned int status,
                                   struct MHD_Response *r)
{
    need();
    return lib.queue_response(c, status, r);
}

void MHD_destroy_response(struct MHD_Response *r)
{
    need();
    lib.destroy_response(r);
}

/* The info types serve asks for take no further arguments. */
const union MHD_ConnectionInfo *MHD_get_connection_info(struct MHD_Connection *c,
                                                        enum MHD_ConnectionInfoType type, ...)
{
    need();
    return lib.get_connection_info(c, type);
}

const char *MHD_lookup_connection_value(struct MHD_Connection *c, enum MHD_ValueKind kind,
                                        const char *key)
{
    need();
    return lib.lookup_connection_value(c, kind, key);
}

struct MHD_Daemon *MHD_start_daemon(unsigned int flags, uint16_t port,
                                    MHD_AcceptPolicyCallback apc, void *apc_cls,
                                    MHD_AccessHandlerCallback dh, void *dh_cls, ...)
{
    need();
    va_list ap;
    va_start(ap, dh_cls);
    struct MHD_Daemon *d = lib.start_daemon_va(flags, port, apc, apc_cls, dh, dh_cls, ap);
    va_end(ap);
    return d;
}

const union MHD_DaemonInfo *MHD_get_daemon_info(struct MHD_Daemon *d,
                                                enum MHD_DaemonInfoType type, ...)
{
    need();
    return lib.get_daemon_info(d, type);
}

void MHD_stop_daemon(struct MHD_Daemon *d)
{
    need();
    lib.stop_daemon(d);
}

const gnutls_datum_t *gnutls_certificate_get_peers(gnutls_session_t s, unsigned int *n)
{
    need();
    return lib.certificate_get_peers(s, n);
}

int gnutls_certificate_verify_peers2(gnutls_session_t s, unsigned int *status)
{
    need();
    return lib.certificate_verify_peers2(s, status);
}

int gnutls_x509_crt_init(gnutls_x509_crt_t *crt)
{
    need();
    return lib.x509_crt_init(crt);
}

int gnutls_x509_crt_import(gnutls_x509_crt_t crt, const gnutls_datum_t *data,
                           gnutls_x509_crt_fmt_t fmt)
{
    need();
    return lib.x509_crt_import(crt, data, fmt);
}

int gnutls_x509_crt_get_dn_by_oid(gnutls_x509_crt_t crt, const char *oid, unsigned indx,
                                  unsigned int raw, void *buf, size_t *size)
{
    need();
    return lib.x509_crt_get_dn_by_oid(crt, oid, indx, raw, buf, size);
}

int gnutls_x509_crt_get_dn(gnutls_x509_crt_t crt, char *buf, size_t *size)
{
    need();
    return lib.x509_crt_get_dn(crt, buf, size);
}

void gnutls_x509_crt_deinit(gnutls_x509_crt_t crt)
{
    need();
    lib.x509_crt_deinit(crt);
}

int gnutls_x509_crt_get_key_purpose_oid(gnutls_x509_crt_t crt, unsigned indx, void *oid,
                                        size_t *oid_size, unsigned *critical)
{
    need();
    return lib.x509_crt_get_key_purpose_oid(crt, indx, oid, oid_size, critical);
}
