/*
 * runner.c -- the runner protocol (mplan/runner.h): tensors/1 and
 * events/1, seeded inputs, and the library entry point that the
 * mplan-runner executable and the host `mplan verify` share.
 *
 * Invariants:
 *   1. Parsers check every length against the bytes left before reading.
 *   2. The same function (mp_runner_run) produces the bytes on every
 *      target, so a host run and a QEMU run are compared like for like.
 *   3. Event text never contains a tab or a newline inside a field
 *      (names cannot hold control characters; details are rewritten).
 */
#include "mplan/runner.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"
#ifdef MPLAN_RVV
#include "mplan/kernels_rvv.h"
#endif

static void rn_u32(mp_buf *out, uint32_t v) {
  unsigned char b[4] = {(unsigned char)v, (unsigned char)(v >> 8),
                        (unsigned char)(v >> 16), (unsigned char)(v >> 24)};
  mp_buf_append(out, (const char *)b, 4);
}

static void rn_u64(mp_buf *out, uint64_t v) {
  rn_u32(out, (uint32_t)v);
  rn_u32(out, (uint32_t)(v >> 32));
}

void mp_tensors_begin(mp_buf *out, uint32_t count) {
  mp_buf_append(out, "MPTENSOR", 8);
  rn_u32(out, 1);
  rn_u32(out, count);
}

void mp_tensors_add(mp_buf *out, const char *name, int dtype,
                    const mp_kshape *shape, const void *data, size_t bytes) {
  size_t nl = strlen(name);
  rn_u32(out, (uint32_t)nl);
  mp_buf_append(out, name, nl);
  unsigned char h[8] = {(unsigned char)dtype, (unsigned char)shape->rank};
  mp_buf_append(out, (const char *)h, 8);
  for (uint32_t i = 0; i < shape->rank; i++)
    rn_u64(out, (uint64_t)shape->dims[i]);
  rn_u64(out, bytes);
  if (bytes) mp_buf_append(out, data, bytes);
  static const char zero[8] = {0};
  size_t pad = (8 - (4 + nl + 8 + 8 * shape->rank + 8 + bytes) % 8) % 8;
  mp_buf_append(out, zero, pad);
}

static uint64_t rn_rd(const unsigned char *p, int n) {
  uint64_t v = 0;
  for (int i = n; i-- > 0;) v = v << 8 | p[i];
  return v;
}

mp_status mp_tensors_parse(const char *source, const void *data, size_t len,
                           const mp_alloc *a, mp_tensor_rec **recs,
                           size_t *count, mp_error *err) {
  const unsigned char *p = data;
  if (len < 16 || memcmp(p, "MPTENSOR", 8) != 0 || rn_rd(p + 8, 4) != 1) {
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "%s: not a tensors/1 file (bad magic or version)",
                        source);
  }
  size_t n = (size_t)rn_rd(p + 12, 4), at = 16;
  if (n > len / 16) {
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "%s: %zu tensors cannot fit "
                        "%zu bytes",
                        source, n, len);
  }
  /* One block: the records, then their NUL-terminated names. */
  size_t block;
  if (!mp_size_mul(n + 1, sizeof(mp_tensor_rec), &block) ||
      !mp_size_add(block, len + n + 1, &block)) {
    return mp_error_set(err, MP_ERR_BAD_INPUT, "%s: too large", source);
  }
  mp_tensor_rec *r = mp_calloc(a, 1, block);
  if (!r) return mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory", source);
  char *names = (char *)(r + n + 1);
  size_t used = 0;
  for (size_t i = 0; i < n; i++) {
    if (len - at < 4) goto trunc;
    size_t nl = (size_t)rn_rd(p + at, 4);
    at += 4;
    if (len - at < nl || len - at - nl < 8) goto trunc;
    memcpy(names + used, p + at, nl);
    r[i].name = names + used;
    used += nl + 1;
    at += nl;
    r[i].dtype = p[at];
    r[i].shape.rank = p[at + 1];
    at += 8;
    if (!mp_kd_bits(r[i].dtype) || r[i].shape.rank > MP_K_MAX_RANK) {
      mp_free(a, r);
      return mp_error_set(err, MP_ERR_BAD_INPUT,
                          "%s: tensor %zu: bad dtype or rank", source, i);
    }
    if (len - at < 8 * (size_t)r[i].shape.rank + 8) goto trunc;
    for (uint32_t d = 0; d < r[i].shape.rank; d++, at += 8) {
      r[i].shape.dims[d] = (int64_t)rn_rd(p + at, 8);
    }
    uint64_t nb = rn_rd(p + at, 8);
    at += 8;
    if (nb > len - at) goto trunc;
    r[i].data = p + at;
    r[i].bytes = (size_t)nb;
    at += (size_t)nb;
    size_t pad =
        (8 - (4 + nl + 8 + 8 * r[i].shape.rank + 8 + (size_t)nb) % 8) % 8;
    if (len - at < pad) goto trunc;
    at += pad;
  }
  *recs = r;
  *count = n;
  return MP_OK;
