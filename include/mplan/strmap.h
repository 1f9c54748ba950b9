/*
 * mplan/strmap.h -- string-keyed hash map and string pool.
 *
 * mp_strmap maps NUL-terminated keys to int64 values. Keys are borrowed:
 * they must outlive the map (intern them in an mp_strpool first).
 * mp_strpool owns copies of strings in chunks that never move, so pointers
 * it returns stay valid until the pool is destroyed.
 */
#ifndef MPLAN_STRMAP_H
#define MPLAN_STRMAP_H

#include "mplan/base.h"

typedef struct mp_strmap mp_strmap;
typedef struct mp_strpool mp_strpool;

/* Returns an owned, empty map (release with mp_strmap_destroy). */
mp_status mp_strmap_create(const mp_alloc *a, mp_strmap **out, mp_error *err);
void mp_strmap_destroy(mp_strmap *m);

/* Inserts key -> value. When key is present already, leaves the map as it
 * is, stores the existing value in *existing (if not NULL) and returns
 * MP_ERR_BAD_INPUT without a message: the caller knows what a duplicate
 * means. Borrows key. */
mp_status mp_strmap_put(mp_strmap *m, const char *key, int64_t value,
                        int64_t *existing, mp_error *err);

/* true and *value when key is present. */
bool mp_strmap_get(const mp_strmap *m, const char *key, int64_t *value);

size_t mp_strmap_count(const mp_strmap *m);

/* Returns an owned pool (release with mp_strpool_destroy). */
mp_status mp_strpool_create(const mp_alloc *a, mp_strpool **out, mp_error *err);
void mp_strpool_destroy(mp_strpool *p);

/* Copies n bytes of s plus a NUL into the pool; the result is owned by the
 * pool. NULL when out of memory. */
const char *mp_strpool_add(mp_strpool *p, const char *s, size_t n);
const char *mp_strpool_cstr(mp_strpool *p, const char *s);

#endif /* MPLAN_STRMAP_H */
