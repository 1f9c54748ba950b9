#define _POSIX_C_SOURCE 200809L
/*
 * test_common.c -- units, checked arithmetic, text buffers, name tables,
 * errors and atomic file writes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "mplan/buf.h"
#include "mplan/file.h"
#include "mplan/sha256.h"
#include "mplan/sort.h"
#include "mplan/strmap.h"
#include "mplan/units.h"

static void test_parse_size(void) {
  size_t v = 0;
  mp_error err = {0};
  CHECK(mp_parse_size("123", &v, &err) == MP_OK);
  CHECK_EQ_U(v, 123);
  CHECK(mp_parse_size("64KiB", &v, &err) == MP_OK);
  CHECK_EQ_U(v, 65536);
  CHECK(mp_parse_size("1.5MiB", &v, &err) == MP_OK);
  CHECK_EQ_U(v, 1572864);
  CHECK(mp_parse_size("512KB", &v, &err) == MP_OK);
  CHECK_EQ_U(v, 512000);
  CHECK(mp_parse_size("2G", &v, &err) == MP_OK);
  CHECK_EQ_U(v, 2147483648ull);
  CHECK(mp_parse_size("0.5B", &v, &err) == MP_ERR_BAD_INPUT);
  CHECK_HAS(err.msg, "whole number");
  CHECK(mp_parse_size("12 KiB", &v, &err) == MP_ERR_BAD_INPUT);
  CHECK(mp_parse_size("-1", &v, &err) == MP_ERR_BAD_INPUT);
  CHECK(mp_parse_size("", &v, &err) == MP_ERR_BAD_INPUT);
  CHECK(mp_parse_size("99999999999999999999", &v, &err) == MP_ERR_BAD_INPUT);
  CHECK_HAS(err.msg, "too large");
  CHECK(mp_parse_size("17179869184GiB", &v, &err) == MP_ERR_BAD_INPUT);
}

static void test_format(void) {
  char b[MP_FMT_MAX];
  CHECK_STR(mp_fmt_count(b, 0), "0");
  CHECK_STR(mp_fmt_count(b, 999), "999");
  CHECK_STR(mp_fmt_count(b, 1000), "1,000");
  CHECK_STR(mp_fmt_count(b, 1505280), "1,505,280");
  CHECK_STR(mp_fmt_count(b, UINT64_MAX), "18,446,744,073,709,551,615");
  CHECK_STR(mp_fmt_human(b, 512), "512 B");
  CHECK_STR(mp_fmt_human(b, 1505280), "1.44 MiB");
  CHECK_STR(mp_fmt_bytes(b, 20480), "20,480 B (20.00 KiB)");
  CHECK_STR(mp_fmt_bytes(b, 12), "12 B");
  CHECK_STR(mp_fmt_bytes(b, UINT64_MAX),
            "18,446,744,073,709,551,615 B (16.00 EiB)");
}

static void test_arith(void) {
  size_t r = 7;
  CHECK(!mp_size_add(SIZE_MAX, 1, &r));
  CHECK_EQ_U(r, 7); /* untouched on overflow */
  CHECK(!mp_size_mul(SIZE_MAX / 2 + 1, 2, &r));
  CHECK(mp_align_up(17, 16, &r) && r == 32);
  CHECK(mp_align_up(32, 16, &r) && r == 32);
  CHECK(!mp_align_up(SIZE_MAX - 3, 16, &r));
  CHECK(mp_is_pow2(1) && mp_is_pow2(64) && !mp_is_pow2(0) && !mp_is_pow2(48));
  int64_t i;
  CHECK(!mp_i64_mul(INT64_MAX / 2 + 1, 2, &i));
  CHECK(mp_parse_i64("-42", &i) && i == -42);
  CHECK(!mp_parse_i64("9223372036854775808", &i));
  CHECK(mp_parse_i64("-9223372036854775808", &i) && i == INT64_MIN);
  CHECK(!mp_parse_i64("4x", &i));
}

static void test_buf_and_errors(void) {
  mp_buf b;
  mp_error err = {0};
  mp_buf_init(&b, NULL);
  CHECK_STR(mp_buf_str(&b), "");
  for (int k = 0; k < 1000; k++) mp_buf_printf(&b, "%d,", k);
  CHECK(b.len == 3890);
  CHECK(mp_buf_status(&b, "x", &err) == MP_OK);
  mp_buf_free(&b);
  CHECK(mp_error_set(&err, MP_ERR_BAD_INPUT, "a\nb %d", 5) == MP_ERR_BAD_INPUT);
  CHECK_STR(err.msg, "a b 5"); /* always one line */
  mp_error_prefix(&err, "file.json");
  CHECK_STR(err.msg, "file.json: a b 5");
}

