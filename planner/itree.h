/*
 * itree.h -- an interval tree: a treap keyed by (first, slot) whose nodes
 * also carry the largest `last` of their subtree, so that all stored
 * intervals intersecting [a, b] are found in O(log n + k). Nodes are
 * preallocated and addressed by slot (a buffer index is its own node).
 * Private to the planner.
 */
#ifndef MPLAN_ITREE_H
#define MPLAN_ITREE_H

#include "mplan/base.h"

#define ITREE_NIL UINT32_MAX

typedef struct itree_node {
  int64_t first, last, max_last;
  uint64_t prio;
  uint32_t left, right;
} itree_node;

typedef struct itree {
  const mp_alloc *alloc;
  itree_node *nodes;
  size_t n_slots;
  uint32_t root;
  size_t size;
} itree;

mp_status itree_init(itree *t, const mp_alloc *a, size_t n_slots,
                     mp_error *err);
void itree_release(itree *t);

/* Inserts slot with the inclusive interval [first, last]. */
void itree_insert(itree *t, uint32_t slot, int64_t first, int64_t last);

/* Calls visit(ctx, slot) for every stored interval intersecting [a, b], in
 * increasing (first, slot) order. */
void itree_query(const itree *t, int64_t a, int64_t b,
                 void (*visit)(void *ctx, uint32_t slot), void *ctx);

#endif /* MPLAN_ITREE_H */
