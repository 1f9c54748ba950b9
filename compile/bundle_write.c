/*
 * bundle_write.c -- the bundle writer (mplan/compile.h, format in
 * mplan/bundle.h).
 *
 * Regions: every plan region is split into a persistent region (its
 * resident and retained buffers) and a scratch region (its activations),
 * each covering exactly the plan offsets of its buffers (rounded to the
 * largest alignment), so that a runtime allocates the tiers separately
 * (seed 002 section 2.4) and events translate back to plan offsets
 * (region base + offset).
 *
 * Invariants:
 *   1. Buffer i of the bundle is buffer i of the problem; tensor t is
 *      graph tensor t; op k is the op at step k.
 *   2. A buffer's data starts at its planned offset plus its red zone;
 *      its data size is the largest of its tensors; what the plan
 *      reserved past that is the zone after.
 *   3. The checksum is computed over the finished bytes last.
 *   4. A weight the fold pass made from a constant subgraph too large for
 *      inference to evaluate (o->constants, mp_pass_report_constants)
 *      gets the bytes that subgraph computes when mplan's runtime runs
 *      it: compiled like any graph (topological order, its own plan, the
 *      same weight bytes and seed), run once, its outputs read by name.
 *      So a folded graph's bundle holds the bytes its unfolded graph
 *      would have computed at run time.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lower.h"
#include "mplan/backend.h"
#include "mplan/compile.h"
#include "mplan/file.h"
#include "mplan/lifetime.h"
#include "mplan/plan.h"
#include "mplan/runner.h"
#include "mplan/runtime.h"
#include "mplan/schedule.h"

typedef struct bw {
  const mp_graph *g;
  const uint32_t *order;
  const mp_problem *p;
  const mp_placement *pl;
  const size_t *tb;
  const mp_compile_opts *o;
  const mp_alloc *a;
  mp_error *err;
  mp_buf strings, regions, buffers, tensors, ops, refs, params, io, weights;
  uint32_t n_regions, n_refs, n_params;
  uint32_t *buf_region;  /* per buffer: bundle region */
  uint64_t *reg_base;    /* per bundle region */
  int32_t *first, *last; /* per tensor */
  uint32_t *step_of;     /* per graph op: its step */
  uint32_t *loop_of;     /* per graph op: the op record's loop field */
  mp_buf cdata;          /* invariant 4: the constants graph's outputs */
  int64_t *c_off;        /* per constants-graph tensor: offset in cdata */
} bw;

static void bw_u8(mp_buf *b, uint8_t v) {
  mp_buf_append(b, (const char *)&v, 1);
}

static void bw_u16(mp_buf *b, uint16_t v) {
  bw_u8(b, (uint8_t)v);
  bw_u8(b, (uint8_t)(v >> 8));
}

static void bw_u32(mp_buf *b, uint32_t v) {
  bw_u16(b, (uint16_t)v);
  bw_u16(b, (uint16_t)(v >> 16));
}

static void bw_u64(mp_buf *b, uint64_t v) {
  bw_u32(b, (uint32_t)v);
  bw_u32(b, (uint32_t)(v >> 32));
}

/* Interns nothing: every name is appended (names are few). Control
 * characters, which the loader refuses, become '?'. */
static uint32_t bw_str(bw *w, const char *s) {
  uint32_t at = (uint32_t)w->strings.len;
  for (; *s; s++) {
    char c = ((unsigned char)*s < 0x20 || *s == 0x7f) ? '?' : *s;
    mp_buf_append(&w->strings, &c, 1);
  }
  bw_u8(&w->strings, 0);
  return at;
}

static size_t bw_buffer_of(const bw *w, size_t t) {
  return w->tb ? w->tb[t] : t;
}

/* ---- regions and buffers ------------------------------------------------- */

static mp_status bw_regions(bw *w) {
  size_t nb = mp_problem_count(w->p);
  uint32_t n_plan = 0;
  for (size_t i = 0; i < nb; i++) {
    if (w->pl[i].region + 1 > n_plan) n_plan = w->pl[i].region + 1;
  }
  w->buf_region = mp_calloc(w->a, nb + 1, sizeof *w->buf_region);
  w->reg_base = mp_calloc(w->a, 2 * n_plan + 2, sizeof *w->reg_base);
  if (!w->buf_region || !w->reg_base) {
    return mp_error_set(w->err, MP_ERR_NOMEM, "out of memory");
  }
  for (uint32_t r = 0; r < n_plan; r++) {
    for (int tier = 0; tier < 2; tier++) {
      uint64_t lo = UINT64_MAX, hi = 0;
      size_t align = 16;
      for (size_t i = 0; i < nb; i++) {
        const mp_buffer *b = mp_problem_buffer(w->p, i);
        bool persistent = b->cls != MP_CLASS_ACTIVATION;
        if (w->pl[i].region != r || persistent != (tier == 0)) continue;
        if (w->pl[i].offset < lo) lo = w->pl[i].offset;
        if (w->pl[i].offset + b->padded > hi) hi = w->pl[i].offset + b->padded;
        if (b->alignment > align) align = b->alignment;
      }
      if (lo == UINT64_MAX) continue;
      if (align > 4096) {
        return mp_error_set(w->err, MP_ERR_UNSUPPORTED,
                            "%s: alignment %zu exceeds the runtime's 4096",
                            mp_graph_source(w->g), align);
      }
      lo &= ~(uint64_t)(align - 1);
      uint32_t id = w->n_regions++;
      w->reg_base[id] = lo;
      for (size_t i = 0; i < nb; i++) {
        const mp_buffer *b = mp_problem_buffer(w->p, i);
        bool persistent = b->cls != MP_CLASS_ACTIVATION;
        if (w->pl[i].region == r && persistent == (tier == 0)) {
          w->buf_region[i] = id;
        }
      }
      char name[64], plan_name[32];
      if (r < w->o->n_region_names && w->o->region_names[r]) {
        snprintf(plan_name, sizeof plan_name, "%s", w->o->region_names[r]);
      } else {
        snprintf(plan_name, sizeof plan_name, r == 0 ? "arena" : "region%u", r);
      }
      snprintf(name, sizeof name, "%s/%s", plan_name,
               tier == 0 ? "persistent" : "scratch");
      bw_u32(&w->regions, bw_str(w, name));
      bw_u32(&w->regions, (uint32_t)tier);
      bw_u64(&w->regions, hi - lo);
      bw_u64(&w->regions, lo);
      bw_u32(&w->regions, (uint32_t)align);
      bw_u32(&w->regions, bw_str(w, plan_name));
    }
  }
  return MP_OK;
}

