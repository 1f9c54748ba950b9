/*
 * sha256.c -- SHA-256 as specified in FIPS 180-4, section 6.2.
 *
 * Invariants:
 *   1. block holds fill < 64 bytes between calls; a full block is
 *      compressed as soon as it is complete.
 *   2. bytes counts every byte passed to update (the length appended by
 *      the padding is bytes * 8, modulo 2^64 as the standard allows).
 *   3. The result is independent of how the message is split into update
 *      calls (tested by hashing the FIPS vectors byte by byte).
 */
#include "mplan/sha256.h"

#include <string.h>

#include "mplan/file.h"

/* The first 32 bits of the fractional parts of the cube roots of the first
 * 64 primes (FIPS 180-4 section 4.2.2). */
static const uint32_t sha_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
    0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
    0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
    0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
    0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
    0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
    0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
    0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

static uint32_t sha_rotr(uint32_t x, unsigned n) {
  return (x >> n) | (x << (32 - n));
}

static void sha_compress(uint32_t h[8], const uint8_t *p) {
  uint32_t w[64];
  for (int t = 0; t < 16; t++) {
    w[t] = (uint32_t)p[4 * t] << 24 | (uint32_t)p[4 * t + 1] << 16 |
           (uint32_t)p[4 * t + 2] << 8 | (uint32_t)p[4 * t + 3];
  }
  for (int t = 16; t < 64; t++) {
    uint32_t s0 =
        sha_rotr(w[t - 15], 7) ^ sha_rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
    uint32_t s1 =
        sha_rotr(w[t - 2], 17) ^ sha_rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
    w[t] = w[t - 16] + s0 + w[t - 7] + s1;
  }
  uint32_t a = h[0], b = h[1], c = h[2], d = h[3];
  uint32_t e = h[4], f = h[5], g = h[6], k = h[7];
  for (int t = 0; t < 64; t++) {
    uint32_t s1 = sha_rotr(e, 6) ^ sha_rotr(e, 11) ^ sha_rotr(e, 25);
    uint32_t ch = (e & f) ^ (~e & g);
    uint32_t t1 = k + s1 + ch + sha_k[t] + w[t];
    uint32_t s0 = sha_rotr(a, 2) ^ sha_rotr(a, 13) ^ sha_rotr(a, 22);
    uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
    uint32_t t2 = s0 + maj;
    k = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  h[0] += a;
  h[1] += b;
  h[2] += c;
  h[3] += d;
  h[4] += e;
  h[5] += f;
  h[6] += g;
  h[7] += k;
}

void mp_sha256_init(mp_sha256 *s) {
  /* Fractional parts of the square roots of the first 8 primes. */
  static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372,
                                 0xa54ff53a, 0x510e527f, 0x9b05688c,
                                 0x1f83d9ab, 0x5be0cd19};
  memcpy(s->h, iv, sizeof iv);
  s->bytes = 0;
  s->fill = 0;
}

void mp_sha256_update(mp_sha256 *s, const void *data, size_t n) {
  const uint8_t *p = data;
  s->bytes += n;
  while (n > 0) {
    if (s->fill == 0 && n >= 64) {
      sha_compress(s->h, p); /* whole blocks straight from the input */
      p += 64;
      n -= 64;
      continue;
    }
    size_t take = 64 - s->fill < n ? 64 - s->fill : n;
    memcpy(s->block + s->fill, p, take);
    s->fill += take;
    p += take;
    n -= take;
    if (s->fill == 64) {
      sha_compress(s->h, s->block);
      s->fill = 0;
    }
  }
}

void mp_sha256_final(mp_sha256 *s, uint8_t digest[MP_SHA256_BYTES]) {
  uint64_t bits = s->bytes * 8;
  s->block[s->fill++] = 0x80;
  if (s->fill > 56) {
    memset(s->block + s->fill, 0, 64 - s->fill);
    sha_compress(s->h, s->block);
    s->fill = 0;
  }
  memset(s->block + s->fill, 0, 56 - s->fill);
  for (int i = 0; i < 8; i++)
    s->block[56 + i] = (uint8_t)(bits >> (56 - 8 * i));
  sha_compress(s->h, s->block);
  for (int i = 0; i < 8; i++) {
    digest[4 * i] = (uint8_t)(s->h[i] >> 24);
    digest[4 * i + 1] = (uint8_t)(s->h[i] >> 16);
    digest[4 * i + 2] = (uint8_t)(s->h[i] >> 8);
    digest[4 * i + 3] = (uint8_t)s->h[i];
  }
  s->fill = 0;
}

static void sha_to_hex(const uint8_t d[MP_SHA256_BYTES],
                       char hex[MP_SHA256_HEX]) {
  static const char digits[] = "0123456789abcdef";
  for (int i = 0; i < MP_SHA256_BYTES; i++) {
    hex[2 * i] = digits[d[i] >> 4];
    hex[2 * i + 1] = digits[d[i] & 15];
  }
  hex[64] = '\0';
}

void mp_sha256_hex(const void *data, size_t n, char hex[MP_SHA256_HEX]) {
  mp_sha256 s;
  uint8_t d[MP_SHA256_BYTES];
  mp_sha256_init(&s);
  mp_sha256_update(&s, data, n);
  mp_sha256_final(&s, d);
  sha_to_hex(d, hex);
}

mp_status mp_sha256_file(const char *path, const mp_alloc *a,
                         char hex[MP_SHA256_HEX], mp_error *err) {
  char *data = NULL;
  size_t len = 0;
  mp_status st = mp_file_read(path, a, &data, &len, err);
  if (st != MP_OK) return st;
  mp_sha256_hex(data, len, hex);
  mp_free(a, data);
  return MP_OK;
}
