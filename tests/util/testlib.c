/* testlib.c - failure reporting and the closing summary line of a test program. */
#include "testlib.h"

#include <stdarg.h>
#include <pthread.h>

int test_checks_passed;
int test_checks_failed;
static pthread_mutex_t report_lock = PTHREAD_MUTEX_INITIALIZER;

void test_fail(const char *file, int line, const char *fmt, ...)
{
    pthread_mutex_lock(&report_lock);
    if (test_checks_failed++ < 50) {
        va_list ap;
        va_start(ap, fmt);
        fprintf(stderr, "FAIL %s:%d: ", file, line);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
    }
    pthread_mutex_unlock(&report_lock);
}

int test_finish(void)
{
    printf("%d passed, %d failed\n", test_checks_passed, test_checks_failed);
    fflush(stdout);
    return test_checks_failed ? 1 : 0;
}
