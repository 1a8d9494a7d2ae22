"""An independent reference for the Hub's quantized layouts, written from their published
dequantization (../shared/spec/notes/hub-quant-formats.md, copied in spirit to
docs/quantization.md), not from tlio's code: element codes decoded from their bit definitions,
packed fields built and read with plain integer arithmetic, products formed by torch in the
reference's operation order. Files are written and read by hand (8-byte length, JSON header,
data), so no tlio code is on the oracle's side."""
import json
import struct

import numpy as np
import torch

# ---- safetensors by hand ---------------------------------------------------------------------


def write_safetensors(path, tensors, metadata=None):
    """tensors: {name: (dtype name, shape, bytes)} in the order given."""
    header, blobs, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = metadata
    for name, (dtype, shape, data) in tensors.items():
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(bytes(data))
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def read_safetensors(path):
    """{name: (dtype name, shape, bytes)} and the metadata."""
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    metadata = header.pop("__metadata__", {})
    data = raw[8 + n:]
    return {k: (v["dtype"], v["shape"], data[v["data_offsets"][0]:v["data_offsets"][1]])
            for k, v in header.items()}, metadata


def write_folder(path, shards, config):
    """A Hugging Face folder: {file: tensors} shards with their index, and config.json."""
    path.mkdir()
    weight_map, total = {}, 0
    for file, tensors in shards.items():
        write_safetensors(path / file, tensors, {"format": "pt"})
        weight_map.update({name: file for name in tensors})
        total += sum(len(data) for _, _, data in tensors.values())
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    (path / "model.safetensors.index.json").write_text(json.dumps(index))
    (path / "config.json").write_text(json.dumps(config, indent=2))


def f32_bytes(a):
    return np.ascontiguousarray(a, dtype="<f4").tobytes()


def f16_bytes(a):
    return np.ascontiguousarray(a, dtype="<f2").tobytes()


def i32_bytes(a):
    return np.ascontiguousarray(a, dtype="<u4").tobytes()


def bf16_bits(t):
    """A torch tensor rounded to bfloat16, as uint16 bits."""
    return t.to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)


def bits_equal(got, want):
    """Bit-equal arrays, NaN equal to NaN wherever both are NaN (payloads may differ)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape, got.dtype, want.dtype)
    if got.dtype == np.uint16:  # bfloat16 bits
        nan_got = ((got & 0x7F80) == 0x7F80) & ((got & 0x7F) != 0)
        nan_want = ((want & 0x7F80) == 0x7F80) & ((want & 0x7F) != 0)
    else:
        nan_got, nan_want = np.isnan(got), np.isnan(want)
    assert np.array_equal(nan_got, nan_want), "NaN in different places"
    size = got.dtype.itemsize
    view = {2: np.uint16, 4: np.uint32}[size]
    g, w = got.view(view)[~nan_got], want.view(view)[~nan_want]
    bad = np.flatnonzero(g != w)
    assert bad.size == 0, f"{bad.size} values differ, first at {bad[0]}: {g[bad[0]]:#x} != {w[bad[0]]:#x}"


# ---- element codes ---------------------------------------------------------------------------


def e4m3_values(codes):
    """float8_e4m3fn codes -> float32: sign bit 7, exponent bits 3-6 (bias 7), mantissa bits 0-2;
    exponent 0 is subnormal (m/8 * 2^-6); S.1111.111 is NaN; no infinities."""
    c = np.asarray(codes).astype(np.int64)
    sign = np.where(c & 0x80, -1.0, 1.0)
    e, m = (c >> 3) & 0xF, c & 7
    magnitude = np.where(e == 0, m / 8.0 * 2.0 ** -6, (1 + m / 8.0) * 2.0 ** (e - 7))
    magnitude = np.where((e == 15) & (m == 7), np.nan, magnitude)
    return (sign * magnitude).astype(np.float32)


# ---- FP8 -------------------------------------------------------------------------------------


def e4m3_encode(x):
    """float32 -> float8_e4m3fn codes, round to nearest even, by search over the code table (no
    float8 type in this torch): the nearest magnitude among codes 0..0x7E, ties to the even code,
    then the sign bit (so a negative value that rounds to zero is -0)."""
    x = np.asarray(x, dtype=np.float32)
    table = e4m3_values(np.arange(0x7F))  # 0 .. 448, increasing
    a = np.abs(x).astype(np.float64)
    hi = np.clip(np.searchsorted(table, a), 1, 0x7E)
    lo = hi - 1
    d_lo, d_hi = a - table[lo], table[hi] - a
    pick = np.where((d_hi < d_lo) | ((d_hi == d_lo) & (hi % 2 == 0)), hi, lo)
    pick = np.where(a >= table[-1], 0x7E, pick)
    return (pick | np.where(np.signbit(x), 0x80, 0)).astype(np.uint8)




def fp8_block_reference(codes, scale_inv, block=(128, 128)):
    """DeepSeek's weight_dequant: f32(w) * f32(s[i // 128, j // 128]), one f32 rounding, stored
    as bf16 by the caller. Partial edge blocks take their block's scale."""
    rows, cols = codes.shape
    s = np.repeat(np.repeat(scale_inv, block[0], axis=0), block[1], axis=1)[:rows, :cols]
    return e4m3_values(codes) * s.astype(np.float32)


