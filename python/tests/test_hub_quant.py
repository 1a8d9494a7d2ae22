"""The quantized formats Hub models ship (FP8 blocks and scales, GPTQ, AWQ) read bit for bit as
their references compute them, through the CLI and Python; the forms tlio does not decode
refused by name, never cast. The reference is hub_quant_oracle.py (independent of tlio)."""
import json
import os
import pathlib
import subprocess

import numpy as np
import pytest
import torch

import tlio
import tlio.torch
from hub_quant_oracle import (AWQ_ORDER, awq_reference, bf16_bits, bits_equal, ct_fp8_reference,
                              ct_int_reference, ct_pack, e4m3_encode, e4m3_values, f16_bytes, f32_bytes, fp8_block_reference,
                              gptq_reference, i32_bytes, pack_awq, pack_dim0, pack_dim1,
                              read_safetensors, write_folder, write_safetensors)

CLI = os.environ.get("TLIO_CLI", str(pathlib.Path(__file__).parents[2] / "build" / "tlio"))


def run(*args):
    return subprocess.run([CLI, *map(str, args)], capture_output=True, text=True, timeout=120)


def fp8_codes(rng, shape):
    """Random E4M3 codes without NaN, plus the hard cases: NaN, +-448, -0, the smallest subnormal."""
    codes = rng.integers(0, 256, size=shape, dtype=np.uint8)
    codes[(codes & 0x7F) == 0x7F] = 0x3C
    codes[0, :5] = [0x7F, 0x7E, 0xFE, 0x80, 0x01]
    return codes


# ---- FP8 blocks: DeepSeek V3 / Qwen FP8 -------------------------------------------------------

DOWN = "model.layers.0.mlp.down_proj.weight"


@pytest.fixture
def fp8_folder(tmp_path):
    """576 x 300 codes (DeepSeek's kv_a_proj rows: partial 128-blocks both ways) whose F32
    scale_inv sits in the other shard, beside plain tensors."""
    rng = np.random.default_rng(3)
    codes = fp8_codes(rng, (576, 300))
    scale_inv = (rng.random((5, 3)) * 0.01 + 1e-4).astype(np.float32)
    norm = np.arange(16, dtype=np.float32)
    bias = rng.standard_normal(7).astype(np.float32)
    shards = {"model-00001-of-00002.safetensors": {DOWN: ("F8_E4M3", codes.shape, codes.tobytes()),
                                                   "model.norm.weight": ("F32", [16], f32_bytes(norm))},
              "model-00002-of-00002.safetensors": {
                  DOWN + "_scale_inv": ("F32", [5, 3], f32_bytes(scale_inv)),
                  "model.layers.0.bias": ("F32", [7], f32_bytes(bias))}}
    config = {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3",
              "torch_dtype": "bfloat16",
              "quantization_config": {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic",
                                      "weight_block_size": [128, 128]}}
    write_folder(tmp_path / "fp8", shards, config)
    (tmp_path / "fp8" / "tokenizer.json").write_text('{"version": "1.0"}')
    return tmp_path / "fp8", fp8_block_reference(codes, scale_inv), shards


def test_fp8_block_folder_dequantizes_to_deepseeks_bf16(fp8_folder, tmp_path):
    src, want, shards = fp8_folder
    r = run("dequantize", src, tmp_path / "out")
    assert r.returncode == 0, r.stderr
    out = tmp_path / "out"
    files = sorted(p.name for p in out.iterdir())
    assert files == sorted(["config.json", "tokenizer.json", "model.safetensors.index.json",
                            "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"])
    got = {}
    for f in ("model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"):
        got.update(read_safetensors(out / f)[0])
    assert sorted(got) == sorted([DOWN, "model.norm.weight", "model.layers.0.bias"])
    dtype, shape, data = got[DOWN]
    assert (dtype, shape) == ("BF16", [576, 300])
    bits_equal(np.frombuffer(data, np.uint16).reshape(shape), bf16_bits(torch.from_numpy(want)))
    for name in ("model.norm.weight", "model.layers.0.bias"):  # unquantized: byte-identical
        file = next(f for f, ts in shards.items() if name in ts)
        assert got[name] == shards[file][name]
    config = json.loads((out / "config.json").read_text())
    assert "quantization_config" not in config
    index = json.loads((out / "model.safetensors.index.json").read_text())
    assert DOWN + "_scale_inv" not in index["weight_map"] and DOWN in index["weight_map"]


