/*
 * c_header_run.c -- a runtime of its own that knows a model only through
 * its C header (mplan plan --c-header): it allocates each region once at
 * its alignment, runs the steps in order with f32 kernels driven by the
 * tables alone (each operand's offset, shape and the op's attributes,
 * including the fused epilogues of docs/ir-conventions.md), and compares
 * every graph output, bit for bit, with a run in which each tensor has
 * memory of its own. A plan that let a tensor overwrite one still to be
 * read would show here.
 *
 * Built by test_c_header.sh with -DMP_HEADER='"x.h"' -DMP_UP=X_
 * -DMP_LOW=x_. Kernels (f32, NCHW): Relu, Neg, Abs, Sigmoid, Clip; Add,
 * Sub, Mul, Div with broadcasting; Conv (2-D, groups, strides, pads,
 * dilations), Gemm and MatMul, each with an epilogue; MaxPool,
 * AveragePool, GlobalAveragePool; Concat, Transpose, Softmax,
 * ConstantOfShape; Reshape,
 * Flatten, Squeeze, Unsqueeze and Identity as copies. A tensor whose
 * table row carries data (--c-header-weights) starts with it; other
 * inputs and weights get values seeded by their names, so two headers
 * of one model (made with other passes or orders) get the same ones.
 * `c_header_run [OUT [IN]]` writes the outputs, sorted by name, to OUT
 * for the test to compare, and reads the graph inputs from IN, a
 * tensors/1 file (mplan/runner.h; `mplan-runner --write-inputs` writes
 * one).
 *
 * Each op computes its output into scratch memory and then stores it at
 * the output's offset: an op written in place over its input (the plan's
 * rule) reads that input whole first, as any in-place kernel must keep
 * to; what this checks is that no *other* step's bytes are overwritten.
 *
 * Exit 0: every output identical; 1: one differs; 2: an op or operand it
 * cannot run.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include MP_HEADER

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define UP(x) CAT(MP_UP, x)
#define LOW(x) CAT(MP_LOW, x)

typedef struct LOW(tensor) tensor;
typedef struct LOW(step) step;
typedef struct LOW(attr) attr;

static const tensor *T; /* the tensor table */
static float **P;       /* the run's bytes of each tensor */
static char why[256];   /* what could not run */

static size_t numel(uint32_t x) {
  size_t n = 1;
  for (uint32_t d = 0; d < T[x].rank; d++) n *= (size_t)T[x].shape[d];
  return n;
}

static const attr *find(const step *s, const char *name) {
  for (uint32_t a = 0; a < s->n_attrs; a++) {
    if (strcmp(s->attrs[a].name, name) == 0) return &s->attrs[a];
  }
  return NULL;
}

static int64_t aint(const step *s, const char *name, int64_t def) {
  const attr *a = find(s, name);
  return a && a->kind == UP(ATTR_INT) ? a->i : def;
}

static float afloat(const step *s, const char *name, float def) {
  const attr *a = find(s, name);
  if (a && a->kind == UP(ATTR_INT)) return (float)a->i;
  return a && a->kind == UP(ATTR_FLOAT) ? (float)a->f : def;
}

/* Element k of list attribute name, or def. */
static int64_t alist(const step *s, const char *name, uint32_t k, int64_t def) {
  const attr *a = find(s, name);
  return a && a->kind == UP(ATTR_INTS) && k < a->n ? a->ints[k] : def;
}

/* The element of input x that output element i of y reads when x is
 * broadcast to y's shape (numpy rules, aligned on the last axis). */
static size_t bcast(uint32_t x, uint32_t y, size_t i) {
  size_t off = 0, stride = 1;
  for (uint32_t d = 0; d < T[y].rank; d++) {
    uint32_t dy = T[y].rank - 1 - d;
    size_t ext = (size_t)T[y].shape[dy], idx = i % ext;
    i /= ext;
    if (d < T[x].rank) {
      size_t ex = (size_t)T[x].shape[T[x].rank - 1 - d];
      off += (ex == 1 ? 0 : idx) * stride;
      stride *= ex;
    }
  }
  return off;
}

