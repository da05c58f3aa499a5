/*
 * log.h - one level-checked logging macro for every process and library.
 *
 * FX_LOG(LEVEL, fmt, ...) formats nothing when LEVEL is below the threshold.
 * Lines go to stderr (never stdout) with a timestamp, the level and the
 * process's role tag. The threshold comes from fx_log_init() or $FLUXON_LOG
 * (error, warn, info, debug).
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

#endif
