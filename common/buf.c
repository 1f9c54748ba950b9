/*
 * buf.c -- growable text buffer.
 *
 * Invariants:
 *   1. data[len] == '\0' whenever data != NULL.
 *   2. Once failed is set, the content is frozen (no partial appends).
 */
#include "mplan/buf.h"

#include <stdio.h>
#include <string.h>

void mp_buf_init(mp_buf *b, const mp_alloc *a) {
  b->alloc = a;
  b->data = NULL;
  b->len = 0;
  b->cap = 0;
  b->failed = false;
}

void mp_buf_free(mp_buf *b) {
  mp_free(b->alloc, b->data);
  mp_buf_init(b, b->alloc);
}

static bool buf_reserve(mp_buf *b, size_t extra) {
  size_t need;
  if (b->failed) return false;
  if (!mp_size_add(b->len, extra, &need) || !mp_size_add(need, 1, &need)) {
    b->failed = true;
    return false;
  }
  void *p = b->data;
  if (mp_grow(b->alloc, &p, &b->cap, need, 1, "text", NULL) != MP_OK) {
    b->failed = true;
    return false;
  }
  b->data = p;
  return true;
}

void mp_buf_append(mp_buf *b, const char *s, size_t n) {
  if (!buf_reserve(b, n)) return;
  memcpy(b->data + b->len, s, n);
  b->len += n;
  b->data[b->len] = '\0';
}

void mp_buf_puts(mp_buf *b, const char *s) {
  mp_buf_append(b, s, strlen(s));
}

void mp_buf_vprintf(mp_buf *b, const char *fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  if (n < 0) {
    b->failed = true;
    return;
  }
  if (!buf_reserve(b, (size_t)n)) return;
  vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
  b->len += (size_t)n;
}

void mp_buf_printf(mp_buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  mp_buf_vprintf(b, fmt, ap);
  va_end(ap);
}

void mp_buf_repeat(mp_buf *b, char c, size_t n) {
  if (!buf_reserve(b, n)) return;
  memset(b->data + b->len, c, n);
  b->len += n;
  b->data[b->len] = '\0';
}

const char *mp_buf_str(const mp_buf *b) {
  return b->data ? b->data : "";
}

mp_status mp_buf_status(const mp_buf *b, const char *what, mp_error *err) {
  if (!b->failed) return MP_OK;
  return mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory", what);
}
