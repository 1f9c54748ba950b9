/*
 * bundle_load.c -- the program bundle loader (format in mplan/bundle.h).
 *
 * It will run on a target and trusts nothing. In order, it checks:
 *   1. the header: size, magic, version, header size, file size, CRC-32,
 *      counts within limits, and that the sections computed from the
 *      counts end exactly at the end of the file;
 *   2. strings: the blob ends with NUL; every name is an offset into it
 *      and holds no control character (names go into one-line events);
 *   3. regions: kind, power-of-two alignment in [8, 4096], size within
 *      MP_BUNDLE_MAX_REGION and no larger than its buffers need (plus the
 *      alignment);
 *   4. buffers: region index, [offset - red zone, offset + size + red
 *      zone) inside the region, lifetime in [-1, steps], class, and the
 *      class matching the region's kind: weights, inputs and retained
 *      state live in persistent regions, activations in scratch ones, so
 *      that no weight can overlap the activation arena; resident buffers
 *      are pairwise disjoint;
 *   5. tensors: buffer index, dtype, kind, rank and dims, bytes equal to
 *      elements x dtype size (checked arithmetic), the tensor inside its
 *      buffer, its first byte aligned to its element size, its kind
 *      agreeing with its buffer's class, weight data inside the weight
 *      blob and of exactly its size;
 *   6. ops: kernel id, refs and params inside their pools, every tensor
 *      produced once by an op whose step is its first step, every input
 *      produced earlier (or resident) and still live by the tensor's own
 *      lifetime (retained state may be read before it is written: the
 *      previous invocation's), outputs never weights or inputs, then the
 *      kernel's own check of arity, parameters, dtypes and shapes (ops.c),
 *      and every op a LOOP repeats placed after its enter op, loops
 *      nested at most MP_RT_LOOP_DEPTH deep;
 *   7. graph inputs and outputs: indices and kinds.
 * A bundle that passes can run without touching memory outside the
 * regions (memory safety). Overlaps between activation buffers are NOT
 * rejected: whether the plan is right is what a poison-mode run checks.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mplan/bundle.h"
#include "ops.h"

struct mp_bundle {
  const mp_alloc *alloc;
  unsigned char *bytes; /* owned copy of the file */
  size_t len;
  size_t n_regions, n_buffers, n_tensors, n_ops, n_inputs, n_outputs;
  mp_bregion *regions;
  mp_bbuffer *buffers;
  mp_btensor *tensors;
  mp_bopr *ops;
  uint32_t *refs;
  int64_t *params;
  uint32_t *io;
  const unsigned char *weights;
  uint64_t weight_bytes;
  size_t workspace;
  size_t workspace_op; /* the op that needs it (the first, on a tie) */
};

/* The CRC-32 (IEEE, reflected polynomial 0xEDB88320) of every byte value:
 * entry n is n shifted through the polynomial eight times. */
