/*
 * dot.c -- the graph as Graphviz DOT and SVG, built with cgraph and laid
 * out and rendered with gvc (in a child process, invariant 8). No DOT
 * text is printed by hand: cgraph quotes and escapes every id and
 * attribute.
 *
 * A graph model draws ops as nodes and tensors as edges from the producer
 * to each consumer, labelled "name / shape dtype / bytes"; graph inputs,
 * weights and retained state without a producer get a source node, and
 * outputs and unread tensors a sink node, so that every tensor is an edge.
 * A model without a graph (lifetime table, CSV, plan) draws one node per
 * event time and one edge per buffer from its first to its last time.
 *
 * Invariants:
 *   1. Node ids carry a prefix saying what they are ("op:", "in:", "w:",
 *      "out:", "t:"), so an op and a tensor of the same name never merge.
 *   2. An op reading a tensor twice gets one edge (mp_op_first_read).
 *   3. Tensors live at some peak step are red and thick, resident ones
 *      grey and dashed, ops of a peak interval filled: the same sets as
 *      the explanation and the HTML (report_peak_mask).
 *   4. Graphviz keeps its error level in a global and prints to stderr by
 *      default; around our calls the level is raised to AGMAX (messages
 *      are only recorded), the last message becomes our one-line error,
 *      and the old level is restored. The graph is closed on every path.
 *   5. One gvc context serves every drawing of a process (mp_graphviz):
 *      Graphviz's pango plugin caches a pointer into the font table of
 *      the context it measured text with last.
 *   6. Edges are tensors, styled after the buffer that holds them: a
 *      tensor sharing another's bytes (view, in place) is live exactly
 *      when its buffer is, and says whose bytes it uses.
 *   7. A fused op (the passes' fusion records) is drawn inside a cluster
 *      with one dashed note per record naming the ops it absorbed and the
 *      intermediates that no longer exist. An op has one cluster however
 *      many records name it (a QDQ Conv has its input's and its weight's
 *      DequantizeLinear and its epilogue), titled by each in turn: dot
 *      draws a node inside one cluster, and a node in several has no
 *      defined place (the DOT file printed such an op in its first
 *      cluster only).
 *   8. Layout and rendering run in a child process (dot_isolated):
 *      Graphviz 2.42 can abort or crash on a layout it cannot route
 *      (M-LSD in QDQ form: "Pshortestpath failed", then a double free in
 *      gvFreeLayout), and its path planner prints to stderr itself. The
 *      child's stderr is /dev/null; it sends the SVG, or Graphviz's last
 *      error, through a pipe and ends with _exit. A layout that failed,
 *      crashed or lost an edge (an error, not a warning) is tried once
 *      more without the fusion clusters (their notes stay, tied by
 *      dashed edges, and the title says so); a second failure is an
 *      error naming what Graphviz said or the signal. mplan's own
 *      process never runs a layout. (With newrank, no real model here
 *      needs the second try; it stays for the graphs dot still fails.)
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dot_internal.h"
#include "mplan/report.h"
#include "mplan/units.h"
#include "report_util.h"

#define DOT_PEAK_COLOR "#d62728"
#define DOT_DIM_COLOR "#b0b0b0"
#define DOT_NAME_MAX 256   /* an escaped name in a label (longer: cut) */
#define DOT_LABEL_MAX 1024 /* a whole label: several names fit */

typedef struct dot_ctx {
  const mp_model *m;
  const mp_plan *plan;
  const mp_problem *p;
  const mp_graph *graph;
  const mp_alloc *a;
  Agraph_t *g;
  Agnode_t **op_node; /* by op index (graphs) */
  Agraph_t **op_sub;  /* by op index: its fusion cluster (invariant 7) */
  bool no_clusters;   /* fusion notes without their clusters (inv. 8) */
  bool clustered;     /* a fusion cluster was drawn */
  bool *peak;         /* by buffer: live at a peak step */
  bool *peak_op;      /* by op index: runs in a peak interval */
  bool ok;            /* false once a cgraph call failed */
} dot_ctx;

/* cgraph takes char * but copies (agstrdup) and never writes through it. */
static char *dot_s(const char *s) {
  return (char *)(uintptr_t)s;
}

static int dot_putstr(void *chan, const char *str) {
  mp_buf_puts(chan, str);
  return 0;
}

