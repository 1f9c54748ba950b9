/*
 * test_onnx_run.c -- the ONNX backend node tests (Debian libonnx-testdata)
 * executed by the runtime: import, bind test_data_set_0's inputs, infer
 * (an If whose condition the inputs decide is imported again with its
 * taken branch, as mplan does), plan, compile (weights from the model),
 * run in poison mode with the reference kernels, and compare every output
 * with output_K.pb.
 *
 * Tolerance: f64, f32 and f16 |got - want| <= 1e-7 + 1e-3 |want|, the
 * defaults of ONNX's own backend test runner (NaN equals NaN); bf16 within
 * one unit in its last place (2^-7 |want|: this release's expected bf16
 * truncates, Cast rounds to nearest even); integers and bool exactly;
 * dtype and shape exactly. bf16 test data stored as its bits in u16 is
 * read as bf16; other test data whose dtype differs from the model's
 * declared input is skipped.
 *
 * The random ops' tests (Bernoulli, Dropout in training mode) cannot
 * match NumPy's draws: their outputs are checked for what the op can give
 * (random_test below), and they do not count toward FLOOR.
 *
 * Each test is passed, failed (ran, a value or a shape differs, or the
 * run reported an event), or skipped (an op or a variant the runtime
 * does not support, or a model the importer refuses). The test fails when
 * any test of a supported op fails or fewer than FLOOR pass, and lists
 * the ops that caused skips.
 *
 * With --rv64 QEMU RUNNER WORK VLEN..., every test that ran is also run
 * by the riscv64 runner (RVV kernels) under qemu-riscv64 at each VLEN,
 * one process per VLEN for all of them, compared with the same
 * tolerance; its pass count must equal the host's and nothing may fail.
 *
 * With --passes, every test runs twice: as above, then after every graph
 * pass with the memory order (the plan holding views, in-place writes,
 * fused ops and Concat slices); a test that passed the first way must
 * pass the second.
 *
 * usage: test_onnx_run NODE_DIR FLOOR [-v] [--passes]
 *                      [--rv64 QEMU RUNNER WORK VLEN...]
 */
#define _POSIX_C_SOURCE 200809L /* mkdir */
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "check.h"
#include "mplan/compile.h"
#include "mplan/file.h"
#include "mplan/lifetime.h"
#include "mplan/onnx.h"
#include "mplan/passes.h"
#include "mplan/runner.h"
#include "mplan/runtime.h"
#include "mplan/schedule.h"
#include "mplan/shape.h"
#include "onnx.pb-c.h"

typedef enum { PASS, FAIL, SKIP } verdict;

static int name_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static char *slurp(const char *path, size_t *len) {
  char *data = NULL;
  mp_error err;
  if (mp_file_read(path, NULL, &data, len, &err) != MP_OK) return NULL;
  return data;
}

/* Adds the op type named in an "op 'x' (Type): ..." message to list. */
static void note_skip(const char *msg, char *list, size_t cap) {
  const char *p = strstr(msg, "' (");
  char item[160] = " import";
  if (!p && strlen(msg) < 32) snprintf(item, sizeof item, " %s", msg);
  if (p) {
    const char *e = strstr(p, "): ");
    if (e && e - p < 100)
      snprintf(item, sizeof item, " %.*s", (int)(e - p - 3), p + 3);
  }
  size_t n = strlen(item);
  for (const char *q = list; (q = strstr(q, item)); q += n) {
    if (q[n] == '\0' || q[n] == ' ') return;
  }
  size_t len = strlen(list);
  snprintf(list + len, cap - len, "%s", item);
}

static bool close_enough(const void *g, const void *w, int kd, size_t n,
                         char *why, size_t cap) {
  for (size_t i = 0; i < n; i++) {
    if (mp_kd_is_float(kd)) {
      double a = mp_k_load(g, kd, i), b = mp_k_load(w, kd, i);
      if (isnan(a) && isnan(b)) continue;
      if (isinf(b) && a == b) continue;
      /* bf16 keeps 8 significant bits: within one unit in the last
       * place (this ONNX release's test data truncates f32 to bf16,
       * where Cast rounds to nearest even, as ONNX Runtime does). */
      double rel = kd == MP_KD_BF16 ? 1.0 / 128 : 1e-3;
      if (!(fabs(a - b) <= 1e-7 + rel * fabs(b))) {
        snprintf(why, cap, "element %zu: %.9g, expected %.9g", i, a, b);
        return false;
      }
    } else if (mp_k_load_i(g, kd, i) != mp_k_load_i(w, kd, i)) {
      snprintf(why, cap, "element %zu: %lld, expected %lld", i,
               (long long)mp_k_load_i(g, kd, i),
               (long long)mp_k_load_i(w, kd, i));
      return false;
    }
  }
  return true;
}

