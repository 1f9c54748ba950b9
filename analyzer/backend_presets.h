/*
 * backend_presets.h -- the backends/NAME.json presets, embedded at build time
 * by cmake/embed.cmake. Private to the analyzer.
 */
#ifndef MPLAN_BACKEND_PRESETS_H
#define MPLAN_BACKEND_PRESETS_H

#include <stddef.h>

extern const char mp_preset_cpu[], mp_preset_gpu[], mp_preset_npu[];
extern const char mp_preset_rv64_vlen128[], mp_preset_rv64_vlen256[],
    mp_preset_rv64_vlen512[];
extern const size_t mp_preset_cpu_len, mp_preset_gpu_len, mp_preset_npu_len;
extern const size_t mp_preset_rv64_vlen128_len, mp_preset_rv64_vlen256_len,
    mp_preset_rv64_vlen512_len;

#endif /* MPLAN_BACKEND_PRESETS_H */
