"""`tlio report` and tlio.report: the figures against numpy's (min, max, mean, std,
numpy.histogram), errors against a source written out in numpy (a BF16 copy, an nf4 copy), a GGUF
export against its Hugging Face folder (F32: every error exactly zero, which needs the Q/K rows
paired right; Q8_0: errors equal those numpy computes from the gguf package's dequantization with
llama.cpp's permutation), the CLI's --json equal to the module's, the page written atomically, and
the usage errors."""
import json
import os
import pathlib
import subprocess

import numpy as np
import pytest

import tlio

CLI = os.environ.get("TLIO_CLI", str(pathlib.Path(__file__).parents[2] / "build" / "tlio"))
DATA = pathlib.Path(os.environ.get("TLIO_TEST_DATA", pathlib.Path(__file__).parents[2] / "tests" / "data"))
ORACLE = pathlib.Path(CLI).resolve().parent / "oracle-venv" / "bin" / "python"
TINY_LLAMA = DATA / "gguf" / "tiny_llama"


def run(*args):
    return subprocess.run([CLI, *map(str, args)], capture_output=True, text=True, timeout=300)


def figures_of(values, bins=64):
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    lo, hi = v.min(), v.max()
    return {"min": lo, "max": hi, "mean": v.mean(), "std": v.std(),
            "histogram": np.histogram(v, bins, (lo, hi))[0].tolist()}


def error_of(a, b):
    a, b = (np.asarray(x, dtype=np.float64).reshape(-1) for x in (a, b))
    d = a - b
    return {"rmse": np.sqrt(np.mean(d * d)), "max_abs": np.abs(d).max(),
            "cosine": a @ b / np.sqrt((a @ a) * (b @ b)), "sqnr_db": 10 * np.log10((b @ b) / (d @ d))}


def by_name(report):
    return {t["name"]: t for t in report["tensors"]}


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    rng = np.random.default_rng(7)
    d = tmp_path_factory.mktemp("report")
    tensors = {f"model.layers.{i}.mlp.up_proj.weight": rng.standard_normal((64, 128)).astype(np.float32)
               for i in range(3)}
    tensors["model.layers.1.mlp.up_proj.weight"][5, 7] = 40.0  # an outlier
    tensors["model.norm.weight"] = (1 + 0.1 * rng.standard_normal(128)).astype(np.float32)
    tlio.save_file(tensors, d / "src.safetensors")
    return d, tensors


def test_figures_equal_numpys(source):
    d, tensors = source
    r = tlio.report(d / "src.safetensors")
    assert r["format"] == "safetensors" and r["reference"] is None and r["files"] == 1
    assert r["parameters"] == sum(v.size for v in tensors.values())
    assert r["types"] == [{"type": "F32", "parameters": r["parameters"]}]
    got = by_name(r)
    assert list(got) == list(tensors)
    for name, values in tensors.items():
        want, t = figures_of(values), got[name]
        assert (t["min"], t["max"]) == (want["min"], want["max"])
        assert t["mean"] == pytest.approx(want["mean"], rel=1e-12, abs=1e-15)
        assert t["std"] == pytest.approx(want["std"], rel=1e-12)
        assert t["histogram"] == want["histogram"], name
        assert t["max_over_std"] == pytest.approx(max(-want["min"], want["max"]) / want["std"], rel=1e-12)
        assert t["layer"] == (int(name.split(".")[2]) if ".layers." in name else None)
        assert "error" not in t
    assert got["model.layers.1.mlp.up_proj.weight"]["max_over_std"] > 30


def test_errors_of_a_bf16_and_an_nf4_copy(source, tmp_path):
    d, tensors = source
    assert run("convert", d / "src.safetensors", tmp_path / "bf16.safetensors", "--dtype", "bf16").returncode == 0
    r = tlio.report(tmp_path / "bf16.safetensors", d / "src.safetensors")
    for name, t in by_name(r).items():
        with tlio.safe_open(tmp_path / "bf16.safetensors", "np") as f:
            copy = (f.get_tensor(name, dtype="bits").astype(np.uint32) << 16).view(np.float32)
        want = error_of(copy, tensors[name])
        for key in ("rmse", "max_abs", "cosine", "sqnr_db"):
            assert t["error"][key] == pytest.approx(want[key], rel=1e-9), (name, key)
        assert t["error"]["reference"] == name and t["error"]["reference_type"] == "F32"
    q = run("quantize", d / "src.safetensors", tmp_path / "nf4.safetensors", "--scheme", "nf4")
    assert q.returncode == 0, q.stderr
    r = tlio.report(tmp_path / "nf4.safetensors", d / "src.safetensors")
    got = by_name(r)
    with tlio.safe_open(tmp_path / "nf4.safetensors", "np") as f:
        for name in tensors:
            if got[name]["type"] != "nf4":
                continue
            want = error_of(f.get_dequantized(name, "F32"), tensors[name])
            for key in ("rmse", "max_abs", "cosine", "sqnr_db"):
                assert got[name]["error"][key] == pytest.approx(want[key], rel=1e-9), (name, key)
            assert 10 < got[name]["error"]["sqnr_db"] < 30  # 4 bits: about 20 dB
    assert {t["type"] for t in r["tensors"]} == {"nf4", "F32"}  # the norm stays F32
    assert r["only_in_model"] == [] and r["only_in_reference"] == []