trunc:
  mp_free(a, r);
  return mp_error_set(err, MP_ERR_BAD_INPUT, "%s: truncated tensors/1 file",
                      source);
}

/* ---- events/1
 * ----------------------------------------------------------------- */

static void rn_field(mp_buf *out, const char *s) {
  mp_buf_puts(out, "\t");
  if (!s || !*s) {
    mp_buf_puts(out, "-");
    return;
  }
  for (; *s; s++)
    mp_buf_append(out, (*s == '\t' || *s == '\n' || *s == '\r') ? " " : s, 1);
}

/* The target line, and on a build with vector kernels one scalar line
 * per op that falls back to a scalar kernel. */
static void rn_target(const mp_bundle *b, mp_buf *out) {
#ifdef MPLAN_RVV
  mp_buf_printf(out, "target\trv64\trvv\t%u\n", mp_kv_vlen());
  for (size_t i = 0; i < mp_bundle_op_count(b); i++) {
    if (mp_rt_op_vector(b, i)) continue;
    const mp_bopr *op = mp_bundle_op(b, i);
    const mp_btensor *y = op->n_out ? mp_bundle_tensor(b, op->out[0]) : NULL;
    mp_buf_puts(out, "scalar");
    rn_field(out, op->name);
    rn_field(out, op->type);
    rn_field(out, mp_bop_name(op->kernel));
    rn_field(out, y ? mp_kd_name(y->dtype) : NULL);
    mp_buf_puts(out, "\n");
  }
#else
  (void)b;
  mp_buf_puts(out, "target\thost\tscalar\t0\n");
#endif
}

static void rn_events(const mp_bundle *b, const mp_rt *rt, mp_buf *out) {
  mp_buf_puts(out, "mplan-events/1\n");
  for (size_t i = 0; i < mp_rt_event_count(rt); i++) {
    const mp_rt_event *e = mp_rt_event_at(rt, i);
    const char *op = e->op >= 0 ? mp_bundle_op(b, (size_t)e->op)->name : NULL;
    const char *t =
        e->tensor >= 0   ? mp_bundle_tensor(b, (size_t)e->tensor)->name
        : e->buffer >= 0 ? mp_bundle_buffer(b, (size_t)e->buffer)->name
                         : NULL;
    mp_buf_printf(out, "event\t%s\t%d", mp_event_kind_name(e->kind), e->step);
    rn_field(out, op);
    rn_field(out, t);
    rn_field(out, mp_bundle_region(b, e->region)->plan_region);
    mp_buf_printf(out, "\t%" PRIu64 "\t%" PRIu64, e->first, e->last);
    rn_field(out, e->detail);
    mp_buf_puts(out, "\n");
  }
  rn_target(b, out);
  mp_buf_printf(out, "end\t%zu\t%zu\t%" PRIu64 "\t%zu\n", mp_rt_event_count(rt),
                mp_rt_events_dropped(rt), mp_rt_check_count(rt),
                mp_bundle_op_count(b));
}

