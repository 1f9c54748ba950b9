/*
 * mplan/sha256.h -- SHA-256 (FIPS 180-4) for fingerprinting model files.
 *
 * No dependency on the list provides a hash, so mplan carries its own; it
 * is checked against the FIPS 180 example vectors in tests/test_common.c.
 * Streaming: init, update any number of times, final.
 */
#ifndef MPLAN_SHA256_H
#define MPLAN_SHA256_H

#include "mplan/base.h"

#define MP_SHA256_BYTES 32
#define MP_SHA256_HEX 65 /* 64 hex digits and a NUL */

typedef struct mp_sha256 {
  uint32_t h[8];
  uint64_t bytes; /* message length so far */
  uint8_t block[64];
  size_t fill; /* bytes waiting in block */
} mp_sha256;

void mp_sha256_init(mp_sha256 *s);
void mp_sha256_update(mp_sha256 *s, const void *data, size_t n);
void mp_sha256_final(mp_sha256 *s, uint8_t digest[MP_SHA256_BYTES]);

/* The digest of data[0..n) as 64 lowercase hex digits and a NUL. */
void mp_sha256_hex(const void *data, size_t n, char hex[MP_SHA256_HEX]);

/* Hashes the whole file at path into hex. Borrows a for the read. */
mp_status mp_sha256_file(const char *path, const mp_alloc *a,
                         char hex[MP_SHA256_HEX], mp_error *err);

#endif /* MPLAN_SHA256_H */
