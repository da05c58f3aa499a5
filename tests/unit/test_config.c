/*
 * test_config.c - owner and master YAML files and flags: a full file parsed
 * into the right values, every kind of bad value, unknown key, wrong type and
 * syntax error reported with the key (or file and line) in the message, flag
 * overrides, and failed loads or flags that leave the config unchanged.
 * Temporary YAML files go under /tmp and are removed at the end.
 */
#include "master/master_config.h"
#include "owner/owner_config.h"
#include "common/log.h"
#include "testlib.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_TMP 256
static char *tmp_files[MAX_TMP];
static int n_tmp;

/* Writes text to a new file under /tmp; the path lives until cleanup(). */
static const char *write_tmp(const char *text)
{
    REQUIRE(n_tmp < MAX_TMP, "too many temp files");
    char *path = strdup("/tmp/fx_test_config_XXXXXX");
    REQUIRE(path != NULL, "strdup");
    int fd = mkstemp(path);
    REQUIRE(fd >= 0, "mkstemp");
    size_t len = strlen(text);
    REQUIRE(write(fd, text, len) == (ssize_t)len, "write temp file");
    close(fd);
    tmp_files[n_tmp++] = path;
    return path;
}

static void cleanup(void)
{
    for (int i = 0; i < n_tmp; i++) {
        unlink(tmp_files[i]);
        free(tmp_files[i]);
    }
    n_tmp = 0;
}

static bool contains(const char *hay, const char *needle)
{
    return strstr(hay, needle) != NULL;
}

/* The required owner keys; error cases append or replace one line. */
#define OWNER_MASTER "master: 127.0.0.1:7700\n"
#define OWNER_SPEC "fluxonkv_spec:\n  memory_size: 1GB\n  client_socket: /tmp/fx.sock\n"
#define OWNER_BASE OWNER_MASTER OWNER_SPEC

/* Loads then validates yaml as an owner file; returns the result, err holds
 * the message. */
static int owner_try(const char *yaml, char *err, size_t errlen)
{
    owner_config c;
    owner_config_init(&c);
    err[0] = '\0';
    int rc = owner_config_load(&c, write_tmp(yaml), err, errlen);
    if (rc == 0)
        rc = owner_config_validate(&c, err, errlen);
    owner_config_free(&c);
    return rc;
}

static int master_try(const char *yaml, char *err, size_t errlen)
{
    master_config c;
    master_config_init(&c);
    err[0] = '\0';
    int rc = master_config_load(&c, write_tmp(yaml), err, errlen);
    if (rc == 0)
        rc = master_config_validate(&c, err, errlen);
    master_config_free(&c);
    return rc;
}

#define EXPECT_OWNER_ERR(yaml, needle)                                                  \
    do {                                                                                \
        char e_[512];                                                                   \
        int rc_ = owner_try(yaml, e_, sizeof e_);                                       \
        CHECK(rc_ == -1, "owner file accepted, expected an error naming '%s':\n%s",     \
              needle, yaml);                                                            \
        CHECK(contains(e_, needle), "error '%s' does not name '%s'", e_, needle);       \
    } while (0)

#define EXPECT_OWNER_OK(yaml)                                                           \
    do {                                                                                \
        char e_[512];                                                                   \
        int rc_ = owner_try(yaml, e_, sizeof e_);                                       \
        CHECK(rc_ == 0, "owner file rejected: %s\n%s", e_, yaml);                       \
    } while (0)

#define EXPECT_MASTER_ERR(yaml, needle)                                                 \
    do {                                                                                \
        char e_[512];                                                                   \
        int rc_ = master_try(yaml, e_, sizeof e_);                                      \
        CHECK(rc_ == -1, "master file accepted, expected an error naming '%s':\n%s",    \
              needle, yaml);                                                            \
        CHECK(contains(e_, needle), "error '%s' does not name '%s'", e_, needle);       \
    } while (0)

static void test_owner_defaults(void)
{
    owner_config c;
    owner_config_init(&c);
    CHECK(c.cluster_name && strcmp(c.cluster_name, "fluxon") == 0, "default cluster_name");
    CHECK(c.master == NULL && c.node_name == NULL && c.client_socket == NULL, "no defaults");
    CHECK(c.log_level == -1, "log_level unset");
    CHECK(c.memory_size == 0, "memory_size unset");
    CHECK(c.prefault == true, "prefault defaults to true");
    CHECK(c.large_file_paths == NULL && c.n_large_file_paths == 0, "no paths");
    CHECK(c.large_limit_size == NULL && c.n_large_limit_size == 0, "no SSD tier");
    char err[256];
    CHECK(owner_config_validate(&c, err, sizeof err) == -1 && contains(err, "master"),
          "a fresh config misses master: %s", err);
    owner_config_free(&c);
    owner_config_free(&c); /* idempotent */
    owner_config_free(NULL);
}

static void test_owner_full(void)
{
    const char *yaml = "# a full owner file\n"
                       "cluster_name: demo\n"
                       "master: 127.0.0.1:7700\n"
                       "node_name: owner0\n"
                       "log_level: debug\n"
                       "fluxonkv_spec:\n"
                       "  memory_size: 2GB                       # the segment\n"
                       "  client_socket: ./var/owner0.sock\n"
                       "  prefault: no\n"
                       "  large_file_paths: [/data/fx0, /data/fx1]\n"
                       "  large_limit_size: [\"4GB\", \"8GB\"]\n";
    owner_config c;
    owner_config_init(&c);
    char err[512] = "";
    int rc = owner_config_load(&c, write_tmp(yaml), err, sizeof err);
    REQUIRE(rc == 0, "full owner file: %s", err);
    CHECK(owner_config_validate(&c, err, sizeof err) == 0, "validate: %s", err);
    CHECK(strcmp(c.cluster_name, "demo") == 0, "cluster_name '%s'", c.cluster_name);
    CHECK(strcmp(c.master, "127.0.0.1:7700") == 0, "master '%s'", c.master);
    CHECK(c.node_name && strcmp(c.node_name, "owner0") == 0, "node_name");
    CHECK(c.log_level == FX_LOG_DEBUG, "log_level %d", c.log_level);
    CHECK(c.memory_size == 2ull << 30, "memory_size %" PRIu64, c.memory_size);
    CHECK(strcmp(c.client_socket, "./var/owner0.sock") == 0, "client_socket");
    CHECK(c.prefault == false, "prefault");
    REQUIRE(c.n_large_file_paths == 2, "n paths %zu", c.n_large_file_paths);
    CHECK(strcmp(c.large_file_paths[0], "/data/fx0") == 0, "path 0");
    CHECK(strcmp(c.large_file_paths[1], "/data/fx1") == 0, "path 1");
    REQUIRE(c.large_limit_size != NULL && c.n_large_limit_size == 2, "limits");
    CHECK(c.large_limit_size[0] == 4ull << 30, "limit 0 %" PRIu64, c.large_limit_size[0]);
    CHECK(c.large_limit_size[1] == 8ull << 30, "limit 1 %" PRIu64, c.large_limit_size[1]);

    /* A second file over the first replaces what it names and keeps the rest;
     * block lists and integer sizes work the same as flow lists and strings. */
    const char *more = "fluxonkv_spec:\n"
                       "  memory_size: 2147483649\n"
                       "  large_file_paths:\n"
                       "    - /ssd/a\n"
                       "  large_limit_size:\n"
                       "    - 512.9B\n";
    rc = owner_config_load(&c, write_tmp(more), err, sizeof err);
    REQUIRE(rc == 0, "second file: %s", err);
    CHECK(c.memory_size == 2147483649ull, "integer memory_size %" PRIu64, c.memory_size);
    CHECK(strcmp(c.master, "127.0.0.1:7700") == 0, "master kept");
    CHECK(c.n_large_file_paths == 1 && strcmp(c.large_file_paths[0], "/ssd/a") == 0, "paths");
    CHECK(c.n_large_limit_size == 1 && c.large_limit_size[0] == 512, "fraction truncates");
    CHECK(owner_config_validate(&c, err, sizeof err) == 0, "validate: %s", err);

    /* A failed load leaves everything as it was. */
    const char *bad = "cluster_name: other\n"
                      "fluxonkv_spec:\n"
                      "  memory_size: 4GB\n"
                      "  large_limit_size: [1KB, 1]\n";
    rc = owner_config_load(&c, write_tmp(bad), err, sizeof err);
    CHECK(rc == -1 && contains(err, "fluxonkv_spec.large_limit_size[1]"), "bad limit: %s", err);
    CHECK(strcmp(c.cluster_name, "demo") == 0, "cluster_name unchanged after failure");
    CHECK(c.memory_size == 2147483649ull, "memory_size unchanged after failure");
    CHECK(c.n_large_limit_size == 1 && c.large_limit_size[0] == 512, "limits unchanged");
    owner_config_free(&c);
}

