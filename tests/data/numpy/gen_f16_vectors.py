#!/usr/bin/env python3
"""Writes f32_to_f16.bin: (u32 float32 bits, u16 numpy float16 bits) pairs, little-endian.

Inputs: every float32 just around each float16 value and midpoint (ties, one ulp either side),
subnormal and overflow boundaries, zeros, infinities, the quiet NaN, and random values over
float16's range. Run with Debian's python3-numpy (1.24): numpy's astype(float16) rounds to
nearest even. Signalling NaN payloads are left out on purpose: tlio quiets them (see
docs/dtypes.md), numpy does not.
"""
import numpy as np

rng = np.random.default_rng(20261130)
halves = np.arange(0, 0x7C01, dtype=np.uint32).astype(np.uint16).view(np.float16).astype(np.float64)
mids = (halves[:-1] + halves[1:]) / 2
base = np.concatenate([halves, mids]).astype(np.float32)
bits = base.view(np.uint32)
around = np.concatenate([bits, bits + 1, bits - 1]).astype(np.uint32)
special = np.array([0x00000000, 0x7F800000, 0x7FC00000, 0x477FF000, 0x477FEFFF, 0x477FF001,
                    0x47800000, 0x7F7FFFFF, 0x33000000, 0x33000001, 0x32FFFFFF, 0x387FE000,
                    0x38800000], dtype=np.uint32)
rand = rng.uniform(-70000, 70000, 30000).astype(np.float32).view(np.uint32)
tiny = (rng.uniform(-1, 1, 10000) * 2.0 ** rng.integers(-30, -10, 10000)).astype(np.float32).view(np.uint32)
allbits = np.concatenate([around, special, rand, tiny])
negated = rng.choice(allbits, 20000, replace=False) | np.uint32(0x80000000)
allbits = np.unique(np.concatenate([allbits, special | np.uint32(0x80000000), negated]))
f32 = allbits.view(np.float32)
# keep only non-NaN inputs and the canonical quiet NaNs
keep = ~np.isnan(f32) | ((allbits & 0x7FFFFFFF) == 0x7FC00000)
allbits, f32 = allbits[keep], f32[keep]
with np.errstate(over="ignore"):
    f16 = f32.astype(np.float16).view(np.uint16)
out = np.zeros(len(allbits), dtype=[("in", "<u4"), ("out", "<u2")])
out["in"], out["out"] = allbits, f16
out.tofile("f32_to_f16.bin")
print(len(out), "vectors")
