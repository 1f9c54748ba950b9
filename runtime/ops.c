/*
 * ops.c -- one bundle op: its validation against the tensors it touches
 * (the loader's per-op check) and its execution with the scalar kernels.
 *
 * Invariants:
 *   1. A check derives every shape a kernel will use from the input
 *      tensors and the parameters, and requires the output tensors to
 *      have exactly those shapes; so a kernel never reads or writes past
 *      a tensor's bytes.
 *   2. Check and run decode parameters with the same functions (op_*
 *      decoders), so they cannot disagree about a layout.
 *   3. Run never allocates; scratch comes from the workspace sized by the
 *      check.
 *   4. An output in an input's buffer (in place, docs/ir-conventions.md)
 *      is accepted only for kernels that compute it safely: elementwise
 *      ops of equal shapes, normalisations, softmax, depthwise Conv whose
 *      output plane is no larger than its input plane, and views.
 *   5. f16 and bf16 tensors go to every kernel that computes through
 *      mp_k_load and mp_k_store (in double, rounded once to the output
 *      type). An op whose check refuses them (its kernel computes in f32
 *      only: Conv, Gemm, MatMul, pooling, ...) is checked again with each
 *      16-bit tensor replaced by an f32 tensor of its shape in the
 *      workspace (op_wide); run then widens the inputs (exactly), runs
 *      the f32 kernel and rounds the outputs to nearest even. The same
 *      tensor read twice is widened once; the f32 copies share no bytes
 *      with each other or the arena, so the op runs out of place on them
 *      and the rounded outputs are written after every input was read. A
 *      prologue's operand (an integer tensor) is not widened by op_wide:
 *      the prologue widens it, and rounds each result to the head's
 *      16-bit type (op_pro_round) as the absorbed op rounded its output.
 */
#include "op_ctx.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* The kernels: on riscv64 with V (MPLAN_RVV) the RVV kernels, which have
 * the scalar ones' signatures and hand them the cases they do not cover
 * (mplan/kernels_rvv.h); elsewhere the scalar reference kernels. */
#ifdef MPLAN_RVV
#include "mplan/kernels_rvv.h"
#define OP_K(name) mp_kv_##name
#define OP_MEMMOVE mp_kv_memmove
#else
#define OP_K(name) mp_k_##name
#define OP_MEMMOVE memmove
#endif

/* ---- the head tail: prologue and epilogue (docs/ir-conventions.md) ------- */

#define OP_MAX_EPI 64

typedef struct op_epi {
  int code;
  uint32_t n_extra;
  double alpha, beta;
} op_epi;

/* A prologue on head input 0 (X, A) or 1 (W, B). */
typedef struct op_pro {
  int kind; /* 0 none, 1 DequantizeLinear, 2 Cast, 3 DequantizeLinear
               blocked (block) */
  int64_t axis, block;
  uint32_t slot; /* a DequantizeLinear's scale is input own + extras + slot,
                    its zero point the next */
} op_pro;

typedef struct op_tail {
  op_pro pro[2]; /* by the head input it widens */
  uint32_t n_pro, n_dq;
  uint32_t n_epi;
  op_epi epi[OP_MAX_EPI];
  uint32_t extras; /* inputs taken by the epilogue */
} op_tail;

static void rd_tail(op_rd *r, op_tail *t) {
  memset(t, 0, sizeof *t);
  t->n_pro = (uint32_t)rd_range(r, 0, 2);
  for (uint32_t j = 0; j < t->n_pro && !r->bad; j++) {
    int kind = (int)rd_range(r, 1, 3);
    uint32_t k = (uint32_t)rd_range(r, 0, 1);
    op_pro *p = &t->pro[k];
    if (p->kind) r->bad = true; /* two prologues on one input */
    p->kind = kind;
    p->axis = rd_range(r, -MP_K_MAX_RANK, MP_K_MAX_RANK - 1);
    if (kind == 3) p->block = rd_range(r, 1, INT32_MAX);
    if (kind != 2) p->slot = 2 * t->n_dq++;
  }
  t->n_epi = (uint32_t)rd_range(r, 0, OP_MAX_EPI);
  for (uint32_t k = 0; k < t->n_epi && !r->bad; k++) {
    op_epi *e = &t->epi[k];
    e->code = (int)rd_range(r, 0, 0x5ff);
    e->n_extra = (uint32_t)rd_range(r, 0, 4);
    e->alpha = rd_f(r);
    e->beta = rd_f(r);
    t->extras += e->n_extra;
  }
}

static bool op_dq(const op_pro *p) {
  return p->kind == 1 || p->kind == 3;
}

/* Whether the epilogue ends in a QuantizeLinear (MP_BEPI_QUANTIZE): the
 * entries before it run over an f32 value the head never stores whole. */
static bool op_quant_tail(const op_tail *t) {
  return t->n_epi && (t->epi[t->n_epi - 1].code & 0xf00) == MP_BEPI_QUANTIZE;
}

/* Whether an epilogue goes on through QDQ pairs (fuse.c condition 8): a
 * QuantizeLinear entry before the last (op_check_requant), or a binary
 * entry whose operand a DequantizeLinear widens (3 inputs). Such entries
 * need a scratch tile (op_epi_tile's wq), so the epilogue runs a tile, a
 * plane or a row at a time. */
static bool op_epi_chained(const op_tail *t) {
  for (uint32_t k = 0; k < t->n_epi; k++) {
    int cls = t->epi[k].code & 0xf00;
    if ((cls == MP_BEPI_QUANTIZE && k + 1 < t->n_epi) ||
        (cls == MP_BEPI_BINARY && t->epi[k].n_extra == 3)) {
      return true;
    }
  }
  return false;
}

/* The value the epilogue's entries see: output y, or under op_quant_tail
 * its f32 view (the same tensor but for the dtype). */
static mp_btensor op_epi_value(const op_tail *t, const mp_btensor *y) {
  mp_btensor v = *y;
  if (op_quant_tail(t)) v.dtype = MP_KD_F32;
  return v;
}

/* The head's own inputs: what is left after the epilogue's extra inputs
 * and each DequantizeLinear prologue's two trailing slots (scale, zero
 * point; the zero point may be NONE). */
static uint32_t op_own(const op_ctx *c, const op_tail *t) {
  uint32_t tail = t->extras + 2 * t->n_dq;
  return c->op->n_in > tail ? c->op->n_in - tail : 0;
}

/* The input of the scale (z 0) or zero point (z 1) of input k's
 * DequantizeLinear prologue. */
static uint32_t op_pro_at(const op_tail *t, uint32_t own, uint32_t k,
                          uint32_t z) {
  return own + t->extras + t->pro[k].slot + z;
}

/* Input k's prologue axis in [0, rank) (per tensor: unused). */
static int64_t op_pro_axis(const op_tail *t, uint32_t k, const mp_btensor *x) {
  int64_t a = t->pro[k].axis;
  return a < 0 ? a + x->shape.rank : a;
}

/* Effective dtype of head input k: the prologue widens it to f32. */
static int op_in_dtype(const op_ctx *c, const op_tail *t, uint32_t k) {
  const mp_btensor *x = op_in(c, k);
  if (k < 2 && t->pro[k].kind) return MP_KD_F32;
  return x ? x->dtype : 0;
}

/* The scale s and zero point z (or NULL) of a QuantizeLinear or
 * DequantizeLinear of x, quantized type qd: one value, one per channel of
 * axis, or (block > 0) x's shape with ceil(dim / block) along axis; z has
 * s's shape and type qd. axis is checked in [0, rank) when it is used. */
static bool op_quant_params(op_ctx *c, const mp_btensor *x, const mp_btensor *s,
                            const mp_btensor *z, int qd, int64_t axis,
                            int64_t block) {
  int64_t ns = op_count(s);
  if ((ns != 1 || block) && (axis < 0 || axis >= x->shape.rank)) {
    return op_fail(c, "bad axis %lld", (long long)axis);
  }
  if (block) {
    if (block < 1 || s->shape.rank != x->shape.rank) {
      return op_fail(c, "block_size %lld or the scale's rank does not fit",
                     (long long)block);
    }
    for (uint32_t d = 0; d < x->shape.rank; d++) {
      int64_t n = x->shape.dims[d];
      int64_t want = (int64_t)d == axis ? n / block + (n % block != 0) : n;
      if (s->shape.dims[d] != want) {
        return op_fail(c, "blocked scale's dim %u is %lld, not %lld", d,
                       (long long)s->shape.dims[d], (long long)want);
      }
    }
  } else if (ns != 1 && (s->shape.rank != 1 || ns != x->shape.dims[axis])) {
    return op_fail(
        c, "scale '%s' is neither a scalar nor per channel of axis %lld",
        s->name, (long long)axis);
  }
  if (z && (z->dtype != qd || (block ? !op_same_shape(&z->shape, &s->shape)
                                     : op_count(z) != ns))) {
    return op_fail(c, "zero point '%s' does not match the scale and the type",
                   z->name);
  }
  return true;
}

/* x as [outer, ch, inner] around axis for parameters per channel or
 * blocked (ns values, block > 0), else [1, 1, all] (op_quant_params
 * checked axis then). */
static void op_quant_view(const mp_btensor *x, int64_t ns, int64_t axis,
                          int64_t block, int64_t *v) {
  v[0] = 1, v[1] = 1, v[2] = op_count(x);
  if (ns == 1 && !block) return;
  for (int64_t i = 0; i < axis; i++) v[0] *= x->shape.dims[i];
  v[1] = x->shape.dims[axis];
  v[2] = op_div(op_count(x), v[0] * v[1]);
}

/* DequantizeLinear of x (at px) by scale s (at ps) and zero point pz into
 * f32 y: blocked on the scalar kernel on every target. */
static void op_dequantize(const mp_btensor *x, const void *px,
                          const mp_btensor *s, const void *ps, const void *pz,
                          int64_t axis, int64_t block, float *y) {
  int64_t v[3], ns = op_count(s);
  op_quant_view(x, ns, axis, block, v);
  if (block) {
    mp_k_dequantize_blocked(v[0], v[1], v[2], block, x->dtype, px, ps, pz, y);
  } else {
    OP_K(dequantize)(v[0], v[1], v[2], x->dtype, px, ps, (int)ns, pz, y);
  }
}

/* A MatMul or Gemm whose DequantizeLinear or Cast prologue reads its
 * weight (input 1, a matrix) widens it a panel of the output's columns at a
 * time (op_run_gemm_panels): the columns of each panel, so that the panel holds
 * at most OP_PANEL_BYTES of f32 (one column at least). */
#define OP_PANEL_BYTES 65536

/* How many parts of per f32 elements a panel holds: OP_PANEL_BYTES of
 * them, one at least, max at most. */
static int64_t op_panel_count(int64_t per, int64_t max) {
  int64_t n = per > 0 ? OP_PANEL_BYTES / 4 / per : max;
  return n < 1 ? 1 : n > max ? max : n;
}

typedef struct op_gemmp {
  int64_t ta, tb, shift, horiz;
  double alpha, beta;
} op_gemmp;

static void rd_gemm(op_rd *r, op_gemmp *p, bool gemm);

typedef struct op_convp {
  int64_t nd, group, shift;
  int64_t k[3], s[3], d[3], pb[3], pe[3], op[3];
} op_convp;

static void rd_conv(op_rd *r, op_convp *p);

/* A MatMul with such a prologue, A of rank 2 or more and W a matrix, or a
 * Gemm with such a prologue (an epilogue operand in y's buffer too: the
 * rows then go in blocks). *tb: W is [N, K] (Gemm's transB), so a panel
 * is a run of W's rows. */
static bool op_panels(const op_ctx *c, const op_tail *t, uint32_t own,
                      bool *tb) {
  bool gemm = c->op->kernel == MP_BOP_GEMM;
  if ((c->op->kernel != MP_BOP_MATMUL && !gemm) || !t->pro[1].kind ||
      own != (gemm ? 3u : 2u) || c->op->n_out != 1) {
    return false;
  }
  const mp_btensor *a = op_in(c, 0), *b = op_in(c, 1);
  if (!a || !b || a->shape.rank < 2 || b->shape.rank != 2) return false;
  if (!gemm) {
    *tb = false;
    return true;
  }
  op_rd r = op_reader(c);
  op_gemmp p;
  rd_gemm(&r, &p, true);
  *tb = p.tb != 0;
  return !r.bad && a->shape.rank == 2;
}

/* Whether c is a Gemm with transA: its A is stored [K, M]. */
static bool op_gemm_ta(const op_ctx *c) {
  if (c->op->kernel != MP_BOP_GEMM) return false;
  op_rd r = op_reader(c);
  op_gemmp p;
  rd_gemm(&r, &p, true);
  return !r.bad && p.ta;
}

/* The panel's K and N of weight b (op_panels' tb) and its columns. */
static int64_t op_panel_cols(const mp_btensor *b, bool tb, int64_t *k,
                             int64_t *n) {
  *k = b->shape.dims[tb ? 1 : 0], *n = b->shape.dims[tb ? 0 : 1];
  return op_panel_count(*k, *n);
}

/* Rows per epilogue block when an epilogue operand lives in y's buffer: at
 * most OP_PANEL_BYTES of f32 rows of n, one at least. */
static int64_t op_panel_rows(int64_t n, int64_t m) {
  return op_panel_count(n, m);
}

/* Under op_panels, the rows of a batch's m that go together (0: every row
 * of every batch in one pass over the panels): a block of op_panel_rows
 * when an epilogue operand lives in y's buffer, and no more rows of A than
 * OP_PANEL_BYTES of f32 when A's prologue widens it (a block at a time,
 * the panels widened again for each block). */
static int64_t op_panels_rb(const op_tail *t, bool aliased, int64_t m,
                            int64_t n, int64_t k) {
  if (!aliased && !t->pro[0].kind) return 0;
  int64_t rb = aliased ? op_panel_rows(n, m) : m;
  if (t->pro[0].kind) {
    int64_t ra = op_panel_count(k, m);
    if (ra < rb) rb = ra;
  }
  return rb;
}

/* A Conv whose DequantizeLinear or Cast prologue reads its weight W [M,
 * C/group, k...] widens it a panel of output channels at a time
 * (op_weight_rows): at most OP_PANEL_BYTES of f32 (one channel at least), never
 * across a group's boundary, each panel convolved alone by the kernel's own
 * per-channel loop, so every output element is the same sum. */
static bool op_conv_panels(const op_ctx *c, const op_tail *t) {
  return c->op->kernel == MP_BOP_CONV && t->pro[1].kind;
}

static int64_t op_conv_panel_ch(const mp_btensor *w) {
  int64_t m = w->shape.dims[0];
  return op_panel_count(m > 0 ? op_count(w) / m : 0, m);
}

/* A grouped Conv (group > 1: a depthwise one among them) whose prologue
 * widens its input X (input 0) widens it a panel of whole groups of one
 * batch at a time (op_run_conv_xgroups): each group's output channels
 * read its input channels only. The groups of a panel, at most
 * OP_PANEL_BYTES of f32 (one group at least); 0 when the Conv has one
 * group (op_conv_band). *per: one group's elements of a batch. */
static int64_t op_conv_xgroups(const op_ctx *c, const op_tail *t,
                               int64_t *per) {
  if (c->op->kernel != MP_BOP_CONV || !t->pro[0].kind) return 0;
  op_rd r = op_reader(c);
  op_convp p;
  rd_conv(&r, &p);
  const mp_btensor *x = op_in(c, 0);
  if (r.bad || p.group <= 1 || !x || x->shape.rank < 3 ||
      x->shape.dims[0] < 1 || x->shape.dims[1] % p.group) {
    return 0;
  }
  *per = op_count(x) / x->shape.dims[0] / p.group;
  return op_panel_count(*per, p.group);
}

static void op_kconv(const op_convp *p, const mp_kshape *x, const mp_kshape *y,
                     int64_t m, mp_kconv *k);
static bool op_epi_aliased(const op_ctx *c, const op_tail *t, uint32_t own,
                           const mp_btensor *y);

/* A Conv of one group whose prologue widens X (input 0) widens it a band
 * at a time (op_run_conv_bands): a band is a run of output rows along the
 * outermost spatial axis (j of mp_kconv's three), and it reads a run of
 * input rows of every input channel, the taps of those outputs; each
 * output element is the same sum of the same taps in the same order (the
 * kernel's invariant 1), so the band's outputs have the whole
 * convolution's bits. The band's outputs go through the workspace (ybuf:
 * mch channels at a time, a weight panel's under op_conv_panels) into
 * their rows of y. */
typedef struct op_band {
  int j;
  int64_t rows; /* output rows of a band */
  int64_t span; /* input rows a band reads, at most */
  int64_t xin;  /* elements of an input row (the dims after j) */
  int64_t yin;  /* elements of an output row */
  int64_t mch;  /* output channels computed together */
} op_band;

/* With an epilogue operand in y's buffer, each output row of the band
 * goes over the operand's row after it was saved, and the epilogue runs
 * on that row (op_run_conv_planes' way, a row at a time).
 *
 * A ConvTranspose (of any group count; its kernel runs every channel of
 * the band at once, mch = M) bands the same way: output rows [o0, o0 + R)
 * gather the input rows i whose taps i * s - pad + k * d land in them
 * (op_convt_rows), and each output element gets the same terms in the
 * same order (input channel, then input position ascending: the kernels'
 * order), so the same bits. A band of R rows reads at most
 * (R + ext - 2) / s + 1 input rows. */
static bool op_conv_band(const op_ctx *c, const op_tail *t, op_band *b) {
  bool transpose = c->op->kernel == MP_BOP_CONV_TRANSPOSE;
  if ((c->op->kernel != MP_BOP_CONV && !transpose) || !t->pro[0].kind ||
      c->op->n_out != 1) {
    return false;
  }
  op_rd r = op_reader(c);
  op_convp p;
  rd_conv(&r, &p);
  const mp_btensor *x = op_in(c, 0), *w = op_in(c, 1), *y = op_out(c, 0);
  if (r.bad || (p.group != 1 && !transpose) || !x || !w || !y ||
      w->shape.rank < 1 || x->shape.rank != (uint32_t)p.nd + 2 ||
      y->shape.rank != x->shape.rank) {
    return false;
  }
  mp_kconv k;
  op_kconv(&p, &x->shape, &y->shape, y->shape.dims[1], &k);
  int j = 3 - (int)p.nd;
  if (k.in[j] < 1 || k.out[j] < 1) return false;
  b->j = j;
  b->xin = b->yin = 1;
  for (int i = j + 1; i < 3; i++) b->xin *= k.in[i], b->yin *= k.out[i];
  b->mch = !transpose && op_conv_panels(c, t) ? op_conv_panel_ch(w) : k.m;
  int64_t ext = k.dil[j] * (k.k[j] - 1) + 1, s = k.stride[j];
  int64_t rx = op_panel_count(k.c * b->xin, k.in[j]); /* input rows */
  int64_t nx = rx > ext ? (rx - ext) / s + 1 : 1;
  if (transpose) nx = (rx - 1) * s - ext + 2 > 1 ? (rx - 1) * s - ext + 2 : 1;
  int64_t ny = op_panel_count(b->mch * b->yin, k.out[j]);
  b->rows = nx < ny ? nx : ny;
  if (transpose) {
    int64_t span = (b->rows + ext - 2) / s + 1;
    b->span = span < k.in[j] ? span : k.in[j];
  } else {
    b->span = ext >= k.in[j] || b->rows - 1 > (k.in[j] - ext) / s
                  ? k.in[j]
                  : (b->rows - 1) * s + ext;
  }
  return true;
}

/* The input rows [*lo, *hi) of a Conv along axis j that the taps of
 * output rows [o0, o0 + n) read, and the band's pad: the distance from
 * the band's first input row to its first output row's first tap. */
static void op_conv_rows(const mp_kconv *k, int j, int64_t o0, int64_t n,
                         int64_t *lo, int64_t *hi, int64_t *pad) {
  int64_t s = k->stride[j], ext = k->dil[j] * (k->k[j] - 1) + 1;
  int64_t first = o0 * s - k->pad[j];
  *lo = first < 0 ? 0 : first > k->in[j] ? k->in[j] : first;
  *hi = first + (n - 1) * s + ext;
  if (*hi > k->in[j]) *hi = k->in[j];
  if (*hi < *lo) *hi = *lo;
  *pad = *lo - first;
}

/* The input rows [*lo, *hi) of a ConvTranspose along axis j whose taps
 * reach output rows [o0, o0 + n), and the band's pad: an input row
 * i - *lo of the band lands at i * s - pad + k * d - o0. */
static void op_convt_rows(const mp_kconv *k, int j, int64_t o0, int64_t n,
                          int64_t *lo, int64_t *hi, int64_t *pad) {
  int64_t s = k->stride[j], ext = k->dil[j] * (k->k[j] - 1) + 1;
  int64_t a = o0 + k->pad[j] - (ext - 1), e = o0 + n - 1 + k->pad[j];
  *lo = a <= 0 ? 0 : (a + s - 1) / s;
  *hi = e < 0 ? 0 : e / s + 1;
  if (*lo > k->in[j]) *lo = k->in[j];
  if (*hi > k->in[j]) *hi = k->in[j];
  if (*hi < *lo) *hi = *lo;
  *pad = k->pad[j] + o0 - *lo * s;
}

/* A MatMul or Gemm whose prologue widens A (input 0, rank 2 or more)
 * widens it a block of rows at a time (op_gemm_arows): each row of y
 * reads its row of A only, a row of A, or with a Gemm's transA a column
 * of the stored A [K, M] (op_ablock). The rows of a block, at most
 * OP_PANEL_BYTES of f32 (one row at least; an epilogue operand in y's
 * buffer runs row by row, op_gemm_rows, each row of A widened alone); 0
 * when A is widened whole (a horizontal fusion). With W's panels too,
 * op_panels_rb. */
static int64_t op_arows(const op_ctx *c, const op_tail *t, int64_t *kk) {
  bool gemm = c->op->kernel == MP_BOP_GEMM;
  if ((c->op->kernel != MP_BOP_MATMUL && !gemm) || !t->pro[0].kind ||
      c->op->n_out != 1) {
    return 0;
  }
  op_rd r = op_reader(c);
  op_gemmp p;
  rd_gemm(&r, &p, gemm);
  const mp_btensor *a = op_in(c, 0), *b = op_in(c, 1), *y = op_out(c, 0);
  if (r.bad || p.horiz || !a || !b || !y || a->shape.rank < 2) return 0;
  uint32_t rk = a->shape.rank; /* a Gemm's A is a matrix */
  int64_t k = a->shape.dims[p.ta ? 0 : rk - 1],
          m = a->shape.dims[p.ta ? 1 : rk - 2];
  if (kk) *kk = k;
  return op_panel_count(k, m);
}

/* A MatMul whose prologue widens a batched B (rank 3 or more) widens it
 * one matrix of its batch at a time (op_run_gemm's loop over the batch):
 * each product of the batch reads its own matrix of B only. The elements
 * of one matrix; 0 when B is a matrix (op_panels, or widened whole). */
static int64_t op_bslices(const op_ctx *c, const op_tail *t) {
  const mp_btensor *b = op_in(c, 1);
  if (c->op->kernel != MP_BOP_MATMUL || !t->pro[1].kind || !b ||
      b->shape.rank < 3) {
    return 0;
  }
  return b->shape.dims[b->shape.rank - 2] * b->shape.dims[b->shape.rank - 1];
}

/* The f32 elements of the buffer in which input k's prologue is widened
 * a part at a time (op_conv_panels, op_bslices, op_conv_xgroups,
 * op_conv_band, op_arows), or -1: widened whole (op_run_prologue). */
static int64_t op_widen_part(const op_ctx *c, const op_tail *t, uint32_t k) {
  const mp_btensor *x = op_in(c, k);
  if (k == 1) {
    int64_t nb = op_bslices(c, t);
    if (nb) return nb;
    return op_conv_panels(c, t) && x->shape.rank >= 1 && x->shape.dims[0] > 0
               ? op_count(x) / x->shape.dims[0] * op_conv_panel_ch(x)
               : -1;
  }
  op_band b;
  int64_t per, ka, xg = op_conv_xgroups(c, t, &per), arb = op_arows(c, t, &ka);
  if (xg) return xg * per;
  if (op_conv_band(c, t, &b)) return x->shape.dims[1] * b.span * b.xin;
  if (arb) return arb * ka;
  return -1;
}

/* n f32 elements taken from the workspace. */
static float *op_ws_take(op_ctx *c, int64_t n) {
  float *buf = (float *)(void *)c->ws;
  c->ws += ((size_t)n * 4 + 63) / 64 * 64;
  return buf;
}

/* That buffer of input k, taken from the workspace; NULL when widened
 * whole. */
static float *op_widen_take(op_ctx *c, const op_tail *t, uint32_t k) {
  int64_t n = t->pro[k].kind ? op_widen_part(c, t, k) : -1;
  return n < 0 ? NULL : op_ws_take(c, n);
}

static bool op_check_prologue(op_ctx *c, const op_tail *t, uint32_t own) {
  for (uint32_t k = 0; k < 2; k++) {
    const op_pro *pk = &t->pro[k];
    if (!pk->kind) continue;
    const mp_btensor *x = op_in(c, k);
    if (!x || k >= own) return op_fail(c, "prologue input %u is missing", k);
    if (op_dq(pk)) {
      int d = x->dtype;
      if (d != MP_KD_I8 && d != MP_KD_U8 && d != MP_KD_I4 && d != MP_KD_U4 &&
          d != MP_KD_I32) {
        return op_fail(c,
                       "prologue DequantizeLinear: input '%s' is %s, not "
                       "an integer type",
                       x->name, mp_kd_name(x->dtype));
      }
      const mp_btensor *s = op_in(c, op_pro_at(t, own, k, 0));
      const mp_btensor *z = op_in(c, op_pro_at(t, own, k, 1));
      if (!s || s->dtype != MP_KD_F32) {
        return op_fail(c, "prologue DequantizeLinear: no f32 scale input");
      }
      if (!op_quant_params(c, x, s, z, d, op_pro_axis(t, k, x), pk->block)) {
        return false;
      }
    } else if (x->dtype == MP_KD_F32) {
      return op_fail(c, "prologue Cast: input '%s' is already f32", x->name);
    } else if (mp_kd_bits(x->dtype) == 4) {
      return op_fail(c, "prologue Cast: input '%s' is 4-bit", x->name);
    }
  }
  bool tb;
  if (op_panels(c, t, own, &tb)) {
    /* a panel of the weight and the product's panel of a block of rows;
     * with an epilogue operand in y's buffer, the block and a row twice;
     * with A's prologue, the block of A (op_run_gemm_panels) */
    const mp_btensor *a = op_in(c, 0);
    int64_t k, n, nc = op_panel_cols(op_in(c, 1), tb, &k, &n);
    bool ta = op_gemm_ta(c);
    int64_t m = a->shape.dims[ta ? 1 : a->shape.rank - 2];
    bool aliased = op_epi_aliased(c, t, own, op_out(c, 0)) || op_quant_tail(t);
    int64_t rb = op_panels_rb(t, aliased, m, n, k);
    bool blocked = rb > 0;
    if (!blocked) rb = m;
    c->need_ws += (size_t)(k * nc) * 4 + 64 + (size_t)(rb * nc) * 4 + 64;
    /* the block of A: widened, or with transA copied (op_ablock) */
    if (t->pro[0].kind || (ta && blocked)) {
      c->need_ws += (size_t)(rb * k) * 4 + 64;
    }
    if (aliased) {
      c->need_ws += (size_t)(rb * n) * 4 + 64 + 2 * ((size_t)n * 4 + 64);
    }
    return true;
  }
  for (uint32_t k = 0; k < 2; k++) {
    if (!t->pro[k].kind) continue;
    int64_t part = op_widen_part(c, t, k);
    c->need_ws += (size_t)(part >= 0 ? part : op_count(op_in(c, k))) * 4 + 64;
  }
  op_band b;
  if (op_conv_band(c, t, &b)) {
    c->need_ws += (size_t)(b.mch * b.rows * b.yin) * 4 + 64; /* ybuf */
  }
  return true;
}

/* An epilogue that taps an earlier value (MP_BEPI_TAP) runs one tile of y
 * at a time, every entry over the tile before the next tile, so the value
 * it keeps is one tile, not the whole output: y's trailing dims from axis
 * op_epi_split(y) on, at most OP_EPI_TILE elements unless the last axis
 * alone is longer. Every entry is elementwise, so the results are those of
 * entry after entry over the whole tensor, bit for bit. */
#define OP_EPI_TILE 4096

static uint32_t op_epi_split(const mp_kshape *y) {
  if (y->rank == 0) return 0;
  uint32_t s = y->rank - 1;
  int64_t n = y->dims[s];
  while (s > 0 && n * y->dims[s - 1] <= OP_EPI_TILE) n *= y->dims[--s];
  return s;
}

static size_t op_epi_tile_bytes(const mp_btensor *y) {
  uint32_t s = op_epi_split(&y->shape);
  size_t n = 1;
  for (uint32_t d = s; d < y->shape.rank; d++) n *= (size_t)y->shape.dims[d];
  return n * mp_kd_size(y->dtype);
}

/* The entry whose input value a TAP entry reads (the first TAP entry's),
 * or UINT32_MAX when none does. */
static uint32_t op_tap(const op_tail *t) {
  for (uint32_t k = 0; k < t->n_epi; k++) {
    if ((t->epi[k].code & 0xf00) == MP_BEPI_TAP) {
      double a = t->epi[k].alpha;
      return a >= 0 && a <= (double)k ? (uint32_t)a : UINT32_MAX - 1;
    }
  }
  return UINT32_MAX;
}

/* true when an epilogue operand lives in y's buffer (in place over it:
 * op_check_epilogue allows only the same offset and size). */
static bool op_epi_aliased(const op_ctx *c, const op_tail *t, uint32_t own,
                           const mp_btensor *y) {
  uint32_t at = own;
  for (uint32_t k = 0; k < t->n_epi; k++) {
    const op_epi *e = &t->epi[k];
    if ((e->code & 0xf00) == MP_BEPI_BINARY && e->n_extra == 1 &&
        op_aliases(op_in(c, at), y)) {
      return true;
    }
    at += e->n_extra;
  }
  return false;
}

/* A QuantizeLinear entry (MP_BEPI_QUANTIZE) of a Conv's, ConvTranspose's,
 * Gemm's or MatMul's epilogue, the last, its scale and zero point from
 * input at, into y. */
