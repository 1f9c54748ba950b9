/*
 * ops_linalg.c -- check and run of Einsum, Det, DFT, STFT and
 * MelWeightMatrix (kernels/k_linalg.c).
 *
 * Einsum parameters (compile/lower.c parses the equation): n_in,
 * n_labels, then per operand its rank and one label per axis, then the
 * output's rank and labels (an ellipsis is already spelled out as
 * labels). Label dims come from the operands: every axis with a label has
 * its dim or 1 (broadcast, stride 0); two axes of one operand with one
 * label (a diagonal) must have the same dim.
 *
 * Invariants (those of ops.c, and): float tensors of one dtype; outputs
 * share no input's bytes. The scalars STFT and MelWeightMatrix read when
 * they run (frame_step, frame_length, the mel parameters) must give the
 * output shape the plan has, or the op fails naming them.
 */
#include "op_ctx.h"

static bool la_float(op_ctx *c, const mp_btensor *t, int d) {
  if (!t || !mp_kd_is_float(t->dtype) || (d && t->dtype != d)) {
    return op_fail(c, "needs float tensors of one dtype");
  }
  return true;
}

/* Decodes the parameters into p (strides from the tensors' shapes) and
 * the output shape; false with a reason on any inconsistency. */
static bool la_einsum_spec(op_ctx *c, mp_keinsum *p, mp_kshape *ys) {
  op_rd r = op_reader(c);
  memset(p, 0, sizeof *p);
  p->n_in = (uint32_t)rd_range(&r, 1, MP_K_MAX_OPERANDS);
  p->n_labels = (uint32_t)rd_range(&r, 0, MP_K_MAX_LABELS);
  if (r.bad || c->op->n_in != p->n_in || c->op->n_out != 1)
    return op_fail(c, "bad arity");
  for (uint32_t l = 0; l < p->n_labels; l++) p->dim[l] = -1;
  for (uint32_t k = 0; k < p->n_in; k++) {
    const mp_btensor *t = op_in(c, k);
    if (!la_float(c, t, op_in(c, 0) ? op_in(c, 0)->dtype : 0)) return false;
    uint32_t rank = (uint32_t)rd_range(&r, 0, MP_K_MAX_RANK);
    if (r.bad || rank != t->shape.rank)
      return op_fail(c, "operand %u: the equation has another rank", k);
    int64_t st[MP_K_MAX_RANK], own[MP_K_MAX_LABELS];
    mp_kshape_strides(&t->shape, st);
    for (uint32_t l = 0; l < p->n_labels; l++) own[l] = -1;
    for (uint32_t a = 0; a < rank; a++) {
      int64_t l = rd_range(&r, 0, (int64_t)p->n_labels - 1);
      if (r.bad) return op_fail(c, "bad parameters");
      int64_t dim = t->shape.dims[a];
      if (own[l] >= 0 && own[l] != dim) {
        return op_fail(c, "operand %u: a diagonal of dims %lld and %lld", k,
                       (long long)own[l], (long long)dim);
      }
      if (own[l] < 0 && dim != 1) {
        if (p->dim[l] > 1 && p->dim[l] != dim) {
          return op_fail(c, "label %lld has dims %lld and %lld", (long long)l,
                         (long long)p->dim[l], (long long)dim);
        }
        p->dim[l] = dim;
      }
      if (own[l] < 0 && dim == 1 && p->dim[l] < 0) p->dim[l] = 1;
      own[l] = dim;
      if (dim != 1) p->stride[k][l] += st[a];
    }
  }
  uint32_t yr = (uint32_t)rd_range(&r, 0, MP_K_MAX_RANK);
  ys->rank = r.bad ? 0 : yr;
  int64_t lab[MP_K_MAX_RANK];
  for (uint32_t a = 0; a < ys->rank; a++) {
    lab[a] = rd_range(&r, 0, (int64_t)p->n_labels - 1);
  }
  if (r.bad || r.at != r.n) return op_fail(c, "bad parameters");
  for (uint32_t l = 0; l < p->n_labels; l++) {
    if (p->dim[l] < 0) return op_fail(c, "label %u is on no operand", l);
  }
  int64_t n = 1;
  for (uint32_t a = ys->rank; a-- > 0;) {
    if (p->ystride[lab[a]]) return op_fail(c, "an output label repeats");
    ys->dims[a] = p->dim[lab[a]];
    p->ystride[lab[a]] = n;
    n *= ys->dims[a];
  }
  /* a label of one element moves nothing: its strides do not matter */
  p->n_out = n;
  return true;
}

