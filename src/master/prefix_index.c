/*
 * prefix_index.c - the master's key prefix index (prefix_index.h): a
 * path-compressed radix tree over binary keys with a key count in every node.
 *
 * Each node hangs below its parent on an edge of one or more bytes stored in
 * the node itself; a node's children are a sorted array of pointers, ordered
 * by the first byte of their edges (distinct, so at most 256) and found by
 * binary search. Every node keeps the number of keys in its subtree (its own
 * included), so prefix_index_count() follows the prefix for at most plen bytes
 * and reads the count of the node it stops at, or of the node below the edge
 * the prefix ends inside.
 *
 * Shape invariants, restored by remove: every node except the root has a
 * count above zero and is a key or has two or more children (a keyless node
 * left with one child is merged into it). remove cannot report
 * an error, so its merge (a realloc) may fail quietly: then the keyless
 * single-child node stays, which is still a correct tree, merely one node
 * larger, and it goes once its subtree empties (or becomes a branch again
 * when a later add diverges there). Subtrees whose count drops to zero are cut
 * as a whole, so no empty node survives churn.
 *
 * add allocates every node and array it needs before it links anything, so an
 * -ENOMEM leaves the tree exactly as it was. Teardown is iterative (a worklist
 * threaded through the dead nodes), since a chain of one-byte edges over
 * 4096-byte keys is 4096 nodes deep.
 *
 * Besides the header's results, add returns -EINVAL for a NULL index or key
 * or a length outside 1..PI_KEY_MAX; remove and count treat such keys as
 * absent.
 *
 * Single-threaded: the master's loop thread owns the index.
 */
#include "master/prefix_index.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define PI_KEY_MAX 4096
#define PI_MAX_KIDS 256

typedef struct pi_node pi_node;
struct pi_node {
    union {
        uint64_t count;     /* keys in this subtree, this node's own included */
        pi_node *next_dead; /* teardown worklist link, once the node is unlinked */
    };
    pi_node **kids;       /* sorted by kids[i]->edge[0]; NULL while cap == 0 */
    uint16_t nkids, cap;  /* at most PI_MAX_KIDS: one per first byte */
    uint16_t elen;        /* edge length: 0 only for the root */
    uint8_t is_key;       /* the path from the root to here is a key */
    uint8_t edge[];       /* the bytes from the parent down to this node */
};

struct prefix_index {
    pi_node *root; /* edge of length 0; never cut or merged */
};

/* Test-only allocation failpoint: a unit test that defines this function
 * decides which allocations fail; in the daemon the weak reference is NULL. */
extern bool prefix_index_failpoint(void) __attribute__((weak));

static void *pi_malloc(size_t n)
{
    if (prefix_index_failpoint && prefix_index_failpoint())
        return NULL;
    return malloc(n);
}

static void *pi_realloc(void *p, size_t n)
{
    if (prefix_index_failpoint && prefix_index_failpoint())
        return NULL;
    return realloc(p, n);
}

/* Edge bytes start inside the struct's tail padding; never less than the
 * whole struct, so every member access stays inside the block. */
static size_t node_size(size_t elen)
{
    size_t n = offsetof(pi_node, edge) + elen;
    return n < sizeof(pi_node) ? sizeof(pi_node) : n;
}

/* A childless, keyless node with count 0 and the given edge, or NULL. */
static pi_node *node_new(const uint8_t *edge, size_t elen)
{
    pi_node *n = pi_malloc(node_size(elen));
    if (!n)
        return NULL;
    n->count = 0;
    n->kids = NULL;
    n->nkids = n->cap = 0;
    n->elen = (uint16_t)elen;
    n->is_key = 0;
    if (elen)
        memcpy(n->edge, edge, elen);
    return n;
}

/* Frees a subtree that is already unlinked from its parent, without
 * recursion: each dead node's children join a worklist linked through the
 * count field, which no one reads any more. */
static void subtree_free(pi_node *top)
{
    top->next_dead = NULL;
    pi_node *list = top;
    while (list) {
        pi_node *n = list;
        list = n->next_dead;
        for (size_t i = 0; i < n->nkids; i++) {
            n->kids[i]->next_dead = list;
            list = n->kids[i];
        }
        free(n->kids);
        free(n);
    }
}

/* Index of n's child whose edge starts with b, or -1; then *ins (if given)
 * is where such a child would be inserted. */
static int kid_index(const pi_node *n, uint8_t b, size_t *ins)
{
    size_t lo = 0, hi = n->nkids;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        uint8_t m = n->kids[mid]->edge[0];
        if (m == b)
            return (int)mid;
        if (m < b)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (ins)
        *ins = lo;
    return -1;
}