static bool op_check_quant_tail(op_ctx *c, bool last, const op_epi *e,
                                uint32_t at, const mp_btensor *y) {
  const mp_btensor *s = op_in(c, at), *z = op_in(c, at + 1);
  int64_t ch = y->shape.rank >= 2 ? y->shape.dims[1] : 1;
  /* per output channel or per tensor (a BatchNormalization head runs a
   * tile of one channel at a time) */
  bool conv = c->op->kernel == MP_BOP_CONV ||
              c->op->kernel == MP_BOP_CONV_TRANSPOSE ||
              c->op->kernel == MP_BOP_BATCHNORM;
  /* the others quantize per tensor only */
  bool one = c->op->kernel == MP_BOP_GEMM || c->op->kernel == MP_BOP_MATMUL ||
             c->op->kernel == MP_BOP_UNARY || c->op->kernel == MP_BOP_BINARY ||
             c->op->kernel == MP_BOP_MAXPOOL ||
             c->op->kernel == MP_BOP_AVGPOOL ||
             c->op->kernel == MP_BOP_CONCAT || c->op->kernel == MP_BOP_RESIZE;
  if (!last || !(conv || one) || e->n_extra != 2 || !s) {
    return op_fail(c,
                   "epilogue QuantizeLinear ends a Conv's, ConvTranspose's, "
                   "Gemm's, MatMul's, elementwise op's, pool's, Concat's, "
                   "Resize's or BatchNormalization's epilogue only, "
                   "with a scale and a zero point or none");
  }
  if (one && op_count(s) != 1) {
    return op_fail(c,
                   "epilogue QuantizeLinear of an op other than a Conv, "
                   "ConvTranspose or BatchNormalization: scale '%s' is not "
                   "one value",
                   s->name);
  }
  if (y->dtype != MP_KD_I8 && y->dtype != MP_KD_U8) {
    return op_fail(c,
                   "epilogue QuantizeLinear writes '%s' as %s (int8 or "
                   "uint8 only)",
                   y->name, mp_kd_name(y->dtype));
  }
  if (s->dtype != MP_KD_F32 || (op_count(s) != 1 && op_count(s) != ch)) {
    return op_fail(c,
                   "epilogue QuantizeLinear scale '%s' is not f32, one "
                   "value or %" PRId64 " (one per output channel)",
                   s->name, ch);
  }
  if (z ? z->dtype != y->dtype || op_count(z) != op_count(s)
        : y->dtype != MP_KD_U8) {
    return op_fail(c,
                   "epilogue QuantizeLinear zero point does not match "
                   "'%s' (its type, one per scale)",
                   y->name);
  }
  return true;
}

/* Entries k (QuantizeLinear, not the last) and k + 1 of an elementwise
 * head's epilogue, their inputs from at: the pair rounds the f32 value
 * through the DequantizeLinear entry's 8-bit type (MP_BEPI_DEQUANTIZE),
 * each with one f32 scale and a zero point of that type or none. */
static bool op_check_requant(op_ctx *c, const op_tail *t, uint32_t k,
                             uint32_t at) {
  const op_epi *q = &t->epi[k], *d = &t->epi[k + 1];
  int kd = d->code & 0xff;
  if ((c->op->kernel != MP_BOP_UNARY && c->op->kernel != MP_BOP_BINARY &&
       c->op->kernel != MP_BOP_CONV &&
       c->op->kernel != MP_BOP_CONV_TRANSPOSE) ||
      (d->code & 0xf00) != MP_BEPI_DEQUANTIZE || q->n_extra != 2 ||
      d->n_extra != 2 || (kd != MP_KD_I8 && kd != MP_KD_U8)) {
    return op_fail(c,
                   "epilogue entry %u: a QuantizeLinear before the last "
                   "entry is an elementwise op's, Conv's or "
                   "ConvTranspose's, followed by a DequantizeLinear of "
                   "int8 or uint8",
                   k);
  }
  for (uint32_t j = 0; j < 2; j++) {
    const mp_btensor *sc = op_in(c, at + 2 * j), *z = op_in(c, at + 2 * j + 1);
    if (!sc || sc->dtype != MP_KD_F32 || op_count(sc) != 1 ||
        (z && (z->dtype != kd || op_count(z) != 1))) {
      return op_fail(c,
                     "epilogue entry %u: %s scale is not one f32 value or "
                     "its zero point not one %s",
                     k + j, j ? "DequantizeLinear" : "QuantizeLinear",
                     mp_kd_name(kd));
    }
  }
  return true;
}

/* A binary entry whose operand v is under a DequantizeLinear (its scale
 * and zero point from input at + 1): 8-bit, of y's shape, one f32 scale;
 * in yq's buffer only at its offset, of its size, 8-bit, with yq quantized
 * (the epilogue reads a tile of v before the tile of yq goes over it). */
static bool op_check_qoperand(op_ctx *c, uint32_t at, const mp_btensor *v,
                              const mp_btensor *y, const mp_btensor *yq,
                              bool quant) {
  const mp_btensor *sc = op_in(c, at + 1), *z = op_in(c, at + 2);
  if ((v->dtype != MP_KD_I8 && v->dtype != MP_KD_U8) ||
      !op_same_shape(&v->shape, &y->shape) || !sc || sc->dtype != MP_KD_F32 ||
      op_count(sc) != 1 || (z && (z->dtype != v->dtype || op_count(z) != 1))) {
    return op_fail(c,
                   "epilogue operand '%s' under a DequantizeLinear: not "
                   "8-bit of the output's shape with one f32 scale and a "
                   "zero point of its type",
                   v->name);
  }
  if (op_aliases(v, yq) &&
      (!quant || v->offset != yq->offset || op_count(v) != op_count(yq) ||
       mp_kd_size(yq->dtype) != 1)) {
    return op_fail(c,
                   "epilogue operand '%s' shares the output's buffer at "
                   "another offset, with another size or element size",
                   v->name);
  }
  return true;
}

/* Checks the epilogue's extra inputs (after the head's own inputs) against
 * the head's output y, and counts its workspace: plane > 0 for a Conv head,
 * which runs plane by plane (plane elements each) when an operand lives in
 * y's buffer, when it quantizes, or when the epilogue goes on through QDQ
 * pairs (op_epi_chained; op_check_conv counts its scratch). */
static bool op_check_epilogue(op_ctx *c, const op_tail *t, uint32_t own,
                              const mp_btensor *yq, int64_t plane) {
  uint32_t at = own;
  bool tapped = false, quant = op_quant_tail(t);
  mp_btensor yf = op_epi_value(t, yq);
  const mp_btensor *y = &yf;
  size_t es = mp_kd_size(y->dtype);
  bool planes =
      plane > 0 && (quant || op_epi_chained(t) || op_epi_aliased(c, t, own, y));
  for (uint32_t k = 0; k < t->n_epi; k++) {
    const op_epi *e = &t->epi[k];
    int cls = e->code & 0xf00, op = e->code & 0xff;
    if (cls == MP_BEPI_UNARY) {
      if (op >= MP_KU_COUNT || (e->n_extra && op != MP_KU_CLIP) ||
          e->n_extra > 2) {
        return op_fail(c, "epilogue entry %u: bad unary op %d", k, op);
      }
      for (uint32_t j = 0; j < e->n_extra; j++) {
        const mp_btensor *v = op_in(c, at + j);
        if (v && (op_count(v) != 1 || v->dtype != y->dtype)) {
          return op_fail(c, "epilogue Clip bound '%s' is not a %s scalar",
                         v->name, mp_kd_name(y->dtype));
        }
      }
    } else if (cls == MP_BEPI_BINARY && e->n_extra == 3) {
      const mp_btensor *v = op_in(c, at);
      if (op >= MP_KB_EQUAL || op == MP_KB_PRELU || !v ||
          (c->op->kernel != MP_BOP_UNARY && c->op->kernel != MP_BOP_BINARY &&
           c->op->kernel != MP_BOP_CONV &&
           c->op->kernel != MP_BOP_CONV_TRANSPOSE)) {
        return op_fail(c,
                       "epilogue entry %u: a binary op %d on a dequantized "
                       "operand (an elementwise op's, Conv's or "
                       "ConvTranspose's only)",
                       k, op);
      }
      if (!op_check_qoperand(c, at, v, y, yq, quant)) return false;
    } else if (cls == MP_BEPI_BINARY) {
      const mp_btensor *v = op_in(c, at);
      mp_kbcast bc;
      if (op >= MP_KB_EQUAL || e->n_extra != 1 || !v) {
        return op_fail(c, "epilogue entry %u: bad binary op %d", k, op);
      }
      if (v->dtype != y->dtype ||
          !mp_k_bcast_init(&bc, &y->shape, &y->shape, &v->shape, NULL)) {
        return op_fail(c,
                       "epilogue operand '%s' does not broadcast to the "
                       "output '%s' (or has another dtype)",
                       v->name, y->name);
      }
      if (op_aliases(v, y)) {
        /* In place over an epilogue operand (docs/ir-conventions.md): the
         * head computes into the workspace, the epilogue reads the
         * operand from there before the result is copied over it. */
        if (quant || v->offset != y->offset || op_count(v) != op_count(y)) {
          return op_fail(c,
                         "epilogue operand '%s' shares the output's buffer "
                         "at another offset or with another size",
                         v->name);
        }
        c->need_ws += (size_t)(planes ? plane : op_count(y)) * es + 64;
      }
    } else if (cls == MP_BEPI_TAP) {
      /* x * f(x): the operand is the value that entered entry alpha, kept
       * in the workspace (one tapped entry per epilogue). */
      if (op >= MP_KB_EQUAL || e->n_extra != 0 || !(e->alpha >= 0) ||
          e->alpha > (double)k || e->alpha != (double)(uint32_t)e->alpha) {
        return op_fail(c, "epilogue entry %u: bad tap of entry %g", k,
                       e->alpha);
      }
      if (op_tap(t) != (uint32_t)e->alpha) {
        return op_fail(c, "epilogue entry %u: a second tapped entry", k);
      }
      if ((t->epi[(uint32_t)e->alpha].code & 0xf00) == MP_BEPI_DEQUANTIZE) {
        return op_fail(c, "epilogue entry %u taps an 8-bit value", k);
      }
      if (!tapped) {
        /* one tile (or plane) of the tapped value is kept */
        c->need_ws += (planes ? (size_t)plane * es : op_epi_tile_bytes(y)) + 64;
        tapped = true;
      }
    } else if (cls == MP_BEPI_BATCHNORM) {
      if (e->n_extra != 4 || y->dtype != MP_KD_F32 || y->shape.rank < 2) {
        return op_fail(c,
                       "epilogue BatchNormalization needs 4 inputs and "
                       "an f32 output of rank >= 2");
      }
      for (uint32_t j = 0; j < 4; j++) {
        const mp_btensor *v = op_in(c, at + j);
        if (!v || v->dtype != MP_KD_F32 || op_count(v) != y->shape.dims[1]) {
          return op_fail(c,
                         "epilogue BatchNormalization input %u is not "
                         "f32 [%lld]",
                         j, (long long)y->shape.dims[1]);
        }
      }
    } else if (cls == MP_BEPI_QUANTIZE && k + 1 < t->n_epi) {
      if (!op_check_requant(c, t, k, at)) return false;
      at += e->n_extra;
      e = &t->epi[++k];
    } else if (cls == MP_BEPI_QUANTIZE) {
      if (!op_check_quant_tail(c, true, e, at, yq)) return false;
    } else {
      return op_fail(c, "epilogue entry %u: unknown class %#x", k, cls);
    }
    at += e->n_extra;
  }
  (void)at;
  return true;
}

/* Where the head writes its output y: y's bytes, or the workspace when an
 * epilogue operand lives in y's buffer; then op_finish_epilogue copies the
 * result over the operand. (A Conv or ConvTranspose head does it one
 * output plane at a time instead: op_run_conv_planes.) */
static void *op_head_out(op_ctx *c, const op_tail *t, uint32_t own,
                         const mp_btensor *y, void *py) {
  if (!op_epi_aliased(c, t, own, y)) return py;
  void *w = c->ws;
  c->ws += ((size_t)op_count(y) * mp_kd_size(y->dtype) + 63) / 64 * 64;
  return w;
}

static void op_finish_epilogue(const mp_btensor *y, void *head, void *py) {
  if (head != py) memcpy(py, head, (size_t)op_count(y) * mp_kd_size(y->dtype));
}

/* Input at's elements for the tile of y whose outer index (y's axes
 * before s) is idx: its bytes at that index (0 along a broadcast axis),
 * and in *vin its dims from axis s on (1 where it broadcasts). */
static const void *op_tile_operand(const op_ctx *c, uint32_t at,
                                   const mp_btensor *y, uint32_t s,
                                   const int64_t *idx, mp_kshape *vin) {
  const mp_btensor *v = op_in(c, at);
  uint32_t r = y->shape.rank, pad = r - v->shape.rank;
  int64_t vst[MP_K_MAX_RANK], off = 0;
  mp_kshape_strides(&v->shape, vst);
  vin->rank = r - s;
  for (uint32_t d = 0; d < r; d++) {
    int64_t vd = d < pad ? 1 : v->shape.dims[d - pad];
    if (d < s && vd != 1) off += idx[d] * vst[d - pad];
    if (d >= s) vin->dims[d - s] = vd;
  }
  return (const char *)op_pin(c, at) + (size_t)off * mp_kd_size(v->dtype);
}

/* Entry e (k-th, its extra inputs from at) over n elements of y at py,
 * the tile whose outer index (y's axes before s) is idx; kept holds the
 * tapped value of the same elements. s == 0: the whole tensor. */
static void op_epi_entry(op_ctx *c, const op_epi *e, uint32_t at,
                         const mp_btensor *y, uint32_t s, const int64_t *idx,
                         void *py, const void *kept, const void *saved,
                         float *wq) {
  int cls = e->code & 0xf00, op = e->code & 0xff;
  mp_kshape yin = {y->shape.rank - s, {0}};
  memcpy(yin.dims, y->shape.dims + s, yin.rank * sizeof *yin.dims);
  size_t n = (size_t)mp_kshape_count(&yin);
  mp_kbcast bc;
  if (cls == MP_BEPI_TAP) {
    (void)mp_k_bcast_init(&bc, &yin, &yin, &yin, NULL);
    OP_K(binary)((mp_kbinary)op, &bc, y->dtype, py, kept, y->dtype, py, false);
  } else if (cls == MP_BEPI_UNARY) {
    mp_kunary_params up = {e->alpha, e->beta};
    if (e->n_extra >= 1 && op_pin(c, at)) {
      up.alpha = mp_k_load(op_pin(c, at), y->dtype, 0);
    }
    if (e->n_extra >= 2 && op_pin(c, at + 1)) {
      up.beta = mp_k_load(op_pin(c, at + 1), y->dtype, 0);
    }
    OP_K(unary)((mp_kunary)op, &up, y->dtype, py, py, n);
  } else if (cls == MP_BEPI_BINARY) {
    const mp_btensor *v = op_in(c, at);
    mp_kshape vin;
    const void *pv = op_tile_operand(c, at, y, s, idx, &vin);
    /* an operand in y's buffer: the tile's copy taken before the head
     * wrote it (op_run_conv_planes), laid out as y's tile */
    bool copy = saved && op_aliases(v, y);
    if (e->n_extra == 3) { /* of y's shape, widened by its DequantizeLinear */
      OP_K(dequantize)(1, 1, (int64_t)n, v->dtype, pv,
                       (const float *)op_pin(c, at + 1), 1, op_pin(c, at + 2),
                       wq);
      pv = wq;
      copy = false;
      vin = yin;
    }
    (void)mp_k_bcast_init(&bc, &yin, &yin, copy ? &yin : &vin, NULL);
    if (copy) pv = saved;
    OP_K(binary)((mp_kbinary)op, &bc, y->dtype, py, pv, y->dtype, py, false);
  } else {
    /* BatchNormalization over axis 1: a tile within one channel (s >= 2)
     * takes that channel's parameters */
    int64_t nb = s == 0 ? y->shape.dims[0] : 1;
    int64_t ch = s >= 2 ? 1 : y->shape.dims[1];
    size_t c0 = s >= 2 ? (size_t)idx[1] : 0;
    OP_K(batchnorm_f32)(nb, ch, op_div((int64_t)n, nb * ch), py,
                        (const float *)op_pin(c, at) + c0,
                        (const float *)op_pin(c, at + 1) + c0,
                        (const float *)op_pin(c, at + 2) + c0,
                        (const float *)op_pin(c, at + 3) + c0, e->alpha, py);
  }
}

/* Every entry over one tile of y (bytes at pt, outer index idx over the
 * axes before s), the tapped value copied into kept when its entry comes;
 * saved: op_epi_entry. Up to the last QuantizeLinear (op_epi_quant): one
 * before it and the DequantizeLinear after it (op_check_requant) quantize
 * the f32 tile into wq and widen it back, with the kernels those ops
 * run; wq also holds a quantized operand widened (op_epi_entry). */
static void op_epi_tile(op_ctx *c, const op_tail *t, uint32_t own,
                        const mp_btensor *y, uint32_t s, const int64_t *idx,
                        void *pt, size_t bytes, void *kept, const void *saved,
                        float *wq) {
  uint32_t at = own, tap = op_tap(t);
  int64_t n = (int64_t)(bytes / mp_kd_size(y->dtype));
  for (uint32_t k = 0; k < t->n_epi; k++) {
    const op_epi *e = &t->epi[k];
    if ((e->code & 0xf00) == MP_BEPI_QUANTIZE && k + 1 == t->n_epi) break;
    if (k == tap) memcpy(kept, pt, bytes);
    if ((e->code & 0xf00) == MP_BEPI_QUANTIZE) {
      int kd = t->epi[k + 1].code & 0xff;
      OP_K(quantize)(1, 1, n, pt, (const float *)op_pin(c, at), 1,
                     op_pin(c, at + 1), kd, wq);
      OP_K(dequantize)(1, 1, n, kd, wq, (const float *)op_pin(c, at + 2), 1,
                       op_pin(c, at + 3), pt);
      at += e->n_extra + t->epi[++k].n_extra;
      continue;
    }
    op_epi_entry(c, e, at, y, s, idx, pt, kept, saved, wq);
    at += e->n_extra;
  }
}

/* The QuantizeLinear ending the epilogue (op_check_quant_tail) over n f32
 * values of output channel ch at src, into yq's elements at dst: the
 * kernel QuantizeLinear runs, one scale (the channel's) for all of them,
 * so each element gets the bits the op would give it. */
static void op_epi_quant(op_ctx *c, const op_tail *t, uint32_t own,
                         const mp_btensor *yq, int64_t ch, const float *src,
                         int64_t n, void *dst) {
  uint32_t at = own + t->extras - 2; /* its two inputs end the epilogue's */
  int64_t per = op_count(op_in(c, at)) > 1 ? ch : 0;
  const char *pz = op_pin(c, at + 1);
  OP_K(quantize)(1, 1, n, src, (const float *)op_pin(c, at) + per, 1,
                 pz ? pz + per * (int64_t)mp_kd_size(yq->dtype) : NULL,
                 yq->dtype, dst);
}

/* Applies the epilogue to y in place: entry after entry over the whole
 * tensor, or with a tapped value tile by tile (OP_EPI_TILE). */
static void op_run_epilogue(op_ctx *c, const op_tail *t, uint32_t own,
                            const mp_btensor *y, void *py) {
  bool tapped = op_tap(t) != UINT32_MAX;
  uint32_t s = tapped ? op_epi_split(&y->shape) : 0;
  size_t es = mp_kd_size(y->dtype), n = (size_t)op_count(y);
  size_t tile = tapped ? op_epi_tile_bytes(y) / es : n;
  int64_t idx[MP_K_MAX_RANK] = {0};
  for (size_t done = 0; done < n; done += tile) {
    op_epi_tile(c, t, own, y, s, idx, (char *)py + done * es, tile * es, c->ws,
                NULL, NULL);
    for (uint32_t d = s; d-- > 0;) {
      if (++idx[d] < y->shape.dims[d]) break;
      idx[d] = 0;
    }
  }
}

/* A prologue of a 16-bit head (run through f32, invariant 5) stood for a
 * DequantizeLinear or Cast whose output had the head's dtype: its n f32
 * results in buf are rounded to that dtype, as that op's output was, so
 * the head reads the unfused graph's values. */
static float *op_pro_round(const op_ctx *c, float *buf, int64_t n) {
  int d = c->wide ? c->wide->half : 0;
  if (!d) return buf;
  for (int64_t i = 0; i < n; i++) {
    uint16_t h;
    mp_k_store(&h, d, 0, buf[i]);
    buf[i] = (float)mp_k_load(&h, d, 0);
  }
  return buf;
}

/* The pointer the head reads for input k: its prologue's widened copy in
 * the workspace, or the tensor itself. */
static const void *op_run_prologue(op_ctx *c, const op_tail *t, uint32_t own,
                                   uint32_t k) {
  if (!t->pro[k].kind) return op_pin(c, k);
  const mp_btensor *x = op_in(c, k);
  float *w = op_ws_take(c, op_count(x));
  if (t->pro[k].kind == 2) {
    mp_k_cast(x->dtype, op_pin(c, k), MP_KD_F32, w, (size_t)op_count(x));
    return op_pro_round(c, w, op_count(x));
  }
  op_dequantize(x, op_pin(c, k), op_in(c, op_pro_at(t, own, k, 0)),
                op_pin(c, op_pro_at(t, own, k, 0)),
                op_pin(c, op_pro_at(t, own, k, 1)), op_pro_axis(t, k, x),
                t->pro[k].block, w);
  return op_pro_round(c, w, op_count(x));
}

/* Whether op_widen_range hands input k's DequantizeLinear runs of whole
 * rows (dim 0) to the vector kernel: whole bytes under one scale or one
 * per row (axis 0). */
static bool op_widen_whole(const op_ctx *c, const op_tail *t, uint32_t own,
                           uint32_t k) {
  const mp_btensor *x = op_in(c, k), *s = op_in(c, op_pro_at(t, own, k, 0));
  return mp_kd_size(x->dtype) && t->pro[k].kind != 3 &&
         (op_count(s) == 1 || op_pro_axis(t, k, x) == 0);
}

/* Elements [e0, e0 + n) of input k widened by its prologue into buf: a
 * Conv's output channels of its weight (op_conv_panels), groups or a
 * channel's band of rows of its input (op_conv_xgroups, op_conv_band), a
 * transposed Gemm weight's output columns (op_run_gemm_panels), rows of
 * A (op_arows). A Cast converts the run; a DequantizeLinear's run of
 * op_widen_whole (per tensor, or whole rows per row) goes to the vector
 * kernel as a tensor of its own, any other to the kernel that indexes
 * the whole tensor's parameters. */
static const float *op_widen_range(op_ctx *c, const op_tail *t, uint32_t own,
                                   uint32_t k, int64_t e0, int64_t n,
                                   float *buf) {
  const mp_btensor *x = op_in(c, k);
  const char *px = op_pin(c, k);
  size_t es = mp_kd_size(x->dtype);
  if (t->pro[k].kind == 2) {
    mp_k_cast(x->dtype, px + (size_t)e0 * es, MP_KD_F32, buf, (size_t)n);
    return op_pro_round(c, buf, n);
  }
  const mp_btensor *s = op_in(c, op_pro_at(t, own, k, 0));
  const char *ps = op_pin(c, op_pro_at(t, own, k, 0));
  const char *pz = op_pin(c, op_pro_at(t, own, k, 1));
  int64_t per = x->shape.rank && x->shape.dims[0] > 0
                    ? op_count(x) / x->shape.dims[0]
                    : 1;
  int64_t ns = op_count(s);
  int64_t block = t->pro[k].kind == 3 ? t->pro[k].block : 0;
  bool one = ns == 1;
  if (op_widen_whole(c, t, own, k) &&
      (one || (e0 % per == 0 && n % per == 0))) {
    int64_t r0 = one ? 0 : e0 / per, nr = one ? 1 : n / per;
    OP_K(dequantize)(1, nr, one ? n : per, x->dtype, px + (size_t)e0 * es,
                     (const float *)(const void *)ps + r0, (int)nr,
                     pz ? pz + (size_t)r0 * es : NULL, buf);
    return op_pro_round(c, buf, n);
  }
  int64_t v[3];
  op_quant_view(x, ns, op_pro_axis(t, k, x), block, v);
  OP_K(dequantize_range)(v[1], v[2], block, x->dtype, px,
                         (const float *)(const void *)ps, (int)ns, pz, e0, n,
                         buf);
  return op_pro_round(c, buf, n);
}

/* Rows [r0, r0 + nr) of op(A), of the batch matrix whose first element is
 * a0 (m rows of k), into buf as a block the kernel reads with the same
 * trans_a: nr rows of k, or with ta the block's nr columns of each of the
 * k rows of the stored A (trans_a with m = nr). Widened by A's prologue,
 * or copied from pa when A has none. */
static void op_ablock(op_ctx *c, const op_tail *t, uint32_t own, bool ta,
                      const float *pa, int64_t a0, int64_t m, int64_t k,
                      int64_t r0, int64_t nr, float *buf) {
  int64_t runs = ta ? k : 1, run = ta ? nr : nr * k;
  for (int64_t i = 0; i < runs; i++) {
    int64_t e0 = a0 + (ta ? i * m + r0 : r0 * k);
    if (t->pro[0].kind) {
      (void)op_widen_range(c, t, own, 0, e0, run, buf + i * run);
    } else {
      memcpy(buf + i * run, pa + e0, (size_t)run * sizeof *buf);
    }
  }
}

/* Rows [o0, o0 + nb) of the weight (input 1): a Conv's output channels,
 * a transposed Gemm weight's output columns. */
static const float *op_weight_rows(op_ctx *c, const op_tail *t, uint32_t own,
                                   int64_t o0, int64_t nb, float *buf) {
  const mp_btensor *w = op_in(c, 1);
  int64_t per = op_count(w) / w->shape.dims[0];
  return op_widen_range(c, t, own, 1, o0 * per, nb * per, buf);
}

/* ---- Conv and ConvTranspose --------------------------------------------- */

static void rd_conv(op_rd *r, op_convp *p) {
  p->nd = rd_range(r, 1, 3);
  p->group = rd_range(r, 1, INT32_MAX);
  p->shift = rd_range(r, 0, 31);
  int64_t *arr[] = {p->k, p->s, p->d, p->pb, p->pe, p->op};
  int64_t lo[] = {1, 1, 1, 0, 0, 0};
  for (int a = 0; a < 6; a++) {
    for (int i = 0; i < 3; i++) arr[a][i] = rd_range(r, lo[a], INT32_MAX);
  }
}

/* The kernel's struct from the tensors (spatial dims right-aligned into
 * three, leading ones 1). */
static void op_kconv(const op_convp *p, const mp_kshape *x, const mp_kshape *y,
                     int64_t m, mp_kconv *k) {
  memset(k, 0, sizeof *k);
  k->n = x->dims[0];
  k->c = x->dims[1];
  k->m = m;
  k->group = p->group;
  k->shift = (int)p->shift;
  for (int i = 0; i < 3; i++) {
    int j = i - (3 - (int)p->nd); /* index into the nd spatial dims */
    bool real = j >= 0;
    k->in[i] = real ? x->dims[2 + j] : 1;
    k->out[i] = real ? y->dims[2 + j] : 1;
    k->k[i] = real ? p->k[j] : 1;
    k->stride[i] = real ? p->s[j] : 1;
    k->dil[i] = real ? p->d[j] : 1;
    k->pad[i] = real ? p->pb[j] : 0;
  }
}

/* The output shape of a Conv (or ConvTranspose) of x by w into *want,
 * after checking ranks, channels and the kernel against w. */
static bool op_conv_shape(op_ctx *c, const op_convp *p, bool transpose,
                          const mp_btensor *x, const mp_btensor *w,
                          mp_kshape *want) {
  uint32_t rank = (uint32_t)p->nd + 2;
  if (x->shape.rank != rank || w->shape.rank != rank) {
    return op_fail(c, "x and w must have rank %u", rank);
  }
  int64_t cch = x->shape.dims[1], g = p->group;
  int64_t m = transpose ? w->shape.dims[1] * g : w->shape.dims[0];
  if (cch % g || m % g || m == 0 ||
      (transpose ? w->shape.dims[0] != cch : w->shape.dims[1] * g != cch)) {
    return op_fail(c, "channels: x has %lld, w %s, group %lld do not agree",
                   (long long)cch, w->name, (long long)g);
  }
  *want = (mp_kshape){rank, {x->shape.dims[0], m}};
  for (int64_t i = 0; i < p->nd; i++) {
    if (w->shape.dims[2 + i] != p->k[i]) {
      return op_fail(c, "kernel_shape disagrees with w '%s'", w->name);
    }
    int64_t in = x->shape.dims[2 + i], ext = p->d[i] * (p->k[i] - 1) + 1, o;
    if (transpose) {
      o = p->s[i] * (in - 1) + p->op[i] + ext - p->pb[i] - p->pe[i];
    } else {
      int64_t span = in + p->pb[i] + p->pe[i] - ext;
      o = span < 0 ? -1 : span / p->s[i] + 1;
    }
    if (o < 1)
      return op_fail(c, "spatial dim %lld: empty output", (long long)i);
    want->dims[2 + i] = o;
  }
  return true;
}

static bool op_check_conv(op_ctx *c, bool transpose) {
  op_rd r = op_reader(c);
  op_convp p;
  op_tail t;
  rd_conv(&r, &p);
  rd_tail(&r, &t);
  if (r.bad || r.at != r.n) return op_fail(c, "bad parameters");
  const mp_btensor *x = op_in(c, 0), *w = op_in(c, 1), *y = op_out(c, 0);
  uint32_t own = op_own(c, &t); /* X, W and an optional B */
  if (own < 2 || own > 3) {
    return op_fail(c, "%u inputs do not leave X, W and B for the head",
                   c->op->n_in);
  }
  const mp_btensor *bias = own == 3 ? op_in(c, 2) : NULL;
  if (!x || !w || c->op->n_out != 1)
    return op_fail(c, "needs X, W and one output");
  if (!op_check_prologue(c, &t, own)) return false;
  int xd = op_in_dtype(c, &t, 0), wd = op_in_dtype(c, &t, 1);
  bool quant = op_quant_tail(&t); /* computed in f32, stored quantized */
  int yd = quant ? MP_KD_F32 : y->dtype;
  bool f32 = xd == MP_KD_F32 && wd == MP_KD_F32 && yd == MP_KD_F32 &&
             (!bias || bias->dtype == MP_KD_F32);
  bool i8 = !transpose && xd == MP_KD_I8 && wd == MP_KD_I8 && yd == MP_KD_I8 &&
            (!bias || bias->dtype == MP_KD_I32);
  if (!f32 && !i8) {
    return op_fail(c,
                   "unsupported dtypes x %s, w %s, y %s (f32, or int8 "
                   "with an int32 bias)",
                   mp_kd_name(xd), mp_kd_name(wd), mp_kd_name(y->dtype));
  }
  mp_kshape want;
  if (!op_conv_shape(c, &p, transpose, x, w, &want)) return false;
  int64_t cch = x->shape.dims[1], g = p.group, m = want.dims[1];
  if (!op_expect_shape(c, y, &want)) return false;
  if (bias && (bias->shape.rank != 1 || bias->shape.dims[0] != m)) {
    return op_fail(c, "bias '%s' is not [%lld]", bias->name, (long long)m);
  }
  mp_kconv k;
  op_kconv(&p, &x->shape, &y->shape, m, &k);
  if (op_aliases(x, y)) {
    bool dw = !transpose && g == cch && m == cch;
    if (!dw || k.out[0] * k.out[1] * k.out[2] > k.in[0] * k.in[1] * k.in[2] ||
        x->offset != y->offset) {
      return op_fail(c,
                     "output '%s' shares the input's buffer: only a "
                     "depthwise Conv whose output plane is no larger than "
                     "its input plane runs in place",
                     y->name);
    }
  }
  if (op_aliases(w, y) || op_aliases(bias, y)) {
    return op_fail(c, "output '%s' shares a weight's buffer", y->name);
  }
  int64_t plane = k.out[0] * k.out[1] * k.out[2];
  /* the Conv kernel's accumulators (a ConvTranspose's kernel adds into
   * its output) */
  if (!transpose) c->need_ws += (size_t)plane * 4;
  op_band band;
  bool banded = op_conv_band(c, &t, &band), chained = op_epi_chained(&t);
  if (quant && !banded) {
    c->need_ws += (size_t)plane * 4 + 64; /* op_run_conv_planes' f32 plane */
  }
  /* op_epi_tile's scratch (through QDQ pairs): a row or a plane */
  if (chained) c->need_ws += (size_t)(banded ? band.yin : plane) * 4 + 64;
  if (transpose && (quant || chained || op_epi_aliased(c, &t, own, y))) {
    /* op_run_conv_planes: one output channel's weights, gathered */
    c->need_ws += (size_t)(k.c / k.group * k.k[0] * k.k[1] * k.k[2]) * 4;
  }
  return op_check_epilogue(c, &t, own, y, plane);
}

