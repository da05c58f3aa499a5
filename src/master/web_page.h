/*
 * web_page.h - the files of the master's web page (src/master/web), compiled
 * into the binary: nothing is fetched from outside.
 */
#ifndef FX_MASTER_WEB_PAGE_H
#define FX_MASTER_WEB_PAGE_H

#include <stdbool.h>
#include <stddef.h>

typedef struct web_asset {
    const char *path;         /* "/", "/app.js", "/app.css" */
    const char *content_type;
    const unsigned char *data;
    size_t len;
} web_asset;

/* The file served at url into *out: true, or false for none. */
bool web_asset_find(const char *url, web_asset *out);

#endif
