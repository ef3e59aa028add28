/* SPDX-License-Identifier: GPL-2.0-only */
/* A misbehaving HTTP server for upload tests, on 127.0.0.1.
 *   stallsrv stall|503 PORTFILE [LO HI]
 * binds a free port in LO..HI (default 17000..17099), writes it to
 * PORTFILE, then: stall = accept connections and never answer; 503 =
 * answer every request "503 Slow Down" and print one line "request" per
 * request on stdout. Runs until killed. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 3 || (strcmp(argv[1], "stall") && strcmp(argv[1], "503"))) {
        fprintf(stderr, "usage: stallsrv stall|503 PORTFILE [LO HI]\n");
        return 2;
    }
    int lo = argc > 4 ? atoi(argv[3]) : 17000, hi = argc > 4 ? atoi(argv[4]) : 17099;
    int s = socket(AF_INET, SOCK_STREAM, 0);
    if (s < 0) {
        perror("socket");
        return 1;
    }
    int one = 1;
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    srand((unsigned)time(NULL) ^ (unsigned)getpid());
    int port = -1;
    for (int i = 0; i < 500 && port < 0; i++) {
        int p = lo + rand() % (hi - lo + 1);
        a.sin_port = htons((unsigned short)p);
        if (bind(s, (struct sockaddr *)&a, sizeof a) == 0)
            port = p;
    }
    if (port < 0 || listen(s, 16) != 0) {
        fprintf(stderr, "stallsrv: no free port in %d-%d\n", lo, hi);
        return 1;
    }
    FILE *f = fopen(argv[2], "w");
    if (!f || fprintf(f, "%d\n", port) < 0 || fclose(f) != 0) {
        perror(argv[2]);
        return 1;
    }
    int nheld = 0;
    for (;;) {
        int c = accept(s, NULL, NULL);
        if (c < 0) {
            if (errno == EINTR)
                continue;
            perror("accept");
            return 1;
        }
        if (!strcmp(argv[1], "stall")) {
            if (nheld < 64)
                nheld++;    /* keep it open (the fd stays), say nothing */
            else
                close(c);
            continue;
        }
        /* 503: read the request head, answer, close. */
        char buf[8192];
        size_t got = 0;
        while (got < sizeof buf - 1) {
            ssize_t r = read(c, buf + got, sizeof buf - 1 - got);
            if (r <= 0)
                break;
            got += (size_t)r;
            buf[got] = 0;
            if (strstr(buf, "\r\n\r\n"))
                break;
        }
        static const char ans[] = "HTTP/1.1 503 Slow Down\r\nContent-Type: application/xml\r\n"
                                  "Connection: close\r\nContent-Length: 64\r\n\r\n"
                                  "<Error><Code>SlowDown</Code><Message>busy</Message></Error>\n\n\n\n\n\n";
        if (write(c, ans, sizeof ans - 1) < 0)
            perror("write");
        printf("request\n");
        fflush(stdout);
        shutdown(c, SHUT_WR);
        close(c);
    }
}
