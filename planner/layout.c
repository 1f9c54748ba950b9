/*
 * layout.c -- regions, tiers and spilling.
 *
 * Every region has its own address space from 0. In each region the
 * resident tier comes first, then the retained tier, then the activations
 * (seed 000 section 6, seed 002 section 2.4). Resident and retained
 * buffers are stacked; activations are packed by the chosen strategy.
 * Regions are tried fastest first: a class's buffers go to the first
 * region that may hold the class, and what does not fit spills to the
 * next one.
 *
 * Invariants:
 *   1. A tier starts at the end of the previous one rounded up to the
 *      largest alignment in the tier, so tier-relative offsets that a
 *      strategy aligns stay aligned once shifted.
 *   2. Pins are absolute offsets in the first region that holds the
 *      buffer's class; a strategy sees them relative to its tier base.
 *   3. Spilling removes whole buffers, never pinned ones: first the
 *      largest buffer at the step whose live bytes alone exceed the room,
 *      then, while the packing still does not fit, the buffer that sticks
 *      out highest. Both choices are deterministic (ties by index).
 *   4. A region never receives more than its capacity from here; the
 *      validator checks it independently afterwards.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mplan/units.h"
#include "plan_impl.h"

typedef struct lay_list {
  uint32_t *v;
  size_t n;
} lay_list;

static bool lay_holds(const mp_plan *plan, size_t r, mp_class cls) {
  return (plan->region_classes[r] >> cls) & 1u;
}

static size_t lay_max_align(const mp_plan *plan, const lay_list *l) {
  size_t a = 1;
  for (size_t k = 0; k < l->n; k++) {
    const mp_buffer *b = mp_problem_buffer(plan->problem, l->v[k]);
    if (b->alignment > a) a = b->alignment;
  }
  return a;
}

static mp_status lay_overflow(mp_error *err) {
  return mp_error_set(err, MP_ERR_BAD_INPUT,
                      "the arena would exceed the addressable memory");
}

/* Runs strategy s on the buffers of l placed from base (tier-relative
 * offsets into rel[], one per list entry); *extent gets the tier size. */
static mp_status lay_run(mp_plan *plan, const mp_strategy *s, const lay_list *l,
                         size_t base, double budget_ms, size_t *rel,
                         size_t *extent, mp_error *err) {
  mp_sbuf *sb = mp_calloc(plan->alloc, l->n + 1, sizeof *sb);
  if (!sb) return mp_error_set(err, MP_ERR_NOMEM, "plan: out of memory");
  mp_status st = MP_OK;
  for (size_t k = 0; k < l->n; k++) {
    const mp_buffer *b = mp_problem_buffer(plan->problem, l->v[k]);
    if (b->pinned && b->pin < base) {
      st = mp_error_set(err, MP_ERR_BAD_INPUT,
                        "'%s' is pinned at offset %zu, below the start of "
                        "the %s tier at %zu",
                        b->name, b->pin, mp_class_name(b->cls), base);
      break;
    }
    sb[k] = (mp_sbuf){b->padded,
                      b->alignment,
                      b->first,
                      b->last,
                      l->v[k],
                      b->pinned,
                      b->pinned ? b->pin - base : 0};
  }
  mp_strategy_ctx ctx = {
      plan->alloc,   sb,        l->n,
      rel,           budget_ms, budget_ms >= 0 ? plan->budget_work : 0,
      plan->threads, "",        0};
  if (st == MP_OK) st = s->solve(&ctx, err);
  if (st == MP_OK && s != &mp_strategy_linear) st = strategy_guard(&ctx, err);
  if (st == MP_OK && s != &mp_strategy_linear && budget_ms >= 0) {
    /* The detail of the activation strategy is the plan's. */
    if (ctx.detail[0]) plan_note(plan, ctx.detail);
    if (ctx.proven_lb > plan->summary.proven_lb_bytes) {
      plan->summary.proven_lb_bytes = ctx.proven_lb;
    }
  }
  *extent = 0;
  for (size_t k = 0; st == MP_OK && k < l->n; k++) {
    if (rel[k] + sb[k].size > *extent) *extent = rel[k] + sb[k].size;
  }
  mp_free(plan->alloc, sb);
  return st;
}

