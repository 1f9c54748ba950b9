/*
 * verify.c -- `mplan verify` as a library (mplan/verify.h).
 *
 * Invariants:
 *   1. The reference run uses the model's own problem solved by the
 *      linear (no-reuse) strategy, never red zones or injections, so an
 *      output that differs from it is a defect of the plan under test.
 *   2. Both runs get the same inputs (the same seeded stream, or the
 *      given tensors/1 bytes) and go through the same target function.
 *   3. Mutations act where the real bug would: an overlap moves a
 *      placement after solving; an early free shortens a lifetime before
 *      solving (the analysis was wrong, the planner believed it); an
 *      out-of-bounds write happens in the run.
 *   4. A run starts only when the no-reuse run's tensors fit in a quarter
 *      of the machine's memory (the bundle, the regions and the outputs
 *      each hold them) and in max_bytes (1 GiB unless raised): a small
 *      file declaring gigabytes is refused, not run out of memory or for
 *      minutes. The tensors of the constant subgraphs the fold pass
 *      folded count too: compile runs them (a huge weight the graph no
 *      longer reads is still made and read there).
 */
#define _POSIX_C_SOURCE 200809L /* sysconf */
#include "mplan/verify.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "mplan/backend.h"
#include "mplan/compile.h"

mp_status mp_inject_parse(const char *spec, mp_inject *out, mp_error *err) {
  mp_inject in;
  memset(&in, 0, sizeof in);
  const char *colon = strchr(spec, ':');
  size_t kl = colon ? (size_t)(colon - spec) : 0;
  const char *arg = colon ? colon + 1 : "";
  if (colon && kl == 7 && strncmp(spec, "overlap", 7) == 0) {
    const char *comma = strchr(arg, ',');
    if (comma && comma != arg && comma[1] &&
        (size_t)(comma - arg) < sizeof in.a &&
        strlen(comma + 1) < sizeof in.b) {
      in.kind = MP_INJECT_OVERLAP;
      memcpy(in.a, arg, (size_t)(comma - arg));
      snprintf(in.b, sizeof in.b, "%s", comma + 1);
    }
  } else if (colon && kl == 10 && strncmp(spec, "early-free", 10) == 0 &&
             *arg && strlen(arg) < sizeof in.a) {
    in.kind = MP_INJECT_EARLY_FREE;
    snprintf(in.a, sizeof in.a, "%s", arg);
  } else if (colon && kl == 3 && strncmp(spec, "oob", 3) == 0 && *arg &&
             strlen(arg) < sizeof in.a) {
    in.kind = MP_INJECT_OOB;
    snprintf(in.a, sizeof in.a, "%s", arg);
  }
  if (in.kind == MP_INJECT_NONE) {
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "--inject '%s': expected overlap:A,B, early-free:T "
                        "or oob:OP",
                        spec);
  }
  *out = in;
  return MP_OK;
}

mp_status mp_target_host(void *ud, const char *source, const mp_buf *bundle,
                         const void *inputs, size_t in_len,
                         const mp_runner_opts *o, mp_buf *outputs,
                         mp_buf *events, mp_error *err) {
  const mp_alloc *a = ud;
  return mp_runner_run(source, bundle->data, bundle->len, inputs, in_len, o, a,
                       outputs, events, NULL, err);
}

void mp_verify_result_release(mp_verify_result *r, const mp_alloc *a) {
  if (!r) return;
  mp_free(a, r->events);
  mp_free(a, r->target.scalar);
  mp_plan_destroy(r->plan);
  mp_problem_destroy(r->problem);
  memset(r, 0, sizeof *r);
}

typedef struct vf {
  const mp_model *m;
  const mp_verify_opts *o;
  const mp_alloc *a;
  mp_error *err;
  uint32_t *rz_before; /* per buffer */
  size_t victim;       /* early-free: the buffer shortened */
} vf;

/* The buffer of the graph tensor named name. */
static mp_status vf_buffer(vf *v, const char *name, size_t *buf) {
  int32_t t;
  const mp_graph *g = mp_model_graph(v->m);
  if (!g || !mp_graph_find_tensor(g, name, &t)) {
    return mp_error_set(v->err, MP_ERR_BAD_INPUT,
                        "--inject: the model has no tensor named '%s'", name);
  }
  *buf = mp_model_tensor_buffer(v->m, (size_t)t);
  return MP_OK;
}

/* A copy of the model's problem with red zones and an early free
 * (invariant 3). */
