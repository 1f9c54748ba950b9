/*
 * check.h -- minimal test macros: each failed check prints file:line, the
 * expression and both values, counts the failure and carries on; a test
 * program returns check_exit() (1 when anything failed).
 */
#ifndef MPLAN_TEST_CHECK_H
#define MPLAN_TEST_CHECK_H

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static int check_failures;
static int check_count;

#define CHECK(cond)                                                            \
  do {                                                                         \
    check_count++;                                                             \
    if (!(cond)) {                                                             \
      check_failures++;                                                        \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                          \
  } while (0)

#define CHECK_EQ_U(a, b)                                                   \
  do {                                                                     \
    unsigned long long check_a = (unsigned long long)(a);                  \
    unsigned long long check_b = (unsigned long long)(b);                  \
    check_count++;                                                         \
    if (check_a != check_b) {                                              \
      check_failures++;                                                    \
      fprintf(stderr, "%s:%d: CHECK_EQ failed: %s == %s (%llu vs %llu)\n", \
              __FILE__, __LINE__, #a, #b, check_a, check_b);               \
    }                                                                      \
  } while (0)

#define CHECK_EQ_I(a, b)                                                   \
  do {                                                                     \
    long long check_a = (long long)(a);                                    \
    long long check_b = (long long)(b);                                    \
    check_count++;                                                         \
    if (check_a != check_b) {                                              \
      check_failures++;                                                    \
      fprintf(stderr, "%s:%d: CHECK_EQ failed: %s == %s (%lld vs %lld)\n", \
              __FILE__, __LINE__, #a, #b, check_a, check_b);               \
    }                                                                      \
  } while (0)

#define CHECK_STR(a, b)                                                 \
  do {                                                                  \
    const char *check_a = (a), *check_b = (b);                          \
    check_count++;                                                      \
    if (!check_a || !check_b || strcmp(check_a, check_b) != 0) {        \
      check_failures++;                                                 \
      fprintf(stderr,                                                   \
              "%s:%d: CHECK_STR failed: %s == %s (\"%s\" vs \"%s\")\n", \
              __FILE__, __LINE__, #a, #b, check_a ? check_a : "(null)", \
              check_b ? check_b : "(null)");                            \
    }                                                                   \
  } while (0)

/* The message contains the substring. */
#define CHECK_HAS(msg, sub)                                               \
  do {                                                                    \
    const char *check_m = (msg), *check_s = (sub);                        \
    check_count++;                                                        \
    if (!check_m || !strstr(check_m, check_s)) {                          \
      check_failures++;                                                   \
      fprintf(stderr, "%s:%d: CHECK_HAS failed: \"%s\" lacks \"%s\"\n",   \
              __FILE__, __LINE__, check_m ? check_m : "(null)", check_s); \
    }                                                                     \
  } while (0)

static inline int check_exit(const char *name) {
  fprintf(stderr, "%s: %d checks, %d failed\n", name, check_count,
          check_failures);
  return check_failures ? 1 : 0;
}

#endif /* MPLAN_TEST_CHECK_H */
