/*
 * lower.h -- from a graph op to a bundle op: kernel id, inputs and i64
 * parameters (private to compile/).
 */
#ifndef MPLAN_COMPILE_LOWER_H
#define MPLAN_COMPILE_LOWER_H

#include "mplan/bundle.h"
#include "mplan/graph.h"

#define LW_MAX_PARAMS 512
#define LW_MAX_INPUTS 256

typedef struct lw_op {
  int kernel;
  uint16_t flags;
  uint32_t n_in;
  int32_t in[LW_MAX_INPUTS]; /* tensor indices, -1: omitted */
  uint32_t n_params;
  int64_t params[LW_MAX_PARAMS];
} lw_op;

/* The mp_kdtype of a graph dtype, or 0 when the runtime has none. */
int lw_kdtype(mp_dtype d);

/* Lowers op (of graph g) into out. MP_ERR_UNSUPPORTED names the op and
 * what is missing. */
mp_status lw_lower(const mp_graph *g, const mp_op *op, lw_op *out,
                   mp_error *err);

/* The inputs an absorbed epilogue op of type adds to its fused head
 * (docs/ir-conventions.md): 4 for BatchNormalization, 1 for a binary op,
 * 0 for a unary one, -1 for Clip (0 to 2: min and max when given as
 * inputs), -2 for a type the runtime does not know. */
int lw_epilogue_inputs(const char *type);
/* Whether epilogue entry k of op (its index in mplan.epilogue) is a Clip
 * whose bounds are attributes (mplan.e<k>.min, .max): it takes no input,
 * where lw_epilogue_inputs says -1 (0 or 2) for a Clip. */
bool lw_clip_attrs(const mp_op *op, int k);
/* Whether epilogue entry type is a binary op whose operand a
 * DequantizeLinear widens ("Add(DequantizeLinear)": inputs operand,
 * scale, zero point); *op (when not NULL): its mp_kbinary. */
bool lw_qoperand(const char *type, int *op);

/* The int8 requantization shift for a sum of k products (see
 * mplan/kernels.h). */
int lw_shift(int64_t k);

#endif /* MPLAN_COMPILE_LOWER_H */
