/*
 * shape_tensor.c -- shape rules of data-movement and shape-math ops: Shape,
 * Size, Concat, Split, Slice, Gather, Reshape, Flatten, Squeeze, Unsqueeze,
 * Transpose, Pad, Expand, Tile, Range, ConstantOfShape, reductions, ArgMax,
 * OneHot, TopK and friends.
 *
 * These ops carry the run-time shape computations of real exporters
 * (Shape -> Gather/Slice -> Concat -> Reshape/Resize), so they propagate
 * values, not only shapes: constant folding restricted to small integer
 * tensors is what resolves models whose shapes ONNX's own inference leaves
 * unknown.
 *
 * Invariants:
 *   1. Operands given as attributes (older opsets) or as inputs (newer) are
 *      both read: the attribute when present, else the input's values.
 *   2. An operand that must be a value but is not known makes the rule say
 *      MP_ERR_UNSUPPORTED; an impossible one (Reshape to a different
 *      element count, an axis out of range) is an error naming the op.
 *   3. Values move with the data: an op that only rearranges elements
 *      (Reshape, Gather, Slice, Concat, Transpose...) rearranges the values
 *      when its data input has them.
 */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "mplan/onnx.h"
#include "shape_rules.h"

/* Coordinates of flat index e in dims d of rank r. */
static void tn_coords(uint32_t r, const int64_t *d, size_t e, int64_t *co) {
  for (uint32_t j = r; j-- > 0;) {
    co[j] = (int64_t)(e % (size_t)d[j]);
    e /= (size_t)d[j];
  }
}

static size_t tn_flat(uint32_t r, const int64_t *d, const int64_t *co) {
  size_t e = 0;
  for (uint32_t j = 0; j < r; j++) e = e * (size_t)d[j] + (size_t)co[j];
  return e;
}

/* Copies element src of input f's values into output value slot dst. */
static void tn_copy_value(sh_out *o, const sh_fact *f, size_t src, size_t dst) {
  if (f->v->i) {
    o->i[dst] = f->v->i[src];
  } else {
    o->f[dst] = f->v->f[src];
  }
}

static void tn_values_done(sh_out *o, const sh_fact *f, size_t n) {
  o->has_value = true;
  o->is_float = f->v->f != NULL;
  o->n = n;
}

/* Output 0 gets input 0's values unchanged (a pure reshape). */
static void tn_keep_values(sh_ctx *c) {
  const sh_fact *x = sh_in(c, 0);
  if (!x || !x->v) return;
  if (x->v->i) {
    sh_set_ints(c, 0, x->v->i, x->v->n);
  } else {
    sh_set_floats(c, 0, x->v->f, x->v->n);
  }
}

/* An axes-like operand: attribute name, else input k (invariant 1).
 * Returns false when neither is given; *unknown when the input is given
 * but its values are not known. */
static bool tn_operand(sh_ctx *c, const char *name, uint32_t k,
                       const int64_t **v, size_t *n, bool *unknown) {
  *unknown = false;
  if ((*v = sh_attr_ints(c, name, n))) return true;
  if (!sh_in(c, k)) return false;
  *v = sh_ints(c, k, n);
  *unknown = *v == NULL;
  return !*unknown;
}

mp_status sh_shape(sh_ctx *c) {
  const sh_fact *x = sh_in(c, 0);
  if (!x) return sh_fail(c, "input 0 is missing");
  int64_t r = x->rank, start = sh_attr_i(c, "start", 0),
          end = sh_attr_i(c, "end", r);
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = start < 0 ? 0 : start > r ? r : start;
  end = end < 0 ? 0 : end > r ? r : end;
  int64_t n = end > start ? end - start : 0;
  sh_set(c, 0, MP_DTYPE_I64, 1, &n);
  sh_set_ints(c, 0, x->d + start, (size_t)n);
  return MP_OK;
}

mp_status sh_size(sh_ctx *c) {
  const sh_fact *x = sh_in(c, 0);
  if (!x) return sh_fail(c, "input 0 is missing");
  int64_t e = sh_elems(x);
  sh_set(c, 0, MP_DTYPE_I64, 0, NULL);
  sh_set_ints(c, 0, &e, 1);
  return MP_OK;
}

mp_status sh_concat(sh_ctx *c) {
  const sh_fact *x = sh_in(c, 0);
  uint32_t axis;
  if (!x) return sh_fail(c, "input 0 is missing");
  mp_status st = sh_axis(c, sh_attr_i(c, "axis", 0), x->rank, &axis);
  if (st != MP_OK) return st;
  int64_t d[MP_MAX_RANK];
  memcpy(d, x->d, sizeof d);
  d[axis] = 0;
  bool values = true;
  for (uint32_t k = 0; k < c->n_in; k++) {
    const sh_fact *f = sh_in(c, k);
    if (!f) continue;
    if (f->rank != x->rank) {
      return sh_fail(c, "input %u has rank %u, input 0 rank %u", k, f->rank,
                     x->rank);
    }
    for (uint32_t j = 0; j < x->rank; j++) {
      if (j != axis && f->d[j] != x->d[j]) {
        return sh_fail(c,
                       "input %u: dim %u is %" PRId64 ", input 0 has %" PRId64,
                       k, j, f->d[j], x->d[j]);
      }
    }
    d[axis] += f->d[axis];
    values = values && f->v && (f->v->i != NULL) == (x->v && x->v->i != NULL);
  }
  sh_set(c, 0, x->dt, x->rank, d);
  sh_out *o = &c->out[0];
  int64_t n = sh_dims_elems(x->rank, d);
  if (!values || n > MP_VALUE_MAX) return MP_OK;
  for (size_t e = 0; e < (size_t)n; e++) {
    int64_t co[MP_MAX_RANK];
    tn_coords(x->rank, d, e, co);
    uint32_t k = 0;
    for (; k < c->n_in; k++) {
      if (!sh_in(c, k)) continue;
      if (co[axis] < c->in[k].d[axis]) break;
      co[axis] -= c->in[k].d[axis];
    }
    tn_copy_value(o, &c->in[k], tn_flat(x->rank, c->in[k].d, co), e);
  }
  tn_values_done(o, x, (size_t)n);
  return MP_OK;
}

