/*
 * args.c -- option parsing shared by the subcommands.
 *
 * Invariants:
 *   1. Flags accept "--flag value" and "--flag=value".
 *   2. An option a command does not take, a missing value, or a second
 *      positional argument (to a command without CLI_F_MODELS) is a
 *      usage error (exit 2), never ignored.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "mplan/check.h"
#include "mplan/units.h"

typedef struct args_state {
  int argc;
  char **argv;
  int i;
  const char *cmd;
  mp_error *err;
} args_state;

/* Matches argv[i] against name; *value gets the value (inline or next). */
static int args_match(args_state *s, const char *name, bool takes_value,
                      const char **value) {
  const char *a = s->argv[s->i];
  size_t n = strlen(name);
  if (strncmp(a, name, n) != 0) return 0;
  if (a[n] == '=' && takes_value) {
    *value = a + n + 1;
    return 1;
  }
  if (a[n] != '\0') return 0;
  if (!takes_value) return 1;
  if (s->i + 1 >= s->argc) {
    mp_error_set(s->err, MP_ERR_BAD_INPUT, "mplan %s: %s needs a value", s->cmd,
                 name);
    return -1;
  }
  *value = s->argv[++s->i];
  return 1;
}

static mp_status args_number(args_state *s, const char *flag, const char *v,
                             double *out) {
  char *end;
  double d = strtod(v, &end);
  if (*v == '\0' || *end != '\0' || !(d >= 0)) {
    return mp_error_set(s->err, MP_ERR_BAD_INPUT,
                        "mplan %s: %s '%s': expected a number >= 0", s->cmd,
                        flag, v);
  }
  *out = d;
  return MP_OK;
}

static mp_status args_count(args_state *s, const char *flag, const char *v,
                            size_t *out) {
  int64_t n;
  if (!mp_parse_i64(v, &n) || n < 1 || n > 1000000) {
    return mp_error_set(s->err, MP_ERR_BAD_INPUT,
                        "mplan %s: %s '%s': expected an integer >= 1", s->cmd,
                        flag, v);
  }
  *out = (size_t)n;
  return MP_OK;
}

static mp_status args_dim(args_state *s, cli_opts *o, const char *v) {
  const char *eq = strchr(v, '=');
  const char *le = strstr(v, "<=");
  bool cap = le && le + 1 == eq;
  int64_t val;
  if (!eq || eq == v || (cap && le == v) || !mp_parse_i64(eq + 1, &val) ||
      val < 1) {
    return mp_error_set(
        s->err, MP_ERR_BAD_INPUT,
        "mplan %s: --dim '%s': expected NAME=VALUE with VALUE >= 1 "
        "or NAME<=MAX",
        s->cmd, v);
  }
  size_t *n = cap ? &o->n_caps : &o->n_dims;
  if (*n == CLI_MAX_DIMS) {
    return mp_error_set(s->err, MP_ERR_BAD_INPUT,
                        "mplan %s: more than %d --dim options", s->cmd,
                        CLI_MAX_DIMS);
  }
  /* The name is the text before '=' (or '<='); argv is ours to split. */
  ((char *)(uintptr_t)(cap ? le : eq))[0] = '\0';
  (cap ? o->caps : o->dims)[(*n)++] = (mp_dim_binding){v, val};
  return MP_OK;
}

