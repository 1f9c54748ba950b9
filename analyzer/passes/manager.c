/*
 * manager.c -- the pass manager: runs the selected passes in their fixed
 * order, re-analyses the graph after each one, and keeps the per-pass
 * table.
 *
 * Invariants:
 *   1. Order and lifetimes are computed from scratch for the graph every
 *      pass hands on (seed 001 section 4); a pass that changed nothing
 *      hands on the same graph and the same analysis.
 *   2. Graph passes run before alias passes (the fixed order puts them
 *      first), so while graph passes run the buffer map is the identity,
 *      and the map built by views, concat and inplace belongs to the final
 *      graph.
 *   3. The caller's graph is destroyed only on success, after the final
 *      graph exists; on failure every intermediate graph is destroyed and
 *      the caller's is untouched.
 *   4. Row i's "after" figures are row i+1's "before" figures: each graph
 *      is measured once.
 *   5. The memory order's budget is shared: each measurement gets an
 *      equal part of the work left for those that may still come (one
 *      per pass left, plus this one), so that --passes all --order memory
 *      stays within the budget one order would take, and the work a fast
 *      search or a pass that changed nothing leaves goes to the later
 *      measurements (the last one gives the order used). The work each
 *      search spent is what it reports, so the shares, and the result,
 *      are the same on every machine; a wall-clock cap (--order-budget-ms)
 *      is shared the same way when one is set. The first trial of
 *      invariant 9's rounds is counted before concat and inplace run
 *      (and uncounted when no round runs): its graph can be the one
 *      whose order is used, and when inplace was the last pass its
 *      measurement took all the work left, so the trial searched with
 *      one unit (BlazeFace in patches: its final order came from the
 *      candidates alone).
 *   6. A guarded pass (accumulate) hands on its graph only if the lower
 *      bound measured after it is not above the one before; otherwise
 *      its row says so and the graph before it goes on unchanged. When
 *      inplace is among the passes, a rise is judged again after inplace
 *      alone, on copies of both graphs: a chain's Adds each hold a new
 *      buffer until inplace writes them over their running sums, so the
 *      bound right after the pass overstates what the chain costs
 *      (randwire_3 with a 60 s budget: 1,039,584 -> 1,100,736 B after
 *      accumulate, and 917,280 B once inplace ran). The graph is kept
 *      when its bound after inplace is not above the other's.
 *   7. Under --order memory every measurement after the first offers the
 *      search the previous graph's order as a candidate (pm_hint), so a
 *      pass whose rewrite keeps that order's peak (accumulate's chain
 *      where the Sum was, fusion and concat judged under it, views and
 *      inplace) never loses it to a search cut short.
 *   8. Under --order memory, accumulate's integer chains add in the order
 *      the measured order produces their inputs (accumulate.c), and the
 *      memory order of the rewritten graph may produce them in another
 *      order: the pass runs again on the graph before it with the steps
 *      that order produces each tensor at (matched by name), and the new
 *      graph replaces the one it made while the lower bound falls, at
 *      most PM_REFINE_MAX times. Each round is measured with the last
 *      graph's order as the hint, which stays a valid order with the
 *      same positions (every Add still has as many inputs made before
 *      it), so a round cut short by its budget does not lose it.
 *   9. The concat pass judges each slice under the order before it,
 *      where a placement often ties (another peak, one inplace removes
 *      later, dominates); a skip written into its Concat's buffer early
 *      then reserves the later slices' bytes from its own birth, and
 *      after inplace those idle bytes can be the peak (a U-Net's skips).
 *      So concat and inplace run as a pair (pm_concat_rounds): after
 *      them, the Concat inputs whose slice is first written by a peak
 *      step while another slice of the buffer is written after it are
 *      kept out of the slices. A slice is dated by the first write of any
 *      tensor in its bytes: the input itself, or one the inplace pass
 *      moved into the slice and an op then writes the input over (an SE
 *      block's Mul over its Conv's output, PP-OCRv4 det's neck). Such
 *      inputs are kept out (concat.c invariant 4). In the same way a
 *      depthwise Conv's smaller output written over its input (share.h
 *      rule 3, stride 2) keeps the input's size while it lives, a union
 *      judged under the order before inplace, where it often ties: the
 *      outputs whose buffer is live at a final peak after the Conv ran
 *      are kept apart (inplace.c invariant 5); when none is, those over
 *      an input read under a DequantizeLinear (QDQ models, where the
 *      memory order moves its peak away from such a buffer instead:
 *      BlazeFace) are kept apart in one trial. Both passes run again
 *      (each when asked for: inplace alone runs these rounds too) from
 *      the state before concat, and the round replaces the first (rows
 *      included) only if the final lower bound falls, at most
 *      PM_REFINE_MAX times; after a round is kept, each input it kept out
 *      or output it kept apart is put back alone (both passes again) and
 *      stays back if the bound falls further. A round not kept leaves no
 *      row and no trace.
 *  10. Which chains are best depends on the order of the whole graph, and
 *      the rounds of invariant 8 only move from the chains the first
 *      order made. When that first run put an integer Sum's inputs in
 *      another order, the pass also runs seeded by the production order
 *      of each other candidate order of the graph before it (dfs, rpo,
 *      file), each refined by the rounds of invariant 8, and the lowest
 *      lower bound after the pass is kept (ties to the memory order's).
 *      Only while less than a quarter of the budget is spent: where the
 *      searches are long, the seeds' measurements would take the work of
 *      the passes after them.
 *  12. fuse runs before absorb, so its chains follow the order of a graph
 *      whose dequantized weights are still tensors: in a weight-only
 *      quantized decoder that order runs each up projection before the
 *      SiLU its Mul needs, and the chain stops there. When absorb gave a
 *      head a DequantizeLinear or Cast prologue, or a Conv's
 *      QuantizeLinear is still an op (the run before absorb leaves one
 *      whose output a DequantizeLinear reads: fuse.c condition 8), fuse
 *      runs again (a second fuse row), on the absorbed graph and its
 *      order; such a head may take an epilogue then (fuse.c rule 1).
 *  11. The tile pass trades recomputed rows for memory, and the passes
 *      after it can undo its gain: a fusion or an absorbed Resize across
 *      the cut it chose no longer applies once a Concat writes the cut
 *      tensor (PP-OCRv4 det: 39.3 -> 32.7 MB right after tile, 26.2 MB
 *      after every pass, 20.5 MB without tile). So when tile changed the
 *      graph, the same passes run again without it, each run with half
 *      the budget, and the patches are kept only if the final lower
 *      bound is below the other run's; the tile row of the run kept says
 *      which and both bounds.
 *  13. The tile pass ranks its patchings by the bound right after it, in
 *      file order, before fusion and absorb change what a patch holds: in
 *      a QDQ model the f32 tensors between the pairs it counts become
 *      8-bit or go, and a fusion across a cut no longer applies, so its
 *      first choice need not be the best after every pass (M-LSD in QDQ
 *      form with every activation in a pair: 1,740,800 B after every pass
 *      in file order for its first, 1,280,000 B for its second; PP-OCRv4
 *      det: 26.2 MB for its first, dropped by invariant 11, 14.3 MB for
 *      its fifth). So when it ranked more than one (the best of each of
 *      up to 12 cuts), every pass runs once for each, in file order (no
 *      search: cheap, and the same on every machine). When the lowest
 *      bound after them (ties to the higher ranked) is not the first's,
 *      that patching also runs in the order planned, and the lower of it
 *      and the first goes on to invariant 11; the budget is then split
 *      three ways. The tile row says which and the bounds.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "../schedule_internal.h"
#include "mplan/backend.h"
#include "mplan/lifetime.h"
#include "mplan/strmap.h"
#include "pass.h"

struct mp_pass_report {
  const mp_alloc *alloc;
  mp_strpool *pool;
  mp_pass_row *rows;
  size_t n_rows, cap_rows;
  mp_fusion *fusions;
  size_t n_fusions, cap_fusions;
  uint32_t vlen, mask;
  mp_graph *init;     /* the folded constant subgraphs compile evaluates */
  uint32_t tile_pick; /* which ranked patching tile builds (invariant 13) */
  pass_tile_memo *tile_memo; /* its search, shared by the runs (or NULL) */
  bool has_tile;             /* the tile pass ran: tile holds what it chose */
  mp_tile_info tile;
  mp_tile_op *tile_ops; /* tile.ops, tile.n_ops of them */
  size_t cap_tile_ops;
};

typedef struct pm_pass {
  mp_pass_id id;
  const char *name;
  const char *summary;
  pass_fn run;
  bool graph;   /* rewrites the graph (else: extends the buffer map) */
  bool guarded; /* its change is dropped if the lower bound rises */
} pm_pass;