static bool la_check_einsum(op_ctx *c) {
  mp_keinsum p;
  mp_kshape ys;
  if (!la_einsum_spec(c, &p, &ys)) return false;
  const mp_btensor *y = op_out(c, 0);
  if (!la_float(c, y, op_in(c, 0)->dtype)) return false;
  c->need_ws += (size_t)p.n_out * sizeof(double);
  return op_out_of_place(c, y, &ys);
}

static bool la_run_einsum(op_ctx *c) {
  mp_keinsum p;
  mp_kshape ys;
  if (!la_einsum_spec(c, &p, &ys)) return false;
  const void *x[MP_K_MAX_OPERANDS];
  for (uint32_t k = 0; k < p.n_in; k++) x[k] = op_pin(c, k);
  mp_k_einsum(op_in(c, 0)->dtype, &p, x, op_pout(c, 0),
              (double *)(void *)c->ws);
  return true;
}

static bool la_check_det(op_ctx *c) {
  const mp_btensor *x = op_in(c, 0);
  if (c->op->n_in != 1 || c->op->n_out != 1 || c->op->n_params)
    return op_fail(c, "bad arity or parameters");
  if (!la_float(c, x, 0)) return false;
  uint32_t r = x->shape.rank;
  if (r < 2 || x->shape.dims[r - 1] != x->shape.dims[r - 2])
    return op_fail(c, "needs square matrices");
  mp_kshape want = {r - 2, {0}};
  for (uint32_t a = 0; a + 2 < r; a++) want.dims[a] = x->shape.dims[a];
  int64_t n = x->shape.dims[r - 1];
  c->need_ws += (size_t)(n * n) * sizeof(double);
  const mp_btensor *y = op_out(c, 0);
  if (!la_float(c, y, x->dtype)) return false;
  return op_out_of_place(c, y, &want);
}

static bool la_run_det(op_ctx *c) {
  const mp_btensor *x = op_in(c, 0);
  int64_t n = x->shape.dims[x->shape.rank - 1];
  mp_k_det(x->dtype, op_div(op_count(x), n * n), n, op_pin(c, 0), op_pout(c, 0),
           (double *)(void *)c->ws);
  return true;
}

/* ---- DFT, STFT, MelWeightMatrix ------------------------------------------ */

/* The longest transform: k * j of two bins stays in an int64. */
#define LA_MAX_DFT ((int64_t)1 << 31)

static bool la_dft_spec(op_ctx *c, mp_kdft *p) {
  op_rd r = op_reader(c);
  const mp_btensor *x = op_in(c, 0), *y = op_out(c, 0);
  int64_t rank = x ? (int64_t)x->shape.rank : 0;
  int64_t axis = rd_range(&r, 0, rank - 2);
  memset(p, 0, sizeof *p);
  p->n = rd_range(&r, 1, LA_MAX_DFT - 1);
  bool onesided = rd_range(&r, 0, 1) != 0;
  p->inverse = rd_range(&r, 0, 1) != 0;
  if (r.bad || r.at != r.n || c->op->n_in != 1 || c->op->n_out != 1)
    return op_fail(c, "bad parameters or arity");
  if (!la_float(c, x, 0) || !la_float(c, y, x->dtype)) return false;
  p->cx = x->shape.dims[rank - 1];
  if (p->cx != 1 && p->cx != 2)
    return op_fail(c, "the last dim of x must be 1 (real) or 2 (complex)");
  p->outer = 1;
  p->inner = 1;
  for (int64_t a = 0; a < axis; a++) p->outer *= x->shape.dims[a];
  for (int64_t a = axis + 1; a < rank - 1; a++) p->inner *= x->shape.dims[a];
  p->len = x->shape.dims[axis];
  p->n_out = onesided ? p->n / 2 + 1 : p->n;
  mp_kshape want = x->shape;
  want.dims[axis] = p->n_out;
  want.dims[rank - 1] = 2;
  return op_out_of_place(c, y, &want);
}

