/*
 * c_header_check.c -- re-proves a plan from its C header alone (mplan
 * plan --c-header) and prints its tables for test_c_header.sh to compare
 * with the plan JSON.
 *
 * Built by the test with -DMP_HEADER='"x.h"' -DMP_UP=X_ -DMP_LOW=x_ and
 * -std=c11 -Wall -Wextra -pedantic -Werror. Exit 0 and the tables on
 * stdout when:
 *   - every tensor lies inside its region, and the regions' bytes add up
 *     to the arena;
 *   - no two tensors of different buffers share a byte of one region at a
 *     common step (tensors of one buffer share bytes by design);
 *   - every tensor's own steps lie inside its buffer's;
 *   - every operand of a step is a tensor of the table (or PREFIX_NONE)
 *     whose own steps hold that step, and an output's start there: the
 *     op finds its inputs and output in place when it runs;
 *   - every attribute has a known kind;
 *   - a step's loop is -1 or a later step that runs a Loop or Scan;
 *   - the counts agree with the tables.
 * Exit 1 with the first violation on stderr otherwise.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include MP_HEADER

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define UP(x) CAT(MP_UP, x)
#define LOW(x) CAT(MP_LOW, x)

int main(void) {
  const struct LOW(tensor) *t = LOW(tensors)();
  const struct LOW(region) *r = LOW(regions)();
  const struct LOW(step) *steps = LOW(steps)();
  size_t n = UP(TENSOR_COUNT), nr = UP(REGION_COUNT), ns = UP(STEP_COUNT);
  uint64_t sum = 0;
  for (size_t k = 0; k < nr; k++) {
    sum += r[k].bytes;
    if (r[k].align == 0 || (r[k].align & (r[k].align - 1))) {
      fprintf(stderr, "region %s: alignment %" PRIu64 " is not a power of 2\n",
              r[k].name, r[k].align);
      return 1;
    }
    if (r[k].capacity && r[k].bytes > r[k].capacity) {
      fprintf(stderr, "region %s: %" PRIu64 " bytes past its capacity\n",
              r[k].name, r[k].bytes);
      return 1;
    }
  }
  if (sum != UP(ARENA_BYTES)) {
    fprintf(stderr, "regions hold %" PRIu64 " bytes, the arena %" PRIu64 "\n",
            sum, (uint64_t)UP(ARENA_BYTES));
    return 1;
  }
  for (size_t i = 0; i < n; i++) {
    if (t[i].region >= nr || t[i].buffer >= UP(BUFFER_COUNT) ||
        t[i].offset + t[i].bytes > r[t[i].region].bytes ||
        t[i].first_step > t[i].last_step || t[i].live_first < t[i].first_step ||
        t[i].live_last > t[i].last_step || t[i].live_first > t[i].live_last) {
      fprintf(stderr, "tensor %s: outside its region or steps\n", t[i].name);
      return 1;
    }
    for (size_t j = i + 1; j < n; j++) {
      if (t[i].buffer == t[j].buffer || t[i].region != t[j].region) continue;
      bool bytes = t[i].offset < t[j].offset + t[j].bytes &&
                   t[j].offset < t[i].offset + t[i].bytes;
      bool time = t[i].first_step <= t[j].last_step &&
                  t[j].first_step <= t[i].last_step;
      if (bytes && time) {
        fprintf(stderr, "tensors %s and %s share bytes at a common step\n",
                t[i].name, t[j].name);
        return 1;
      }
    }
    printf("tensor\t%zu\t%s\t%s\t%s\t%s\t%" PRIu32 "\t%" PRIu64 "\t%" PRIu64
           "\t%" PRId64 "\t%" PRId64 "\t%" PRId64 "\t%" PRId64 "\t%s\t",
           i, t[i].name, t[i].kind, t[i].dtype, r[t[i].region].name,
           t[i].buffer, t[i].offset, t[i].bytes, t[i].first_step,
           t[i].last_step, t[i].live_first, t[i].live_last, t[i].rule);
    for (uint32_t d = 0; d < t[i].rank; d++) {
      printf("%s%" PRId64, d ? "x" : "", t[i].shape[d]);
    }
    printf("\n");
  }
  for (size_t k = 0; k < nr; k++) {
    printf("region\t%zu\t%s\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\n", k,
           r[k].name, r[k].bytes, r[k].align, r[k].capacity);
  }
  for (size_t k = 0; k < ns; k++) {
    const struct LOW(step) *s = &steps[k];
    printf("step\t%zu\t%s\t%s\t", k, s->op, s->type);
    for (uint32_t i = 0; i < s->n_inputs + s->n_outputs; i++) {
      uint32_t x = i < s->n_inputs ? s->inputs[i] : s->outputs[i - s->n_inputs];
      if (x != UP(NONE) &&
          (x >= n || t[x].live_first > (int64_t)k ||
           t[x].live_last < (int64_t)k ||
           (i >= s->n_inputs && t[x].live_first != (int64_t)k))) {
        fprintf(stderr, "step %zu (%s): operand %" PRIu32 " is not live\n", k,
                s->op, x);
        return 1;
      }
      printf("%s%s%s", i == s->n_inputs ? "\t" : "",
             i && i != s->n_inputs ? "," : "", x == UP(NONE) ? "" : t[x].name);
    }
    if (s->loop != -1 && (s->loop <= (int64_t)k || s->loop >= (int64_t)ns ||
                          (strcmp(steps[s->loop].type, "Loop") != 0 &&
                           strcmp(steps[s->loop].type, "Scan") != 0))) {
      fprintf(stderr, "step %zu (%s): loop %" PRId64 " is no later Loop\n", k,
              s->op, s->loop);
      return 1;
    }
    printf("%s\t%" PRId64 "\n", s->n_outputs ? "" : "\t", s->loop);
    for (uint32_t a = 0; a < s->n_attrs; a++) {
      const struct LOW(attr) *x = &s->attrs[a];
      printf("attr\t%zu\t%s\t", k, x->name);
      switch (x->kind) {
        case UP(ATTR_INT):
          printf("%" PRId64 "\n", x->i);
          break;
        case UP(ATTR_FLOAT):
          printf("%.9g\n", x->f);
          break;
        case UP(ATTR_STRING):
          printf("'%s'\n", x->s);
          break;
        case UP(ATTR_INTS):
          printf("[");
          for (uint32_t j = 0; j < x->n; j++) {
            printf("%s%" PRId64, j ? ", " : "", x->ints[j]);
          }
          printf("]\n");
          break;
        case UP(ATTR_FLOATS):
          printf("[");
          for (uint32_t j = 0; j < x->n; j++) {
            printf("%s%.9g", j ? ", " : "", x->floats[j]);
          }
          printf("]\n");
          break;
        default:
          fprintf(stderr, "step %zu: attribute %s of kind %" PRIu32 "\n", k,
                  x->name, x->kind);
          return 1;
      }
    }
  }
  printf("arena\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\n",
         (uint64_t)UP(ARENA_BYTES), (uint64_t)UP(RESIDENT_BYTES),
         (uint64_t)UP(ACTIVATION_BYTES), (uint64_t)UP(LOWER_BOUND_BYTES));
  return 0;
}
