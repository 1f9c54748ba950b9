/*
 * test_mutations.c -- fault injection proves the checks work: over every
 * bundled model and the real models (PP-OCR cls, BlazeFace front), the
 * unmodified plan runs with 0 events (paranoid, red zones, and compared
 * bit for bit with the no-reuse run), and every mutation of a fixed set
 * is detected with the expected culprit op and victim tensor:
 *   overlap:A,B   B placed on A's bytes, A born before B and read by B's
 *                 producer -> clobber by B's producer, of A when writing B
 *                 changed A's bytes, else of B when A's buffer is released
 *                 right after that op (a Concat whose first input is A
 *                 copies A onto itself: A is intact, B is poisoned);
 *   early-free:T  T's buffer freed one step early -> early-free of T
 *                 after the op one step before T's last read;
 *   oob:OP        OP writes one element past its output (red zones of
 *                 16 bytes) -> redzone of OP's output, by OP.
 * Mutation targets are spread over the graph deterministically (at 1/6,
 * 1/3 and 1/2 of the steps). Mutated runs stop at the first event.
 * Prints the detection table.
 *
 * With VLENs after the cache folder, every run is repeated on rv64 (the
 * riscv64 runner with the RVV kernels under qemu-riscv64) at each VLEN,
 * and must find the same first event (kind, culprit, victim) as the host.
 *
 * usage: test_mutations SOURCE_DIR ONNX_CACHE [VLEN...]
 */
#include <stdlib.h>

#include "check.h"
#include "mplan/verify.h"

typedef struct mu_model {
  const char *path;
  const char *shape; /* --shape NAME=dims, or NULL */
} mu_model;

static size_t mu_detected, mu_total;

/* The last n characters of s: long ONNX names differ at their ends. */
static const char *mu_tail(const char *s, size_t n) {
  size_t len = strlen(s);
  return len > n ? s + len - n : s;
}

/* The targets every mutation runs on: the host, then rv64 (the riscv64
 * runner with the RVV kernels under QEMU) at each VLEN given. */
#define MU_MAX_TARGETS 4
static mp_qemu_target mu_qemu[MU_MAX_TARGETS];
static size_t mu_n_rv64;
static size_t mu_rv64_detected, mu_rv64_total, mu_rv64_same;

static const char *mu_target_name(size_t t, char *buf, size_t cap) {
  if (t == 0) return "host";
  snprintf(buf, cap, "rv64/%u", mu_qemu[t - 1].vlen);
  return buf;
}

static void mu_target(mp_verify_opts *o, size_t t) {
  if (t == 0) return;
  o->target = mp_target_qemu;
  o->target_ud = &mu_qemu[t - 1];
}

static const mp_op *mu_step(const mp_model *m, size_t k) {
  return mp_graph_op(mp_model_graph(m), mp_model_step_op_index(m, k));
}

/* The step whose op produces tensor t. */
static size_t mu_producer_step(const mp_model *m, int32_t t) {
  for (size_t k = 0; k < mp_model_steps(m); k++) {
    const mp_op *op = mu_step(m, k);
    for (uint32_t i = 0; i < op->n_outputs; i++) {
      if (op->outputs[i] == t) return k;
    }
  }
  return SIZE_MAX;
}

