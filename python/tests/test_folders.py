"""Model folders in and out: convert_file, quantize_file and dequantize_file given a Hugging Face
folder (shards with their index, config.json, tokenizer files) write a folder with the same
shards, a new index and config.json edited; torch's own dtype conversion is the oracle."""
import json
import os
import pathlib

import pytest
import torch

import tlio
import tlio.torch

DATA = pathlib.Path(os.environ.get("TLIO_TEST_DATA", pathlib.Path(__file__).parents[2] / "tests" / "data"))


def hf_folder(path, dtype=torch.float32):
    """Two shards, their index, config.json and tokenizer.json, as save_pretrained writes them."""
    torch.manual_seed(0)
    shards = {
        "model-00001-of-00002.safetensors": {
            "model.embed_tokens.weight": torch.randn(32, 16, dtype=dtype),
            "model.layers.0.self_attn.q_proj.weight": torch.randn(16, 16, dtype=dtype),
        },
        "model-00002-of-00002.safetensors": {
            "model.layers.0.mlp.up_proj.weight": torch.randn(48, 16, dtype=dtype),
            "model.norm.weight": torch.ones(16, dtype=dtype),
            "model.layers.0.self_attn.rotary.inv_freq": torch.arange(8, dtype=torch.int64),
        },
    }
    path.mkdir()
    weight_map, total = {}, 0
    for file, tensors in shards.items():
        tlio.torch.save_file(tensors, path / file, metadata={"format": "pt"})
        for name, t in tensors.items():
            weight_map[name] = file
            total += t.numel() * t.element_size()
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    (path / "model.safetensors.index.json").write_text(json.dumps(index, indent=2, sort_keys=True) + "\n")
    (path / "config.json").write_text(json.dumps(
        {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "torch_dtype": "float32",
         "hidden_size": 16, "intermediate_size": 48, "num_hidden_layers": 1,
         "num_attention_heads": 2, "num_key_value_heads": 2, "vocab_size": 32}, indent=2) + "\n")
    (path / "tokenizer.json").write_text('{"version": "1.0"}')
    return shards


def test_convert_a_folder_keeps_its_shards(tmp_path):
    shards = hf_folder(tmp_path / "src")
    result = tlio.convert_file(tmp_path / "src", tmp_path / "out", "bf16")
    assert result == (4, 1)  # the int64 tensor is kept
    out = tmp_path / "out"
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in (tmp_path / "src").iterdir())
    for file, tensors in shards.items():
        got = tlio.torch.load_file(out / file)
        assert got.keys() == tensors.keys()
        for name, t in tensors.items():
            want = t.to(torch.bfloat16) if t.is_floating_point() else t
            assert got[name].dtype == want.dtype and torch.equal(got[name], want), name
    index = json.loads((out / "model.safetensors.index.json").read_text())
    assert index["weight_map"] == json.loads((tmp_path / "src/model.safetensors.index.json").read_text())["weight_map"]
    assert index["metadata"]["total_size"] == sum(
        t.numel() * (2 if t.is_floating_point() else 8) for ts in shards.values() for t in ts.values())
    config = json.loads((out / "config.json").read_text())
    assert config["torch_dtype"] == "bfloat16" and config["vocab_size"] == 32
    assert (out / "tokenizer.json").read_text() == '{"version": "1.0"}'


@pytest.mark.parametrize("max_size, shards", [(1200, 4), ("1GB", 1)])
def test_max_size_reshards_a_folder_module_by_module(tmp_path, max_size, shards):
    """New shards of at most max_size tensor bytes (a module larger alone), the index naming
    each tensor's shard; one shard is model.safetensors without an index."""
    source = hf_folder(tmp_path / "src")
    out = tmp_path / "out"
    tlio.convert_file(tmp_path / "src", out, "bf16", max_size=max_size)
    files = sorted(p.name for p in out.glob("model*.safetensors"))
    assert len(files) == shards
    loaded = {f: tlio.torch.load_file(out / f) for f in files}
    want = {n: (t.to(torch.bfloat16) if t.is_floating_point() else t) for ts in source.values() for n, t in ts.items()}
    got = {n: t for ts in loaded.values() for n, t in ts.items()}
    assert got.keys() == want.keys() and all(torch.equal(got[n], want[n]) for n in want)
    if shards == 1:
        assert files == ["model.safetensors"] and not (out / "model.safetensors.index.json").exists()
        return
    index = json.loads((out / "model.safetensors.index.json").read_text())
    assert index["weight_map"] == {n: f for f, ts in loaded.items() for n in ts}
    assert index["metadata"]["total_size"] == sum(t.numel() * t.element_size() for t in got.values())
    for f, ts in loaded.items():
        size = sum(t.numel() * t.element_size() for t in ts.values())
        modules = {n.rsplit(".", 1)[0] for n in ts}
        assert size <= 1200 or len(modules) == 1, f
    with pytest.raises(ValueError, match="one file"):
        tlio.convert_file(out / files[0], tmp_path / "x.safetensors", "bf16", max_size=max_size)


