/*
 * output.c -- loading, planning and reporting failures for the commands.
 *
 * Invariants:
 *   1. Every failure prints exactly one line on stderr: the model's
 *      warnings wait in cli_pending until the command has ended, and are
 *      dropped when it failed (exit 2).
 *   2. Exit status: 0 success, 1 a check/validation failed, 2 anything
 *      else (usage, input, I/O, resources).
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "mplan/validate.h"

static mp_buf cli_pending = {0};
static mp_buf cli_command = {0};

/* "mplan: KIND: MSG\n" into b, control characters and bytes that are not
 * UTF-8 escaped as \xHH: names from files keep the line one valid line. */
static void cli_line(mp_buf *b, const char *kind, const char *msg) {
  mp_buf_printf(b, "mplan: %s: ", kind);
  for (const unsigned char *c = (const unsigned char *)msg; *c;) {
    size_t len = *c < 0x80 ? 1 : *c < 0xe0 ? 2 : *c < 0xf0 ? 3 : 4;
    if (*c < 0x20 || *c == 0x7f ||
        (*c >= 0x80 && mp_utf8_prefix((const char *)c, len) < len)) {
      mp_buf_printf(b, "\\x%02x", *c);
      c++;
    } else {
      mp_buf_append(b, (const char *)c, len);
      c += len;
    }
  }
  mp_buf_puts(b, "\n");
}

void cli_message(const char *kind, const char *msg) {
  mp_buf b;
  mp_buf_init(&b, NULL);
  cli_line(&b, kind, msg);
  fputs(b.failed ? "mplan: error: out of memory\n" : mp_buf_str(&b), stderr);
  mp_buf_free(&b);
}

void cli_warnings_end(bool print) {
  if (print && cli_pending.len && !cli_pending.failed) {
    fputs(mp_buf_str(&cli_pending), stderr);
  }
  mp_buf_free(&cli_pending);
}

/* "plan m.json --shape x=1x3x8x8": recorded before the options are
 * parsed, since parsing splits NAME=VALUE arguments in place. */
void cli_command_record(int argc, char **argv) {
  mp_buf_init(&cli_command, NULL);
  for (int i = 1; i < argc; i++) {
    if (i > 1) mp_buf_puts(&cli_command, " ");
    bool quote = strpbrk(argv[i], " \t'\"") != NULL || !*argv[i];
    mp_buf_printf(&cli_command, quote ? "'%s'" : "%s", argv[i]);
  }
}

const mp_buf *cli_command_line(void) {
  return &cli_command;
}

void cli_command_end(void) {
  mp_buf_free(&cli_command);
}

int cli_fail(mp_status st, const mp_error *err) {
  cli_message(st == MP_ERR_CHECK ? "invalid" : "error",
              err->msg[0] ? err->msg : mp_status_name(st));
  return st == MP_ERR_CHECK ? 1 : 2;
}

void cli_warnings(const mp_model *m) {
  for (size_t i = 0; m && i < mp_model_warning_count(m); i++) {
    cli_line(&cli_pending, "warning", mp_model_warning(m, i));
  }
}

bool cli_wants_help(int argc, char **argv) {
  for (int i = 2; i < argc; i++) {
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      return true;
    }
  }
  return false;
}

bool cli_print(const char *text) {
  size_t n = strlen(text);
  return fwrite(text, 1, n, stdout) == n && fflush(stdout) == 0;
}

static mp_status cli_adopt(const mp_model *m, mp_plan **plan, mp_error *err) {
  const mp_problem *p = mp_model_problem(m);
  const char *const *names;
  const size_t *cap, *limit;
  size_t n = mp_model_plan_regions(m, &names, &cap, &limit);
  mp_region_desc regions[64];
  if (n > 64) {
    return mp_error_set(err, MP_ERR_UNSUPPORTED, "%s: more than 64 regions",
                        mp_model_path(m));
  }
  for (size_t r = 0; r < n; r++) {
    regions[r] = (mp_region_desc){names[r], cap[r], MP_REGION_ALL_CLASSES};
  }
  mp_status st =
      mp_plan_adopt_regions(p, mp_model_placements(m), mp_model_strategy(m), 0,
                            regions, n, plan, err);
  if (st != MP_OK) return st;
  st = mp_validate(p, mp_model_placements(m), limit, n, NULL, err);
  if (st != MP_OK) {
    mp_error_prefix(err, "%s", mp_model_path(m));
    mp_plan_destroy(*plan);
    *plan = NULL;
  }
  return st;
}

/* The per-pass table's arena columns: each pass's problem solved with the
 * strategy the plan itself uses, the search budget shared among the
 * passes (the final plan still gets all of it). */
/* What the per-pass arena needs to plan like cli_solve will. */
typedef struct cli_arena_ctx {
  const cli_opts *o;
  const mp_backend *be;
} cli_arena_ctx;