/* Splits line into at most max tab-separated fields (in place). */
static size_t rn_split(char *line, char **f, size_t max) {
  size_t n = 0;
  while (n < max) {
    f[n++] = line;
    char *t = strchr(line, '\t');
    if (!t) break;
    *t = '\0';
    line = t + 1;
  }
  return n;
}

static bool rn_u64p(const char *s, uint64_t *v) {
  char *end;
  if (!*s || *s == '-') return false;
  unsigned long long x = strtoull(s, &end, 10);
  if (*end) return false;
  *v = x;
  return true;
}

static void rn_copy(char *dst, size_t cap, const char *s) {
  snprintf(dst, cap, "%s", strcmp(s, "-") == 0 ? "" : s);
}

mp_status mp_events_parse(const char *source, const char *text, size_t len,
                          const mp_alloc *a, mp_event_rec **recs, size_t *count,
                          uint64_t *checks, mp_error *err) {
  char *copy = mp_malloc(a, len + 1);
  size_t lines = 1;
  for (size_t i = 0; i < len; i++) lines += text[i] == '\n';
  mp_event_rec *r = mp_calloc(a, lines, sizeof *r);
  mp_status st = MP_OK;
  size_t n = 0, line_no = 0;
  bool ended = false;
  if (!copy || !r) {
    st = mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory", source);
    goto done;
  }
  memcpy(copy, text, len);
  copy[len] = '\0';
  for (char *line = copy; *line && st == MP_OK; line_no++) {
    char *nl = strchr(line, '\n');
    if (nl) *nl = '\0';
    char *f[9] = {0};
    size_t nf = rn_split(line, f, 9);
    if (line_no == 0) {
      if (strcmp(f[0], "mplan-events/1") != 0) {
        st = mp_error_set(err, MP_ERR_BAD_INPUT,
                          "%s: not an events/1 file (first line)", source);
      }
    } else if (strcmp(f[0], "event") == 0 && nf == 9) {
      mp_event_rec *e = &r[n++];
      uint64_t step = 0;
      if (!mp_event_kind_parse(f[1], &e->kind) || !rn_u64p(f[2], &step) ||
          !rn_u64p(f[6], &e->first) || !rn_u64p(f[7], &e->last)) {
        st = mp_error_set(err, MP_ERR_BAD_INPUT, "%s: line %zu: bad event",
                          source, line_no + 1);
      }
      e->step = (int64_t)step;
      rn_copy(e->op, sizeof e->op, f[3]);
      rn_copy(e->tensor, sizeof e->tensor, f[4]);
      rn_copy(e->region, sizeof e->region, f[5]);
      rn_copy(e->detail, sizeof e->detail, f[8]);
    } else if ((strcmp(f[0], "target") == 0 && nf == 4) ||
               (strcmp(f[0], "scalar") == 0 && nf == 5)) {
      /* read by mp_events_parse_target */
    } else if (strcmp(f[0], "end") == 0 && nf == 5) {
      uint64_t ne;
      if (!rn_u64p(f[1], &ne) || ne < n || !rn_u64p(f[3], checks)) {
        st = mp_error_set(err, MP_ERR_BAD_INPUT, "%s: bad end line", source);
      }
      ended = true;
    } else {
      st = mp_error_set(err, MP_ERR_BAD_INPUT, "%s: line %zu: unknown record",
                        source, line_no + 1);
    }
    if (!nl) break;
    line = nl + 1;
  }
  if (st == MP_OK && !ended) {
    st = mp_error_set(err, MP_ERR_BAD_INPUT,
                      "%s: no end line (the runner stopped early?)", source);
  }
done:
  mp_free(a, copy);
  if (st != MP_OK) {
    mp_free(a, r);
    return st;
  }
  *recs = r;
  *count = n;
  return MP_OK;
}

