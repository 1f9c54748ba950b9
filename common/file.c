/*
 * file.c -- whole-file reads and atomic writes.
 *
 * Invariants:
 *   1. A read either returns the whole file or fails; never a prefix.
 *   2. A write either replaces the target completely or leaves it (and the
 *      directory) as it was: the temporary is removed on every failure path.
 *   3. A group write renames nothing until every target is checked (no
 *      folder, no two spellings of one file) and every temporary is
 *      complete; a rename failing after that is reported.
 *   4. A temporary is created with O_EXCL under a name of this process,
 *      so it never follows a planted link or collides with another run;
 *      a target that is a symbolic link is written through (the link
 *      stays), one that is a device or a pipe is written in place.
 */
#define _XOPEN_SOURCE 700 /* realpath, lstat */
#include "mplan/file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

mp_status mp_file_read_range(const char *path, uint64_t offset, size_t len,
                             const mp_alloc *a, void **out, mp_error *err) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    return mp_error_set(err, MP_ERR_IO, "%s: cannot open: %s", path,
                        strerror(errno));
  }
  struct stat sb;
  mp_status st = MP_OK;
  unsigned char *buf = NULL;
  if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
    st = mp_error_set(err, MP_ERR_BAD_INPUT, "%s: not a regular file", path);
  } else if ((uint64_t)sb.st_size < offset ||
             (uint64_t)sb.st_size - offset < (uint64_t)len) {
    st = mp_error_set(err, MP_ERR_BAD_INPUT,
                      "%s: ends at byte %llu, before the %zu bytes at "
                      "offset %llu do",
                      path, (unsigned long long)sb.st_size, len,
                      (unsigned long long)offset);
  } else if (out && !(buf = mp_malloc(a, len + 1))) {
    st = mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory", path);
  } else if (out && len &&
             (offset > (uint64_t)INT64_MAX ||
              fseeko(f, (off_t)offset, SEEK_SET) != 0 ||
              fread(buf, 1, len, f) != len)) {
    st = mp_error_set(err, MP_ERR_IO, "%s: read error at offset %llu", path,
                      (unsigned long long)offset);
  }
  fclose(f);
  if (st != MP_OK) {
    mp_free(a, buf);
  } else if (out) {
    *out = buf;
  }
  return st;
}

/* A target as mplan writes it: the file a symbolic link names (the link
 * stays), a regular file replaced by rename, or something else (a device,
 * a pipe) written in place. */
typedef struct file_target {
  char path[PATH_MAX];
  char tmp[PATH_MAX + 32];
  bool direct;
} file_target;

/* The absolute spelling of path: its folder resolved, then its name. */
static bool file_canonical(const char *path, char *out) {
  char dir[PATH_MAX];
  const char *slash = strrchr(path, '/');
  const char *base = slash ? slash + 1 : path;
  size_t dlen = slash ? (size_t)(slash - path) : 0;
  if (slash && dlen == 0) dlen = 1; /* "/name" */
  if (dlen >= sizeof dir) return false;
  memcpy(dir, slash ? path : ".", slash ? dlen : 1);
  dir[slash ? dlen : 1] = '\0';
  char real[PATH_MAX];
  if (!realpath(dir, real)) return false;
  int k = snprintf(out, PATH_MAX, "%s/%s", strcmp(real, "/") ? real : "", base);
  return k > 0 && k < PATH_MAX;
}

bool mp_file_same(const char *a, const char *b) {
  char ca[PATH_MAX], cb[PATH_MAX], ra[PATH_MAX], rb[PATH_MAX];
  const char *x = realpath(a, ra) ? ra : file_canonical(a, ca) ? ca : a;
  const char *y = realpath(b, rb) ? rb : file_canonical(b, cb) ? cb : b;
  return strcmp(x, y) == 0;
}

