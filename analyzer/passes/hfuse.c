/*
 * hfuse.c -- horizontal fusion (seed 000 section 3.2, seed 002 section
 * 2.3, "Q/K/V"): MatMul or Gemm siblings that read the same first input
 * become one op with mplan.horizontal = N, inputs [A, B1..BN] (Gemm:
 * [A, B1..BN, C1..CN]) and outputs [Y1..YN] (docs/ir-conventions.md).
 *
 * Siblings qualify when they have the same type, one output, no mplan.*
 * attribute and no fused activation, A as their first input (read once),
 * constant B (and C for Gemm, which must be present), and -- for Gemm --
 * the same alpha, beta, transA and transB. Constant B and C mean no
 * sibling depends on another, so the fused op can run where the first
 * sibling ran.
 *
 * The register cap (seed 000 section 4): a horizontal group keeps one
 * accumulator and one weight vector per product plus the shared input,
 * 2N + 1 values of ceil(512 / VLEN) registers each; siblings are split
 * into groups of at most the width that fits in 31 registers. Horizontal
 * fusion removes no intermediate (saved_bytes 0): it saves N - 1 kernel
 * launches, and it makes every Y live from the same step, which the
 * per-pass table shows if it moves the peak.
 *
 * Invariants:
 *   1. Siblings are grouped in consumer order of A; a sibling joins at
 *      most one group (taken[]); groups of one are not fused.
 *   2. The fused op keeps the first sibling's name, type, attributes and
 *      position; outputs keep their names, in sibling order.
 */
#include <string.h>

#include "pass.h"

#define HF_MAX 64
#define HF_REGS 31
#define HF_LOOP_BITS 512

static bool hf_const(const pass_ctx *c, int32_t t) {
  return t >= 0 && mp_graph_tensor(c->g, (size_t)t)->kind == MP_TENSOR_WEIGHT;
}

static bool hf_candidate(const pass_ctx *c, const mp_op *op, int32_t a) {
  bool gemm = strcmp(op->type, "Gemm") == 0;
  if (!gemm && strcmp(op->type, "MatMul") != 0) return false;
  if (op->n_outputs != 1 || rw_has_mplan_attr(op) ||
      mp_op_attr(op, "fused_activation") || op->n_inputs < 2 ||
      op->inputs[0] != a || pass_reads(op, a) != 1 ||
      !hf_const(c, op->inputs[1])) {
    return false;
  }
  return !gemm || (op->n_inputs == 3 && hf_const(c, op->inputs[2]));
}

static bool hf_attr_eq(const mp_op *x, const mp_op *y, const char *name,
                       double def) {
  const mp_attr *a = mp_op_attr(x, name), *b = mp_op_attr(y, name);
  double va = !a ? def : a->kind == MP_ATTR_FLOAT ? a->f : (double)a->i;
  double vb = !b ? def : b->kind == MP_ATTR_FLOAT ? b->f : (double)b->i;
  return va == vb;
}

static bool hf_compatible(const mp_op *x, const mp_op *y) {
  if (strcmp(x->type, y->type) != 0) return false;
  if (strcmp(x->type, "Gemm") != 0) return true;
  return hf_attr_eq(x, y, "alpha", 1) && hf_attr_eq(x, y, "beta", 1) &&
         hf_attr_eq(x, y, "transA", 0) && hf_attr_eq(x, y, "transB", 0);
}

static uint32_t hf_width(uint32_t vlen) {
  if (!vlen) return HF_MAX;
  uint32_t lmul = (HF_LOOP_BITS + vlen - 1) / vlen;
  uint32_t values = HF_REGS / lmul; /* 2N + 1 <= values */
  return values >= 3 ? (values - 1) / 2 : 1;
}