mp_status sh_split(sh_ctx *c) {
  const sh_fact *x = sh_in(c, 0);
  uint32_t axis;
  if (!x) return sh_fail(c, "input 0 is missing");
  mp_status st = sh_axis(c, sh_attr_i(c, "axis", 0), x->rank, &axis);
  if (st != MP_OK) return st;
  const int64_t *sp;
  size_t n = 0;
  bool unknown;
  int64_t parts[64];
  if (tn_operand(c, "split", 1, &sp, &n, &unknown)) {
    if (n != c->n_out) {
      return sh_fail(c, "%zu split sizes for %u outputs", n, c->n_out);
    }
  } else if (unknown) {
    return MP_ERR_UNSUPPORTED;
  } else {
    int64_t k = c->n_out, each = (x->d[axis] + k - 1) / k;
    if (k > 64) return MP_ERR_UNSUPPORTED;
    for (int64_t j = 0; j < k; j++) {
      int64_t left = x->d[axis] - j * each;
      parts[j] = left < each ? (left > 0 ? left : 0) : each;
    }
    sp = parts;
    n = (size_t)k;
  }
  int64_t sum = 0, d[MP_MAX_RANK];
  for (size_t k = 0; k < n; k++) sum += sp[k];
  if (sum != x->d[axis]) {
    return sh_fail(c, "split sizes add up to %" PRId64 ", axis has %" PRId64,
                   sum, x->d[axis]);
  }
  int64_t at = 0;
  for (uint32_t k = 0; k < c->n_out; k++) {
    memcpy(d, x->d, sizeof d);
    d[axis] = sp[k];
    sh_set(c, k, x->dt, x->rank, d);
    if (x->v && x->v->i && x->rank == 1) {
      sh_set_ints(c, k, x->v->i + at, (size_t)sp[k]);
    }
    at += sp[k];
  }
  return MP_OK;
}

static int64_t tn_clamp(int64_t v, int64_t lo, int64_t hi) {
  return v < lo ? lo : v > hi ? hi : v;
}

mp_status sh_slice(sh_ctx *c) {
  const sh_fact *x = sh_in(c, 0);
  if (!x) return sh_fail(c, "input 0 is missing");
  const int64_t *starts, *ends, *axes = NULL, *steps = NULL;
  size_t ns = 0, ne = 0, na = 0, nst = 0;
  bool u1, u2, u3 = false, u4 = false;
  bool old = sh_has_attr(c, "starts");
  if (!tn_operand(c, "starts", 1, &starts, &ns, &u1) ||
      !tn_operand(c, "ends", 2, &ends, &ne, &u2)) {
    return u1 || u2 ? MP_ERR_UNSUPPORTED : sh_fail(c, "starts/ends missing");
  }
  if (!tn_operand(c, "axes", old ? 99 : 3, &axes, &na, &u3) && u3) {
    return MP_ERR_UNSUPPORTED;
  }
  if (!old && !tn_operand(c, "steps", 4, &steps, &nst, &u4) && u4) {
    return MP_ERR_UNSUPPORTED;
  }
  if (ns != ne || (axes && na != ns) || (steps && nst != ns)) {
    return sh_fail(c, "starts, ends, axes and steps differ in length");
  }
  int64_t d[MP_MAX_RANK], first[MP_MAX_RANK] = {0}, step[MP_MAX_RANK];
  memcpy(d, x->d, sizeof d);
  for (uint32_t j = 0; j < MP_MAX_RANK; j++) step[j] = 1;
  for (size_t k = 0; k < ns; k++) {
    uint32_t ax;
    mp_status st = sh_axis(c, axes ? axes[k] : (int64_t)k, x->rank, &ax);
    if (st != MP_OK) return st;
    int64_t dim = x->d[ax], s = starts[k], e = ends[k],
            p = steps ? steps[k] : 1;
    if (p == 0) return sh_fail(c, "a step is 0");
    if (s < 0) s += dim;
    if (e < 0 && e > INT64_MIN / 2) e += dim;
    if (p > 0) {
      s = tn_clamp(s, 0, dim);
      e = tn_clamp(e, 0, dim);
      d[ax] = e > s ? (e - s + p - 1) / p : 0;
    } else {
      s = tn_clamp(s, 0, dim - 1);
      e = tn_clamp(e, -1, dim - 1);
      d[ax] = s > e ? (s - e + (-p) - 1) / (-p) : 0;
    }
    first[ax] = s;
    step[ax] = p;
  }
  sh_set(c, 0, x->dt, x->rank, d);
  int64_t n = sh_dims_elems(x->rank, d);
  if (!x->v || n > MP_VALUE_MAX) return MP_OK;
  sh_out *o = &c->out[0];
  for (size_t e = 0; e < (size_t)n; e++) {
    int64_t co[MP_MAX_RANK];
    tn_coords(x->rank, d, e, co);
    for (uint32_t j = 0; j < x->rank; j++) co[j] = first[j] + co[j] * step[j];
    tn_copy_value(o, x, tn_flat(x->rank, x->d, co), e);
  }
  tn_values_done(o, x, (size_t)n);
  return MP_OK;
}

