/*
 * onnx_external.h -- ONNX tensors whose bytes live in another file
 * (TensorProto.data_location EXTERNAL, the external_data entries
 * location, offset and length), for the importer and the weight reader.
 */
#ifndef MPLAN_ONNX_EXTERNAL_H
#define MPLAN_ONNX_EXTERNAL_H

#include "mplan/base.h"
#include "onnx.pb-c.h"

/* true when tp keeps its data in an external file. */
bool mp_onnx_is_external(const Onnx__TensorProto *tp);

/* Tensor name's need bytes, from the file its location names: the model
 * file's folder joined with the location, which must be a relative path
 * that stays inside that folder (no absolute path, no ".." component), at
 * the offset entry (0 when absent); a length entry must equal need. The
 * file must hold offset + need bytes. With out, the bytes go to *out
 * (owned: release with mp_free(a, ...); one byte more, so never NULL);
 * with out NULL, this only checks. Errors name the model file, the tensor
 * and the problem. */
mp_status mp_onnx_external(const char *file, const Onnx__TensorProto *tp,
                           const char *name, size_t need, const mp_alloc *a,
                           void **out, mp_error *err);

#endif /* MPLAN_ONNX_EXTERNAL_H */
