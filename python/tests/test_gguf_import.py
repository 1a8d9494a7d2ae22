"""GGUF files in: `tlio convert X.gguf OUT.safetensors`, tlio.import_gguf and safe_open/load_file
over a GGUF, checked against two oracles outside tlio. The blocks are made by ggml's own
reference quantizers (libggml-base.so from npm's @node-llama-cpp/linux-x64, installed into
build/npm by scripts/install-deps.sh) and the file written by gguf-py (PyPI `gguf`, pinned, in
build/oracle-venv); the expected values are gguf-py's numpy dequantization, or ggml's own
dequantize_row_* for Q8_K, which gguf-py does not decode."""
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
GGML = os.environ.get("TLIO_GGML_LIBRARY") or str(
    REPO / "build" / "npm" / "node_modules" / "@node-llama-cpp" / "linux-x64" / "bins" / "linux-x64"
    / "libggml-base.so")

pytestmark = pytest.mark.skipif(not ORACLE.exists(),
                                reason="gguf-py is installed into build/oracle-venv by scripts/install-deps.sh")

# Each block type with a reference quantizer: a 3 x 512 tensor quantized by ggml.
BLOCK_TYPES = ["Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "Q8_K",
               "IQ4_NL", "IQ4_XS", "TQ1_0", "TQ2_0", "MXFP4", "NVFP4"]

MAKER = r"""
import ctypes, sys
import numpy as np
import gguf
from gguf import GGMLQuantizationType as T
out, ggml_path, types = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
ggml = ctypes.CDLL(ggml_path)
F = ctypes.POINTER(ctypes.c_float)
rng = np.random.default_rng(7)
w = gguf.GGUFWriter(out, "llama")
w.add_name("tiny import")
w.add_uint32("llama.block_count", 2)
w.add_float32("llama.attention.layer_norm_rms_epsilon", 1e-5)
w.add_bool("t.flag", True)
w.add_int64("t.big", -2**40)
w.add_array("tokenizer.ggml.tokens", ["<s>", "a", "b"])
expected = {}
for name in types:
    t = T[name]
    block, size = gguf.GGML_QUANT_SIZES[t]
    x = (rng.standard_normal((3, 512)) * 0.05).astype(np.float32)
    x[0, :block] = 0  # a zero block
    q = np.zeros((3, 512 // block * size), dtype=np.uint8)
    getattr(ggml, f"quantize_row_{name.lower().replace('_k', '_K')}_ref")(
        x.ctypes.data_as(F), q.ctypes.data_as(ctypes.c_void_p), ctypes.c_int64(x.size))
    w.add_tensor(f"blk.0.{name.lower()}.weight", q, raw_dtype=t)
    if t in gguf.quants._type_traits:
        expected[f"blk.0.{name.lower()}.weight"] = gguf.quants.dequantize(q, t).astype(np.float32)
    else:  # gguf-py does not decode it: ggml's own dequantizer
        y = np.zeros((3, 512), dtype=np.float32)
        getattr(ggml, f"dequantize_row_{name.lower().replace('_k', '_K')}")(
            q.ctypes.data_as(ctypes.c_void_p), y.ctypes.data_as(F), ctypes.c_int64(y.size))
        expected[f"blk.0.{name.lower()}.weight"] = y
f32 = rng.standard_normal((4, 6)).astype(np.float32)
w.add_tensor("token_embd.weight", f32); expected["token_embd.weight"] = f32
f16 = rng.standard_normal((2, 8)).astype(np.float16)
w.add_tensor("blk.0.attn_q.weight", f16); expected["blk.0.attn_q.weight"] = f16.astype(np.float32)
bf16 = (rng.standard_normal(16).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
w.add_tensor("output_norm.weight", bf16, raw_dtype=T.BF16)
expected["output_norm.weight"] = (bf16.astype(np.uint32) << 16).view(np.float32)
ints = np.arange(-5, 7, dtype=np.int32).reshape(3, 4)
w.add_tensor("positions", ints); expected["positions"] = ints
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
np.savez(out + ".expected.npz", **expected)
"""