/* A Conv whose epilogue operand lives in y's buffer, one output plane
 * (batch bi, channel oc) at a time: the operand's plane is copied aside,
 * the head computes that channel alone (the kernel's own per-channel loop,
 * so the same bits) into y's plane, and the epilogue runs over the plane
 * reading the copy. The workspace holds one plane, not the whole output.
 * A group's input is widened into xbuf when px is NULL (op_conv_xgroups),
 * a channel's weight into wbuf when pw is NULL (op_conv_panels). With a
 * QuantizeLinear ending the epilogue (yq, the output; y its f32 view) the
 * plane is computed into the workspace instead, the epilogue runs there
 * and the plane is quantized into yq (op_epi_quant). A ConvTranspose
 * (W [C, M/group, k...]) gathers its channel's weights, strided by M/group
 * kernels, into the workspace and its kernel computes the plane with the
 * same loop order as the whole output's, so the same bits. */
static void op_run_conv_planes(op_ctx *c, const op_tail *t, uint32_t own,
                               const mp_kconv *k, const void *px, float *xbuf,
                               const void *pw, float *wbuf, const void *pb,
                               const mp_btensor *y, const mp_btensor *yq,
                               float *wq, void *out) {
  bool f32 = y->dtype == MP_KD_F32;
  size_t es = mp_kd_size(y->dtype), xes = f32 ? 4 : 1;
  int64_t pout = k->out[0] * k->out[1] * k->out[2];
  int64_t pin = k->in[0] * k->in[1] * k->in[2];
  int64_t ks = k->k[0] * k->k[1] * k->k[2];
  int64_t cg = k->c / k->group, mg = k->m / k->group;
  size_t bytes = (size_t)pout * es, step = (bytes + 63) / 64 * 64;
  uint32_t tap = op_tap(t);
  bool aliased = op_epi_aliased(c, t, own, y);
  /* the workspace op_check_epilogue counted: the saved plane (with yq the
   * f32 plane computed), a kept plane when a value is tapped, then the
   * kernel's accumulators */
  char *saved = (char *)c->ws, *kept = saved + step;
  void *scratch = kept + (tap == UINT32_MAX ? 0 : step);
  bool transpose = c->op->kernel == MP_BOP_CONV_TRANSPOSE;
  mp_kconv one = *k;
  one.n = 1, one.m = 1, one.group = 1, one.c = cg;
  int64_t idx[MP_K_MAX_RANK] = {0};
  for (int64_t bi = 0; bi < k->n; bi++) {
    for (int64_t oc = 0; oc < k->m; oc++) {
      size_t at = (size_t)((bi * k->m + oc) * pout);
      char *yp = yq ? saved : (char *)out + at * es;
      int64_t x0 = (bi * k->c + oc / mg * cg) * pin;
      const char *xp = (const char *)xbuf;
      if (px) {
        xp = (const char *)px + (size_t)x0 * xes;
      } else if (oc % mg == 0) { /* op_conv_xgroups: the group's input,
                                    once per group */
        (void)op_widen_range(c, t, own, 0, x0, cg * pin, xbuf);
      }
      const char *wp =
          pw ? (const char *)pw + (size_t)(oc * cg * ks) * xes
             : (const char *)op_weight_rows(c, t, own, oc, 1, wbuf);
      if (!yq && aliased) memcpy(saved, yp, bytes);
      if (transpose) { /* f32 only (op_check_conv) */
        float *wt = scratch;
        const float *w0 = (const float *)pw;
        for (int64_t i = 0; i < cg; i++) {
          memcpy(wt + i * ks, w0 + ((oc / mg * cg + i) * mg + oc % mg) * ks,
                 (size_t)ks * sizeof *wt);
        }
        OP_K(conv_transpose_f32)(&one, (const float *)(const void *)xp, wt,
                                 pb ? (const float *)pb + oc : NULL,
                                 (float *)(void *)yp);
      } else if (f32) {
        OP_K(conv_f32)(&one, (const float *)(const void *)xp,
                       (const float *)(const void *)wp,
                       pb ? (const float *)pb + oc : NULL, (float *)(void *)yp,
                       scratch);
      } else {
        OP_K(conv_i8)(&one, (const int8_t *)xp, (const int8_t *)wp,
                      pb ? (const int32_t *)pb + oc : NULL, (int8_t *)yp,
                      scratch);
      }
      idx[0] = bi, idx[1] = oc;
      op_epi_tile(c, t, own, y, 2, idx, yp, bytes, kept, yq ? NULL : saved, wq);
      if (yq) {
        op_epi_quant(c, t, own, yq, oc, (const float *)(const void *)yp, pout,
                     (char *)out + at * mp_kd_size(yq->dtype));
      }
    }
  }
}

/* Output channels [o0, o1) of batch bi, each panel of op_conv_panels
 * (within one group) widened into wbuf and convolved alone, the kernel
 * given one group: x is the input of o0's group (its first channel). */
static void op_conv_wpanels(op_ctx *c, const op_tail *t, uint32_t own,
                            const mp_kconv *k, int64_t bi, int64_t o0,
                            int64_t o1, const float *x, float *wbuf,
                            const void *pb, void *py) {
  int64_t pout = k->out[0] * k->out[1] * k->out[2];
  int64_t pin = k->in[0] * k->in[1] * k->in[2];
  int64_t cg = k->c / k->group, mg = k->m / k->group;
  int64_t nb = op_conv_panel_ch(op_in(c, 1)), g0 = o0 / mg;
  mp_kconv one = *k;
  one.n = 1, one.group = 1, one.c = cg;
  for (int64_t oc = o0; oc < o1; oc += one.m) {
    int64_t left = mg - oc % mg;
    one.m = nb < left ? nb : left;
    if (one.m > o1 - oc) one.m = o1 - oc;
    const float *w = op_weight_rows(c, t, own, oc, one.m, wbuf);
    OP_K(conv_f32)(&one, x + (oc / mg - g0) * cg * pin, w,
                   pb ? (const float *)pb + oc : NULL,
                   (float *)py + (bi * k->m + oc) * pout, c->ws);
  }
}

/* A Conv under op_conv_panels whose X is f32 (px): every panel for every
 * batch. */
static void op_run_conv_panels(op_ctx *c, const op_tail *t, uint32_t own,
                               const mp_kconv *k, const void *px, float *wbuf,
                               const void *pb, void *py) {
  int64_t pin = k->in[0] * k->in[1] * k->in[2];
  for (int64_t bi = 0; bi < k->n; bi++) {
    op_conv_wpanels(c, t, own, k, bi, 0, k->m,
                    (const float *)px + bi * k->c * pin, wbuf, pb, py);
  }
}

/* A grouped Conv under op_conv_xgroups: for each batch, each panel of
 * groups' input widened, then convolved alone into its output channels,
 * with the whole weight (pw) or its panels (op_conv_wpanels). */
static void op_run_conv_xgroups(op_ctx *c, const op_tail *t, uint32_t own,
                                const mp_kconv *k, int64_t xg, float *xbuf,
                                const void *pw, float *wbuf, const void *pb,
                                void *py) {
  int64_t pout = k->out[0] * k->out[1] * k->out[2];
  int64_t pin = k->in[0] * k->in[1] * k->in[2];
  int64_t ks = k->k[0] * k->k[1] * k->k[2];
  int64_t cg = k->c / k->group, mg = k->m / k->group;
  mp_kconv one = *k;
  one.n = 1;
  for (int64_t bi = 0; bi < k->n; bi++) {
    for (int64_t g0 = 0; g0 < k->group; g0 += one.group) {
      one.group = xg < k->group - g0 ? xg : k->group - g0;
      one.c = one.group * cg, one.m = one.group * mg;
      op_widen_range(c, t, own, 0, (bi * k->c + g0 * cg) * pin, one.c * pin,
                     xbuf);
      if (!pw) {
        op_conv_wpanels(c, t, own, k, bi, g0 * mg, (g0 + one.group) * mg, xbuf,
                        wbuf, pb, py);
        continue;
      }
      OP_K(conv_f32)(&one, xbuf, (const float *)pw + g0 * mg * cg * ks,
                     pb ? (const float *)pb + g0 * mg : NULL,
                     (float *)py + (bi * k->m + g0 * mg) * pout, c->ws);
    }
  }
}

/* A run of input rows [lo, hi) of every channel in a band buffer, one
 * channel each stride elements. */
typedef struct op_rows {
  int64_t lo, hi, stride;
} op_rows;

/* The input rows *want of each of nc channels (channel stride pin from
 * element x0) into xbuf as [nc][hi - lo][xin], where xbuf holds the rows
 * *held of the band before: the rows both bands read (a band's halo, when
 * the taps of consecutive bands overlap) move to their new place, and
 * only the others are widened. The moves go up the channels when the
 * stride shrinks and down when it grows, so no row is overwritten before
 * it moved. */
static void op_band_rows(op_ctx *c, const op_tail *t, uint32_t own, int64_t xin,
                         int64_t nc, int64_t x0, int64_t pin,
                         const op_rows *held, const op_rows *want,
                         float *xbuf) {
  int64_t lo = want->lo, hi = want->hi, bin = want->stride;
  int64_t k0 = lo > held->lo ? lo : held->lo;
  int64_t k1 = hi < held->hi ? hi : held->hi;
  if (k1 <= k0) k0 = k1 = lo; /* nothing to keep */
  for (int64_t i = 0; k1 > k0 && i < nc; i++) {
    int64_t ch = bin <= held->stride ? i : nc - 1 - i;
    memmove(xbuf + ch * bin + (k0 - lo) * xin,
            xbuf + ch * held->stride + (k0 - held->lo) * xin,
            (size_t)((k1 - k0) * xin) * sizeof *xbuf);
  }
  for (int64_t ch = 0; ch < nc; ch++) {
    float *to = xbuf + ch * bin;
    int64_t at = x0 + ch * pin;
    if (k0 > lo) {
      (void)op_widen_range(c, t, own, 0, at + lo * xin, (k0 - lo) * xin, to);
    }
    if (hi > k1) {
      (void)op_widen_range(c, t, own, 0, at + k1 * xin, (hi - k1) * xin,
                           to + (k1 - lo) * xin);
    }
  }
}

/* A Conv of one group or a ConvTranspose under op_conv_band (the
 * transpose's input rows and pad: op_convt_rows): for each batch, each band of
 * output rows along axis j reads input rows [lo, hi) of every input
 * channel, widened into xbuf ([C][hi - lo][xin]); the kernel then runs on
 * that band as its input (its pad along j the distance from the band's
 * first input row to its first output row's first tap) into ybuf, mch
 * channels at a time (a weight panel's when pw is NULL), and each
 * channel's rows go to their place in y. With a QuantizeLinear ending the
 * epilogue (yq, the output; ya y's f32 view) the epilogue runs over each
 * row in ybuf and the row is quantized into its place (op_epi_quant). */
static void op_run_conv_bands(op_ctx *c, const op_tail *t, uint32_t own,
                              const mp_kconv *k, const op_band *b, float *xbuf,
                              float *ybuf, const float *pw, float *wbuf,
                              const void *pb, const mp_btensor *ya,
                              const mp_btensor *yq, float *wq, void *py) {
  int j = b->j;
  int64_t pout = k->out[0] * k->out[1] * k->out[2];
  int64_t pin = k->in[0] * k->in[1] * k->in[2];
  int64_t ks = k->k[0] * k->k[1] * k->k[2];
  /* ya: an epilogue operand lives in y's buffer; each output row then
   * goes over the operand's row, the epilogue reading a saved copy, in
   * the workspace op_check_epilogue counted for op_run_conv_planes (a
   * plane each for the saved and the kept rows, then the accumulators);
   * with yq no operand is in y's buffer, so no rows are saved */
  size_t step = ((size_t)pout * 4 + 63) / 64 * 64, rowb = (size_t)b->yin * 4;
  bool aliased = ya && op_epi_aliased(c, t, own, ya);
  char *saved = (char *)c->ws, *kept = yq ? saved : saved + step;
  void *scratch =
      ya ? (void *)(kept + (op_tap(t) == UINT32_MAX ? 0 : step)) : c->ws;
  int64_t idx[MP_K_MAX_RANK] = {0};
  mp_kconv q = *k;
  q.n = 1;
  bool transpose = c->op->kernel == MP_BOP_CONV_TRANSPOSE;
  /* a weight of one panel is widened once, not again for every band */
  if (!pw && b->mch >= k->m) pw = op_weight_rows(c, t, own, 0, k->m, wbuf);
  for (int64_t bi = 0; bi < k->n; bi++) {
    op_rows held = {0, 0, 0}; /* the rows xbuf holds */
    for (int64_t o0 = 0; o0 < k->out[j]; o0 += q.out[j]) {
      q.out[j] = b->rows < k->out[j] - o0 ? b->rows : k->out[j] - o0;
      int64_t lo, hi;
      (transpose ? op_convt_rows : op_conv_rows)(k, j, o0, q.out[j], &lo, &hi,
                                                 &q.pad[j]);
      q.in[j] = hi - lo;
      int64_t bin = q.in[j] * b->xin, bout = q.out[j] * b->yin;
      op_rows want = {lo, hi, bin};
      op_band_rows(c, t, own, b->xin, k->c, bi * k->c * pin, pin, &held, &want,
                   xbuf);
      held = want;
      for (int64_t m0 = 0; m0 < k->m; m0 += q.m) {
        q.m = b->mch < k->m - m0 ? b->mch : k->m - m0;
        if (transpose) { /* q.m == M (op_conv_band), W whole */
          OP_K(conv_transpose_f32)(&q, xbuf, pw, pb, ybuf);
        } else {
          const float *w = pw ? pw + m0 * k->c * ks
                              : op_weight_rows(c, t, own, m0, q.m, wbuf);
          OP_K(conv_f32)(&q, xbuf, w, pb ? (const float *)pb + m0 : NULL, ybuf,
                         scratch);
        }
        for (int64_t i = 0; i < q.m; i++) {
          int64_t at = (bi * k->m + m0 + i) * pout + o0 * b->yin;
          float *yc = (float *)py + at;
          for (int64_t r = 0; yq && r < q.out[j]; r++) {
            float *yr = ybuf + i * bout + r * b->yin;
            idx[0] = bi, idx[1] = m0 + i, idx[2] = o0 + r;
            op_epi_tile(c, t, own, ya, 3, idx, yr, rowb, kept, NULL, wq);
            op_epi_quant(
                c, t, own, yq, m0 + i, yr, b->yin,
                (char *)py + (size_t)(at + r * b->yin) * mp_kd_size(yq->dtype));
          }
          if (yq) continue;
          if (!ya) {
            memcpy(yc, ybuf + i * bout, (size_t)bout * 4);
            continue;
          }
          for (int64_t r = 0; r < q.out[j]; r++) {
            float *yr = yc + r * b->yin;
            if (aliased) memcpy(saved, yr, rowb);
            memcpy(yr, ybuf + i * bout + r * b->yin, rowb);
            idx[0] = bi, idx[1] = m0 + i, idx[2] = o0 + r;
            op_epi_tile(c, t, own, ya, 3, idx, yr, rowb, kept, saved, wq);
          }
        }
      }
    }
  }
}

static bool op_run_conv(op_ctx *c, bool transpose) {
  op_rd r = op_reader(c);
  op_convp p;
  op_tail t;
  rd_conv(&r, &p);
  rd_tail(&r, &t);
  uint32_t own = op_own(c, &t);
  const mp_btensor *x = op_in(c, 0), *y = op_out(c, 0);
  int64_t m = y->shape.dims[1];
  mp_kconv k;
  op_kconv(&p, &x->shape, &y->shape, m, &k);
  /* X widened a panel of groups (xg) or a band of rows (band) at a time,
   * the weight a panel of output channels (panels), in their buffers; or
   * either whole */
  op_band band;
  int64_t per, xg = op_conv_xgroups(c, &t, &per);
  bool banded = op_conv_band(c, &t, &band);
  bool panels = op_conv_panels(c, &t);
  float *xbuf = op_widen_take(c, &t, 0);
  float *wbuf = op_widen_take(c, &t, 1);
  float *ybuf = banded ? op_ws_take(c, band.mch * band.rows * band.yin) : NULL;
  const void *px = xg || banded ? NULL : op_run_prologue(c, &t, own, 0);
  const void *pw = panels ? NULL : op_run_prologue(c, &t, own, 1);
  const void *pb = own == 3 ? op_pin(c, 2) : NULL;
  void *out = op_pout(c, 0);
  bool aliased = op_epi_aliased(c, &t, own, y);
  bool quant = op_quant_tail(&t); /* f32 planes or rows quantized into y */
  /* through QDQ pairs: a plane (or a band's row) at a time, with that
   * much scratch (op_check_conv) */
  float *wq =
      op_epi_chained(&t)
          ? op_ws_take(c, banded ? band.yin : k.out[0] * k.out[1] * k.out[2])
          : NULL;
  mp_btensor yf = op_epi_value(&t, y);
  const mp_btensor *yq = quant ? y : NULL;
  if (banded) { /* with an aliased operand, the epilogue row by row */
    bool rows = aliased || quant || wq;
    void *py = rows ? out : op_head_out(c, &t, own, y, out);
    op_run_conv_bands(c, &t, own, &k, &band, xbuf, ybuf, pw, wbuf, pb,
                      rows ? &yf : NULL, yq, wq, py);
    if (!rows) {
      op_run_epilogue(c, &t, own, y, py);
      op_finish_epilogue(y, py, out);
    }
    return true;
  }
  if (aliased || quant || wq) {
    op_run_conv_planes(c, &t, own, &k, px, xbuf, pw, wbuf, pb, &yf, yq, wq,
                       out);
    return true;
  }
  void *py = op_head_out(c, &t, own, y, out);
  if (xg) {
    op_run_conv_xgroups(c, &t, own, &k, xg, xbuf, pw, wbuf, pb, py);
  } else if (panels) {
    op_run_conv_panels(c, &t, own, &k, px, wbuf, pb, py);
  } else if (transpose) {
    OP_K(conv_transpose_f32)(&k, px, pw, pb, py);
  } else if (y->dtype == MP_KD_F32) {
    OP_K(conv_f32)(&k, px, pw, pb, py, c->ws);
  } else {
    OP_K(conv_i8)(&k, px, pw, pb, py, c->ws);
  }
  op_run_epilogue(c, &t, own, y, py);
  op_finish_epilogue(y, py, out);
  return true;
}

/* ---- Gemm and MatMul ----------------------------------------------------- */

static void rd_gemm(op_rd *r, op_gemmp *p, bool gemm) {
  memset(p, 0, sizeof *p);
  p->alpha = 1;
  if (gemm) {
    p->ta = rd_range(r, 0, 1);
    p->tb = rd_range(r, 0, 1);
    p->alpha = rd_f(r);
    p->beta = rd_f(r);
  }
  p->shift = rd_range(r, 0, 31);
  p->horiz = rd_range(r, 0, 64);
}

/* Matrix shapes of MatMul operands (numpy semantics): rows, cols, batch
 * dims (out-of-matrix leading dims). */
static bool op_mm_shape(op_ctx *c, const mp_kshape *a, const mp_kshape *b,
                        mp_kshape *out, int64_t *m, int64_t *n, int64_t *k) {
  if (a->rank < 1 || b->rank < 1) return op_fail(c, "MatMul of a scalar");
  int64_t am = a->rank >= 2 ? a->dims[a->rank - 2] : 1;
  int64_t ak = a->dims[a->rank - 1];
  int64_t bk = b->rank >= 2 ? b->dims[b->rank - 2] : b->dims[0];
  int64_t bn = b->rank >= 2 ? b->dims[b->rank - 1] : 1;
  if (ak != bk)
    return op_fail(c, "inner dims %lld and %lld differ", (long long)ak,
                   (long long)bk);
  mp_kshape ab = {a->rank > 2 ? a->rank - 2 : 0, {0}};
  mp_kshape bb = {b->rank > 2 ? b->rank - 2 : 0, {0}};
  memcpy(ab.dims, a->dims, ab.rank * sizeof *ab.dims);
  memcpy(bb.dims, b->dims, bb.rank * sizeof *bb.dims);
  uint32_t br = ab.rank > bb.rank ? ab.rank : bb.rank;
  memset(out, 0, sizeof *out);
  for (uint32_t i = 0; i < br; i++) {
    int64_t da = i + ab.rank >= br ? ab.dims[i + ab.rank - br] : 1;
    int64_t db = i + bb.rank >= br ? bb.dims[i + bb.rank - br] : 1;
    if (da != db && da != 1 && db != 1) {
      return op_fail(c, "batch dims do not broadcast");
    }
    out->dims[out->rank++] = da == 1 ? db : da;
  }
  if (a->rank >= 2) out->dims[out->rank++] = am;
  if (b->rank >= 2) out->dims[out->rank++] = bn;
  *m = am;
  *n = bn;
  *k = ak;
  return true;
}

/* An epilogue operand in y's buffer runs row by row (op_gemm_rows) where
 * the rows of A are rows in memory. */
static bool op_gemm_rowwise(const op_gemmp *p, const mp_btensor *a,
                            const mp_btensor *b) {
  return !p->ta && a->shape.rank >= 2 && b->shape.rank >= 2;
}

static bool op_check_gemm(op_ctx *c, bool gemm) {
  op_rd r = op_reader(c);
  op_gemmp p;
  op_tail t;
  rd_gemm(&r, &p, gemm);
  rd_tail(&r, &t);
  if (r.bad || r.at != r.n) return op_fail(c, "bad parameters");
  uint32_t nh = p.horiz ? (uint32_t)p.horiz : 1;
  if (p.horiz && (t.n_epi || t.n_pro)) {
    return op_fail(c, "a horizontal fusion carries no prologue or epilogue");
  }
  if (c->op->n_out != nh)
    return op_fail(c, "%u outputs, expected %u", c->op->n_out, nh);
  uint32_t own;
  if (p.horiz) {
    own = 1 + nh + (gemm && c->op->n_in == 1 + 2 * nh ? nh : 0);
    if (c->op->n_in != own)
      return op_fail(c, "%u inputs, expected %u", c->op->n_in, own);
  } else {
    own = op_own(c, &t);
    if (own < 2 || own > (gemm ? 3u : 2u)) {
      return op_fail(c, "%u inputs do not leave A, B (and C) for the head",
                     c->op->n_in);
    }
  }
  if (!op_check_prologue(c, &t, own)) return false;
  const mp_btensor *a = op_in(c, 0);
  bool quant = !p.horiz && op_quant_tail(&t);
  for (uint32_t h = 0; h < nh; h++) {
    const mp_btensor *b = op_in(c, 1 + h), *y = op_out(c, h);
    const mp_btensor *cc =
        gemm && own > 1 + nh ? op_in(c, p.horiz ? 1 + nh + h : 2) : NULL;
    if (!a || !b) return op_fail(c, "missing A or B");
    int ad = op_in_dtype(c, &t, 0), bd = op_in_dtype(c, &t, 1);
    int yd = quant ? MP_KD_F32 : y->dtype; /* computed in f32, quantized */
    bool f32 = ad == MP_KD_F32 && bd == MP_KD_F32 && yd == MP_KD_F32 &&
               (!cc || cc->dtype == MP_KD_F32);
    bool i8 = ad == MP_KD_I8 && bd == MP_KD_I8 && yd == MP_KD_I8 &&
              (!cc || cc->dtype == MP_KD_I32) && p.alpha == 1 &&
              (p.beta == 1 || !cc);
    if (!f32 && !i8) {
      return op_fail(c, "unsupported dtypes a %s, b %s, y %s", mp_kd_name(ad),
                     mp_kd_name(bd), mp_kd_name(y->dtype));
    }
    mp_kshape want;
    int64_t m, n, k;
    if (gemm) {
      if (a->shape.rank != 2 || b->shape.rank != 2) {
        return op_fail(c, "Gemm operands must be matrices");
      }
      m = a->shape.dims[p.ta ? 1 : 0];
      k = a->shape.dims[p.ta ? 0 : 1];
      n = b->shape.dims[p.tb ? 0 : 1];
      if (b->shape.dims[p.tb ? 1 : 0] != k) {
        return op_fail(c, "inner dims of '%s' and '%s' differ", a->name,
                       b->name);
      }
      want = (mp_kshape){2, {m, n}};
      mp_kbcast bc;
      if (cc && !mp_k_bcast_init(&bc, &want, &cc->shape, NULL, NULL)) {
        return op_fail(c, "C '%s' does not broadcast to [M,N]", cc->name);
      }
    } else if (!op_mm_shape(c, &a->shape, &b->shape, &want, &m, &n, &k)) {
      return false;
    }
    if (!op_expect_shape(c, y, &want)) return false;
    if (op_aliases(a, y) || op_aliases(b, y) || op_aliases(cc, y)) {
      return op_fail(c, "output '%s' shares an input's buffer", y->name);
    }
    /* an epilogue operand in y's buffer: row by row (with a dequantized
     * weight's panels too: op_run_gemm_panels) */
    bool tb, panels = !p.horiz && op_panels(c, &t, own, &tb);
    bool rows = op_gemm_rowwise(&p, a, b) || panels;
    if (quant && !rows) {
      return op_fail(c,
                     "an epilogue QuantizeLinear needs the product row "
                     "by row (A not transposed, A and B of rank >= 2)");
    }
    if (quant && !panels) c->need_ws += (size_t)n * 4 + 64; /* a row */
    if (!p.horiz && !op_check_epilogue(c, &t, own, y, rows ? n : 0)) {
      return false;
    }
  }
  return true;
}

/* The row and column strides of Gemm's C (ct, NULL for none) broadcast
 * to [m, n]. */
static void op_gemm_cstrides(const mp_btensor *ct, int64_t m, int64_t n,
                             int64_t *rs, int64_t *cs) {
  *rs = *cs = 0;
  if (!ct) return;
  mp_kshape mn = {2, {m, n}};
  mp_kbcast bc;
  (void)mp_k_bcast_init(&bc, &mn, &ct->shape, NULL, NULL);
  *rs = bc.sa[0];
  *cs = bc.sa[1];
}

/* One 2-D product y = a b (+ c) of the (batch) matrices, or with rows
 * (when not NULL: {first, count}) only those rows of y, A not transposed:
 * each element is the same sum in the same order (the kernels' invariant
 * 1), so a row computed alone has the same bits. */
static void op_gemm_one(const op_gemmp *p, bool i8, int64_t m, int64_t n,
                        int64_t k, const void *a, const void *b,
                        const mp_btensor *ct, const void *pc, void *y,
                        const int64_t *rows) {
  mp_kgemm g = {m,        n,       k, p->ta != 0, p->tb != 0,
                p->alpha, p->beta, 0, 0,          (int)p->shift};
  op_gemm_cstrides(ct, m, n, &g.c_rs, &g.c_cs);
  size_t es = i8 ? 1 : 4;
  if (rows) {
    g.m = rows[1];
    a = (const char *)a + (size_t)(rows[0] * k) * es;
    if (pc) pc = (const char *)pc + (size_t)(rows[0] * g.c_rs) * 4;
    y = (char *)y + (size_t)(rows[0] * n) * es;
  }
  if (i8) {
    OP_K(gemm_i8)(&g, a, b, pc, y);
  } else {
    OP_K(gemm_f32)(&g, a, b, pc, y);
  }
}

/* The rows of one product slice y (batch index bidx, br entries) when an
 * epilogue operand lives in y's buffer: each row of the operand is copied
 * aside, the row of the product computed alone (op_gemm_one), and the
 * epilogue run over the row reading the copy. The workspace holds a row.
 * With abuf (op_arows: A's prologue), A's row is widened from element
 * a0 + r k into abuf and read there (the same sum as op_gemm_one's). */
static void op_gemm_rows(op_ctx *c, const op_tail *t, uint32_t own,
                         const op_gemmp *p, const int64_t *mnk, const void *a,
                         const void *b, const mp_btensor *ct, const void *pc,
                         const mp_btensor *y, const mp_btensor *yq, char *py,
                         int64_t *idx, uint32_t br, float *abuf, int64_t a0) {
  size_t es = mp_kd_size(y->dtype), bytes = (size_t)mnk[1] * es;
  size_t step = (bytes + 63) / 64 * 64;
  char *saved = (char *)c->ws, *kept = saved + step;
  mp_kgemm g = {1,        mnk[1],  mnk[2], false, p->tb != 0,
                p->alpha, p->beta, 0,      0,     (int)p->shift};
  op_gemm_cstrides(ct, mnk[0], mnk[1], &g.c_rs, &g.c_cs);
  for (int64_t r = 0; r < mnk[0]; r++) {
    /* with yq (a QuantizeLinear ends the epilogue; y its f32 view) the row
     * is computed into the workspace and quantized into yq's row */
    char *yr = yq ? saved : py + (size_t)r * bytes;
    int64_t rows[2] = {r, 1};
    if (!yq) memcpy(saved, yr, bytes);
    if (abuf || yq) {
      const float *ar = abuf ? abuf : (const float *)a + r * mnk[2];
      if (abuf) {
        (void)op_widen_range(c, t, own, 0, a0 + r * mnk[2], mnk[2], abuf);
      }
      OP_K(gemm_f32)(&g, ar, b, pc ? (const float *)pc + r * g.c_rs : NULL,
                     (float *)(void *)yr);
    } else {
      op_gemm_one(p, y->dtype == MP_KD_I8, mnk[0], mnk[1], mnk[2], a, b, ct, pc,
                  py, rows);
    }
    idx[br] = r;
    op_epi_tile(c, t, own, y, br + 1, idx, yr, bytes, kept, yq ? NULL : saved,
                NULL);
    if (yq) {
      op_epi_quant(c, t, own, yq, 0, (const float *)(const void *)yr, mnk[1],
                   py + (size_t)(r * mnk[1]) * mp_kd_size(yq->dtype));
    }
  }
}

