/*
 * fuzz_model.c -- one fuzz input through the whole pipeline: load it as a
 * model (ONNX, or mplan graph JSON when it starts with '{'), every graph
 * pass with the memory order, plan, validate, and, when it is small,
 * verify (compile, run the plan in poison mode on the host runtime and
 * compare every output with the no-reuse run).
 *
 * A finding is any crash, sanitizer report, hang, or one of these
 * aborts (each is a bug in mplan, never in the input):
 *   - an error that is MP_ERR_INTERNAL or MP_ERR_CHECK (a plan mplan made
 *     failed its own validator), or whose message is empty or not one
 *     line;
 *   - a verified run with a poison event, or an output that differs from
 *     the no-reuse run;
 *   - an allocation above FUZZ_ALLOC_CAP: inputs are at most 64 KB and
 *     verify's limit is FUZZ_VERIFY_BYTES, so a small file declaring
 *     gigabytes must be refused before anything that size is allocated
 *     (every allocation goes through fuzz_alloc, which refuses it and
 *     remembers it).
 * Every other error is the expected answer to bad input.
 *
 * Built two ways (tests/CMakeLists.txt):
 *   - with MPLAN_FUZZ=ON (clang): a libFuzzer target, `fuzz_model`, with
 *     a structure-aware mutator for graph JSON (FUZZ_JSON_MUTATOR);
 *     scripts/fuzz.sh drives it;
 *   - always: `fuzz_model_replay FILE...`, which runs the same function
 *     on each file and prints how far it got (ctest fuzz_replay runs it
 *     on tests/fuzz/corpus/: the inputs fuzzing found bugs with, so each
 *     stays fixed, and inputs it grew that reach the verified run).
 */
#define _POSIX_C_SOURCE 200809L /* getpid */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mplan/file.h"
#include "mplan/graph.h"
#include "mplan/kernels.h"
#include "mplan/model.h"
#include "mplan/passes.h"
#include "mplan/plan.h"
#include "mplan/report.h"
#include "mplan/schedule.h"
#include "mplan/strmap.h"
#include "mplan/validate.h"
#include "mplan/verify.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Past these the verify step is skipped: the scalar kernels (under the
 * sanitizers) on a large tensor would turn an input into a timeout. The
 * work estimate of an op is its output elements times, per input of rank
 * 2 or more, that input's elements over its first dim (a Conv's
 * multiply-adds per output; a rough bound elsewhere), for a DFT or
 * STFT times its input's elements (the kernel sums a whole axis), and for
 * a cubic or linear Resize times its taps (their product over the axes:
 * 4^8 for a cubic one of rank 8). */
#define FUZZ_VERIFY_BYTES ((size_t)2 << 20)
#define FUZZ_VERIFY_OPS 400
#define FUZZ_VERIFY_WORK 20e6
/* The estimate counts each op once; a Loop runs its body again every
 * iteration, up to MP_RT_LOOP_MAX of them (minutes under the sanitizers
 * in poison mode): each run stops past this many ops instead. */
#define FUZZ_VERIFY_OP_RUNS 100000

static double fuzz_elems(const mp_tensor *t) {
  double n = 1;
  for (uint32_t d = 0; d < t->rank; d++) n *= (double)t->shape[d].value;
  return n;
}