static void test_owner_variants(void)
{
    char err[512];
    owner_config c;

    /* large_limit_size absent, null, ~ or empty: no SSD tier. */
    static const char *no_tier[] = {
        OWNER_BASE,
        OWNER_BASE "  large_limit_size: null\n",
        OWNER_BASE "  large_limit_size: ~\n",
        OWNER_BASE "  large_limit_size:\n",
        OWNER_BASE "  large_file_paths: [/a]\n  large_limit_size: null\n",
    };
    for (size_t i = 0; i < sizeof no_tier / sizeof *no_tier; i++) {
        owner_config_init(&c);
        int rc = owner_config_load(&c, write_tmp(no_tier[i]), err, sizeof err);
        CHECK(rc == 0, "no-tier file %zu: %s", i, err);
        CHECK(c.large_limit_size == NULL && c.n_large_limit_size == 0, "file %zu: no tier", i);
        CHECK(owner_config_validate(&c, err, sizeof err) == 0, "validate %zu: %s", i, err);
        owner_config_free(&c);
    }

    /* Booleans, quoted sizes, quoted strings, an empty section. */
    static const struct {
        const char *v;
        bool want;
    } bools[] = {{"true", true}, {"false", false}, {"yes", true}, {"no", false},
                 {"True", true}, {"NO", false},    {"\"yes\"", true}};
    for (size_t i = 0; i < sizeof bools / sizeof *bools; i++) {
        char yaml[256];
        snprintf(yaml, sizeof yaml, OWNER_BASE "  prefault: %s\n", bools[i].v);
        owner_config_init(&c);
        c.prefault = !bools[i].want;
        CHECK(owner_config_load(&c, write_tmp(yaml), err, sizeof err) == 0, "bool %s: %s",
              bools[i].v, err);
        CHECK(c.prefault == bools[i].want, "prefault: %s", bools[i].v);
        owner_config_free(&c);
    }

    owner_config_init(&c);
    CHECK(owner_config_load(&c,
                            write_tmp("master: '[::1]:7700'\nnode_name: \"n 1\"\n"
                                      "fluxonkv_spec:\n  memory_size: \"1.5 GiB\"\n"
                                      "  client_socket: 's'\n  large_file_paths: []\n"
                                      "  large_limit_size: []\n"),
                            err, sizeof err) == 0,
          "quoted values: %s", err);
    CHECK(c.memory_size == 1610612736ull, "quoted size %" PRIu64, c.memory_size);
    CHECK(strcmp(c.master, "[::1]:7700") == 0 && strcmp(c.node_name, "n 1") == 0, "strings");
    CHECK(c.large_limit_size != NULL && c.n_large_limit_size == 0, "[] is present, empty");
    CHECK(owner_config_validate(&c, err, sizeof err) == 0, "empty lists match: %s", err);
    owner_config_free(&c);

    EXPECT_OWNER_OK(OWNER_BASE "node_name: null\nlog_level: ~\n");
    EXPECT_OWNER_OK(OWNER_BASE "# only a comment\n");
    EXPECT_OWNER_OK(OWNER_BASE "  large_file_paths: [/a, /b]\n"
                               "  large_limit_size: [512, 1TB]\n");
    EXPECT_OWNER_OK("fluxonkv_spec:\n  memory_size: &m 1GB\n  client_socket: /s\n"
                    "  large_file_paths: [/a]\n  large_limit_size: [*m]\n" OWNER_MASTER);
}