mp_status sh_gather(sh_ctx *c) {
  const sh_fact *x = sh_in(c, 0), *ix = sh_in(c, 1);
  uint32_t axis;
  if (!x || !ix) return sh_fail(c, "needs data and indices");
  mp_status st = sh_axis(c, sh_attr_i(c, "axis", 0), x->rank, &axis);
  if (st != MP_OK) return st;
  uint32_t r = x->rank - 1 + ix->rank;
  if (r > MP_MAX_RANK) return sh_fail(c, "output rank %u is too large", r);
  int64_t d[MP_MAX_RANK];
  uint32_t at = 0;
  for (uint32_t j = 0; j < axis; j++) d[at++] = x->d[j];
  for (uint32_t j = 0; j < ix->rank; j++) d[at++] = ix->d[j];
  for (uint32_t j = axis + 1; j < x->rank; j++) d[at++] = x->d[j];
  sh_set(c, 0, x->dt, r, d);
  int64_t n = sh_dims_elems(r, d);
  if (!x->v || !ix->v || !ix->v->i || n > MP_VALUE_MAX) return MP_OK;
  sh_out *o = &c->out[0];
  for (size_t e = 0; e < (size_t)n; e++) {
    int64_t co[MP_MAX_RANK], src[MP_MAX_RANK];
    tn_coords(r, d, e, co);
    size_t ii = tn_flat(ix->rank, ix->d, co + axis);
    int64_t idx = ix->v->i[ii];
    if (idx < 0) idx += x->d[axis];
    if (idx < 0 || idx >= x->d[axis]) {
      return sh_fail(c, "index %" PRId64 " is out of range for dim %" PRId64,
                     ix->v->i[ii], x->d[axis]);
    }
    for (uint32_t j = 0; j < axis; j++) src[j] = co[j];
    src[axis] = idx;
    for (uint32_t j = axis + 1; j < x->rank; j++) {
      src[j] = co[j - 1 + ix->rank];
    }
    tn_copy_value(o, x, tn_flat(x->rank, x->d, src), e);
  }
  tn_values_done(o, x, (size_t)n);
  return MP_OK;
}

mp_status sh_gather_elements(sh_ctx *c) {
  const sh_fact *x = sh_in(c, 0), *ix = sh_in(c, 1);
  if (!x || !ix) return sh_fail(c, "needs data and indices");
  sh_set(c, 0, x->dt, ix->rank, ix->d);
  return MP_OK;
}

mp_status sh_gather_nd(sh_ctx *c) {
  const sh_fact *x = sh_in(c, 0), *ix = sh_in(c, 1);
  if (!x || !ix || ix->rank < 1) return sh_fail(c, "needs data and indices");
  int64_t b = sh_attr_i(c, "batch_dims", 0), last = ix->d[ix->rank - 1];
  if (b < 0 || b + last > x->rank) return sh_fail(c, "indices too deep");
  int64_t d[MP_MAX_RANK];
  uint32_t r = 0;
  for (uint32_t j = 0; j + 1 < ix->rank; j++) d[r++] = ix->d[j];
  for (uint32_t j = (uint32_t)(b + last); j < x->rank; j++) {
    if (r == MP_MAX_RANK) return sh_fail(c, "output rank too large");
    d[r++] = x->d[j];
  }
  sh_set(c, 0, x->dt, r, d);
  return MP_OK;
}

mp_status sh_reshape(sh_ctx *c) {
  const sh_fact *x = sh_in(c, 0);
  const int64_t *sp;
  size_t n;
  bool unknown;
  if (!x) return sh_fail(c, "input 0 is missing");
  if (!tn_operand(c, "shape", 1, &sp, &n, &unknown)) {
    return unknown ? MP_ERR_UNSUPPORTED : sh_fail(c, "the shape is missing");
  }
  if (n > MP_MAX_RANK) return sh_fail(c, "target rank %zu is too large", n);
  bool allowzero = sh_attr_i(c, "allowzero", 0) != 0;
  int64_t d[MP_MAX_RANK], known = 1, total = sh_elems(x);
  int infer = -1;
  for (size_t j = 0; j < n; j++) {
    d[j] = sp[j];
    if (sp[j] == 0 && !allowzero) {
      if (j >= x->rank) return sh_fail(c, "shape[%zu] copies a missing dim", j);
      d[j] = x->d[j];
    }
    if (d[j] == -1) {
      if (infer >= 0) return sh_fail(c, "the shape has two -1 dims");
      infer = (int)j;
    } else if (d[j] < 0) {
      return sh_fail(c, "shape[%zu] is %" PRId64, j, d[j]);
    } else if (!mp_i64_mul(known, d[j], &known)) {
      return sh_fail(c, "the shape's product overflows");
    }
  }
  if (infer >= 0) {
    if (known == 0 || total % known) {
      return sh_fail(c, "cannot reshape %" PRId64 " elements with a -1 dim",
                     total);
    }
    d[infer] = total / known;
    known = total;
  }
  if (known != total) {
    return sh_fail(c, "cannot reshape %" PRId64 " elements into %" PRId64,
                   total, known);
  }
  sh_set(c, 0, x->dt, (uint32_t)n, d);
  tn_keep_values(c);
  return MP_OK;
}

mp_status sh_flatten(sh_ctx *c) {
  const sh_fact *x = sh_in(c, 0);
  if (!x) return sh_fail(c, "input 0 is missing");
  int64_t axis = sh_attr_i(c, "axis", 1);
  if (axis < 0) axis += x->rank;
  if (axis < 0 || axis > x->rank) return sh_fail(c, "axis out of range");
  int64_t d[2] = {1, 1};
  for (uint32_t j = 0; j < x->rank; j++) d[j < axis ? 0 : 1] *= x->d[j];
  sh_set(c, 0, x->dt, 2, d);
  tn_keep_values(c);
  return MP_OK;
}

