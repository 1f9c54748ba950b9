/*
 * share.h -- when may an op's output live in an input's bytes? Private to
 * analyzer/passes/ (views.c, inplace.c).
 */
#ifndef MPLAN_PASSES_SHARE_H
#define MPLAN_PASSES_SHARE_H

#include "pass.h"

/* A buffer under construction, kept at its representative: its members'
 * bytes lo..hi relative to the representative's first byte, the hull of
 * their intervals (steps), the smallest member index and the strictest
 * alignment. */
typedef struct share_sum {
  int64_t lo, hi, first, last;
  uint32_t least, align;
} share_sum;

typedef struct share_jentry share_jentry; /* share.c */

typedef struct share_ctx {
  pass_ctx *c; /* parent[] and rule[] live here */
  const mp_graph *g;
  uint32_t *next;  /* member lists: next tensor of the same buffer */
  uint32_t *stamp; /* per op, for the ancestor search */
  uint32_t *want;  /* per op: a reader the search must reach */
  uint32_t *queue;
  uint32_t epoch;
  uint8_t *slice; /* per representative: the buffer holds a Concat slice */
  /* live bytes per step under c->order (share.c invariant 3) */
  uint32_t *step_of; /* per op */
  size_t n_steps;
  share_sum *sum;   /* per representative; NULL: no order */
  int64_t *mx, *tg; /* tree over the steps: largest value, pending add */
  size_t tn;        /* its leaves (a power of two >= n_steps) */
  /* what a trial changed (share.c invariant 4) */
  share_jentry *jour;
  size_t jn, jcap;
  bool jon, jfail;
} share_ctx;

/* Borrows c (its parent links say which tensors share already). Owned
 * scratch (release with share_release). */
mp_status share_init(share_ctx *s, pass_ctx *c, mp_error *err);
void share_release(share_ctx *s);

/* A representative of t's buffer. */
uint32_t share_find(share_ctx *s, uint32_t t);

/* t's first byte relative to its representative's. */
int64_t share_offset(share_ctx *s, uint32_t t);

/* Puts y's buffer into into's buffer, y joining for reason why at into's
 * first byte (share_union) or delta bytes after it (share_union_at). */
void share_union(share_ctx *s, uint32_t into, uint32_t y, mp_alias_rule why);
void share_union_at(share_ctx *s, uint32_t into, uint32_t y, int64_t delta,
                    mp_alias_rule why);

/* A trial that may be undone: share_save, change (share_union_at and the
 * rules' moves), measure with share_lb, then share_restore (undo every
 * change since share_save) or share_keep. */
void share_save(share_ctx *s);
void share_restore(share_ctx *s);
void share_keep(share_ctx *s);

/* The activation lower bound of the buffers as they stand, under the
 * order of the graph before the pass (c->order): a scan of the live bytes
 * share_union_at keeps per step, not a rebuild of the lifetimes. */
mp_status share_lb(share_ctx *s, size_t *lb, mp_error *err);

/* Reshape, Flatten, Squeeze, Unsqueeze or Identity: rule 1's ops. */
bool share_is_view(const char *type);