static const pm_pass pm_passes[MP_PASS_COUNT] = {
    {MP_PASS_FOLD, "fold",
     "constant subgraphs and known shape math become weights", pass_fold, true,
     false},
    {MP_PASS_ELIMINATE, "eliminate",
     "Identity, Dropout, no-op Cast, cancelling Transposes, view chains, "
     "x*1, x+0, dead ops, a zero Pad into the Conv reading it, "
     "QuantizeLinear before a move",
     pass_eliminate, true, false},
    {MP_PASS_TILE, "tile",
     "the first stage of a CNN runs patch by patch of its output, each "
     "with its halo, joined by Concats (more MACs; only when named; kept "
     "if the lower bound does not rise)",
     pass_tile, true, true},
    {MP_PASS_ACCUMULATE, "accumulate",
     "a Sum of 2+ inputs becomes a chain of Adds the order can spread out, "
     "an integer one in the order its inputs are made (kept if the lower "
     "bound does not rise)",
     pass_accumulate, true, true},
    {MP_PASS_ATTENTION, "attention",
     "MatMul, [Mul|Div], [Add mask], Softmax, MatMul become one op that "
     "computes a query row at a time (mplan.attention): no score tensor "
     "(kept if the lower bound does not rise: Q and Kt now live to the "
     "second MatMul)",
     pass_attention, true, true},
    {MP_PASS_FUSE, "fuse",
     "Conv/Gemm/MatMul + elementwise chain (mplan.epilogue), register "
     "capped",
     pass_fuse, true, false},
    {MP_PASS_HFUSE, "hfuse",
     "sibling MatMul/Gemm sharing an input (mplan.horizontal)", pass_hfuse,
     true, false},
    {MP_PASS_ABSORB, "absorb",
     "DequantizeLinear / widening Cast into MatMul/Conv, nearest Resize "
     "into Add/Sub/Mul/Div (mplan.prologue)",
     pass_absorb, true, false},
    {MP_PASS_VIEWS, "views",
     "Reshape/Flatten/Squeeze/Unsqueeze/Identity share their input's "
     "buffer",
     pass_views, false, false},
    {MP_PASS_CONCAT, "concat",
     "Concat inputs are written straight into slices of its output",
     pass_concat, false, false},
    {MP_PASS_INPLACE, "inplace",
     "elementwise ops and depthwise Conv write over an input nobody "
     "reads later",
     pass_inplace, false, false},
};

const char *mp_pass_name(mp_pass_id p) {
  return (unsigned)p < MP_PASS_COUNT ? pm_passes[p].name : "?";
}

const char *mp_pass_summary(mp_pass_id p) {
  return (unsigned)p < MP_PASS_COUNT ? pm_passes[p].summary : "?";
}

const char *mp_fusion_kind_name(mp_fusion_kind k) {
  switch (k) {
    case MP_FUSION_VERTICAL:
      return "vertical";
    case MP_FUSION_HORIZONTAL:
      return "horizontal";
    case MP_FUSION_PROLOGUE:
      return "prologue";
  }
  return "?";
}

static void pm_known(char *buf, size_t cap) {
  size_t n = 0;
  buf[0] = '\0';
  for (int p = 0; p < MP_PASS_COUNT && n < cap; p++) {
    n += (size_t)snprintf(buf + n, cap - n, "%s%s", p ? ", " : "",
                          pm_passes[p].name);
  }
}

mp_status mp_passes_parse(const char *text, uint32_t *mask, mp_error *err) {
  char known[256];
  pm_known(known, sizeof known);
  if (strcmp(text, "all") == 0) {
    *mask = MP_PASSES_ALL;
    return MP_OK;
  }
  if (strcmp(text, "none") == 0) {
    *mask = 0;
    return MP_OK;
  }
  uint32_t m = 0;
  const char *p = text;
  for (;;) {
    size_t len = strcspn(p, ",");
    int found = -1;
    for (int k = 0; k < MP_PASS_COUNT && len; k++) {
      if (strlen(pm_passes[k].name) == len &&
          strncmp(pm_passes[k].name, p, len) == 0) {
        found = k;
      }
    }
    if (found < 0 && len == 0) {
      return mp_error_set(err, MP_ERR_BAD_INPUT,
                          "--passes '%s': an empty pass name (known: %s; or "
                          "all, none)",
                          text, known);
    }
    if (found < 0 && len == 3 && strncmp(p, "all", 3) == 0) {
      /* "all" in a list: its passes (all,tile) */
      if (m & MP_PASSES_ALL) {
        return mp_error_set(err, MP_ERR_BAD_INPUT,
                            "--passes '%s': 'all' and a pass it holds are "
                            "both listed",
                            text);
      }
      m |= MP_PASSES_ALL;
      if (p[len] == '\0') break;
      p += len + 1;
      continue;
    }
    if (found < 0 && len == 4 && strncmp(p, "none", 4) == 0) {
      return mp_error_set(err, MP_ERR_BAD_INPUT,
                          "--passes '%s': 'none' stands alone, not in a list",
                          text);
    }
    if (found < 0) {
      return mp_error_set(err, MP_ERR_BAD_INPUT,
                          "--passes '%s': unknown pass '%.*s' (known: %s; or "
                          "all, none)",
                          text, (int)len, p, known);
    }
    if (m & (1u << found)) {
      return mp_error_set(
          err, MP_ERR_BAD_INPUT, "--passes '%s': pass '%s' is listed twice%s",
          text, pm_passes[found].name,
          (m & MP_PASSES_ALL) == MP_PASSES_ALL && (MP_PASSES_ALL >> found & 1u)
              ? " ('all' holds it)"
              : "");
    }
    m |= 1u << found;
    if (p[len] == '\0') break;
    p += len + 1;
  }
  *mask = m;
  return MP_OK;
}

/* ---- the report ---------------------------------------------------------- */

void mp_pass_report_destroy(mp_pass_report *r) {
  if (!r) return;
  mp_strpool_destroy(r->pool);
  mp_graph_destroy(r->init);
  mp_free(r->alloc, r->rows);
  mp_free(r->alloc, r->fusions);
  mp_free(r->alloc, r->tile_ops);
  mp_free(r->alloc, r);
}

size_t mp_pass_report_rows(const mp_pass_report *r) {
  return r->n_rows;
}

const mp_pass_row *mp_pass_report_row(const mp_pass_report *r, size_t i) {
  return &r->rows[i];
}

size_t mp_pass_report_fusions(const mp_pass_report *r) {
  return r->n_fusions;
}

const mp_fusion *mp_pass_report_fusion(const mp_pass_report *r, size_t i) {
  return &r->fusions[i];
}

uint32_t mp_pass_report_vlen(const mp_pass_report *r) {
  return r->vlen;
}

uint32_t mp_pass_report_mask(const mp_pass_report *r) {
  return r->mask;
}

const mp_graph *mp_pass_report_constants(const mp_pass_report *r) {
  return r ? r->init : NULL;
}

const mp_tile_info *mp_pass_report_tile(const mp_pass_report *r) {
  return r && r->has_tile ? &r->tile : NULL;
}

const char *mp_tile_outcome_name(mp_tile_outcome o) {
  static const char *const names[] = {"no stage", "no gain", "dropped", "kept"};
  return (unsigned)o < 4 ? names[o] : "?";
}

const char *mp_tile_role_name(mp_tile_role r) {
  static const char *const names[] = {"copy", "crop", "join"};
  return (unsigned)r < 3 ? names[r] : "?";
}

uint32_t pass_tile_pick(const pass_ctx *c) {
  return c->report->tile_pick;
}

pass_tile_memo *pass_tile_memo_of(pass_ctx *c) {
  return c->report->tile_memo;
}

mp_tile_info *pass_tile_info(pass_ctx *c) {
  mp_pass_report *r = c->report;
  r->has_tile = true;
  r->tile.ops = r->tile_ops;
  return &r->tile;
}

mp_graph **pass_constants(pass_ctx *c) {
  return &c->report->init;
}

static mp_status pm_report(const mp_alloc *a, const mp_pass_opts *o,
                           mp_pass_report **out, mp_error *err) {
  mp_pass_report *r = mp_calloc(a, 1, sizeof *r);
  if (!r) return mp_error_set(err, MP_ERR_NOMEM, "passes: out of memory");
  r->alloc = a;
  r->vlen = o->vlen;
  r->mask = o->mask;
  mp_status st = mp_strpool_create(a, &r->pool, err);
  if (st != MP_OK) {
    mp_free(a, r);
    return st;
  }
  *out = r;
  return MP_OK;
}

static const char *pm_intern(mp_pass_report *r, const char *s, bool *ok) {
  if (!s) return NULL;
  const char *p = mp_strpool_cstr(r->pool, s);
  if (!p) *ok = false;
  return p;
}

const char *pass_str(pass_ctx *c, const char *s, mp_error *err) {
  bool ok = true;
  const char *p = pm_intern(c->report, s, &ok);
  if (!ok) mp_error_set(err, MP_ERR_NOMEM, "passes: out of memory");
  return p;
}

mp_status pass_tile_op(pass_ctx *c, const mp_tile_op *op, mp_error *err) {
  mp_pass_report *r = c->report;
  void *arr = r->tile_ops;
  mp_status st = mp_grow(r->alloc, &arr, &r->cap_tile_ops, r->tile.n_ops + 1,
                         sizeof *r->tile_ops, "passes", err);
  if (st != MP_OK) return st;
  r->tile_ops = arr;
  r->tile.ops = arr;
  bool ok = true;
  mp_tile_op copy = *op;
  copy.op = pm_intern(r, op->op, &ok);
  copy.origin = pm_intern(r, op->origin, &ok);
  if (!ok) return mp_error_set(err, MP_ERR_NOMEM, "passes: out of memory");
  r->tile_ops[r->tile.n_ops++] = copy;
  return MP_OK;
}