mp_status mp_events_parse_target(const char *source, const char *text,
                                 size_t len, const mp_alloc *a,
                                 mp_run_target *out, mp_error *err) {
  mp_run_target t;
  memset(&t, 0, sizeof t);
  size_t lines = 1;
  for (size_t i = 0; i < len; i++) lines += text[i] == '\n';
  char *copy = mp_malloc(a, len + 1);
  t.scalar = mp_calloc(a, lines, sizeof *t.scalar);
  if (!copy || !t.scalar) {
    mp_free(a, copy);
    mp_free(a, t.scalar);
    return mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory", source);
  }
  memcpy(copy, text, len);
  copy[len] = '\0';
  mp_status st = MP_OK;
  for (char *line = copy; *line && st == MP_OK;) {
    char *nl = strchr(line, '\n');
    if (nl) *nl = '\0';
    char *f[5] = {0};
    size_t nf = rn_split(line, f, 5);
    if (strcmp(f[0], "target") == 0 && nf == 4) {
      uint64_t v = 0;
      if (!rn_u64p(f[3], &v) || v > 65536) {
        st = mp_error_set(err, MP_ERR_BAD_INPUT, "%s: bad target line", source);
      }
      snprintf(t.arch, sizeof t.arch, "%s", f[1]);
      snprintf(t.kernels, sizeof t.kernels, "%s", f[2]);
      t.vlen = (unsigned)v;
    } else if (strcmp(f[0], "scalar") == 0 && nf == 5) {
      mp_scalar_rec *r = &t.scalar[t.n_scalar++];
      rn_copy(r->op, sizeof r->op, f[1]);
      rn_copy(r->type, sizeof r->type, f[2]);
      rn_copy(r->kernel, sizeof r->kernel, f[3]);
      rn_copy(r->dtype, sizeof r->dtype, f[4]);
    }
    if (!nl) break;
    line = nl + 1;
  }
  mp_free(a, copy);
  if (st != MP_OK) {
    mp_free(a, t.scalar);
    return st;
  }
  *out = t;
  return MP_OK;
}

/* ---- seeded inputs ---------------------------------------------------------
 */

/* splitmix64: one well-mixed 64-bit value per counter. */
static uint64_t rn_mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15u;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
  return x ^ (x >> 31);
}

void mp_seed_fill(int d, void *p, size_t n, uint64_t seed, uint64_t index) {
  uint64_t s = rn_mix(seed ^ rn_mix(index));
  for (size_t i = 0; i < n; i++) {
    uint64_t r = rn_mix(s + i);
    double u = (double)(r >> 11) * (1.0 / 9007199254740992.0); /* [0, 1) */
    double v;
    switch (d) {
      case MP_KD_F32:
      case MP_KD_F64:
      case MP_KD_F16:
      case MP_KD_BF16:
        v = 2 * u - 1;
        break;
      case MP_KD_I8:
        v = (double)(int)(r >> 56) - 128;
        break;
      case MP_KD_U8:
        v = (double)(r >> 56);
        break;
      case MP_KD_BOOL:
        v = (double)(r >> 63);
        break;
      case MP_KD_I4:
        v = (double)(int)(r >> 60) - 8;
        break;
      default:
        v = (double)(r >> 60);
        break;
    }
    mp_k_store(p, d, i, v);
  }
}

/* ---- the run
 * ------------------------------------------------------------------ */

