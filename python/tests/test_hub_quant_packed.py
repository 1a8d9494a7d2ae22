"""The Hub's packed formats (gpt-oss MXFP4, compressed-tensors mxfp4/nvfp4/mxfp8/pack-/int-quantized,
ModelOpt NVFP4) read bit for bit as their references compute them, through the CLI and Python.
The reference is hub_quant_oracle.py (independent of tlio); the files are written by hand."""
import json
import os
import pathlib
import re
import subprocess

import numpy as np
import pytest
import torch

import tlio
from hub_quant_oracle import (bf16_bits, bits_equal, ct_int_reference, ct_mxfp8_reference,
                              ct_nvfp4_reference, ct_pack, ct_pack_zero_point, e2m1_values,
                              e4m3_values, e8m0_values, f32_bytes, fp4_codes, i32_bytes,
                              modelopt_nvfp4_reference, mxfp4_reference, pack_fp4, pack_rows,
                              read_safetensors, torch_raw, write_folder, write_safetensors)

CLI = os.environ.get("TLIO_CLI", str(pathlib.Path(__file__).parents[2] / "build" / "tlio"))
P = "model.layers.0.mlp.experts."
GU, DN = P + "gate_up_proj", P + "down_proj"
M = "model.layers.0.mlp.down_proj"
GPT_OSS = {"architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss", "torch_dtype": "bfloat16",
           "quantization_config": {"quant_method": "mxfp4", "modules_to_not_convert": [
               "model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"]}}


def run(*args):
    return subprocess.run([CLI, *map(str, args)], capture_output=True, text=True, timeout=120)


def u8(a):
    return ("U8", list(a.shape), np.ascontiguousarray(a, np.uint8).tobytes())


def raw(t):
    """A torch tensor as a safetensors entry."""
    dtype, data = torch_raw(t)
    return (dtype, list(t.shape), data)


def bf16(rng, shape):
    return raw(torch.from_numpy(rng.standard_normal(shape).astype(np.float32)).to(torch.bfloat16))


def np_bits(t):
    """A torch result as numpy for bits_equal (BF16 as its uint16 bits)."""
    return t.contiguous().view(torch.int16).numpy().view(np.uint16) if t.dtype == torch.bfloat16 else t.numpy()


def stored(entry):
    """An output entry as numpy (BF16 as its uint16 bits)."""
    dtype, shape, data = entry
    return np.frombuffer(data, {"BF16": np.uint16, "F16": np.float16, "F32": np.float32}[dtype]).reshape(shape)


def entries(f):
    return {w["name"]: (w["scheme"], w["dtype"], list(w["shape"])) for w in f.quantized()}


def check_dequantize(src, out, want, plain, *args):
    """dequantize SRC OUT: exactly the `want` weights ({name: (dtype, expected numpy)}) and the
    `plain` tensors byte for byte; a folder keeps its config without quantization_config."""
    r = run("dequantize", src, out, *args)
    assert r.returncode == 0, r.stderr
    files = [out] if out.suffix == ".safetensors" else sorted(out.glob("*.safetensors"))
    got = {}
    for f in files:
        got.update(read_safetensors(f)[0])
    assert sorted(got) == sorted([*want, *plain])
    for name, (dtype, value) in want.items():
        assert (got[name][0], got[name][1]) == (dtype, list(value.shape)), name
        bits_equal(stored(got[name]), value)
    for name, (dtype, shape, data) in plain.items():
        assert got[name] == (dtype, list(shape), bytes(data)), name
    if out.is_dir():
        config = json.loads((out / "config.json").read_text())
        assert "quantization_config" not in config and "model_type" in config
    return got


# ---- the oracle's own known answers ---------------------------------------------------------


def stream_by_string(row, bits):
    """A second packer: the row's bits as a string, element k's bit j at position k*bits + j."""
    text = "".join(format(int(u), f"0{bits}b")[::-1] for u in row)
    text += "0" * (-len(text) % 32)
    return [int(text[i:i + 32][::-1], 2) for i in range(0, len(text), 32)]