def test_cli_json_equals_the_module_and_the_page_is_written(source, tmp_path):
    d, _ = source
    page = tmp_path / "r.html"
    c = run("report", d / "src.safetensors", "--against", d / "src.safetensors", "-o", page, "--json",
            "--filter", r"layers\.[01]\.")
    assert c.returncode == 0, c.stderr
    from_cli = json.loads(c.stdout)
    assert from_cli == tlio.report(d / "src.safetensors", d / "src.safetensors", filter=r"layers\.[01]\.")
    assert [t["name"] for t in from_cli["tensors"]] == [f"model.layers.{i}.mlp.up_proj.weight" for i in (0, 1)]
    for t in from_cli["tensors"]:  # a file against itself
        assert t["error"]["max_abs"] == 0 and t["error"]["sqnr_db"] is None and t["error"]["cosine"] == 1
    html = page.read_text()
    assert html.startswith("<!DOCTYPE html>") and html.count('<svg class="hist"') == 2
    assert not list(tmp_path.glob(".*tmp*"))  # no temporary left beside it
    c = run("report", d / "src.safetensors", "-o", tmp_path / "plain.html")
    assert c.returncode == 0 and "4 tensors" in c.stdout, c.stdout + c.stderr


def test_usage_and_input_errors(source, tmp_path):
    d, _ = source
    c = run("report", d / "src.safetensors")
    assert c.returncode == 2 and "-o PATH" in c.stderr
    c = run("report", d / "src.safetensors", "--bins", "0", "--json")
    assert c.returncode == 2
    c = run("report", tmp_path / "missing.safetensors", "--json")
    assert c.returncode == 1 and "error" in json.loads(c.stdout)
    with pytest.raises(FileNotFoundError):
        tlio.report(tmp_path / "missing.safetensors")
    with pytest.raises(ValueError):
        tlio.report(d / "src.safetensors", bins=0)
    assert not (tmp_path / "x.html").exists()
    with pytest.raises(FileNotFoundError):
        tlio.report(d / "src.safetensors", tmp_path / "missing", html=tmp_path / "x.html")
    assert not (tmp_path / "x.html").exists()  # no page when the figures fail


def test_gguf_f32_export_against_its_folder_is_exact_both_ways(tmp_path):
    gguf = tmp_path / "tiny-f32.gguf"
    assert run("convert", TINY_LLAMA, gguf, "--dtype", "f32").returncode == 0
    for model, reference in ((gguf, TINY_LLAMA), (TINY_LLAMA, gguf)):
        r = tlio.report(model, reference)
        assert r["only_in_model"] == [] and r["only_in_reference"] == [], (r["only_in_model"], r["only_in_reference"])
        for t in r["tensors"]:
            assert t["error"]["max_abs"] == 0 and t["error"]["nonfinite"] == 0, (t["name"], t["error"])
    r = tlio.report(gguf, TINY_LLAMA)
    assert r["format"] == "gguf"
    q = by_name(r)["blk.0.attn_q.weight"]
    assert q["error"]["reference"] == "model.layers.0.self_attn.q_proj.weight" and q["layer"] == 0
    assert r["metadata"]["general.architecture"] == "llama"
    folder = tlio.report(TINY_LLAMA, filter="norm")
    assert folder["format"] == "model folder" and "LlamaForCausalLM" in folder["metadata"]["config.json"]
    # diff pairs them the same way: every value equal, both ways, from the CLI and Python.
    for a, b in ((gguf, TINY_LLAMA), (TINY_LLAMA, gguf)):
        d = run("diff", a, b, "--json")
        assert d.returncode == 0, d.stdout + d.stderr
        doc = json.loads(d.stdout)
        assert doc["equal"] and len(doc["tensors"]) == 12 and all(t["max_abs"] == 0 for t in doc["tensors"])
    c = tlio.compare_files(gguf, TINY_LLAMA)
    assert c["equal"] and {t["name"]: t.get("b_name") for t in c["tensors"]}["blk.0.attn_k.weight"] == \
        "model.layers.0.self_attn.k_proj.weight"