static int dot_flush(void *chan) {
  (void)chan;
  return 0;
}

static void dot_set(dot_ctx *c, void *obj, const char *name,
                    const char *value) {
  if (obj && agsafeset(obj, dot_s(name), dot_s(value), dot_s("")) != 0) {
    c->ok = false;
  }
}

/* Copies s into buf, doubling backslashes: Graphviz reads "\n", "\N" and
 * friends in labels as escapes, and a tensor name must print as itself. */
static void dot_escape(const char *s, char *buf, size_t cap) {
  size_t n = 0;
  for (; *s && n + 2 < cap; s++) {
    if (*s == '\\') buf[n++] = '\\';
    buf[n++] = *s;
  }
  buf[n] = '\0';
}

/* Creates node prefix+name; label is in Graphviz escape syntax already. */
static Agnode_t *dot_node(dot_ctx *c, const char *prefix, const char *name,
                          const char *label) {
  /* Ids are never cut (two long names must not merge): a long one is
   * built in an allocated buffer. */
  char small[DOT_LABEL_MAX], *id = small;
  size_t need = strlen(prefix) + strlen(name) + 1;
  if (need > sizeof small) id = mp_malloc(c->a, need);
  if (!id) {
    c->ok = false;
    return NULL;
  }
  size_t lp = strlen(prefix);
  memcpy(id, prefix, lp);
  memcpy(id + lp, name, need - lp); /* with the NUL */
  Agnode_t *n = agnode(c->g, id, 1);
  if (id != small) mp_free(c->a, id);
  if (!n) {
    c->ok = false;
    return NULL;
  }
  dot_set(c, n, "label", label);
  return n;
}

static void dot_defaults(dot_ctx *c) {
  static const char *const graph_attrs[][2] = {
      {"rankdir", "TB"},
      {"fontname", "Helvetica"},
      {"labelloc", "t"},
      {"fontsize", "16"},
      {"nodesep", "0.3"},
      {"ranksep", "0.35"},
      {"bgcolor", "white"},
      /* dot's original ranking cannot rank some graphs with clusters
       * ("trouble in init_rank", then lost edges: M-LSD in QDQ form);
       * newrank ranks the whole graph at once and lays them out */
      {"newrank", "true"},
  };
  static const char *const node_attrs[][2] = {
      {"shape", "box"},          {"style", "rounded,filled"},
      {"fillcolor", "#eef3fb"},  {"color", "#4a6fa5"},
      {"fontname", "Helvetica"}, {"fontsize", "11"},
  };
  static const char *const edge_attrs[][2] = {
      {"fontname", "Helvetica"},
      {"fontsize", "9"},
      {"color", "#4a6fa5"},
      {"arrowsize", "0.6"},
  };
  for (size_t i = 0; i < sizeof graph_attrs / sizeof *graph_attrs; i++) {
    if (!agattr(c->g, AGRAPH, dot_s(graph_attrs[i][0]),
                dot_s(graph_attrs[i][1]))) {
      c->ok = false;
    }
  }
  for (size_t i = 0; i < sizeof node_attrs / sizeof *node_attrs; i++) {
    if (!agattr(c->g, AGNODE, dot_s(node_attrs[i][0]),
                dot_s(node_attrs[i][1]))) {
      c->ok = false;
    }
  }
  for (size_t i = 0; i < sizeof edge_attrs / sizeof *edge_attrs; i++) {
    if (!agattr(c->g, AGEDGE, dot_s(edge_attrs[i][0]),
                dot_s(edge_attrs[i][1]))) {
      c->ok = false;
    }
  }
}

static void dot_title(dot_ctx *c) {
  const mp_plan_summary *s = mp_plan_summary_of(c->plan);
  char a[MP_FMT_MAX], b[MP_FMT_MAX], title[DOT_LABEL_MAX], esc[DOT_LABEL_MAX];
  snprintf(title, sizeof title,
           "%s: arena %s, lower bound %s (red: live at the peak; grey: "
           "resident)",
           mp_model_name(c->m), mp_fmt_bytes(a, s->arena_bytes),
           mp_fmt_bytes(b, s->lower_bound_bytes));
  dot_escape(title, esc, sizeof esc);
  if (c->no_clusters) {
    snprintf(esc + strlen(esc), sizeof esc - strlen(esc), "%s",
             "\\n(fusions not boxed: Graphviz could not lay out their "
             "clusters)");
  }
  dot_set(c, c->g, "label", esc);
}