typedef struct run_state {
  mp_graph *g;
  uint32_t *order;
  mp_problem *p;
  mp_plan *plan;
  mp_onnx_data *od;
  mp_bundle *b;
  mp_rt *rt;
  mp_buf bundle;
  mp_buf inputs; /* the staged inputs as tensors/1 (for a target run) */
  Onnx__ModelProto *m;
  mp_pass_report *passes; /* with_passes: its constants graph is compiled */
} run_state;

static void run_free(run_state *s) {
  mp_pass_report_destroy(s->passes);
  mp_rt_destroy(s->rt);
  mp_bundle_destroy(s->b);
  mp_buf_free(&s->bundle);
  mp_buf_free(&s->inputs);
  mp_onnx_data_destroy(s->od);
  mp_plan_destroy(s->plan);
  mp_problem_destroy(s->p);
  free(s->order);
  mp_graph_destroy(s->g);
  if (s->m) onnx__model_proto__free_unpacked(s->m, NULL);
}

/* Binds the inputs (shapes and values for inference). */
static mp_status bind_inputs(const char *dir, run_state *s, mp_error *err) {
  const Onnx__GraphProto *gp = s->m->graph;
  size_t k = 0;
  for (size_t i = 0; i < gp->n_input; i++) {
    bool init = false;
    for (size_t j = 0; j < gp->n_initializer; j++) {
      init = init || strcmp(gp->initializer[j]->name, gp->input[i]->name) == 0;
    }
    int32_t t;
    if (init || !mp_graph_find_tensor(s->g, gp->input[i]->name, &t)) continue;
    /* as mplan refuses it (analyzer/model.c) */
    if (mp_graph_tensor(s->g, (size_t)t)->origin == MP_SHAPE_PENDING) {
      return mp_error_set(err, MP_ERR_UNSUPPORTED,
                          "graph input '%s' is not a tensor (a sequence, map "
                          "or optional), which mplan cannot size",
                          gp->input[i]->name);
    }
    char path[1400];
    size_t len;
    snprintf(path, sizeof path, "%s/test_data_set_0/input_%zu.pb", dir, k++);
    char *in = slurp(path, &len);
    mp_status st =
        in ? mp_onnx_bind_input(s->g, gp->input[i]->name, in, len, err)
           : mp_error_set(err, MP_ERR_BAD_INPUT, "no %s", path);
    free(in);
    if (st != MP_OK) return st;
  }
  return MP_OK;
}

