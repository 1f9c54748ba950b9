/*
 * op_ctx.h -- what a bundle op's check and run see, and the helpers both
 * use (private to runtime/: ops.c, ops_index.c).
 */
#ifndef MPLAN_RUNTIME_OP_CTX_H
#define MPLAN_RUNTIME_OP_CTX_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "mplan/kernels.h"
#include "ops.h"

/* The tensors an op sees when its f16 and bf16 tensors are computed as
 * f32 (ops.c invariant 5): copies of the bundle's, the 16-bit ones made
 * f32 tensors in the workspace, and their first bytes (run only). */
#define OP_WIDE_MAX 32

typedef struct op_wide {
  mp_btensor in[OP_WIDE_MAX], out[OP_WIDE_MAX];
  unsigned char *pin[OP_WIDE_MAX], *pout[OP_WIDE_MAX];
  bool widen[OP_WIDE_MAX]; /* input k has its own f32 copy to fill */
  int half; /* the head's own 16-bit dtype (its output 0's), or 0 */
} op_wide;

typedef struct op_ctx {
  const mp_bundle *b;
  const mp_bopr *op;
  size_t step;
  char *why;
  size_t cap;
  unsigned char *const *ptr; /* run only */
  unsigned char *ws;
  size_t need_ws;
  const op_wide *wide; /* NULL: the bundle's tensors */
  uint64_t visit;      /* run only: the op's earlier runs in this run */
} op_ctx;

static inline bool op_fail(op_ctx *c, const char *fmt, ...) MP_PRINTF(2, 3);

static inline bool op_fail(op_ctx *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->why, c->cap, fmt, ap);
  va_end(ap);
  return false;
}

static inline const mp_btensor *op_in(const op_ctx *c, uint32_t k) {
  if (k >= c->op->n_in || c->op->in[k] == MP_BUNDLE_NONE) return NULL;
  if (c->wide) return &c->wide->in[k];
  return mp_bundle_tensor(c->b, c->op->in[k]);
}

static inline const mp_btensor *op_out(const op_ctx *c, uint32_t k) {
  if (c->wide) return &c->wide->out[k];
  return mp_bundle_tensor(c->b, c->op->out[k]);
}

static inline void *op_pin(const op_ctx *c, uint32_t k) {
  if (k >= c->op->n_in || c->op->in[k] == MP_BUNDLE_NONE) return NULL;
  if (c->wide) return c->wide->pin[k];
  return c->ptr[c->op->in[k]];
}

static inline void *op_pout(const op_ctx *c, uint32_t k) {
  if (c->wide) return c->wide->pout[k];
  return c->ptr[c->op->out[k]];
}

static inline int64_t op_count(const mp_btensor *t) {
  return mp_kshape_count(&t->shape);
}

static inline int64_t op_div(int64_t a, int64_t b) {
  return b ? a / b : 0;
}

static inline bool op_same_shape(const mp_kshape *a, const mp_kshape *b) {
  if (a->rank != b->rank) return false;
  for (uint32_t i = 0; i < a->rank; i++) {
    if (a->dims[i] != b->dims[i]) return false;
  }
  return true;
}

static inline void op_shape_str(const mp_kshape *s, char *buf, size_t cap) {
  size_t n = (size_t)snprintf(buf, cap, "[");
  for (uint32_t i = 0; i < s->rank && n < cap; i++) {
    n += (size_t)snprintf(buf + n, cap - n, "%s%lld", i ? "," : "",
                          (long long)s->dims[i]);
  }
  if (n < cap) snprintf(buf + n, cap - n, "]");
}

static inline bool op_expect_shape(op_ctx *c, const mp_btensor *t,
                                   const mp_kshape *want) {
  if (op_same_shape(&t->shape, want)) return true;
  char a[160], b[160];
  op_shape_str(&t->shape, a, sizeof a);
  op_shape_str(want, b, sizeof b);
  return op_fail(c, "tensor '%s' has shape %s where the op computes %s",
                 t->name, a, b);
}

/* The tensors share bytes (the op computes in place). */
static inline bool op_aliases(const mp_btensor *a, const mp_btensor *b) {
  return mp_rt_share_bytes(a, b);
}

/* y has the shape the op computes and shares no input's bytes (the
 * integer ops write out of place). */
