/*
 * otree.h -- an ordered set of (key, slot) pairs: a treap whose nodes are
 * preallocated and addressed by slot, so that a buffer index is its own node.
 * Keys are unique per slot; ties between equal keys are broken by slot.
 * Private to the planner.
 */
#ifndef MPLAN_OTREE_H
#define MPLAN_OTREE_H

#include "mplan/base.h"

#define OTREE_NIL UINT32_MAX

typedef struct otree_node {
  uint64_t key;
  uint64_t prio;
  uint32_t left, right;
} otree_node;

typedef struct otree {
  const mp_alloc *alloc;
  otree_node *nodes; /* one per slot */
  size_t n_slots;
  uint32_t root;
  size_t size;
} otree;

/* Prepares an empty set able to hold slots [0, n_slots). */
mp_status otree_init(otree *t, const mp_alloc *a, size_t n_slots,
                     mp_error *err);
void otree_release(otree *t);

/* Inserts slot with key (slot must not be in the set). */
void otree_insert(otree *t, uint32_t slot, uint64_t key);

/* Removes slot (which must be in the set). */
void otree_erase(otree *t, uint32_t slot);

/* The slot ordered just before / after (key, slot), or OTREE_NIL. */
uint32_t otree_prev(const otree *t, uint64_t key, uint32_t slot);
uint32_t otree_next(const otree *t, uint64_t key, uint32_t slot);

#endif /* MPLAN_OTREE_H */