mp_status sh_squeeze(sh_ctx *c) {
  const sh_fact *x = sh_in(c, 0);
  const int64_t *axes;
  size_t n = 0;
  bool unknown, drop[MP_MAX_RANK] = {false};
  if (!x) return sh_fail(c, "input 0 is missing");
  if (tn_operand(c, "axes", 1, &axes, &n, &unknown)) {
    for (size_t k = 0; k < n; k++) {
      uint32_t a;
      mp_status st = sh_axis(c, axes[k], x->rank, &a);
      if (st != MP_OK) return st;
      if (x->d[a] != 1) {
        return sh_fail(c, "axis %" PRId64 " has size %" PRId64 ", not 1",
                       axes[k], x->d[a]);
      }
      drop[a] = true;
    }
  } else if (unknown) {
    return MP_ERR_UNSUPPORTED;
  } else {
    for (uint32_t j = 0; j < x->rank; j++) drop[j] = x->d[j] == 1;
  }
  int64_t d[MP_MAX_RANK];
  uint32_t r = 0;
  for (uint32_t j = 0; j < x->rank; j++) {
    if (!drop[j]) d[r++] = x->d[j];
  }
  sh_set(c, 0, x->dt, r, d);
  tn_keep_values(c);
  return MP_OK;
}

mp_status sh_unsqueeze(sh_ctx *c) {
  const sh_fact *x = sh_in(c, 0);
  const int64_t *axes;
  size_t n = 0;
  bool unknown, add[MP_MAX_RANK] = {false};
  if (!x) return sh_fail(c, "input 0 is missing");
  if (!tn_operand(c, "axes", 1, &axes, &n, &unknown)) {
    return unknown ? MP_ERR_UNSUPPORTED : sh_fail(c, "axes are missing");
  }
  uint32_t r = x->rank + (uint32_t)n;
  if (r > MP_MAX_RANK) return sh_fail(c, "output rank %u is too large", r);
  for (size_t k = 0; k < n; k++) {
    uint32_t a;
    mp_status st = sh_axis(c, axes[k], r, &a);
    if (st != MP_OK) return st;
    if (add[a]) return sh_fail(c, "axis %" PRId64 " repeats", axes[k]);
    add[a] = true;
  }
  int64_t d[MP_MAX_RANK];
  for (uint32_t j = 0, from = 0; j < r; j++) d[j] = add[j] ? 1 : x->d[from++];
  sh_set(c, 0, x->dt, r, d);
  tn_keep_values(c);
  return MP_OK;
}

mp_status sh_transpose(sh_ctx *c) {
  const sh_fact *x = sh_in(c, 0);
  size_t n = 0;
  if (!x) return sh_fail(c, "input 0 is missing");
  const int64_t *perm = sh_attr_ints(c, "perm", &n);
  int64_t p[MP_MAX_RANK], d[MP_MAX_RANK];
  bool seen[MP_MAX_RANK] = {false};
  if (perm && n != x->rank) {
    return sh_fail(c, "perm has %zu entries for rank %u", n, x->rank);
  }
  for (uint32_t j = 0; j < x->rank; j++) {
    p[j] = perm ? perm[j] : (int64_t)(x->rank - 1 - j);
    if (p[j] < 0 || p[j] >= x->rank || seen[p[j]]) {
      return sh_fail(c, "perm is not a permutation");
    }
    seen[p[j]] = true;
    d[j] = x->d[p[j]];
  }
  sh_set(c, 0, x->dt, x->rank, d);
  if (!x->v) return MP_OK;
  sh_out *o = &c->out[0];
  for (size_t e = 0; e < x->v->n; e++) {
    int64_t co[MP_MAX_RANK], src[MP_MAX_RANK];
    tn_coords(x->rank, d, e, co);
    for (uint32_t j = 0; j < x->rank; j++) src[p[j]] = co[j];
    tn_copy_value(o, x, tn_flat(x->rank, x->d, src), e);
  }
  tn_values_done(o, x, x->v->n);
  return MP_OK;
}

mp_status sh_pad(sh_ctx *c) {
  const sh_fact *x = sh_in(c, 0);
  const int64_t *pads, *axes = NULL;
  size_t n, na = 0;
  bool unknown;
  if (!x) return sh_fail(c, "input 0 is missing");
  if (!tn_operand(c, "pads", 1, &pads, &n, &unknown)) {
    return unknown ? MP_ERR_UNSUPPORTED : sh_fail(c, "pads are missing");
  }
  if (sh_in(c, 3) && !(axes = sh_ints(c, 3, &na))) return MP_ERR_UNSUPPORTED;
  uint32_t k = axes ? (uint32_t)na : x->rank;
  if (n != 2 * (size_t)k) {
    return sh_fail(c, "%zu pads for %u axes", n, k);
  }
  int64_t d[MP_MAX_RANK];
  memcpy(d, x->d, sizeof d);
  for (uint32_t j = 0; j < k; j++) {
    uint32_t a = j;
    if (axes) {
      mp_status st = sh_axis(c, axes[j], x->rank, &a);
      if (st != MP_OK) return st;
    }
    d[a] += pads[j] + pads[j + k];
    if (d[a] < 0)
      return sh_fail(c, "axis %u would have size %" PRId64, a, d[a]);
  }
  sh_set(c, 0, x->dt, x->rank, d);
  return MP_OK;
}

mp_status sh_expand(sh_ctx *c) {
  const sh_fact *x = sh_in(c, 0);
  size_t n;
  if (!x) return sh_fail(c, "input 0 is missing");
  const int64_t *sp = sh_ints(c, 1, &n);
  if (!sp) return MP_ERR_UNSUPPORTED;
  if (n > MP_MAX_RANK) return sh_fail(c, "target rank %zu is too large", n);
  int64_t d[MP_MAX_RANK];
  uint32_t r;
  mp_status st = sh_broadcast(c, x->rank, x->d, (uint32_t)n, sp, &r, d);
  if (st != MP_OK) return st;
  sh_set(c, 0, x->dt, r, d);
  int64_t e = sh_dims_elems(r, d);
  if (!x->v || e > MP_VALUE_MAX) return MP_OK;
  sh_out *o = &c->out[0];
  for (size_t k = 0; k < (size_t)e; k++) {
    int64_t co[MP_MAX_RANK], src[MP_MAX_RANK];
    tn_coords(r, d, k, co);
    for (uint32_t j = 0; j < x->rank; j++) {
      src[j] = x->d[j] == 1 ? 0 : co[j + r - x->rank];
    }
    tn_copy_value(o, x, tn_flat(x->rank, x->d, src), k);
  }
  tn_values_done(o, x, (size_t)e);
  return MP_OK;
}

