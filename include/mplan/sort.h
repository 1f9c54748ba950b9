/*
 * mplan/sort.h -- a stable radix sort by 64-bit keys.
 */
#ifndef MPLAN_SORT_H
#define MPLAN_SORT_H

#include "mplan/base.h"

/* Sorts n records of size bytes at base (size 0: only the keys) stably by
 * key ascending, where key[i] is record i's key and moves with it. Uses
 * n * (size + 8) bytes of scratch from a; linear in n. */
mp_status mp_radix_sort(const mp_alloc *a, void *base, uint64_t *key, size_t n,
                        size_t size, mp_error *err);

/* The key that sorts signed values in their order. */
uint64_t mp_sort_key_i64(int64_t v);

#endif
