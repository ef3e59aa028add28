/* SPDX-License-Identifier: GPL-2.0-only */
/* serve's library (serve/serve.h) writes nothing to the terminal: its
 * start, one audit line per request and its stop reach the caller's log
 * hook, word for word, and stdout and stderr stay empty. A real server on
 * 127.0.0.1 (any free port) answers one unauthenticated request. */
#include "unit.h"
#include "serve/serve.h"
#include "util/buf.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fk_buf log_text = FK_BUF_INIT;
static volatile sig_atomic_t stop;

static void collect(void *ctx, const char *line)
{
    (void)ctx;
    pthread_mutex_lock(&log_lock);
    fk_buf_adds(&log_text, line);
    fk_buf_addc(&log_text, '\n');
    pthread_mutex_unlock(&log_lock);
}

/* The port of "listening on http://127.0.0.1:PORT/", 0 until it is logged. */
static unsigned logged_port(void)
{
    unsigned port = 0;
    pthread_mutex_lock(&log_lock);
    const char *l = log_text.data ? strstr(fk_buf_cstr(&log_text), "listening on http://127.0.0.1:") : NULL;
    if (l)
        port = (unsigned)strtoul(l + strlen("listening on http://127.0.0.1:"), NULL, 10);
    pthread_mutex_unlock(&log_lock);
    return port;
}

struct run {
    struct fk_serve_opts o;
    int rc;
    char err[512];
};

static void *serve(void *p)
{
    struct run *r = p;
    r->rc = fk_serve_run(&r->o, r->err, sizeof r->err);
    return NULL;
}

/* GET path without credentials; the status line's first 12 bytes. */
static void get(unsigned port, const char *path, char *status, size_t n)
{
    status[0] = 0;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        if (fd >= 0)
            close(fd);
        return;
    }
    char req[256], resp[4096];
    int len = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", path);
    size_t got = 0;
    if (write(fd, req, (size_t)len) == len)
        for (ssize_t k; got < sizeof resp - 1 && (k = read(fd, resp + got, sizeof resp - 1 - got)) > 0;)
            got += (size_t)k;
    resp[got] = 0;
    close(fd);
    snprintf(status, n, "%.12s", resp);
}

int main(void)
{
    unit_name = "unit-serve";
    char dir[] = "/tmp/unit-serve.XXXXXX";
    if (!mkdtemp(dir)) {
        UNIT_CHECK("a temporary directory", false);
        return UNIT_END();
    }
    char *tokens = fk_asprintf("%s/tokens", dir), *outfile = fk_asprintf("%s/out", dir);
    int tfd = open(tokens, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    bool wrote = tfd >= 0 && write(tfd, "alice:0123456789abcdef0123456789abcdef\n", 39) == 39;
    if (tfd >= 0)
        close(tfd);
    UNIT_CHECK("a token file", wrote);

    fflush(stdout);
    fflush(stderr);
    int saved_out = dup(1), saved_err = dup(2);
    int ofd = open(outfile, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    dup2(ofd, 1);
    dup2(ofd, 2);

    struct run r;
    fk_serve_opts_init(&r.o);
    r.o.listen = "127.0.0.1:0";
    r.o.token_file = tokens;
    r.o.stop = &stop;
    r.o.log = collect;
    r.rc = -1;
    r.err[0] = 0;
    pthread_t t;
    bool started = pthread_create(&t, NULL, serve, &r) == 0;
    unsigned port = 0;
    for (int i = 0; started && i < 400 && !(port = logged_port()); i++)
        usleep(25000);
    char status[16] = "";
    if (port)
        get(port, "/profile?target=host&seconds=1", status, sizeof status);
    stop = 1;
    if (started)
        pthread_join(t, NULL);

    fflush(stdout);
    fflush(stderr);
    dup2(saved_out, 1);
    dup2(saved_err, 2);
    close(saved_out);
    close(saved_err);
    struct stat st;
    bool quiet = ofd >= 0 && fstat(ofd, &st) == 0 && st.st_size == 0;
    if (ofd >= 0)
        close(ofd);

    const char *log = log_text.data ? fk_buf_cstr(&log_text) : "";
    UNIT_CHECK("the server ran and stopped", started && r.rc == FK_EXIT_OK);
    if (r.err[0])
        printf("# %s\n", r.err);
    UNIT_CHECK("its start in the log: listening on, tokens, the cap",
               port && strstr(log, "listening on http://127.0.0.1:") == log &&
               strstr(log, "/ (tokens; captures up to 60 s, one at a time)\n"));
    UNIT_CHECK("a request without credentials is answered 401", !strcmp(status, "HTTP/1.1 401"));
    UNIT_CHECK("its audit line in the log",
               strstr(log, "\naudit ") && strstr(log, " client=127.0.0.1 who=- GET /profile status=401 "));
    size_t n = strlen(log);
    UNIT_CHECK("the stop is the log's last line", n >= 10 && !strcmp(log + n - 10, "\nstopping\n"));
    UNIT_CHECK("log lines carry no program name", !strstr(log, fk_progname));
    UNIT_CHECK("nothing written to stdout or stderr", quiet);
    if (!quiet || !port || getenv("UNIT_SERVE_LOG"))
        printf("# log:\n%s", log);
    unlink(tokens);
    unlink(outfile);
    rmdir(dir);
    free(tokens);
    free(outfile);
    fk_buf_free(&log_text);
    return UNIT_END();
}