static mp_status bw_buffers(bw *w) {
  size_t nb = mp_problem_count(w->p), nt = mp_graph_tensor_count(w->g);
  int32_t steps = (int32_t)mp_graph_op_count(w->g);
  for (size_t i = 0; i < nb; i++) {
    const mp_buffer *b = mp_problem_buffer(w->p, i);
    uint64_t data = 0;
    bool output = false;
    for (size_t t = 0; t < nt; t++) {
      const mp_tensor *x = mp_graph_tensor(w->g, t);
      if (bw_buffer_of(w, t) != i) continue;
      if (x->bytes > data) data = x->bytes;
      output = output || x->kind == MP_TENSOR_OUTPUT;
    }
    uint32_t rzb = w->o->rz_before ? w->o->rz_before[i] : 0;
    if (data + rzb > b->size) {
      return mp_error_set(w->err, MP_ERR_INTERNAL,
                          "buffer '%s': %llu data bytes and a %u-byte red "
                          "zone exceed its planned %zu",
                          b->name, (unsigned long long)data, rzb, b->size);
    }
    uint64_t rza = b->size - rzb - data;
    bool resident = b->cls != MP_CLASS_ACTIVATION;
    bw_u32(&w->buffers, bw_str(w, b->name));
    bw_u32(&w->buffers, w->buf_region[i]);
    bw_u64(&w->buffers, w->pl[i].offset + rzb - w->reg_base[w->buf_region[i]]);
    bw_u64(&w->buffers, data);
    bw_u32(&w->buffers, rzb);
    bw_u32(&w->buffers, rza > UINT32_MAX ? UINT32_MAX : (uint32_t)rza);
    bw_u32(&w->buffers, (uint32_t)(resident ? -1 : (int32_t)b->first));
    bw_u32(&w->buffers, (uint32_t)(resident ? steps : (int32_t)b->last));
    bw_u32(&w->buffers, b->cls == MP_CLASS_ACTIVATION ? 0
                        : b->cls == MP_CLASS_RESIDENT ? 1
                                                      : 2);
    bw_u32(&w->buffers, output ? 1 : 0);
  }
  return MP_OK;
}

/* ---- weights ----------------------------------------------------------------
 */

static const mp_attr *bw_attr(const mp_op *op, const char *name,
                              mp_attr_kind kind) {
  for (uint32_t a = 0; a < op->n_attrs; a++) {
    if (strcmp(op->attrs[a].name, name) == 0 && op->attrs[a].kind == kind) {
      return &op->attrs[a];
    }
  }
  return NULL;
}

static const char *bw_attr_s(const mp_op *op, const char *name) {
  const mp_attr *a = bw_attr(op, name, MP_ATTR_STRING);
  return a ? a->s : NULL;
}

/* Input slot of a fused op that an absorbed epilogue op brought in
 * (docs/ir-conventions.md: the head's own inputs, then each absorbed
 * op's inputs but the chained value, then a DequantizeLinear prologue's
 * scale and zero point): its type ("BatchNormalization",
 * "QuantizeLinear", or "epilogue" for the others, whose weights have no
 * special range) and its slot in that op. false: the head's own input. */
