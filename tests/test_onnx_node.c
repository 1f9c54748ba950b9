/*
 * test_onnx_node.c -- the ONNX backend node tests (Debian libonnx-testdata)
 * against mplan's importer and shape inference.
 *
 * For every test directory: import model.onnx, bind each graph input to
 * test_data_set_0/input_K.pb (its dims, and its values when small, as
 * --shape and --value would), infer, and compare every graph output's
 * inferred shape with the dims of test_data_set_0/output_K.pb, decoded with
 * the protobuf-c code generated from onnx.proto.
 *
 * Each test lands in one class:
 *   agree        every output inferred, every shape equal;
 *   disagree     an output inferred with a different shape (a bug);
 *   unsupported  an output left unknown (an op with no rule, a
 *                data-dependent shape, a subgraph);
 *   refused      the importer refused the model (sequence or optional
 *                types, string tensors...), with its message.
 * The test fails when any test disagrees or fewer than FLOOR agree.
 *
 * usage: test_onnx_node NODE_DIR FLOOR [-v]
 */
#include <dirent.h>
#include <stdlib.h>

#include "check.h"
#include "mplan/file.h"
#include "mplan/onnx.h"
#include "mplan/schedule.h"
#include "mplan/shape.h"
#include "onnx.pb-c.h"

typedef enum node_class { AGREE, DISAGREE, UNSUPPORTED, REFUSED } node_class;

static const char *const class_names[] = {"agree", "disagree", "unsupported",
                                          "refused"};

static int name_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static char *read_file(const char *path, size_t *len) {
  char *data = NULL;
  mp_error err;
  if (mp_file_read(path, NULL, &data, len, &err) != MP_OK) return NULL;
  return data;
}

/* Appends the types of ops with no rule (or, failing that, the types of
 * every op) to list, once each. */
static void note_ops(const mp_graph *g, char *list, size_t cap) {
  bool any = false;
  for (int pass = 0; pass < 2 && !any; pass++) {
    for (size_t o = 0; o < mp_graph_op_count(g); o++) {
      const char *t = mp_graph_op(g, o)->type;
      if (pass == 0 && mp_shape_has_rule(t)) continue;
      any = true;
      char item[128];
      snprintf(item, sizeof item, " %s%s", pass ? "data-dependent:" : "", t);
      if (strstr(list, item)) continue;
      size_t len = strlen(list);
      snprintf(list + len, cap - len, "%s", item);
    }
  }
}

static node_class compare_outputs(const char *dir, const mp_graph *g,
                                  const Onnx__GraphProto *gp, char *why,
                                  size_t cap) {
  node_class cls = AGREE;
  for (size_t k = 0; k < gp->n_output; k++) {
    char path[1400];
    size_t len;
    int32_t t;
    snprintf(path, sizeof path, "%s/test_data_set_0/output_%zu.pb", dir, k);
    char *data = read_file(path, &len);
    Onnx__TensorProto *tp =
        data ? onnx__tensor_proto__unpack(NULL, len, (const uint8_t *)data)
             : NULL;
    free(data);
    if (!tp || !mp_graph_find_tensor(g, gp->output[k]->name, &t)) {
      if (tp) onnx__tensor_proto__free_unpacked(tp, NULL);
      snprintf(why, cap, "output %zu: no tensor data or no tensor", k);
      return REFUSED;
    }
    const mp_tensor *x = mp_graph_tensor(g, (size_t)t);
    bool same = x->origin == MP_SHAPE_INFERRED && x->rank == tp->n_dims;
    for (uint32_t j = 0; same && j < x->rank; j++) {
      same = mp_graph_dim_of(g, &x->shape[j]) == tp->dims[j];
    }
    if (x->origin != MP_SHAPE_INFERRED) {
      cls = cls == AGREE ? UNSUPPORTED : cls;
    } else if (!same) {
      char got[256];
      mp_graph_shape_str(g, x, got, sizeof got);
      snprintf(why, cap,
               "output '%s': inferred %s, expected rank %zu dim0 %lld", x->name,
               got, tp->n_dims, tp->n_dims ? (long long)tp->dims[0] : -1LL);
      cls = DISAGREE;
    }
    onnx__tensor_proto__free_unpacked(tp, NULL);
  }
  return cls;
}

