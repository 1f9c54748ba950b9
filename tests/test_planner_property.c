/*
 * test_planner_property.c -- every strategy on many random problems with
 * random sizes, intervals, alignments, pins, regions and banks.
 *
 * For each problem and strategy: the plan is valid (mp_plan_solve runs the
 * independent validator on every plan; a failure there is an error here),
 * pins sit at their pins, every region stays within its capacity, the
 * activation arena is at least the lower bound, and -- with one unbounded
 * region and no pins -- at most the linear baseline. A bounded last region
 * may legitimately not fit: then the error must be MP_ERR_NO_FIT, for every
 * strategy alike. The seed and the failing trial are printed.
 *
 * usage: test_planner_property [SEED [TRIALS]]
 */
#include <stdlib.h>

#include "check.h"
#include "mplan/plan.h"

typedef struct prop_rng {
  uint64_t s;
} prop_rng;

static uint64_t prop_next(prop_rng *r) {
  r->s ^= r->s << 13;
  r->s ^= r->s >> 7;
  r->s ^= r->s << 17;
  return r->s;
}

static uint64_t prop_below(prop_rng *r, uint64_t n) {
  return n ? prop_next(r) % n : 0;
}

typedef struct prop_case {
  mp_problem *p;
  mp_region_desc regions[3];
  size_t n_regions;
  mp_bank_desc banks;
  bool pins, bounded;
} prop_case;

/* Pins get slots of their own far above everything else, so that two pins
 * never collide and the problem stays feasible. */
static mp_status prop_buffer(prop_rng *r, mp_problem *p, size_t i, bool *pinned,
                             mp_error *err) {
  bool pin = *pinned;
  char name[32];
  snprintf(name, sizeof name, "b%zu", i);
  int64_t f = (int64_t)prop_below(r, 40);
  size_t align = (size_t)1 << prop_below(r, 6);
  uint64_t c = prop_below(r, 20);
  pin = pin && c >= 2; /* pins are tested on activations (their tier) */
  mp_buffer_desc d = {
      .name = name,
      .size = 1 + prop_below(r, 2000),
      .alignment = align,
      .first = f,
      .last = f + (int64_t)prop_below(r, 12),
      .cls = c == 0   ? MP_CLASS_RESIDENT
             : c == 1 ? MP_CLASS_RETAINED
                      : MP_CLASS_ACTIVATION,
      .pinned = pin,
      .pin = pin ? ((size_t)1 << 20) + i * 4096 : 0,
  };
  *pinned = pin;
  return mp_problem_add(p, &d, NULL, err);
}

static mp_status prop_make(prop_rng *r, prop_case *pc, mp_error *err) {
  size_t n = 1 + prop_below(r, 40), n_pins = 0;
  mp_status st = mp_problem_create(NULL, "prop", &pc->p, err);
  pc->pins = prop_below(r, 4) == 0;
  for (size_t i = 0; st == MP_OK && i < n; i++) {
    bool pin = pc->pins && prop_below(r, 5) == 0;
    st = prop_buffer(r, pc->p, i, &pin, err);
    n_pins += pin;
  }
  pc->pins = n_pins > 0;
  /* Access groups for the banks: random pairs and triples. */
  for (size_t g = 0; st == MP_OK && n >= 3 && g < n / 3; g++) {
    size_t idx[3] = {prop_below(r, n), 0, 0}, m = 1;
    for (size_t k = 1; k < 3; k++) {
      size_t v = prop_below(r, n);
      if (v != idx[0] && (m < 2 || v != idx[1])) idx[m++] = v;
    }
    if (m >= 2) st = mp_problem_add_group(pc->p, "g", idx, m, err);
  }
  if (st == MP_OK) st = mp_problem_seal(pc->p, err);
  /* Regions: none (one unbounded arena), or two or three with the last
   * one sometimes bounded. */
  pc->n_regions = pc->pins || prop_below(r, 3) == 0 ? 0 : 2 + prop_below(r, 2);
  pc->bounded = pc->n_regions && prop_below(r, 3) == 0;
  static const char *const names[] = {"r0", "r1", "r2"};
  for (size_t k = 0; k < pc->n_regions; k++) {
    bool last = k + 1 == pc->n_regions;
    unsigned classes =
        k == 0 ? 1u << MP_CLASS_ACTIVATION : MP_REGION_ALL_CLASSES;
    size_t cap = last && !pc->bounded ? 0 : 500 + prop_below(r, 8000);
    if (last && pc->bounded) cap = 2000 + prop_below(r, 30000);
    pc->regions[k] = (mp_region_desc){names[k], cap, classes};
  }
  pc->banks = prop_below(r, 3) == 0
                  ? (mp_bank_desc){(uint32_t)(2 + prop_below(r, 4)),
                                   (size_t)64 << prop_below(r, 3)}
                  : (mp_bank_desc){0, 0};
  return st;
}

