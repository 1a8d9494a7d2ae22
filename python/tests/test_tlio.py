"""Tests of the Python module (run by CTest with PYTHONPATH=build/python)."""
import errno
import json
import os
import shutil
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import tlio
import tlio.numpy

DATA = pathlib.Path(os.environ.get("TLIO_TEST_DATA", pathlib.Path(__file__).parents[2] / "tests" / "data"))


def test_safe_open_like_safetensors():
    with tlio.safe_open(DATA / "hf" / "worked_example.safetensors", framework="np") as f:
        assert f.keys() == ["w"]
        assert f.metadata() == {"format": "tinyllm"}
        w = f.get_tensor("w")
        assert w.dtype == np.float32 and w.shape == (2, 2)
        assert w.tolist() == [[1, 2], [3, 4]]
        assert not w.flags.writeable
        with pytest.raises(ValueError):
            w[0, 0] = 5
        assert f.get_dtype("w") == "F32" and f.get_shape("w") == [2, 2]
        c = f.get_tensor("w", copy=True)
        assert c.flags.writeable and c.tolist() == w.tolist()
        c[0, 0] = 9
        assert w[0, 0] == 1
        out = np.zeros((2, 2), dtype=np.float32)
        assert f.get_tensor("w", out=out) is not None and out.tolist() == w.tolist()
        with pytest.raises(ValueError):
            f.get_tensor("w", out=np.zeros(3, dtype=np.float32))
        with pytest.raises(KeyError):
            f.get_tensor("nope")


def test_views_are_zero_copy_and_outlive_the_file():
    path = DATA / "hf" / "mixed_spec15_dtypes.safetensors"
    with tlio.safe_open(path, "numpy") as f:
        a = f.get_tensor("f32")
        b = f.get_tensor("f32")
    assert a.base is not None
    assert a.__array_interface__["data"][0] == b.__array_interface__["data"][0]  # same bytes
    del f
    assert a.shape == (3,)  # still readable: the array keeps the mapping alive


def test_no_metadata_is_none():
    with tlio.safe_open(DATA / "hf" / "no_metadata.safetensors", "numpy") as f:
        assert f.metadata() is None


def test_get_slice_numpy_indexing():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    data = tlio.save({"x": x})
    path = pathlib.Path(os.environ.get("TMPDIR", "/tmp")) / f"tlio-py-{os.getpid()}.safetensors"
    path.write_bytes(data)
    try:
        with tlio.safe_open(path, "numpy") as f:
            s = f.get_slice("x")
            assert s.get_shape() == [2, 3, 4] and s.get_dtype() == "F32"
            for index in [1, -1, slice(None), (slice(None), 1), (slice(0, 2), slice(None, None, 2)),
                          (Ellipsis, -1), (slice(None, None, -1), None, 0), (1, 1, slice(3, 0, -1))]:
                np.testing.assert_array_equal(s[index], x[index])
            assert len(s) == 2
    finally:
        path.unlink()


def test_types_numpy_lacks_are_an_error_or_asked_for_as_bits_or_values(tmp_path):
    with tlio.safe_open(DATA / "hf" / "dtype_BF16.safetensors", "numpy") as f:
        name = f.keys()[0]
        with pytest.raises(tlio.SafetensorError, match="BF16, which numpy has no type for.*"
                           "framework='pt'.*dtype='float32'.*dtype='bits'") as e:
            f.get_tensor(name)
        assert e.value.tensor == name and e.value.rule == "dtype"
        for call in (lambda: f.get_tensors(), lambda: f.get_slice(name)[0],
                     lambda: f.get_tensor(name, copy=True)):
            with pytest.raises(tlio.SafetensorError, match="BF16"):
                call()
        raw = f.get_tensor(name, dtype="bits")
        assert raw.dtype == np.uint16
        conv = f.get_tensor(name, dtype="float32")
        np.testing.assert_array_equal((raw.astype(np.uint32) << 16).view(np.float32), conv)
    with pytest.raises(tlio.SafetensorError, match="tlio.torch.load_file"):
        tlio.load_file(DATA / "hf" / "dtype_BF16.safetensors")
    with pytest.raises(tlio.SafetensorError, match="BF16"):
        tlio.load((DATA / "hf" / "dtype_BF16.safetensors").read_bytes())
    with tlio.safe_open(DATA / "hf" / "dtype_F8_E4M3.safetensors", "numpy") as f:
        name = f.keys()[0]
        with pytest.raises(tlio.SafetensorError, match="F8_E4M3"):
            f.get_tensor(name)
        assert f.get_tensor(name, dtype="bits").dtype == np.uint8
        assert f.get_tensor(name, dtype=np.float32).dtype == np.float32
    with tlio.safe_open(DATA / "hf" / "dtype_F4.safetensors", "numpy") as f:
        name = f.keys()[0]
        assert f.get_shape(name) == [2, 4]
        assert f.get_tensor(name, dtype="bits").shape == (2, 2)  # packed bytes
        assert f.get_tensor(name, dtype=np.float32).shape == (2, 4)
    with tlio.safe_open(DATA / "hf" / "dtype_C64.safetensors", "numpy") as f:
        assert f.get_tensor(f.keys()[0]).dtype == np.complex64