static void test_owner_errors(void)
{
    char err[512];

    /* The exact form of a message: the dotted key first, then the file line. */
    int rc = owner_try(OWNER_MASTER "fluxonkv_spec:\n  client_socket: /s\n  memory_size: abc\n",
                       err, sizeof err);
    CHECK(rc == -1, "bad memory_size accepted");
    CHECK(strncmp(err, "fluxonkv_spec.memory_size: invalid size 'abc' (/tmp/", 52) == 0,
          "message: %s", err);
    CHECK(contains(err, ":4)"), "message names line 4: %s", err);

    /* Bad values. */
    EXPECT_OWNER_ERR(OWNER_BASE "node_name: "
                                "n123456789012345678901234567890123456789012345678901234567890123\n",
                     "node_name: longer than 63 bytes");
    EXPECT_OWNER_ERR(OWNER_MASTER "fluxonkv_spec:\n  client_socket: s\n  memory_size: 0\n",
                     "fluxonkv_spec.memory_size: must be > 0");
    EXPECT_OWNER_ERR(OWNER_MASTER "fluxonkv_spec:\n  client_socket: s\n  memory_size: -1\n",
                     "fluxonkv_spec.memory_size: invalid size '-1'");
    EXPECT_OWNER_ERR(OWNER_MASTER "fluxonkv_spec:\n  client_socket: s\n  memory_size: 1.5\n",
                     "fluxonkv_spec.memory_size");
    EXPECT_OWNER_ERR(OWNER_MASTER "fluxonkv_spec:\n  client_socket: s\n  memory_size: 2PB\n",
                     "fluxonkv_spec.memory_size");
    EXPECT_OWNER_ERR(OWNER_MASTER "fluxonkv_spec:\n  client_socket: s\n"
                                  "  memory_size: 99999999999999999999\n",
                     "fluxonkv_spec.memory_size: size '99999999999999999999' is too large");
    EXPECT_OWNER_ERR(OWNER_MASTER "fluxonkv_spec:\n  client_socket: s\n  memory_size: null\n",
                     "fluxonkv_spec.memory_size: a value is required");
    EXPECT_OWNER_ERR(OWNER_MASTER "fluxonkv_spec:\n  memory_size: 1GB\n  client_socket: ''\n",
                     "fluxonkv_spec.client_socket: must not be empty");
    EXPECT_OWNER_ERR(OWNER_MASTER "fluxonkv_spec:\n  memory_size: 1GB\n  client_socket: /"
                                  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
                                  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
                                  ".sock\n",
                     "fluxonkv_spec.client_socket: path is longer");
    EXPECT_OWNER_ERR(OWNER_BASE "  prefault: maybe\n", "fluxonkv_spec.prefault: invalid boolean");
    EXPECT_OWNER_ERR(OWNER_BASE "  prefault: 1\n", "fluxonkv_spec.prefault");
    EXPECT_OWNER_ERR(OWNER_BASE "log_level: loud\n", "log_level: invalid log level 'loud'");
    EXPECT_OWNER_ERR(OWNER_BASE "node_name: ''\n", "node_name: must not be empty");
    EXPECT_OWNER_ERR(OWNER_BASE "cluster_name: null\n", "cluster_name: a value is required");
    EXPECT_OWNER_ERR(OWNER_BASE "cluster_name: \"\"\n", "cluster_name: must not be empty");
    EXPECT_OWNER_ERR("master: \"127.0.0.1:77\\0\"\n" OWNER_SPEC, "master: value contains a NUL");

    /* host:port. */
    static const char *bad_hp[] = {"localhost",   "'localhost:'",      ":7700",
                                   "h:99999",     "h:65536",         "h:-1",
                                   "h:+1",        "h:7x",            "::1:7700",
                                   "'h :1'",      "'[::1]'",         "h:123456",
                                   "'a b:1'",     "'[::1:7700'",     "'127.0.0.1: 7700'"};
    for (size_t i = 0; i < sizeof bad_hp / sizeof *bad_hp; i++) {
        char yaml[256];
        snprintf(yaml, sizeof yaml, "master: %s\n" OWNER_SPEC, bad_hp[i]);
        EXPECT_OWNER_ERR(yaml, "master");
    }
    EXPECT_OWNER_ERR("master: nohost\n" OWNER_SPEC, "master: invalid host:port 'nohost'");

    /* SSD tier rules. */
    EXPECT_OWNER_ERR(OWNER_BASE "  large_file_paths: [/a]\n  large_limit_size: [511]\n",
                     "fluxonkv_spec.large_limit_size[0]: 511 bytes is below the minimum of 512");
    EXPECT_OWNER_ERR(OWNER_BASE "  large_file_paths: [/a, /b]\n"
                                "  large_limit_size: [4GB, 0.4KB]\n",
                     "fluxonkv_spec.large_limit_size[1]");
    EXPECT_OWNER_ERR(OWNER_BASE "  large_file_paths: [/a, /b]\n"
                                "  large_limit_size: [\"4GB\", \"x\"]\n",
                     "fluxonkv_spec.large_limit_size[1]: invalid size 'x'");
    EXPECT_OWNER_ERR(OWNER_BASE "  large_file_paths: [/a, /b]\n  large_limit_size: [4GB]\n",
                     "fluxonkv_spec.large_limit_size: has 1 entries but "
                     "fluxonkv_spec.large_file_paths has 2");
    EXPECT_OWNER_ERR(OWNER_BASE "  large_limit_size: [4GB]\n", "fluxonkv_spec.large_limit_size");
    EXPECT_OWNER_ERR(OWNER_BASE "  large_file_paths: [/a]\n  large_limit_size: []\n",
                     "fluxonkv_spec.large_limit_size: has 0 entries");
    EXPECT_OWNER_ERR(OWNER_BASE "  large_file_paths: [/a, /a]\n  large_limit_size: [1GB, 1GB]\n",
                     "fluxonkv_spec.large_file_paths[1]: duplicate path");
    EXPECT_OWNER_ERR(OWNER_BASE "  large_file_paths: ['', /b]\n",
                     "fluxonkv_spec.large_file_paths[0]: must not be empty");
    EXPECT_OWNER_ERR(OWNER_BASE "  large_file_paths: [/a, null]\n",
                     "fluxonkv_spec.large_file_paths[1]: a value is required");
    EXPECT_OWNER_ERR(OWNER_BASE "  large_file_paths: [/a]\n  large_limit_size: [~]\n",
                     "fluxonkv_spec.large_limit_size[0]");

    /* Wrong types. */
    EXPECT_OWNER_ERR(OWNER_MASTER "fluxonkv_spec:\n  client_socket: s\n  memory_size: [1, 2]\n",
                     "fluxonkv_spec.memory_size: expected a scalar, got a list");
    EXPECT_OWNER_ERR(OWNER_MASTER "fluxonkv_spec:\n  client_socket: s\n  memory_size: {a: 1}\n",
                     "fluxonkv_spec.memory_size: expected a scalar, got a mapping");
    EXPECT_OWNER_ERR("master: [127.0.0.1:7700]\n" OWNER_SPEC, "master: expected a scalar");
    EXPECT_OWNER_ERR(OWNER_BASE "cluster_name: {a: b}\n", "cluster_name: expected a scalar");
    EXPECT_OWNER_ERR(OWNER_BASE "  prefault: [true]\n", "fluxonkv_spec.prefault: expected a");
    EXPECT_OWNER_ERR(OWNER_BASE "  large_file_paths: /data/fx0\n",
                     "fluxonkv_spec.large_file_paths: expected a list, got a scalar");
    EXPECT_OWNER_ERR(OWNER_BASE "  large_file_paths: {a: b}\n",
                     "fluxonkv_spec.large_file_paths: expected a list, got a mapping");
    EXPECT_OWNER_ERR(OWNER_BASE "  large_file_paths: [/a, [/b]]\n",
                     "fluxonkv_spec.large_file_paths[1]: expected a scalar, got a list");
    EXPECT_OWNER_ERR(OWNER_BASE "  large_file_paths: [/a]\n  large_limit_size: 4GB\n",
                     "fluxonkv_spec.large_limit_size: expected a list, got a scalar");
    EXPECT_OWNER_ERR(OWNER_BASE "  large_file_paths: [/a]\n  large_limit_size: [{a: 1}]\n",
                     "fluxonkv_spec.large_limit_size[0]: expected a scalar, got a mapping");
    EXPECT_OWNER_ERR(OWNER_MASTER "fluxonkv_spec: 5\n", "fluxonkv_spec: expected a mapping");
    EXPECT_OWNER_ERR(OWNER_MASTER "fluxonkv_spec: [a]\n", "fluxonkv_spec: expected a mapping");
    EXPECT_OWNER_ERR(OWNER_BASE "? [a]\n: b\n", "top level: mapping keys must be scalars");
    EXPECT_OWNER_ERR("- a\n- b\n", "the top level must be a mapping");

    /* Unknown and duplicate keys. */
    EXPECT_OWNER_ERR(OWNER_BASE "bogus: 1\n", "bogus: unknown key");
    EXPECT_OWNER_ERR(OWNER_BASE "  bogus: 1\n", "fluxonkv_spec.bogus: unknown key");
    EXPECT_OWNER_ERR(OWNER_BASE "memory_size: 1GB\n", "memory_size: unknown key");
    EXPECT_OWNER_ERR(OWNER_BASE "listen: 127.0.0.1:1\n", "listen: unknown key");
    EXPECT_OWNER_ERR(OWNER_BASE "\"master\\0x\": 1\n", "top level: a key contains a NUL byte");
    EXPECT_OWNER_ERR(OWNER_BASE "master: 127.0.0.1:7701\n", "master: duplicate key");
    EXPECT_OWNER_ERR(OWNER_BASE "  memory_size: 2GB\n", "fluxonkv_spec.memory_size: duplicate");

    /* Missing required keys. */
    EXPECT_OWNER_ERR(OWNER_SPEC, "master: missing");
    EXPECT_OWNER_ERR(OWNER_MASTER "fluxonkv_spec:\n  client_socket: s\n",
                     "fluxonkv_spec.memory_size: missing");
    EXPECT_OWNER_ERR(OWNER_MASTER "fluxonkv_spec:\n  memory_size: 1GB\n",
                     "fluxonkv_spec.client_socket: missing");
    EXPECT_OWNER_ERR(OWNER_MASTER "fluxonkv_spec:\n", "fluxonkv_spec.memory_size: missing");
    EXPECT_OWNER_ERR("", "master: missing");

    /* YAML syntax errors name the file and the line. */
    const char *path = write_tmp("cluster_name: demo\n" OWNER_MASTER "fluxonkv_spec:\n"
                                 "  memory_size: 1GB\n   client_socket: x\n");
    owner_config c;
    owner_config_init(&c);
    CHECK(owner_config_load(&c, path, err, sizeof err) == -1, "syntax error accepted");
    char want[128];
    snprintf(want, sizeof want, "%s:5:", path);
    CHECK(strncmp(err, want, strlen(want)) == 0 && contains(err, "YAML syntax error"),
          "syntax error '%s' does not start with '%s'", err, want);

    path = write_tmp(OWNER_MASTER "fluxonkv_spec: [unclosed\n  x: 1\n");
    CHECK(owner_config_load(&c, path, err, sizeof err) == -1, "unclosed list accepted");
    CHECK(contains(err, path) && contains(err, "YAML syntax error"), "unclosed list: %s", err);

    path = write_tmp("master: \"abc\n");
    CHECK(owner_config_load(&c, path, err, sizeof err) == -1 && contains(err, path),
          "unterminated quote: %s", err);
    path = write_tmp("master: 1\n\tbad: 2\n");
    CHECK(owner_config_load(&c, path, err, sizeof err) == -1 && contains(err, path),
          "tab indent: %s", err);
    path = write_tmp("master: *nope\n");
    CHECK(owner_config_load(&c, path, err, sizeof err) == -1 && contains(err, path),
          "undefined alias: %s", err);
    path = write_tmp("master: \"\xff\"\n");
    CHECK(owner_config_load(&c, path, err, sizeof err) == -1 && contains(err, path),
          "bad UTF-8: %s", err);
    path = write_tmp(OWNER_BASE "---\nmaster: 127.0.0.1:1\n");
    snprintf(want, sizeof want, "%s:5: more than one YAML document", path);
    CHECK(owner_config_load(&c, path, err, sizeof err) == -1 && contains(err, want),
          "two documents: %s", err);
    CHECK(owner_config_load(&c, "/nonexistent/fx.yaml", err, sizeof err) == -1 &&
              contains(err, "/nonexistent/fx.yaml: cannot open"),
          "missing file: %s", err);
    CHECK(c.master == NULL && strcmp(c.cluster_name, "fluxon") == 0, "unchanged after errors");

    /* A tiny error buffer truncates but never overflows. */
    char tiny[8];
    CHECK(owner_config_load(&c, "/nonexistent/fx.yaml", tiny, sizeof tiny) == -1 &&
              strlen(tiny) == sizeof tiny - 1,
          "truncated message '%s'", tiny);
    CHECK(owner_config_load(&c, "/nonexistent/fx.yaml", NULL, 0) == -1, "NULL err buffer");
    owner_config_free(&c);
}