static const uint32_t bl_crc_table[256] = {
    0x00000000u, 0x77073096u, 0xee0e612cu, 0x990951bau, 0x076dc419u,
    0x706af48fu, 0xe963a535u, 0x9e6495a3u, 0x0edb8832u, 0x79dcb8a4u,
    0xe0d5e91eu, 0x97d2d988u, 0x09b64c2bu, 0x7eb17cbdu, 0xe7b82d07u,
    0x90bf1d91u, 0x1db71064u, 0x6ab020f2u, 0xf3b97148u, 0x84be41deu,
    0x1adad47du, 0x6ddde4ebu, 0xf4d4b551u, 0x83d385c7u, 0x136c9856u,
    0x646ba8c0u, 0xfd62f97au, 0x8a65c9ecu, 0x14015c4fu, 0x63066cd9u,
    0xfa0f3d63u, 0x8d080df5u, 0x3b6e20c8u, 0x4c69105eu, 0xd56041e4u,
    0xa2677172u, 0x3c03e4d1u, 0x4b04d447u, 0xd20d85fdu, 0xa50ab56bu,
    0x35b5a8fau, 0x42b2986cu, 0xdbbbc9d6u, 0xacbcf940u, 0x32d86ce3u,
    0x45df5c75u, 0xdcd60dcfu, 0xabd13d59u, 0x26d930acu, 0x51de003au,
    0xc8d75180u, 0xbfd06116u, 0x21b4f4b5u, 0x56b3c423u, 0xcfba9599u,
    0xb8bda50fu, 0x2802b89eu, 0x5f058808u, 0xc60cd9b2u, 0xb10be924u,
    0x2f6f7c87u, 0x58684c11u, 0xc1611dabu, 0xb6662d3du, 0x76dc4190u,
    0x01db7106u, 0x98d220bcu, 0xefd5102au, 0x71b18589u, 0x06b6b51fu,
    0x9fbfe4a5u, 0xe8b8d433u, 0x7807c9a2u, 0x0f00f934u, 0x9609a88eu,
    0xe10e9818u, 0x7f6a0dbbu, 0x086d3d2du, 0x91646c97u, 0xe6635c01u,
    0x6b6b51f4u, 0x1c6c6162u, 0x856530d8u, 0xf262004eu, 0x6c0695edu,
    0x1b01a57bu, 0x8208f4c1u, 0xf50fc457u, 0x65b0d9c6u, 0x12b7e950u,
    0x8bbeb8eau, 0xfcb9887cu, 0x62dd1ddfu, 0x15da2d49u, 0x8cd37cf3u,
    0xfbd44c65u, 0x4db26158u, 0x3ab551ceu, 0xa3bc0074u, 0xd4bb30e2u,
    0x4adfa541u, 0x3dd895d7u, 0xa4d1c46du, 0xd3d6f4fbu, 0x4369e96au,
    0x346ed9fcu, 0xad678846u, 0xda60b8d0u, 0x44042d73u, 0x33031de5u,
    0xaa0a4c5fu, 0xdd0d7cc9u, 0x5005713cu, 0x270241aau, 0xbe0b1010u,
    0xc90c2086u, 0x5768b525u, 0x206f85b3u, 0xb966d409u, 0xce61e49fu,
    0x5edef90eu, 0x29d9c998u, 0xb0d09822u, 0xc7d7a8b4u, 0x59b33d17u,
    0x2eb40d81u, 0xb7bd5c3bu, 0xc0ba6cadu, 0xedb88320u, 0x9abfb3b6u,
    0x03b6e20cu, 0x74b1d29au, 0xead54739u, 0x9dd277afu, 0x04db2615u,
    0x73dc1683u, 0xe3630b12u, 0x94643b84u, 0x0d6d6a3eu, 0x7a6a5aa8u,
    0xe40ecf0bu, 0x9309ff9du, 0x0a00ae27u, 0x7d079eb1u, 0xf00f9344u,
    0x8708a3d2u, 0x1e01f268u, 0x6906c2feu, 0xf762575du, 0x806567cbu,
    0x196c3671u, 0x6e6b06e7u, 0xfed41b76u, 0x89d32be0u, 0x10da7a5au,
    0x67dd4accu, 0xf9b9df6fu, 0x8ebeeff9u, 0x17b7be43u, 0x60b08ed5u,
    0xd6d6a3e8u, 0xa1d1937eu, 0x38d8c2c4u, 0x4fdff252u, 0xd1bb67f1u,
    0xa6bc5767u, 0x3fb506ddu, 0x48b2364bu, 0xd80d2bdau, 0xaf0a1b4cu,
    0x36034af6u, 0x41047a60u, 0xdf60efc3u, 0xa867df55u, 0x316e8eefu,
    0x4669be79u, 0xcb61b38cu, 0xbc66831au, 0x256fd2a0u, 0x5268e236u,
    0xcc0c7795u, 0xbb0b4703u, 0x220216b9u, 0x5505262fu, 0xc5ba3bbeu,
    0xb2bd0b28u, 0x2bb45a92u, 0x5cb36a04u, 0xc2d7ffa7u, 0xb5d0cf31u,
    0x2cd99e8bu, 0x5bdeae1du, 0x9b64c2b0u, 0xec63f226u, 0x756aa39cu,
    0x026d930au, 0x9c0906a9u, 0xeb0e363fu, 0x72076785u, 0x05005713u,
    0x95bf4a82u, 0xe2b87a14u, 0x7bb12baeu, 0x0cb61b38u, 0x92d28e9bu,
    0xe5d5be0du, 0x7cdcefb7u, 0x0bdbdf21u, 0x86d3d2d4u, 0xf1d4e242u,
    0x68ddb3f8u, 0x1fda836eu, 0x81be16cdu, 0xf6b9265bu, 0x6fb077e1u,
    0x18b74777u, 0x88085ae6u, 0xff0f6a70u, 0x66063bcau, 0x11010b5cu,
    0x8f659effu, 0xf862ae69u, 0x616bffd3u, 0x166ccf45u, 0xa00ae278u,
    0xd70dd2eeu, 0x4e048354u, 0x3903b3c2u, 0xa7672661u, 0xd06016f7u,
    0x4969474du, 0x3e6e77dbu, 0xaed16a4au, 0xd9d65adcu, 0x40df0b66u,
    0x37d83bf0u, 0xa9bcae53u, 0xdebb9ec5u, 0x47b2cf7fu, 0x30b5ffe9u,
    0xbdbdf21cu, 0xcabac28au, 0x53b39330u, 0x24b4a3a6u, 0xbad03605u,
    0xcdd70693u, 0x54de5729u, 0x23d967bfu, 0xb3667a2eu, 0xc4614ab8u,
    0x5d681b02u, 0x2a6f2b94u, 0xb40bbe37u, 0xc30c8ea1u, 0x5a05df1bu,
    0x2d02ef8du,
};

uint32_t mp_crc32(uint32_t crc, const void *data, size_t n) {
  const unsigned char *p = data;
  crc = ~crc;
  for (size_t i = 0; i < n; i++)
    crc = bl_crc_table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
  return ~crc;
}

static uint16_t bl_u16(const unsigned char *p) {
  return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t bl_u32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}

static uint64_t bl_u64(const unsigned char *p) {
  return (uint64_t)bl_u32(p) | (uint64_t)bl_u32(p + 4) << 32;
}

typedef struct bl {
  const char *src;
  mp_error *err;
  mp_bundle *b;
  const char *strings;
  uint32_t n_strings;
  uint32_t n_refs, n_params;
} bl;

static mp_status bl_bad(bl *x, const char *fmt, ...) MP_PRINTF(2, 3);

