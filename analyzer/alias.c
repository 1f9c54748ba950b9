/*
 * alias.c -- the tensor -> buffer map: building it from parent links,
 * the identity, copies.
 *
 * Invariants:
 *   1. buffer_of[root[b]] == b, and root[b] is the smallest tensor index
 *      among b's members; buffers are numbered by ascending root, so the
 *      identity map is buffer i = tensor i.
 *   2. members[start[b] .. start[b+1]) lists exactly the tensors t with
 *      buffer_of[t] == b, in ascending order; start has n_buffers + 1
 *      entries and start[n_buffers] == n_tensors.
 *   3. rule[root[b]] is MP_ALIAS_OWN for every buffer, or MP_ALIAS_CONCAT
 *      when the root is a Concat slice (a slice is one whatever its
 *      index; any other rule only says what the tensor was written over).
 *   4. Every buffer has a member at offset 0 (offsets are relative to the
 *      buffer's lowest member).
 */
#include "mplan/alias.h"

#include <assert.h>
#include <string.h>

const char *mp_alias_rule_name(mp_alias_rule r) {
  switch (r) {
    case MP_ALIAS_OWN:
      return "own";
    case MP_ALIAS_VIEW:
      return "view";
    case MP_ALIAS_ELEMENTWISE:
      return "in place (elementwise)";
    case MP_ALIAS_DEPTHWISE:
      return "in place (depthwise)";
    case MP_ALIAS_EPILOGUE:
      return "in place (epilogue)";
    case MP_ALIAS_CONCAT:
      return "in place (concat slice)";
    case MP_ALIAS_ROW:
      return "in place (row-wise)";
    case MP_ALIAS_RULE_COUNT:
      break;
  }
  return "?";
}

void mp_alias_release(mp_alias *al) {
  if (!al) return;
  mp_free(al->alloc, al->buffer_of);
  mp_free(al->alloc, al->root);
  mp_free(al->alloc, al->start);
  mp_free(al->alloc, al->members);
  mp_free(al->alloc, al->rule);
  mp_free(al->alloc, al->offset);
  memset(al, 0, sizeof *al);
}

static mp_status alias_arrays(const mp_alloc *a, size_t n, mp_alias *al,
                              mp_error *err) {
  size_t m = n ? n : 1;
  memset(al, 0, sizeof *al);
  al->alloc = a;
  al->n_tensors = n;
  al->buffer_of = mp_calloc(a, m, sizeof *al->buffer_of);
  al->root = mp_calloc(a, m, sizeof *al->root);
  al->start = mp_calloc(a, m + 1, sizeof *al->start);
  al->members = mp_calloc(a, m, sizeof *al->members);
  al->rule = mp_calloc(a, m, sizeof *al->rule);
  al->offset = mp_calloc(a, m, sizeof *al->offset);
  if (!al->buffer_of || !al->root || !al->start || !al->members || !al->rule ||
      !al->offset) {
    mp_alias_release(al);
    return mp_error_set(err, MP_ERR_NOMEM, "alias map: out of memory");
  }
  return MP_OK;
}

/* Invariants 1-4 as a whole-map check, run inside assert(). */
MP_CHECKER static bool alias_check(const mp_alias *al) {
  if (al->start[al->n_buffers] != al->n_tensors) return false;
  for (size_t b = 0; b < al->n_buffers; b++) {
    bool zero = false;
    if (al->buffer_of[al->root[b]] != b) return false;
    if (b && al->root[b - 1] >= al->root[b]) return false;
    uint8_t r = al->rule[al->root[b]];
    if (r != MP_ALIAS_OWN && r != MP_ALIAS_CONCAT) return false;
    for (uint32_t k = al->start[b]; k < al->start[b + 1]; k++) {
      if (al->buffer_of[al->members[k]] != b) return false;
      if (k > al->start[b] && al->members[k - 1] >= al->members[k])
        return false;
      zero |= al->offset[al->members[k]] == 0;
    }
    if (!zero) return false;
  }
  return true;
}

/* Offsets (invariant 4): each tensor's first byte relative to the top of
 * its parent chain, summed along the chain (memoised in off[] with done[]
 * marking known ones), then shifted so that each buffer's lowest member
 * is at 0. */
static mp_status alias_offsets(mp_alias *al, const uint32_t *parent,
                               const int64_t *rel, mp_error *err) {
  size_t n = al->n_tensors;
  int64_t *off = mp_calloc(al->alloc, n + 1, sizeof *off);
  int64_t *low = mp_calloc(al->alloc, al->n_buffers + 1, sizeof *low);
  bool *done = mp_calloc(al->alloc, n + 1, sizeof *done);
  if (!off || !low || !done) {
    mp_free(al->alloc, off);
    mp_free(al->alloc, low);
    mp_free(al->alloc, done);
    return mp_error_set(err, MP_ERR_NOMEM, "alias map: out of memory");
  }
  for (size_t t = 0; t < n; t++) {
    /* Sum up to the first known tensor (or the top), then fill down. */
    int64_t sum = 0;
    size_t u = t;
    while (!done[u] && parent[u] != u) {
      sum += rel[u];
      u = parent[u];
    }
    int64_t base = done[u] ? off[u] : 0;
    if (!done[u]) done[u] = true, off[u] = 0;
    int64_t at = base + sum;
    for (size_t v = t; !done[v]; v = parent[v]) {
      off[v] = at;
      done[v] = true;
      at -= rel[v];
    }
  }
  for (size_t b = 0; b < al->n_buffers; b++) low[b] = INT64_MAX;
  for (size_t t = 0; t < n; t++) {
    size_t b = al->buffer_of[t];
    if (off[t] < low[b]) low[b] = off[t];
  }
  for (size_t t = 0; t < n; t++) {
    al->offset[t] = (uint64_t)(off[t] - low[al->buffer_of[t]]);
  }
  mp_free(al->alloc, off);
  mp_free(al->alloc, low);
  mp_free(al->alloc, done);
  return MP_OK;
}

