/*
 * gen_synthetic.c -- a seeded generator of large allocation problems in
 * minimalloc CSV form, shaped like an inference graph's activations: one
 * op per step produces one to three buffers; most die within a few steps,
 * about one in twenty is a skip connection living up to 64 steps, one in a
 * thousand lives 100 to 1,000 steps (a long branch), and one in ten
 * thousand a long stretch of the run (1,000 to 100,000 steps: an encoder
 * output kept for a decoder); sizes are log-uniform from 64 B to 1 MiB in
 * multiples of 64.
 *
 * usage: gen_synthetic N SEED > problem.csv
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static uint64_t gen_state;

static uint64_t gen_next(void) {
  gen_state ^= gen_state << 13;
  gen_state ^= gen_state >> 7;
  gen_state ^= gen_state << 17;
  return gen_state;
}

static uint64_t gen_below(uint64_t n) {
  return gen_next() % n;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: gen_synthetic N SEED\n");
    return 2;
  }
  long n = atol(argv[1]);
  gen_state = strtoull(argv[2], NULL, 10) * 0x9E3779B97F4A7C15ull + 1;
  printf("id,lower,upper,size\n");
  long step = 0;
  for (long i = 0; i < n;) {
    long outs = 1 + (long)gen_below(3);
    for (long k = 0; k < outs && i < n; k++, i++) {
      uint64_t r = gen_below(10000), life;
      if (r == 0) {
        life = 1000 + gen_below(100000);
      } else if (r < 10) {
        life = 100 + gen_below(900);
      } else if (r < 500) {
        life = 4 + gen_below(60);
      } else {
        life = 1 + gen_below(3);
      }
      /* log-uniform: 64 B .. 1 MiB */
      uint64_t size = (uint64_t)64 << gen_below(15);
      size += 64 * gen_below(size / 64);
      printf("b%ld,%ld,%ld,%llu\n", i, step, step + (long)life,
             (unsigned long long)size);
    }
    step++;
  }
  return 0;
}
