/*
 * otree.c -- treap keyed by (key, slot).
 *
 * Invariants:
 *   1. In-order traversal yields strictly increasing (key, slot) pairs.
 *   2. A parent's priority is >= its children's (max-heap), priorities are
 *      a fixed hash of the slot, so the shape -- and every result -- is
 *      deterministic for a given sequence of operations.
 *   3. Expected depth is O(log n); recursion depth follows it.
 */
#include "otree.h"

#include <assert.h>

static uint64_t otree_mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

static bool otree_less(const otree *t, uint64_t key, uint32_t slot,
                       uint32_t node) {
  const otree_node *n = &t->nodes[node];
  return key < n->key || (key == n->key && slot < node);
}

mp_status otree_init(otree *t, const mp_alloc *a, size_t n_slots,
                     mp_error *err) {
  t->alloc = a;
  t->n_slots = n_slots;
  t->root = OTREE_NIL;
  t->size = 0;
  t->nodes = NULL;
  if (n_slots >= OTREE_NIL) {
    return mp_error_set(err, MP_ERR_UNSUPPORTED,
                        "%zu buffers exceed the supported maximum", n_slots);
  }
  if (n_slots == 0) return MP_OK;
  t->nodes = mp_calloc(a, n_slots, sizeof *t->nodes);
  if (!t->nodes) return mp_error_set(err, MP_ERR_NOMEM, "out of memory");
  return MP_OK;
}

void otree_release(otree *t) {
  mp_free(t->alloc, t->nodes);
  t->nodes = NULL;
}

/* Splits the subtree at node into pairs < (key, slot) and >= it. */
static void otree_split(otree *t, uint32_t node, uint64_t key, uint32_t slot,
                        uint32_t *lo, uint32_t *hi) {
  if (node == OTREE_NIL) {
    *lo = *hi = OTREE_NIL;
    return;
  }
  otree_node *n = &t->nodes[node];
  if (otree_less(t, key, slot, node) || (key == n->key && slot == node)) {
    otree_split(t, n->left, key, slot, lo, &n->left);
    *hi = node;
  } else {
    otree_split(t, n->right, key, slot, &n->right, hi);
    *lo = node;
  }
}

static uint32_t otree_merge(otree *t, uint32_t a, uint32_t b) {
  if (a == OTREE_NIL) return b;
  if (b == OTREE_NIL) return a;
  if (t->nodes[a].prio >= t->nodes[b].prio) {
    t->nodes[a].right = otree_merge(t, t->nodes[a].right, b);
    return a;
  }
  t->nodes[b].left = otree_merge(t, a, t->nodes[b].left);
  return b;
}

static uint32_t otree_insert_at(otree *t, uint32_t node, uint32_t slot) {
  otree_node *s = &t->nodes[slot];
  if (node == OTREE_NIL) return slot;
  if (s->prio > t->nodes[node].prio) {
    otree_split(t, node, s->key, slot, &s->left, &s->right);
    return slot;
  }
  if (otree_less(t, s->key, slot, node)) {
    t->nodes[node].left = otree_insert_at(t, t->nodes[node].left, slot);
  } else {
    t->nodes[node].right = otree_insert_at(t, t->nodes[node].right, slot);
  }
  return node;
}

/* Invariants 1 and 2 over the subtree at node; counts its nodes. Keys of
 * the subtree must lie strictly between lo and hi (NIL: unbounded). */
MP_CHECKER static bool otree_check_at(const otree *t, uint32_t node,
                                      uint32_t lo, uint32_t hi, size_t *count) {
  if (node == OTREE_NIL) return true;
  const otree_node *n = &t->nodes[node];
  if (lo != OTREE_NIL && !otree_less(t, t->nodes[lo].key, lo, node)) {
    return false;
  }
  if (hi != OTREE_NIL && !otree_less(t, n->key, node, hi)) return false;
  if ((n->left != OTREE_NIL && t->nodes[n->left].prio > n->prio) ||
      (n->right != OTREE_NIL && t->nodes[n->right].prio > n->prio)) {
    return false;
  }
  ++*count;
  return otree_check_at(t, n->left, lo, node, count) &&
         otree_check_at(t, n->right, node, hi, count);
}

/* Whole-tree check for assert(); skipped on large trees to keep debug
 * builds O(n log n) overall. */
MP_CHECKER static bool otree_check(const otree *t) {
  size_t count = 0;
  if (t->size > 64) return true;
  return otree_check_at(t, t->root, OTREE_NIL, OTREE_NIL, &count) &&
         count == t->size;
}

void otree_insert(otree *t, uint32_t slot, uint64_t key) {
  otree_node *s = &t->nodes[slot];
  s->key = key;
  s->prio = otree_mix(slot);
  s->left = s->right = OTREE_NIL;
  t->root = otree_insert_at(t, t->root, slot);
  t->size++;
  assert(otree_check(t));
}

static uint32_t otree_erase_at(otree *t, uint32_t node, uint32_t slot) {
  if (node == OTREE_NIL) return OTREE_NIL;
  otree_node *n = &t->nodes[node];
  if (node == slot) return otree_merge(t, n->left, n->right);
  if (otree_less(t, t->nodes[slot].key, slot, node)) {
    n->left = otree_erase_at(t, n->left, slot);
  } else {
    n->right = otree_erase_at(t, n->right, slot);
  }
  return node;
}

void otree_erase(otree *t, uint32_t slot) {
  t->root = otree_erase_at(t, t->root, slot);
  t->size--;
  assert(otree_check(t));
}

uint32_t otree_prev(const otree *t, uint64_t key, uint32_t slot) {
  uint32_t node = t->root, best = OTREE_NIL;
  while (node != OTREE_NIL) {
    if (otree_less(t, key, slot, node) || node == slot) {
      node = t->nodes[node].left;
    } else {
      best = node;
      node = t->nodes[node].right;
    }
  }
  return best;
}

uint32_t otree_next(const otree *t, uint64_t key, uint32_t slot) {
  uint32_t node = t->root, best = OTREE_NIL;
  while (node != OTREE_NIL) {
    if (otree_less(t, key, slot, node)) {
      best = node;
      node = t->nodes[node].left;
    } else {
      node = t->nodes[node].right;
    }
  }
  return best;
}