/* The work and bytes of g's ops and tensors, added to *work, *bytes. */
static void fuzz_cost(const mp_graph *g, double *work, double *bytes) {
  for (size_t t = 0; t < mp_graph_tensor_count(g); t++) {
    *bytes += (double)mp_graph_tensor(g, t)->bytes;
  }
  for (size_t i = 0; i < mp_graph_op_count(g); i++) {
    const mp_op *op = mp_graph_op(g, i);
    double out = 0, per = 1;
    for (uint32_t k = 0; k < op->n_outputs; k++) {
      if (op->outputs[k] >= 0) {
        out += fuzz_elems(mp_graph_tensor(g, (uint32_t)op->outputs[k]));
      }
    }
    for (uint32_t k = 0; k < op->n_inputs; k++) {
      if (op->inputs[k] < 0) continue;
      const mp_tensor *t = mp_graph_tensor(g, (uint32_t)op->inputs[k]);
      if (t->rank >= 2 && t->shape[0].value > 0) {
        per += fuzz_elems(t) / (double)t->shape[0].value;
      }
    }
    /* a cubic or linear Resize takes the product of every axis' taps for
     * each output (as ONNX's reference does): 4 or 2 an axis, and an
     * antialiased one's filter stretched by in / out where it shrinks */
    if (strcmp(op->type, "Resize") == 0 && op->n_inputs && op->inputs[0] >= 0 &&
        op->n_outputs && op->outputs[0] >= 0) {
      const mp_attr *mode = mp_op_attr(op, "mode");
      const mp_attr *aa = mp_op_attr(op, "antialias");
      const char *ms =
          mode && mode->kind == MP_ATTR_STRING && mode->s ? mode->s : "";
      bool cubic = strcmp(ms, "cubic") == 0, linear = strcmp(ms, "linear") == 0;
      const mp_tensor *x = mp_graph_tensor(g, (uint32_t)op->inputs[0]);
      const mp_tensor *y = mp_graph_tensor(g, (uint32_t)op->outputs[0]);
      double taps = 1;
      for (uint32_t d = 0; (cubic || linear) && d < x->rank && d < y->rank;
           d++) {
        double t = cubic ? 4 : 2, in = (double)x->shape[d].value;
        double o = (double)y->shape[d].value;
        if (aa && aa->kind == MP_ATTR_INT && aa->i && o > 0 && o < in) {
          t = t * ceil(in / o) + 2;
        }
        taps *= t < MP_K_RESIZE_TAPS ? t : MP_K_RESIZE_TAPS;
      }
      per += taps;
    }
    /* RoiAlign samples a grid in each bin, 4 taps a sample: sampling_ratio
     * a side, or with 0 (adaptive) ceil(box side / bins) for each box --
     * the boxes are data: their values when constant, else the runtime's
     * limit a side (MP_K_ROI_MAX_GRID) */
    if (strcmp(op->type, "RoiAlign") == 0 && op->n_inputs >= 2 &&
        op->inputs[1] >= 0) {
      const mp_attr *a = mp_op_attr(op, "sampling_ratio");
      const mp_attr *oh = mp_op_attr(op, "output_height");
      const mp_attr *ow = mp_op_attr(op, "output_width");
      const mp_attr *ss = mp_op_attr(op, "spatial_scale");
      const mp_value *v = mp_graph_tensor(g, (uint32_t)op->inputs[1])->value;
      double sr = a && a->kind == MP_ATTR_INT ? (double)a->i : 0;
      double bins[2] = {oh && oh->kind == MP_ATTR_INT ? (double)oh->i : 1,
                        ow && ow->kind == MP_ATTR_INT ? (double)ow->i : 1};
      double sc = ss && ss->kind == MP_ATTR_FLOAT ? ss->f : 1, grid = sr * sr;
      if (sr <= 0 && v && v->f && v->n >= 4) {
        for (size_t r = 0; r + 4 <= v->n; r += 4) {
          double g2 = 1;
          for (int j = 0; j < 2; j++) {
            double side = ceil(fabs(v->f[r + 3 - j] - v->f[r + 1 - j]) * sc /
                               (bins[j] > 0 ? bins[j] : 1));
            g2 *= side < 1                   ? 1
                  : side > MP_K_ROI_MAX_GRID ? MP_K_ROI_MAX_GRID
                                             : side;
          }
          grid = g2 > grid ? g2 : grid;
        }
      } else if (sr <= 0) {
        grid = (double)MP_K_ROI_MAX_GRID * MP_K_ROI_MAX_GRID;
      }
      per += 4 * grid;
    }
    /* the reference DFT sums over the whole axis for every output */
    if (op->n_inputs && op->inputs[0] >= 0 &&
        (strcmp(op->type, "DFT") == 0 || strcmp(op->type, "STFT") == 0)) {
      per += fuzz_elems(mp_graph_tensor(g, (uint32_t)op->inputs[0]));
    }
    *work += out * per;
  }
}

/* The model is small enough to verify, and so are the constant
 * subgraphs its fold pass left for compile to run, unless they hold more
 * bytes than verify's own limit (FUZZ_VERIFY_BYTES, given to it), which
 * must then refuse them. */
