#!/usr/bin/env python3
"""Writes tiny_model.safetensors: a few llama-style tensors with deterministic values, for the
quantize/dequantize CLI golden tests. Standard library only; header written canonically by hand."""
import json
import math
import struct

def values(n, seed, scale):
    # A fixed pseudo-random sequence (LCG) shaped roughly like trained weights.
    out, x = [], seed
    for _ in range(n):
        x = (x * 6364136223846793005 + 1442695040888963407) % 2**64
        u = ((x >> 11) / 2**53) * 2 - 1
        out.append(scale * math.copysign(abs(u) ** 1.5, u))
    return out

tensors = {  # name: (shape, values), all F32
    "model.embed_tokens.weight": ([16, 8], values(128, 1, 1.0)),
    "model.layers.0.self_attn.q_proj.weight": ([8, 64], values(512, 2, 0.05)),
    "model.layers.0.mlp.down_proj.weight": ([8, 30], values(240, 3, 0.05)),
    "model.norm.weight": ([8], [1.0] * 8),
}
names = sorted(tensors)  # one dtype: canonical order is by name
header, offset, data = {"__metadata__": {"format": "pt"}}, 0, b""
for name in names:
    shape, vals = tensors[name]
    blob = struct.pack("<%df" % len(vals), *vals)
    header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [offset, offset + len(blob)]}
    offset += len(blob)
    data += blob
text = json.dumps(header, separators=(",", ":")).encode()
text += b" " * ((8 - len(text) % 8) % 8)
with open("tiny_model.safetensors", "wb") as f:
    f.write(struct.pack("<Q", len(text)) + text + data)
