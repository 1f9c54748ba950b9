/*
 * tile.c -- the tile pass (seed 000 section 7; MCUNetV2's patch-based
 * inference): the first stage of a convolutional network runs band by
 * band of output rows, so that its large early activations are never
 * whole at once.
 *
 * What it tiles. A prefix of the ops in graph order (topological: the
 * committed graph's order) that reads one 4-D graph input and otherwise
 * only weights and what the prefix itself makes, whose ops are each
 *   - a Conv, MaxPool or AveragePool over two spatial dims with explicit
 *     pads (no auto_pad, no ceil_mode, one output);
 *   - or elementwise (pass_ew_op: unary, binary, Clip, inference
 *     BatchNormalization), its activation operands of the output's dims
 *     and its weight operands constant along H (extent 1 or no H axis);
 * over tensors of rank 4 in NCHW (or no layout), with no mplan.*
 * attribute. A prefix ending at op i is a cut when the output T of op i
 * is the only tensor it makes that a later op reads (or that is a graph
 * output): then the rest of the graph sees only T.
 *
 * The rewrite, for a cut and n bands. T's H rows are split into n bands
 * as equal as integers allow. For band b, each tensor of the prefix gets
 * the hull of the rows its readers in the band need (the receptive field,
 * walked back op by op), and each op is copied to compute exactly those
 * rows: a Conv or pool reads the rows its window touches, and its top and
 * bottom pads are what is left of the original padding at the image's
 * edge. A reader that needs fewer rows than its input's band holds reads
 * a Slice of them (a residual Add reads the middle of a band its Conv
 * branch read with a halo); the graph input is read through a Slice. The
 * band's part of T is a new tensor; one Concat along H writes T from the
 * n parts. All new ops take the key of op i, band by band.
 *
 * Exactness: every element of every band tensor is computed from the
 * same input values with the same window and the same pads as in the
 * untiled graph (padding exists only at the image's edge, where the band
 * keeps it), so T is the same bit for bit. AveragePool's divisor follows,
 * as the window and its pads are the same.
 *
 * Which cut and n. Every cut (T at least 2 rows) and n = 2 ..
 * min(rows, TL_MAX_BANDS) is built and measured: the activation lower
 * bound of the rewritten graph in its file order, each tensor its own
 * buffer. The lowest wins, ties to fewer recomputed MACs, among the
 * candidates whose recomputed Conv MACs (the halo rows bands compute
 * twice) stay within TL_MAX_EXTRA_PCT percent of the graph's Conv MACs;
 * a candidate only wins if it is below the graph's own bound. The manager
 * then keeps the rewrite only when the lower bound under the order being
 * planned does not rise (the pass is guarded).
 *
 * Why not in --passes all: the pass trades compute for memory (the
 * recomputed halo rows), which a plan must not do unasked; it runs when
 * named (--passes tile, or all,tile).
 *
 * Invariants:
 *   1. The prefix's ops are all killed and T keeps its name, kind and
 *      shape (written by the Concat); nothing outside the prefix changes.
 *   2. Each band tensor's rows [lo, hi) are within its tensor's rows, and
 *      each copied op's output rows are the band's need of it, so the n
 *      parts cover T's rows exactly once, in order.
 *   3. A copied Conv or pool gets pads[0] = first - lo_read >= 0 and
 *      pads[2] = end - hi_read >= 0, where [first, end) are the rows its
 *      window spans unclipped and [lo_read, hi_read) the rows it reads:
 *      its output then has exactly the band's rows.
 */
#include <stdio.h>
#include <string.h>

#include "mplan/lifetime.h"
#include "mplan/schedule.h"
#include "pass.h"

#define TL_MAX_BANDS 16
#define TL_MAX_EXTRA_PCT 25
#define TL_MAX_WORK 16384 /* prefix ops x bands of one candidate */
/* Ops committed and measured over all candidates (each costs the whole
 * graph plus its bands): past it the search stops with the best so far,
 * the same on every machine. */
#define TL_BUDGET ((size_t)1 << 22)

typedef enum tl_kind { TL_NONE = 0, TL_WINDOW, TL_EW } tl_kind;

typedef struct tl_win {
  int64_t k, s, d, pt, pb; /* along H: kernel, stride, dilation, pads */
} tl_win;

typedef struct tl_crop {
  int32_t x, band_t;
  int64_t lo, hi;
} tl_crop;

