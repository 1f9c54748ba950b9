/*
 * mplan/schedule.h -- execution order of a graph's ops.
 *
 * file:   the order of the file, which must be topological.
 * topo:   Kahn's algorithm, always taking the ready op that comes first in
 *         the file, so the result is deterministic and equals file order
 *         whenever file order is already topological.
 * auto:   file when it is topological, else topo.
 * dfs:    depth first from the graph's sinks: every op right after the
 *         subtrees of its inputs, inputs in order (a branch is finished
 *         before the next one starts).
 * rpo:    reverse post-order of a depth-first walk from the sources along
 *         consumers (chains are followed as far as they go).
 * memory: the order with the lowest activation peak found among the cheap
 *         candidates (file, dfs, rpo, two greedy list schedules) and an
 *         exact dynamic program over sets of scheduled ops (SERENITY,
 *         MLSys 2020), solved separately between split ops (ops ordered
 *         with respect to every other op, so that all orders agree on what
 *         runs before them) and combined per segment. Never worse than
 *         file (or topo) order; deterministic for a given graph and state
 *         budget (the time budget only stops a search early).
 * A cycle is always an error that names the ops on it.
 */
#ifndef MPLAN_SCHEDULE_H
#define MPLAN_SCHEDULE_H

#include "mplan/alias.h"
#include "mplan/backend.h"
#include "mplan/graph.h"

typedef enum mp_order_kind {
  MP_ORDER_AUTO = 0,
  MP_ORDER_FILE,
  MP_ORDER_TOPO,
  MP_ORDER_DFS,
  MP_ORDER_RPO,
  MP_ORDER_MEMORY
} mp_order_kind;

const char *mp_order_name(mp_order_kind k);
bool mp_order_parse(const char *name, mp_order_kind *out);

/* Computes the order of a linked graph: (*order)[step] = op index, with
 * mp_graph_op_count(g) steps. Returns an owned array (release with
 * mp_free(mp_graph_alloc(g), ...)) and the order actually used (file or
 * topo for auto). `memory` needs sizes: use mp_schedule_run. */
mp_status mp_schedule(const mp_graph *g, mp_order_kind want, uint32_t **order,
                      mp_order_kind *used, mp_error *err);

typedef struct mp_schedule_opts {
  mp_order_kind order;
  /* memory only: how bytes are counted (the same rules as lifetimes). */
  const mp_alias *alias;     /* NULL: every tensor its own buffer */
  const mp_backend *backend; /* alignment; NULL: mp_backend_default */
  bool inputs_as_activations;
  uint64_t budget_work; /* the searches' work: transitions, each costing
                           its state's 64-op words; the same result on
                           every machine; 0: MP_SCHEDULE_BUDGET_WORK */
  double budget_ms;     /* a wall-clock cap as well (the result then
                           depends on the machine when it is reached);
                           0: none */
  size_t max_states;    /* states kept per level of a segment's search; more
                           are cut to the best (the result is then no longer
                           proven optimal); 0: 524288, fewer for segments
                           of over 128 ops (32 MiB of state bits a level) */
  /* memory only, optional: one more candidate, the topological order
   * that runs the ready op of lowest hint_rank first (per op; ties by
   * index). The pass manager passes the previous graph's order this way,
   * so that a pass never loses an order the search had found. */
  const uint32_t *hint_rank;
} mp_schedule_opts;

#define MP_SCHEDULE_CANDIDATES 6
/* The default work budget: about 10 s of searching on the machine this
 * was measured on (docs/schedule.md, "Budget"). */
#define MP_SCHEDULE_BUDGET_WORK ((uint64_t)200000000)

/* One order the memory scheduler considered, and its activation peak. */
typedef struct mp_schedule_candidate {
  const char *name; /* "file", "dfs", "rpo", "greedy-peak", ... (static) */
  size_t peak;      /* activation lower bound under this order */
} mp_schedule_candidate;

typedef struct mp_schedule_info {
  mp_order_kind used;
  size_t peak; /* activation lower bound of the returned order (memory) */
  /* memory only: */
  mp_schedule_candidate cand[MP_SCHEDULE_CANDIDATES];
  size_t n_cand;
  size_t segments;        /* pieces between split ops (split ops excluded) */
  size_t largest_segment; /* ops */
  size_t dp_segments;     /* segments the exact search finished */
  size_t bound_segments;  /* segments whose best candidate meets the step
                             bound: optimal with no search */
  size_t branch_segments; /* ... that meet the branch bound instead */
  size_t dp_improved;     /* segments where the order beats every
                             candidate */
  size_t beam_improved;   /* ... where the beam search did (before the
                             exact one) */
  size_t branch_improved; /* ... where a branch order did (before the
                             beam) */
  size_t move_improved;   /* ... where moving single ops did: sinking
                             them to their readers, or a move the
                             simulation kept (schedule_memory.c
                             invariants 12 and 13) */
  size_t dp_states;       /* states kept, over all segments */
  bool exact;             /* the peak is the lowest any order of this graph
                             can have: every segment proven, or peak_bound */
  bool peak_bound;        /* exact because the peak meets a bound every order
                             has, with segments below it left unproven */
  size_t bound;           /* that bound: no order of the graph has a lower
                             peak (the proven segments' and split ops'
                             largest); peak - bound is the most the order
                             can be above the optimum */
  bool budget_hit;        /* the budget stopped a search: work_hit or
                             time_hit */
  bool work_hit;          /* the work budget did (the same everywhere) */
  bool time_hit;          /* the wall-clock cap did (this machine only) */
  uint64_t work;          /* work spent (mp_schedule_opts.budget_work) */
  uint64_t work_budget;   /* ... and the budget it had */
  double ms;
} mp_schedule_info;

/* Like mp_schedule for every kind, including memory. *info (when not
 * NULL) receives what was done. Borrows g and o; returns an owned order
 * (release with mp_free(mp_graph_alloc(g), ...)). */
mp_status mp_schedule_run(const mp_graph *g, const mp_schedule_opts *o,
                          uint32_t **order, mp_schedule_info *info,
                          mp_error *err);

#endif /* MPLAN_SCHEDULE_H */
