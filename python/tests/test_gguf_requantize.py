"""A GGUF requantized (issue 66, item 5): `tlio convert IN.gguf OUT.gguf --dtype MIX` writes the
file llama.cpp's own llama_model_quantize writes from the same input (npm's prebuilt libllama,
through gguf_oracle/quantize_llama.py), byte for byte: from an F32 export to llama-quantize's
file types (Q4_0's output.weight Q6_K, Q2_K's attn_v and ffn_down Q3_K, ...), and from a Q8_0
one with --allow-requantize, which it refuses without."""
import hashlib
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

pytestmark = pytest.mark.skipif(not ORACLE.exists(),
                                reason="the oracles are installed into build/oracle-venv by scripts/install-deps.sh")

FILE_TYPES = {"Q8_0": 7, "Q4_0": 2, "Q5_1": 9, "Q2_K": 10, "Q3_K_S": 11, "Q4_K_M": 15, "Q6_K": 18}


def run(*args):
    return subprocess.run([CLI, *map(str, args)], capture_output=True, text=True, timeout=300)


def llama_quantize(src, dst, file_type, *extra):
    r = subprocess.run(["/usr/bin/python3", str(HERE / "quantize_llama.py"), str(LIB_DIR), str(src),
                        str(dst), str(file_type), *extra], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]


def sha(path):
    return hashlib.sha256(pathlib.Path(path).read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    """An 8-layer Llama (rows of 352 that fall back) exported by tlio as F32 and as Q8_0."""
    folder = tmp_path_factory.mktemp("requantize") / "llama"
    subprocess.run([str(ORACLE), str(HERE / "make_model.py"), str(folder), "llama", "mix"], check=True,
                   timeout=300)
    tlio.save_file(dict(np.load(folder / "weights.npz")), folder / "model.safetensors")
    f32, q8 = folder.parent / "f32.gguf", folder.parent / "q8_0.gguf"
    for out, dtype in ((f32, "f32"), (q8, "q8_0")):
        r = run("convert", folder, out, "--dtype", dtype)
        assert r.returncode == 0, r.stderr
    return f32, q8


@pytest.mark.parametrize("mix", list(FILE_TYPES))
def test_requantized_as_llama_quantize_writes_it(exports, mix, tmp_path):
    f32, _ = exports
    ours, ref = tmp_path / "tlio.gguf", tmp_path / "llama.gguf"
    r = run("convert", f32, ours, "--dtype", mix, "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    llama_quantize(f32, ref, FILE_TYPES[mix])
    assert sha(ours) == sha(ref), "not llama-quantize's bytes"
    assert doc["architecture"] == "llama" and sum(doc["types"].values()) == doc["tensors"]


def test_a_file_type_made_with_an_importance_matrix_is_refused(exports, tmp_path):
    f32, _ = exports
    with pytest.raises(ValueError, match="importance matrix"):
        tlio.export_gguf(f32, tmp_path / "q2ks.gguf", "Q2_K_S")
    assert not (tmp_path / "q2ks.gguf").exists()


def test_a_quantized_source_needs_allow_requantize(exports, tmp_path):
    _, q8 = exports
    ours, ref = tmp_path / "tlio.gguf", tmp_path / "llama.gguf"
    refused = run("convert", q8, ours, "--dtype", "q4_k_m")
    assert refused.returncode == 1 and "--allow-requantize" in refused.stderr, refused.stderr
    assert "quality twice" in refused.stderr and not ours.exists()
    r = run("convert", q8, ours, "--dtype", "q4_k_m", "--allow-requantize")
    assert r.returncode == 0, r.stderr
    llama_quantize(q8, ref, FILE_TYPES["Q4_K_M"], "allow-requantize")
    assert sha(ours) == sha(ref), "not llama-quantize's bytes"
    # From Python too, the same bytes.
    tlio.export_gguf(q8, tmp_path / "py.gguf", "Q4_K_M", allow_requantize=True)
    assert sha(tmp_path / "py.gguf") == sha(ref)
    with pytest.raises(ValueError, match="allow_requantize"):
        tlio.export_gguf(q8, tmp_path / "no.gguf", "Q4_K_M")


@pytest.mark.parametrize("file_type", ["Q8_0", "Q4_K_M"])
def test_a_mixture_of_experts_as_llama_quantize_writes_it(tmp_path, file_type):
    """Stacked experts (3-D) and the router (kept F32) of tests/data/gguf/tiny_qwen3moe, exported as
    F32 then requantized: llama-quantize's bytes (its rules for 4 experts are the dense ones)."""
    data = pathlib.Path(os.environ.get("TLIO_TEST_DATA", REPO / "tests" / "data"))
    f32, ours, ref = tmp_path / "f32.gguf", tmp_path / "tlio.gguf", tmp_path / "llama.gguf"
    assert run("convert", data / "gguf" / "tiny_qwen3moe", f32, "--dtype", "f32").returncode == 0
    r = run("convert", f32, ours, "--dtype", file_type, "--json")
    assert r.returncode == 0, r.stderr
    llama_quantize(f32, ref, FILE_TYPES[file_type])
    assert sha(ours) == sha(ref), "not llama-quantize's bytes"
    assert json.loads(r.stdout)["types"]["F32"] >= 1  # norms and the router