/* Writes tier-relative offsets rel[] of l into the plan at base, region r;
 * *end is raised to the end of the highest. */
static mp_status lay_commit(mp_plan *plan, const lay_list *l, const size_t *rel,
                            size_t base, uint32_t r, size_t *end,
                            mp_error *err) {
  for (size_t k = 0; k < l->n; k++) {
    mp_placement *pl = &plan->pl[l->v[k]];
    size_t top;
    if (!mp_size_add(base, rel[k], &pl->offset) ||
        !mp_size_add(pl->offset,
                     mp_problem_buffer(plan->problem, l->v[k])->padded, &top)) {
      return lay_overflow(err);
    }
    pl->region = r;
    const mp_buffer *b = mp_problem_buffer(plan->problem, l->v[k]);
    size_t cap = plan->regions[r].capacity;
    if (b->pinned && cap && top > cap) {
      return mp_error_set(err, MP_ERR_BAD_INPUT,
                          "'%s' is pinned at offset %zu, beyond the %zu B of "
                          "region '%s'",
                          b->name, b->pin, cap, plan->regions[r].name);
    }
    if (top > *end) *end = top;
  }
  return MP_OK;
}

static mp_status lay_lists(mp_plan *plan, mp_class cls, lay_list *all,
                           lay_list *a, lay_list *b, mp_error *err) {
  size_t n = mp_problem_count(plan->problem);
  all->v = mp_calloc(plan->alloc, n + 1, sizeof *all->v);
  a->v = mp_calloc(plan->alloc, n + 1, sizeof *a->v);
  b->v = mp_calloc(plan->alloc, n + 1, sizeof *b->v);
  all->n = a->n = b->n = 0;
  if (!all->v || !a->v || !b->v) {
    return mp_error_set(err, MP_ERR_NOMEM, "plan: out of memory");
  }
  for (size_t i = 0; i < n; i++) {
    if (mp_problem_buffer(plan->problem, i)->cls == cls) {
      all->v[all->n++] = (uint32_t)i;
    }
  }
  return MP_OK;
}

static void lay_free(mp_plan *plan, lay_list *l) {
  mp_free(plan->alloc, l->v);
  l->v = NULL;
}

/* ---- error reports -------------------------------------------------------
 * "does not fit": the region, the shortfall and the buffers live at the
 * step where the most bytes are live. */

typedef struct lay_event {
  int64_t t;
  int64_t delta; /* +1 / -1 */
  size_t bytes;
} lay_event;

static int lay_event_cmp(const void *a, const void *b) {
  const lay_event *x = a, *y = b;
  if (x->t != y->t) return x->t < y->t ? -1 : 1;
  return (x->delta > y->delta) - (x->delta < y->delta); /* frees first */
}

/* The largest live bytes of l at one time, and the first time it occurs. */
static mp_status lay_peak(const mp_plan *plan, const lay_list *l, size_t *peak,
                          int64_t *when, mp_error *err) {
  lay_event *ev = mp_calloc(plan->alloc, 2 * l->n + 1, sizeof *ev);
  if (!ev) return mp_error_set(err, MP_ERR_NOMEM, "plan: out of memory");
  size_t m = 0, live = 0;
  for (size_t k = 0; k < l->n; k++) {
    const mp_buffer *b = mp_problem_buffer(plan->problem, l->v[k]);
    ev[m++] = (lay_event){b->first, 1, b->padded};
    ev[m++] = (lay_event){b->last + 1, -1, b->padded};
  }
  qsort(ev, m, sizeof *ev, lay_event_cmp);
  *peak = 0;
  *when = 0;
  for (size_t e = 0; e < m; e++) {
    live = ev[e].delta > 0 ? live + ev[e].bytes : live - ev[e].bytes;
    if (live > *peak) {
      *peak = live;
      *when = ev[e].t;
    }
  }
  mp_free(plan->alloc, ev);
  return MP_OK;
}