static bool fuzz_small(const mp_model *m) {
  const mp_graph *g = mp_model_graph(m);
  if (!g || mp_graph_op_count(g) > FUZZ_VERIFY_OPS) return false;
  double work = 0, bytes = 0;
  fuzz_cost(g, &work, &bytes);
  if (bytes > (double)FUZZ_VERIFY_BYTES || work > FUZZ_VERIFY_WORK) {
    return false;
  }
  const mp_graph *cg = mp_pass_report_constants(mp_model_pass_report(m));
  if (!cg) return true;
  double cwork = 0, cbytes = 0;
  fuzz_cost(cg, &cwork, &cbytes);
  return cbytes > (double)FUZZ_VERIFY_BYTES || work + cwork <= FUZZ_VERIFY_WORK;
}

/* How far the last input got, for the replay driver's report. */
static char fuzz_outcome[160];

#define FUZZ_ALLOC_CAP ((size_t)256 << 20)

static size_t fuzz_big; /* the largest allocation refused, 0: none */

static void *fuzz_alloc_fn(void *ud, void *p, size_t n) {
  (void)ud;
  if (n == 0) {
    free(p);
    return NULL;
  }
  if (n > FUZZ_ALLOC_CAP) {
    if (n > fuzz_big) fuzz_big = n;
    return NULL;
  }
  return realloc(p, n);
}

static const mp_alloc fuzz_alloc = {fuzz_alloc_fn, NULL};

static void fuzz_bug(const char *what, const mp_error *err) {
  fprintf(stderr, "fuzz_model: %s: %s\n", what, err ? err->msg : "");
  abort();
}

/* An expected error must still be a one-line message, and a planned
 * model must never fail mplan's own checks. */
static void fuzz_expect(mp_status st, const mp_error *err, const char *where) {
  if (st == MP_OK) return;
  if (st == MP_ERR_INTERNAL || st == MP_ERR_CHECK) fuzz_bug(where, err);
  if (err->msg[0] == '\0') fuzz_bug("empty error message", err);
  if (strchr(err->msg, '\n')) fuzz_bug("error message of several lines", err);
}

static void fuzz_verify(const mp_model *m) {
  if (!fuzz_small(m)) return;
  mp_verify_opts vo = {.poison = true,
                       .seed = 1,
                       .budget_ms = 20,
                       .budget_work = 200000, /* a replay places alike */
                       .max_bytes = FUZZ_VERIFY_BYTES,
                       .max_ops = FUZZ_VERIFY_OP_RUNS};
  mp_verify_result res = {0};
  mp_error err = {0};
  mp_status st = mp_verify_run(m, &vo, &fuzz_alloc, &res, &err);
  fuzz_expect(st, &err, "verify");
  if (st == MP_OK) {
    if (res.n_events) fuzz_bug("the planned run reported an event", NULL);
    if (res.outputs_equal != res.outputs) {
      fuzz_bug("an output differs from the no-reuse run", NULL);
    }
    snprintf(fuzz_outcome, sizeof fuzz_outcome,
             "verified: %zu ops, %zu outputs identical", res.ops,
             res.outputs_equal);
  } else {
    snprintf(fuzz_outcome, sizeof fuzz_outcome, "planned; not run: %.120s",
             err.msg);
  }
  mp_verify_result_release(&res, &fuzz_alloc);
}

/* A C header holds no trigraph, and its macros are upper-case
 * identifiers, each defined once, whatever the names of the model
 * (reports/c_header.c invariants 1 to 3). */
