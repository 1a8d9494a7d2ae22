"""The safetensors package's raw API and numpy module: TensorSpec, serialize, serialize_file,
deserialize, tlio.numpy, safe_open(..., backend=...).get_tensors()."""
import json
import os
import pathlib

import numpy as np
import pytest

import tlio
import tlio.numpy

DATA = pathlib.Path(os.environ.get("TLIO_TEST_DATA", pathlib.Path(__file__).parents[2] / "tests" / "data"))


def spec(array, dtype=None):
    return tlio.TensorSpec(dtype=dtype or array.dtype.name, shape=array.shape,
                           data_ptr=array.ctypes.data, data_len=array.nbytes)


def test_numpy_module_round_trip(tmp_path):
    tensors = {
        "f64": np.linspace(-1, 1, 7),
        "f32": np.arange(12, dtype=np.float32).reshape(3, 4),
        "f16": np.array([0.5, -2], dtype=np.float16),
        "i64": np.array([-(2**62), 3], dtype=np.int64),
        "u8": np.arange(5, dtype=np.uint8),
        "b": np.array([True, False]),
        "c": np.array([1 + 2j], dtype=np.complex64),
        "empty": np.zeros((0, 3), dtype=np.int32),
        "scalar": np.array(3.5, dtype=np.float32),
    }
    meta = {"format": "np", "k": "v"}
    data = tlio.numpy.save(tensors, metadata=meta)
    assert data == tlio.save(tensors, metadata=meta)
    back = tlio.numpy.load(data)
    path = tmp_path / "t.safetensors"  # a PathLike, as the package takes
    tlio.numpy.save_file(tensors, path, metadata=meta)
    assert path.read_bytes() == data
    for loaded in (back, tlio.numpy.load_file(path), tlio.numpy.load_file(str(path), backend="pread")):
        assert set(loaded) == set(tensors)
        for k, v in tensors.items():
            assert loaded[k].dtype == v.dtype and loaded[k].shape == v.shape, k
            np.testing.assert_array_equal(loaded[k], v)
    with tlio.safe_open(path, "np") as f:
        assert f.metadata() == meta


def test_big_endian_arrays_are_written_as_their_values():
    be = np.arange(6, dtype=">f4").reshape(2, 3)
    back = tlio.numpy.load(tlio.numpy.save({"a": be, "i": np.array([1, -2], dtype=">i8")}))
    assert back["a"].dtype == np.dtype("<f4")
    np.testing.assert_array_equal(back["a"], be)
    assert back["i"].tolist() == [1, -2]


def test_serialize_from_specs_dicts_and_to_a_file(tmp_path):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    bf16 = np.array([0x3F80, 0xC000], dtype=np.uint16)  # 1.0, -2.0 as BF16 bits
    expected = tlio.save({"a": a, "h": bf16}, metadata={"m": "x"}, dtypes={"h": "BF16"})
    specs = {"a": spec(a), "h": spec(bf16, "bfloat16")}
    assert tlio.serialize(specs, metadata={"m": "x"}) == expected
    dicts = {"a": {"dtype": "F32", "shape": [2, 3], "data": a.tobytes()},
             "h": {"dtype": "BF16", "shape": [2], "data": bytearray(bf16.tobytes())}}
    assert tlio.serialize(dicts, metadata={"m": "x"}) == expected
    out = tmp_path / "s.safetensors"
    tlio.serialize_file(specs, out, metadata={"m": "x"})
    assert out.read_bytes() == expected
    s = specs["h"]
    assert (s.dtype, s.shape, s.data_len) == ("BF16", [2], 4) and "BF16" in repr(s)


def test_tensor_spec_checks_and_packed_f4():
    with pytest.raises(ValueError, match="float128"):
        tlio.TensorSpec(dtype="float128", shape=[1], data_ptr=0, data_len=16)
    with pytest.raises(TypeError):
        tlio.TensorSpec("float32", [1], 0, 4)  # keyword-only, as in the package
    packed = np.array([[0x21, 0x43]], dtype=np.uint8)  # four F4 values, two per byte
    s = spec(packed, "float4_e2m1fn_x2")
    assert s.dtype == "F4" and s.shape == [1, 4]
    data = tlio.serialize({"q": s})
    assert tlio.deserialize(data) == [("q", {"shape": [1, 4], "dtype": "F4", "data": bytearray(b"\x21\x43")})]
    with pytest.raises(ValueError, match="exactly 2 bytes"):  # data_len must match the shape
        tlio.serialize({"q": tlio.TensorSpec(dtype="F4", shape=[1, 4], data_ptr=packed.ctypes.data, data_len=1)})
    with pytest.raises(TypeError):
        tlio.serialize({"q": [1, 2]})


def test_deserialize_lists_tensors_in_file_order_with_their_bytes():
    data = (DATA / "hf" / "worked_example.safetensors").read_bytes()
    [(name, t)] = tlio.deserialize(data)
    assert name == "w" and t["shape"] == [2, 2] and t["dtype"] == "F32"
    assert isinstance(t["data"], bytearray)
    assert np.frombuffer(t["data"], dtype="<f4").tolist() == [1, 2, 3, 4]
    with pytest.raises(tlio.SafetensorError) as e:
        tlio.deserialize((DATA / "bad" / "offsets_gap.safetensors").read_bytes())
    assert isinstance(e.value, ValueError) and e.value.rule == "5"
    with pytest.raises(tlio.SafetensorError):
        tlio.deserialize(b"\x05\x00\x00\x00\x00\x00\x00\x00{}")


def test_serialize_writes_the_hf_goldens():
    """Every golden Hugging Face wrote, from the inputs it was given, byte for byte (but for the
    documented exceptions: an empty metadata map is omitted, several keys are sorted)."""
    cases = json.loads((DATA / "hf" / "MANIFEST.json").read_text())["cases"]
    same = total = 0
    for case in cases:
        if case.get("hf_writer") != "ok" or not case.get("file"):
            continue
        inputs = case["tensors_input_order"]
        if any(b"\0" in t["name"].encode() for t in inputs):
            continue
        tensors = {t["name"]: {"dtype": t["dtype"], "shape": t["shape"],
                               "data": bytes.fromhex(t["data_hex"] or "")} for t in inputs}
        ours = tlio.serialize(tensors, metadata=case.get("metadata"))
        golden = (DATA / "hf" / case["file"]).read_bytes()
        total += 1
        same += ours == golden
        # Always the same tensors as the golden's, read back.
        assert tlio.deserialize(ours) == tlio.deserialize(golden) or case.get("metadata") == {}, case["id"]
    assert total >= 40 and same >= total - 3, (same, total)


def test_get_tensors_and_backends():
    path = DATA / "hf" / "mixed_spec15_dtypes.safetensors"
    with tlio.safe_open(path, framework="np", backend="pread") as f:
        with pytest.raises(tlio.SafetensorError, match="numpy has no type for"):
            f.get_tensors()  # it holds BF16
        got = {k: f.get_tensor(k, dtype="bits") for k in f.offset_keys()}
    with tlio.safe_open(path, framework="np") as f:
        assert list(got) == f.offset_keys()
        for k in f.offset_keys():
            np.testing.assert_array_equal(f.get_tensor(k, dtype="bits"), got[k])
    with pytest.raises(ValueError, match="backend"):
        tlio.safe_open(path, framework="np", backend="mmap2")