static mp_status lay_no_fit(mp_plan *plan, size_t r, const char *what,
                            const lay_list *l, size_t shortfall,
                            mp_error *err) {
  size_t peak;
  int64_t when;
  mp_status st = lay_peak(plan, l, &peak, &when, err);
  if (st != MP_OK) return st;
  char names[600] = "";
  size_t len = 0, shown = 0, more = 0;
  for (size_t k = 0; k < l->n; k++) {
    const mp_buffer *b = mp_problem_buffer(plan->problem, l->v[k]);
    if (b->first > when || b->last < when) continue;
    if (shown == 6 || len > sizeof names - 120) {
      more++;
      continue;
    }
    char sz[MP_FMT_MAX];
    len += (size_t)snprintf(names + len, sizeof names - len, "%s'%s' %s B",
                            shown ? ", " : "", b->name,
                            mp_fmt_count(sz, b->padded));
    shown++;
  }
  if (more) snprintf(names + len, sizeof names - len, ", +%zu more", more);
  const mp_plan_region *reg = &plan->regions[r];
  char cap[MP_FMT_MAX], shr[MP_FMT_MAX];
  return mp_error_set(err, MP_ERR_NO_FIT,
                      "does not fit: region '%s' (capacity %s B) is short "
                      "by %s B for the %s; live at step %lld: %s",
                      reg->name, mp_fmt_count(cap, reg->capacity),
                      mp_fmt_count(shr, shortfall), what, (long long)when,
                      names);
}

/* ---- fixed tiers --------------------------------------------------------- */

/* Stacks the buffers of cls into the regions that hold cls, in order,
 * moving on when a region is full. */
static mp_status lay_fixed(mp_plan *plan, mp_class cls, size_t *end,
                           mp_error *err) {
  lay_list pending, take, rest;
  size_t *rel = NULL;
  mp_status st = lay_lists(plan, cls, &pending, &take, &rest, err);
  if (st == MP_OK) {
    rel = mp_calloc(plan->alloc, pending.n + 1, sizeof *rel);
    if (!rel) st = mp_error_set(err, MP_ERR_NOMEM, "plan: out of memory");
  }
  bool first = true;
  size_t last = 0;
  for (size_t r = 0; st == MP_OK && pending.n && r < plan->n_regions; r++) {
    if (!lay_holds(plan, r, cls)) continue;
    size_t cap = plan->regions[r].capacity, base, cursor, ext;
    take.n = rest.n = 0;
    last = r;
    if (!mp_align_up(end[r], lay_max_align(plan, &pending), &base)) {
      st = lay_overflow(err);
      break;
    }
    cursor = base;
    for (size_t k = 0; k < pending.n; k++) {
      const mp_buffer *b = mp_problem_buffer(plan->problem, pending.v[k]);
      size_t x, top;
      bool fits = mp_align_up(cursor, b->alignment, &x) &&
                  mp_size_add(x, b->padded, &top) && (!cap || top <= cap);
      if ((b->pinned && first) || (!b->pinned && fits)) {
        take.v[take.n++] = pending.v[k];
        if (!b->pinned) cursor = top;
      } else {
        rest.v[rest.n++] = pending.v[k];
      }
    }
    first = false;
    st = lay_run(plan, &mp_strategy_linear, &take, base, -1, rel, &ext, err);
    if (st == MP_OK)
      st = lay_commit(plan, &take, rel, base, (uint32_t)r, &end[r], err);
    memcpy(pending.v, rest.v, rest.n * sizeof *rest.v);
    pending.n = rest.n;
  }
  if (st == MP_OK && pending.n) {
    size_t need = 0;
    for (size_t k = 0; k < pending.n; k++) {
      need += mp_problem_buffer(plan->problem, pending.v[k])->padded;
    }
    st = first ? mp_error_set(
                     err, MP_ERR_NO_FIT,
                     "does not fit: no region of the backend may "
                     "hold %s buffers ('%s' is one)",
                     mp_class_name(cls),
                     mp_problem_buffer(plan->problem, pending.v[0])->name)
               : lay_no_fit(plan, last,
                            cls == MP_CLASS_RESIDENT ? "resident tier"
                                                     : "retained tier",
                            &pending, need, err);
  }
  mp_free(plan->alloc, rel);
  lay_free(plan, &rest);
  lay_free(plan, &take);
  lay_free(plan, &pending);
  return st;
}

/* ---- activations --------------------------------------------------------- */

/* Moves l->v[k] to the spill list. */
static void lay_spill_one(lay_list *l, size_t k, lay_list *spilled) {
  spilled->v[spilled->n++] = l->v[k];
  l->v[k] = l->v[--l->n];
}