static bool bw_epilogue_role(const mp_op *op, uint32_t slot, const char **type,
                             uint32_t *at_slot) {
  const char *epi = bw_attr_s(op, "mplan.epilogue");
  const char *pro = bw_attr_s(op, "mplan.prologue");
  uint32_t own = mp_op_head_arity(op);
  if (!epi || slot < own) return false;
  char list[2048];
  snprintf(list, sizeof list, "%s", epi);
  uint32_t fixed = 0, clips = 0;
  int k = 0;
  for (char *p = list;; p++, k++) { /* count, then walk */
    char *end = strchr(p, ',');
    if (end) *end = '\0';
    int e = lw_epilogue_inputs(p);
    if (e == -1 && lw_clip_attrs(op, k)) e = 0;
    fixed += e > 0 ? (uint32_t)e : 0;
    clips += e == -1;
    if (end) *end = ',';
    if (!end) break;
    p = end;
  }
  mp_prologue pe[2];
  uint32_t n_dq = 0;
  if (pro) (void)mp_op_prologues(op, pe, &n_dq);
  uint32_t tail = 2 * n_dq;
  uint32_t rest =
      op->n_inputs > own + fixed + tail ? op->n_inputs - own - fixed - tail : 0;
  uint32_t at = own;
  k = 0;
  for (char *p = list;; p++, k++) {
    char *end = strchr(p, ',');
    if (end) *end = '\0';
    int e = lw_epilogue_inputs(p);
    if (e == -1 && lw_clip_attrs(op, k)) e = 0;
    uint32_t n = e == -1 ? rest / (clips ? clips : 1) : e > 0 ? (uint32_t)e : 0;
    if (slot < at + n && lw_qoperand(p, NULL)) {
      /* its operand (an activation), then a DequantizeLinear's slots */
      *type = slot == at ? "epilogue" : "DequantizeLinear";
      *at_slot = slot - at;
      return true;
    }
    if (slot < at + n) {
      *type = strcmp(p, "BatchNormalization") == 0 ? "BatchNormalization"
              : strcmp(p, "QuantizeLinear") == 0   ? "QuantizeLinear"
              : strcmp(p, "DequantizeLinear") == 0 ? "DequantizeLinear"
                                                   : "epilogue";
      *at_slot = slot - at + 1;
      return true;
    }
    at += n;
    if (!end) break;
    p = end;
  }
  *type = "epilogue";
  *at_slot = 0;
  return true;
}

/* Input slot of a head with DequantizeLinear or Cast prologues
 * (mplan.prologue "<kind>:<k>[,<kind>:<k>]") that an absorbed op brought
 * in: its input k, and each DequantizeLinear's scale and zero point, the
 * last inputs in the entries' order (only the last entry's zero point may
 * be omitted: the last input is then a float scale). */
static bool bw_prologue_role(const bw *w, const mp_op *op, uint32_t slot,
                             const char **type, uint32_t *at_slot) {
  mp_prologue pe[2];
  uint32_t n_dq = 0;
  int n = mp_op_prologues(op, pe, &n_dq);
  for (int j = 0; j < n; j++) {
    bool dq = strcmp(pe[j].kind, "DequantizeLinear") == 0;
    if ((dq || strcmp(pe[j].kind, "Cast") == 0) && pe[j].input == slot) {
      *type = dq ? "DequantizeLinear" : "Cast";
      *at_slot = 0;
      return true;
    }
  }
  if (!n_dq) return false;
  int32_t last = op->inputs[op->n_inputs - 1];
  uint32_t tail = 2 * n_dq;
  if (last >= 0 &&
      mp_dtype_is_float(mp_graph_tensor(w->g, (size_t)last)->dtype)) {
    tail--;
  }
  if (op->n_inputs < tail || slot < op->n_inputs - tail) return false;
  *type = "DequantizeLinear";
  *at_slot = (slot - (op->n_inputs - tail)) % 2 ? 2 : 1;
  return true;
}

/* The role of a weight: the first op reading it and the input slot, the
 * slot it had before a horizontal fusion ([A, B1..BN, C1..CN]: every B
 * is a B, every C a C) or the absorbed op and slot it came from in a
 * vertical one or a prologue, so that a fused graph gets the weights of
 * the unfused one. */
static const mp_op *bw_role(const bw *w, size_t t, const char **type,
                            uint32_t *slot) {
  *type = "";
  *slot = 0;
  for (size_t k = 0; k < mp_graph_op_count(w->g); k++) {
    const mp_op *op = mp_graph_op(w->g, w->order[k]);
    for (uint32_t i = 0; i < op->n_inputs; i++) {
      if (op->inputs[i] == (int32_t)t) {
        const mp_attr *h = bw_attr(op, "mplan.horizontal", MP_ATTR_INT);
        int64_t n = h ? h->i : 0;
        *type = op->type;
        *slot = n > 0 && i > 0 ? (i <= n ? 1 : 2) : i;
        if (!bw_prologue_role(w, op, i, type, slot)) {
          (void)bw_epilogue_role(op, i, type, slot);
        }
        return op;
      }
    }
  }
  return NULL;
}

/* Pseudo-random weights, scaled by role so that activations keep a
 * useful range: products' weights +-sqrt(3/fan_in) (int8: +-127), biases
 * small, BatchNormalization scales and variances in [0.5, 1.5],
 * quantized values and zero points (a DequantizeLinear's, a MatMulNBits'
 * packed bytes) their type's whole range, scales in [0.002, 0.02]. */