static void test_owner_flags(void)
{
    char err[512];
    owner_config c;
    owner_config_init(&c);

    CHECK(owner_config_load(&c, write_tmp(OWNER_BASE "  large_file_paths: [/x]\n"
                                                     "  large_limit_size: [1GB]\n"),
                            err, sizeof err) == 0,
          "load: %s", err);

    /* Flags override the file, by dotted key, last component or dashes. */
    CHECK(owner_config_set(&c, "fluxonkv_spec.memory_size", "4GB", err, sizeof err) == 0,
          "dotted: %s", err);
    CHECK(c.memory_size == 4ull << 30, "memory_size %" PRIu64, c.memory_size);
    CHECK(owner_config_set(&c, "memory_size", "1.5GB", err, sizeof err) == 0, "short: %s", err);
    CHECK(c.memory_size == 1610612736ull, "memory_size %" PRIu64, c.memory_size);
    CHECK(owner_config_set(&c, "memory-size", "4096", err, sizeof err) == 0, "dashes: %s", err);
    CHECK(c.memory_size == 4096, "memory_size %" PRIu64, c.memory_size);
    CHECK(owner_config_set(&c, "master", "10.0.0.1:9000", err, sizeof err) == 0, "%s", err);
    CHECK(strcmp(c.master, "10.0.0.1:9000") == 0, "master");
    CHECK(owner_config_set(&c, "cluster_name", "prod", err, sizeof err) == 0, "%s", err);
    CHECK(strcmp(c.cluster_name, "prod") == 0, "cluster_name");
    CHECK(owner_config_set(&c, "node_name", "n7", err, sizeof err) == 0, "%s", err);
    CHECK(strcmp(c.node_name, "n7") == 0, "node_name");
    CHECK(owner_config_set(&c, "client_socket", "/run/fx.sock", err, sizeof err) == 0, "%s", err);
    CHECK(strcmp(c.client_socket, "/run/fx.sock") == 0, "client_socket");
    CHECK(owner_config_set(&c, "log_level", "info", err, sizeof err) == 0, "%s", err);
    CHECK(c.log_level == FX_LOG_INFO, "log_level");
    CHECK(owner_config_set(&c, "fluxonkv_spec.prefault", "no", err, sizeof err) == 0, "%s", err);
    CHECK(c.prefault == false, "prefault");

    /* Lists: comma-separated, items trimmed; "null" clears the SSD tier. */
    CHECK(owner_config_set(&c, "large_file_paths", "/a, /b ,/c", err, sizeof err) == 0, "%s",
          err);
    REQUIRE(c.n_large_file_paths == 3, "3 paths");
    CHECK(strcmp(c.large_file_paths[0], "/a") == 0 && strcmp(c.large_file_paths[1], "/b") == 0 &&
              strcmp(c.large_file_paths[2], "/c") == 0,
          "paths trimmed");
    CHECK(owner_config_validate(&c, err, sizeof err) == -1 &&
              contains(err, "fluxonkv_spec.large_limit_size: has 1 entries"),
          "mismatch after flag: %s", err);
    CHECK(owner_config_set(&c, "large_limit_size", "4GB,8GB, 512", err, sizeof err) == 0, "%s",
          err);
    REQUIRE(c.n_large_limit_size == 3, "3 limits");
    CHECK(c.large_limit_size[0] == 4ull << 30 && c.large_limit_size[1] == 8ull << 30 &&
              c.large_limit_size[2] == 512,
          "limits");
    CHECK(owner_config_validate(&c, err, sizeof err) == 0, "validate: %s", err);

    /* A failed flag names the key and changes nothing. */
    CHECK(owner_config_set(&c, "large_limit_size", "4GB,100", err, sizeof err) == -1 &&
              contains(err, "fluxonkv_spec.large_limit_size[1]: 100 bytes is below"),
          "limit below 512: %s", err);
    CHECK(c.n_large_limit_size == 3 && c.large_limit_size[2] == 512, "limits unchanged");
    CHECK(owner_config_set(&c, "large_file_paths", "/a,,/b", err, sizeof err) == -1 &&
              contains(err, "fluxonkv_spec.large_file_paths[1]: must not be empty"),
          "empty path: %s", err);
    CHECK(c.n_large_file_paths == 3, "paths unchanged");
    CHECK(owner_config_set(&c, "memory_size", "abc", err, sizeof err) == -1 &&
              contains(err, "fluxonkv_spec.memory_size: invalid size 'abc'"),
          "bad size flag: %s", err);
    CHECK(c.memory_size == 4096, "memory_size unchanged");
    /* master is HOST:PORT or etcd://HOST:PORT[,...], checked by validate. */
    CHECK(owner_config_set(&c, "master", "nohost", err, sizeof err) == 0 &&
              owner_config_validate(&c, err, sizeof err) == -1 &&
              contains(err, "master: invalid host:port"),
          "bad master: %s", err);
    CHECK(owner_config_set(&c, "master", "etcd://127.0.0.1:2379,[::1]:2380", err, sizeof err) == 0 &&
              owner_config_validate(&c, err, sizeof err) == 0,
          "etcd master: %s", err);
    CHECK(owner_config_set(&c, "master", "etcd://", err, sizeof err) == 0 &&
              owner_config_validate(&c, err, sizeof err) == -1 &&
              contains(err, "master: 'etcd://' names no etcd endpoint"),
          "empty etcd master: %s", err);
    CHECK(owner_config_set(&c, "master", "etcd://127.0.0.1", err, sizeof err) == 0 &&
              owner_config_validate(&c, err, sizeof err) == -1 && contains(err, "master: "),
          "etcd master without a port: %s", err);
    CHECK(owner_config_set(&c, "master", "10.0.0.1:9000", err, sizeof err) == 0, "%s", err);
    CHECK(owner_config_set(&c, "prefault", "maybe", err, sizeof err) == -1 &&
              contains(err, "fluxonkv_spec.prefault"),
          "bad bool flag: %s", err);
    CHECK(owner_config_set(&c, "log_level", "loud", err, sizeof err) == -1 &&
              contains(err, "log_level"),
          "bad log level flag: %s", err);
    CHECK(owner_config_set(&c, "bogus", "1", err, sizeof err) == -1 &&
              contains(err, "bogus: unknown key"),
          "unknown flag: %s", err);
    CHECK(owner_config_set(&c, "fluxonkv_spec", "1", err, sizeof err) == -1 &&
              contains(err, "fluxonkv_spec: unknown key"),
          "section as flag: %s", err);
    CHECK(owner_config_set(&c, "fluxonkv_spec.cluster_name", "x", err, sizeof err) == -1 &&
              contains(err, "unknown key"),
          "wrong dotted path: %s", err);
    CHECK(owner_config_set(&c, "memory_size", NULL, err, sizeof err) == -1 &&
              contains(err, "fluxonkv_spec.memory_size"),
          "missing value: %s", err);
    CHECK(owner_config_set(&c, "master", "null", err, sizeof err) == -1 &&
              contains(err, "master"),
          "null master: %s", err);

    CHECK(owner_config_set(&c, "large_limit_size", "null", err, sizeof err) == 0, "%s", err);
    CHECK(c.large_limit_size == NULL && c.n_large_limit_size == 0, "null clears the tier");
    CHECK(owner_config_set(&c, "node_name", "null", err, sizeof err) == 0 && c.node_name == NULL,
          "null clears node_name");
    CHECK(owner_config_set(&c, "large_file_paths", "", err, sizeof err) == 0 &&
              c.n_large_file_paths == 0,
          "empty list: %s", err);
    CHECK(owner_config_validate(&c, err, sizeof err) == 0, "validate: %s", err);

    CHECK(owner_config_set(&c, "memory_size", "0", err, sizeof err) == -1 &&
              contains(err, "fluxonkv_spec.memory_size: must be > 0"),
          "zero memory: %s", err);
    owner_config_free(&c);

    /* validate catches what a caller set by hand. */
    owner_config_init(&c);
    CHECK(owner_config_set(&c, "master", "127.0.0.1:1", err, sizeof err) == 0, "%s", err);
    CHECK(owner_config_set(&c, "client_socket", "/s", err, sizeof err) == 0, "%s", err);
    CHECK(owner_config_validate(&c, err, sizeof err) == -1 &&
              contains(err, "fluxonkv_spec.memory_size"),
          "memory_size required: %s", err);
    c.memory_size = 1;
    CHECK(owner_config_validate(&c, err, sizeof err) == 0, "valid: %s", err);
    c.large_limit_size = calloc(1, sizeof *c.large_limit_size);
    c.large_limit_size[0] = 100;
    c.n_large_limit_size = 1;
    c.large_file_paths = calloc(1, sizeof *c.large_file_paths);
    c.large_file_paths[0] = strdup("/p");
    c.n_large_file_paths = 1;
    CHECK(owner_config_validate(&c, err, sizeof err) == -1 &&
              contains(err, "fluxonkv_spec.large_limit_size[0]"),
          "small limit set by hand: %s", err);
    c.log_level = 9;
    CHECK(owner_config_validate(&c, err, sizeof err) == -1 && contains(err, "log_level"),
          "bad level: %s", err);
    owner_config_free(&c);
}

