"""`tlio convert MODEL_DIR OUT.gguf` checked against llama.cpp itself. Tiny random models of each
architecture (Llama, Mistral with a SentencePiece tokenizer.model, Qwen2 with q/k/v biases,
Qwen3 with q/k norms, a head size of its own and tied embeddings), their tokenizers trained by
Hugging Face's `tokenizers` with each model's real pre-tokenizer (or by `sentencepiece`), are
exported; then llama.cpp (npm's prebuilt libllama, gguf_oracle/run_llama.py)
loads the file, its tokenization of sample texts equals the Hugging Face tokenizer's, and its
logits at every position equal a numpy forward pass of the Hugging Face weights (the test that
catches a wrong Q/K permutation: without it the logits are off by ~3, with it by ~0.01, F16
KV-cache rounding). Quantized exports are compared byte for byte with ggml's reference
quantizer (gguf_oracle/check_quants.py)."""
import importlib.util
import json
import os
import pathlib
import subprocess

import numpy as np
import pytest

import tlio

CLI = os.environ.get("TLIO_CLI", str(pathlib.Path(__file__).parents[2] / "build" / "tlio"))
REPO = pathlib.Path(__file__).parents[2]
ORACLE = pathlib.Path(CLI).resolve().parent / "oracle-venv" / "bin" / "python"
LIB_DIR = pathlib.Path(os.environ.get("TLIO_LLAMA_LIB_DIR") or REPO / "build" / "npm" / "node_modules" /
                       "@node-llama-cpp" / "linux-x64" / "bins" / "linux-x64")
HERE = pathlib.Path(__file__).parent / "gguf_oracle"
TEXTS = ["Hello world! The quick fox 12345", "def f(x):\n    return x * 2\n", "émigré café, 7 dogs"]

pytestmark = pytest.mark.skipif(not ORACLE.exists(),
                                reason="the oracles are installed into build/oracle-venv by scripts/install-deps.sh")

_spec = importlib.util.spec_from_file_location("gguf_reference", HERE / "reference.py")
reference = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(reference)


def copy_folder(src, dst):
    dst.mkdir()
    for f in src.iterdir():
        (dst / f.name).write_bytes(f.read_bytes())
    return dst


def run(*args):
    return subprocess.run([CLI, *map(str, args)], capture_output=True, text=True, timeout=300)


def llama_cpp(gguf, text, out):
    """llama.cpp's token ids for `text` and the logits of each position."""
    if not (LIB_DIR / "libllama.v0.4.0.so").exists():
        pytest.fail(f"llama.cpp's libraries are not in {LIB_DIR}: run `bash scripts/install-deps.sh`")
    r = subprocess.run(["/usr/bin/python3", str(HERE / "run_llama.py"), str(LIB_DIR), str(gguf), text, str(out)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1]), np.load(out)


def hf_tokens(folder, texts):
    """The reference tokenizer's ids: Hugging Face's tokenizers on tokenizer.json, or sentencepiece
    on tokenizer.model with BOS first (as LlamaTokenizer adds it)."""
    if (folder / "tokenizer.json").exists():
        script = ("import json, sys\nfrom tokenizers import Tokenizer\n"
                  "t = Tokenizer.from_file(sys.argv[1])\n"
                  "print(json.dumps([t.encode(s).ids for s in json.loads(sys.argv[2])]))\n")
        path = folder / "tokenizer.json"
    else:
        script = ("import json, sys\nimport sentencepiece as spm\n"
                  "t = spm.SentencePieceProcessor(model_file=sys.argv[1])\n"
                  "print(json.dumps([[t.bos_id()] + t.encode(s) for s in json.loads(sys.argv[2])]))\n")
        path = folder / "tokenizer.model"
    r = subprocess.run([str(ORACLE), "-c", script, str(path), json.dumps(texts)],
                       capture_output=True, text=True, timeout=120, check=True)
    return json.loads(r.stdout)