static void bw_random(const bw *w, size_t t, int kd, unsigned char *dst,
                      size_t n) {
  const mp_tensor *x = mp_graph_tensor(w->g, t);
  const char *type;
  uint32_t slot;
  const mp_op *op = bw_role(w, t, &type, &slot);
  /* The stream is the weight's name, not its index: passes remove and
   * renumber tensors but keep the weights' names, so a graph and its
   * rewritten form get the same weights. */
  uint64_t h = 0xcbf29ce484222325u; /* FNV-1a */
  for (const char *s = x->name; *s; s++) {
    h = (h ^ (unsigned char)*s) * 0x100000001b3u;
  }
  mp_seed_fill(kd, dst, n, w->o->seed ^ 0x77656967687473u, h);
  double lo = -1, hi = 1;
  bool product =
      (strcmp(type, "Conv") == 0 || strcmp(type, "Gemm") == 0 ||
       strcmp(type, "MatMul") == 0 || strcmp(type, "ConvTranspose") == 0);
  if (product && slot == 1) {
    double fan = 1;
    for (uint32_t i = 1; i < x->rank; i++) {
      fan *= (double)mp_graph_dim_of(w->g, &x->shape[i]);
    }
    if (strcmp(type, "Conv") != 0 && x->rank > 0)
      fan = (double)mp_graph_dim_of(w->g, &x->shape[0]);
    hi = sqrt(3.0 / (fan > 0 ? fan : 1));
    lo = -hi;
    if (kd == MP_KD_I8) return; /* full int8 range */
  } else if (product && slot == 2) {
    lo = -0.1;
    hi = 0.1;
    if (kd == MP_KD_I32) {
      /* about half a unit after the shift: a larger bias would pin whole
       * channels at 0 or 6 after Relu6 and starve later layers */
      lo = -64;
      hi = 64;
    }
  } else if ((strcmp(type, "BatchNormalization") == 0 &&
              (slot == 1 || slot == 4)) ||
             ((strcmp(type, "LayerNormalization") == 0 ||
               strcmp(type, "RMSNormalization") == 0) &&
              slot == 1)) {
    lo = 0.5;
    hi = 1.5;
  } else if (strcmp(type, "BatchNormalization") == 0 ||
             strcmp(type, "LayerNormalization") == 0) {
    lo = -0.1;
    hi = 0.1;
  } else if (strcmp(type, "com.microsoft::MatMulNBits") == 0) {
    if (slot == 1 || (slot == 3 && kd == MP_KD_U8)) {
      return; /* packed values and zero points */
    }
    if (slot == 4 && kd == MP_KD_I32) { /* g_idx: each element a block */
      const mp_attr *bs = bw_attr(op, "block_size", MP_ATTR_INT);
      int64_t nb = bs && bs->i > 0 ? ((int64_t)n + bs->i - 1) / bs->i : 1;
      for (size_t i = 0; i < n; i++) {
        mp_k_store(
            dst, kd, i,
            (double)(mp_k_load_i(dst, kd, i) & 0xffff) * (double)nb / 65536.0);
      }
      return;
    }
    if (slot == 3) { /* float zero points: a third of a step either side */
      const mp_attr *a = bw_attr(op, "bits", MP_ATTR_INT);
      int64_t bits = a && a->i >= 2 && a->i <= 8 ? a->i : 4;
      lo = (double)(1 << (bits - 1)) - 0.33;
      hi = lo + 0.66;
    } else {
      lo = slot == 2 ? 0.002 : -0.1; /* scales as below; a bias small */
      hi = slot == 2 ? 0.02 : 0.1;
    }
  } else if (strcmp(type, "DequantizeLinear") == 0 && slot != 1 &&
             !mp_kd_is_float(kd)) {
    return; /* quantized values and zero points: the whole type's range */
  } else if (strcmp(type, "DequantizeLinear") == 0 && slot == 1) {
    lo = 0.002; /* scales: positive, a product's weights of about 0.1 */
    hi = 0.02;
  } else if (!mp_kd_is_float(kd)) {
    lo = 0;
    hi = 1;
  }
  if (!mp_kd_is_float(kd) && kd != MP_KD_I32) {
    for (size_t i = 0; i < n; i++) mp_k_store(dst, kd, i, 0);
    return;
  }
  for (size_t i = 0; i < n; i++) {
    double u = (mp_k_load(dst, kd, i) + (mp_kd_is_float(kd) ? 1 : 0)) / 2;
    if (!mp_kd_is_float(kd))
      u = (double)((mp_k_load_i(dst, kd, i) & 0xffff)) / 65536.0;
    mp_k_store(dst, kd, i, lo + (hi - lo) * u);
  }
}

/* The name weight t has in the ONNX model: its own, or, for a weight that
 * is also a graph output (the importer names it OUTPUT.value or
 * OUTPUT.valueK and copies it into OUTPUT with an Identity), OUTPUT's. */
static const char *bw_data_name(const bw *w, size_t t) {
  const mp_tensor *x = mp_graph_tensor(w->g, t);
  for (uint32_t c = 0; c < x->n_consumers; c++) {
    const mp_op *op = mp_graph_op(w->g, x->consumers[c]);
    if (strcmp(op->type, "Identity") != 0 || op->n_outputs != 1) continue;
    const mp_tensor *y = mp_graph_tensor(w->g, (size_t)op->outputs[0]);
    size_t n = strlen(y->name);
    if (y->kind == MP_TENSOR_OUTPUT && strncmp(x->name, y->name, n) == 0 &&
        strncmp(x->name + n, ".value", 6) == 0) {
      return y->name;
    }
  }
  return x->name;
}

/* Tensor x's element count (its bytes are not a multiple of it for the
 * 4-bit types). */
static size_t bw_elems(const bw *w, const mp_tensor *x) {
  size_t n = 1;
  for (uint32_t i = 0; i < x->rank; i++) {
    n *= (size_t)mp_graph_dim_of(w->g, &x->shape[i]); /* sized: bytes fit */
  }
  return n;
}