static float unary(const char *type, float v, float lo, float hi) {
  if (strcmp(type, "Relu") == 0) return v > 0 ? v : 0;
  if (strcmp(type, "Neg") == 0) return -v;
  if (strcmp(type, "Abs") == 0) return v < 0 ? -v : v;
  if (strcmp(type, "Sigmoid") == 0) return 1.0f / (1.0f + expf(-v));
  return v < lo ? lo : v > hi ? hi : v; /* Clip */
}

static int is_unary(const char *type) {
  return !strcmp(type, "Relu") || !strcmp(type, "Neg") ||
         !strcmp(type, "Abs") || !strcmp(type, "Sigmoid") ||
         !strcmp(type, "Clip");
}

static float binary(char op, float a, float b) {
  switch (op) {
    case '+':
      return a + b;
    case '-':
      return a - b;
    case '*':
      return a * b;
    default:
      return a / b;
  }
}

static char binary_op(const char *type) {
  if (!strcmp(type, "Add")) return '+';
  if (!strcmp(type, "Sub")) return '-';
  if (!strcmp(type, "Mul")) return '*';
  if (!strcmp(type, "Div")) return '/';
  return 0;
}

/* A scalar bound of Clip given as an input (absent: def). */
static float bound(uint32_t x, float def) {
  return x == UP(NONE) ? def : P[x][0];
}

/* The head's epilogue over y (output o): fused_activation, then each
 * entry of mplan.epilogue, operands appended from input `next` on, and
 * `Mul@j` / `Add@j` reading the value that entered entry j
 * (docs/ir-conventions.md). */
static int epilogue(const step *s, float *y, uint32_t o, uint32_t next) {
  const attr *fa = find(s, "fused_activation");
  size_t n = numel(o);
  if (fa && fa->kind == UP(ATTR_STRING)) {
    int six = strcmp(fa->s, "Relu6") == 0;
    if (!six && strcmp(fa->s, "Relu") != 0) {
      snprintf(why, sizeof why, "fused_activation %s", fa->s);
      return 2;
    }
    for (size_t i = 0; i < n; i++) {
      y[i] = unary("Clip", y[i], 0, six ? 6 : INFINITY);
    }
  }
  const attr *ep = find(s, "mplan.epilogue");
  if (!ep) return 0;
  char list[256], key[64], *entry[32];
  int count = 0, tapped = -1, rc = 0;
  snprintf(list, sizeof list, "%s", ep->s);
  for (char *e = strtok(list, ","); e && count < 32; e = strtok(NULL, ",")) {
    char *at = strchr(e, '@');
    if (at) tapped = atoi(at + 1);
    entry[count++] = e;
  }
  float *tap = tapped >= 0 ? malloc(n * sizeof *tap) : NULL;
  if (tapped >= 0 && !tap) return 2;
  for (int k = 0; k < count && !rc; k++) {
    char *e = entry[k], *at = strchr(e, '@');
    if (k == tapped) memcpy(tap, y, n * sizeof *tap);
    if (at) *at = '\0';
    char op = binary_op(e);
    if (at && op && atoi(at + 1) <= k) {
      for (size_t i = 0; i < n; i++) y[i] = binary(op, y[i], tap[i]);
    } else if (op && !at) {
      if (next >= s->n_inputs || s->inputs[next] == UP(NONE)) {
        snprintf(why, sizeof why, "entry %s: no operand", e);
        rc = 2;
        break;
      }
      uint32_t x = s->inputs[next++];
      for (size_t i = 0; i < n; i++) {
        y[i] = binary(op, y[i], P[x][bcast(x, o, i)]);
      }
    } else if (is_unary(e) && !at) {
      float lo = -INFINITY, hi = INFINITY;
      if (!strcmp(e, "Clip")) {
        snprintf(key, sizeof key, "mplan.e%d.min", k);
        if (find(s, key)) {
          lo = afloat(s, key, lo);
          snprintf(key, sizeof key, "mplan.e%d.max", k);
          hi = afloat(s, key, hi);
        } else if (next + 1 < s->n_inputs) {
          lo = bound(s->inputs[next], lo);
          hi = bound(s->inputs[next + 1], hi);
          next += 2;
        }
      }
      for (size_t i = 0; i < n; i++) y[i] = unary(e, y[i], lo, hi);
    } else {
      snprintf(why, sizeof why, "epilogue entry %s", e);
      rc = 2;
    }
  }
  free(tap);
  return rc;
}