mp_status pass_fusion(pass_ctx *c, const mp_fusion *f, mp_error *err) {
  mp_pass_report *r = c->report;
  void *arr = r->fusions;
  mp_status st = mp_grow(r->alloc, &arr, &r->cap_fusions, r->n_fusions + 1,
                         sizeof *r->fusions, "passes", err);
  if (st != MP_OK) return st;
  r->fusions = arr;
  bool ok = true;
  mp_fusion copy = *f;
  copy.pass = c->id;
  copy.op = pm_intern(r, f->op, &ok);
  copy.head_type = pm_intern(r, f->head_type, &ok);
  copy.absorbed = pm_intern(r, f->absorbed, &ok);
  copy.absorbed_ops = pm_intern(r, f->absorbed_ops, &ok);
  copy.intermediates = pm_intern(r, f->intermediates, &ok);
  if (!ok) return mp_error_set(err, MP_ERR_NOMEM, "passes: out of memory");
  r->fusions[r->n_fusions++] = copy;
  c->saved_bytes += f->saved_bytes;
  return MP_OK;
}

void pass_tally(pass_ctx *c, const char *label) {
  c->rewrites++;
  for (size_t k = 0; k < c->n_tally; k++) {
    if (strcmp(c->tally_label[k], label) == 0) {
      c->tally_count[k]++;
      return;
    }
  }
  if (c->n_tally == PASS_TALLY_MAX) return; /* counted, not itemised */
  c->tally_label[c->n_tally] = label;
  c->tally_count[c->n_tally++] = 1;
}

/* ---- measuring a graph (invariant 1) ------------------------------------ */

typedef struct pm_measure {
  uint32_t *order;
  mp_schedule_info info;
  size_t lb, arena, buffers;
  bool *at_peak; /* per tensor */
} pm_measure;

static void pm_measure_release(const mp_alloc *a, pm_measure *m) {
  mp_free(a, m->order);
  mp_free(a, m->at_peak);
  memset(m, 0, sizeof *m);
}

/* Marks the tensors whose buffer is live at a peak step: a count of the
 * peak steps up to each step (peak segments can be as many as the
 * steps), so that each buffer is one lookup. */
static mp_status pm_peak_mask(const mp_problem *p, const mp_profile *prof,
                              const mp_alias *al, size_t n_t, bool *at_peak,
                              const mp_alloc *a) {
  if (prof->peak == 0 || prof->n_segs == 0) return MP_OK;
  int64_t end = -1;
  for (size_t k = 0; k < prof->n_segs; k++) {
    if (prof->segs[k].last > end) end = prof->segs[k].last;
  }
  if (end < 0) return MP_OK;
  size_t *below = mp_calloc(a, (size_t)end + 2, sizeof *below);
  if (!below) return MP_ERR_NOMEM;
  for (size_t k = 0; k < prof->n_peaks; k++) {
    const mp_segment *s = &prof->segs[prof->peaks[k]];
    for (int64_t x = s->first < 0 ? 0 : s->first; x <= s->last; x++) {
      below[x + 1] = 1;
    }
  }
  for (int64_t x = 0; x <= end; x++) below[x + 1] += below[x];
  for (size_t t = 0; t < n_t; t++) {
    const mp_buffer *b = mp_problem_buffer(p, al ? al->buffer_of[t] : t);
    if (b->cls != MP_CLASS_ACTIVATION || b->last < 0 || b->first > end) {
      continue;
    }
    int64_t lo = b->first < 0 ? 0 : b->first,
            hi = b->last > end ? end : b->last;
    at_peak[t] = lo <= hi && below[hi + 1] > below[lo];
  }
  mp_free(a, below);
  return MP_OK;
}

typedef struct pm_state {
  mp_graph *g;     /* current graph (the caller's, or ours) */
  bool owned;      /* g was made here */
  mp_alias alias;  /* g's buffer map */
  pm_measure meas; /* g's analysis */
} pm_state;

/* The memory order's budget across measurements (invariant 5). */
typedef struct pm_budget {
  uint64_t work;  /* the whole work budget (mp_schedule_opts.budget_work) */
  uint64_t spent; /* ... the measurements so far spent */
  size_t left;    /* measurements that may still come */
  size_t kept;    /* ... of which the first trial of invariant 9's rounds
                     (pm_concat_try) may take, counted in left before it
                     is known to run */
  double ms;      /* the wall-clock cap of the whole run; 0: none */
  double t0;      /* sched_now_ms when the run began: the search's own
                     clock (a loaded machine's CPU time runs slower, and a
                     cap judged on it would overrun) */
} pm_budget;

/* The search budget of the next measurement, into so; counts it as
 * done. */
static void pm_budget_take(pm_budget *b, mp_schedule_opts *so) {
  uint64_t rest = b->work > b->spent ? b->work - b->spent : 0;
  uint64_t w = b->left ? rest / b->left : rest;
  so->budget_work = w ? w : 1; /* 0 would mean the default */
  so->budget_ms = 0;
  if (b->ms > 0) {
    double ms = b->ms - (sched_now_ms() - b->t0);
    if (b->left) ms /= (double)b->left;
    so->budget_ms = ms > 1.0 ? ms : 1.0;
  }
  if (b->left) b->left--;
}

/* Less than a quarter of the budget is spent (invariant 10). */
static bool pm_budget_fresh(const pm_budget *b) {
  return b->spent < b->work / 4 &&
         (b->ms <= 0 || sched_now_ms() - b->t0 < b->ms / 4);
}

/* Ranks for the memory order's hint candidate (invariant 7): each op of
 * g at its position in prev's order, found by name; an op a rewrite
 * added ("X.add1") at X's. Ops found neither way rank 0 (as soon as
 * they are ready). */
static uint32_t *pm_hint(const mp_graph *g, const mp_graph *prev,
                         const uint32_t *prev_order) {
  const mp_alloc *a = mp_graph_alloc(g);
  size_t n = mp_graph_op_count(g), np = mp_graph_op_count(prev);
  uint32_t *pos = mp_calloc(a, np + 1, sizeof *pos);
  uint32_t *rank = mp_calloc(a, n + 1, sizeof *rank);
  if (!pos || !rank) {
    mp_free(a, pos);
    mp_free(a, rank);
    return NULL;
  }
  for (size_t k = 0; k < np; k++) pos[prev_order[k]] = (uint32_t)k;
  char base[256];
  for (size_t o = 0; o < n; o++) {
    const char *name = mp_graph_op(g, o)->name;
    const char *dot = strrchr(name, '.');
    int32_t at = -1;
    if (!mp_graph_find_op(prev, name, &at) && dot &&
        (size_t)(dot - name) < sizeof base) {
      memcpy(base, name, (size_t)(dot - name));
      base[dot - name] = '\0';
      if (!mp_graph_find_op(prev, base, &at)) at = -1;
    }
    rank[o] = at >= 0 ? pos[at] : 0;
  }
  mp_free(a, pos);
  return rank;
}

static mp_status pm_measure_graph(const mp_graph *g, const mp_alias *al,
                                  const mp_pass_opts *o, const pm_state *prev,
                                  pm_budget *b, pm_measure *m, mp_error *err) {
  const mp_alloc *a = mp_graph_alloc(g);
  mp_schedule_opts so = o->schedule;
  so.alias = al;
  pm_budget_take(b, &so);
  uint32_t *hint = NULL;
  if (prev && so.order == MP_ORDER_MEMORY) {
    hint = pm_hint(g, prev->g, prev->meas.order);
    if (!hint) {
      return mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory",
                          mp_graph_source(g));
    }
    so.hint_rank = hint;
  }
  mp_lifetime_opts lo = {.inputs_as_activations = so.inputs_as_activations,
                         .backend = so.backend,
                         .alias = al};
  mp_problem *p = NULL;
  mp_profile prof = {0};
  memset(m, 0, sizeof *m);
  size_t n_t = mp_graph_tensor_count(g);
  m->at_peak = mp_calloc(a, n_t + 1, sizeof *m->at_peak);
  mp_status st = m->at_peak
                     ? MP_OK
                     : mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory",
                                    mp_graph_source(g));
  if (st == MP_OK) st = mp_schedule_run(g, &so, &m->order, &m->info, err);
  if (st == MP_OK) b->spent += m->info.work;
  if (st == MP_OK) st = mp_lifetimes_build(g, m->order, &lo, &p, err);
  if (st == MP_OK) st = mp_problem_profile(p, &prof, err);
  if (st == MP_OK) {
    m->lb = prof.peak;
    m->buffers = mp_problem_count(p);
    if (pm_peak_mask(p, &prof, al, n_t, m->at_peak, a) != MP_OK) {
      st = mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory",
                        mp_graph_source(g));
    }
  }
  if (st == MP_OK && o->arena) st = o->arena(o->arena_ud, p, &m->arena, err);
  mp_profile_release(&prof);
  mp_problem_destroy(p);
  mp_free(a, hint);
  if (st != MP_OK) pm_measure_release(a, m);
  return st;
}

/* ---- running one pass ---------------------------------------------------- */

static double pm_now_ms(void) {
  return (double)clock() * 1000.0 / CLOCKS_PER_SEC;
}

