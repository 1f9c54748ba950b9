/*
 * itree.c -- interval treap with subtree maxima.
 *
 * Invariants:
 *   1. In-order traversal yields increasing (first, slot).
 *   2. Heap order on prio, a fixed hash of the slot: deterministic shape.
 *   3. max_last of a node = max(last, max_last of both children); every
 *      rotation or split recomputes it bottom-up, so a query may skip any
 *      subtree whose max_last is below the query start.
 */
#include "itree.h"

#include <assert.h>

static uint64_t itree_mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

mp_status itree_init(itree *t, const mp_alloc *a, size_t n_slots,
                     mp_error *err) {
  t->alloc = a;
  t->n_slots = n_slots;
  t->root = ITREE_NIL;
  t->size = 0;
  t->nodes = NULL;
  if (n_slots >= ITREE_NIL) {
    return mp_error_set(err, MP_ERR_UNSUPPORTED,
                        "%zu buffers exceed the supported maximum", n_slots);
  }
  if (n_slots == 0) return MP_OK;
  t->nodes = mp_calloc(a, n_slots, sizeof *t->nodes);
  if (!t->nodes) return mp_error_set(err, MP_ERR_NOMEM, "out of memory");
  return MP_OK;
}

void itree_release(itree *t) {
  mp_free(t->alloc, t->nodes);
  t->nodes = NULL;
}

static bool itree_less(const itree *t, int64_t first, uint32_t slot,
                       uint32_t node) {
  const itree_node *n = &t->nodes[node];
  return first < n->first || (first == n->first && slot < node);
}

static void itree_fix(itree *t, uint32_t node) {
  itree_node *n = &t->nodes[node];
  n->max_last = n->last;
  if (n->left != ITREE_NIL && t->nodes[n->left].max_last > n->max_last) {
    n->max_last = t->nodes[n->left].max_last;
  }
  if (n->right != ITREE_NIL && t->nodes[n->right].max_last > n->max_last) {
    n->max_last = t->nodes[n->right].max_last;
  }
}

/* Splits at node into keys < (first, slot) and >= it. */
static void itree_split(itree *t, uint32_t node, int64_t first, uint32_t slot,
                        uint32_t *lo, uint32_t *hi) {
  if (node == ITREE_NIL) {
    *lo = *hi = ITREE_NIL;
    return;
  }
  itree_node *n = &t->nodes[node];
  if (itree_less(t, first, slot, node) || node == slot) {
    itree_split(t, n->left, first, slot, lo, &n->left);
    *hi = node;
  } else {
    itree_split(t, n->right, first, slot, &n->right, hi);
    *lo = node;
  }
  itree_fix(t, node);
}

static uint32_t itree_insert_at(itree *t, uint32_t node, uint32_t slot) {
  itree_node *s = &t->nodes[slot];
  if (node == ITREE_NIL) return slot;
  if (s->prio > t->nodes[node].prio) {
    itree_split(t, node, s->first, slot, &s->left, &s->right);
    itree_fix(t, slot);
    return slot;
  }
  if (itree_less(t, s->first, slot, node)) {
    t->nodes[node].left = itree_insert_at(t, t->nodes[node].left, slot);
  } else {
    t->nodes[node].right = itree_insert_at(t, t->nodes[node].right, slot);
  }
  itree_fix(t, node);
  return node;
}

void itree_insert(itree *t, uint32_t slot, int64_t first, int64_t last) {
  itree_node *s = &t->nodes[slot];
  assert(first <= last);
  s->first = first;
  s->last = last;
  s->max_last = last;
  s->prio = itree_mix(slot);
  s->left = s->right = ITREE_NIL;
  t->root = itree_insert_at(t, t->root, slot);
  t->size++;
}

static void itree_query_at(const itree *t, uint32_t node, int64_t a, int64_t b,
                           void (*visit)(void *, uint32_t), void *ctx) {
  while (node != ITREE_NIL) {
    const itree_node *n = &t->nodes[node];
    if (n->max_last < a) return; /* invariant 3 */
    itree_query_at(t, n->left, a, b, visit, ctx);
    if (n->first > b) return; /* the right subtree starts later still */
    if (n->last >= a) visit(ctx, node);
    node = n->right; /* tail call by hand */
  }
}

void itree_query(const itree *t, int64_t a, int64_t b,
                 void (*visit)(void *ctx, uint32_t slot), void *ctx) {
  itree_query_at(t, t->root, a, b, visit, ctx);
}