def ct_fp8_reference(codes, scale):
    """compressed-tensors' dequantize: q.to(scale.dtype) * scale, broadcast, in the scale's dtype."""
    q = torch.from_numpy(e4m3_values(codes)).to(scale.dtype)  # exact: E4M3 fits bf16/f16/f32
    return q * scale


# ---- GPTQ and AWQ ----------------------------------------------------------------------------


def pack_dim0(values, bits):
    """[L, M] fields -> I32 [L*bits/32, M]: each column a little-endian LSB-first bit stream."""
    rows, cols = values.shape
    assert rows * bits % 32 == 0
    words = np.zeros((rows * bits // 32, cols), dtype=np.uint64)
    for k in range(rows):
        word, shift = divmod(k * bits, 32)
        v = values[k].astype(np.uint64) & ((1 << bits) - 1)
        words[word] |= (v << np.uint64(shift)) & np.uint64(0xFFFFFFFF)
        if shift + bits > 32:
            words[word + 1] |= v >> np.uint64(32 - shift)
    return words.astype(np.uint32)


def pack_dim1(values, bits):
    """[M, L] fields -> [M, L*bits/32]: the stream runs along each row."""
    return pack_dim0(values.T, bits).T.copy()


AWQ_ORDER = [0, 2, 4, 6, 1, 3, 5, 7]  # nibble i of a word holds column AWQ_ORDER[i] of its eight


def pack_awq(values):
    """[R, N] 4-bit fields -> [R, N/8] words, AutoAWQ's GEMM order."""
    rows, cols = values.shape
    words = np.zeros((rows, cols // 8), dtype=np.uint64)
    for j in range(cols // 8):
        for nibble, column in enumerate(AWQ_ORDER):
            words[:, j] |= values[:, 8 * j + column].astype(np.uint64) << np.uint64(4 * nibble)
    return words.astype(np.uint32)


def gptq_reference(q, zeros, scales, g_idx):
    """The GPTQ torch path: W^T[k, n] = scales[g_idx[k], n] * (q[k, n] - z[g_idx[k], n]) in the
    scales' dtype (z already the effective zero point); returns the Linear's [out, in]."""
    s = torch.from_numpy(scales)[torch.from_numpy(g_idx).long()]
    diff = torch.from_numpy(q.astype(np.int64) - zeros[g_idx].astype(np.int64)).to(s.dtype)
    return (s * diff).t().contiguous()


def awq_reference(q, zeros, scales, group):
    """AutoAWQ's dequantize_gemm: (q - z) * s per group of input rows, in the scales' dtype."""
    g = np.arange(q.shape[0]) // group
    diff = torch.from_numpy(q.astype(np.int64) - zeros[g].astype(np.int64)).to(torch.float16)
    return (diff * torch.from_numpy(scales)[torch.from_numpy(g)]).t().contiguous()


# ---- FP4 (E2M1), E8M0 and their references (hub-quant-formats.md §1.1, §3.5, §3.6, §4) -----------


def torch_raw(t):
    """A BF16/F16/F32 torch tensor as (safetensors dtype, little-endian bytes)."""
    if t.dtype == torch.bfloat16:
        return "BF16", t.contiguous().view(torch.int16).numpy().astype("<i2").tobytes()
    return {torch.float16: "F16", torch.float32: "F32"}[t.dtype], t.contiguous().numpy().astype(
        {torch.float16: "<f2", torch.float32: "<f4"}[t.dtype]).tobytes()


def e2m1_values(codes, zero8=-0.0):
    """FP4 E2M1 codes -> float32: sign bit 3, exponent bits 1-2 (bias 1), mantissa bit 0; exponent
    0 is subnormal (m * 0.5). Code 8 is -0 by its sign bit (gpt-oss, compressed-tensors); ModelOpt's
    table holds +0 there (zero8=0.0)."""
    c = np.asarray(codes).astype(np.int64)
    e, m = (c >> 1) & 3, c & 1
    magnitude = np.where(e == 0, m * 0.5, (1 + m / 2.0) * 2.0 ** (e - 1))
    v = np.where(c & 8, -magnitude, magnitude).astype(np.float32)
    return np.where(c == 8, np.float32(zero8), v).astype(np.float32)


def e8m0_values(b):
    """E8M0 bytes -> float32 2^(b-127), built as float32 bits: b is the biased exponent field, so
    b = 255 lands on +inf (2^128 overflows f32, as the references compute it) and b = 0, which has
    no normal f32, is the subnormal 2^-127 (0x00400000)."""
    b = np.asarray(b).astype(np.uint32)
    return np.where(b == 0, np.uint32(0x00400000), b << np.uint32(23)).astype(np.uint32).view(np.float32)


def pack_fp4(codes):
    """[..., n] 4-bit codes -> U8 [..., n/2]: byte i holds element 2i in its low nibble, 2i+1 high."""
    c = np.asarray(codes).astype(np.uint8)
    return (c[..., 0::2] | (c[..., 1::2] << 4)).astype(np.uint8)


def fp4_codes(packed):
    """U8 [..., n/2] -> codes [..., n] by the index rule: element k is in byte k // 2, in its low
    nibble for even k, its high nibble for odd k."""
    p = np.asarray(packed).astype(np.int64)
    k = np.arange(p.shape[-1] * 2)
    byte = p[..., k // 2]
    return np.where(k % 2 == 0, byte & 0xF, byte >> 4)


def mxfp4_reference(blocks, scales):
    """gpt-oss / transformers MXFP4: blocks U8 [..., G, 16] + E8M0 scales U8 [..., G] -> the f32
    products table[code] * 2^(b-127) [..., G*32] (exact but for +-inf and 0 * inf = NaN); element k
    is in byte (k % 32) // 2 of block k // 32, i.e. byte k // 2 of the row. Rounded to BF16 (the
    reference's dtype) by the caller; compressed-tensors' mxfp4 (bf16 math) gives the same."""
    rows = blocks.reshape(*blocks.shape[:-2], blocks.shape[-2] * blocks.shape[-1])
    v = torch.from_numpy(e2m1_values(fp4_codes(rows)))
    s = torch.from_numpy(np.repeat(e8m0_values(scales), 32, axis=-1))
    return v * s


def ct_nvfp4_reference(packed, scale_codes, global_scale):
    """compressed-tensors nvfp4: s = f32(e4m3) / global (one f32 rounding), y = f32(v) * s (one
    more), code 8 = -0; y is F32, the reference casts it to BF16."""
    v = torch.from_numpy(e2m1_values(fp4_codes(packed)))
    s = torch.from_numpy(e4m3_values(scale_codes)) / torch.tensor(float(global_scale), dtype=torch.float32)
    return v * torch.repeat_interleave(s, 16, dim=-1)


def modelopt_nvfp4_reference(packed, scale_codes, scale_2):
    """ModelOpt NVFP4: s = f32(e4m3) * weight_scale_2 (f32 rounding), y = table(v) * s (f32
    rounding), code 8 = +0 in its table; y is F32, cast to BF16 by the caller."""
    v = torch.from_numpy(e2m1_values(fp4_codes(packed), zero8=0.0))
    s = torch.from_numpy(e4m3_values(scale_codes)) * torch.tensor(float(scale_2), dtype=torch.float32)
    return v * torch.repeat_interleave(s, 16, dim=-1)


def ct_mxfp8_reference(codes, scale):
    """compressed-tensors mxfp8: e4m3(w) * 2^(b-127) per 32 inputs, exact in f32 (<= 4 significant
    bits, >= 2^-136), so rounding it to BF16 once equals the reference's bf16 multiply."""
    s = torch.from_numpy(np.repeat(e8m0_values(scale), 32, axis=-1))
    return torch.from_numpy(e4m3_values(codes)) * s


# ---- compressed-tensors integers (§3.4, §3.5) -------------------------------------------------


def pack_rows(fields, bits):
    """[M, L] unsigned fields -> uint32 [M, ceil(L*bits/32)]: each row a dense LSB-first stream,
    element k at bit k*bits (fields cross words), zero bits after the last element."""
    rows, length = fields.shape
    words = np.zeros((rows, -(-length * bits // 32)), dtype=np.uint64)
    mask = np.uint64((1 << bits) - 1)
    for k in range(length):
        word, shift = divmod(k * bits, 32)
        v = fields[:, k].astype(np.uint64) & mask
        words[:, word] |= (v << np.uint64(shift)) & np.uint64(0xFFFFFFFF)
        if shift + bits > 32:
            words[:, word + 1] |= v >> np.uint64(32 - shift)
    return words.astype(np.uint32)


def ct_pack(q, bits):
    """Signed q [..., out, in] -> weight_packed [..., out, ceil(in*bits/32)]: offset binary
    (q + 2^(bits-1)), packed along the inputs of each 2-D slice."""
    u = np.asarray(q).astype(np.int64) + (1 << (bits - 1))
    assert u.min() >= 0 and u.max() < 1 << bits
    flat = pack_rows(u.reshape(-1, u.shape[-1]), bits)
    return flat.reshape(*u.shape[:-1], flat.shape[-1])


def ct_pack_zero_point(zp, bits):
    """Signed zero points [out, groups] -> I32 [ceil(out*bits/32), groups]: the same offset code,
    column g an LSB-first stream over the output rows."""
    return ct_pack(np.asarray(zp).T, bits).T.copy()


def ct_int_reference(q, scale, group_of_column, zp=None):
    """compressed-tensors' dequantize, in the scale's dtype: x = q.to(dtype); x = x - zp.to(dtype)
    (asymmetric); x = x * scale; column k takes group group_of_column[k] (k // group_size, or
    g_idx[k]). q, zp: signed integers [..., out, in] and [..., out, groups]; scale: torch."""
    cols = torch.from_numpy(np.asarray(group_of_column, dtype=np.int64))
    x = torch.from_numpy(np.asarray(q, dtype=np.int64)).to(scale.dtype)
    if zp is not None:
        x = x - torch.from_numpy(np.asarray(zp, dtype=np.int64))[..., cols].to(scale.dtype)
    return x * scale[..., cols]