@pytest.mark.skipif(not ORACLE.exists(), reason="the gguf package is installed into build/oracle-venv by "
                                                 "scripts/install-deps.sh")
def test_gguf_q8_0_errors_equal_the_gguf_packages(tmp_path):
    gguf = tmp_path / "tiny-q8_0.gguf"
    assert run("convert", TINY_LLAMA, gguf, "--dtype", "q8_0").returncode == 0
    r = tlio.report(gguf, TINY_LLAMA)
    config = json.loads((TINY_LLAMA / "config.json").read_text())
    with tlio.safe_open(TINY_LLAMA / "model.safetensors", "np") as f:
        np.savez(tmp_path / "hf.npz", **{k: (f.get_tensor(k, dtype="bits").astype(np.uint32) << 16).view(np.float32)
                                          for k in f.keys()})  # BF16 widened here
    pairs = {t["name"]: t["error"]["reference"] for t in r["tensors"]}
    script = """
import json, sys
import numpy as np
from gguf import GGUFReader
from gguf.quants import dequantize
path, npz, pairs, heads, kv_heads = sys.argv[1], np.load(sys.argv[2]), json.loads(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
def permute(w, n):  # llama.cpp's convert_hf_to_gguf.py LlamaModel.permute
    return w.reshape(n, 2, w.shape[0] // n // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)
out = {}
for t in GGUFReader(path).tensors:
    a = np.asarray(dequantize(t.data, t.tensor_type), dtype=np.float64).reshape(-1)
    hf = pairs[t.name]
    b = npz[hf].astype(np.float64)
    if hf.endswith("q_proj.weight"): b = permute(b, heads)
    if hf.endswith("k_proj.weight"): b = permute(b, kv_heads)
    b = b.reshape(-1); d = a - b
    rel = np.abs(d[d != 0]) / np.abs(b[d != 0])  # inf where b is 0
    out[t.name] = {"type": t.tensor_type.name, "rmse": float(np.sqrt(np.mean(d * d))), "max_abs": float(np.abs(d).max()),
                   "max_rel": float(rel.max()) if rel.size else 0.0, "outside": int((~(np.abs(d) <= 1e-3 + 0.01 * np.abs(b))).sum()),
                   "cosine": float(a @ b / np.sqrt((a @ a) * (b @ b))), "sqnr_db": float(10 * np.log10((b @ b) / (d @ d))) if d.any() else None}
print(json.dumps(out))
"""
    c = subprocess.run([str(ORACLE), "-c", script, str(gguf), str(tmp_path / "hf.npz"), json.dumps(pairs),
                        str(config["num_attention_heads"]), str(config["num_key_value_heads"])],
                       capture_output=True, text=True, timeout=300)
    assert c.returncode == 0, c.stderr
    want = json.loads(c.stdout)
    quantized = 0
    for t in r["tensors"]:
        w = want[t["name"]]
        assert t["type"] == w["type"]
        quantized += w["type"] == "Q8_0"
        for key in ("rmse", "max_abs", "cosine"):
            assert t["error"][key] == pytest.approx(w[key], rel=1e-9, abs=1e-300), (t["name"], key)
        if w["sqnr_db"] is None:
            assert t["error"]["sqnr_db"] is None
        else:
            assert t["error"]["sqnr_db"] == pytest.approx(w["sqnr_db"], rel=1e-9), t["name"]
    assert quantized >= 7  # every 2-D weight of the layer, and the embeddings and output
    # diff's figures from the same oracle, with atol 1e-3 and rtol 0.01.
    d = run("diff", gguf, TINY_LLAMA, "--atol", "1e-3", "--rtol", "0.01", "--json")
    assert d.returncode == 1, d.stderr
    doc = json.loads(d.stdout)
    assert doc["only_in_a"] == [] and doc["only_in_b"] == [] and len(doc["tensors"]) == len(want)
    for t in doc["tensors"]:
        w = want[t["name"]]
        assert t["b_name"] == pairs[t["name"]] and t["a_dtype"] == w["type"] and t["compared"]
        assert t["outside"] == w["outside"], t["name"]
        for key in ("rmse", "max_abs", "cosine", "max_rel"):
            assert t[key] == pytest.approx(w[key], rel=1e-9, abs=1e-300), (t["name"], key)
    assert sum(t["outside"] for t in doc["tensors"]) > 0 and not doc["equal"]