/* Stages every bundle input from its .pb (by graph input order). */
static mp_status stage_inputs(const char *dir, run_state *s, mp_error *err) {
  const Onnx__GraphProto *gp = s->m->graph;
  size_t k = 0;
  mp_tensors_begin(&s->inputs, (uint32_t)mp_bundle_input_count(s->b));
  for (size_t i = 0; i < gp->n_input; i++) {
    bool init = false;
    for (size_t j = 0; j < gp->n_initializer; j++) {
      init = init || strcmp(gp->initializer[j]->name, gp->input[i]->name) == 0;
    }
    if (init) continue;
    char path[1400];
    size_t len, n;
    snprintf(path, sizeof path, "%s/test_data_set_0/input_%zu.pb", dir, k++);
    char *in = slurp(path, &len);
    mp_dtype dt;
    uint32_t rank;
    int64_t dims[MP_MAX_RANK];
    void *bytes = NULL;
    mp_status st = in ? mp_onnx_tensor_decode(path, in, len, NULL, &dt, &rank,
                                              dims, &bytes, &n, err)
                      : MP_ERR_IO;
    free(in);
    uint32_t t;
    for (size_t x = 0; st == MP_OK && x < mp_bundle_input_count(s->b); x++) {
      t = mp_bundle_input(s->b, x);
      const mp_btensor *bt = mp_bundle_tensor(s->b, t);
      if (strcmp(bt->name, gp->input[i]->name) != 0) continue;
      const Onnx__TypeProto *ty = gp->input[i]->type;
      mp_dtype declared = dt;
      if (ty && ty->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE) {
        (void)mp_onnx_dtype(ty->tensor_type->elem_type, &declared);
      }
      /* This ONNX release stores bf16 test data as its bits in u16
       * (mp_onnx_bind_input reads them so too). */
      if (declared == MP_DTYPE_BF16 && dt == MP_DTYPE_U16) dt = declared;
      if (declared != dt ||
          strcmp(mp_kd_name(bt->dtype), mp_dtype_name(dt)) != 0) {
        st = mp_error_set(err, MP_ERR_UNSUPPORTED,
                          "input '%s': the test data is %s, the model "
                          "declares %s",
                          bt->name, mp_dtype_name(dt), mp_kd_name(bt->dtype));
      } else {
        st = mp_rt_set_input(s->rt, x, bytes, n, err);
        mp_tensors_add(&s->inputs, bt->name, bt->dtype, &bt->shape, bytes, n);
      }
    }
    mp_free(NULL, bytes);
    if (st != MP_OK) return st;
  }
  return MP_OK;
}

/* An output as a run left it: in the host runtime, or read back from a
 * target's tensors/1 file. */
typedef struct out_view {
  int dtype;
  mp_kshape shape;
  const void *data;
  size_t bytes;
} out_view;

typedef bool (*out_fn)(void *ud, const char *name, out_view *v);

static bool host_output(void *ud, const char *name, out_view *v) {
  run_state *s = ud;
  uint32_t t;
  if (!mp_bundle_find_tensor(s->b, name, &t)) return false;
  const mp_btensor *x = mp_bundle_tensor(s->b, t);
  v->dtype = x->dtype;
  v->shape = x->shape;
  v->data = mp_rt_tensor_data(s->rt, t);
  v->bytes = (size_t)x->bytes;
  return true;
}

/* Tests of the random ops. ONNX's expected outputs come from NumPy's
 * generator, which mplan's own stream (kernels/k_random.c) does not
 * replay, so their values cannot match: ONNX's Bernoulli tests say so
 * themselves. Each output is checked instead for the expected shape and
 * dtype and for the values the op may give each element: Bernoulli 0 or
 * 1; Dropout's y either 0 or x / (1 - ratio), and its mask true exactly
 * where y is x / (1 - ratio) (x has no zeros). These count as "checked",
 * not "passed". */
typedef enum { RND_NONE, RND_BERNOULLI, RND_DROPOUT } rnd_kind;

static rnd_kind random_test(const char *dir) {
  const char *base = strrchr(dir, '/');
  base = base ? base + 1 : dir;
  if (strncmp(base, "test_bernoulli", 14) == 0) return RND_BERNOULLI;
  if (strncmp(base, "test_training_dropout", 21) == 0 &&
      strstr(base, "zero_ratio") == NULL) {
    return RND_DROPOUT;
  }
  return RND_NONE;
}

/* Tensor `what`_k.pb of test_data_set_0 (what: "input" or "output"),
 * decoded: its bytes (mp_free) or NULL. */
static void *test_pb(const char *dir, const char *what, size_t k, mp_dtype *dt,
                     uint32_t *rank, int64_t *dims, size_t *n) {
  char path[1400];
  size_t len;
  snprintf(path, sizeof path, "%s/test_data_set_0/%s_%zu.pb", dir, what, k);
  char *data = slurp(path, &len);
  void *bytes = NULL;
  mp_error err = {0};
  if (data && mp_onnx_tensor_decode(path, data, len, NULL, dt, rank, dims,
                                    &bytes, n, &err) != MP_OK) {
    bytes = NULL;
  }
  free(data);
  return bytes;
}