static void test_master(void)
{
    char err[512];
    master_config c;
    master_config_init(&c);
    CHECK(strcmp(c.cluster_name, "fluxon") == 0 && strcmp(c.listen, "127.0.0.1:7700") == 0,
          "defaults");
    CHECK(c.http == NULL && c.inflight_ttl_ms == 60000 && c.heartbeat_interval_ms == 1000 &&
              c.heartbeat_timeout_ms == 3000 && c.placement == PLACEMENT_RANDOM &&
              c.log_level == -1,
          "defaults");
    CHECK(master_config_validate(&c, err, sizeof err) == 0, "defaults valid: %s", err);

    const char *yaml = "cluster_name: demo\n"
                       "listen: 0.0.0.0:7800\n"
                       "advertise: 10.0.0.1:7800\n"
                       "http: 127.0.0.1:7801\n"
                       "inflight_ttl: 90s\n"
                       "heartbeat_interval: 100ms\n"
                       "heartbeat_timeout: 500ms\n"
                       "placement: local\n"
                       "log_level: info\n";
    REQUIRE(master_config_load(&c, write_tmp(yaml), err, sizeof err) == 0, "load: %s", err);
    CHECK(strcmp(c.cluster_name, "demo") == 0, "cluster_name");
    CHECK(strcmp(c.listen, "0.0.0.0:7800") == 0, "listen");
    CHECK(c.advertise && strcmp(c.advertise, "10.0.0.1:7800") == 0, "advertise");
    CHECK(c.http && strcmp(c.http, "127.0.0.1:7801") == 0, "http");
    CHECK(c.inflight_ttl_ms == 90000, "inflight_ttl %" PRIu64, c.inflight_ttl_ms);
    CHECK(c.heartbeat_interval_ms == 100, "heartbeat_interval %" PRIu64,
          c.heartbeat_interval_ms);
    CHECK(c.heartbeat_timeout_ms == 500, "heartbeat_timeout %" PRIu64, c.heartbeat_timeout_ms);
    CHECK(c.placement == PLACEMENT_LOCAL, "placement %d", c.placement);
    CHECK(c.log_level == FX_LOG_INFO, "log_level");
    CHECK(master_config_validate(&c, err, sizeof err) == 0, "validate: %s", err);

    /* Duration forms. */
    static const struct {
        const char *v;
        uint64_t ms;
    } durs[] = {{"2m", 120000}, {"1500", 1500}, {"1h", 3600000}, {"60s", 60000},
                {"\"7 s\"", 7000}, {"250MS", 250}, {"1", 1}};
    for (size_t i = 0; i < sizeof durs / sizeof *durs; i++) {
        char y[128];
        snprintf(y, sizeof y, "inflight_ttl: %s\n", durs[i].v);
        CHECK(master_config_load(&c, write_tmp(y), err, sizeof err) == 0, "%s: %s", durs[i].v,
              err);
        CHECK(c.inflight_ttl_ms == durs[i].ms, "%s -> %" PRIu64, durs[i].v, c.inflight_ttl_ms);
    }
    CHECK(master_config_load(&c, write_tmp("http: null\n"), err, sizeof err) == 0 &&
              c.http == NULL,
          "http: null clears: %s", err);
    master_config_free(&c);

    /* Errors name the key. */
    EXPECT_MASTER_ERR("inflight_ttl: 0\n", "inflight_ttl: must be > 0");
    EXPECT_MASTER_ERR("inflight_ttl: 0s\n", "inflight_ttl: must be > 0");
    EXPECT_MASTER_ERR("inflight_ttl: abc\n", "inflight_ttl: invalid duration 'abc'");
    EXPECT_MASTER_ERR("inflight_ttl: 1.5s\n", "inflight_ttl: invalid duration");
    EXPECT_MASTER_ERR("inflight_ttl: 5 sec\n", "inflight_ttl: invalid duration");
    EXPECT_MASTER_ERR("inflight_ttl: -5s\n", "inflight_ttl: invalid duration");
    EXPECT_MASTER_ERR("inflight_ttl: 5d\n", "inflight_ttl: invalid duration");
    EXPECT_MASTER_ERR("inflight_ttl: null\n", "inflight_ttl: a value is required");
    EXPECT_MASTER_ERR("inflight_ttl: [1s]\n", "inflight_ttl: expected a scalar");
    EXPECT_MASTER_ERR("heartbeat_timeout: 99999999999999999999h\n",
                      "heartbeat_timeout: duration '99999999999999999999h' is too large");
    EXPECT_MASTER_ERR("heartbeat_timeout: 9999999999999999h\n", "heartbeat_timeout");
    EXPECT_MASTER_ERR("heartbeat_timeout: 0ms\n", "heartbeat_timeout: must be > 0");
    EXPECT_MASTER_ERR("listen: 127.0.0.1\n", "listen: invalid host:port");
    EXPECT_MASTER_ERR("listen: 127.0.0.1:70000\n", "listen: invalid host:port");
    EXPECT_MASTER_ERR("listen: null\n", "listen: a value is required");
    EXPECT_MASTER_ERR("http: x:70000\n", "http: invalid host:port");
    EXPECT_MASTER_ERR("http: {a: 1}\n", "http: expected a scalar");
    EXPECT_MASTER_ERR("log_level: verbose\n", "log_level");
    EXPECT_MASTER_ERR("cluster_name: [a]\n", "cluster_name");
    EXPECT_MASTER_ERR("memory_size: 1GB\n", "memory_size: unknown key");
    EXPECT_MASTER_ERR("fluxonkv_spec:\n  memory_size: 1GB\n", "fluxonkv_spec: unknown key");
    EXPECT_MASTER_ERR("listen: 127.0.0.1:1\nlisten: 127.0.0.1:2\n", "listen: duplicate key");
    EXPECT_MASTER_ERR("listen: [127.0.0.1:1\n", "YAML syntax error");

    /* Flags. */
    master_config_init(&c);
    CHECK(master_config_set(&c, "inflight-ttl", "2m", err, sizeof err) == 0, "%s", err);
    CHECK(c.inflight_ttl_ms == 120000, "inflight_ttl flag");
    CHECK(master_config_set(&c, "heartbeat_interval", "250", err, sizeof err) == 0, "%s", err);
    CHECK(c.heartbeat_interval_ms == 250, "heartbeat_interval flag");
    CHECK(master_config_set(&c, "heartbeat_timeout", "750", err, sizeof err) == 0, "%s", err);
    CHECK(c.heartbeat_timeout_ms == 750, "heartbeat flag");
    CHECK(master_config_set(&c, "listen", "[::1]:7700", err, sizeof err) == 0, "%s", err);
    CHECK(strcmp(c.listen, "[::1]:7700") == 0, "listen flag");
    CHECK(master_config_set(&c, "http", "127.0.0.1:0", err, sizeof err) == 0, "%s", err);
    CHECK(c.http && strcmp(c.http, "127.0.0.1:0") == 0, "http flag");
    CHECK(master_config_validate(&c, err, sizeof err) == 0, "validate: %s", err);
    CHECK(master_config_set(&c, "http", "null", err, sizeof err) == 0 && c.http == NULL,
          "http null: %s", err);
    CHECK(master_config_set(&c, "inflight_ttl", "0", err, sizeof err) == -1 &&
              contains(err, "inflight_ttl: must be > 0"),
          "zero ttl flag: %s", err);
    CHECK(c.inflight_ttl_ms == 120000, "ttl unchanged");
    CHECK(master_config_set(&c, "heartbeat_timeout", "soon", err, sizeof err) == -1 &&
              contains(err, "heartbeat_timeout: invalid duration"),
          "bad heartbeat flag: %s", err);
    CHECK(master_config_set(&c, "listen", "x", err, sizeof err) == -1 &&
              contains(err, "listen"),
          "bad listen flag: %s", err);
    CHECK(master_config_set(&c, "memory_size", "1GB", err, sizeof err) == -1 &&
              contains(err, "memory_size: unknown key"),
          "owner key on master: %s", err);

    c.heartbeat_timeout_ms = 0;
    CHECK(master_config_validate(&c, err, sizeof err) == -1 &&
              contains(err, "heartbeat_timeout"),
          "validate heartbeat: %s", err);
    c.heartbeat_timeout_ms = 1;
    c.inflight_ttl_ms = 0;
    CHECK(master_config_validate(&c, err, sizeof err) == -1 && contains(err, "inflight_ttl"),
          "validate ttl: %s", err);
    c.inflight_ttl_ms = 1;
    free(c.listen);
    c.listen = NULL;
    CHECK(master_config_validate(&c, err, sizeof err) == -1 && contains(err, "listen: missing"),
          "validate listen: %s", err);
    master_config_free(&c);
    master_config_free(NULL);
}