def test_f4_whose_pairs_straddle_rows_is_refused_by_name_not_cut(tmp_path):
    # [2, 3] F4: 6 values in 3 bytes, a valid file; no array of bytes per row holds it (the
    # packed view used to be [2, 1], 2 of the 3 bytes). Its values still read as floats.
    path = tmp_path / "odd.safetensors"
    tlio.serialize_file({"w": {"dtype": "F4", "shape": [2, 3], "data": bytes([0x21, 0x43, 0x65])}}, path)
    with tlio.safe_open(path, "numpy") as f:
        with pytest.raises(ValueError, match="odd last dimension"):
            f.get_tensor("w", dtype="bits")
        assert f.get_tensor("w", dtype=np.float32).tolist() == [[0.5, 1.0, 1.5], [2.0, 3.0, 4.0]]


def test_load_save_round_trip_canonical_bytes(tmp_path):
    tensors = {"b": np.array([1, 2, 3], dtype=np.int64), "a": np.ones((2, 2), dtype=np.float16),
               "flag": np.array([True, False])}
    data = tlio.save(tensors, metadata={"format": "tinyllm"})
    loaded = tlio.load(data)
    assert sorted(loaded) == ["a", "b", "flag"]
    for k, v in tensors.items():
        np.testing.assert_array_equal(loaded[k], v)
        assert loaded[k].dtype == v.dtype
    tlio.save_file(tensors, tmp_path / "x.safetensors", metadata={"format": "tinyllm"})
    assert (tmp_path / "x.safetensors").read_bytes() == data
    back = tlio.load_file(tmp_path / "x.safetensors")
    np.testing.assert_array_equal(back["b"], tensors["b"])
    # The reference golden: same inputs, same bytes.
    w = np.array([[1, 2], [3, 4]], dtype=np.float32)
    assert tlio.save({"w": w}, {"format": "tinyllm"}) == (DATA / "hf" / "worked_example.safetensors").read_bytes()


def test_non_contiguous_input_and_raw_dtypes(tmp_path):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::2]
    loaded = tlio.load(tlio.save({"x": x}))
    np.testing.assert_array_equal(loaded["x"], x)
    bits = np.array([0x3F80, 0x4000], dtype=np.uint16)
    data = tlio.save({"w": bits}, dtypes={"w": "BF16"})
    tlio.save_file({"w": bits}, tmp_path / "b.safetensors", dtypes={"w": "BF16"})
    with tlio.safe_open(tmp_path / "b.safetensors", "numpy") as f:
        assert f.get_dtype("w") == "BF16"
        assert f.get_tensor("w", dtype=np.float32).tolist() == [1.0, 2.0]
    assert len(data) > 0


def test_errors():
    with pytest.raises(FileNotFoundError):
        tlio.safe_open(DATA / "nope.safetensors", "numpy")
    with pytest.raises(ValueError, match=r"rule 5: tensor \"b\" begins at 8, expected 4"):
        tlio.safe_open(DATA / "bad" / "offsets_gap.safetensors", "numpy")
    with pytest.raises(ValueError, match="framework"):  # "tf" opens, as the package's does
        tlio.safe_open(DATA / "hf" / "worked_example.safetensors", framework="tensorflow2")
    with pytest.raises(ValueError, match="rule 1"):
        tlio.load(b"\x01\x02")
    with pytest.raises(ValueError):
        tlio.save({"x": np.array(["a", "b"])})
    # A zero-size tensor whose other dimension numpy cannot hold.
    with tlio.safe_open(DATA / "bad" / "dim_zero_then_huge.safetensors", "numpy") as f:
        with pytest.raises(ValueError, match="numpy"):
            f.get_tensor(f.keys()[0])