static mp_status pm_detail(pass_ctx *c, mp_pass_row *row, mp_error *err) {
  mp_buf b;
  mp_buf_init(&b, mp_graph_alloc(c->g));
  for (size_t k = 0; k < c->n_tally; k++) {
    mp_buf_printf(&b, "%s%s %zu", k ? ", " : "", c->tally_label[k],
                  c->tally_count[k]);
  }
  if (c->note.len) {
    mp_buf_printf(&b, "%s%s", c->n_tally ? "; " : "", mp_buf_str(&c->note));
  }
  if (!b.len) mp_buf_puts(&b, "nothing to do");
  mp_status st = mp_buf_status(&b, "passes", err);
  bool ok = true;
  if (st == MP_OK) row->detail = pm_intern(c->report, mp_buf_str(&b), &ok);
  if (st == MP_OK && !ok) {
    st = mp_error_set(err, MP_ERR_NOMEM, "passes: out of memory");
  }
  mp_buf_free(&b);
  return st;
}

/* A graph pass: edits committed as a new graph with an identity map. */
static mp_status pm_graph_pass(pass_ctx *c, const pm_pass *p, mp_graph **out,
                               mp_alias *alias, mp_error *err) {
  mp_status st = rw_create(c->g, &c->rw, err);
  if (st == MP_OK) st = p->run(c, err);
  if (st == MP_OK && c->rw->changes) {
    st = rw_commit(c->rw, out, err);
    if (st == MP_OK) {
      st = mp_alias_identity(mp_graph_alloc(*out), mp_graph_tensor_count(*out),
                             alias, err);
      if (st != MP_OK) {
        mp_graph_destroy(*out);
        *out = NULL;
      }
    }
  }
  rw_destroy(c->rw);
  c->rw = NULL;
  return st;
}

/* An alias pass: the map extended through parent links. */
static mp_status pm_alias_pass(pass_ctx *c, const pm_pass *p, bool *changed,
                               mp_alias *alias, mp_error *err) {
  const mp_alloc *a = mp_graph_alloc(c->g);
  size_t n = mp_graph_tensor_count(c->g);
  c->parent = mp_calloc(a, n + 1, sizeof *c->parent);
  c->rel = mp_calloc(a, n + 1, sizeof *c->rel);
  c->rule = mp_calloc(a, n + 1, sizeof *c->rule);
  mp_status st = MP_OK;
  if (!c->parent || !c->rel || !c->rule) {
    st = mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory",
                      mp_graph_source(c->g));
  }
  for (size_t t = 0; st == MP_OK && t < n; t++) {
    c->parent[t] = c->alias->root[c->alias->buffer_of[t]];
    c->rel[t] =
        (int64_t)c->alias->offset[t] - (int64_t)c->alias->offset[c->parent[t]];
    c->rule[t] = c->alias->rule[t];
  }
  if (st == MP_OK) st = p->run(c, err);
  *changed = st == MP_OK && c->rewrites > 0;
  if (*changed) {
    st = mp_alias_build(a, n, c->parent, c->rel, c->rule, alias, err);
  }
  mp_free(a, c->parent);
  mp_free(a, c->rel);
  mp_free(a, c->rule);
  c->parent = NULL;
  c->rel = NULL;
  c->rule = NULL;
  return st;
}

static void pm_row_side(mp_pass_row *row, const pm_state *s, bool after) {
  size_t ops = mp_graph_op_count(s->g), tensors = mp_graph_tensor_count(s->g);
  if (after) {
    row->ops_after = ops, row->tensors_after = tensors;
    row->buffers_after = s->meas.buffers, row->lb_after = s->meas.lb;
    row->arena_after = s->meas.arena;
  } else {
    row->ops_before = ops, row->tensors_before = tensors;
    row->buffers_before = s->meas.buffers, row->lb_before = s->meas.lb;
    row->arena_before = s->meas.arena;
  }
}

static void pm_state_release(pm_state *s) {
  const mp_alloc *a = mp_graph_alloc(s->g);
  pm_measure_release(a, &s->meas);
  mp_alias_release(&s->alias);
  if (s->owned) mp_graph_destroy(s->g);
  memset(s, 0, sizeof *s);
}

static mp_status pm_add_row(mp_pass_report *r, const mp_pass_row *row,
                            mp_error *err) {
  void *arr = r->rows;
  mp_status st = mp_grow(r->alloc, &arr, &r->cap_rows, r->n_rows + 1,
                         sizeof *r->rows, "passes", err);
  if (st != MP_OK) return st;
  r->rows = arr;
  r->rows[r->n_rows++] = *row;
  return MP_OK;
}

/* The names of g's tensors that next lacks and that no fusion of this pass
 * (report fusions from `from` on) lists as an intermediate, comma
 * separated, interned in r (row->removed). */
static mp_status pm_removed(const mp_graph *g, const mp_graph *next,
                            mp_pass_report *r, size_t from, mp_pass_row *row,
                            mp_error *err) {
  const mp_alloc *a = mp_graph_alloc(g);
  mp_strmap *mids = NULL;
  mp_buf names, b;
  mp_buf_init(&names, a);
  mp_buf_init(&b, a);
  mp_status st = mp_strmap_create(a, &mids, err);
  /* Every intermediate as its own string (a copy split at the commas). */
  for (size_t k = from; st == MP_OK && k < r->n_fusions; k++) {
    const char *m = r->fusions[k].intermediates;
    if (m && *m) mp_buf_printf(&names, "%s%s", names.len ? "," : "", m);
  }
  if (st == MP_OK) st = mp_buf_status(&names, "passes", err);
  char *list = st == MP_OK && names.len ? names.data : NULL;
  for (char *m = list; st == MP_OK && m;) {
    char *end = strchr(m, ',');
    if (end) *end = '\0';
    st = mp_strmap_put(mids, m, 0, NULL, err);
    if (st == MP_ERR_BAD_INPUT) st = MP_OK; /* listed twice */
    m = end ? end + 1 : NULL;
  }
  for (size_t t = 0; st == MP_OK && t < mp_graph_tensor_count(g); t++) {
    const char *name = mp_graph_tensor(g, t)->name;
    int32_t at;
    int64_t v;
    if (mp_graph_find_tensor(next, name, &at) || mp_strmap_get(mids, name, &v))
      continue;
    mp_buf_printf(&b, "%s%s", b.len ? "," : "", name);
  }
  if (st == MP_OK) st = mp_buf_status(&b, "passes", err);
  bool ok = true;
  if (st == MP_OK)
    row->removed = pm_intern(r, b.len ? mp_buf_str(&b) : "", &ok);
  if (st == MP_OK && !ok) {
    st = mp_error_set(err, MP_ERR_NOMEM, "passes: out of memory");
  }
  mp_strmap_destroy(mids);
  mp_buf_free(&names);
  mp_buf_free(&b);
  return st;
}

#define PM_REFINE_MAX 4

/* Runs graph pass p (c0 as it ran) on s with made, or when made is NULL
 * with the steps order produces each tensor at (the pass derives them);
 * the result, measured (prev: the hint's graph), goes to *cand (cand->g
 * NULL: no change). */
static mp_status pm_pass_with(const pass_ctx *c0, const pm_pass *p,
                              const pm_state *s, const uint32_t *order,
                              const uint32_t *made, const mp_pass_opts *o,
                              pm_budget *b, const pm_state *prev,
                              pm_state *cand, mp_buf *note, mp_error *err) {
  pass_ctx c = *c0;
  if (order) c.order = order;
  c.made = made;
  c.reordered = 0;
  c.rewrites = 0;
  c.n_tally = 0;
  mp_buf_init(&c.note, mp_graph_alloc(s->g));
  memset(cand, 0, sizeof *cand);
  mp_status st = pm_graph_pass(&c, p, &cand->g, &cand->alias, err);
  cand->owned = cand->g != NULL;
  if (st == MP_OK && cand->g) {
    b->left++; /* a measurement no pass counted */
    st = pm_measure_graph(cand->g, &cand->alias, o, prev, b, &cand->meas, err);
  }
  *note = c.note;
  return st;
}

/* cand and its detail cnote replace next and note when ok and cand's
 * lower bound is below next's (true); otherwise cand is released. */
static bool pm_keep_lower(bool ok, pm_state *next, mp_buf *note, pm_state *cand,
                          mp_buf *cnote) {
  if (ok && cand->g && cand->meas.lb < next->meas.lb) {
    mp_buf_free(note);
    *note = *cnote;
    pm_state_release(next);
    *next = *cand;
    return true;
  }
  mp_buf_free(cnote);
  if (cand->g) pm_state_release(cand);
  return false;
}

/* Invariant 8: reruns graph pass p (c0 as it ran) on s with the production
 * steps of next's measured order while the lower bound falls; next and
 * note (the pass's detail) become the last round kept; *kept counts the
 * rounds. */
