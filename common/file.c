/*
 * file.c -- whole-file reads and atomic writes.
 *
 * Invariants:
 *   1. A read either returns the whole file or fails; never a prefix.
 *   2. A write either replaces the target completely or leaves it (and the
 *      directory) as it was: the temporary is removed on every failure path.
 *   3. A group write renames nothing until every temporary is complete.
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

/* Writes data to path's temporary (path + ".tmp~") into tmp. */
static mp_status file_write_tmp(const char *path, const void *data, size_t len,
                                char *tmp, size_t cap, mp_error *err) {
  int k = snprintf(tmp, cap, "%s.tmp~", path);
  if (k < 0 || (size_t)k >= cap) {
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
  if (!ok) {
    remove(tmp);
    return mp_error_set(err, MP_ERR_IO, "%s: cannot write: %s", path,
                        strerror(saved));
  }
  return MP_OK;
}

mp_status mp_file_write(const char *path, const void *data, size_t len,
                        mp_error *err) {
  mp_file_out one = {path, data, len};
  return mp_file_write_many(&one, 1, err);
}

mp_status mp_file_write_many(const mp_file_out *files, size_t n,
                             mp_error *err) {
  char tmp[4096];
  size_t done = 0;
  mp_status st = MP_OK;
  for (; done < n && st == MP_OK; done++) {
    st = file_write_tmp(files[done].path, files[done].data, files[done].len,
                        tmp, sizeof tmp, err);
  }
  if (st != MP_OK) done--; /* the failed one removed its own temporary */
  for (size_t i = 0; i < n && i < done; i++) {
    snprintf(tmp, sizeof tmp, "%s.tmp~", files[i].path);
    if (st != MP_OK) {
      remove(tmp);
    } else if (rename(tmp, files[i].path) != 0) {
      st = mp_error_set(err, MP_ERR_IO, "%s: cannot write: %s", files[i].path,
                        strerror(errno));
      remove(tmp);
      for (size_t j = i + 1; j < done; j++) {
        snprintf(tmp, sizeof tmp, "%s.tmp~", files[j].path);
        remove(tmp);
      }
      break;
    }
  }
  return st;
}
