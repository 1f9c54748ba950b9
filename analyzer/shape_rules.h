/*
 * shape_rules.h -- what a shape rule sees and the helpers rules share.
 * Private to analyzer/shape*.c.
 *
 * A rule reads c->in[k] (the facts about input k: dtype, concrete dims and,
 * for small constants, values) and the op's attributes, and writes c->out[k]
 * through sh_set (and sh_set_ints / sh_set_floats for values). It returns
 *   MP_OK              outputs set;
 *   MP_ERR_UNSUPPORTED it cannot say (a value it needs is not known, a
 *                      data-dependent shape): not an error, the outputs
 *                      stay pending unless declared;
 *   anything else      an error set with sh_fail (inputs contradict the op).
 * The driver calls a rule only when every present input is known.
 */
#ifndef MPLAN_SHAPE_RULES_H
#define MPLAN_SHAPE_RULES_H

#include "mplan/graph.h"

/* Bounds every dim and shape a rule sees (shape.c invariant 6). */
#define SH_DIM_MAX ((int64_t)1 << 48)
#define SH_ELEMS_MAX ((int64_t)1 << 48)

/* The number of elements of a shape, INT64_MAX when it overflows or a dim
 * is negative (so that "n > MP_VALUE_MAX" tests stay right). */
int64_t sh_dims_elems(uint32_t rank, const int64_t *d);

typedef struct sh_fact {
  bool present; /* the input is given (optional inputs may be omitted) */
  mp_dtype dt;
  uint32_t rank;
  int64_t d[MP_MAX_RANK];
  const mp_value *v; /* small constant contents, or NULL */
} sh_fact;

typedef struct sh_out {
  bool set;
  mp_dtype dt;
  uint32_t rank;
  int64_t d[MP_MAX_RANK];
  bool has_value;
  size_t n;
  int64_t *i; /* MP_VALUE_MAX slots each, owned by the driver */
  double *f;
  bool is_float;
} sh_out;

typedef struct sh_ctx {
  const mp_graph *g;
  const mp_op *op;
  int64_t opset; /* default-domain opset; 0 when unknown */
  uint32_t n_in;
  const sh_fact *in;
  uint32_t n_out;
  sh_out *out;
  mp_error *err;
  uint32_t exact; /* a bound rule's outputs (bit k) whose shape is exact,
                     not a bound (shape.c invariant 7) */
} sh_ctx;

typedef mp_status (*sh_rule_fn)(sh_ctx *c);

/* ---- helpers (shape.c) --------------------------------------------------- */

/* An error naming the file, the op and its type, then the message. */
mp_status sh_fail(sh_ctx *c, const char *fmt, ...) MP_PRINTF(2, 3);

/* Input k when present, else NULL. */
const sh_fact *sh_in(const sh_ctx *c, uint32_t k);

/* Sets output k (ignored when the op has fewer outputs). */
void sh_set(sh_ctx *c, uint32_t k, mp_dtype dt, uint32_t rank,
            const int64_t *d);

/* Sets output k's values (after sh_set); n must equal its element count
 * and be at most MP_VALUE_MAX, else nothing is kept. */
void sh_set_ints(sh_ctx *c, uint32_t k, const int64_t *v, size_t n);
void sh_set_floats(sh_ctx *c, uint32_t k, const double *v, size_t n);

int64_t sh_attr_i(const sh_ctx *c, const char *name, int64_t def);
double sh_attr_f(const sh_ctx *c, const char *name, double def);
const char *sh_attr_s(const sh_ctx *c, const char *name, const char *def);
/* An INTS attribute (NULL when absent; *n its length). */
const int64_t *sh_attr_ints(const sh_ctx *c, const char *name, size_t *n);
const double *sh_attr_floats(const sh_ctx *c, const char *name, size_t *n);
bool sh_has_attr(const sh_ctx *c, const char *name);

/* Input k's values as integers (NULL when not known). */
const int64_t *sh_ints(const sh_ctx *c, uint32_t k, size_t *n);
/* Input k's values as doubles, converting integers (false when unknown);
 * buf holds at least MP_VALUE_MAX. */
bool sh_doubles(const sh_ctx *c, uint32_t k, double *buf, size_t *n);

/* Element count of a fact (saturating; facts are checked on the way in). */
int64_t sh_elems(const sh_fact *f);

/* Normalises axis into [0, rank) (negative counts from the end). */
mp_status sh_axis(sh_ctx *c, int64_t axis, uint32_t rank, uint32_t *out);

/* Numpy broadcasting of a and b into out (rank *r). */
mp_status sh_broadcast(sh_ctx *c, uint32_t ra, const int64_t *a, uint32_t rb,
                       const int64_t *b, uint32_t *r, int64_t *out);

