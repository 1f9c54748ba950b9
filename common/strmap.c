/*
 * strmap.c -- open-addressing string hash map and a chunked string pool.
 *
 * Invariants:
 *   1. The table size is a power of two and at most 3/4 full, so linear
 *      probing always finds an empty slot.
 *   2. Keys are never copied or freed by the map.
 *   3. Pool chunks never move; a string lives until the pool is destroyed.
 */
#include "mplan/strmap.h"

#include <string.h>

typedef struct strmap_slot {
  const char *key; /* NULL: empty */
  uint64_t hash;
  int64_t value;
} strmap_slot;

struct mp_strmap {
  const mp_alloc *alloc;
  strmap_slot *slots;
  size_t cap; /* power of two */
  size_t count;
};

/* FNV-1a: deterministic, so iteration-free users get stable behaviour. */
static uint64_t strmap_hash(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) {
    h ^= (unsigned char)*s;
    h *= 1099511628211ull;
  }
  return h;
}

mp_status mp_strmap_create(const mp_alloc *a, mp_strmap **out, mp_error *err) {
  mp_strmap *m = mp_calloc(a, 1, sizeof *m);
  if (!m) return mp_error_set(err, MP_ERR_NOMEM, "name table: out of memory");
  m->alloc = a;
  m->cap = 64;
  m->slots = mp_calloc(a, m->cap, sizeof *m->slots);
  if (!m->slots) {
    mp_free(a, m);
    return mp_error_set(err, MP_ERR_NOMEM, "name table: out of memory");
  }
  *out = m;
  return MP_OK;
}

void mp_strmap_destroy(mp_strmap *m) {
  if (!m) return;
  mp_free(m->alloc, m->slots);
  mp_free(m->alloc, m);
}

static strmap_slot *strmap_find(strmap_slot *slots, size_t cap, const char *key,
                                uint64_t h) {
  size_t i = (size_t)h & (cap - 1);
  while (slots[i].key) {
    if (slots[i].hash == h && strcmp(slots[i].key, key) == 0) return &slots[i];
    i = (i + 1) & (cap - 1);
  }
  return &slots[i];
}

static mp_status strmap_rehash(mp_strmap *m, mp_error *err) {
  size_t ncap;
  if (!mp_size_mul(m->cap, 2, &ncap)) {
    return mp_error_set(err, MP_ERR_NOMEM, "name table: too many names");
  }
  strmap_slot *ns = mp_calloc(m->alloc, ncap, sizeof *ns);
  if (!ns) return mp_error_set(err, MP_ERR_NOMEM, "name table: out of memory");
  for (size_t i = 0; i < m->cap; i++) {
    if (!m->slots[i].key) continue;
    *strmap_find(ns, ncap, m->slots[i].key, m->slots[i].hash) = m->slots[i];
  }
  mp_free(m->alloc, m->slots);
  m->slots = ns;
  m->cap = ncap;
  return MP_OK;
}

mp_status mp_strmap_put(mp_strmap *m, const char *key, int64_t value,
                        int64_t *existing, mp_error *err) {
  uint64_t h = strmap_hash(key);
  strmap_slot *s = strmap_find(m->slots, m->cap, key, h);
  if (s->key) {
    if (existing) *existing = s->value;
    return MP_ERR_BAD_INPUT;
  }
  if ((m->count + 1) * 4 > m->cap * 3) {
    mp_status st = strmap_rehash(m, err);
    if (st != MP_OK) return st;
    s = strmap_find(m->slots, m->cap, key, h);
  }
  s->key = key;
  s->hash = h;
  s->value = value;
  m->count++;
  return MP_OK;
}

bool mp_strmap_get(const mp_strmap *m, const char *key, int64_t *value) {
  strmap_slot *s = strmap_find(m->slots, m->cap, key, strmap_hash(key));
  if (!s->key) return false;
  if (value) *value = s->value;
  return true;
}

size_t mp_strmap_count(const mp_strmap *m) {
  return m->count;
}

/* ---- pool ---------------------------------------------------------------- */

typedef struct strpool_chunk {
  struct strpool_chunk *next;
  size_t used;
  size_t cap;
  char data[];
} strpool_chunk;

struct mp_strpool {
  const mp_alloc *alloc;
  strpool_chunk *head;
};

mp_status mp_strpool_create(const mp_alloc *a, mp_strpool **out,
                            mp_error *err) {
  mp_strpool *p = mp_calloc(a, 1, sizeof *p);
  if (!p) return mp_error_set(err, MP_ERR_NOMEM, "string pool: out of memory");
  p->alloc = a;
  *out = p;
  return MP_OK;
}

void mp_strpool_destroy(mp_strpool *p) {
  if (!p) return;
  strpool_chunk *c = p->head;
  while (c) {
    strpool_chunk *next = c->next;
    mp_free(p->alloc, c);
    c = next;
  }
  mp_free(p->alloc, p);
}

const char *mp_strpool_add(mp_strpool *p, const char *s, size_t n) {
  size_t need;
  if (!mp_size_add(n, 1, &need)) return NULL;
  strpool_chunk *c = p->head;
  if (!c || c->cap - c->used < need) {
    size_t cap = need > 16384 ? need : 16384;
    size_t bytes;
    if (!mp_size_add(sizeof *c, cap, &bytes)) return NULL;
    c = mp_malloc(p->alloc, bytes);
    if (!c) return NULL;
    c->next = p->head;
    c->used = 0;
    c->cap = cap;
    p->head = c;
  }
  char *d = c->data + c->used;
  memcpy(d, s, n);
  d[n] = '\0';
  c->used += need;
  return d;
}

const char *mp_strpool_cstr(mp_strpool *p, const char *s) {
  return mp_strpool_add(p, s, strlen(s));
}
