/*
 * c_header_run.c -- a runtime of its own that knows a model only through
 * its C header (mplan plan --c-header): it allocates each region once at
 * its alignment, runs the steps in order with f32 elementwise kernels on
 * the offsets of the tables, and compares every graph output, bit for
 * bit, with a run in which each tensor has memory of its own. A plan that
 * let a tensor overwrite one still to be read would show here.
 *
 * Built by test_c_header.sh with -DMP_HEADER='"x.h"' -DMP_UP=X_
 * -DMP_LOW=x_. Supports Relu, Neg, Abs, Add, Sub and Mul on tensors of
 * one shape. Exit 0: every output identical; 1: one differs; 2: an op
 * or operand it cannot run.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include MP_HEADER

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define UP(x) CAT(MP_UP, x)
#define LOW(x) CAT(MP_LOW, x)

/* One op of step s on the float arrays in[] into out (n elements). */
static int run_op(const char *type, const float *a, const float *b, float *y,
                  size_t n) {
  for (size_t i = 0; i < n; i++) {
    float v;
    if (strcmp(type, "Relu") == 0) {
      v = a[i] > 0 ? a[i] : 0;
    } else if (strcmp(type, "Neg") == 0) {
      v = -a[i];
    } else if (strcmp(type, "Abs") == 0) {
      v = a[i] < 0 ? -a[i] : a[i];
    } else if (b && strcmp(type, "Add") == 0) {
      v = a[i] + b[i];
    } else if (b && strcmp(type, "Sub") == 0) {
      v = a[i] - b[i];
    } else if (b && strcmp(type, "Mul") == 0) {
      v = a[i] * b[i];
    } else {
      return 0;
    }
    y[i] = v;
  }
  return 1;
}

/* Runs every step with ptr[t] the bytes of tensor t. */
static int run_all(float *const *ptr) {
  const struct LOW(tensor) *t = LOW(tensors)();
  const struct LOW(step) *s = LOW(steps)();
  for (size_t k = 0; k < UP(STEP_COUNT); k++) {
    if (s[k].n_outputs != 1 || s[k].n_inputs < 1 || s[k].n_inputs > 2) {
      fprintf(stderr, "step %zu (%s): not an elementwise op\n", k, s[k].op);
      return 2;
    }
    const float *b = s[k].n_inputs == 2 ? ptr[s[k].inputs[1]] : NULL;
    if (!run_op(s[k].type, ptr[s[k].inputs[0]], b, ptr[s[k].outputs[0]],
                t[s[k].outputs[0]].bytes / sizeof(float))) {
      fprintf(stderr, "step %zu: no kernel for %s\n", k, s[k].type);
      return 2;
    }
  }
  return 0;
}

int main(void) {
  const struct LOW(tensor) *t = LOW(tensors)();
  const struct LOW(region) *r = LOW(regions)();
  size_t n = UP(TENSOR_COUNT);
  unsigned char *base[UP(REGION_COUNT)];
  float *planned[UP(TENSOR_COUNT)], *own[UP(TENSOR_COUNT)];
  for (size_t k = 0; k < UP(REGION_COUNT); k++) {
    size_t a = (size_t)r[k].align, bytes = (size_t)r[k].bytes;
    base[k] = aligned_alloc(a, (bytes + a - 1) / a * a + a);
    if (!base[k]) return 2;
    memset(base[k], 0xA5, (size_t)r[k].bytes); /* poison */
  }
  uint32_t seed = 12345;
  for (size_t i = 0; i < n; i++) {
    planned[i] = (float *)(void *)(base[t[i].region] + t[i].offset);
    own[i] = malloc((size_t)t[i].bytes);
    if (!own[i]) return 2;
    memset(own[i], 0x5A, (size_t)t[i].bytes);
    if (strcmp(t[i].kind, "input") == 0 || strcmp(t[i].kind, "weight") == 0) {
      for (size_t e = 0; e < t[i].bytes / sizeof(float); e++) {
        seed = seed * 1664525u + 1013904223u;
        own[i][e] = (float)((int32_t)(seed >> 8) % 2001 - 1000) / 256.0f;
      }
      memcpy(planned[i], own[i], (size_t)t[i].bytes);
    }
  }
  int rc = run_all(own);
  if (!rc) rc = run_all(planned);
  size_t outputs = 0;
  for (size_t i = 0; !rc && i < n; i++) {
    if (strcmp(t[i].kind, "output") != 0) continue;
    outputs++;
    if (memcmp(planned[i], own[i], (size_t)t[i].bytes) != 0) {
      printf("output %s differs from the run without reuse\n", t[i].name);
      rc = 1;
    }
  }
  if (!rc) {
    printf("%zu steps, %zu outputs identical to the run without reuse\n",
           (size_t)UP(STEP_COUNT), outputs);
  }
  for (size_t i = 0; i < n; i++) free(own[i]);
  for (size_t k = 0; k < UP(REGION_COUNT); k++) free(base[k]);
  return rc;
}