@pytest.fixture(scope="module", params=["llama", "mistral", "qwen2", "qwen3"])
def model(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp("gguf-export") / request.param
    subprocess.run([str(ORACLE), str(HERE / "make_model.py"), str(folder), request.param], check=True, timeout=300)
    tlio.save_file(dict(np.load(folder / "weights.npz")), folder / "model.safetensors")
    return request.param, folder


@pytest.fixture(scope="module")
def f32_export(model, tmp_path_factory):
    """The model exported as F32, and the export's --json report."""
    out = tmp_path_factory.mktemp("f32") / "model-f32.gguf"
    r = run("convert", model[1], out, "--dtype", "f32", "--json")
    assert r.returncode == 0, r.stderr
    return out, json.loads(r.stdout)


def test_llama_cpp_runs_the_export_as_the_reference_does(model, f32_export, tmp_path):
    arch, folder = model
    out, doc = f32_export
    assert doc["architecture"] == {"mistral": "llama"}.get(arch, arch)
    assert doc["types"] == {"F32": doc["tensors"]} and doc["fallbacks"] == []
    if arch == "mistral":  # SentencePiece's pieces, scores and types, as llama.cpp's converter writes them
        keys = tlio.gguf_metadata(out)
        assert keys["tokenizer.ggml.model"] == "llama" and keys["tokenizer.ggml.pre"] == "default"
        types = keys["tokenizer.ggml.token_type"]
        assert len(keys["tokenizer.ggml.scores"]) == len(types) == len(keys["tokenizer.ggml.tokens"])
        assert types[:3] == [2, 3, 3] and types.count(6) == 256  # <unk>, <s>, </s>; the byte pieces
        # <unk> is id 0, llama.cpp's default, which its converter leaves unwritten without a
        # tokenizer.json to name it in
        assert "tokenizer.ggml.unknown_token_id" not in keys and keys["tokenizer.ggml.add_bos_token"] is True
    for text, want in zip(TEXTS, hf_tokens(folder, TEXTS)):
        ids, logits = llama_cpp(out, text, tmp_path / "logits.npy")
        assert ids == want, text
        ref = reference.forward(str(folder), ids)
        assert logits.shape == ref.shape
        assert np.abs(logits - ref).max() < 0.05 * np.abs(ref).max(), (text, np.abs(logits - ref).max())


@pytest.mark.parametrize("dtype", ["q8_0", "q4_k", "q6_k"])
def test_quantized_weights_are_ggmls_reference_bytes(model, f32_export, tmp_path, dtype):
    arch, folder = model
    f32, quant = f32_export[0], tmp_path / f"{dtype}.gguf"
    r = run("convert", folder, quant, "--dtype", dtype, "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    check = subprocess.run([str(ORACLE), str(HERE / "check_quants.py"), str(LIB_DIR / "libggml-base.so"), str(f32),
                            str(quant)], capture_output=True, text=True, timeout=300, check=True)
    seen = json.loads(check.stdout)
    assert seen["differ"] == [] and seen["compared"] > 0, seen
    assert seen["types"] == doc["types"]
    # Qwen3's attn_output rows (4 heads of 48) are not whole 256-value super-blocks: they fall
    # back as llama.cpp's do (Q4_K -> Q5_0, Q6_K -> Q8_0); 1-D tensors stay F32.
    want = {"q4_k": "Q4_K -> Q5_0", "q6_k": "Q6_K -> Q8_0"}.get(dtype)
    if arch == "qwen3" and want:
        assert len(doc["fallbacks"]) == 2 and all("attn_output" in f and want in f for f in doc["fallbacks"]), doc
    else:
        assert doc["fallbacks"] == [], doc
    one_d = sum(1 for v in np.load(folder / "weights.npz").values() if v.ndim == 1)
    assert doc["types"]["F32"] == one_d  # norms and biases
    ids, logits = llama_cpp(quant, TEXTS[0], tmp_path / "logits.npy")
    assert np.isfinite(logits).all() and len(ids) > 3