static void test_strmap(void) {
  mp_strmap *m;
  mp_strpool *p;
  mp_error err = {0};
  int64_t v = 0;
  CHECK(mp_strmap_create(NULL, &m, &err) == MP_OK);
  CHECK(mp_strpool_create(NULL, &p, &err) == MP_OK);
  for (int k = 0; k < 5000; k++) {
    char name[32];
    snprintf(name, sizeof name, "t%d", k);
    CHECK(mp_strmap_put(m, mp_strpool_cstr(p, name), k, NULL, &err) == MP_OK);
  }
  CHECK_EQ_U(mp_strmap_count(m), 5000);
  CHECK(mp_strmap_get(m, "t4321", &v) && v == 4321);
  CHECK(!mp_strmap_get(m, "t5000", &v));
  CHECK(mp_strmap_put(m, "t17", 99, &v, &err) == MP_ERR_BAD_INPUT && v == 17);
  mp_strmap_destroy(m);
  mp_strpool_destroy(p);
  mp_strmap_destroy(NULL); /* destroy(NULL) is a no-op */
  mp_strpool_destroy(NULL);
}

static void test_file(void) {
  char path[] = "/tmp/mplan_test_XXXXXX";
  int fd = mkstemp(path);
  mp_error err = {0};
  char *data = NULL;
  size_t len = 0;
  CHECK(fd >= 0);
  close(fd);
  CHECK(mp_file_write(path, "hello\n", 6, &err) == MP_OK);
  CHECK(mp_file_read(path, NULL, &data, &len, &err) == MP_OK);
  CHECK_EQ_U(len, 6);
  CHECK_STR(data, "hello\n");
  free(data);
  remove(path);
  CHECK(mp_file_read(path, NULL, &data, &len, &err) == MP_ERR_IO);
  CHECK_HAS(err.msg, path);
  CHECK(mp_file_write("/nonexistent-dir/x.json", "x", 1, &err) == MP_ERR_IO);
  CHECK_HAS(err.msg, "/nonexistent-dir/x.json");
}

/* FIPS 180-2 appendix B examples (and the empty message), whole and fed
 * one byte at a time, and the million-'a' message in uneven chunks. */
