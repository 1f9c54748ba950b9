/*
 * kv_move.c -- RVV data movement: memmove, Concat/Split blocks,
 * Transpose, Pad (constant mode), with the scalar kernels' signatures
 * (mplan/kernels_rvv.h).
 *
 * LMUL 8 throughout: a copy keeps one value live (load, store), so the
 * largest register group moves the most bytes per instruction and
 * register pressure does not arise (seed 000 section 4).
 *
 * Invariants:
 *   1. Bytes are moved, never converted: every kernel gives the scalar
 *      kernel's bytes exactly.
 *   2. mp_kv_memmove copies backwards when the destination starts inside
 *      the source, so overlapping moves are safe as with memmove.
 */
#include <riscv_vector.h>
#include <string.h>

#include "mplan/kernels_rvv.h"

bool mp_kv_move_vector(size_t es) {
  return es == 1 || es == 2 || es == 4 || es == 8;
}

void mp_kv_memmove(void *dst, const void *src, size_t n) {
  unsigned char *d = dst;
  const unsigned char *s = src;
  if (d == s || n == 0) return;
  if (d < s || d >= s + n) {
    for (size_t i = 0; i < n;) {
      size_t vl = __riscv_vsetvl_e8m8(n - i);
      __riscv_vse8_v_u8m8(d + i, __riscv_vle8_v_u8m8(s + i, vl), vl);
      i += vl;
    }
    return;
  }
  for (size_t left = n; left > 0;) {
    size_t vl = __riscv_vsetvl_e8m8(left);
    left -= vl;
    __riscv_vse8_v_u8m8(d + left, __riscv_vle8_v_u8m8(s + left, vl), vl);
  }
}

void mp_kv_copy_block(size_t es, int64_t outer, int64_t inner, const void *src,
                      int64_t src_len, int64_t src_off, void *dst,
                      int64_t dst_len, int64_t dst_off, int64_t len) {
  const char *s = src;
  char *d = dst;
  size_t row = (size_t)(len * inner) * es;
  for (int64_t o = 0; o < outer; o++) {
    mp_kv_memmove(d + (size_t)((o * dst_len + dst_off) * inner) * es,
                  s + (size_t)((o * src_len + src_off) * inner) * es, row);
  }
}

/* n elements of es bytes from src at a stride of st bytes to dst. */
static void kv_strided(void *dst, const void *src, ptrdiff_t st, size_t es,
                       size_t n) {
  for (size_t i = 0; i < n;) {
    const char *s = (const char *)src + (ptrdiff_t)i * st;
    char *d = (char *)dst + i * es;
    size_t vl;
    if (es == 1) {
      vl = __riscv_vsetvl_e8m8(n - i);
      __riscv_vse8_v_u8m8((uint8_t *)d,
                          __riscv_vlse8_v_u8m8((const uint8_t *)s, st, vl), vl);
    } else if (es == 2) {
      vl = __riscv_vsetvl_e16m8(n - i);
      __riscv_vse16_v_u16m8((uint16_t *)d,
                            __riscv_vlse16_v_u16m8((const uint16_t *)s, st, vl),
                            vl);
    } else if (es == 4) {
      vl = __riscv_vsetvl_e32m8(n - i);
      __riscv_vse32_v_u32m8((uint32_t *)d,
                            __riscv_vlse32_v_u32m8((const uint32_t *)s, st, vl),
                            vl);
    } else {
      vl = __riscv_vsetvl_e64m8(n - i);
      __riscv_vse64_v_u64m8((uint64_t *)d,
                            __riscv_vlse64_v_u64m8((const uint64_t *)s, st, vl),
                            vl);
    }
    i += vl;
  }
}