static mp_status bl_bad(bl *x, const char *fmt, ...) {
  char msg[MP_ERROR_MAX - 200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return mp_error_set(x->err, MP_ERR_BAD_INPUT, "%s: invalid bundle: %s",
                      x->src, msg);
}

/* A name reference (invariant 2). */
static bool bl_name(bl *x, uint32_t off, const char **out) {
  if (off >= x->n_strings) return false;
  const char *s = x->strings + off;
  for (const char *p = s; *p; p++) {
    if ((unsigned char)*p < 0x20 || *p == 0x7f) return false;
  }
  *out = s;
  return true;
}

static bool bl_align(size_t *at, size_t a, size_t add) {
  return mp_size_add(*at, add, at) && mp_align_up(*at, a, at);
}

typedef struct bl_layout {
  size_t strings, regions, buffers, tensors, ops, refs, params, io, weights,
      end;
} bl_layout;

/* Section offsets from the counts (invariant 1). */
static bool bl_layout_of(const uint32_t *cnt, uint64_t wbytes, bl_layout *l) {
  size_t at = MP_BUNDLE_HEADER, sz;
  l->strings = at;
  if (!bl_align(&at, 8, cnt[0])) return false;
  l->regions = at;
  if (!mp_size_mul(cnt[1], MP_BUNDLE_REGION_REC, &sz) || !bl_align(&at, 8, sz))
    return false;
  l->buffers = at;
  if (!mp_size_mul(cnt[2], MP_BUNDLE_BUFFER_REC, &sz) || !bl_align(&at, 8, sz))
    return false;
  l->tensors = at;
  if (!mp_size_mul(cnt[3], MP_BUNDLE_TENSOR_REC, &sz) || !bl_align(&at, 8, sz))
    return false;
  l->ops = at;
  if (!mp_size_mul(cnt[4], MP_BUNDLE_OP_REC, &sz) || !bl_align(&at, 8, sz))
    return false;
  l->refs = at;
  if (!mp_size_mul(cnt[5], 4, &sz) || !bl_align(&at, 8, sz)) return false;
  l->params = at;
  if (!mp_size_mul(cnt[6], 8, &sz) || !bl_align(&at, 8, sz)) return false;
  l->io = at;
  if (!mp_size_add(cnt[7], cnt[8], &sz) || !mp_size_mul(sz, 4, &sz) ||
      !bl_align(&at, MP_BUNDLE_WEIGHT_ALIGN, sz))
    return false;
  l->weights = at;
  if (wbytes > SIZE_MAX || !mp_size_add(at, (size_t)wbytes, &at)) return false;
  l->end = at;
  return true;
}

static mp_status bl_header(bl *x, const unsigned char *p, size_t len,
                           uint32_t *cnt, bl_layout *l) {
  if (len < MP_BUNDLE_HEADER) {
    return bl_bad(x,
                  "the file has %zu bytes, fewer than the %d-byte header "
                  "(truncated?)",
                  len, MP_BUNDLE_HEADER);
  }
  if (memcmp(p, MP_BUNDLE_MAGIC, 8) != 0) {
    return bl_bad(x, "bad magic: not an mplan bundle");
  }
  if (bl_u32(p + 8) != MP_BUNDLE_VERSION) {
    return bl_bad(x, "version %u; this runtime reads version %d", bl_u32(p + 8),
                  MP_BUNDLE_VERSION);
  }
  if (bl_u32(p + 12) != MP_BUNDLE_HEADER) {
    return bl_bad(x, "header size %u, expected %d", bl_u32(p + 12),
                  MP_BUNDLE_HEADER);
  }
  if (bl_u64(p + 16) != len) {
    return bl_bad(x,
                  "the header says %llu bytes, the file has %zu "
                  "(truncated or padded)",
                  (unsigned long long)bl_u64(p + 16), len);
  }
  uint32_t crc = mp_crc32(0, p, 24);
  static const unsigned char zero[4] = {0, 0, 0, 0};
  crc = mp_crc32(crc, zero, 4);
  crc = mp_crc32(crc, p + 28, len - 28);
  if (crc != bl_u32(p + 24)) {
    return bl_bad(x,
                  "checksum mismatch (CRC-32 %08x, header says %08x): the "
                  "file is corrupt",
                  crc, bl_u32(p + 24));
  }
  for (int i = 0; i < 9; i++) cnt[i] = bl_u32(p + 32 + 4 * i);
  static const char *const what[] = {"string bytes", "regions", "buffers",
                                     "tensors",      "ops",     "refs",
                                     "params",       "inputs",  "outputs"};
  for (int i = 0; i < 9; i++) {
    if (cnt[i] > (i == 0 ? 64u * MP_BUNDLE_MAX_COUNT : MP_BUNDLE_MAX_COUNT)) {
      return bl_bad(x, "%u %s exceed the limit", cnt[i], what[i]);
    }
  }
  if (bl_u32(p + 68) || bl_u64(p + 80) || bl_u64(p + 88)) {
    return bl_bad(x, "reserved header fields are not zero");
  }
  uint64_t wbytes = bl_u64(p + 72);
  if (!bl_layout_of(cnt, wbytes, l) || l->end != len) {
    return bl_bad(x,
                  "the section sizes (%u regions, %u buffers, %u "
                  "tensors, %u ops, %llu weight bytes) do not add up to the "
                  "file's %zu bytes",
                  cnt[1], cnt[2], cnt[3], cnt[4], (unsigned long long)wbytes,
                  len);
  }
  if (cnt[0] == 0 || p[l->strings + cnt[0] - 1] != 0) {
    return bl_bad(x, "the string table is empty or not NUL-terminated");
  }
  x->b->weight_bytes = wbytes;
  return MP_OK;
}

static mp_status bl_regions(bl *x, const unsigned char *p) {
  mp_bundle *b = x->b;
  for (size_t i = 0; i < b->n_regions; i++, p += MP_BUNDLE_REGION_REC) {
    mp_bregion *r = &b->regions[i];
    uint32_t kind = bl_u32(p + 4);
    r->size = bl_u64(p + 8);
    r->base = bl_u64(p + 16);
    r->alignment = bl_u32(p + 24);
    if (!bl_name(x, bl_u32(p), &r->name) ||
        !bl_name(x, bl_u32(p + 28), &r->plan_region)) {
      return bl_bad(x, "region %zu: bad name", i);
    }
    if (kind > MP_BREGION_SCRATCH) {
      return bl_bad(x, "region '%s': unknown kind %u", r->name, kind);
    }
    r->kind = (mp_bregion_kind)kind;
    if (!mp_is_pow2(r->alignment) || r->alignment < 8 || r->alignment > 4096) {
      return bl_bad(x,
                    "region '%s': alignment %u is not a power of two in "
                    "[8, 4096]",
                    r->name, r->alignment);
    }
    if (r->size > MP_BUNDLE_MAX_REGION || r->base > MP_BUNDLE_MAX_REGION) {
      return bl_bad(x, "region '%s': size %llu exceeds the limit", r->name,
                    (unsigned long long)r->size);
    }
  }
  return MP_OK;
}

static mp_status bl_buffers(bl *x, const unsigned char *p, int32_t steps) {
  mp_bundle *b = x->b;
  for (size_t i = 0; i < b->n_buffers; i++, p += MP_BUNDLE_BUFFER_REC) {
    mp_bbuffer *u = &b->buffers[i];
    if (!bl_name(x, bl_u32(p), &u->name)) {
      return bl_bad(x, "buffer %zu: bad name", i);
    }
    u->region = bl_u32(p + 4);
    u->offset = bl_u64(p + 8);
    u->size = bl_u64(p + 16);
    u->rz_before = bl_u32(p + 24);
    u->rz_after = bl_u32(p + 28);
    u->first = (int32_t)bl_u32(p + 32);
    u->last = (int32_t)bl_u32(p + 36);
    u->cls = bl_u32(p + 40);
    uint32_t flags = bl_u32(p + 44);
    u->output = flags & 1;
    if (u->region >= b->n_regions) {
      return bl_bad(x, "buffer '%s': region %u does not exist", u->name,
                    u->region);
    }
    const mp_bregion *r = &b->regions[u->region];
    /* All terms are below 2^40 or 2^32: the sums cannot overflow. */
    if (u->size > MP_BUNDLE_MAX_REGION || u->offset > MP_BUNDLE_MAX_REGION ||
        u->offset < u->rz_before ||
        u->offset + u->size + u->rz_after > r->size) {
      return bl_bad(x,
                    "buffer '%s': bytes %llu..%llu (with red zones %u, "
                    "%u) are outside region '%s' of %llu bytes",
                    u->name, (unsigned long long)u->offset,
                    (unsigned long long)(u->offset + u->size), u->rz_before,
                    u->rz_after, r->name, (unsigned long long)r->size);
    }
    if (u->first < -1 || u->last < u->first || u->last > steps) {
      return bl_bad(x,
                    "buffer '%s': lifetime %d..%d is outside the run's "
                    "%d steps",
                    u->name, u->first, u->last, steps);
    }
    if (u->cls > 2 || flags > 1) {
      return bl_bad(x, "buffer '%s': unknown class %u or flags %u", u->name,
                    u->cls, flags);
    }
    bool persistent = r->kind == MP_BREGION_PERSISTENT;
    if (persistent != (u->cls != 0)) {
      return bl_bad(x,
                    "buffer '%s' (%s) is in %s region '%s': weights, "
                    "inputs and retained state must be persistent and apart "
                    "from the activation arena",
                    u->name, u->cls ? "resident" : "activation",
                    persistent ? "persistent" : "scratch", r->name);
    }
  }
  return MP_OK;
}

static int bl_cmp_u64(const void *a, const void *b) {
  const uint64_t *x = a, *y = b;
  return x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : (x[1] > y[1]) - (x[1] < y[1]);
}

/* A region is no larger than its buffers need (plus its alignment): a
 * corrupt size must not make a target allocate memory nothing uses. */
static mp_status bl_region_tight(bl *x) {
  mp_bundle *b = x->b;
  for (size_t r = 0; r < b->n_regions; r++) {
    uint64_t need = 0;
    for (size_t i = 0; i < b->n_buffers; i++) {
      const mp_bbuffer *u = &b->buffers[i];
      uint64_t end = u->offset + u->size + u->rz_after;
      if (u->region == r && end > need) need = end;
    }
    const mp_bregion *g = &b->regions[r];
    if (g->size > need + g->alignment) {
      return bl_bad(x,
                    "region '%s' has %llu bytes where its buffers end at "
                    "%llu",
                    g->name, (unsigned long long)g->size,
                    (unsigned long long)need);
    }
  }
  return MP_OK;
}

/* Resident buffers never share a byte (invariant 4). */
static mp_status bl_resident_disjoint(bl *x, const mp_alloc *a) {
  mp_bundle *b = x->b;
  size_t n = 0;
  uint64_t *iv = mp_calloc(a, 3 * b->n_buffers + 1, sizeof *iv);
  if (!iv)
    return mp_error_set(x->err, MP_ERR_NOMEM, "%s: out of memory", x->src);
  for (size_t i = 0; i < b->n_buffers; i++) {
    const mp_bbuffer *u = &b->buffers[i];
    if (u->cls == 0) continue;
    /* key: region, start; then end and index */
    iv[3 * n] = (uint64_t)u->region << 41 | (u->offset - u->rz_before);
    iv[3 * n + 1] = u->offset + u->size + u->rz_after;
    iv[3 * n + 2] = i;
    n++;
  }
  qsort(iv, n, 3 * sizeof *iv, bl_cmp_u64);
  mp_status st = MP_OK;
  for (size_t k = 1; k < n && st == MP_OK; k++) {
    uint64_t prev_region = iv[3 * (k - 1)] >> 41, region = iv[3 * k] >> 41;
    uint64_t start = iv[3 * k] & (((uint64_t)1 << 41) - 1);
    if (region == prev_region && start < iv[3 * (k - 1) + 1]) {
      st = bl_bad(x, "resident buffers '%s' and '%s' overlap",
                  b->buffers[iv[3 * (k - 1) + 2]].name,
                  b->buffers[iv[3 * k + 2]].name);
    }
  }
  mp_free(a, iv);
  return st;
}

static mp_status bl_tensor(bl *x, const unsigned char *p, size_t i) {
  mp_bundle *b = x->b;
  mp_btensor *t = &b->tensors[i];
  if (!bl_name(x, bl_u32(p), &t->name))
    return bl_bad(x, "tensor %zu: bad name", i);
  t->buffer = bl_u32(p + 4);
  t->offset = bl_u64(p + 8);
  t->bytes = bl_u64(p + 16);
  t->dtype = p[24];
  uint32_t kind = p[25];
  t->shape.rank = p[26];
  t->first = (int32_t)bl_u32(p + 32);
  t->last = (int32_t)bl_u32(p + 36);
  t->data_offset = bl_u64(p + 40);
  t->data_bytes = bl_u64(p + 48);
  if (t->buffer >= b->n_buffers) {
    return bl_bad(x, "tensor '%s': buffer %u does not exist", t->name,
                  t->buffer);
  }
  if (!mp_kd_bits(t->dtype) || kind >= MP_BT_KIND_COUNT ||
      t->shape.rank > MP_K_MAX_RANK || p[27] || bl_u32(p + 28) ||
      bl_u64(p + 120)) {
    return bl_bad(x, "tensor '%s': bad dtype %d, kind %u, rank %u or flags",
                  t->name, t->dtype, kind, t->shape.rank);
  }
  t->kind = (mp_bt_kind)kind;
  size_t bytes = 1; /* elements, then bytes */
  for (uint32_t d = 0; d < t->shape.rank; d++) {
    int64_t v = (int64_t)bl_u64(p + 56 + 8 * d);
    if (v < 0 || v > (int64_t)MP_BUNDLE_MAX_REGION ||
        !mp_size_mul(bytes, (size_t)v, &bytes)) {
      return bl_bad(x, "tensor '%s': dim %u (%lld) is negative or too large",
                    t->name, d, (long long)v);
    }
    t->shape.dims[d] = v;
  }
  bytes = (size_t)mp_kd_bytes(t->dtype, bytes); /* below 2^62 elements */
  if (bytes != t->bytes) {
    return bl_bad(x,
                  "tensor '%s': %llu bytes where its shape and dtype "
                  "give %zu",
                  t->name, (unsigned long long)t->bytes, bytes);
  }
  const mp_bbuffer *u = &b->buffers[t->buffer];
  if (t->offset > u->size || t->bytes > u->size - t->offset) {
    return bl_bad(x,
                  "tensor '%s' (%llu bytes at %llu) does not fit buffer "
                  "'%s' of %llu bytes",
                  t->name, (unsigned long long)t->bytes,
                  (unsigned long long)t->offset, u->name,
                  (unsigned long long)u->size);
  }
  size_t es = mp_kd_size(t->dtype) ? mp_kd_size(t->dtype) : 1; /* 4-bit */
  if ((u->offset + t->offset) % es) {
    return bl_bad(x,
                  "tensor '%s': offset %llu is not aligned to its %zu-byte "
                  "elements",
                  t->name, (unsigned long long)(u->offset + t->offset), es);
  }
  /* An activation may live in a resident buffer: a view (Reshape,
   * Flatten...) of a graph input or weight reads those bytes
   * (docs/ir-conventions.md); a graph output never does. */
  bool resident = t->kind == MP_BT_WEIGHT || t->kind == MP_BT_RETAINED;
  bool output = t->kind == MP_BT_OUTPUT;
  if ((resident && u->cls == 0) || (output && u->cls != 0)) {
    return bl_bad(x, "tensor '%s' is a %s in a buffer of the wrong class",
                  t->name, resident ? "weight" : "graph output");
  }
  /* a graph input may carry its bound value (bundle_write.c) */
  if (t->kind == MP_BT_WEIGHT || (t->kind == MP_BT_INPUT && t->data_bytes)) {
    if (t->data_bytes != t->bytes || t->data_offset > x->b->weight_bytes ||
        t->data_bytes > x->b->weight_bytes - t->data_offset) {
      return bl_bad(x,
                    "weight '%s': data %llu..+%llu is not its %llu bytes "
                    "inside the %llu-byte weight blob",
                    t->name, (unsigned long long)t->data_offset,
                    (unsigned long long)t->data_bytes,
                    (unsigned long long)t->bytes,
                    (unsigned long long)x->b->weight_bytes);
    }
  } else if (t->data_bytes || t->data_offset) {
    return bl_bad(x, "tensor '%s' is not a weight but carries data", t->name);
  }
  return MP_OK;
}

/* Every op a LOOP repeats is one it may repeat: the LOOP is one, the op
 * runs after its enter op, and loops nest at most MP_RT_LOOP_DEPTH deep
 * (the executor recurses once per level). */
static mp_status bl_loops(bl *x) {
  const mp_bundle *b = x->b;
  for (size_t k = 0; k < b->n_ops; k++) {
    const mp_bopr *o = &b->ops[k];
    int depth = 0;
    for (uint32_t v = o->loop; v; v = b->ops[v - 1].loop) {
      const mp_bopr *l = &b->ops[v - 1];
      if (l->kernel != MP_BOP_LOOP || l->n_params < 2 ||
          l->params[1] >= (int64_t)k) {
        return bl_bad(x,
                      "op '%s' at step %zu: repeated by op '%s', which is "
                      "no loop entered before it",
                      o->name, k, l->name);
      }
      if (++depth > MP_RT_LOOP_DEPTH) {
        return bl_bad(x, "op '%s': loops nest more than %d deep", o->name,
                      MP_RT_LOOP_DEPTH);
      }
    }
  }
  return MP_OK;
}

static mp_status bl_ops(bl *x, const unsigned char *p, const mp_alloc *a) {
  mp_bundle *b = x->b;
  int32_t *made = mp_calloc(a, b->n_tensors + 1, sizeof *made);
  if (!made)
    return mp_error_set(x->err, MP_ERR_NOMEM, "%s: out of memory", x->src);
  for (size_t t = 0; t < b->n_tensors; t++) made[t] = -1;
  mp_status st = MP_OK;
  for (size_t k = 0; k < b->n_ops && st == MP_OK; k++, p += MP_BUNDLE_OP_REC) {
    mp_bopr *o = &b->ops[k];
    o->kernel = bl_u16(p + 8);
    o->flags = bl_u16(p + 10);
    o->n_in = bl_u16(p + 12);
    o->n_out = bl_u16(p + 14);
    uint32_t r0 = bl_u32(p + 16), p0 = bl_u32(p + 20);
    o->n_params = bl_u32(p + 24);
    if (!bl_name(x, bl_u32(p), &o->name) ||
        !bl_name(x, bl_u32(p + 4), &o->type)) {
      st = bl_bad(x, "op %zu: bad name", k);
      break;
    }
    o->loop = bl_u32(p + 28);
    if (o->loop && (o->loop - 1 <= k || o->loop - 1 >= b->n_ops)) {
      st = bl_bad(x, "op '%s' at step %zu: loop %u is not a later step",
                  o->name, k, o->loop);
      break;
    }
    if (o->kernel == 0 || o->kernel >= MP_BOP_COUNT) {
      st = bl_bad(x, "op '%s' (%s) at step %zu: unknown kernel id %u", o->name,
                  o->type, k, o->kernel);
      break;
    }
    if (r0 > x->n_refs || (uint32_t)o->n_in + o->n_out > x->n_refs - r0 ||
        p0 > x->n_params || o->n_params > x->n_params - p0 || o->n_out == 0) {
      st = bl_bad(x,
                  "op '%s' at step %zu: refs or params outside their "
                  "tables",
                  o->name, k);
      break;
    }
    o->in = b->refs + r0;
    o->out = b->refs + r0 + o->n_in;
    o->params = b->params + p0;
    for (uint32_t i = 0; i < o->n_in && st == MP_OK; i++) {
      uint32_t t = o->in[i];
      if (t == MP_BUNDLE_NONE) continue;
      if (t >= b->n_tensors) {
        st = bl_bad(x, "op '%s': input %u is tensor %u of %zu", o->name, i, t,
                    b->n_tensors);
        break;
      }
      const mp_btensor *v = &b->tensors[t];
      bool resident = v->kind == MP_BT_WEIGHT || v->kind == MP_BT_INPUT ||
                      v->kind == MP_BT_RETAINED;
      if (!resident &&
          (made[t] < 0 || made[t] >= (int32_t)k || v->last < (int32_t)k)) {
        st = bl_bad(x,
                    "op '%s' at step %zu reads tensor '%s', which is not "
                    "produced before it or not live at that step (%d..%d)",
                    o->name, k, v->name, v->first, v->last);
      }
    }
    for (uint32_t i = 0; i < o->n_out && st == MP_OK; i++) {
      uint32_t t = o->out[i];
      if (t >= b->n_tensors) {
        st = bl_bad(x, "op '%s': output %u is tensor %u of %zu", o->name, i, t,
                    b->n_tensors);
        break;
      }
      const mp_btensor *v = &b->tensors[t];
      if (v->kind == MP_BT_WEIGHT || v->kind == MP_BT_INPUT) {
        st = bl_bad(x, "op '%s' writes '%s', which is a weight or an input",
                    o->name, v->name);
      } else if (made[t] >= 0) {
        st = bl_bad(x, "tensor '%s' is produced twice", v->name);
      } else if (v->first != (int32_t)k) {
        st = bl_bad(x,
                    "tensor '%s' is produced at step %zu but says it is "
                    "born at %d",
                    v->name, k, v->first);
      }
      made[t] = (int32_t)k;
    }
    char why[400];
    size_t ws = 0;
    if (st == MP_OK && !mp_rt_op_check(b, k, &ws, why, sizeof why)) {
      st = bl_bad(x, "op '%s' (%s) at step %zu: %s", o->name, o->type, k, why);
    }
    if (ws > b->workspace) b->workspace = ws, b->workspace_op = k;
  }
  if (st == MP_OK) st = bl_loops(x);
  for (size_t t = 0; t < b->n_tensors && st == MP_OK; t++) {
    const mp_btensor *v = &b->tensors[t];
    if ((v->kind == MP_BT_ACTIVATION || v->kind == MP_BT_OUTPUT ||
         v->kind == MP_BT_RETAINED) &&
        made[t] < 0) {
      st = bl_bad(x, "tensor '%s' is produced by no op", v->name);
    }
  }
  mp_free(a, made);
  return st;
}

static mp_status bl_io(bl *x, const unsigned char *p) {
  mp_bundle *b = x->b;
  for (size_t i = 0; i < b->n_inputs + b->n_outputs; i++) {
    uint32_t t = bl_u32(p + 4 * i);
    bool in = i < b->n_inputs;
    b->io[i] = t;
    if (t >= b->n_tensors ||
        b->tensors[t].kind != (in ? MP_BT_INPUT : MP_BT_OUTPUT)) {
      return bl_bad(x, "graph %s %zu is not an %s tensor",
                    in ? "input" : "output", in ? i : i - b->n_inputs,
                    in ? "input" : "output");
    }
  }
  return MP_OK;
}

static mp_status bl_parse(bl *x, const mp_alloc *a) {
  mp_bundle *b = x->b;
  const unsigned char *p = b->bytes;
  uint32_t cnt[9] = {0};
  bl_layout l = {0};
  mp_status st = bl_header(x, p, b->len, cnt, &l);
  if (st != MP_OK) return st;
  x->strings = (const char *)p + l.strings;
  x->n_strings = cnt[0];
  b->n_regions = cnt[1];
  b->n_buffers = cnt[2];
  b->n_tensors = cnt[3];
  b->n_ops = cnt[4];
  x->n_refs = cnt[5];
  x->n_params = cnt[6];
  b->n_inputs = cnt[7];
  b->n_outputs = cnt[8];
  b->weights = p + l.weights;
  b->regions = mp_calloc(a, b->n_regions + 1, sizeof *b->regions);
  b->buffers = mp_calloc(a, b->n_buffers + 1, sizeof *b->buffers);
  b->tensors = mp_calloc(a, b->n_tensors + 1, sizeof *b->tensors);
  b->ops = mp_calloc(a, b->n_ops + 1, sizeof *b->ops);
  b->refs = mp_calloc(a, x->n_refs + 1, sizeof *b->refs);
  b->params = mp_calloc(a, x->n_params + 1, sizeof *b->params);
  b->io = mp_calloc(a, b->n_inputs + b->n_outputs + 1, sizeof *b->io);
  if (!b->regions || !b->buffers || !b->tensors || !b->ops || !b->refs ||
      !b->params || !b->io) {
    return mp_error_set(x->err, MP_ERR_NOMEM, "%s: out of memory", x->src);
  }
  for (size_t i = 0; i < x->n_refs; i++)
    b->refs[i] = bl_u32(p + l.refs + 4 * i);
  for (size_t i = 0; i < x->n_params; i++) {
    b->params[i] = (int64_t)bl_u64(p + l.params + 8 * i);
  }
  if (b->n_ops == 0) return bl_bad(x, "no ops");
  int32_t steps = (int32_t)b->n_ops;
  st = bl_regions(x, p + l.regions);
  if (st == MP_OK) st = bl_buffers(x, p + l.buffers, steps);
  if (st == MP_OK) st = bl_region_tight(x);
  if (st == MP_OK) st = bl_resident_disjoint(x, a);
  for (size_t i = 0; st == MP_OK && i < b->n_tensors; i++) {
    st = bl_tensor(x, p + l.tensors + i * MP_BUNDLE_TENSOR_REC, i);
  }
  if (st == MP_OK) st = bl_ops(x, p + l.ops, a);
  if (st == MP_OK) st = bl_io(x, p + l.io);
  return st;
}

mp_status mp_bundle_load(const char *source, const void *data, size_t len,
                         const mp_alloc *a, mp_bundle **out, mp_error *err) {
  mp_bundle *b = mp_calloc(a, 1, sizeof *b);
  if (!b) return mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory", source);
  b->alloc = a;
  b->len = len;
  b->bytes = mp_malloc(a, len ? len : 1);
  bl x = {source, err, b, NULL, 0, 0, 0};
  mp_status st = MP_OK;
  if (!b->bytes) {
    st = mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory", source);
  } else {
    if (len) memcpy(b->bytes, data, len);
    st = bl_parse(&x, a);
  }
  if (st != MP_OK) {
    mp_bundle_destroy(b);
    return st;
  }
  *out = b;
  return MP_OK;
}

void mp_bundle_destroy(mp_bundle *b) {
  if (!b) return;
  const mp_alloc *a = b->alloc;
  mp_free(a, b->io);
  mp_free(a, b->params);
  mp_free(a, b->refs);
  mp_free(a, b->ops);
  mp_free(a, b->tensors);
  mp_free(a, b->buffers);
  mp_free(a, b->regions);
  mp_free(a, b->bytes);
  mp_free(a, b);
}

size_t mp_bundle_region_count(const mp_bundle *b) {
  return b->n_regions;
}
size_t mp_bundle_buffer_count(const mp_bundle *b) {
  return b->n_buffers;
}
size_t mp_bundle_tensor_count(const mp_bundle *b) {
  return b->n_tensors;
}
size_t mp_bundle_op_count(const mp_bundle *b) {
  return b->n_ops;
}
const mp_bregion *mp_bundle_region(const mp_bundle *b, size_t i) {
  return &b->regions[i];
}
const mp_bbuffer *mp_bundle_buffer(const mp_bundle *b, size_t i) {
  return &b->buffers[i];
}
const mp_btensor *mp_bundle_tensor(const mp_bundle *b, size_t i) {
  return &b->tensors[i];
}
const mp_bopr *mp_bundle_op(const mp_bundle *b, size_t i) {
  return &b->ops[i];
}
size_t mp_bundle_input_count(const mp_bundle *b) {
  return b->n_inputs;
}
size_t mp_bundle_output_count(const mp_bundle *b) {
  return b->n_outputs;
}
uint32_t mp_bundle_input(const mp_bundle *b, size_t i) {
  return b->io[i];
}
uint32_t mp_bundle_output(const mp_bundle *b, size_t i) {
  return b->io[b->n_inputs + i];
}
const unsigned char *mp_bundle_weights(const mp_bundle *b) {
  return b->weights;
}
size_t mp_bundle_workspace(const mp_bundle *b) {
  return b->workspace;
}
size_t mp_bundle_workspace_op(const mp_bundle *b) {
  return b->workspace_op;
}

bool mp_bundle_find_tensor(const mp_bundle *b, const char *name, uint32_t *t) {
  for (size_t i = 0; i < b->n_tensors; i++) {
    if (strcmp(b->tensors[i].name, name) == 0) {
      *t = (uint32_t)i;
      return true;
    }
  }
  return false;
}

bool mp_bundle_find_op(const mp_bundle *b, const char *name, uint32_t *op) {
  for (size_t i = 0; i < b->n_ops; i++) {
    if (strcmp(b->ops[i].name, name) == 0) {
      *op = (uint32_t)i;
      return true;
    }
  }
  return false;
}

const char *mp_bop_name(int kernel) {
  static const char *const names[] = {"?",
                                      "conv",
                                      "conv-transpose",
                                      "gemm",
                                      "matmul",
                                      "unary",
                                      "binary",
                                      "variadic",
                                      "where",
                                      "cast",
                                      "view",
                                      "softmax",
                                      "batchnorm",
                                      "layernorm",
                                      "maxpool",
                                      "avgpool",
                                      "reduce",
                                      "concat",
                                      "split",
                                      "slice",
                                      "gather",
                                      "pad",
                                      "transpose",
                                      "resize",
                                      "quantize",
                                      "dequantize",
                                      "fill",
                                      "conv-integer",
                                      "dynamic-quantize",
                                      "matmul-integer",
                                      "qlinear-conv",
                                      "qlinear-matmul",
                                      "copy",
                                      "rnn",
                                      "arg",
                                      "gather-elements",
                                      "scatter-elements",
                                      "gather-nd",
                                      "scatter-nd",
                                      "trilu",
                                      "cumsum",
                                      "hardmax",
                                      "depth-space",
                                      "tile",
                                      "expand",
                                      "onehot",
                                      "topk",
                                      "fpclass",
                                      "instancenorm",
                                      "lrn",
                                      "mvn",
                                      "nll-loss",
                                      "sce-loss",
                                      "einsum",
                                      "det",
                                      "reverse-sequence",
                                      "pow-mixed",
                                      "grid-sample",
                                      "max-unpool",
                                      "roi-align",
                                      "dropout",
                                      "dft",
                                      "stft",
                                      "mel-weight-matrix",
                                      "non-zero",
                                      "compress",
                                      "unique",
                                      "non-max-suppression",
                                      "loop-enter",
                                      "loop",
                                      "tfidf",
                                      "optimizer",
                                      "random",
                                      "image-scaler",
                                      "groupnorm",
                                      "lppool",
                                      "lpnorm",
                                      "rmsnorm",
                                      "rotary",
                                      "attention",
                                      "tensor-scatter",
                                      "attention-rows",
                                      "matmul-nbits"};
  /* one name per kernel: a kernel added without its name fails here */
  _Static_assert(sizeof names / sizeof *names == MP_BOP_COUNT,
                 "mp_bop_name: a name per mp_bop");
  return kernel > 0 && kernel < MP_BOP_COUNT ? names[kernel] : "?";
}
