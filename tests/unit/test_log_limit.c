/*
 * test_log_limit.c - FX_LOG_LIMITED, the per-site limit on log lines that
 * peers can cause: FX_LOG_LIMIT_BURST lines pass in a window, the rest are
 * counted, the first line of the next window says how many were left out,
 * and through the macro a flood of 500 lines writes a bounded number.
 */
#include "common/log.h"
#include "testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void test_window(void)
{
    fx_log_limit l = {0};
    unsigned sup = 99, passed = 0;
    unsigned long long t = 5000;
    for (unsigned i = 0; i < FX_LOG_LIMIT_BURST + 30; i++)
        if (fx_log_limit_pass_at(&l, t + i, &sup)) {
            passed++;
            CHECK(sup == 0, "nothing left out before the limit (%u)", sup);
        }
    CHECK(passed == FX_LOG_LIMIT_BURST, "%u of %u lines passed in one window", passed,
          FX_LOG_LIMIT_BURST + 30);
    CHECK(!fx_log_limit_pass_at(&l, t + FX_LOG_LIMIT_WINDOW_MS - 1, &sup),
          "still limited at the window's last millisecond");
    CHECK(fx_log_limit_pass_at(&l, t + FX_LOG_LIMIT_WINDOW_MS, &sup) && sup == 31,
          "the next window passes and reports the 31 left out (%u)", sup);
    CHECK(fx_log_limit_pass_at(&l, t + FX_LOG_LIMIT_WINDOW_MS + 1, &sup) && sup == 0,
          "and the count starts again");
}

static void test_macro_flood(void)
{
    char path[] = "/tmp/fx-loglimit-XXXXXX";
    int fd = mkstemp(path);
    REQUIRE(fd >= 0, "mkstemp");
    fflush(stderr);
    int saved = dup(2);
    REQUIRE(saved >= 0 && dup2(fd, 2) == 2, "redirect stderr");
    for (int i = 0; i < 500; i++)
        FX_LOG_LIMITED(WARN, "flood line %d", i);
    dup2(saved, 2);
    close(saved);
    FILE *f = fdopen(fd, "r");
    REQUIRE(f, "reopen");
    rewind(f);
    char line[1024];
    unsigned lines = 0, flood = 0;
    while (fgets(line, sizeof line, f)) {
        lines++;
        flood += strstr(line, "flood line") != NULL;
    }
    fclose(f);
    unlink(path);
    /* The flood takes well under a window; allow one window's turn over. */
    CHECK(flood >= FX_LOG_LIMIT_BURST && flood <= 2 * FX_LOG_LIMIT_BURST,
          "500 lines from one site wrote %u (at most %u per window)", flood, FX_LOG_LIMIT_BURST);
    CHECK(lines <= flood + 1, "no other lines (%u)", lines);
}

int main(void)
{
    test_window();
    test_macro_flood();
    return test_finish();
}