def test_quantize_convert_dequantize(tmp_path):
    src = DATA / "quant" / "tiny_model.safetensors"
    items = tlio.quantize_file(src, tmp_path / "q.safetensors", "int4-g32-sym")
    assert [i["quantized"] for i in items] == [False, True]
    with tlio.safe_open(tmp_path / "q.safetensors", "numpy") as f:
        q = f.quantized()
        assert q[0]["scheme"] == "int4-g32-sym" and q[0]["shape"] == [8, 64]
    assert tlio.dequantize_file(tmp_path / "q.safetensors", tmp_path / "d.safetensors", "BF16") == 1
    converted, kept = tlio.convert_file(src, tmp_path / "c.safetensors", "float16", exclude="norm")
    assert (converted, kept) == (3, 1)
    with tlio.safe_open(tmp_path / "c.safetensors", "numpy") as f:
        assert f.get_dtype("model.norm.weight") == "F32"
        assert f.get_tensor("model.embed_tokens.weight").dtype == np.float16


def test_bitsandbytes_goldens_dequantize_and_quantize(tmp_path):
    bnb = DATA / "bnb"
    golden = bnb / "fp4_bs64_bf16_96x200_nested.safetensors"
    with tlio.safe_open(bnb / "fp4_bs64_bf16_96x200_nested.expected.safetensors", "np") as f:
        expected = {k: f.get_tensor(k, dtype="bits") for k in f.keys()}
    name = "model.layers.0.mlp.down_proj.weight"
    with tlio.safe_open(golden, "numpy") as f:
        (q,) = f.quantized()
        assert (q["name"], q["scheme"], q["shape"], q["dtype"], q["blocksize"], q["nested"]) == (
            name, "fp4", [96, 200], "BF16", 64, True)
        assert len(q["stored"]) == 6
        with pytest.raises(tlio.SafetensorError, match="restores to BF16.*dtype='F32'"):
            f.get_dequantized(name)  # numpy has no BF16: asked for, or an error
        restored = f.get_dequantized(name, "BF16")  # its bits, bit for bit as bitsandbytes
        assert restored.dtype == np.uint16 and restored.shape == (96, 200)
        assert np.array_equal(restored, expected["dequant"])
        assert np.array_equal(f.get_dequantized(name, "F32").view(np.uint32),
                              expected["dequant_f32"].view(np.uint32))
        with pytest.raises(KeyError):
            f.get_dequantized("nope")
    tlio.save_file({name: expected["input"]}, tmp_path / "in.safetensors", {"format": "pt"},
                   dtypes={name: "BF16"})
    items = tlio.quantize_file(tmp_path / "in.safetensors", tmp_path / "q.safetensors", "fp4",
                               blocksize=64, nested=True)
    assert items[0]["quantized"] and items[0]["rmse"] > 0
    assert (tmp_path / "q.safetensors").read_bytes() == golden.read_bytes()
    assert tlio.dequantize_file(tmp_path / "q.safetensors", tmp_path / "d.safetensors") == 1
    with tlio.safe_open(tmp_path / "d.safetensors", "np") as f:
        assert np.array_equal(f.get_tensor(name, dtype="bits"), expected["dequant"])
    with pytest.raises(ValueError, match="BNB-003"):
        with tlio.safe_open(DATA / "bnb_bad" / "bnb003_quant_map.safetensors", "numpy") as f:
            f.quantized()


