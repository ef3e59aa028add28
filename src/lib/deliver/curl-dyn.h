/* SPDX-License-Identifier: GPL-2.0-only */
/* libcurl loaded on first use (see curl-dyn.c). */
#ifndef FK_CURL_DYN_H
#define FK_CURL_DYN_H

#include <curl/curl.h>
#include <stdbool.h>
#include <stddef.h>

/* Load libcurl.so.4; false with one line in err naming the package to
 * install when it is missing. */
bool fk_curl_load(char *err, size_t errlen);

#endif