static void fuzz_c_header(const mp_buf *b) {
  if (b->len < 2) return;
  for (size_t i = 0; i + 1 < b->len; i++) {
    if (b->data[i] == '?' && b->data[i + 1] == '?') {
      fuzz_bug("C header: a trigraph", NULL);
    }
  }
  mp_strmap *ids = NULL;
  mp_strpool *pool = NULL;
  mp_error err = {0};
  if (mp_strmap_create(NULL, &ids, &err) != MP_OK ||
      mp_strpool_create(NULL, &pool, &err) != MP_OK) {
    mp_strmap_destroy(ids);
    return;
  }
  const char *p = b->data, *end = b->data + b->len;
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    if (!nl) nl = end;
    if ((size_t)(nl - p) > 8 && memcmp(p, "#define ", 8) == 0) {
      const char *id = p + 8, *e = id;
      while (e < nl && *e != ' ') {
        if (!((*e >= 'A' && *e <= 'Z') || (*e >= '0' && *e <= '9') ||
              *e == '_')) {
          fuzz_bug("C header: a macro name is not an identifier", NULL);
        }
        e++;
      }
      const char *kept = mp_strpool_add(pool, id, (size_t)(e - id));
      if (kept && mp_strmap_put(ids, kept, 0, NULL, &err) == MP_ERR_BAD_INPUT) {
        fuzz_bug("C header: a macro defined twice", NULL);
      }
    }
    p = nl + 1;
  }
  mp_strmap_destroy(ids);
  mp_strpool_destroy(pool);
}

/* The reports of a plan render, and its plan/1 JSON is a plan: loaded
 * back, its stored placements validate and its arena is the plan's. */
