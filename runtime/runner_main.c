/*
 * runner_main.c -- the mplan-runner executable: the runner protocol
 * (mplan/runner.h) on files, libc only, for the host and for riscv64.
 *
 *   mplan-runner BUNDLE [--inputs F] [--outputs F] [--events F]
 *                [--poison] [--paranoid] [--fail-fast] [--oob OP]
 *                [--seed N] [--write-inputs F] [--max-ops N]
 *
 *   mplan-runner --batch LIST [--poison] [--paranoid] [--fail-fast]
 *                [--seed N] [--max-ops N]
 *
 * --write-inputs writes the inputs the run was fed (tensors/1), so that
 * another runtime (ONNX Runtime in the comparison test) gets the very
 * same seeded values.
 * Invariants:
 *   1. Exit status: 0 a clean run, 1 the run recorded events, 2 an error
 *      (one line on stderr).
 *   2. Files are written atomically (mp_file_write) and only after a
 *      complete run; events go to --events or stdout.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mplan/file.h"
#include "mplan/runner.h"

static const char usage[] =
    "usage: mplan-runner BUNDLE [--inputs F] [--outputs F] [--events F]\n"
    "                    [--poison] [--paranoid] [--fail-fast] [--oob OP]\n"
    "                    [--seed N] [--write-inputs F] [--max-ops N]\n"
    "       mplan-runner --batch LIST [--poison] [--paranoid] [--fail-fast]\n"
    "                    [--seed N] [--max-ops N]\n";

static int rm_fail(const mp_error *err) {
  fprintf(stderr, "mplan-runner: error: %s\n", err->msg);
  return 2;
}

/* One run on files: the bundle and inputs read, outputs, events and the
 * inputs fed written (events to stdout without evp). */
static mp_status rm_run(const char *bundle, const char *in, const char *outp,
                        const char *evp, const char *inw, mp_runner_opts *op,
                        mp_runner_result *res, mp_error *err) {
  mp_runner_opts o = *op;
  char *bdata = NULL, *idata = NULL;
  size_t blen = 0, ilen = 0;
  mp_buf outs, evs, ins;
  mp_buf_init(&outs, NULL);
  mp_buf_init(&evs, NULL);
  mp_buf_init(&ins, NULL);
  if (inw) o.inputs_used = &ins;
  mp_status st = mp_file_read(bundle, NULL, &bdata, &blen, err);
  if (st == MP_OK && in) st = mp_file_read(in, NULL, &idata, &ilen, err);
  if (st == MP_OK) {
    st = mp_runner_run(bundle, bdata, blen, idata, ilen, &o, NULL,
                       outp ? &outs : NULL, &evs, res, err);
  }
  if (st == MP_OK && outp) st = mp_file_write(outp, outs.data, outs.len, err);
  if (st == MP_OK && evp) st = mp_file_write(evp, evs.data, evs.len, err);
  if (st == MP_OK && inw) st = mp_file_write(inw, ins.data, ins.len, err);
  if (st == MP_OK && !evp) fputs(mp_buf_str(&evs), stdout);
  free(bdata);
  free(idata);
  mp_buf_free(&outs);
  mp_buf_free(&evs);
  mp_buf_free(&ins);
  return st;
}

/* --batch LIST: one job a line, "BUNDLE INPUTS OUTPUTS EVENTS" separated
 * by tabs (INPUTS "-": seeded), each reported on stdout as "job K ok",
 * "job K events N" or "job K error MESSAGE". One process for many small
 * bundles: what QEMU start-up would otherwise cost per bundle. */
static int rm_batch(const char *list, mp_runner_opts *o) {
  char *text = NULL;
  size_t len = 0;
  mp_error err = {0};
  if (mp_file_read(list, NULL, &text, &len, &err) != MP_OK) {
    return rm_fail(&err);
  }
  size_t k = 0;
  for (char *line = text; *line; k++) {
    char *nl = strchr(line, '\n'), *f[4] = {line, NULL, NULL, NULL};
    if (nl) *nl = '\0';
    for (int i = 1; i < 4 && f[i - 1]; i++) {
      char *t = strchr(f[i - 1], '\t');
      if (t) *t = '\0';
      f[i] = t ? t + 1 : NULL;
    }
    mp_runner_result res = {0, 0};
    mp_error e = {0};
    mp_status st =
        f[3] ? rm_run(f[0], strcmp(f[1], "-") ? f[1] : NULL, f[2], f[3], NULL,
                      o, &res, &e)
             : mp_error_set(&e, MP_ERR_BAD_INPUT, "%s: bad job line", list);
    if (st != MP_OK) {
      printf("job %zu error %s\n", k, e.msg);
    } else if (res.events) {
      printf("job %zu events %zu\n", k, res.events);
    } else {
      printf("job %zu ok\n", k);
    }
    if (!nl) break;
    line = nl + 1;
  }
  free(text);
  return 0;
}

int main(int argc, char **argv) {
  const char *bundle = NULL, *in = NULL, *outp = NULL, *evp = NULL, *inw = NULL;
  const char *batch = NULL;
  mp_runner_opts o = {0};
  mp_error err = {0};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    bool more = i + 1 < argc;
    if (strcmp(a, "--poison") == 0) {
      o.poison = true;
    } else if (strcmp(a, "--paranoid") == 0) {
      o.paranoid = true;
    } else if (strcmp(a, "--fail-fast") == 0) {
      o.fail_fast = true;
    } else if (strcmp(a, "--inputs") == 0 && more) {
      in = argv[++i];
    } else if (strcmp(a, "--outputs") == 0 && more) {
      outp = argv[++i];
    } else if (strcmp(a, "--events") == 0 && more) {
      evp = argv[++i];
    } else if (strcmp(a, "--batch") == 0 && more) {
      batch = argv[++i];
    } else if (strcmp(a, "--write-inputs") == 0 && more) {
      inw = argv[++i];
    } else if (strcmp(a, "--oob") == 0 && more) {
      o.oob_op = argv[++i];
    } else if (strcmp(a, "--seed") == 0 && more) {
      o.seed = strtoull(argv[++i], NULL, 10);
    } else if (strcmp(a, "--max-ops") == 0 && more) {
      o.max_ops = strtoull(argv[++i], NULL, 10);
    } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      fputs(usage, stdout);
      return 0;
    } else if (a[0] != '-' && !bundle) {
      bundle = a;
    } else {
      fprintf(stderr, "mplan-runner: error: unexpected argument '%s'\n%s", a,
              usage);
      return 2;
    }
  }
  if (batch && !bundle) return rm_batch(batch, &o);
  if (!bundle) {
    fputs(usage, stderr);
    return 2;
  }
  mp_runner_result res = {0, 0};
  mp_status st = rm_run(bundle, in, outp, evp, inw, &o, &res, &err);
  if (st != MP_OK) return rm_fail(&err);
  return res.events ? 1 : 0;
}
