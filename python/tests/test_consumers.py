"""What tlio writes, the next tool loads (issue 63), judged by the tools themselves: a tiny Llama
saved by transformers 5's save_pretrained goes through tlio's commands, and transformers loads
each output on CPU (bitsandbytes for its quantizations) with no missing or unexpected key, its
weights bit-equal to what the consumer computes. Runs in build/consumer-venv, the users' stack
(PyPI's torch 2.x, numpy 2, transformers 5, bitsandbytes: scripts/pypi/consumers.txt)."""
import json
import pathlib
import subprocess

import numpy as np
import pytest

transformers = pytest.importorskip(
    "transformers", minversion="5",
    reason="the consumers' stack: bash scripts/install-deps.sh, then build/consumer-venv/bin/python -m pytest")
import safetensors  # noqa: E402
import safetensors.torch  # noqa: E402
import torch  # noqa: E402
from consumer_models import config, load, logits, run, save_llama  # noqa: E402

REPO = pathlib.Path(__file__).parents[2]
TORCH_DTYPES = {"BF16": torch.bfloat16, "F16": torch.float16, "F32": torch.float32}


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """The folder, and its model as from_pretrained loads it (rotary tables in F32)."""
    folder = tmp_path_factory.mktemp("consumers") / "llama"
    save_llama(folder)
    return folder, load(folder)


def formats(folder):
    out = set()
    for f in pathlib.Path(folder).glob("*.safetensors"):
        with safetensors.safe_open(f, "pt") as s:
            out.add((s.metadata() or {}).get("format"))
    return out


