"""MLX's quantized folders (issue 67), judged by MLX itself (PyPI's mlx with its CPU backend,
and mlx-lm, in the users' stack: build/consumer-venv): tlio dequantizes what mx.quantize wrote
bit for bit as mx.dequantize does, every affine width and group in F32/F16/BF16 and the mxfp4,
mxfp8 and nvfp4 modes; `tlio quantize --scheme mlx-affine` writes the tensors mx.quantize makes,
byte for byte, and a folder mlx_lm.load loads, its logits equal to those of mlx-lm's own
`convert -q` folder; malformed layouts are refused by name with nothing written."""
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

mx = pytest.importorskip("mlx.core", reason="the users' stack (mlx, mlx-cpu: build/consumer-venv)")
transformers = pytest.importorskip("transformers", minversion="5")
import torch  # noqa: E402

import tlio  # noqa: E402

REPO = pathlib.Path(__file__).parents[2]
CLI = os.environ.get("TLIO_CLI", str(REPO / "build" / "tlio"))
BITS, GROUPS, DTYPES = (2, 3, 4, 5, 6, 8), (32, 64, 128), ("float32", "float16", "bfloat16")
MODES = {"mxfp4": (4, 32), "mxfp8": (8, 32), "nvfp4": (4, 16)}


def run(*args, ok=True):
    r = subprocess.run([CLI, *map(str, args)], capture_output=True, text=True, timeout=300)
    assert (r.returncode == 0) == ok, r.stderr
    return r


def raw(a):
    """An mlx array's bytes (NaNs and -0 compared by their bits)."""
    return np.array(mx.view(mx.contiguous(a), mx.uint8)).tobytes()


def write_folder(folder, tensors, quantization):
    """An MLX folder as mlx-lm writes one: mx.save_safetensors with format mlx, config.json with
    "quantization" and its copy "quantization_config"."""
    folder.mkdir(parents=True, exist_ok=True)
    mx.save_safetensors(str(folder / "model.safetensors"), tensors, metadata={"format": "mlx"})
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 320, "hidden_size": 256,
              "num_hidden_layers": 60, "num_attention_heads": 4, "intermediate_size": 256}
    if quantization is not None:
        config |= {"quantization": quantization, "quantization_config": quantization}
    (folder / "config.json").write_text(json.dumps(config))