static int conv(const step *s, float *y) {
  uint32_t x = s->inputs[0], w = s->inputs[1], o = s->outputs[0];
  uint32_t b = s->n_inputs > 2 ? s->inputs[2] : UP(NONE);
  if (T[x].rank != 4) {
    snprintf(why, sizeof why, "Conv of rank %" PRIu32, T[x].rank);
    return 2;
  }
  int64_t N = T[x].shape[0], C = T[x].shape[1], H = T[x].shape[2],
          W = T[x].shape[3], M = T[o].shape[1], OH = T[o].shape[2],
          OW = T[o].shape[3], KH = T[w].shape[2], KW = T[w].shape[3];
  int64_t g = aint(s, "group", 1), cg = C / g, mg = M / g;
  int64_t sh = alist(s, "strides", 0, 1), sw = alist(s, "strides", 1, 1);
  int64_t ph = alist(s, "pads", 0, 0), pw = alist(s, "pads", 1, 0);
  int64_t dh = alist(s, "dilations", 0, 1), dw = alist(s, "dilations", 1, 1);
  for (int64_t n = 0; n < N; n++)
    for (int64_t m = 0; m < M; m++)
      for (int64_t oy = 0; oy < OH; oy++)
        for (int64_t ox = 0; ox < OW; ox++) {
          float acc = 0;
          int64_t c0 = m / mg * cg;
          for (int64_t c = 0; c < cg; c++)
            for (int64_t ky = 0; ky < KH; ky++)
              for (int64_t kx = 0; kx < KW; kx++) {
                int64_t iy = oy * sh - ph + ky * dh,
                        ix = ox * sw - pw + kx * dw;
                if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                acc += P[x][((n * C + c0 + c) * H + iy) * W + ix] *
                       P[w][((m * cg + c) * KH + ky) * KW + kx];
              }
          if (b != UP(NONE)) acc += P[b][m];
          y[((n * M + m) * OH + oy) * OW + ox] = acc;
        }
  return epilogue(s, y, o, 3);
}

/* Gemm (rank 2) and MatMul (A of any rank >= 2 with B of rank 2, or both
 * of one rank with equal batches). */
static int matmul(const step *s, float *y, int gemm) {
  uint32_t a = s->inputs[0], b = s->inputs[1], o = s->outputs[0];
  int ta = gemm && aint(s, "transA", 0), tb = gemm && aint(s, "transB", 0);
  uint32_t ra = T[a].rank, rb = T[b].rank;
  if (ra < 2 || rb < 2 || (rb != 2 && rb != ra)) {
    snprintf(why, sizeof why, "MatMul of ranks %" PRIu32 " and %" PRIu32, ra,
             rb);
    return 2;
  }
  int64_t M = T[a].shape[ra - (ta ? 1 : 2)], K = T[a].shape[ra - (ta ? 2 : 1)];
  int64_t N = T[b].shape[rb - (tb ? 2 : 1)];
  size_t batches = numel(a) / (size_t)(M * K);
  float alpha = afloat(s, "alpha", 1), beta = afloat(s, "beta", 1);
  uint32_t c = gemm && s->n_inputs > 2 ? s->inputs[2] : UP(NONE);
  for (size_t q = 0; q < batches; q++) {
    const float *A = P[a] + q * (size_t)(M * K);
    const float *B = P[b] + (rb == 2 ? 0 : q * (size_t)(K * N));
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = 0; j < N; j++) {
        float acc = 0;
        for (int64_t k = 0; k < K; k++) {
          acc += A[ta ? k * M + i : i * K + k] * B[tb ? j * K + k : k * N + j];
        }
        size_t at = q * (size_t)(M * N) + (size_t)(i * N + j);
        if (gemm) {
          acc *= alpha;
          if (c != UP(NONE)) acc += beta * P[c][bcast(c, o, at)];
        }
        y[at] = acc;
      }
  }
  return epilogue(s, y, o, gemm ? 3 : 2);
}

