"""ggml's codebook types (IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S: issue 66) read
from a GGUF bit for bit as ggml decodes them. The blocks are random bytes (every pattern is a
valid block; only each block's half-precision scale is kept finite), written by gguf-py; the
expected values are ggml's own dequantize_row_* (libggml-base.so from npm's
@node-llama-cpp/linux-x64), and gguf-py's numpy decoders agree with them."""
import ctypes
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

# type: (block bytes, where its half-precision d is: a byte offset, or None for IQ1_M's spread one)
TYPES = {"IQ2_XXS": (66, 0), "IQ2_XS": (74, 0), "IQ2_S": (82, 0), "IQ3_XXS": (98, 0),
         "IQ3_S": (110, 0), "IQ1_S": (50, 0), "IQ1_M": (56, None)}
BLOCKS = 600  # rows of 256 values: every grid row is drawn many times

MAKER = r"""
import sys
import numpy as np
import gguf
from gguf import GGMLQuantizationType as T
out, blocks_npz = sys.argv[1], sys.argv[2]
blocks = np.load(blocks_npz)
w = gguf.GGUFWriter(out, "llama")
expected = {}
for name in blocks.files:
    q = blocks[name]
    w.add_tensor(name.lower(), q, raw_dtype=T[name])
    expected[name] = gguf.quants.dequantize(q, T[name]).astype(np.float32)
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
np.savez(out + ".gguf_py.npz", **expected)
"""


def random_blocks(name, rng):
    size, d_at = TYPES[name]
    q = rng.integers(0, 256, size=(BLOCKS, size), dtype=np.uint8)
    d = (rng.standard_normal(BLOCKS) * 0.01).astype(np.float16).view(np.uint8).reshape(BLOCKS, 2)
    if d_at is not None:
        q[:, d_at:d_at + 2] = d
    else:  # IQ1_M: d's four nibbles are the top nibbles of the four 16-bit scale words
        bits = d.view(np.uint16).reshape(BLOCKS)
        for k in range(4):
            word = q[:, 48 + 2 * k:50 + 2 * k].copy().view(np.uint16).reshape(BLOCKS)
            word = (word & 0x0FFF) | (((bits >> (4 * k)) & 0xF) << 12).astype(np.uint16)
            q[:, 48 + 2 * k:50 + 2 * k] = word.view(np.uint8).reshape(BLOCKS, 2)
    return q


def ggml_values(name, q):
    ggml = ctypes.CDLL(GGML)
    y = np.zeros(q.shape[0] * 256, dtype=np.float32)
    getattr(ggml, f"dequantize_row_{name.lower()}")(
        q.ctypes.data_as(ctypes.c_void_p), y.ctypes.data_as(ctypes.POINTER(ctypes.c_float)),
        ctypes.c_int64(y.size))
    return y.reshape(q.shape[0], 256)


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    if not pathlib.Path(GGML).exists():
        pytest.fail(f"ggml's library is not at {GGML}: run `bash scripts/install-deps.sh`")
    rng = np.random.default_rng(66)
    blocks = {name: random_blocks(name, rng) for name in TYPES}
    folder = tmp_path_factory.mktemp("codebooks")
    np.savez(folder / "blocks.npz", **blocks)
    path = folder / "codebooks.gguf"
    subprocess.run([str(ORACLE), "-c", MAKER, str(path), str(folder / "blocks.npz")], check=True,
                   timeout=120)
    return path, blocks, dict(np.load(str(path) + ".gguf_py.npz"))


@pytest.mark.parametrize("name", list(TYPES))
def test_decoded_as_ggml_decodes(made, name):
    path, blocks, gguf_py = made
    want = ggml_values(name, blocks[name])
    assert np.isfinite(want).all()
    assert want.tobytes() == gguf_py[name].tobytes(), "the two oracles disagree"
    with tlio.safe_open(path, "numpy") as f:
        got = f.get_tensor(name.lower())
    assert got.dtype == np.float32 and got.shape == want.shape
    if got.tobytes() != want.tobytes():
        bad = np.flatnonzero(got.view(np.uint32) != want.view(np.uint32))
        pytest.fail(f"{len(bad)} values differ; first at {bad[0]}: {got.flat[bad[0]]} != {want.flat[bad[0]]}")


def test_every_command_reads_them(made, tmp_path):
    path, blocks, _ = made
    out = tmp_path / "out.safetensors"
    r = subprocess.run([CLI, "convert", str(path), str(out), "--dtype", "F32"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    loaded = tlio.load_file(out)
    for name in TYPES:
        assert loaded[name.lower()].tobytes() == ggml_values(name, blocks[name]).tobytes(), name
    stats = subprocess.run([CLI, "stats", str(path)], capture_output=True, text=True, timeout=120)
    assert stats.returncode == 0 and "iq1_m" in stats.stdout and "no numeric" not in stats.stdout