static mp_status bw_weight(bw *w, size_t t, uint64_t *off) {
  const mp_tensor *x = mp_graph_tensor(w->g, t);
  int kd = lw_kdtype(x->dtype);
  size_t n = bw_elems(w, x);
  /* a failed buffer stops growing: stop padding it too */
  while (w->weights.len % MP_BUNDLE_WEIGHT_ALIGN && !w->weights.failed) {
    bw_u8(&w->weights, 0);
  }
  *off = w->weights.len;
  const void *src;
  size_t len;
  mp_dtype dt;
  int32_t ct = -1;
  if (w->c_off && mp_graph_find_tensor(w->o->constants, x->name, &ct) &&
      w->c_off[ct] >= 0) {
    const mp_tensor *y = mp_graph_tensor(w->o->constants, (size_t)ct);
    if (y->dtype != x->dtype || y->bytes != x->bytes) {
      return mp_error_set(w->err, MP_ERR_INTERNAL,
                          "%s: weight '%s': the folded constant is %s of %zu "
                          "bytes, the tensor %s of %zu",
                          mp_graph_source(w->g), x->name,
                          mp_dtype_name(y->dtype), y->bytes,
                          mp_dtype_name(x->dtype), x->bytes);
    }
    mp_buf_append(&w->weights, w->cdata.data + w->c_off[ct], y->bytes);
    return MP_OK;
  }
  if (mp_onnx_data_find(w->o->onnx, x->name, &src, &len, &dt) ||
      (w->o->onnx &&
       mp_onnx_data_find(w->o->onnx, bw_data_name(w, t), &src, &len, &dt))) {
    if (dt != x->dtype || len != x->bytes) {
      return mp_error_set(w->err, MP_ERR_BAD_INPUT,
                          "%s: weight '%s': the model's data is %s of %zu "
                          "bytes, the tensor %s of %zu",
                          mp_graph_source(w->g), x->name, mp_dtype_name(dt),
                          len, mp_dtype_name(x->dtype), x->bytes);
    }
    mp_buf_append(&w->weights, src, len);
    return MP_OK;
  }
  size_t at = w->weights.len;
  if (x->bytes > MP_BUNDLE_MAX_REGION - at) {
    return mp_error_set(w->err, MP_ERR_BAD_INPUT,
                        "%s: weight '%s' of %zu bytes takes the weights above "
                        "the bundle limit of %llu bytes",
                        mp_graph_source(w->g), x->name, x->bytes,
                        (unsigned long long)MP_BUNDLE_MAX_REGION);
  }
  mp_buf_repeat(&w->weights, '\0', x->bytes);
  if (w->weights.failed) {
    return mp_error_set(w->err, MP_ERR_NOMEM,
                        "%s: weight '%s' of %zu bytes: out of memory",
                        mp_graph_source(w->g), x->name, x->bytes);
  }
  unsigned char *dst = (unsigned char *)w->weights.data + at;
  if (x->value && x->value->n == n) {
    for (size_t i = 0; i < n; i++) {
      if (x->value->f) {
        mp_k_store(dst, kd, i, x->value->f[i]);
      } else {
        uint64_t u = (uint64_t)x->value->i[i];
        if (mp_kd_bits(kd) == 4) {
          mp_k_store_nibble(dst, kd, i, x->value->i[i]);
        } else {
          memcpy(dst + i * mp_kd_size(kd), &u, mp_kd_size(kd));
        }
      }
    }
  } else if (w->o->onnx && x->kind == MP_TENSOR_WEIGHT) {
    /* an ONNX weight's bytes come from the model, never made up */
    return mp_error_set(w->err, MP_ERR_BAD_INPUT,
                        "%s: weight '%s': the model holds no data for it",
                        mp_graph_source(w->g), x->name);
  } else {
    bw_random(w, t, kd, dst, n);
  }
  return MP_OK;
}

/* ---- tensors and ops --------------------------------------------------------
 */

static void bw_lifetimes(bw *w) {
  size_t nt = mp_graph_tensor_count(w->g), steps = mp_graph_op_count(w->g);
  for (size_t t = 0; t < nt; t++) w->first[t] = w->last[t] = -1;
  for (size_t k = 0; k < steps; k++) {
    const mp_op *op = mp_graph_op(w->g, w->order[k]);
    for (uint32_t i = 0; i < op->n_outputs; i++) {
      w->first[op->outputs[i]] = w->last[op->outputs[i]] = (int32_t)k;
    }
    for (uint32_t i = 0; i < op->n_inputs; i++) {
      if (op->inputs[i] >= 0) w->last[op->inputs[i]] = (int32_t)k;
    }
  }
  for (size_t t = 0; t < nt; t++) {
    if (mp_graph_tensor(w->g, t)->kind == MP_TENSOR_OUTPUT) {
      w->last[t] = (int32_t)steps - 1;
    }
  }
}

/* The ops a Loop or Scan runs again on every iteration
 * (mp_graph_loop_of): loop_of gets 1 + the step of that node, or 0. */
static mp_status bw_loops(bw *w) {
  return mp_graph_loop_of(w->g, w->step_of, w->a, w->loop_of, w->err);
}

