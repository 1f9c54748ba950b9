/*
 * mplan/file.h -- whole-file reads and all-or-nothing writes.
 *
 * Writes go to a temporary file beside the target and are renamed over it
 * only when complete, so a failure never leaves a partial output file.
 */
#ifndef MPLAN_FILE_H
#define MPLAN_FILE_H

#include "mplan/base.h"

/* Largest input file mplan reads (1 GiB). */
#define MP_FILE_MAX ((size_t)1 << 30)

/* Reads path into an owned, NUL-terminated buffer (release with
 * mp_free(a, ...)); *len excludes the NUL. Errors name the file. */
mp_status mp_file_read(const char *path, const mp_alloc *a, char **data,
                       size_t *len, mp_error *err);

/* Reads len bytes of the regular file path from byte offset into *out
 * (owned, len + 1 bytes allocated with a: release with mp_free(a, ...)),
 * allocated only once the file is known to hold them: all of them, or an
 * error naming the file (one that is not a regular file, or ends before
 * offset + len). With out NULL it only checks. Not bounded by
 * MP_FILE_MAX: ONNX external data outgrows it. */
mp_status mp_file_read_range(const char *path, uint64_t offset, size_t len,
                             const mp_alloc *a, void **out, mp_error *err);

/* Writes len bytes to path atomically (temporary file + rename). */
mp_status mp_file_write(const char *path, const void *data, size_t len,
                        mp_error *err);

/* One file of a group written together. */
typedef struct mp_file_out {
  const char *path;
  const void *data;
  size_t len;
} mp_file_out;

/* Writes several files all or nothing: every target is checked first (a
 * folder, or two spellings of one file, is an error), every temporary is
 * written, and only when all of them are complete are they renamed over
 * their targets; on any failure every temporary is removed and no target
 * is touched. A symbolic link is written through (the link stays); a
 * device or a pipe is written in place. (A rename failing halfway through
 * is reported; the renames already done stay.) */
mp_status mp_file_write_many(const mp_file_out *files, size_t n, mp_error *err);

/* true when a and b name the same file, however spelled ("./x", "x",
 * "$PWD/x", a link to it); for files that do not exist yet, their folders
 * are compared resolved. */
bool mp_file_same(const char *a, const char *b);

#endif /* MPLAN_FILE_H */
