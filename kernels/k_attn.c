/*
 * k_attn.c -- the transformer ops of opsets 23 and 24: RMSNormalization,
 * RotaryEmbedding, Attention and TensorScatter, on f32 or f64 tensors (d;
 * TensorScatter moves elements of any size).
 *
 * Invariants:
 *   1. Sums (squares, dot products, the softmax's exponentials and the
 *      weighted values) accumulate in double in a fixed order; every
 *      output element is rounded once to its dtype.
 *   2. Indices arrive checked (runtime/ops_attn.c fails the op otherwise):
 *      RotaryEmbedding's position ids are in [0, the cache's rows),
 *      Attention's nonpad_kv_seqlen in [0, past + kv_seq], TensorScatter's
 *      write indices leave room for the update (linear) or lie in the
 *      cache (circular).
 *   3. RMSNormalization, RotaryEmbedding and TensorScatter may run in
 *      place (y == x): the first two read a row (or a pair of elements)
 *      before writing it; TensorScatter then only writes the update's
 *      rows. Attention writes out of place; its scratch is one row of
 *      scores.
 */
#include <math.h>
#include <string.h>

#include "mplan/kernels.h"

void mp_k_rmsnorm(int d, int64_t outer, int64_t inner, const void *x,
                  const void *scale, double eps, void *y) {
  for (int64_t r = 0; r < outer; r++) {
    size_t base = (size_t)(r * inner);
    double ss = 0;
    for (int64_t i = 0; i < inner; i++) {
      double v = mp_k_load(x, d, base + (size_t)i);
      ss += v * v;
    }
    double inv = 1 / sqrt(ss / (double)inner + eps);
    for (int64_t i = 0; i < inner; i++) {
      double v = mp_k_load(x, d, base + (size_t)i) * inv;
      mp_k_store(y, d, base + (size_t)i, v * mp_k_load(scale, d, (size_t)i));
    }
  }
}

void mp_k_rotary(int d, const mp_krope *p, const void *x, const void *cos_c,
                 const void *sin_c, const int64_t *pos, void *y) {
  int64_t half = p->rot / 2;
  for (int64_t b = 0; b < p->batch; b++) {
    for (int64_t s = 0; s < p->seq; s++) {
      /* the cache row of this position: a position id's row of a
       * [rows, half] cache, or row (b, s) of a [batch, seq, half] one */
      int64_t row = pos ? pos[b * p->seq + s] : b * p->seq + s;
      size_t c0 = (size_t)(row * half);
      for (int64_t h = 0; h < p->heads; h++) {
        size_t at = (size_t)(b * p->sb + s * p->ss + h * p->sh);
        for (int64_t i = 0; i < half; i++) {
          size_t i1 = at + (size_t)(p->interleaved ? 2 * i : i);
          size_t i2 = at + (size_t)(p->interleaved ? 2 * i + 1 : i + half);
          double x1 = mp_k_load(x, d, i1), x2 = mp_k_load(x, d, i2);
          double co = mp_k_load(cos_c, d, c0 + (size_t)i);
          double si = mp_k_load(sin_c, d, c0 + (size_t)i);
          mp_k_store(y, d, i1, co * x1 - si * x2);
          mp_k_store(y, d, i2, si * x1 + co * x2);
        }
        if (y != x) {
          for (int64_t i = p->rot; i < p->head; i++) {
            mp_k_store(y, d, at + (size_t)i, mp_k_load(x, d, at + (size_t)i));
          }
        }
      }
    }
  }
}

/* The key (or value) row j of head kvh of batch b: the past cache's
 * rows first, then the new ones. */
static size_t at_kv(const mp_kattn *p, const int64_t *st, int64_t b,
                    int64_t kvh, int64_t j, int64_t dim, bool *past) {
  *past = j < p->past;
  if (*past) return (size_t)(((b * p->kv_heads + kvh) * p->past + j) * dim);
  return (size_t)(b * st[0] + kvh * st[1] + (j - p->past) * st[2]);
}

double mp_k_attention_bias(int d, const mp_kattn *p, const void *mask,
                           int64_t b, int64_t h, int64_t i, int64_t j) {
  if (p->nonpad && j >= p->nonpad[b]) return -INFINITY;
  int64_t off = p->nonpad && !p->past ? p->nonpad[b] - p->q_seq : p->past;
  if (p->causal && j > i + off) return -INFINITY;
  if (p->mask_kind == MP_KATTN_MASK_NONE) return 0;
  if (j >= p->mask_len) return -INFINITY; /* a mask shorter than the keys */
  size_t m = (size_t)(b * p->m_st[0] + h * p->m_st[1] + i * p->m_st[2] +
                      j * p->m_st[3]);
  if (p->mask_kind == MP_KATTN_MASK_BOOL) {
    return ((const unsigned char *)mask)[m] ? 0 : -INFINITY;
  }
  return mp_k_load(mask, d, m);
}