def test_fp8_block_through_python_in_every_dtype(fp8_folder):
    src, want, _ = fp8_folder
    with tlio.safe_open(src, "pt") as f:
        [w] = f.quantized()
        assert (w["name"], w["scheme"], w["dtype"], w["shape"]) == (DOWN, "fp8-block128x128", "BF16", [576, 300])
        got = f.get_dequantized(DOWN)
        assert got.dtype == torch.bfloat16
        bits_equal(got.view(torch.int16).numpy().view(np.uint16), bf16_bits(torch.from_numpy(want)))
    with tlio.safe_open(src, "np") as f:
        bits_equal(f.get_dequantized(DOWN, "F32"), want)  # the f32 product, before the rounding
        # F16 goes through the reference's BF16, as converting its output would.
        bits_equal(f.get_dequantized(DOWN, "F16"), torch.from_numpy(want).to(torch.bfloat16).half().numpy())


def test_fp8_block_slices_and_stats_read_the_values(fp8_folder):
    src, want, _ = fp8_folder
    r = run("cat", src, DOWN, "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout, parse_int=float)  # "-0" is a negative zero, not the int 0
    assert (doc["scheme"], doc["shape"]) == ("fp8-block128x128", [576, 300])
    values = np.array([[np.nan if v is None else v for v in row] for row in doc["values"]], np.float32)
    bits_equal(values, want)  # cat shows F32: the products
    r = run("stats", src, "--json")
    assert r.returncode == 0, r.stderr
    stats = {t["name"]: t for t in json.loads(r.stdout)["tensors"]}
    # stats reads F32: the products before the rounding to BF16.
    assert stats[DOWN]["max"] == pytest.approx(float(np.nanmax(want)), rel=1e-6)


def test_convert_dequantizes_and_never_casts_fp8_codes(fp8_folder, tmp_path):
    """convert --dtype writes a quantized weight's values (through the reference's BF16, as
    dequantize --dtype does), never its codes cast; a weight it leaves out keeps its parts."""
    src, want, shards = fp8_folder
    r = run("convert", src, tmp_path / "c", "--dtype", "f16")
    assert r.returncode == 0, r.stderr
    assert "1 dequantized" in r.stdout, r.stdout
    got = read_safetensors(tmp_path / "c" / "model-00001-of-00002.safetensors")[0]
    got.update(read_safetensors(tmp_path / "c" / "model-00002-of-00002.safetensors")[0])
    assert DOWN + "_scale_inv" not in got
    dtype, shape, data = got[DOWN]
    assert (dtype, shape) == ("F16", [576, 300])
    bits_equal(np.frombuffer(data, np.float16).reshape(shape),
               torch.from_numpy(want).to(torch.bfloat16).half().numpy())
    config = json.loads((tmp_path / "c" / "config.json").read_text())
    assert "quantization_config" not in config and config["torch_dtype"] == "float16"

    r = run("convert", src, tmp_path / "x", "--dtype", "f16", "--exclude", "down_proj", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["dequantized"] == 0
    got = read_safetensors(tmp_path / "x" / "model-00001-of-00002.safetensors")[0]
    assert got[DOWN][2] == shards["model-00001-of-00002.safetensors"][DOWN][2]
    assert "quantization_config" in json.loads((tmp_path / "x" / "config.json").read_text())

    # Partly dequantized: the dequantized module joins the modules the loaders keep plain.
    (src / "config.json").write_text(json.dumps(dict(json.loads((src / "config.json").read_text())) | {
        "quantization_config": {"quant_method": "fp8", "weight_block_size": [128, 128],
                                "modules_to_not_convert": ["lm_head"]}}))
    second = "model.layers.1.mlp.down_proj.weight"
    shard = src / "model-00002-of-00002.safetensors"
    tensors, meta = read_safetensors(shard)
    codes = np.full((4, 4), 0x38, np.uint8)
    tensors.update({second: ("F8_E4M3", [4, 4], codes.tobytes()),
                    second + "_scale_inv": ("F32", [1, 1], f32_bytes(np.float32([2])))})
    write_safetensors(shard, tensors, meta)
    index = json.loads((src / "model.safetensors.index.json").read_text())
    index["weight_map"].update({second: shard.name, second + "_scale_inv": shard.name})
    index["metadata"]["total_size"] += 16 + 4
    (src / "model.safetensors.index.json").write_text(json.dumps(index))
    r = run("convert", src, tmp_path / "p", "--dtype", "bf16", "--include", "layers.0")
    assert r.returncode == 0, r.stderr
    config = json.loads((tmp_path / "p" / "config.json").read_text())["quantization_config"]
    assert config["modules_to_not_convert"] == ["lm_head", "model.layers.0.mlp.down_proj"]


# ---- quantize to FP8 ---------------------------------------------------------------------------


def bf16_weight(rng, shape):
    """BF16 values (as float32) and their bytes; row 1 all zeros (a block whose scale is 0)."""
    w = torch.from_numpy((rng.standard_normal(shape) * 0.05).astype(np.float32)).to(torch.bfloat16)
    w[1] = 0
    return w.float().numpy(), w.view(torch.int16).numpy().tobytes()


def test_quantize_fp8_block_folder_as_deepseek_ships_it(tmp_path):
    """Scales amax/448 per 128x128 block (partial edge blocks too), codes w/s rounded to nearest
    even: checked against the oracle's encoder; the config loaders read; back within E4M3's
    error (half a step of 16 at 448: amax/28)."""
    rng = np.random.default_rng(21)
    w, raw = bf16_weight(rng, (300, 200))
    emb = rng.standard_normal((8, 4)).astype(np.float32)
    write_folder(tmp_path / "m", {"model.safetensors": {
        "model.embed_tokens.weight": ("F32", [8, 4], f32_bytes(emb)),
        DOWN: ("BF16", [300, 200], raw)}}, {"model_type": "qwen3", "torch_dtype": "bfloat16"})
    r = run("quantize", tmp_path / "m", tmp_path / "q", "--scheme", "fp8-block")
    assert r.returncode == 0, r.stderr
    config = json.loads((tmp_path / "q" / "config.json").read_text())["quantization_config"]
    assert config["quant_method"] == "fp8" and config["weight_block_size"] == [128, 128]
    assert config["modules_to_not_convert"] == ["model.embed_tokens", "lm_head"]  # lm_head: a tied head
    got = read_safetensors(tmp_path / "q" / "model.safetensors")[0]
    assert got[DOWN][:2] == ("F8_E4M3", [300, 200]) and got[DOWN + "_scale_inv"][:2] == ("F32", [3, 2])
    scale = np.frombuffer(got[DOWN + "_scale_inv"][2], np.float32).reshape(3, 2)
    codes = np.frombuffer(got[DOWN][2], np.uint8).reshape(300, 200)
    for i in range(3):
        for j in range(2):
            block = w[128 * i:128 * i + 128, 128 * j:128 * j + 128]
            s = np.float32(np.abs(block).max()) / np.float32(448)
            assert scale[i, j] == s
            want = e4m3_encode(np.clip(block / s, -448, 448)) if s else np.zeros(block.shape, np.uint8)
            assert np.array_equal(codes[128 * i:128 * i + 128, 128 * j:128 * j + 128], want), (i, j)
    assert not codes[1].any()
    back = fp8_block_reference(codes, scale)
    limit = np.repeat(np.repeat(scale * 448 / 28, 128, 0), 128, 1)[:300, :200] * 1.0001  # ties: exactly at it
    assert (np.abs(back - w) <= limit).all()
    with tlio.safe_open(tmp_path / "q", "np") as f:
        assert f.quantized()[0]["scheme"] == "fp8-block128x128"
        bits_equal(f.get_dequantized(DOWN, "F32"), back)


def test_quantize_fp8_channel_file_as_compressed_tensors(tmp_path):
    """Per-row scales in the weight's dtype (BF16, rounded first: codes divide by the stored
    scale); the lone file records its config; NaN is refused naming the tensor, nothing left."""
    rng = np.random.default_rng(22)
    w, raw = bf16_weight(rng, (16, 72))
    write_safetensors(tmp_path / "a.safetensors", {"l.weight": ("BF16", [16, 72], raw)})
    with pytest.raises(ValueError, match="blocksize is an option of nf4, fp4, not of fp8-channel"):
        tlio.quantize_file(tmp_path / "a.safetensors", tmp_path / "x.safetensors", "fp8", blocksize=64)
    tlio.quantize_file(tmp_path / "a.safetensors", tmp_path / "q.safetensors", "fp8")
    got, meta = read_safetensors(tmp_path / "q.safetensors")
    assert json.loads(meta["quantization_config"])["config_groups"]["group_0"]["weights"]["strategy"] == "channel"
    assert got["l.weight_scale"][:2] == ("BF16", [16, 1])
    s = torch.from_numpy(np.abs(w).max(axis=1, keepdims=True) / np.float32(448)).to(torch.bfloat16)
    assert np.array_equal(np.frombuffer(got["l.weight_scale"][2], np.uint16).reshape(16, 1), bf16_bits(s))
    s32 = s.float().numpy()
    want = np.where(s32 == 0, 0, e4m3_encode(np.clip(w / np.where(s32 == 0, 1, s32), -448, 448)))
    assert np.array_equal(np.frombuffer(got["l.weight"][2], np.uint8).reshape(16, 72), want)
    with tlio.safe_open(tmp_path / "q.safetensors", "np") as f:
        assert f.quantized()[0]["scheme"] == "fp8-channel"

    w[3, 5] = np.nan
    write_safetensors(tmp_path / "n.safetensors", {
        "l.weight": ("BF16", [16, 72], torch.from_numpy(w).to(torch.bfloat16).view(torch.int16).numpy().tobytes())})
    r = run("quantize", tmp_path / "n.safetensors", tmp_path / "o.safetensors", "--scheme", "fp8-block")
    assert r.returncode != 0 and '"l.weight"' in r.stderr and "NaN" in r.stderr, r.stderr
    assert not (tmp_path / "o.safetensors").exists()


def test_convert_selection_renames_and_drops_dequantized_weights_across_shards(fp8_folder, tmp_path):
    """--rename renames a dequantized weight as its stored tensors; --drop with a compressed-
    tensors weight whose scales are in the other shard sees the whole model's weights."""
    src, want, _ = fp8_folder
    r = run("convert", src, tmp_path / "r", "--dtype", "bf16", "--rename", r"^model\.layers\.=blocks.")
    assert r.returncode == 0, r.stderr
    got = read_safetensors(tmp_path / "r" / "model-00001-of-00002.safetensors")[0]
    assert "blocks.0.mlp.down_proj.weight" in got and DOWN not in got
    bits_equal(np.frombuffer(got["blocks.0.mlp.down_proj.weight"][2], np.uint16).reshape(576, 300),
               bf16_bits(torch.from_numpy(want)))

    rng = np.random.default_rng(23)
    q = rng.integers(-8, 8, size=(8, 64))
    scale = (rng.random((8, 2)) * 0.01).astype(np.float32)
    write_folder(tmp_path / "ct", {
        "model-00001-of-00002.safetensors": {
            "l.weight_packed": ("I32", [8, 8], i32_bytes(ct_pack(q, 4))),
            "l.weight_shape": ("I64", [2], np.array([8, 64], "<i8").tobytes())},
        "model-00002-of-00002.safetensors": {"l.weight_scale": ("F32", [8, 2], f32_bytes(scale)),
                                             "lm_head.weight": ("F32", [2, 2], f32_bytes(np.ones((2, 2))))}},
        {"model_type": "qwen3", "quantization_config": {"quant_method": "compressed-tensors",
                                                        "format": "pack-quantized"}})
    r = run("convert", tmp_path / "ct", tmp_path / "ct2", "--dtype", "f32", "--drop", "lm_head")
    assert r.returncode == 0, r.stderr
    got = read_safetensors(tmp_path / "ct2" / "model-00001-of-00002.safetensors")[0]
    bits_equal(np.frombuffer(got["l.weight"][2], np.float32).reshape(8, 64),
               ct_int_reference(q, torch.from_numpy(scale), np.arange(64) // 32).numpy())


# ---- FP8 with weight_scale: compressed-tensors, AutoFP8, FBGEMM --------------------------------


@pytest.mark.parametrize("scale_dtype", [torch.bfloat16, torch.float16, torch.float32])
def test_fp8_channel_scales_compute_in_the_scales_dtype(tmp_path, scale_dtype):
    rng = np.random.default_rng(5)
    codes = fp8_codes(rng, (64, 96))
    codes[0, 0] = 0x3C  # this reference has no NaN case
    scale = torch.from_numpy((rng.random((64, 1)) * 0.02).astype(np.float32)).to(scale_dtype)
    name = {torch.bfloat16: "BF16", torch.float16: "F16", torch.float32: "F32"}[scale_dtype]
    raw = scale.view(torch.int16).numpy().tobytes() if scale_dtype == torch.bfloat16 else scale.numpy().tobytes()
    write_safetensors(tmp_path / "ct.safetensors", {
        "proj.weight": ("F8_E4M3", [64, 96], codes.tobytes()),
        "proj.weight_scale": (name, [64, 1], raw),
        "proj.input_scale": ("F32", [1], f32_bytes(np.array([0.5])))})
    want = ct_fp8_reference(codes, scale)
    with tlio.safe_open(tmp_path / "ct.safetensors", "pt") as f:
        [w] = f.quantized()
        assert (w["scheme"], w["dtype"]) == ("fp8-channel", name)
        assert w["stored"] == ["proj.weight", "proj.weight_scale", "proj.input_scale"]
        got = f.get_dequantized("proj.weight")
        assert got.dtype == scale_dtype and torch.equal(got, want)
        exact = e4m3_values(codes) * scale.float().numpy()
        bits_equal(f.get_dequantized("proj.weight", "F32").numpy(), exact)
    r = run("dequantize", tmp_path / "ct.safetensors", tmp_path / "out.safetensors")
    assert r.returncode == 0, r.stderr
    got, _ = read_safetensors(tmp_path / "out.safetensors")
    assert sorted(got) == ["proj.weight"]  # scales and the activation scale gone


def test_fp8_tensor_scale_of_no_dimensions(tmp_path):
    rng = np.random.default_rng(6)
    codes = fp8_codes(rng, (8, 16))
    s = np.array(0.0123, dtype=np.float32)
    write_safetensors(tmp_path / "t.safetensors", {"a.weight": ("F8_E4M3", [8, 16], codes.tobytes()),
                                                   "a.weight_scale": ("F32", [], f32_bytes(s))})
    with tlio.safe_open(tmp_path / "t.safetensors", "np") as f:
        assert f.quantized()[0]["scheme"] == "fp8-tensor"
        bits_equal(f.get_dequantized("a.weight"), e4m3_values(codes) * s)


# ---- GPTQ ------------------------------------------------------------------------------------


def gptq_tensors(rng, bits, k, n, group, *, v1, desc_act, zeros=None):
    groups = k // group
    q = rng.integers(0, 1 << bits, size=(k, n))
    z = rng.integers(0, 1 << bits, size=(groups, n)) if zeros is None else zeros
    g_idx = np.arange(k) // group
    if desc_act:
        g_idx = rng.permutation(g_idx)
    scales = (rng.random((groups, n)) * 0.01 + 1e-3).astype(np.float16)
    stored_z = (z - 1) % (1 << bits) if v1 else z  # v1's packer stored zero - 1
    tensors = {"l.qweight": ("I32", [k * bits // 32, n], i32_bytes(pack_dim0(q, bits))),
               "l.qzeros": ("I32", [groups, n * bits // 32], i32_bytes(pack_dim1(stored_z, bits))),
               "l.scales": ("F16", [groups, n], f16_bytes(scales)),
               "l.g_idx": ("I32", [k], i32_bytes(g_idx.astype(np.uint32)))}
    return tensors, gptq_reference(q, z, scales, g_idx)


def test_gptq_3bit_v1_with_act_order_in_a_folder(tmp_path):
    """3-bit fields cross words; g_idx permuted (desc_act); a zero point 0 stored as 7 by v1."""
    rng = np.random.default_rng(11)
    zeros = rng.integers(0, 8, size=(4, 32))
    zeros[0, :3] = 0
    tensors, want = gptq_tensors(rng, 3, 64, 32, 16, v1=True, desc_act=True, zeros=zeros)
    write_folder(tmp_path / "g", {"model.safetensors": tensors},
                 {"model_type": "gpt_neox", "quantization_config": {
                     "quant_method": "gptq", "bits": 3, "group_size": 16, "desc_act": True,
                     "sym": False, "checkpoint_format": "gptq"}})
    (tmp_path / "g" / "model.safetensors.index.json").unlink()
    with tlio.safe_open(tmp_path / "g", "pt") as f:
        [w] = f.quantized()
        assert (w["name"], w["scheme"], w["shape"], w["dtype"]) == ("l.weight", "gptq-3bit-g16", [32, 64], "F16")
        assert torch.equal(f.get_dequantized("l.weight"), want)
    r = run("dequantize", tmp_path / "g", tmp_path / "out", "--dtype", "f32")
    assert r.returncode == 0, r.stderr
    got = read_safetensors(tmp_path / "out" / "model.safetensors")[0]
    assert sorted(got) == ["l.weight"]
    # F32 is the exact product; the reference's f16 result is its rounding.
    f32 = np.frombuffer(got["l.weight"][2], np.float32).reshape(32, 64)
    bits_equal(f32.astype(np.float16), want.numpy())


def test_gptq_v1_symmetric_zero_words_are_0x77777777(tmp_path):
    """The known answer: v1 symmetric 4-bit checkpoints store every zero word as 0x77777777,
    meaning zero point 8. A lone file: bits and group come from the shapes."""
    rng = np.random.default_rng(12)
    q = rng.integers(0, 16, size=(64, 16))
    scales = (rng.random((2, 16)) * 0.01).astype(np.float16)
    write_safetensors(tmp_path / "g.safetensors", {
        "l.qweight": ("I32", [8, 16], i32_bytes(pack_dim0(q, 4))),
        "l.qzeros": ("I32", [2, 2], i32_bytes(np.full((2, 2), 0x77777777, dtype=np.uint32))),
        "l.scales": ("F16", [2, 16], f16_bytes(scales))})
    want = gptq_reference(q, np.full((2, 16), 8), scales, np.arange(64) // 32)
    with tlio.safe_open(tmp_path / "g.safetensors", "np") as f:
        assert f.quantized()[0]["scheme"] == "gptq-4bit-g32"
        bits_equal(f.get_dequantized("l.weight"), want.numpy())
    r = run("validate", tmp_path / "g.safetensors")  # once taken for an invalid tinyllm int4
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("bits", [2, 8])
def test_gptq_v2_one_group_from_quantize_config_json(tmp_path, bits):
    rng = np.random.default_rng(bits)
    tensors, want = gptq_tensors(rng, bits, 64, 32, 64, v1=False, desc_act=False)
    del tensors["l.g_idx"]
    write_safetensors(tmp_path / "model.safetensors", tensors)
    (tmp_path / "quantize_config.json").write_text(json.dumps(
        {"bits": bits, "group_size": -1, "desc_act": False, "checkpoint_format": "gptq_v2"}))
    with tlio.safe_open(tmp_path, "np") as f:
        assert f.quantized()[0]["scheme"] == f"gptq-{bits}bit-v2"
        bits_equal(f.get_dequantized("l.weight"), want.numpy())


def test_gptq_v2_folder_diffs_with_its_config_and_validate_checks_g_idx(tmp_path):
    """diff reads a folder's quantization_config (v2 zero points; as v1 every value would move),
    and validate reads every g_idx value."""
    rng = np.random.default_rng(14)
    tensors, want = gptq_tensors(rng, 4, 64, 32, 32, v1=False, desc_act=True)
    write_folder(tmp_path / "g", {"model.safetensors": tensors}, {"model_type": "gpt_neox", "quantization_config": {
        "quant_method": "gptq", "bits": 4, "group_size": 32, "checkpoint_format": "gptq_v2"}})
    write_safetensors(tmp_path / "ref.safetensors", {"l.weight": ("F16", [32, 64], want.numpy().tobytes())})
    (tmp_path / "g" / "model.safetensors.index.json").unlink()
    r = run("diff", tmp_path / "g", tmp_path / "ref.safetensors", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["equal"], r.stdout + r.stderr
    assert tlio.compare_files(tmp_path / "g", tmp_path / "ref.safetensors")["equal"]

    g_idx = np.arange(64) // 32
    g_idx[40] = 2  # two groups: 2 names none
    tensors["l.g_idx"] = ("I32", [64], i32_bytes(g_idx.astype(np.uint32)))
    write_safetensors(tmp_path / "bad.safetensors", tensors)
    r = run("validate", tmp_path / "bad.safetensors")
    assert r.returncode == 1 and '"l.g_idx"[40] is 2; the weight has 2 groups' in r.stdout + r.stderr, r.stdout


# ---- AWQ -------------------------------------------------------------------------------------


def test_awq_order_known_answer(tmp_path):
    """Columns 0..7 holding their own index pack to 0x75316420 in AutoAWQ's order."""
    assert pack_awq(np.arange(8)[None, :])[0, 0] == 0x75316420
    write_safetensors(tmp_path / "a.safetensors", {
        "l.qweight": ("I32", [8, 1], i32_bytes(np.full((8, 1), 0x75316420, np.uint32))),
        "l.qzeros": ("I32", [1, 1], i32_bytes(np.zeros((1, 1), np.uint32))),
        "l.scales": ("F16", [1, 8], f16_bytes(np.ones((1, 8))))})
    with tlio.safe_open(tmp_path / "a.safetensors", "np") as f:
        assert f.quantized()[0]["scheme"] == "awq-4bit"
        got = f.get_dequantized("l.weight", "F32")
    assert np.array_equal(got, np.repeat(np.arange(8, dtype=np.float32)[:, None], 8, axis=1))


def test_awq_gemm_matches_autoawq(tmp_path):
    rng = np.random.default_rng(13)
    k, n, group = 64, 32, 16
    q = rng.integers(0, 16, size=(k, n))
    z = rng.integers(0, 16, size=(k // group, n))
    scales = (rng.random((k // group, n)) * 0.01).astype(np.float16)
    write_folder(tmp_path / "a", {"model.safetensors": {
        "l.qweight": ("I32", [k, n // 8], i32_bytes(pack_awq(q))),
        "l.qzeros": ("I32", [k // group, n // 8], i32_bytes(pack_awq(z))),
        "l.scales": ("F16", [k // group, n], f16_bytes(scales))}},
        {"model_type": "gpt_neox", "quantization_config": {"quant_method": "awq", "bits": 4, "group_size": group,
                                 "zero_point": True, "version": "gemm"}})
    want = awq_reference(q, z, scales, group)
    assert AWQ_ORDER == [0, 2, 4, 6, 1, 3, 5, 7]
    with tlio.safe_open(tmp_path / "a", "np") as f:
        assert f.quantized()[0]["scheme"] == "awq-4bit-g16"
        bits_equal(f.get_dequantized("l.weight"), want.numpy())
    r = run("diff", tmp_path / "a", tmp_path / "a")
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("layout", [{"version": "gemv"}, {"format": "GEMV"}])  # AutoAWQ's, GPTQModel's
def test_awq_gemv_from_its_config(tmp_path, layout):
    """GEMV (config version "gemv", or GPTQModel's format in any case): qweight [out, in/8] in natural nibble order along the
    inputs, qzeros [out, W] along the groups, scales [out, 8W] (padded groups); (q - z) * s in
    the scales' dtype. The reference packs with plain integer arithmetic."""
    rng = np.random.default_rng(15)
    n, k, group = 8, 96, 32  # 3 groups padded to 8: W = 1
    q = rng.integers(0, 16, size=(n, k))
    z = rng.integers(0, 16, size=(n, 8))
    scales = (rng.random((n, 8)) * 0.01).astype(np.float16)

    def natural(fields):  # [R, 8C] 4-bit fields -> [R, C] words, field j of a word at bits 4j
        words = np.zeros((fields.shape[0], fields.shape[1] // 8), dtype=np.uint64)
        for j in range(8):
            words |= fields[:, j::8].astype(np.uint64) << np.uint64(4 * j)
        return words.astype(np.uint32)

    write_folder(tmp_path / "a", {"model.safetensors": {
        "l.qweight": ("I32", [n, k // 8], i32_bytes(natural(q))),
        "l.qzeros": ("I32", [n, 1], i32_bytes(natural(z))),
        "l.scales": ("F16", [n, 8], f16_bytes(scales))}},
        {"model_type": "gpt_neox", "quantization_config": {"quant_method": "awq", "bits": 4, "group_size": group,
                                                           "zero_point": True, **layout}})
    g = np.arange(k) // group
    want = torch.from_numpy(q - z[:, g]).to(torch.float16) * torch.from_numpy(scales)[:, g]
    with tlio.safe_open(tmp_path / "a", "np") as f:
        [w] = f.quantized()
        assert (w["scheme"], w["shape"], w["dtype"]) == ("awq-4bit-g32-gemv", [8, 96], "F16")
        bits_equal(f.get_dequantized("l.weight"), want.numpy())
    r = run("dequantize", tmp_path / "a", tmp_path / "out")
    assert r.returncode == 0, r.stderr
    got = read_safetensors(tmp_path / "out" / "model.safetensors")[0]["l.weight"]
    bits_equal(np.frombuffer(got[2], np.float16).reshape(8, 96), want.numpy())


@pytest.mark.parametrize("form", ["gpt-oss", "nvfp4", "ct-int5-asym", "fp8-block", "gptq-3bit"])
@pytest.mark.parametrize("spec", [(slice(3, 9),), (slice(None), slice(5, 37)), (1, slice(2, 30))])
def test_read_plan_slices_equal_slices_of_the_whole(tmp_path, form, spec):
    """A read plan reads only the stored parts a slice needs (each scheme's parts map): its
    values equal the same slice of the whole weight."""
    rng = np.random.default_rng(16)
    raw = lambda *shape: rng.integers(0, 256, size=shape, dtype=np.uint8).tobytes()  # noqa: E731
    tensors = {
        "gpt-oss": {"e.down_proj_blocks": ("U8", [2, 40, 3, 16], raw(2, 40, 3, 16)),
                    "e.down_proj_scales": ("U8", [2, 40, 3], rng.integers(120, 130, (2, 40, 3), np.uint8).tobytes())},
        "nvfp4": {"l.weight_packed": ("U8", [50, 32], raw(50, 32)),
                  "l.weight_scale": ("F8_E4M3", [50, 4], rng.integers(0x30, 0x48, (50, 4), np.uint8).tobytes()),
                  "l.weight_global_scale": ("F32", [1], f32_bytes(np.float32([0.37])))},
        "ct-int5-asym": {"l.weight_packed": ("I32", [30, 16], raw(30, 16, 4)),
                         "l.weight_shape": ("I64", [2], np.array([30, 100], "<i8").tobytes()),
                         "l.weight_scale": ("F16", [30, 4], f16_bytes(rng.random((30, 4)) * 0.01)),
                         "l.weight_zero_point": ("I32", [5, 4], raw(5, 4, 4))},
        "fp8-block": {"l.weight": ("F8_E4M3", [40, 300], fp8_codes(rng, (40, 300)).tobytes()),
                      "l.weight_scale_inv": ("F32", [1, 3], f32_bytes(rng.random((1, 3))))},
    }.get(form) or gptq_tensors(rng, 3, 64, 32, 16, v1=True, desc_act=True)[0]
    write_safetensors(tmp_path / "q.safetensors", tensors)
    with tlio.safe_open(tmp_path / "q.safetensors", "pt") as f:
        [w] = f.quantized()
        whole = f.get_dequantized(w["name"], "F32")
    got = tlio.torch.load_sharded(tmp_path / "q.safetensors", {w["name"]: spec}, dtype="F32")
    bits_equal(got[w["name"]].numpy(), whole[spec].contiguous().numpy())


# ---- refused by name -------------------------------------------------------------------------

@pytest.mark.parametrize("tensors, config, says", [
    ({"x.weight": ("F8_E4M3", [4, 4], bytes(16)), "x.scale": ("F8_E8M0", [1, 1], bytes(1))}, None,
     "DeepSeek-V4"),
    ({"x.weight": ("F32", [2, 2], bytes(16))}, {"quant_method": "hqq"}, "HQQ"),
    ({"x.weight": ("F32", [2, 2], bytes(16))},
     {"quant_method": "compressed-tensors", "format": "sparse-24-bitmask"}, "sparse-24-bitmask"),
    ({"x.compressed": ("BF16", [4, 1], bytes(8)), "x.bitmask": ("U8", [4, 1], bytes(4)),
      "x.shape": ("I64", [2], bytes(16))}, None, "compressed-tensors sparse"),
    ({"x.weight": ("F32", [2, 2], bytes(16))}, {"quant_method": "modelopt", "quant_algo": "W4A16_AWQ"},
     "ModelOpt W4A16_AWQ"),
    ({"x.weight": ("F32", [2, 2], bytes(16))}, {"quant_method": "awq", "version": "gemv_fast"}, "AWQ gemv_fast"),
    ({"x.weight": ("F32", [2, 2], bytes(16))}, {"quant_method": "awq", "version": "exllama"}, "AWQ exllama"),
])
def test_forms_tlio_does_not_decode_are_refused_by_name(tmp_path, tensors, config, says):
    if config is None:
        src = tmp_path / "in.safetensors"
        write_safetensors(src, tensors)
    else:
        src = tmp_path / "in"
        write_folder(src, {"model.safetensors": tensors}, {"model_type": "gpt_neox", "quantization_config": config})
    for args in (["dequantize", src, tmp_path / "o1"], ["convert", src, tmp_path / "o2", "--dtype", "bf16"],
                 ["stats", src]):
        r = run(*args)
        assert r.returncode != 0 and says in r.stderr, (args, r.stderr)
        assert "does not decode" in r.stderr
    assert not (tmp_path / "o1").exists() and not (tmp_path / "o2").exists()
    # Named without failing by the commands that do not need the values.
    r = run("validate", src)
    assert r.returncode == 0 and says in r.stdout and "does not decode" in r.stdout, r.stdout + r.stderr
    r = run("inspect", src)
    assert r.returncode == 0 and says in r.stderr, r.stderr
    with pytest.raises(ValueError, match=says):
        with tlio.safe_open(src, "np") as f:
            f.quantized()