static mp_status vf_problem(vf *v, mp_problem **out) {
  const mp_problem *p0 = mp_model_problem(v->m);
  size_t n = mp_problem_count(p0), victim = SIZE_MAX;
  mp_status st = MP_OK;
  if (v->o->inject.kind == MP_INJECT_EARLY_FREE) {
    st = vf_buffer(v, v->o->inject.a, &victim);
    if (st == MP_OK) {
      const mp_buffer *b = mp_problem_buffer(p0, victim);
      if (b->cls != MP_CLASS_ACTIVATION || b->first >= b->last) {
        st = mp_error_set(v->err, MP_ERR_BAD_INPUT,
                          "--inject early-free:%s: the tensor is not an "
                          "activation live for two steps or more",
                          v->o->inject.a);
      }
    }
  }
  v->victim = victim;
  if (st != MP_OK) return st;
  st = mp_problem_create(v->a, mp_problem_name(p0), out, v->err);
  int64_t f, l;
  mp_problem_span(p0, &f, &l);
  if (st == MP_OK) st = mp_problem_set_span(*out, f, l, v->err);
  for (size_t i = 0; st == MP_OK && i < n; i++) {
    const mp_buffer *b = mp_problem_buffer(p0, i);
    size_t pre = 0, size = b->size;
    if (v->o->redzone) {
      if (!mp_align_up(v->o->redzone, b->alignment, &pre) ||
          !mp_size_add(size, pre + v->o->redzone, &size) || pre > UINT32_MAX) {
        st = mp_error_set(v->err, MP_ERR_BAD_INPUT, "--redzone: too large");
        break;
      }
    }
    v->rz_before[i] = (uint32_t)pre;
    mp_buffer_desc d = {b->name,
                        size,
                        b->alignment,
                        b->first,
                        i == victim ? b->last - 1 : b->last,
                        b->cls,
                        b->pinned,
                        b->pinned && b->pin >= pre ? b->pin - pre : 0};
    st = mp_problem_add(*out, &d, NULL, v->err);
  }
  if (st == MP_OK) st = mp_problem_seal(*out, v->err);
  return st;
}

/* Moves B onto A's bytes (invariant 3); both must be live together. */
static mp_status vf_overlap(vf *v, const mp_problem *p, mp_placement *pl) {
  size_t ba = 0, bb = 0;
  mp_status st = vf_buffer(v, v->o->inject.a, &ba);
  if (st == MP_OK) st = vf_buffer(v, v->o->inject.b, &bb);
  if (st != MP_OK) return st;
  const mp_buffer *x = mp_problem_buffer(p, ba), *y = mp_problem_buffer(p, bb);
  if (ba == bb || x->cls != MP_CLASS_ACTIVATION ||
      y->cls != MP_CLASS_ACTIVATION || x->first > y->last ||
      y->first > x->last) {
    return mp_error_set(v->err, MP_ERR_BAD_INPUT,
                        "--inject overlap:%s,%s: the two must be distinct "
                        "activations live at a common step (sharing bytes "
                        "otherwise is no violation)",
                        v->o->inject.a, v->o->inject.b);
  }
  size_t data = pl[ba].offset + v->rz_before[ba];
  if (data < v->rz_before[bb]) {
    return mp_error_set(v->err, MP_ERR_BAD_INPUT,
                        "--inject overlap: no room for the red zone");
  }
  pl[bb].offset = data - v->rz_before[bb];
  pl[bb].region = pl[ba].region;
  return MP_OK;
}

static mp_status vf_run(vf *v, const char *what, const mp_buf *bundle,
                        const mp_runner_opts *ro, mp_buf *outs, mp_buf *evs) {
  mp_target_fn fn = v->o->target ? v->o->target : mp_target_host;
  void *ud = v->o->target ? v->o->target_ud : (void *)(uintptr_t)v->a;
  char source[600];
  snprintf(source, sizeof source, "%s (%s bundle)", mp_model_path(v->m), what);
  return fn(ud, source, bundle, v->o->inputs, v->o->in_len, ro, outs, evs,
            v->err);
}

/* The no-reuse reference outputs (invariant 1). */
static mp_status vf_reference(vf *v, mp_buf *outs) {
  mp_plan *lin = NULL;
  mp_plan_opts po = {.strategy = "linear"};
  mp_buf bundle;
  mp_buf_init(&bundle, v->a);
  mp_compile_opts co = {.seed = v->o->seed};
  mp_runner_opts ro = {false,      false, false,        NULL,
                       v->o->seed, NULL,  v->o->max_ops};
  mp_status st = mp_plan_solve(mp_model_problem(v->m), &po, &lin, v->err);
  if (st == MP_OK) {
    st = mp_compile_model(v->m, mp_model_problem(v->m), mp_plan_placements(lin),
                          &co, v->a, &bundle, v->err);
  }
  if (st == MP_OK) st = vf_run(v, "no-reuse", &bundle, &ro, outs, NULL);
  mp_plan_destroy(lin);
  mp_buf_free(&bundle);
  return st;
}

