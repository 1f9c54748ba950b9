/*
 * main.c -- the mplan command: dispatch to subcommands.
 *
 * Only cli/ prints. Exit status: 0 success, 1 a check or validation
 * failed, 2 usage or input error.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const char main_usage[] =
    "mplan " MP_VERSION
    " -- plan, prove and explain the memory of inference graphs\n"
    "\n"
    "usage: mplan COMMAND [options]\n"
    "\n"
    "commands:\n"
    "  plan MODEL      plan the arena, prove it safe, print the summary\n"
    "                  (-o PLAN.json writes the plan, --json prints it)\n"
    "  explain MODEL   the peak explanation and the ASCII memory map\n"
    "  validate PLAN   re-prove a plan file: exit 0 valid, 1 invalid\n"
    "  report MODEL    write report files: --html --sqlite --dot --svg\n"
    "                  --lifetimes --c-header (also accepted by plan)\n"
    "  bench DIR|FILE  every strategy on every file: arena, ratio to the\n"
    "                  lower bound and the best known, time\n"
    "  check MODEL...  the CI gate: arena vs --budget and vs a baseline\n"
    "                  (+-tolerance, both ways); exit 1 when one fails\n"
    "  diff A B        what changed between two plans, baselines, runs of\n"
    "                  a report database (DB:ID) or models, and why\n"
    "  compile MODEL   write the program bundle (-o BUNDLE.mpk)\n"
    "  verify MODEL    run the plan with real kernels in poison mode:\n"
    "                  exit 0 clean, 1 a violation\n"
    "\n"
    "MODEL is an ONNX model, graph JSON (graph/1), a pipeline (pipeline/1),\n"
    "a lifetime table (lifetimes/1) or a minimalloc CSV (id,lower,upper,\n"
    "size), detected by content.\n"
    "mplan COMMAND --help shows a command's options.\n";

typedef struct main_cmd {
  const char *name;
  int (*run)(int argc, char **argv);
} main_cmd;

/* One command a line, so that adding one is a one-line change. */
/* clang-format off */
static const main_cmd main_cmds[] = {
    {"plan", cli_plan},
    {"explain", cli_explain},
    {"validate", cli_validate},
    {"report", cli_report},
    {"bench", cli_bench},
    {"check", cli_check},
    {"diff", cli_diff},
    {"compile", cli_compile},
    {"verify", cli_verify},
};
/* clang-format on */

int main(int argc, char **argv) {
  if (argc < 2 || strcmp(argv[1], "--help") == 0 ||
      strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
    if (argc < 2) {
      fputs(main_usage, stderr);
      return 2;
    }
    return cli_print(main_usage) ? 0 : 2;
  }
  if (strcmp(argv[1], "--version") == 0) {
    return cli_print("mplan " MP_VERSION "\n") ? 0 : 2;
  }
  for (size_t i = 0; i < sizeof main_cmds / sizeof *main_cmds; i++) {
    if (strcmp(argv[1], main_cmds[i].name) == 0) {
      cli_command_record(argc, argv);
      int rc = main_cmds[i].run(argc, argv);
      cli_warnings_end(rc != 2);
      cli_command_end();
      return rc;
    }
  }
  fprintf(stderr, "mplan: error: unknown command '%s' (see mplan --help)\n",
          argv[1]);
  return 2;
}