typedef struct tl_ctx {
  pass_ctx *c;
  const mp_graph *g;
  size_t n_t;
  uint32_t len;  /* ops in the tileable prefix */
  int32_t src;   /* the graph input the prefix reads */
  uint8_t *kind; /* per op of the prefix: tl_kind */
  tl_win *win;   /* per op of the prefix (TL_WINDOW) */
  int64_t *lo;   /* per tensor: rows the band needs */
  int64_t *hi;
  int32_t *band;  /* per tensor: its band tensor in the rewrite */
  uint32_t *cuts; /* ops ending a cut */
  size_t n_cuts;
  tl_crop *crops; /* Slices made in this band */
  size_t n_crops, cap_crops;
  double graph_macs;
} tl_ctx;

static const mp_tensor *tl_t(const tl_ctx *z, int32_t t) {
  return mp_graph_tensor(z->g, (size_t)t);
}

static bool tl_spatial(const tl_ctx *z, int32_t t) {
  mp_tensor_kind k = tl_t(z, t)->kind;
  return k == MP_TENSOR_ACTIVATION || k == MP_TENSOR_INPUT ||
         k == MP_TENSOR_OUTPUT;
}

static bool tl_nchw(const mp_tensor *x) {
  return x->rank == 4 && (!x->layout || strcmp(x->layout, "NCHW") == 0);
}

static bool tl_pair(const mp_op *op, const char *name, int64_t *a, size_t at,
                    int64_t def) {
  const mp_attr *t = mp_op_attr(op, name);
  if (!t) {
    *a = def;
    return true;
  }
  if (t->kind != MP_ATTR_INTS || t->n <= at) return false;
  *a = t->ints[at];
  return true;
}

/* The window of a Conv or pool along H, when it is one the pass copies. */
static bool tl_window(const tl_ctx *z, const mp_op *op, tl_win *w) {
  bool conv = strcmp(op->type, "Conv") == 0;
  if (!conv && strcmp(op->type, "MaxPool") != 0 &&
      strcmp(op->type, "AveragePool") != 0) {
    return false;
  }
  const mp_attr *ap = mp_op_attr(op, "auto_pad");
  if ((ap && (ap->kind != MP_ATTR_STRING || strcmp(ap->s, "NOTSET") != 0)) ||
      pass_attr_int(op, "ceil_mode", 0) != 0 || op->n_outputs != 1) {
    return false;
  }
  const mp_attr *ks = mp_op_attr(op, "kernel_shape");
  if (ks && (ks->kind != MP_ATTR_INTS || ks->n != 2)) return false;
  if (ks) {
    w->k = ks->ints[0];
  } else if (conv && op->n_inputs >= 2 && op->inputs[1] >= 0 &&
             tl_t(z, op->inputs[1])->rank == 4) {
    w->k = tl_t(z, op->inputs[1])->shape[2].value;
  } else {
    return false;
  }
  const mp_attr *pads = mp_op_attr(op, "pads");
  if (pads && (pads->kind != MP_ATTR_INTS || pads->n != 4)) return false;
  if (!tl_pair(op, "strides", &w->s, 0, 1) ||
      !tl_pair(op, "dilations", &w->d, 0, 1) ||
      !tl_pair(op, "pads", &w->pt, 0, 0) ||
      !tl_pair(op, "pads", &w->pb, 2, 0)) {
    return false;
  }
  return w->k >= 1 && w->s >= 1 && w->d >= 1 && w->pt >= 0 && w->pb >= 0;
}

/* Weight operand x of an elementwise op with output y: constant along H
 * (no H axis once broadcast, or extent 1 there). */
static bool tl_flat_h(const mp_tensor *x, const mp_tensor *y) {
  if (x->rank > y->rank) return false;
  int64_t h = (int64_t)x->rank - (int64_t)(y->rank - 2);
  return h < 0 || x->shape[h].value == 1;
}