/* --shape INPUT=1x3x48x320 (a scalar input: INPUT=scalar). */
static mp_status args_shape(args_state *s, cli_opts *o, char *v) {
  char *eq = strrchr(v, '=');
  mp_shape_binding b = {0};
  if (!eq || eq == v || !eq[1]) goto bad;
  *eq = '\0';
  b.name = v;
  if (strcmp(eq + 1, "scalar") != 0) {
    for (char *p = eq + 1;; b.rank++) {
      char *x = strchr(p, 'x');
      if (x) *x = '\0';
      if (b.rank == MP_MAX_RANK || !mp_parse_i64(p, &b.dims[b.rank]) ||
          b.dims[b.rank] < 0) {
        if (x) *x = 'x';
        *eq = '=';
        goto bad;
      }
      if (x) *x = 'x'; /* the error names the whole value */
      if (!x) {
        b.rank++;
        break;
      }
      p = x + 1;
    }
  }
  if (o->n_shapes == CLI_MAX_SHAPES) {
    return mp_error_set(s->err, MP_ERR_BAD_INPUT,
                        "mplan %s: more than %d --shape options", s->cmd,
                        CLI_MAX_SHAPES);
  }
  o->shapes[o->n_shapes++] = b;
  return MP_OK;
bad:
  return mp_error_set(s->err, MP_ERR_BAD_INPUT,
                      "mplan %s: --shape '%s': expected INPUT=DxDx... with "
                      "every D >= 0 (at most %d dims) or INPUT=scalar",
                      s->cmd, v, MP_MAX_RANK);
}

static mp_status args_value(args_state *s, cli_opts *o, char *v) {
  char *eq = strrchr(v, '='), *end = NULL;
  double d = eq ? strtod(eq + 1, &end) : 0;
  if (!eq || eq == v || !eq[1] || *end != '\0' || d != d) {
    return mp_error_set(s->err, MP_ERR_BAD_INPUT,
                        "mplan %s: --value '%s': expected INPUT=NUMBER", s->cmd,
                        v);
  }
  if (o->n_values == CLI_MAX_SHAPES) {
    return mp_error_set(s->err, MP_ERR_BAD_INPUT,
                        "mplan %s: more than %d --value options", s->cmd,
                        CLI_MAX_SHAPES);
  }
  *eq = '\0';
  o->values[o->n_values++] = (mp_value_binding){v, d};
  return MP_OK;
}

mp_status cli_work_value(const char *cmd, const char *flag, const char *v,
                         uint64_t *out, mp_error *err) {
  int64_t n;
  if (!mp_parse_i64(v, &n) || n < 1) {
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "mplan %s: %s '%s': expected an integer >= 1", cmd,
                        flag, v);
  }
  *out = (uint64_t)n;
  return MP_OK;
}

static int args_planning(args_state *s, cli_opts *o, mp_status *st) {
  const char *v = NULL;
  int r;
  if ((r = args_match(s, "--backend", true, &v))) {
    o->backend = v;
  } else if ((r = args_match(s, "--strategy", true, &v))) {
    o->strategy = v;
  } else if ((r = args_match(s, "--budget-ms", true, &v))) {
    if (r > 0) *st = args_number(s, "--budget-ms", v, &o->budget_ms);
  } else if ((r = args_match(s, "--order-budget-ms", true, &v))) {
    if (r > 0)
      *st = args_number(s, "--order-budget-ms", v, &o->order_budget_ms);
  } else if ((r = args_match(s, "--budget-work", true, &v))) {
    if (r > 0) {
      *st = cli_work_value(s->cmd, "--budget-work", v, &o->budget_work, s->err);
    }
  } else if ((r = args_match(s, "--order-work", true, &v))) {
    if (r > 0) {
      *st = cli_work_value(s->cmd, "--order-work", v, &o->order_work, s->err);
    }
  } else if ((r = args_match(s, "--order-states", true, &v))) {
    int64_t n;
    if (r > 0 && (!mp_parse_i64(v, &n) || n < 64 || n > ((int64_t)1 << 26))) {
      *st = mp_error_set(s->err, MP_ERR_BAD_INPUT,
                         "mplan %s: --order-states '%s': expected an integer "
                         "from 64 to 67108864",
                         s->cmd, v);
    } else if (r > 0) {
      o->order_states = (size_t)n;
    }
  } else if ((r = args_match(s, "--order", true, &v))) {
    if (r > 0 && !mp_order_parse(v, &o->order)) {
      *st = mp_error_set(s->err, MP_ERR_BAD_INPUT,
                         "mplan %s: --order '%s': expected auto, file, topo, "
                         "dfs, rpo or memory",
                         s->cmd, v);
    }
  } else if ((r = args_match(s, "--passes", true, &v))) {
    if (r > 0 && (*st = mp_passes_parse(v, &o->passes, s->err)) != MP_OK) {
      mp_error_prefix(s->err, "mplan %s", s->cmd);
    }
  } else if ((r = args_match(s, "--dim", true, &v))) {
    if (r > 0) *st = args_dim(s, o, v);
  } else if ((r = args_match(s, "--shape", true, &v))) {
    if (r > 0) *st = args_shape(s, o, (char *)(uintptr_t)v);
  } else if ((r = args_match(s, "--value", true, &v))) {
    if (r > 0) *st = args_value(s, o, (char *)(uintptr_t)v);
  } else if ((r = args_match(s, "--inputs", true, &v))) {
    if (r > 0 && strcmp(v, "resident") != 0 && strcmp(v, "activation") != 0) {
      *st = mp_error_set(s->err, MP_ERR_BAD_INPUT,
                         "mplan %s: --inputs '%s': expected resident or "
                         "activation",
                         s->cmd, v);
    }
    if (r > 0) o->inputs_as_activations = strcmp(v, "activation") == 0;
  }
  return r;
}

