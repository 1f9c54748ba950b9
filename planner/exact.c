/*
 * exact.c -- branch and bound over canonical placements (see exact.h).
 *
 * State during search, for the capacity C being decided:
 *   off[b]      the offset of a placed buffer, EX_NONE while unplaced;
 *   min_off[b]  for an unplaced buffer, the lowest aligned offset above
 *               every placed buffer it overlaps in time -- the only offset
 *               a canonical solution may give it next;
 *   floor[s]    for a time section s, the smallest min_off among its
 *               unplaced buffers (so at least the top of its placed ones);
 *   total[s]    the bytes of the unplaced buffers live in s;
 *   cuts[s]     unplaced buffers that span the boundary after section s.
 *
 * Invariants:
 *   1. Placements within one partition happen in non-decreasing
 *      (offset, preorder rank); every solution has such a canonical
 *      representative, so pruning others loses nothing.
 *   2. A node survives only if max(offset, floor[s]) + total[s] <= C for
 *      every section of its partition: the unplaced bytes of s must all
 *      sit above both.
 *   3. A candidate whose offset is at or above the top some other unplaced
 *      buffer could reach (min_off + size) is dominated: it would leave a
 *      gap that buffer fills in an equivalent, canonical solution.
 *   4. When placing b leaves a boundary with no unplaced buffer crossing
 *      it, the two sides are independent and are solved one after the
 *      other.
 *   5. Every change to min_off and floor is pushed on an undo stack and
 *      popped in reverse when the placement is taken back, so siblings
 *      see exactly the parent's state.
 */
#include "exact.h"

#include <stdlib.h>
#include <time.h>

#define EX_NONE SIZE_MAX

