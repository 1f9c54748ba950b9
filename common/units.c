/*
 * units.c -- byte-count parsing and formatting.
 *
 * Invariants:
 *   1. Parsing never overflows: every multiply is checked.
 *   2. Formatting writes at most MP_FMT_MAX bytes including the NUL.
 */
#include "mplan/units.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

typedef struct units_suffix {
  const char *name;
  uint64_t mult;
} units_suffix;

static const units_suffix units_suffixes[] = {
    {"", 1},
    {"B", 1},
    {"K", 1024ull},
    {"KiB", 1024ull},
    {"KB", 1000ull},
    {"kB", 1000ull},
    {"M", 1024ull * 1024},
    {"MiB", 1024ull * 1024},
    {"MB", 1000ull * 1000},
    {"G", 1024ull * 1024 * 1024},
    {"GiB", 1024ull * 1024 * 1024},
    {"GB", 1000ull * 1000 * 1000},
};

bool mp_parse_i64(const char *text, int64_t *out) {
  const char *s = text;
  bool neg = false;
  if (*s == '+' || *s == '-') neg = *s++ == '-';
  if (!isdigit((unsigned char)*s)) return false;
  int64_t v = 0;
  for (; isdigit((unsigned char)*s); s++) {
    int d = *s - '0';
    if (!mp_i64_mul(v, 10, &v) || __builtin_add_overflow(v, neg ? -d : d, &v))
      return false;
  }
  if (*s) return false;
  *out = v;
  return true;
}

mp_status mp_parse_size(const char *text, size_t *out, mp_error *err) {
  const char *s = text;
  uint64_t whole = 0, frac = 0, frac_div = 1;
  if (!isdigit((unsigned char)*s)) goto bad;
  for (; isdigit((unsigned char)*s); s++) {
    if (__builtin_mul_overflow(whole, 10, &whole) ||
        __builtin_add_overflow(whole, (uint64_t)(*s - '0'), &whole))
      goto overflow;
  }
  if (*s == '.') {
    s++;
    if (!isdigit((unsigned char)*s)) goto bad;
    for (; isdigit((unsigned char)*s); s++) {
      if (frac_div >= 1000000000ull) goto bad; /* 9 decimals is plenty */
      frac = frac * 10 + (uint64_t)(*s - '0');
      frac_div *= 10;
    }
  }
  for (size_t i = 0; i < sizeof units_suffixes / sizeof *units_suffixes; i++) {
    if (strcmp(s, units_suffixes[i].name) != 0) continue;
    uint64_t m = units_suffixes[i].mult, v, fv;
    if (__builtin_mul_overflow(whole, m, &v)) goto overflow;
    if (__builtin_mul_overflow(frac, m, &fv)) goto overflow;
    if (fv % frac_div != 0) {
      return mp_error_set(err, MP_ERR_BAD_INPUT,
                          "size '%s' is not a whole number of bytes", text);
    }
    if (__builtin_add_overflow(v, fv / frac_div, &v)) goto overflow;
    if (v > SIZE_MAX) goto overflow;
    *out = (size_t)v;
    return MP_OK;
  }
bad:
  return mp_error_set(err, MP_ERR_BAD_INPUT,
                      "size '%s' is not a byte count (examples: 4096, 64KiB, "
                      "1.5MiB)",
                      text);
overflow:
  return mp_error_set(err, MP_ERR_BAD_INPUT, "size '%s' is too large", text);
}

char *mp_fmt_count(char *buf, uint64_t v) {
  char digits[32];
  int n = snprintf(digits, sizeof digits, "%llu", (unsigned long long)v);
  size_t o = 0;
  for (int i = 0; i < n; i++) {
    if (i > 0 && (n - i) % 3 == 0) buf[o++] = ',';
    buf[o++] = digits[i];
  }
  buf[o] = '\0';
  return buf;
}

char *mp_fmt_human(char *buf, uint64_t v) {
  static const char *const units[] = {"B",   "KiB", "MiB", "GiB",
                                      "TiB", "PiB", "EiB"};
  if (v < 1024) {
    snprintf(buf, 32, "%llu B", (unsigned long long)v);
    return buf;
  }
  double d = (double)v;
  size_t u = 0;
  while (d >= 1024.0 && u + 1 < sizeof units / sizeof *units) {
    d /= 1024.0;
    u++;
  }
  snprintf(buf, 32, "%.2f %s", d, units[u]);
  return buf;
}

char *mp_fmt_bytes(char *buf, uint64_t v) {
  /* The longest result, "18,446,744,073,709,551,615 B (16.00 EiB)", is 41
   * characters: well inside MP_FMT_MAX. */
  char c[32], h[32];
  mp_fmt_count(c, v);
  if (v < 1024) {
    snprintf(buf, MP_FMT_MAX, "%.26s B", c);
  } else {
    mp_fmt_human(h, v);
    snprintf(buf, MP_FMT_MAX, "%.26s B (%.16s)", c, h);
  }
  return buf;
}

/* Columns a code point takes: two for East Asian wide and fullwidth forms
 * (Hangul Jamo, CJK, Hangul syllables, compatibility ideographs, forms)
 * and emoji, else one. */
static int units_columns(uint32_t c) {
  static const uint32_t wide[][2] = {
      {0x1100, 0x115f},   {0x2e80, 0x303e},   {0x3041, 0x33ff},
      {0x3400, 0x4dbf},   {0x4e00, 0x9fff},   {0xa000, 0xa4cf},
      {0xac00, 0xd7a3},   {0xf900, 0xfaff},   {0xfe30, 0xfe4f},
      {0xff00, 0xff60},   {0xffe0, 0xffe6},   {0x1f300, 0x1f64f},
      {0x1f900, 0x1f9ff}, {0x20000, 0x3fffd},
  };
  for (size_t k = 0; k < sizeof wide / sizeof *wide; k++) {
    if (c >= wide[k][0] && c <= wide[k][1]) return 2;
  }
  return 1;
}

int mp_text_pad(const char *s, int width) {
  const unsigned char *p = (const unsigned char *)s;
  int bytes = 0, cols = 0;
  while (p[bytes]) {
    unsigned char b = p[bytes];
    int n = b < 0x80 ? 1 : b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
    uint32_t c = n == 1 ? b : b & (0x7f >> n);
    for (int k = 1; k < n && p[bytes + k]; k++) {
      c = c << 6 | (p[bytes + k] & 0x3f);
    }
    for (int k = 0; k < n && p[bytes]; k++) bytes++;
    cols += units_columns(c);
  }
  return cols >= width ? bytes : width + (bytes - cols);
}