static inline bool op_out_of_place(op_ctx *c, const mp_btensor *y,
                                   const mp_kshape *want) {
  if (!op_expect_shape(c, y, want)) return false;
  for (uint32_t k = 0; k < c->op->n_in; k++) {
    if (op_aliases(op_in(c, k), y)) {
      return op_fail(c, "output '%s' shares an input's buffer", y->name);
    }
  }
  return true;
}

/* A parameter tensor v (a normalisation's scale or bias) of n elements,
 * or of one that broadcasts: the workspace bytes its repetition takes
 * (the check reserves them), and the values a kernel reads -- v's own,
 * or its one value repeated n times (dtype d) at *ws, *ws moved past
 * them (the run). */
static inline size_t op_repeat_bytes(const mp_btensor *v, int64_t n, int d) {
  return v && op_count(v) != n ? (size_t)n * mp_kd_size(d) : 0;
}

static inline const void *op_repeat_one(const mp_btensor *v, const void *p,
                                        int64_t n, int d, unsigned char **ws) {
  if (!v || op_count(v) == n) return p;
  double x = mp_k_load(p, d, 0);
  unsigned char *out = *ws;
  for (int64_t i = 0; i < n; i++) mp_k_store(out, d, (size_t)i, x);
  *ws += op_repeat_bytes(v, n, d);
  return out;
}

/* ---- parameters ---------------------------------------------------------- */

typedef struct op_rd {
  const int64_t *p;
  uint32_t n, at;
  bool bad;
} op_rd;

static inline op_rd op_reader(const op_ctx *c) {
  op_rd r = {c->op->params, c->op->n_params, 0, false};
  return r;
}

static inline int64_t rd_i(op_rd *r) {
  if (r->at >= r->n) {
    r->bad = true;
    return 0;
  }
  return r->p[r->at++];
}

static inline double rd_f(op_rd *r) {
  int64_t v = rd_i(r);
  double d;
  memcpy(&d, &v, sizeof d);
  return d;
}

/* Reads an integer in [lo, hi]; out of range marks the reader bad. */
static inline int64_t rd_range(op_rd *r, int64_t lo, int64_t hi) {
  int64_t v = rd_i(r);
  if (v < lo || v > hi) r->bad = true;
  return v;
}

/* [outer, mid, inner] of shape s around axis; coerce: mid runs from axis
 * to the last dim (the 2-D view of opset < 13 Softmax and Hardmax). */
static inline void op_split3(const mp_kshape *s, int64_t axis, bool coerce,
                             int64_t *outer, int64_t *mid, int64_t *inner) {
  *outer = *mid = *inner = 1;
  for (uint32_t i = 0; i < s->rank; i++) {
    if ((int64_t)i < axis) {
      *outer *= s->dims[i];
    } else if ((int64_t)i == axis || coerce) {
      *mid *= s->dims[i];
    } else {
      *inner *= s->dims[i];
    }
  }
}

/* The ops of ops_index.c (index, layout and selection ops): check, or
 * run when run is set; false with c->why set on failure. handled is false
 * for a kernel id that is not theirs. */
bool op_index_dispatch(op_ctx *c, bool run, bool *handled);

/* The same for the ops of ops_stats.c (normalisations and losses). */
bool op_stats_dispatch(op_ctx *c, bool run, bool *handled);

/* The same for RMSNormalization, RotaryEmbedding and Attention
 * (ops_attn.c). */
bool op_attn_dispatch(op_ctx *c, bool run, bool *handled);

/* The same for Einsum and Det (ops_linalg.c). */
bool op_linalg_dispatch(op_ctx *c, bool run, bool *handled);

/* The same for the ops whose output shape depends on the data
 * (ops_select.c). */
bool op_select_dispatch(op_ctx *c, bool run, bool *handled);

/* The same for Loop and Scan (ops_loop.c). */
bool op_loop_dispatch(op_ctx *c, bool run, bool *handled);

/* The same for the optimizers of ai.onnx.preview.training
 * (ops_train.c). */
bool op_train_dispatch(op_ctx *c, bool run, bool *handled);

/* The same for the random ops (ops_train.c): RANDOM, and Dropout in
 * training mode through ix_run_dropout. */
bool op_random_dispatch(op_ctx *c, bool run, bool *handled);
/* The stream of this run of the op (k_random.c): from the seed parameters
 * at the reader's position (has_seed, seed), else from the op's name. */
bool op_random_key(op_ctx *c, op_rd *r, uint64_t *key);

#endif /* MPLAN_RUNTIME_OP_CTX_H */