static mp_status bw_tensors(bw *w) {
  size_t nt = mp_graph_tensor_count(w->g);
  for (size_t t = 0; t < nt; t++) {
    const mp_tensor *x = mp_graph_tensor(w->g, t);
    int kd = lw_kdtype(x->dtype);
    if (!kd) {
      return mp_error_set(w->err, MP_ERR_UNSUPPORTED,
                          "%s: tensor '%s' is %s, which the runtime does not "
                          "support",
                          mp_graph_source(w->g), x->name,
                          mp_dtype_name(x->dtype));
    }
    static const uint8_t kinds[MP_TENSOR_KIND_COUNT] = {
        [MP_TENSOR_ACTIVATION] = MP_BT_ACTIVATION,
        [MP_TENSOR_INPUT] = MP_BT_INPUT,
        [MP_TENSOR_WEIGHT] = MP_BT_WEIGHT,
        [MP_TENSOR_OUTPUT] = MP_BT_OUTPUT,
        [MP_TENSOR_RETAINED] = MP_BT_RETAINED};
    uint64_t data_off = 0, data_len = 0;
    /* a graph input whose value is bound (--value) carries it: the plan
     * (an If's branch, shape math) holds for that value only, so a run
     * without an inputs file feeds it (runtime/runner.c); an empty
     * input (ONNX allows them) has nothing to carry */
    bool bound = x->kind == MP_TENSOR_INPUT && x->value && x->bytes &&
                 x->value->n == bw_elems(w, x);
    if (x->kind == MP_TENSOR_WEIGHT || bound) {
      mp_status st = bw_weight(w, t, &data_off);
      if (st != MP_OK) return st;
      data_len = x->bytes;
    }
    bw_u32(&w->tensors, bw_str(w, x->name));
    bw_u32(&w->tensors, (uint32_t)bw_buffer_of(w, t));
    bw_u64(&w->tensors, w->o->tensor_offset ? w->o->tensor_offset[t] : 0);
    bw_u64(&w->tensors, x->bytes);
    bw_u8(&w->tensors, (uint8_t)kd);
    bw_u8(&w->tensors, kinds[x->kind]);
    bw_u8(&w->tensors, (uint8_t)x->rank);
    bw_u8(&w->tensors, 0);
    bw_u32(&w->tensors, 0);
    /* retained state is born where its op writes it */
    bool resident = x->kind == MP_TENSOR_WEIGHT || x->kind == MP_TENSOR_INPUT;
    bw_u32(&w->tensors, (uint32_t)(resident ? -1 : w->first[t]));
    bw_u32(&w->tensors, (uint32_t)w->last[t]);
    bw_u64(&w->tensors, data_off);
    bw_u64(&w->tensors, data_len);
    for (uint32_t d = 0; d < MP_MAX_RANK; d++) {
      bw_u64(&w->tensors,
             d < x->rank ? (uint64_t)mp_graph_dim_of(w->g, &x->shape[d]) : 0);
    }
    bw_u64(&w->tensors, 0); /* reserved */
  }
  return MP_OK;
}

static mp_status bw_ops(bw *w) {
  lw_op *lo = mp_malloc(w->a, sizeof *lo);
  if (!lo) return mp_error_set(w->err, MP_ERR_NOMEM, "out of memory");
  mp_status st = MP_OK;
  for (size_t k = 0; k < mp_graph_op_count(w->g) && st == MP_OK; k++) {
    const mp_op *op = mp_graph_op(w->g, w->order[k]);
    st = lw_lower(w->g, op, lo, w->err);
    if (st != MP_OK) break;
    /* lower.c gives a LOOP its enter op's index; the bundle its step */
    if (lo->kernel == MP_BOP_LOOP) lo->params[1] = w->step_of[lo->params[1]];
    bw_u32(&w->ops, bw_str(w, op->name));
    bw_u32(&w->ops, bw_str(w, op->type));
    bw_u16(&w->ops, (uint16_t)lo->kernel);
    bw_u16(&w->ops, lo->flags);
    bw_u16(&w->ops, (uint16_t)lo->n_in);
    bw_u16(&w->ops, (uint16_t)op->n_outputs);
    bw_u32(&w->ops, w->n_refs);
    bw_u32(&w->ops, w->n_params);
    bw_u32(&w->ops, lo->n_params);
    bw_u32(&w->ops, w->loop_of[w->order[k]]);
    for (uint32_t i = 0; i < lo->n_in; i++) {
      bw_u32(&w->refs, lo->in[i] < 0 ? MP_BUNDLE_NONE : (uint32_t)lo->in[i]);
    }
    for (uint32_t i = 0; i < op->n_outputs; i++) {
      bw_u32(&w->refs, (uint32_t)op->outputs[i]);
    }
    for (uint32_t i = 0; i < lo->n_params; i++)
      bw_u64(&w->params, (uint64_t)lo->params[i]);
    w->n_refs += lo->n_in + op->n_outputs;
    w->n_params += lo->n_params;
  }
  mp_free(w->a, lo);
  return st;
}

static uint32_t bw_io(bw *w, mp_tensor_kind kind) {
  uint32_t n = 0;
  for (size_t t = 0; t < mp_graph_tensor_count(w->g); t++) {
    if (mp_graph_tensor(w->g, t)->kind == kind) {
      bw_u32(&w->io, (uint32_t)t);
      n++;
    }
  }
  return n;
}

static void bw_pad(mp_buf *out, size_t align) {
  while (out->len % align && !out->failed) bw_u8(out, 0);
}

