/* SPDX-License-Identifier: GPL-2.0-only */
/* Minimal unit-test helpers: print the lines test/run counts. */
#ifndef FK_UNIT_H
#define FK_UNIT_H
#include <stdio.h>
#include <string.h>

static int unit_failed;
static const char *unit_name = "unit";

#define UNIT_CHECK(what, cond) do { \
    if (cond) printf("PASS: %s: %s\n", unit_name, what); \
    else { printf("FAIL: %s: %s (%s:%d: %s)\n", unit_name, what, __FILE__, __LINE__, #cond); unit_failed++; } \
} while (0)

#define UNIT_END() (fflush(stdout), unit_failed ? 1 : 0)
#endif