bool sh_is_float(mp_dtype t);

/* ---- rules by family ------------------------------------------------------
 */

/* shape_elementwise.c */
mp_status sh_unary(sh_ctx *c);
mp_status sh_unary_bool(sh_ctx *c);
mp_status sh_binary(sh_ctx *c);
mp_status sh_compare(sh_ctx *c);
mp_status sh_variadic(sh_ctx *c);
mp_status sh_where(sh_ctx *c);
mp_status sh_cast(sh_ctx *c);
mp_status sh_castlike(sh_ctx *c);
mp_status sh_dropout(sh_ctx *c);
mp_status sh_quantize(sh_ctx *c);
mp_status sh_dequantize(sh_ctx *c);
mp_status sh_dyn_quantize(sh_ctx *c);
mp_status sh_prelu(sh_ctx *c);
mp_status sh_isx(sh_ctx *c);

/* shape_nn.c */
mp_status sh_conv(sh_ctx *c);
mp_status sh_conv_transpose(sh_ctx *c);
mp_status sh_pool(sh_ctx *c);
mp_status sh_global_pool(sh_ctx *c);
mp_status sh_gemm(sh_ctx *c);
mp_status sh_matmul_nbits(sh_ctx *c);
mp_status sh_matmul(sh_ctx *c);
mp_status sh_batchnorm(sh_ctx *c);
mp_status sh_layernorm(sh_ctx *c);
mp_status sh_attention(sh_ctx *c);
mp_status sh_rnn(sh_ctx *c);
mp_status sh_resize(sh_ctx *c);
mp_status sh_upsample(sh_ctx *c);
mp_status sh_depth_to_space(sh_ctx *c);
mp_status sh_space_to_depth(sh_ctx *c);
mp_status sh_grid_sample(sh_ctx *c);
mp_status sh_roi_align(sh_ctx *c);
mp_status sh_loss(sh_ctx *c);
mp_status sh_max_unpool(sh_ctx *c);
mp_status sh_dft(sh_ctx *c);
/* shape_tensor.c: data-dependent outputs at their bounds (shape.c
 * invariant 7) */
mp_status sh_nonzero_bound(sh_ctx *c);
mp_status sh_compress_bound(sh_ctx *c);
mp_status sh_unique_bound(sh_ctx *c);
mp_status sh_nms_bound(sh_ctx *c);
mp_status sh_stft(sh_ctx *c);
mp_status sh_mel_weight_matrix(sh_ctx *c);

/* shape_control.c */
mp_status sh_if(sh_ctx *c);
mp_status sh_loop(sh_ctx *c);
mp_status sh_loop_enter(sh_ctx *c);
mp_status sh_scan(sh_ctx *c);
mp_status sh_scan_enter(sh_ctx *c);

/* shape_tensor.c */
mp_status sh_shape(sh_ctx *c);
mp_status sh_size(sh_ctx *c);
mp_status sh_concat(sh_ctx *c);
mp_status sh_split(sh_ctx *c);
mp_status sh_slice(sh_ctx *c);
mp_status sh_gather(sh_ctx *c);
mp_status sh_gather_elements(sh_ctx *c);
mp_status sh_gather_nd(sh_ctx *c);
mp_status sh_reshape(sh_ctx *c);
mp_status sh_flatten(sh_ctx *c);
mp_status sh_squeeze(sh_ctx *c);
mp_status sh_unsqueeze(sh_ctx *c);
mp_status sh_transpose(sh_ctx *c);
mp_status sh_pad(sh_ctx *c);
mp_status sh_expand(sh_ctx *c);
mp_status sh_tile(sh_ctx *c);
mp_status sh_range(sh_ctx *c);
mp_status sh_constant_of_shape(sh_ctx *c);
mp_status sh_reduce(sh_ctx *c);
mp_status sh_argminmax(sh_ctx *c);
mp_status sh_onehot(sh_ctx *c);
mp_status sh_topk(sh_ctx *c);
mp_status sh_eyelike(sh_ctx *c);
mp_status sh_same_as_first(sh_ctx *c);
mp_status sh_det(sh_ctx *c);
mp_status sh_multinomial(sh_ctx *c);
mp_status sh_random(sh_ctx *c);
mp_status sh_random_like(sh_ctx *c);
mp_status sh_window(sh_ctx *c);
mp_status sh_compress(sh_ctx *c);
mp_status sh_nonzero(sh_ctx *c);
mp_status sh_einsum(sh_ctx *c);

#endif /* MPLAN_SHAPE_RULES_H */
