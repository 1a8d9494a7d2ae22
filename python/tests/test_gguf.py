"""GGUF files written by gguf-py (llama.cpp's own Python writer, PyPI `gguf`, pinned in
scripts/pypi/oracles.txt and installed into build/oracle-venv by scripts/install-deps.sh) read by
`tlio inspect` and `tlio validate`: every metadata value of every type, every tensor's type,
numpy-order shape, size and offset as gguf-py's reader sees them, and the data where tlio says it
is. Then the same files broken as ggml's reader refuses them."""
import json
import os
import pathlib
import struct
import subprocess

import pytest

CLI = os.environ.get("TLIO_CLI", str(pathlib.Path(__file__).parents[2] / "build" / "tlio"))
ORACLE = pathlib.Path(CLI).resolve().parent / "oracle-venv" / "bin" / "python"

pytestmark = pytest.mark.skipif(not ORACLE.exists(),
                                reason="gguf-py is installed into build/oracle-venv by scripts/install-deps.sh")

WRITER = r"""
import sys
import numpy as np
import gguf
w = gguf.GGUFWriter(sys.argv[1], "llama")
w.add_name("tiny")
w.add_uint8("t.u8", 200); w.add_int8("t.i8", -5); w.add_uint16("t.u16", 60000); w.add_int16("t.i16", -300)
w.add_uint32("llama.block_count", 2); w.add_int32("t.i32", -70000); w.add_float32("t.f32", 1e-5)
w.add_uint64("t.u64", 2**40); w.add_int64("t.i64", -2**40); w.add_float64("t.f64", 0.1); w.add_bool("t.bool", True)
w.add_array("tokenizer.ggml.tokens", ["<s>", "a", "\u00e9t\u00e9", "\n"])
w.add_array("tokenizer.ggml.scores", [0.0, -1.5, 2.25, 7.0])
w.add_array("tokenizer.ggml.token_type", [3, 1, 1, 6])
rng = np.random.default_rng(0)
w.add_tensor("token_embd.weight", rng.standard_normal((4, 64)).astype(np.float32))
w.add_tensor("blk.0.attn_q.weight", rng.standard_normal((64, 64)).astype(np.float16))
w.add_tensor("output_norm.weight", np.ones(64, dtype=np.float32))
q = gguf.quants.quantize(rng.standard_normal((3, 64)).astype(np.float32), gguf.GGMLQuantizationType.Q8_0)
w.add_tensor("blk.0.ffn_up.weight", q, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
"""

READER = r"""
import json, sys
import gguf
r = gguf.GGUFReader(sys.argv[1])
tensors = [{"name": t.name, "type": t.tensor_type.name, "ne": [int(x) for x in t.shape], "bytes": int(t.n_bytes),
            "at": int(t.data_offset)} for t in r.tensors]
fields = {}
for key, f in r.fields.items():
    if key.startswith("GGUF."):
        continue
    value = f.contents()
    fields[key] = {"type": gguf.GGUFValueType(f.types[0]).name, "value": value}
print(json.dumps({"tensors": tensors, "fields": fields}))
"""


def run(*args):
    return subprocess.run([CLI, *map(str, args)], capture_output=True, text=True, timeout=60)


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    path = tmp_path_factory.mktemp("gguf") / "tiny.gguf"
    subprocess.run([str(ORACLE), "-c", WRITER, str(path)], check=True, timeout=120)
    seen = json.loads(subprocess.run([str(ORACLE), "-c", READER, str(path)], check=True, capture_output=True,
                                     text=True, timeout=120).stdout)
    return path, seen


def test_inspect_reads_what_gguf_py_wrote(written):
    path, seen = written
    r = run("inspect", path, "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["kind"] == "gguf" and doc["version"] == 3 and doc["alignment"] == 32
    # Every key with its type and value (arrays: their first elements and count).
    assert doc["metadata"].keys() == seen["fields"].keys()
    for key, want in seen["fields"].items():
        got = doc["metadata"][key]
        assert got["type"] == want["type"], key
        if want["type"] == "ARRAY":
            assert got["count"] == len(want["value"]) and got["first"] == pytest.approx(want["value"][:8]), key
        elif isinstance(want["value"], float):
            assert got["value"] == pytest.approx(want["value"], rel=1e-7), key
        else:
            assert got["value"] == want["value"], key
    # Tensors: type, shape in numpy order (ne reversed), size, and the data where gguf-py reads it.
    assert [t["name"] for t in doc["tensors"]] == [t["name"] for t in seen["tensors"]]
    for got, want in zip(doc["tensors"], seen["tensors"]):
        assert got["type"] == want["type"] and got["shape"] == want["ne"][::-1] and got["bytes"] == want["bytes"]
        assert doc["data_offset"] + got["offset"] == want["at"], got["name"]
    assert doc["tensor_count"] == 4 and doc["type_counts"] == {"F32": 2, "F16": 1, "Q8_0": 1}
    assert run("validate", path).stdout.endswith(": OK (GGUF)\n")


def test_inspect_text_shows_types_and_shapes(written):
    path, _ = written
    r = run("inspect", path)
    assert r.returncode == 0, r.stderr
    assert "GGUF v3 (alignment 32" in r.stdout
    assert "blk.0.ffn_up.weight  Q8_0  [3, 64]" in r.stdout
    assert '["<s>", "a", "été", "\\n"] (4 STRING)' in r.stdout
    assert run("inspect", path, "--group").returncode == 2


def broken(path, tmp_path, name, edit):
    data = bytearray(path.read_bytes())
    edit(data)
    out = tmp_path / name
    out.write_bytes(bytes(data))
    return run("validate", out)


def test_files_ggml_refuses_are_refused_by_name(written, tmp_path):
    path, seen = written
    data = path.read_bytes()
    first = seen["tensors"][0]
    name_at = data.index(first["name"].encode())

    def version(v):
        return lambda d: d.__setitem__(slice(4, 8), struct.pack("<I", v))

    cases = {
        "v1.gguf": (version(1), "version 1"),
        "swapped.gguf": (version(0x03000000), "big-endian"),
        "truncated.gguf": (lambda d: d.__delitem__(slice(len(d) - 200, None)), "pass the end of the file"),
        "type.gguf": (lambda d: d.__setitem__(slice(name_at + len(first["name"]) + 4 + 8 * len(first["ne"]),
                                                    name_at + len(first["name"]) + 8 + 8 * len(first["ne"])),
                                              struct.pack("<I", 4)), "ggml type 4"),
        "magic.gguf": (lambda d: d.__setitem__(slice(0, 4), b"GGUX"), None),
    }
    for file, (edit, message) in cases.items():
        r = broken(path, tmp_path, file, edit)
        assert r.returncode == 1, (file, r.stdout)
        if message:
            assert message in r.stderr and "gguf: " in r.stderr, (file, r.stderr)