/* Output-mismatch events for every output that differs. */
static mp_status vf_compare(vf *v, const mp_buf *got, const mp_buf *want,
                            const mp_problem *p, const mp_placement *pl,
                            mp_verify_result *res) {
  mp_tensor_rec *g = NULL, *w = NULL;
  size_t ng = 0, nw = 0;
  mp_status st =
      mp_tensors_parse("outputs", got->data, got->len, v->a, &g, &ng, v->err);
  if (st == MP_OK) {
    st = mp_tensors_parse("reference outputs", want->data, want->len, v->a, &w,
                          &nw, v->err);
  }
  if (st == MP_OK && ng != nw) {
    st = mp_error_set(v->err, MP_ERR_INTERNAL, "output counts differ");
  }
  size_t cap = res->n_events + ng;
  mp_event_rec *ev =
      st == MP_OK ? mp_realloc(v->a, res->events, (cap ? cap : 1) * sizeof *ev)
                  : NULL;
  if (st == MP_OK && !ev)
    st = mp_error_set(v->err, MP_ERR_NOMEM, "out of memory");
  if (ev) res->events = ev;
  for (size_t i = 0; st == MP_OK && i < ng; i++) {
    res->outputs++;
    if (g[i].bytes == w[i].bytes &&
        (g[i].bytes == 0 || memcmp(g[i].data, w[i].data, g[i].bytes) == 0)) {
      res->outputs_equal++;
      continue;
    }
    size_t lo = 0, hi = g[i].bytes ? g[i].bytes - 1 : 0;
    const unsigned char *a = g[i].data, *b = w[i].data;
    while (lo < hi && a[lo] == b[lo]) lo++;
    while (hi > lo && a[hi] == b[hi]) hi--;
    int32_t t;
    size_t off = 0;
    if (mp_graph_find_tensor(mp_model_graph(v->m), g[i].name, &t)) {
      size_t bi = mp_model_tensor_buffer(v->m, (size_t)t);
      off = pl[bi].offset + v->rz_before[bi];
    }
    (void)p;
    mp_event_rec *e = &res->events[res->n_events++];
    memset(e, 0, sizeof *e);
    e->kind = MP_EV_OUTPUT_MISMATCH;
    e->step = (int64_t)res->ops;
    snprintf(e->tensor, sizeof e->tensor, "%s", g[i].name);
    snprintf(e->region, sizeof e->region, "arena");
    e->first = off + lo;
    e->last = off + hi;
    snprintf(e->detail, sizeof e->detail,
             "output '%s' differs from the no-reuse run in bytes %zu..%zu of "
             "%zu",
             g[i].name, lo, hi, g[i].bytes);
  }
  mp_free(v->a, g);
  mp_free(v->a, w);
  return st;
}

/* Invariant 4. */
static mp_status vf_memory(const mp_model *m, size_t max_bytes, mp_error *err) {
  mp_profile prof;
  mp_status st = mp_problem_profile(mp_model_problem(m), &prof, err);
  if (st != MP_OK) return st;
  size_t need, folded = 0;
  if (!mp_size_add(prof.no_reuse, prof.fixed, &need)) need = SIZE_MAX;
  mp_profile_release(&prof);
  const mp_graph *cg = mp_pass_report_constants(mp_model_pass_report(m));
  for (size_t t = 0; cg && t < mp_graph_tensor_count(cg); t++) {
    if (!mp_size_add(folded, mp_graph_tensor(cg, t)->bytes, &folded)) {
      folded = SIZE_MAX;
    }
  }
  if (!mp_size_add(need, folded, &need)) need = SIZE_MAX;
  char of[96] = "";
  if (folded) {
    snprintf(of, sizeof of,
             " (%zu of them in constant subgraphs the fold pass folded)",
             folded);
  }
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  size_t phys = pages > 0 && page > 0 ? (size_t)pages * (size_t)page : 0;
  if (phys && need > phys / 4) {
    return mp_error_set(err, MP_ERR_UNSUPPORTED,
                        "%s: the no-reuse run holds %zu bytes of tensors%s, "
                        "more than a quarter of this machine's %zu bytes of "
                        "memory; verify runs models that fit",
                        mp_model_path(m), need, of, phys);
  }
  size_t cap = max_bytes ? max_bytes : MP_VERIFY_MAX_BYTES;
  if (need <= cap) return MP_OK;
  return mp_error_set(err, MP_ERR_UNSUPPORTED,
                      "%s: the no-reuse run holds %zu bytes of tensors%s, "
                      "more than verify's limit of %zu (--max-bytes raises "
                      "it)",
                      mp_model_path(m), need, of, cap);
}