static int args_report(args_state *s, cli_opts *o, mp_status *st) {
  const char *v = NULL;
  int r;
  if ((r = args_match(s, "--top", true, &v))) {
    if (r > 0) *st = args_count(s, "--top", v, &o->report.top);
  } else if ((r = args_match(s, "--map-width", true, &v))) {
    if (r > 0) *st = args_count(s, "--map-width", v, &o->report.map_width);
  } else if ((r = args_match(s, "--map-rows", true, &v))) {
    if (r > 0) *st = args_count(s, "--map-rows", v, &o->report.map_rows);
  } else if ((r = args_match(s, "--no-map", false, &v))) {
    o->no_map = true;
  } else if ((r = args_match(s, "--no-what-if", false, &v))) {
    o->no_what_if = true;
  }
  return r;
}

/* --lifetimes picks its format by extension; anything else is a usage
 * error now rather than a surprise later. */
static mp_status args_lifetimes(args_state *s, const char *v) {
  const char *dot = strrchr(v, '.');
  if (dot && (strcmp(dot, ".yaml") == 0 || strcmp(dot, ".yml") == 0 ||
              strcmp(dot, ".json") == 0)) {
    return MP_OK;
  }
  return mp_error_set(s->err, MP_ERR_BAD_INPUT,
                      "mplan %s: --lifetimes '%s': the name must end in "
                      ".yaml, .yml or .json (it picks the format)",
                      s->cmd, v);
}

static int args_files(args_state *s, cli_opts *o, mp_status *st) {
  const char *v = NULL;
  int r;
  if ((r = args_match(s, "--html", true, &v))) {
    o->html = v;
  } else if ((r = args_match(s, "--sqlite", true, &v))) {
    o->sqlite = v;
  } else if ((r = args_match(s, "--dot", true, &v))) {
    o->dot = v;
  } else if ((r = args_match(s, "--svg", true, &v))) {
    o->svg = v;
  } else if ((r = args_match(s, "--lifetimes", true, &v))) {
    o->lifetimes = v;
    if (r > 0) *st = args_lifetimes(s, v);
  } else if ((r = args_match(s, "--c-header", true, &v))) {
    o->c_header = v;
    const char *dot = v ? strrchr(v, '.') : NULL;
    if (r > 0 && (!dot || strcmp(dot, ".h") != 0)) {
      *st = mp_error_set(s->err, MP_ERR_BAD_INPUT,
                         "mplan %s: --c-header '%s': the name must end in .h "
                         "(its name before .h prefixes every identifier)",
                         s->cmd, v);
    }
  } else if ((r = args_match(s, "--c-header-weights", false, &v))) {
    o->c_header_weights = true;
  } else if ((r = args_match(s, "--what-if", false, &v))) {
    o->what_if = true;
  }
  return r;
}