static int pool(const step *s, float *y, int max, int global) {
  uint32_t x = s->inputs[0];
  int64_t N = T[x].shape[0], C = T[x].shape[1], H = T[x].shape[2],
          W = T[x].shape[3], OH = global ? 1 : T[s->outputs[0]].shape[2],
          OW = global ? 1 : T[s->outputs[0]].shape[3];
  int64_t KH = global ? H : alist(s, "kernel_shape", 0, 1),
          KW = global ? W : alist(s, "kernel_shape", 1, 1);
  int64_t sh = alist(s, "strides", 0, 1), sw = alist(s, "strides", 1, 1);
  int64_t ph = global ? 0 : alist(s, "pads", 0, 0),
          pw = global ? 0 : alist(s, "pads", 1, 0);
  int incl = (int)aint(s, "count_include_pad", 0);
  for (int64_t nc = 0; nc < N * C; nc++)
    for (int64_t oy = 0; oy < OH; oy++)
      for (int64_t ox = 0; ox < OW; ox++) {
        float acc = max ? -INFINITY : 0;
        int64_t cnt = 0;
        for (int64_t ky = 0; ky < KH; ky++)
          for (int64_t kx = 0; kx < KW; kx++) {
            int64_t iy = oy * sh - ph + ky, ix = ox * sw - pw + kx;
            if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
            float v = P[x][(nc * H + iy) * W + ix];
            acc = max ? (v > acc ? v : acc) : acc + v;
            cnt++;
          }
        y[(nc * OH + oy) * OW + ox] =
            max ? acc : acc / (float)(incl ? KH * KW : cnt);
      }
  return 0;
}

/* Output element i's index along axis, and the sizes around it. */
static void around(uint32_t t, int64_t axis, size_t *outer, size_t *ext,
                   size_t *inner) {
  *outer = *inner = 1;
  for (int64_t d = 0; d < (int64_t)T[t].rank; d++) {
    if (d < axis) *outer *= (size_t)T[t].shape[d];
    if (d > axis) *inner *= (size_t)T[t].shape[d];
  }
  *ext = (size_t)T[t].shape[axis];
}

static int concat(const step *s, float *y) {
  uint32_t o = s->outputs[0];
  int64_t axis = aint(s, "axis", 0);
  if (axis < 0) axis += T[o].rank;
  size_t outer, ext, inner, at = 0;
  around(o, axis, &outer, &ext, &inner);
  for (uint32_t k = 0; k < s->n_inputs; k++) {
    uint32_t x = s->inputs[k];
    size_t xo, xe, xi;
    around(x, axis, &xo, &xe, &xi);
    for (size_t q = 0; q < outer; q++) {
      memcpy(y + (q * ext + at) * inner, P[x] + q * xe * inner,
             xe * inner * sizeof *y);
    }
    at += xe;
  }
  return 0;
}

static int transpose(const step *s, float *y) {
  uint32_t x = s->inputs[0], o = s->outputs[0], r = T[x].rank;
  size_t stride[8], n = numel(o);
  if (r > 8) return 2;
  for (uint32_t d = r; d-- > 0;) {
    stride[d] = d + 1 < r ? stride[d + 1] * (size_t)T[x].shape[d + 1] : 1;
  }
  for (size_t i = 0; i < n; i++) {
    size_t rest = i, off = 0;
    for (uint32_t d = r; d-- > 0;) {
      size_t ext = (size_t)T[o].shape[d];
      off += rest % ext * stride[alist(s, "perm", d, (int64_t)(r - 1 - d))];
      rest /= ext;
    }
    y[i] = P[x][off];
  }
  return 0;
}

static int softmax(const step *s, float *y) {
  uint32_t x = s->inputs[0];
  int64_t axis = aint(s, "axis", -1);
  if (axis < 0) axis += T[x].rank;
  size_t outer, ext, inner;
  around(x, axis, &outer, &ext, &inner);
  for (size_t q = 0; q < outer; q++)
    for (size_t j = 0; j < inner; j++) {
      const float *v = P[x] + q * ext * inner + j;
      float *w = y + q * ext * inner + j, m = v[0], sum = 0;
      for (size_t e = 1; e < ext; e++) m = v[e * inner] > m ? v[e * inner] : m;
      for (size_t e = 0; e < ext; e++)
        sum += w[e * inner] = expf(v[e * inner] - m);
      for (size_t e = 0; e < ext; e++) w[e * inner] /= sum;
    }
  return 0;
}