mp_status mp_verify_run(const mp_model *m, const mp_verify_opts *o,
                        const mp_alloc *a, mp_verify_result *res,
                        mp_error *err) {
  vf v = {m, o, a, err, NULL, SIZE_MAX};
  mp_verify_result r;
  memset(&r, 0, sizeof r);
  mp_buf bundle, outs, evs, ref;
  mp_buf_init(&bundle, a);
  mp_buf_init(&outs, a);
  mp_buf_init(&evs, a);
  mp_buf_init(&ref, a);
  const mp_problem *p0 = mp_model_problem(m);
  mp_status st = vf_memory(m, o->max_bytes, err);
  if (st != MP_OK) return st;
  v.rz_before = mp_calloc(a, mp_problem_count(p0) + 1, sizeof *v.rz_before);
  st = v.rz_before ? MP_OK : mp_error_set(err, MP_ERR_NOMEM, "out of memory");
  bool own = o->redzone || o->inject.kind == MP_INJECT_EARLY_FREE;
  if (st == MP_OK && own) st = vf_problem(&v, &r.problem);
  const mp_problem *p = r.problem ? r.problem : p0;
  /* The backend's regions (fastest first, with capacities) and banks, as
   * mplan plan uses them: the run allocates each region once. */
  const mp_backend *be = mp_model_backend(m);
  mp_region_desc regions[MP_BACKEND_MAX_REGIONS];
  mp_plan_opts po = {.strategy = o->strategy,
                     .budget_ms = o->budget_ms,
                     .budget_work = o->budget_work,
                     .regions = regions,
                     .n_regions = be ? mp_backend_regions(be, regions) : 0,
                     .banks = be ? be->banks : (mp_bank_desc){0, 0}};
  if (st == MP_OK) {
    st = mp_plan_solve(p, &po, &r.plan, err);
    if (st != MP_OK && err &&
        strncmp(err->msg, mp_model_path(m), strlen(mp_model_path(m))) != 0) {
      mp_error_prefix(err, "%s", mp_model_path(m));
    }
  }
  mp_placement *pl = NULL;
  if (st == MP_OK) {
    pl = mp_calloc(a, mp_problem_count(p) + 1, sizeof *pl);
    if (!pl) st = mp_error_set(err, MP_ERR_NOMEM, "out of memory");
  }
  if (st == MP_OK) {
    memcpy(pl, mp_plan_placements(r.plan), mp_problem_count(p) * sizeof *pl);
    if (o->inject.kind == MP_INJECT_OVERLAP) st = vf_overlap(&v, p, pl);
  }
  /* Planning comes first, so that a problem file's planning errors
   * (pins that conflict) read as they do for mplan plan. */
  if (st == MP_OK && !mp_model_graph(m)) {
    st = mp_error_set(err, MP_ERR_BAD_INPUT,
                      "%s: a %s has no ops to run (give a graph or an ONNX "
                      "model)",
                      mp_model_path(m),
                      mp_model_format_name(mp_model_format_of(m)));
  }
  mp_compile_opts co = {.seed = o->seed, .rz_before = v.rz_before};
  if (st == MP_OK) st = mp_compile_model(m, p, pl, &co, a, &bundle, err);
  r.bundle_bytes = bundle.len;
  mp_runner_opts ro = {o->poison || o->redzone > 0,
                       o->paranoid,
                       o->fail_fast,
                       o->inject.kind == MP_INJECT_OOB ? o->inject.a : NULL,
                       o->seed,
                       NULL,
                       o->max_ops};
  if (st == MP_OK && !o->no_reference) st = vf_reference(&v, &ref);
  if (st == MP_OK) st = vf_run(&v, "planned", &bundle, &ro, &outs, &evs);
  if (st == MP_OK) {
    st = mp_events_parse("events", evs.data, evs.len, a, &r.events, &r.n_events,
                         &r.checks, err);
  }
  if (st == MP_OK) {
    st = mp_events_parse_target("events", evs.data, evs.len, a, &r.target, err);
  }
  r.ops = mp_model_graph(m) ? mp_graph_op_count(mp_model_graph(m)) : 0;
  /* A run stopped at its first event has no outputs to compare. */
  bool stopped = o->fail_fast && r.n_events > 0;
  if (st == MP_OK && !o->no_reference && !stopped) {
    st = vf_compare(&v, &outs, &ref, p, pl, &r);
  }
  mp_free(a, pl);
  mp_free(a, v.rz_before);
  mp_buf_free(&bundle);
  mp_buf_free(&outs);
  mp_buf_free(&evs);
  mp_buf_free(&ref);
  if (st != MP_OK) {
    mp_verify_result_release(&r, a);
    return st;
  }
  *res = r;
  return MP_OK;
}