mp_status sh_tile(sh_ctx *c) {
  const sh_fact *x = sh_in(c, 0);
  size_t n;
  if (!x) return sh_fail(c, "input 0 is missing");
  if (c->opset > 0 && c->opset < 6) {
    return sh_fail(c,
                   "Tile of opset %" PRId64
                   " (the tiles and axis inputs of Tile-1) is not supported",
                   c->opset);
  }
  const int64_t *rep = sh_ints(c, 1, &n);
  if (!rep) return MP_ERR_UNSUPPORTED;
  if (n != x->rank) return sh_fail(c, "%zu repeats for rank %u", n, x->rank);
  int64_t d[MP_MAX_RANK];
  for (uint32_t j = 0; j < x->rank; j++) {
    if (rep[j] < 0 || !mp_i64_mul(x->d[j], rep[j], &d[j])) {
      return sh_fail(c, "repeats[%u] is invalid", j);
    }
  }
  sh_set(c, 0, x->dt, x->rank, d);
  return MP_OK;
}

mp_status sh_range(sh_ctx *c) {
  double v[3], buf[MP_VALUE_MAX];
  size_t n;
  const sh_fact *s = sh_in(c, 0);
  if (!s) return sh_fail(c, "start is missing");
  for (uint32_t k = 0; k < 3; k++) {
    if (!sh_doubles(c, k, buf, &n)) return MP_ERR_UNSUPPORTED;
    if (n != 1) return sh_fail(c, "input %u must be a scalar", k);
    v[k] = buf[0];
  }
  double start = v[0], limit = v[1], delta = v[2];
  if (delta == 0) return sh_fail(c, "delta is 0");
  double cnt = ceil((limit - start) / delta);
  if (!(cnt < 9e15)) return sh_fail(c, "the range is too long");
  int64_t len = cnt > 0 ? (int64_t)cnt : 0;
  sh_set(c, 0, s->dt, 1, &len);
  if (len > MP_VALUE_MAX) return MP_OK;
  sh_out *o = &c->out[0];
  bool fl = sh_is_float(s->dt);
  for (int64_t k = 0; k < len; k++) {
    double x = start + (double)k * delta;
    if (fl) {
      o->f[k] = x;
    } else if (!(x > -9.2e18 && x < 9.2e18)) {
      return MP_OK; /* past int64's range: the shape, no value */
    } else {
      o->i[k] = (int64_t)x;
    }
  }
  o->has_value = true;
  o->is_float = fl;
  o->n = (size_t)len;
  return MP_OK;
}

mp_status sh_constant_of_shape(sh_ctx *c) {
  size_t n, nv = 0;
  const int64_t *sp = sh_ints(c, 0, &n);
  if (!sh_in(c, 0)) return sh_fail(c, "input 0 is missing");
  if (!sp) return MP_ERR_UNSUPPORTED;
  if (n > MP_MAX_RANK) return sh_fail(c, "rank %zu is too large", n);
  mp_dtype dt = (mp_dtype)sh_attr_i(c, "value.dtype", MP_DTYPE_F32);
  if ((unsigned)dt >= MP_DTYPE_COUNT) dt = MP_DTYPE_F32;
  for (size_t j = 0; j < n; j++) {
    if (sp[j] < 0) return sh_fail(c, "shape[%zu] is %" PRId64, j, sp[j]);
  }
  sh_set(c, 0, dt, (uint32_t)n, sp);
  int64_t e = sh_dims_elems((uint32_t)n, sp);
  if (e > MP_VALUE_MAX) return MP_OK;
  const int64_t *iv = sh_attr_ints(c, "value", &nv);
  const double *fv = sh_attr_floats(c, "value", &nv);
  sh_out *o = &c->out[0];
  bool fl = sh_is_float(dt);
  for (int64_t k = 0; k < e; k++) {
    if (fl) {
      o->f[k] = fv && nv ? fv[0] : 0;
    } else {
      o->i[k] = iv && nv ? iv[0] : 0;
    }
  }
  o->has_value = true;
  o->is_float = fl;
  o->n = (size_t)e;
  return MP_OK;
}

mp_status sh_reduce(sh_ctx *c) {
  const sh_fact *x = sh_in(c, 0);
  const int64_t *axes;
  size_t n = 0;
  bool unknown, red[MP_MAX_RANK] = {false};
  if (!x) return sh_fail(c, "input 0 is missing");
  bool keep = sh_attr_i(c, "keepdims", 1) != 0;
  if (tn_operand(c, "axes", 1, &axes, &n, &unknown) && n > 0) {
    for (size_t k = 0; k < n; k++) {
      uint32_t a;
      mp_status st = sh_axis(c, axes[k], x->rank, &a);
      if (st != MP_OK) return st;
      red[a] = true;
    }
  } else if (unknown) {
    return MP_ERR_UNSUPPORTED;
  } else if (sh_attr_i(c, "noop_with_empty_axes", 0)) {
    sh_set(c, 0, x->dt, x->rank, x->d);
    return MP_OK;
  } else {
    for (uint32_t j = 0; j < x->rank; j++) red[j] = true;
  }
  int64_t d[MP_MAX_RANK];
  uint32_t r = 0;
  for (uint32_t j = 0; j < x->rank; j++) {
    if (!red[j]) {
      d[r++] = x->d[j];
    } else if (keep) {
      d[r++] = 1;
    }
  }
  sh_set(c, 0, x->dt, r, d);
  return MP_OK;
}