static void mu_run(const mp_model *m, const char *label, mp_inject_kind kind,
                   const char *a, const char *b, const char *want_kind,
                   const char *want_op, const char *want_victim,
                   const char *or_victim) {
  char host[3][256] = {"", "", ""};
  for (size_t tg = 0; tg <= mu_n_rv64; tg++) {
    mp_verify_opts o;
    memset(&o, 0, sizeof o);
    o.paranoid = true;
    o.fail_fast = true;
    o.no_reference = true;
    o.seed = 1;
    o.redzone = kind == MP_INJECT_OOB ? 16 : 0;
    o.inject.kind = kind;
    snprintf(o.inject.a, sizeof o.inject.a, "%s", a);
    snprintf(o.inject.b, sizeof o.inject.b, "%s", b ? b : "");
    mu_target(&o, tg);
    mp_verify_result r;
    mp_error err = {0};
    mp_status st = mp_verify_run(m, &o, NULL, &r, &err);
    if (st != MP_OK) fprintf(stderr, "%s: %s\n", label, err.msg);
    CHECK(st == MP_OK);
    const mp_event_rec *e = st == MP_OK && r.n_events ? &r.events[0] : NULL;
    bool ok = e && strcmp(mp_event_kind_name(e->kind), want_kind) == 0 &&
              strcmp(e->op, want_op) == 0 &&
              (strcmp(e->tensor, want_victim) == 0 ||
               (or_victim && strcmp(e->tensor, or_victim) == 0));
    const char *kn = e ? mp_event_kind_name(e->kind) : "none";
    if (tg == 0) {
      mu_total++;
      mu_detected += ok;
      snprintf(host[0], sizeof host[0], "%s", kn);
      snprintf(host[1], sizeof host[1], "%s", e ? e->op : "-");
      snprintf(host[2], sizeof host[2], "%s", e ? e->tensor : "-");
    } else {
      /* the same first event (kind, culprit, victim) as on the host */
      bool same = strcmp(host[0], kn) == 0 &&
                  strcmp(host[1], e ? e->op : "-") == 0 &&
                  strcmp(host[2], e ? e->tensor : "-") == 0;
      mu_rv64_total++;
      mu_rv64_detected += ok;
      mu_rv64_same += same;
      CHECK(same);
    }
    char tn[32], shown[64];
    const char *colon = strchr(label, ':');
    int klen = (int)(colon - label);
    if (strlen(label) <= 48) {
      snprintf(shown, sizeof shown, "%s", label);
    } else {
      snprintf(shown, sizeof shown, "%.*s:..%s", klen, label,
               mu_tail(colon + 1, (size_t)(45 - klen)));
    }
    printf("| %-12.12s | %-8s | %-48s | %-14s | %-28s | %-28s | %s |\n",
           strrchr(mp_model_path(m), '/') + 1,
           mu_target_name(tg, tn, sizeof tn), shown, kn,
           mu_tail(e ? e->op : "-", 28), mu_tail(e ? e->tensor : "-", 28),
           ok ? "yes" : "NO");
    if (!ok) {
      fprintf(stderr, "%s: expected %s by '%s' on '%s'\n", label, want_kind,
              want_op, want_victim);
    }
    CHECK(ok);
    if (st == MP_OK) mp_verify_result_release(&r, NULL);
  }
}

/* The unmodified plan: no event, outputs equal to the no-reuse run. */
static void mu_clean(const mp_model *m) {
  for (size_t tg = 0; tg <= mu_n_rv64; tg++) {
    mp_verify_opts o;
    memset(&o, 0, sizeof o);
    o.paranoid = true;
    o.redzone = 16;
    o.seed = 1;
    mu_target(&o, tg);
    mp_verify_result r;
    mp_error err = {0};
    mp_status st = mp_verify_run(m, &o, NULL, &r, &err);
    if (st != MP_OK) fprintf(stderr, "%s\n", err.msg);
    CHECK(st == MP_OK);
    if (st != MP_OK) return;
    CHECK_EQ_U(r.n_events, 0);
    CHECK_EQ_U(r.outputs, r.outputs_equal);
    char tn[32];
    printf("| %-12.12s | %-8s | %-48s | %-14s | %-28s | %-28s | %s |\n",
           strrchr(mp_model_path(m), '/') + 1,
           mu_target_name(tg, tn, sizeof tn), "(unmodified, red zones 16 B)",
           r.n_events ? "EVENTS" : "0 events", "-", "-",
           r.n_events ? "NO" : "yes");
    mp_verify_result_release(&r, NULL);
  }
}

