"""`tlio transcode GGUF OUT --to mlx` (issue 67), judged by the tools on either side: gguf-py's
dequantize reads each weight of the GGUF, MLX's own mx.dequantize reads the folder tlio wrote
(PyPI's mlx with its CPU backend, in the users' stack: build/consumer-venv), and the two agree bit
for bit but for the sign of a zero, for every type tlio carries; mlx_lm.load loads the folder and
its logits are those of transformers running the same values; what cannot be carried is refused
by name with nothing written, or with --lossy requantized and its error reported."""
import json
import os
import pathlib
import subprocess

import numpy as np
import pytest

mx = pytest.importorskip("mlx.core", reason="the users' stack (mlx, mlx-cpu: build/consumer-venv)")
transformers = pytest.importorskip("transformers", minversion="5")
gguf = pytest.importorskip("gguf")
import torch  # noqa: E402
import tlio  # noqa: E402
from gguf import GGMLQuantizationType as Q  # noqa: E402

from consumer_models import save_tokenizer  # noqa: E402

REPO = pathlib.Path(__file__).parents[2]
CLI = os.environ.get("TLIO_CLI", str(REPO / "build" / "tlio"))
CARRIED = {"Q4_0": (4, 32), "Q4_1": (4, 32), "Q5_0": (5, 32), "Q5_1": (5, 32), "Q8_0": (8, 32),
           "Q4_K": (4, 32), "Q5_K": (5, 32)}
HEADS, KV_HEADS = 4, 2


def run(*args, ok=True):
    r = subprocess.run([CLI, *map(str, args)], capture_output=True, text=True, timeout=300)
    assert (r.returncode == 0) == ok, r.stderr
    return r


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    """A two-layer Llama of width 256 (whole K-quant blocks) saved by transformers 5."""
    folder = tmp_path_factory.mktemp("transcode") / "llama"
    tokenizer = save_tokenizer(folder)
    config = transformers.LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=256, intermediate_size=512, num_hidden_layers=2,
        num_attention_heads=HEADS, num_key_value_heads=KV_HEADS, max_position_embeddings=128,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id)
    torch.manual_seed(0)
    transformers.LlamaForCausalLM(config).to(torch.bfloat16).save_pretrained(folder)
    return folder


def gguf_of(llama, tmp_path_factory, dtype):
    """The model exported as `dtype`: a plain block type everywhere (--pure), or a mix."""
    out = tmp_path_factory.mktemp("gguf") / f"llama-{dtype}.gguf"
    pure = ["--pure"] if not dtype.endswith(("_S", "_M", "_L")) else []
    run("convert", llama, out, "--dtype", dtype, *pure)
    return out