static mp_status pm_refine_rounds(const pass_ctx *c0, const pm_pass *p,
                                  const pm_state *s, const mp_pass_opts *o,
                                  pm_budget *b, pm_state *next, mp_buf *note,
                                  int *kept, mp_error *err) {
  const mp_alloc *a = mp_graph_alloc(s->g);
  size_t n_t = mp_graph_tensor_count(s->g);
  uint32_t *made = mp_calloc(a, n_t + 1, sizeof *made);
  uint32_t *pos = NULL;
  mp_status st = MP_OK;
  *kept = 0;
  for (int round = 0; round < PM_REFINE_MAX; round++) {
    size_t n1 = mp_graph_op_count(next->g);
    mp_free(a, pos);
    pos = made ? mp_calloc(a, n1 + 1, sizeof *pos) : NULL;
    if (!pos) {
      st = mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory",
                        mp_graph_source(s->g));
      break;
    }
    for (size_t k = 0; k < n1; k++) pos[next->meas.order[k]] = (uint32_t)k;
    for (size_t t = 0; t < n_t; t++) {
      int32_t t1 = -1;
      made[t] = 0;
      if (mp_graph_find_tensor(next->g, mp_graph_tensor(s->g, t)->name, &t1)) {
        int32_t pr = mp_graph_tensor(next->g, (size_t)t1)->producer;
        made[t] = pr < 0 ? 0 : 1 + pos[pr];
      }
    }
    pm_state cand;
    mp_buf cnote;
    st = pm_pass_with(c0, p, s, NULL, made, o, b, next, &cand, &cnote, err);
    if (!pm_keep_lower(st == MP_OK, next, note, &cand, &cnote)) break;
    (*kept)++;
  }
  mp_free(a, pos);
  mp_free(a, made);
  if (st == MP_OK && *kept) {
    mp_buf_printf(note, ", reordered again %d time%s by the order it made",
                  *kept, *kept == 1 ? "" : "s");
  }
  return st;
}

/* Invariant 10: integer chains seeded by the production order of each
 * other candidate order of s (dfs, rpo, file), each refined as in
 * invariant 8; one whose lower bound is below next's replaces it. */
static mp_status pm_refine_seeds(const pass_ctx *c0, const pm_pass *p,
                                 const pm_state *s, const mp_pass_opts *o,
                                 pm_budget *b, pm_state *next, mp_buf *note,
                                 mp_error *err) {
  static const mp_order_kind seeds[] = {MP_ORDER_DFS, MP_ORDER_RPO,
                                        MP_ORDER_FILE};
  mp_status st = MP_OK;
  for (size_t k = 0; st == MP_OK && k < sizeof seeds / sizeof *seeds; k++) {
    uint32_t *order = NULL;
    mp_order_kind used;
    st = mp_schedule(s->g, seeds[k], &order, &used, err);
    if (st != MP_OK) break;
    pm_state cand;
    mp_buf cnote;
    int kept = 0;
    st = pm_pass_with(c0, p, s, order, NULL, o, b, s, &cand, &cnote, err);
    mp_free(mp_graph_alloc(s->g), order);
    if (st == MP_OK && cand.g) {
      st = pm_refine_rounds(c0, p, s, o, b, &cand, &cnote, &kept, err);
      mp_buf_printf(&cnote, ", chains seeded by the %s order",
                    mp_order_name(seeds[k]));
    }
    pm_keep_lower(st == MP_OK, next, note, &cand, &cnote);
  }
  return st;
}

static mp_status pm_refine(const pass_ctx *c0, const pm_pass *p,
                           const pm_state *s, const mp_pass_opts *o,
                           pm_budget *b, pm_state *next, mp_buf *note,
                           mp_error *err) {
  int kept = 0;
  mp_status st = pm_refine_rounds(c0, p, s, o, b, next, note, &kept, err);
  /* Seeds only while under a quarter of the budget is spent: a graph
   * whose searches take longer keeps its time for the passes after. */
  if (st == MP_OK && c0->reordered && pm_budget_fresh(b)) {
    st = pm_refine_seeds(c0, p, s, o, b, next, note, err);
  }
  return st;
}

static mp_status pm_inplace_lb(const pm_state *s, const mp_pass_opts *o,
                               pm_budget *b, mp_pass_report *r, size_t *lb,
                               mp_error *err);

static mp_status pm_run_one(pm_state *s, const pm_pass *p,
                            const mp_pass_opts *o, const bool *marks,
                            pm_budget *b, mp_pass_report *r, mp_error *err) {
  double t0 = pm_now_ms();
  pass_ctx c;
  memset(&c, 0, sizeof c);
  c.id = p->id;
  c.g = s->g;
  c.alias = &s->alias;
  c.at_peak = s->meas.at_peak;
  c.vlen = o->vlen;
  mp_backend def; /* passes see a backend: the default when none is given */
  if (!o->schedule.backend) mp_backend_default(&def);
  c.backend = o->schedule.backend ? o->schedule.backend : &def;
  c.inputs_act = o->schedule.inputs_as_activations;
  c.order = s->meas.order;
  c.mask = o->mask;
  c.before_absorb = (o->mask & (1u << MP_PASS_ABSORB)) != 0;
  for (size_t i = 0; i < mp_pass_report_rows(r); i++) {
    if (mp_pass_report_row(r, i)->pass == MP_PASS_ABSORB) {
      c.before_absorb = false;
    }
  }
  /* invariant 9: the inputs concat keeps out, the outputs inplace keeps
   * apart */
  c.concat_keep_out = p->id == MP_PASS_CONCAT ? marks : NULL;
  c.inplace_apart = p->id == MP_PASS_INPLACE ? marks : NULL;
  c.report = r;
  mp_buf_init(&c.note, mp_graph_alloc(s->g));
  mp_pass_row row = {.pass = p->id, .removed = ""};
  size_t fusions_before = r->n_fusions;
  pm_row_side(&row, s, false);
  pm_state next = {0};
  bool changed = false;
  mp_status st;
  if (p->graph) {
    st = pm_graph_pass(&c, p, &next.g, &next.alias, err);
    changed = st == MP_OK && next.g;
    next.owned = changed;
  } else {
    st = pm_alias_pass(&c, p, &changed, &next.alias, err);
    next.g = s->g;
    next.owned = false;
  }
  if (st == MP_OK && changed) {
    st = pm_measure_graph(next.g, &next.alias, o, s, b, &next.meas, err);
  } else if (b->left) {
    b->left--; /* no measurement: its share stays for the later ones */
  }
  if (st == MP_OK && changed && p->id == MP_PASS_ACCUMULATE &&
      o->schedule.order == MP_ORDER_MEMORY) {
    st = pm_refine(&c, p, s, o, b, &next, &c.note, err);
  }
  size_t ahead[2] = {0, 0};
  bool rises =
      st == MP_OK && changed && p->guarded && next.meas.lb > s->meas.lb;
  bool looked = rises && (o->mask & (1u << MP_PASS_INPLACE));
  if (looked) {
    /* invariant 6: a chain's Adds hold a buffer each until inplace
     * writes them over their running sums, so judge after inplace */
    st = pm_inplace_lb(s, o, b, r, &ahead[0], err);
    if (st == MP_OK) st = pm_inplace_lb(&next, o, b, r, &ahead[1], err);
    rises = st == MP_OK && ahead[1] > ahead[0];
    if (st == MP_OK && !rises) {
      mp_buf_printf(&c.note,
                    "%skept: lower bound %zu -> %zu B, but %zu -> %zu B "
                    "with inplace",
                    c.note.len ? "; " : "", s->meas.lb, next.meas.lb, ahead[0],
                    ahead[1]);
    }
  }
  if (rises) {
    /* invariant 6: the rewrite would raise the lower bound */
    mp_buf_printf(&c.note, "%sdropped: lower bound would rise %zu -> %zu B",
                  c.note.len ? "; " : "", s->meas.lb, next.meas.lb);
    if (looked) {
      mp_buf_printf(&c.note, " (%zu -> %zu B with inplace)", ahead[0],
                    ahead[1]);
    }
    pm_state_release(&next);
    changed = false;
    c.rewrites = 0;
    c.n_tally = 0;
    if (p->id == MP_PASS_TILE && r->has_tile) {
      r->tile.outcome = MP_TILE_DROPPED;
      r->tile.n_ops = 0;
    }
  }
  if (st == MP_OK) st = mp_buf_status(&c.note, "passes", err);
  if (st == MP_OK) st = pm_detail(&c, &row, err);
  if (st == MP_OK && changed && p->graph) {
    st = pm_removed(s->g, next.g, r, fusions_before, &row, err);
  }
  if (st == MP_OK && changed) {
    /* The alias pass's graph is s's: hand ownership on with it. */
    if (!p->graph) next.owned = s->owned, s->owned = false;
    pm_state_release(s);
    *s = next;
    next.g = NULL;
  }
  if (next.g) pm_state_release(&next);
  mp_buf_free(&c.note);
  if (st != MP_OK) return st;
  pm_row_side(&row, s, true);
  row.rewrites = c.rewrites;
  row.saved_bytes = c.saved_bytes;
  row.ms = pm_now_ms() - t0;
  return pm_add_row(r, &row, err);
}

/* ---- concat refinement (invariant 9) ------------------------------------ */

/* A copy of s sharing its graph (not owned), with its own buffer map and
 * measurement arrays. */
