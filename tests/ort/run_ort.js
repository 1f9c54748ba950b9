// run_ort.js -- runs an ONNX model with onnxruntime-node on the inputs of
// a tensors/1 file (runtime/README.md) and writes its outputs as
// tensors/1, so that mplan's runtime and ONNX Runtime see the very same
// bytes.
//
// usage: node run_ort.js ORT_DIR MODEL.onnx INPUTS.mpt OUTPUTS.mpt
'use strict';
const fs = require('fs');
const path = require('path');

const [ortDir, modelPath, inPath, outPath] = process.argv.slice(2);
const ort = require(path.resolve(ortDir, 'node_modules', 'onnxruntime-node'));

// mp_kdtype codes (include/mplan/kernels.h) <-> ONNX Runtime type names.
// int4 and uint4 travel packed, two to a byte (the first in the low nibble).
const types = {1: 'float32', 2: 'float64', 3: 'int8', 4: 'uint8', 7: 'int32', 9: 'int64',
               11: 'bool', 12: 'float16', 14: 'int4', 15: 'uint4'};
const arrays = {float32: Float32Array, float64: Float64Array, int8: Int8Array,
                uint8: Uint8Array, int32: Int32Array, int64: BigInt64Array,
                bool: Uint8Array, float16: Uint16Array, int4: Int8Array, uint4: Uint8Array};

function readTensors(buf) {
  if (buf.toString('latin1', 0, 8) !== 'MPTENSOR') throw new Error('not tensors/1');
  const n = buf.readUInt32LE(12);
  let at = 16;
  const out = {};
  for (let i = 0; i < n; i++) {
    const nl = buf.readUInt32LE(at); at += 4;
    const name = buf.toString('utf8', at, at + nl); at += nl;
    const dtype = buf[at], rank = buf[at + 1]; at += 8;
    const dims = [];
    for (let d = 0; d < rank; d++) { dims.push(Number(buf.readBigInt64LE(at))); at += 8; }
    const bytes = Number(buf.readBigUInt64LE(at)); at += 8;
    const type = types[dtype];
    const data = new arrays[type](buf.buffer.slice(buf.byteOffset + at, buf.byteOffset + at + bytes));
    at += bytes + ((8 - (4 + nl + 8 + 8 * rank + 8 + bytes) % 8) % 8);
    out[name] = new ort.Tensor(type, data, dims);
  }
  return out;
}

function writeTensors(map) {
  const parts = [];
  const head = Buffer.alloc(16);
  head.write('MPTENSOR', 0, 'latin1');
  head.writeUInt32LE(1, 8);
  head.writeUInt32LE(Object.keys(map).length, 12);
  parts.push(head);
  for (const [name, t] of Object.entries(map)) {
    const code = Number(Object.keys(types).find((k) => types[k] === t.type));
    const nb = Buffer.from(name, 'utf8');
    const data = Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength);
    const h = Buffer.alloc(4 + nb.length + 8 + 8 * t.dims.length + 8);
    let at = 0;
    h.writeUInt32LE(nb.length, at); at += 4;
    nb.copy(h, at); at += nb.length;
    h[at] = code; h[at + 1] = t.dims.length; at += 8;
    for (const d of t.dims) { h.writeBigInt64LE(BigInt(d), at); at += 8; }
    h.writeBigUInt64LE(BigInt(data.length), at);
    parts.push(h, data, Buffer.alloc((8 - (h.length + data.length) % 8) % 8));
  }
  return Buffer.concat(parts);
}

(async () => {
  // ORT_OPT=disabled: the graph as written, without ONNX Runtime's
  // rewrites (its QDQ fusions compute in integers and round their own way)
  const opts = {logSeverityLevel: 3};
  if (process.env.ORT_OPT) opts.graphOptimizationLevel = process.env.ORT_OPT;
  const session = await ort.InferenceSession.create(modelPath, opts);
  const feeds = readTensors(fs.readFileSync(inPath));
  const results = await session.run(feeds);
  fs.writeFileSync(outPath, writeTensors(results));
})().catch((e) => { console.error('run_ort: ' + e.message); process.exit(2); });