/* A transform of up to this length gets its twiddle tables in the
 * workspace (32 MiB at most); a longer one computes each twiddle where
 * it is used, the same bits (k_linalg.c invariant 3). */
#define LA_DFT_TABLE_MAX ((int64_t)1 << 20)

static bool la_check_dft(op_ctx *c) {
  mp_kdft p;
  if (!la_dft_spec(c, &p)) return false;
  if (p.n <= LA_DFT_TABLE_MAX) {
    c->need_ws += mp_k_dft_workspace(p.n, p.len) * sizeof(double);
  }
  return true;
}

static bool la_run_dft(op_ctx *c) {
  mp_kdft p;
  if (!la_dft_spec(c, &p)) return false;
  mp_k_dft(&p, op_in(c, 0)->dtype, op_pin(c, 0), op_pout(c, 0),
           p.n <= LA_DFT_TABLE_MAX ? (double *)(void *)c->ws : NULL);
  return true;
}

/* One integer scalar of input k (i32 or i64). */
static bool la_int_scalar(op_ctx *c, uint32_t k, bool run, int64_t *v) {
  const mp_btensor *t = op_in(c, k);
  if (!t || (t->dtype != MP_KD_I32 && t->dtype != MP_KD_I64) ||
      op_count(t) != 1) {
    return op_fail(c, "input %u must be one i32 or i64", k);
  }
  *v = run ? mp_k_load_i(op_pin(c, k), t->dtype, 0) : 0;
  return true;
}

/* STFT's shapes; with run, also the scalars it reads (frame_step,
 * frame_length) against the output's shape. */
static bool la_stft_spec(op_ctx *c, bool run, mp_kstft *p) {
  op_rd r = op_reader(c);
  bool onesided = rd_range(&r, 0, 1) != 0;
  const mp_btensor *x = op_in(c, 0), *win = op_in(c, 2), *fl = op_in(c, 3),
                   *y = op_out(c, 0);
  if (r.bad || r.at != r.n || c->op->n_in < 2 || c->op->n_in > 4 ||
      c->op->n_out != 1)
    return op_fail(c, "bad parameters or arity");
  if (!la_float(c, x, 0) || !la_float(c, y, x->dtype)) return false;
  if (x->shape.rank != 3 || (x->shape.dims[2] != 1 && x->shape.dims[2] != 2))
    return op_fail(c, "the signal must be [batch, length, 1 or 2]");
  if (win && (win->shape.rank != 1 || !mp_kd_is_float(win->dtype)))
    return op_fail(c, "window '%s' must be a float vector", win->name);
  if (!win && !fl) return op_fail(c, "needs a window or a frame_length");
  memset(p, 0, sizeof *p);
  p->batch = x->shape.dims[0];
  p->len = x->shape.dims[1];
  p->cx = x->shape.dims[2];
  if (y->shape.rank != 4 || y->shape.dims[0] != p->batch ||
      y->shape.dims[3] != 2) {
    return op_fail(c, "output '%s' must be [%lld, frames, bins, 2]", y->name,
                   (long long)p->batch);
  }
  p->frames = y->shape.dims[1];
  p->n_out = y->shape.dims[2];
  int64_t step, frame_len = 0;
  if (!la_int_scalar(c, 1, run, &step)) return false;
  if (fl && !la_int_scalar(c, 3, run, &frame_len)) return false;
  p->frame = win ? win->shape.dims[0] : frame_len;
  p->step = step;
  if (!run) return op_out_of_place(c, y, &y->shape);
  if (win && fl && frame_len != p->frame) {
    return op_fail(c, "frame_length %lld is not the window's %lld",
                   (long long)frame_len, (long long)p->frame);
  }
  if (step < 1 || p->frame < 1 || p->frame > p->len || p->frame >= LA_MAX_DFT)
    return op_fail(c,
                   "frame_step %lld and frame length %lld do not fit a "
                   "signal of %lld",
                   (long long)step, (long long)p->frame, (long long)p->len);
  int64_t frames = 1 + (p->len - p->frame) / step;
  int64_t bins = onesided ? p->frame / 2 + 1 : p->frame;
  if (frames != p->frames || bins != p->n_out) {
    return op_fail(c,
                   "frame_step %lld and frame length %lld give %lld x %lld "
                   "bins where the plan has %lld x %lld",
                   (long long)step, (long long)p->frame, (long long)frames,
                   (long long)bins, (long long)p->frames, (long long)p->n_out);
  }
  return true;
}

