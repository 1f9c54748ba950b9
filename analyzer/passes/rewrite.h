/*
 * rewrite.h -- edits to a graph, committed as a new graph. Private to
 * analyzer/passes/.
 *
 * A pass reads the source graph (linked, with producers and consumers)
 * and records edits: ops killed, inputs/outputs/attributes changed, uses
 * of one tensor redirected to another, activations turned into weights.
 * rw_commit builds a fresh graph from the edited copy: the IR stays
 * append-only, and every pass hands the next one a linked, resolved graph
 * whose lifetimes are computed again from scratch.
 */
#ifndef MPLAN_PASSES_REWRITE_H
#define MPLAN_PASSES_REWRITE_H

#include "mplan/graph.h"
#include "mplan/strmap.h"

typedef struct rw_op {
  const char *name, *type;
  const int32_t *inputs, *outputs;
  uint32_t n_inputs, n_outputs, n_attrs;
  const mp_attr *attrs;
  uint32_t key; /* the source position the op runs at in file order (or
                   as soon after it as its inputs allow) */
  bool dead;
} rw_op;

/* A tensor a pass adds: a copy of source tensor like under a new name. */
typedef struct rw_new {
  int32_t like;
  const char *name;
  bool shaped;  /* dims given (rw_new_tensor_dims), else like's */
  int32_t form; /* a source tensor whose dims and layout it has (-1: none) */
  uint32_t rank;
  mp_dim shape[MP_MAX_RANK];
} rw_new;

typedef struct rw_graph {
  const mp_graph *src;
  const mp_alloc *a;
  rw_op *ops; /* one per source op, then the ops rw_new_op added */
  size_t n_ops, cap_ops;
  size_t n_src_tensors; /* tensors >= this are new (rw_new_tensor) */
  struct rw_new *added; /* the new tensors */
  size_t n_new, cap_new;
  int32_t *subst;  /* per tensor: read this tensor instead */
  bool *to_weight; /* per tensor: now a constant (folded) */
  void **blocks;   /* allocations owned by the rewrite */
  size_t n_blocks, cap_blocks;
  mp_strpool *pool;    /* strings the rewrite adds */
  mp_strmap *names[2]; /* names of the tensors [0] and ops [1] it added */
  size_t changes;      /* edits recorded */
} rw_graph;

/* Returns an owned copy of g's ops to edit (release with rw_destroy).
 * Borrows g, which must outlive it. */
mp_status rw_create(const mp_graph *g, rw_graph **out, mp_error *err);
void rw_destroy(rw_graph *rw);

/* Memory and strings that live as long as the rewrite. */
void *rw_alloc(rw_graph *rw, size_t count, size_t size, mp_error *err);
const char *rw_str(rw_graph *rw, const char *s, mp_error *err);

/* Edits (each copies what it is given). */
mp_status rw_set_inputs(rw_graph *rw, uint32_t op, const int32_t *in,
                        uint32_t n, mp_error *err);
mp_status rw_set_outputs(rw_graph *rw, uint32_t op, const int32_t *out,
                         uint32_t n, mp_error *err);
/* Sets attribute a on op (replacing one of the same name). */
mp_status rw_set_attr(rw_graph *rw, uint32_t op, const mp_attr *a,
                      mp_error *err);
mp_status rw_remove_attr(rw_graph *rw, uint32_t op, const char *name,
                         mp_error *err);
void rw_kill(rw_graph *rw, uint32_t op);
/* A new intermediate activation with like's dtype, shape and layout,
 * named after like with a free suffix; *id is its tensor index (beyond
 * the source's tensors: it cannot be replaced or folded). */
mp_status rw_new_tensor(rw_graph *rw, int32_t like, const char *suffix,
                        int32_t *id, mp_error *err);
/* As rw_new_tensor, with rank and dims of its own (like gives dtype and
 * layout). */
mp_status rw_new_tensor_dims(rw_graph *rw, int32_t like, const char *suffix,
                             uint32_t rank, const mp_dim *shape, int32_t *id,
                             mp_error *err);
/* As rw_new_tensor, with the rank, dims and layout of source tensor form
 * (like gives the dtype). */
mp_status rw_new_tensor_form(rw_graph *rw, int32_t like, int32_t form,
                             const char *suffix, int32_t *id, mp_error *err);
/* A new op named base + suffix (with a free suffix when taken) that runs
 * at source position key (ties: after the ops there). Copies what it is
 * given. */
mp_status rw_new_op(rw_graph *rw, uint32_t key, const char *base,
                    const char *suffix, const char *type, const int32_t *in,
                    uint32_t n_in, const int32_t *out, uint32_t n_out,
                    mp_error *err);
/* Every read of tensor from reads tensor to instead. */
void rw_replace(rw_graph *rw, int32_t from, int32_t to);
/* Tensor t becomes a weight (its producer must be killed). */
void rw_fold(rw_graph *rw, int32_t t);
/* The tensor a read of t resolves to after replacements. */
int32_t rw_resolve(const rw_graph *rw, int32_t t);

/* Attribute lookup on an op of the rewrite (NULL when absent). */
const mp_attr *rw_attr(const rw_op *op, const char *name);
/* true when the op carries an attribute whose name starts "mplan.". */
bool rw_has_mplan_attr(const mp_op *op);

/* Builds the edited graph: live ops in a topological order that keeps
 * every op at its key's position when it can (Kahn, smallest key first);
 * tensors kept in source order, except activations no live op writes and
 * weights that were read before and are not any more. Linked and
 * resolved. Returns an owned graph (release with mp_graph_destroy). */
mp_status rw_commit(rw_graph *rw, mp_graph **out, mp_error *err);

#endif /* MPLAN_PASSES_REWRITE_H */