static mp_status bw_assemble(bw *w, uint32_t n_in, uint32_t n_out,
                             mp_buf *out) {
  size_t start = out->len;
  bw_pad(&w->strings, 1);
  mp_buf_append(out, MP_BUNDLE_MAGIC, 8);
  bw_u32(out, MP_BUNDLE_VERSION);
  bw_u32(out, MP_BUNDLE_HEADER);
  bw_u64(out, 0); /* file bytes, patched */
  bw_u32(out, 0); /* CRC, patched */
  bw_u32(out, 0);
  bw_u32(out, (uint32_t)w->strings.len);
  bw_u32(out, w->n_regions);
  bw_u32(out, (uint32_t)mp_problem_count(w->p));
  bw_u32(out, (uint32_t)mp_graph_tensor_count(w->g));
  bw_u32(out, (uint32_t)mp_graph_op_count(w->g));
  bw_u32(out, w->n_refs);
  bw_u32(out, w->n_params);
  bw_u32(out, n_in);
  bw_u32(out, n_out);
  bw_u32(out, 0);
  bw_u64(out, w->weights.len);
  bw_u64(out, 0);
  bw_u64(out, 0);
  mp_buf *secs[] = {&w->strings, &w->regions, &w->buffers, &w->tensors,
                    &w->ops,     &w->refs,    &w->params,  &w->io};
  for (size_t i = 0; i < 8; i++) {
    if (secs[i]->len) mp_buf_append(out, secs[i]->data, secs[i]->len);
    bw_pad(out, i == 7 ? MP_BUNDLE_WEIGHT_ALIGN : 8);
  }
  if (w->weights.len) mp_buf_append(out, w->weights.data, w->weights.len);
  mp_status st = mp_buf_status(out, "bundle", w->err);
  if (st != MP_OK) return st;
  unsigned char *p = (unsigned char *)out->data + start;
  size_t len = out->len - start;
  for (int i = 0; i < 8; i++)
    p[16 + i] = (unsigned char)((uint64_t)len >> (8 * i));
  uint32_t crc = mp_crc32(0, p, len);
  for (int i = 0; i < 4; i++) p[24 + i] = (unsigned char)(crc >> (8 * i));
  return MP_OK;
}

/* Invariant 4: runs the constants graph and keeps its outputs' bytes. */
static mp_status bw_constants(bw *w) {
  const mp_graph *cg = w->o->constants;
  if (!cg || mp_graph_op_count(cg) == 0) return MP_OK;
  const mp_alloc *a = w->a;
  size_t nt = mp_graph_tensor_count(cg);
  uint32_t *order = NULL;
  mp_order_kind used;
  mp_problem *p = NULL;
  mp_plan *plan = NULL;
  mp_bundle *b = NULL;
  mp_rt *rt = NULL;
  mp_buf out;
  mp_buf_init(&out, a);
  mp_buf_init(&w->cdata, a);
  w->c_off = mp_calloc(a, nt + 1, sizeof *w->c_off);
  if (!w->c_off) return mp_error_set(w->err, MP_ERR_NOMEM, "out of memory");
  for (size_t t = 0; t < nt; t++) w->c_off[t] = -1;
  mp_lifetime_opts lo = {0};
  mp_compile_opts co = {.seed = w->o->seed, .onnx = w->o->onnx};
  mp_rt_opts ro = {0};
  mp_status st = mp_schedule(cg, MP_ORDER_TOPO, &order, &used, w->err);
  if (st == MP_OK) st = mp_lifetimes_build(cg, order, &lo, &p, w->err);
  if (st == MP_OK) st = mp_plan_solve(p, NULL, &plan, w->err);
  if (st == MP_OK) {
    st = mp_compile(cg, order, p, mp_plan_placements(plan), NULL, &co, a, &out,
                    w->err);
  }
  if (st == MP_OK) {
    st = mp_bundle_load(mp_graph_source(cg), out.data, out.len, a, &b, w->err);
  }
  if (st == MP_OK) st = mp_rt_create(b, &ro, a, &rt, w->err);
  /* the runtime's messages name the op, not the file */
  bool ran = st == MP_OK;
  if (st == MP_OK) st = mp_rt_run(rt, w->err);
  for (size_t k = 0; st == MP_OK && k < mp_bundle_output_count(b); k++) {
    uint32_t t = mp_bundle_output(b, k);
    const mp_btensor *x = mp_bundle_tensor(b, t);
    int32_t ct = -1;
    if (!mp_graph_find_tensor(cg, x->name, &ct)) continue;
    w->c_off[ct] = (int64_t)w->cdata.len;
    mp_buf_append(&w->cdata, mp_rt_tensor_data(rt, t), (size_t)x->bytes);
  }
  if (st == MP_OK) st = mp_buf_status(&w->cdata, "folded constants", w->err);
  if (st != MP_OK && w->err) {
    char msg[sizeof w->err->msg];
    snprintf(msg, sizeof msg, "%s", w->err->msg);
    if (ran) {
      mp_error_set(w->err, st,
                   "%s: a constant subgraph the fold pass folded: %s",
                   mp_graph_source(cg), msg);
    } else {
      mp_error_set(w->err, st, "%s (a constant subgraph the fold pass folded)",
                   msg);
    }
  }
  mp_rt_destroy(rt);
  mp_bundle_destroy(b);
  mp_buf_free(&out);
  mp_plan_destroy(plan);
  mp_problem_destroy(p);
  mp_free(a, order);
  return st;
}