/* Makes room for one more child; on failure n is unchanged. */
static int kids_grow(pi_node *n)
{
    size_t cap = n->cap ? (size_t)n->cap * 2 : 2;
    if (cap > PI_MAX_KIDS)
        cap = PI_MAX_KIDS;
    pi_node **k = pi_realloc(n->kids, cap * sizeof *k);
    if (!k)
        return -ENOMEM;
    n->kids = k;
    n->cap = (uint16_t)cap;
    return 0;
}

/* Drops child i from n's array (the child itself is the caller's), and gives
 * back array space once it is mostly empty. */
static void kids_remove(pi_node *n, size_t i)
{
    memmove(&n->kids[i], &n->kids[i + 1], (n->nkids - i - 1) * sizeof *n->kids);
    n->nkids--;
    if (n->nkids == 0) {
        free(n->kids);
        n->kids = NULL;
        n->cap = 0;
    } else if (n->cap > 4 && n->nkids <= n->cap / 4) {
        pi_node **k = pi_realloc(n->kids, (n->cap / 2) * sizeof *k);
        if (k) { /* a failed shrink keeps the larger array */
            n->kids = k;
            n->cap /= 2;
        }
    }
}

static size_t common_len(const uint8_t *a, const uint8_t *b, size_t n)
{
    size_t i = 0;
    while (i < n && a[i] == b[i])
        i++;
    return i;
}

/* Adds a key leaf with edge rest[0..rlen) as n's child at slot ins. Counts
 * are the caller's; on failure n is unchanged. */
static int attach_leaf(pi_node *n, size_t ins, const uint8_t *rest, size_t rlen)
{
    pi_node *leaf = node_new(rest, rlen);
    if (!leaf)
        return -ENOMEM;
    if (n->nkids == n->cap && kids_grow(n) < 0) {
        free(leaf);
        return -ENOMEM;
    }
    leaf->is_key = 1;
    memmove(&n->kids[ins + 1], &n->kids[ins], (n->nkids - ins) * sizeof *n->kids);
    n->kids[ins] = leaf;
    n->nkids++;
    return 0;
}

/* Splits the edge of n's child i after its first m bytes (0 < m < elen),
 * where a new key diverges: the new middle node is that key when rlen == 0,
 * otherwise it also gets a key leaf with edge rest[0..rlen). Counts other than
 * the middle node's are the caller's; on failure nothing is changed. */
static int split_edge(pi_node *n, size_t i, size_t m, const uint8_t *rest, size_t rlen)
{
    pi_node *c = n->kids[i];
    pi_node *leaf = NULL;
    pi_node *mid = node_new(c->edge, m);
    if (!mid)
        goto fail;
    mid->cap = rlen ? 2 : 1;
    mid->kids = pi_malloc(mid->cap * sizeof *mid->kids);
    if (!mid->kids)
        goto fail;
    if (rlen) {
        leaf = node_new(rest, rlen);
        if (!leaf)
            goto fail;
        leaf->is_key = 1;
    }

    /* Nothing fails from here on. */
    memmove(c->edge, c->edge + m, c->elen - m);
    c->elen = (uint16_t)(c->elen - m);
    pi_node *shrunk = pi_realloc(c, node_size(c->elen));
    if (shrunk) /* a failed shrink keeps the larger block */
        c = shrunk;
    mid->count = c->count;
    mid->is_key = rlen == 0;
    if (!rlen) {
        mid->kids[0] = c;
    } else if (c->edge[0] < leaf->edge[0]) {
        mid->kids[0] = c;
        mid->kids[1] = leaf;
    } else {
        mid->kids[0] = leaf;
        mid->kids[1] = c;
    }
    mid->nkids = rlen ? 2 : 1;
    n->kids[i] = mid;
    return 0;

fail:
    if (mid)
        free(mid->kids);
    free(mid);
    return -ENOMEM;
}

/* Counts one more key in every node from the root down to key's node, which
 * must already be linked. */
static void count_path_inc(pi_node *root, const uint8_t *k, size_t klen)
{
    pi_node *n = root;
    size_t pos = 0;
    n->count++;
    while (pos < klen) {
        n = n->kids[kid_index(n, k[pos], NULL)];
        pos += n->elen;
        n->count++;
    }
}