/* Output k (n elements) of random test dir: the values it may take. */
static bool random_values(const char *dir, rnd_kind kind, size_t k,
                          const out_view *x, out_fn get, void *ud, char *why,
                          size_t cap) {
  size_t n = (size_t)mp_kshape_count(&x->shape), nx = 0, nr = 0;
  mp_dtype dt, dr;
  uint32_t rank;
  int64_t dims[MP_MAX_RANK];
  float *in = NULL, *ratio = NULL;
  out_view y = *x;
  bool ok = true;
  if (kind == RND_DROPOUT) {
    in = test_pb(dir, "input", 0, &dt, &rank, dims, &nx);
    ratio = test_pb(dir, "input", 1, &dr, &rank, dims, &nr);
    ok = in && ratio && dt == MP_DTYPE_F32 && dr == MP_DTYPE_F32 &&
         nx == 4 * n && nr == 4 && (k == 0 || get(ud, "y", &y));
    if (!ok) snprintf(why, cap, "no x, ratio or y for the check");
  }
  for (size_t i = 0; ok && i < n; i++) {
    double v = mp_k_load(x->data, x->dtype, i);
    ok = v == 0 || v == 1;
    if (kind == RND_DROPOUT) {
      /* as the kernel computes it: x / (1 - ratio) in double, one store */
      float kept = (float)((double)in[i] * (1.0 / (1.0 - ratio[0])));
      double yv = mp_k_load(y.data, y.dtype, i);
      ok = in[i] != 0 &&
           (k == 0 ? v == 0 || v == kept : (v != 0) == (yv == kept));
    }
    if (!ok) {
      snprintf(why, cap,
               "output %zu element %zu: %.9g is not a value %s can give", k, i,
               v, kind == RND_DROPOUT ? "Dropout" : "Bernoulli");
    }
  }
  mp_free(NULL, in);
  mp_free(NULL, ratio);
  return ok;
}

static verdict compare(const char *dir, const Onnx__GraphProto *gp, out_fn get,
                       void *ud, char *why, size_t cap) {
  for (size_t k = 0; k < gp->n_output; k++) {
    size_t n;
    mp_dtype dt;
    uint32_t rank;
    int64_t dims[MP_MAX_RANK];
    void *bytes = test_pb(dir, "output", k, &dt, &rank, dims, &n);
    if (!bytes) {
      snprintf(why, cap, "output %zu: no data", k);
      return SKIP;
    }
    verdict v = PASS;
    out_view x;
    if (!get(ud, gp->output[k]->name, &x)) {
      snprintf(why, cap, "no output '%s'", gp->output[k]->name);
      v = FAIL;
    } else {
      bool same = x.shape.rank == rank && x.bytes == n;
      for (uint32_t d = 0; same && d < rank; d++)
        same = x.shape.dims[d] == dims[d];
      if (!same || mp_kd_bits(x.dtype) != mp_dtype_bits(dt)) {
        snprintf(why, cap, "output '%s': shape or dtype differs",
                 gp->output[k]->name);
        v = FAIL;
      } else if (random_test(dir) != RND_NONE) {
        if (!random_values(dir, random_test(dir), k, &x, get, ud, why, cap))
          v = FAIL;
      } else if (!close_enough(x.data, bytes, x.dtype,
                               (size_t)mp_kshape_count(&x.shape), why, cap)) {
        char what[160];
        snprintf(what, sizeof what, "%s", why);
        snprintf(why, cap, "output '%s': %s", gp->output[k]->name, what);
        v = FAIL;
      }
    }
    mp_free(NULL, bytes);
    if (v != PASS) return v;
  }
  return PASS;
}

/* ---- the same tests on riscv64 under QEMU (--rv64) ------------------------
 * Every test that ran on the host is queued: its bundle and staged inputs
 * are written to WORK, and one runner process per VLEN runs them all
 * (mplan-runner --batch, paranoid poison mode as here); the outputs are
 * then compared with output_K.pb exactly as the host's are. */

typedef struct rv64_job {
  char dir[1200];
  verdict host;
} rv64_job;

static struct {
  bool on;
  const char *qemu, *runner, *work;
  rv64_job *jobs;
  size_t n, cap;
} rv64;

