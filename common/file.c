/*
 * file.c -- whole-file reads and atomic writes.
 *
 * Invariants:
 *   1. A read either returns the whole file or fails; never a prefix.
 *   2. A write either replaces the target completely or leaves it (and the
 *      directory) as it was: the temporary is removed on every failure path.
 */
#include "mplan/file.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

mp_status mp_file_read(const char *path, const mp_alloc *a, char **data,
                       size_t *len, mp_error *err) {
  FILE *f = fopen(path, "rb");
  char *buf = NULL;
  size_t n = 0, cap = 0;
  mp_status st = MP_OK;
  if (!f) {
    return mp_error_set(err, MP_ERR_IO, "%s: cannot open: %s", path,
                        strerror(errno));
  }
  for (;;) {
    void *p = buf;
    st = mp_grow(a, &p, &cap, n + 65536 + 1, 1, path, err);
    if (st != MP_OK) break;
    buf = p;
    size_t got = fread(buf + n, 1, cap - n - 1, f);
    n += got;
    if (n > MP_FILE_MAX) {
      st = mp_error_set(err, MP_ERR_BAD_INPUT,
                        "%s: file is larger than %zu bytes", path, MP_FILE_MAX);
      break;
    }
    if (got == 0) {
      if (ferror(f)) {
        st = mp_error_set(err, MP_ERR_IO, "%s: read error: %s", path,
                          strerror(errno));
      }
      break;
    }
  }
  fclose(f);
  if (st != MP_OK) {
    mp_free(a, buf);
    return st;
  }
  buf[n] = '\0';
  *data = buf;
  *len = n;
  return MP_OK;
}

mp_status mp_file_write(const char *path, const void *data, size_t len,
                        mp_error *err) {
  char tmp[4096];
  int k = snprintf(tmp, sizeof tmp, "%s.tmp~", path);
  if (k < 0 || (size_t)k >= sizeof tmp) {
    return mp_error_set(err, MP_ERR_IO, "%s: path too long", path);
  }
  FILE *f = fopen(tmp, "wb");
  if (!f) {
    return mp_error_set(err, MP_ERR_IO, "%s: cannot create: %s", path,
                        strerror(errno));
  }
  bool ok = fwrite(data, 1, len, f) == len;
  int saved = errno;
  if (fclose(f) != 0 && ok) {
    ok = false;
    saved = errno;
  }
  if (ok && rename(tmp, path) != 0) {
    ok = false;
    saved = errno;
  }
  if (!ok) {
    remove(tmp);
    return mp_error_set(err, MP_ERR_IO, "%s: cannot write: %s", path,
                        strerror(saved));
  }
  return MP_OK;
}
