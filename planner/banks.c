/*
 * banks.c -- keeping the inputs of one op out of each other's bank.
 *
 * A banked SRAM serves one access per bank per cycle: two streams that
 * start in the same bank collide on every line (seed 001 section 3). For
 * every access group (the inputs of one op) the planner looks for pairs
 * that start in one bank, and moves one of them -- an activation, never a
 * pinned or resident buffer -- to an offset in another bank, when the
 * bytes there are free for its whole lifetime and the move neither grows
 * the region nor creates a conflict elsewhere. What it cannot fix it
 * reports.
 *
 * Invariants:
 *   1. bank(a) = (a / width) % count for an offset a within its region.
 *   2. A move keeps the buffer inside its region -- below its capacity, or
 *      below its used size when it is unbounded --, aligned, and
 *      clear of every buffer of the region whose interval meets its own:
 *      the placement stays valid (the validator re-proves it anyway).
 *   3. Candidate offsets are tried nearest first (+w, -w, +2w, -2w, ...),
 *      so the result is deterministic.
 */
#include <stdio.h>
#include <string.h>

#include "plan_impl.h"

static uint32_t bank_of(const mp_bank_desc *bk, size_t offset) {
  return (uint32_t)((offset / bk->width) % bk->count);
}

/* Only pairs the planner could fix count: at least one activation (the
 * resident tiers are stacked once and never moved). */
static bool bank_pair_conflicts(const mp_plan *plan, const mp_bank_desc *bk,
                                size_t a, size_t b) {
  const mp_problem *p = plan->problem;
  if (mp_problem_buffer(p, a)->cls != MP_CLASS_ACTIVATION &&
      mp_problem_buffer(p, b)->cls != MP_CLASS_ACTIVATION) {
    return false;
  }
  return plan->pl[a].region == plan->pl[b].region &&
         bank_of(bk, plan->pl[a].offset) == bank_of(bk, plan->pl[b].offset);
}

/* Does buffer i, placed at x, collide in bytes with a time-overlapping
 * buffer of its region, or with a group partner's bank? */
static bool bank_blocked(const mp_plan *plan, const mp_bank_desc *bk, size_t i,
                         size_t x) {
  const mp_problem *p = plan->problem;
  const mp_buffer *b = mp_problem_buffer(p, i);
  uint32_t r = plan->pl[i].region;
  const mp_plan_region *reg = &plan->regions[r];
  size_t room = reg->capacity ? reg->capacity : reg->used_bytes;
  if (x % b->alignment || x + b->padded > room) return true;
  for (size_t j = 0; j < mp_problem_count(p); j++) {
    const mp_buffer *o = mp_problem_buffer(p, j);
    if (j == i || plan->pl[j].region != r) continue;
    if (o->first > b->last || b->first > o->last) continue;
    if (x < plan->pl[j].offset + o->padded &&
        plan->pl[j].offset < x + b->padded)
      return true;
  }
  for (size_t g = 0; g < mp_problem_group_count(p); g++) {
    const size_t *idx;
    size_t n;
    mp_problem_group(p, g, &idx, &n);
    bool member = false;
    for (size_t k = 0; k < n && !member; k++) member = idx[k] == i;
    for (size_t k = 0; member && k < n; k++) {
      if (idx[k] != i && plan->pl[idx[k]].region == r &&
          bank_of(bk, plan->pl[idx[k]].offset) == bank_of(bk, x)) {
        return true;
      }
    }
  }
  return false;
}

/* Tries to move i to another bank (invariant 3). */
static bool bank_move(mp_plan *plan, const mp_bank_desc *bk, size_t i) {
  const mp_buffer *b = mp_problem_buffer(plan->problem, i);
  if (b->pinned || b->cls != MP_CLASS_ACTIVATION) return false;
  size_t at = plan->pl[i].offset;
  for (uint32_t k = 1; k < bk->count; k++) {
    size_t d = (size_t)k * bk->width;
    if (at + d > at && !bank_blocked(plan, bk, i, at + d)) {
      plan->pl[i].offset = at + d;
      return true;
    }
    if (d <= at && !bank_blocked(plan, bk, i, at - d)) {
      plan->pl[i].offset = at - d;
      return true;
    }
  }
  return false;
}

static mp_status bank_collect(mp_plan *plan, const mp_bank_desc *bk,
                              mp_error *err) {
  const mp_problem *p = plan->problem;
  size_t cap = 0;
  plan->n_conflicts = 0;
  for (size_t g = 0; g < mp_problem_group_count(p); g++) {
    const size_t *idx;
    size_t n;
    mp_problem_group(p, g, &idx, &n);
    for (size_t a = 0; a < n; a++) {
      for (size_t c = a + 1; c < n; c++) {
        if (!bank_pair_conflicts(plan, bk, idx[a], idx[c])) continue;
        void *v = plan->conflicts;
        mp_status st = mp_grow(plan->alloc, &v, &cap, plan->n_conflicts + 1,
                               sizeof *plan->conflicts, "plan", err);
        if (st != MP_OK) return st;
        plan->conflicts = v;
        plan->conflicts[plan->n_conflicts++] = (mp_bank_conflict){
            g, idx[a], idx[c], bank_of(bk, plan->pl[idx[a]].offset)};
      }
    }
  }
  return MP_OK;
}

mp_status plan_banks(mp_plan *plan, const mp_bank_desc *bk, mp_error *err) {
  if (!bk || bk->count <= 1 || bk->width == 0) return MP_OK;
  mp_status st = bank_collect(plan, bk, err);
  if (st != MP_OK) return st;
  plan->conflicts_before = plan->n_conflicts;
  size_t moved = 0;
  for (size_t k = 0; k < plan->n_conflicts; k++) {
    const mp_bank_conflict *c = &plan->conflicts[k];
    if (!bank_pair_conflicts(plan, bk, c->a, c->b)) continue; /* fixed */
    /* Move the smaller of the two: it is likelier to find room. */
    const mp_buffer *x = mp_problem_buffer(plan->problem, c->a);
    const mp_buffer *y = mp_problem_buffer(plan->problem, c->b);
    size_t first = y->padded < x->padded ? c->b : c->a;
    size_t second = first == c->a ? c->b : c->a;
    if (bank_move(plan, bk, first) || bank_move(plan, bk, second)) moved++;
  }
  /* A move may use room a bounded region had left: account for it. */
  for (size_t i = 0; i < mp_problem_count(plan->problem); i++) {
    mp_plan_region *reg = &plan->regions[plan->pl[i].region];
    size_t end =
        plan->pl[i].offset + mp_problem_buffer(plan->problem, i)->padded;
    if (end > reg->used_bytes) {
      reg->used_bytes = end;
      reg->activation_bytes = end - reg->fixed_bytes;
    }
  }
  st = bank_collect(plan, bk, err);
  if (st == MP_OK && plan->conflicts_before) {
    char note[128];
    snprintf(note, sizeof note,
             "banks: %zu conflicts, %zu buffers moved, %zu remain",
             plan->conflicts_before, moved, plan->n_conflicts);
    plan_note(plan, note);
  }
  return st;
}
