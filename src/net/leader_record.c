/*
 * leader_record.c - the leader's etcd value as JSON (see leader_record.h),
 * through json-c.
 */
#include "net/leader_record.h"

#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

int leader_key(const char *cluster_name, char *buf, size_t cap)
{
    int n = snprintf(buf, cap, "/fluxon/%s/leader", cluster_name);
    return n < 0 || (size_t)n >= cap ? -1 : 0;
}

int leader_record_encode(const leader_record *r, char *buf, size_t cap)
{
    json_object *o = json_object_new_object();
    if (!o)
        return -1;
    json_object_object_add(o, "addr", json_object_new_string(r->addr));
    json_object_object_add(o, "pid", json_object_new_int64(r->pid));
    json_object_object_add(o, "host", json_object_new_string(r->host));
    const char *s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
    int n = s ? snprintf(buf, cap, "%s", s) : -1;
    json_object_put(o);
    return n < 0 || (size_t)n >= cap ? -1 : n;
}

static int copy_string(json_object *o, const char *name, char *out, size_t cap)
{
    json_object *v;
    if (!json_object_object_get_ex(o, name, &v) || !json_object_is_type(v, json_type_string))
        return -1;
    const char *s = json_object_get_string(v);
    if (strlen(s) >= cap)
        return -1;
    strcpy(out, s);
    return 0;
}

int leader_record_decode(const void *json, size_t len, leader_record *r)
{
    json_tokener *tok = json_tokener_new();
    if (!tok)
        return -1;
    json_object *o = json_tokener_parse_ex(tok, json, (int)(len > 65536 ? 65536 : len));
    json_tokener_free(tok);
    int rc = -1;
    json_object *pid;
    memset(r, 0, sizeof *r);
    if (o && json_object_is_type(o, json_type_object) &&
        copy_string(o, "addr", r->addr, sizeof r->addr) == 0 && r->addr[0] &&
        copy_string(o, "host", r->host, sizeof r->host) == 0 &&
        json_object_object_get_ex(o, "pid", &pid) && json_object_is_type(pid, json_type_int)) {
        r->pid = json_object_get_int64(pid);
        rc = 0;
    }
    json_object_put(o);
    return rc;
}