def test_oracle_known_answers():
    """The note's anchors: the E2M1 table and zero signs, E8M0 at 0/127/254/255, 8-bit [1, 2]
    packing to 33409, FP4 nibble order; and the packer against a bit-string construction."""
    table = e2m1_values(np.arange(16))
    assert table.tolist() == [0, .5, 1, 1.5, 2, 3, 4, 6, 0, -.5, -1, -1.5, -2, -3, -4, -6]
    assert np.signbit(table[8]) and not np.signbit(e2m1_values(np.arange(16), zero8=0.0)[8])
    assert not np.signbit(table[0])
    s = e8m0_values(np.array([0, 127, 254, 255]))
    assert s[0] == np.float32(2.0 ** -127) and s[1] == 1 and s[2] == np.float32(2.0 ** 127) and np.isposinf(s[3])
    b = np.arange(1, 255)
    assert np.array_equal(e8m0_values(b).astype(np.float64), 2.0 ** (b - 127))
    assert ct_pack(np.array([[1, 2]]), 8).tolist() == [[33409]]
    assert ct_pack(np.array([[1, 2]]), 8).view(np.uint8)[0, :4].tolist() == [129, 130, 0, 0]
    assert pack_fp4(np.array([1, 2, 15, 8])).tolist() == [0x21, 0x8F]
    assert fp4_codes(np.array([0x21, 0x8F])).tolist() == [1, 2, 15, 8]
    assert e4m3_values(np.array([0x7E, 0xFE, 0x01, 0x38])).tolist() == [448, -448, 2.0 ** -9, 1]
    rng = np.random.default_rng(1)
    for bits in range(1, 9):
        for length in (1, 31, 33, 72):
            u = rng.integers(0, 1 << bits, (3, length))
            got = pack_rows(u, bits)
            assert got.shape == (3, -(-length * bits // 32))
            assert [list(r) for r in got] == [stream_by_string(r, bits)[:got.shape[1]] for r in u]


# ---- gpt-oss MXFP4 --------------------------------------------------------------------------


def mxfp4_parts(rng, experts, rows, k):
    """Random blocks and scales; expert 0's rows 0-3 hold every code in both nibbles, with the
    E8M0 scales 0, 127, 254, 255 on their first block."""
    blocks = rng.integers(0, 256, (experts, rows, k // 32, 16), dtype=np.uint8)
    scales = rng.integers(110, 140, (experts, rows, k // 32), dtype=np.uint8)
    every = (np.arange(16) | ((15 - np.arange(16)) << 4)).astype(np.uint8)
    for r, b in enumerate([0, 127, 254, 255]):
        blocks[0, r, 0], scales[0, r, 0] = every, b
    return blocks, scales


@pytest.fixture
def gpt_oss(tmp_path):
    """Two experts (H = 64, I = 32) in two shards, each weight's _scales in the other shard."""
    rng = np.random.default_rng(21)
    gu_b, gu_s = mxfp4_parts(rng, 2, 64, 64)
    dn_b, dn_s = mxfp4_parts(rng, 2, 64, 32)
    shards = {"model-00001-of-00002.safetensors": {
                  GU + "_blocks": u8(gu_b), DN + "_scales": u8(dn_s), GU + "_bias": bf16(rng, [2, 64]),
                  "model.layers.0.self_attn.q_proj.weight": bf16(rng, [8, 64])},
              "model-00002-of-00002.safetensors": {
                  GU + "_scales": u8(gu_s), DN + "_blocks": u8(dn_b), DN + "_bias": bf16(rng, [2, 64]),
                  "model.norm.weight": ("F32", [64], f32_bytes(rng.random(64)))}}
    write_folder(tmp_path / "oss", shards, GPT_OSS)
    (tmp_path / "oss" / "tokenizer.json").write_text('{"version": "1.0"}')
    want = {GU: mxfp4_reference(gu_b, gu_s).transpose(1, 2), DN: mxfp4_reference(dn_b, dn_s).transpose(1, 2)}
    plain = {n: e for ts in shards.values() for n, e in ts.items() if not n.endswith(("_blocks", "_scales"))}
    return tmp_path / "oss", want, plain


def test_gpt_oss_folder_dequantizes_to_transformers_layout(gpt_oss, tmp_path):
    """Two shards stay two, each weight [E, in, out] in BF16 (gate/up rows kept interleaved),
    biases and unquantized tensors byte-identical, other files copied."""
    src, want, plain = gpt_oss
    out = tmp_path / "out"
    check_dequantize(src, out, {n: ("BF16", bf16_bits(w)) for n, w in want.items()}, plain)
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["config.json", "tokenizer.json", "model.safetensors.index.json",
         "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"])
    weight_map = json.loads((out / "model.safetensors.index.json").read_text())["weight_map"]
    assert sorted(weight_map) == sorted([*want, *plain])
    for name, file in weight_map.items():
        assert name in read_safetensors(out / file)[0]


def test_gpt_oss_tiles_of_outputs_and_inputs_with_edges(tmp_path):
    """40 outputs (two tiles of 16 and one of 8) by 320 inputs (a tile of 256 and one of 64): the
    transposed decoding's partial tiles, each value as the reference has it."""
    blocks, scales = mxfp4_parts(np.random.default_rng(5), 1, 40, 320)
    write_folder(tmp_path / "oss", {"model.safetensors": {DN + "_blocks": u8(blocks), DN + "_scales": u8(scales)}},
                 GPT_OSS)
    want = bf16_bits(mxfp4_reference(blocks, scales).transpose(1, 2))
    with tlio.safe_open(tmp_path / "oss", "pt") as f:
        bits_equal(np_bits(f.get_dequantized(DN)), want)
    # A slice reads ranges that start off the groups: cat decodes them as F32, before rounding.
    r = subprocess.run([CLI, "cat", tmp_path / "oss", DN, "--slice", "0,5:290,3:37", "--json"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    got = np.array(json.loads(r.stdout)["values"], dtype=np.float32)  # JSON: non-finite as null
    ref = mxfp4_reference(blocks, scales).transpose(1, 2)[0, 5:290, 3:37].numpy()
    finite = np.isfinite(ref)
    assert np.array_equal(got[finite], ref[finite]) and np.isnan(got[~finite]).all()


def test_gpt_oss_folder_through_python(gpt_oss):
    src, want, _ = gpt_oss
    with tlio.safe_open(src, "pt") as f:
        assert entries(f) == {GU: ("mxfp4", "BF16", [2, 64, 64]), DN: ("mxfp4", "BF16", [2, 32, 64])}
        for name, w in want.items():
            got = f.get_dequantized(name)
            assert got.dtype == torch.bfloat16
            bits_equal(np_bits(got), bf16_bits(w))
    with tlio.safe_open(src, "np") as f:
        got = f.get_dequantized(GU, "F32")
        bits_equal(got, want[GU].contiguous().numpy())  # every product is exact in f32
        # Known answers, transformers' [E, in, out]: row 1 (b = 127) holds codes 0, 15, 1, 14.
        assert got[0, :4, 1].tolist() == [0.0, -6.0, 0.5, -4.0]
        assert got[0, 1, 2] == -np.inf and np.isnan(got[0, 0, 3])  # -6 * 2^127; 0 * 2^128
        assert got[0, 4, 0] == np.float32(2.0 ** -127)  # code 2 (1.0) with b = 0
        # F16 is converted from the reference's BF16 (overflows to inf, 2^-127 to 0).
        bits_equal(f.get_dequantized(DN, "F16"), want[DN].to(torch.bfloat16).half().numpy())


def test_gpt_oss_lone_file_without_config(tmp_path):
    """`<p>_blocks` + `<p>_scales` in a file of their own: still transformers' [E, in, out]."""
    rng = np.random.default_rng(23)
    blocks, scales = mxfp4_parts(rng, 1, 4, 96)
    src = tmp_path / "experts.safetensors"
    write_safetensors(src, {DN + "_blocks": u8(blocks), DN + "_scales": u8(scales)})
    r = run("validate", src)
    assert r.returncode == 0, r.stderr
    want = mxfp4_reference(blocks, scales).transpose(1, 2)
    with tlio.safe_open(src, "pt") as f:
        assert entries(f) == {DN: ("mxfp4", "BF16", [1, 96, 4])}
        bits_equal(np_bits(f.get_dequantized(DN)), bf16_bits(want))
    check_dequantize(src, tmp_path / "out.safetensors", {DN: ("BF16", bf16_bits(want))}, {}, "--dtype", "bf16")


def test_openai_original_names_keep_the_reference_layout(tmp_path):
    """`<p>.blocks` / `<p>.scales` (gpt-oss's own checkpoint) decode to `<p>` [E, out, in], no
    transpose; a lone file validates, dequantizes to F32 on request, and cat shows the values."""
    rng = np.random.default_rng(22)
    b1, s1 = mxfp4_parts(rng, 2, 8, 64)
    b2, s2 = mxfp4_parts(rng, 2, 4, 32)
    src = tmp_path / "orig.safetensors"
    bias = bf16(rng, [2, 8])
    write_safetensors(src, {"block.0.mlp.mlp1_weight.blocks": u8(b1), "block.0.mlp.mlp1_weight.scales": u8(s1),
                            "block.0.mlp.mlp1_bias": bias, "block.0.mlp.mlp2_weight.blocks": u8(b2),
                            "block.0.mlp.mlp2_weight.scales": u8(s2)})
    w1, w2 = mxfp4_reference(b1, s1), mxfp4_reference(b2, s2)
    r = run("validate", src)
    assert r.returncode == 0, r.stderr
    with tlio.safe_open(src, "pt") as f:
        assert entries(f) == {"block.0.mlp.mlp1_weight": ("mxfp4", "BF16", [2, 8, 64]),
                              "block.0.mlp.mlp2_weight": ("mxfp4", "BF16", [2, 4, 32])}
        bits_equal(np_bits(f.get_dequantized("block.0.mlp.mlp1_weight")), bf16_bits(w1))
    check_dequantize(src, tmp_path / "out.safetensors", {"block.0.mlp.mlp1_weight": ("F32", w1.numpy()),
                                                         "block.0.mlp.mlp2_weight": ("F32", w2.numpy())},
                     {"block.0.mlp.mlp1_bias": bias}, "--dtype", "f32")
    r = run("cat", src, "block.0.mlp.mlp1_weight", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout, parse_int=float)  # "-0" is a negative zero
    assert (doc["scheme"], doc["shape"]) == ("mxfp4", [2, 8, 64])
    values = np.array(doc["values"], dtype=np.float32)  # null (NaN, +-inf) reads as NaN
    w = w1.numpy().copy()
    w[~np.isfinite(w)] = np.nan
    bits_equal(values, w)


# ---- compressed-tensors FP4 / FP8 -----------------------------------------------------------


def ct_folder(path, tensors, fmt, weights, **more):
    """A compressed-tensors folder: `tensors` beside a plain lm_head (in `ignore`); returns the
    plain tensors."""
    plain = {"lm_head.weight": bf16(np.random.default_rng(0), [4, 8])}
    config = {"model_type": "qwen3", "torch_dtype": "bfloat16", "quantization_config": {
        "quant_method": "compressed-tensors", "format": fmt, "quantization_status": "compressed",
        "config_groups": {"group_0": {"targets": ["Linear"], "weights": weights, **more}},
        "ignore": ["lm_head"]}}
    write_folder(path, {"model.safetensors": {**tensors, **plain}}, config)
    return plain


def fp4_codes_with_all(rng, out, inp):
    codes = rng.integers(0, 16, (out, inp))
    codes[:2] = np.tile(np.arange(16), inp // 16)  # every code in every group of rows 0 and 1
    return codes


def test_ct_mxfp4_pack_quantized(tmp_path):
    """E8M0 0/127/254/255 and scales whose products over- and underflow F16 (converted from BF16)."""
    rng = np.random.default_rng(31)
    codes = fp4_codes_with_all(rng, 8, 96)
    scale = rng.integers(95, 161, (8, 3), dtype=np.uint8)
    scale[0], scale[1, 0] = [0, 127, 254], 255
    packed = pack_fp4(codes)
    plain = ct_folder(tmp_path / "ct", {M + ".weight_packed": u8(packed), M + ".weight_scale": u8(scale)},
                      "mxfp4-pack-quantized", {"num_bits": 4, "type": "float", "symmetric": True,
                                               "strategy": "group", "group_size": 32})
    want = mxfp4_reference(packed.reshape(8, 3, 16), scale)
    with tlio.safe_open(tmp_path / "ct", "pt") as f:
        assert entries(f) == {M + ".weight": ("mxfp4", "BF16", [8, 96])}
        bits_equal(np_bits(f.get_dequantized(M + ".weight")), bf16_bits(want))
    check_dequantize(tmp_path / "ct", tmp_path / "out",
                     {M + ".weight": ("F16", want.to(torch.bfloat16).half().numpy())}, plain, "--dtype", "f16")


NVFP4_HARD_SCALES = [[0x7F, 0x7E, 0xFE, 0x00], [0x80, 0x01, 0x08, 0x3C]]  # NaN, +-448, +-0, subnormals, 1


def nvfp4_parts(rng, out, inp):
    codes = fp4_codes_with_all(rng, out, inp)
    scale = rng.integers(0x28, 0x70, (out, inp // 16), dtype=np.uint8)
    scale.reshape(-1)[:8] = np.ravel(NVFP4_HARD_SCALES)
    return pack_fp4(codes), scale


def test_ct_nvfp4_pack_quantized(tmp_path):
    """s = e4m3 / global, y = v * s (two f32 roundings), BF16; F32 gives y; the global and input
    global scales are gone from the output."""
    rng = np.random.default_rng(32)
    packed, scale = nvfp4_parts(rng, 8, 64)
    glob = np.float32(6 * 448 / 3.7)
    e4m3 = e4m3_values(scale)
    assert np.any(e4m3 / glob != e4m3 * (1 / glob))  # dividing by the global is not multiplying by its inverse
    plain = ct_folder(tmp_path / "ct", {
        M + ".weight_packed": u8(packed), M + ".weight_scale": ("F8_E4M3", [8, 4], scale.tobytes()),
        M + ".weight_global_scale": ("F32", [1], f32_bytes([glob])),
        M + ".input_global_scale": ("F32", [1], f32_bytes([3.5]))},
        "nvfp4-pack-quantized", {"num_bits": 4, "type": "float", "symmetric": True, "strategy": "tensor_group",
                                 "group_size": 16},
        input_activations={"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16,
                           "dynamic": "local"})
    want = ct_nvfp4_reference(packed, scale, glob)
    with tlio.safe_open(tmp_path / "ct", "pt") as f:
        assert entries(f) == {M + ".weight": ("nvfp4", "BF16", [8, 64])}
        bits_equal(np_bits(f.get_dequantized(M + ".weight")), bf16_bits(want))
    with tlio.safe_open(tmp_path / "ct", "np") as f:
        bits_equal(f.get_dequantized(M + ".weight", "F32"), want.numpy())
    check_dequantize(tmp_path / "ct", tmp_path / "out", {M + ".weight": ("BF16", bf16_bits(want))}, plain,
                     "--dtype", "bf16")
    check_dequantize(tmp_path / "ct", tmp_path / "out32", {M + ".weight": ("F32", want.numpy())}, plain,
                     "--dtype", "f32")


@pytest.mark.parametrize("bare", [True, False])
def test_modelopt_nvfp4(tmp_path, bare):
    """weight_scale_2 of shape [] and [1]; s = e4m3 * scale_2, y = table(v) * s; input_scale dropped."""
    rng = np.random.default_rng(33)
    tensors, want, plain = {}, {}, {"model.norm.weight": ("F32", [4], f32_bytes([1, 2, 3, 4]))}
    for m, shape2, inp in (("model.layers.0.self_attn.o_proj", [], 32), (M, [1], 48)):
        packed, scale = nvfp4_parts(rng, 4, inp)
        s2 = np.float32(rng.random() / 2688)
        tensors.update({m + ".weight": u8(packed), m + ".weight_scale": ("F8_E4M3", [4, inp // 16], scale.tobytes()),
                        m + ".weight_scale_2": ("F32", shape2, f32_bytes([s2])),
                        m + ".input_scale": ("F32", [], f32_bytes([0.25]))})
        want[m + ".weight"] = modelopt_nvfp4_reference(packed, scale, s2)
    if bare:
        src, out = tmp_path / "mo.safetensors", tmp_path / "out.safetensors"
        write_safetensors(src, {**tensors, **plain})
        r = run("validate", src)
        assert r.returncode == 0, r.stderr
    else:
        src, out = tmp_path / "mo", tmp_path / "out"
        write_folder(src, {"model.safetensors": {**tensors, **plain}}, {
            "model_type": "qwen3", "quantization_config": {"quant_method": "modelopt", "quant_algo": "NVFP4",
                                                           "group_size": 16, "exclude_modules": ["lm_head"]}})
    with tlio.safe_open(src, "pt") as f:
        assert entries(f) == {n: ("nvfp4", "BF16", list(w.shape)) for n, w in want.items()}
        for n, w in want.items():
            bits_equal(np_bits(f.get_dequantized(n)), bf16_bits(w))
    with tlio.safe_open(src, "np") as f:
        for n, w in want.items():
            bits_equal(f.get_dequantized(n, "F32"), w.numpy())
    check_dequantize(src, out, {n: ("BF16", bf16_bits(w)) for n, w in want.items()}, plain)


def test_fp4_code_8_is_minus_zero_in_ct_and_plus_zero_in_modelopt(tmp_path):
    """The same bytes and unit scales: compressed-tensors' code 8 is -0, ModelOpt's table +0."""
    packed = np.array([[0x88, 0x08, 0x80, 0x00] * 4], np.uint8)  # codes 8 8 8 0 0 8 0 0 ...
    one = np.array([[0x38, 0x38]], np.uint8)  # E4M3 1.0
    ct_folder(tmp_path / "ct", {M + ".weight_packed": u8(packed),
                                M + ".weight_scale": ("F8_E4M3", [1, 2], one.tobytes()),
                                M + ".weight_global_scale": ("F32", [1], f32_bytes([1.0]))},
              "nvfp4-pack-quantized", {"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16})
    write_safetensors(tmp_path / "mo.safetensors", {
        "x.weight": u8(packed), "x.weight_scale": ("F8_E4M3", [1, 2], one.tobytes()),
        "x.weight_scale_2": ("F32", [], f32_bytes([1.0]))})
    minus = np.array([[True, True, True, False, False, True, False, False] * 4])
    with tlio.safe_open(tmp_path / "ct", "np") as f:
        got = f.get_dequantized(M + ".weight", "F32")
        assert np.all(got == 0) and np.array_equal(np.signbit(got), minus)
    with tlio.safe_open(tmp_path / "ct", "pt") as f:
        assert np.array_equal(np_bits(f.get_dequantized(M + ".weight")), np.where(minus, 0x8000, 0).astype(np.uint16))
    with tlio.safe_open(tmp_path / "mo.safetensors", "pt") as f:
        assert np.array_equal(np_bits(f.get_dequantized("x.weight")), np.zeros((1, 32), np.uint16))


def test_ct_mxfp8_quantized(tmp_path):
    """E4M3 NaN, +-448, -0 and subnormals times E8M0 0 (products below BF16's subnormals round
    once), 254 and 255 (inf; NaN stays NaN)."""
    rng = np.random.default_rng(34)
    codes = rng.integers(0, 256, (4, 64), dtype=np.uint8)
    codes[(codes & 0x7F) == 0x7F] = 0x3C
    codes[0, :32] = [*range(1, 8), *range(0x81, 0x88), *range(8, 16),
                     0x7E, 0xFE, 0x7F, 0x80, 0x00, 0x40, 0x38, 0xC0, 0x30, 0x78]
    codes[1, :32] = codes[0, :32]
    scale = rng.integers(100, 150, (4, 2), dtype=np.uint8)
    scale[0], scale[1] = [0, 255], [254, 127]
    plain = ct_folder(tmp_path / "ct", {M + ".weight": ("F8_E4M3", [4, 64], codes.tobytes()),
                                        M + ".weight_scale": u8(scale)},
                      "mxfp8-quantized", {"num_bits": 8, "type": "float", "symmetric": True, "strategy": "group",
                                          "group_size": 32})
    want = ct_mxfp8_reference(codes, scale)
    # 4 * 2^-9 * 2^-127 = 2^-134, half BF16's least subnormal: a tie to even, 0; 5 * 2^-136 rounds up.
    assert bf16_bits(want)[0, 3] == 0 and bf16_bits(want)[0, 4] == 1
    with tlio.safe_open(tmp_path / "ct", "pt") as f:
        assert entries(f) == {M + ".weight": ("mxfp8", "BF16", [4, 64])}
        bits_equal(np_bits(f.get_dequantized(M + ".weight")), bf16_bits(want))
    check_dequantize(tmp_path / "ct", tmp_path / "out", {M + ".weight": ("BF16", bf16_bits(want))}, plain)


# ---- compressed-tensors integers ------------------------------------------------------------


def ct_int_parts(rng, bits, out, inp, group, dtype, asym, gidx, experts=()):
    """Packed tensors of `M` and the reference; scale[..., 0, 0] is 0 and scale[..., 1, 0] large
    (F16 overflows with 8-bit fields)."""
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    q = rng.integers(lo, hi + 1, (*experts, out, inp))
    q[..., 0, :2] = [lo, hi]
    groups = 1 if group is None else -(-inp // group)
    cols = np.arange(inp) // (group or inp)
    if gidx:
        cols = rng.permutation(cols)
    scale = torch.from_numpy((rng.random((*experts, out, groups)) * 0.02 + 1e-3).astype(np.float32)).to(dtype)
    scale[..., 0, 0], scale[..., 1, 0] = 0, 1000
    packed = ct_pack(q, bits)
    tensors = {M + ".weight_packed": ("I32", list(packed.shape), i32_bytes(packed)),
               M + ".weight_shape": ("I64", [len(experts) + 2], np.array([*experts, out, inp], "<i8").tobytes()),
               M + ".weight_scale": raw(scale)}
    zp = None
    if asym:
        zp = rng.integers(lo, hi + 1, (out, groups))
        zp[:2, 0] = [lo, hi]
        z = ct_pack_zero_point(zp, bits)
        tensors[M + ".weight_zero_point"] = ("I32", list(z.shape), i32_bytes(z))
    if gidx:
        tensors[M + ".weight_g_idx"] = ("I32", [inp], i32_bytes(cols))
    return tensors, ct_int_reference(q, scale, cols, zp)


def int_weights(bits, group, asym, gidx):
    return {"num_bits": bits, "type": "int", "symmetric": not asym, "strategy": "channel" if group is None else "group",
            "group_size": group, "actorder": "group" if gidx else None}


INT_CASES = [  # bits, out, in, group (None: channel), scale dtype, asymmetric, g_idx
    (4, 8, 256, 128, torch.bfloat16, False, False),  # W4A16
    (3, 24, 72, 24, torch.float16, True, False),  # 3-bit fields and zero points cross words
    (5, 8, 72, None, torch.float32, False, False),  # in not a multiple of 32, per channel
    (7, 12, 40, 8, torch.bfloat16, True, True),  # 7-bit zero points cross words, g_idx
    (8, 4, 64, 32, torch.float16, False, True),  # F16 products overflow to inf
    (1, 4, 33, None, torch.bfloat16, True, False),
    (2, 6, 48, 16, torch.float32, True, False),
    (6, 8, 50, 25, torch.float16, False, False),
    (4, 8, 72, 32, torch.bfloat16, True, False),  # the config's group: a partial last group of 8
]


@pytest.mark.parametrize("bits, out, inp, group, dtype, asym, gidx", INT_CASES)
def test_ct_pack_quantized(tmp_path, bits, out, inp, group, dtype, asym, gidx):
    rng = np.random.default_rng(40 + bits)
    tensors, want = ct_int_parts(rng, bits, out, inp, group, dtype, asym, gidx)
    plain = ct_folder(tmp_path / "ct", tensors, "pack-quantized", int_weights(bits, group, asym, gidx))
    scheme = f"ct-int{bits}-" + (f"g{group}" if group else "channel") + ("-asym" if asym else "")
    name = {torch.bfloat16: "BF16", torch.float16: "F16", torch.float32: "F32"}[dtype]
    with tlio.safe_open(tmp_path / "ct", "pt") as f:
        assert entries(f) == {M + ".weight": (scheme, name, [out, inp])}
        got = f.get_dequantized(M + ".weight")
        assert got.dtype == dtype
        bits_equal(np_bits(got), np_bits(want))
    check_dequantize(tmp_path / "ct", tmp_path / "out", {M + ".weight": (name, np_bits(want))}, plain)


def test_ct_pack_quantized_lone_file_takes_the_group_from_the_scales(tmp_path):
    """No config: 5-bit (the only width giving 12 words for 72 inputs), 3 scale columns -> g24."""
    rng = np.random.default_rng(50)
    tensors, want = ct_int_parts(rng, 5, 8, 72, 24, torch.bfloat16, False, False)
    src = tmp_path / "ct.safetensors"
    write_safetensors(src, tensors)
    r = run("validate", src)
    assert r.returncode == 0, r.stderr
    with tlio.safe_open(src, "pt") as f:
        assert entries(f) == {M + ".weight": ("ct-int5-g24", "BF16", [8, 72])}
        bits_equal(np_bits(f.get_dequantized(M + ".weight")), np_bits(want))
    check_dequantize(src, tmp_path / "out.safetensors", {M + ".weight": ("BF16", np_bits(want))}, {})


def test_ct_pack_quantized_moe_stack(tmp_path):
    """weight_shape (E, out, in): each expert's slice packed alone, scales [E, out, groups]."""
    rng = np.random.default_rng(51)
    tensors, want = ct_int_parts(rng, 4, 4, 64, 32, torch.bfloat16, False, False, experts=(2,))
    assert tensors[M + ".weight_packed"][1] == [2, 4, 8]
    plain = ct_folder(tmp_path / "ct", tensors, "pack-quantized", int_weights(4, 32, False, False))
    with tlio.safe_open(tmp_path / "ct", "pt") as f:
        assert entries(f) == {M + ".weight": ("ct-int4-g32", "BF16", [2, 4, 64])}
        bits_equal(np_bits(f.get_dequantized(M + ".weight")), np_bits(want))
    check_dequantize(tmp_path / "ct", tmp_path / "out", {M + ".weight": ("BF16", np_bits(want))}, plain)


@pytest.mark.parametrize("asym, dtype", [(False, torch.bfloat16), (True, torch.float16)])
def test_ct_int_quantized(tmp_path, asym, dtype):
    """W8A8: the I8 weight is q itself (no offset), scale [out, 1], I8 zero point [out, 1]."""
    rng = np.random.default_rng(52)
    q = rng.integers(-128, 128, (8, 48))
    q[0, :2] = [-128, 127]
    scale = torch.from_numpy((rng.random((8, 1)) * 0.02).astype(np.float32)).to(dtype)
    scale[1, 0] = 0
    tensors = {M + ".weight": ("I8", [8, 48], q.astype(np.int8).tobytes()), M + ".weight_scale": raw(scale)}
    zp = None
    if asym:
        zp = rng.integers(-128, 128, (8, 1))
        zp[0, 0] = 127  # -128 - 127: the widest difference
        tensors[M + ".weight_zero_point"] = ("I8", [8, 1], zp.astype(np.int8).tobytes())
    plain = ct_folder(tmp_path / "ct", tensors, "int-quantized", int_weights(8, None, asym, False),
                      input_activations={"num_bits": 8, "type": "int", "symmetric": True, "strategy": "token",
                                         "dynamic": True})
    want = ct_int_reference(q, scale, np.zeros(48, np.int64), zp)
    name = "BF16" if dtype == torch.bfloat16 else "F16"
    with tlio.safe_open(tmp_path / "ct", "pt") as f:
        assert entries(f) == {M + ".weight": ("ct-int8-channel" + ("-asym" if asym else ""), name, [8, 48])}
        bits_equal(np_bits(f.get_dequantized(M + ".weight")), np_bits(want))
    check_dequantize(tmp_path / "ct", tmp_path / "out", {M + ".weight": (name, np_bits(want))}, plain)


# ---- malformed ------------------------------------------------------------------------------


def bad_gpt_oss(tmp_path):
    b, _ = mxfp4_parts(np.random.default_rng(60), 2, 8, 64)
    write_folder(tmp_path / "in", {"model.safetensors": {
        GU + "_blocks": u8(b), GU + "_scales": u8(np.full((2, 8, 3), 127, np.uint8))}}, GPT_OSS)
    return tmp_path / "in", tmp_path / "out", GU


def bad_ct_nvfp4(tmp_path):
    packed, scale = nvfp4_parts(np.random.default_rng(61), 8, 64)
    ct_folder(tmp_path / "in", {M + ".weight_packed": u8(packed),
                                M + ".weight_scale": ("F8_E4M3", [8, 2], scale[:, :2].tobytes()),
                                M + ".weight_global_scale": ("F32", [1], f32_bytes([2.0]))},
              "nvfp4-pack-quantized", {"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16})
    return tmp_path / "in", tmp_path / "out", M


def bad_ct_pack(tmp_path):
    tensors, _ = ct_int_parts(np.random.default_rng(62), 4, 8, 64, 32, torch.bfloat16, False, False)
    tensors[M + ".weight_scale"] = raw(torch.ones(8, 3, dtype=torch.bfloat16))
    ct_folder(tmp_path / "in", tensors, "pack-quantized", int_weights(4, 32, False, False))
    return tmp_path / "in", tmp_path / "out", M


def bad_ct_pack_config_group(tmp_path):
    """Scales for groups of 32 where the config says 16: the config decides, the shape is wrong."""
    tensors, _ = ct_int_parts(np.random.default_rng(64), 4, 8, 64, 32, torch.bfloat16, False, False)
    ct_folder(tmp_path / "in", tensors, "pack-quantized", int_weights(4, 16, False, False))
    return tmp_path / "in", tmp_path / "out", M


def bad_modelopt(tmp_path):
    packed, scale = nvfp4_parts(np.random.default_rng(63), 4, 32)
    write_safetensors(tmp_path / "in.safetensors", {
        M + ".weight": u8(packed), M + ".weight_scale": ("F8_E4M3", [4, 1], scale[:, :1].tobytes()),
        M + ".weight_scale_2": ("F32", [], f32_bytes([0.5]))})
    return tmp_path / "in.safetensors", tmp_path / "out.safetensors", M


@pytest.mark.parametrize("build", [bad_gpt_oss, bad_ct_nvfp4, bad_ct_pack, bad_ct_pack_config_group,
                                   bad_modelopt])
def test_a_scale_of_the_wrong_shape_is_refused_by_name(tmp_path, build):
    src, out, module = build(tmp_path)
    r = run("dequantize", src, out)
    assert r.returncode != 0 and module in r.stderr, r.stderr
    assert not out.exists()
    with pytest.raises(Exception, match=re.escape(module)):
        with tlio.safe_open(src, "np") as f:
            f.get_dequantized(module if build is bad_gpt_oss else module + ".weight")
