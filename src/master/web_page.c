/*
 * web_page.c - the master's web page, served from the binary: index.html at
 * "/" (and "/index.html"), its script and its style sheet. The bytes are
 * generated at build time from src/master/web by cmake/embed.cmake.
 */
#include "master/web_page.h"

#include <string.h>

extern const unsigned char web_index_html[], web_app_js[], web_app_css[];
extern const size_t web_index_html_len, web_app_js_len, web_app_css_len;

bool web_asset_find(const char *url, web_asset *out)
{
    static const char *const html = "text/html; charset=utf-8";
    const struct {
        const char *path;
        const char *type;
        const unsigned char *data;
        const size_t *len; /* link-time constants, not compile-time ones */
    } table[] = {
        {"/", html, web_index_html, &web_index_html_len},
        {"/index.html", html, web_index_html, &web_index_html_len},
        {"/app.js", "text/javascript; charset=utf-8", web_app_js, &web_app_js_len},
        {"/app.css", "text/css; charset=utf-8", web_app_css, &web_app_css_len},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        if (strcmp(url, table[i].path) == 0) {
            *out = (web_asset){table[i].path, table[i].type, table[i].data, *table[i].len};
            return true;
        }
    }
    return false;
}