mp_status sh_argminmax(sh_ctx *c) {
  const sh_fact *x = sh_in(c, 0);
  uint32_t axis;
  if (!x) return sh_fail(c, "input 0 is missing");
  mp_status st = sh_axis(c, sh_attr_i(c, "axis", 0), x->rank, &axis);
  if (st != MP_OK) return st;
  bool keep = sh_attr_i(c, "keepdims", 1) != 0;
  int64_t d[MP_MAX_RANK];
  uint32_t r = 0;
  for (uint32_t j = 0; j < x->rank; j++) {
    if (j != axis) {
      d[r++] = x->d[j];
    } else if (keep) {
      d[r++] = 1;
    }
  }
  sh_set(c, 0, MP_DTYPE_I64, r, d);
  return MP_OK;
}

mp_status sh_onehot(sh_ctx *c) {
  const sh_fact *ix = sh_in(c, 0), *vals = sh_in(c, 2);
  double depth[MP_VALUE_MAX];
  size_t n;
  uint32_t axis;
  if (!ix || !vals) return sh_fail(c, "needs indices, depth and values");
  if (!sh_doubles(c, 1, depth, &n)) return MP_ERR_UNSUPPORTED;
  if (n != 1 || !(depth[0] >= 1 && depth[0] < 1e15)) {
    return sh_fail(c, "depth must be one positive number");
  }
  uint32_t r = ix->rank + 1;
  if (r > MP_MAX_RANK) return sh_fail(c, "output rank too large");
  mp_status st = sh_axis(c, sh_attr_i(c, "axis", -1), r, &axis);
  if (st != MP_OK) return st;
  int64_t d[MP_MAX_RANK];
  for (uint32_t j = 0, from = 0; j < r; j++) {
    d[j] = j == axis ? (int64_t)depth[0] : ix->d[from++];
  }
  sh_set(c, 0, vals->dt, r, d);
  return MP_OK;
}

mp_status sh_topk(sh_ctx *c) {
  const sh_fact *x = sh_in(c, 0);
  size_t n;
  uint32_t axis;
  if (!x) return sh_fail(c, "input 0 is missing");
  int64_t k = sh_attr_i(c, "k", -1);
  if (sh_in(c, 1)) {
    const int64_t *kv = sh_ints(c, 1, &n);
    if (!kv) return MP_ERR_UNSUPPORTED;
    if (n != 1) return sh_fail(c, "K must hold one value");
    k = kv[0];
  }
  mp_status st = sh_axis(c, sh_attr_i(c, "axis", -1), x->rank, &axis);
  if (st != MP_OK) return st;
  if (k < 0 || k > x->d[axis]) {
    return sh_fail(c, "K %" PRId64 " is out of range for dim %" PRId64, k,
                   x->d[axis]);
  }
  int64_t d[MP_MAX_RANK];
  memcpy(d, x->d, sizeof d);
  d[axis] = k;
  sh_set(c, 0, x->dt, x->rank, d);
  sh_set(c, 1, MP_DTYPE_I64, x->rank, d);
  return MP_OK;
}

mp_status sh_eyelike(sh_ctx *c) {
  const sh_fact *x = sh_in(c, 0);
  mp_dtype dt;
  if (!x) return sh_fail(c, "input 0 is missing");
  if (!mp_onnx_dtype((int32_t)sh_attr_i(c, "dtype", 0), &dt)) dt = x->dt;
  sh_set(c, 0, dt, x->rank, x->d);
  return MP_OK;
}

mp_status sh_same_as_first(sh_ctx *c) {
  const sh_fact *x = sh_in(c, 0);
  if (!x) return sh_fail(c, "input 0 is missing");
  sh_set(c, 0, x->dt, x->rank, x->d);
  return MP_OK;
}

mp_status sh_det(sh_ctx *c) {
  const sh_fact *x = sh_in(c, 0);
  if (!x || x->rank < 2) return sh_fail(c, "needs a matrix");
  sh_set(c, 0, x->dt, x->rank - 2, x->d);
  return MP_OK;
}

mp_status sh_random_like(sh_ctx *c) {
  const sh_fact *x = sh_in(c, 0);
  mp_dtype dt;
  if (!x) return sh_fail(c, "input 0 is missing");
  if (!sh_has_attr(c, "dtype") ||
      !mp_onnx_dtype((int32_t)sh_attr_i(c, "dtype", 0), &dt)) {
    dt = x->dt;
  }
  sh_set(c, 0, dt, x->rank, x->d);
  return MP_OK;
}

/* RandomUniform, RandomNormal: no input; the shape and the dtype (float
 * by default) are attributes. */
mp_status sh_random(sh_ctx *c) {
  size_t n = 0;
  const int64_t *sp = sh_attr_ints(c, "shape", &n);
  mp_dtype dt;
  if (!sp) return sh_fail(c, "the shape attribute is missing");
  if (n > MP_MAX_RANK) return sh_fail(c, "rank %zu is too large", n);
  for (size_t j = 0; j < n; j++) {
    if (sp[j] < 0) return sh_fail(c, "shape[%zu] is %" PRId64, j, sp[j]);
  }
  if (!mp_onnx_dtype((int32_t)sh_attr_i(c, "dtype", 1), &dt) ||
      !sh_is_float(dt)) {
    return sh_fail(c, "dtype is not a floating-point element type");
  }
  sh_set(c, 0, dt, (uint32_t)n, sp);
  return MP_OK;
}

/* Multinomial: [batch, class_size] -> [batch, sample_size], int32 by
 * default or int64. */