/* Greedy spilling can leave room behind: offer the spilled buffers back,
 * smallest first (most likely to fit; at most LAY_REFILL tries), keeping
 * each that still lets the packing fit. */
#define LAY_REFILL 64

static mp_status lay_refill(mp_plan *plan, lay_list *set, lay_list *spilled,
                            size_t avail, size_t *rel, mp_error *err) {
  /* spilled->v[0..m) are still to offer, [m, n) were offered and refused. */
  size_t m = spilled->n;
  mp_status st = MP_OK;
  for (size_t tries = 0; st == MP_OK && m && tries < LAY_REFILL; tries++) {
    size_t pick = SIZE_MAX, ext;
    for (size_t k = 0; k < m; k++) {
      const mp_buffer *b = mp_problem_buffer(plan->problem, spilled->v[k]);
      const mp_buffer *p =
          pick == SIZE_MAX ? NULL
                           : mp_problem_buffer(plan->problem, spilled->v[pick]);
      if (b->padded <= avail && (!p || b->padded < p->padded)) pick = k;
    }
    if (pick == SIZE_MAX) break;
    uint32_t id = spilled->v[pick];
    spilled->v[pick] = spilled->v[m - 1];
    set->v[set->n++] = id;
    st = lay_run(plan, &mp_strategy_best_fit_size, set, 0, -1, rel, &ext, err);
    if (st == MP_OK && ext > avail) {
      set->n--;
      spilled->v[--m] = id; /* refused: joins the tail, never offered again */
    } else {
      spilled->v[--m] = spilled->v[--spilled->n]; /* taken back */
    }
  }
  return st;
}

/* Invariant 3: chooses what to take out of `set` until it fits `avail`. */
static mp_status lay_spill(mp_plan *plan, lay_list *set, lay_list *spilled,
                           size_t avail, size_t *rel, mp_error *err) {
  mp_status st = MP_OK;
  while (st == MP_OK && set->n) {
    size_t peak, ext, victim = SIZE_MAX;
    int64_t when;
    st = lay_peak(plan, set, &peak, &when, err);
    if (st != MP_OK) break;
    for (size_t k = 0; peak > avail && k < set->n; k++) {
      const mp_buffer *b = mp_problem_buffer(plan->problem, set->v[k]);
      if (b->pinned || b->first > when || b->last < when) continue;
      const mp_buffer *v =
          victim == SIZE_MAX ? NULL
                             : mp_problem_buffer(plan->problem, set->v[victim]);
      if (!v || b->padded > v->padded ||
          (b->padded == v->padded && set->v[k] < set->v[victim])) {
        victim = k;
      }
    }
    if (peak <= avail) {
      /* Live bytes fit; does the packing? */
      st =
          lay_run(plan, &mp_strategy_best_fit_size, set, 0, -1, rel, &ext, err);
      if (st != MP_OK || ext <= avail) break;
      size_t best_top = 0;
      for (size_t k = 0; k < set->n; k++) {
        const mp_buffer *b = mp_problem_buffer(plan->problem, set->v[k]);
        if (!b->pinned && rel[k] + b->padded > best_top) {
          best_top = rel[k] + b->padded;
          victim = k;
        }
      }
    }
    if (victim == SIZE_MAX) break; /* only pins left to blame */
    lay_spill_one(set, victim, spilled);
  }
  if (st == MP_OK) st = lay_refill(plan, set, spilled, avail, rel, err);
  return st;
}

/* Packs `set` into region r above base; if the chosen strategy does worse
 * than the room allows, the best-fit packing the spill test found is
 * kept instead. */
static mp_status lay_pack(mp_plan *plan, const mp_strategy *s,
                          const lay_list *set, size_t r, size_t base,
                          size_t avail, double budget_ms, size_t *rel,
                          size_t *end, mp_error *err) {
  size_t ext;
  mp_status st = lay_run(plan, s, set, base, budget_ms, rel, &ext, err);
  if (st == MP_OK && ext > avail) {
    st = lay_run(plan, &mp_strategy_best_fit_size, set, base, -1, rel, &ext,
                 err);
    char note[160];
    snprintf(note, sizeof note,
             "%s did not fit region '%s'; best-fit-size's packing was kept",
             s->name, plan->regions[r].name);
    plan_note(plan, note);
    /* Only pinned buffers were left to take out, and they do not fit. */
    if (st == MP_OK && ext > avail) {
      return lay_no_fit(plan, r, "activations", set, ext - avail, err);
    }
  }
  if (st == MP_OK) st = lay_commit(plan, set, rel, base, (uint32_t)r, end, err);
  return st;
}

