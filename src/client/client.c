/*
 * client.c - fx_connect / fx_close and the session thread.
 *
 * fx_connect opens the session connection, receives and maps the owner's
 * segment, and starts a thread that reads the owner's pushes on the session
 * connection (ExternalInvalidateWeakIndex). When that connection ends, the
 * owner has released every holder of this client; later calls fail with
 * FX_ECONN.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "client/client.h"

#define DEFAULT_TIMEOUT_MS 30000

static void handle_push(fx_client *c, const frame_hdr *h, const uint8_t *body)
{
    if (h->type != MSG_EXT_INVALIDATE_WEAK_INDEX || (h->flags & FRAME_RESPONSE))
        return;
    Fx__ExternalInvalidateWeakIndexReq *req =
        (Fx__ExternalInvalidateWeakIndexReq *)msg_decode(h->type, false, body, h->len);
    if (!req)
        return;
    if (req->all)
        holder_index_invalidate_all(c);
    for (size_t i = 0; i < req->n_keys; i++)
        holder_index_invalidate(c, req->keys[i].data, req->keys[i].len);
    msg_free(&req->base);
}

static void *session_main(void *arg)
{
    fx_client *c = arg;
    for (;;) {
        frame_hdr h;
        uint8_t *body;
        if (client_read_frame(c->session_fd, &h, &body, -1) != 0)
            break;
        handle_push(c, &h, body);
        free(body);
    }
    atomic_store(&c->dead, true);
    /* Holders were reclaimed by the owner with the session: nothing cached
     * here may be served any more. */
    holder_index_clear(c);
    return NULL;
}

fx_client *fx_connect(const char *socket_path, int *err)
{
    int e = 0;
    client_clear_error();
    if (socket_path && !*socket_path) {
        e = client_fail(FX_EINVAL, "the socket path is empty");
        goto fail_early;
    }
    if (!socket_path)
        socket_path = getenv("FLUXON_SOCKET");
    if (!socket_path || !*socket_path) {
        e = client_fail(FX_EINVAL, "no socket path given and FLUXON_SOCKET is not set");
        goto fail_early;
    }
    fx_client *c = calloc(1, sizeof *c);
    if (!c) {
        e = FX_ENOMEM;
        goto fail_early;
    }
    if (strlen(socket_path) >= sizeof c->path) {
        free(c);
        e = client_fail(FX_EINVAL, "socket path too long: %s", socket_path);
        goto fail_early;
    }
    strcpy(c->path, socket_path);
    const char *t = getenv("FLUXON_TIMEOUT_MS");
    c->timeout_ms = t && atoi(t) > 0 ? atoi(t) : DEFAULT_TIMEOUT_MS;
    pthread_mutex_init(&c->pool_lock, NULL);
    pthread_mutex_init(&c->index_lock, NULL);
    c->session_fd = -1;

    Fx__ExternalHelloResp *hello = NULL;
    int seg_fd = -1;
    e = client_open(c, 0, &c->session_fd, &hello, &seg_fd, NULL);
    if (e)
        goto fail;
    c->client_id = hello->client_id;
    c->seg_size = hello->segment_size;
    msg_free(&hello->base);
    void *base = mmap(NULL, c->seg_size, PROT_READ | PROT_WRITE, MAP_SHARED, seg_fd, 0);
    int map_errno = errno;
    close(seg_fd);
    if (base == MAP_FAILED) {
        e = client_fail(FX_ENOMEM, "cannot map the owner's %llu-byte segment: %s",
                        (unsigned long long)c->seg_size, strerror(map_errno));
        goto fail;
    }
    c->base = base;
    holder_near_init(c);
    if (pthread_create(&c->session_thread, NULL, session_main, c) != 0) {
        e = client_fail(FX_ENOMEM, "cannot start the session thread");
        goto fail;
    }

    if (err)
        *err = 0;
    return c;
fail:
    if (c->base)
        munmap(c->base, c->seg_size);
    if (c->session_fd >= 0)
        close(c->session_fd);
    pthread_mutex_destroy(&c->pool_lock);
    pthread_mutex_destroy(&c->index_lock);
    free(c);
fail_early:
    if (err)
        *err = e;
    return NULL;
}

void fx_close(fx_client *c)
{
    if (!c)
        return;
    shutdown(c->session_fd, SHUT_RDWR);
    pthread_join(c->session_thread, NULL);
    close(c->session_fd);
    holder_free_all(c);
    client_puts_drop_all(c);
    xconn *x = c->idle;
    while (x) {
        xconn *next = x->next;
        client_conn_close(x);
        x = next;
    }
    munmap(c->base, c->seg_size);
    pthread_mutex_destroy(&c->pool_lock);
    pthread_mutex_destroy(&c->index_lock);
    free(c);
}