static mp_status rn_inputs(const char *source, const mp_bundle *b, mp_rt *rt,
                           const void *inputs, size_t in_len,
                           const mp_runner_opts *o, const mp_alloc *a,
                           mp_error *err) {
  mp_tensor_rec *recs = NULL;
  size_t n = 0;
  mp_status st = MP_OK;
  if (inputs) st = mp_tensors_parse(source, inputs, in_len, a, &recs, &n, err);
  void *tmp = NULL;
  if (o->inputs_used) {
    mp_tensors_begin(o->inputs_used, (uint32_t)mp_bundle_input_count(b));
  }
  for (size_t i = 0; st == MP_OK && i < mp_bundle_input_count(b); i++) {
    const mp_btensor *t = mp_bundle_tensor(b, mp_bundle_input(b, i));
    const mp_tensor_rec *r = NULL;
    for (size_t k = 0; k < n; k++) {
      if (strcmp(recs[k].name, t->name) == 0) r = &recs[k];
    }
    if (r) {
      if (r->dtype != t->dtype || r->bytes != t->bytes) {
        st = mp_error_set(err, MP_ERR_BAD_INPUT,
                          "%s: input '%s' is %s of %zu bytes; the bundle "
                          "wants %s of %llu",
                          source, t->name, mp_kd_name(r->dtype), r->bytes,
                          mp_kd_name(t->dtype), (unsigned long long)t->bytes);
      } else {
        st = mp_rt_set_input(rt, i, r->data, r->bytes, err);
        if (o->inputs_used) {
          mp_tensors_add(o->inputs_used, t->name, t->dtype, &t->shape, r->data,
                         r->bytes);
        }
      }
      continue;
    }
    if (inputs) {
      st = mp_error_set(err, MP_ERR_BAD_INPUT,
                        "%s: the inputs file has no tensor '%s'", source,
                        t->name);
      continue;
    }
    const void *src = NULL;
    if (t->data_bytes) { /* the value the plan was made for (--value) */
      src = mp_bundle_weights(b) + t->data_offset;
    } else {
      tmp = mp_malloc(a, (size_t)t->bytes + 1);
      if (!tmp) {
        st = mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory", source);
        continue;
      }
      mp_seed_fill(t->dtype, tmp, (size_t)mp_kshape_count(&t->shape), o->seed,
                   i);
      src = tmp;
    }
    st = mp_rt_set_input(rt, i, src, (size_t)t->bytes, err);
    if (o->inputs_used) {
      mp_tensors_add(o->inputs_used, t->name, t->dtype, &t->shape, src,
                     (size_t)t->bytes);
    }
    mp_free(a, tmp);
    tmp = NULL;
  }
  mp_free(a, recs);
  return st;
}

mp_status mp_runner_run(const char *source, const void *bundle, size_t len,
                        const void *inputs, size_t in_len,
                        const mp_runner_opts *o, const mp_alloc *a,
                        mp_buf *outputs, mp_buf *events, mp_runner_result *res,
                        mp_error *err) {
  mp_bundle *b = NULL;
  mp_rt *rt = NULL;
  mp_runner_opts none = {0};
  if (!o) o = &none;
  mp_status st = mp_bundle_load(source, bundle, len, a, &b, err);
  mp_rt_opts ro = {o->poison, o->paranoid, o->fail_fast, -1, 0, 0, o->max_ops};
  uint32_t oob;
  if (st == MP_OK && o->oob_op) {
    if (!mp_bundle_find_op(b, o->oob_op, &oob)) {
      st = mp_error_set(err, MP_ERR_BAD_INPUT,
                        "%s: --inject oob:%s: the bundle has no op named '%s'",
                        source, o->oob_op, o->oob_op);
    }
    ro.oob_op = (int32_t)oob;
  }
  if (st == MP_OK) {
    st = mp_rt_create(b, &ro, a, &rt, err);
    if (st != MP_OK) mp_error_prefix(err, "%s", source);
  }
  if (st == MP_OK) st = rn_inputs(source, b, rt, inputs, in_len, o, a, err);
  if (st == MP_OK) {
    st = mp_rt_run(rt, err);
    if (st != MP_OK) mp_error_prefix(err, "%s", source);
  }
  if (st == MP_OK && outputs) {
    mp_tensors_begin(outputs, (uint32_t)mp_bundle_output_count(b));
    for (size_t i = 0; i < mp_bundle_output_count(b); i++) {
      uint32_t t = mp_bundle_output(b, i);
      const mp_btensor *x = mp_bundle_tensor(b, t);
      mp_tensors_add(outputs, x->name, x->dtype, &x->shape,
                     mp_rt_tensor_data(rt, t), (size_t)x->bytes);
    }
    st = mp_buf_status(outputs, "outputs", err);
  }
  if (st == MP_OK && events) {
    rn_events(b, rt, events);
    st = mp_buf_status(events, "events", err);
  }
  if (st == MP_OK && res) {
    res->events = mp_rt_event_count(rt) + mp_rt_events_dropped(rt);
    res->ops = mp_bundle_op_count(b);
  }
  mp_rt_destroy(rt);
  mp_bundle_destroy(b);
  return st;
}
