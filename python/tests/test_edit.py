"""tlio.edit_file: metadata edits in place and by rewrite, keep/drop/rename, quantized weights
kept whole, refusals that leave the files as they were."""
import os

import numpy as np
import pytest

import tlio


@pytest.fixture
def sample(tmp_path):
    path = tmp_path / "m.safetensors"
    tensors = {"model.layers.0.w": np.arange(6, dtype=np.float32).reshape(2, 3),
               "model.layers.1.w": -np.arange(6, dtype=np.float32).reshape(2, 3),
               "model.norm": np.ones(2, np.float32)}
    tlio.save_file(tensors, path, metadata={"format": "pt"})
    return path, tensors


def test_metadata_of_the_same_length_is_written_in_place(sample):
    path, tensors = sample
    inode = os.stat(path).st_ino
    r = tlio.edit_file(path, metadata={"format": "np"})
    assert r["in_place"] is True and r["kept"] == 3 and r["metadata"] == {"format": "np"}
    assert os.stat(path).st_ino == inode
    assert path.read_bytes() == tlio.save(tensors, metadata={"format": "np"})


def test_a_longer_header_is_rewritten(sample, tmp_path):
    path, tensors = sample
    r = tlio.edit_file(path, tmp_path / "out.safetensors", metadata={"license": "mit"},
                       delete=["format"])
    assert r["in_place"] is False and r["metadata"] == {"license": "mit"}
    assert (tmp_path / "out.safetensors").read_bytes() == tlio.save(tensors, metadata={"license": "mit"})
    assert tlio.safe_open(path).metadata() == {"format": "pt"}  # the source is left alone


def test_keep_drop_rename(sample, tmp_path):
    path, tensors = sample
    out = tmp_path / "out.safetensors"
    r = tlio.edit_file(path, out, keep="^model\\.layers", drop=[r"\.1\."],
                       rename={r"^model\.layers\.(\d+)\.w$": r"h.\1"})
    assert (r["kept"], r["dropped"], r["renamed"], r["data_bytes"]) == (1, 2, 1, 24)
    loaded = tlio.load_file(out)
    assert list(loaded) == ["h.0"]
    np.testing.assert_array_equal(loaded["h.0"], tensors["model.layers.0.w"])
    # Pairs run in order, each on the result of the one before.
    tlio.edit_file(path, out, rename=[("layers", "blocks"), ("blocks", "b")])
    assert sorted(tlio.load_file(out)) == ["model.b.0.w", "model.b.1.w", "model.norm"]


@pytest.mark.parametrize("kwargs, says", [
    ({"delete": ["licence"]}, 'no metadata key "licence" to delete'),
    ({"rename": {r"\d": ""}}, 'the same name "model.layers..w"'),
    ({"keep": "^encoder"}, "leaves none of the 3 tensors"),
    ({"drop": "("}, "invalid drop regex"),
    ({"rename": {"(a)": r"\2"}}, "refers to group \\2"),
])
def test_refusals_write_nothing(sample, tmp_path, kwargs, says):
    path, _ = sample
    before = path.read_bytes()
    with pytest.raises(ValueError, match=None) as e:
        tlio.edit_file(path, tmp_path / "out.safetensors", **kwargs)
    assert says in str(e.value)
    assert path.read_bytes() == before
    assert not (tmp_path / "out.safetensors").exists()


@pytest.mark.parametrize("kwargs, says", [
    ({"metadata": {"a": 1}}, "metadata must map str to str"),
    ({"metadata": [("a", "b")]}, "metadata must be a dict"),
    ({"keep": 3}, "keep must be a str or an iterable of str, not int"),
    ({"drop": ["x", b"y"]}, "drop must hold str, not bytes"),
    ({"rename": [("a",)]}, "rename must map str regexes to str replacements"),
])
def test_wrong_types_are_type_errors(sample, kwargs, says):
    path, _ = sample
    with pytest.raises(TypeError) as e:
        tlio.edit_file(path, **kwargs)
    assert says in str(e.value)