static int run_step(const step *s, float *y) {
  const char *t = s->type;
  uint32_t o = s->outputs[0], x = s->inputs[0];
  char op = binary_op(t);
  if (op) {
    uint32_t b = s->inputs[1];
    for (size_t i = 0; i < numel(o); i++) {
      y[i] = binary(op, P[x][bcast(x, o, i)], P[b][bcast(b, o, i)]);
    }
    return 0;
  }
  if (is_unary(t)) {
    float lo = afloat(s, "min", -INFINITY), hi = afloat(s, "max", INFINITY);
    if (s->n_inputs > 1) lo = bound(s->inputs[1], lo);
    if (s->n_inputs > 2) hi = bound(s->inputs[2], hi);
    for (size_t i = 0; i < numel(o); i++) y[i] = unary(t, P[x][i], lo, hi);
    return 0;
  }
  if (!strcmp(t, "ConstantOfShape")) {
    /* ONNX's tensor attribute "value" reads as a list of one */
    const attr *v = find(s, "value");
    float c = 0;
    if (v && v->n) {
      c = v->kind == UP(ATTR_FLOATS) ? (float)v->floats[0] : (float)v->ints[0];
    }
    for (size_t i = 0; i < numel(o); i++) y[i] = c;
    return 0;
  }
  if (!strcmp(t, "Conv")) return conv(s, y);
  if (!strcmp(t, "Gemm")) return matmul(s, y, 1);
  if (!strcmp(t, "MatMul")) return matmul(s, y, 0);
  if (!strcmp(t, "MaxPool")) return pool(s, y, 1, 0);
  if (!strcmp(t, "AveragePool")) return pool(s, y, 0, 0);
  if (!strcmp(t, "GlobalAveragePool")) return pool(s, y, 0, 1);
  if (!strcmp(t, "Concat")) return concat(s, y);
  if (!strcmp(t, "Transpose")) return transpose(s, y);
  if (!strcmp(t, "Softmax")) return softmax(s, y);
  if (!strcmp(t, "Reshape") || !strcmp(t, "Flatten") || !strcmp(t, "Squeeze") ||
      !strcmp(t, "Unsqueeze") || !strcmp(t, "Identity")) {
    memcpy(y, P[x], numel(o) * sizeof *y);
    return 0;
  }
  snprintf(why, sizeof why, "no kernel for %s", t);
  return 2;
}

/* Runs every step with ptr[t] the bytes of tensor t. */
static int run_all(float **ptr) {
  const step *s = LOW(steps)();
  P = ptr;
  for (size_t k = 0; k < UP(STEP_COUNT); k++) {
    uint32_t o = s[k].outputs[0];
    int rc = 2;
    if (s[k].n_outputs != 1 || s[k].n_inputs < 1) {
      snprintf(why, sizeof why, "%" PRIu32 " outputs", s[k].n_outputs);
    } else if (strcmp(T[o].dtype, "f32") != 0) {
      snprintf(why, sizeof why, "output of dtype %s", T[o].dtype);
    } else {
      float *y = calloc(numel(o) + 1, sizeof *y);
      rc = y ? run_step(&s[k], y) : 2;
      if (!rc) memcpy(ptr[o], y, numel(o) * sizeof *y);
      free(y);
    }
    if (rc) {
      fprintf(stderr, "step %zu (%s, %s): %s\n", k, s[k].op, s[k].type, why);
      return rc;
    }
  }
  return 0;
}

/* Reads the graph inputs from a tensors/1 file (mplan/runner.h) into
 * own[]: each record's data goes to the tensor of its name, which must
 * have its bytes. */
static int read_inputs(const char *path, float **own) {
  FILE *f = fopen(path, "rb");
  static unsigned char buf[1 << 24];
  size_t len = f ? fread(buf, 1, sizeof buf, f) : 0;
  if (f) fclose(f);
  if (len < 16 || memcmp(buf, "MPTENSOR", 8) != 0) {
    fprintf(stderr, "%s: not a tensors/1 file\n", path);
    return 2;
  }
  uint32_t count;
  memcpy(&count, buf + 12, 4);
  size_t at = 16;
  for (uint32_t r = 0; r < count; r++) {
    uint32_t nl;
    uint64_t bytes;
    if (at + 4 > len) return 2;
    memcpy(&nl, buf + at, 4);
    if (at + 4 + nl + 8 > len) return 2;
    const char *name = (const char *)buf + at + 4;
    unsigned rank = buf[at + 4 + nl + 1];
    size_t rec = 4 + nl + 8 + 8 * (size_t)rank;
    if (at + rec + 8 > len) return 2;
    memcpy(&bytes, buf + at + rec, 8);
    rec += 8;
    if (at + rec + bytes > len) return 2;
    size_t i = 0;
    while (i < UP(TENSOR_COUNT) &&
           (strlen(T[i].name) != nl || memcmp(T[i].name, name, nl) != 0)) {
      i++;
    }
    if (i == UP(TENSOR_COUNT) || T[i].bytes != bytes) {
      fprintf(stderr, "%s: input '%.*s' of %" PRIu64 " bytes is no tensor\n",
              path, (int)nl, name, bytes);
      return 2;
    }
    memcpy(own[i], buf + at + rec, (size_t)bytes);
    rec += (size_t)bytes;
    at += rec + (8 - rec % 8) % 8;
  }
  return 0;
}

