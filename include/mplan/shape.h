/*
 * mplan/shape.h -- shape inference over the graph IR.
 *
 * Ops are visited in an execution order; each op type has one rule (a
 * table in analyzer/shape.c) that derives its outputs' dtypes and shapes
 * from its inputs and attributes, and, for the small integer tensors of
 * shape math (Shape -> Gather/Slice -> Concat -> Reshape), their values.
 * Dims are concrete: inference runs after input dims are bound.
 *
 * A tensor whose shape no rule derives stays pending unless a declaration
 * (ONNX value_info, a graph output's type) gives it; where a rule and a
 * declaration disagree, a warning names both and the inferred one is
 * kept. mp_shape_check_resolved then refuses a graph with pending
 * tensors, naming them and their ops, rather than plan it wrong.
 */
#ifndef MPLAN_SHAPE_H
#define MPLAN_SHAPE_H

#include "mplan/graph.h"

typedef struct mp_shape_stats {
  size_t given;      /* tensors whose shape the file gave */
  size_t inferred;   /* derived by a rule */
  size_t declared;   /* taken from a declaration: no rule applied */
  size_t pending;    /* still unknown */
  size_t mismatched; /* inferred shapes that contradict a declaration */
  size_t no_rule;    /* ops whose type has no rule */
} mp_shape_stats;

/* Infers every pending tensor of a linked graph whose input dims are
 * bound, visiting ops in order (order[step] = op index, every op once).
 * Fails only on inputs that contradict an op (naming it), on exhaustion,
 * or on broken invariants; unknown ops are counted, not errors. stats may
 * be NULL. Borrows order. */
mp_status mp_shape_infer(mp_graph *g, const uint32_t *order,
                         mp_shape_stats *stats, mp_error *err);

/* mp_shape_infer, but an op that fails leaves its outputs unknown and the
 * visit goes on, so that values computed later (an If's condition) are
 * still found. Returns the first failure, which is the one mp_shape_infer
 * would have returned, and its op in *failed (UINT32_MAX: none; may be
 * NULL); the graph is then only good for reading values. */
mp_status mp_shape_infer_all(mp_graph *g, const uint32_t *order,
                             uint32_t *failed, mp_error *err);

/* MP_OK when no tensor is pending; otherwise MP_ERR_BAD_INPUT with one
 * line naming how many are, the first few by name and the ops that left
 * them unknown (an unknown op type is named as such). */
mp_status mp_shape_check_resolved(const mp_graph *g, mp_error *err);

/* true when op type (ONNX spelling) has a shape rule. */
bool mp_shape_has_rule(const char *type);

#endif /* MPLAN_SHAPE_H */
