/*
 * sort.c -- a stable LSD radix sort for the planner's large sorts (events,
 * time coordinates, placement orders), which qsort's comparator calls made
 * the largest part of planning a million buffers.
 *
 * Invariants:
 *   1. Stable: records with equal keys keep their order, so a sort by a
 *      secondary key followed by one by the primary key sorts by both.
 *   2. A pass per key byte, skipped when every key has the same byte
 *      there (time steps and sizes rarely use the high bytes).
 */
#include <string.h>

#include "mplan/sort.h"

mp_status mp_radix_sort(const mp_alloc *a, void *base, uint64_t *key, size_t n,
                        size_t size, mp_error *err) {
  if (n < 2) return MP_OK;
  size_t bytes = 0;
  uint64_t *tkey =
      mp_size_mul(n, sizeof *tkey, &bytes) ? mp_malloc(a, bytes) : NULL;
  unsigned char *trec =
      size && mp_size_mul(n, size, &bytes) ? mp_malloc(a, bytes) : NULL;
  if (!tkey || (size && !trec)) {
    mp_free(a, tkey);
    mp_free(a, trec);
    return mp_error_set(err, MP_ERR_NOMEM, "sort: out of memory");
  }
  uint64_t *k0 = key, *k1 = tkey;
  unsigned char *r0 = base, *r1 = trec;
  for (unsigned shift = 0; shift < 64; shift += 8) {
    size_t count[256] = {0};
    for (size_t i = 0; i < n; i++) count[(k0[i] >> shift) & 0xff]++;
    if (count[(k0[0] >> shift) & 0xff] == n) continue; /* invariant 2 */
    size_t at = 0;
    for (size_t b = 0; b < 256; b++) {
      size_t c = count[b];
      count[b] = at;
      at += c;
    }
    for (size_t i = 0; i < n; i++) {
      size_t j = count[(k0[i] >> shift) & 0xff]++;
      k1[j] = k0[i];
      if (size) memcpy(r1 + size * j, r0 + size * i, size);
    }
    uint64_t *tk = k0;
    k0 = k1, k1 = tk;
    unsigned char *tr = r0;
    r0 = r1, r1 = tr;
  }
  if (k0 != key) {
    memcpy(key, k0, n * sizeof *key);
    if (size) memcpy(base, r0, n * size);
  }
  mp_free(a, tkey);
  mp_free(a, trec);
  return MP_OK;
}

uint64_t mp_sort_key_i64(int64_t v) {
  return (uint64_t)v ^ ((uint64_t)1 << 63);
}