static tl_kind tl_classify(tl_ctx *z, uint32_t o) {
  const mp_op *op = mp_graph_op(z->g, o);
  if (rw_has_mplan_attr(op) || op->n_outputs != 1 || op->outputs[0] < 0) {
    return TL_NONE;
  }
  const mp_tensor *y = tl_t(z, op->outputs[0]);
  if (!tl_nchw(y)) return TL_NONE;
  if (tl_window(z, op, &z->win[o])) {
    int32_t x = op->inputs[0];
    if (x < 0 || !tl_spatial(z, x) || !tl_nchw(tl_t(z, x))) return TL_NONE;
    for (uint32_t k = 1; k < op->n_inputs; k++) {
      if (op->inputs[k] >= 0 && tl_spatial(z, op->inputs[k])) return TL_NONE;
    }
    return TL_WINDOW;
  }
  const pass_ew *ew = pass_ew_op(op);
  if (!ew || ew->kind == PASS_EW_VARIADIC) return TL_NONE;
  bool any = false;
  for (uint32_t k = 0; k < op->n_inputs; k++) {
    int32_t x = op->inputs[k];
    if (x < 0) continue;
    const mp_tensor *xt = tl_t(z, x);
    if (tl_spatial(z, x)) {
      if (!pass_same_dims(z->g, x, op->outputs[0]) || !tl_nchw(xt)) {
        return TL_NONE;
      }
      any = true;
    } else if (!tl_flat_h(xt, y)) {
      return TL_NONE;
    }
  }
  return any ? TL_EW : TL_NONE;
}

/* The rows of input x that op o needs for its output rows [a, b), and
 * for a window the unclipped span [*first, *end). */
static void tl_req(const tl_ctx *z, uint32_t o, int32_t x, int64_t a, int64_t b,
                   int64_t *lo, int64_t *hi, int64_t *first, int64_t *end) {
  if (z->kind[o] == TL_WINDOW) {
    const tl_win *w = &z->win[o];
    int64_t h = tl_t(z, x)->shape[2].value;
    *first = a * w->s - w->pt;
    *end = (b - 1) * w->s - w->pt + (w->k - 1) * w->d + 1;
    *lo = *first < 0 ? 0 : *first;
    *hi = *end > h ? h : *end;
  } else {
    *first = *lo = a;
    *end = *hi = b;
  }
}

/* The Conv MACs of op o for output rows [a, b) (0 for other ops). */
static double tl_macs(const tl_ctx *z, const mp_op *op, int64_t rows) {
  if (strcmp(op->type, "Conv") != 0 || op->n_inputs < 2 || op->inputs[1] < 0) {
    return 0;
  }
  const mp_tensor *y = tl_t(z, op->outputs[0]), *w = tl_t(z, op->inputs[1]);
  double m = (double)rows;
  for (uint32_t j = 0; j < y->rank; j++) {
    if (j != 2) m *= (double)y->shape[j].value;
  }
  for (uint32_t j = 1; j < w->rank; j++) m *= (double)w->shape[j].value;
  return m;
}

/* The tileable prefix and its cuts. */
static mp_status tl_scan(tl_ctx *z, mp_error *err) {
  const mp_alloc *a = mp_graph_alloc(z->g);
  size_t n_ops = mp_graph_op_count(z->g);
  uint32_t *open = mp_calloc(a, z->n_t + 1, sizeof *open);
  int32_t *made = mp_calloc(a, z->n_t + 1, sizeof *made);
  if (!open || !made) {
    mp_free(a, open);
    mp_free(a, made);
    return mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory",
                        mp_graph_source(z->g));
  }
  for (size_t t = 0; t < z->n_t; t++) made[t] = -1;
  size_t n_open = 0; /* tensors made in the prefix read after it */
  z->src = -1;
  for (uint32_t o = 0; o < n_ops; o++) {
    z->kind[o] = (uint8_t)tl_classify(z, o);
    if (z->kind[o] == TL_NONE) break;
    const mp_op *op = mp_graph_op(z->g, o);
    bool ok = true;
    for (uint32_t k = 0; k < op->n_inputs && ok; k++) {
      int32_t x = op->inputs[k];
      if (x < 0 || !tl_spatial(z, x)) continue;
      if (made[x] >= 0) {
        /* one read less after the prefix (each reading op once) */
        if (mp_op_first_read(op, k) && open[x] && --open[x] == 0) n_open--;
      } else if (tl_t(z, x)->kind == MP_TENSOR_INPUT &&
                 (z->src < 0 || z->src == x)) {
        z->src = x;
      } else {
        ok = false;
      }
    }
    if (!ok) break;
    int32_t y = op->outputs[0];
    const mp_tensor *yt = tl_t(z, y);
    made[y] = (int32_t)o;
    open[y] = yt->n_consumers + (yt->kind == MP_TENSOR_OUTPUT);
    if (open[y]) n_open++;
    z->len = o + 1;
    bool only_y = n_open == 1 && open[y] > 0;
    if (only_y && yt->shape[2].value >= 2) z->cuts[z->n_cuts++] = o;
  }
  mp_free(a, open);
  mp_free(a, made);
  return MP_OK;
}