def test_edit_file_edits_every_shard_of_a_folder(tmp_path):
    shards = hf_folder(tmp_path / "src")
    r = tlio.edit_file(tmp_path / "src", tmp_path / "out", metadata={"source": "tlio"})
    assert r["kept"] == 5 and r["metadata"] == {"format": "pt", "source": "tlio"}
    for file, tensors in shards.items():
        with tlio.safe_open(tmp_path / "out" / file, "pt") as f:
            assert f.metadata() == {"format": "pt", "source": "tlio"} and set(f.keys()) == set(tensors)
    tlio.edit_file(tmp_path / "out", delete=["source"])  # the folder itself
    assert tlio.safe_open(tmp_path / "out" / "model-00002-of-00002.safetensors", "pt").metadata() == {"format": "pt"}
    with pytest.raises(ValueError, match="model-00001-of-00002.safetensors: no metadata key"):
        tlio.edit_file(tmp_path / "out", delete=["source"])
    assert (tmp_path / "out" / "tokenizer.json").exists()


def test_quantize_and_dequantize_a_folder(tmp_path):
    hf_folder(tmp_path / "src")
    items = tlio.quantize_file(tmp_path / "src", tmp_path / "q", "nf4")
    assert sorted(i["name"] for i in items if i["quantized"]) == [
        "model.layers.0.mlp.up_proj.weight", "model.layers.0.self_attn.q_proj.weight"]
    # Each shard as quantize_file makes it from that shard alone.
    for shard in ("model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"):
        tlio.quantize_file(tmp_path / "src" / shard, tmp_path / "alone.safetensors", "nf4",
                           include="_proj.weight")
        assert (tmp_path / "q" / shard).read_bytes() == (tmp_path / "alone.safetensors").read_bytes()
    config = json.loads((tmp_path / "src/config.json").read_text())
    config["quantization_config"] = {"quant_method": "bitsandbytes", "load_in_4bit": True}
    (tmp_path / "q/config.json").write_text(json.dumps(config, indent=2))
    assert tlio.dequantize_file(tmp_path / "q", tmp_path / "dq", "F16") == 2
    restored = json.loads((tmp_path / "dq/config.json").read_text())
    assert "quantization_config" not in restored and restored["torch_dtype"] == "float16"
    got = tlio.torch.load_file(tmp_path / "dq/model-00002-of-00002.safetensors")
    assert got["model.layers.0.mlp.up_proj.weight"].dtype == torch.float16
    assert got["model.layers.0.mlp.up_proj.weight"].shape == (48, 16)


def test_a_folder_out_is_all_or_nothing(tmp_path):
    hf_folder(tmp_path / "src")
    tlio.convert_file(tmp_path / "src", tmp_path / "out", "f16")
    before = {p.name: p.read_bytes() for p in (tmp_path / "out").iterdir()}
    with pytest.raises(ValueError, match="no tensor"):
        tlio.quantize_file(tmp_path / "src", tmp_path / "out", "nf4", include="^nothing$")
    assert {p.name: p.read_bytes() for p in (tmp_path / "out").iterdir()} == before
    with pytest.raises(FileNotFoundError):
        tlio.convert_file(tmp_path / "missing", tmp_path / "out2", "f16")


def test_a_folder_reads_as_one_file(tmp_path):
    shards = hf_folder(tmp_path / "src")
    everything = {k: v for tensors in shards.values() for k, v in tensors.items()}
    got = tlio.torch.load_file(tmp_path / "src")
    in_file_order = [k for file in shards for k in tlio.safe_open(tmp_path / "src" / file).offset_keys()]
    assert list(got) == in_file_order  # shard by shard, each in the order of its bytes
    assert all(torch.equal(got[k], v) for k, v in everything.items())
    with tlio.safe_open(tmp_path / "src", framework="np") as f:
        assert f.keys() == sorted(everything)
        assert f.metadata() == {"format": "pt"}
        assert f.get_slice("model.layers.0.mlp.up_proj.weight")[2:5].shape == (3, 16)
        assert (f.get_tensor("model.norm.weight") == 1).all()
        with pytest.raises(KeyError):
            f.get_tensor("nope")
    with pytest.raises(ValueError, match="model folder"):
        tlio.safe_open(tmp_path / "src", sha256="0" * 64)


def test_quantized_weights_of_a_folder(tmp_path):
    hf_folder(tmp_path / "src")
    tlio.quantize_file(tmp_path / "src", tmp_path / "q", "nf4")
    with tlio.safe_open(tmp_path / "q", framework="pt") as f:
        names = sorted(q["name"] for q in f.quantized())
        assert names == ["model.layers.0.mlp.up_proj.weight", "model.layers.0.self_attn.q_proj.weight"]
        restored = f.get_dequantized("model.layers.0.mlp.up_proj.weight")
    original = tlio.torch.load_file(tmp_path / "src/model-00002-of-00002.safetensors")["model.layers.0.mlp.up_proj.weight"]
    assert restored.shape == original.shape
    # nf4's error is bounded by its blocks' absmax: well under the values' spread here.
    assert (restored.float() - original).abs().max() < 0.5