static bool prop_check(const prop_case *pc, const mp_plan *plan,
                       size_t linear) {
  const mp_plan_summary *s = mp_plan_summary_of(plan);
  const mp_placement *pl = mp_plan_placements(plan);
  bool ok = s->activation_peak_bytes >= s->lower_bound_bytes &&
            s->arena_bytes == s->resident_bytes + s->activation_peak_bytes;
  if (!pc->pins && !pc->n_regions)
    ok = ok && s->activation_peak_bytes <= linear;
  for (size_t i = 0; i < mp_problem_count(pc->p); i++) {
    const mp_buffer *b = mp_problem_buffer(pc->p, i);
    if (b->pinned) ok = ok && pl[i].offset == b->pin;
  }
  for (size_t k = 0; k < mp_plan_region_count(plan); k++) {
    const mp_plan_region *reg = mp_plan_region_at(plan, k);
    ok = ok && (!reg->capacity || reg->used_bytes <= reg->capacity);
  }
  return ok;
}

int main(int argc, char **argv) {
  char *end = NULL;
  unsigned long a1 = argc > 1 ? strtoul(argv[1], &end, 10) : 0;
  unsigned seed = end && !*end && end != argv[1] ? (unsigned)a1 : 20261129u;
  int trials = argc > 2 ? atoi(argv[2]) : 10000;
  prop_rng r = {seed * 0x9E3779B97F4A7C15ull + 11};
  long solved = 0, no_fit = 0, bad = 0;
  fprintf(stderr, "test_planner_property: seed %u, %d problems\n", seed,
          trials);
  for (int t = 0; t < trials; t++) {
    prop_case pc = {0};
    mp_error err = {0};
    uint64_t state = r.s;
    CHECK(prop_make(&r, &pc, &err) == MP_OK);
    size_t linear = SIZE_MAX;
    /* Linear is last in the table: run it first for the baseline. */
    for (size_t k = mp_strategy_count(); k-- > 0;) {
      mp_plan_opts o = {.strategy = mp_strategy_name(k),
                        .budget_ms = 1,
                        .regions = pc.regions,
                        .n_regions = pc.n_regions,
                        .banks = pc.banks};
      mp_plan *plan = NULL;
      mp_status st = mp_plan_solve(pc.p, &o, &plan, &err);
      bool ok = st == MP_OK ? prop_check(&pc, plan, linear)
                            : st == MP_ERR_NO_FIT && pc.bounded;
      if (st == MP_OK && k + 1 == mp_strategy_count()) {
        linear = mp_plan_summary_of(plan)->activation_peak_bytes;
      }
      solved += st == MP_OK;
      no_fit += st == MP_ERR_NO_FIT;
      if (!ok && bad++ < 5) {
        fprintf(stderr, "%s: trial %d (seed %u, state %llu): status %d %s\n",
                o.strategy, t, seed, (unsigned long long)state, st,
                st == MP_OK ? "bounds broken" : err.msg);
      }
      mp_plan_destroy(plan);
    }
    mp_problem_destroy(pc.p);
  }
  fprintf(stderr,
          "%d problems x %zu strategies: %ld plans valid, %ld did not fit a "
          "bounded backend (expected), %ld wrong\n",
          trials, mp_strategy_count(), solved, no_fit, bad);
  CHECK_EQ_I(bad, 0);
  CHECK(solved > (long)trials * (long)mp_strategy_count() / 2);
  return check_exit("test_planner_property");
}