/* Rows each prefix tensor needs for T's rows [a, b) (cut at op `cut`). */
static void tl_need(tl_ctx *z, uint32_t cut, int64_t a, int64_t b) {
  for (uint32_t o = 0; o <= cut; o++) {
    const mp_op *op = mp_graph_op(z->g, o);
    for (uint32_t k = 0; k < op->n_inputs; k++) {
      if (op->inputs[k] >= 0) z->lo[op->inputs[k]] = INT64_MAX;
      if (op->inputs[k] >= 0) z->hi[op->inputs[k]] = INT64_MIN;
    }
    z->lo[op->outputs[0]] = INT64_MAX;
    z->hi[op->outputs[0]] = INT64_MIN;
  }
  int32_t t = mp_graph_op(z->g, cut)->outputs[0];
  z->lo[t] = a;
  z->hi[t] = b;
  for (uint32_t o = cut + 1; o-- > 0;) {
    const mp_op *op = mp_graph_op(z->g, o);
    int32_t y = op->outputs[0];
    if (z->lo[y] >= z->hi[y]) continue; /* not read for this band */
    for (uint32_t k = 0; k < op->n_inputs; k++) {
      int32_t x = op->inputs[k];
      if (x < 0 || !tl_spatial(z, x)) continue;
      int64_t lo, hi, first, end;
      tl_req(z, o, x, z->lo[y], z->hi[y], &lo, &hi, &first, &end);
      if (lo < z->lo[x]) z->lo[x] = lo;
      if (hi > z->hi[x]) z->hi[x] = hi;
    }
  }
}

/* A tensor like x whose H extent is rows. */
static mp_status tl_tensor(rw_graph *rw, const mp_tensor *x, int32_t like,
                           int64_t rows, const char *suffix, int32_t *id,
                           mp_error *err) {
  mp_dim d[MP_MAX_RANK];
  memcpy(d, x->shape, x->rank * sizeof *d);
  d[2] = (mp_dim){.value = rows, .sym = MP_NO_SYM};
  return rw_new_tensor_dims(rw, like, suffix, x->rank, d, id, err);
}

/* Band tensor of x holding rows [lo, hi): x's band, or a Slice of it. */
static mp_status tl_read(tl_ctx *z, rw_graph *rw, uint32_t key, uint32_t b,
                         int32_t x, int64_t lo, int64_t hi, int32_t *out,
                         mp_error *err) {
  int64_t have_lo = x == z->src ? 0 : z->lo[x];
  int64_t have_hi = x == z->src ? tl_t(z, x)->shape[2].value : z->hi[x];
  int32_t from = x == z->src ? x : z->band[x];
  if (lo == have_lo && hi == have_hi) {
    *out = from;
    return MP_OK;
  }
  for (size_t k = 0; k < z->n_crops; k++) {
    const tl_crop *cr = &z->crops[k];
    if (cr->x == x && cr->lo == lo && cr->hi == hi) {
      *out = cr->band_t;
      return MP_OK;
    }
  }
  char sfx[32];
  snprintf(sfx, sizeof sfx, ".t%u.rows", b);
  int32_t t = -1;
  mp_status st = tl_tensor(rw, tl_t(z, x), x, hi - lo, sfx, &t, err);
  if (st != MP_OK) return st;
  int64_t *v = rw_alloc(rw, 3, sizeof *v, err);
  if (!v) return MP_ERR_NOMEM;
  v[0] = lo - have_lo;
  v[1] = hi - have_lo;
  v[2] = 2;
  const mp_attr at[3] = {
      {.name = "starts", .kind = MP_ATTR_INTS, .ints = &v[0], .n = 1},
      {.name = "ends", .kind = MP_ATTR_INTS, .ints = &v[1], .n = 1},
      {.name = "axes", .kind = MP_ATTR_INTS, .ints = &v[2], .n = 1}};
  snprintf(sfx, sizeof sfx, ".t%u", b);
  uint32_t op = (uint32_t)rw->n_ops;
  st = rw_new_op(rw, key, tl_t(z, x)->name, sfx, "Slice", &from, 1, &t, 1, err);
  for (int k = 0; k < 3 && st == MP_OK; k++)
    st = rw_set_attr(rw, op, &at[k], err);
  if (st != MP_OK) return st;
  void *arr = z->crops;
  st = mp_grow(mp_graph_alloc(z->g), &arr, &z->cap_crops, z->n_crops + 1,
               sizeof *z->crops, mp_graph_source(z->g), err);
  if (st != MP_OK) return st;
  z->crops = arr;
  z->crops[z->n_crops++] = (tl_crop){x, t, lo, hi};
  *out = t;
  return MP_OK;
}