/* Styles an edge (or a source node) after the buffer it stands for. */
static void dot_style(dot_ctx *c, void *obj, size_t i, bool edge) {
  const mp_buffer *b = mp_problem_buffer(c->p, i);
  if (c->peak[i]) {
    dot_set(c, obj, "color", DOT_PEAK_COLOR);
    dot_set(c, obj, "fontcolor", DOT_PEAK_COLOR);
    dot_set(c, obj, edge ? "penwidth" : "fillcolor", edge ? "2.5" : "#fde0dd");
  } else if (b->cls != MP_CLASS_ACTIVATION) {
    dot_set(c, obj, "color", DOT_DIM_COLOR);
    dot_set(c, obj, "fontcolor", "#909090");
    dot_set(c, obj, "style", edge ? "dashed" : "filled,dashed");
    if (!edge) dot_set(c, obj, "fillcolor", "#f4f4f4");
  }
}

/* Label of edge i: graph tensor i (name, shape, dtype, bytes, and whose
 * bytes it shares), or problem buffer i. */
static void dot_edge_label(dot_ctx *c, size_t i, char *buf, size_t cap) {
  char shape[128], bytes[MP_FMT_MAX], esc[DOT_NAME_MAX], in[DOT_NAME_MAX + 64];
  if (!c->graph) {
    const mp_buffer *b = mp_problem_buffer(c->p, i);
    dot_escape(b->name, esc, sizeof esc);
    snprintf(buf, cap, "%s\\n%s", esc, mp_fmt_bytes(bytes, b->size));
    return;
  }
  const mp_tensor *t = mp_graph_tensor(c->graph, i);
  size_t b = mp_model_tensor_buffer(c->m, i);
  mp_graph_shape_str(c->graph, t, shape, sizeof shape);
  dot_escape(t->name, esc, sizeof esc);
  in[0] = '\0';
  mp_alias_rule r = mp_model_tensor_rule(c->m, i);
  uint64_t at = mp_model_tensor_offset(c->m, i);
  if (mp_model_buffer_tensor(c->m, b) != i || r == MP_ALIAS_CONCAT) {
    /* Where its bytes are: the buffer is named after its root tensor. */
    char root[DOT_NAME_MAX];
    dot_escape(mp_problem_buffer(c->p, b)->name, root, sizeof root);
    if (r == MP_ALIAS_CONCAT) {
      snprintf(in, sizeof in, "\\nslice at +%" PRIu64 " of buffer %s", at,
               root);
    } else if (r == MP_ALIAS_OWN) { /* a Concat's output around its slices */
      snprintf(in, sizeof in, "\\nin buffer %s", root);
    } else if (at) { /* written over a slice, where the slice is */
      snprintf(in, sizeof in, "\\n%s at +%" PRIu64 " of buffer %s",
               r == MP_ALIAS_VIEW ? "view" : "in place", at, root);
    } else {
      snprintf(in, sizeof in, "\\n%s of %s",
               r == MP_ALIAS_VIEW ? "view" : "in place", root);
    }
  }
  snprintf(buf, cap, "%s\\n%s %s\\n%s%s", esc, shape, mp_dtype_name(t->dtype),
           mp_fmt_bytes(bytes, t->bytes), in);
}

/* Edge for tensor (graphs) or buffer (problems) i. */
static void dot_edge(dot_ctx *c, Agnode_t *from, Agnode_t *to, size_t i) {
  if (!from || !to) return;
  const char *name = c->graph ? mp_graph_tensor(c->graph, i)->name
                              : mp_problem_buffer(c->p, i)->name;
  Agedge_t *e = agedge(c->g, from, to, dot_s(name), 1);
  if (!e) {
    c->ok = false;
    return;
  }
  char label[DOT_LABEL_MAX];
  dot_edge_label(c, i, label, sizeof label);
  dot_set(c, e, "label", label);
  dot_style(c, e, c->graph ? mp_model_tensor_buffer(c->m, i) : i, true);
}