static void test_sha256(void) {
  static const struct {
    const char *msg, *hex;
  } v[] = {
      {"abc",
       "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
      {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
      {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
       "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
      {"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmn"
       "opjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
       "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"},
  };
  char hex[MP_SHA256_HEX];
  for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
    mp_sha256_hex(v[i].msg, strlen(v[i].msg), hex);
    CHECK_STR(hex, v[i].hex);
    mp_sha256 s;
    uint8_t d[MP_SHA256_BYTES];
    mp_sha256_init(&s);
    for (size_t k = 0; v[i].msg[k]; k++) mp_sha256_update(&s, v[i].msg + k, 1);
    mp_sha256_final(&s, d);
    char bytewise[MP_SHA256_HEX];
    for (int j = 0; j < MP_SHA256_BYTES; j++) {
      snprintf(bytewise + 2 * j, 3, "%02x", d[j]);
    }
    CHECK_STR(bytewise, v[i].hex);
  }
  static char million[1000000];
  memset(million, 'a', sizeof million);
  mp_sha256 s;
  uint8_t d[MP_SHA256_BYTES];
  mp_sha256_init(&s);
  for (size_t off = 0, step = 1; off < sizeof million; step = step * 3 % 997) {
    size_t n =
        sizeof million - off < step + 1 ? sizeof million - off : step + 1;
    mp_sha256_update(&s, million + off, n);
    off += n;
  }
  mp_sha256_final(&s, d);
  char got[MP_SHA256_HEX];
  for (int i = 0; i < MP_SHA256_BYTES; i++) {
    snprintf(got + 2 * i, 3, "%02x", d[i]);
  }
  CHECK_STR(got,
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  /* A file hashes like its bytes; a missing file names itself. */
  char path[] = "/tmp/mplan_sha_XXXXXX";
  int fd = mkstemp(path);
  mp_error err = {0};
  CHECK(fd >= 0);
  close(fd);
  CHECK(mp_file_write(path, "abc", 3, &err) == MP_OK);
  CHECK(mp_sha256_file(path, NULL, hex, &err) == MP_OK);
  CHECK_STR(hex, v[0].hex);
  remove(path);
  CHECK(mp_sha256_file(path, NULL, hex, &err) == MP_ERR_IO);
  CHECK_HAS(err.msg, path);
}

/* mp_utf8_prefix: the valid prefix's length, on the edges of RFC 3629. */
static void test_utf8(void) {
  static const struct {
    const char *s;
    size_t len, want;
  } cases[] = {
      {"plain", 5, 5},
      {"gr\xc3\xb6\xc3\x9f"
       "e",
       7, 7},                     /* U+00F6 U+00DF */
      {"\xe5\x8d\xb7", 3, 3},     /* U+5377 */
      {"\xf0\x9f\x98\x80", 4, 4}, /* U+1F600 */
      {"\xf4\x8f\xbf\xbf", 4, 4}, /* U+10FFFF, the last */
      {"\xed\x9f\xbf", 3, 3},     /* U+D7FF, before surrogates */
      {"ab\xff", 3, 2},           /* never a UTF-8 byte */
      {"\xc0\x80", 2, 0},         /* overlong NUL */
      {"\xc1\xbf", 2, 0},         /* overlong 2-byte */
      {"\xe0\x9f\xbf", 3, 0},     /* overlong 3-byte */
      {"\xf0\x8f\xbf\xbf", 4, 0}, /* overlong 4-byte */
      {"\xed\xa0\x80", 3, 0},     /* surrogate U+D800 */
      {"\xf4\x90\x80\x80", 4, 0}, /* above U+10FFFF */
      {"\xf5\x80\x80\x80", 4, 0}, /* lead byte beyond 0xf4 */
      {"x\xe5\x8d", 3, 1},        /* cut short by the length */
      {"x\xe5\x8dy", 4, 1},       /* continuation missing */
      {"a\x80", 2, 1},            /* a stray continuation */
      {"a\0b", 3, 1},             /* NUL inside the length */
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    size_t got = mp_utf8_prefix(cases[i].s, cases[i].len);
    if (got != cases[i].want) fprintf(stderr, "utf8 case %zu\n", i);
    CHECK_EQ_U(got, cases[i].want);
  }
}

/* mp_radix_sort against a comparison sort: ascending by key, stable,
 * records moved with their keys, signed keys through mp_sort_key_i64. */
typedef struct sort_rec {
  int64_t v;
  uint32_t seq;
} sort_rec;

static int sort_rec_cmp(const void *a, const void *b) {
  const sort_rec *x = a, *y = b;
  if (x->v != y->v) return x->v < y->v ? -1 : 1;
  return (x->seq > y->seq) - (x->seq < y->seq);
}

static void test_radix_sort(void) {
  uint64_t s = 88172645463325252ull;
  for (size_t round = 0; round < 40; round++) {
    size_t n = round * 97 % 3001;
    sort_rec *r = calloc(n + 1, sizeof *r), *want = calloc(n + 1, sizeof *r);
    uint64_t *key = calloc(n + 1, sizeof *key);
    uint64_t *only = calloc(n + 1, sizeof *only);
    for (size_t i = 0; i < n; i++) {
      s ^= s << 13, s ^= s >> 7, s ^= s << 17;
      /* few distinct values (ties), negatives, and now and then huge ones */
      int64_t v = (int64_t)(s % 50) - 25;
      if (round % 3 == 0) v = (int64_t)s;
      r[i] = want[i] = (sort_rec){v, (uint32_t)i};
      key[i] = only[i] = mp_sort_key_i64(v);
    }
    qsort(want, n, sizeof *want, sort_rec_cmp);
    CHECK(mp_radix_sort(NULL, r, key, n, sizeof *r, NULL) == MP_OK);
    CHECK(mp_radix_sort(NULL, NULL, only, n, 0, NULL) == MP_OK);
    size_t same = 0;
    for (size_t i = 0; i < n; i++) {
      same += r[i].v == want[i].v && r[i].seq == want[i].seq &&
              key[i] == mp_sort_key_i64(want[i].v) &&
              only[i] == mp_sort_key_i64(want[i].v);
    }
    CHECK_EQ_U(same, n);
    free(r), free(want), free(key), free(only);
  }
}

/* mp_text_pad: the field width that pads to terminal columns. */
static void test_text_pad(void) {
  CHECK_EQ_I(mp_text_pad("abc", 28), 28);
  CHECK_EQ_I(mp_text_pad("gr\xc3\xb6\xc3\x9f"
                         "e",
                         10),
             12);                                              /* 5 cols, 7 B */
  CHECK_EQ_I(mp_text_pad("\xe5\x8d\xb7\xe7\xa7\xaf", 10), 12); /* 4 cols */
  CHECK_EQ_I(mp_text_pad("\xf0\x9f\x98\x80x", 6), 8);          /* 3 cols, 5 B */
  CHECK_EQ_I(mp_text_pad("abcdef", 4), 6);                     /* never cut */
  CHECK_EQ_I(mp_text_pad("\xe5\x8d\xb7\xe7\xa7\xaf", 3), 6);
  CHECK_EQ_I(mp_text_pad("", 5), 5);
}

int main(void) {
  test_text_pad();
  test_radix_sort();
  test_utf8();
  test_parse_size();
  test_format();
  test_arith();
  test_buf_and_errors();
  test_strmap();
  test_file();
  test_sha256();
  return check_exit("test_common");
}