/* Copies op o for band b (output rows [lo[y], hi[y])). */
static mp_status tl_copy(tl_ctx *z, rw_graph *rw, uint32_t key, uint32_t b,
                         uint32_t o, double *macs, mp_error *err) {
  const mp_op *op = mp_graph_op(z->g, o);
  int32_t y = op->outputs[0];
  int32_t in[16];
  if (op->n_inputs > 16) {
    return mp_error_set(err, MP_ERR_INTERNAL, "%s: op '%s' has %u inputs",
                        mp_graph_source(z->g), op->name, op->n_inputs);
  }
  int64_t first = 0, end = 0, lo_r = 0, hi_r = 0;
  mp_status st = MP_OK;
  for (uint32_t k = 0; k < op->n_inputs && st == MP_OK; k++) {
    int32_t x = op->inputs[k];
    in[k] = x;
    if (x < 0 || !tl_spatial(z, x)) continue;
    tl_req(z, o, x, z->lo[y], z->hi[y], &lo_r, &hi_r, &first, &end);
    st = tl_read(z, rw, key, b, x, lo_r, hi_r, &in[k], err);
  }
  char sfx[32];
  snprintf(sfx, sizeof sfx, ".t%u", b);
  int32_t out = -1;
  if (st == MP_OK) {
    st = tl_tensor(rw, tl_t(z, y), y, z->hi[y] - z->lo[y], sfx, &out, err);
  }
  uint32_t nop = (uint32_t)rw->n_ops;
  if (st == MP_OK) {
    st = rw_new_op(rw, key, op->name, sfx, op->type, in, op->n_inputs, &out, 1,
                   err);
  }
  for (uint32_t k = 0; k < op->n_attrs && st == MP_OK; k++) {
    st = rw_set_attr(rw, nop, &op->attrs[k], err);
  }
  if (st == MP_OK && z->kind[o] == TL_WINDOW) {
    /* invariant 3: the pads left at the image's edge */
    int64_t *p = rw_alloc(rw, 4, sizeof *p, err);
    if (!p) return MP_ERR_NOMEM;
    int64_t left = 0, right = 0;
    tl_pair(op, "pads", &left, 1, 0);
    tl_pair(op, "pads", &right, 3, 0);
    p[0] = lo_r - first;
    p[1] = left;
    p[2] = end - hi_r;
    p[3] = right;
    const mp_attr pa = {
        .name = "pads", .kind = MP_ATTR_INTS, .ints = p, .n = 4};
    st = rw_set_attr(rw, nop, &pa, err);
  }
  z->band[y] = out;
  *macs += tl_macs(z, op, z->hi[y] - z->lo[y]);
  return st;
}

/* The rewrite for a cut and n bands into rw; *macs: the bands' Conv MACs. */
static mp_status tl_build(tl_ctx *z, rw_graph *rw, uint32_t cut, uint32_t n,
                          double *macs, mp_error *err) {
  const mp_op *last = mp_graph_op(z->g, cut);
  int32_t t = last->outputs[0];
  int64_t rows = tl_t(z, t)->shape[2].value;
  int32_t *parts = rw_alloc(rw, n, sizeof *parts, err);
  if (!parts) return MP_ERR_NOMEM;
  *macs = 0;
  mp_status st = MP_OK;
  for (uint32_t b = 0; b < n && st == MP_OK; b++) {
    int64_t a = rows * b / n, e = rows * (b + 1) / n;
    tl_need(z, cut, a, e);
    z->n_crops = 0;
    for (uint32_t o = 0; o <= cut && st == MP_OK; o++) {
      int32_t y = mp_graph_op(z->g, o)->outputs[0];
      if (z->lo[y] < z->hi[y]) st = tl_copy(z, rw, cut, b, o, macs, err);
    }
    parts[b] = z->band[t];
  }
  if (st != MP_OK) return st;
  static const int64_t axis = 2;
  const mp_attr ax = {.name = "axis", .kind = MP_ATTR_INT, .i = axis};
  uint32_t cat = (uint32_t)rw->n_ops;
  st = rw_new_op(rw, cut, last->name, ".tiles", "Concat", parts, n, &t, 1, err);
  if (st == MP_OK) st = rw_set_attr(rw, cat, &ax, err);
  for (uint32_t o = 0; o <= cut; o++) rw_kill(rw, o);
  return st;
}