def test_refusals_name_what_is_not_exported(model, tmp_path):
    arch, folder = model
    if arch != "llama":
        pytest.skip("one model is enough")
    bad = copy_folder(folder, tmp_path / "bad")
    config = json.loads((folder / "config.json").read_text())
    (bad / "config.json").write_text(json.dumps({**config, "architectures": ["GPTNeoXForCausalLM"]}))
    r = run("convert", bad, tmp_path / "x.gguf")
    assert r.returncode == 1 and "GPTNeoXForCausalLM" in r.stderr and "Qwen3ForCausalLM" in r.stderr, r.stderr
    for scaling, named in [({"type": "dynamic", "factor": 2.0}, "dynamic"),
                           ({"rope_type": "longrope", "factor": 4.0}, "longrope"),
                           ({"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32,
                             "mscale_all_dim": 1.0}, "mscale_all_dim"),
                           ({"rope_type": "llama3", "factor": 8.0, "mscale": 2}, "mscale")]:
        (bad / "config.json").write_text(json.dumps({**config, "rope_scaling": scaling}))
        r = run("convert", bad, tmp_path / "x.gguf")
        assert r.returncode == 1 and "rope_scaling" in r.stderr and named in r.stderr, r.stderr
    (bad / "config.json").write_text(json.dumps({**config, "bos_token_id": 10**9}))
    (bad / "tokenizer_config.json").write_text("{}")
    r = run("convert", bad, tmp_path / "x.gguf")
    assert r.returncode == 1 and "bos_token_id" in r.stderr and "vocab_size" in r.stderr, r.stderr
    (bad / "config.json").write_text(json.dumps({**config, "vocab_size": 2**40}))
    r = run("convert", bad, tmp_path / "x.gguf")
    assert r.returncode == 1 and "vocab_size" in r.stderr, r.stderr
    (bad / "tokenizer_config.json").write_bytes((folder / "tokenizer_config.json").read_bytes())
    (bad / "config.json").write_text(json.dumps(config))
    tok = json.loads((folder / "tokenizer.json").read_text())
    tok["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = r"\w+|\s+"
    (bad / "tokenizer.json").write_text(json.dumps(tok))
    r = run("convert", bad, tmp_path / "x.gguf")
    assert r.returncode == 1 and "pre-tokenizer" in r.stderr and "not guessed" in r.stderr, r.stderr
    (bad / "tokenizer.json").unlink()
    r = run("convert", bad, tmp_path / "x.gguf")
    assert r.returncode == 1 and "tokenizer.json" in r.stderr, r.stderr
    assert not (tmp_path / "x.gguf").exists() and not [p for p in tmp_path.iterdir() if "tlio-tmp" in p.name]
    r = run("convert", folder, tmp_path / "x.gguf", "--dtype", "iq2_xxs")
    assert r.returncode == 2
    r = run("convert", folder, tmp_path / "x.safetensors", "--dtype", "q4_k")
    assert r.returncode == 2 and ".gguf" in r.stderr


def test_llama3_style_files_export_as_llama_cpp_reads_them(model, tmp_path):
    """Llama 3's files: the BOS template inside a Sequence post-processor, no add_bos_token in
    tokenizer_config.json, a list of eos ids in config.json (Llama 3.1)."""
    arch, folder = model
    if arch != "llama":
        pytest.skip("a Llama layout")
    llama3 = copy_folder(folder, tmp_path / "llama3")
    tok = json.loads((folder / "tokenizer.json").read_text())
    tok["post_processor"] = {"type": "Sequence", "processors": [
        {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
        tok["post_processor"]]}
    (llama3 / "tokenizer.json").write_text(json.dumps(tok))
    (llama3 / "tokenizer_config.json").write_text(json.dumps({"bos_token": "<|begin_of_text|>"}))
    config = json.loads((folder / "config.json").read_text())
    (llama3 / "config.json").write_text(json.dumps({**config, "eos_token_id": [1, 0]}))
    r = run("convert", llama3, tmp_path / "x.gguf", "--dtype", "f32")
    assert r.returncode == 0, r.stderr
    fields = tlio.gguf_metadata(tmp_path / "x.gguf")
    assert fields["tokenizer.ggml.add_bos_token"] is True
    assert fields["tokenizer.ggml.eos_token_id"] == 1 and fields["tokenizer.ggml.bos_token_id"] == 0
    ids, _ = llama_cpp(tmp_path / "x.gguf", "Hello", tmp_path / "l.npy")
    assert ids[0] == 0  # <|begin_of_text|>, as Hugging Face's tokenizer adds it


def converter_rope_factors(config):
    """rope_freqs.weight as llama.cpp's converter computes it (torch, float32), written here from
    its formula: the independent oracle for tlio's."""
    import math
    import torch
    rs, base = config["rope_scaling"], config.get("rope_theta", 10000.0)
    dim = config.get("head_dim", config["hidden_size"] // config["num_attention_heads"])
    freqs = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
    factor, low, high = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"]
    old = rs["original_max_position_embeddings"]
    out = []
    for freq in freqs:
        wavelen = 2 * math.pi / freq
        if wavelen < old / high:
            out.append(1)
        elif wavelen > old / low:
            out.append(factor)
        else:
            smooth = (old / wavelen - low) / (high - low)
            out.append(1 / ((1 - smooth) / factor + smooth))
    return torch.tensor(out, dtype=torch.float32).numpy()


@pytest.mark.parametrize("scaling", [
    {"factor": 8.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0, "original_max_position_embeddings": 64,
     "rope_type": "llama3"},
    {"factor": 4.0, "rope_type": "linear"}])
def test_rope_scaling_exports_as_llama_cpp_reads_it_and_comes_back(model, tmp_path, scaling):
    """Llama 3.1's rope_scaling becomes rope_freqs.weight (the factors llama.cpp divides each
    frequency by), linear scaling two keys; llama.cpp's logits then follow transformers' scaled
    RoPE (the reference), and the import gives config.json's rope_scaling back."""
    arch, folder = model
    if arch != "llama":
        pytest.skip("Llama 3's scaling is llama's")
    scaled = copy_folder(folder, tmp_path / "scaled")
    config = {**json.loads((folder / "config.json").read_text()), "rope_scaling": scaling}
    (scaled / "config.json").write_text(json.dumps(config))
    out = tmp_path / "scaled.gguf"
    r = run("convert", scaled, out, "--dtype", "f32")
    assert r.returncode == 0, r.stderr
    keys = tlio.gguf_metadata(out)
    with tlio.safe_open(out, "numpy") as f:
        if scaling["rope_type"] == "llama3":
            got, want = f.get_tensor("rope_freqs.weight"), converter_rope_factors(config)
            assert got.dtype == np.float32 and got.shape == want.shape
            # torch's float32 pow is not correctly rounded (tlio rounds double's): the ulp it may
            # differ by, carried through the band's formula, is all that may differ.
            assert np.all(np.abs(got - want) <= 4 * np.spacing(want)), (got, want)
            assert (got == want).mean() > 0.9
            assert 1.0 in got and 8.0 in got and ((got > 1) & (got < 8)).sum() >= 2  # the three regions
            assert "llama.rope.scaling.type" not in keys
        else:
            assert "rope_freqs.weight" not in f.keys()
            assert keys["llama.rope.scaling.type"] == "linear" and keys["llama.rope.scaling.factor"] == 4.0
    r = run("diff", out, scaled)  # rope_freqs.weight is made from config.json: in neither "only in" list
    assert r.returncode == 0 and r.stdout.startswith("equal:"), r.stdout + r.stderr
    ids, logits = llama_cpp(out, TEXTS[0], tmp_path / "logits.npy")
    ref, unscaled = reference.forward(str(scaled), ids), reference.forward(str(folder), ids)
    tolerance = 0.05 * np.abs(ref).max()
    assert np.abs(logits - ref).max() < tolerance
    assert np.abs(logits - unscaled).max() > 2 * tolerance  # the scaling is what makes them agree

    back = tmp_path / "back"
    r = run("convert", out, back, "--dtype", "f32")
    assert r.returncode == 0, r.stderr
    assert json.loads((back / "config.json").read_text())["rope_scaling"] == scaling
    with tlio.safe_open(back / "model.safetensors", "numpy") as f:
        assert "rope_freqs.weight" not in f.keys()
    if scaling["rope_type"] == "llama3":  # Llama 3's scaling exported to a Qwen2 model: refused by name
        (scaled / "config.json").write_text(json.dumps({**config, "architectures": ["Qwen2ForCausalLM"]}))
        r = run("convert", scaled, tmp_path / "q.gguf")
        assert r.returncode == 1 and "rope_scaling" in r.stderr and "Qwen2ForCausalLM" in r.stderr, r.stderr


def test_export_from_python_writes_the_clis_bytes(tmp_path):
    src = pathlib.Path(os.environ.get("TLIO_TEST_DATA", REPO / "tests" / "data")) / "gguf" / "tiny_llama"
    # llama-quantize's Q4_0: output.weight Q6_K, which rows of 32 take as Q8_0; --pure: all Q4_0.
    report = tlio.export_gguf(src, tmp_path / "py.gguf", "q4_0")
    assert report["architecture"] == "llama" and report["types"] == {"F32": 3, "Q4_0": 8, "Q8_0": 1}
    assert run("convert", src, tmp_path / "cli.gguf", "--dtype", "Q4_0").returncode == 0
    assert (tmp_path / "py.gguf").read_bytes() == (tmp_path / "cli.gguf").read_bytes()
    pure = tlio.export_gguf(src, tmp_path / "pure.gguf", "q4_0", pure=True)
    assert pure["types"] == {"F32": 3, "Q4_0": 9}
    assert run("convert", src, tmp_path / "cli-pure.gguf", "--dtype", "Q4_0", "--pure").returncode == 0
    assert (tmp_path / "pure.gguf").read_bytes() == (tmp_path / "cli-pure.gguf").read_bytes()
    # Rows of 32: Q5_K falls back to Q5_1; the one layer's attn_v and ffn_down (more bits: Q6_K)
    # to Q8_0, as output.weight is.
    mixed = tlio.export_gguf(src, tmp_path / "mix.gguf", "q5_k_m")
    assert mixed["types"] == {"F32": 3, "Q5_1": 6, "Q8_0": 3} and len(mixed["fallbacks"]) == 8
    split = tlio.export_gguf(src, tmp_path / "s.gguf", "f32", split_max_size="50KB")
    assert len(split["files"]) >= 3 and split["files"][0].endswith("s-00001-of-0000%d.gguf" % len(split["files"]))
    assert tlio.gguf_metadata(split["files"][0])["split.count"] == len(split["files"])
    with tlio.safe_open(split["files"][0], "np") as f:  # the set, by its first file
        assert len(f.keys()) == split["tensors"]
    with pytest.raises(ValueError, match="IQ2_XXS"):
        tlio.export_gguf(src, tmp_path / "x.gguf", "IQ2_XXS")
    # The export reads back through safe_open, decoded.
    with tlio.safe_open(tmp_path / "py.gguf", "numpy") as f:
        assert f.get_tensor("blk.0.ffn_up.weight").shape == (64, 32)


# llama.cpp's mixes and their llama_ftype numbers.
MIXES = {"Q3_K_S": 11, "Q3_K_M": 12, "Q3_K_L": 13, "Q4_K_S": 14, "Q4_K_M": 15, "Q5_K_S": 16, "Q5_K_M": 17}


def llama_quantize(src, dst, file_type):
    r = subprocess.run(["/usr/bin/python3", str(HERE / "quantize_llama.py"), str(LIB_DIR), str(src), str(dst),
                        str(file_type)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]


def compare_ggufs(a, b):
    r = subprocess.run([str(ORACLE), str(HERE / "compare_ggufs.py"), str(a), str(b)], capture_output=True,
                       text=True, timeout=300, check=True)
    return json.loads(r.stdout)


@pytest.fixture(scope="module", params=[("llama", "mix"), ("qwen3", "mix"), ("llama", "mix70")],
                ids=["llama", "qwen3-tied", "llama-70b"])
def mix_model(request, tmp_path_factory):
    """A model for the mixes' rules (8 layers, or the 80 of a 70B) and its F32 export."""
    arch, size = request.param
    folder = tmp_path_factory.mktemp("gguf-mix") / f"{arch}-{size}"
    subprocess.run([str(ORACLE), str(HERE / "make_model.py"), str(folder), arch, size], check=True, timeout=300)
    tlio.save_file(dict(np.load(folder / "weights.npz")), folder / "model.safetensors")
    assert run("convert", folder, folder.parent / "f32.gguf", "--dtype", "f32").returncode == 0
    return size, folder, folder.parent / "f32.gguf"


@pytest.mark.parametrize("mix", MIXES)
def test_mixes_are_what_llama_quantize_writes(mix_model, mix, tmp_path):
    """Every tensor of a mix has the type llama-quantize (npm's libllama, no importance matrix)
    gives it from the F32 export, and the same bytes: the layer rules (attn_v and ffn_down with
    more bits on layers 0, 3, 6, 7 of 8 for Q4_K_M), output.weight (token_embd.weight when tied)
    as Q6_K, a 70B's attn_v as Q5_K, rows of 352 falling back (Q4_K -> Q5_0, Q3_K -> Q4_0)."""
    size, folder, f32 = mix_model
    if size == "mix70" and mix not in ("Q3_K_M", "Q4_K_M"):
        pytest.skip("two mixes show the 70B rule")
    ours, ref = tmp_path / "tlio.gguf", tmp_path / "llama.gguf"
    r = run("convert", folder, ours, "--dtype", mix.lower(), "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    llama_quantize(f32, ref, MIXES[mix])
    seen = compare_ggufs(ours, ref)
    assert {k: v for k, v in seen["types"].items() if v[0] != v[1]} == {}
    assert seen["differ"] == [] and seen["file_type"] == [MIXES[mix]] * 2
    counts = {}
    for ours_type, _ in seen["types"].values():
        counts[ours_type] = counts.get(ours_type, 0) + 1
    assert doc["types"] == counts and len(counts) >= 4, counts  # F32, the base, more bits, fallbacks
    if mix == "Q4_K_M" and size == "mix":
        ids, logits = llama_cpp(ours, TEXTS[0], tmp_path / "logits.npy")
        assert np.isfinite(logits).all() and len(ids) > 3


def test_import_to_a_folder_gives_the_model_back(model, f32_export, tmp_path):
    """`tlio convert MODEL.gguf DIR`: the F32 export read back into a Hugging Face folder has the
    original weights bit for bit (Q/K rows put back), the config's hyperparameters, a
    tokenizer.json that Hugging Face's tokenizers loads and that tokenizes as the original does
    (tokenizers for byte-level BPE, sentencepiece for Mistral's tokenizer.model), and exports
    again to the same tensors (Mistral's vocabulary from that tokenizer.json: llama.cpp then
    tokenizes as sentencepiece does)."""
    arch, folder = model
    out = tmp_path / "back"
    r = run("convert", f32_export[0], out, "--dtype", "f32", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["tokenizer_note"] == "" and doc["files"] == [
        "model.safetensors", "config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json"]
    weights = dict(np.load(folder / "weights.npz"))
    back = tlio.load_file(out / "model.safetensors")
    assert set(back) == set(weights)
    for name, w in weights.items():
        assert back[name].dtype == np.float32 and np.array_equal(back[name], w), name
    want, got = (json.loads((f / "config.json").read_text()) for f in (folder, out))
    if arch == "mistral":  # GGUF's llama: a Llama config, the same model
        assert got["architectures"] == ["LlamaForCausalLM"] and got["model_type"] == "llama"
        want = {**want, "architectures": got["architectures"], "model_type": got["model_type"]}
    for key in ("architectures", "model_type", "hidden_size", "intermediate_size", "num_hidden_layers",
                "num_attention_heads", "num_key_value_heads", "max_position_embeddings", "vocab_size",
                "rms_norm_eps", "rope_theta", "tie_word_embeddings", "bos_token_id", "eos_token_id"):
        assert got[key] == want[key], key
    assert got["head_dim"] == want.get("head_dim", want["hidden_size"] // want["num_attention_heads"])
    assert hf_tokens(out, TEXTS) == hf_tokens(folder, TEXTS)  # SentencePiece's ids, for Mistral's
    if arch == "mistral":  # transformers' LlamaConverter's layout: BPE with byte fallback, merges from scores
        tok = json.loads((out / "tokenizer.json").read_text())
        assert tok["model"]["byte_fallback"] is True and tok["model"]["unk_token"] == "<unk>"
        assert tok["normalizer"]["normalizers"][0] == {"type": "Prepend", "prepend": "\u2581"}
    again = tmp_path / "again.gguf"
    r = run("convert", out, again, "--dtype", "f32")
    assert r.returncode == 0, r.stderr
    seen = compare_ggufs(again, f32_export[0])
    assert seen["differ"] == [] and all(a == b for a, b in seen["types"].values())
    if arch == "mistral":  # no tokenizer.model now: the SentencePiece vocabulary scored by its merges
        keys = tlio.gguf_metadata(again)
        # a space prefix: llama.cpp's default for the "llama" model, which goes unwritten
        assert keys["tokenizer.ggml.model"] == "llama" and "tokenizer.ggml.add_space_prefix" not in keys
        assert keys["tokenizer.ggml.token_type"].count(6) == 256 and keys["tokenizer.ggml.unknown_token_id"] == 0
        for text, want in zip(TEXTS, hf_tokens(folder, TEXTS)):  # sentencepiece's ids, from llama.cpp
            assert llama_cpp(again, text, tmp_path / "logits.npy")[0] == want, text
    # Into the folder again from Python, as BF16: the same names, rounded; a previous model's
    # tokenizer files that this one does not write are gone with its weights.
    (out / "tokenizer.model").write_bytes(b"a previous model's")
    (out / "merges.txt").write_text("a b\n")
    report = tlio.import_gguf(f32_export[0], out, "bf16")
    assert not (out / "tokenizer.model").exists() and not (out / "merges.txt").exists()
    assert report["tensors"] == len(weights) and report["tokenizer_note"] == ""
    with tlio.safe_open(out / "model.safetensors", "np") as f:
        assert f.get_tensor("model.embed_tokens.weight", dtype="float32").dtype == np.float32
    assert json.loads((out / "config.json").read_text())["torch_dtype"] == "bfloat16"


def test_import_to_a_folder_refuses_what_it_cannot_name(tmp_path):
    """Keys a config needs, and architectures the export's table does not have, are named; nothing
    is written."""
    src = pathlib.Path(os.environ.get("TLIO_TEST_DATA", REPO / "tests" / "data")) / "gguf" / "two_tensors.gguf"
    r = run("convert", src, tmp_path / "out")
    assert r.returncode == 1 and "llama.embedding_length" in r.stderr, r.stderr
    falcon = tmp_path / "falcon.gguf"
    script = ("import sys, numpy as np, gguf\n"
              "w = gguf.GGUFWriter(sys.argv[1], 'falcon')\n"
              "w.add_tensor('token_embd.weight', np.zeros((4, 8), dtype=np.float32))\n"
              "w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()\n")
    subprocess.run([str(ORACLE), "-c", script, str(falcon)], check=True, timeout=120)
    r = run("convert", falcon, tmp_path / "out")
    assert r.returncode == 1 and "falcon" in r.stderr and "llama, llama with experts, qwen2" in r.stderr, r.stderr
    assert not (tmp_path / "out").exists()


def test_split_export_is_what_llama_cpp_loads(model, f32_export, tmp_path):
    """--split-max-size: llama.cpp's split files, the split.* keys in each, all the metadata in
    the first; llama.cpp loads the set from the first file and computes what it computes from the
    single file."""
    arch, folder = model
    if arch != "llama":
        pytest.skip("one model is enough")
    r = run("convert", folder, tmp_path / "split.gguf", "--dtype", "f32", "--split-max-size", "1MB", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    files = [pathlib.Path(f) for f in doc["files"]]
    n = len(files)
    assert n >= 3 and [f.name for f in files] == [f"split-{i:05}-of-{n:05}.gguf" for i in range(1, n + 1)]
    assert not (tmp_path / "split.gguf").exists()
    script = ("import json, sys\nfrom gguf import GGUFReader\nout = []\nfor p in sys.argv[1:]:\n"
              "    r = GGUFReader(p)\n"
              "    out.append([int(r.fields[k].parts[-1][0]) for k in ('split.no', 'split.count', 'split.tensors.count')]"
              " + ['general.architecture' in r.fields, len(r.tensors)])\n"
              "print(json.dumps(out))\n")
    seen = json.loads(subprocess.run([str(ORACLE), "-c", script, *map(str, files)], capture_output=True, text=True,
                                     timeout=120, check=True).stdout)
    assert [s[:4] for s in seen] == [[i, n, doc["tensors"], i == 0] for i in range(n)]
    assert sum(s[4] for s in seen) == doc["tensors"]
    assert all(f.stat().st_size <= 1_000_000 + 64 * 1024 for f in files)  # at most 1 MB of tensors, and a header
    ids, logits = llama_cpp(files[0], TEXTS[0], tmp_path / "split.npy")
    want_ids, want = llama_cpp(f32_export[0], TEXTS[0], tmp_path / "one.npy")
    assert ids == want_ids and np.array_equal(logits, want)
    # tlio reads the set as one GGUF by its first file, and refuses another one by name.
    listing = json.loads(run("inspect", files[0], "--json").stdout)
    assert listing["splits"] == n and listing["tensor_count"] == doc["tensors"]
    r = run("inspect", files[1])
    assert r.returncode == 1 and files[0].name in r.stderr, r.stderr
    r = run("diff", files[0], f32_export[0])
    assert r.returncode == 0 and r.stdout.startswith(f"equal: {doc['tensors']} common tensors"), r.stdout + r.stderr
    back = tmp_path / "back"
    assert run("convert", files[0], back, "--dtype", "f32").returncode == 0
    assert run("diff", back, folder).returncode == 0
    files[-1].unlink()  # a set without one of its files: an error naming it
    r = run("inspect", files[0])
    assert r.returncode == 1 and files[-1].name in r.stderr, r.stderr
    r = run("convert", folder, tmp_path / "x.safetensors", "--split-max-size", "1MB")
    assert r.returncode == 2 and ".gguf" in r.stderr