def run(*args):
    return subprocess.run([CLI, *map(str, args)], capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    if not pathlib.Path(GGML).exists():
        pytest.fail(f"ggml's library is not at {GGML}: run `bash scripts/install-deps.sh`")
    path = tmp_path_factory.mktemp("gguf") / "tiny.gguf"
    subprocess.run([str(ORACLE), "-c", MAKER, str(path), GGML, ",".join(BLOCK_TYPES)], check=True, timeout=120)
    expected = dict(np.load(str(path) + ".expected.npz"))
    return path, expected


def same_bits(a, b):
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def bf16_bits(values):
    """F32 values rounded to BF16 (nearest even) as bits: torch's conversion, not tlio's."""
    import torch
    return torch.from_numpy(np.ascontiguousarray(values)).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)


def test_convert_to_f32_gives_ggml_values_bit_for_bit(made, tmp_path):
    path, expected = made
    out = tmp_path / "out.safetensors"
    r = run("convert", path, out, "--dtype", "f32", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["tensors"] == len(expected) and doc["decoded"] == len(BLOCK_TYPES)
    assert doc["kept"] == 2 and doc["converted"] == 2 and doc["dtype"] == "F32"  # F32 + I32 kept
    with tlio.safe_open(out, "numpy") as f:
        assert set(f.keys()) == set(expected)
        for name, want in expected.items():
            assert same_bits(f.get_tensor(name), want), name
        meta = f.metadata()
    assert meta["general.architecture"] == "llama" and meta["general.name"] == "tiny import"
    assert meta["llama.block_count"] == "2" and meta["t.flag"] == "true" and meta["t.big"] == str(-2**40)
    assert meta["llama.attention.layer_norm_rms_epsilon"] == "1e-05"
    assert "tokenizer.ggml.tokens" not in meta and doc["metadata_skipped"] == 1


def test_convert_to_bf16_rounds_as_torch_does(made, tmp_path):
    path, expected = made
    out = tmp_path / "out.safetensors"
    r = run("convert", path, out)  # BF16 by default
    assert r.returncode == 0, r.stderr
    assert "decoded to BF16" in r.stdout
    with tlio.safe_open(out, "numpy") as f:
        for name, want in expected.items():
            if want.dtype == np.int32:
                assert f.get_dtype(name) == "I32" and same_bits(f.get_tensor(name), want)
                continue
            assert f.get_dtype(name) == "BF16", name
            assert same_bits(f.get_tensor(name, dtype="bits"), bf16_bits(want)), name


def test_import_gguf_from_python(made, tmp_path):
    path, expected = made
    report = tlio.import_gguf(path, tmp_path / "o.safetensors", dtype="F16")
    assert report["tensors"] == len(expected) and report["decoded"] == len(BLOCK_TYPES)
    loaded = tlio.load_file(tmp_path / "o.safetensors")
    for name, want in expected.items():
        if want.dtype != np.int32:
            assert same_bits(loaded[name], want.astype(np.float16)), name


def test_safe_open_reads_a_gguf(made):
    path, expected = made
    with tlio.safe_open(path, "numpy") as f:
        assert f.keys() == sorted(expected)
        assert f.get_dtype("blk.0.q4_k.weight") == "F32" and f.get_shape("blk.0.q4_k.weight") == [3, 512]
        for name, want in expected.items():
            if name == "output_norm.weight":  # BF16
                continue
            if name == "blk.0.attn_q.weight":  # F16 stays F16
                want = want.astype(np.float16)
            assert same_bits(f.get_tensor(name), want), name
        assert same_bits(f.get_tensor("blk.0.q6_k.weight", dtype="float16"),
                         expected["blk.0.q6_k.weight"].astype(np.float16))
        assert same_bits(f.get_slice("blk.0.q8_0.weight")[1:, :7], expected["blk.0.q8_0.weight"][1:, :7])
        assert f.metadata()["general.name"] == "tiny import"
        with pytest.raises(KeyError):
            f.get_tensor("nosuch")
        with pytest.raises(tlio.SafetensorError, match="BF16"):  # numpy has no BF16
            f.get_tensor("output_norm.weight")
    with pytest.raises(tlio.SafetensorError, match="BF16"):  # as for a safetensors file
        tlio.load_file(path)


def test_torch_reads_a_gguf(made):
    import torch
    path, expected = made
    with tlio.safe_open(path, "pt") as f:
        t = f.get_tensor("output_norm.weight")
        assert t.dtype == torch.bfloat16
        assert same_bits(t.float().numpy(), expected["output_norm.weight"])
        assert same_bits(f.get_tensor("blk.0.q5_k.weight").numpy(), expected["blk.0.q5_k.weight"])
    from tlio import torch as tlio_torch
    loaded = tlio_torch.load_file(path)  # every tensor at once, as get_tensors reads them
    assert sorted(loaded) == sorted(expected)
    assert same_bits(loaded["blk.0.q5_k.weight"].numpy(), expected["blk.0.q5_k.weight"])


def test_gguf_metadata_has_every_field(made):
    path, _ = made
    fields = tlio.gguf_metadata(path)
    assert fields["tokenizer.ggml.tokens"] == ["<s>", "a", "b"]
    assert fields["t.big"] == -2**40 and fields["t.flag"] is True and fields["llama.block_count"] == 2


def test_a_type_tlio_does_not_decode_is_refused_by_name(tmp_path):
    path = tmp_path / "q8_1.gguf"
    script = ("import sys, numpy as np, gguf\n"
              "w = gguf.GGUFWriter(sys.argv[1], 'llama')\n"
              "w.add_tensor('w', np.zeros((1, 40), dtype=np.uint8), raw_dtype=gguf.GGMLQuantizationType.Q8_1)\n"
              "w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()\n")
    subprocess.run([str(ORACLE), "-c", script, str(path)], check=True, timeout=120)
    out = tmp_path / "out.safetensors"
    r = run("convert", path, out)
    assert r.returncode == 1 and "Q8_1" in r.stderr and "nothing was written" in r.stderr, r.stderr
    assert not out.exists() and list(tmp_path.iterdir()) == [path]
    with tlio.safe_open(path, "numpy") as f:
        with pytest.raises(ValueError, match="Q8_1"):
            f.get_tensor("w")


def test_convert_from_gguf_refuses_what_it_does_not_do(made, tmp_path):
    path, _ = made
    r = run("convert", path, tmp_path / "folder")  # a folder needs the hyperparameters a config is made of
    assert r.returncode == 1 and "embedding_length" in r.stderr and not (tmp_path / "folder").exists(), r.stderr
    r = run("convert", path, tmp_path / "o.safetensors", "--dtype", "f8_e4m3")
    assert r.returncode == 2 and "F32, F16 or BF16" in r.stderr
    r = run("convert", path, tmp_path / "o.safetensors", "--keep", "x")
    assert r.returncode == 2


def test_cat_and_stats_read_a_gguf(made):
    path, expected = made
    name = "blk.0.q4_k.weight"
    r = run("cat", path, name, "--slice", "1:,100:110", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)  # one name: its document
    assert doc["scheme"] == "Q4_K" and doc["shape"] == [2, 10]
    assert np.array_equal(np.array(doc["values"], dtype=np.float64),
                          expected[name][1:, 100:110].astype(np.float64))
    r = run("stats", path, "blk.0.*_k.weight", "--json")
    assert r.returncode == 0, r.stderr
    docs = {t["name"]: t for t in json.loads(r.stdout)["tensors"]}
    assert set(docs) == {f"blk.0.{t.lower()}.weight" for t in BLOCK_TYPES if t.endswith("_K")}
    for n, t in docs.items():
        want = expected[n].astype(np.float64)
        assert t["count"] == want.size and t["min"] == want.min() and t["max"] == want.max(), n
        assert t["mean"] == pytest.approx(want.mean(), rel=1e-12, abs=1e-15), n
        assert t["histogram"] == np.histogram(want, bins=16, range=(want.min(), want.max()))[0].tolist(), n
    r = run("diff", path, path)
    assert r.returncode == 0 and r.stdout.startswith("equal: 21 common tensors"), r.stdout + r.stderr


# Slices crossing blocks inside rows, whole rows, an index: numpy's picks of the oracle's values.
SLICES = [(slice(1, 3), slice(100, 300)), (slice(None), slice(0, 511)), (2, slice(None)), (slice(0, 1),)]


def test_slices_of_a_gguf_equal_the_oracles(made, tmp_path):
    path, expected = made
    blocks = [f"blk.0.{t.lower()}.weight" for t in BLOCK_TYPES]
    with tlio.safe_open(path, "numpy") as f:
        for name in blocks:
            for ix in SLICES:
                assert same_bits(f.get_slice(name)[ix], expected[name][ix]), (name, ix)
        assert same_bits(f.get_slice("positions")[1:, ::2], expected["positions"][1:, ::2])
    with tlio.safe_open(path, "pt") as f:
        got = f.get_slice("output_norm.weight")[3:9]  # BF16 stays BF16
        assert same_bits(got.float().numpy(), expected["output_norm.weight"][3:9])

    # The CLI: block types decoded (F32 by default, or --dtype), plain tensors as stored.
    out = tmp_path / "s.safetensors"
    args = [f"{n}[1:3, 100:300]" for n in blocks] + ["positions[1:]", "blk.0.attn_q.weight[:, 2:5]"]
    r = run("slice", path, *args, "-o", out, "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    # Only the blocks holding columns 100:300 of rows 1 and 2 are needed (gguf-py's block sizes).
    sizes = json.loads(subprocess.run(
        [str(ORACLE), "-c", "import gguf, json, sys; print(json.dumps({t: list(gguf.GGML_QUANT_SIZES["
                            "gguf.GGMLQuantizationType[t]]) for t in sys.argv[1:]}))", *BLOCK_TYPES],
        check=True, capture_output=True, text=True, timeout=120).stdout)
    needed = sum(2 * (-(-300 // b) - 100 // b) * size for b, size in sizes.values()) + 2 * 4 * 4 + 2 * 3 * 2
    rows = sum(2 * 512 // b * size for b, size in sizes.values()) + 2 * 4 * 4 + 2 * 8 * 2  # the rows touched
    assert doc["bytes_wanted"] == needed and needed <= doc["bytes_read"] <= rows
    with tlio.safe_open(out, "numpy") as f:
        for name in blocks:
            assert same_bits(f.get_tensor(name), expected[name][1:3, 100:300]), name
        assert same_bits(f.get_tensor("positions"), expected["positions"][1:])
        assert same_bits(f.get_tensor("blk.0.attn_q.weight"),
                         expected["blk.0.attn_q.weight"][:, 2:5].astype(np.float16))
    r = run("slice", path, "blk.0.q6_k.weight[0]", "--dtype", "bf16", "-o", out)
    assert r.returncode == 0, r.stderr
    with tlio.safe_open(out, "numpy") as f:
        assert same_bits(f.get_tensor("blk.0.q6_k.weight", dtype="bits"), bf16_bits(expected["blk.0.q6_k.weight"][0]))
    # Rows of 505 F32 values (2,020 bytes) in units of at most 1 KiB: cut inside blocks.
    r = run("slice", path, "blk.0.q4_k.weight[:, 7:]", "blk.0.q8_0.weight[:, 7:]", "--max-memory", "1KiB", "-o", out,
            "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert len(doc["reads"]) >= 12 and doc["bytes_read"] == sum(x["length"] for x in doc["reads"])  # 2 units a row
    with tlio.safe_open(out, "numpy") as f:
        for name in ("blk.0.q4_k.weight", "blk.0.q8_0.weight"):
            assert same_bits(f.get_tensor(name), expected[name][:, 7:]), name
    r = run("slice", path, "blk.0.q4_k.weight[3]", "-o", out)
    assert r.returncode == 2 and "index 3" in r.stderr, r.stderr


def test_a_column_slice_of_a_remote_gguf_takes_a_few_requests(tmp_path):
    from http_servers import fault_server
    path = tmp_path / "tall.gguf"
    script = ("import sys, numpy as np, gguf\n"
              "x = np.random.default_rng(3).standard_normal((4000, 512)).astype(np.float32)\n"
              "q = gguf.quants.quantize(x, gguf.GGMLQuantizationType.Q8_0)\n"
              "w = gguf.GGUFWriter(sys.argv[1], 'llama')\n"
              "w.add_tensor('tall', q, raw_dtype=gguf.GGMLQuantizationType.Q8_0)\n"
              "w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()\n"
              "np.save(sys.argv[1] + '.npy', gguf.quants.dequantize(q, gguf.GGMLQuantizationType.Q8_0)[:, 40:70])\n")
    subprocess.run([str(ORACLE), "-c", script, str(path)], check=True, timeout=120)
    want = np.load(str(path) + ".npy")
    with fault_server({"tall.gguf": path.read_bytes()}) as srv:
        out = tmp_path / "cols.safetensors"
        r = run("slice", f"{srv.url}/plain/tall.gguf", "tall[:, 40:70]", "-o", out)
        assert r.returncode == 0, r.stderr
        ranged = [r for _, r, _, _ in srv.requests if r]
    assert same_bits(tlio.load_file(out)["tall"], want.astype(np.float32))
    # The header, then the 4000 rows' blocks (34 bytes of each 544) in reads of at most 4 MiB:
    # one request for the 2.2 MB they span, not one per row.
    assert len(ranged) <= 3, ranged