/* The longest frame STFT may take: the window's length, or (frame_length
 * is read only when the op runs) the signal's; la_stft_spec keeps the
 * frame within it. */
static int64_t la_stft_frame_max(op_ctx *c, const mp_kstft *p) {
  const mp_btensor *win = op_in(c, 2);
  return win ? win->shape.dims[0] : p->len;
}

static bool la_check_stft(op_ctx *c) {
  mp_kstft p;
  if (!la_stft_spec(c, false, &p)) return false;
  int64_t n = la_stft_frame_max(c, &p);
  if (n <= LA_DFT_TABLE_MAX) {
    c->need_ws += mp_k_dft_workspace(n, n) * sizeof(double);
  }
  return true;
}

static bool la_run_stft(op_ctx *c) {
  mp_kstft p;
  if (!la_stft_spec(c, true, &p)) return false;
  const mp_btensor *win = op_in(c, 2);
  bool table = la_stft_frame_max(c, &p) <= LA_DFT_TABLE_MAX;
  mp_k_stft(&p, op_in(c, 0)->dtype, op_pin(c, 0), win ? win->dtype : 0,
            win ? op_pin(c, 2) : NULL, op_pout(c, 0),
            table ? (double *)(void *)c->ws : NULL);
  return true;
}

static bool la_mel(op_ctx *c, bool run) {
  const mp_btensor *y = op_out(c, 0);
  if (c->op->n_params || c->op->n_in != 5 || c->op->n_out != 1)
    return op_fail(c, "bad parameters or arity");
  int64_t bins, len, rate;
  if (!la_int_scalar(c, 0, run, &bins) || !la_int_scalar(c, 1, run, &len) ||
      !la_int_scalar(c, 2, run, &rate))
    return false;
  for (uint32_t k = 3; k < 5; k++) {
    const mp_btensor *t = op_in(c, k);
    if (!t || !mp_kd_is_float(t->dtype) || op_count(t) != 1)
      return op_fail(c, "input %u must be one float", k);
  }
  if (!la_float(c, y, 0) || y->shape.rank != 2)
    return op_fail(c, "the output must be a float matrix");
  if (!run) return op_out_of_place(c, y, &y->shape);
  if (bins < 1 || len < 1 || rate < 1 || len / 2 + 1 != y->shape.dims[0] ||
      bins != y->shape.dims[1]) {
    return op_fail(c,
                   "num_mel_bins %lld, dft_length %lld and sample_rate "
                   "%lld do not give the plan's %lld x %lld",
                   (long long)bins, (long long)len, (long long)rate,
                   (long long)y->shape.dims[0], (long long)y->shape.dims[1]);
  }
  double lo = mp_k_load(op_pin(c, 3), op_in(c, 3)->dtype, 0);
  double hi = mp_k_load(op_pin(c, 4), op_in(c, 4)->dtype, 0);
  if (!(lo >= 0 && hi >= lo && hi <= 1e9))
    return op_fail(c, "lower_edge_hertz %g and upper_edge_hertz %g", lo, hi);
  if (!mp_k_mel_weight_matrix(bins, len, (double)rate, lo, hi, y->dtype,
                              op_pout(c, 0))) {
    return op_fail(c, "a band edge falls outside the %lld spectrogram bins",
                   (long long)y->shape.dims[0]);
  }
  return true;
}

bool op_linalg_dispatch(op_ctx *c, bool run, bool *handled) {
  *handled = true;
  switch (c->op->kernel) {
    case MP_BOP_EINSUM:
      return run ? la_run_einsum(c) : la_check_einsum(c);
    case MP_BOP_DET:
      return run ? la_run_det(c) : la_check_det(c);
    case MP_BOP_DFT:
      return run ? la_run_dft(c) : la_check_dft(c);
    case MP_BOP_STFT:
      return run ? la_run_stft(c) : la_check_stft(c);
    case MP_BOP_MEL_WEIGHT_MATRIX:
      return la_mel(c, run);
    default:
      *handled = false;
      return false;
  }
}
