"""Makes codebooks.gguf (one 2 x 256 tensor of each of ggml's codebook types IQ2_XXS, IQ2_XS,
IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M: random bytes, each block's scale a finite half) and
codebooks.expected.safetensors (their values as F32, decoded by libggml's dequantize_row_*).
Run with build/oracle-venv/bin/python (gguf-py) from the checkout:
  build/oracle-venv/bin/python tests/data/gguf/codebooks/make_codebooks.py tests/data/gguf/codebooks
"""
import ctypes
import json
import pathlib
import struct
import sys

import gguf
import numpy as np

LIB = ("build/npm/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libggml-base.so")
TYPES = {"IQ2_XXS": 66, "IQ2_XS": 74, "IQ2_S": 82, "IQ3_XXS": 98, "IQ3_S": 110, "IQ1_S": 50,
         "IQ1_M": 56}
out = pathlib.Path(sys.argv[1])
ggml = ctypes.CDLL(LIB)
rng = np.random.default_rng(2066)
w = gguf.GGUFWriter(str(out / "codebooks.gguf"), "llama")
values = {}
for name, size in TYPES.items():
    q = rng.integers(0, 256, size=(2, size), dtype=np.uint8)
    d = (rng.standard_normal(2) * 0.01).astype(np.float16)
    if name == "IQ1_M":  # d's nibbles are the top nibbles of the four 16-bit scale words
        bits = d.view(np.uint16)
        for k in range(4):
            word = q[:, 48 + 2 * k:50 + 2 * k].copy().view(np.uint16).reshape(2)
            word = (word & 0x0FFF) | (((bits >> (4 * k)) & 0xF) << 12).astype(np.uint16)
            q[:, 48 + 2 * k:50 + 2 * k] = word.view(np.uint8).reshape(2, 2)
    else:
        q[:, 0:2] = d.view(np.uint8).reshape(2, 2)
    w.add_tensor(name.lower(), q, raw_dtype=gguf.GGMLQuantizationType[name])
    y = np.zeros(512, dtype=np.float32)
    getattr(ggml, f"dequantize_row_{name.lower()}")(
        q.ctypes.data_as(ctypes.c_void_p), y.ctypes.data_as(ctypes.POINTER(ctypes.c_float)),
        ctypes.c_int64(512))
    values[name.lower()] = y.reshape(2, 256)
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()

# The expected values as a safetensors file, written by hand (no tlio, no torch).
header, offset, data = {}, 0, b""
for name in sorted(values):
    raw = values[name].tobytes()
    header[name] = {"dtype": "F32", "shape": [2, 256], "data_offsets": [offset, offset + len(raw)]}
    offset += len(raw)
    data += raw
text = json.dumps(header, separators=(",", ":")).encode()
text += b" " * (-len(text) % 8)
(out / "codebooks.expected.safetensors").write_bytes(struct.pack("<Q", len(text)) + text + data)