static mp_status file_target_of(const char *path, file_target *t,
                                mp_error *err) {
  struct stat st;
  t->direct = false;
  t->tmp[0] = '\0';
  if (strlen(path) >= sizeof t->path) {
    return mp_error_set(err, MP_ERR_IO, "%s: path too long", path);
  }
  strcpy(t->path, path);
  if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode) &&
      !realpath(path, t->path)) {
    /* a link to a file not there yet: create the file it names */
    char to[PATH_MAX];
    ssize_t k = readlink(path, to, sizeof to - 1);
    const char *slash = strrchr(path, '/');
    int dlen = slash ? (int)(slash - path) + 1 : 0;
    if (k <= 0 ||
        snprintf(t->path, sizeof t->path, "%.*s%.*s", to[0] == '/' ? 0 : dlen,
                 path, (int)k, to) >= (int)sizeof t->path) {
      return mp_error_set(err, MP_ERR_IO,
                          "%s: cannot write: unreadable symbolic link", path);
    }
  }
  if (stat(t->path, &st) == 0) {
    if (S_ISDIR(st.st_mode)) {
      return mp_error_set(err, MP_ERR_IO, "%s: cannot write: Is a directory",
                          path);
    }
    t->direct = !S_ISREG(st.st_mode);
  }
  return MP_OK;
}

static mp_status file_put(int fd, const char *path, const void *data,
                          size_t len, mp_error *err) {
  const char *p = data;
  while (len) {
    ssize_t k = write(fd, p, len);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) {
      int saved = k < 0 ? errno : EIO;
      close(fd);
      return mp_error_set(err, MP_ERR_IO, "%s: cannot write: %s", path,
                          strerror(saved));
    }
    p += k;
    len -= (size_t)k;
  }
  if (close(fd) != 0) {
    return mp_error_set(err, MP_ERR_IO, "%s: cannot write: %s", path,
                        strerror(errno));
  }
  return MP_OK;
}

/* Writes data to a new temporary beside t->path (O_EXCL: never through a
 * link or over another process's temporary). */
static mp_status file_write_tmp(const char *path, file_target *t,
                                const void *data, size_t len, mp_error *err) {
  static unsigned serial;
  int fd = -1;
  for (int tries = 0; fd < 0 && tries < 100; tries++) {
    snprintf(t->tmp, sizeof t->tmp, "%s.tmp~%ld.%u", t->path, (long)getpid(),
             serial++);
    fd = open(t->tmp, O_WRONLY | O_CREAT | O_EXCL, 0666);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) {
    int saved = errno;
    t->tmp[0] = '\0';
    return mp_error_set(err, MP_ERR_IO, "%s: cannot create: %s", path,
                        strerror(saved));
  }
  mp_status st = file_put(fd, path, data, len, err);
  if (st != MP_OK) {
    remove(t->tmp);
    t->tmp[0] = '\0';
  }
  return st;
}

mp_status mp_file_write(const char *path, const void *data, size_t len,
                        mp_error *err) {
  mp_file_out one = {path, data, len};
  return mp_file_write_many(&one, 1, err);
}

/* Invariant 3: every target is checked and every temporary complete before
 * the first rename; devices and pipes are written last of all, in place. */
mp_status mp_file_write_many(const mp_file_out *files, size_t n,
                             mp_error *err) {
  file_target *t = mp_calloc(NULL, n ? n : 1, sizeof *t);
  if (!t) return mp_error_set(err, MP_ERR_NOMEM, "out of memory");
  mp_status st = MP_OK;
  for (size_t i = 0; st == MP_OK && i < n; i++) {
    st = file_target_of(files[i].path, &t[i], err);
    for (size_t j = 0; st == MP_OK && j < i; j++) {
      if (mp_file_same(t[i].path, t[j].path)) {
        st = mp_error_set(err, MP_ERR_BAD_INPUT,
                          "%s: the same file as %s; give each output its own",
                          files[i].path, files[j].path);
      }
    }
  }
  for (size_t i = 0; st == MP_OK && i < n; i++) {
    if (!t[i].direct) {
      st = file_write_tmp(files[i].path, &t[i], files[i].data, files[i].len,
                          err);
    }
  }
  for (size_t i = 0; st == MP_OK && i < n; i++) {
    if (!t[i].direct) continue;
    int fd = open(t[i].path, O_WRONLY | O_TRUNC);
    st = fd < 0 ? mp_error_set(err, MP_ERR_IO, "%s: cannot write: %s",
                               files[i].path, strerror(errno))
                : file_put(fd, files[i].path, files[i].data, files[i].len, err);
  }
  for (size_t i = 0; i < n; i++) {
    if (!t[i].tmp[0]) continue;
    if (st != MP_OK) {
      remove(t[i].tmp);
    } else if (rename(t[i].tmp, t[i].path) != 0) {
      st = mp_error_set(err, MP_ERR_IO, "%s: cannot write: %s", files[i].path,
                        strerror(errno));
      remove(t[i].tmp);
    }
  }
  mp_free(NULL, t);
  return st;
}