def test_errors_by_kind(tmp_path):
    # Invalid data: SafetensorError, a ValueError, with the rule, tensor and offset.
    with pytest.raises(tlio.SafetensorError) as info:
        tlio.safe_open(DATA / "bad" / "offsets_gap.safetensors", "numpy")
    assert isinstance(info.value, ValueError)
    assert (info.value.rule, info.value.tensor) == ("5", "b")
    with pytest.raises(tlio.SafetensorError) as info:
        tlio.load(b"\x01\x02")
    assert info.value.rule == "1" and info.value.tensor is None and info.value.offset == 0
    # Paths: the OSError subclass for the errno, whatever the message says.
    with pytest.raises(FileNotFoundError) as missing:
        tlio.safe_open(tmp_path / "nope.safetensors", "numpy")
    assert missing.value.errno == errno.ENOENT and "nope.safetensors" in str(missing.value)
    with pytest.raises(IsADirectoryError):
        tlio.safe_open(tmp_path, "numpy")
    if os.geteuid() != 0:  # root reads anything
        locked = tmp_path / "locked.safetensors"
        shutil.copy(DATA / "hf" / "worked_example.safetensors", locked)
        locked.chmod(0)
        with pytest.raises(PermissionError):
            tlio.safe_open(locked, "numpy")
    # Unknown names: KeyError; bad arguments: a plain ValueError, not SafetensorError.
    with tlio.safe_open(DATA / "hf" / "worked_example.safetensors", "numpy") as f:
        with pytest.raises(KeyError):
            f.get_tensor("no such tensor")
    with pytest.raises(ValueError) as bad_arg:
        tlio.convert_file(DATA / "hf" / "worked_example.safetensors", tmp_path / "o.safetensors",
                          dtype="F32", include="(")
    assert not isinstance(bad_arg.value, tlio.SafetensorError)


def test_quantize_options_belong_to_their_scheme(tmp_path):
    src = DATA / "quant" / "tiny_model.safetensors"
    # An option the scheme does not have is refused, with the CLI's message, and writes nothing.
    with pytest.raises(ValueError, match="blocksize is an option of nf4, fp4, not of int4-g32-sym"):
        tlio.quantize_file(src, tmp_path / "a.safetensors", "int4-g32-sym", blocksize=64)
    with pytest.raises(ValueError, match="nested is an option of nf4, fp4, not of int8"):
        tlio.quantize_file(src, tmp_path / "a.safetensors", "int8", nested=False)
    assert not (tmp_path / "a.safetensors").exists()
    with pytest.raises(ValueError, match="blocksize 48 is not one of"):
        tlio.quantize_file(src, tmp_path / "a.safetensors", "nf4", blocksize=48)
    with pytest.raises(ValueError, match="unknown quantization scheme"):
        tlio.quantize_file(src, tmp_path / "a.safetensors", "q3")
    items = tlio.quantize_file(src, tmp_path / "b.safetensors", "nf4", blocksize=32, nested=True,
                               storage="F16")
    assert any(i["quantized"] for i in items)
    with tlio.safe_open(tmp_path / "b.safetensors", "np") as f:
        q = f.quantized()[0]
        assert (q["scheme"], q["blocksize"], q["nested"]) == ("nf4", 32, True)


def test_direct_backend_reads_what_the_mapping_holds(tmp_path):
    """backend="direct" (O_DIRECT reads of aligned windows, many in flight): tensors at offsets
    that are not page-aligned and longer than a window come back as the mapping has them, as
    writable arrays of their own; slices read only their rows."""
    rng = np.random.default_rng(5)
    tensors = {"a": np.arange(3, dtype=np.uint8), "b": rng.standard_normal(700_001).astype(np.float32),
               "c": rng.standard_normal((1030, 1027)).astype(np.float16), "d": np.ones((0, 4), np.int32)}
    path = tmp_path / "x.safetensors"
    path.write_bytes(tlio.save(tensors))
    direct = tlio.numpy.load_file(path, backend="direct")
    assert list(direct) == list(tlio.numpy.load_file(path))
    raw = path.read_bytes()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + n])
    for name, want in tensors.items():
        np.testing.assert_array_equal(direct[name], want, err_msg=name)
        assert direct[name].flags.writeable, name
        # Laid out as in the file, modulo a page: O_DIRECT reads land in the arrays themselves.
        assert (direct[name].ctypes.data - (8 + n + header[name]["data_offsets"][0])) % 4096 == 0, name
    with tlio.safe_open(path, "numpy", backend="direct") as f:
        np.testing.assert_array_equal(f.get_tensor("b"), tensors["b"])
        s = f.get_slice("c")
        for index in [slice(1, 1000), (slice(3, 700), slice(5, 900, 3)), -1]:
            np.testing.assert_array_equal(s[index], tensors["c"][index], err_msg=repr(index))
    with pytest.raises(ValueError, match="'mmap', 'pread' or 'direct'"):
        tlio.safe_open(path, "numpy", backend="o_direct")


