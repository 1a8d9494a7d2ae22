#!/usr/bin/python3
"""Makes malformed variants of two bnb goldens (standard library only) for the CLI tests.

Each output breaks one rule that `tlio validate` must name; run from this folder:
    /usr/bin/python3 make_bad.py
"""
import json
import struct
from pathlib import Path

HERE = Path(__file__).parent
GOLDEN = HERE.parent / "bnb"
W = "model.layers.0.mlp.down_proj.weight"


def load(name):
    b = (GOLDEN / name).read_bytes()
    n = struct.unpack("<Q", b[:8])[0]
    header = json.loads(b[8:8 + n])
    meta = header.pop("__metadata__", None)
    data = b[8 + n:]
    tensors = {k: (v["dtype"], v["shape"], data[v["data_offsets"][0]:v["data_offsets"][1]])
               for k, v in header.items()}
    return meta, tensors


def save(name, meta, tensors):
    header, blobs, offset = {}, [], 0
    if meta is not None:
        header["__metadata__"] = meta
    for k in sorted(tensors):
        dtype, shape, raw = tensors[k]
        header[k] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    (HERE / name).write_bytes(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def state(tensors, text):
    tensors[W + ".quant_state.bitsandbytes__nf4"] = ("U8", [len(text)], text.encode())


meta, plain = load("nf4_bs64_f16_64x96.safetensors")
t = dict(plain)
state(t, '{"quant_type": "nf4", "blocksize": 48, "dtype": "float16", "shape": [64, 96]}')
save("bnb001_blocksize48.safetensors", meta, t)

t = dict(plain)
qmap = bytearray(t[W + ".quant_map"][2])
qmap[4:8] = struct.pack("<f", 0.5)
t[W + ".quant_map"] = ("F32", [16], bytes(qmap))
save("bnb003_quant_map.safetensors", meta, t)

t = dict(plain)
state(t, '{"quant_type": "nf4", "blocksize": 64, "dtype": "float16", "shape": [64, 100]}')
save("bnb002_shape.safetensors", meta, t)

meta, nested = load("nf4_bs64_f16_64x96_nested.safetensors")
t = dict(nested)
del t[W + ".nested_absmax"]
save("bnb004_no_nested_absmax.safetensors", meta, t)