static verdict rv64_queue(const char *dir, run_state *s, verdict v, char *why,
                          size_t cap) {
  if (rv64.n == rv64.cap) {
    rv64.cap = rv64.cap ? 2 * rv64.cap : 256;
    rv64.jobs = realloc(rv64.jobs, rv64.cap * sizeof *rv64.jobs);
    if (!rv64.jobs) abort();
  }
  char path[1400];
  mp_error err = {0};
  snprintf(path, sizeof path, "%s/j%zu.mpk", rv64.work, rv64.n);
  mp_status st = mp_file_write(path, s->bundle.data, s->bundle.len, &err);
  snprintf(path, sizeof path, "%s/j%zu.in", rv64.work, rv64.n);
  if (st == MP_OK)
    st = mp_file_write(path, s->inputs.data, s->inputs.len, &err);
  if (st != MP_OK) {
    snprintf(why, cap, "%.900s", err.msg);
    return FAIL;
  }
  rv64_job *j = &rv64.jobs[rv64.n++];
  snprintf(j->dir, sizeof j->dir, "%s", dir);
  j->host = v;
  return v;
}

typedef struct rv64_outs {
  mp_tensor_rec *recs;
  size_t n;
} rv64_outs;

static bool rv64_output(void *ud, const char *name, out_view *v) {
  const rv64_outs *o = ud;
  for (size_t i = 0; i < o->n; i++) {
    if (strcmp(o->recs[i].name, name) != 0) continue;
    v->dtype = o->recs[i].dtype;
    v->shape = o->recs[i].shape;
    v->data = o->recs[i].data;
    v->bytes = o->recs[i].bytes;
    return true;
  }
  return false;
}

/* Job k's verdict at this VLEN from its batch status and outputs. */
static verdict rv64_judge(size_t k, const char *status, unsigned vlen,
                          char *why, size_t cap) {
  if (strcmp(status, "ok") != 0) {
    snprintf(why, cap, "runner: %.900s", status);
    return FAIL;
  }
  char path[1400];
  size_t len, mlen;
  snprintf(path, sizeof path, "%s/j%zu.v%u.out", rv64.work, k, vlen);
  char *out = slurp(path, &len);
  snprintf(path, sizeof path, "%s/model.onnx", rv64.jobs[k].dir);
  char *model = slurp(path, &mlen);
  Onnx__ModelProto *m =
      model ? onnx__model_proto__unpack(NULL, mlen, (const uint8_t *)model)
            : NULL;
  rv64_outs o = {NULL, 0};
  mp_error err = {0};
  verdict v = FAIL;
  if (!out || !m) {
    snprintf(why, cap, "no outputs or model");
  } else if (mp_tensors_parse(path, out, len, NULL, &o.recs, &o.n, &err) !=
             MP_OK) {
    snprintf(why, cap, "%.900s", err.msg);
  } else {
    v = compare(rv64.jobs[k].dir, m->graph, rv64_output, &o, why, cap);
  }
  mp_free(NULL, o.recs);
  if (m) onnx__model_proto__free_unpacked(m, NULL);
  free(model);
  free(out);
  return v;
}

/* Runs every queued job at one VLEN; counts[PASS/FAIL]. */
static void rv64_run(unsigned vlen, bool verbose, size_t *counts) {
  char list[1400], status[1400], cmd[5000];
  snprintf(list, sizeof list, "%s/jobs.v%u.tsv", rv64.work, vlen);
  snprintf(status, sizeof status, "%s/status.v%u.txt", rv64.work, vlen);
  FILE *f = fopen(list, "w");
  CHECK(f != NULL);
  if (!f) return;
  for (size_t k = 0; k < rv64.n; k++) {
    fprintf(f, "%s/j%zu.mpk\t%s/j%zu.in\t%s/j%zu.v%u.out\t%s/j%zu.v%u.ev\n",
            rv64.work, k, rv64.work, k, rv64.work, k, vlen, rv64.work, k, vlen);
  }
  fclose(f);
  snprintf(cmd, sizeof cmd,
           "'%s' -cpu rv64,v=true,vlen=%u,vext_spec=v1.0 '%s' --batch '%s' "
           "--poison --paranoid > '%s'",
           rv64.qemu, vlen, rv64.runner, list, status);
  int rc = system(cmd);
  CHECK_EQ_I(rc, 0);
  size_t len = 0;
  char *text = slurp(status, &len);
  CHECK(text != NULL);
  size_t k = 0;
  for (char *line = text; text && *line && k < rv64.n;) {
    char *nl = strchr(line, '\n');
    if (nl) *nl = '\0';
    char st[1000] = "";
    size_t id = SIZE_MAX;
    int used = 0;
    if (sscanf(line, "job %zu %n", &id, &used) == 1) {
      snprintf(st, sizeof st, "%s", line + used);
    }
    char why[1000] = "";
    verdict v = id == k ? rv64_judge(k, st, vlen, why, sizeof why) : FAIL;
    counts[v]++;
    if (v == FAIL || verbose) {
      fprintf(stderr, "rv64 VLEN %u %s %s: %s\n", vlen,
              v == FAIL ? "FAILED" : "passed", strrchr(rv64.jobs[k].dir, '/'),
              why);
    }
    k++;
    if (!nl) break;
    line = nl + 1;
  }
  counts[FAIL] += rv64.n - k; /* jobs without a status line */
  free(text);
}