/* advertise: optional, never a wildcard, required with a wildcard listen. */
static void test_master_advertise(void)
{
    char err[512];
    master_config c;
    master_config_init(&c);
    CHECK(c.advertise == NULL, "no advertise by default");
    static const char *const wildcards[] = {"0.0.0.0:0", "[::]:7700"};
    for (int i = 0; i < 2; i++) {
        CHECK(master_config_set(&c, "listen", wildcards[i], err, sizeof err) == 0, "%s", err);
        CHECK(master_config_validate(&c, err, sizeof err) == -1 && contains(err, "--advertise") &&
                  contains(err, wildcards[i]),
              "a wildcard listen without advertise names --advertise: %s", err);
        CHECK(master_config_set(&c, "advertise", "127.0.0.1:0", err, sizeof err) == 0, "%s", err);
        CHECK(master_config_validate(&c, err, sizeof err) == 0, "with advertise: %s", err);
        CHECK(master_config_set(&c, "advertise", "null", err, sizeof err) == 0, "%s", err);
    }
    CHECK(master_config_set(&c, "listen", "[::1]:0", err, sizeof err) == 0, "%s", err);
    CHECK(master_config_validate(&c, err, sizeof err) == 0, "a literal listen: %s", err);
    CHECK(master_config_set(&c, "listen", "localhost:0", err, sizeof err) == 0, "%s", err);
    CHECK(master_config_validate(&c, err, sizeof err) == 0, "a named listen: %s", err);
    CHECK(master_config_set(&c, "advertise", "[::]:1", err, sizeof err) == 0, "%s", err);
    CHECK(master_config_validate(&c, err, sizeof err) == -1 && contains(err, "advertise:") &&
              contains(err, "wildcard"),
          "a wildcard advertise is refused: %s", err);
    CHECK(master_config_set(&c, "advertise", "nohost", err, sizeof err) == -1 &&
              contains(err, "advertise") && strcmp(c.advertise, "[::]:1") == 0,
          "a bad advertise names the key and changes nothing: %s", err);
    master_config_free(&c);
    EXPECT_MASTER_ERR("listen: 0.0.0.0:7700\n", "--advertise");
    EXPECT_MASTER_ERR("listen: 0.0.0.0:7700\nadvertise: 0.0.0.0:7700\n", "advertise:");
    EXPECT_MASTER_ERR("advertise: x\n", "advertise: invalid host:port");
}

/* data_advertise: optional, HOST:PORT like data_listen, never a wildcard. */
static void test_owner_data_advertise(void)
{
    char err[512];
    owner_config c;
    owner_config_init(&c);
    CHECK(c.data_advertise == NULL, "no data_advertise by default");
    CHECK(owner_config_set(&c, "data-advertise", "[fd00::2]:0", err, sizeof err) == 0, "flag: %s",
          err);
    CHECK(strcmp(c.data_advertise, "[fd00::2]:0") == 0, "data_advertise flag '%s'",
          c.data_advertise);
    CHECK(owner_config_set(&c, "data_advertise", "h:70000", err, sizeof err) == -1 &&
              contains(err, "data_advertise") && strcmp(c.data_advertise, "[fd00::2]:0") == 0,
          "a bad flag names the key and changes nothing: %s", err);
    CHECK(owner_config_set(&c, "data_advertise", "null", err, sizeof err) == 0 &&
              c.data_advertise == NULL,
          "null clears it: %s", err);
    owner_config_free(&c);

    EXPECT_OWNER_OK(OWNER_BASE "data_advertise: node7.example:7710\n");
    EXPECT_OWNER_OK(OWNER_BASE "data_advertise: 10.0.0.5:0\n");
    EXPECT_OWNER_OK(OWNER_BASE "data_listen: 0.0.0.0:0\ndata_advertise: '[fd00::2]:7710'\n");
    EXPECT_OWNER_ERR(OWNER_BASE "data_advertise: 10.0.0.5\n", "data_advertise: invalid host:port");
    EXPECT_OWNER_ERR(OWNER_BASE "data_advertise: ''\n", "data_advertise: must not be empty");
    EXPECT_OWNER_ERR(OWNER_BASE "data_advertise: 0.0.0.0:7710\n",
                     "data_advertise: '0.0.0.0:7710' is a wildcard");
    EXPECT_OWNER_ERR(OWNER_BASE "data_advertise: '[::]:7710'\n",
                     "data_advertise: '[::]:7710' is a wildcard");
}

static void test_owner_data_listen(void)
{
    char err[512];
    owner_config c;
    owner_config_init(&c);
    CHECK(c.data_listen && strcmp(c.data_listen, "127.0.0.1:0") == 0, "default data_listen");
    owner_config_free(&c);

    owner_config_init(&c);
    REQUIRE(owner_config_load(&c, write_tmp(OWNER_BASE "data_listen: 0.0.0.0:7710\n"), err,
                              sizeof err) == 0,
            "load: %s", err);
    CHECK(strcmp(c.data_listen, "0.0.0.0:7710") == 0, "data_listen '%s'", c.data_listen);
    CHECK(owner_config_validate(&c, err, sizeof err) == 0, "validate: %s", err);
    CHECK(owner_config_set(&c, "data-listen", "[::1]:0", err, sizeof err) == 0, "flag: %s", err);
    CHECK(strcmp(c.data_listen, "[::1]:0") == 0, "data_listen flag '%s'", c.data_listen);
    CHECK(owner_config_set(&c, "data_listen", "localhost:9", err, sizeof err) == 0, "%s", err);
    CHECK(strcmp(c.data_listen, "localhost:9") == 0, "data_listen by key");

    /* A bad value names the key and leaves the field as it was. */
    static const char *bad[] = {"nohost", "h:70000", ":80", "h:", "::1:80", "null", ""};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        CHECK(owner_config_set(&c, "data_listen", bad[i], err, sizeof err) == -1 &&
                  contains(err, "data_listen"),
              "bad data_listen flag '%s': %s", bad[i], err);
        CHECK(strcmp(c.data_listen, "localhost:9") == 0, "data_listen unchanged after '%s'",
              bad[i]);
    }
    free(c.data_listen);
    c.data_listen = strdup("bogus");
    CHECK(owner_config_set(&c, "master", "127.0.0.1:1", err, sizeof err) == 0, "%s", err);
    c.memory_size = 1;
    CHECK(owner_config_set(&c, "client_socket", "/s", err, sizeof err) == 0, "%s", err);
    CHECK(owner_config_validate(&c, err, sizeof err) == -1 && contains(err, "data_listen"),
          "validate bad data_listen set by hand: %s", err);
    free(c.data_listen);
    c.data_listen = NULL;
    CHECK(owner_config_validate(&c, err, sizeof err) == -1 &&
              contains(err, "data_listen: missing"),
          "validate missing data_listen: %s", err);
    owner_config_free(&c);

    EXPECT_OWNER_OK(OWNER_BASE "data_listen: 127.0.0.1:0\n");
    EXPECT_OWNER_OK(OWNER_BASE "data_listen: '[::1]:7710'\n");
    EXPECT_OWNER_ERR(OWNER_BASE "data_listen: 127.0.0.1\n", "data_listen: invalid host:port");
    EXPECT_OWNER_ERR(OWNER_BASE "data_listen: 127.0.0.1:65536\n",
                     "data_listen: invalid host:port");
    EXPECT_OWNER_ERR(OWNER_BASE "data_listen: a b:1\n", "data_listen: invalid host:port");
    EXPECT_OWNER_ERR(OWNER_BASE "data_listen: null\n", "data_listen: a value is required");
    EXPECT_OWNER_ERR(OWNER_BASE "data_listen: ''\n", "data_listen: must not be empty");
    EXPECT_OWNER_ERR(OWNER_BASE "data_listen: [127.0.0.1:1]\n", "data_listen: expected a scalar");
    EXPECT_OWNER_ERR(OWNER_BASE "fluxonkv_spec2: 1\n", "fluxonkv_spec2: unknown key");
    EXPECT_OWNER_ERR(OWNER_MASTER "fluxonkv_spec:\n  memory_size: 1GB\n  client_socket: /s\n"
                                  "  data_listen: 127.0.0.1:0\n",
                     "fluxonkv_spec.data_listen: unknown key");
}

