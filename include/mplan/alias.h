/*
 * mplan/alias.h -- which tensors share a buffer (docs/ir-conventions.md).
 *
 * Without passes every tensor has a buffer of its own. The views and
 * inplace passes (analyzer/passes/) merge tensors into one buffer: the
 * output of a view op is the same bytes as its input, and an op writing
 * in place puts its output into the bytes of one of its inputs. The map is
 * data computed once by the analyzer (STYLE rule 13); lifetimes, the
 * memory-aware scheduler and every report read it, none recomputes it.
 *
 * The concat pass places the inputs of a Concat along its outermost axis
 * as slices of the output's buffer, so a member may start at a byte
 * offset inside its buffer (offset[t]); every other rule shares bytes at
 * the offset of the tensor it writes over. A buffer's size is the end of
 * its furthest member, and some member starts at offset 0.
 *
 * Buffers are numbered in the order of their root tensors (the tensor
 * with the smallest index in each buffer), so the identity map numbers
 * buffer i = tensor i and a merge never reorders the others.
 */
#ifndef MPLAN_ALIAS_H
#define MPLAN_ALIAS_H

#include "mplan/base.h"

/* Why a tensor is in the buffer it is in. */
typedef enum mp_alias_rule {
  MP_ALIAS_OWN = 0,     /* the buffer's root: its own bytes */
  MP_ALIAS_VIEW,        /* Reshape/Flatten/Squeeze/Unsqueeze/Identity */
  MP_ALIAS_ELEMENTWISE, /* elementwise op written over an input */
  MP_ALIAS_DEPTHWISE,   /* depthwise Conv written over its input */
  MP_ALIAS_EPILOGUE,    /* fused op written over an epilogue operand */
  MP_ALIAS_CONCAT,      /* Concat input written into its output's slice */
  MP_ALIAS_ROW,         /* Softmax/LayerNormalization written over its input */
  MP_ALIAS_RULE_COUNT
} mp_alias_rule;

const char *mp_alias_rule_name(mp_alias_rule r);

typedef struct mp_alias {
  const mp_alloc *alloc;
  size_t n_tensors;
  size_t n_buffers;
  uint32_t *buffer_of; /* tensor -> buffer */
  uint32_t *root;      /* buffer -> root tensor (it names the buffer) */
  uint32_t *start;     /* buffer b holds members[start[b] .. start[b+1]) */
  uint32_t *members;   /* tensor indices, ascending within each buffer */
  uint8_t *rule;       /* tensor -> mp_alias_rule */
  uint64_t *offset;    /* tensor -> byte offset inside its buffer */
} mp_alias;

/* Builds the map from parent[t] (a tensor in the same buffer as t, or t
 * itself; following parents must reach a tensor that is its own parent),
 * rel[t] (t's first byte minus its parent's first byte; NULL: all 0) and
 * rule[t] (copied). Offsets are shifted so that every buffer's lowest
 * member starts at 0. Returns the arrays in *out, owned (release with
 * mp_alias_release). Borrows a for the map's lifetime. */
mp_status mp_alias_build(const mp_alloc *a, size_t n_tensors,
                         const uint32_t *parent, const int64_t *rel,
                         const uint8_t *rule, mp_alias *out, mp_error *err);

/* The identity map over n tensors (owned, release with mp_alias_release). */
mp_status mp_alias_identity(const mp_alloc *a, size_t n_tensors, mp_alias *out,
                            mp_error *err);

/* Copies src into *out (owned). */
mp_status mp_alias_copy(const mp_alias *src, mp_alias *out, mp_error *err);

/* Releases the arrays; the map is empty after. */
void mp_alias_release(mp_alias *al);

#endif /* MPLAN_ALIAS_H */