/* --passes: each test also runs after every pass with the memory order;
 * rewritten counts the tests some pass changed. */
static bool with_passes;
static size_t rewritten;
/* tests whose fold pass left compile a constants graph to run (fold.c
 * and bundle_write.c invariant 4) */
static size_t constants_run;

static mp_status run_passes(run_state *s, mp_alias *al, mp_error *err) {
  mp_pass_opts po = {.mask = MP_PASSES_ALL,
                     .schedule = {.order = MP_ORDER_MEMORY}};
  uint32_t *order = NULL;
  mp_schedule_info info;
  mp_pass_report *r = NULL;
  mp_status st = mp_passes_run(&s->g, &po, al, &order, &info, &r, err);
  if (st != MP_OK) return st;
  free(s->order);
  s->order = order;
  size_t changes = 0;
  for (size_t i = 0; i < mp_pass_report_rows(r); i++) {
    changes += mp_pass_report_row(r, i)->rewrites;
  }
  rewritten += changes > 0;
  constants_run += mp_pass_report_constants(r) != NULL;
  s->passes = r;
  return MP_OK;
}

/* Tests whose expected outputs contradict their operator's schema. Each
 * must fail its comparison, and is then skipped with the reason; one
 * that passes fails (the list is out of date). */
static const struct {
  const char *test, *why;
} contradicts[] = {
    {"test_adam_multiple",
     "its expected outputs take epsilon 1e-2, which the node does not set "
     "(the schema's default is 1e-6)"},
};

static const char *contradiction(const char *dir) {
  const char *base = strrchr(dir, '/');
  base = base ? base + 1 : dir;
  for (size_t i = 0; i < sizeof contradicts / sizeof *contradicts; i++) {
    if (strcmp(base, contradicts[i].test) == 0) return contradicts[i].why;
  }
  return NULL;
}