/* Columns [c0, c0 + cols) of the product's weight W (input 1: K x N, or
 * N x K under tb) widened by its prologue into wp as K rows of cols. */
static void op_gemm_wpanel(op_ctx *c, const op_tail *t, uint32_t own, bool tb,
                           int64_t k, int64_t n, int64_t c0, int64_t cols,
                           float *wp) {
  const mp_btensor *w = op_in(c, 1), *s = op_in(c, op_pro_at(t, own, 1, 0));
  if (tb) {
    (void)op_weight_rows(c, t, own, c0, cols, wp);
  } else if (t->pro[1].kind == 2) { /* a Cast: the panel row by row */
    for (int64_t kk = 0; kk < k; kk++) {
      (void)op_widen_range(c, t, own, 1, kk * n + c0, cols, wp + kk * cols);
    }
  } else {
    OP_K(dequantize_cols)(k, n, c0, cols, (int)op_pro_axis(t, 1, w),
                          t->pro[1].kind == 3 ? t->pro[1].block : 0, w->dtype,
                          op_pin(c, 1), op_pin(c, op_pro_at(t, own, 1, 0)),
                          (int)op_count(s), op_pin(c, op_pro_at(t, own, 1, 1)),
                          wp);
    (void)op_pro_round(c, wp, k * cols);
  }
}

/* y = A W (a Gemm's alpha A W + beta C, W perhaps transposed: tb) where
 * W's DequantizeLinear prologue widens it a panel of the output's columns
 * at a time into the workspace (op_panels): each panel of the product is
 * computed alone, every element the same sum in the same order as in the
 * whole product (the kernels' invariant 1), and copied into its columns
 * of y. The rows go in blocks (op_panels_rb) when A's prologue widens A
 * a block at a time, or when an epilogue operand lives in y's buffer
 * (aliased): then a block's product is assembled panel by panel in the
 * workspace, and each of its rows is written over the operand's row with
 * the epilogue reading a saved copy (op_gemm_rows' way). The workspace
 * holds a panel of W, a panel of the product, a block of A, and when
 * aliased a block of rows and a row twice. */
static void op_run_gemm_panels(op_ctx *c, const op_tail *t, uint32_t own,
                               const op_gemmp *p, bool tb, const mp_btensor *y,
                               const mp_btensor *yq, char *py, bool aliased) {
  const mp_btensor *a = op_in(c, 0), *w = op_in(c, 1);
  const mp_btensor *ct = own == 3 ? op_in(c, 2) : NULL;
  const float *pc = ct ? (const float *)op_pin(c, 2) : NULL;
  int64_t k, n, nc = op_panel_cols(w, tb, &k, &n);
  bool ta = p->ta != 0; /* a Gemm's A [K, M]: a block is nr columns */
  int64_t m = a->shape.dims[ta ? 1 : a->shape.rank - 2];
  mp_kgemm g = {0, 0, k, ta, tb, p->alpha, p->beta, 0, 0, 0};
  op_gemm_cstrides(ct, m, n, &g.c_rs, &g.c_cs);
  int64_t rb = op_panels_rb(t, aliased, m, n, k);
  bool blocked = rb > 0;
  if (!blocked) rb = m;
  int64_t per = m > 0 ? (m + rb - 1) / rb : 0; /* row blocks per batch */
  uint32_t br = a->shape.rank - 2;             /* A's leading dims, y's too */
  int64_t batches = 1;                         /* (K may be 0) */
  for (uint32_t d = 0; d < br; d++) batches *= a->shape.dims[d];
  const float *pa = t->pro[0].kind ? NULL : (const float *)op_pin(c, 0);
  float *wp = op_ws_take(c, k * nc), *yp = op_ws_take(c, rb * nc);
  /* A's block: widened, or with transA copied out of A's columns */
  float *abuf = pa && !(ta && blocked) ? NULL : op_ws_take(c, rb * k);
  char *blk = aliased ? (char *)op_ws_take(c, rb * n) : NULL;
  char *saved = aliased ? (char *)op_ws_take(c, n) : NULL;
  char *kept = aliased ? (char *)op_ws_take(c, n) : NULL;
  size_t row = (size_t)n * 4;
  int64_t idx[MP_K_MAX_RANK] = {0};
  /* not blocked: each panel once, for every batch; blocked: the panels
   * again for each block of rows */
  int64_t blocks = blocked ? batches * per : 1;
  for (int64_t bk = 0; bk < blocks; bk++) {
    int64_t b0 = blocked ? bk / per : 0, b1 = blocked ? b0 + 1 : batches;
    int64_t r0 = blocked ? bk % per * rb : 0;
    int64_t nr = m - r0 < rb ? m - r0 : rb;
    if (abuf) op_ablock(c, t, own, ta, pa, b0 * m * k, m, k, r0, nr, abuf);
    for (int64_t c0 = 0; c0 < n; c0 += nc) {
      int64_t cols = n - c0 < nc ? n - c0 : nc;
      /* a weight of one panel is widened once, for the first block */
      if (bk == 0 || nc < n) op_gemm_wpanel(c, t, own, tb, k, n, c0, cols, wp);
      g.m = nr, g.n = cols;
      for (int64_t b = b0; b < b1; b++) {
        OP_K(gemm_f32)(&g, abuf ? abuf : pa + (b * m + r0) * k, wp,
                       pc ? pc + r0 * g.c_rs + c0 * g.c_cs : NULL, yp);
        for (int64_t r = 0; r < nr; r++) {
          char *to = aliased ? blk + (size_t)(r * n + c0) * 4
                             : py + (size_t)((b * m + r0 + r) * n + c0) * 4;
          memcpy(to, yp + r * cols, (size_t)cols * 4);
        }
      }
    }
    if (!aliased) continue;
    /* the block's rows over the operand's, the epilogue reading a copy */
    int64_t rest = b0;
    for (uint32_t d = br; d-- > 0;) {
      idx[d] = rest % a->shape.dims[d];
      rest /= a->shape.dims[d];
    }
    for (int64_t r = 0; r < nr; r++) {
      if (yq) { /* the row's epilogue in the block, then quantized */
        char *src = blk + (size_t)(r * n) * 4;
        idx[br] = r0 + r;
        op_epi_tile(c, t, own, y, br + 1, idx, src, row, kept, NULL, NULL);
        op_epi_quant(
            c, t, own, yq, 0, (const float *)(const void *)src, n,
            py + (size_t)((b0 * m + r0 + r) * n) * mp_kd_size(yq->dtype));
        continue;
      }
      char *yr = py + (size_t)((b0 * m + r0 + r) * n) * 4;
      memcpy(saved, yr, row);
      memcpy(yr, blk + (size_t)(r * n) * 4, row);
      idx[br] = r0 + r;
      op_epi_tile(c, t, own, y, br + 1, idx, yr, row, kept, saved, NULL);
    }
  }
}

/* y [m, n] = A B (a Gemm's alpha A B + beta C) of one batch under
 * op_arows: A's rows from element a0 on widened a block of arb at a time
 * into abuf, each block's rows of y computed alone (the same sums). */
static void op_gemm_arows(op_ctx *c, const op_tail *t, uint32_t own,
                          const op_gemmp *p, int64_t arb, float *abuf,
                          int64_t a0, const int64_t *mnk, const void *b,
                          const mp_btensor *ct, const void *pc, void *y) {
  int64_t m = mnk[0], n = mnk[1], k = mnk[2];
  mp_kgemm g = {0, n, k, p->ta != 0, p->tb != 0, p->alpha, p->beta, 0, 0, 0};
  op_gemm_cstrides(ct, m, n, &g.c_rs, &g.c_cs);
  for (int64_t r0 = 0; r0 < m; r0 += g.m) {
    g.m = arb < m - r0 ? arb : m - r0;
    op_ablock(c, t, own, g.trans_a, NULL, a0, m, k, r0, g.m, abuf);
    OP_K(gemm_f32)(&g, abuf, b, pc ? (const float *)pc + r0 * g.c_rs : NULL,
                   (float *)y + r0 * n);
  }
}

static bool op_run_gemm(op_ctx *c, bool gemm) {
  op_rd r = op_reader(c);
  op_gemmp p;
  op_tail t;
  rd_gemm(&r, &p, gemm);
  rd_tail(&r, &t);
  uint32_t nh = p.horiz ? (uint32_t)p.horiz : 1, own;
  if (p.horiz) {
    own = c->op->n_in;
  } else {
    own = op_own(c, &t);
  }
  const mp_btensor *a = op_in(c, 0);
  bool tb;
  bool quant = !p.horiz && op_quant_tail(&t); /* rows quantized into y */
  mp_btensor yf = op_epi_value(&t, op_out(c, 0));
  const mp_btensor *yq = quant ? op_out(c, 0) : NULL;
  if (!p.horiz && op_panels(c, &t, own, &tb)) {
    const mp_btensor *y = op_out(c, 0);
    bool aliased = quant || op_epi_aliased(c, &t, own, y);
    char *py = op_pout(c, 0);
    op_run_gemm_panels(c, &t, own, &p, tb, &yf, yq, py, aliased);
    if (!aliased) op_run_epilogue(c, &t, own, y, py);
    return true;
  }
  int64_t arb = op_arows(c, &t, NULL); /* A a block of rows at a time */
  float *abuf = op_widen_take(c, &t, 0);
  float *bbuf = op_widen_take(c, &t, 1); /* B a matrix at a time */
  const void *pa = arb ? NULL : op_run_prologue(c, &t, own, 0);
  for (uint32_t h = 0; h < nh; h++) {
    const mp_btensor *b = op_in(c, 1 + h), *y = op_out(c, h);
    uint32_t ci = p.horiz ? 1 + nh + h : 2;
    const mp_btensor *ct = gemm && own > 1 + nh ? op_in(c, ci) : NULL;
    const void *pb = p.horiz ? op_pin(c, 1 + h)
                     : bbuf  ? NULL
                             : op_run_prologue(c, &t, own, 1);
    bool i8 = y->dtype == MP_KD_I8;
    size_t es = i8 ? 1 : 4;
    void *out = op_pout(c, h);
    /* an epilogue operand in y's buffer: row by row (op_check_gemm) */
    bool rows = !p.horiz && op_gemm_rowwise(&p, a, b) &&
                (quant || op_epi_aliased(c, &t, own, y));
    size_t yes = quant ? mp_kd_size(y->dtype) : es; /* y's elements */
    char *py = p.horiz || rows ? out : op_head_out(c, &t, own, y, out);
    int64_t bidx[MP_K_MAX_RANK] = {0};
    if (gemm) {
      int64_t m = y->shape.dims[0], n = y->shape.dims[1];
      int64_t k = a->shape.dims[p.ta ? 0 : 1], mnk[3] = {m, n, k};
      const void *pc = ct ? op_pin(c, ci) : NULL;
      if (rows) {
        op_gemm_rows(c, &t, own, &p, mnk, pa, pb, ct, pc, quant ? &yf : y, yq,
                     py, bidx, 0, arb ? abuf : NULL, 0);
      } else if (arb) {
        op_gemm_arows(c, &t, own, &p, arb, abuf, 0, mnk, pb, ct, pc, py);
      } else {
        op_gemm_one(&p, i8, m, n, k, pa, pb, ct, pc, py, NULL);
      }
    } else {
      mp_kshape ys;
      int64_t m, n, k;
      char why[8];
      op_ctx tmp = *c;
      tmp.why = why;
      tmp.cap = sizeof why;
      (void)op_mm_shape(&tmp, &a->shape, &b->shape, &ys, &m, &n, &k);
      uint32_t br = ys.rank - (a->shape.rank >= 2) - (b->shape.rank >= 2);
      mp_kshape bs = {br, {0}},
                as = {a->shape.rank > 2 ? a->shape.rank - 2 : 0, {0}},
                bbs = {b->shape.rank > 2 ? b->shape.rank - 2 : 0, {0}};
      memcpy(bs.dims, ys.dims, br * sizeof *bs.dims);
      memcpy(as.dims, a->shape.dims, as.rank * sizeof *as.dims);
      memcpy(bbs.dims, b->shape.dims, bbs.rank * sizeof *bbs.dims);
      mp_kbcast bc;
      (void)mp_k_bcast_init(&bc, &bs, &as, &bbs, NULL);
      int64_t nb = mp_kshape_count(&bs), *idx = bidx, ia = 0, ib = 0;
      int64_t mnk[3] = {m, n, k}, widened = -1;
      for (int64_t i = 0; i < nb; i++) {
        const char *ai =
            pa ? (const char *)pa + (size_t)(ia * m * k) * es : NULL;
        const char *bi = (const char *)pb + (size_t)(ib * k * n) * es;
        if (bbuf) { /* op_bslices: B's matrix ib, once per run of it */
          if (ib != widened)
            (void)op_widen_range(c, &t, own, 1, ib * k * n, k * n, bbuf);
          widened = ib;
          bi = (const char *)bbuf;
        }
        char *yi = py + (size_t)(i * m * n) * yes;
        if (rows) {
          op_gemm_rows(c, &t, own, &p, mnk, ai, bi, NULL, NULL, quant ? &yf : y,
                       yq, yi, idx, br, arb ? abuf : NULL, ia * m * k);
        } else if (arb) {
          op_gemm_arows(c, &t, own, &p, arb, abuf, ia * m * k, mnk, bi, NULL,
                        NULL, yi);
        } else {
          op_gemm_one(&p, i8, m, n, k, ai, bi, NULL, NULL, yi, NULL);
        }
        for (uint32_t d = br; d-- > 0;) {
          ia += bc.sa[d];
          ib += bc.sb[d];
          if (++idx[d] < bs.dims[d]) break;
          ia -= bc.sa[d] * bs.dims[d];
          ib -= bc.sb[d] * bs.dims[d];
          idx[d] = 0;
        }
      }
    }
    if (!p.horiz && !rows) {
      op_run_epilogue(c, &t, own, y, py);
      op_finish_epilogue(y, py, out);
    }
  }
  return true;
}

/* ---- elementwise ----------------------------------------------------------
 */

static bool op_check_ew(op_ctx *c, op_rd *r, int64_t code, bool binary);
static void op_run_ew(op_ctx *c, op_rd *r, int64_t code, bool binary,
                      const mp_kunary_params *up);

static bool op_check_unary(op_ctx *c) {
  op_rd r = op_reader(c);
  int64_t u = rd_range(&r, 0, MP_KU_COUNT - 1);
  (void)rd_f(&r);
  (void)rd_f(&r);
  if (!r.bad && r.at < r.n) return op_check_ew(c, &r, u, false);
  const mp_btensor *x = op_in(c, 0),
                   *y = c->op->n_out == 1 ? op_out(c, 0) : NULL;
  if (r.bad || r.at != r.n) return op_fail(c, "bad parameters");
  uint32_t max_in = u == MP_KU_CLIP ? 3 : 1;
  if (!x || !y || c->op->n_in > max_in) return op_fail(c, "bad arity");
  /* The kernel reads and writes one dtype: Not is bool to bool (a Not of
   * i64 into a bool output wrote 8-byte elements into 1-byte ones). */
  if (u == MP_KU_NOT && x->dtype != MP_KD_BOOL) {
    return op_fail(c, "Not of %s (bool only)", mp_kd_name(x->dtype));
  }
  if (u == MP_KU_BITNOT &&
      (mp_kd_is_float(x->dtype) || x->dtype == MP_KD_BOOL)) {
    return op_fail(c, "BitwiseNot of %s (integers only)", mp_kd_name(x->dtype));
  }
  int want = x->dtype;
  if (y->dtype != want)
    return op_fail(c, "output dtype %s, expected %s", mp_kd_name(y->dtype),
                   mp_kd_name(want));
  for (uint32_t k = 1; k < c->op->n_in; k++) {
    const mp_btensor *v = op_in(c, k);
    if (v && (op_count(v) != 1 || v->dtype != x->dtype)) {
      return op_fail(c, "Clip bound '%s' is not a scalar of x's dtype",
                     v->name);
    }
  }
  if (op_aliases(x, y) && x->offset != y->offset) {
    return op_fail(c, "in place at another offset of the buffer");
  }
  return op_expect_shape(c, y, &x->shape);
}

static bool op_run_unary(op_ctx *c) {
  op_rd r = op_reader(c);
  mp_kunary u = (mp_kunary)rd_i(&r);
  mp_kunary_params p;
  p.alpha = rd_f(&r);
  p.beta = rd_f(&r);
  if (r.at < r.n) {
    op_run_ew(c, &r, u, false, &p);
    return true;
  }
  const mp_btensor *x = op_in(c, 0);
  if (op_pin(c, 1)) p.alpha = mp_k_load(op_pin(c, 1), x->dtype, 0);
  if (op_pin(c, 2)) p.beta = mp_k_load(op_pin(c, 2), x->dtype, 0);
  OP_K(unary)(u, &p, x->dtype, op_pin(c, 0), op_pout(c, 0),
              (size_t)op_count(x));
  return true;
}

static bool op_is_compare(int64_t op) {
  return op >= MP_KB_EQUAL && op <= MP_KB_XOR;
}

/* y = a op b: the output shape is the broadcast of the two. */
static bool op_check_bin2(op_ctx *c, int64_t op, const mp_btensor *a,
                          const mp_btensor *b, const mp_btensor *y) {
  if (a->dtype != b->dtype) {
    return op_fail(c, "operands '%s' (%s) and '%s' (%s) differ in dtype",
                   a->name, mp_kd_name(a->dtype), b->name,
                   mp_kd_name(b->dtype));
  }
  if (op >= MP_KB_SHL && mp_kd_is_float(a->dtype)) {
    return op_fail(c, "bit operations need integers, not %s",
                   mp_kd_name(a->dtype));
  }
  int want = op_is_compare(op) ? MP_KD_BOOL : a->dtype;
  if (y->dtype != want)
    return op_fail(c, "output dtype %s, expected %s", mp_kd_name(y->dtype),
                   mp_kd_name(want));
  mp_kshape s = {a->shape.rank > b->shape.rank ? a->shape.rank : b->shape.rank,
                 {0}};
  for (uint32_t i = 0; i < s.rank; i++) {
    int64_t da = i + a->shape.rank >= s.rank
                     ? a->shape.dims[i + a->shape.rank - s.rank]
                     : 1;
    int64_t db = i + b->shape.rank >= s.rank
                     ? b->shape.dims[i + b->shape.rank - s.rank]
                     : 1;
    if (da != db && da != 1 && db != 1) {
      return op_fail(c, "'%s' and '%s' do not broadcast", a->name, b->name);
    }
    s.dims[i] = da == 1 ? db : da;
  }
  if (op == MP_KB_PRELU) {
    /* The slope broadcasts to x, never the other way. */
    if (!op_same_shape(&s, &a->shape)) {
      return op_fail(c, "slope '%s' does not broadcast to x", b->name);
    }
  }
  if (!op_expect_shape(c, y, &s)) return false;
  for (int k = 0; k < 2; k++) {
    const mp_btensor *v = k ? b : a;
    if (op_aliases(v, y) &&
        (!op_same_shape(&v->shape, &y->shape) || v->offset != y->offset ||
         mp_kd_size(v->dtype) != mp_kd_size(y->dtype))) {
      return op_fail(c,
                     "output '%s' shares the buffer of '%s' without the "
                     "same shape and offset",
                     y->name, v->name);
    }
  }
  return true;
}

/* A binary op with a Resize prologue (docs/ir-conventions.md, "Resize:k"):
 * input up - 1 is read replicated, element o of axis d from o / f_d, f_d
 * = y_d / v_d. op_up_shapes splits every axis with f_d > 1 into (v_d,
 * f_d) for y and the other operand (which then broadcasts as usual) and
 * into (v_d, 1) for v, so one broadcast iteration computes the op. false
 * when v does not divide y or the split shapes exceed MP_K_MAX_RANK. */
static bool op_up_shapes(const mp_kshape *y, const mp_kshape *other,
                         const mp_kshape *v, mp_kshape *ys, mp_kshape *os,
                         mp_kshape *vs) {
  if (v->rank != y->rank || other->rank > y->rank) return false;
  uint32_t pad = y->rank - other->rank, r = 0;
  for (uint32_t d = 0; d < y->rank; d++) {
    int64_t yd = y->dims[d], vd = v->dims[d];
    int64_t od = d < pad ? 1 : other->dims[d - pad];
    if (vd <= 0 || yd % vd != 0 || r + 2 > MP_K_MAX_RANK) return false;
    int64_t f = yd / vd;
    if (f == 1) {
      ys->dims[r] = yd, os->dims[r] = od, vs->dims[r] = vd, r++;
      continue;
    }
    if (od != 1 && od != yd) return false;
    ys->dims[r] = vd, os->dims[r] = od == 1 ? 1 : vd, vs->dims[r] = vd;
    r++;
    ys->dims[r] = f, os->dims[r] = od == 1 ? 1 : f, vs->dims[r] = 1;
    r++;
  }
  ys->rank = os->rank = vs->rank = r;
  return true;
}

/* b's shape with pad unit dims appended (parameter 3: input 1 aligned
 * with input 0 from an axis on, as ONNX before opset 7 read it). */
static void op_pad_shape(const mp_btensor *b, int64_t pad, mp_kshape *s) {
  *s = b->shape;
  for (int64_t k = 0; k < pad; k++) s->dims[s->rank++] = 1;
}

static bool op_check_binary(op_ctx *c) {
  op_rd r = op_reader(c);
  int64_t op = rd_range(&r, 0, MP_KB_COUNT - 1);
  int64_t act = rd_range(&r, 0, 2); /* fused activation: none, Relu, Relu6 */
  /* optional: 1 + the input a Resize prologue replicates, or 3 and the
   * unit dims to append to input 1's (opset < 7) */
  int64_t up = r.at < r.n ? rd_range(&r, 1, 4) : 0;
  if (up == 4 && !act && !r.bad) return op_check_ew(c, &r, op, true);
  int64_t pad = up == 3 ? rd_range(&r, 1, MP_K_MAX_RANK - 1) : 0;
  if (r.bad || r.at != r.n || up == 4) return op_fail(c, "bad parameters");
  if (c->op->n_in != 2 || c->op->n_out != 1 || !op_in(c, 0) || !op_in(c, 1)) {
    return op_fail(c, "needs two inputs and one output");
  }
  const mp_btensor *a = op_in(c, 0), *b = op_in(c, 1), *y = op_out(c, 0);
  if (!up) return op_check_bin2(c, op, a, b, y);
  if (pad) {
    mp_btensor aligned = *b;
    if (act || b->shape.rank + pad > a->shape.rank) {
      return op_fail(c, "'%s' cannot be aligned with '%s' by %d unit dims",
                     b->name, a->name, (int)pad);
    }
    op_pad_shape(b, pad, &aligned.shape);
    return op_check_bin2(c, op, a, &aligned, y);
  }
  const mp_btensor *v = up == 1 ? a : b, *o = up == 1 ? b : a;
  mp_kshape ys, os, vs;
  if (op == MP_KB_PRELU ||
      !op_up_shapes(&y->shape, &o->shape, &v->shape, &ys, &os, &vs)) {
    return op_fail(c,
                   "Resize prologue: '%s' does not divide the output "
                   "'%s' axis by axis (or the other operand does not "
                   "broadcast)",
                   v->name, y->name);
  }
  /* y[i] is written while v[i / f] is still to be read: never in place,
   * unless every factor is 1 (then op_check_bin2 checks it as usual). */
  if (op_aliases(v, y) && !op_same_shape(&v->shape, &y->shape)) {
    return op_fail(c, "output '%s' shares the buffer of the replicated '%s'",
                   y->name, v->name);
  }
  mp_btensor full = *v; /* v as the op sees it: replicated to y's shape */
  full.shape = y->shape;
  return up == 1 ? op_check_bin2(c, op, &full, b, y)
                 : op_check_bin2(c, op, a, &full, y);
}

static bool op_run_binary(op_ctx *c) {
  op_rd r = op_reader(c);
  mp_kbinary op = (mp_kbinary)rd_i(&r);
  int64_t act = rd_i(&r);
  int64_t up = r.at < r.n ? rd_i(&r) : 0;
  if (up == 4) {
    op_run_ew(c, &r, op, true, NULL);
    return true;
  }
  const mp_btensor *a = op_in(c, 0), *b = op_in(c, 1), *y = op_out(c, 0);
  mp_kbcast bc;
  if (!up) {
    (void)mp_k_bcast_init(&bc, &y->shape, &a->shape, &b->shape, NULL);
  } else if (up == 3) {
    mp_kshape aligned;
    op_pad_shape(b, rd_i(&r), &aligned);
    (void)mp_k_bcast_init(&bc, &y->shape, &a->shape, &aligned, NULL);
  } else {
    mp_kshape ys, os, vs;
    (void)op_up_shapes(&y->shape, up == 1 ? &b->shape : &a->shape,
                       up == 1 ? &a->shape : &b->shape, &ys, &os, &vs);
    (void)mp_k_bcast_init(&bc, &ys, up == 1 ? &vs : &os, up == 1 ? &os : &vs,
                          NULL);
  }
  OP_K(binary)(op, &bc, a->dtype, op_pin(c, 0), op_pin(c, 1), y->dtype,
               op_pout(c, 0), false);
  if (act) {
    mp_kunary_params up_ = {0, 6};
    OP_K(unary)(act == 1 ? MP_KU_RELU : MP_KU_CLIP, &up_, y->dtype,
                op_pout(c, 0), op_pout(c, 0), (size_t)op_count(y));
  }
  return true;
}

/* ---- an elementwise head with DequantizeLinear prologues (absorb.c rule
 * 9) and a QuantizeLinear tail (fuse.c condition 7): parameter 4 of a
 * binary op, or any parameter after a unary op's, starts the head tail.
 * The op runs a tile of y at a time (op_epi_split): each 8-bit input
 * under a prologue widened for the tile (op_widen_range, the kernel the
 * DequantizeLinear runs), the op's kernel in f32, then the QuantizeLinear
 * kernel into y. Every element gets the operations the unfused ops gave
 * it, in the same order, so the bits are the same; no f32 tensor exists
 * whole. */

/* Input k of a head of absorb.c rule 9 under its DequantizeLinear
 * prologue: 8-bit, one f32 scale, a matching zero point. */
static bool op_check_dq8(op_ctx *c, const op_tail *t, uint32_t own,
                         uint32_t k) {
  const mp_btensor *x = op_in(c, k);
  const mp_btensor *sc = op_in(c, op_pro_at(t, own, k, 0));
  if (t->pro[k].kind != 1 || (x->dtype != MP_KD_I8 && x->dtype != MP_KD_U8) ||
      !sc || sc->dtype != MP_KD_F32 || op_count(sc) != 1) {
    return op_fail(c,
                   "prologue DequantizeLinear of '%s': not an 8-bit "
                   "tensor with one f32 scale",
                   x->name);
  }
  return op_quant_params(c, x, sc, op_in(c, op_pro_at(t, own, k, 1)), x->dtype,
                         0, 0);
}

/* The tail of such a head (what: the op, for the message): only
 * DequantizeLinear prologues and at most a QuantizeLinear after (chain:
 * an elementwise op's epilogue of op_check_chain instead); and the f32
 * value *y it computes: its output, or under the QuantizeLinear that
 * output's f32 view. */
static bool op_check_dq_head(op_ctx *c, const op_tail *t, uint32_t own,
                             const char *what, bool chain, mp_btensor *y) {
  const mp_btensor *yq = op_out(c, 0);
  /* a chain may start at an f32 binary op (fuse.c condition 9) */
  bool f32 = chain && !t->n_pro && t->n_epi;
  if ((!t->n_dq && !f32) || t->n_pro != t->n_dq ||
      (!chain && (t->n_epi > 1 || (t->n_epi && !op_quant_tail(t))))) {
    return op_fail(c,
                   "%s takes DequantizeLinear prologues and one "
                   "QuantizeLinear after it, nothing else",
                   what);
  }
  *y = op_epi_value(t, yq);
  if (y->dtype != MP_KD_F32) {
    return op_fail(c,
                   "output '%s' is %s (f32, or 8-bit after a QuantizeLinear)",
                   yq->name, mp_kd_name(yq->dtype));
  }
  if (chain) return true;
  return !t->n_epi || op_check_quant_tail(c, true, &t->epi[0], own, yq);
}

/* The start of the check of a head of absorb.c rule 9 with one
 * DequantizeLinear prologue, on input 0, and own inputs of its own: the
 * tail read from r, its f32 value *y and its 8-bit input; what names the
 * op and where says where it takes the prologue (the message). */
static bool op_check_dq1_head(op_ctx *c, op_rd *r, op_tail *t, uint32_t own,
                              const char *what, const char *where,
                              mp_btensor *y) {
  rd_tail(r, t);
  if (r->bad || r->at != r->n) return op_fail(c, "bad parameters");
  if (!op_in(c, 0) || c->op->n_out != 1 || op_own(c, t) != own ||
      t->n_dq != 1 || !t->pro[0].kind) {
    return op_fail(c, "%s takes a DequantizeLinear prologue %s", what, where);
  }
  return op_check_dq_head(c, t, own, what, false, y) &&
         op_check_dq8(c, t, own, 0);
}

/* The QuantizeLinear ending such a head's epilogue over n f32 values at
 * src of output channel ch (its scale when there is one per channel),
 * into output elements [e0, e0 + n). */
static void op_quant_into(op_ctx *c, const op_tail *t, uint32_t own, int64_t ch,
                          const float *src, int64_t e0, int64_t n) {
  const mp_btensor *yq = op_out(c, 0);
  op_epi_quant(c, t, own, yq, ch, src, n,
               (char *)op_pout(c, 0) + (size_t)e0 * mp_kd_size(yq->dtype));
}

/* The workspace of a head of absorb.c rule 9 run one (batch, channel)
 * plane at a time (a pool, a Resize; x and its f32 value y 4-D or more):
 * a plane of x widened, and of y before its QuantizeLinear. */
static void op_planes_need(op_ctx *c, const op_tail *t, const mp_btensor *x,
                           const mp_btensor *y) {
  int64_t planes = x->shape.dims[0] * x->shape.dims[1];
  int64_t xin = planes ? op_count(x) / planes : 0;
  int64_t yin = planes ? op_count(y) / planes : 0;
  c->need_ws += (size_t)xin * 4 + 64 + (t->n_epi ? (size_t)yin * 4 + 64 : 0);
}

/* Runs such a head: each plane of input 0 widened (own: the head's own
 * inputs), fn(arg) over it into the f32 plane (the output's, or the
 * workspace's), which the tail's QuantizeLinear then writes; each output
 * plane reads its input plane only. */
typedef void (*op_plane_fn)(const void *arg, const float *x, float *y);

