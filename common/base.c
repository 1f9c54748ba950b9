/*
 * base.c -- error messages and the allocator indirection.
 *
 * Invariants:
 *   1. mp_error_set always leaves a NUL-terminated, single-line message:
 *      newlines in formatted arguments are replaced by spaces so that the
 *      CLI can promise one line per error.
 *   2. No allocation happens here except through the mp_alloc given.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mplan/base.h"

static void base_one_line(char *s) {
  for (; *s; s++) {
    if (*s == '\n' || *s == '\r' || *s == '\t') *s = ' ';
  }
}

mp_status mp_error_set(mp_error *err, mp_status status, const char *fmt, ...) {
  if (err) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    base_one_line(err->msg);
    err->status = status;
  }
  return status;
}

void mp_error_prefix(mp_error *err, const char *fmt, ...) {
  if (!err) return;
  char head[MP_ERROR_MAX];
  char old[MP_ERROR_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(head, sizeof head, fmt, ap);
  va_end(ap);
  memcpy(old, err->msg, sizeof old);
  /* Truncation is acceptable: the message stays one NUL-terminated line. */
  if (snprintf(err->msg, sizeof err->msg, "%s: %s", head, old) < 0) {
    err->msg[0] = '\0';
  }
  base_one_line(err->msg);
}

const char *mp_status_name(mp_status status) {
  switch (status) {
    case MP_OK:
      return "ok";
    case MP_ERR_BAD_INPUT:
      return "bad input";
    case MP_ERR_NOMEM:
      return "out of memory";
    case MP_ERR_IO:
      return "i/o error";
    case MP_ERR_UNSUPPORTED:
      return "unsupported";
    case MP_ERR_NO_FIT:
      return "does not fit";
    case MP_ERR_CHECK:
      return "check failed";
    case MP_ERR_INTERNAL:
      return "internal error";
  }
  return "unknown status";
}

static void *base_libc_fn(void *ud, void *ptr, size_t size) {
  (void)ud;
  if (size == 0) {
    free(ptr);
    return NULL;
  }
  return realloc(ptr, size);
}

static const mp_alloc base_libc = {base_libc_fn, NULL};

const mp_alloc *mp_alloc_libc(void) {
  return &base_libc;
}

void *mp_malloc(const mp_alloc *a, size_t n) {
  if (n == 0) return NULL;
  if (!a) a = &base_libc;
  return a->fn(a->ud, NULL, n);
}

void *mp_realloc(const mp_alloc *a, void *p, size_t n) {
  if (!a) a = &base_libc;
  if (n == 0) {
    a->fn(a->ud, p, 0);
    return NULL;
  }
  return a->fn(a->ud, p, n);
}

void mp_free(const mp_alloc *a, void *p) {
  if (!p) return;
  if (!a) a = &base_libc;
  a->fn(a->ud, p, 0);
}

void *mp_calloc(const mp_alloc *a, size_t count, size_t size) {
  size_t n;
  if (!mp_size_mul(count, size, &n) || n == 0) return NULL;
  void *p = mp_malloc(a, n);
  if (p) memset(p, 0, n);
  return p;
}

char *mp_strdup(const mp_alloc *a, const char *s) {
  size_t n = strlen(s) + 1;
  char *d = mp_malloc(a, n);
  if (d) memcpy(d, s, n);
  return d;
}

size_t mp_utf8_prefix(const char *s, size_t len) {
  const unsigned char *p = (const unsigned char *)s;
  size_t i = 0;
  while (i < len) {
    unsigned c = p[i];
    size_t n = c < 0x80                 ? 1
               : c >= 0xc2 && c <= 0xdf ? 2
               : c >= 0xe0 && c <= 0xef ? 3
               : c >= 0xf0 && c <= 0xf4 ? 4
                                        : 0;
    if (!n || !c || n > len - i) return i;
    /* the second byte's range excludes overlong forms, surrogates and
     * code points above U+10FFFF */
    unsigned lo = c == 0xe0 ? 0xa0 : c == 0xf0 ? 0x90 : 0x80;
    unsigned hi = c == 0xed ? 0x9f : c == 0xf4 ? 0x8f : 0xbf;
    for (size_t k = 1; k < n; k++) {
      unsigned b = p[i + k];
      if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xbf)) return i;
    }
    i += n;
  }
  return i;
}

mp_status mp_utf8_name(const char *what, const char *s, mp_error *err) {
  size_t k = mp_utf8_prefix(s, strlen(s));
  if (!s[k]) return MP_OK;
  return mp_error_set(
      err, MP_ERR_BAD_INPUT,
      "%s '%.*s' is not valid UTF-8 (byte 0x%02x at offset %zu)", what, (int)k,
      s, (unsigned char)s[k], k);
}

mp_status mp_grow(const mp_alloc *a, void **ptr, size_t *cap, size_t need,
                  size_t elsize, const char *what, mp_error *err) {
  if (need <= *cap) return MP_OK;
  size_t ncap = *cap ? *cap : 8;
  while (ncap < need) {
    if (!mp_size_mul(ncap, 2, &ncap)) {
      ncap = need;
      break;
    }
  }
  size_t bytes;
  if (!mp_size_mul(ncap, elsize, &bytes)) {
    return mp_error_set(err, MP_ERR_NOMEM, "%s: %zu elements overflow memory",
                        what, need);
  }
  void *p = mp_realloc(a, *ptr, bytes);
  if (!p) {
    return mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory (%zu bytes)",
                        what, bytes);
  }
  *ptr = p;
  *cap = ncap;
  return MP_OK;
}