static mp_status hf_apply(pass_ctx *c, const uint32_t *sib, uint32_t n,
                          mp_error *err) {
  const mp_graph *g = c->g;
  const mp_op *first = mp_graph_op(g, sib[0]);
  bool gemm = strcmp(first->type, "Gemm") == 0;
  uint32_t n_in = 1 + n * (gemm ? 2 : 1);
  int32_t *in = rw_alloc(c->rw, n_in, sizeof *in, err);
  int32_t *out = rw_alloc(c->rw, n, sizeof *out, err);
  if (!in || !out) return MP_ERR_NOMEM;
  in[0] = first->inputs[0];
  mp_buf names, types;
  mp_buf_init(&names, mp_graph_alloc(g));
  mp_buf_init(&types, mp_graph_alloc(g));
  for (uint32_t k = 0; k < n; k++) {
    const mp_op *op = mp_graph_op(g, sib[k]);
    in[1 + k] = op->inputs[1];
    if (gemm) in[1 + n + k] = op->inputs[2];
    out[k] = op->outputs[0];
    if (k) {
      mp_buf_printf(&names, "%s%s", k > 1 ? "," : "", op->name);
      mp_buf_printf(&types, "%s%s", k > 1 ? "," : "", op->type);
      rw_kill(c->rw, sib[k]);
    }
  }
  mp_attr h = {.name = "mplan.horizontal", .kind = MP_ATTR_INT, .i = n};
  mp_status st = rw_set_inputs(c->rw, sib[0], in, n_in, err);
  if (st == MP_OK) st = rw_set_outputs(c->rw, sib[0], out, n, err);
  if (st == MP_OK) st = rw_set_attr(c->rw, sib[0], &h, err);
  if (st == MP_OK) st = mp_buf_status(&names, "hfuse", err);
  if (st == MP_OK) st = mp_buf_status(&types, "hfuse", err);
  uint32_t lmul = c->vlen ? (HF_LOOP_BITS + c->vlen - 1) / c->vlen : 1;
  uint32_t regs = (2 * n + 1) * lmul;
  mp_fusion f = {
      .kind = MP_FUSION_HORIZONTAL,
      .op = first->name,
      .head_type = first->type,
      .absorbed = mp_buf_str(&types),
      .absorbed_ops = mp_buf_str(&names),
      .intermediates = "",
      .steps = n - 1,
      .registers = regs,
      .spills = c->vlen ? (int32_t)(regs > HF_REGS ? regs - HF_REGS : 0) : -1};
  if (st == MP_OK) st = pass_fusion(c, &f, err);
  if (st == MP_OK) pass_tally(c, first->type);
  mp_buf_free(&names);
  mp_buf_free(&types);
  return st;
}

/* The siblings reading tensor a, in op order, split by the cap. */
static mp_status hf_tensor(pass_ctx *c, int32_t a, size_t *capped,
                           mp_error *err) {
  const mp_graph *g = c->g;
  const mp_tensor *t = mp_graph_tensor(g, (size_t)a);
  uint32_t sib[HF_MAX];
  bool *taken = NULL;
  uint32_t width = hf_width(c->vlen);
  mp_status st = MP_OK;
  if (t->n_consumers < 2 || width < 2) return MP_OK;
  taken = mp_calloc(mp_graph_alloc(g), t->n_consumers, sizeof *taken);
  if (!taken) {
    return mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory",
                        mp_graph_source(g));
  }
  for (uint32_t i = 0; st == MP_OK && i < t->n_consumers; i++) {
    const mp_op *lead = mp_graph_op(g, t->consumers[i]);
    if (taken[i] || !hf_candidate(c, lead, a)) continue;
    uint32_t n = 0, all = 0;
    for (uint32_t j = i; j < t->n_consumers; j++) {
      const mp_op *op = mp_graph_op(g, t->consumers[j]);
      if (taken[j] || !hf_candidate(c, op, a) || !hf_compatible(lead, op))
        continue;
      all++;
      if (n == width || n == HF_MAX) continue;
      sib[n++] = t->consumers[j];
      taken[j] = true;
    }
    if (all > n) (*capped)++;
    if (n >= 2) st = hf_apply(c, sib, n, err);
  }
  mp_free(mp_graph_alloc(g), taken);
  return st;
}

mp_status pass_hfuse(pass_ctx *c, mp_error *err) {
  size_t capped = 0;
  mp_status st = MP_OK;
  for (size_t t = 0; st == MP_OK && t < mp_graph_tensor_count(c->g); t++) {
    st = hf_tensor(c, (int32_t)t, &capped, err);
  }
  if (c->vlen) {
    mp_buf_printf(&c->note, "VLEN %u: at most %u siblings per group%s", c->vlen,
                  hf_width(c->vlen),
                  capped ? ", some groups split by the register cap" : "");
  }
  return st;
}