static void dot_ops(dot_ctx *c) {
  size_t n_ops = mp_graph_op_count(c->graph);
  for (size_t k = 0; k < n_ops && c->ok; k++) {
    uint32_t op = mp_model_step_op_index(c->m, k);
    const mp_op *o = mp_graph_op(c->graph, op);
    char label[DOT_LABEL_MAX], esc[DOT_NAME_MAX], type[128];
    dot_escape(o->name, esc, sizeof esc);
    dot_escape(o->type, type, sizeof type);
    snprintf(label, sizeof label, "%s\\n%s (step %zu)", esc, type, k);
    Agnode_t *n = dot_node(c, "op:", o->name, label);
    c->op_node[op] = n;
    if (n && c->peak_op[op]) {
      dot_set(c, n, "fillcolor", "#fde0dd");
      dot_set(c, n, "color", DOT_PEAK_COLOR);
      dot_set(c, n, "penwidth", "2");
    }
  }
}

/* The node a tensor without a producer starts from. */
static Agnode_t *dot_source(dot_ctx *c, size_t i, const mp_tensor *t) {
  const char *prefix = t->kind == MP_TENSOR_WEIGHT ? "w:" : "in:";
  char esc[DOT_NAME_MAX];
  dot_escape(t->name, esc, sizeof esc);
  Agnode_t *n = dot_node(c, prefix, t->name, esc);
  if (!n) return NULL;
  dot_set(c, n, "shape", t->kind == MP_TENSOR_WEIGHT ? "note" : "ellipse");
  dot_set(c, n, "fontsize", "9");
  dot_style(c, n, mp_model_tensor_buffer(c->m, i), false);
  return n;
}

static void dot_tensor(dot_ctx *c, size_t i) {
  const mp_tensor *t = mp_graph_tensor(c->graph, i);
  if (t->producer < 0 && t->n_consumers == 0) return; /* unused constant */
  Agnode_t *from =
      t->producer >= 0 ? c->op_node[t->producer] : dot_source(c, i, t);
  /* consumers lists each op once, however often it reads t. */
  for (uint32_t k = 0; k < t->n_consumers; k++) {
    dot_edge(c, from, c->op_node[t->consumers[k]], i);
  }
  if (t->kind == MP_TENSOR_OUTPUT || t->n_consumers == 0) {
    char esc[DOT_NAME_MAX];
    dot_escape(t->kind == MP_TENSOR_OUTPUT ? t->name : "", esc, sizeof esc);
    Agnode_t *sink = dot_node(c, "out:", t->name, esc);
    dot_set(c, sink, "shape",
            t->kind == MP_TENSOR_OUTPUT ? "doubleoctagon" : "point");
    dot_set(c, sink, "fontsize", "9");
    dot_edge(c, from, sink, i);
  }
}

/* Invariant 7: the fused op and a note of what it absorbed, clustered
 * (the op's one cluster, its title a line per record). */
static void dot_fusion(dot_ctx *c, const mp_fusion *f, size_t k) {
  int32_t op;
  if (!mp_graph_find_op(c->graph, f->op, &op) || !c->op_node[op]) return;
  char id[64], label[DOT_LABEL_MAX], a[DOT_NAME_MAX], b[DOT_NAME_MAX];
  char bytes[MP_FMT_MAX], title[2 * DOT_LABEL_MAX];
  Agraph_t *sub = c->op_sub[op];
  const char *before = sub ? agget(sub, dot_s("label")) : NULL;
  if (!sub && !c->no_clusters) {
    snprintf(id, sizeof id, "cluster_fusion_%zu", k);
    sub = agsubg(c->g, id, 1);
    if (!sub || !agsubnode(sub, c->op_node[op], 1)) {
      c->ok = false;
      return;
    }
    c->op_sub[op] = sub;
    c->clustered = true;
  }
  dot_escape(f->absorbed, a, sizeof a);
  snprintf(title, sizeof title, "%s%s%s fusion: %s + %s; saved %s",
           before && *before ? before : "", before && *before ? "\\n" : "",
           mp_fusion_kind_name(f->kind), f->head_type, a,
           mp_fmt_bytes(bytes, f->saved_bytes));
  dot_set(c, sub, "label", title);
  dot_set(c, sub, "style", "dashed");
  dot_set(c, sub, "color", "#8c8c8c");
  dot_set(c, sub, "fontsize", "10");
  dot_escape(f->absorbed_ops, a, sizeof a);
  dot_escape(f->intermediates, b, sizeof b);
  snprintf(label, sizeof label, "absorbed: %s%s%s", a,
           *b ? "\\nno longer exist: " : "", b);
  snprintf(id, sizeof id, "%zu", k);
  Agnode_t *note = dot_node(c, "fused:", id, label);
  if (!note || (sub && !agsubnode(sub, note, 1))) {
    c->ok = false;
    return;
  }
  dot_set(c, note, "shape", "note");
  dot_set(c, note, "style", "dashed");
  dot_set(c, note, "fontsize", "9");
  Agedge_t *e = agedge(c->g, c->op_node[op], note, dot_s(id), 1);
  if (!e) {
    c->ok = false;
    return;
  }
  dot_set(c, e, "style", "dashed");
  dot_set(c, e, "arrowhead", "none");
}