static void op_run_planes(op_ctx *c, op_rd *r, uint32_t own, op_plane_fn fn,
                          const void *arg) {
  op_tail t;
  rd_tail(r, &t);
  const mp_btensor *x = op_in(c, 0), *yq = op_out(c, 0);
  mp_btensor y = op_epi_value(&t, yq);
  int64_t planes = x->shape.dims[0] * x->shape.dims[1];
  if (planes == 0) return;
  int64_t xin = op_count(x) / planes, yin = op_count(&y) / planes;
  float *wx = op_ws_take(c, xin), *wy = t.n_epi ? op_ws_take(c, yin) : NULL;
  for (int64_t pl = 0; pl < planes; pl++) {
    const float *px = op_widen_range(c, &t, own, 0, pl * xin, xin, wx);
    float *out = wy ? wy : (float *)op_pout(c, 0) + pl * yin;
    fn(arg, px, out);
    if (wy) op_quant_into(c, &t, own, 0, wy, pl * yin, yin);
  }
}

/* A head that runs a tile at a time over x writes over x only tile by
 * tile in place: the same elements, the same bytes. */
static bool op_check_tile_inplace(op_ctx *c, const mp_btensor *x,
                                  const mp_btensor *yq) {
  if (op_aliases(x, yq) &&
      (x->offset != yq->offset || !op_same_shape(&x->shape, &yq->shape) ||
       mp_kd_size(x->dtype) != mp_kd_size(yq->dtype))) {
    return op_fail(c,
                   "output '%s' shares the buffer of '%s' without the same "
                   "shape, offset and element size",
                   yq->name, x->name);
  }
  return true;
}

static bool op_check_ew(op_ctx *c, op_rd *r, int64_t code, bool binary) {
  op_tail t;
  rd_tail(r, &t);
  /* a binary op's optional last parameter: 1 + the input read replicated
   * (absorb.c rule 11) */
  int64_t rep = binary && r->at < r->n ? rd_range(r, 1, 2) : 0;
  if (r->bad || r->at != r->n) return op_fail(c, "bad parameters");
  uint32_t own = op_own(c, &t), nk = binary ? 2 : 1;
  uint32_t want = binary ? 2 : code == MP_KU_CLIP ? 3 : 1;
  if (own != want || c->op->n_out != 1 || !op_in(c, 0) ||
      (binary && !op_in(c, 1))) {
    return op_fail(c, "bad arity");
  }
  const mp_btensor *yq = op_out(c, 0);
  mp_btensor y, v[2];
  if (!op_check_dq_head(c, &t, own, "an elementwise op", true, &y))
    return false;
  for (uint32_t k = 0; k < nk; k++) {
    const mp_btensor *x = op_in(c, k);
    v[k] = *x;
    if (t.pro[k].kind) {
      if (!op_check_dq8(c, &t, own, k)) return false;
      mp_kshape ys, os, vs;
      if (rep == k + 1) { /* replicated: y's axes whole multiples of x's */
        if (!op_up_shapes(&y.shape, &op_in(c, 1 - k)->shape, &x->shape, &ys,
                          &os, &vs)) {
          return op_fail(c,
                         "replicated input '%s' does not divide the output "
                         "axis by axis (or the other operand does not "
                         "broadcast)",
                         x->name);
        }
        v[k].shape = y.shape; /* as the op reads it */
      } else if (!op_same_shape(&x->shape, &y.shape)) {
        return op_fail(c,
                       "prologue input '%s' does not have the output's "
                       "shape",
                       x->name);
      }
      v[k].dtype = MP_KD_F32;
    } else if (x->dtype != MP_KD_F32 || rep == k + 1) {
      return op_fail(c,
                     "input '%s' is %s, not f32 (or replicated without a "
                     "DequantizeLinear)",
                     x->name, mp_kd_name(x->dtype));
    }
    if (!op_check_tile_inplace(c, x, yq)) return false;
  }
  if (binary) {
    if (op_is_compare(code) || code == MP_KB_PRELU) {
      return op_fail(c, "binary op %d on a dequantized input", (int)code);
    }
    if (!op_check_bin2(c, code, &v[0], &v[1], &y)) return false;
  } else {
    if (code == MP_KU_NOT || code == MP_KU_BITNOT) {
      return op_fail(c, "unary op %d on a dequantized input", (int)code);
    }
    for (uint32_t k = 1; k < own; k++) {
      const mp_btensor *b = op_in(c, k);
      if (b && (op_count(b) != 1 || b->dtype != MP_KD_F32)) {
        return op_fail(c, "Clip bound '%s' is not an f32 scalar", b->name);
      }
    }
    if (!op_expect_shape(c, &y, &v[0].shape)) return false;
  }
  /* the epilogue's entries (op_check_epilogue); a chain's workspace is
   * counted here */
  size_t ws = c->need_ws;
  if (t.n_epi && !op_check_epilogue(c, &t, own, yq, 0)) return false;
  c->need_ws = ws;
  /* a tile of each widened input and of the f32 result; a chain also
   * keeps a tapped tile and an 8-bit one */
  size_t tb = op_epi_tile_bytes(&y);
  c->need_ws += (t.n_pro + (t.n_epi ? 1 : 0)) * (tb + 64);
  if (op_tap(&t) != UINT32_MAX) c->need_ws += tb + 64;
  if (op_epi_chained(&t)) c->need_ws += tb + 64;
  return true;
}

/* Input k read replicated (absorb.c rule 11) for the tile of y whose
 * outer index (y's axes before s) is idx: its elements under that tile,
 * index idx[d] / f_d along each outer axis and its whole trailing axes (a
 * contiguous run), widened into buf by its DequantizeLinear; *xin their
 * dims. The op reads them replicated (op_up_shapes), the values a Resize
 * then a DequantizeLinear gave. */
static const float *op_widen_replicated(op_ctx *c, const op_tail *t,
                                        uint32_t own, uint32_t k,
                                        const mp_btensor *y, uint32_t s,
                                        const int64_t *idx, float *buf,
                                        mp_kshape *xin) {
  const mp_btensor *x = op_in(c, k);
  int64_t xs[MP_K_MAX_RANK], off = 0;
  mp_kshape_strides(&x->shape, xs);
  for (uint32_t d = 0; d < s; d++) {
    off += idx[d] / (y->shape.dims[d] / x->shape.dims[d]) * xs[d];
  }
  xin->rank = y->shape.rank - s;
  for (uint32_t d = s; d < y->shape.rank; d++) {
    xin->dims[d - s] = x->shape.dims[d];
  }
  return op_widen_range(c, t, own, k, off, mp_kshape_count(xin), buf);
}

static void op_run_ew(op_ctx *c, op_rd *r, int64_t code, bool binary,
                      const mp_kunary_params *up) {
  op_tail t;
  rd_tail(r, &t);
  int64_t rep = binary && r->at < r->n ? rd_i(r) - 1 : -1; /* replicated */
  uint32_t own = op_own(c, &t), nk = binary ? 2 : 1;
  const mp_btensor *yq = op_out(c, 0);
  mp_btensor y = op_epi_value(&t, yq);
  uint32_t s = op_epi_split(&y.shape);
  mp_kshape yin = {y.shape.rank - s, {0}}, in[2];
  memcpy(yin.dims, y.shape.dims + s, yin.rank * sizeof *yin.dims);
  int64_t tile = mp_kshape_count(&yin), n = op_count(&y);
  float *w[2] = {NULL, NULL}, *wy = NULL;
  for (uint32_t k = 0; k < nk; k++) {
    if (t.pro[k].kind) w[k] = op_ws_take(c, tile);
  }
  if (t.n_epi) wy = op_ws_take(c, tile);
  float *kept = op_tap(&t) != UINT32_MAX ? op_ws_take(c, tile) : NULL;
  float *wq = op_epi_chained(&t) ? op_ws_take(c, tile) : NULL;
  bool quant = op_quant_tail(&t);
  mp_kunary_params p = up ? *up : (mp_kunary_params){0, 0};
  if (!binary && own == 3) { /* Clip's bounds */
    if (op_pin(c, 1)) p.alpha = mp_k_load(op_pin(c, 1), MP_KD_F32, 0);
    if (op_pin(c, 2)) p.beta = mp_k_load(op_pin(c, 2), MP_KD_F32, 0);
  }
  int64_t idx[MP_K_MAX_RANK] = {0};
  for (int64_t e0 = 0; e0 < n; e0 += tile) {
    const void *pk[2] = {NULL, NULL};
    for (uint32_t k = 0; k < nk; k++) {
      if (w[k] && rep == (int64_t)k) {
        pk[k] = op_widen_replicated(c, &t, own, k, &y, s, idx, w[k], &in[k]);
      } else if (w[k]) {
        pk[k] = op_widen_range(c, &t, own, k, e0, tile, w[k]);
        in[k] = yin;
      } else {
        pk[k] = op_tile_operand(c, k, &y, s, idx, &in[k]);
      }
    }
    float *out = wy ? wy : (float *)op_pout(c, 0) + e0;
    if (binary) {
      mp_kbcast bc;
      mp_kshape ys, os, vs;
      if (rep >= 0) { /* the small tile read replicated: split axes */
        (void)op_up_shapes(&yin, &in[1 - rep], &in[rep], &ys, &os, &vs);
        (void)mp_k_bcast_init(&bc, &ys, rep == 0 ? &vs : &os,
                              rep == 0 ? &os : &vs, NULL);
      } else {
        (void)mp_k_bcast_init(&bc, &yin, &in[0], &in[1], NULL);
      }
      OP_K(binary)((mp_kbinary)code, &bc, MP_KD_F32, pk[0], pk[1], MP_KD_F32,
                   out, false);
    } else {
      OP_K(unary)((mp_kunary)code, &p, MP_KD_F32, pk[0], out, (size_t)tile);
    }
    if (wy) {
      op_epi_tile(c, &t, own, &y, s, idx, wy, (size_t)tile * sizeof *wy, kept,
                  NULL, wq);
      if (quant) {
        op_quant_into(c, &t, own, 0, wy, e0, tile);
      } else { /* an f32 output: it may share an operand's buffer */
        memcpy((float *)op_pout(c, 0) + e0, wy, (size_t)tile * sizeof *wy);
      }
    }
    for (uint32_t d = s; d-- > 0;) {
      if (++idx[d] < y.shape.dims[d]) break;
      idx[d] = 0;
    }
  }
}

/* Sum, Max, Min, Mean of n inputs: folded pairwise into the output. */
static bool op_check_variadic(op_ctx *c) {
  op_rd r = op_reader(c);
  int64_t op = rd_range(&r, 0, 3);
  if (r.bad || r.at != r.n) return op_fail(c, "bad parameters");
  if (c->op->n_in < 1 || c->op->n_out != 1) return op_fail(c, "bad arity");
  const mp_btensor *y = op_out(c, 0);
  mp_kshape s = {0, {0}};
  for (uint32_t k = 0; k < c->op->n_in; k++) {
    const mp_btensor *v = op_in(c, k);
    if (!v || v->dtype != y->dtype) return op_fail(c, "input %u: bad dtype", k);
    /* In place over x0 only (y = x0 comes first), and exactly. */
    if (op_aliases(v, y) &&
        (k > 0 || v->offset != y->offset || op_count(v) != op_count(y))) {
      return op_fail(c, "output shares an input's buffer");
    }
    mp_kshape t = {s.rank > v->shape.rank ? s.rank : v->shape.rank, {0}};
    for (uint32_t i = 0; i < t.rank; i++) {
      int64_t da = i + s.rank >= t.rank ? s.dims[i + s.rank - t.rank] : 1;
      int64_t db = i + v->shape.rank >= t.rank
                       ? v->shape.dims[i + v->shape.rank - t.rank]
                       : 1;
      if (da != db && da != 1 && db != 1) return op_fail(c, "no broadcast");
      t.dims[i] = da == 1 ? db : da;
    }
    s = t;
  }
  if (op == 3 && !mp_kd_is_float(y->dtype)) {
    return op_fail(c, "Mean of integers");
  }
  return op_expect_shape(c, y, &s);
}

static bool op_run_variadic(op_ctx *c) {
  op_rd r = op_reader(c);
  int64_t op = rd_i(&r);
  static const mp_kbinary fold[] = {MP_KB_ADD, MP_KB_MAX, MP_KB_MIN, MP_KB_ADD};
  const mp_btensor *y = op_out(c, 0);
  mp_kbcast bc;
  const mp_btensor *x0 = op_in(c, 0);
  /* y = broadcast(x0) first: a Max with itself broadcasts exactly. */
  (void)mp_k_bcast_init(&bc, &y->shape, &x0->shape, &x0->shape, NULL);
  OP_K(binary)(MP_KB_MAX, &bc, y->dtype, op_pin(c, 0), op_pin(c, 0), y->dtype,
               op_pout(c, 0), false);
  for (uint32_t k = 1; k < c->op->n_in; k++) {
    (void)mp_k_bcast_init(&bc, &y->shape, &y->shape, &op_in(c, k)->shape, NULL);
    OP_K(binary)(fold[op], &bc, y->dtype, op_pout(c, 0), op_pin(c, k), y->dtype,
                 op_pout(c, 0), false);
  }
  if (op == 3) {
    void *py = op_pout(c, 0);
    size_t n = (size_t)op_count(y);
    for (size_t i = 0; i < n; i++) {
      mp_k_store(py, y->dtype, i, mp_k_load(py, y->dtype, i) / c->op->n_in);
    }
  }
  return true;
}

static bool op_check_where(op_ctx *c) {
  if (c->op->n_params || c->op->n_in != 3 || c->op->n_out != 1) {
    return op_fail(c, "bad arity");
  }
  const mp_btensor *cd = op_in(c, 0), *a = op_in(c, 1), *b = op_in(c, 2),
                   *y = op_out(c, 0);
  if (!cd || !a || !b || cd->dtype != MP_KD_BOOL || a->dtype != b->dtype ||
      y->dtype != a->dtype) {
    return op_fail(c, "bad dtypes");
  }
  mp_kshape s = {0, {0}};
  const mp_btensor *v3[3] = {cd, a, b};
  for (int k = 0; k < 3; k++) {
    const mp_kshape *vs = &v3[k]->shape;
    mp_kshape t = {s.rank > vs->rank ? s.rank : vs->rank, {0}};
    for (uint32_t i = 0; i < t.rank; i++) {
      int64_t da = i + s.rank >= t.rank ? s.dims[i + s.rank - t.rank] : 1;
      int64_t db = i + vs->rank >= t.rank ? vs->dims[i + vs->rank - t.rank] : 1;
      if (da != db && da != 1 && db != 1) return op_fail(c, "no broadcast");
      t.dims[i] = da == 1 ? db : da;
    }
    s = t;
    if (op_aliases(v3[k], y)) return op_fail(c, "output shares an input");
  }
  return op_expect_shape(c, y, &s);
}

static bool op_run_where(op_ctx *c) {
  const mp_btensor *y = op_out(c, 0);
  mp_kbcast bc;
  (void)mp_k_bcast_init(&bc, &y->shape, &op_in(c, 0)->shape,
                        &op_in(c, 1)->shape, &op_in(c, 2)->shape);
  mp_k_where(&bc, y->dtype, op_pin(c, 0), op_pin(c, 1), op_pin(c, 2),
             op_pout(c, 0));
  return true;
}

static bool op_check_cast(op_ctx *c) {
  const mp_btensor *x = op_in(c, 0),
                   *y = c->op->n_out == 1 ? op_out(c, 0) : NULL;
  if (c->op->n_params || c->op->n_in != 1 || !x || !y)
    return op_fail(c, "bad arity");
  if (op_aliases(x, y) && (mp_kd_size(x->dtype) != mp_kd_size(y->dtype) ||
                           x->offset != y->offset)) {
    return op_fail(c, "in-place Cast between element sizes");
  }
  return op_expect_shape(c, y, &x->shape);
}

static bool op_run_cast(op_ctx *c) {
  const mp_btensor *x = op_in(c, 0), *y = op_out(c, 0);
  mp_k_cast(x->dtype, op_pin(c, 0), y->dtype, op_pout(c, 0),
            (size_t)op_count(x));
  return true;
}

/* Reshape, Flatten, Squeeze, Unsqueeze, Identity: the same bytes. */
static bool op_check_view(op_ctx *c) {
  const mp_btensor *x = op_in(c, 0),
                   *y = c->op->n_out == 1 ? op_out(c, 0) : NULL;
  if (c->op->n_params || !x || !y) return op_fail(c, "bad arity");
  if (x->bytes != y->bytes || x->dtype != y->dtype) {
    return op_fail(c, "view '%s' has %llu bytes of %s, its input %llu of %s",
                   y->name, (unsigned long long)y->bytes, mp_kd_name(y->dtype),
                   (unsigned long long)x->bytes, mp_kd_name(x->dtype));
  }
  if (op_aliases(x, y) && x->offset != y->offset) {
    return op_fail(c, "view '%s' at another offset of its input's buffer",
                   y->name);
  }
  return true;
}

static bool op_run_view(op_ctx *c) {
  const mp_btensor *x = op_in(c, 0);
  void *px = op_pin(c, 0), *py = op_pout(c, 0);
  if (px != py) OP_MEMMOVE(py, px, (size_t)x->bytes);
  return true;
}

/* COPY: input k to output k (an If's taken branch to the If's outputs). */
static bool op_check_copy(op_ctx *c) {
  if (c->op->n_params || c->op->n_in == 0 || c->op->n_in != c->op->n_out) {
    return op_fail(c, "bad arity");
  }
  for (uint32_t k = 0; k < c->op->n_in; k++) {
    const mp_btensor *x = op_in(c, k), *y = op_out(c, k);
    if (!x || x->dtype != y->dtype || !op_same_shape(&x->shape, &y->shape)) {
      return op_fail(c, "output '%s' is not its input %u's type and shape",
                     y->name, k);
    }
    if (op_aliases(x, y) && x->offset != y->offset) {
      return op_fail(c, "output '%s' at another offset of its input's buffer",
                     y->name);
    }
  }
  return true;
}

static bool op_run_copy(op_ctx *c) {
  for (uint32_t k = 0; k < c->op->n_in; k++) {
    void *px = op_pin(c, k), *py = op_pout(c, k);
    if (px != py) OP_MEMMOVE(py, px, (size_t)op_in(c, k)->bytes);
  }
  return true;
}

/* LSTM, GRU, RNN: X, W, R, [B], [sequence_lens], [initial_h], and for
 * LSTM [initial_c], [P] -> [Y], [Y_h], and for LSTM [Y_c] (mp_k_rnn);
 * parameters hidden_size, directions, reverse, layout, clip (f64 bits),
 * cell, linear_before_reset. */
static bool op_rnn_params(op_ctx *c, mp_krnn *k) {
  op_rd r = op_reader(c);
  memset(k, 0, sizeof *k);
  k->hidden = rd_range(&r, 1, INT32_MAX);
  k->dirs = (int)rd_range(&r, 1, 2);
  k->reverse = (int)rd_range(&r, 0, 1);
  k->layout = (int)rd_range(&r, 0, 1);
  int64_t bits = rd_i(&r);
  memcpy(&k->clip, &bits, sizeof k->clip);
  k->cell = (int)rd_range(&r, MP_KCELL_LSTM, MP_KCELL_RNN);
  k->linear_before_reset = (int)rd_range(&r, 0, 1);
  const mp_btensor *x = op_in(c, 0);
  if (r.bad || r.at != r.n || !x || x->shape.rank != 3 || !(k->clip >= 0.0)) {
    return false;
  }
  k->seq = x->shape.dims[k->layout ? 1 : 0];
  k->batch = x->shape.dims[k->layout ? 0 : 1];
  k->input = x->shape.dims[2];
  return true;
}

static bool op_check_rnn(op_ctx *c) {
  mp_krnn k;
  if (!op_rnn_params(c, &k)) return op_fail(c, "bad parameters or X");
  bool lstm = k.cell == MP_KCELL_LSTM;
  if (c->op->n_in < 3 || c->op->n_in > (lstm ? 8u : 6u) || c->op->n_out < 1 ||
      c->op->n_out > (lstm ? 3u : 2u)) {
    return op_fail(c, "bad arity");
  }
  const mp_btensor *lens = op_in(c, 4);
  if (lens && (lens->dtype != MP_KD_I32 || lens->shape.rank != 1 ||
               lens->shape.dims[0] != k.batch)) {
    return op_fail(c, "sequence_lens '%s' is not int32 [batch]", lens->name);
  }
  int64_t h = k.hidden, d = k.dirs, n = k.batch;
  int64_t gh = mp_k_rnn_gates(k.cell) * h;
  mp_kshape sw = {3, {d, gh, k.input}}, sr = {3, {d, gh, h}};
  mp_kshape sb = {2, {d, 2 * gh}}, sp = {2, {d, 3 * h}};
  mp_kshape sh =
      k.layout ? (mp_kshape){3, {n, d, h}} : (mp_kshape){3, {d, n, h}};
  mp_kshape sy = k.layout ? (mp_kshape){4, {n, k.seq, d, h}}
                          : (mp_kshape){4, {k.seq, d, n, h}};
  const mp_kshape *want_in[8] = {NULL, &sw, &sr, &sb, NULL, &sh, &sh, &sp};
  for (uint32_t i = 0; i < c->op->n_in; i++) {
    const mp_btensor *t = op_in(c, i);
    if (!t || i == 4) {
      if (!t && i < 3) return op_fail(c, "X, W and R are needed");
      continue;
    }
    if (t->dtype != MP_KD_F32) return op_fail(c, "input %u is not f32", i);
    if (want_in[i] && !op_expect_shape(c, t, want_in[i])) return false;
  }
  const mp_kshape *want_out[3] = {&sy, &sh, &sh};
  for (uint32_t i = 0; i < c->op->n_out; i++) {
    const mp_btensor *y = op_out(c, i);
    if (y->dtype != MP_KD_F32) return op_fail(c, "output %u is not f32", i);
    if (!op_out_of_place(c, y, want_out[i])) return false;
  }
  c->need_ws += (size_t)(2 * n * h + gh) * sizeof(float);
  return true;
}

static bool op_run_rnn(op_ctx *c) {
  mp_krnn k;
  (void)op_rnn_params(c, &k);
  uint32_t no = c->op->n_out;
  bool lstm = k.cell == MP_KCELL_LSTM;
  mp_k_rnn(&k, op_pin(c, 0), op_pin(c, 1), op_pin(c, 2), op_pin(c, 3),
           op_pin(c, 4), op_pin(c, 5), lstm ? op_pin(c, 6) : NULL,
           lstm ? op_pin(c, 7) : NULL, op_pout(c, 0),
           no > 1 ? op_pout(c, 1) : NULL, no > 2 ? op_pout(c, 2) : NULL,
           (float *)(void *)c->ws);
  return true;
}

/* ---- softmax and normalisation ------------------------------------------- */

static bool op_check_softmax(op_ctx *c) {
  op_rd r = op_reader(c);
  const mp_btensor *x = op_in(c, 0),
                   *y = c->op->n_out == 1 ? op_out(c, 0) : NULL;
  if (!x || !y || c->op->n_in != 1) return op_fail(c, "bad arity");
  int64_t axis = rd_range(&r, 0, x->shape.rank ? x->shape.rank - 1 : 0);
  int64_t lg = rd_range(&r, 0, 1);
  (void)rd_range(&r, 0, 1);
  if (r.bad || r.at != r.n) return op_fail(c, "bad parameters");
  (void)axis;
  bool ok = (x->dtype == MP_KD_F32 || (x->dtype == MP_KD_I8 && !lg)) &&
            y->dtype == x->dtype;
  if (!ok) return op_fail(c, "unsupported dtype %s", mp_kd_name(x->dtype));
  if (op_aliases(x, y) && x->offset != y->offset) {
    return op_fail(c, "in place at another offset");
  }
  return op_expect_shape(c, y, &x->shape);
}

static bool op_run_softmax(op_ctx *c) {
  op_rd r = op_reader(c);
  int64_t axis = rd_i(&r), lg = rd_i(&r), coerce = rd_i(&r), o, m, i;
  const mp_btensor *x = op_in(c, 0);
  op_split3(&x->shape, axis, coerce != 0, &o, &m, &i);
  if (x->dtype == MP_KD_I8) {
    OP_K(softmax_i8)(o, m, i, op_pin(c, 0), op_pout(c, 0));
  } else {
    OP_K(softmax_f32)(o, m, i, op_pin(c, 0), op_pout(c, 0), lg != 0);
  }
  return true;
}

/* ---- ATTN_ROWS: the attention pass's MatMul (analyzer/passes/attention.c) -
 * Q [B..., S, D], Kt [B..., D, T], V [B..., T, Dv], an optional
 * one-element scale (Mul or Div) and an optional mask broadcast to [B...,
 * S, T]; each query row runs the ops the pass absorbed, with their own
 * f32 kernels on one row (MatMul's gemm of one row, the binary kernel,
 * Softmax's), so the output is the unfused graph's, bit for bit; the row
 * of scores is the workspace. */

typedef struct op_attnr {
  int64_t lead, s, d, t, dv;
  uint32_t r;
  int64_t mst[MP_K_MAX_RANK]; /* the mask's strides over [B..., S, T] */
} op_attnr;

static bool op_attn_rows_shape(op_ctx *c, op_attnr *a) {
  op_rd r = op_reader(c);
  int64_t so = rd_range(&r, 0, 2);
  const mp_btensor *q = op_in(c, 0), *kt = op_in(c, 1), *v = op_in(c, 2),
                   *sc = op_in(c, 3), *m = op_in(c, 4);
  if (r.bad || r.at != r.n) return op_fail(c, "bad parameters");
  if (c->op->n_in != 5 || c->op->n_out != 1 || !q || !kt || !v || !sc != !so) {
    return op_fail(c, "needs Q, Kt, V, the scale its op names, a mask");
  }
  const mp_btensor *y = op_out(c, 0);
  uint32_t rk = q->shape.rank;
  if (q->dtype != MP_KD_F32 || kt->dtype != MP_KD_F32 ||
      v->dtype != MP_KD_F32 || y->dtype != MP_KD_F32 || rk < 2 ||
      kt->shape.rank != rk || v->shape.rank != rk) {
    return op_fail(c, "Q, Kt, V and the output must be f32 of one rank");
  }
  a->r = rk;
  a->lead = 1;
  for (uint32_t i = 0; i + 2 < rk; i++) {
    if (kt->shape.dims[i] != q->shape.dims[i] ||
        v->shape.dims[i] != q->shape.dims[i]) {
      return op_fail(c, "Q, Kt and V differ in their leading dims");
    }
    a->lead *= q->shape.dims[i];
  }
  a->s = q->shape.dims[rk - 2], a->d = q->shape.dims[rk - 1];
  a->t = kt->shape.dims[rk - 1], a->dv = v->shape.dims[rk - 1];
  if (kt->shape.dims[rk - 2] != a->d || v->shape.dims[rk - 2] != a->t) {
    return op_fail(c, "Q, Kt and V do not chain");
  }
  if (sc && (sc->dtype != MP_KD_F32 || op_count(sc) != 1)) {
    return op_fail(c, "the scale '%s' is not one f32", sc->name);
  }
  mp_kshape want = q->shape;
  want.dims[rk - 1] = a->dv;
  if (!op_out_of_place(c, y, &want)) return false;
  for (uint32_t i = 0; i < rk; i++) a->mst[i] = 0;
  if (m) {
    if (m->dtype != MP_KD_F32 || m->shape.rank > rk) {
      return op_fail(c, "the mask '%s' is not f32 of rank <= %u", m->name, rk);
    }
    int64_t stride = 1;
    for (uint32_t j = m->shape.rank; j-- > 0;) {
      uint32_t ax = rk - m->shape.rank + j;
      int64_t n = m->shape.dims[j], full = ax == rk - 1   ? a->t
                                           : ax == rk - 2 ? a->s
                                                          : q->shape.dims[ax];
      if (n != 1 && n != full) {
        return op_fail(c, "the mask '%s' does not broadcast to the scores",
                       m->name);
      }
      a->mst[ax] = n == 1 ? 0 : stride;
      stride *= n;
    }
  }
  c->need_ws = (size_t)a->t * sizeof(float);
  return true;
}

static bool op_check_attn_rows(op_ctx *c) {
  op_attnr a;
  return op_attn_rows_shape(c, &a);
}

static bool op_run_attn_rows(op_ctx *c) {
  op_attnr a;
  if (!op_attn_rows_shape(c, &a)) return false;
  int64_t so = c->op->params[0];
  const float *q = op_pin(c, 0), *kt = op_pin(c, 1), *v = op_pin(c, 2);
  const float *sc = op_pin(c, 3), *m = op_pin(c, 4);
  float *y = op_pout(c, 0), *row = (float *)(void *)c->ws;
  mp_kshape rs = {1, {a.t}}, one = {1, {1}};
  mp_kbcast by_one, by_row;
  (void)mp_k_bcast_init(&by_one, &rs, &rs, &one, NULL);
  /* the mask's row: its last dim, or one value */
  mp_kshape ms = {1, {a.mst[a.r - 1] ? a.t : 1}};
  (void)mp_k_bcast_init(&by_row, &rs, &rs, &ms, NULL);
  op_gemmp g;
  memset(&g, 0, sizeof g);
  g.alpha = 1;
  int64_t idx[MP_K_MAX_RANK] = {0};
  for (int64_t b = 0; b < a.lead; b++) {
    int64_t moff = 0;
    for (uint32_t i = 0; i + 2 < a.r; i++) moff += idx[i] * a.mst[i];
    for (int64_t i = 0; i < a.s; i++) {
      op_gemm_one(&g, false, 1, a.t, a.d, q + (b * a.s + i) * a.d,
                  kt + b * a.d * a.t, NULL, NULL, row, NULL);
      if (so) {
        OP_K(binary)(so == 2 ? MP_KB_DIV : MP_KB_MUL, &by_one, MP_KD_F32, row,
                     sc, MP_KD_F32, row, false);
      }
      if (m) {
        OP_K(binary)(MP_KB_ADD, &by_row, MP_KD_F32, row,
                     m + moff + i * a.mst[a.r - 2], MP_KD_F32, row, false);
      }
      OP_K(softmax_f32)(1, a.t, 1, row, row, false);
      op_gemm_one(&g, false, 1, a.dv, a.t, row, v + b * a.t * a.dv, NULL, NULL,
                  y + (b * a.s + i) * a.dv, NULL);
    }
    for (uint32_t i = a.r > 2 ? a.r - 2 : 0; i-- > 0;) {
      if (++idx[i] < op_in(c, 0)->shape.dims[i]) break;
      idx[i] = 0;
    }
  }
  return true;
}

/* Training mode (a second parameter, the momentum): the batch's mean and
 * variance normalise x, and the optional outputs 1 and 2 are the
 * running mean and variance, momentum x input + (1 - momentum) x the
 * batch's. */
static bool op_check_bn_head(op_ctx *c, op_rd *r);
static void op_run_bn_head(op_ctx *c, op_rd *r, double eps);

/* BatchNormalization's scale, B, mean and var: f32 [C], none in y. */
static bool op_check_bn_params(op_ctx *c, const mp_btensor *x,
                               const mp_btensor *y) {
  for (uint32_t k = 1; k < 5; k++) {
    const mp_btensor *v = op_in(c, k);
    if (!v || v->dtype != MP_KD_F32 || op_count(v) != x->shape.dims[1]) {
      return op_fail(c, "input %u is not f32 [%lld]", k,
                     (long long)x->shape.dims[1]);
    }
    if (op_aliases(v, y)) return op_fail(c, "output shares a parameter");
  }
  return true;
}