/* The activation lower bound of g in its file order; with rest (one per
 * op of the prefix), also the most bytes live at a step after op o:
 * what no tiling up to o changes (the steps after the Concat are the
 * steps after o, with the same live tensors). */
static mp_status tl_bound(const tl_ctx *z, const mp_graph *g, size_t *lb,
                          size_t *rest, mp_error *err) {
  uint32_t *order = NULL;
  mp_order_kind used;
  mp_problem *p = NULL;
  mp_profile prof = {0};
  mp_lifetime_opts lo = {.inputs_as_activations = z->c->inputs_act,
                         .backend = z->c->backend};
  mp_status st = mp_schedule(g, MP_ORDER_FILE, &order, &used, err);
  if (st == MP_OK) st = mp_lifetimes_build(g, order, &lo, &p, err);
  if (st == MP_OK) st = mp_problem_profile(p, &prof, err);
  if (st == MP_OK) *lb = prof.peak;
  for (uint32_t o = 0; rest && st == MP_OK && o < z->len; o++) {
    rest[o] = 0; /* order is the file order: op o runs at step o */
    for (size_t k = 0; k < prof.n_segs; k++) {
      if (prof.segs[k].last > (int64_t)o && prof.segs[k].live > rest[o]) {
        rest[o] = prof.segs[k].live;
      }
    }
  }
  mp_profile_release(&prof);
  mp_problem_destroy(p);
  mp_free(mp_graph_alloc(g), order);
  return st;
}

/* Builds a candidate on its own rewrite and measures it. */
static mp_status tl_try(tl_ctx *z, uint32_t cut, uint32_t n, size_t *lb,
                        double *macs, mp_error *err) {
  rw_graph *rw = NULL;
  mp_graph *g2 = NULL;
  mp_status st = rw_create(z->g, &rw, err);
  if (st == MP_OK) st = tl_build(z, rw, cut, n, macs, err);
  if (st == MP_OK) st = rw_commit(rw, &g2, err);
  if (st == MP_OK) st = tl_bound(z, g2, lb, NULL, err);
  if (g2) mp_graph_destroy(g2);
  rw_destroy(rw);
  return st;
}