static node_class run_one(const char *dir, char *why, size_t cap, char *ops,
                          size_t ops_cap) {
  char path[1400];
  size_t len;
  mp_error err = {0};
  mp_graph *g = NULL;
  uint32_t *order = NULL;
  mp_order_kind used;
  snprintf(path, sizeof path, "%s/model.onnx", dir);
  char *data = read_file(path, &len);
  if (!data) {
    snprintf(why, cap, "cannot read model.onnx");
    return REFUSED;
  }
  Onnx__ModelProto *m =
      onnx__model_proto__unpack(NULL, len, (const uint8_t *)data);
  mp_status st = mp_onnx_import(path, data, len, NULL, &g, &err);
  free(data);
  if (!m || st != MP_OK) {
    snprintf(
        why, cap, "%s",
        err.msg + (strlen(path) + 2 < strlen(err.msg) ? strlen(path) + 2 : 0));
    if (m) onnx__model_proto__free_unpacked(m, NULL);
    mp_graph_destroy(g);
    return REFUSED;
  }
  const Onnx__GraphProto *gp = m->graph;
  size_t k = 0;
  for (size_t i = 0; st == MP_OK && i < gp->n_input; i++) {
    bool init = false;
    for (size_t j = 0; j < gp->n_initializer; j++) {
      init = init || strcmp(gp->initializer[j]->name, gp->input[i]->name) == 0;
    }
    int32_t t;
    if (init || !mp_graph_find_tensor(g, gp->input[i]->name, &t)) continue;
    /* Sequences and optionals import as pending: nothing to bind. */
    if (mp_graph_tensor(g, (size_t)t)->origin == MP_SHAPE_PENDING) {
      k++;
      continue;
    }
    snprintf(path, sizeof path, "%s/test_data_set_0/input_%zu.pb", dir, k++);
    char *in = read_file(path, &len);
    st = in ? mp_onnx_bind_input(g, gp->input[i]->name, in, len, &err)
            : MP_ERR_IO;
    free(in);
  }
  bool bound = st == MP_OK;
  if (st == MP_OK) st = mp_schedule(g, MP_ORDER_AUTO, &order, &used, &err);
  if (st == MP_OK) st = mp_shape_infer(g, order, NULL, &err);
  node_class cls = REFUSED;
  if (st == MP_OK) {
    cls = compare_outputs(dir, g, gp, why, cap);
  } else {
    snprintf(why, cap, "%.500s", err.msg);
    /* Inference rejecting test data is a disagreement; failing to bind
     * the test's inputs is a refusal. */
    cls = bound && st == MP_ERR_BAD_INPUT ? DISAGREE : REFUSED;
  }
  if (cls == UNSUPPORTED) note_ops(g, ops, ops_cap);
  free(order);
  mp_graph_destroy(g);
  onnx__model_proto__free_unpacked(m, NULL);
  return cls;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: test_onnx_node NODE_DIR FLOOR [-v]\n");
    return 2;
  }
  const char *root = argv[1];
  long floor = atol(argv[2]);
  bool verbose = argc > 3 && strcmp(argv[3], "-v") == 0;
  DIR *d = opendir(root);
  if (!d) {
    fprintf(stderr, "test_onnx_node: cannot open %s\n", root);
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
  size_t count[4] = {0};
  static char ops[8192];
  for (size_t i = 0; i < n; i++) {
    char dir[1200], why[1100] = "";
    snprintf(dir, sizeof dir, "%s/%s", root, names[i]);
    node_class c = run_one(dir, why, sizeof why, ops, sizeof ops);
    count[c]++;
    if (c == DISAGREE || (verbose && c != AGREE)) {
      fprintf(stderr, "%s %s: %s\n", class_names[c], names[i], why);
    }
    free(names[i]);
  }
  free(names);
  fprintf(stderr, "unsupported ops:%s\n", ops);
  printf(
      "node tests: %zu: %zu agree, %zu disagree, %zu unsupported, %zu "
      "refused at import (floor %ld)\n",
      n, count[AGREE], count[DISAGREE], count[UNSUPPORTED], count[REFUSED],
      floor);
  CHECK(n > 0);
  CHECK_EQ_U(count[DISAGREE], 0);
  CHECK((long)count[AGREE] >= floor);
  return check_exit("test_onnx_node");
}