static verdict run_one(const char *dir, char *why, size_t cap, char *skips,
                       size_t skips_cap) {
  char path[1400];
  size_t len;
  mp_error err = {0};
  run_state s;
  memset(&s, 0, sizeof s);
  mp_buf_init(&s.bundle, NULL);
  mp_buf_init(&s.inputs, NULL);
  mp_order_kind used;
  snprintf(path, sizeof path, "%s/model.onnx", dir);
  char *data = slurp(path, &len);
  if (!data) return SKIP;
  s.m = onnx__model_proto__unpack(NULL, len, (const uint8_t *)data);
  mp_status st = s.m ? mp_onnx_import(path, data, len, NULL, &s.g, &err)
                     : MP_ERR_BAD_INPUT;
  if (st == MP_OK) st = mp_onnx_data_load(path, data, len, NULL, &s.od, &err);
  if (st == MP_OK) st = bind_inputs(dir, &s, &err);
  if (st == MP_OK) st = mp_schedule(s.g, MP_ORDER_AUTO, &s.order, &used, &err);
  if (st == MP_OK) st = mp_shape_infer(s.g, s.order, NULL, &err);
  /* An If whose condition the test data decides: imported again with its
   * taken branch only, as mplan does (analyzer/model.c), so it runs. */
  mp_onnx_ifs ifs = {0};
  if (st == MP_OK) st = mp_onnx_known_ifs(s.g, &ifs, &err);
  if (st == MP_OK && ifs.n) {
    mp_graph_destroy(s.g);
    s.g = NULL;
    free(s.order);
    s.order = NULL;
    st = mp_onnx_import_taken(path, data, len, NULL, ifs.v, ifs.n, &s.g, &err);
    if (st == MP_OK) st = bind_inputs(dir, &s, &err);
    if (st == MP_OK)
      st = mp_schedule(s.g, MP_ORDER_AUTO, &s.order, &used, &err);
    if (st == MP_OK) st = mp_shape_infer(s.g, s.order, NULL, &err);
  }
  mp_onnx_ifs_free(NULL, &ifs);
  free(data);
  if (st == MP_OK) st = mp_shape_check_resolved(s.g, &err);
  if (st == MP_OK) st = mp_graph_resolve(s.g, &err);
  mp_alias al = {0};
  bool aliased = st == MP_OK && with_passes;
  if (aliased) {
    st = run_passes(&s, &al, &err);
    aliased = st == MP_OK;
  }
  mp_lifetime_opts lo = {.inputs_as_activations = false,
                         .alias = aliased ? &al : NULL};
  if (st == MP_OK) st = mp_lifetimes_build(s.g, s.order, &lo, &s.p, &err);
  if (st == MP_OK) st = mp_plan_solve(s.p, NULL, &s.plan, &err);
  mp_compile_opts co = {.seed = 3,
                        .onnx = s.od,
                        .tensor_offset = aliased ? al.offset : NULL,
                        .constants = mp_pass_report_constants(s.passes)};
  bool planned = st == MP_OK;
  if (st == MP_OK) {
    size_t *tb = NULL;
    if (aliased) {
      tb = calloc(al.n_tensors + 1, sizeof *tb);
      for (size_t t = 0; tb && t < al.n_tensors; t++) tb[t] = al.buffer_of[t];
      if (!tb) st = mp_error_set(&err, MP_ERR_NOMEM, "out of memory");
    }
    if (st == MP_OK) {
      st = mp_compile(s.g, s.order, s.p, mp_plan_placements(s.plan), tb, &co,
                      NULL, &s.bundle, &err);
    }
    free(tb);
  }
  if (aliased) mp_alias_release(&al);
  verdict v = SKIP;
  if (st != MP_OK) {
    snprintf(why, cap, "%.900s", err.msg);
    note_skip(planned ? err.msg : "import", skips, skips_cap);
    run_free(&s);
    return SKIP;
  }
  mp_rt_opts ro = {true, true, false, -1, 0, 0, 0};
  st = mp_bundle_load(path, s.bundle.data, s.bundle.len, NULL, &s.b, &err);
  if (st == MP_OK) st = mp_rt_create(s.b, &ro, NULL, &s.rt, &err);
  if (st == MP_OK) st = stage_inputs(dir, &s, &err);
  if (st == MP_ERR_UNSUPPORTED) {
    snprintf(why, cap, "%.900s", err.msg);
    note_skip("test data", skips, skips_cap);
    run_free(&s);
    return SKIP;
  }
  if (st == MP_OK) st = mp_rt_run(s.rt, &err);
  if (st != MP_OK) {
    snprintf(why, cap, "%.900s", err.msg);
    v = FAIL;
  } else if (mp_rt_event_count(s.rt)) {
    snprintf(why, cap, "%zu poison events: %s", mp_rt_event_count(s.rt),
             mp_rt_event_at(s.rt, 0)->detail);
    v = FAIL;
  } else {
    v = compare(dir, s.m->graph, host_output, &s, why, cap);
    const char *bad = contradiction(dir);
    if (bad && v == FAIL) {
      snprintf(why, cap, "expected outputs contradict the schema: %s", bad);
      note_skip("expected data", skips, skips_cap);
      v = SKIP;
    } else if (bad && v == PASS) {
      snprintf(why, cap,
               "listed as contradicting the schema (%s), yet it "
               "passed",
               bad);
      v = FAIL;
    }
    if (rv64.on && v != SKIP) v = rv64_queue(dir, &s, v, why, cap);
  }
  run_free(&s);
  return v;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr,
            "usage: test_onnx_run NODE_DIR FLOOR [-v] [--rv64 QEMU RUNNER "
            "WORK VLEN...]\n");
    return 2;
  }
  long floor_n = atol(argv[2]);
  bool verbose = false;
  for (int a = 3; a < argc; a++) {
    if (strcmp(argv[a], "-v") == 0) verbose = true;
    if (strcmp(argv[a], "--passes") == 0) with_passes = true;
    if (strcmp(argv[a], "--rv64") == 0 && a + 3 < argc) {
      rv64.on = true;
      rv64.qemu = argv[a + 1];
      rv64.runner = argv[a + 2];
      rv64.work = argv[a + 3];
      mkdir(rv64.work, 0755);
      a += 3;
    }
  }
  DIR *d = opendir(argv[1]);
  if (!d) {
    fprintf(stderr, "test_onnx_run: cannot open %s\n", argv[1]);
    return 1;
  }
  char **names = NULL;
  size_t n = 0, cap = 0;
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.') continue;
    if (n == cap) {
      cap = cap ? 2 * cap : 256;
      names = realloc(names, cap * sizeof *names);
    }
    names[n] = malloc(strlen(e->d_name) + 1);
    strcpy(names[n++], e->d_name);
  }
  closedir(d);
  qsort(names, n, sizeof *names, name_cmp);
  size_t count[3] = {0}, randoms = 0, checked = 0;
  static char skips[16384];
  for (size_t i = 0; i < n; i++) {
    char dir[1200], why[1000] = "";
    snprintf(dir, sizeof dir, "%s/%s", argv[1], names[i]);
    verdict v;
    if (with_passes) {
      /* A test that passes without passes must pass with them. */
      with_passes = false;
      verdict v0 = run_one(dir, why, sizeof why, skips, sizeof skips);
      with_passes = true;
      why[0] = '\0';
      v = run_one(dir, why, sizeof why, skips, sizeof skips);
      if (v0 == PASS && v != PASS) {
        char w[1000];
        snprintf(w, sizeof w, "with --passes all: %.900s", why);
        snprintf(why, sizeof why, "%s", w);
        v = FAIL;
      }
    } else {
      v = run_one(dir, why, sizeof why, skips, sizeof skips);
    }
    count[v]++;
    randoms += random_test(dir) != RND_NONE;
    checked += v == PASS && random_test(dir) != RND_NONE;
    if (v == FAIL || (verbose && v == SKIP)) {
      fprintf(stderr, "%s %s: %s\n", v == FAIL ? "FAILED" : "skipped", names[i],
              why);
    }
    free(names[i]);
  }
  free(names);
  printf("skipped for ops (or variants):%s\n", skips);
  for (int a = 3; rv64.on && a < argc; a++) {
    char *end;
    unsigned long vlen = strtoul(argv[a], &end, 10);
    if (*end || !vlen) continue;
    size_t rc[3] = {0};
    rv64_run((unsigned)vlen, verbose, rc);
    rc[SKIP] = n - rv64.n;
    printf(
        "node tests under qemu-riscv64 at VLEN %lu (RVV kernels): %zu: %zu "
        "passed, %zu failed, %zu skipped (host: %zu passed)\n",
        vlen, n, rc[PASS], rc[FAIL], rc[SKIP], count[PASS]);
    CHECK_EQ_U(rc[FAIL], 0);
    CHECK_EQ_U(rc[PASS], count[PASS]);
  }
  printf(
      "node tests run by the runtime%s: %zu: %zu passed, %zu failed, %zu "
      "skipped (floor %ld); of the passed, %zu are random ops whose values "
      "were checked against what the op can give\n",
      with_passes ? " after --passes all --order memory" : "", n, count[PASS],
      count[FAIL], count[SKIP], floor_n, checked);
  if (with_passes) {
    printf(
        "a pass rewrote %zu of them; compile ran the constant subgraphs "
        "the fold pass folded for %zu\n",
        rewritten, constants_run);
    CHECK(rewritten > 0);
  }
  CHECK(n > 0);
  CHECK_EQ_U(count[FAIL], 0);
  /* the floor counts outputs compared with ONNX's expected values */
  CHECK((long)(count[PASS] - checked) >= floor_n);
  CHECK_EQ_U(checked, randoms);
  free(rv64.jobs);
  return check_exit("test_onnx_run");
}