mp_status sh_multinomial(sh_ctx *c) {
  const sh_fact *x = sh_in(c, 0);
  mp_dtype dt;
  if (!x) return sh_fail(c, "input 0 is missing");
  if (x->rank != 2) return sh_fail(c, "input 0 has rank %u, not 2", x->rank);
  int64_t samples = sh_attr_i(c, "sample_size", 1);
  if (samples < 1 || samples > SH_DIM_MAX) {
    return sh_fail(c, "sample_size %" PRId64 " is out of range", samples);
  }
  if (!mp_onnx_dtype((int32_t)sh_attr_i(c, "dtype", 6), &dt) ||
      (dt != MP_DTYPE_I32 && dt != MP_DTYPE_I64)) {
    return sh_fail(c, "dtype is neither int32 nor int64");
  }
  int64_t d[2] = {x->d[0], samples};
  sh_set(c, 0, dt, 2, d);
  return MP_OK;
}

/* BlackmanWindow, HannWindow, HammingWindow: a vector of `size`. */
mp_status sh_window(sh_ctx *c) {
  size_t n;
  const int64_t *size = sh_ints(c, 0, &n);
  mp_dtype dt;
  if (!sh_in(c, 0)) return sh_fail(c, "size is missing");
  if (!size) return MP_ERR_UNSUPPORTED;
  if (n != 1 || size[0] < 0) return sh_fail(c, "size must be one count");
  if (!mp_onnx_dtype((int32_t)sh_attr_i(c, "output_datatype", 1), &dt)) {
    return sh_fail(c, "output_datatype is not a known element type");
  }
  sh_set(c, 0, dt, 1, size);
  return MP_OK;
}

/* Data-dependent, but known when the condition's values are. */
mp_status sh_compress(sh_ctx *c) {
  const sh_fact *x = sh_in(c, 0);
  size_t n;
  const int64_t *cond = sh_ints(c, 1, &n);
  if (!x || !sh_in(c, 1)) return sh_fail(c, "needs input and condition");
  if (!cond) return MP_ERR_UNSUPPORTED;
  int64_t d[MP_MAX_RANK], len = sh_elems(x), count = 0;
  uint32_t r = 1, axis = 0;
  if (sh_has_attr(c, "axis")) {
    mp_status st = sh_axis(c, sh_attr_i(c, "axis", 0), x->rank, &axis);
    if (st != MP_OK) return st;
    memcpy(d, x->d, sizeof d);
    r = x->rank;
    len = x->d[axis];
  }
  for (size_t k = 0; k < n && (int64_t)k < len; k++) count += cond[k] != 0;
  d[axis] = count;
  sh_set(c, 0, x->dt, r, d);
  return MP_OK;
}

/* Data-dependent, but known when the input's values are. */
mp_status sh_nonzero(sh_ctx *c) {
  const sh_fact *x = sh_in(c, 0);
  double v[MP_VALUE_MAX];
  size_t n;
  if (!x) return sh_fail(c, "input 0 is missing");
  if (!sh_doubles(c, 0, v, &n)) return MP_ERR_UNSUPPORTED;
  int64_t d[2] = {x->rank, 0};
  for (size_t k = 0; k < n; k++) d[1] += v[k] != 0;
  sh_set(c, 0, MP_DTYPE_I64, 2, d);
  return MP_OK;
}

/* Einsum: every letter's size from the operands (1 broadcasts); an
 * ellipsis stands for an operand's remaining leading dims, which
 * broadcast across operands aligned to the right, as numpy's. The output
 * is explicit after "->" or the ellipsis dims, then the letters used
 * once, in ASCII order. */
mp_status sh_einsum(sh_ctx *c) {
  const char *eq = sh_attr_s(c, "equation", NULL);
  int64_t size[128], ell[MP_MAX_RANK];
  int uses[128] = {0};
  uint32_t n_ell = 0;
  for (int k = 0; k < 128; k++) size[k] = -1;
  if (!eq) return sh_fail(c, "equation is missing");
  const char *p = eq;
  for (uint32_t k = 0; k < c->n_in; k++) {
    const sh_fact *f = sh_in(c, k);
    if (!f) return sh_fail(c, "input %u is missing", k);
    /* letters in this term, to size the ellipsis */
    uint32_t letters = 0;
    bool has_ell = false;
    for (const char *q = p; *q && *q != ',' && *q != '-'; q++) {
      if (strncmp(q, "...", 3) == 0) {
        has_ell = true;
        q += 2;
      } else if (*q != ' ') {
        letters++;
      }
    }
    if (letters > f->rank || (!has_ell && letters != f->rank)) {
      return sh_fail(c, "equation does not match input %u", k);
    }
    uint32_t e = f->rank - letters, j = 0;
    for (; *p && *p != ',' && *p != '-'; p++) {
      unsigned char ch = (unsigned char)*p;
      if (ch == ' ') continue;
      if (strncmp(p, "...", 3) == 0) {
        /* dims j .. j + e - 1 broadcast into the ellipsis, right-aligned */
        if (e > n_ell) {
          memmove(ell + (e - n_ell), ell, n_ell * sizeof *ell);
          for (uint32_t i = 0; i < e - n_ell; i++) ell[i] = 1;
          n_ell = e;
        }
        for (uint32_t i = 0; i < e; i++) {
          int64_t *slot = &ell[n_ell - e + i], v = f->d[j + i];
          if (*slot != v && *slot != 1 && v != 1) {
            return sh_fail(c, "ellipsis dims %lld and %lld do not broadcast",
                           (long long)*slot, (long long)v);
          }
          if (*slot == 1) *slot = v;
        }
        j += e;
        p += 2;
        continue;
      }
      if (ch >= 128) return sh_fail(c, "equation does not match input %u", k);
      if (size[ch] >= 0 && size[ch] != f->d[j] && f->d[j] != 1 &&
          size[ch] != 1) {
        return sh_fail(c, "letter '%c' has sizes %lld and %lld", ch,
                       (long long)size[ch], (long long)f->d[j]);
      }
      if (size[ch] < 0 || size[ch] == 1) size[ch] = f->d[j];
      uses[ch]++;
      j++;
    }
    if (*p == ',') p++;
  }
  int64_t d[MP_MAX_RANK];
  uint32_t r = 0;
  if (p[0] == '-' && p[1] == '>') {
    for (p += 2; *p; p++) {
      unsigned char ch = (unsigned char)*p;
      if (ch == ' ') continue;
      if (strncmp(p, "...", 3) == 0) {
        if (r + n_ell > MP_MAX_RANK) return sh_fail(c, "output rank too large");
        for (uint32_t i = 0; i < n_ell; i++) d[r++] = ell[i];
        p += 2;
        continue;
      }
      if (ch >= 128 || size[ch] < 0 || r == MP_MAX_RANK) {
        return sh_fail(c, "output letter '%c' is unknown", *p);
      }
      d[r++] = size[ch];
    }
  } else {
    for (uint32_t i = 0; i < n_ell; i++) d[r++] = ell[i];
    for (int ch = 0; ch < 128; ch++) {
      if (uses[ch] != 1) continue;
      if (r == MP_MAX_RANK) return sh_fail(c, "output rank too large");
      d[r++] = size[ch];
    }
  }
  sh_set(c, 0, c->in[0].dt, r, d);
  return MP_OK;
}

