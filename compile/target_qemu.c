/*
 * target_qemu.c -- the rv64 target of `mplan verify`: the riscv64
 * mplan-runner (cross-built with the RVV kernels) run under qemu-riscv64
 * with the vector extension at a chosen VLEN (mplan/verify.h).
 *
 * The runner protocol's bytes go through a private temporary folder: the
 * bundle and the inputs are written there, the runner writes its outputs
 * and events there, and the folder is removed before returning, whatever
 * happened.
 *
 * Invariants:
 *   1. A missing QEMU or runner is found before anything runs, and the
 *      error says how to install or build it.
 *   2. The runner's exit status 0 (clean) and 1 (events) are runs; 2 is
 *      its error, reported with its first line of stderr; anything else
 *      (a signal, QEMU's own failure) is an error naming the status.
 *   3. Nothing is printed: the runner's stderr goes to a file.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mplan/file.h"
#include "mplan/verify.h"

#ifndef MPLAN_RV64_RUNNER_DEFAULT
#define MPLAN_RV64_RUNNER_DEFAULT ""
#endif

/* prog as given when it has a slash, else its first match on PATH. */
static bool tq_find(const char *prog, char *out, size_t cap) {
  if (strchr(prog, '/')) {
    snprintf(out, cap, "%s", prog);
    return access(out, X_OK) == 0;
  }
  const char *path = getenv("PATH");
  if (!path) path = "/usr/bin:/bin";
  while (*path) {
    size_t n = strcspn(path, ":");
    snprintf(out, cap, "%.*s/%s", (int)n, path, prog);
    if (n && access(out, X_OK) == 0) return true;
    path += n + (path[n] == ':');
  }
  return false;
}

mp_status mp_qemu_target_init(mp_qemu_target *t, unsigned vlen, mp_error *err) {
  memset(t, 0, sizeof *t);
  const char *q = getenv("MPLAN_QEMU");
  const char *r = getenv("MPLAN_RV64_RUNNER");
  if (!q || !*q) q = "qemu-riscv64";
  if (!r || !*r) r = MPLAN_RV64_RUNNER_DEFAULT;
  if (vlen < 128 || vlen > 1024 || (vlen & (vlen - 1))) {
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "--vlen %u: expected a power of two from 128 to 1024",
                        vlen);
  }
  if (!tq_find(q, t->qemu, sizeof t->qemu)) {
    return mp_error_set(err, MP_ERR_UNSUPPORTED,
                        "--target rv64: %s not found (install QEMU user-mode "
                        "emulation: apt-get install qemu-user; or set "
                        "MPLAN_QEMU)",
                        q);
  }
  if (!*r || access(r, X_OK) != 0) {
    return mp_error_set(
        err, MP_ERR_UNSUPPORTED,
        "--target rv64: the riscv64 runner%s%s%s is not built (install the "
        "cross toolchain: apt-get install clang-19 lld-19 "
        "gcc-riscv64-linux-gnu libc6-dev-riscv64-cross, then reconfigure "
        "with -DMPLAN_RV64=ON and rebuild; or set MPLAN_RV64_RUNNER)",
        *r ? " '" : "", r, *r ? "'" : "");
  }
  snprintf(t->runner, sizeof t->runner, "%s", r);
  t->vlen = vlen;
  return MP_OK;
}

/* Runs argv with stderr to errpath; the exit status, or -1. */
static int tq_spawn(char *const *argv, const char *errpath) {
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    int fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int nul = open("/dev/null", O_RDWR);
    if (fd >= 0) dup2(fd, 2);
    if (nul >= 0) {
      dup2(nul, 0);
      dup2(nul, 1);
    }
    execv(argv[0], argv);
    _exit(127);
  }
  int status;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

/* execv takes char *const[]; it does not write the strings. */
static char *tq_s(const char *s) {
  return (char *)(uintptr_t)s;
}

typedef struct tq_files {
  char dir[64], bundle[96], in[96], out[96], ev[96], err[96], used[96];
} tq_files;

static void tq_cleanup(const tq_files *f) {
  const char *const all[] = {f->bundle, f->in, f->out, f->ev, f->err, f->used};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) unlink(all[i]);
  rmdir(f->dir);
}

