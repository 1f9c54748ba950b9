/*
 * cli.h -- the mplan command: shared option parsing and output helpers.
 * Only cli/ talks to the terminal.
 */
#ifndef MPLAN_CLI_H
#define MPLAN_CLI_H

#include "mplan/buf.h"
#include "mplan/model.h"
#include "mplan/report.h"
#include "mplan/snapshot.h"

#define CLI_MAX_DIMS 64
#define CLI_MAX_SHAPES 256
#define CLI_MAX_MODELS 1024

/* Which flags a command accepts. */
enum {
  CLI_F_OUTPUT = 1u << 0,    /* -o FILE */
  CLI_F_PLANNING = 1u << 1,  /* --backend --strategy --budget-ms --order
                                --order-budget-ms --dim --shape --value
                                --inputs --passes */
  CLI_F_JSON = 1u << 2,      /* --json */
  CLI_F_REPORT = 1u << 3,    /* --top --map-width --map-rows --no-map */
  CLI_F_FILES = 1u << 4,     /* --html --sqlite --dot --svg --lifetimes
                                --c-header */
  CLI_F_MODELS = 1u << 5,    /* several positional arguments (models[]) */
  CLI_F_CHECK = 1u << 6,     /* --budget --baseline --baseline-dir
                                --tolerance --update-baseline --junit */
  CLI_F_MARKDOWN = 1u << 7,  /* --markdown FILE */
  CLI_F_WHAT_IF = 1u << 9,   /* --what-if without the report files */
  CLI_F_PLAN_OUT = 1u << 10, /* --plan FILE (mplan compile) */
  CLI_F_VERIFY = 1u << 8     /* --poison --paranoid --redzone --inject
                             --target --vlen --seed --fail-fast */
};

typedef struct cli_opts {
  const char *cmd;
  const char *model; /* the one positional argument */
  const char *output;
  const char *backend;
  const char *strategy;
  double budget_ms;
  uint64_t budget_work; /* --budget-work: the exact search's work */
  mp_order_kind order;
  double order_budget_ms; /* --order-budget-ms: memory order search */
  uint64_t order_work;    /* --order-work: its work budget; 0: default */
  size_t order_states;    /* --order-states: its states per level */
  uint32_t passes;        /* --passes: mask of mp_pass_id bits */
  bool inputs_as_activations;
  mp_dim_binding dims[CLI_MAX_DIMS];
  size_t n_dims;
  mp_dim_binding caps[CLI_MAX_DIMS]; /* --dim NAME<=MAX */
  size_t n_caps;
  mp_shape_binding shapes[CLI_MAX_SHAPES];
  size_t n_shapes;
  mp_value_binding values[CLI_MAX_SHAPES];
  size_t n_values;
  bool json;
  bool no_map;
  bool no_what_if; /* explain: no what-if section */
  bool what_if;    /* plan, report: --what-if into the files */
  /* The what-if rows for the report files (cli_what_if_run). */
  const mp_report_what_if *what_if_rows;
  size_t n_what_if;
  mp_report_opts report;
  /* Report files (CLI_F_FILES); NULL when not asked for. */
  const char *html;
  const char *sqlite;
  const char *dot;
  const char *svg;
  const char *lifetimes; /* .yaml/.yml: YAML, .json: JSON */
  const char *c_header;  /* .h: the plan as a C header */
  bool c_header_weights; /* ... with every weight's bytes */
  /* Positional arguments with CLI_F_MODELS (model is the first). */
  const char *models[CLI_MAX_MODELS];
  size_t n_models;
  /* mplan check (CLI_F_CHECK) and --markdown (CLI_F_MARKDOWN). */
  bool has_budget;
  size_t budget;
  const char *baseline;
  const char *baseline_dir;
  bool has_tolerance;
  uint32_t tolerance_ppm;
  bool update_baseline;
  const char *junit;
  const char *markdown;
  const char *plan_out; /* --plan FILE: the plan/1 JSON of the bundle */
  /* mplan verify / compile (CLI_F_VERIFY) */
  bool poison, paranoid, fail_fast;
  size_t redzone;
  size_t max_bytes;   /* verify --max-bytes, 0: the default */
  uint64_t max_ops;   /* verify --max-ops, 0: no limit */
  const char *inject; /* SPEC, parsed by mp_inject_parse */
  const char *target; /* host (default) or rv64 */
  size_t vlen;
  uint64_t seed;
  /* A verification's events for the report files (cmd_verify sets them). */
  bool verified;
  const mp_report_event *events;
  size_t n_events;
  const char *target_arch, *target_kernels;
  unsigned target_vlen;
  const mp_report_scalar_op *scalar_ops;
  size_t n_scalar_ops;
} cli_opts;

