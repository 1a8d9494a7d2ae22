"""Python manners: wrong types say what is wrong, a closed safe_open says so, file objects open,
results say what they hold."""
import io
import os
import pathlib

import numpy as np
import pytest

import tlio

DATA = pathlib.Path(os.environ.get("TLIO_TEST_DATA", pathlib.Path(__file__).parents[2] / "tests" / "data"))
W = {"w": np.arange(6, dtype=np.float32).reshape(2, 3)}


@pytest.mark.parametrize("call", [
    lambda p: tlio.save_file(W, p, {"a": 1}),
    lambda p: tlio.save(W, {"a": 1}),
    lambda p: tlio.serialize({"w": {"dtype": "F32", "shape": [1], "data": b"\0" * 4}}, {"a": 1}),
])
def test_a_non_str_metadata_value_is_a_type_error_naming_it(tmp_path, call):
    with pytest.raises(TypeError, match=r'metadata value of "a" must be str, not int \(1\)') as e:
        call(tmp_path / "x.safetensors")
    assert "pybind11" not in str(e.value) and "cast" not in str(e.value)
    assert not (tmp_path / "x.safetensors").exists()


def test_non_str_keys_and_names_are_type_errors(tmp_path):
    with pytest.raises(TypeError, match=r"metadata key must be str, not int \(2\)"):
        tlio.save(W, {2: "x"})
    with pytest.raises(TypeError, match=r"tensor name must be str, not int \(1\)"):
        tlio.save({1: W["w"]})
    with pytest.raises(TypeError, match="metadata must be a dict"):
        tlio.save(W, [("a", "b")])
    with pytest.raises(TypeError, match=r'dtype of tensor "w" must be str, not int'):
        tlio.save(W, dtypes={"w": 5})
    with pytest.raises(ValueError, match='tensor "w": unknown dtype "F33"'):
        tlio.save(W, dtypes={"w": "F33"})
    tlio.save_file(W, tmp_path / "w.safetensors")
    with tlio.safe_open(tmp_path / "w.safetensors", "np") as f:
        for call in (f.get_tensor, f.get_slice, f.get_dtype, f.get_shape, f.get_dequantized):
            with pytest.raises(TypeError, match=r"tensor name must be str, not int \(3\)"):
                call(3)


def test_a_closed_safe_open_raises_and_its_tensors_stay_valid(tmp_path):
    tlio.save_file(W, tmp_path / "w.safetensors")
    with tlio.safe_open(tmp_path / "w.safetensors", "np") as f:
        w = f.get_tensor("w")
        s = f.get_slice("w")
    for call in (f.keys, f.offset_keys, f.metadata, f.get_tensors, f.quantized,
                 lambda: f.get_tensor("w"), lambda: f.get_slice("w"), lambda: f.get_dtype("w"),
                 lambda: f.get_shape("w"), lambda: s[0], s.get_shape):
        with pytest.raises(tlio.SafetensorError, match="File is closed"):
            call()
    assert w.tolist() == [[0, 1, 2], [3, 4, 5]]
    opened = tlio.safe_open(tmp_path / "w.safetensors", "np")  # without `with`, as the package
    assert opened.keys() == ["w"]
    opened.close()
    with pytest.raises(tlio.SafetensorError, match="File is closed"):
        opened.keys()


def test_safe_open_over_binary_file_objects(tmp_path):
    tlio.save_file(W, tmp_path / "w.safetensors", {"k": "v"})
    with open(tmp_path / "w.safetensors", "rb") as handle:
        handle.seek(5)
        with tlio.safe_open(handle, "np") as f:
            assert f.metadata() == {"k": "v"}
            assert f.get_tensor("w").tolist() == [[0, 1, 2], [3, 4, 5]]
        assert handle.tell() == 5  # opened again through its descriptor: the position stays
    memory = io.BytesIO((tmp_path / "w.safetensors").read_bytes())
    memory.seek(3)
    with tlio.safe_open(memory, "np") as f:
        assert f.get_tensor("w")[1, 2] == 5
    with pytest.raises(tlio.SafetensorError):
        tlio.safe_open(io.BytesIO(b"\x10\0\0\0\0\0\0\0{}"), "np")  # header cut short
    with pytest.raises(TypeError, match="binary mode"):
        tlio.safe_open(io.StringIO("text"), "np")
    with pytest.raises(TypeError, match="path, a URL or a binary file object, not int"):
        tlio.safe_open(3, "np")


def test_tensor_spec_unknown_dtype_is_a_safetensor_error():
    with pytest.raises(tlio.SafetensorError, match="unknown dtype 'F33' in TensorSpec") as e:
        tlio.TensorSpec(dtype="F33", shape=[1], data_ptr=0, data_len=4)
    assert e.value.rule == "dtype"


def test_file_conversions_say_what_they_did(tmp_path):
    tlio.save_file({"w": W["w"], "i": np.arange(3, dtype=np.int32)}, tmp_path / "a.safetensors")
    result = tlio.convert_file(tmp_path / "a.safetensors", tmp_path / "b.safetensors", "fp16")
    assert result == (1, 1) and result.converted == 1 and result.kept == 1
    assert isinstance(result, tlio.ConvertResult)
    assert "converted" in tlio.convert_file.__doc__ and "kept" in tlio.ConvertResult.__doc__
    with tlio.safe_open(tmp_path / "b.safetensors", "np") as f:
        assert f.get_dtype("w") == "F16" and f.get_dtype("i") == "I32"


def test_torch_metadata_of_the_wrong_type_is_a_type_error(tmp_path):
    torch = pytest.importorskip("torch")
    import tlio.torch
    t = {"w": torch.zeros(2)}
    with pytest.raises(TypeError, match=r"metadata value of 'a' must be str, not int \(1\)"):
        tlio.torch.save_file(t, tmp_path / "t.safetensors", {"a": 1})
    with pytest.raises(TypeError, match=r"metadata key must be str, not int \(2\)"):
        tlio.torch.save(t, {2: "x"})
    with pytest.raises(TypeError, match=r"tensor name must be str, not int \(1\)"):
        tlio.torch.save({1: torch.zeros(2)})
    assert not (tmp_path / "t.safetensors").exists()


def test_slices_with_booleans_and_arrays_follow_numpy(tmp_path):
    tlio.save_file(W, tmp_path / "w.safetensors")
    with tlio.safe_open(tmp_path / "w.safetensors", "np") as f:
        s = f.get_slice("w")
        assert s[0, True].tolist() == W["w"][0, True].tolist()  # a bool adds an axis
        assert s[np.array([1, 0])].tolist() == W["w"][[1, 0]].tolist()
        with pytest.raises(IndexError):
            s[np.array([5])]  # fancy indexing: numpy's own error