mp_status mp_compile(const mp_graph *g, const uint32_t *order,
                     const mp_problem *p, const mp_placement *pl,
                     const size_t *tensor_buffer, const mp_compile_opts *o,
                     const mp_alloc *a, mp_buf *out, mp_error *err) {
  mp_compile_opts none = {0};
  bw w;
  memset(&w, 0, sizeof w);
  w.g = g;
  w.order = order;
  w.p = p;
  w.pl = pl;
  w.tb = tensor_buffer;
  w.o = o ? o : &none;
  w.a = a;
  w.err = err;
  mp_buf *bufs[] = {&w.strings, &w.regions, &w.buffers, &w.tensors, &w.ops,
                    &w.refs,    &w.params,  &w.io,      &w.weights};
  for (size_t i = 0; i < 9; i++) mp_buf_init(bufs[i], a);
  size_t nt = mp_graph_tensor_count(g);
  w.first = mp_calloc(a, nt + 1, sizeof *w.first);
  w.last = mp_calloc(a, nt + 1, sizeof *w.last);
  size_t nops = mp_graph_op_count(g);
  w.step_of = mp_calloc(a, nops + 1, sizeof *w.step_of);
  w.loop_of = mp_calloc(a, nops + 1, sizeof *w.loop_of);
  mp_status st = w.first && w.last && w.step_of && w.loop_of
                     ? MP_OK
                     : mp_error_set(err, MP_ERR_NOMEM, "out of memory");
  for (size_t k = 0; st == MP_OK && k < nops; k++) {
    w.step_of[order[k]] = (uint32_t)k;
  }
  if (st == MP_OK) st = bw_constants(&w);
  if (st == MP_OK) bw_str(&w, ""); /* offset 0: the empty name */
  if (st == MP_OK) bw_lifetimes(&w);
  if (st == MP_OK) st = bw_loops(&w);
  if (st == MP_OK) st = bw_regions(&w);
  if (st == MP_OK) st = bw_buffers(&w);
  if (st == MP_OK) st = bw_tensors(&w);
  if (st == MP_OK) st = bw_ops(&w);
  uint32_t n_in = 0, n_out = 0;
  if (st == MP_OK) {
    n_in = bw_io(&w, MP_TENSOR_INPUT);
    n_out = bw_io(&w, MP_TENSOR_OUTPUT);
  }
  for (size_t i = 0; st == MP_OK && i < 9; i++) {
    st = mp_buf_status(bufs[i], "bundle", err);
  }
  if (st == MP_OK) st = bw_assemble(&w, n_in, n_out, out);
  for (size_t i = 0; i < 9; i++) mp_buf_free(bufs[i]);
  mp_free(a, w.buf_region);
  mp_free(a, w.reg_base);
  mp_free(a, w.first);
  mp_free(a, w.last);
  mp_free(a, w.step_of);
  mp_free(a, w.loop_of);
  mp_free(a, w.c_off);
  mp_buf_free(&w.cdata);
  return st;
}

mp_status mp_compile_model(const mp_model *m, const mp_problem *p,
                           const mp_placement *pl, const mp_compile_opts *o,
                           const mp_alloc *a, mp_buf *out, mp_error *err) {
  const mp_graph *g = mp_model_graph(m);
  if (!g) {
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "%s: a %s has no ops to compile (give a graph or an "
                        "ONNX model)",
                        mp_model_path(m),
                        mp_model_format_name(mp_model_format_of(m)));
  }
  size_t steps = mp_graph_op_count(g), nt = mp_graph_tensor_count(g);
  uint32_t *order = mp_calloc(a, steps + 1, sizeof *order);
  size_t *tb = mp_calloc(a, nt + 1, sizeof *tb);
  uint64_t *toff = mp_calloc(a, nt + 1, sizeof *toff);
  mp_onnx_data *od = NULL;
  mp_compile_opts co = o ? *o : (mp_compile_opts){0};
  mp_status st = order && tb && toff
                     ? MP_OK
                     : mp_error_set(err, MP_ERR_NOMEM, "out of memory");
  for (size_t k = 0; st == MP_OK && k < steps; k++) {
    order[k] = mp_model_step_op_index(m, k);
  }
  for (size_t t = 0; st == MP_OK && t < nt; t++) {
    tb[t] = mp_model_tensor_buffer(m, t);
    toff[t] = mp_model_tensor_offset(m, t);
  }
  co.tensor_offset = toff;
  if (!co.constants) {
    co.constants = mp_pass_report_constants(mp_model_pass_report(m));
  }
  if (st == MP_OK && mp_model_format_of(m) == MP_FORMAT_ONNX && !co.onnx) {
    char *data = NULL;
    size_t len = 0;
    st = mp_file_read(mp_model_path(m), a, &data, &len, err);
    if (st == MP_OK)
      st = mp_onnx_data_load(mp_model_path(m), data, len, a, &od, err);
    mp_free(a, data);
    co.onnx = od;
  }
  const mp_backend *be = mp_model_backend(m);
  const char *names[MP_BACKEND_MAX_REGIONS];
  if (be && be->n_regions && !co.region_names) {
    for (size_t r = 0; r < be->n_regions; r++) names[r] = be->regions[r].name;
    co.region_names = names;
    co.n_region_names = be->n_regions;
  }
  if (st == MP_OK) st = mp_compile(g, order, p, pl, tb, &co, a, out, err);
  mp_onnx_data_destroy(od);
  mp_free(a, order);
  mp_free(a, tb);
  mp_free(a, toff);
  return st;
}