static void fuzz_reports(const mp_model *m, const mp_plan *plan,
                         const char *model_path) {
  mp_buf b;
  mp_buf_init(&b, NULL);
  mp_error err = {0};
  mp_status st = mp_report_explain(m, plan, NULL, &b, &err);
  fuzz_expect(st, &err, "explain");
  if (st == MP_OK) st = mp_report_passes(m, &b, &err);
  fuzz_expect(st, &err, "passes table");
  mp_buf_free(&b);
  mp_buf_init(&b, NULL);
  /* the weights' bytes too (--c-header-weights), for tensors of up to
   * 4 KiB: zeros in place of what mplan compile would give */
  static const unsigned char zeros[4096];
  const mp_graph *g = mp_model_graph(m);
  size_t nt = g ? mp_graph_tensor_count(g) : 0;
  const unsigned char **data = calloc(nt + 1, sizeof *data);
  for (size_t t = 0; data && t < nt; t++) {
    const mp_tensor *x = mp_graph_tensor(g, t);
    if (x->kind == MP_TENSOR_WEIGHT && x->bytes <= sizeof zeros) {
      data[t] = zeros;
    }
  }
  mp_c_header_opts co = {.data = data};
  if (st == MP_OK) st = mp_report_c_header(m, plan, "fuzz", &co, &b, &err);
  free(data);
  fuzz_expect(st, &err, "C header");
  if (st == MP_OK) fuzz_c_header(&b);
  mp_buf_free(&b);
  mp_buf_init(&b, NULL);
  if (st == MP_OK) st = mp_report_plan_json(m, plan, &b, &err);
  fuzz_expect(st, &err, "plan JSON");
  char path[96];
  snprintf(path, sizeof path, "%s.plan.json", model_path);
  FILE *f = st == MP_OK ? fopen(path, "wb") : NULL;
  bool wrote = f && fwrite(b.data, 1, b.len, f) == b.len;
  if (f && fclose(f) != 0) wrote = false;
  mp_buf_free(&b);
  if (!wrote) {
    unlink(path);
    return;
  }
  mp_model *back = NULL;
  mp_load_opts lo = {.allow_plan = true};
  st = mp_model_load(path, &lo, &fuzz_alloc, &back, &err);
  if (st != MP_OK) fuzz_bug("the plan JSON does not load", &err);
  if (st == MP_OK) {
    const char *const *names;
    const size_t *cap, *limit;
    size_t n = mp_model_plan_regions(back, &names, &cap, &limit);
    st = mp_validate(mp_model_problem(back), mp_model_placements(back), limit,
                     n, NULL, &err);
    if (st != MP_OK) fuzz_bug("the plan JSON does not validate", &err);
    if (mp_model_arena_bytes(back) != mp_plan_summary_of(plan)->arena_bytes) {
      fuzz_bug("the plan JSON's arena is not the plan's", NULL);
    }
  }
  mp_model_destroy(back);
  unlink(path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* The loader reads files; the suffix only names the input. */
  char path[64];
  bool json = size && data[0] == '{';
  snprintf(path, sizeof path, "/tmp/mplan-fuzz-%ld.%s", (long)getpid(),
           json ? "json" : "onnx");
  FILE *f = fopen(path, "wb");
  if (!f) return 0;
  bool wrote = fwrite(data, 1, size, f) == size;
  if (fclose(f) != 0 || !wrote) return 0;

  mp_error err = {0};
  uint32_t passes = 0;
  /* every pass; on small inputs of odd size the tile pass too (not in
   * "all": its search builds and measures a graph per candidate, seconds
   * under the sanitizers on a graph the size of MobileNetV2) */
  bool tile = (size & 1) && size <= 8192;
  if (mp_passes_parse(tile ? "all,tile" : "all", &passes, &err) != MP_OK) {
    fuzz_bug("passes", &err);
  }
  mp_load_opts lo = {.order = MP_ORDER_MEMORY,
                     .passes = passes,
                     .order_work = 200000, /* a replay searches alike */
                     .order_budget_ms = 20,
                     .order_states = 4096};
  mp_model *m = NULL;
  fuzz_big = 0;
  mp_status st = mp_model_load(path, &lo, &fuzz_alloc, &m, &err);
  fuzz_expect(st, &err, "load");
  if (st != MP_OK) {
    snprintf(fuzz_outcome, sizeof fuzz_outcome, "refused: %.140s", err.msg);
  }
  if (st == MP_OK) {
    const mp_problem *p = mp_model_problem(m);
    mp_plan_opts po = {.budget_ms = 20, .budget_work = 200000};
    mp_plan *plan = NULL;
    st = mp_plan_solve(p, &po, &plan, &err);
    fuzz_expect(st, &err, "plan");
    if (st != MP_OK) {
      snprintf(fuzz_outcome, sizeof fuzz_outcome, "no plan: %.140s", err.msg);
    }
    if (st == MP_OK) {
      /* mp_plan_solve validated it; so does an independent call here,
       * against the one region the plan reports. */
      size_t region = mp_plan_summary_of(plan)->arena_bytes;
      st = mp_validate(p, mp_plan_placements(plan), &region, 1, NULL, &err);
      if (st != MP_OK) fuzz_bug("the plan failed validation", &err);
      snprintf(fuzz_outcome, sizeof fuzz_outcome, "planned: %zu B arena",
               mp_plan_summary_of(plan)->arena_bytes);
      fuzz_reports(m, plan, path);
      mp_plan_destroy(plan);
      fuzz_verify(m);
    }
    mp_model_destroy(m);
  }
  unlink(path);
  if (fuzz_big) {
    char what[96];
    snprintf(what, sizeof what, "asked for %zu bytes for an input of %zu",
             fuzz_big, size);
    fuzz_bug(what, NULL);
  }
  return 0;
}

#ifdef FUZZ_JSON_MUTATOR
/* Structure-aware mutation of graph JSON (libFuzzer's custom mutator):
 * byte flips rarely get past the JSON parser, so a JSON input is parsed
 * with cJSON and one node of its tree changed the way bad graphs differ
 * from good ones: a number made 0, -1, huge or fractional; a string
 * replaced by another string of the document (dangling names, cycles,
 * duplicates) or by a dtype or an op type; an array element dropped,
 * repeated or swapped; an object member dropped. Anything else, and
 * it fails, gets libFuzzer's own mutations; ONNX is mutated as protobuf
 * (fz_mutate_pb). */
#include <cJSON.h>

#include "mplan/buf.h"

size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size,
                               unsigned int seed);

typedef struct fz_nodes {
  cJSON *all[4096];
  size_t n;
} fz_nodes;

static void fz_collect(cJSON *j, fz_nodes *nodes) {
  for (; j; j = j->next) {
    if (nodes->n < sizeof nodes->all / sizeof nodes->all[0]) {
      nodes->all[nodes->n++] = j;
    }
    fz_collect(j->child, nodes);
  }
}

static uint32_t fz_rand(uint32_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 17;
  *s ^= *s << 5;
  return *s;
}

static cJSON *fz_pick(fz_nodes *nodes, uint32_t *s, int type) {
  for (int tries = 0; tries < 64 && nodes->n; tries++) {
    cJSON *j = nodes->all[fz_rand(s) % nodes->n];
    if (type < 0 || (j->type & 0xff) == type) return j;
  }
  return NULL;
}