static mp_status cli_arena(void *ud, const mp_problem *p, size_t *arena,
                           mp_error *err) {
  const cli_arena_ctx *c = ud;
  const cli_opts *o = c->o;
  unsigned runs = 1;
  for (uint32_t m = o->passes; m; m >>= 1) runs += m & 1u;
  mp_region_desc regions[MP_BACKEND_MAX_REGIONS];
  mp_plan_opts po = {
      .strategy = o->strategy,
      .budget_ms = o->budget_ms / runs,
      /* a share of at least 1: 0 would mean no budget */
      .budget_work =
          o->budget_work && o->budget_work < runs ? 1 : o->budget_work / runs,
      .regions = regions,
      .n_regions = c->be ? mp_backend_regions(c->be, regions) : 0,
      .banks = c->be ? c->be->banks : (mp_bank_desc){0, 0}};
  mp_plan *plan = NULL;
  mp_status st = mp_plan_solve(p, &po, &plan, err);
  if (st == MP_OK) *arena = mp_plan_summary_of(plan)->arena_bytes;
  mp_plan_destroy(plan);
  return st;
}

mp_status cli_load(const cli_opts *o, bool allow_plan, mp_model **model,
                   mp_error *err) {
  mp_backend be;
  cli_arena_ctx actx = {o, NULL};
  mp_load_opts lo = {
      .order = o->order,
      .inputs_as_activations = o->inputs_as_activations,
      .dims = o->dims,
      .n_dims = o->n_dims,
      .allow_plan = allow_plan,
      .shapes = o->shapes,
      .n_shapes = o->n_shapes,
      .values = o->values,
      .n_values = o->n_values,
      .caps = o->caps,
      .n_caps = o->n_caps,
      .passes = o->passes,
      .arena = cli_arena,
      .arena_ud = &actx,
      .order_budget_ms = o->order_budget_ms,
      .order_work = o->order_work,
      .order_states = o->order_states,
  };
  if (o->backend) {
    mp_status st = mp_backend_resolve(o->backend, &be, err);
    if (st != MP_OK) return st;
    lo.backend = &be;
    actx.be = &be;
  }
  return mp_model_load(o->model, &lo, NULL, model, err);
}

mp_status cli_solve(const cli_opts *o, const mp_model *m, mp_plan **plan,
                    mp_error *err) {
  if (mp_model_format_of(m) == MP_FORMAT_PLAN) {
    if (o->strategy || o->backend) {
      return mp_error_set(err, MP_ERR_BAD_INPUT,
                          "%s: is a plan already; --strategy and --backend "
                          "apply to models",
                          o->model);
    }
    return cli_adopt(m, plan, err);
  }
  mp_region_desc regions[MP_BACKEND_MAX_REGIONS];
  const mp_backend *be = mp_model_backend(m);
  mp_plan_opts po = {.strategy = o->strategy,
                     .budget_ms = o->budget_ms,
                     .regions = regions,
                     .n_regions = be ? mp_backend_regions(be, regions) : 0,
                     .banks = be ? be->banks : (mp_bank_desc){0, 0},
                     .budget_work = o->budget_work};
  mp_status st = mp_plan_solve(mp_model_problem(m), &po, plan, err);
  if (st != MP_OK && err && strncmp(err->msg, o->model, strlen(o->model))) {
    mp_error_prefix(err, "%s", o->model);
  }
  return st;
}

/* The capped plan's cost at 1/4, 1/2 and the full cap: every capped dim
 * scaled (at least 1), the model re-planned there, and the capped arena
 * compared with what any plan needs at those values. */
static mp_status cli_cap_sweep(const cli_opts *o, mp_model *m,
                               const mp_plan *plan, mp_error *err) {
  static const double fractions[MP_CAP_POINTS] = {0.25, 0.5, 1.0};
  const mp_plan_summary *at_cap = mp_plan_summary_of(plan);
  mp_status st = MP_OK;
  for (size_t f = 0; st == MP_OK && f < MP_CAP_POINTS; f++) {
    cli_opts sub = *o;
    mp_model *sm = NULL;
    mp_plan *sp = NULL;
    for (size_t i = 0; i < o->n_caps; i++) {
      int64_t v = (int64_t)((double)o->caps[i].value * fractions[f]);
      sub.caps[i].value = v < 1 ? 1 : v;
    }
    st = cli_load(&sub, false, &sm, err);
    if (st == MP_OK) st = cli_solve(&sub, sm, &sp, err);
    if (st == MP_OK) {
      const mp_plan_summary *s = mp_plan_summary_of(sp);
      mp_cap_point p = {fractions[f], s->arena_bytes,
                        s->resident_bytes + s->lower_bound_bytes, 0};
      p.waste_bytes = at_cap->arena_bytes > p.needed_bytes
                          ? at_cap->arena_bytes - p.needed_bytes
                          : 0;
      st = mp_model_add_cap_point(m, &p, err);
    } else {
      mp_error_prefix(err, "planning at %g of the cap", fractions[f]);
    }
    mp_plan_destroy(sp);
    mp_model_destroy(sm);
  }
  return st;
}

mp_status cli_load_and_plan(const cli_opts *o, bool allow_plan,
                            mp_model **model, mp_plan **plan, mp_error *err) {
  mp_status st = cli_load(o, allow_plan, model, err);
  if (st != MP_OK) return st;
  cli_warnings(*model);
  st = cli_solve(o, *model, plan, err);
  if (st == MP_OK && o->n_caps) st = cli_cap_sweep(o, *model, *plan, err);
  if (st != MP_OK && *plan) {
    mp_plan_destroy(*plan);
    *plan = NULL;
  }
  if (st != MP_OK) {
    mp_model_destroy(*model);
    *model = NULL;
  }
  return st;
}