static mp_status lay_activations(mp_plan *plan, const mp_strategy *s,
                                 double budget_ms, size_t *end, mp_error *err) {
  lay_list pending, set, spilled;
  size_t *rel = NULL;
  mp_status st =
      lay_lists(plan, MP_CLASS_ACTIVATION, &pending, &set, &spilled, err);
  if (st == MP_OK) {
    rel = mp_calloc(plan->alloc, pending.n + 1, sizeof *rel);
    if (!rel) st = mp_error_set(err, MP_ERR_NOMEM, "plan: out of memory");
  }
  size_t last = SIZE_MAX, last_base = 0, regions_used = 0;
  for (size_t r = 0; st == MP_OK && pending.n && r < plan->n_regions; r++) {
    if (!lay_holds(plan, r, MP_CLASS_ACTIVATION)) continue;
    size_t cap = plan->regions[r].capacity, base, avail;
    if (!mp_align_up(end[r], lay_max_align(plan, &pending), &base)) {
      st = lay_overflow(err);
      break;
    }
    avail = !cap ? SIZE_MAX : base < cap ? cap - base : 0;
    memcpy(set.v, pending.v, pending.n * sizeof *set.v);
    set.n = pending.n;
    spilled.n = 0;
    last = r;
    last_base = base;
    if (avail != SIZE_MAX)
      st = lay_spill(plan, &set, &spilled, avail, rel, err);
    if (st == MP_OK && set.n) {
      st =
          lay_pack(plan, s, &set, r, base, avail, budget_ms, rel, &end[r], err);
      if (regions_used++) plan->regions[r].spilled_in = set.n;
    }
    memcpy(pending.v, spilled.v, spilled.n * sizeof *spilled.v);
    pending.n = spilled.n;
  }
  if (st == MP_OK && pending.n && last == SIZE_MAX) {
    st = mp_error_set(err, MP_ERR_NO_FIT,
                      "does not fit: no region of the backend may hold "
                      "activations ('%s' is one)",
                      mp_problem_buffer(plan->problem, pending.v[0])->name);
  } else if (st == MP_OK && pending.n) {
    /* What the last region would need to hold everything it was offered. */
    size_t ext, cap = plan->regions[last].capacity;
    memcpy(set.v + set.n, pending.v, pending.n * sizeof *set.v);
    set.n += pending.n;
    st = lay_run(plan, &mp_strategy_best_fit_size, &set, last_base, -1, rel,
                 &ext, err);
    if (st == MP_OK) {
      size_t need = last_base + ext > cap ? last_base + ext - cap : 1;
      st = lay_no_fit(plan, last, "activations", &set, need, err);
    }
  }
  mp_free(plan->alloc, rel);
  lay_free(plan, &spilled);
  lay_free(plan, &set);
  lay_free(plan, &pending);
  return st;
}

mp_status plan_layout(mp_plan *plan, const mp_strategy *s, double budget_ms,
                      mp_error *err) {
  size_t *end = mp_calloc(plan->alloc, plan->n_regions, sizeof *end);
  if (!end) return mp_error_set(err, MP_ERR_NOMEM, "plan: out of memory");
  mp_status st = lay_fixed(plan, MP_CLASS_RESIDENT, end, err);
  if (st == MP_OK) st = lay_fixed(plan, MP_CLASS_RETAINED, end, err);
  for (size_t r = 0; r < plan->n_regions; r++) {
    plan->regions[r].fixed_bytes = end[r];
  }
  if (st == MP_OK) st = lay_activations(plan, s, budget_ms, end, err);
  for (size_t r = 0; r < plan->n_regions; r++) {
    plan->regions[r].used_bytes = end[r];
    plan->regions[r].activation_bytes = end[r] - plan->regions[r].fixed_bytes;
  }
  mp_free(plan->alloc, end);
  return st;
}