static void fz_mutate_tree(cJSON *root, uint32_t *s) {
  static const double numbers[] = {
      0,   -1,           1,    2,     3,  7,           255, 256, 0.5, 65536,
      1e9, 2147483648.0, -2.5, 1e300, 64, 4294967297.0};
  static const char *const words[] = {"f32",
                                      "f16",
                                      "bf16",
                                      "i8",
                                      "u8",
                                      "i32",
                                      "i64",
                                      "bool",
                                      "Conv",
                                      "Add",
                                      "Relu",
                                      "Concat",
                                      "Sum",
                                      "Mul",
                                      "MaxPool",
                                      "Gemm",
                                      "Reshape",
                                      "Transpose",
                                      "Softmax",
                                      "Identity",
                                      "Cast",
                                      "Split",
                                      "Slice",
                                      "MatMul",
                                      "input",
                                      "weight",
                                      "output",
                                      "retained",
                                      "NCHW",
                                      "NHWC",
                                      "BatchNormalization",
                                      "GlobalAveragePool",
                                      "AveragePool",
                                      "Clip"};
  fz_nodes *nodes = malloc(sizeof *nodes);
  if (!nodes) return;
  nodes->n = 0;
  fz_collect(root, nodes);
  cJSON *j;
  switch (fz_rand(s) % 5) {
    case 0:
      if ((j = fz_pick(nodes, s, cJSON_Number))) {
        double v =
            fz_rand(s) % 2
                ? numbers[fz_rand(s) % (sizeof numbers / sizeof numbers[0])]
                : j->valuedouble + (fz_rand(s) % 2 ? 1 : -1);
        cJSON_SetNumberValue(j, v);
      }
      break;
    case 1:
    case 2: {
      cJSON *to = fz_pick(nodes, s, cJSON_String);
      if (!to) break;
      cJSON *from = fz_pick(nodes, s, cJSON_String);
      const char *text =
          fz_rand(s) % 2 && from
              ? from->valuestring
              : words[fz_rand(s) % (sizeof words / sizeof words[0])];
      char *copy = malloc(strlen(text) + 1);
      if (!copy) break;
      strcpy(copy, text);
      cJSON_free(to->valuestring);
      to->valuestring = copy;
      break;
    }
    case 3:
      if ((j = fz_pick(nodes, s, cJSON_Array)) && cJSON_GetArraySize(j) > 0) {
        int n = cJSON_GetArraySize(j), k = (int)(fz_rand(s) % (unsigned)n);
        switch (fz_rand(s) % 3) {
          case 0:
            cJSON_DeleteItemFromArray(j, k);
            break;
          case 1:
            cJSON_AddItemToArray(
                j, cJSON_Duplicate(cJSON_GetArrayItem(j, k), true));
            break;
          default: {
            int m = (int)(fz_rand(s) % (unsigned)n);
            cJSON *a = cJSON_Duplicate(cJSON_GetArrayItem(j, k), true);
            cJSON *b = cJSON_Duplicate(cJSON_GetArrayItem(j, m), true);
            if (a && b) {
              cJSON_ReplaceItemInArray(j, k, b);
              cJSON_ReplaceItemInArray(j, m, a);
            } else {
              cJSON_Delete(a);
              cJSON_Delete(b);
            }
          }
        }
      }
      break;
    default:
      if ((j = fz_pick(nodes, s, cJSON_Object)) && j->child) {
        int n = cJSON_GetArraySize(j);
        cJSON_DeleteItemFromArray(j, (int)(fz_rand(s) % (unsigned)n));
      }
      break;
  }
  free(nodes);
}

/* ---- protobuf (ONNX) --------------------------------------------------
 * The wire format as a tree: a length-delimited field that parses as a
 * message of valid fields is one (a string that happens to parse is
 * mutated as a message; fuzzing does not mind). One node is changed the
 * way fuzz_inputs.py changes ONNX files: a varint made 0, -1, huge or off
 * by one (dims, dtypes, attribute ints, opset versions), a field dropped
 * or repeated (inputs, nodes, dims), two strings or byte strings swapped
 * (names: dangling edges, cycles), a byte string cut short (raw_data). */

typedef struct pb_node {
  uint32_t field, wire;
  uint64_t v;       /* wire 0, 1, 5 */
  const uint8_t *p; /* wire 2 leaf */
  size_t len;
  int child, next; /* first child (messages), next sibling; -1: none */
} pb_node;

