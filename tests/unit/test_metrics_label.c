/*
 * test_metrics_label.c - label values of /metrics: backslash, double quote
 * and line feed escaped as the Prometheus text format requires, valid UTF-8
 * kept, invalid bytes replaced, and a buffer too small refused without
 * writing past it. A node_name that tried to close its label and start a
 * sample of its own stays inside the quotes.
 */
#include "master/metrics_label.h"
#include "testlib.h"

#include <errno.h>
#include <string.h>

static void expect(const char *in, const char *want)
{
    char out[256];
    int n = metrics_label_escape(in, out, sizeof out);
    CHECK(n == (int)strlen(want) && strcmp(out, want) == 0, "escape('%s') = '%s' (%d), want '%s'",
          in, out, n, want);
}

int main(void)
{
    expect("owner0", "owner0");
    expect("", "");
    expect("a\\b", "a\\\\b");
    expect("say \"hi\"", "say \\\"hi\\\"");
    expect("two\nlines", "two\\nlines");
    expect("x\"} 1\nfluxon_routes 999999\n#", "x\\\"} 1\\nfluxon_routes 999999\\n#");
    expect("tab\tcr\r", "tab\tcr\r"); /* allowed as they are */
    expect("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
    expect("bad\xff", "bad?");
    expect("cut\xc3", "cut?");
    expect("overlong\xc0\xaf", "overlong??");
    expect("surrogate\xed\xa0\x80", "surrogate???");
    expect("too big\xf4\x90\x80\x80", "too big????");

    /* The worst case, 2 * strlen + 1, always fits; one byte less does not. */
    const char *q = "\"\\\n\"";
    char out[9];
    CHECK(metrics_label_escape(q, out, sizeof out) == 8, "2n+1 fits");
    memset(out, 'z', sizeof out);
    CHECK(metrics_label_escape(q, out, 8) == -ENOSPC && out[0] == 0 && out[8] == 'z',
          "2n is refused, out is \"\", nothing written past the cap");
    CHECK(metrics_label_escape("abc", out, 3) == -ENOSPC, "no room for the NUL");
    CHECK(metrics_label_escape("abc", out, 4) == 3 && strcmp(out, "abc") == 0, "exact fit");
    return test_finish();
}
