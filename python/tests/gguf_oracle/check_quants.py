"""Each quantized tensor of a GGUF checked against ggml's own reference quantizer (run in
build/oracle-venv): `check_quants.py LIBGGML F32.gguf QUANT.gguf`. Both files are read by gguf-py;
every tensor of QUANT.gguf of a block type must be, byte for byte, what quantize_row_<type>_ref
of libggml-base.so makes of the same tensor's values in F32.gguf (the same export as F32, so the
same names, order and Q/K permutation). Prints {"compared", "differ", "types"} as JSON."""
import ctypes
import json
import sys

import numpy as np
from gguf import GGUFReader

ggml = ctypes.CDLL(sys.argv[1])
f32 = {t.name: t for t in GGUFReader(sys.argv[2]).tensors}
compared, differ, types = 0, [], {}
for t in GGUFReader(sys.argv[3]).tensors:
    name = t.tensor_type.name
    types[name] = types.get(name, 0) + 1
    if name in ("F32", "F16", "BF16"):
        continue
    x = np.ascontiguousarray(np.asarray(f32[t.name].data, dtype=np.float32))
    want = np.zeros(t.n_bytes, dtype=np.uint8)
    getattr(ggml, f"quantize_row_{name.lower().replace('_k', '_K')}_ref")(
        x.ctypes.data_as(ctypes.POINTER(ctypes.c_float)), want.ctypes.data_as(ctypes.c_void_p), ctypes.c_int64(x.size))
    compared += 1
    if not np.array_equal(np.asarray(t.data, dtype=np.uint8).reshape(-1), want):
        differ.append(t.name)
print(json.dumps({"compared": compared, "differ": differ, "types": types}))