static mp_status pm_state_clone(const pm_state *s, pm_state *out,
                                mp_error *err) {
  const mp_alloc *a = mp_graph_alloc(s->g);
  size_t n_t = mp_graph_tensor_count(s->g), n_o = mp_graph_op_count(s->g);
  memset(out, 0, sizeof *out);
  out->g = s->g;
  out->meas = s->meas;
  out->meas.order = mp_calloc(a, n_o + 1, sizeof *out->meas.order);
  out->meas.at_peak = mp_calloc(a, n_t + 1, sizeof *out->meas.at_peak);
  if (!out->meas.order || !out->meas.at_peak) {
    pm_measure_release(a, &out->meas);
    return mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory",
                        mp_graph_source(s->g));
  }
  memcpy(out->meas.order, s->meas.order, n_o * sizeof *out->meas.order);
  memcpy(out->meas.at_peak, s->meas.at_peak, n_t * sizeof *out->meas.at_peak);
  mp_status st = mp_alias_copy(&s->alias, &out->alias, err);
  if (st != MP_OK) pm_measure_release(a, &out->meas);
  return st;
}

/* Invariant 6's look ahead: the lower bound of s after the inplace pass
 * alone, measured on a copy; the rows it adds are dropped. */
static mp_status pm_inplace_lb(const pm_state *s, const mp_pass_opts *o,
                               pm_budget *b, mp_pass_report *r, size_t *lb,
                               mp_error *err) {
  pm_state cand = {0};
  size_t rows = r->n_rows;
  mp_status st = pm_state_clone(s, &cand, err);
  if (st != MP_OK) return st;
  b->left++; /* a measurement no pass counted */
  st = pm_run_one(&cand, &pm_passes[MP_PASS_INPLACE], o, NULL, b, r, err);
  *lb = cand.meas.lb;
  r->n_rows = rows;
  cand.owned = false;
  pm_state_release(&cand);
  return st;
}

#define PM_IDLE_PEAKS 64

/* s's plan under its measured order: its buffers' lifetimes, the live
 * profile (its peaks) and each op's step. */
typedef struct pm_view {
  mp_problem *p;
  mp_profile prof;
  uint32_t *step_of;
} pm_view;

static void pm_view_release(const mp_alloc *a, pm_view *v) {
  mp_profile_release(&v->prof);
  mp_problem_destroy(v->p);
  mp_free(a, v->step_of);
}

static mp_status pm_view_build(const pm_state *s, const mp_pass_opts *o,
                               pm_view *v, mp_error *err) {
  const mp_graph *g = s->g;
  size_t n_o = mp_graph_op_count(g);
  mp_lifetime_opts lo = {
      .inputs_as_activations = o->schedule.inputs_as_activations,
      .backend = o->schedule.backend,
      .alias = &s->alias};
  memset(v, 0, sizeof *v);
  v->step_of = mp_calloc(mp_graph_alloc(g), n_o + 1, sizeof *v->step_of);
  mp_status st = v->step_of
                     ? MP_OK
                     : mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory",
                                    mp_graph_source(g));
  if (st == MP_OK) st = mp_lifetimes_build(g, s->meas.order, &lo, &v->p, err);
  if (st == MP_OK) st = mp_problem_profile(v->p, &v->prof, err);
  for (size_t k = 0; st == MP_OK && k < n_o; k++) {
    v->step_of[s->meas.order[k]] = (uint32_t)k;
  }
  return st;
}

/* The step at which s's plan first writes the bytes of Concat input x
 * (in buffer buf, whose Concat output is out): the earliest producer of a
 * member overlapping x's bytes, x itself or a tensor an op wrote in place
 * before x (a graph input: -1). */
static int64_t pm_slice_birth(const pm_state *s, const uint32_t *step_of,
                              uint32_t buf, int32_t x, int32_t out) {
  const mp_graph *g = s->g;
  const mp_alias *al = &s->alias;
  uint64_t lo = al->offset[x], hi = lo + mp_graph_tensor(g, (size_t)x)->bytes;
  int64_t birth = INT64_MAX;
  for (uint32_t m = al->start[buf]; m < al->start[buf + 1]; m++) {
    uint32_t y = al->members[m];
    const mp_tensor *ty = mp_graph_tensor(g, y);
    if ((int32_t)y == out || al->offset[y] >= hi ||
        al->offset[y] + ty->bytes <= lo) {
      continue;
    }
    int64_t at = ty->producer < 0 ? -1 : (int64_t)step_of[ty->producer];
    if (at < birth) birth = at;
  }
  return birth;
}

/* Concat op's inputs whose slice s's plan writes (the input, or a
 * tensor an op then writes it over in place) by peak step t while another
 * slice of that buffer is written only after it (those bytes are idle
 * there): marked in keep_out, counted in *marked. */
static void pm_idle_slice(const pm_state *s, const pm_view *v, const mp_op *op,
                          int64_t t, bool *keep_out, size_t *marked) {
  int32_t out = op->outputs[0];
  uint32_t buf = s->alias.buffer_of[out];
  const mp_buffer *b = mp_problem_buffer(v->p, buf);
  if (b->first > t || b->last < t) return;
  bool later = false;
  for (uint32_t k = 0; k < op->n_inputs && !later; k++) {
    int32_t x = op->inputs[k];
    if (x < 0 || s->alias.buffer_of[x] != buf) continue;
    later = pm_slice_birth(s, v->step_of, buf, x, out) > t;
  }
  for (uint32_t k = 0; later && k < op->n_inputs; k++) {
    int32_t x = op->inputs[k];
    if (x < 0 || s->alias.buffer_of[x] != buf || keep_out[x]) continue;
    if (pm_slice_birth(s, v->step_of, buf, x, out) > t) continue;
    keep_out[x] = true;
    (*marked)++;
  }
}

/* Op u's output y, written over its larger input (a stride-2 depthwise
 * Conv, share.h rule 3) before peak step t with their buffer live there
 * (the input's extra bytes idle): marked in apart, counted in *marked.
 * With t < 0, any such y over an input read under a DequantizeLinear. */
static void pm_idle_union(const pm_state *s, const pm_view *v, uint32_t u,
                          int64_t t, bool *apart, size_t *marked) {
  const mp_graph *g = s->g;
  const mp_op *op = mp_graph_op(g, u);
  if (op->n_outputs != 1 || op->outputs[0] < 0 || op->n_inputs < 1 ||
      op->inputs[0] < 0) {
    return;
  }
  int32_t y = op->outputs[0], x = op->inputs[0];
  if (s->alias.rule[y] != MP_ALIAS_DEPTHWISE || apart[y] ||
      s->alias.buffer_of[x] != s->alias.buffer_of[y] ||
      mp_graph_tensor(g, (size_t)y)->bytes >=
          mp_graph_tensor(g, (size_t)x)->bytes) {
    return;
  }
  if (t >= 0) {
    const mp_buffer *b = mp_problem_buffer(v->p, s->alias.buffer_of[y]);
    if ((int64_t)v->step_of[u] >= t || b->first > t || b->last < t) return;
  } else {
    const mp_attr *pro = mp_op_attr(op, "mplan.prologue");
    if (!pro || pro->kind != MP_ATTR_STRING ||
        strncmp(pro->s, "DequantizeLinear:0", 18) != 0) {
      return;
    }
  }
  apart[y] = true;
  (*marked)++;
}

/* Marks what leaves bytes idle at the first PM_IDLE_PEAKS peak
 * intervals of s's plan: Concat inputs in keep_out (NULL: none), the
 * outputs of smaller unions in apart. *marked counts the marks not made
 * before. When no union is idle at a peak, the order may have moved the
 * peak away from them: those over an 8-bit input read under a
 * DequantizeLinear (no union a plan without the passes could have) are
 * then marked, for one trial judged by the bound it reaches. */
static mp_status pm_idle_marks(const pm_state *s, const mp_pass_opts *o,
                               bool *keep_out, bool *apart, size_t *marked,
                               mp_error *err) {
  const mp_graph *g = s->g;
  size_t n_o = mp_graph_op_count(g), unions = 0;
  pm_view v;
  *marked = 0;
  mp_status st = pm_view_build(s, o, &v, err);
  for (size_t q = 0; st == MP_OK && q < v.prof.n_peaks && q < PM_IDLE_PEAKS;
       q++) {
    int64_t t = v.prof.segs[v.prof.peaks[q]].first;
    for (uint32_t u = 0; u < n_o; u++) {
      const mp_op *op = mp_graph_op(g, u);
      if (keep_out && strcmp(op->type, "Concat") == 0 && op->n_outputs == 1 &&
          op->outputs[0] >= 0) {
        pm_idle_slice(s, &v, op, t, keep_out, marked);
      }
      pm_idle_union(s, &v, u, t, apart, &unions);
    }
  }
  for (uint32_t u = 0; st == MP_OK && unions == 0 && u < n_o; u++) {
    pm_idle_union(s, &v, u, -1, apart, &unions);
  }
  *marked += unions;
  pm_view_release(mp_graph_alloc(g), &v);
  return st;
}

/* Concat (with keep_out) and inplace (with apart), each when asked for,
 * from pre: the result replaces *s, and its rows those from row0 on,
 * when its lower bound is below s's (*better); otherwise its rows are
 * dropped. */