void mp_k_attention(int d, const mp_kattn *p, const void *q, const void *k,
                    const void *v, const void *mask, const void *past_k,
                    const void *past_v, void *y, void *qk, double *row) {
  int64_t total = p->past + p->kv_seq, reps = p->q_heads / p->kv_heads;
  for (int64_t b = 0; b < p->batch; b++) {
    for (int64_t h = 0; h < p->q_heads; h++) {
      int64_t kvh = h / reps;
      for (int64_t i = 0; i < p->q_seq; i++) {
        size_t qa = (size_t)(b * p->q_st[0] + h * p->q_st[1] + i * p->q_st[2]);
        size_t qka = (size_t)(((b * p->q_heads + h) * p->q_seq + i) * total);
        double mx = -INFINITY;
        for (int64_t j = 0; j < total; j++) {
          bool past;
          size_t ka = at_kv(p, p->k_st, b, kvh, j, p->head, &past);
          const void *kt = past ? past_k : k;
          double s = 0;
          for (int64_t e = 0; e < p->head; e++) {
            s += mp_k_load(q, d, qa + (size_t)e) *
                 mp_k_load(kt, d, ka + (size_t)e);
          }
          s *= p->scale;
          if (p->softcap > 0) s = p->softcap * tanh(s / p->softcap);
          if (qk && p->qk_mode == 0) mp_k_store(qk, d, qka + (size_t)j, s);
          row[j] = s + mp_k_attention_bias(d, p, mask, b, h, i, j);
          if (row[j] > mx) mx = row[j];
        }
        double sum = 0;
        for (int64_t j = 0; j < total; j++) {
          row[j] = exp(row[j] - mx);
          sum += row[j];
        }
        for (int64_t j = 0; j < total; j++) {
          row[j] /= sum;
          if (qk && p->qk_mode == 3) mp_k_store(qk, d, qka + (size_t)j, row[j]);
        }
        size_t ya = (size_t)(b * p->y_st[0] + h * p->y_st[1] + i * p->y_st[2]);
        for (int64_t e = 0; e < p->v_head; e++) {
          double acc = 0;
          for (int64_t j = 0; j < total; j++) {
            bool past;
            size_t va = at_kv(p, p->v_st, b, kvh, j, p->v_head, &past);
            acc += row[j] * mp_k_load(past ? past_v : v, d, va + (size_t)e);
          }
          mp_k_store(y, d, ya + (size_t)e, acc);
        }
      }
    }
  }
}

void mp_k_tensor_scatter(size_t es, int64_t batch, int64_t pre, int64_t rows,
                         int64_t seq, int64_t inner, bool circular,
                         const int64_t *w, const void *past, const void *update,
                         void *y) {
  size_t row = (size_t)inner * es;
  if (y != past) memmove(y, past, (size_t)(batch * pre * rows) * row);
  for (int64_t b = 0; b < batch; b++) {
    int64_t at = w ? w[b] : 0;
    for (int64_t q = 0; q < pre; q++) {
      for (int64_t s = 0; s < seq; s++) {
        int64_t r = circular ? (at + s) % rows : at + s;
        memcpy((char *)y + (size_t)((b * pre + q) * rows + r) * row,
               (const char *)update + (size_t)((b * pre + q) * seq + s) * row,
               row);
      }
    }
  }
}

void mp_k_attention_present(int d, const mp_kattn *p, bool value,
                            const void *past, const void *x, void *out) {
  int64_t dim = value ? p->v_head : p->head, total = p->past + p->kv_seq;
  const int64_t *st = value ? p->v_st : p->k_st;
  for (int64_t b = 0; b < p->batch; b++) {
    for (int64_t h = 0; h < p->kv_heads; h++) {
      for (int64_t j = 0; j < total; j++) {
        bool from_past;
        size_t a = at_kv(p, st, b, h, j, dim, &from_past);
        size_t o = (size_t)(((b * p->kv_heads + h) * total + j) * dim);
        for (int64_t e = 0; e < dim; e++) {
          mp_k_store(out, d, o + (size_t)e,
                     mp_k_load(from_past ? past : x, d, a + (size_t)e));
        }
      }
    }
  }
}
