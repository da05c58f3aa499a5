/*
 * log.h - one level-checked logging macro for every process and library.
 *
 * FX_LOG(LEVEL, fmt, ...) formats nothing when LEVEL is below the threshold.
 * Lines go to stderr (never stdout) with a timestamp, the level and the
 * process's role tag. The threshold comes from fx_log_init() or $FLUXON_LOG
 * (error, warn, info, debug). FX_LOG_LIMITED is the same with a per-site rate
 * limit, for what peers can trigger.
 */
#ifndef FX_COMMON_LOG_H
#define FX_COMMON_LOG_H

enum fx_log_level { FX_LOG_ERROR = 0, FX_LOG_WARN = 1, FX_LOG_INFO = 2, FX_LOG_DEBUG = 3 };

extern int fx_log_threshold;

/* Sets the role tag printed on each line and reads $FLUXON_LOG. */
void fx_log_init(const char *role);
/* Parses "error" / "warn" / "info" / "debug"; returns the level or -1. */
int fx_log_level_parse(const char *s);
void fx_log_write(int level, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#define FX_LOG(LEVEL, ...)                                                          \
    do {                                                                            \
        if (FX_LOG_##LEVEL <= fx_log_threshold)                                     \
            fx_log_write(FX_LOG_##LEVEL, __FILE__, __LINE__, __VA_ARGS__);          \
    } while (0)

/* For lines that a peer can cause at will (a malformed frame, a refused
 * request): at most FX_LOG_LIMIT_BURST lines per call site in each window of
 * FX_LOG_LIMIT_WINDOW_MS (fixed windows, the first opened by the first line),
 * so that whoever can reach a port cannot grow the logs without bound. The
 * first line of the next window says how many were left out. */
#define FX_LOG_LIMIT_BURST 20u
#define FX_LOG_LIMIT_WINDOW_MS 10000u

typedef struct fx_log_limit {
    unsigned long long window_start_ms;
    unsigned in_window, suppressed;
} fx_log_limit;

/* True when a line of the site l may be written now; *suppressed is then the
 * number left out since the last one written (and is reset). Thread-safe. */
int fx_log_limit_pass(fx_log_limit *l, unsigned *suppressed);
/* The same at monotonic time now_ms (for tests). */
int fx_log_limit_pass_at(fx_log_limit *l, unsigned long long now_ms, unsigned *suppressed);

#define FX_LOG_LIMITED(LEVEL, ...)                                                  \
    do {                                                                            \
        static fx_log_limit fx_log_site_;                                           \
        unsigned fx_log_left_out_;                                                  \
        if (FX_LOG_##LEVEL <= fx_log_threshold &&                                   \
            fx_log_limit_pass(&fx_log_site_, &fx_log_left_out_)) {                  \
            if (fx_log_left_out_)                                                   \
                fx_log_write(FX_LOG_##LEVEL, __FILE__, __LINE__,                    \
                             "(%u more lines like the next were left out)",         \
                             fx_log_left_out_);                                     \
            fx_log_write(FX_LOG_##LEVEL, __FILE__, __LINE__, __VA_ARGS__);          \
        }                                                                           \
    } while (0)

#endif