def test_get_slice_with_pread_reads_the_slice_and_indexes_as_numpy(tmp_path):
    x = np.arange(120, dtype=np.float32).reshape(2, 3, 4, 5)
    path = tmp_path / "x.safetensors"
    path.write_bytes(tlio.save({"x": x}))
    with tlio.safe_open(path, "numpy", backend="pread") as f:
        s = f.get_slice("x")
        for index in [1, -1, slice(None), (slice(None), 1), (slice(0, 2), slice(None, None, 2)),
                      (Ellipsis, -1), (slice(None, None, -1), None, 0), (1, 1, slice(3, 0, -1)),
                      (0, slice(1, 3), 2), (slice(5, 1), 0), (1, -2, slice(None), np.int64(4)),
                      (slice(1, None), [0, 2]), ()]:
            np.testing.assert_array_equal(s[index], x[index], err_msg=repr(index))


def _vm_flags(address):
    """The VmFlags of the mapping that holds `address` (/proc/self/smaps)."""
    inside = False
    with open("/proc/self/smaps") as smaps:
        for line in smaps:
            head = line.split()[0]
            if not head.endswith(":"):  # a mapping's first line: "lo-hi perms ..."
                lo, hi = (int(x, 16) for x in head.split("-"))
                inside = lo <= address < hi
            elif inside and head == "VmFlags:":
                return line.split()[1:]
    raise AssertionError(f"{address:#x} is not mapped")


_NO_HUGE_PAGES = """
import ctypes, sys
import numpy as np
import tlio, tlio.numpy
from test_tlio import _vm_flags
big = np.arange(3 << 20, dtype=np.float32).reshape(3, 1 << 20)  # 12 MiB
small = np.arange(10, dtype=np.int16)
path = sys.argv[1]
tlio.numpy.save_file({"big": big, "small": small}, path)
huge = "hg" in _vm_flags(big.ctypes.data + big.nbytes // 2)
freed = np.empty(3 << 20, np.float32)  # numpy advises from its first page boundary on...
address = freed.ctypes.data
del freed
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
reused = libc.malloc(12 << 20)  # ...and the advice stays on the heap malloc hands out again
assert not huge or (reused == address and "hg" in _vm_flags(reused + (6 << 20))), "no premise"
libc.free(ctypes.c_void_p(reused))
loaded = tlio.numpy.load_file(path, backend="pread")
with tlio.safe_open(path, "numpy", backend="pread") as f:
    one = f.get_tensor("big")
    bits = f.get_tensor("big", dtype="bits")
planned = tlio.numpy.load_sharded(path, {"big": (slice(1, 3),), "small": ...})
np.testing.assert_array_equal(loaded["small"], small)  # numpy's memory: no promise on pages
np.testing.assert_array_equal(planned["small"], small)
for what, array, want in [("load_file", loaded["big"], big), ("get_tensor", one, big),
                          ("bits", bits, big), ("load_sharded", planned["big"], big[1:3])]:
    np.testing.assert_array_equal(array.view(np.float32), want)
    assert "hg" not in _vm_flags(array.ctypes.data + array.nbytes // 2), what
assert tlio.numpy.load_file(path, backend="pread")["big"].sum() == big.sum()  # freed and again
print("huge pages advised" if huge else "no huge pages here")
"""


def test_copies_tlio_fills_ask_for_no_huge_pages(tmp_path):
    # numpy marks arrays of 4 MiB and more MADV_HUGEPAGE (VmFlags "hg"); faulting those in took
    # 5x the system time on a VM (docs/benchmarks.md), so tlio's copies leave it to the system.
    # A process of its own where malloc serves 12 MiB from the heap and keeps what is freed (as
    # it does once earlier frees raised its thresholds): a copy made with malloc would land on
    # pages numpy advised before and freed.
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_=str(64 << 20), MALLOC_TRIM_THRESHOLD_=str(1 << 30),
               PYTHONPATH=os.pathsep.join([os.path.dirname(__file__), os.environ.get("PYTHONPATH", "")]))
    run = subprocess.run([sys.executable, "-c", _NO_HUGE_PAGES, str(tmp_path / "big.safetensors")],
                         env=env, capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