static void dot_graph_model(dot_ctx *c) {
  dot_ops(c);
  for (size_t i = 0; i < mp_graph_tensor_count(c->graph) && c->ok; i++) {
    dot_tensor(c, i);
  }
  const mp_pass_report *r = mp_model_pass_report(c->m);
  for (size_t k = 0; r && k < mp_pass_report_fusions(r) && c->ok; k++) {
    dot_fusion(c, mp_pass_report_fusion(r, k), k);
  }
}

static int dot_time_cmp(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

static Agnode_t *dot_time_node(dot_ctx *c, int64_t t) {
  char id[64], label[DOT_LABEL_MAX], op[DOT_NAME_MAX], esc[DOT_NAME_MAX];
  snprintf(id, sizeof id, "%" PRId64, t);
  report_step_op(c->m, t, op, sizeof op);
  dot_escape(op, esc, sizeof esc);
  snprintf(label, sizeof label, "%s %" PRId64 "%s%s", report_time_word(c->m), t,
           *esc ? "\\n" : "", esc);
  return dot_node(c, "t:", id, label);
}

/* Lifetime tables, CSVs and plans: one node per distinct first/last time,
 * one edge per buffer; node lookup by binary search in the sorted times. */
static void dot_problem_model(dot_ctx *c, int64_t *times) {
  size_t n = mp_problem_count(c->p), k = 0;
  for (size_t i = 0; i < n; i++) {
    times[k++] = mp_problem_buffer(c->p, i)->first;
    times[k++] = mp_problem_buffer(c->p, i)->last;
  }
  qsort(times, k, sizeof *times, dot_time_cmp);
  size_t u = 0;
  for (size_t j = 0; j < k; j++) {
    if (u == 0 || times[u - 1] != times[j]) times[u++] = times[j];
  }
  for (size_t j = 0; j < u && c->ok; j++) dot_time_node(c, times[j]);
  for (size_t i = 0; i < n && c->ok; i++) {
    const mp_buffer *b = mp_problem_buffer(c->p, i);
    char id[64];
    snprintf(id, sizeof id, "t:%" PRId64, b->first);
    Agnode_t *from = agnode(c->g, id, 0);
    snprintf(id, sizeof id, "t:%" PRId64, b->last);
    dot_edge(c, from, agnode(c->g, id, 0), i);
  }
}

static void dot_mark_peak_ops(dot_ctx *c) {
  const mp_profile *prof = mp_plan_profile(c->plan);
  if (!c->graph || prof->peak == 0) return;
  int64_t steps = (int64_t)mp_model_steps(c->m);
  for (size_t k = 0; k < prof->n_peaks; k++) {
    const mp_segment *s = &prof->segs[prof->peaks[k]];
    for (int64_t t = s->first < 0 ? 0 : s->first; t <= s->last && t < steps;
         t++) {
      c->peak_op[mp_model_step_op_index(c->m, (size_t)t)] = true;
    }
  }
}

static mp_status dot_gv_error(mp_error *err, const char *path,
                              const char *what) {
  const char *last = aglasterr();
  char line[256] = "";
  if (last) {
    size_t n = strcspn(last, "\r\n");
    snprintf(line, sizeof line, ": %.*s", (int)(n < 200 ? n : 200), last);
  }
  return mp_error_set(err, MP_ERR_INTERNAL, "%s: graphviz could not %s%s", path,
                      what, line);
}

/* Builds the graph into c->g with the given I/O discipline. */
static mp_status dot_build(dot_ctx *c, Agdisc_t *disc, mp_error *err) {
  size_t n = mp_problem_count(c->p);
  size_t n_ops = c->graph ? mp_graph_op_count(c->graph) : 0;
  int64_t *times = NULL;
  c->peak = mp_calloc(c->a, n ? n : 1, sizeof *c->peak);
  c->op_node = mp_calloc(c->a, n_ops ? n_ops : 1, sizeof *c->op_node);
  c->op_sub = mp_calloc(c->a, n_ops ? n_ops : 1, sizeof *c->op_sub);
  c->peak_op = mp_calloc(c->a, n_ops ? n_ops : 1, sizeof *c->peak_op);
  if (!c->graph) times = mp_calloc(c->a, n ? 2 * n : 1, sizeof *times);
  if (!c->peak || !c->op_node || !c->op_sub || !c->peak_op ||
      (!c->graph && !times)) {
    mp_free(c->a, times);
    return mp_error_set(err, MP_ERR_NOMEM, "%s: DOT: out of memory",
                        mp_model_path(c->m));
  }
  report_peak_mask(c->plan, c->peak);
  dot_mark_peak_ops(c);
  c->g = agopen(dot_s(mp_model_name(c->m)), Agdirected, disc);
  c->ok = c->g != NULL;
  if (c->ok) {
    dot_defaults(c);
    dot_title(c);
  }
  if (c->ok && c->graph) dot_graph_model(c);
  if (c->ok && !c->graph) dot_problem_model(c, times);
  mp_free(c->a, times);
  if (!c->ok) return dot_gv_error(err, mp_model_path(c->m), "build the graph");
  return MP_OK;
}

static void dot_release(dot_ctx *c) {
  if (c->g) agclose(c->g);
  mp_free(c->a, c->peak);
  mp_free(c->a, c->op_node);
  mp_free(c->a, c->op_sub);
  mp_free(c->a, c->peak_op);
}

static void dot_init(dot_ctx *c, const mp_model *m, const mp_plan *plan) {
  memset(c, 0, sizeof *c);
  c->m = m;
  c->plan = plan;
  c->p = mp_plan_problem(plan);
  c->graph = mp_model_graph(m);
  c->a = mp_problem_alloc(c->p);
}

mp_status mp_report_dot(const mp_model *m, const mp_plan *plan, mp_buf *out,
                        mp_error *err) {
  Agiodisc_t io = {AgIoDisc.afread, dot_putstr, dot_flush};
  Agdisc_t disc = {&AgMemDisc, &AgIdDisc, &io};
  dot_ctx c;
  dot_init(&c, m, plan);
  agerrlevel_t old = agseterr(AGMAX);
  mp_status st = dot_build(&c, &disc, err);
  if (st == MP_OK && agwrite(c.g, out) != 0) {
    st = dot_gv_error(err, mp_model_path(m), "write DOT");
  }
  dot_release(&c);
  agseterr(old);
  if (st != MP_OK) return st;
  return mp_buf_status(out, "DOT", err);
}

struct mp_graphviz {
  const mp_alloc *alloc;
  GVC_t *gvc;
};

mp_status mp_graphviz_create(const mp_alloc *a, mp_graphviz **out,
                             mp_error *err) {
  mp_graphviz *gv = mp_calloc(a, 1, sizeof *gv);
  if (!gv) return mp_error_set(err, MP_ERR_NOMEM, "graphviz: out of memory");
  gv->alloc = a;
  agerrlevel_t old = agseterr(AGMAX);
  gv->gvc = gvContext();
  agseterr(old);
  if (!gv->gvc) {
    mp_free(a, gv);
    return mp_error_set(err, MP_ERR_INTERNAL,
                        "graphviz: no layout context (are the Graphviz "
                        "plugins installed?)");
  }
  *out = gv;
  return MP_OK;
}

void mp_graphviz_destroy(mp_graphviz *gv) {
  if (!gv) return;
  gvFreeContext(gv->gvc);
  mp_free(gv->alloc, gv);
}

static unsigned dot_crashes; /* dot_test_crash_layouts */

void dot_test_crash_layouts(unsigned n) {
  dot_crashes = n;
}

static bool dot_write_all(int fd, const char *p, size_t n) {
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= (size_t)w;
  }
  return true;
}