def test_the_cli_reads_a_folder(tmp_path):
    import subprocess
    from test_import import CLI
    hf_folder(tmp_path / "src")
    merged = tmp_path / "merged.safetensors"
    assert subprocess.run([CLI, "merge", tmp_path / "src", merged], capture_output=True).returncode == 0
    for args in (["diff", tmp_path / "src", merged], ["stats", tmp_path / "src", "model.norm.weight"],
                 ["cat", tmp_path / "src", "model.norm.weight", "--slice", "0:2"], ["metadata", tmp_path / "src"]):
        out = subprocess.run([CLI, *args], capture_output=True, text=True)
        assert out.returncode == 0, (args, out.stderr)
    out = subprocess.run([CLI, "diff", tmp_path / "src", merged, "--json"], capture_output=True, text=True)
    assert json.loads(out.stdout)["equal"] is True


def test_compare_a_folder_with_its_conversion(tmp_path):
    hf_folder(tmp_path / "src")
    tlio.convert_file(tmp_path / "src", tmp_path / "bf16", "bf16")
    r = tlio.compare_files(tmp_path / "bf16", tmp_path / "src", rtol=2 ** -8, filter="proj")
    assert sorted(t["name"] for t in r["tensors"]) == [
        "model.layers.0.mlp.up_proj.weight", "model.layers.0.self_attn.q_proj.weight"]
    assert r["equal"] and all(t["a_dtype"] == "BF16" and t["b_dtype"] == "F32" for t in r["tensors"])
    assert not tlio.compare_files(tmp_path / "bf16", tmp_path / "src")["equal"]  # BF16 rounds


def test_convert_counts_what_the_dtype_cannot_hold_and_refuses_unscaled_fp8(tmp_path):
    src = tmp_path / "src"
    hf_folder(src)
    w = tlio.torch.load_file(src / "model-00002-of-00002.safetensors")
    w["model.layers.0.mlp.up_proj.weight"][0, :3] = torch.tensor([7e4, -1e6, 1e-9])
    tlio.torch.save_file(w, src / "model-00002-of-00002.safetensors", metadata={"format": "pt"})
    r = tlio.convert_file(src, tmp_path / "f16", "F16")
    converted, kept = r  # still the pair it always was
    got = tlio.torch.load_file(tmp_path / "f16" / "model-00002-of-00002.safetensors")
    want = w["model.layers.0.mlp.up_proj.weight"].to(torch.float16)  # torch's cast: the oracle
    assert r.lost == {"model.layers.0.mlp.up_proj.weight": (int(want.isinf().sum()),
                                                            int(((want == 0) & (w["model.layers.0.mlp.up_proj.weight"] != 0)).sum()))}
    assert r.lost["model.layers.0.mlp.up_proj.weight"] == (2, 1)
    assert torch.equal(got["model.layers.0.mlp.up_proj.weight"].view(torch.int16), want.view(torch.int16))
    assert tlio.convert_file(src, tmp_path / "bf16", "BF16").lost == {}
    with pytest.raises(ValueError, match="quantize --scheme fp8-block"):
        tlio.convert_file(src, tmp_path / "f8", "F8_E4M3")
    assert not (tmp_path / "f8").exists() or not any((tmp_path / "f8").iterdir())
    tlio.convert_file(src, tmp_path / "f8", "F8_E4M3", cast=True)
    assert json.loads((tmp_path / "f8" / "config.json").read_text())["torch_dtype"] == "float8_e4m3fn"


def test_the_library_decides_file_or_folder(tmp_path):
    """Every rewrite asks the library what its source is (tlio::weights_kind, once): a folder's
    output is a folder, a GGUF is refused naming its import, and safe_open takes all three."""
    hf_folder(tmp_path / "src")
    from tlio import _tlio
    assert _tlio.weights_kind(str(tmp_path / "src")) == "model folder"
    assert _tlio.weights_kind(str(tmp_path / "src" / "model-00001-of-00002.safetensors")) == "safetensors"
    gguf = DATA / "gguf" / "no_extension"  # found by its magic
    assert _tlio.weights_kind(str(gguf)) == "gguf"
    assert _tlio.weights_kind("-") == "safetensors"
    with pytest.raises(ValueError, match="GGUF's import"):
        tlio.convert_file(gguf, tmp_path / "g.safetensors", "bf16")
    with pytest.raises(ValueError, match="folder too"):
        tlio.quantize_file(tmp_path / "src", tmp_path / "q.safetensors", "nf4")
    assert not (tmp_path / "q.safetensors").exists()
    with tlio.safe_open(tmp_path / "src", "np") as f:
        assert "model.norm.weight" in f.keys()