double mp_now_ms(void) {
  struct timespec ts;
  if (timespec_get(&ts, TIME_UTC) != TIME_UTC) return 0.0;
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

typedef struct ex_change {
  uint32_t idx;
  uint32_t old_count; /* floors only: the previous at_floor[idx] */
  size_t old;
} ex_change;

typedef struct ex_stack {
  ex_change *v;
  size_t n, cap;
} ex_stack;

typedef struct ex_cand {
  size_t off;
  uint32_t rank, b;
} ex_cand;

typedef struct ex_key {
  uint64_t k[3];
  uint32_t b;
} ex_key;

typedef struct ex_part {
  uint32_t *bufs;
  size_t n;
  uint32_t slo, shi; /* inclusive section range */
} ex_part;

#define EX_N_ORDERS 4

struct ex_problem {
  const mp_alloc *alloc;
  size_t n, n_sec;
  size_t *size, *align;
  uint32_t *slo, *shi;    /* per buffer, inclusive sections */
  uint32_t *ovl_at, *ovl; /* CSR: buffers overlapping in time */
  uint32_t *mem_at, *mem; /* CSR: buffers live in each section */
  /* The same lists kept with the unplaced members first: live_mem holds
   * section s's unplaced buffers at [mem_at[s], mem_at[s] + ucount[s]);
   * bpos[bpos_at[b] + s - slo[b]] is b's position there. */
  uint32_t *live_mem, *ucount, *bpos, *bpos_at, *removed;
  size_t n_removed;
  size_t *total0;               /* initial section totals */
  uint32_t *cuts0;              /* initial boundary cuts */
  uint32_t *ranks[EX_N_ORDERS]; /* preorder rank per buffer */
  uint64_t *width, *area;       /* preorder keys that never change */
  ex_key *keys;                 /* scratch for ex_rank */
  int order;                    /* the preorder of this round */
  ex_part *parts;               /* top-level partitions */
  size_t n_parts;
  /* search state */
  size_t cap;
  size_t *off, *min_off, *floor, *total, *out;
  uint32_t *cuts, *rank, *stamp, *affected, *at_floor;
  uint32_t stamp_now;
  ex_stack mins, floors;
  int64_t nodes_left;
  uint64_t nodes, max_nodes;
  uint64_t work, max_work; /* nodes weighted by partition size */
  double deadline;
  bool timed_out, oom, too_dense;
  bool inherit;            /* the next ex_search may start from parent_c */
  const ex_cand *parent_c; /* the calling node's sorted candidates */
  size_t parent_m;
};

/* ---- preparation --------------------------------------------------------- */

typedef struct ex_point {
  int64_t t;
  uint32_t left; /* 0: an end (sorts first at equal times), 1: a start */
  uint32_t b;
} ex_point;

static int ex_point_cmp(const void *pa, const void *pb) {
  const ex_point *x = pa, *y = pb;
  if (x->t != y->t) return x->t < y->t ? -1 : 1;
  if (x->left != y->left) return x->left < y->left ? -1 : 1;
  return (x->b > y->b) - (x->b < y->b);
}

/* Sections are cross-sections taken just before each end: a run of starts
 * adds to the live set, and the set is recorded only when something is
 * about to leave it. The skipped sets are subsets of the recorded one
 * after them, whose constraint is stronger, so nothing is lost and far
 * fewer sections are checked per node (MiniMalloc's sweep does the same).
 * Buffer b lives in sections [slo[b], shi[b]]. */
static bool ex_sections(ex_problem *ex, const mp_strategy_ctx *ctx) {
  size_t n = ex->n, m = 0, n_sec = 0;
  ex_point *pt = mp_calloc(ex->alloc, 2 * n + 1, sizeof *pt);
  if (!pt) return false;
  for (size_t i = 0; i < n; i++) {
    pt[m++] = (ex_point){ctx->bufs[i].first, 1, (uint32_t)i};
    pt[m++] = (ex_point){ctx->bufs[i].last + 1, 0, (uint32_t)i};
  }
  qsort(pt, m, sizeof *pt, ex_point_cmp);
  bool any = false;
  int64_t last = 0;
  for (size_t k = 0; k < m; k++) {
    if (pt[k].left) {
      ex->slo[pt[k].b] = (uint32_t)n_sec;
      continue;
    }
    if (!any || last < pt[k].t) { /* the live set before this end */
      any = true;
      last = pt[k].t;
      n_sec++;
    }
    ex->shi[pt[k].b] = (uint32_t)(n_sec - 1);
  }
  ex->n_sec = n_sec;
  mp_free(ex->alloc, pt);
  return true;
}

/* Section members, totals and cuts, in CSR form. */
static bool ex_members(ex_problem *ex) {
  size_t n = ex->n, ns = ex->n_sec, total = 0;
  ex->mem_at = mp_calloc(ex->alloc, ns + 1, sizeof *ex->mem_at);
  ex->total0 = mp_calloc(ex->alloc, ns + 1, sizeof *ex->total0);
  ex->cuts0 = mp_calloc(ex->alloc, ns + 1, sizeof *ex->cuts0);
  if (!ex->mem_at || !ex->total0 || !ex->cuts0) return false;
  for (size_t i = 0; i < n; i++) {
    total += ex->shi[i] - ex->slo[i] + 1;
    if (total > 40000000) {
      ex->too_dense = true;
      return false;
    }
    for (uint32_t s = ex->slo[i]; s <= ex->shi[i]; s++) {
      ex->mem_at[s + 1]++;
      ex->total0[s] += ex->size[i];
      if (s < ex->shi[i]) ex->cuts0[s]++;
    }
  }
  for (size_t s = 0; s < ns; s++) ex->mem_at[s + 1] += ex->mem_at[s];
  ex->mem = mp_calloc(ex->alloc, total + 1, sizeof *ex->mem);
  ex->live_mem = mp_calloc(ex->alloc, total + 1, sizeof *ex->live_mem);
  ex->bpos = mp_calloc(ex->alloc, total + 1, sizeof *ex->bpos);
  ex->removed = mp_calloc(ex->alloc, total + 1, sizeof *ex->removed);
  ex->ucount = mp_calloc(ex->alloc, ns + 1, sizeof *ex->ucount);
  ex->bpos_at = mp_calloc(ex->alloc, n + 1, sizeof *ex->bpos_at);
  if (!ex->live_mem || !ex->bpos || !ex->removed || !ex->ucount ||
      !ex->bpos_at) {
    return false;
  }
  for (size_t i = 0, at = 0; i < n; i++) {
    ex->bpos_at[i] = (uint32_t)at;
    at += ex->shi[i] - ex->slo[i] + 1;
  }
  uint32_t *fill = mp_calloc(ex->alloc, ns + 1, sizeof *fill);
  if (!ex->mem || !fill) {
    mp_free(ex->alloc, fill);
    return false;
  }
  for (size_t i = 0; i < n; i++) {
    for (uint32_t s = ex->slo[i]; s <= ex->shi[i]; s++) {
      ex->mem[ex->mem_at[s] + fill[s]++] = (uint32_t)i;
    }
  }
  mp_free(ex->alloc, fill);
  return true;
}

/* Overlap lists through the sections: two buffers overlap in time iff they
 * share a section; each pair is found at the first section they share. */
static bool ex_overlaps(ex_problem *ex) {
  size_t n = ex->n, count = 0;
  ex->ovl_at = mp_calloc(ex->alloc, n + 1, sizeof *ex->ovl_at);
  if (!ex->ovl_at) return false;
  for (int pass = 0; pass < 2; pass++) {
    for (size_t s = 0; s < ex->n_sec; s++) {
      for (uint32_t a = ex->mem_at[s]; a < ex->mem_at[s + 1]; a++) {
        for (uint32_t b = a + 1; b < ex->mem_at[s + 1]; b++) {
          uint32_t x = ex->mem[a], y = ex->mem[b];
          uint32_t first = ex->slo[x] > ex->slo[y] ? ex->slo[x] : ex->slo[y];
          if (first != s) continue;
          if (pass == 0) {
            ex->ovl_at[x + 1]++;
            ex->ovl_at[y + 1]++;
            if (++count > 20000000) {
              ex->too_dense = true;
              return false;
            }
          } else {
            ex->ovl[ex->ovl_at[x]++] = y;
            ex->ovl[ex->ovl_at[y]++] = x;
          }
        }
      }
    }
    if (pass == 0) {
      for (size_t i = 0; i < n; i++) ex->ovl_at[i + 1] += ex->ovl_at[i];
      ex->ovl = mp_calloc(ex->alloc, 2 * count + 1, sizeof *ex->ovl);
      if (!ex->ovl) return false;
    }
  }
  /* The fill pass advanced every start to the next list's start. */
  for (size_t i = n; i > 0; i--) ex->ovl_at[i] = ex->ovl_at[i - 1];
  ex->ovl_at[0] = 0;
  return true;
}

static int ex_key_cmp(const void *pa, const void *pb) {
  const ex_key *a = pa, *b = pb;
  for (int i = 0; i < 3; i++) {
    if (a->k[i] != b->k[i]) return a->k[i] > b->k[i] ? -1 : 1;
  }
  return (a->b > b->b) - (a->b < b->b);
}

/* Preorder keys: T the fullest section a buffer lives in, W its lifetime
 * width, A its area (size x width), C its section count. Each preorder
 * sorts descending by three of them (MiniMalloc's TWA, WAT and TAW, plus
 * one with C for W). */
static const int ex_order_keys[EX_N_ORDERS][3] = {
    {0, 1, 2}, {1, 2, 0}, {0, 2, 1}, {0, 3, 2}};

/* Ranks bufs[0..n) under preorder h with section totals `totals` into
 * rank[]; keys is scratch for n entries. */
static void ex_rank(const ex_problem *ex, int h, const uint32_t *bufs, size_t n,
                    const size_t *totals, uint32_t *rank, ex_key *keys) {
  for (size_t k = 0; k < n; k++) {
    uint32_t i = bufs[k];
    uint64_t fullest = 0;
    for (uint32_t s = ex->slo[i]; s <= ex->shi[i]; s++) {
      if (totals[s] > fullest) fullest = totals[s];
    }
    uint64_t v[4] = {fullest, ex->width[i], ex->area[i],
                     ex->shi[i] - ex->slo[i] + 1u};
    keys[k].b = i;
    for (int j = 0; j < 3; j++) keys[k].k[j] = v[ex_order_keys[h][j]];
  }
  qsort(keys, n, sizeof *keys, ex_key_cmp);
  for (size_t r = 0; r < n; r++) rank[keys[r].b] = (uint32_t)r;
}

static bool ex_preorders(ex_problem *ex, const mp_strategy_ctx *ctx) {
  size_t n = ex->n;
  ex->width = mp_calloc(ex->alloc, n + 1, sizeof *ex->width);
  ex->area = mp_calloc(ex->alloc, n + 1, sizeof *ex->area);
  ex->keys = mp_calloc(ex->alloc, n + 1, sizeof *ex->keys);
  uint32_t *all = mp_calloc(ex->alloc, n + 1, sizeof *all);
  bool ok = ex->width && ex->area && ex->keys && all;
  for (size_t i = 0; ok && i < n; i++) {
    uint64_t len = (uint64_t)(ctx->bufs[i].last - ctx->bufs[i].first) + 1;
    ex->width[i] = len;
    ex->area[i] =
        ex->size[i] > UINT64_MAX / len ? UINT64_MAX : ex->size[i] * len;
    all[i] = (uint32_t)i;
  }
  for (int h = 0; ok && h < EX_N_ORDERS; h++) {
    ex->ranks[h] = mp_calloc(ex->alloc, n + 1, sizeof *ex->ranks[h]);
    ok = ex->ranks[h] != NULL;
    if (ok) ex_rank(ex, h, all, n, ex->total0, ex->ranks[h], ex->keys);
  }
  mp_free(ex->alloc, all);
  return ok;
}

/* Top-level partitions: runs of sections joined by buffers. */
static bool ex_partitions(ex_problem *ex) {
  size_t n = ex->n, np = 0;
  ex->parts = mp_calloc(ex->alloc, ex->n_sec + 1, sizeof *ex->parts);
  uint32_t *part_of = mp_calloc(ex->alloc, ex->n_sec + 1, sizeof *part_of);
  if (!ex->parts || !part_of) {
    mp_free(ex->alloc, part_of);
    return false;
  }
  for (size_t s = 0; s < ex->n_sec; s++) {
    if (s == 0 || ex->cuts0[s - 1] == 0) {
      ex->parts[np++] = (ex_part){NULL, 0, (uint32_t)s, (uint32_t)s};
    }
    ex->parts[np - 1].shi = (uint32_t)s;
    part_of[s] = (uint32_t)(np - 1);
  }
  for (size_t i = 0; i < n; i++) ex->parts[part_of[ex->slo[i]]].n++;
  bool ok = true;
  for (size_t p = 0; p < np; p++) {
    ex->parts[p].bufs =
        mp_calloc(ex->alloc, ex->parts[p].n + 1, sizeof *ex->parts[p].bufs);
    ok = ok && ex->parts[p].bufs;
    ex->parts[p].n = 0;
  }
  for (size_t i = 0; ok && i < n; i++) {
    ex_part *p = &ex->parts[part_of[ex->slo[i]]];
    p->bufs[p->n++] = (uint32_t)i;
  }
  ex->n_parts = np;
  mp_free(ex->alloc, part_of);
  return ok;
}

static bool ex_state(ex_problem *ex) {
  size_t n = ex->n + 1, ns = ex->n_sec + 1;
  ex->off = mp_calloc(ex->alloc, n, sizeof *ex->off);
  ex->min_off = mp_calloc(ex->alloc, n, sizeof *ex->min_off);
  ex->floor = mp_calloc(ex->alloc, ns, sizeof *ex->floor);
  ex->total = mp_calloc(ex->alloc, ns, sizeof *ex->total);
  ex->cuts = mp_calloc(ex->alloc, ns, sizeof *ex->cuts);
  ex->stamp = mp_calloc(ex->alloc, ns, sizeof *ex->stamp);
  ex->affected = mp_calloc(ex->alloc, ns, sizeof *ex->affected);
  ex->at_floor = mp_calloc(ex->alloc, ns, sizeof *ex->at_floor);
  return ex->off && ex->min_off && ex->floor && ex->total && ex->cuts &&
         ex->stamp && ex->affected && ex->at_floor;
}

void ex_destroy(ex_problem *ex) {
  if (!ex) return;
  const mp_alloc *a = ex->alloc;
  for (size_t p = 0; ex->parts && p < ex->n_parts; p++) {
    mp_free(a, ex->parts[p].bufs);
  }
  for (int h = 0; h < EX_N_ORDERS; h++) mp_free(a, ex->ranks[h]);
  void *all[] = {
      ex->size,     ex->align,  ex->slo,      ex->shi,      ex->ovl_at,
      ex->ovl,      ex->mem_at, ex->mem,      ex->total0,   ex->cuts0,
      ex->parts,    ex->off,    ex->min_off,  ex->floor,    ex->total,
      ex->cuts,     ex->stamp,  ex->affected, ex->at_floor, ex->mins.v,
      ex->floors.v, ex->width,  ex->area,     ex->keys,     ex->live_mem,
      ex->ucount,   ex->bpos,   ex->bpos_at,  ex->removed};
  for (size_t k = 0; k < sizeof all / sizeof *all; k++) mp_free(a, all[k]);
  mp_free(a, ex);
}

mp_status ex_create(const mp_strategy_ctx *ctx, ex_problem **out,
                    mp_error *err) {
  size_t n = ctx->n;
  if (n > EX_MAX_BUFFERS) {
    return mp_error_set(err, MP_ERR_UNSUPPORTED,
                        "%zu buffers exceed the exact search's limit of %d", n,
                        EX_MAX_BUFFERS);
  }
  ex_problem *ex = mp_calloc(ctx->alloc, 1, sizeof *ex);
  if (!ex) return mp_error_set(err, MP_ERR_NOMEM, "exact: out of memory");
  ex->alloc = ctx->alloc;
  ex->n = n;
  ex->size = mp_calloc(ex->alloc, n + 1, sizeof *ex->size);
  ex->align = mp_calloc(ex->alloc, n + 1, sizeof *ex->align);
  ex->slo = mp_calloc(ex->alloc, n + 1, sizeof *ex->slo);
  ex->shi = mp_calloc(ex->alloc, n + 1, sizeof *ex->shi);
  bool ok = ex->size && ex->align && ex->slo && ex->shi;
  for (size_t i = 0; ok && i < n; i++) {
    ex->size[i] = ctx->bufs[i].size;
    ex->align[i] = ctx->bufs[i].align;
  }
  ok = ok && ex_sections(ex, ctx) && ex_members(ex) && ex_overlaps(ex) &&
       ex_preorders(ex, ctx) && ex_partitions(ex) && ex_state(ex);
  if (!ok) {
    bool dense = ex->too_dense;
    ex_destroy(ex);
    /* Too many overlaps is a limit of the search, not an allocation
     * failure: the caller keeps its heuristic result. */
    return dense ? mp_error_set(err, MP_ERR_UNSUPPORTED,
                                "too many time overlaps for the exact search")
                 : mp_error_set(err, MP_ERR_NOMEM, "exact: out of memory");
  }
  *out = ex;
  return MP_OK;
}

size_t ex_lower_bound(const ex_problem *ex) {
  size_t lb = 0;
  for (size_t s = 0; s < ex->n_sec; s++) {
    if (ex->total0[s] > lb) lb = ex->total0[s];
  }
  return lb;
}

uint64_t ex_nodes(const ex_problem *ex) {
  return ex->nodes;
}

uint64_t ex_work(const ex_problem *ex) {
  return ex->work;
}

/* ---- search -------------------------------------------------------------- */

typedef enum ex_step { EX_S_FOUND, EX_S_NOTFOUND, EX_S_ABORT } ex_step;

static bool ex_grow(ex_problem *ex, ex_stack *st) {
  void *p = st->v;
  if (mp_grow(ex->alloc, &p, &st->cap, st->n + 1, sizeof *st->v, "exact",
              NULL) != MP_OK) {
    ex->oom = true;
    return false;
  }
  st->v = p;
  return true;
}

/* The hottest call of the search: the growth is out of line. */
static inline bool ex_push(ex_problem *ex, ex_stack *st, uint32_t idx,
                           size_t old, uint32_t old_count) {
  if (st->n == st->cap && !ex_grow(ex, st)) return false;
  st->v[st->n++] = (ex_change){idx, old_count, old};
  return true;
}

static size_t ex_align_up(size_t v, size_t a) {
  return (v + a - 1) & ~(a - 1);
}

static uint32_t *ex_bpos(ex_problem *ex, uint32_t b, uint32_t s) {
  return &ex->bpos[ex->bpos_at[b] + (s - ex->slo[b])];
}

/* Takes placed buffer b out of section s's unplaced prefix (swap with the
 * prefix's last), remembering where it was. */
static void ex_remove(ex_problem *ex, uint32_t b, uint32_t s) {
  uint32_t *slot = ex_bpos(ex, b, s), p = *slot;
  uint32_t last = ex->mem_at[s] + --ex->ucount[s];
  uint32_t moved = ex->live_mem[last];
  ex->live_mem[p] = moved;
  *ex_bpos(ex, moved, s) = p;
  ex->live_mem[last] = b;
  *slot = last;
  ex->removed[ex->n_removed++] = p;
}

/* The exact inverse of ex_remove; calls come in the reverse order. */
static void ex_restore(ex_problem *ex, uint32_t b, uint32_t s) {
  uint32_t p = ex->removed[--ex->n_removed];
  uint32_t last = ex->mem_at[s] + ex->ucount[s]++;
  uint32_t moved = ex->live_mem[p];
  ex->live_mem[p] = b;
  *ex_bpos(ex, b, s) = p;
  ex->live_mem[last] = moved;
  *ex_bpos(ex, moved, s) = last;
}

/* One of the unplaced buffers of s that sat at its floor left it (placed
 * or moved up). floor[s] changes only when none is left at the floor; then
 * the members are counted again. */
static bool ex_leave_floor(ex_problem *ex, uint32_t s) {
  if (!ex_push(ex, &ex->floors, s, ex->floor[s], ex->at_floor[s])) {
    return false;
  }
  if (--ex->at_floor[s] > 0) return true;
  size_t lowest = EX_NONE;
  uint32_t count = 0;
  for (uint32_t k = ex->mem_at[s], e = k + ex->ucount[s]; k < e; k++) {
    uint32_t o = ex->live_mem[k];
    if (ex->min_off[o] < lowest) {
      lowest = ex->min_off[o];
      count = 1;
    } else if (ex->min_off[o] == lowest) {
      count++;
    }
  }
  ex->floor[s] = lowest;
  ex->at_floor[s] = count;
  return true;
}

/* Places b at x, recording every change (invariant 5). floor[s] is the
 * lowest min_off among the unplaced buffers of s -- never below the top of
 * a placed one, since every unplaced member of s overlaps it in time -- and
 * at_floor[s] how many sit at it, so that a section is recounted only when
 * its last buffer at the floor leaves. */
static void ex_place(ex_problem *ex, uint32_t b, size_t x) {
  size_t top = x + ex->size[b];
  ex->off[b] = x;
  /* Bookkeeping that cannot fail first, so that ex_unplace always undoes
   * exactly what happened even when a push below runs out of memory. */
  for (uint32_t s = ex->slo[b]; s <= ex->shi[b]; s++) {
    ex->total[s] -= ex->size[b];
    ex_remove(ex, b, s);
  }
  for (uint32_t s = ex->slo[b]; s <= ex->shi[b]; s++) {
    if (ex->floor[s] == ex->min_off[b] && !ex_leave_floor(ex, s)) return;
  }
  for (uint32_t k = ex->ovl_at[b]; k < ex->ovl_at[b + 1]; k++) {
    uint32_t o = ex->ovl[k];
    size_t old = ex->min_off[o];
    if (ex->off[o] != EX_NONE || old >= top) continue;
    if (!ex_push(ex, &ex->mins, o, old, 0)) return;
    ex->min_off[o] = ex_align_up(top, ex->align[o]);
    for (uint32_t s = ex->slo[o]; s <= ex->shi[o]; s++) {
      if (ex->floor[s] == old && !ex_leave_floor(ex, s)) return;
    }
  }
}

static void ex_unplace(ex_problem *ex, uint32_t b, size_t mins_mark,
                       size_t floors_mark) {
  while (ex->floors.n > floors_mark) {
    ex_change c = ex->floors.v[--ex->floors.n];
    ex->floor[c.idx] = c.old;
    ex->at_floor[c.idx] = c.old_count;
  }
  for (uint32_t s = ex->shi[b] + 1; s-- > ex->slo[b];) {
    ex->total[s] += ex->size[b];
    ex_restore(ex, b, s);
  }
  while (ex->mins.n > mins_mark) {
    ex_change c = ex->mins.v[--ex->mins.n];
    ex->min_off[c.idx] = c.old;
  }
  ex->off[b] = EX_NONE;
}

/* Invariant 2. */
static bool ex_check(const ex_problem *ex, const ex_part *p, size_t x) {
  for (uint32_t s = p->slo; s <= p->shi; s++) {
    if (ex->total[s] == 0) continue; /* nothing left to place in s */
    size_t f = ex->floor[s] > x ? ex->floor[s] : x;
    if (f > ex->cap || ex->total[s] > ex->cap - f) return false;
  }
  return true;
}

static int ex_cand_cmp(const void *pa, const void *pb) {
  const ex_cand *a = pa, *b = pb;
  if (a->off != b->off) return a->off < b->off ? -1 : 1;
  return (a->rank > b->rank) - (a->rank < b->rank);
}

static ex_step ex_search(ex_problem *ex, const ex_part *p, size_t last_off,
                         uint32_t last_rank);
static ex_step ex_subsolve(ex_problem *ex, const ex_part *sub);

/* Solves an independent part from scratch, re-ranking its buffers by the
 * totals left in its sections (the preorder of the whole problem no longer
 * says which of them are hardest), then restoring their old ranks. */
static ex_step ex_subsolve(ex_problem *ex, const ex_part *sub) {
  uint32_t *saved = mp_calloc(ex->alloc, sub->n + 1, sizeof *saved);
  ex_key *keys = mp_calloc(ex->alloc, sub->n + 1, sizeof *keys);
  if (!saved || !keys) {
    mp_free(ex->alloc, saved);
    mp_free(ex->alloc, keys);
    ex->oom = true;
    return EX_S_ABORT;
  }
  for (size_t k = 0; k < sub->n; k++) saved[k] = ex->rank[sub->bufs[k]];
  ex_rank(ex, ex->order, sub->bufs, sub->n, ex->total, ex->rank, keys);
  ex_step r = ex_search(ex, sub, 0, 0);
  for (size_t k = 0; k < sub->n; k++) ex->rank[sub->bufs[k]] = saved[k];
  mp_free(ex->alloc, keys);
  mp_free(ex->alloc, saved);
  return r;
}

/* Invariant 4: after placing b, split p where no unplaced buffer crosses. */
static ex_step ex_decompose(ex_problem *ex, const ex_part *p, uint32_t b,
                            size_t x, uint32_t rank) {
  uint32_t n_cut = 0, lo = ex->slo[b], hi = ex->shi[b];
  /* Record the placement now: a sub-partition's leaf only writes its own
   * buffers, and the last successful path rewrites all of its placements. */
  ex->out[b] = x;
  for (uint32_t s = lo; s < hi; s++) {
    if (--ex->cuts[s] == 0 && s >= p->slo && s < p->shi) n_cut++;
  }
  ex_step r;
  if (n_cut == 0) {
    ex->inherit = true; /* the same part goes on: reuse the parent's order */
    r = ex_search(ex, p, x, rank);
  } else {
    r = EX_S_FOUND;
    uint32_t *bufs = mp_calloc(ex->alloc, p->n + 1, sizeof *bufs);
    if (!bufs) {
      ex->oom = true;
      r = EX_S_ABORT;
    }
    uint32_t start = p->slo;
    for (uint32_t s = p->slo; r == EX_S_FOUND && s <= p->shi; s++) {
      if (s < p->shi && ex->cuts[s] != 0) continue;
      ex_part sub = {bufs, 0, start, s};
      for (size_t k = 0; k < p->n; k++) {
        uint32_t o = p->bufs[k];
        if (ex->off[o] == EX_NONE && ex->slo[o] <= s && ex->shi[o] >= start) {
          bufs[sub.n++] = o;
        }
      }
      if (sub.n) r = ex_subsolve(ex, &sub);
      start = s + 1;
    }
    mp_free(ex->alloc, bufs);
  }
  for (uint32_t s = lo; s < hi; s++) ex->cuts[s]++;
  return r;
}

/* Insertion sort: the buffers whose offset moved at one placement are
 * few. */
static void ex_sort_small(ex_cand *v, size_t n) {
  for (size_t i = 1; i < n; i++) {
    ex_cand x = v[i];
    size_t j = i;
    while (j > 0 && ex_cand_cmp(&v[j - 1], &x) > 0) {
      v[j] = v[j - 1];
      j--;
    }
    v[j] = x;
  }
}

/* The unplaced buffers of p sorted by (min_off, rank). A child node of the
 * same part starts from its parent's sorted list: the placed buffer drops
 * out, the few whose min_off moved are sorted apart and merged back, so a
 * node costs O(m) instead of a full sort. moved has room for p->n. */
static size_t ex_candidates(ex_problem *ex, const ex_part *p, bool inherit,
                            ex_cand *c, ex_cand *moved) {
  size_t m = 0, n_moved = 0, n_kept = 0;
  if (!inherit) {
    for (size_t k = 0; k < p->n; k++) {
      uint32_t b = p->bufs[k];
      if (ex->off[b] == EX_NONE) {
        c[m++] = (ex_cand){ex->min_off[b], ex->rank[b], b};
      }
    }
    qsort(c, m, sizeof *c, ex_cand_cmp);
    return m;
  }
  for (size_t k = 0; k < ex->parent_m; k++) {
    ex_cand e = ex->parent_c[k];
    if (ex->off[e.b] != EX_NONE) continue;
    if (ex->min_off[e.b] != e.off) {
      e.off = ex->min_off[e.b];
      moved[n_moved++] = e;
    } else {
      c[n_kept++] = e; /* still in order: a subsequence of a sorted list */
    }
  }
  if (n_moved < 16) {
    ex_sort_small(moved, n_moved);
  } else {
    qsort(moved, n_moved, sizeof *moved, ex_cand_cmp);
  }
  /* Merge from the back so that c can hold the result in place. */
  size_t i = n_kept, j = n_moved;
  m = n_kept + n_moved;
  for (size_t o = m; o-- > 0;) {
    if (j == 0 || (i > 0 && ex_cand_cmp(&c[i - 1], &moved[j - 1]) > 0)) {
      c[o] = c[--i];
    } else {
      c[o] = moved[--j];
    }
  }
  return m;
}

static ex_step ex_search(ex_problem *ex, const ex_part *p, size_t last_off,
                         uint32_t last_rank) {
  bool inherit = ex->inherit;
  ex->inherit = false;
  if (ex->nodes_left-- <= 0 || ex->oom) return EX_S_ABORT;
  ex->work += p->n + 1;
  if (++ex->nodes >= ex->max_nodes || ex->work >= ex->max_work ||
      ((ex->nodes & 255) == 0 && mp_now_ms() > ex->deadline)) {
    ex->timed_out = true;
  }
  if (ex->timed_out) return EX_S_ABORT;
  /* Not zeroed: ex_candidates writes every entry it returns, and the
   * moved half before reading it; zeroing it was a sixth of ISNet's
   * --passes all --order memory plan). */
  size_t bytes;
  ex_cand *c = mp_size_mul(2 * (p->n + 1), sizeof *c, &bytes)
                   ? mp_malloc(ex->alloc, bytes)
                   : NULL;
  if (!c) {
    ex->oom = true;
    return EX_S_ABORT;
  }
  size_t m = ex_candidates(ex, p, inherit, c, c + p->n + 1);
  size_t min_height = EX_NONE;
  for (size_t k = 0; k < m; k++) {
    if (c[k].off + ex->size[c[k].b] < min_height) {
      min_height = c[k].off + ex->size[c[k].b];
    }
  }
  if (m == 0) { /* a leaf: every buffer of the partition is placed */
    for (size_t k = 0; k < p->n; k++) ex->out[p->bufs[k]] = ex->off[p->bufs[k]];
    mp_free(ex->alloc, c);
    return EX_S_FOUND;
  }
  ex_step r = EX_S_NOTFOUND;
  for (size_t k = 0; k < m && r == EX_S_NOTFOUND; k++) {
    if (c[k].off < last_off ||
        (c[k].off == last_off && c[k].rank < last_rank)) {
      continue; /* invariant 1 */
    }
    if (c[k].off >= min_height) break; /* invariant 3; sorted by offset */
    if (c[k].off + ex->size[c[k].b] > ex->cap) continue;
    size_t mins_mark = ex->mins.n, floors_mark = ex->floors.n;
    ex->parent_c = c;
    ex->parent_m = m;
    ex_place(ex, c[k].b, c[k].off);
    if (!ex->oom && ex_check(ex, p, c[k].off)) {
      r = ex_decompose(ex, p, c[k].b, c[k].off, c[k].rank);
    }
    ex_unplace(ex, c[k].b, mins_mark, floors_mark);
    if (ex->oom) r = EX_S_ABORT;
  }
  mp_free(ex->alloc, c);
  return r;
}

static void ex_reset(ex_problem *ex) {
  for (size_t i = 0; i < ex->n; i++) {
    ex->off[i] = EX_NONE;
    ex->min_off[i] = 0;
  }
  for (size_t s = 0; s < ex->n_sec; s++) {
    ex->floor[s] = 0;
    ex->at_floor[s] = ex->mem_at[s + 1] - ex->mem_at[s];
    ex->ucount[s] = ex->at_floor[s];
    for (uint32_t k = ex->mem_at[s]; k < ex->mem_at[s + 1]; k++) {
      ex->live_mem[k] = ex->mem[k];
      *ex_bpos(ex, ex->mem[k], (uint32_t)s) = k;
    }
    ex->total[s] = ex->total0[s];
    ex->cuts[s] = ex->cuts0[s];
  }
  ex->mins.n = ex->floors.n = 0;
  ex->n_removed = 0;
}

int ex_orders(void) {
  return EX_N_ORDERS;
}

mp_status ex_dive(ex_problem *ex, int h, size_t *out, mp_error *err) {
  /* With no capacity to respect no check fails, so the first descent is a
   * complete placement and the search never backtracks. */
  ex->cap = SIZE_MAX / 4;
  ex->out = out;
  ex->deadline = 1e300;
  ex->max_nodes = ex->max_work = UINT64_MAX;
  ex->timed_out = ex->oom = false;
  ex->nodes = ex->work = 0;
  ex->rank = ex->ranks[h];
  ex->order = h;
  ex->nodes_left = INT64_MAX;
  ex_reset(ex);
  ex_step r = EX_S_FOUND;
  for (size_t p = 0; p < ex->n_parts && r == EX_S_FOUND; p++) {
    r = ex_search(ex, &ex->parts[p], 0, 0);
  }
  if (ex->oom) return mp_error_set(err, MP_ERR_NOMEM, "exact: out of memory");
  if (r != EX_S_FOUND) {
    return mp_error_set(err, MP_ERR_INTERNAL, "canonical dive did not finish");
  }
  return MP_OK;
}

mp_status ex_decide(ex_problem *ex, size_t capacity, double deadline_ms,
                    uint64_t max_nodes, uint64_t max_work, size_t *out,
                    ex_result *result, mp_error *err) {
  int64_t limit = (int64_t)ex->n + 16;
  ex->max_nodes = max_nodes ? max_nodes : UINT64_MAX;
  ex->max_work = max_work ? max_work : UINT64_MAX;
  ex->cap = capacity;
  ex->out = out;
  ex->deadline = deadline_ms;
  ex->timed_out = ex->oom = false;
  ex->nodes = ex->work = 0;
  /* Round robin over the preorders with a doubling node limit: one of them
   * often finds a solution fast where another wanders (MiniMalloc). */
  for (;;) {
    limit *= 2;
    for (int h = 0; h < EX_N_ORDERS; h++) {
      ex_step r = EX_S_FOUND;
      ex->rank = ex->ranks[h];
      ex->order = h;
      ex->nodes_left = limit;
      ex_reset(ex);
      for (size_t p = 0; p < ex->n_parts && r == EX_S_FOUND; p++) {
        r = ex_search(ex, &ex->parts[p], 0, 0);
      }
      if (ex->oom)
        return mp_error_set(err, MP_ERR_NOMEM, "exact: out of memory");
      if (r == EX_S_FOUND || r == EX_S_NOTFOUND) {
        *result = r == EX_S_FOUND ? EX_FOUND : EX_INFEASIBLE;
        return MP_OK;
      }
      if (ex->timed_out) {
        *result = EX_TIMEOUT;
        return MP_OK;
      }
    }
    if (limit > INT64_MAX / 4) limit = INT64_MAX / 4;
  }
}
