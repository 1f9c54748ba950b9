/*
 * mplan/base.h -- status codes, error messages, the caller-supplied
 * allocator and overflow-checked size arithmetic shared by every module.
 *
 * The error convention (used by every fallible function in mplan):
 *   - the function returns an mp_status; MP_OK is zero;
 *   - its last parameter is an `mp_error *err` (may be NULL) that receives a
 *     one-line message naming the file, the element and the problem;
 *   - out-parameters are written only on success.
 * The library never prints, exits or aborts on bad input.
 */
#ifndef MPLAN_BASE_H
#define MPLAN_BASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MP_VERSION "0.1.0"

typedef enum mp_status {
  MP_OK = 0,
  MP_ERR_BAD_INPUT,   /* malformed, inconsistent or out-of-range input */
  MP_ERR_NOMEM,       /* the allocator returned NULL */
  MP_ERR_IO,          /* a file could not be read or written */
  MP_ERR_UNSUPPORTED, /* valid input that this version cannot handle */
  MP_ERR_NO_FIT,      /* buffers do not fit the capacity they were given */
  MP_ERR_CHECK,       /* a validation or check found a violation */
  MP_ERR_INTERNAL     /* a broken invariant: a bug in mplan */
} mp_status;

#define MP_ERROR_MAX 1024

typedef struct mp_error {
  mp_status status;
  char msg[MP_ERROR_MAX];
} mp_error;

#if defined(__GNUC__) || defined(__clang__)
#define MP_PRINTF(f, a) __attribute__((format(printf, f, a)))
/* For invariant checkers that only assert() calls (unused with NDEBUG). */
#define MP_CHECKER __attribute__((unused))
#else
#define MP_PRINTF(f, a)
#define MP_CHECKER
#endif

/* Records status and a formatted message in err (when err is not NULL) and
 * returns status, so that callers can write `return mp_error_set(...)`. */
mp_status mp_error_set(mp_error *err, mp_status status, const char *fmt, ...)
    MP_PRINTF(3, 4);

/* Prepends "prefix: " to the message already in err (no-op when NULL). */
void mp_error_prefix(mp_error *err, const char *fmt, ...) MP_PRINTF(2, 3);

/* A short lowercase name of a status ("bad input", "out of memory"...). */
const char *mp_status_name(mp_status status);

/* ---- allocator ------------------------------------------------------------
 * One function in the style of Lua's lua_Alloc: fn(ud, NULL, n) allocates,
 * fn(ud, p, n) resizes, fn(ud, p, 0) frees and returns NULL. Every handle
 * remembers the allocator it was created with; NULL means the C library. */
typedef void *(*mp_alloc_fn)(void *ud, void *ptr, size_t size);

typedef struct mp_alloc {
  mp_alloc_fn fn;
  void *ud;
} mp_alloc;

/* The C library allocator (static, never NULL). */
const mp_alloc *mp_alloc_libc(void);

/* NULL a means the C library allocator. n == 0 returns NULL. */
void *mp_malloc(const mp_alloc *a, size_t n);
void *mp_realloc(const mp_alloc *a, void *p, size_t n);
void mp_free(const mp_alloc *a, void *p);

/* Allocates count * size zeroed bytes; NULL on overflow or exhaustion. */
void *mp_calloc(const mp_alloc *a, size_t count, size_t size);

/* Returns an owned copy of s (release with mp_free), or NULL. */
char *mp_strdup(const mp_alloc *a, const char *s);

/* The length of the longest prefix of s[0 .. len) that is valid UTF-8
 * (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF)
 * and holds no NUL byte; len when all of it is. Names from files must be
 * UTF-8: the JSON, HTML and SQLite reports carry them. */
size_t mp_utf8_prefix(const char *s, size_t len);

/* MP_OK when name s is valid UTF-8; else MP_ERR_BAD_INPUT with "WHAT
 * 'valid part' is not valid UTF-8 (byte 0xNN at offset K)". */
mp_status mp_utf8_name(const char *what, const char *s, mp_error *err);

/* Grows the array *ptr (element size elsize, capacity *cap) so that it
 * holds at least need elements; doubles to amortise. Sets an "out of
 * memory" error naming what on failure, leaving *ptr and *cap unchanged. */
mp_status mp_grow(const mp_alloc *a, void **ptr, size_t *cap, size_t need,
                  size_t elsize, const char *what, mp_error *err);

/* ---- checked arithmetic ---------------------------------------------------
 * Every size that comes from input goes through these. They return false on
 * overflow and then leave *out untouched. */
static inline bool mp_size_add(size_t a, size_t b, size_t *out) {
  size_t r;
  if (__builtin_add_overflow(a, b, &r)) return false;
  *out = r;
  return true;
}

static inline bool mp_size_mul(size_t a, size_t b, size_t *out) {
  size_t r;
  if (__builtin_mul_overflow(a, b, &r)) return false;
  *out = r;
  return true;
}

static inline bool mp_i64_mul(int64_t a, int64_t b, int64_t *out) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return false;
  *out = r;
  return true;
}

/* v truncated toward zero into int64, saturated at the ends of the range;
 * NaN gives INT64_MIN (the C conversion is undefined for both). */
static inline int64_t mp_f64_to_i64(double v) {
  if (v != v) return INT64_MIN;
  if (v >= 9223372036854775808.0) return INT64_MAX;
  if (v <= -9223372036854775808.0) return INT64_MIN;
  return (int64_t)v;
}

static inline bool mp_is_pow2(size_t v) {
  return v != 0 && (v & (v - 1)) == 0;
}

/* Rounds v up to a multiple of align (a power of two). */
static inline bool mp_align_up(size_t v, size_t align, size_t *out) {
  size_t r;
  if (!mp_size_add(v, align - 1, &r)) return false;
  *out = r & ~(align - 1);
  return true;
}

#endif /* MPLAN_BASE_H */