/* mplan check: --budget SIZE --baseline F --baseline-dir D --tolerance P%
 * --update-baseline --junit F. */
static int args_check(args_state *s, cli_opts *o, mp_status *st) {
  const char *v = NULL;
  int r;
  if ((r = args_match(s, "--budget", true, &v))) {
    o->has_budget = true;
    if (r > 0) *st = mp_parse_size(v, &o->budget, s->err);
  } else if ((r = args_match(s, "--baseline", true, &v))) {
    o->baseline = v;
  } else if ((r = args_match(s, "--baseline-dir", true, &v))) {
    o->baseline_dir = v;
  } else if ((r = args_match(s, "--tolerance", true, &v))) {
    o->has_tolerance = true;
    if (r > 0) *st = mp_check_parse_tolerance(v, &o->tolerance_ppm, s->err);
  } else if ((r = args_match(s, "--update-baseline", false, &v))) {
    o->update_baseline = true;
  } else if ((r = args_match(s, "--junit", true, &v))) {
    o->junit = v;
  }
  if (*st != MP_OK) mp_error_prefix(s->err, "mplan %s", s->cmd);
  return r;
}

/* mplan verify and compile: poison mode, red zones, injection, target. */
static int args_verify(args_state *s, cli_opts *o, mp_status *st) {
  const char *v = NULL;
  int r;
  int64_t n;
  if ((r = args_match(s, "--poison", false, &v))) {
    o->poison = true;
  } else if ((r = args_match(s, "--paranoid", false, &v))) {
    o->paranoid = true;
  } else if ((r = args_match(s, "--fail-fast", false, &v))) {
    o->fail_fast = true;
  } else if ((r = args_match(s, "--redzone", true, &v))) {
    /* Sizes as everywhere (4096, 64KiB, 1.5GiB; common/units.c). */
    size_t b = 0;
    mp_error e;
    if (r > 0 && (mp_parse_size(v, &b, &e) != MP_OK || b > 65536)) {
      *st = mp_error_set(s->err, MP_ERR_BAD_INPUT,
                         "mplan %s: --redzone '%s': expected bytes in "
                         "[0, 65536] (such as 64 or 4KiB)",
                         s->cmd, v);
    }
    if (r > 0) o->redzone = b;
  } else if ((r = args_match(s, "--max-bytes", true, &v))) {
    size_t b = 0;
    mp_error e;
    if (r > 0 && (mp_parse_size(v, &b, &e) != MP_OK || b < 1)) {
      *st = mp_error_set(s->err, MP_ERR_BAD_INPUT,
                         "mplan %s: --max-bytes '%s': expected bytes >= 1 "
                         "(such as 2000000000 or 4GiB)",
                         s->cmd, v);
    }
    if (r > 0) o->max_bytes = b;
  } else if ((r = args_match(s, "--max-ops", true, &v))) {
    if (r > 0 && (!mp_parse_i64(v, &n) || n < 1)) {
      *st = mp_error_set(s->err, MP_ERR_BAD_INPUT,
                         "mplan %s: --max-ops '%s': expected an integer >= 1 "
                         "(ops each run may execute)",
                         s->cmd, v);
    }
    if (r > 0) o->max_ops = (uint64_t)n;
  } else if ((r = args_match(s, "--inject", true, &v))) {
    o->inject = v;
  } else if ((r = args_match(s, "--target", true, &v))) {
    if (r > 0 && strcmp(v, "host") != 0 && strcmp(v, "rv64") != 0) {
      *st = mp_error_set(s->err, MP_ERR_BAD_INPUT,
                         "mplan %s: --target '%s': expected host or rv64",
                         s->cmd, v);
    }
    o->target = v;
  } else if ((r = args_match(s, "--vlen", true, &v))) {
    if (r > 0 && (!mp_parse_i64(v, &n) || (n != 128 && n != 256 && n != 512))) {
      *st = mp_error_set(s->err, MP_ERR_BAD_INPUT,
                         "mplan %s: --vlen '%s': expected 128, 256 or 512",
                         s->cmd, v);
    }
    if (r > 0) o->vlen = (size_t)n;
  } else if ((r = args_match(s, "--seed", true, &v))) {
    if (r > 0 && (!mp_parse_i64(v, &n) || n < 0)) {
      *st = mp_error_set(s->err, MP_ERR_BAD_INPUT,
                         "mplan %s: --seed '%s': expected an integer >= 0",
                         s->cmd, v);
    }
    if (r > 0) o->seed = (uint64_t)n;
  }
  return r;
}