/* Counting sort of tensors by buffer (invariant 2). */
static void alias_members(mp_alias *al) {
  for (size_t t = 0; t < al->n_tensors; t++) al->start[al->buffer_of[t] + 1]++;
  for (size_t b = 0; b < al->n_buffers; b++) al->start[b + 1] += al->start[b];
  for (size_t b = 0; b < al->n_buffers; b++) al->root[b] = al->start[b];
  /* root[] is borrowed as the fill cursor, then restored below. */
  for (size_t t = 0; t < al->n_tensors; t++) {
    al->members[al->root[al->buffer_of[t]]++] = (uint32_t)t;
  }
  for (size_t b = 0; b < al->n_buffers; b++) {
    al->root[b] = al->members[al->start[b]];
  }
}

mp_status mp_alias_build(const mp_alloc *a, size_t n_tensors,
                         const uint32_t *parent, const int64_t *rel,
                         const uint8_t *rule, mp_alias *out, mp_error *err) {
  mp_alias al;
  mp_status st = alias_arrays(a, n_tensors, &al, err);
  if (st != MP_OK) return st;
  /* The top of each parent chain, found with path compression into
   * buffer_of (used as scratch: top tensor + 1, 0 = not yet known). */
  for (size_t t = 0; t < n_tensors; t++) {
    size_t top = t, steps = 0;
    while (parent[top] != top && !al.buffer_of[top]) {
      top = parent[top];
      if (++steps > n_tensors) {
        mp_alias_release(&al);
        return mp_error_set(err, MP_ERR_INTERNAL,
                            "alias map: parent links form a cycle");
      }
    }
    uint32_t r = al.buffer_of[top] ? al.buffer_of[top] - 1 : (uint32_t)top;
    for (size_t u = t; u != top && !al.buffer_of[u]; u = parent[u]) {
      al.buffer_of[u] = r + 1;
    }
    al.buffer_of[top] = r + 1;
  }
  /* Buffers numbered by their smallest member (invariant 1): a tensor is
   * the first of its buffer exactly when no smaller tensor shares it. */
  uint32_t *first = al.root; /* per top tensor: buffer number + 1 */
  size_t nb = 0;
  for (size_t t = 0; t < n_tensors; t++) {
    uint32_t top = al.buffer_of[t] - 1;
    if (!first[top]) first[top] = (uint32_t)++nb;
    al.start[t] = first[top] - 1; /* scratch: buffer of t */
  }
  for (size_t t = 0; t < n_tensors; t++) {
    al.buffer_of[t] = al.start[t];
    al.rule[t] = rule ? rule[t] : MP_ALIAS_OWN;
  }
  al.n_buffers = nb;
  memset(al.start, 0, (n_tensors + 1) * sizeof *al.start);
  memset(al.root, 0, (n_tensors ? n_tensors : 1) * sizeof *al.root);
  alias_members(&al);
  for (size_t b = 0; b < nb; b++) {
    if (al.rule[al.root[b]] != MP_ALIAS_CONCAT) {
      al.rule[al.root[b]] = MP_ALIAS_OWN;
    }
  }
  if (rel) {
    st = alias_offsets(&al, parent, rel, err);
    if (st != MP_OK) {
      mp_alias_release(&al);
      return st;
    }
  }
  assert(alias_check(&al));
  *out = al;
  return MP_OK;
}

mp_status mp_alias_identity(const mp_alloc *a, size_t n_tensors, mp_alias *out,
                            mp_error *err) {
  mp_alias al;
  mp_status st = alias_arrays(a, n_tensors, &al, err);
  if (st != MP_OK) return st;
  for (size_t t = 0; t < n_tensors; t++) {
    al.buffer_of[t] = al.root[t] = al.members[t] = (uint32_t)t;
    al.start[t + 1] = (uint32_t)(t + 1);
  }
  al.n_buffers = n_tensors;
  *out = al;
  return MP_OK;
}

mp_status mp_alias_copy(const mp_alias *src, mp_alias *out, mp_error *err) {
  mp_alias al;
  size_t n = src->n_tensors;
  mp_status st = alias_arrays(src->alloc, n, &al, err);
  if (st != MP_OK) return st;
  al.n_buffers = src->n_buffers;
  if (n) {
    memcpy(al.buffer_of, src->buffer_of, n * sizeof *al.buffer_of);
    memcpy(al.members, src->members, n * sizeof *al.members);
    memcpy(al.rule, src->rule, n * sizeof *al.rule);
    memcpy(al.offset, src->offset, n * sizeof *al.offset);
  }
  if (src->n_buffers) {
    memcpy(al.root, src->root, src->n_buffers * sizeof *al.root);
  }
  memcpy(al.start, src->start, (src->n_buffers + 1) * sizeof *al.start);
  *out = al;
  return MP_OK;
}