static mp_status tl_run(tl_ctx *z, mp_error *err) {
  mp_status st = tl_scan(z, err);
  if (st != MP_OK || z->n_cuts == 0) return st;
  for (size_t o = 0; o < mp_graph_op_count(z->g); o++) {
    const mp_op *op = mp_graph_op(z->g, o);
    if (op->n_outputs >= 1 && op->outputs[0] >= 0) {
      z->graph_macs += tl_macs(z, op, tl_t(z, op->outputs[0])->shape[2].value);
    }
  }
  size_t base = 0;
  size_t *rest = mp_calloc(mp_graph_alloc(z->g), z->len + 1, sizeof *rest);
  if (!rest) {
    return mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory",
                        mp_graph_source(z->g));
  }
  st = tl_bound(z, z->g, &base, rest, err);
  size_t best_lb = base;
  double best_extra = 0, prefix_best = 0;
  uint32_t best_cut = 0, best_n = 0;
  size_t spent = 0, tried = 0;
  bool cut_short = false;
  /* latest cut first: its rest is the lowest, and a cut whose rest
   * is above the best bound so far cannot win (nor tie) */
  for (size_t i = z->n_cuts; i-- > 0 && st == MP_OK && !cut_short;) {
    uint32_t cut = z->cuts[i];
    if (rest[cut] > best_lb) continue;
    int64_t rows = tl_t(z, mp_graph_op(z->g, cut)->outputs[0])->shape[2].value;
    double prefix = 0;
    for (uint32_t o = 0; o <= cut; o++) {
      const mp_op *op = mp_graph_op(z->g, o);
      prefix += tl_macs(z, op, tl_t(z, op->outputs[0])->shape[2].value);
    }
    for (uint32_t n = 2; n <= TL_MAX_BANDS && n <= rows && st == MP_OK; n++) {
      if ((size_t)(cut + 1) * n > TL_MAX_WORK) break;
      size_t cost = mp_graph_op_count(z->g) + (size_t)(cut + 1) * n;
      if (spent + cost > TL_BUDGET) {
        cut_short = true;
        break;
      }
      spent += cost;
      tried++;
      size_t lb = 0;
      double macs = 0;
      st = tl_try(z, cut, n, &lb, &macs, err);
      double extra = macs - prefix;
      if (st != MP_OK || extra * 100.0 > TL_MAX_EXTRA_PCT * z->graph_macs) {
        break; /* more bands recompute more */
      }
      if (lb < best_lb || (lb == best_lb && best_n && extra < best_extra)) {
        best_lb = lb;
        best_extra = extra;
        best_cut = cut;
        best_n = n;
        prefix_best = prefix;
      }
      if (lb <= rest[cut]) break; /* more bands cannot go lower */
    }
  }
  mp_free(mp_graph_alloc(z->g), rest);
  if (st != MP_OK) return st;
  if (best_n == 0) {
    if (tried) {
      mp_buf_printf(&z->c->note,
                    "no cut of %zu lowers the bound in file order (%zu B) "
                    "within +%d%% Conv MACs (%zu candidates%s)",
                    z->n_cuts, base, TL_MAX_EXTRA_PCT, tried,
                    cut_short ? "; search budget reached" : "");
    }
    return MP_OK;
  }
  double macs = 0;
  st = tl_build(z, z->c->rw, best_cut, best_n, &macs, err);
  if (st != MP_OK) return st;
  const mp_tensor *t = tl_t(z, mp_graph_op(z->g, best_cut)->outputs[0]);
  int64_t rows = t->shape[2].value;
  pass_tally(z->c, "bands");
  z->c->tally_count[z->c->n_tally - 1] = best_n;
  z->c->rewrites = best_cut + 1;
  mp_buf_printf(
      &z->c->note,
      "%u ops up to '%s' (%lld rows, %lld-%lld a band); bound in file "
      "order %zu -> %zu B; Conv MACs +%.1f%% (%.0f recomputed); %zu "
      "candidates%s",
      best_cut + 1, t->name, (long long)rows, (long long)(rows / best_n),
      (long long)((rows + best_n - 1) / best_n), base, best_lb,
      z->graph_macs > 0 ? 100.0 * (macs - prefix_best) / z->graph_macs : 0.0,
      macs - prefix_best, tried, cut_short ? " (search budget reached)" : "");
  return MP_OK;
}

mp_status pass_tile(pass_ctx *c, mp_error *err) {
  const mp_alloc *a = mp_graph_alloc(c->g);
  size_t n_ops = mp_graph_op_count(c->g), n_t = mp_graph_tensor_count(c->g);
  tl_ctx z = {.c = c, .g = c->g, .n_t = n_t};
  z.kind = mp_calloc(a, n_ops + 1, sizeof *z.kind);
  z.win = mp_calloc(a, n_ops + 1, sizeof *z.win);
  z.cuts = mp_calloc(a, n_ops + 1, sizeof *z.cuts);
  z.lo = mp_calloc(a, n_t + 1, sizeof *z.lo);
  z.hi = mp_calloc(a, n_t + 1, sizeof *z.hi);
  z.band = mp_calloc(a, n_t + 1, sizeof *z.band);
  mp_status st = MP_OK;
  if (!z.kind || !z.win || !z.cuts || !z.lo || !z.hi || !z.band) {
    st = mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory",
                      mp_graph_source(c->g));
  }
  if (st == MP_OK) st = tl_run(&z, err);
  mp_free(a, z.kind);
  mp_free(a, z.win);
  mp_free(a, z.cuts);
  mp_free(a, z.lo);
  mp_free(a, z.hi);
  mp_free(a, z.band);
  mp_free(a, z.crops);
  return st;
}