static bool op_check_batchnorm(op_ctx *c) {
  op_rd r = op_reader(c);
  (void)rd_f(&r);
  if (r.n > 2) return op_check_bn_head(c, &r);
  bool train = r.n == 2;
  if (train) (void)rd_f(&r);
  if (r.bad || r.at != r.n) return op_fail(c, "bad parameters");
  const mp_btensor *x = op_in(c, 0),
                   *y = c->op->n_out == 1 || (train && c->op->n_out == 3)
                            ? op_out(c, 0)
                            : NULL;
  if (c->op->n_in != 5 || !x || !y) {
    return op_fail(c,
                   "needs X, scale, B, mean, var and one output (in "
                   "training mode, or three)");
  }
  if (x->dtype != MP_KD_F32 || y->dtype != MP_KD_F32 || x->shape.rank < 2) {
    return op_fail(c, "needs f32 of rank >= 2");
  }
  if (!op_check_bn_params(c, x, y)) return false;
  if (op_aliases(x, y) && x->offset != y->offset) {
    return op_fail(c, "in place at another offset");
  }
  for (uint32_t k = 1; k < c->op->n_out; k++) {
    mp_kshape want = {.rank = 1, .dims = {x->shape.dims[1]}};
    const mp_btensor *s = op_out(c, k);
    if (s->dtype != MP_KD_F32) return op_fail(c, "'%s' is not f32", s->name);
    if (!op_out_of_place(c, s, &want)) return false;
    if (op_aliases(s, y)) return op_fail(c, "'%s' shares y's bytes", s->name);
  }
  /* the batch's mean and variance */
  if (train) c->need_ws += 2 * (size_t)x->shape.dims[1] * sizeof(float) + 8;
  return op_expect_shape(c, y, &x->shape);
}

static bool op_run_batchnorm(op_ctx *c) {
  op_rd r = op_reader(c);
  double eps = rd_f(&r);
  if (r.n > 2) {
    op_run_bn_head(c, &r, eps);
    return true;
  }
  const mp_btensor *x = op_in(c, 0);
  int64_t n = x->shape.dims[0], ch = x->shape.dims[1];
  int64_t rest = op_div(op_count(x), n * ch);
  const float *mean = op_pin(c, 3), *var = op_pin(c, 4);
  if (r.n == 2) {
    double mom = rd_f(&r);
    float *bm = (float *)(void *)c->ws, *bv = bm + ch;
    mp_k_batchnorm_stats_f32(n, ch, rest, op_pin(c, 0), bm, bv);
    for (uint32_t k = 1; k < c->op->n_out; k++) {
      const float *in = k == 1 ? mean : var, *b = k == 1 ? bm : bv;
      float *out = op_pout(c, k);
      for (int64_t i = 0; i < ch; i++) {
        out[i] = (float)(mom * in[i] + (1 - mom) * b[i]);
      }
    }
    mean = bm, var = bv;
  }
  OP_K(batchnorm_f32)(n, ch, rest, op_pin(c, 0), op_pin(c, 1), op_pin(c, 2),
                      mean, var, eps, op_pout(c, 0));
  return true;
}

/* A BatchNormalization (inference) with a DequantizeLinear prologue on X
 * (absorb.c rule 9) and maybe a QuantizeLinear after it (per tensor or
 * per channel): the parameters
 * after epsilon are the head tail. It runs a tile of one channel at a
 * time, at most OP_EPI_TILE elements: the tile widened by the
 * DequantizeLinear kernel, normalised by the kernel with that channel's
 * parameters (in place in the workspace), then quantized into y. Every
 * element gets the unfused operations, so the bits are the same. */
static int64_t op_bn_tile(const mp_btensor *x) {
  int64_t planes = x->shape.dims[0] * x->shape.dims[1];
  int64_t rest = planes ? op_count(x) / planes : 0;
  return rest < OP_EPI_TILE ? rest : OP_EPI_TILE;
}

static bool op_check_bn_head(op_ctx *c, op_rd *r) {
  op_tail t;
  mp_btensor y;
  if (!op_check_dq1_head(c, r, &t, 5, "a BatchNormalization",
                         "on X, with scale, B, mean and var", &y)) {
    return false;
  }
  const mp_btensor *x = op_in(c, 0), *yq = op_out(c, 0);
  if (x->shape.rank < 2) return op_fail(c, "needs X of rank >= 2");
  if (!op_check_bn_params(c, x, yq) || !op_check_tile_inplace(c, x, yq)) {
    return false;
  }
  c->need_ws += (size_t)op_bn_tile(x) * 4 + 64;
  return op_expect_shape(c, &y, &x->shape);
}

static void op_run_bn_head(op_ctx *c, op_rd *r, double eps) {
  op_tail t;
  rd_tail(r, &t);
  const mp_btensor *x = op_in(c, 0);
  int64_t ch = x->shape.dims[1], planes = x->shape.dims[0] * ch;
  int64_t rest = planes ? op_count(x) / planes : 0, tile = op_bn_tile(x);
  float *w = op_ws_take(c, tile);
  const float *p[4];
  for (uint32_t k = 0; k < 4; k++) p[k] = op_pin(c, k + 1);
  for (int64_t pl = 0; pl < planes; pl++) {
    int64_t q = pl % ch;
    for (int64_t i = 0; i < rest; i += tile) {
      int64_t e0 = pl * rest + i, n = rest - i < tile ? rest - i : tile;
      const float *px = op_widen_range(c, &t, 5, 0, e0, n, w);
      float *out = t.n_epi ? w : (float *)op_pout(c, 0) + e0;
      OP_K(batchnorm_f32)(1, 1, n, px, p[0] + q, p[1] + q, p[2] + q, p[3] + q,
                          eps, out);
      if (t.n_epi) op_quant_into(c, &t, 5, q, w, e0, n);
    }
  }
}

static bool op_check_layernorm(op_ctx *c) {
  op_rd r = op_reader(c);
  const mp_btensor *x = op_in(c, 0),
                   *y = c->op->n_out >= 1 ? op_out(c, 0) : NULL;
  if (!x || !y || c->op->n_in < 2 || c->op->n_in > 3 || c->op->n_out > 3) {
    return op_fail(c, "bad arity");
  }
  int64_t axis = rd_range(&r, 0, x->shape.rank ? x->shape.rank - 1 : 0);
  (void)rd_f(&r);
  if (r.bad || r.at != r.n) return op_fail(c, "bad parameters");
  int64_t outer, mid, inner;
  op_split3(&x->shape, axis, true, &outer, &mid, &inner);
  if (x->dtype != MP_KD_F32 || y->dtype != MP_KD_F32) {
    return op_fail(c, "needs f32");
  }
  for (uint32_t k = 1; k < c->op->n_in; k++) {
    const mp_btensor *v = op_in(c, k);
    if (v &&
        (v->dtype != MP_KD_F32 || (op_count(v) != mid && op_count(v) != 1))) {
      return op_fail(c, "scale/bias '%s' is not f32 of %lld elements (or one)",
                     v->name, (long long)mid);
    }
    /* one value for every element: repeated into the workspace */
    c->need_ws += op_repeat_bytes(v, mid, MP_KD_F32);
    if (op_aliases(v, y)) return op_fail(c, "output shares a parameter");
  }
  if (!op_in(c, 1)) return op_fail(c, "missing scale");
  for (uint32_t k = 1; k < c->op->n_out; k++) {
    const mp_btensor *s = op_out(c, k);
    mp_kshape want = x->shape;
    for (uint32_t i = (uint32_t)axis; i < want.rank; i++) want.dims[i] = 1;
    if (s->dtype != MP_KD_F32) return op_fail(c, "Mean/InvStdDev not f32");
    if (!op_expect_shape(c, s, &want)) return false;
  }
  if (op_aliases(x, y) && x->offset != y->offset) {
    return op_fail(c, "in place at another offset");
  }
  return op_expect_shape(c, y, &x->shape);
}

static bool op_run_layernorm(op_ctx *c) {
  op_rd r = op_reader(c);
  int64_t axis = rd_i(&r), outer, mid, inner;
  double eps = rd_f(&r);
  const mp_btensor *x = op_in(c, 0);
  op_split3(&x->shape, axis, true, &outer, &mid, &inner);
  unsigned char *ws = c->ws; /* a broadcast scale or bias, repeated */
  const float *par[2];
  for (uint32_t k = 0; k < 2; k++) {
    par[k] =
        op_repeat_one(op_in(c, 1 + k), op_pin(c, 1 + k), mid, MP_KD_F32, &ws);
  }
  OP_K(layernorm_f32)(outer, mid, op_pin(c, 0), par[0], par[1], eps,
                      op_pout(c, 0), c->op->n_out > 1 ? op_pout(c, 1) : NULL,
                      c->op->n_out > 2 ? op_pout(c, 2) : NULL);
  return true;
}

/* ---- pooling and reductions ---------------------------------------------- */

typedef struct op_poolp {
  int64_t nd, k[3], s[3], d[3], pb[3], pe[3], cip;
} op_poolp;

static void rd_pool(op_rd *r, op_poolp *p) {
  p->nd = rd_range(r, 1, 3);
  int64_t *arr[] = {p->k, p->s, p->d, p->pb, p->pe};
  int64_t lo[] = {1, 1, 1, 0, 0};
  for (int a = 0; a < 5; a++) {
    for (int i = 0; i < 3; i++) arr[a][i] = rd_range(r, lo[a], INT32_MAX);
  }
  p->cip = rd_range(r, 0, 1);
}

static void op_kpool(const op_poolp *p, const mp_kshape *x, const mp_kshape *y,
                     mp_kpool *k) {
  memset(k, 0, sizeof *k);
  k->n = x->dims[0];
  k->c = x->dims[1];
  k->count_include_pad = p->cip != 0;
  for (int i = 0; i < 3; i++) {
    int j = i - (3 - (int)p->nd);
    bool real = j >= 0;
    k->in[i] = real ? x->dims[2 + j] : 1;
    k->out[i] = real ? y->dims[2 + j] : 1;
    k->k[i] = real ? p->k[j] : 1;
    k->stride[i] = real ? p->s[j] : 1;
    k->dil[i] = real ? p->d[j] : 1;
    k->pad[i] = real ? p->pb[j] : 0;
    k->pad_end[i] = real ? p->pe[j] : 0;
  }
}

/* A MaxPool with its Indices output (the second) carries storage_order
 * after the pooling parameters. */
static bool op_pool_indices(const op_ctx *c, bool max) {
  return max && c->op->n_out == 2 && op_out(c, 1);
}

static bool op_pool_shapes(op_ctx *c, const op_poolp *pp, const mp_btensor *x,
                           const mp_btensor *y);
static bool op_check_pool_tail(op_ctx *c, op_rd *r, const op_poolp *p);
static void op_run_pool_tail(op_ctx *c, op_rd *r, const op_poolp *p, bool max);

static bool op_check_pool(op_ctx *c, bool max) {
  op_rd r = op_reader(c);
  op_poolp p;
  rd_pool(&r, &p);
  bool with_idx = op_pool_indices(c, max);
  bool lp = c->op->kernel == MP_BOP_LPPOOL;
  int64_t order = with_idx ? rd_range(&r, 0, 1) : 0;
  double pn = lp ? rd_f(&r) : 1;
  if (!r.bad && !with_idx && !lp && r.at < r.n) {
    return op_check_pool_tail(c, &r, &p);
  }
  if (r.bad || r.at != r.n || !(pn > 0) || !isfinite(pn) || (lp && p.cip)) {
    return op_fail(c, "bad parameters");
  }
  const mp_btensor *x = op_in(c, 0), *y = op_out(c, 0);
  if (!x || !y || c->op->n_in != 1 || (c->op->n_out != 1 && !with_idx)) {
    return op_fail(c,
                   "needs one input and one output (and a MaxPool its "
                   "Indices)");
  }
  if (with_idx) {
    const mp_btensor *ix = op_out(c, 1);
    if (ix->dtype != MP_KD_I64 || op_aliases(ix, x) || op_aliases(ix, y))
      return op_fail(c, "Indices '%s' must be i64 in bytes of its own",
                     ix->name);
    if (order && p.nd > 2)
      return op_fail(c, "storage_order 1 with more than 2 spatial dims");
    if (!op_expect_shape(c, ix, &y->shape)) return false;
  }
  bool ok = max ? (x->dtype != MP_KD_BOOL)
                : (x->dtype == MP_KD_F32 || x->dtype == MP_KD_F64 ||
                   (x->dtype == MP_KD_I8 && !lp));
  if (!ok || y->dtype != x->dtype)
    return op_fail(c, "unsupported dtype %s", mp_kd_name(x->dtype));
  if (op_aliases(x, y)) return op_fail(c, "pooling does not run in place");
  return op_pool_shapes(c, &p, x, y);
}

/* y's shape for x under the pooling parameters p. */
static bool op_pool_shapes(op_ctx *c, const op_poolp *pp, const mp_btensor *x,
                           const mp_btensor *y) {
  op_poolp p = *pp;
  uint32_t rank = (uint32_t)p.nd + 2;
  if (x->shape.rank != rank) return op_fail(c, "x must have rank %u", rank);
  /* The output size comes from the tensor (ceil_mode decided it); each
   * window must start inside the padded input. */
  mp_kshape want = {rank, {x->shape.dims[0], x->shape.dims[1]}};
  for (int64_t i = 0; i < p.nd; i++) {
    int64_t o = y->shape.rank == rank ? y->shape.dims[2 + i] : 0;
    int64_t in = x->shape.dims[2 + i];
    if (o < 1 || (o - 1) * p.s[i] >= in + p.pb[i] + p.pe[i] ||
        (o - 1) * p.s[i] - p.pb[i] >= in + p.pe[i]) {
      return op_fail(c, "output dim %lld (%lld) does not fit the input",
                     (long long)i, (long long)o);
    }
    int64_t ext = p.d[i] * (p.k[i] - 1) + 1;
    int64_t span = in + p.pb[i] + p.pe[i] - ext;
    int64_t floor_o = span < 0 ? 0 : span / p.s[i] + 1;
    int64_t ceil_o = span < 0 ? 0 : (span + p.s[i] - 1) / p.s[i] + 1;
    if (o != floor_o && o != ceil_o) {
      return op_fail(c, "output dim %lld is %lld, the window gives %lld",
                     (long long)i, (long long)o, (long long)floor_o);
    }
    want.dims[2 + i] = o;
  }
  return op_expect_shape(c, y, &want);
}

/* A pool with a DequantizeLinear prologue on its 8-bit input (absorb.c
 * rule 9) and maybe a QuantizeLinear after it: one (batch, channel) plane
 * at a time, the plane widened into the workspace, pooled by the kernel
 * as a tensor of one plane and quantized into y. Each output element
 * reads its own plane only, so the planes' results are the whole
 * tensor's, bit for bit. */
static bool op_check_pool_tail(op_ctx *c, op_rd *r, const op_poolp *p) {
  op_tail t;
  mp_btensor y;
  if (!op_check_dq1_head(c, r, &t, 1, "a pool", "on its input", &y)) {
    return false;
  }
  const mp_btensor *x = op_in(c, 0), *yq = op_out(c, 0);
  mp_btensor xf = *x;
  if (op_aliases(x, yq)) return op_fail(c, "pooling does not run in place");
  xf.dtype = MP_KD_F32;
  if (!op_pool_shapes(c, p, &xf, &y)) return false;
  op_planes_need(c, &t, x, &y);
  return true;
}

static void op_plane_maxpool(const void *k, const float *x, float *y) {
  OP_K(maxpool)((const mp_kpool *)k, MP_KD_F32, x, y);
}

static void op_plane_avgpool(const void *k, const float *x, float *y) {
  OP_K(avgpool)((const mp_kpool *)k, MP_KD_F32, x, y);
}

static void op_run_pool_tail(op_ctx *c, op_rd *r, const op_poolp *p, bool max) {
  const mp_btensor *x = op_in(c, 0), *yq = op_out(c, 0);
  mp_kshape xs = x->shape, ys = yq->shape;
  xs.dims[0] = xs.dims[1] = ys.dims[0] = ys.dims[1] = 1;
  mp_kpool k;
  op_kpool(p, &xs, &ys, &k);
  op_run_planes(c, r, 1, max ? op_plane_maxpool : op_plane_avgpool, &k);
}

static bool op_run_pool(op_ctx *c, bool max) {
  op_rd r = op_reader(c);
  op_poolp p;
  rd_pool(&r, &p);
  if (!op_pool_indices(c, max) && c->op->kernel != MP_BOP_LPPOOL &&
      r.at < r.n) {
    op_run_pool_tail(c, &r, &p, max);
    return true;
  }
  const mp_btensor *x = op_in(c, 0), *y = op_out(c, 0);
  mp_kpool k;
  op_kpool(&p, &x->shape, &y->shape, &k);
  if (op_pool_indices(c, max)) {
    /* The scalar kernel: no vector one writes indices. */
    mp_k_maxpool_idx(&k, x->dtype, op_pin(c, 0), op_pout(c, 0), op_pout(c, 1),
                     rd_i(&r) != 0);
  } else if (max) {
    OP_K(maxpool)(&k, x->dtype, op_pin(c, 0), op_pout(c, 0));
  } else if (c->op->kernel == MP_BOP_LPPOOL) {
    k.lp = rd_f(&r); /* the scalar kernel */
    mp_k_lppool(&k, x->dtype, op_pin(c, 0), op_pout(c, 0));
  } else {
    OP_K(avgpool)(&k, x->dtype, op_pin(c, 0), op_pout(c, 0));
  }
  return true;
}

static bool op_check_reduce(op_ctx *c) {
  op_rd r = op_reader(c);
  int64_t op = rd_range(&r, 0, MP_KR_COUNT - 1);
  int64_t mask = rd_range(&r, 0, (1 << MP_K_MAX_RANK) - 1);
  const mp_btensor *x = op_in(c, 0),
                   *y = c->op->n_out == 1 ? op_out(c, 0) : NULL;
  if (r.bad || r.at != r.n) return op_fail(c, "bad parameters");
  /* bool: ReduceMax and ReduceMin only (opset 20) */
  if (!x || !y || y->dtype != x->dtype ||
      (x->dtype == MP_KD_BOOL && op != MP_KR_MAX && op != MP_KR_MIN)) {
    return op_fail(c, "bad arity or dtype");
  }
  if (mask >> x->shape.rank) return op_fail(c, "axes beyond the rank");
  int64_t n = 1;
  for (uint32_t i = 0; i < x->shape.rank; i++) {
    if (!(mask >> i & 1)) n *= x->shape.dims[i];
  }
  if (op_count(y) != n) {
    return op_fail(c, "output '%s' has %lld elements, the reduction %lld",
                   y->name, (long long)op_count(y), (long long)n);
  }
  if (op_aliases(x, y)) return op_fail(c, "reductions do not run in place");
  return true;
}

static bool op_run_reduce(op_ctx *c) {
  op_rd r = op_reader(c);
  mp_kreduce op = (mp_kreduce)rd_i(&r);
  uint32_t mask = (uint32_t)rd_i(&r);
  const mp_btensor *x = op_in(c, 0);
  mp_k_reduce(op, x->dtype, &x->shape, mask, op_pin(c, 0), op_pout(c, 0));
  return true;
}

/* ---- data movement ---------------------------------------------------------
 */

/* The pieces' bytes against whole's. A Concat input the concat pass
 * placed as its slice of the output (docs/ir-conventions.md) is already
 * where the copy would put it and is skipped; every other piece is
 * copied, so its bytes must not meet any copied piece's destination
 * (it could be overwritten before it is read). Split pieces never share
 * whole's bytes. */
static bool op_check_pieces(op_ctx *c, bool split, const mp_btensor *whole,
                            uint32_t n, int64_t outer) {
  /* With outer == 1 piece k's slice starts after the bytes of pieces
   * 0..k-1 (at and d0 are running sums). */
  uint64_t at = whole->offset;
  for (uint32_t k = 0; k < n; k++) {
    const mp_btensor *p = split ? op_out(c, k) : op_in(c, k);
    uint64_t slice = at;
    at += p->bytes;
    if (!op_aliases(p, whole)) continue;
    if (split || outer != 1) {
      return op_fail(c, "piece '%s' shares the buffer of '%s'", p->name,
                     whole->name);
    }
    if (p->offset == slice) continue; /* in its slice */
    uint64_t d0 = whole->offset;
    for (uint32_t j = 0; j < n; j++) {
      const mp_btensor *q = op_in(c, j);
      uint64_t d = d0;
      d0 += q->bytes;
      bool copied = !(q->buffer == whole->buffer && q->offset == d);
      if (copied && p->offset < d + q->bytes && d < p->offset + p->bytes) {
        return op_fail(c, "piece '%s' overlaps the slice '%s' is copied into",
                       p->name, q->name);
      }
    }
  }
  return true;
}

static bool op_check_concat_tail(op_ctx *c, op_rd *r, int64_t axis);

/* The pieces' shapes against the whole's along axis (pieces[0..n), or
 * with NULL the op's tensors). */
static bool op_concat_shapes(op_ctx *c, bool split, const mp_btensor *whole,
                             const mp_btensor *pieces, uint32_t n,
                             int64_t axis) {
  int64_t sum = 0;
  for (uint32_t k = 0; k < n; k++) {
    const mp_btensor *p = pieces  ? &pieces[k]
                          : split ? op_out(c, k)
                                  : op_in(c, k);
    if (!p || p->dtype != whole->dtype || p->shape.rank != whole->shape.rank) {
      return op_fail(c, "piece %u: dtype or rank differs", k);
    }
    for (uint32_t i = 0; i < p->shape.rank; i++) {
      if ((int64_t)i != axis && p->shape.dims[i] != whole->shape.dims[i]) {
        return op_fail(c, "piece '%s': dim %u differs", p->name, i);
      }
    }
    sum += p->shape.dims[axis];
  }
  if (sum != whole->shape.dims[axis]) {
    return op_fail(c, "pieces sum to %lld along axis %lld, not %lld",
                   (long long)sum, (long long)axis,
                   (long long)whole->shape.dims[axis]);
  }
  return true;
}

/* Concat (inputs -> one output) or Split (one input -> outputs). */
static bool op_check_concat(op_ctx *c, bool split) {
  op_rd r = op_reader(c);
  const mp_btensor *whole =
      split ? op_in(c, 0) : (c->op->n_out == 1 ? op_out(c, 0) : NULL);
  if (!whole || (split ? c->op->n_in != 1 : c->op->n_in < 1)) {
    return op_fail(c, "bad arity");
  }
  int64_t axis = rd_range(&r, 0, whole->shape.rank ? whole->shape.rank - 1 : 0);
  if (!split && !r.bad && r.at < r.n && whole->shape.rank) {
    return op_check_concat_tail(c, &r, axis);
  }
  if (r.bad || r.at != r.n || whole->shape.rank == 0) {
    return op_fail(c, "bad parameters");
  }
  uint32_t n = split ? c->op->n_out : c->op->n_in;
  int64_t outer = 1;
  for (int64_t i = 0; i < axis; i++) outer *= whole->shape.dims[i];
  if (!op_concat_shapes(c, split, whole, NULL, n, axis)) return false;
  return op_check_pieces(c, split, whole, n, outer);
}

/* A Concat of two pieces with DequantizeLinear prologues (absorb.c rule
 * 9) and maybe a QuantizeLinear after it: each piece's block for each
 * outer index, OP_EPI_TILE elements at a time, widened (a dequantized
 * piece) and quantized into y, or widened straight into an f32 y. Every
 * element of y is its piece's element through the kernels of the unfused
 * ops: the same bits. */
static bool op_check_concat_tail(op_ctx *c, op_rd *r, int64_t axis) {
  op_tail t;
  rd_tail(r, &t);
  if (r->bad || r->at != r->n) return op_fail(c, "bad parameters");
  const mp_btensor *yq = op_out(c, 0);
  if (op_own(c, &t) != 2 || !op_in(c, 0) || !op_in(c, 1)) {
    return op_fail(c, "bad arity");
  }
  mp_btensor y, v[2];
  if (!op_check_dq_head(c, &t, 2, "a Concat of two", false, &y)) return false;
  for (uint32_t k = 0; k < 2; k++) {
    const mp_btensor *x = op_in(c, k);
    v[k] = *x;
    if (t.pro[k].kind) {
      if (!op_check_dq8(c, &t, 2, k)) return false;
      v[k].dtype = MP_KD_F32;
    }
    if (op_aliases(x, yq)) {
      return op_fail(c, "piece '%s' shares the buffer of '%s'", x->name,
                     yq->name);
    }
  }
  if (!op_concat_shapes(c, false, &y, v, 2, axis)) return false;
  if (t.n_epi) c->need_ws += OP_EPI_TILE * 4 + 64;
  return true;
}

static void op_run_concat_tail(op_ctx *c, op_rd *r, int64_t axis) {
  op_tail t;
  rd_tail(r, &t);
  const mp_btensor *yq = op_out(c, 0);
  mp_btensor y = op_epi_value(&t, yq);
  int64_t outer = 1, inner = 1;
  for (uint32_t i = 0; i < y.shape.rank; i++) {
    if ((int64_t)i < axis) outer *= y.shape.dims[i];
    if ((int64_t)i > axis) inner *= y.shape.dims[i];
  }
  float *w = t.n_epi ? op_ws_take(c, OP_EPI_TILE) : NULL;
  int64_t total = y.shape.dims[axis], off = 0;
  for (uint32_t k = 0; k < 2; k++) {
    int64_t len = op_in(c, k)->shape.dims[axis], blk = len * inner;
    for (int64_t o = 0; o < outer; o++) {
      int64_t src = o * blk, dst = (o * total + off) * inner;
      for (int64_t e = 0; e < blk; e += OP_EPI_TILE) {
        int64_t m = blk - e < OP_EPI_TILE ? blk - e : OP_EPI_TILE;
        const float *f = (const float *)op_pin(c, k) + src + e;
        if (!w) { /* into the f32 output */
          float *d = (float *)op_pout(c, 0) + dst + e;
          if (t.pro[k].kind) {
            (void)op_widen_range(c, &t, 2, k, src + e, m, d);
          } else {
            memcpy(d, f, (size_t)m * 4);
          }
          continue;
        }
        if (t.pro[k].kind) f = op_widen_range(c, &t, 2, k, src + e, m, w);
        op_quant_into(c, &t, 2, 0, f, dst + e, m);
      }
    }
    off += len;
  }
}

static bool op_run_concat(op_ctx *c, bool split) {
  op_rd r = op_reader(c);
  int64_t axis = rd_i(&r);
  if (!split && r.at < r.n) {
    op_run_concat_tail(c, &r, axis);
    return true;
  }
  const mp_btensor *whole = split ? op_in(c, 0) : op_out(c, 0);
  void *pw = split ? op_pin(c, 0) : op_pout(c, 0);
  int64_t outer = 1, inner = 1;
  for (uint32_t i = 0; i < whole->shape.rank; i++) {
    if ((int64_t)i < axis) outer *= whole->shape.dims[i];
    if ((int64_t)i > axis) inner *= whole->shape.dims[i];
  }
  size_t es = mp_kd_size(whole->dtype);
  int64_t total = whole->shape.dims[axis], off = 0;
  uint32_t n = split ? c->op->n_out : c->op->n_in;
  for (uint32_t k = 0; k < n; k++) {
    const mp_btensor *p = split ? op_out(c, k) : op_in(c, k);
    int64_t len = p->shape.dims[axis];
    if (split) {
      OP_K(copy_block)(es, outer, inner, pw, total, off, op_pout(c, k), len, 0,
                       len);
    } else if (op_pin(c, k) != (unsigned char *)pw + off * inner * es ||
               outer != 1) {
      OP_K(copy_block)(es, outer, inner, op_pin(c, k), len, 0, pw, total, off,
                       len);
    }
    off += len;
  }
  return true;
}

static bool op_check_slice(op_ctx *c) {
  const mp_btensor *x = op_in(c, 0),
                   *y = c->op->n_out == 1 ? op_out(c, 0) : NULL;
  if (!x || !y || y->dtype != x->dtype || y->shape.rank != x->shape.rank) {
    return op_fail(c, "bad arity, dtype or rank");
  }
  op_rd r = op_reader(c);
  for (uint32_t i = 0; i < x->shape.rank; i++) {
    int64_t start = rd_i(&r);
    int64_t step =
        r.at + x->shape.rank - 1 < r.n ? r.p[r.at + x->shape.rank - 1] : 0;
    int64_t len = y->shape.dims[i], in = x->shape.dims[i];
    if (step == 0 || step > INT32_MAX || step < -INT32_MAX) {
      return op_fail(c, "axis %u: bad step", i);
    }
    if (len > 0) {
      int64_t last = start + (len - 1) * step;
      if (start < 0 || start >= in || last < 0 || last >= in ||
          len - 1 > (in > 0 ? in : 1)) {
        return op_fail(c,
                       "axis %u: start %lld, step %lld, %lld elements "
                       "leave the input's %lld",
                       i, (long long)start, (long long)step, (long long)len,
                       (long long)in);
      }
    }
  }
  for (uint32_t i = 0; i < x->shape.rank; i++) (void)rd_i(&r);
  if (r.bad || r.at != r.n) return op_fail(c, "bad parameters");
  if (op_aliases(x, y)) return op_fail(c, "Slice does not run in place");
  return true;
}

static bool op_run_slice(op_ctx *c) {
  const mp_btensor *x = op_in(c, 0), *y = op_out(c, 0);
  uint32_t rk = x->shape.rank;
  mp_k_slice(mp_kd_size(x->dtype), &x->shape, &y->shape, c->op->params,
             c->op->params + rk, op_pin(c, 0), op_pout(c, 0));
  return true;
}

static bool op_check_gather(op_ctx *c) {
  op_rd r = op_reader(c);
  const mp_btensor *x = op_in(c, 0), *ix = op_in(c, 1);
  const mp_btensor *y = c->op->n_out == 1 ? op_out(c, 0) : NULL;
  if (!x || !ix || !y || c->op->n_in != 2 || x->shape.rank == 0) {
    return op_fail(c, "bad arity");
  }
  int64_t axis = rd_range(&r, 0, x->shape.rank - 1);
  if (r.bad || r.at != r.n) return op_fail(c, "bad parameters");
  if ((ix->dtype != MP_KD_I32 && ix->dtype != MP_KD_I64) ||
      y->dtype != x->dtype) {
    return op_fail(c, "indices must be i32 or i64");
  }
  if (x->shape.rank - 1 + ix->shape.rank > MP_K_MAX_RANK) {
    return op_fail(c, "result rank too large");
  }
  mp_kshape want = {0, {0}};
  for (uint32_t i = 0; i < (uint32_t)axis; i++)
    want.dims[want.rank++] = x->shape.dims[i];
  for (uint32_t i = 0; i < ix->shape.rank; i++)
    want.dims[want.rank++] = ix->shape.dims[i];
  for (uint32_t i = (uint32_t)axis + 1; i < x->shape.rank; i++) {
    want.dims[want.rank++] = x->shape.dims[i];
  }
  if (op_aliases(x, y) || op_aliases(ix, y)) {
    return op_fail(c, "Gather does not run in place");
  }
  /* Normalised indices go to the workspace. */
  c->need_ws += (size_t)op_count(ix) * 8;
  return op_expect_shape(c, y, &want);
}