def test_quantized_weights_move_whole(tmp_path):
    w = np.linspace(-1, 1, 64 * 64, dtype=np.float32).reshape(64, 64)
    tlio.save_file({"model.layers.0.mlp.up_proj.weight": w,
                    "model.layers.0.mlp.up_proj.bias": np.zeros(64, np.float32)},
                   tmp_path / "plain.safetensors")
    tlio.quantize_file(tmp_path / "plain.safetensors", tmp_path / "q.safetensors", "nf4")
    with pytest.raises(ValueError, match="which moves whole"):
        tlio.edit_file(tmp_path / "q.safetensors", tmp_path / "x.safetensors", drop="absmax")
    r = tlio.edit_file(tmp_path / "q.safetensors", tmp_path / "r.safetensors",
                       rename={r"^model\.layers\.": "blocks."}, drop="bias")
    assert r["dropped"] == 1 and r["renamed"] == 4
    with tlio.safe_open(tmp_path / "r.safetensors") as f:
        assert sorted(f.keys()) == ["blocks.0.mlp.up_proj.weight",
                                    "blocks.0.mlp.up_proj.weight.absmax",
                                    "blocks.0.mlp.up_proj.weight.quant_map",
                                    "blocks.0.mlp.up_proj.weight.quant_state.bitsandbytes__nf4"]


# ---- compare_files ---------------------------------------------------------------------------

def test_compare_across_dtypes_and_quantization(tmp_path):
    rng = np.random.default_rng(1)
    w = rng.standard_normal((64, 64)).astype(np.float32)
    tlio.save_file({"model.layers.10.mlp.up_proj.weight": w,
                    "model.layers.2.mlp.up_proj.weight": w * 2,
                    "ids": np.arange(4, dtype=np.int64)}, tmp_path / "a.safetensors")
    tlio.convert_file(tmp_path / "a.safetensors", tmp_path / "bf16.safetensors", "bf16")
    tlio.quantize_file(tmp_path / "a.safetensors", tmp_path / "nf4.safetensors", "nf4")

    same = tlio.compare_files(tmp_path / "a.safetensors", tmp_path / "a.safetensors")
    assert same["equal"] and all(t["cosine"] == 1.0 for t in same["tensors"])

    r = tlio.compare_files(tmp_path / "a.safetensors", tmp_path / "bf16.safetensors")
    assert not r["equal"]
    names = [t["name"] for t in r["tensors"]]
    assert names == ["ids", "model.layers.2.mlp.up_proj.weight", "model.layers.10.mlp.up_proj.weight"]
    t = r["tensors"][2]
    assert t["a_dtype"] == "F32" and t["b_dtype"] == "BF16" and t["shape"] == (64, 64)
    # BF16 by hand: round to nearest even on the upper 16 bits.
    bits = w.view(np.uint32)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000).view(np.float32)
    err = np.abs(w.astype(np.float64) - rounded)
    assert t["max_abs"] == err.max()
    assert abs(t["rmse"] - np.sqrt((err ** 2).mean())) < 1e-12
    assert tlio.compare_files(tmp_path / "a.safetensors", tmp_path / "bf16.safetensors",
                              rtol=1 / 256)["equal"]

    q = tlio.compare_files(tmp_path / "a.safetensors", tmp_path / "nf4.safetensors")
    assert q["only_in_a"] == [] and q["only_in_b"] == []  # absmax etc. are not names here
    nf4 = {t["name"]: t for t in q["tensors"]}["model.layers.2.mlp.up_proj.weight"]
    assert nf4["b_dtype"] == "nf4" and 0.99 < nf4["cosine"] < 1 and nf4["outside"] > 0
    with pytest.raises(ValueError, match="tolerances must be finite"):
        tlio.compare_files(tmp_path / "a.safetensors", tmp_path / "a.safetensors", atol=-1)
    with pytest.raises(TypeError, match="atol must be a number"):
        tlio.compare_files(tmp_path / "a.safetensors", tmp_path / "a.safetensors", atol="0.1")


def test_quantize_keeps_1d_unless_asked_and_refuses_nothing(tmp_path):
    src = tmp_path / "m.safetensors"
    tlio.save_file({"a.up_proj.weight": np.ones((64, 64), np.float32),
                    "a.norm": np.ones(64, np.float32)}, src)
    with pytest.raises(ValueError, match=r"1 1-D \(biases, norms\), quantized only with allow_1d"):
        tlio.quantize_file(src, tmp_path / "q.safetensors", "nf4", include="norm")
    assert not (tmp_path / "q.safetensors").exists()
    items = tlio.quantize_file(src, tmp_path / "q.safetensors", "nf4", include="norm", allow_1d=True)
    assert [(i["name"], i["quantized"]) for i in items] == [("a.norm", True)]
    with pytest.raises(ValueError, match="include \"zzz\" selects no tensor"):
        tlio.quantize_file(src, tmp_path / "z.safetensors", "nf4", include="zzz")