typedef struct pb_tree {
  pb_node n[8192];
  int count;
} pb_tree;

static bool pb_varint(const uint8_t **p, const uint8_t *end, uint64_t *v) {
  *v = 0;
  for (int sh = 0; sh < 64 && *p < end; sh += 7) {
    uint8_t b = *(*p)++;
    *v |= (uint64_t)(b & 0x7f) << sh;
    if (!(b & 0x80)) return true;
  }
  return false;
}

/* Parses [p, end) as a message into t; the index of its first node (a
 * sibling chain) in *first, -1 when empty. false: not a message. */
static bool pb_parse(pb_tree *t, const uint8_t *p, const uint8_t *end,
                     int depth, int *first) {
  int prev = -1;
  *first = -1;
  while (p < end) {
    uint64_t tag, v = 0;
    if (!pb_varint(&p, end, &tag) || (tag >> 3) == 0 || tag >> 32 ||
        t->count >= (int)(sizeof t->n / sizeof t->n[0])) {
      return false;
    }
    int at = t->count++;
    pb_node *n = &t->n[at];
    *n = (pb_node){
        (uint32_t)(tag >> 3), (uint32_t)(tag & 7), 0, NULL, 0, -1, -1};
    if (n->wire == 0) {
      if (!pb_varint(&p, end, &n->v)) return false;
    } else if (n->wire == 1 || n->wire == 5) {
      size_t w = n->wire == 1 ? 8 : 4;
      if ((size_t)(end - p) < w) return false;
      memcpy(&n->v, p, w);
      p += w;
    } else if (n->wire == 2) {
      if (!pb_varint(&p, end, &v) || v > (uint64_t)(end - p)) return false;
      n->p = p;
      n->len = (size_t)v;
      int mark = t->count, kid;
      if (depth < 12 && v > 0 && pb_parse(t, p, p + v, depth + 1, &kid)) {
        t->n[at].child = kid;
      } else {
        t->count = mark; /* a leaf: forget what the attempt parsed */
      }
      p += v;
    } else {
      return false; /* groups: not in ONNX */
    }
    if (prev >= 0) {
      t->n[prev].next = at;
    } else {
      *first = at;
    }
    prev = at;
  }
  return true;
}

static void pb_put_varint(mp_buf *b, uint64_t v) {
  do {
    uint8_t c = (uint8_t)(v & 0x7f);
    v >>= 7;
    char ch = (char)(c | (v ? 0x80 : 0));
    mp_buf_append(b, &ch, 1);
  } while (v);
}

static void pb_write(const pb_tree *t, int i, mp_buf *b, int depth) {
  for (; i >= 0; i = t->n[i].next) {
    const pb_node *n = &t->n[i];
    pb_put_varint(b, (uint64_t)n->field << 3 | n->wire);
    if (n->wire == 0) {
      pb_put_varint(b, n->v);
    } else if (n->wire == 1 || n->wire == 5) {
      mp_buf_append(b, (const char *)&n->v, n->wire == 1 ? 8 : 4);
    } else if (n->child >= 0 && depth < 16) {
      mp_buf sub;
      mp_buf_init(&sub, NULL);
      pb_write(t, n->child, &sub, depth + 1);
      pb_put_varint(b, sub.len);
      mp_buf_append(b, sub.data, sub.len);
      mp_buf_free(&sub);
    } else {
      pb_put_varint(b, n->len);
      mp_buf_append(b, (const char *)n->p, n->len);
    }
  }
}