/* THE in-place and aliasing predicate: may op o's output y share the
 * buffer of its input *k_out, and by which rule? MP_ALIAS_OWN: no.
 *
 *  0. o has exactly one output y, an activation or a graph output, and
 *     reads a tensor at input 0; neither y nor any input of o is pinned
 *     (a pinned tensor keeps the offset, and so the bytes, of its own);
 *     y's buffer holds no Concat slice (rule 5): a slice keeps its place,
 *     and moving it would move its neighbours (rule 6 moves x there
 *     instead); and when x's buffer holds
 *     slices, x's byte offset in it is a multiple of y's alignment (the
 *     buffer is aligned for its first byte only).
 *     For rules 1-4, x is the input y would share.
 *  1. VIEW -- o is Reshape, Flatten, Squeeze, Unsqueeze or Identity; x is
 *     input 0 with y's dtype and byte size (a view reinterprets bytes and
 *     never writes them, so other readers of x are unaffected); x's
 *     buffer is not retained state; when y is a graph output, x's buffer
 *     is an activation or graph output (outputs never alias inputs or
 *     weights).
 *  2. ELEMENTWISE -- o is in the elementwise table (pass_ew_find) and
 *     input k (the first that qualifies, each tensor counted once) has
 *     y's dtype, dims (x is not broadcast) and layout tag (an 8-bit input
 *     under a DequantizeLinear prologue, absorb.c rule 9, only when a
 *     QuantizeLinear makes y of its type: the runtime reads each tile
 *     before it writes it), and
 *     a. no other input of o is a different tensor of x's buffer;
 *     b. x's buffer may be overwritten: every tensor in it is an
 *        activation (no graph input, weight, output or retained state),
 *        and every op that reads any of them, other than o, is an
 *        ancestor of o -- so in every order nothing reads those bytes
 *        after o (the "no later consumer" rule, independent of order).
 *  3. DEPTHWISE (TinyEngine) -- o is a Conv without mplan.* attributes
 *     other than a fused epilogue's (mplan.epilogue, mplan.eK.*: not
 *     horizontal; tried when no epilogue operand qualifies for rule 4)
 *     and a DequantizeLinear prologue on the weight, or on the input too
 *     when the epilogue ends in a QuantizeLinear, 4-D, batch 1, group =
 *     channels = output channels > 1, weight [C, 1, kh, kw], the same
 *     dtype and layout tag in and out, output no larger than input, and
 *     2a and 2b hold for x = input 0. The runtime
 *     computes each output channel into scratch and copies it down,
 *     channels in increasing order (docs/ir-conventions.md): it only
 *     overwrites input channels already consumed. An epilogue then runs
 *     over y element by element, in place; 2a keeps its operands out of
 *     x's buffer.
 *  4. EPILOGUE -- o is a fused op (mplan.epilogue, no mplan.horizontal)
 *     and input k is one its epilogue added (k >= the head's own count:
 *     2 for MatMul, 3 for Conv, ConvTranspose, Gemm) with y's dtype,
 *     dims and layout tag -- the residual of a Conv + Add. Every output
 *     element reads only its own element of that operand, after the
 *     head's reduction; none of the head's own inputs may be in x's
 *     buffer (the reduction reads whole windows of them), and 2a and 2b
 *     hold.
 *  5. CONCAT -- the other direction, inputs placed in the output's bytes:
 *     share_concat below, whose conditions continue this list.
 *  8. CAST -- o is a Cast without mplan.* attributes between dtypes of one
 *     element size (int32 -> f32 after a ConvInteger, int8 <-> uint8);
 *     x = input 0 has y's dims, bytes and layout tag, and 2a and 2b hold.
 *     The kernel reads element i before it writes it, and the runtime
 *     accepts y at x's offset (its rule MP_ALIAS_ELEMENTWISE).
 *  7. ROW -- o is Softmax, LogSoftmax, LayerNormalization (one output),
 *     RMSNormalization, RotaryEmbedding or TensorScatter without mplan.*
 *     attributes; x = input 0 has y's dtype, dims and layout tag, and 2a
 *     and 2b hold. Every kernel reads a whole row (RotaryEmbedding: the
 *     pair of elements it rotates) before it writes any of it
 *     (kernels/k_norm.c and kv_norm.c invariant 2, k_attn.c invariant 3);
 *     TensorScatter's element is the past cache's own or an update's (the
 *     KV cache updated in place, as opset 24 meant it), and the runtime
 *     accepts y at x's offset.
 */
mp_alias_rule share_rule(share_ctx *s, uint32_t o, uint32_t *k_out);

/* Rule 6, INTO A SLICE: slice y (rule 5 put it there, so rule 0 keeps it
 * there) may be written over an input of its producer by rule 2, 3, 4 or 7
 * if that input's buffer moves into y's bytes instead: the buffer holds
 * no slice, every tensor of it lies inside x's bytes (as 5c), and x has
 * y's byte size. x is an activation (2b), so the slot's alignment (5d)
 * is x's. Views are not moved here (rule 5 places them with their
 * source). When it qualifies, the input moves (rule MP_ALIAS_CONCAT)
 * and y is written over it: the rule is returned; MP_ALIAS_OWN: no move.
 * No lower bound is checked here. */
mp_alias_rule share_move_into_slice(share_ctx *s, uint32_t y);

/* Rule 5, CONCAT: where each input of op o goes inside its output's
 * buffer. slot[k] is input k's byte offset from the output's first byte,
 * or -1 when input k keeps bytes of its own (and the Concat copies it).
 * Returns how many inputs get a slot (0: o is not a Concat, or none may).
 *
 *  a. o is a Concat without mplan.* attributes with one output y, an
 *     activation or a graph output; neither y nor any input is pinned;
 *     every dim of y before the (normalised) axis is 1, so input k is the
 *     contiguous byte range starting at the sum of the bytes of inputs
 *     0..k-1, and those bytes add up to y's;
 *  b. input k has y's dtype, rank and layout tag, is an activation with a
 *     producer, and its buffer is not y's and not an earlier input's
 *     (a tensor concatenated twice is copied the second time);
 *  c. every tensor of input k's buffer is an activation inside input k's
 *     own bytes (views of it, or the slices of an earlier Concat it is the
 *     output of): the buffer moves as a whole into the slot;
 *  d. the slot is a multiple of the backend's activation alignment.
 * Nothing is written over: the producers write the slices and the Concat
 * copies nothing, so no reader's bytes change and the readers rule (2b)
 * has nothing to check. A later in-place write into the buffer is rule
 * 2b's business and sees every slice's readers. */
size_t share_concat(share_ctx *s, uint32_t o, size_t align, int64_t *slot);

#endif /* MPLAN_PASSES_SHARE_H */