static void test_master_heartbeat(void)
{
    char err[512];
    master_config c;

    /* The timeout follows 3 x the interval until it is given itself, in a
     * file and by flag, whatever the order of the two keys. */
    master_config_init(&c);
    REQUIRE(master_config_load(&c, write_tmp("heartbeat_interval: 2s\n"), err, sizeof err) == 0,
            "load: %s", err);
    CHECK(c.heartbeat_interval_ms == 2000 && c.heartbeat_timeout_ms == 6000,
          "derived timeout %" PRIu64, c.heartbeat_timeout_ms);
    CHECK(!c.heartbeat_timeout_set, "timeout not set");
    CHECK(master_config_validate(&c, err, sizeof err) == 0, "validate: %s", err);
    CHECK(master_config_set(&c, "heartbeat-interval", "250ms", err, sizeof err) == 0, "%s", err);
    CHECK(c.heartbeat_interval_ms == 250 && c.heartbeat_timeout_ms == 750,
          "derived timeout after flag %" PRIu64, c.heartbeat_timeout_ms);
    CHECK(master_config_set(&c, "heartbeat_timeout", "10s", err, sizeof err) == 0, "%s", err);
    CHECK(c.heartbeat_timeout_ms == 10000 && c.heartbeat_timeout_set, "explicit timeout");
    CHECK(master_config_set(&c, "heartbeat_interval", "1s", err, sizeof err) == 0, "%s", err);
    CHECK(c.heartbeat_timeout_ms == 10000, "explicit timeout kept after the interval changes");
    CHECK(master_config_validate(&c, err, sizeof err) == 0, "validate: %s", err);
    master_config_free(&c);

    master_config_init(&c);
    REQUIRE(master_config_load(&c, write_tmp("heartbeat_timeout: 9s\nheartbeat_interval: 1s\n"),
                               err, sizeof err) == 0,
            "load: %s", err);
    CHECK(c.heartbeat_timeout_ms == 9000 && c.heartbeat_interval_ms == 1000,
          "timeout before interval in the file: %" PRIu64, c.heartbeat_timeout_ms);
    /* A failed load does not change the flag or the derived value. */
    master_config_free(&c);
    master_config_init(&c);
    CHECK(master_config_load(&c, write_tmp("heartbeat_interval: 5s\nheartbeat_timeout: x\n"), err,
                             sizeof err) == -1 &&
              contains(err, "heartbeat_timeout: invalid duration"),
          "bad timeout: %s", err);
    CHECK(c.heartbeat_interval_ms == 1000 && c.heartbeat_timeout_ms == 3000 &&
              !c.heartbeat_timeout_set,
          "unchanged after a failed load");
    CHECK(master_config_set(&c, "heartbeat_interval", "0", err, sizeof err) == -1 &&
              contains(err, "heartbeat_interval: must be > 0"),
          "zero interval flag: %s", err);
    CHECK(master_config_set(&c, "heartbeat_interval", "often", err, sizeof err) == -1 &&
              contains(err, "heartbeat_interval: invalid duration"),
          "bad interval flag: %s", err);
    CHECK(c.heartbeat_interval_ms == 1000 && c.heartbeat_timeout_ms == 3000, "unchanged");
    /* A huge interval saturates the derived timeout instead of wrapping. */
    CHECK(master_config_set(&c, "heartbeat_interval", "9000000000000000000", err, sizeof err) ==
              0,
          "%s", err);
    CHECK(c.heartbeat_timeout_ms == UINT64_MAX, "saturated %" PRIu64, c.heartbeat_timeout_ms);
    CHECK(master_config_validate(&c, err, sizeof err) == 0, "validate: %s", err);
    c.heartbeat_interval_ms = 0;
    CHECK(master_config_validate(&c, err, sizeof err) == -1 &&
              contains(err, "heartbeat_interval: must be > 0"),
          "validate zero interval set by hand: %s", err);
    c.heartbeat_interval_ms = 1000;
    c.heartbeat_timeout_ms = 1000;
    CHECK(master_config_validate(&c, err, sizeof err) == -1 &&
              contains(err, "heartbeat_timeout") && contains(err, "heartbeat_interval"),
          "validate timeout == interval set by hand: %s", err);
    master_config_free(&c);

    EXPECT_MASTER_ERR("heartbeat_interval: 0\n", "heartbeat_interval: must be > 0");
    EXPECT_MASTER_ERR("heartbeat_interval: 0ms\n", "heartbeat_interval: must be > 0");
    EXPECT_MASTER_ERR("heartbeat_interval: soon\n", "heartbeat_interval: invalid duration");
    EXPECT_MASTER_ERR("heartbeat_interval: 1.5s\n", "heartbeat_interval: invalid duration");
    EXPECT_MASTER_ERR("heartbeat_interval: null\n", "heartbeat_interval: a value is required");
    EXPECT_MASTER_ERR("heartbeat_interval: [1s]\n", "heartbeat_interval: expected a scalar");
    EXPECT_MASTER_ERR("heartbeat_interval: 99999999999999999999h\n",
                      "heartbeat_interval: duration '99999999999999999999h' is too large");
    /* The explicit timeout must exceed the interval. */
    EXPECT_MASTER_ERR("heartbeat_timeout: 500ms\n", "heartbeat_timeout");
    EXPECT_MASTER_ERR("heartbeat_timeout: 1s\n", "heartbeat_timeout");
    EXPECT_MASTER_ERR("heartbeat_interval: 2s\nheartbeat_timeout: 2s\n", "heartbeat_timeout");
    EXPECT_MASTER_ERR("heartbeat_timeout: 1s\nheartbeat_interval: 5s\n",
                      "heartbeat_timeout: 1000 ms must be > heartbeat_interval (5000 ms)");
    master_config_init(&c);
    CHECK(master_config_set(&c, "heartbeat_timeout", "500ms", err, sizeof err) == 0, "%s", err);
    CHECK(master_config_validate(&c, err, sizeof err) == -1 && contains(err, "heartbeat_timeout"),
          "flag timeout below the default interval: %s", err);
    master_config_free(&c);
}

static void test_master_placement(void)
{
    char err[512];
    master_config c;
    master_config_init(&c);
    CHECK(c.placement == PLACEMENT_RANDOM, "default placement");

    static const struct {
        const char *v;
        int want;
    } ok[] = {{"random", PLACEMENT_RANDOM}, {"local", PLACEMENT_LOCAL},
              {"remote", PLACEMENT_REMOTE}, {"\"Remote\"", PLACEMENT_REMOTE},
              {"'random'", PLACEMENT_RANDOM}};
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        char y[64];
        snprintf(y, sizeof y, "placement: %s\n", ok[i].v);
        CHECK(master_config_load(&c, write_tmp(y), err, sizeof err) == 0, "%s: %s", ok[i].v,
              err);
        CHECK(c.placement == ok[i].want, "%s -> %d", ok[i].v, c.placement);
        CHECK(master_config_validate(&c, err, sizeof err) == 0, "validate: %s", err);
    }
    CHECK(master_config_set(&c, "placement", "local", err, sizeof err) == 0, "flag: %s", err);
    CHECK(c.placement == PLACEMENT_LOCAL, "placement flag");

    /* A bad value names the key, lists the allowed ones, changes nothing. */
    static const char *bad[] = {"nearest", "", "null", "randomly", "local,remote", "0"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        CHECK(master_config_set(&c, "placement", bad[i], err, sizeof err) == -1 &&
                  contains(err, "placement"),
              "bad placement '%s': %s", bad[i], err);
        CHECK(c.placement == PLACEMENT_LOCAL, "placement unchanged after '%s'", bad[i]);
    }
    CHECK(master_config_set(&c, "placement", "nearest", err, sizeof err) == -1 &&
              contains(err, "placement: invalid value 'nearest'") &&
              contains(err, "random|local|remote"),
          "message lists the values: %s", err);
    c.placement = 7;
    CHECK(master_config_validate(&c, err, sizeof err) == -1 && contains(err, "placement") &&
              contains(err, "random|local|remote"),
          "validate placement set by hand: %s", err);
    c.placement = -1;
    CHECK(master_config_validate(&c, err, sizeof err) == -1 && contains(err, "placement"),
          "validate negative placement: %s", err);
    master_config_free(&c);

    EXPECT_MASTER_ERR("placement: nearest\n", "placement: invalid value 'nearest'");
    EXPECT_MASTER_ERR("placement: nearest\n", "random|local|remote");
    EXPECT_MASTER_ERR("placement: 1\n", "placement: invalid value '1'");
    EXPECT_MASTER_ERR("placement: null\n", "placement: a value is required");
    EXPECT_MASTER_ERR("placement: [local]\n", "placement: expected a scalar");
    EXPECT_MASTER_ERR("placement: {a: b}\n", "placement: expected a scalar");
}

/* The listeners' limits: connection caps (a whole number, >= 1), the
 * handshake deadline and the buffer budget, with their defaults. */