def ggml_values(path):
    """Every tensor of a GGUF as gguf-py dequantizes it, [rows, cols], with Q/K rows put back in
    the Hugging Face order (the export interleaves them per head)."""
    out = {}
    for t in gguf.GGUFReader(path).tensors:
        v = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32)
        heads = {"attn_q": HEADS, "attn_k": KV_HEADS}.get(t.name.split(".")[-2])
        if heads and v.ndim == 2:
            rows, cols = v.shape
            v = v.reshape(heads, rows // heads // 2, 2, cols).swapaxes(1, 2).reshape(rows, cols)
        out[t.name] = v
    return out


HF_OF_GGUF = {"token_embd": "model.embed_tokens", "output": "lm_head", "attn_q": "self_attn.q_proj",
              "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj", "attn_output": "self_attn.o_proj",
              "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj"}


def hf_module(gguf_name):
    parts = gguf_name.split(".")
    if parts[0] == "blk":
        return f"model.layers.{parts[1]}.{HF_OF_GGUF[parts[2]]}" if parts[2] in HF_OF_GGUF else None
    return HF_OF_GGUF.get(parts[0])


def mlx_dequantized(folder, module, config):
    """A module's weight as mx.dequantize reads tlio's folder, with config.json's options."""
    w = mx.load(str(folder / "model.safetensors"))
    q = config["quantization"]
    o = q.get(module, q)
    return np.array(mx.dequantize(w[f"{module}.weight"], w[f"{module}.scales"], w.get(f"{module}.biases"),
                                  group_size=o["group_size"], bits=o["bits"], mode=o["mode"]).astype(mx.float32))


def assert_same_values(got, want, what):
    """Bit for bit, but a -0 may be +0."""
    assert got.shape == want.shape, what
    assert np.array_equal(got == 0, want == 0), what
    nonzero = want != 0
    assert np.array_equal(got.view(np.uint32)[nonzero], want.view(np.uint32)[nonzero]), what


@pytest.mark.parametrize("dtype", sorted(CARRIED))
def test_every_carried_type_equals_ggml_in_mlx(llama, tmp_path_factory, tmp_path, dtype):
    src = gguf_of(llama, tmp_path_factory, dtype)
    out = tmp_path / "mlx"
    report = json.loads(run("transcode", src, out, "--to", "mlx", "--json").stdout)
    config = json.loads((out / "config.json").read_text())
    bits, group = CARRIED[dtype]
    weights = {w["name"]: w for w in report["weights"]}
    assert len(weights) == 2 * 7 + 2 and report["plain"] == 2 * 2 + 1, report
    for name, want in ggml_values(src).items():
        module = hf_module(name)
        if module is None:
            continue
        item = weights[f"{module}.weight"]
        assert (item["source"], item["target"], item["exact"]) == (dtype, f"mlx-affine-{bits}bit-g{group}", True)
        assert item["scale_dtype"] == "F32"
        assert_same_values(mlx_dequantized(out, module, config), want, name)


def write_retyped(src, out, quantize):
    """A copy of GGUF `src` whose 2-D weights `quantize(name, values)` gives (type, raw blocks)
    for, through gguf-py's writer (every key copied)."""
    reader = gguf.GGUFReader(src)
    arch = reader.fields["general.architecture"].contents()
    w = gguf.GGUFWriter(str(out), arch)
    for field in reader.fields.values():
        if field.name.startswith("GGUF.") or field.name == "general.architecture":
            continue
        sub = field.types[-1] if field.types[0] == gguf.GGUFValueType.ARRAY else None
        w.add_key_value(field.name, field.contents(), field.types[0], sub_type=sub)
    for t in reader.tensors:
        values = gguf.quants.dequantize(t.data, t.tensor_type)
        retyped = quantize(t.name, values) if values.ndim == 2 else None
        if retyped is None:
            w.add_tensor(t.name, values.astype(np.float32))
        else:
            qtype, blocks = retyped
            w.add_tensor(t.name, blocks, raw_shape=blocks.shape, raw_dtype=qtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return out


def nvfp4_blocks(values, rng):
    """Random NVFP4 blocks (gguf-py has no NVFP4 quantizer): E4M3 scales below 448, random codes."""
    rows, cols = values.shape
    blocks = rng.integers(0, 256, (rows, cols // 64, 36), dtype=np.uint8)
    blocks[..., :4] = rng.integers(0x08, 0x60, (rows, cols // 64, 4))
    return blocks.reshape(rows, cols // 64 * 36)


@pytest.mark.parametrize("mode", ["mxfp4", "nvfp4"])
def test_fp4_blocks_are_carried_as_they_are(llama, tmp_path_factory, tmp_path, mode):
    rng = np.random.default_rng(1)
    qtype = Q.MXFP4 if mode == "mxfp4" else Q.NVFP4
    src = write_retyped(gguf_of(llama, tmp_path_factory, "F32"), tmp_path / f"{mode}.gguf",
                        lambda name, v: (qtype, gguf.quants.quantize(v, Q.MXFP4) if mode == "mxfp4"
                                         else nvfp4_blocks(v, rng)))
    out = tmp_path / "mlx"
    report = json.loads(run("transcode", src, out, "--to", "mlx", "--json").stdout)
    config = json.loads((out / "config.json").read_text())
    assert {(w["source"], w["target"], w["scale_dtype"]) for w in report["weights"]} == {
        (mode.upper(), f"mlx-{mode}", "U8")}
    assert all(w["zero_signs"] == 0 for w in report["weights"])
    for name, want in ggml_values(src).items():
        if (module := hf_module(name)) is not None:
            assert_same_values(mlx_dequantized(out, module, config), want, name)


def test_an_mxfp4_scale_mlx_reads_as_nan_is_refused(llama, tmp_path_factory, tmp_path):
    def quantize(name, v):
        blocks = gguf.quants.quantize(v, Q.MXFP4)
        if name == "blk.1.ffn_up.weight":
            blocks[3, 17 * 3] = 255  # the E8M0 byte of a block: ggml 2^127, MLX NaN
        return Q.MXFP4, blocks
    src = write_retyped(gguf_of(llama, tmp_path_factory, "F32"), tmp_path / "bad.gguf", quantize)
    r = run("transcode", src, tmp_path / "out", "--to", "mlx", ok=False)
    assert "model.layers.1.mlp.up_proj.weight (MXFP4) is not carried exactly: value [3, " in r.stderr
    assert not (tmp_path / "out" / "model.safetensors").exists()


def test_mlx_lm_runs_the_folder_as_transformers_runs_its_values(llama, tmp_path_factory, tmp_path):
    mlx_lm = pytest.importorskip("mlx_lm")
    src = gguf_of(llama, tmp_path_factory, "Q4_K")
    out, plain = tmp_path / "mlx", tmp_path / "plain"
    run("transcode", src, out, "--to", "mlx", "--dtype", "F32")
    run("convert", src, plain, "--dtype", "F32")  # the same values as floats, for transformers
    model, _ = mlx_lm.load(str(out))
    prompt = [[1, 5, 9, 17, 33, 65, 129, 200]]
    got = np.array(model(mx.array(prompt)).astype(mx.float32))
    reference = transformers.AutoModelForCausalLM.from_pretrained(plain, device_map="cpu").eval()
    with torch.no_grad():
        want = reference(torch.tensor(prompt)).logits.float().numpy()
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4)


def test_what_cannot_be_carried_is_refused_or_requantized_with_lossy(llama, tmp_path_factory, tmp_path):
    src = gguf_of(llama, tmp_path_factory, "Q4_K_M")  # Q6_K where llama-quantize gives more bits
    types = {t.tensor_type.name for t in gguf.GGUFReader(src).tensors}
    assert "Q6_K" in types, types
    r = run("transcode", src, tmp_path / "out", "--to", "mlx", ok=False)
    assert "cannot be carried into MLX's layout exactly" in r.stderr and "Q6_K scales groups of 16" in r.stderr
    assert "--lossy requantizes them; nothing was written" in r.stderr
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
    with pytest.raises(ValueError, match="Q6_K scales groups of 16"):  # the Python API says the same
        tlio.transcode(src, tmp_path / "out", "mlx")
    out = tmp_path / "lossy"
    report = tlio.transcode(src, out, "mlx", lossy=True)
    cli = json.loads(run("transcode", src, tmp_path / "again", "--to", "mlx", "--lossy", "--json").stdout)
    assert report == {k: v for k, v in cli.items() if k not in ("input", "output", "to", "lossy")}
    lossy = [w for w in report["weights"] if not w["exact"]]
    assert lossy and all(w["source"] == "Q6_K" and w["target"] == "mlx-affine-6bit-g32" for w in lossy)
    config = json.loads((out / "config.json").read_text())
    values = ggml_values(src)
    for w in lossy:
        gguf_name = next(n for n in values if hf_module(n) == w["name"][:-len(".weight")])
        diff = mlx_dequantized(out, w["name"][:-len(".weight")], config) - values[gguf_name]
        assert 0 < w["rmse"] and np.isclose(w["rmse"], np.sqrt(np.mean(diff.astype(np.float64) ** 2)), rtol=1e-3)
        assert np.isclose(w["max_abs_error"], np.abs(diff).max(), rtol=1e-6)


def llama_cpp_logits(gguf_path, tmp_path):
    """llama.cpp's logits of a short text (npm's libllama through run_llama.py)."""
    lib = REPO / "build/npm/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64"
    r = subprocess.run(["/usr/bin/python3", str(REPO / "python/tests/gguf_oracle/run_llama.py"), str(lib),
                        str(gguf_path), "The quick brown fox", str(tmp_path / "logits.npy")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return np.load(tmp_path / "logits.npy")


@pytest.mark.parametrize("mode", ["mxfp4", "nvfp4"])
def test_mlx_fp4_folders_become_ggml_blocks(llama, tmp_path, mode):
    """MLX's mxfp4 and nvfp4 weights (written by tlio as mx.quantize writes them) carried into
    ggml's MXFP4 and NVFP4 blocks: gguf-py reads the values mx.dequantize reads, but a -0 of
    MLX's table is ggml's +0; llama.cpp loads the file and runs it."""
    folder, out = tmp_path / "mlx", tmp_path / f"{mode}.gguf"
    run("quantize", llama, folder, "--scheme", f"mlx-{mode}")
    report = json.loads(run("transcode", folder, out, "--to", "gguf", "--json").stdout)
    assert {(w["source"], w["target"], w["exact"]) for w in report["weights"]} == {
        (f"mlx-{mode}", mode.upper(), True)}
    assert len(report["weights"]) == 2 * 7 + 2, report
    config = json.loads((folder / "config.json").read_text())
    values = ggml_values(out)
    assert {t.tensor_type.name for t in gguf.GGUFReader(out).tensors} == {"F32", mode.upper()}
    for name, want in values.items():
        if (module := hf_module(name)) is not None:
            assert_same_values(want, mlx_dequantized(folder, module, config), name)
    assert np.isfinite(llama_cpp_logits(out, tmp_path)).all()


def test_mlx_affine_into_gguf_is_refused_or_requantized(llama, tmp_path):
    folder = tmp_path / "mlx"
    run("quantize", llama, folder, "--scheme", "mlx-affine", "--bits", "4", "--group-size", "32")
    r = run("transcode", folder, tmp_path / "x.gguf", "--to", "gguf", ok=False)
    assert "cannot be carried into ggml's blocks exactly" in r.stderr
    assert "mlx-affine-4bit-g32: no ggml type computes its values" in r.stderr
    assert not (tmp_path / "x.gguf").exists()
    report = tlio.transcode(folder, tmp_path / "y.gguf", "gguf", lossy=True)
    assert {(w["target"], w["exact"]) for w in report["weights"]} == {("Q4_K", False)}
    assert all(0 < w["rmse"] <= w["max_abs_error"] for w in report["weights"])
    assert np.isfinite(llama_cpp_logits(tmp_path / "y.gguf", tmp_path)).all()


def ct_folder_from_mlx(mlx_folder, out, mode, global_scale=1.0):
    """A compressed-tensors folder holding the bytes of an MLX mxfp4/nvfp4 folder: weight_packed
    U8 [out, in/2] is MLX's U32 words' bytes, weight_scale its scale bytes (F8_E4M3 for nvfp4,
    with a weight_global_scale), config.json's quantization_config as llm-compressor writes it."""
    from safetensors.torch import save_file
    tensors = {}
    for name, a in mx.load(str(mlx_folder / "model.safetensors")).items():
        t = torch.from_numpy(np.array(a.view(mx.uint8) if a.dtype in (mx.uint32, mx.uint8) else a.astype(mx.float32)))
        base = name.rsplit(".", 1)[0]
        if name.endswith(".scales"):
            tensors[base + ".weight_scale"] = t.view(torch.float8_e4m3fn) if mode == "nvfp4" else t
            if mode == "nvfp4":
                tensors[base + ".weight_global_scale"] = torch.tensor([global_scale], dtype=torch.float32)
        elif a.dtype == mx.uint32:
            tensors[base + ".weight_packed"] = t
        else:
            tensors[name] = t.to(torch.bfloat16)
    out.mkdir()
    save_file(tensors, str(out / "model.safetensors"), metadata={"format": "pt"})
    config = json.loads((mlx_folder / "config.json").read_text())
    for key in ("quantization", "quantization_config"):
        config.pop(key)
    weights = {"num_bits": 4, "type": "float", "symmetric": True, "group_size": 32 if mode == "mxfp4" else 16,
               "strategy": "group" if mode == "mxfp4" else "tensor_group"}
    config["quantization_config"] = {
        "quant_method": "compressed-tensors", "format": f"{mode}-pack-quantized", "quantization_status": "compressed",
        "config_groups": {"group_0": {"targets": ["Linear", "Embedding"], "weights": weights}}, "ignore": []}
    (out / "config.json").write_text(json.dumps(config))
    for f in ("tokenizer.json", "tokenizer_config.json"):
        (out / f).write_bytes((mlx_folder / f).read_bytes())
    return out


@pytest.mark.parametrize("mode", ["mxfp4", "nvfp4"])
def test_compressed_tensors_fp4_folders_become_mlx_byte_for_byte(llama, tmp_path, mode):
    """A compressed-tensors FP4 folder made of an MLX folder's bytes comes back as that MLX folder,
    tensor for tensor (MLX's mode needs no arithmetic at all), and mlx_lm.load runs it."""
    mlx_lm = pytest.importorskip("mlx_lm")
    reference = tmp_path / "reference"
    run("quantize", llama, reference, "--scheme", f"mlx-{mode}")
    ct = ct_folder_from_mlx(reference, tmp_path / "ct", mode)
    out = tmp_path / "out"
    report = json.loads(run("transcode", ct, out, "--to", "mlx", "--json").stdout)
    assert {(w["source"], w["target"], w["exact"], w["zero_signs"]) for w in report["weights"]} == {
        (mode, f"mlx-{mode}", True, 0)}
    got, want = (mx.load(str(f / "model.safetensors")) for f in (out, reference))
    assert sorted(got) == sorted(want)
    for name in want:
        assert got[name].dtype == want[name].dtype and mx.array_equal(got[name], want[name]).item(), name
    config = json.loads((out / "config.json").read_text())
    assert config["quantization"] == config["quantization_config"] == {"group_size": 32 if mode == "mxfp4" else 16,
                                                                       "bits": 4, "mode": mode}
    model, _ = mlx_lm.load(str(out))
    assert np.isfinite(np.array(model(mx.array([[1, 2, 3]])).astype(mx.float32))).all()


def test_a_global_scale_mlx_has_not_is_refused_or_requantized(llama, tmp_path):
    reference = tmp_path / "reference"
    run("quantize", llama, reference, "--scheme", "mlx-nvfp4")
    ct = ct_folder_from_mlx(reference, tmp_path / "ct", "nvfp4", global_scale=0.5)
    r = run("transcode", ct, tmp_path / "out", "--to", "mlx", ok=False)
    assert "its global scale is 0.5: MLX's nvfp4 has none" in r.stderr and "nothing was written" in r.stderr
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
    report = tlio.transcode(ct, tmp_path / "lossy", "mlx", lossy=True)
    assert {(w["target"], w["exact"]) for w in report["weights"]} == {("mlx-affine-4bit-g32", False)}
    assert all(w["rmse"] > 0 for w in report["weights"])


def fp8_folder(llama, out, block=128):
    """The Llama with every linear weight in FP8 blocks whose scales are powers of two (as
    DeepSeek's ue8m0 checkpoints have them), written by torch; returns {name: values} of each
    weight as torch computes them (code times scale)."""
    from safetensors.torch import load_file, save_file
    tensors, want = {}, {}
    for name, w in load_file(str(llama / "model.safetensors")).items():
        if w.ndim != 2 or "embed" in name or not name.endswith("proj.weight"):
            tensors[name] = w
            continue
        rows, cols = w.shape
        blocks = w.float().reshape(rows // block, block, cols // block, block)
        amax = blocks.abs().amax(dim=(1, 3)).clamp(min=1e-12)
        scale = torch.exp2(torch.ceil(torch.log2(amax / 448)))  # [rows / block, cols / block]
        full = scale.repeat_interleave(block, 0).repeat_interleave(block, 1)
        codes = (w.float() / full).to(torch.float8_e4m3fn)
        tensors[name], tensors[name + "_scale_inv"] = codes, scale.float()
        want[name] = (codes.float() * full).numpy()
    out.mkdir()
    save_file(tensors, str(out / "model.safetensors"), metadata={"format": "pt"})
    config = json.loads((llama / "config.json").read_text())
    config["quantization_config"] = {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic",
                                     "weight_block_size": [block, block]}
    (out / "config.json").write_text(json.dumps(config))
    for f in ("tokenizer.json", "tokenizer_config.json"):
        (out / f).write_bytes((llama / f).read_bytes())
    return want


def test_fp8_blocks_with_powers_of_two_become_mxfp8(llama, tmp_path):
    """FP8 blocks whose scales are powers of two carried into MLX's mxfp8: the E4M3 bytes as they
    are, each block's exponent an E8M0 byte per 32 inputs; mx.dequantize gives torch's values."""
    mlx_lm = pytest.importorskip("mlx_lm")
    want = fp8_folder(llama, tmp_path / "fp8")
    out = tmp_path / "out"
    report = json.loads(run("transcode", tmp_path / "fp8", out, "--to", "mlx", "--json").stdout)
    assert {(w["source"], w["target"], w["exact"]) for w in report["weights"]} == {
        ("fp8-block128x128", "mlx-mxfp8", True)}
    assert len(report["weights"]) == 2 * 7
    config = json.loads((out / "config.json").read_text())
    for name, values in want.items():
        got = mlx_dequantized(out, name[:-len(".weight")], config)
        assert np.array_equal(got, values), name
    model, _ = mlx_lm.load(str(out))
    assert np.isfinite(np.array(model(mx.array([[1, 2, 3]])).astype(mx.float32))).all()


def test_fp8_scales_that_are_not_powers_of_two_are_refused(llama, tmp_path):
    run("quantize", llama, tmp_path / "fp8", "--scheme", "fp8-block")  # F32 scales: amax / 448
    r = run("transcode", tmp_path / "fp8", tmp_path / "out", "--to", "mlx", ok=False)
    assert "is not a power of two in E8M0's range" in r.stderr and "--lossy requantizes them" in r.stderr


def test_partial_groups_and_non_float_dtypes_are_refused(tmp_path):
    """compressed-tensors lets a row end in part of a group (48 inputs in groups of 32): MLX's
    layout has no such group, and neither has ggml's block; a dtype that is not a float is no
    dtype for what transcode writes."""
    from safetensors.torch import save_file
    folder = tmp_path / "ct"
    folder.mkdir()
    m = "model.layers.0.mlp.up_proj"
    save_file({m + ".weight_packed": torch.zeros(8, 24, dtype=torch.uint8),
               m + ".weight_scale": torch.full((8, 2), 127, dtype=torch.uint8)}, str(folder / "model.safetensors"))
    (folder / "config.json").write_text(json.dumps({"model_type": "llama", "quantization_config": {
        "quant_method": "compressed-tensors", "format": "mxfp4-pack-quantized", "config_groups": {"group_0": {
            "targets": ["Linear"], "weights": {"num_bits": 4, "type": "float", "group_size": 32}}}}}))
    r = run("transcode", folder, tmp_path / "out", "--to", "mlx", ok=False)
    assert "rows of 48 are not whole groups of 32" in r.stderr and not (tmp_path / "out" / "model.safetensors").exists()
    with pytest.raises(ValueError, match="F32, F16 or BF16, not I32"):
        tlio.transcode(folder, tmp_path / "out", "mlx", dtype="I32")


@pytest.mark.parametrize("mode", ["mxfp4", "nvfp4"])
def test_mlx_fp4_folders_become_compressed_tensors_transformers_loads(llama, tmp_path, mode):
    """MLX's mxfp4/nvfp4 folder as compressed-tensors' (the same bytes under its names, its
    quantization_config): transformers 5 with compressed-tensors loads it, and the weights it
    decompresses are mx.dequantize's of the MLX folder; the embedding (compressed-tensors
    quantizes Linear layers) comes out as BF16 with the same values. Back to MLX, the Linear
    weights are the MLX folder's tensors again."""
    mlx, out = tmp_path / "mlx", tmp_path / "ct"
    run("quantize", llama, mlx, "--scheme", f"mlx-{mode}")
    report = json.loads(run("transcode", mlx, out, "--to", "compressed-tensors", "--json").stdout)
    assert {(w["source"], w["target"], w["exact"]) for w in report["weights"]} == {
        (f"mlx-{mode}", f"compressed-tensors {mode}", True)}
    names = {w["name"] for w in report["weights"]}
    assert "lm_head.weight" in names and "model.embed_tokens.weight" not in names and len(names) == 2 * 7 + 1
    config = json.loads((mlx / "config.json").read_text())
    model = transformers.AutoModelForCausalLM.from_pretrained(out, device_map="cpu").eval()
    with torch.no_grad():
        assert torch.isfinite(model(torch.tensor([[1, 2, 3]])).logits).all()  # decompresses
    state = model.state_dict()
    for name in names | {"model.embed_tokens.weight"}:
        got = state[name].float().numpy()
        assert np.array_equal(got, mlx_dequantized(mlx, name[:-len(".weight")], config)), name
    back = tmp_path / "back"
    run("transcode", out, back, "--to", "mlx")
    got, want = (mx.load(str(f / "model.safetensors")) for f in (back, mlx))
    for name in want:
        if not name.startswith("model.embed_tokens"):
            assert mx.array_equal(got[name], want[name]).item(), name


def test_mlx_affine_into_compressed_tensors_is_refused(llama, tmp_path):
    run("quantize", llama, tmp_path / "mlx", "--scheme", "mlx-affine")
    r = run("transcode", tmp_path / "mlx", tmp_path / "ct", "--to", "compressed-tensors", ok=False)
    assert "mlx-affine-4bit-g64: no compressed-tensors layout tlio writes has its arithmetic" in r.stderr
    assert "--lossy" not in r.stderr and not (tmp_path / "ct").exists()
