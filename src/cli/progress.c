/*
 * progress.c - `fluxon put`'s progress bar (see progress.h).
 */
#include "cli/progress.h"

#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/stat_format.h"

#define BAR_WIDTH 30
#define REDRAW_MS 100

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void draw(progress *p)
{
    char done[32], total[32], rate[32];
    int64_t ms = now_ms() - p->start_ms;
    stat_size(done, sizeof done, p->done);
    stat_size(rate, sizeof rate, ms > 0 ? (uint64_t)((double)p->done * 1000.0 / (double)ms) : 0);
    if (p->total) {
        double frac = (double)p->done / (double)p->total;
        if (frac > 1)
            frac = 1;
        char bar[BAR_WIDTH + 1];
        int fill = (int)(frac * BAR_WIDTH);
        memset(bar, '#', (size_t)fill);
        memset(bar + fill, '.', (size_t)(BAR_WIDTH - fill));
        bar[BAR_WIDTH] = 0;
        fprintf(p->out, "\r%s [%s] %3d%% %s / %s  %s/s\033[K", p->label, bar, (int)(frac * 100),
                done, stat_size(total, sizeof total, p->total), rate);
    } else {
        fprintf(p->out, "\r%s %s  %s/s\033[K", p->label, done, rate);
    }
    fflush(p->out);
    p->drawn_ms = now_ms();
}

void progress_start(progress *p, const char *label, uint64_t total)
{
    memset(p, 0, sizeof *p);
    p->label = label;
    p->total = total;
    p->start_ms = now_ms();
    if (isatty(STDERR_FILENO) && (total == 0 || total >= PROGRESS_MIN_BYTES)) {
        p->out = stderr;
        draw(p);
    }
}

void progress_update(progress *p, uint64_t done)
{
    p->done = done;
    if (p->out && now_ms() - p->drawn_ms >= REDRAW_MS)
        draw(p);
}

void progress_finish(progress *p, bool ok)
{
    if (!p->out)
        return;
    if (ok && p->total)
        p->done = p->total;
    draw(p);
    fputc('\n', p->out);
    fflush(p->out);
}