/* ---- what_if.c: the lower bound under the settings not asked for ---- */

#define CLI_WHAT_IF_MAX 7 /* 5 settings of order and passes, 2 strategies */

typedef struct cli_what_if {
  mp_report_what_if rows[CLI_WHAT_IF_MAX];
  mp_model *models[CLI_WHAT_IF_MAX]; /* the rows borrow from them */
  char passes[CLI_WHAT_IF_MAX][128];
  char setting[CLI_WHAT_IF_MAX][160];
  size_t n;
} cli_what_if;

/* Plans m's model again under each setting o did not ask for: the memory
 * order, --passes all, both, all,tile, and all,tile in the memory order
 * (each memory search at most 2 s); and when plan's activation arena is
 * above the lower bound, places m again with auto and with the exact
 * search (2 s). Nothing for a plan file. Release with
 * cli_what_if_release (also after an error). */
mp_status cli_what_if_run(const cli_opts *o, const mp_model *m,
                          const mp_plan *plan, cli_what_if *w, mp_error *err);
void cli_what_if_release(cli_what_if *w);

/* A work budget (--budget-work, --order-work): an integer >= 1, else
 * one line naming cmd, the flag and the value. */
mp_status cli_work_value(const char *cmd, const char *flag, const char *v,
                         uint64_t *out, mp_error *err);

/* Parses argv[first..argc) for command cmd accepting the given flags.
 * Returns MP_OK, or MP_ERR_BAD_INPUT with a usage message. */
mp_status cli_parse(int argc, char **argv, int first, const char *cmd,
                    unsigned flags, cli_opts *o, mp_error *err);

/* Loads o->model (reading o->backend first when given). */
mp_status cli_load(const cli_opts *o, bool allow_plan, mp_model **model,
                   mp_error *err);

/* Solves a loaded model, or adopts and validates a plan file's stored
 * placements. Owned result in *plan. */
mp_status cli_solve(const cli_opts *o, const mp_model *m, mp_plan **plan,
                    mp_error *err);

/* Loads the model and solves it (or, for plan files, adopts and validates
 * the stored placements). Owned results in *model and *plan. */
mp_status cli_load_and_plan(const cli_opts *o, bool allow_plan,
                            mp_model **model, mp_plan **plan, mp_error *err);

/* Keeps the model's warnings, one "mplan: warning: ..." line each, for
 * cli_warnings_end. */
void cli_warnings(const mp_model *m);

/* Prints the kept warnings on stderr (print) or drops them: a failed
 * command shows its one error line only. */
void cli_warnings_end(bool print);

/* Records argv[1..argc) as the command line, for the report files'
 * "options"; called before any parsing. cli_command_end frees it. */
void cli_command_record(int argc, char **argv);
const mp_buf *cli_command_line(void);
void cli_command_end(void);

/* Prints "mplan: KIND: MSG" as one line on stderr, control characters
 * (from names in the input) escaped as \xNN. */
void cli_message(const char *kind, const char *msg);

/* Prints "mplan: error: MESSAGE" on stderr and returns the exit status for
 * st: 1 for a failed check, 2 for everything else. */
int cli_fail(mp_status st, const mp_error *err);

/* true when argv[2..] holds -h or --help. */
bool cli_wants_help(int argc, char **argv);

/* Writes text to stdout in full (returns false on a write error). */
bool cli_print(const char *text);

/* true when o asks for any report file. */
bool cli_wants_files(const cli_opts *o);

/* Renders every report file o asks for, appends the run to the SQLite
 * database, and writes the files -- with o->output holding plan_json when
 * o->output is set -- all or nothing: nothing is written unless
 * everything rendered, and the run is committed only after the files are
 * in place. Appends "wrote F" lines to log (when not NULL). The command
 * line (cli_command_record) is recorded as the run's options. */
mp_status cli_write_files(const cli_opts *o, const mp_model *m,
                          const mp_plan *plan, const mp_buf *plan_json,
                          mp_buf *log, mp_error *err);

int cli_plan(int argc, char **argv);
int cli_bench(int argc, char **argv);
int cli_report(int argc, char **argv);
int cli_validate(int argc, char **argv);
int cli_explain(int argc, char **argv);
int cli_check(int argc, char **argv);
int cli_diff(int argc, char **argv);

/* The planning options of o, as baselines record them. */
mp_run_options cli_run_options(const cli_opts *o);
int cli_compile(int argc, char **argv);
int cli_verify(int argc, char **argv);

#endif /* MPLAN_CLI_H */