static int by_name(const void *a, const void *b) {
  return strcmp(T[*(const size_t *)a].name, T[*(const size_t *)b].name);
}

int main(int argc, char **argv) {
  const struct LOW(region) *r = LOW(regions)();
  size_t n = UP(TENSOR_COUNT);
  unsigned char *base[UP(REGION_COUNT)];
  float *planned[UP(TENSOR_COUNT)], *own[UP(TENSOR_COUNT)];
  size_t outs[UP(TENSOR_COUNT)], n_outs = 0;
  T = LOW(tensors)();
  for (size_t k = 0; k < UP(REGION_COUNT); k++) {
    size_t a = (size_t)r[k].align, bytes = (size_t)r[k].bytes;
    base[k] = aligned_alloc(a, (bytes + a - 1) / a * a + a);
    if (!base[k]) return 2;
    memset(base[k], 0xA5, (size_t)r[k].bytes); /* poison */
  }
  for (size_t i = 0; i < n; i++) {
    planned[i] = (float *)(void *)(base[T[i].region] + T[i].offset);
    own[i] = malloc((size_t)T[i].bytes);
    if (!own[i]) return 2;
    memset(own[i], 0x5A, (size_t)T[i].bytes);
    if (T[i].data) {
      memcpy(own[i], T[i].data, (size_t)T[i].bytes);
    } else if (strcmp(T[i].kind, "input") == 0 ||
               strcmp(T[i].kind, "weight") == 0) {
      uint32_t seed = 2166136261u; /* FNV-1a of the name */
      for (const char *c = T[i].name; *c; c++) {
        seed = (seed ^ (unsigned char)*c) * 16777619u;
      }
      for (size_t e = 0; e < T[i].bytes / sizeof(float); e++) {
        seed = seed * 1664525u + 1013904223u;
        own[i][e] = (float)((int32_t)(seed >> 8) % 2001 - 1000) / 4096.0f;
      }
    }
    if (strcmp(T[i].kind, "output") == 0) outs[n_outs++] = i;
  }
  int rc = argc > 2 ? read_inputs(argv[2], own) : 0;
  for (size_t i = 0; i < n; i++) {
    if (T[i].data || strcmp(T[i].kind, "input") == 0 ||
        strcmp(T[i].kind, "weight") == 0) {
      memcpy(planned[i], own[i], (size_t)T[i].bytes);
    }
  }
  if (!rc) rc = run_all(own);
  if (!rc) rc = run_all(planned);
  for (size_t k = 0; !rc && k < n_outs; k++) {
    size_t i = outs[k];
    if (memcmp(planned[i], own[i], (size_t)T[i].bytes) != 0) {
      printf("output %s differs from the run without reuse\n", T[i].name);
      rc = 1;
    }
  }
  if (!rc) {
    printf("%zu steps, %zu outputs identical to the run without reuse\n",
           (size_t)UP(STEP_COUNT), n_outs);
  }
  if (!rc && argc > 1) {
    FILE *f = fopen(argv[1], "wb");
    qsort(outs, n_outs, sizeof *outs, by_name);
    for (size_t k = 0; f && k < n_outs; k++) {
      fprintf(f, "%s %" PRIu64 "\n", T[outs[k]].name, T[outs[k]].bytes);
      fwrite(own[outs[k]], 1, (size_t)T[outs[k]].bytes, f);
    }
    if (!f || fclose(f) != 0) rc = 2;
  }
  for (size_t i = 0; i < n; i++) free(own[i]);
  for (size_t k = 0; k < UP(REGION_COUNT); k++) free(base[k]);
  return rc;
}