/* Invariant 8, the child: 'S' and the SVG, or 'E' and Graphviz's last
 * error, into fd; never returns. */
static void dot_child(GVC_t *gvc, Agraph_t *g, int fd) {
  int nul = open("/dev/null", O_WRONLY);
  if (nul >= 0) dup2(nul, 2);
  agreseterrors();
  char *data = NULL;
  unsigned int len = 0;
  bool ok = gvLayout(gvc, g, "dot") == 0 && agerrors() < AGERR &&
            gvRenderData(gvc, g, "svg", &data, &len) == 0 && agerrors() < AGERR;
  if (ok) {
    ok = dot_write_all(fd, "S", 1) && dot_write_all(fd, data, len);
  } else {
    const char *last = aglasterr();
    dot_write_all(fd, "E", 1);
    if (last) dot_write_all(fd, last, strcspn(last, "\r\n"));
  }
  _exit(ok ? 0 : 1);
}

/* Invariant 8: lays out and renders c->g in a child process. *ok says
 * whether the SVG was appended to out; if not, why holds what Graphviz
 * said or how the child ended. An error only when no child could run. */
static mp_status dot_isolated(GVC_t *gvc, dot_ctx *c, mp_buf *out, bool *ok,
                              char *why, size_t cap, mp_error *err) {
  int fds[2];
  *ok = false;
  if (pipe(fds) != 0) {
    return mp_error_set(err, MP_ERR_IO, "%s: SVG: pipe: %s",
                        mp_model_path(c->m), strerror(errno));
  }
  bool crash = dot_crashes > 0;
  if (crash) dot_crashes--;
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    close(fds[0]);
    close(fds[1]);
    return mp_error_set(err, MP_ERR_IO, "%s: SVG: fork: %s",
                        mp_model_path(c->m), strerror(e));
  }
  if (pid == 0) {
    close(fds[0]);
    if (crash) kill(getpid(), SIGKILL);
    dot_child(gvc, c->g, fds[1]);
  }
  close(fds[1]);
  mp_buf got;
  mp_buf_init(&got, c->a);
  char chunk[65536];
  for (;;) {
    ssize_t r = read(fds[0], chunk, sizeof chunk);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    mp_buf_append(&got, chunk, (size_t)r);
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (got.failed) {
    mp_buf_free(&got);
    return mp_error_set(err, MP_ERR_NOMEM, "%s: SVG: out of memory",
                        mp_model_path(c->m));
  }
  const char *text = mp_buf_str(&got);
  if (WIFSIGNALED(status)) {
    snprintf(why, cap, "the layout crashed (signal %d)", WTERMSIG(status));
  } else if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && got.len &&
             text[0] == 'S') {
    mp_buf_append(out, text + 1, got.len - 1);
    *ok = true;
  } else if (got.len > 1 && text[0] == 'E') {
    snprintf(why, cap, "%.200s", text + 1);
  } else {
    snprintf(why, cap, "the layout failed");
  }
  mp_buf_free(&got);
  return MP_OK;
}

mp_status mp_report_svg(mp_graphviz *gv, const mp_model *m, const mp_plan *plan,
                        mp_buf *out, mp_error *err) {
  dot_ctx c;
  char why[256] = "";
  bool ok = false;
  agerrlevel_t old = agseterr(AGMAX);
  mp_status st = MP_OK;
  /* with the fusion clusters, then (invariant 8) without them */
  for (int tries = 0; st == MP_OK && !ok && tries < 2; tries++) {
    dot_init(&c, m, plan);
    c.no_clusters = tries > 0;
    st = dot_build(&c, NULL, err);
    if (st == MP_OK)
      st = dot_isolated(gv->gvc, &c, out, &ok, why, sizeof why, err);
    dot_release(&c);
    if (!c.clustered) break; /* nothing to leave out */
  }
  agseterr(old);
  if (st == MP_OK && !ok) {
    st = mp_error_set(err, MP_ERR_INTERNAL,
                      "%s: graphviz could not lay out the graph: %s",
                      mp_model_path(m), why);
  }
  if (st != MP_OK) return st;
  return mp_buf_status(out, "SVG", err);
}