def bits_equal(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and torch.equal(a.view(torch.uint8), b.view(torch.uint8))


def test_save_pretrained_folder_validates_and_exports_to_gguf(saved, tmp_path):
    folder, _ = saved
    assert config(folder)["dtype"] == "bfloat16"
    assert "1000000000000000019884624838656" in (folder / "tokenizer_config.json").read_text()
    assert ": OK" in run("validate", folder).stdout
    run("convert", folder, tmp_path / "m.gguf", "--dtype", "f16")
    gguf = pytest.importorskip("gguf")
    reader = gguf.GGUFReader(tmp_path / "m.gguf")
    names = {t.name for t in reader.tensors}
    assert "output.weight" in names and "blk.1.ffn_down.weight" in names


def test_newcomers_path_save_pretrained_to_llama_cpp(tmp_path):
    """save_pretrained -> tlio convert -> llama.cpp (npm's libllama): the same tokens, and
    logits at every position as transformers' forward gives them (F32; llama.cpp's F16 KV cache)."""
    folder = tmp_path / "llama"
    save_llama(folder, dtype=torch.float32)
    lib = REPO / "build" / "npm" / "node_modules" / "@node-llama-cpp" / "linux-x64" / "bins" / "linux-x64"
    if not (lib / "libllama.v0.4.0.so").exists():
        pytest.fail(f"llama.cpp's libraries are not in {lib}: run `bash scripts/install-deps.sh`")
    run("convert", folder, tmp_path / "m.gguf", "--dtype", "f32")
    text = "Hello world! The quick fox 12345"
    r = subprocess.run(["/usr/bin/python3", str(REPO / "python/tests/gguf_oracle/run_llama.py"), str(lib),
                        str(tmp_path / "m.gguf"), text, str(tmp_path / "logits.npy")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    ids = json.loads(r.stdout.strip().splitlines()[-1])
    assert ids == transformers.AutoTokenizer.from_pretrained(folder)(text)["input_ids"]
    theirs = torch.from_numpy(np.load(tmp_path / "logits.npy")).float()
    with torch.no_grad():
        ours = load(folder)(torch.tensor([ids])).logits[0]
    cos = torch.nn.functional.cosine_similarity(theirs.reshape(len(ids), -1), ours, dim=-1)
    assert cos.min() >= 0.9999, cos


@pytest.mark.parametrize("dtype", ["BF16", "F16", "F32"])
def test_convert_dtype_loads_with_the_cast_weights(saved, tmp_path, dtype):
    folder, _ = saved
    out = tmp_path / "out"
    run("convert", folder, out, "--dtype", dtype)
    assert formats(out) == {"pt"}
    assert config(out)["dtype"] == str(TORCH_DTYPES[dtype]).split(".")[1]
    loaded = load(out)
    want = load(folder, dtype=TORCH_DTYPES[dtype])  # the source in that dtype, cast by torch
    for (name, p), (_, q) in zip(want.state_dict().items(), loaded.state_dict().items()):
        assert bits_equal(p, q), name
    assert torch.equal(logits(loaded), logits(want))


def test_sharded_save_pretrained_folder_converts_and_loads(tmp_path):
    """save_pretrained's shards and index (max_shard_size) read, rewritten shard by shard."""
    model = save_llama(tmp_path / "src")
    model.save_pretrained(tmp_path / "sharded", max_shard_size="60KB")
    assert (tmp_path / "sharded" / "model.safetensors.index.json").exists()
    assert ": OK" in run("validate", tmp_path / "sharded").stdout
    run("convert", tmp_path / "sharded", tmp_path / "f32", "--dtype", "F32")
    assert len(list((tmp_path / "f32").glob("model-*.safetensors"))) > 2 and formats(tmp_path / "f32") == {"pt"}
    run("merge", tmp_path / "f32", tmp_path / "merged.safetensors")
    want = load(tmp_path / "src", dtype=torch.float32)
    assert torch.equal(logits(load(tmp_path / "f32")), logits(want))
    metadata = run("metadata", tmp_path / "merged.safetensors", "--json").stdout
    assert '"format":"pt"' in metadata.replace(" ", "")


def test_shard_and_merge_keep_what_transformers_loads(saved, tmp_path):
    folder, model = saved
    run("shard", folder / "model.safetensors", tmp_path / "sharded", "--max-size", "100KB")
    for f in ("config.json", "generation_config.json"):
        (tmp_path / "sharded" / f).write_bytes((folder / f).read_bytes())
    assert len(list((tmp_path / "sharded").glob("*.safetensors"))) > 2
    assert formats(tmp_path / "sharded") == {"pt"}
    assert torch.equal(logits(load(tmp_path / "sharded")), logits(model))


@pytest.mark.parametrize("scheme,nested", [("nf4", False), ("nf4", True), ("fp4", False), ("fp4", True)])
def test_bnb_4bit_folder_loads_and_dequantizes_as_tlio_does(saved, tmp_path, scheme, nested):
    pytest.importorskip("bitsandbytes")
    folder, _ = saved
    q, deq = tmp_path / "q", tmp_path / "deq"
    run("quantize", folder, q, "--scheme", scheme, *(["--nested"] if nested else []))
    qc = config(q)["quantization_config"]
    assert qc["quant_method"] == "bitsandbytes" and qc["load_in_4bit"] is True
    assert qc["bnb_4bit_quant_type"] == scheme and qc["bnb_4bit_use_double_quant"] is nested
    assert qc["bnb_4bit_compute_dtype"] == "bfloat16"
    loaded = load(q)
    assert type(loaded.model.layers[0].mlp.down_proj).__name__ == "Linear4bit"
    assert type(loaded.lm_head).__name__ == "Linear"
    loaded.dequantize()  # transformers + bitsandbytes' own dequantization
    run("dequantize", q, deq, "--dtype", "BF16")
    assert formats(deq) == {"pt"} and "quantization_config" not in config(deq)
    restored = load(deq)
    for (name, p), (_, r) in zip(loaded.state_dict().items(), restored.state_dict().items()):
        assert bits_equal(p, r), name


@pytest.mark.parametrize("scheme", ["nf4", "int8"])
def test_bnb_folder_of_a_tied_model_keeps_its_head_plain(tmp_path, scheme):
    """A tied head is stored as the embeddings alone: the config must still name it plain."""
    pytest.importorskip("bitsandbytes")
    save_llama(tmp_path / "tied", tied=True)
    run("quantize", tmp_path / "tied", tmp_path / "q", "--scheme", scheme)
    assert "lm_head" in config(tmp_path / "q")["quantization_config"]["llm_int8_skip_modules"]
    loaded = load(tmp_path / "q")
    assert type(loaded.lm_head).__name__ == "Linear"
    assert loaded.lm_head.weight.data_ptr() == loaded.model.embed_tokens.weight.data_ptr()
    assert torch.isfinite(logits(loaded)).all()


def test_int8_folder_loads_as_linear8bit_and_dequantizes_as_tlio_does(saved, tmp_path):
    bnb = pytest.importorskip("bitsandbytes")
    folder, _ = saved
    q, deq = tmp_path / "q", tmp_path / "deq"
    run("quantize", folder, q, "--scheme", "int8")
    assert config(q)["quantization_config"]["load_in_8bit"] is True
    loaded = load(q)
    layer = loaded.model.layers[1].self_attn.q_proj
    assert type(layer).__name__ == "Linear8bitLt" and layer.weight.dtype == torch.int8
    run("dequantize", q, deq, "--dtype", "F32")
    restored = load(deq)
    for name, module in loaded.named_modules():
        if type(module).__name__ != "Linear8bitLt":
            continue
        # bitsandbytes' int8 dequantization: codes times the row's absmax / 127.
        theirs = bnb.functional.int8_vectorwise_dequant(module.weight.data, module.weight.SCB)
        assert bits_equal(theirs.float(), restored.get_submodule(name).weight.data), name


@pytest.mark.parametrize("scheme", ["fp8-block"])
def test_fp8_folder_loads_dequantized_on_cpu_as_tlio_dequantizes(saved, tmp_path, scheme):
    folder, _ = saved
    q, deq = tmp_path / "q", tmp_path / "deq"
    run("quantize", folder, q, "--scheme", scheme, "--block", "32")
    assert config(q)["quantization_config"]["quant_method"] == "fp8"
    loaded = load(q)  # on CPU transformers dequantizes FP8 into the model's dtype
    run("dequantize", q, deq, "--dtype", "BF16")
    restored = load(deq)
    for (name, p), (_, r) in zip(loaded.state_dict().items(), restored.state_dict().items()):
        assert bits_equal(p, r), name


def test_fp8_rows_load_through_compressed_tensors_as_tlio_dequantizes(saved, tmp_path):
    """quantize --scheme fp8 (per row) is compressed-tensors' naive-quantized FP8: transformers
    loads it with compressed-tensors, whose decompression equals tlio's dequantize bit for bit."""
    pytest.importorskip("compressed_tensors")
    folder, _ = saved
    run("quantize", folder, tmp_path / "q", "--scheme", "fp8")
    assert config(tmp_path / "q")["quantization_config"]["quant_method"] == "compressed-tensors"
    load(tmp_path / "q")  # compressed, as it is stored
    theirs = load(tmp_path / "q", quantization_config=transformers.CompressedTensorsConfig(dequantize=True))
    run("dequantize", tmp_path / "q", tmp_path / "deq", "--dtype", "BF16")
    for (name, p), (_, r) in zip(theirs.state_dict().items(), load(tmp_path / "deq").state_dict().items()):
        assert bits_equal(p, r), name


def test_fp8_ue8m0_scales_dequantize_as_transformers_does(saved, tmp_path):
    """DeepSeek-V3.1's form: block scales as float8_e8m0fnu (transformers' scale_fmt "ue8m0")."""
    folder, _ = saved
    q = tmp_path / "q"
    q.mkdir()
    cfg = config(folder)
    cfg["quantization_config"] = {"quant_method": "fp8", "activation_scheme": "dynamic",
                                  "weight_block_size": [32, 32], "scale_fmt": "ue8m0"}
    (q / "config.json").write_text(json.dumps(cfg))
    gen = torch.Generator().manual_seed(1)
    tensors = {}
    with safetensors.safe_open(folder / "model.safetensors", "pt") as f:
        for name in f.keys():
            t = f.get_tensor(name)
            if name.endswith("proj.weight"):
                rows, cols = t.shape
                tensors[name] = (torch.randn(rows, cols, generator=gen) * 100).to(torch.float8_e4m3fn)
                exponents = torch.randint(110, 130, ((rows + 31) // 32, (cols + 31) // 32), generator=gen)
                tensors[name + "_scale_inv"] = exponents.to(torch.uint8).view(torch.float8_e8m0fnu)
            else:
                tensors[name] = t
    safetensors.torch.save_file(tensors, q / "model.safetensors", metadata={"format": "pt"})
    assert "fp8-block32x32-ue8m0" in run("inspect", q).stdout
    run("dequantize", q, tmp_path / "deq", "--dtype", "BF16")
    theirs, ours = load(q), load(tmp_path / "deq")  # transformers dequantizes on CPU
    for (name, p), (_, r) in zip(theirs.state_dict().items(), ours.state_dict().items()):
        assert bits_equal(p, r), name


@pytest.mark.parametrize("scheme", ["nf4", "int8", "fp8-block"])
def test_gguf_export_of_a_quantized_folder_decodes_each_weight(saved, tmp_path, scheme):
    """Exported as the consumer dequantizes it (transformers + bitsandbytes, or FP8 on CPU)."""
    if scheme != "fp8-block":
        pytest.importorskip("bitsandbytes")
    gguf = pytest.importorskip("gguf")
    folder, _ = saved
    q = tmp_path / "q"
    run("quantize", folder, q, "--scheme", scheme, *(["--block", "32"] if scheme == "fp8-block" else []))
    run("convert", q, tmp_path / "q.gguf", "--dtype", "f32")
    model = load(q)
    if scheme != "fp8-block":
        model.dequantize()
    tensors = {t.name: t for t in gguf.GGUFReader(tmp_path / "q.gguf").tensors}
    for i in range(2):
        for hf, name in (("mlp.down_proj", "ffn_down"), ("self_attn.v_proj", "attn_v")):
            # Decoded in F32 (as llama.cpp's converter dequantizes FP8); the consumer rounds the
            # same products once more, to the model's BF16.
            theirs = model.get_submodule(f"model.layers.{i}.{hf}").weight.data
            ours = torch.from_numpy(tensors[f"blk.{i}.{name}.weight"].data.copy()).reshape(theirs.shape)
            assert bits_equal(ours.to(theirs.dtype), theirs), (scheme, i, name)


def test_int4_round_trip_gives_back_a_folder_transformers_loads(saved, tmp_path):
    folder, _ = saved
    q, deq = tmp_path / "q", tmp_path / "deq"
    run("quantize", folder, q, "--scheme", "int4-g32-sym")
    with safetensors.safe_open(next(q.glob("*.safetensors")), "pt") as s:
        meta = s.metadata()
    assert meta["format"] == "tinyllm" and meta["source_format"] == "pt"
    run("dequantize", q, deq, "--dtype", "BF16")
    assert formats(deq) == {"pt"}
    load(deq)


def test_gguf_import_is_a_folder_transformers_loads(saved, tmp_path):
    folder, model = saved
    run("convert", folder, tmp_path / "m.gguf", "--dtype", "f32")
    run("convert", tmp_path / "m.gguf", tmp_path / "back", "--dtype", "BF16")
    assert formats(tmp_path / "back") == {"pt"}
    back = load(tmp_path / "back")
    for (name, p), (_, q) in zip(model.state_dict().items(), back.state_dict().items()):
        assert bits_equal(p, q), name  # BF16 -> F32 -> BF16 is exact


def test_tied_checkpoint_import_validates_and_exports(tmp_path):
    model = save_llama(tmp_path / "tied", tied=True, dtype=torch.float32)
    torch.save(model.state_dict(), tmp_path / "pytorch_model.bin")
    out = tmp_path / "imported"
    out.mkdir()
    run("import", tmp_path / "pytorch_model.bin", out / "model.safetensors")
    for f in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        (out / f).write_bytes((tmp_path / "tied" / f).read_bytes())
    assert ": OK" in run("validate", out).stdout
    run("convert", out, tmp_path / "tied.gguf", "--dtype", "f32")
    assert torch.equal(logits(load(out)), logits(load(tmp_path / "tied")))


@pytest.mark.parametrize("kwargs", [
    {"load_in_4bit": True, "bnb_4bit_quant_type": "nf4", "bnb_4bit_use_double_quant": True,
     "bnb_4bit_compute_dtype": torch.bfloat16},
    {"load_in_4bit": True, "bnb_4bit_quant_type": "fp4"},
    {"load_in_8bit": True}], ids=["nf4-nested", "fp4", "int8"])
def test_folders_transformers_quantized_read_as_bitsandbytes_dequantizes(saved, tmp_path, kwargs):
    """Inputs as the Hub's tools write them: transformers + bitsandbytes quantize and save."""
    pytest.importorskip("bitsandbytes")
    folder, _ = saved
    model = transformers.AutoModelForCausalLM.from_pretrained(
        folder, quantization_config=transformers.BitsAndBytesConfig(**kwargs), device_map="cpu")
    model.save_pretrained(tmp_path / "q")
    assert ": OK" in run("validate", tmp_path / "q").stdout
    dtype = "F32" if kwargs.get("load_in_8bit") else "BF16"
    run("dequantize", tmp_path / "q", tmp_path / "deq", "--dtype", dtype)
    restored = load(tmp_path / "deq")
    for name, module in model.named_modules():
        kind = type(module).__name__
        if kind == "Linear4bit":
            import bitsandbytes
            theirs = bitsandbytes.functional.dequantize_4bit(module.weight.data, module.weight.quant_state)
        elif kind == "Linear8bitLt":
            import bitsandbytes
            theirs = bitsandbytes.functional.int8_vectorwise_dequant(module.weight.data, module.weight.SCB)
        else:
            continue
        assert bits_equal(theirs.to(TORCH_DTYPES[dtype]), restored.get_submodule(name).weight.data), name