/* The runner's own complaint: its first stderr line, if any. */
static mp_status tq_failed(const char *source, const tq_files *f, int rc,
                           mp_error *err) {
  char *text = NULL;
  size_t len = 0;
  mp_error ignore = {0};
  if (mp_file_read(f->err, NULL, &text, &len, &ignore) == MP_OK && len) {
    char *nl = memchr(text, '\n', len);
    if (nl) *nl = '\0';
    mp_status st =
        mp_error_set(err, rc == 2 ? MP_ERR_BAD_INPUT : MP_ERR_INTERNAL,
                     "%s: rv64 runner: %.400s", source, text);
    free(text);
    return st;
  }
  free(text);
  return mp_error_set(err, MP_ERR_INTERNAL,
                      "%s: rv64 runner under qemu-riscv64 exited with status "
                      "%d",
                      source, rc);
}

static mp_status tq_read(const char *path, mp_buf *into, mp_error *err) {
  char *data = NULL;
  size_t len = 0;
  mp_status st = mp_file_read(path, NULL, &data, &len, err);
  if (st == MP_OK) {
    mp_buf_append(into, data, len);
    st = mp_buf_status(into, path, err);
  }
  free(data);
  return st;
}

mp_status mp_target_qemu(void *ud, const char *source, const mp_buf *bundle,
                         const void *inputs, size_t in_len,
                         const mp_runner_opts *o, mp_buf *outputs,
                         mp_buf *events, mp_error *err) {
  const mp_qemu_target *t = ud;
  tq_files f;
  const char *tmp = getenv("TMPDIR");
  snprintf(f.dir, sizeof f.dir, "%.40s/mplan-rv64-XXXXXX",
           tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(f.dir)) {
    return mp_error_set(err, MP_ERR_IO,
                        "%s: cannot create a temporary folder "
                        "in %s: %s",
                        source, tmp && *tmp ? tmp : "/tmp", strerror(errno));
  }
  snprintf(f.bundle, sizeof f.bundle, "%s/b.mpk", f.dir);
  snprintf(f.in, sizeof f.in, "%s/in.mpt", f.dir);
  snprintf(f.out, sizeof f.out, "%s/out.mpt", f.dir);
  snprintf(f.ev, sizeof f.ev, "%s/ev.tsv", f.dir);
  snprintf(f.err, sizeof f.err, "%s/err.txt", f.dir);
  snprintf(f.used, sizeof f.used, "%s/used.mpt", f.dir);
  char cpu[64], seed[32];
  snprintf(cpu, sizeof cpu, "rv64,v=true,vlen=%u,vext_spec=v1.0", t->vlen);
  snprintf(seed, sizeof seed, "%llu", (unsigned long long)o->seed);
  char maxops[24];
  snprintf(maxops, sizeof maxops, "%llu", (unsigned long long)o->max_ops);
  char *argv[28];
  int n = 0;
  argv[n++] = tq_s(t->qemu);
  argv[n++] = tq_s("-cpu");
  argv[n++] = cpu;
  argv[n++] = tq_s(t->runner);
  argv[n++] = f.bundle;
  argv[n++] = tq_s("--outputs");
  argv[n++] = f.out;
  argv[n++] = tq_s("--events");
  argv[n++] = f.ev;
  argv[n++] = tq_s("--seed");
  argv[n++] = seed;
  if (inputs) {
    argv[n++] = tq_s("--inputs");
    argv[n++] = f.in;
  }
  if (o->poison) argv[n++] = tq_s("--poison");
  if (o->paranoid) argv[n++] = tq_s("--paranoid");
  if (o->fail_fast) argv[n++] = tq_s("--fail-fast");
  if (o->oob_op) {
    argv[n++] = tq_s("--oob");
    argv[n++] = tq_s(o->oob_op);
  }
  if (o->max_ops) {
    argv[n++] = tq_s("--max-ops");
    argv[n++] = maxops;
  }
  if (o->inputs_used) {
    argv[n++] = tq_s("--write-inputs");
    argv[n++] = f.used;
  }
  argv[n] = NULL;
  mp_status st = mp_file_write(f.bundle, bundle->data, bundle->len, err);
  if (st == MP_OK && inputs) st = mp_file_write(f.in, inputs, in_len, err);
  int rc = st == MP_OK ? tq_spawn(argv, f.err) : 0;
  if (st == MP_OK && rc != 0 && rc != 1) st = tq_failed(source, &f, rc, err);
  if (st == MP_OK && outputs) st = tq_read(f.out, outputs, err);
  if (st == MP_OK && events) st = tq_read(f.ev, events, err);
  if (st == MP_OK && o->inputs_used) st = tq_read(f.used, o->inputs_used, err);
  tq_cleanup(&f);
  return st;
}