/* The node key ends at exactly, or NULL. */
static pi_node *lookup(pi_node *root, const uint8_t *k, size_t klen)
{
    pi_node *n = root;
    size_t pos = 0;
    while (pos < klen) {
        int i = kid_index(n, k[pos], NULL);
        if (i < 0)
            return NULL;
        pi_node *c = n->kids[i];
        if (c->elen > klen - pos || memcmp(c->edge, k + pos, c->elen) != 0)
            return NULL;
        pos += c->elen;
        n = c;
    }
    return n;
}

/* Merges x into its only child when x is a keyless non-root node with one
 * child: the child's edge grows by x's in front and takes x's slot in
 * parent. When the realloc fails x simply stays (see the top comment). */
static void try_merge(pi_node *parent, pi_node *x)
{
    if (!parent || x->is_key || x->nkids != 1)
        return;
    pi_node *c = x->kids[0];
    size_t len = (size_t)x->elen + c->elen; /* <= PI_KEY_MAX: a key lies below */
    pi_node *mc = pi_realloc(c, node_size(len));
    if (!mc)
        return;
    memmove(mc->edge + x->elen, mc->edge, mc->elen);
    memcpy(mc->edge, x->edge, x->elen);
    mc->elen = (uint16_t)len;
    parent->kids[kid_index(parent, x->edge[0], NULL)] = mc;
    free(x->kids);
    free(x);
}

prefix_index *prefix_index_new(void)
{
    prefix_index *pi = malloc(sizeof *pi);
    if (!pi)
        return NULL;
    pi->root = node_new(NULL, 0);
    if (!pi->root) {
        free(pi);
        return NULL;
    }
    return pi;
}

void prefix_index_free(prefix_index *pi)
{
    if (!pi)
        return;
    subtree_free(pi->root);
    free(pi);
}

int prefix_index_add(prefix_index *pi, const void *key, size_t klen)
{
    if (!pi || !key || klen == 0 || klen > PI_KEY_MAX)
        return -EINVAL;
    const uint8_t *k = key;
    pi_node *n = pi->root;
    size_t pos = 0;
    int rc;

    while (pos < klen) {
        size_t ins = 0;
        int i = kid_index(n, k[pos], &ins);
        if (i < 0) {
            rc = attach_leaf(n, ins, k + pos, klen - pos);
            if (rc < 0)
                return rc;
            goto linked;
        }
        pi_node *c = n->kids[i];
        size_t want = c->elen < klen - pos ? c->elen : klen - pos;
        size_t m = common_len(c->edge, k + pos, want);
        if (m < c->elen) {
            rc = split_edge(n, (size_t)i, m, k + pos + m, klen - pos - m);
            if (rc < 0)
                return rc;
            goto linked;
        }
        pos += m;
        n = c;
    }
    if (n->is_key)
        return 0;
    n->is_key = 1;

linked:
    count_path_inc(pi->root, k, klen);
    return 1;
}

int prefix_index_remove(prefix_index *pi, const void *key, size_t klen)
{
    if (!pi || !key || klen == 0 || klen > PI_KEY_MAX)
        return 0;
    const uint8_t *k = key;
    pi_node *n = lookup(pi->root, k, klen);
    if (!n || !n->is_key)
        return 0;
    n->is_key = 0;

    /* Walk down again taking the key out of every count; the first node whose
     * count reaches zero holds no key any more and goes with its subtree. */
    pi_node *parent = NULL;
    size_t pos = 0;
    n = pi->root;
    n->count--;
    while (pos < klen) {
        int i = kid_index(n, k[pos], NULL);
        pi_node *c = n->kids[i];
        if (--c->count == 0) {
            kids_remove(n, (size_t)i);
            subtree_free(c);
            break;
        }
        pos += c->elen;
        parent = n;
        n = c;
    }
    /* n lost its key or a child: it may now be keyless with one child. */
    try_merge(parent, n);
    return 1;
}

uint64_t prefix_index_count(const prefix_index *pi, const void *prefix, size_t plen)
{
    if (!pi || (plen && !prefix))
        return 0;
    const uint8_t *p = prefix;
    const pi_node *n = pi->root;
    size_t pos = 0;
    while (pos < plen) {
        int i = kid_index(n, p[pos], NULL);
        if (i < 0)
            return 0;
        const pi_node *c = n->kids[i];
        /* The prefix may end inside c's edge: then every key below c matches. */
        size_t want = c->elen < plen - pos ? c->elen : plen - pos;
        if (memcmp(c->edge, p + pos, want) != 0)
            return 0;
        pos += want;
        n = c;
    }
    return n->count;
}

uint64_t prefix_index_size(const prefix_index *pi)
{
    return pi ? pi->root->count : 0;
}