static mp_status pm_concat_try(const pm_state *pre, const bool *keep_out,
                               const bool *apart, size_t row0,
                               const mp_pass_opts *o, pm_budget *b,
                               mp_pass_report *r, pm_state *s, bool *better,
                               mp_error *err) {
  bool with_concat = o->mask & (1u << MP_PASS_CONCAT);
  bool with_inplace = o->mask & (1u << MP_PASS_INPLACE);
  size_t rows = r->n_rows;
  pm_state cand = {0};
  *better = false;
  mp_status st = pm_state_clone(pre, &cand, err);
  if (st != MP_OK) return st;
  if (b->kept) {
    b->kept = 0; /* counted before the first concat and inplace ran */
  } else {
    b->left += (size_t)with_concat + (size_t)with_inplace; /* uncounted */
  }
  if (with_concat) {
    st = pm_run_one(&cand, &pm_passes[MP_PASS_CONCAT], o, keep_out, b, r, err);
  }
  if (st == MP_OK && with_inplace) {
    st = pm_run_one(&cand, &pm_passes[MP_PASS_INPLACE], o, apart, b, r, err);
  }
  if (st == MP_OK && cand.meas.lb < s->meas.lb) {
    size_t n = r->n_rows - rows;
    memmove(&r->rows[row0], &r->rows[rows], n * sizeof *r->rows);
    r->n_rows = row0 + n;
    bool owned = s->owned;
    s->owned = false;
    pm_state_release(s);
    *s = cand;
    s->owned = owned;
    *better = true;
    return MP_OK;
  }
  r->n_rows = rows;
  cand.owned = false;
  pm_state_release(&cand);
  return st;
}

/* Invariant 9: concat and inplace, each when asked for, from s; then,
 * while the final peak holds Concat buffers idle because of slices
 * written early, or buffers of a depthwise Conv's smaller output written
 * over its input, both again from the same state with those inputs kept
 * out and those outputs kept apart, each round kept only if the lower
 * bound falls. After a round is kept, each tensor it marked is unmarked
 * again if that lowers the bound further (a skip whose slice costs
 * nothing at the new peak). The rows of the rounds not kept are
 * dropped. */
static mp_status pm_concat_rounds(pm_state *s, const mp_pass_opts *o,
                                  pm_budget *b, mp_pass_report *r,
                                  mp_error *err) {
  const mp_alloc *a = mp_graph_alloc(s->g);
  size_t row0 = r->n_rows, n_t = mp_graph_tensor_count(s->g);
  size_t marked = 0;
  pm_state pre = {0};
  bool *keep_out = mp_calloc(a, 4 * (n_t + 1), sizeof *keep_out);
  bool *apart = keep_out + (n_t + 1), *before = apart + (n_t + 1);
  bool *before_apart = before + (n_t + 1);
  mp_status st = keep_out ? MP_OK
                          : mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory",
                                         mp_graph_source(s->g));
  if (st == MP_OK) st = pm_state_clone(s, &pre, err);
  bool have_pre = st == MP_OK, better = false;
  bool with_concat = o->mask & (1u << MP_PASS_CONCAT);
  /* invariant 5: a share for the first round's trial, so that the last
   * measurement before it does not take all the work left */
  b->kept = (size_t)with_concat + !!(o->mask & (1u << MP_PASS_INPLACE));
  b->left += b->kept;
  if (st == MP_OK && with_concat) {
    st = pm_run_one(s, &pm_passes[MP_PASS_CONCAT], o, NULL, b, r, err);
  }
  if (st == MP_OK && (o->mask & (1u << MP_PASS_INPLACE))) {
    st = pm_run_one(s, &pm_passes[MP_PASS_INPLACE], o, NULL, b, r, err);
  }
  for (int round = 0; st == MP_OK && round < PM_REFINE_MAX; round++) {
    memcpy(before, keep_out, n_t * sizeof *before);
    memcpy(before_apart, apart, n_t * sizeof *before_apart);
    st =
        pm_idle_marks(s, o, with_concat ? keep_out : NULL, apart, &marked, err);
    if (st != MP_OK || marked == 0) break;
    st = pm_concat_try(&pre, keep_out, apart, row0, o, b, r, s, &better, err);
    if (st != MP_OK || !better) break;
    for (size_t i = 0; st == MP_OK && i < 2 * n_t; i++) {
      bool *m = i < n_t ? &keep_out[i] : &apart[i - n_t];
      if (!*m || (i < n_t ? before[i] : before_apart[i - n_t])) continue;
      *m = false;
      st = pm_concat_try(&pre, keep_out, apart, row0, o, b, r, s, &better, err);
      *m = !better;
    }
  }
  if (b->kept) { /* no round ran: its share goes to the later ones */
    b->left = b->left > b->kept ? b->left - b->kept : 0;
    b->kept = 0;
  }
  if (have_pre) pm_state_release(&pre);
  mp_free(a, keep_out);
  return st;
}

/* One run of the selected passes on g, which it never destroys: *out is
 * the final state (owned: a graph of its own), *rep its report. With
 * tile_row, a row for tile that changes nothing stands where tile would
 * run (the run without tile of invariant 11). */
/* Invariant 12: the absorb pass gave a MatMul or Conv a DequantizeLinear
 * or Cast prologue since fusion f0. */
static bool pm_new_prologue_heads(const mp_pass_report *r, size_t f0) {
  for (size_t f = f0; f < r->n_fusions; f++) {
    const mp_fusion *x = &r->fusions[f];
    if (x->kind == MP_FUSION_PROLOGUE && x->absorbed &&
        (strcmp(x->absorbed, "DequantizeLinear") == 0 ||
         strcmp(x->absorbed, "Cast") == 0)) {
      return true;
    }
  }
  return false;
}

/* Whether a Conv's or ConvTranspose's QuantizeLinear, which the fuse run
 * before absorb leaves for the run after it (fuse.c condition 8), is
 * still an op of g: then fuse runs again even when absorb gave no head a
 * prologue. */
static bool pm_quant_tails_left(const mp_graph *g) {
  for (size_t k = 0; k < mp_graph_op_count(g); k++) {
    const mp_op *op = mp_graph_op(g, k);
    if (strcmp(op->type, "QuantizeLinear") != 0 || op->n_inputs < 1 ||
        op->inputs[0] < 0) {
      continue;
    }
    int32_t p = mp_graph_tensor(g, (size_t)op->inputs[0])->producer;
    const mp_op *h = p >= 0 ? mp_graph_op(g, (size_t)p) : NULL;
    if (h && (strcmp(h->type, "Conv") == 0 ||
              strcmp(h->type, "ConvTranspose") == 0)) {
      return true;
    }
  }
  return false;
}

static mp_status pm_pipeline(mp_graph *g, const mp_pass_opts *o, uint64_t work,
                             double ms, bool tile_row, uint32_t pick,
                             pass_tile_memo *memo, pm_state *out,
                             mp_pass_report **rep, mp_error *err) {
  const mp_alloc *a = mp_graph_alloc(g);
  pm_state s = {.g = g, .owned = false};
  mp_pass_report *r = NULL;
  pm_budget b = {.work = work, .left = 1, .ms = ms, .t0 = sched_now_ms()};
  for (int p = 0; p < MP_PASS_COUNT; p++) b.left += (o->mask >> p) & 1u;
  mp_status st = pm_report(a, o, &r, err);
  if (st == MP_OK) {
    r->tile_pick = pick;
    r->tile_memo = memo;
  }
  if (st == MP_OK) {
    st = mp_alias_identity(a, mp_graph_tensor_count(g), &s.alias, err);
  }
  if (st == MP_OK) {
    st = pm_measure_graph(s.g, &s.alias, o, NULL, &b, &s.meas, err);
  }
  for (int p = 0; st == MP_OK && p < MP_PASS_COUNT; p++) {
    if (p == MP_PASS_TILE && tile_row) {
      mp_pass_row row = {.pass = MP_PASS_TILE, .removed = "", .detail = ""};
      pm_row_side(&row, &s, false);
      pm_row_side(&row, &s, true);
      st = pm_add_row(r, &row, err);
      continue;
    }
    if (!(o->mask & (1u << p))) continue;
    size_t fusions_before = r->n_fusions;
    if (p == MP_PASS_CONCAT || p == MP_PASS_INPLACE) {
      st = pm_concat_rounds(&s, o, &b, r, err);
      p = MP_PASS_INPLACE; /* run by the rounds when asked for */
    } else {
      st = pm_run_one(&s, &pm_passes[p], o, NULL, &b, r, err);
    }
    if (st == MP_OK && p == MP_PASS_ABSORB &&
        (o->mask & (1u << MP_PASS_FUSE)) &&
        (pm_new_prologue_heads(r, fusions_before) ||
         pm_quant_tails_left(s.g))) {
      /* invariant 12 */
      st = pm_run_one(&s, &pm_passes[MP_PASS_FUSE], o, NULL, &b, r, err);
    }
  }
  if (st != MP_OK) {
    if (s.g) pm_state_release(&s);
    mp_pass_report_destroy(r);
    return st;
  }
  *out = s;
  *rep = r;
  return MP_OK;
}

static mp_pass_row *pm_tile_row(mp_pass_report *r) {
  for (size_t k = 0; k < r->n_rows; k++) {
    if (r->rows[k].pass == MP_PASS_TILE) return &r->rows[k];
  }
  return NULL;
}

