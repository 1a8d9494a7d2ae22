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