def tiny_llama(folder, dtype=torch.bfloat16, hidden=128):
    """A tiny random Llama as transformers 5 saves it, with a word-level tokenizer (mlx-lm's
    convert needs one)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=320, hidden_size=hidden, intermediate_size=2 * hidden,
                                      num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                      max_position_embeddings=256, bos_token_id=256, eos_token_id=257)
    transformers.LlamaForCausalLM(config).to(dtype).save_pretrained(folder)
    vocab = {f"<t{i}>": i for i in range(256)} | {"<s>": 256, "</s>": 257, "<unk>": 258}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split("", "isolated")
    transformers.PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>",
                                         unk_token="<unk>").save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def every_layout(tmp_path_factory):
    """A folder of one weight per affine width, group and dtype, and per MX/NV mode, as
    mx.quantize made them (per-module entries in the config, as mlx-lm's mixed recipes write),
    with what mx.dequantize gives for each."""
    folder = tmp_path_factory.mktemp("mlx") / "every"
    rng = np.random.default_rng(0)
    tensors, want, quantization = {}, {}, {"group_size": 64, "bits": 4, "mode": "affine"}
    layouts = [(b, g, d) for b in BITS for g in GROUPS for d in DTYPES] + [(m, None, "bfloat16") for m in MODES]
    for i, (bits, group, dtype) in enumerate(layouts):
        values = rng.standard_normal((6, 256)).astype(np.float32) * rng.choice([1e-3, 1.0, 30.0])
        values[0, :group or 32] = 0.25  # a constant group, and ties in the rest
        w = mx.array(values).astype(getattr(mx, dtype))
        name = f"model.layers.{i}.mlp.up_proj"
        if isinstance(bits, str):
            wq, scales = mx.quantize(w, mode=bits)[:2]
            tensors |= {name + ".weight": wq, name + ".scales": scales}
            want[name + ".weight"] = mx.dequantize(wq, scales, mode=bits)
            quantization[name] = {"group_size": MODES[bits][1], "bits": MODES[bits][0], "mode": bits}
        else:
            wq, scales, biases = mx.quantize(w, group_size=group, bits=bits, mode="affine")
            tensors |= {name + ".weight": wq, name + ".scales": scales, name + ".biases": biases}
            want[name + ".weight"] = mx.dequantize(wq, scales, biases, group_size=group, bits=bits)
            quantization[name] = {"group_size": group, "bits": bits}
    write_folder(folder, tensors, quantization)
    return folder, want


def test_dequantize_equals_mx_dequantize(every_layout, tmp_path):
    folder, want = every_layout
    run("dequantize", folder, tmp_path / "out")
    got = mx.load(str(tmp_path / "out" / "model.safetensors"))
    config = json.loads((tmp_path / "out" / "config.json").read_text())
    assert "quantization" not in config and "quantization_config" not in config
    # in mx.dequantize's dtype: the scales' for affine, BF16 for the others
    bad = [n for n, w in want.items() if got[n].dtype != w.dtype or raw(got[n]) != raw(w)]
    assert len(want) == 57 and bad == []


def test_python_reads_every_layout_as_mlx_does(every_layout):
    folder, want = every_layout
    with tlio.safe_open(folder, "np") as f:  # the folder: its config says each weight's bits
        listed = {q["name"]: q["scheme"] for q in f.quantized()}
        assert listed["model.layers.0.mlp.up_proj.weight"] == "mlx-affine-2bit-g32"
        assert listed["model.layers.54.mlp.up_proj.weight"] == "mlx-mxfp4"
        for name, w in want.items():
            got = f.get_dequantized(name, "F32")
            assert got.tobytes() == raw(w.astype(mx.float32)), name


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
def test_quantize_writes_mx_quantize_bytes(dtype, tmp_path):
    source = tiny_llama(tmp_path / "src", getattr(torch, dtype))
    weights = {k: v for k, v in mx.load(str(source / "model.safetensors")).items()}
    for bits, group in [(b, g) for b in BITS for g in GROUPS][:: 1 if dtype == "bfloat16" else 5]:
        out = tmp_path / f"q{bits}g{group}"
        run("quantize", source, out, "--scheme", "mlx-affine", "--bits", bits, "--group-size", group, "-q")
        got = mx.load(str(out / "model.safetensors"))
        for name, w in weights.items():
            if w.ndim < 2:
                assert raw(got[name]) == raw(w), name
                continue
            module = name[: -len(".weight")]
            want = mx.quantize(w, group_size=group, bits=bits, mode="affine")
            for part, value in zip((".weight", ".scales", ".biases"), want):
                assert got[module + part].dtype == value.dtype and raw(got[module + part]) == raw(value), \
                    (bits, group, module + part)
        config = json.loads((out / "config.json").read_text())
        assert config["quantization"] == config["quantization_config"] == {"group_size": group, "bits": bits,
                                                                            "mode": "affine"}


@pytest.mark.parametrize("mode", list(MODES))
def test_quantize_modes_write_mx_quantize_bytes(mode, tmp_path):
    for dtype in DTYPES:
        source = tiny_llama(tmp_path / dtype, getattr(torch, dtype))
        out = tmp_path / f"{mode}-{dtype}"
        run("quantize", source, out, "--scheme", f"mlx-{mode}", "-q")
        got = mx.load(str(out / "model.safetensors"))
        for name, w in mx.load(str(source / "model.safetensors")).items():
            if w.ndim < 2:
                continue
            module = name[: -len(".weight")]
            wq, scales = mx.quantize(w, mode=mode)[:2]
            assert raw(got[module + ".weight"]) == raw(wq) and raw(got[module + ".scales"]) == raw(scales), \
                (mode, dtype, module)
            assert module + ".biases" not in got
        config = json.loads((out / "config.json").read_text())
        bits, group = MODES[mode]
        assert config["quantization"] == {"group_size": group, "bits": bits, "mode": mode}


def edge_values(rng):
    """Values where the roundings decide: FP4 midpoints (0.75, 1.75, 3.5 times a power of two),
    groups of zeros, of one value, across many magnitudes, F16's subnormals and largest values."""
    v = rng.standard_normal((8, 128)).astype(np.float32)
    v[0] = np.resize([0.75, 1.75, 3.5, -0.25, 2.5, -5.0, 6.0, 1.25], 128) * 2.0 ** rng.integers(-8, 8, 128)
    v[1, :64] = 0.0
    v[1, 64:] = -0.375
    v[2] *= 2.0 ** rng.integers(-20, 14, 128).astype(np.float32)
    v[3] = np.resize([6.0e-8, -3.0e-5, 65504.0, 1.0], 128)
    v[4] = np.linspace(-1, 1, 128) ** 3
    return v


@pytest.mark.parametrize("dtype", DTYPES)
def test_quantize_edge_values_as_mx_quantize(dtype, tmp_path):
    values = edge_values(np.random.default_rng(7))
    w = mx.array(values).astype(getattr(mx, dtype))
    src = tmp_path / "w.safetensors"
    mx.save_safetensors(str(src), {"model.layers.0.mlp.up_proj.weight": w}, metadata={"format": "pt"})
    for scheme, want in [(f"mlx-affine-{b}bit-g{g}", mx.quantize(w, group_size=g, bits=b))
                         for b in BITS for g in GROUPS] + [(f"mlx-{m}", mx.quantize(w, mode=m)) for m in MODES]:
        out = tmp_path / f"{scheme}.safetensors"
        run("quantize", src, out, "--scheme", scheme, "-q")
        got = mx.load(str(out))
        for part, value in zip((".weight", ".scales", ".biases"), want):
            assert raw(got["model.layers.0.mlp.up_proj" + part]) == raw(value), (scheme, dtype, part)
        # the lone file reads back (its metadata names its width and group), as mx.dequantize
        mode = scheme.split("-")[1]
        back = mx.dequantize(*want, mode=mode) if mode != "affine" else \
            mx.dequantize(*want, group_size=int(scheme.split("-g")[1]), bits=int(scheme.split("-")[2][:-3]))
        run("dequantize", out, tmp_path / "back.safetensors")
        got = mx.load(str(tmp_path / "back.safetensors"))["model.layers.0.mlp.up_proj.weight"]
        assert got.dtype == back.dtype and raw(got) == raw(back), (scheme, dtype)
        assert mx.load(str(tmp_path / "back.safetensors"), return_metadata=True)[1]["format"] == "pt"


def test_mlx_lm_loads_it_with_its_own_logits(tmp_path):
    """mlx_lm.load takes tlio's folder, and its logits equal those of mlx-lm's own convert -q of
    the same model (the tensors are the same bytes)."""
    from mlx_lm import load
    from mlx_lm.convert import convert
    source = tiny_llama(tmp_path / "src")
    ids = mx.array([[256, 1, 5, 9, 20, 33, 40, 7]])
    for mode, bits, group in (("affine", 4, 64), ("affine", 3, 32), ("affine", 8, 128), ("mxfp4", 4, 32),
                              ("mxfp8", 8, 32), ("nvfp4", 4, 16)):
        ours, theirs = tmp_path / f"tlio-{mode}{bits}", tmp_path / f"mlx-{mode}{bits}"
        scheme = f"mlx-affine-{bits}bit-g{group}" if mode == "affine" else f"mlx-{mode}"
        run("quantize", source, ours, "--scheme", scheme, "-q")
        convert(str(source), str(theirs), quantize=True, q_bits=bits, q_group_size=group, q_mode=mode)
        logits = [load(str(d))[0](ids) for d in (ours, theirs)]
        assert mx.array_equal(logits[0], logits[1]).item(), (mode, bits, group)
        plain = load(str(source))[0](ids)
        assert not mx.array_equal(logits[0], plain).item()  # quantized: not the source's own


@pytest.mark.parametrize("case", ["scales-rows", "biases-shape", "no-biases", "width", "ambiguous"])
def test_malformed_layouts_are_refused_by_name(case, tmp_path):
    w = mx.array(np.random.default_rng(1).standard_normal((8, 128)).astype(np.float32))
    wq, scales, biases = mx.quantize(w, group_size=64, bits=4)
    name = "model.layers.0.mlp.up_proj"
    tensors = {name + ".weight": wq, name + ".scales": scales, name + ".biases": biases}
    quantization = {"group_size": 64, "bits": 4}
    if case == "scales-rows":
        tensors[name + ".scales"] = scales[:4]
    elif case == "biases-shape":
        tensors[name + ".biases"] = biases[:, :1]
    elif case == "no-biases":
        del tensors[name + ".biases"]
    elif case == "width":  # 7 words a row over 2 groups: no width and group fit
        tensors[name + ".weight"] = wq[:, :7]
    else:  # 4 bits in 64s or 8 bits in 32s alike, and no config to say which
        quantization = None
    folder = tmp_path / "m"
    write_folder(folder, tensors, quantization)
    r = run("dequantize", folder, tmp_path / "out", ok=False)
    assert name in r.stderr and not (tmp_path / "out").exists(), r.stderr
    with pytest.raises(ValueError, match=name.replace(".", r"\.")):
        with tlio.safe_open(folder, "np") as f:
            f.quantized()


def test_quantize_refuses_what_mlx_does_not_take(tmp_path):
    source = tiny_llama(tmp_path / "src", hidden=96)  # 96 inputs: not a multiple of 64
    r = run("quantize", source, tmp_path / "out", "--scheme", "mlx-affine", "--bits", "7", ok=False)
    assert "2, 3, 4, 5, 6 or 8" in r.stderr and not (tmp_path / "out").exists()
    r = run("quantize", source, tmp_path / "out", "--scheme", "mlx-affine", "--group-size", "48", ok=False)
    assert "32, 64 or 128" in r.stderr
    # gate/up (96 inputs) stay plain, as mlx-lm leaves them; down_proj (192) is quantized
    run("quantize", source, tmp_path / "out", "--scheme", "mlx-affine", "-q")
    got = mx.load(str(tmp_path / "out" / "model.safetensors"))
    assert "model.layers.0.mlp.up_proj.scales" not in got and "model.layers.0.mlp.down_proj.scales" in got
    values = np.ones((2, 64), np.float32)
    values[1, 3] = np.inf
    mx.save_safetensors(str(tmp_path / "inf.safetensors"), {"model.layers.0.mlp.up_proj.weight": mx.array(values)})
    for scheme in ("mlx-affine", "mlx-mxfp4"):
        r = run("quantize", tmp_path / "inf.safetensors", tmp_path / "inf-q.safetensors", "--scheme", scheme,
                "--include", "up_proj", ok=False)
        assert "finite" in r.stderr and not (tmp_path / "inf-q.safetensors").exists()