def test_a_page_of_700_tensors_stays_small(tmp_path):
    """A 70B model has about 700 tensors: its page is a few MB at most (here: 720 small ones)."""
    rng = np.random.default_rng(1)
    tensors = {f"model.layers.{i}.{kind}.weight": rng.standard_normal((8, 16)).astype(np.float32)
               for i in range(80) for kind in ("q", "k", "v", "o", "gate", "up", "down", "norm1", "norm2")}
    tlio.save_file(tensors, tmp_path / "m.safetensors")
    r = tlio.report(tmp_path / "m.safetensors", tmp_path / "m.safetensors", html=tmp_path / "r.html")
    assert len(r["tensors"]) == 720
    size = (tmp_path / "r.html").stat().st_size
    assert size < 3 << 20, size


@pytest.mark.skipif(not ORACLE.exists(), reason="the gguf package is installed into build/oracle-venv by "
                                                 "scripts/install-deps.sh")
def test_a_type_tlio_does_not_decode_is_named_not_fatal(tmp_path):
    path = tmp_path / "q8_1.gguf"
    script = ("import sys, numpy as np, gguf\n"
              "w = gguf.GGUFWriter(sys.argv[1], 'llama')\n"
              "w.add_tensor('w', np.zeros((1, 40), dtype=np.uint8), raw_dtype=gguf.GGMLQuantizationType.Q8_1)\n"
              "w.add_tensor('b', np.arange(4, dtype=np.float32))\n"
              "w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()\n")
    subprocess.run([str(ORACLE), "-c", script, str(path)], check=True, timeout=120)
    got = by_name(tlio.report(path))
    assert got["w"]["numeric"] is False and "Q8_1" in got["w"]["note"] and "min" not in got["w"]
    assert got["b"]["numeric"] is True and got["b"]["max"] == 3
    c = run("stats", path)
    assert c.returncode == 0 and "w: Q8_1 [" in c.stdout and "no numeric statistics" in c.stdout, c.stdout


def test_nonfinite_mismatches_are_the_worst_not_a_match(tmp_path):
    nan = float("nan")
    tlio.save_file({"t": np.array([nan, nan, 1, 2], np.float32), "z": np.array([1, 2, 3], np.float32),
                    "u": np.array([nan, nan], np.float32)}, tmp_path / "a.safetensors")
    tlio.save_file({"t": np.array([nan, 5, 1, 2], np.float32), "z": np.zeros(3, np.float32),
                    "u": np.array([nan, nan], np.float32)}, tmp_path / "b.safetensors")
    got = by_name(tlio.report(tmp_path / "a.safetensors", tmp_path / "b.safetensors"))
    t = got["t"]["error"]
    assert (t["nonfinite"], t["nonfinite_mismatch"]) == (2, 1)
    assert t["max_abs"] is None and t["sqnr_db"] is None and t["rmse"] == 0  # inf, -inf; the finite pairs agree
    z = got["z"]["error"]  # against an all-zero reference: -inf dB, cosine 0
    assert z["sqnr_db"] is None and z["cosine"] == 0 and z["rmse"] == pytest.approx(np.sqrt(14 / 3))
    u = got["u"]["error"]  # NaN against NaN: nothing to measure, nothing wrong
    assert u["nonfinite_mismatch"] == 0 and u["rmse"] is None and u["max_abs"] == 0


def test_transposed_shapes_are_not_compared(tmp_path):
    w = np.arange(12, dtype=np.float32).reshape(3, 4)
    tlio.save_file({"w": w}, tmp_path / "a.safetensors")
    tlio.save_file({"w": w.T.copy()}, tmp_path / "b.safetensors")
    t = tlio.report(tmp_path / "a.safetensors", tmp_path / "b.safetensors")["tensors"][0]
    assert "error" not in t and "shapes differ" in t["note"]


def test_gguf_pairs_with_a_folder_whatever_else_its_config_holds(tmp_path):
    folder = tmp_path / "llama"
    folder.mkdir()
    for f in TINY_LLAMA.iterdir():
        (folder / f.name).write_bytes(f.read_bytes())
    gguf = tmp_path / "tiny.gguf"
    assert run("convert", folder, gguf, "--dtype", "f32").returncode == 0
    config = json.loads((folder / "config.json").read_text())
    config["rope_scaling"] = {"rope_type": "llama3", "factor": 8.0}  # the export refuses it; pairing needs none
    (folder / "config.json").write_text(json.dumps(config))
    r = tlio.report(gguf, folder)
    assert r["only_in_model"] == [] and all(t["error"]["max_abs"] == 0 for t in r["tensors"])
    # A lone file of other names pairs with nothing: said, not a report of nothing.
    c = run("report", gguf, "--against", folder / "model.safetensors", "--json")
    assert c.returncode == 1 and "pairs with a model folder" in json.loads(c.stdout)["error"]["message"]