static void mu_model_run(const mp_model *m) {
  const mp_graph *g = mp_model_graph(m);
  size_t n = mp_model_steps(m);
  mu_clean(m);
  for (int f = 1; f <= 3; f++) {
    size_t target = n * (size_t)(f == 3 ? 3 : f) / 6;
    char label[600];
    /* overlap: an activation input A of the op at or after target, and
     * B = that op's output, A born earlier. */
    for (size_t k = target; k < n; k++) {
      const mp_op *op = mu_step(m, k);
      int32_t a = -1;
      for (uint32_t i = 0; i < op->n_inputs && a < 0; i++) {
        int32_t t = op->inputs[i];
        if (t >= 0 &&
            mp_graph_tensor(g, (size_t)t)->kind == MP_TENSOR_ACTIVATION &&
            mu_producer_step(m, t) < k) {
          a = t;
        }
      }
      if (a < 0 || op->n_outputs != 1) continue;
      const char *an = mp_graph_tensor(g, (size_t)a)->name;
      const char *bn = mp_graph_tensor(g, (size_t)op->outputs[0])->name;
      snprintf(label, sizeof label, "overlap:%s,%s", an, bn);
      mu_run(m, label, MP_INJECT_OVERLAP, an, bn, "clobber", op->name, an, bn);
      break;
    }
    /* early-free: an activation read two steps or more after birth. */
    for (size_t k = target; k < n; k++) {
      const mp_op *op = mu_step(m, k);
      int32_t t = op->outputs[0];
      const mp_buffer *b = mp_problem_buffer(
          mp_model_problem(m), mp_model_tensor_buffer(m, (size_t)t));
      if (mp_graph_tensor(g, (size_t)t)->kind != MP_TENSOR_ACTIVATION ||
          b->last <= b->first) {
        continue;
      }
      const char *tn = mp_graph_tensor(g, (size_t)t)->name;
      snprintf(label, sizeof label, "early-free:%s", tn);
      mu_run(m, label, MP_INJECT_EARLY_FREE, tn, NULL, "early-free",
             mu_step(m, (size_t)b->last - 1)->name, tn, NULL);
      break;
    }
    /* oob: a single-output op. */
    for (size_t k = target; k < n; k++) {
      const mp_op *op = mu_step(m, k);
      if (op->n_outputs != 1) continue;
      snprintf(label, sizeof label, "oob:%s", op->name);
      mu_run(m, label, MP_INJECT_OOB, op->name, NULL, "redzone", op->name,
             mp_graph_tensor(g, (size_t)op->outputs[0])->name, NULL);
      break;
    }
  }
}

int main(int argc, char **argv) {
  const char *src = argc > 1 ? argv[1] : ".";
  const char *cache = argc > 2 ? argv[2] : "onnx-cache";
  char paths[4][1200];
  snprintf(paths[0], sizeof paths[0], "%s/models/mobilenet_v1.json", src);
  snprintf(paths[1], sizeof paths[1], "%s/models/mobilenet_v2.json", src);
  snprintf(paths[2], sizeof paths[2],
           "%s/ocr/ch_ppocr_mobile_v2.0_cls_infer.onnx", cache);
  snprintf(paths[3], sizeof paths[3],
           "%s/blazeface/face_detection_front_128x128_barracuda.onnx", cache);
  for (int i = 3; i < argc && mu_n_rv64 < MU_MAX_TARGETS; i++) {
    mp_error err = {0};
    unsigned vlen = (unsigned)strtoul(argv[i], NULL, 10);
    if (mp_qemu_target_init(&mu_qemu[mu_n_rv64], vlen, &err) != MP_OK) {
      fprintf(stderr, "test_mutations: %s\n", err.msg);
      return 1;
    }
    mu_n_rv64++;
  }
  printf("| %-12s | %-8s | %-48s | %-14s | %-28s | %-28s | %s |\n", "model",
         "target", "mutation", "first event", "culprit op", "victim", "right");
  printf(
      "|--------------|----------|------------------------------------------"
      "--------|----------------|------------------------------|-----------"
      "-------------------|-------|\n");
  for (int i = 0; i < 4; i++) {
    mp_load_opts lo = {0};
    mp_shape_binding sb = {"x", 4, {1, 3, 48, 192}};
    if (i == 2) {
      lo.shapes = &sb;
      lo.n_shapes = 1;
    }
    mp_model *m = NULL;
    mp_error err = {0};
    mp_status st = mp_model_load(paths[i], &lo, NULL, &m, &err);
    if (st != MP_OK) fprintf(stderr, "%s\n", err.msg);
    CHECK(st == MP_OK);
    if (st == MP_OK) mu_model_run(m);
    mp_model_destroy(m);
  }
  printf("mutations detected with the right culprit and victim: %zu of %zu\n",
         mu_detected, mu_total);
  if (mu_n_rv64) {
    printf(
        "on rv64 (RVV kernels, QEMU, %zu VLEN%s): %zu of %zu detected with "
        "the right culprit and victim, %zu of %zu the same first event as on "
        "the host\n",
        mu_n_rv64, mu_n_rv64 == 1 ? "" : "s", mu_rv64_detected, mu_rv64_total,
        mu_rv64_same, mu_rv64_total);
    CHECK_EQ_U(mu_rv64_total, mu_total * mu_n_rv64);
    CHECK_EQ_U(mu_rv64_same, mu_rv64_total);
  }
  CHECK(mu_total >= 30);
  CHECK_EQ_U(mu_detected, mu_total);
  return check_exit("test_mutations");
}
