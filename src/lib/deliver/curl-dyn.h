/* SPDX-License-Identifier: GPL-2.0-only */
/* libcurl loaded on first use (see curl-dyn.c). */
#ifndef FK_CURL_DYN_H
#define FK_CURL_DYN_H

#include <curl/curl.h>
#include <stdbool.h>

/* Load libcurl.so.4; false + one clear error line if it is missing. */
bool fk_curl_load(void);

#endif