/* ---- data-dependent outputs: planned at their bounds (shape.c
 * invariant 7) ---------------------------------------------------------- */

/* NonZero: [rank, n] with n at most the element count. */
mp_status sh_nonzero_bound(sh_ctx *c) {
  const sh_fact *x = sh_in(c, 0);
  if (!x || x->rank == 0) return sh_fail(c, "needs a tensor of rank >= 1");
  int64_t d[2] = {x->rank, sh_elems(x)};
  sh_set(c, 0, MP_DTYPE_I64, 2, d);
  return MP_OK;
}

/* Compress: along axis at most min(dim, condition's length) slices, or
 * without an axis at most min(elements, condition's length) elements. */
mp_status sh_compress_bound(sh_ctx *c) {
  const sh_fact *x = sh_in(c, 0), *cond = sh_in(c, 1);
  if (!x || !cond || cond->rank != 1)
    return sh_fail(c, "needs a tensor and a condition vector");
  int64_t keep = cond->d[0];
  if (!sh_has_attr(c, "axis")) {
    int64_t n = sh_elems(x);
    int64_t d[1] = {keep < n ? keep : n};
    sh_set(c, 0, x->dt, 1, d);
    return MP_OK;
  }
  uint32_t a;
  mp_status st = sh_axis(c, sh_attr_i(c, "axis", 0), x->rank, &a);
  if (st != MP_OK) return st;
  int64_t d[MP_MAX_RANK];
  memcpy(d, x->d, x->rank * sizeof *d);
  if (keep < d[a]) d[a] = keep;
  sh_set(c, 0, x->dt, x->rank, d);
  return MP_OK;
}

/* Unique: Y, indices and counts hold at most every element (or every
 * slice along axis); inverse_indices has one entry per element (slice). */
mp_status sh_unique_bound(sh_ctx *c) {
  const sh_fact *x = sh_in(c, 0);
  if (!x) return sh_fail(c, "input 0 is missing");
  int64_t n = sh_elems(x);
  if (!sh_has_attr(c, "axis")) {
    sh_set(c, 0, x->dt, 1, &n);
  } else {
    uint32_t a;
    mp_status st = sh_axis(c, sh_attr_i(c, "axis", 0), x->rank, &a);
    if (st != MP_OK) return st;
    n = x->d[a];
    sh_set(c, 0, x->dt, x->rank, x->d);
  }
  for (uint32_t k = 1; k < 4; k++) sh_set(c, k, MP_DTYPE_I64, 1, &n);
  c->exact = 1u << 2; /* inverse_indices: one per element (slice) */
  return MP_OK;
}

/* NonMaxSuppression: [m, 3] selected (batch, class, box) triples, m at
 * most batches x classes x min(boxes, max_output_boxes_per_class) (a
 * value not known counts every box). */
mp_status sh_nms_bound(sh_ctx *c) {
  const sh_fact *boxes = sh_in(c, 0), *scores = sh_in(c, 1);
  if (!boxes || !scores || boxes->rank != 3 || scores->rank != 3)
    return sh_fail(c, "needs boxes [b, n, 4] and scores [b, c, n]");
  int64_t per = boxes->d[1];
  size_t n;
  const int64_t *mx = sh_in(c, 2) ? sh_ints(c, 2, &n) : NULL;
  if (!sh_in(c, 2) || (mx && n == 1 && mx[0] <= 0)) {
    return sh_fail(c, "max_output_boxes_per_class is 0: nothing is selected");
  }
  if (mx && n == 1 && mx[0] < per) per = mx[0];
  int64_t each = boxes->d[0] * per; /* within the bounded boxes tensor */
  if (each <= 0) { /* a zero batch or no box: as max_output 0 above */
    return sh_fail(c,
                   "%" PRId64 " batches x %" PRId64
                   " boxes: nothing is "
                   "selected",
                   boxes->d[0], per);
  }
  if (scores->d[1] > SH_DIM_MAX / each) {
    return sh_fail(c, "%" PRId64 " classes x %" PRId64 " boxes overflow",
                   scores->d[1], each);
  }
  int64_t d[2] = {each * scores->d[1], 3};
  sh_set(c, 0, MP_DTYPE_I64, 2, d);
  return MP_OK;
}