static void test_connection_limits(void)
{
    char err[512];
    master_config m;
    master_config_init(&m);
    CHECK(m.max_connections == 4096 && m.handshake_timeout_ms == 5000 &&
              m.receive_buffer_budget == 256ull << 20,
          "master defaults: %u, %" PRIu64 ", %" PRIu64, m.max_connections,
          m.handshake_timeout_ms, m.receive_buffer_budget);
    const char *yaml = "max_connections: 50\nhandshake_timeout: 500ms\n"
                       "receive_buffer_budget: 8MiB\n";
    REQUIRE(master_config_load(&m, write_tmp(yaml), err, sizeof err) == 0, "load: %s", err);
    CHECK(m.max_connections == 50 && m.handshake_timeout_ms == 500 &&
              m.receive_buffer_budget == 8ull << 20,
          "master values");
    CHECK(master_config_set(&m, "max-connections", "7", err, sizeof err) == 0 &&
              m.max_connections == 7,
          "max-connections flag: %s", err);
    CHECK(master_config_set(&m, "max_connections", "16777217", err, sizeof err) == -1 &&
              contains(err, "max_connections: invalid count") && m.max_connections == 7,
          "a count over the maximum: %s", err);
    master_config_free(&m);
    EXPECT_MASTER_ERR("max_connections: 0\n", "max_connections: invalid count '0'");
    EXPECT_MASTER_ERR("max_connections: -1\n", "max_connections: invalid count");
    EXPECT_MASTER_ERR("max_connections: 4k\n", "max_connections: invalid count");
    EXPECT_MASTER_ERR("max_connections: \"\"\n", "max_connections");
    EXPECT_MASTER_ERR("handshake_timeout: 0\n", "handshake_timeout: must be > 0");
    EXPECT_MASTER_ERR("receive_buffer_budget: 0\n", "receive_buffer_budget: must be > 0");

    owner_config o;
    owner_config_init(&o);
    CHECK(o.max_client_connections == 4096 && o.max_peer_connections == 4096 &&
              o.handshake_timeout_ms == 5000 && o.receive_buffer_budget == 256ull << 20,
          "owner defaults");
    yaml = OWNER_BASE "max_client_connections: 50\nmax_peer_connections: 60\n"
                      "handshake_timeout: 1s\nreceive_buffer_budget: 1MiB\n";
    REQUIRE(owner_config_load(&o, write_tmp(yaml), err, sizeof err) == 0, "load: %s", err);
    CHECK(o.max_client_connections == 50 && o.max_peer_connections == 60 &&
              o.handshake_timeout_ms == 1000 && o.receive_buffer_budget == 1u << 20,
          "owner values");
    CHECK(owner_config_validate(&o, err, sizeof err) == 0, "validate: %s", err);
    CHECK(owner_config_set(&o, "max-peer-connections", "3", err, sizeof err) == 0 &&
              o.max_peer_connections == 3,
          "max-peer-connections flag: %s", err);
    owner_config_free(&o);
    EXPECT_OWNER_ERR(OWNER_BASE "max_client_connections: 0\n",
                     "max_client_connections: invalid count");
    EXPECT_OWNER_ERR(OWNER_BASE "max_peer_connections: many\n",
                     "max_peer_connections: invalid count");
    EXPECT_OWNER_ERR(OWNER_BASE "handshake_timeout: soon\n", "handshake_timeout: invalid duration");
}

/* master_wait: how long a client request waits for a master the owner lost;
 * a duration, default 10 s, > 0, also as the flag --master-wait. */
static void test_owner_master_wait(void)
{
    char err[512];
    owner_config o;
    owner_config_init(&o);
    CHECK(o.master_wait_ms == 10000, "master_wait defaults to 10s: %" PRIu64, o.master_wait_ms);
    REQUIRE(owner_config_load(&o, write_tmp(OWNER_BASE "master_wait: 1s\n"), err, sizeof err) == 0,
            "load: %s", err);
    CHECK(o.master_wait_ms == 1000, "master_wait: 1s -> %" PRIu64 " ms", o.master_wait_ms);
    CHECK(owner_config_validate(&o, err, sizeof err) == 0, "validate: %s", err);
    CHECK(owner_config_set(&o, "master-wait", "250ms", err, sizeof err) == 0 &&
              o.master_wait_ms == 250,
          "master-wait flag: %s (%" PRIu64 ")", err, o.master_wait_ms);
    CHECK(owner_config_set(&o, "master_wait", "0", err, sizeof err) == -1 &&
              contains(err, "master_wait: must be > 0") && o.master_wait_ms == 250,
          "master_wait 0 by flag refused, value kept: %s", err);
    owner_config_free(&o);
    EXPECT_OWNER_OK(OWNER_BASE "master_wait: 2m\n");
    EXPECT_OWNER_ERR(OWNER_BASE "master_wait: 0\n", "master_wait: must be > 0");
    EXPECT_OWNER_ERR(OWNER_BASE "master_wait: 0s\n", "master_wait: must be > 0");
    EXPECT_OWNER_ERR(OWNER_BASE "master_wait: soon\n", "master_wait: invalid duration");
    EXPECT_OWNER_ERR(OWNER_BASE "master_wait: -1s\n", "master_wait");
    EXPECT_OWNER_ERR(OWNER_BASE "  master_wait: 1s\n", "fluxonkv_spec.master_wait: unknown key");
}

/* get_threads: threads that answer gets from the get cache (get_lanes.c);
 * default 2, 0..16, also as the flag --get-threads. */
static void test_owner_get_threads(void)
{
    char err[512];
    owner_config o;
    owner_config_init(&o);
    CHECK(o.get_threads == 2, "get_threads defaults to 2: %u", o.get_threads);
    REQUIRE(owner_config_load(&o, write_tmp(OWNER_BASE "get_threads: 0\n"), err, sizeof err) == 0,
            "load: %s", err);
    CHECK(o.get_threads == 0 && owner_config_validate(&o, err, sizeof err) == 0,
          "get_threads: 0 (the loop answers every get): %s", err);
    CHECK(owner_config_set(&o, "get-threads", "16", err, sizeof err) == 0 && o.get_threads == 16 &&
              owner_config_validate(&o, err, sizeof err) == 0,
          "get-threads flag 16: %s", err);
    CHECK(owner_config_set(&o, "get-threads", "17", err, sizeof err) == 0 &&
              owner_config_validate(&o, err, sizeof err) == -1 &&
              contains(err, "get_threads: 17 is more than 16"),
          "get-threads 17 refused: %s", err);
    owner_config_free(&o);
    EXPECT_OWNER_ERR(OWNER_BASE "get_threads: 99\n", "get_threads: 99 is more than 16");
    EXPECT_OWNER_ERR(OWNER_BASE "get_threads: -1\n", "get_threads: invalid count");
    EXPECT_OWNER_ERR(OWNER_BASE "get_threads: two\n", "get_threads: invalid count");
}

static void test_hostport(void)
{
    char host[64];
    int port = -2;
    CHECK(config_parse_hostport("127.0.0.1:7700", host, sizeof host, &port) == 0 &&
              strcmp(host, "127.0.0.1") == 0 && port == 7700,
          "ipv4");
    CHECK(config_parse_hostport("[::1]:80", host, sizeof host, &port) == 0 &&
              strcmp(host, "::1") == 0 && port == 80,
          "ipv6 in brackets");
    CHECK(config_parse_hostport("localhost:0", host, sizeof host, &port) == 0 &&
              strcmp(host, "localhost") == 0 && port == 0,
          "port 0");
    CHECK(config_parse_hostport("h:65535", host, sizeof host, &port) == 0 && port == 65535,
          "port 65535");
    CHECK(config_parse_hostport("h:00080", host, sizeof host, &port) == 0 && port == 80,
          "leading zeros");

    static const char *bad[] = {"",       "h",        "h:",      ":80",   "h:65536",
                                "h:-1",   "h:+1",     "h:1x",    "h: 1",  "h :1",
                                "::1:80", "[::1]",    "[]:80",   "h:123456",
                                "a/b:1",  "[::1:80",  "::1]:80", "h:1:2"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        port = -2;
        strcpy(host, "unchanged");
        CHECK(config_parse_hostport(bad[i], host, sizeof host, &port) == -1,
              "'%s' accepted", bad[i]);
        CHECK(port == -2, "'%s' changed port on failure", bad[i]);
    }
    CHECK(config_parse_hostport(NULL, host, sizeof host, &port) == -1, "NULL");
    char small[4];
    CHECK(config_parse_hostport("localhost:1", small, sizeof small, &port) == -1,
          "host buffer too small");
    CHECK(config_parse_hostport("abc:1", small, sizeof small, &port) == 0 &&
              strcmp(small, "abc") == 0,
          "host fits exactly");
}

int main(void)
{
    test_owner_defaults();
    test_owner_full();
    test_owner_variants();
    test_owner_errors();
    test_owner_flags();
    test_owner_data_listen();
    test_owner_data_advertise();
    test_master();
    test_master_heartbeat();
    test_master_placement();
    test_master_advertise();
    test_hostport();
    test_connection_limits();
    test_owner_master_wait();
    test_owner_get_threads();
    cleanup();
    return test_finish();
}