static bool op_run_gather(op_ctx *c) {
  int64_t axis = c->op->params[0];
  const mp_btensor *x = op_in(c, 0), *ix = op_in(c, 1);
  int64_t n = op_count(ix), len = x->shape.dims[axis], outer = 1, inner = 1;
  int64_t *idx = (int64_t *)(void *)c->ws;
  for (int64_t i = 0; i < n; i++) {
    int64_t v = mp_k_load_i(op_pin(c, 1), ix->dtype, (size_t)i);
    if (v < -len || v >= len) {
      return op_fail(c, "index %lld of '%s' is out of range [%lld, %lld)",
                     (long long)v, ix->name, (long long)-len, (long long)len);
    }
    idx[i] = v < 0 ? v + len : v;
  }
  for (uint32_t i = 0; i < x->shape.rank; i++) {
    if ((int64_t)i < axis) outer *= x->shape.dims[i];
    if ((int64_t)i > axis) inner *= x->shape.dims[i];
  }
  mp_k_gather(mp_kd_size(x->dtype), outer, len, inner, idx, n, op_pin(c, 0),
              op_pout(c, 0));
  return true;
}

static bool op_check_pad(op_ctx *c) {
  const mp_btensor *x = op_in(c, 0),
                   *y = c->op->n_out == 1 ? op_out(c, 0) : NULL;
  if (!x || !y || y->dtype != x->dtype || y->shape.rank != x->shape.rank) {
    return op_fail(c, "bad arity, dtype or rank");
  }
  op_rd r = op_reader(c);
  int64_t mode = rd_range(&r, 0, MP_KPAD_WRAP);
  for (uint32_t i = 0; i < x->shape.rank; i++) {
    int64_t pb = rd_range(&r, -INT32_MAX, INT32_MAX);
    int64_t in = x->shape.dims[i], out = y->shape.dims[i];
    int64_t pe = out - in - pb;
    if (pe < -INT32_MAX || pe > INT32_MAX) return op_fail(c, "bad pads");
    /* Reflect, edge and wrap copy an element of the axis: it needs one. */
    if (out > 0 && in == 0 && mode != MP_KPAD_CONSTANT) {
      return op_fail(c, "axis %u: reflect/edge/wrap of an empty axis", i);
    }
  }
  (void)rd_f(&r);
  if (r.bad || r.at != r.n) return op_fail(c, "bad parameters");
  if (op_aliases(x, y)) return op_fail(c, "Pad does not run in place");
  c->need_ws += 16;
  return true;
}

static bool op_run_pad(op_ctx *c) {
  const mp_btensor *x = op_in(c, 0), *y = op_out(c, 0);
  uint32_t rk = x->shape.rank;
  double v;
  memcpy(&v, &c->op->params[1 + rk], sizeof v);
  mp_k_store(c->ws, x->dtype, 0, v);
  OP_K(pad)(mp_kd_size(x->dtype), &x->shape, &y->shape, c->op->params + 1,
            (mp_kpad_mode)c->op->params[0], c->ws, op_pin(c, 0), op_pout(c, 0));
  return true;
}

static bool op_check_transpose(op_ctx *c) {
  const mp_btensor *x = op_in(c, 0),
                   *y = c->op->n_out == 1 ? op_out(c, 0) : NULL;
  if (!x || !y || y->dtype != x->dtype || c->op->n_params != x->shape.rank) {
    return op_fail(c, "bad arity, dtype or perm length");
  }
  mp_kshape want = {x->shape.rank, {0}};
  uint32_t seen = 0;
  for (uint32_t i = 0; i < x->shape.rank; i++) {
    int64_t p = c->op->params[i];
    if (p < 0 || p >= x->shape.rank || (seen >> p & 1)) {
      return op_fail(c, "perm is not a permutation");
    }
    seen |= 1u << p;
    want.dims[i] = x->shape.dims[p];
  }
  if (op_aliases(x, y)) return op_fail(c, "Transpose does not run in place");
  return op_expect_shape(c, y, &want);
}

static bool op_run_transpose(op_ctx *c) {
  const mp_btensor *x = op_in(c, 0);
  uint32_t perm[MP_K_MAX_RANK];
  for (uint32_t i = 0; i < x->shape.rank; i++)
    perm[i] = (uint32_t)c->op->params[i];
  if (mp_kd_bits(x->dtype) == 4) { /* nibble by nibble, on every target */
    mp_k_transpose_dtype(x->dtype, 0, &x->shape, perm, op_pin(c, 0),
                         op_pout(c, 0));
  } else {
    OP_K(transpose)(mp_kd_size(x->dtype), &x->shape, perm, op_pin(c, 0),
                    op_pout(c, 0));
  }
  return true;
}

/* A Resize under a DequantizeLinear prologue (absorb.c rule 9,
 * pass_resize_head), maybe ending in a QuantizeLinear: its four own
 * inputs (x, roi, scales, sizes; only x is read), the tail after the
 * Resize's parameters. It resizes one (batch, channel) plane at a time,
 * widened into the workspace, and quantizes the plane's output: batch
 * and channels keep their size and scale 1, so each plane's output
 * reads that plane only, and the kernel skips the corners of weight 0
 * (kernels/k_move.c), so a plane gives the whole tensor's bits. */
static bool op_check_resize_tail(op_ctx *c, op_rd *r, int64_t lin) {
  op_tail t;
  mp_btensor y;
  if (lin > 1)
    return op_fail(c, "a Resize under a prologue is nearest or linear");
  if (!op_check_dq1_head(c, r, &t, 4, "a Resize", "on its input", &y)) {
    return false;
  }
  const mp_btensor *x = op_in(c, 0), *yq = op_out(c, 0);
  if (op_aliases(x, yq)) return op_fail(c, "Resize does not run in place");
  double s0 = 0, s1 = 0; /* the scales of batch and channels */
  if (x->shape.rank == 4) {
    memcpy(&s0, &c->op->params[3], sizeof s0);
    memcpy(&s1, &c->op->params[4], sizeof s1);
  }
  if (x->shape.rank != 4 || y.shape.rank != 4 ||
      y.shape.dims[0] != x->shape.dims[0] ||
      y.shape.dims[1] != x->shape.dims[1] || s0 != 1 || s1 != 1) {
    return op_fail(c,
                   "a Resize under a prologue resizes 4-D planes, batch "
                   "and channels kept at scale 1");
  }
  op_planes_need(c, &t, x, &y);
  return true;
}

static void op_plane_resize(const void *k, const float *x, float *y) {
  mp_k_resize((const mp_kresize *)k, MP_KD_F32, x, y);
}

static void op_run_resize_tail(op_ctx *c, op_rd *r, mp_kresize *k) {
  k->in.dims[0] = k->in.dims[1] = k->out.dims[0] = k->out.dims[1] = 1;
  op_run_planes(c, r, 4, op_plane_resize, k);
}

static bool op_check_resize(op_ctx *c) {
  const mp_btensor *x = op_in(c, 0),
                   *y = c->op->n_out == 1 ? op_out(c, 0) : NULL;
  if (!x || !y || y->shape.rank != x->shape.rank) {
    return op_fail(c, "bad arity, dtype or rank");
  }
  op_rd r = op_reader(c);
  /* nearest, linear, cubic, then linear and cubic antialiased */
  int64_t lin = rd_range(&r, 0, 4);
  bool crop =
      rd_range(&r, 0, MP_KC_HALF_PIXEL_SYMMETRIC) == MP_KC_TF_CROP_AND_RESIZE;
  (void)rd_range(&r, 0, MP_KN_CEIL);
  const mp_btensor *roi = op_in(c, 1);
  if ((c->op->n_in != (crop ? 2u : 1u) && (crop || c->op->n_in <= 4)) ||
      (crop && (!roi || !mp_kd_is_float(roi->dtype) ||
                op_count(roi) != 2 * (int64_t)x->shape.rank))) {
    return op_fail(c,
                   "tf_crop_and_resize, and only it, reads a float roi "
                   "of 2 x rank values");
  }
  for (uint32_t i = 0; i < x->shape.rank; i++) {
    double s = rd_f(&r);
    if (!(s > 0) || s > 1e9) return op_fail(c, "axis %u: bad scale", i);
    if (lin >= 3 && s < 1.0 / MP_K_RESIZE_MIN_INV) {
      return op_fail(c, "axis %u: antialiased scale %g is below 1/%d", i, s,
                     MP_K_RESIZE_MIN_INV);
    }
    if (y->shape.dims[i] > 0 && x->shape.dims[i] == 0) {
      return op_fail(c, "axis %u: resize of an empty axis", i);
    }
  }
  if (lin == 2 || lin == 4) {
    double a = rd_f(&r);
    (void)rd_range(&r, 0, 1);
    if (!(a >= -10 && a <= 10)) return op_fail(c, "bad cubic_coeff_a");
  }
  if (crop) (void)rd_f(&r);
  if (!r.bad && r.at < r.n && !crop) return op_check_resize_tail(c, &r, lin);
  if (y->dtype != x->dtype || c->op->n_in != (crop ? 2u : 1u)) {
    return op_fail(c, "bad arity, dtype or rank");
  }
  if (r.bad || r.at != r.n) return op_fail(c, "bad parameters");
  if (lin && !mp_kd_is_float(x->dtype))
    return op_fail(c, "linear and cubic need floats");
  if (op_aliases(x, y)) return op_fail(c, "Resize does not run in place");
  return true;
}

static bool op_run_resize(op_ctx *c) {
  const mp_btensor *x = op_in(c, 0), *y = op_out(c, 0);
  mp_kresize k;
  memset(&k, 0, sizeof k);
  k.in = x->shape;
  k.out = y->shape;
  k.linear = c->op->params[0] == 1 || c->op->params[0] == 3;
  k.cubic = c->op->params[0] == 2 || c->op->params[0] == 4;
  k.antialias = c->op->params[0] >= 3;
  k.coord = (mp_kcoord)c->op->params[1];
  k.nearest = (mp_knearest)c->op->params[2];
  uint32_t rk = x->shape.rank;
  for (uint32_t i = 0; i < rk; i++) {
    memcpy(&k.scale[i], &c->op->params[3 + i], sizeof(double));
  }
  uint32_t at = 3 + rk;
  if (k.cubic) {
    memcpy(&k.cubic_a, &c->op->params[at], sizeof(double));
    k.exclude_outside = c->op->params[at + 1] != 0;
    at += 2;
  }
  if (k.coord != MP_KC_TF_CROP_AND_RESIZE && at < c->op->n_params) {
    op_rd r = op_reader(c);
    r.at = at;
    op_run_resize_tail(c, &r, &k);
    return true;
  }
  if (k.coord == MP_KC_TF_CROP_AND_RESIZE) {
    memcpy(&k.extrapolation, &c->op->params[at], sizeof(double));
    const mp_btensor *roi = op_in(c, 1);
    for (uint32_t i = 0; i < 2 * rk; i++) {
      k.roi[i] = mp_k_load(op_pin(c, 1), roi->dtype, i);
      if (!isfinite(k.roi[i]) || fabs(k.roi[i]) > 1e6) {
        return op_fail(c, "roi value %u of '%s' is %g", i, roi->name, k.roi[i]);
      }
    }
  }
  mp_k_resize(&k, x->dtype, op_pin(c, 0), op_pout(c, 0));
  return true;
}

/* QuantizeLinear / DequantizeLinear: x, scale, [zero point]; parameters
 * axis and, when blocked (opset 21), block_size. */
static bool op_check_quant(op_ctx *c, bool quant) {
  const mp_btensor *x = op_in(c, 0), *s = op_in(c, 1), *z = op_in(c, 2);
  const mp_btensor *y = c->op->n_out == 1 ? op_out(c, 0) : NULL;
  if (!x || !s || !y || c->op->n_in > 3 || c->op->n_params < 1 ||
      c->op->n_params > 2) {
    return op_fail(c, "bad arity");
  }
  int64_t axis = c->op->params[0];
  int64_t block = c->op->n_params == 2 ? c->op->params[1] : 0;
  int qd = quant ? y->dtype : x->dtype;
  int fd = quant ? x->dtype : y->dtype;
  bool narrow =
      qd == MP_KD_I8 || qd == MP_KD_U8 || qd == MP_KD_I4 || qd == MP_KD_U4;
  if (fd != MP_KD_F32 || s->dtype != MP_KD_F32 ||
      (!narrow && (quant || qd != MP_KD_I32))) {
    return op_fail(c, "unsupported dtypes");
  }
  if (!op_quant_params(c, x, s, z, qd, axis, block)) return false;
  if (op_aliases(x, y)) return op_fail(c, "does not run in place");
  return op_expect_shape(c, y, &x->shape);
}

static bool op_run_quant(op_ctx *c, bool quant) {
  const mp_btensor *x = op_in(c, 0), *s = op_in(c, 1), *y = op_out(c, 0);
  int64_t axis = c->op->params[0], ns = op_count(s), v[3];
  int64_t block = c->op->n_params == 2 ? c->op->params[1] : 0;
  if (!quant) {
    op_dequantize(x, op_pin(c, 0), s, op_pin(c, 1), op_pin(c, 2), axis, block,
                  op_pout(c, 0));
    return true;
  }
  op_quant_view(x, ns, axis, block, v);
  if (block) { /* the scalar kernel on every target */
    mp_k_quantize_blocked(v[0], v[1], v[2], block, op_pin(c, 0), op_pin(c, 1),
                          op_pin(c, 2), y->dtype, op_pout(c, 0));
  } else {
    OP_K(quantize)(v[0], v[1], v[2], op_pin(c, 0), op_pin(c, 1), (int)ns,
                   op_pin(c, 2), y->dtype, op_pout(c, 0));
  }
  return true;
}

/* ConvInteger: X, W, [x_zero_point], [w_zero_point]; Conv's parameters
 * (rd_conv) with shift 0 and no output padding, and no tail. */
static bool rd_conv_integer(op_ctx *c, op_convp *p) {
  op_rd r = op_reader(c);
  rd_conv(&r, p);
  return !r.bad && r.at == r.n && p->shift == 0 && !p->op[0] && !p->op[1] &&
         !p->op[2];
}

static bool op_q8(int d) {
  return d == MP_KD_I8 || d == MP_KD_U8;
}

/* The operands of ConvInteger and MatMulInteger (p, q: their names): two
 * int8 or uint8 inputs, up to two zero points, one int32 output; NULL
 * after op_fail. */
static const mp_btensor *op_integer_io(op_ctx *c, const char *p,
                                       const char *q) {
  const mp_btensor *a = op_in(c, 0), *b = op_in(c, 1);
  if (!a || !b || c->op->n_in > 4 || c->op->n_out != 1) {
    (void)op_fail(c, "needs %s, %s, optional zero points and one output", p, q);
    return NULL;
  }
  const mp_btensor *y = op_out(c, 0);
  if (!op_q8(a->dtype) || !op_q8(b->dtype) || y->dtype != MP_KD_I32) {
    (void)op_fail(c,
                  "unsupported dtypes %s %s, %s %s, y %s (int8 or uint8 "
                  "in, int32 out)",
                  p, mp_kd_name(a->dtype), q, mp_kd_name(b->dtype),
                  mp_kd_name(y->dtype));
    return NULL;
  }
  return y;
}

/* A zero point of dtype d: absent, one value, or one per row, column or
 * channel (a 1-D tensor of per values; per 0: not allowed). */
static bool op_zp_ok(const mp_btensor *z, int d, int64_t per) {
  return !z || (z->dtype == d &&
                (op_count(z) == 1 ||
                 (per > 0 && z->shape.rank == 1 && op_count(z) == per)));
}

/* The integer part of ConvInteger and QLinearConv: x, its zero point, w
 * and its zero point at inputs ix[0..3]; the output shape into *want. */
static bool op_check_conv_q(op_ctx *c, const op_convp *p, const uint32_t *ix,
                            mp_kshape *want) {
  const mp_btensor *x = op_in(c, ix[0]), *xz = op_in(c, ix[1]);
  const mp_btensor *w = op_in(c, ix[2]), *wz = op_in(c, ix[3]);
  if (!x || !w) return op_fail(c, "needs x and w");
  if (!op_q8(x->dtype) || !op_q8(w->dtype)) {
    return op_fail(c, "unsupported dtypes x %s, w %s (int8 or uint8)",
                   mp_kd_name(x->dtype), mp_kd_name(w->dtype));
  }
  if (!op_conv_shape(c, p, false, x, w, want)) return false;
  if (!op_zp_ok(xz, x->dtype, 0)) {
    return op_fail(c, "x_zero_point '%s' is not one value of x's dtype",
                   xz->name);
  }
  if (!op_zp_ok(wz, w->dtype, want->dims[1])) {
    return op_fail(c,
                   "w_zero_point '%s' is neither one value nor one per "
                   "output channel of w's dtype",
                   wz->name);
  }
  return true;
}

static const uint32_t op_convint_ix[4] = {0, 2, 1, 3};
static const uint32_t op_qconv_ix[4] = {0, 2, 3, 5};

static bool op_check_conv_integer(op_ctx *c) {
  op_convp p;
  if (!rd_conv_integer(c, &p)) return op_fail(c, "bad parameters");
  const mp_btensor *y = op_integer_io(c, "x", "w");
  mp_kshape want;
  return y && op_check_conv_q(c, &p, op_convint_ix, &want) &&
         op_out_of_place(c, y, &want);
}

/* The int32 sums of ConvInteger or QLinearConv (inputs ix) into acc. */
static void op_run_conv_q(op_ctx *c, const uint32_t *ix, int32_t *acc) {
  op_convp p;
  (void)rd_conv_integer(c, &p);
  const mp_btensor *x = op_in(c, ix[0]), *w = op_in(c, ix[2]);
  const mp_btensor *xz = op_in(c, ix[1]), *wz = op_in(c, ix[3]);
  const mp_btensor *y = op_out(c, 0);
  mp_kconv k;
  op_kconv(&p, &x->shape, &y->shape, y->shape.dims[1], &k);
  int32_t xzp = xz ? (int32_t)mp_k_load_i(op_pin(c, ix[1]), x->dtype, 0) : 0;
  mp_k_conv_integer(&k, x->dtype, op_pin(c, ix[0]), xzp, w->dtype,
                    op_pin(c, ix[2]), wz ? op_pin(c, ix[3]) : NULL,
                    wz ? op_count(wz) : 0, acc);
}

static bool op_run_conv_integer(op_ctx *c) {
  op_run_conv_q(c, op_convint_ix, op_pout(c, 0));
  return true;
}

/* The scales and output zero point of QLinearConv and QLinearMatMul:
 * scale inputs sa, sb (one value, or rows / cols of them: per row of A or
 * per output channel; per column of B), sy (one value), zero point zy of
 * y's dtype (int8 or uint8). */
static bool op_check_qscales(op_ctx *c, uint32_t sa, int64_t rows, uint32_t sb,
                             int64_t cols) {
  const mp_btensor *a = op_in(c, sa), *b = op_in(c, sb);
  const mp_btensor *ys = op_in(c, 6), *yz = op_in(c, 7), *y = op_out(c, 0);
  if (!a || !b || !ys || !yz)
    return op_fail(c, "a scale or zero point is missing");
  if (a->dtype != MP_KD_F32 || b->dtype != MP_KD_F32 ||
      ys->dtype != MP_KD_F32 || !op_q8(y->dtype) || yz->dtype != y->dtype) {
    return op_fail(c,
                   "scales must be f32, y int8 or uint8 with a zero point "
                   "of its dtype");
  }
  if (!op_zp_ok(a, MP_KD_F32, rows) || !op_zp_ok(b, MP_KD_F32, cols) ||
      op_count(ys) != 1 || op_count(yz) != 1) {
    return op_fail(c, "a scale or the output zero point has a bad size");
  }
  return true;
}

/* QLinearConv: x, x_scale, x_zero_point, w, w_scale, w_zero_point,
 * y_scale, y_zero_point, [B int32 [m]]; Conv's parameters as ConvInteger. */
static bool op_check_qlinear_conv(op_ctx *c) {
  op_convp p;
  if (!rd_conv_integer(c, &p)) return op_fail(c, "bad parameters");
  if (c->op->n_in < 8 || c->op->n_in > 9 || c->op->n_out != 1) {
    return op_fail(c, "bad arity");
  }
  mp_kshape want;
  if (!op_check_conv_q(c, &p, op_qconv_ix, &want)) return false;
  int64_t m = want.dims[1];
  const mp_btensor *bias = op_in(c, 8), *y = op_out(c, 0);
  if (!op_check_qscales(c, 1, 0, 4, m)) return false;
  if (bias && (bias->dtype != MP_KD_I32 || bias->shape.rank != 1 ||
               op_count(bias) != m)) {
    return op_fail(c, "bias '%s' is not int32 [%lld]", bias->name,
                   (long long)m);
  }
  if (!op_out_of_place(c, y, &want)) return false;
  c->need_ws += (size_t)op_count(y) * 4; /* the int32 sums */
  return true;
}

static bool op_run_qlinear_conv(op_ctx *c) {
  const mp_btensor *y = op_out(c, 0), *ws = op_in(c, 4);
  int32_t *acc = (int32_t *)c->ws;
  op_run_conv_q(c, op_qconv_ix, acc);
  const float *xs = op_pin(c, 1), *wsc = op_pin(c, 4), *ys = op_pin(c, 6);
  const int32_t *bias = op_pin(c, 8);
  int32_t zy = (int32_t)mp_k_load_i(op_pin(c, 7), y->dtype, 0);
  int64_t m = y->shape.dims[1],
          plane = op_div(op_count(y), y->shape.dims[0] * m);
  for (int64_t b = 0; b < y->shape.dims[0]; b++) {
    for (int64_t oc = 0; oc < m; oc++) {
      /* the multiplier in f32, as ONNX Runtime forms it */
      float mult = xs[0] * wsc[op_count(ws) == 1 ? 0 : oc] / ys[0];
      int64_t at = (b * m + oc) * plane;
      mp_k_requantize(
          plane, acc + at, bias ? bias[oc] : 0, mult, zy, y->dtype,
          (char *)op_pout(c, 0) + at * (int64_t)mp_kd_size(y->dtype));
    }
  }
  return true;
}

/* MatMulInteger: A [..., M, K], B [..., K, N] (batch dims broadcast as
 * numpy's; a 1-D operand is not taken), [a_zero_point] (one value or one
 * per row of A), [b_zero_point] (one value or one per column of B) ->
 * int32 [..., M, N]. bc: the batch dims' broadcast; mnk: M, N, K. */
static bool op_matmul_integer_shapes(op_ctx *c, uint32_t ia, uint32_t ib,
                                     mp_kbcast *bc, int64_t *mnk,
                                     mp_kshape *want) {
  const mp_btensor *a = op_in(c, ia), *b = op_in(c, ib);
  uint32_t ra = a->shape.rank, rb = b->shape.rank;
  if (ra < 2 || rb < 2) return op_fail(c, "A and B must have rank 2 or more");
  mnk[0] = a->shape.dims[ra - 2];
  mnk[2] = a->shape.dims[ra - 1];
  mnk[1] = b->shape.dims[rb - 1];
  if (b->shape.dims[rb - 2] != mnk[2]) {
    return op_fail(c, "A's %lld columns do not meet B's %lld rows",
                   (long long)mnk[2], (long long)b->shape.dims[rb - 2]);
  }
  mp_kshape sa = {ra - 2, {0}}, sb = {rb - 2, {0}};
  memcpy(sa.dims, a->shape.dims, sa.rank * sizeof *sa.dims);
  memcpy(sb.dims, b->shape.dims, sb.rank * sizeof *sb.dims);
  mp_kshape out = {sa.rank > sb.rank ? sa.rank : sb.rank, {0}};
  for (uint32_t i = 0; i < out.rank; i++) {
    int64_t da = i + sa.rank >= out.rank ? sa.dims[i + sa.rank - out.rank] : 1;
    int64_t db = i + sb.rank >= out.rank ? sb.dims[i + sb.rank - out.rank] : 1;
    if (da != db && da != 1 && db != 1) {
      return op_fail(c, "batch dims do not broadcast");
    }
    out.dims[i] = da == 1 ? db : da;
  }
  if (!mp_k_bcast_init(bc, &out, &sa, &sb, NULL)) {
    return op_fail(c, "batch dims do not broadcast");
  }
  *want = out;
  want->rank = out.rank + 2;
  want->dims[out.rank] = mnk[0];
  want->dims[out.rank + 1] = mnk[1];
  return true;
}

static bool op_check_matmul_integer(op_ctx *c) {
  if (c->op->n_params) return op_fail(c, "bad parameters");
  const mp_btensor *y = op_integer_io(c, "a", "b");
  if (!y) return false;
  const mp_btensor *a = op_in(c, 0), *b = op_in(c, 1);
  const mp_btensor *az = op_in(c, 2), *bz = op_in(c, 3);
  mp_kbcast bc;
  int64_t mnk[3];
  mp_kshape want;
  if (!op_matmul_integer_shapes(c, 0, 1, &bc, mnk, &want)) return false;
  if (!op_zp_ok(az, a->dtype, mnk[0])) {
    return op_fail(c,
                   "a_zero_point '%s' is neither one value nor one per row "
                   "of A, of A's dtype",
                   az->name);
  }
  if (!op_zp_ok(bz, b->dtype, mnk[1])) {
    return op_fail(c,
                   "b_zero_point '%s' is neither one value nor one per "
                   "column of B, of B's dtype",
                   bz->name);
  }
  return op_out_of_place(c, y, &want);
}

/* The int32 sums of MatMulInteger or QLinearMatMul: A, its zero point, B
 * and its zero point at inputs ix[0..3], into acc ([..., M, N]). */
static void op_run_matmul_q(op_ctx *c, const uint32_t *ix, int32_t *acc) {
  const mp_btensor *a = op_in(c, ix[0]), *b = op_in(c, ix[2]);
  const mp_btensor *az = op_in(c, ix[1]), *bz = op_in(c, ix[3]);
  mp_kbcast bc;
  int64_t mnk[3];
  mp_kshape want;
  (void)op_matmul_integer_shapes(c, ix[0], ix[2], &bc, mnk, &want);
  int64_t batches = 1, idx[MP_K_MAX_RANK] = {0};
  for (uint32_t i = 0; i < bc.rank; i++) batches *= bc.dims[i];
  const char *pa = op_pin(c, ix[0]), *pb = op_pin(c, ix[2]);
  for (int64_t t = 0; t < batches; t++) {
    int64_t oa = 0, ob = 0;
    for (uint32_t i = 0; i < bc.rank; i++) {
      oa += idx[i] * bc.sa[i];
      ob += idx[i] * bc.sb[i];
    }
    mp_k_matmul_integer(mnk[0], mnk[2], mnk[1], a->dtype,
                        pa + oa * mnk[0] * mnk[2], az ? op_pin(c, ix[1]) : NULL,
                        az ? op_count(az) : 0, b->dtype,
                        pb + ob * mnk[2] * mnk[1], bz ? op_pin(c, ix[3]) : NULL,
                        bz ? op_count(bz) : 0, acc + t * mnk[0] * mnk[1]);
    for (uint32_t i = bc.rank; i-- > 0;) { /* the next batch index */
      if (++idx[i] < bc.dims[i]) break;
      idx[i] = 0;
    }
  }
}

/* MatMulNBits (com.microsoft): A [..., K] f32, B the packed weight,
 * scales f32 [N * kb], zero points (NONE, uint8 packed as B is, or f32
 * [N * kb]), g_idx (NONE, or int32 [K]: each element's block), bias (NONE
 * or f32 [N]), then a fused epilogue's inputs;
 * parameters K, N, bits, block_size and the head tail (no prologue).
 * Y [..., N] = A W^T + bias, W [N, K] never whole: a panel of its rows
 * (at most OP_PANEL_BYTES of f32) is unpacked into the workspace, and
 * every block of A's rows multiplied by it (op_panel_count rows, a
 * product of at most OP_PANEL_BYTES) before the next panel; each element
 * is the same sum in the same order (the kernel's invariant 1). The
 * epilogue then runs over Y (computed into the workspace when an
 * epilogue operand lives in Y's buffer, op_head_out). */
typedef struct op_nbits {
  int64_t k, n, bits, block, kb, m, nc, rb;
  op_tail t;
  uint32_t own;
} op_nbits;

static bool op_nbits_params(op_ctx *c, op_nbits *q) {
  op_rd r = op_reader(c);
  q->k = rd_range(&r, 1, INT32_MAX);
  q->n = rd_range(&r, 1, INT32_MAX);
  q->bits = rd_range(&r, 2, 8);
  q->block = rd_range(&r, 16, 1 << 20);
  rd_tail(&r, &q->t);
  if (r.bad || r.at != r.n || c->op->n_out != 1) {
    return op_fail(c,
                   "bad parameters (K and N in [1, 2^31), bits 2 to 8, "
                   "block_size 16 to 2^20)");
  }
  q->own = op_own(c, &q->t);
  if (q->own != 6 || q->t.n_pro) return op_fail(c, "bad arity");
  if (q->bits != 2 && q->bits != 4 && q->bits != 8) {
    return op_fail(c, "bits %" PRId64 " (2, 4 or 8 only)", q->bits);
  }
  if (q->block & (q->block - 1)) {
    return op_fail(c, "block_size %" PRId64 " is not a power of 2", q->block);
  }
  q->kb = (q->k + q->block - 1) / q->block;
  const mp_btensor *a = op_in(c, 0);
  q->m = a && a->shape.rank && a->shape.dims[a->shape.rank - 1]
             ? op_count(a) / a->shape.dims[a->shape.rank - 1]
             : 0;
  q->nc = op_panel_count(q->k, q->n);
  q->rb = q->m ? op_panel_count(q->nc, q->m) : 1;
  return true;
}

/* g_idx's values when they are known before the run (a weight with its
 * data in the bundle: op_check_matmul_nbits checks them), else NULL. */
static const int32_t *op_nbits_gidx_known(const op_ctx *c, const op_nbits *q) {
  const mp_btensor *g = op_in(c, 4);
  if (!g || g->kind != MP_BT_WEIGHT || g->data_bytes != (uint64_t)q->k * 4) {
    return NULL;
  }
  return (const int32_t *)(mp_bundle_weights(c->b) + g->data_offset);
}

/* Whether each of g_idx's K blocks is one of the kb. */
static bool op_nbits_blocks(op_ctx *c, const op_nbits *q, const int32_t *g) {
  for (int64_t i = 0; i < q->k; i++) {
    int32_t v;
    memcpy(&v, g + i, sizeof v); /* a weight's data may be unaligned */
    if (v < 0 || v >= q->kb) {
      return op_fail(c,
                     "g_idx '%s' [%" PRId64 "] = %" PRId32
                     " is not a block in [0, %" PRId64 ")",
                     op_in(c, 4)->name, i, v, q->kb);
    }
  }
  return true;
}

