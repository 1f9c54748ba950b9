/*
 * mplan/buf.h -- a growable text buffer for rendering reports.
 *
 * Appends never fail loudly: the first allocation failure sets `failed`,
 * later appends are ignored, and mp_buf_status() reports it once at the end.
 * This keeps rendering code linear (no status check after every line).
 */
#ifndef MPLAN_BUF_H
#define MPLAN_BUF_H

#include <stdarg.h>

#include "mplan/base.h"

typedef struct mp_buf {
  const mp_alloc *alloc;
  char *data; /* NUL-terminated when len > 0 */
  size_t len;
  size_t cap;
  bool failed;
} mp_buf;

/* Initialises an empty buffer that borrows a (NULL: C library). */
void mp_buf_init(mp_buf *b, const mp_alloc *a);

/* Releases the buffer's memory; the buffer is empty and reusable after. */
void mp_buf_free(mp_buf *b);

void mp_buf_append(mp_buf *b, const char *s, size_t n);
void mp_buf_puts(mp_buf *b, const char *s);
void mp_buf_printf(mp_buf *b, const char *fmt, ...) MP_PRINTF(2, 3);
void mp_buf_vprintf(mp_buf *b, const char *fmt, va_list ap);

/* Appends c n times. */
void mp_buf_repeat(mp_buf *b, char c, size_t n);

/* The text so far ("" when empty); borrowed, valid until the next append. */
const char *mp_buf_str(const mp_buf *b);

/* MP_ERR_NOMEM (with a message naming what) if any append failed. */
mp_status mp_buf_status(const mp_buf *b, const char *what, mp_error *err);

#endif /* MPLAN_BUF_H */