/* n copies of the es-byte value at dst. */
static void kv_fill(void *dst, const void *value, size_t es, size_t n) {
  uint64_t v = 0;
  memcpy(&v, value, es);
  for (size_t i = 0; i < n;) {
    char *d = (char *)dst + i * es;
    size_t vl;
    if (es == 1) {
      vl = __riscv_vsetvl_e8m8(n - i);
      __riscv_vse8_v_u8m8((uint8_t *)d, __riscv_vmv_v_x_u8m8((uint8_t)v, vl),
                          vl);
    } else if (es == 2) {
      vl = __riscv_vsetvl_e16m8(n - i);
      __riscv_vse16_v_u16m8((uint16_t *)d,
                            __riscv_vmv_v_x_u16m8((uint16_t)v, vl), vl);
    } else if (es == 4) {
      vl = __riscv_vsetvl_e32m8(n - i);
      __riscv_vse32_v_u32m8((uint32_t *)d,
                            __riscv_vmv_v_x_u32m8((uint32_t)v, vl), vl);
    } else {
      vl = __riscv_vsetvl_e64m8(n - i);
      __riscv_vse64_v_u64m8((uint64_t *)d, __riscv_vmv_v_x_u64m8(v, vl), vl);
    }
    i += vl;
  }
}

void mp_kv_transpose(size_t es, const mp_kshape *xs, const uint32_t *perm,
                     const void *x, void *y) {
  if (!mp_kv_move_vector(es) || xs->rank == 0) {
    mp_k_transpose(es, xs, perm, x, y);
    return;
  }
  int64_t xst[MP_K_MAX_RANK], st[MP_K_MAX_RANK], dims[MP_K_MAX_RANK];
  int64_t idx[MP_K_MAX_RANK] = {0};
  mp_kshape_strides(xs, xst);
  uint32_t r = xs->rank;
  for (uint32_t i = 0; i < r; i++) {
    dims[i] = xs->dims[perm[i]];
    st[i] = xst[perm[i]];
  }
  int64_t n = mp_kshape_count(xs), inner = dims[r - 1], off = 0;
  if (n == 0) return;
  const char *px = x;
  char *py = y;
  for (int64_t i = 0; i < n; i += inner) {
    const char *src = px + (size_t)off * es;
    if (st[r - 1] == 1) {
      mp_kv_memmove(py + (size_t)i * es, src, (size_t)inner * es);
    } else {
      kv_strided(py + (size_t)i * es, src, (ptrdiff_t)(st[r - 1] * (int64_t)es),
                 es, (size_t)inner);
    }
    for (uint32_t d = r - 1; d-- > 0;) {
      off += st[d];
      if (++idx[d] < dims[d]) break;
      off -= st[d] * dims[d];
      idx[d] = 0;
    }
  }
}

void mp_kv_pad(size_t es, const mp_kshape *xs, const mp_kshape *ys,
               const int64_t *pad_begin, mp_kpad_mode mode, const void *value,
               const void *x, void *y) {
  if (mode != MP_KPAD_CONSTANT || !mp_kv_move_vector(es) || ys->rank == 0) {
    mp_k_pad(es, xs, ys, pad_begin, mode, value, x, y);
    return;
  }
  int64_t xst[MP_K_MAX_RANK], idx[MP_K_MAX_RANK] = {0};
  mp_kshape_strides(xs, xst);
  uint32_t r = ys->rank;
  int64_t n = mp_kshape_count(ys), w = ys->dims[r - 1], in = xs->dims[r - 1];
  int64_t pb = pad_begin[r - 1];
  /* output columns [c0, c1) read x columns [c0 - pb, c1 - pb) */
  int64_t c0 = pb > 0 ? pb : 0, c1 = pb + in < w ? pb + in : w;
  if (c1 < c0) c1 = c0;
  char *py = y;
  for (int64_t i = 0; n > 0 && i < n; i += w) {
    int64_t off = 0;
    bool inside = true;
    for (uint32_t d = 0; d + 1 < r; d++) {
      int64_t s = idx[d] - pad_begin[d];
      if (s < 0 || s >= xs->dims[d]) inside = false;
      off += s * xst[d];
    }
    char *row = py + (size_t)i * es;
    if (!inside) {
      kv_fill(row, value, es, (size_t)w);
    } else {
      kv_fill(row, value, es, (size_t)c0);
      mp_kv_memmove(row + (size_t)c0 * es,
                    (const char *)x + (size_t)(off + c0 - pb) * es,
                    (size_t)(c1 - c0) * es);
      kv_fill(row + (size_t)c1 * es, value, es, (size_t)(w - c1));
    }
    for (uint32_t d = r - 1; d-- > 0;) {
      if (++idx[d] < ys->dims[d]) break;
      idx[d] = 0;
    }
  }
}