static bool op_check_matmul_nbits(op_ctx *c) {
  op_nbits q;
  if (!op_nbits_params(c, &q)) return false;
  const mp_btensor *a = op_in(c, 0), *b = op_in(c, 1), *s = op_in(c, 2);
  const mp_btensor *z = op_in(c, 3), *bias = op_in(c, 5), *y = op_out(c, 0);
  if (!a || a->dtype != MP_KD_F32 || a->shape.rank < 1 ||
      a->shape.dims[a->shape.rank - 1] != q.k) {
    return op_fail(c, "A must be f32 [..., K = %" PRId64 "]", q.k);
  }
  if (!b || b->dtype != MP_KD_U8 ||
      op_count(b) != q.n * q.kb * (q.block * q.bits / 8)) {
    return op_fail(c, "B must be uint8 [N, %" PRId64 " blocks, %" PRId64 " B]",
                   q.kb, q.block * q.bits / 8);
  }
  if (!s || s->dtype != MP_KD_F32 || op_count(s) != q.n * q.kb) {
    return op_fail(c, "scales must be %" PRId64 " f32 values", q.n * q.kb);
  }
  if (z && z->dtype != MP_KD_U8 && z->dtype != MP_KD_F32) {
    return op_fail(c, "zero points '%s' are %s (packed uint8 or f32)", z->name,
                   mp_kd_name(z->dtype));
  }
  if (z && z->dtype == MP_KD_U8 &&
      op_count(z) != q.n * ((q.kb * q.bits + 7) / 8)) {
    return op_fail(c, "zero points '%s' must be %" PRId64 " bytes", z->name,
                   q.n * ((q.kb * q.bits + 7) / 8));
  }
  if (z && z->dtype == MP_KD_F32 && op_count(z) != q.n * q.kb) {
    return op_fail(c, "zero points '%s' must be %" PRId64 " f32 values",
                   z->name, q.n * q.kb);
  }
  const mp_btensor *g = op_in(c, 4);
  if (g && (g->dtype != MP_KD_I32 || op_count(g) != q.k)) {
    return op_fail(c, "g_idx '%s' must be %" PRId64 " int32 values", g->name,
                   q.k);
  }
  const int32_t *known = op_nbits_gidx_known(c, &q);
  if (known && !op_nbits_blocks(c, &q, known)) return false;
  if (bias && (bias->dtype != MP_KD_F32 || op_count(bias) != q.n)) {
    return op_fail(c, "bias '%s' must be %" PRId64 " f32 values", bias->name,
                   q.n);
  }
  mp_kshape want = a->shape;
  want.dims[want.rank - 1] = q.n;
  if (!op_expect_shape(c, y, &want)) return false;
  if (op_aliases(a, y)) {
    return op_fail(c, "output '%s' shares an input's buffer", y->name);
  }
  if (!op_check_epilogue(c, &q.t, q.own, y, 0)) return false;
  c->need_ws += (size_t)(q.k * q.nc) * 4 + 64 + (size_t)(q.rb * q.nc) * 4 + 64;
  return true;
}

static bool op_run_matmul_nbits(op_ctx *c) {
  op_nbits q;
  (void)op_nbits_params(c, &q);
  const mp_btensor *y = op_out(c, 0);
  const float *pa = op_pin(c, 0), *pbias = op_pin(c, 5);
  void *out = op_pout(c, 0);
  float *py = op_head_out(c, &q.t, q.own, y, out);
  const mp_btensor *z = op_in(c, 3);
  mp_knbits w = {q.k,          q.block,      (int)q.bits,  z ? z->dtype : 0,
                 op_pin(c, 1), op_pin(c, 2), op_pin(c, 3), op_pin(c, 4)};
  if (w.g_idx && !op_nbits_gidx_known(c, &q) &&
      !op_nbits_blocks(c, &q, w.g_idx)) {
    return false; /* the blocks of a g_idx computed by the graph */
  }
  float *wp = op_ws_take(c, q.k * q.nc), *yp = op_ws_take(c, q.rb * q.nc);
  mp_kgemm g = {0, 0, q.k, false, true, 1.0, 1.0, 0, 1, 0};
  for (int64_t n0 = 0; n0 < q.n; n0 += q.nc) {
    g.n = q.n - n0 < q.nc ? q.n - n0 : q.nc;
    OP_K(dequantize_nbits)(&w, n0, g.n, wp);
    for (int64_t r0 = 0; r0 < q.m; r0 += q.rb) {
      g.m = q.m - r0 < q.rb ? q.m - r0 : q.rb;
      OP_K(gemm_f32)(&g, pa + r0 * q.k, wp, pbias ? pbias + n0 : NULL, yp);
      for (int64_t r = 0; r < g.m; r++) {
        memcpy(py + (r0 + r) * q.n + n0, yp + r * g.n, (size_t)g.n * 4);
      }
    }
  }
  op_run_epilogue(c, &q.t, q.own, y, py);
  op_finish_epilogue(y, py, out);
  return true;
}

static const uint32_t op_mmint_ix[4] = {0, 2, 1, 3};
static const uint32_t op_qmm_ix[4] = {0, 2, 3, 5};

static bool op_run_matmul_integer(op_ctx *c) {
  op_run_matmul_q(c, op_mmint_ix, op_pout(c, 0));
  return true;
}

/* QLinearMatMul: a, a_scale, a_zero_point, b, b_scale, b_zero_point,
 * y_scale, y_zero_point; scale and zero point of a per tensor or per row,
 * of b per tensor or per column. */
static bool op_check_qlinear_matmul(op_ctx *c) {
  if (c->op->n_in != 8 || c->op->n_out != 1 || c->op->n_params) {
    return op_fail(c, "bad arity");
  }
  const mp_btensor *a = op_in(c, 0), *b = op_in(c, 3), *y = op_out(c, 0);
  if (!a || !b || !op_q8(a->dtype) || !op_q8(b->dtype)) {
    return op_fail(c, "a and b must be int8 or uint8");
  }
  mp_kbcast bc;
  int64_t mnk[3];
  mp_kshape want;
  if (!op_matmul_integer_shapes(c, 0, 3, &bc, mnk, &want) ||
      !op_check_qscales(c, 1, mnk[0], 4, mnk[1])) {
    return false;
  }
  if (!op_zp_ok(op_in(c, 2), a->dtype, mnk[0]) ||
      !op_zp_ok(op_in(c, 5), b->dtype, mnk[1])) {
    return op_fail(c, "a zero point of a or b has a bad size or dtype");
  }
  if (!op_out_of_place(c, y, &want)) return false;
  c->need_ws += (size_t)op_count(y) * 4; /* the int32 sums */
  return true;
}

static bool op_run_qlinear_matmul(op_ctx *c) {
  const mp_btensor *y = op_out(c, 0);
  const mp_btensor *as = op_in(c, 1), *bs = op_in(c, 4);
  int32_t *acc = (int32_t *)c->ws;
  op_run_matmul_q(c, op_qmm_ix, acc);
  const float *pa = op_pin(c, 1), *pb = op_pin(c, 4), *ys = op_pin(c, 6);
  int32_t zy = (int32_t)mp_k_load_i(op_pin(c, 7), y->dtype, 0);
  int64_t n = y->shape.dims[y->shape.rank - 1];
  int64_t m = y->shape.dims[y->shape.rank - 2], total = op_count(y);
  size_t es = mp_kd_size(y->dtype);
  char *py = op_pout(c, 0);
  bool one = op_count(as) == 1 && op_count(bs) == 1;
  for (int64_t at = 0; at < total; at += one ? total : 1) {
    int64_t i = at / n % m, j = at % n;
    float mult =
        pa[op_count(as) == 1 ? 0 : i] * pb[op_count(bs) == 1 ? 0 : j] / ys[0];
    mp_k_requantize(one ? total : 1, acc + at, 0, mult, zy, y->dtype,
                    py + (size_t)at * es);
  }
  return true;
}

/* DynamicQuantizeLinear: x (f32) -> y (uint8), y_scale, y_zero_point. */
static bool op_check_dynamic_quantize(op_ctx *c) {
  const mp_btensor *x = op_in(c, 0);
  if (!x || c->op->n_in != 1 || c->op->n_out != 3 || c->op->n_params) {
    return op_fail(c, "bad arity");
  }
  const mp_btensor *y = op_out(c, 0), *s = op_out(c, 1), *z = op_out(c, 2);
  if (x->dtype != MP_KD_F32 || y->dtype != MP_KD_U8 || s->dtype != MP_KD_F32 ||
      z->dtype != MP_KD_U8 || op_count(s) != 1 || op_count(z) != 1) {
    return op_fail(c,
                   "x must be f32, y and y_zero_point one uint8 each, "
                   "y_scale one f32");
  }
  if (op_aliases(x, y) || op_aliases(x, s) || op_aliases(x, z)) {
    return op_fail(c, "does not run in place");
  }
  return op_expect_shape(c, y, &x->shape);
}

static bool op_run_dynamic_quantize(op_ctx *c) {
  mp_k_dynamic_quantize((size_t)op_count(op_in(c, 0)), op_pin(c, 0),
                        op_pout(c, 0), op_pout(c, 1), op_pout(c, 2));
  return true;
}

/* FILL: constant data (Shape, ConstantOfShape, Range with known values). */
static bool op_check_fill(op_ctx *c) {
  const mp_btensor *y = c->op->n_out == 1 ? op_out(c, 0) : NULL;
  if (!y || c->op->n_in > 1) return op_fail(c, "bad arity");
  int64_t n = op_count(y);
  if (c->op->n_params != 1 && (int64_t)c->op->n_params != n) {
    return op_fail(c, "%u values for %lld elements", c->op->n_params,
                   (long long)n);
  }
  return true;
}

static bool op_run_fill(op_ctx *c) {
  const mp_btensor *y = op_out(c, 0);
  size_t n = (size_t)op_count(y);
  bool fl = mp_kd_is_float(y->dtype);
  for (size_t i = 0; i < n; i++) {
    int64_t v = c->op->params[c->op->n_params == 1 ? 0 : i];
    double d;
    memcpy(&d, &v, sizeof d);
    if (fl) {
      mp_k_store(op_pout(c, 0), y->dtype, i, d);
    } else {
      uint64_t u = (uint64_t)v;
      memcpy((char *)op_pout(c, 0) + i * mp_kd_size(y->dtype), &u,
             mp_kd_size(y->dtype));
    }
  }
  return true;
}

/* ---- dispatch ---------------------------------------------------------------
 */

static bool op_dispatch(op_ctx *c, bool run) {
  switch (c->op->kernel) {
    case MP_BOP_CONV:
      return run ? op_run_conv(c, false) : op_check_conv(c, false);
    case MP_BOP_CONV_TRANSPOSE:
      return run ? op_run_conv(c, true) : op_check_conv(c, true);
    case MP_BOP_GEMM:
      return run ? op_run_gemm(c, true) : op_check_gemm(c, true);
    case MP_BOP_MATMUL:
      return run ? op_run_gemm(c, false) : op_check_gemm(c, false);
    case MP_BOP_UNARY:
      return run ? op_run_unary(c) : op_check_unary(c);
    case MP_BOP_BINARY:
      return run ? op_run_binary(c) : op_check_binary(c);
    case MP_BOP_VARIADIC:
      return run ? op_run_variadic(c) : op_check_variadic(c);
    case MP_BOP_WHERE:
      return run ? op_run_where(c) : op_check_where(c);
    case MP_BOP_CAST:
      return run ? op_run_cast(c) : op_check_cast(c);
    case MP_BOP_VIEW:
      return run ? op_run_view(c) : op_check_view(c);
    case MP_BOP_SOFTMAX:
      return run ? op_run_softmax(c) : op_check_softmax(c);
    case MP_BOP_BATCHNORM:
      return run ? op_run_batchnorm(c) : op_check_batchnorm(c);
    case MP_BOP_LAYERNORM:
      return run ? op_run_layernorm(c) : op_check_layernorm(c);
    case MP_BOP_MAXPOOL:
      return run ? op_run_pool(c, true) : op_check_pool(c, true);
    case MP_BOP_AVGPOOL:
    case MP_BOP_LPPOOL:
      return run ? op_run_pool(c, false) : op_check_pool(c, false);
    case MP_BOP_REDUCE:
      return run ? op_run_reduce(c) : op_check_reduce(c);
    case MP_BOP_CONCAT:
      return run ? op_run_concat(c, false) : op_check_concat(c, false);
    case MP_BOP_SPLIT:
      return run ? op_run_concat(c, true) : op_check_concat(c, true);
    case MP_BOP_SLICE:
      return run ? op_run_slice(c) : op_check_slice(c);
    case MP_BOP_GATHER:
      return run ? op_run_gather(c) : op_check_gather(c);
    case MP_BOP_PAD:
      return run ? op_run_pad(c) : op_check_pad(c);
    case MP_BOP_TRANSPOSE:
      return run ? op_run_transpose(c) : op_check_transpose(c);
    case MP_BOP_RESIZE:
      return run ? op_run_resize(c) : op_check_resize(c);
    case MP_BOP_QUANTIZE:
      return run ? op_run_quant(c, true) : op_check_quant(c, true);
    case MP_BOP_DEQUANTIZE:
      return run ? op_run_quant(c, false) : op_check_quant(c, false);
    case MP_BOP_FILL:
      return run ? op_run_fill(c) : op_check_fill(c);
    case MP_BOP_CONV_INTEGER:
      return run ? op_run_conv_integer(c) : op_check_conv_integer(c);
    case MP_BOP_DYNAMIC_QUANTIZE:
      return run ? op_run_dynamic_quantize(c) : op_check_dynamic_quantize(c);
    case MP_BOP_MATMUL_NBITS:
      return run ? op_run_matmul_nbits(c) : op_check_matmul_nbits(c);
    case MP_BOP_MATMUL_INTEGER:
      return run ? op_run_matmul_integer(c) : op_check_matmul_integer(c);
    case MP_BOP_QLINEAR_CONV:
      return run ? op_run_qlinear_conv(c) : op_check_qlinear_conv(c);
    case MP_BOP_QLINEAR_MATMUL:
      return run ? op_run_qlinear_matmul(c) : op_check_qlinear_matmul(c);
    case MP_BOP_COPY:
      return run ? op_run_copy(c) : op_check_copy(c);
    case MP_BOP_RNN:
      return run ? op_run_rnn(c) : op_check_rnn(c);
    case MP_BOP_ATTN_ROWS:
      return run ? op_run_attn_rows(c) : op_check_attn_rows(c);
    default: {
      bool handled = false;
      bool ok = op_index_dispatch(c, run, &handled);
      if (!handled) ok = op_stats_dispatch(c, run, &handled);
      if (!handled) ok = op_linalg_dispatch(c, run, &handled);
      if (!handled) ok = op_attn_dispatch(c, run, &handled);
      if (!handled) ok = op_select_dispatch(c, run, &handled);
      if (!handled) ok = op_loop_dispatch(c, run, &handled);
      if (!handled) ok = op_train_dispatch(c, run, &handled);
      if (!handled) ok = op_random_dispatch(c, run, &handled);
      return handled ? ok : op_fail(c, "unknown kernel id %u", c->op->kernel);
    }
  }
}

/* ---- which kernels run ------------------------------------------------------
 */

#ifdef MPLAN_RVV
/* The fused prologue and epilogue steps have vector kernels too. */
static bool op_vec_tail(const op_ctx *c, const op_tail *t, int dtype) {
  uint32_t own = op_own(c, t);
  for (uint32_t k = 0; k < 2; k++) {
    if (t->pro[k].kind == 2) return false; /* Cast */
    if (!op_dq(&t->pro[k])) continue;
    /* a MatMul's or Gemm's weight dequantized in panels of columns
     * (op_run_gemm_panels), a Conv's or a transposed Gemm weight's in
     * panels of rows (op_widen_range: the dequantize kernel or the range
     * kernel), an input per tensor in parts or whole (the dequantize
     * kernel), or whole (blocked: on the scalar kernel) */
    const mp_btensor *x = op_in(c, k);
    bool tb = false, panels = k == 1 && op_panels(c, t, own, &tb);
    bool rows = (panels && tb) || (k == 1 && op_conv_panels(c, t));
    if (!x || (rows     ? !(op_widen_whole(c, t, own, k)
                                ? mp_kv_dequantize_vector(x->dtype)
                                : mp_kv_dequantize_cols_vector(x->dtype))
               : panels ? !mp_kv_dequantize_cols_vector(x->dtype)
                        : t->pro[k].kind == 3 ||
                              !mp_kv_dequantize_vector(x->dtype))) {
      return false;
    }
  }
  for (uint32_t k = 0; k < t->n_epi; k++) {
    int cls = t->epi[k].code & 0xf00, op = t->epi[k].code & 0xff;
    bool v = cls == MP_BEPI_UNARY ? mp_kv_unary_vector((mp_kunary)op, dtype)
             : cls == MP_BEPI_BINARY || cls == MP_BEPI_TAP
                 ? mp_kv_binary_vector((mp_kbinary)op, dtype, dtype, false)
                 : dtype == MP_KD_F32; /* BatchNormalization, QuantizeLinear
                                          (int8 and uint8: mp_kv_quantize) */
    if (!v) return false;
  }
  return true;
}

static bool op_vec(op_ctx *c) {
  const mp_btensor *x = op_in(c, 0);
  const mp_btensor *y = c->op->n_out ? op_out(c, 0) : NULL;
  int dx = x ? x->dtype : 0, dy = y ? y->dtype : 0;
  op_rd r = op_reader(c);
  op_tail t;
  switch (c->op->kernel) {
    case MP_BOP_CONV:
    case MP_BOP_CONV_TRANSPOSE: { /* a ConvTranspose is f32 only */
      op_convp p;
      rd_conv(&r, &p);
      rd_tail(&r, &t);
      if (op_quant_tail(&t)) dy = MP_KD_F32; /* computed in f32 */
      return (dy == MP_KD_F32 ||
              (dy == MP_KD_I8 && c->op->kernel == MP_BOP_CONV)) &&
             op_vec_tail(c, &t, dy);
    }
    case MP_BOP_GEMM:
    case MP_BOP_MATMUL: {
      op_gemmp p;
      rd_gemm(&r, &p, c->op->kernel == MP_BOP_GEMM);
      rd_tail(&r, &t);
      if (op_quant_tail(&t)) dy = MP_KD_F32; /* computed in f32 */
      return (dy == MP_KD_F32 || dy == MP_KD_I8) && op_vec_tail(c, &t, dy);
    }
    case MP_BOP_MATMUL_NBITS: { /* the unpacking and the product */
      op_nbits q;
      char why[8];
      op_ctx tmp = *c;
      tmp.why = why;
      tmp.cap = sizeof why;
      return op_nbits_params(&tmp, &q) && dy == MP_KD_F32 &&
             op_vec_tail(c, &q.t, dy);
    }
    case MP_BOP_UNARY: {
      mp_kunary u = (mp_kunary)rd_i(&r);
      (void)rd_f(&r);
      (void)rd_f(&r);
      if (r.at == r.n) return mp_kv_unary_vector(u, dx);
      rd_tail(&r, &t); /* an elementwise head (op_check_ew): f32 inside */
      return mp_kv_unary_vector(u, MP_KD_F32) && op_vec_tail(c, &t, MP_KD_F32);
    }
    case MP_BOP_BINARY: {
      mp_kbinary b = (mp_kbinary)rd_i(&r);
      (void)rd_i(&r);
      if (r.at == r.n || rd_i(&r) != 4) {
        return mp_kv_binary_vector(b, dx, dy, false);
      }
      rd_tail(&r, &t);
      return mp_kv_binary_vector(b, MP_KD_F32, MP_KD_F32, false) &&
             op_vec_tail(c, &t, MP_KD_F32);
    }
    case MP_BOP_VARIADIC: {
      static const mp_kbinary fold[] = {MP_KB_ADD, MP_KB_MAX, MP_KB_MIN};
      int64_t op = rd_i(&r);
      return op >= 0 && op < 3 && mp_kv_binary_vector(MP_KB_MAX, dy, dy, 0) &&
             mp_kv_binary_vector(fold[op], dy, dy, false);
    }
    case MP_BOP_CONCAT:
      (void)rd_i(&r);
      if (r.at == r.n) return true; /* a copy at most */
      rd_tail(&r, &t); /* dequantized pieces (op_check_concat_tail) */
      return op_vec_tail(c, &t, MP_KD_F32);
    case MP_BOP_VIEW: /* a copy at most */
    case MP_BOP_COPY:
    case MP_BOP_SPLIT:
      return true;
    case MP_BOP_SOFTMAX:
      return dx == MP_KD_F32 || dx == MP_KD_I8;
    case MP_BOP_BATCHNORM:
      (void)rd_f(&r);
      if (r.n > 2) { /* a dequantized X (op_check_bn_head) */
        rd_tail(&r, &t);
        return op_vec_tail(c, &t, MP_KD_F32);
      }
      return dx == MP_KD_F32;
    case MP_BOP_LAYERNORM:
    case MP_BOP_RMSNORM:
    case MP_BOP_ROTARY:
    case MP_BOP_ATTENTION:
    case MP_BOP_ATTN_ROWS: /* gemm, binary, softmax: each has its RVV kernel */
      return dx == MP_KD_F32;
    case MP_BOP_MAXPOOL:
    case MP_BOP_AVGPOOL: {
      bool max = c->op->kernel == MP_BOP_MAXPOOL;
      if (op_pool_indices(c, max)) return false;
      op_poolp p;
      rd_pool(&r, &p);
      if (r.at == r.n) return mp_kv_pool_vector(max, dx);
      rd_tail(&r, &t); /* a dequantized input (op_check_pool_tail) */
      return mp_kv_pool_vector(max, MP_KD_F32) && op_vec_tail(c, &t, MP_KD_F32);
    }
    case MP_BOP_TRANSPOSE:
      return mp_kv_move_vector(mp_kd_size(dx));
    case MP_BOP_PAD:
      return c->op->n_params > 0 && c->op->params[0] == MP_KPAD_CONSTANT &&
             mp_kv_move_vector(mp_kd_size(dx));
    case MP_BOP_QUANTIZE: /* not blocked */
      return c->op->n_params == 1 && (dy == MP_KD_I8 || dy == MP_KD_U8);
    case MP_BOP_DEQUANTIZE:
      return c->op->n_params == 1 && mp_kv_dequantize_vector(dx);
    default:
      return false;
  }
}
#endif

/* ---- f16 and bf16 through the f32 kernels (invariant 5) ------------------
 */

static bool op_half(int d) {
  return d == MP_KD_F16 || d == MP_KD_BF16;
}

static bool op_has_half(const op_ctx *c) {
  for (uint32_t k = 0; k < c->op->n_in; k++) {
    const mp_btensor *t = op_in(c, k);
    if (t && op_half(t->dtype)) return true;
  }
  for (uint32_t k = 0; k < c->op->n_out; k++) {
    if (op_half(op_out(c, k)->dtype)) return true;
  }
  return false;
}

#define OP_WIDE_ALIGN 64u

/* One tensor of w: t itself, or (16-bit) an f32 tensor of its shape at
 * workspace offset *at, with a buffer id no bundle buffer has. */
static void op_wide_one(const op_ctx *c, const mp_btensor *t,
                        unsigned char *real, uint32_t id, mp_btensor *wt,
                        unsigned char **wp, size_t *at) {
  *wt = *t;
  *wp = real;
  if (!op_half(t->dtype)) return;
  size_t bytes = (size_t)op_count(t) * sizeof(float);
  wt->dtype = MP_KD_F32;
  wt->bytes = bytes;
  wt->buffer = id;
  wt->offset = 0;
  *wp = c->ws ? c->ws + *at : NULL;
  *at += (bytes + OP_WIDE_ALIGN - 1) / OP_WIDE_ALIGN * OP_WIDE_ALIGN;
}

/* Fills w for c (pointers only when c runs); *bytes is the workspace the
 * f32 tensors take. false: too many tensors for op_wide. */
static bool op_wide_init(const op_ctx *c, op_wide *w, size_t *bytes) {
  if (c->op->n_in > OP_WIDE_MAX || c->op->n_out > OP_WIDE_MAX) return false;
  w->half =
      c->op->n_out && op_half(op_out(c, 0)->dtype) ? op_out(c, 0)->dtype : 0;
  size_t at = 0;
  uint32_t id = UINT32_MAX;
  for (uint32_t k = 0; k < c->op->n_in; k++, id--) {
    const mp_btensor *t = op_in(c, k);
    w->widen[k] = false;
    if (!t) continue;
    uint32_t j = 0;
    while (j < k && c->op->in[j] != c->op->in[k]) j++;
    if (j < k) { /* read twice: one copy */
      w->in[k] = w->in[j];
      w->pin[k] = w->pin[j];
      continue;
    }
    op_wide_one(c, t, c->ptr ? c->ptr[c->op->in[k]] : NULL, id, &w->in[k],
                &w->pin[k], &at);
    w->widen[k] = op_half(t->dtype);
  }
  for (uint32_t k = 0; k < c->op->n_out; k++, id--) {
    op_wide_one(c, op_out(c, k), c->ptr ? c->ptr[c->op->out[k]] : NULL, id,
                &w->out[k], &w->pout[k], &at);
  }
  *bytes = at;
  return true;
}

/* The check of invariant 5, after the op's own check refused c. */
static bool op_wide_check(op_ctx *c, size_t *workspace) {
  op_wide w;
  size_t bytes;
  if (!op_has_half(c) || !op_wide_init(c, &w, &bytes)) return false;
  op_ctx cw = *c;
  cw.wide = &w;
  cw.need_ws = 0;
  if (!op_dispatch(&cw, false)) return false;
  *workspace = bytes + cw.need_ws;
  return true;
}

/* The run of invariant 5. */
static bool op_wide_run(op_ctx *c) {
  op_wide w;
  size_t bytes;
  if (!op_wide_init(c, &w, &bytes)) return false;
  for (uint32_t k = 0; k < c->op->n_in; k++) {
    if (!w.widen[k]) continue;
    const mp_btensor *t = op_in(c, k);
    const void *src = c->ptr[c->op->in[k]];
    for (size_t i = 0, n = (size_t)op_count(t); i < n; i++) {
      mp_k_store(w.pin[k], MP_KD_F32, i, mp_k_load(src, t->dtype, i));
    }
  }
  op_ctx cw = *c;
  cw.wide = &w;
  cw.ws = c->ws + bytes;
  if (!op_dispatch(&cw, true)) return false;
  for (uint32_t k = 0; k < c->op->n_out; k++) {
    const mp_btensor *t = op_out(c, k);
    if (!op_half(t->dtype)) continue;
    void *dst = c->ptr[c->op->out[k]];
    for (size_t i = 0, n = (size_t)op_count(t); i < n; i++) {
      mp_k_store(dst, t->dtype, i, mp_k_load(w.pout[k], MP_KD_F32, i));
    }
  }
  return true;
}

bool mp_rt_op_vector(const mp_bundle *b, size_t step) {
#ifdef MPLAN_RVV
  char why[8];
  op_ctx c = {
      b, mp_bundle_op(b, step), step, why, sizeof why, NULL, NULL, 0, NULL, 0};
  if (op_vec(&c)) return true;
  /* An op computed through f32 (invariant 5) runs the f32 kernel. */
  op_wide w;
  size_t bytes;
  op_ctx probe = c;
  if (!op_has_half(&c) || op_dispatch(&probe, false) ||
      !op_wide_init(&c, &w, &bytes)) {
    return false;
  }
  c.wide = &w;
  return op_vec(&c);
#else
  (void)b;
  (void)step;
  return false;
#endif
}

/* 4-bit tensors only where a kernel addresses them by element (Cast,
 * QuantizeLinear, DequantizeLinear, Transpose, a MatMul's, a Gemm's or a
 * Conv's DequantizeLinear prologue and its zero point) or by whole tensors (the
 * views and copies): every other kernel computes addresses in bytes. */
static bool op_check_nibbles(op_ctx *c) {
  uint32_t pro[2] = {UINT32_MAX, UINT32_MAX}, zp[2] = {UINT32_MAX, UINT32_MAX};
  if (c->op->kernel == MP_BOP_MATMUL || c->op->kernel == MP_BOP_GEMM ||
      c->op->kernel == MP_BOP_CONV) {
    op_rd r = op_reader(c);
    op_gemmp p;
    op_convp q;
    op_tail t;
    if (c->op->kernel != MP_BOP_CONV) {
      rd_gemm(&r, &p, c->op->kernel == MP_BOP_GEMM);
    } else {
      rd_conv(&r, &q);
    }
    rd_tail(&r, &t);
    for (uint32_t k = 0; k < 2 && !r.bad; k++) {
      if (op_dq(&t.pro[k])) {
        pro[k] = k;
        zp[k] = op_pro_at(&t, op_own(c, &t), k, 1);
      }
    }
  }
  switch (c->op->kernel) {
    case MP_BOP_CAST:
    case MP_BOP_QUANTIZE:
    case MP_BOP_DEQUANTIZE:
    case MP_BOP_TRANSPOSE:
    case MP_BOP_VIEW:
    case MP_BOP_COPY:
      return true;
    default:
      break;
  }
  for (uint32_t k = 0; k < c->op->n_in + c->op->n_out; k++) {
    const mp_btensor *t =
        k < c->op->n_in ? op_in(c, k) : op_out(c, k - c->op->n_in);
    if (t && mp_kd_bits(t->dtype) == 4 && k != pro[0] && k != pro[1] &&
        k != zp[0] && k != zp[1]) {
      return op_fail(c, "'%s' is %s, which this kernel does not address",
                     t->name, mp_kd_name(t->dtype));
    }
  }
  return true;
}

bool mp_rt_op_check(const mp_bundle *b, size_t step, size_t *workspace,
                    char *why, size_t cap) {
  op_ctx c = {b, mp_bundle_op(b, step), step, why, cap, NULL, NULL, 0, NULL, 0};
  if (!op_check_nibbles(&c)) return false;
  if (!op_dispatch(&c, false)) {
    /* The refusal stands unless the f32 kernel takes the op; why keeps
     * the op's own reason, or the f32 check's when that one ran. */
    return op_wide_check(&c, workspace);
  }
  *workspace = c.need_ws;
  return true;
}

bool mp_rt_op_run(const mp_bundle *b, size_t step, unsigned char *const *ptr,
                  void *ws, uint64_t visit, char *why, size_t cap) {
  op_ctx c = {b,    mp_bundle_op(b, step), step, why, cap, ptr, ws, 0, NULL,
              visit};
  if (op_has_half(&c)) {
    /* As the check decided: the op's own kernel when its check takes
     * the 16-bit tensors, else through f32 (invariant 5). */
    op_ctx probe = c;
    if (!op_dispatch(&probe, false)) return op_wide_run(&c);
  }
  return op_dispatch(&c, true);
}
