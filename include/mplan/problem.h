/*
 * mplan/problem.h -- the allocation problem: buffers, not tensors.
 *
 * A buffer has a size, an alignment, an inclusive live interval
 * [first, last] in abstract time (execution steps for a graph, arbitrary
 * integers for a minimalloc CSV) and a class. Resident and retained buffers
 * never share bytes and live for the whole run; activations may share bytes
 * with any activation whose interval is disjoint from theirs.
 *
 * Life cycle: create -> add buffers -> seal -> (profile, solve, validate).
 * Sealing fixes the run's time span and gives resident and retained buffers
 * the whole span as their interval.
 */
#ifndef MPLAN_PROBLEM_H
#define MPLAN_PROBLEM_H

#include "mplan/base.h"

typedef enum mp_class {
  MP_CLASS_ACTIVATION = 0, /* shares bytes with disjoint-lifetime peers */
  MP_CLASS_RESIDENT,       /* weights, graph inputs: whole run, never shared */
  MP_CLASS_RETAINED,       /* survives across invocations (e.g. KV cache) */
  MP_CLASS_COUNT
} mp_class;

const char *mp_class_name(mp_class c);
bool mp_class_parse(const char *name, mp_class *out);

/* Times are limited to [-2^62, 2^62] so that last + 1 never overflows. */
#define MP_TIME_LIMIT ((int64_t)1 << 62)
/* Offsets are kept below 2^48 (the validator's sort key); a buffer larger
 * than that can never be placed. */
#define MP_MAX_BUFFER_BYTES ((size_t)1 << 48)

typedef struct mp_buffer_desc {
  const char *name; /* copied; unique within the problem */
  size_t size;      /* bytes, > 0 */
  size_t alignment; /* power of two; 0 means 1 */
  int64_t first;    /* inclusive live interval (ignored for resident and */
  int64_t last;     /* retained buffers, which live for the whole run) */
  mp_class cls;
  bool pinned; /* offset fixed by the user: absolute, in its region */
  size_t pin;
} mp_buffer_desc;

typedef struct mp_buffer {
  const char *name;
  size_t size;      /* as given */
  size_t alignment; /* power of two */
  size_t padded;    /* size rounded up to alignment: the bytes reserved */
  int64_t first;    /* effective inclusive interval */
  int64_t last;
  mp_class cls;
  bool pinned;
  size_t pin;
} mp_buffer;

typedef struct mp_problem mp_problem;

/* Returns an owned, empty problem (release with mp_problem_destroy).
 * Borrows a (NULL: C library) for the problem's lifetime; copies name. */
mp_status mp_problem_create(const mp_alloc *a, const char *name,
                            mp_problem **out, mp_error *err);
void mp_problem_destroy(mp_problem *p);

/* Adds a buffer. Rejects an empty name, a duplicate name, size 0, an
 * alignment that is not a power of two, first > last, a padded size that
 * overflows, and a misaligned pin. *index (if not NULL) receives the new
 * buffer's index. Copies d. */
mp_status mp_problem_add(mp_problem *p, const mp_buffer_desc *d, size_t *index,
                         mp_error *err);

/* Declares the run's time span [first, last] (default: the hull of all
 * activation intervals, or [0, 0]). Must be called before sealing. */
mp_status mp_problem_set_span(mp_problem *p, int64_t first, int64_t last,
                              mp_error *err);

/* Fixes the span and the resident/retained intervals; rejects activation
 * intervals outside a declared span. Further adds fail. */
mp_status mp_problem_seal(mp_problem *p, mp_error *err);

/* Declares that the buffers idx[0..n) are read together (the inputs of one
 * op), so that a banked memory should keep them in different banks. label
 * (copied) names the group in reports. Duplicates and out-of-range
 * indices are errors. Before seal only. */
mp_status mp_problem_add_group(mp_problem *p, const char *label,
                               const size_t *idx, size_t n, mp_error *err);
size_t mp_problem_group_count(const mp_problem *p);
/* The i-th group: its label and buffer indices (borrowed). */
const char *mp_problem_group(const mp_problem *p, size_t i, const size_t **idx,
                             size_t *n);

bool mp_problem_sealed(const mp_problem *p);
const char *mp_problem_name(const mp_problem *p);
size_t mp_problem_count(const mp_problem *p);
const mp_buffer *mp_problem_buffer(const mp_problem *p, size_t i);
const mp_buffer *mp_problem_buffers(const mp_problem *p);
bool mp_problem_find(const mp_problem *p, const char *name, size_t *index);
void mp_problem_span(const mp_problem *p, int64_t *first, int64_t *last);
const mp_alloc *mp_problem_alloc(const mp_problem *p);

/* ---- live-bytes profile ---------------------------------------------------
 * live(t) = sum of padded sizes of activation buffers live at t. The
 * profile covers the whole span as maximal segments of constant live(t). */
typedef struct mp_segment {
  int64_t first; /* inclusive */
  int64_t last;
  size_t live;
  size_t count; /* activation buffers live in the segment */
} mp_segment;

typedef struct mp_profile {
  const mp_alloc *alloc;
  mp_segment *segs;
  size_t n_segs;
  size_t *peaks; /* indices into segs of every segment with live == peak */
  size_t n_peaks;
  size_t peak;     /* lower bound for any placement: max live(t) */
  size_t no_reuse; /* sum of padded activation sizes */
  size_t fixed;    /* sum of padded resident + retained sizes */
  size_t retained; /* sum of padded retained sizes */
  size_t waste;    /* sum over all buffers of padded - size */
} mp_profile;

/* Computes the profile of a sealed problem in O(n log n). The result owns
 * its arrays (release with mp_profile_release). */
mp_status mp_problem_profile(const mp_problem *p, mp_profile *out,
                             mp_error *err);
void mp_profile_release(mp_profile *prof);

/* Index of the segment containing t, or n_segs when t is outside. */
size_t mp_profile_find(const mp_profile *prof, int64_t t);

#endif /* MPLAN_PROBLEM_H */