static size_t fz_mutate_pb(uint8_t *data, size_t size, size_t max_size,
                           uint32_t *s) {
  static const uint64_t varints[] = {0,  1,          2,           3,
                                     7,  16,         255,         65536,
                                     13, 2147483648, 4294967297,  UINT64_MAX,
                                     10, 1ull << 40, (uint64_t)-2};
  pb_tree *t = malloc(sizeof *t);
  if (!t) return 0;
  t->count = 0;
  int root;
  size_t out = 0;
  if (pb_parse(t, data, data + size, 0, &root) && t->count > 0) {
    unsigned rounds = 1 + fz_rand(s) % 3;
    for (unsigned r = 0; r < rounds; r++) {
      int k = (int)(fz_rand(s) % (unsigned)t->count);
      pb_node *n = &t->n[k];
      switch (fz_rand(s) % 4) {
        case 0: /* a value */
          if (n->wire == 0) {
            n->v = fz_rand(s) % 3 ? varints[fz_rand(s) % 15]
                                  : n->v + (fz_rand(s) % 2 ? 1 : (uint64_t)-1);
          } else if (n->wire == 2 && n->child < 0 && n->len) {
            n->len = fz_rand(s) % n->len; /* cut short */
          }
          break;
        case 1: { /* swap two leaves' bytes (names) */
          int j = (int)(fz_rand(s) % (unsigned)t->count);
          pb_node *m = &t->n[j];
          if (n->wire == 2 && m->wire == 2 && n->child < 0 && m->child < 0) {
            const uint8_t *p = n->p;
            size_t len = n->len;
            n->p = m->p, n->len = m->len;
            m->p = p, m->len = len;
          }
          break;
        }
        case 2: /* drop it: its siblings skip it */
          for (int i = 0; i < t->count; i++) {
            if (t->n[i].next == k) t->n[i].next = n->next;
            if (t->n[i].child == k) t->n[i].child = n->next;
          }
          if (root == k) root = n->next;
          break;
        default: /* repeat it (the copy shares its children) */
          if (t->count < (int)(sizeof t->n / sizeof t->n[0])) {
            int c = t->count++;
            t->n[c] = t->n[k];
            t->n[k].next = c;
          }
          break;
      }
    }
    mp_buf b;
    mp_buf_init(&b, NULL);
    pb_write(t, root, &b, 0);
    if (!b.failed && b.len <= max_size && b.len > 0) {
      out = b.len;
      memcpy(data, b.data, out);
    }
    mp_buf_free(&b);
  }
  free(t);
  return out;
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size,
                               unsigned int seed) {
  uint32_t s = seed | 1u;
  if (size == 0 || fz_rand(&s) % 8 == 0) {
    return LLVMFuzzerMutate(data, size, max_size);
  }
  if (data[0] != '{') {
    size_t n = fz_mutate_pb(data, size, max_size, &s);
    return n ? n : LLVMFuzzerMutate(data, size, max_size);
  }
  cJSON *root = cJSON_ParseWithLength((const char *)data, size);
  if (!root) return LLVMFuzzerMutate(data, size, max_size);
  unsigned rounds = 1 + fz_rand(&s) % 3;
  for (unsigned r = 0; r < rounds; r++) fz_mutate_tree(root, &s);
  char *text = cJSON_PrintUnformatted(root);
  cJSON_Delete(root);
  size_t n = text ? strlen(text) : 0;
  if (!text || n > max_size) {
    cJSON_free(text);
    return LLVMFuzzerMutate(data, size, max_size);
  }
  memcpy(data, text, n);
  cJSON_free(text);
  return n;
}
#endif

#ifdef FUZZ_REPLAY
/* fuzz_model_replay FILE...: each file once, as libFuzzer would, and how
 * far it got. A file named grown_* (an input fuzzing grew that reaches
 * the end) must still be verified: exit status 1 otherwise. */
int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: fuzz_model_replay FILE...\n");
    return 2;
  }
  int status = 0;
  for (int i = 1; i < argc; i++) {
    char *buf = NULL;
    size_t len = 0;
    mp_error err = {0};
    if (mp_file_read(argv[i], NULL, &buf, &len, &err) != MP_OK) {
      fprintf(stderr, "fuzz_model_replay: %s\n", err.msg);
      return 2;
    }
    LLVMFuzzerTestOneInput((const uint8_t *)buf, len);
    mp_free(NULL, buf);
    printf("%s: %s\n", argv[i], fuzz_outcome);
    const char *base = strrchr(argv[i], '/');
    base = base ? base + 1 : argv[i];
    if (strncmp(base, "grown_", 6) == 0 &&
        strncmp(fuzz_outcome, "verified", 8) != 0) {
      fprintf(stderr, "fuzz_model_replay: %s no longer verifies\n", argv[i]);
      status = 1;
    }
  }
  return status;
}
#endif