/* Invariant 11: the patches against the same passes without them, judged
 * after every pass. Takes both runs; *keep gets the one kept, with its
 * tile row saying why, and the other is released. */
static mp_status pm_tile_judge(pm_state *with, mp_pass_report *rw,
                               pm_state *without, mp_pass_report *rwo,
                               uint32_t mask, pm_state *keep,
                               mp_pass_report **keep_r, mp_error *err) {
  mp_pass_row *tw = pm_tile_row(rw), *two = pm_tile_row(rwo);
  bool bands = with->meas.lb < without->meas.lb;
  mp_buf b;
  mp_buf_init(&b, rw->alloc);
  if (bands) {
    mp_buf_printf(&b,
                  "%s; kept: %zu B after every pass, %zu B without the "
                  "patches",
                  tw->detail, with->meas.lb, without->meas.lb);
  } else {
    mp_buf_printf(&b,
                  "dropped: after every pass %zu B with the patches (%s), "
                  "%zu B without",
                  with->meas.lb, tw->detail, without->meas.lb);
  }
  mp_status st = mp_buf_status(&b, "passes", err);
  mp_pass_report *kr = bands ? rw : rwo;
  mp_pass_row *row = bands ? tw : two;
  bool ok = true;
  if (st == MP_OK) row->detail = pm_intern(kr, mp_buf_str(&b), &ok);
  rw->tile.lb_with = with->meas.lb;
  rw->tile.lb_without = without->meas.lb;
  if (!bands && rw->has_tile) { /* the record moves to the run kept */
    rwo->has_tile = true;
    rwo->tile = rw->tile;
    rwo->tile.outcome = MP_TILE_DROPPED;
    rwo->tile.cut = pm_intern(rwo, rw->tile.cut, &ok);
    rwo->tile.cut_op = pm_intern(rwo, rw->tile.cut_op, &ok);
    for (uint32_t k = 0; k < rw->tile.n_exports; k++) {
      rwo->tile.exports[k] = pm_intern(rwo, rw->tile.exports[k], &ok);
    }
    rwo->tile.ops = NULL;
    rwo->tile.n_ops = 0;
  }
  if (st == MP_OK && !ok) {
    st = mp_error_set(err, MP_ERR_NOMEM, "passes: out of memory");
  }
  mp_buf_free(&b);
  kr->mask = mask;
  if (bands) {
    *keep = *with;
    pm_state_release(without);
    mp_pass_report_destroy(rwo);
  } else {
    *keep = *without;
    pm_state_release(with);
    mp_pass_report_destroy(rw);
  }
  *keep_r = kr;
  return st;
}

/* Invariant 13: appends to r's tile row which patching was built, of
 * picks ranked: picked had the lowest bound after every pass in file
 * order (lb_pick; the first's lb_first), and after every pass in the
 * order planned lb_picked against the first's lb_0. */
static mp_status pm_tile_note(mp_pass_report *r, uint32_t picks,
                              uint32_t picked, size_t lb_pick, size_t lb_first,
                              bool built, size_t lb_picked, size_t lb_0,
                              mp_error *err) {
  mp_pass_row *row = pm_tile_row(r);
  if (!row) return MP_OK;
  mp_buf b;
  mp_buf_init(&b, r->alloc);
  mp_buf_printf(&b,
                "%s; after every pass in file order, patching %u of %u "
                "ranked %zu B, the first %zu B; in the order planned %zu "
                "against %zu B: built %s",
                row->detail, picked + 1, picks, lb_pick, lb_first, lb_picked,
                lb_0, built ? "it" : "the first");
  mp_status st = mp_buf_status(&b, "passes", err);
  bool ok = true;
  if (st == MP_OK) row->detail = pm_intern(r, mp_buf_str(&b), &ok);
  mp_buf_free(&b);
  if (st == MP_OK && !ok) {
    st = mp_error_set(err, MP_ERR_NOMEM, "passes: out of memory");
  }
  return st;
}

/* Invariant 13: every pass in file order for each patching the tile pass
 * ranks; *pick gets the one of the lowest bound after them (0 when it
 * ranked one or none), *picks how many it ranked, and *lb_pick and
 * *lb_first the bounds of the one picked and of the first. */
static mp_status pm_tile_pick(mp_graph *g, const mp_pass_opts *o,
                              pass_tile_memo *memo, uint32_t *pick,
                              uint32_t *picks, size_t *lb_pick,
                              size_t *lb_first, mp_error *err) {
  mp_pass_opts of = *o;
  of.schedule.order = MP_ORDER_FILE;
  of.arena = NULL; /* (the rows' arena columns are not read) */
  mp_status st = MP_OK;
  for (uint32_t p = 0; st == MP_OK && (p == 0 || p < *picks); p++) {
    pm_state s = {0};
    mp_pass_report *r = NULL;
    st = pm_pipeline(g, &of, 0, 0, false, p, memo, &s, &r, err);
    if (st != MP_OK) break;
    const mp_tile_info *t = r->has_tile ? &r->tile : NULL;
    if (p == 0) *picks = t ? t->picks : 0;
    if (t && t->pick == p && t->picks == *picks) {
      if (p == 0) *lb_first = *lb_pick = s.meas.lb;
      /* a tie goes to fewer recomputed MACs, as the pass ranks */
      if (s.meas.lb < *lb_pick ||
          (s.meas.lb == *lb_pick &&
           memo->top[p].extra < memo->top[*pick].extra)) {
        *lb_pick = s.meas.lb;
        *pick = p;
      }
    }
    pm_state_release(&s);
    mp_pass_report_destroy(r);
    if (*picks <= 1) break;
  }
  return st;
}

mp_status mp_passes_run(mp_graph **g, const mp_pass_opts *opts, mp_alias *alias,
                        uint32_t **order, mp_schedule_info *info,
                        mp_pass_report **report, mp_error *err) {
  const mp_alloc *a = mp_graph_alloc(*g);
  const mp_pass_opts *o = opts;
  uint64_t work = o->schedule.budget_work ? o->schedule.budget_work
                                          : MP_SCHEDULE_BUDGET_WORK;
  double ms = o->schedule.budget_ms; /* 0: no wall-clock cap */
  bool tile = o->mask & (1u << MP_PASS_TILE);
  pm_state s = {0}, s2 = {0};
  mp_pass_report *r = NULL, *r2 = NULL;
  uint32_t pick = 0, picks = 0;
  size_t lb_pick = 0, lb_first = 0;
  pass_tile_memo memo = {0}; /* the tile pass searches once */
  mp_status st = MP_OK;
  if (tile) {
    st = pm_tile_pick(*g, o, &memo, &pick, &picks, &lb_pick, &lb_first, err);
  }
  /* the runs of invariants 11 and 13 share the budget */
  uint32_t runs = tile ? (pick ? 3 : 2) : 1;
  if (st == MP_OK) {
    st = pm_pipeline(*g, o, work / runs, ms / runs, false, 0, &memo, &s, &r,
                     err);
  }
  if (st == MP_OK && pick) {
    /* invariant 13: the patching best after every pass in file order,
     * against the first in the order planned */
    pm_state s3 = {0};
    mp_pass_report *r3 = NULL;
    st = pm_pipeline(*g, o, work / runs, ms / runs, false, pick, &memo, &s3,
                     &r3, err);
    bool it = st == MP_OK && s3.meas.lb < s.meas.lb;
    if (st == MP_OK) {
      st = pm_tile_note(it ? r3 : r, picks, pick, lb_pick, lb_first, it,
                        s3.meas.lb, s.meas.lb, err);
    }
    if (st == MP_OK && it) {
      pm_state_release(&s);
      mp_pass_report_destroy(r);
      s = s3;
      r = r3;
    } else if (s3.g) { /* (pm_pipeline left nothing when it failed) */
      pm_state_release(&s3);
      mp_pass_report_destroy(r3);
    }
  }
  if (st == MP_OK && r->has_tile && picks > 1) {
    r->tile.lb_pick = lb_pick;
    r->tile.lb_first = lb_first;
    r->tile.picked = pick;
  }
  const mp_pass_row *tr = st == MP_OK && tile ? pm_tile_row(r) : NULL;
  if (tr && tr->ops_after != tr->ops_before) {
    /* invariant 11: the passes after tile judge it too */
    mp_pass_opts o2 = *o;
    o2.mask &= ~(1u << MP_PASS_TILE);
    st = pm_pipeline(*g, &o2, work / runs, ms / runs, true, 0, NULL, &s2, &r2,
                     err);
    pm_state keep = {0};
    mp_pass_report *keep_r = NULL;
    if (st == MP_OK) {
      st = pm_tile_judge(&s, r, &s2, r2, o->mask, &keep, &keep_r, err);
      s = keep;
      r = keep_r;
    } else {
      pm_state_release(&s);
      mp_pass_report_destroy(r);
      r = NULL;
    }
  }
  if (st != MP_OK) {
    if (s.g) pm_state_release(&s);
    mp_pass_report_destroy(r);
    return st;
  }
  if (s.owned) mp_graph_destroy(*g);
  *g = s.g;
  *alias = s.alias;
  *order = s.meas.order;
  *info = s.meas.info;
  *report = r;
  mp_free(a, s.meas.at_peak);
  return MP_OK;
}