static int args_one(args_state *s, unsigned flags, cli_opts *o, mp_status *st) {
  const char *v = NULL;
  int r = 0;
  if ((flags & CLI_F_OUTPUT) && ((r = args_match(s, "-o", true, &v)) ||
                                 (r = args_match(s, "--output", true, &v)))) {
    o->output = v;
  } else if ((flags & CLI_F_JSON) && (r = args_match(s, "--json", false, &v))) {
    o->json = true;
  } else if (flags & CLI_F_PLANNING && (r = args_planning(s, o, st))) {
  } else if (flags & CLI_F_REPORT && (r = args_report(s, o, st))) {
  } else if (flags & CLI_F_FILES && (r = args_files(s, o, st))) {
  } else if (flags & CLI_F_CHECK && (r = args_check(s, o, st))) {
  } else if ((flags & CLI_F_MARKDOWN) &&
             (r = args_match(s, "--markdown", true, &v))) {
    o->markdown = v;
  } else if ((flags & CLI_F_WHAT_IF) &&
             (r = args_match(s, "--what-if", false, &v))) {
    o->what_if = true;
  } else if (flags & CLI_F_VERIFY && (r = args_verify(s, o, st))) {
  } else if ((flags & CLI_F_PLAN_OUT) &&
             (r = args_match(s, "--plan", true, &v))) {
    o->plan_out = v;
  }
  return r;
}

mp_status cli_parse(int argc, char **argv, int first, const char *cmd,
                    unsigned flags, cli_opts *o, mp_error *err) {
  args_state s = {argc, argv, first, cmd, err};
  memset(o, 0, sizeof *o);
  o->cmd = cmd;
  for (; s.i < argc; s.i++) {
    const char *a = argv[s.i];
    mp_status st = MP_OK;
    if (a[0] == '-' && a[1] != '\0') {
      int r = args_one(&s, flags, o, &st);
      if (r < 0) return MP_ERR_BAD_INPUT;
      if (st != MP_OK) return st;
      if (r == 0) {
        return mp_error_set(err, MP_ERR_BAD_INPUT,
                            "mplan %s: unknown option '%s' (see mplan %s "
                            "--help)",
                            cmd, a, cmd);
      }
    } else if (flags & CLI_F_MODELS) {
      if (o->n_models == CLI_MAX_MODELS) {
        return mp_error_set(err, MP_ERR_BAD_INPUT,
                            "mplan %s: more than %d models in one call", cmd,
                            CLI_MAX_MODELS);
      }
      o->models[o->n_models++] = a;
      if (!o->model) o->model = a;
    } else if (o->model) {
      return mp_error_set(err, MP_ERR_BAD_INPUT,
                          "mplan %s: unexpected argument '%s' (one model "
                          "file only)",
                          cmd, a);
    } else {
      o->model = a;
    }
  }
  if (!o->model) {
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "mplan %s: missing the model file (see mplan %s "
                        "--help)",
                        cmd, cmd);
  }
  if (o->c_header_weights && !o->c_header) {
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "mplan %s: --c-header-weights puts the weights into "
                        "the header of --c-header F.h, which is missing",
                        cmd);
  }
  return MP_OK;
}
