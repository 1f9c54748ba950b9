/*
 * mplan/units.h -- parsing and printing byte counts and integers.
 *
 * Printing rule of the project: bytes are shown exactly with thousands
 * separators, followed by a binary-prefixed approximation when >= 1 KiB:
 * "1,505,280 B (1.44 MiB)".
 */
#ifndef MPLAN_UNITS_H
#define MPLAN_UNITS_H

#include "mplan/base.h"

#define MP_FMT_MAX 64

/* Parses "123", "64KiB", "1.5MiB", "2GiB", "512B", "64K", "1M" (binary
 * multiples) and "64KB", "1MB" (decimal multiples). Fractions must come to
 * a whole number of bytes. Errors name the text. */
mp_status mp_parse_size(const char *text, size_t *out, mp_error *err);

/* Strict decimal integer: optional sign, digits, nothing else. */
bool mp_parse_i64(const char *text, int64_t *out);

/* "1,505,280". Returns buf (at least MP_FMT_MAX bytes). */
char *mp_fmt_count(char *buf, uint64_t v);

/* The printf field width ("%-*s") that pads UTF-8 text s to width
 * terminal columns: a code point takes one column, an East Asian wide or
 * fullwidth one or an emoji two. Names longer than width are not cut. */
int mp_text_pad(const char *s, int width);

/* "1.44 MiB", "512 B". Returns buf. */
char *mp_fmt_human(char *buf, uint64_t v);

/* "1,505,280 B (1.44 MiB)" or "512 B". Returns buf. */
char *mp_fmt_bytes(char *buf, uint64_t v);

#endif /* MPLAN_UNITS_H */
