"""tlio.torch and tlio.numpy against safetensors 0.8 on the users' stack (torch >= 2.8, numpy 2):
every safetensors dtype comes back as the torch dtype safetensors gives, with the same bits, and
save_file writes the bytes safetensors writes. Runs in build/consumer-venv; elsewhere skips."""
import pytest

torch = pytest.importorskip("torch", minversion="2.8",
                            reason="the consumers' stack: bash scripts/install-deps.sh (build/consumer-venv)")
np = pytest.importorskip("numpy", minversion="2")
safetensors_torch = pytest.importorskip("safetensors.torch")
safetensors_numpy = pytest.importorskip("safetensors.numpy")

import tlio  # noqa: E402
import tlio.numpy  # noqa: E402
import tlio.torch  # noqa: E402

TORCH_DTYPES = ["bool", "uint8", "int8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float16",
                "bfloat16", "float32", "float64", "complex64", "float8_e4m3fn", "float8_e5m2",
                "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu", "float4_e2m1fn_x2"]


def every_dtype():
    """A tensor of each torch dtype safetensors stores, [3, 4] (F4: [3, 2] pairs), random bits."""
    gen = torch.Generator().manual_seed(7)
    out = {}
    for name in TORCH_DTYPES:
        dtype = getattr(torch, name)
        shape = (3, 2) if name == "float4_e2m1fn_x2" else (3, 4)
        size = torch.empty(0, dtype=dtype).element_size()
        bits = torch.randint(0, 256, (3 * shape[1] * size,), dtype=torch.uint8, generator=gen)
        out[f"t_{name}"] = bits.view(dtype).reshape(shape) if name != "bool" else bits.remainder(2).bool().reshape(shape)
    return out


def same(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and torch.equal(a.view(torch.uint8), b.view(torch.uint8))


def test_save_file_writes_safetensors_bytes(tmp_path):
    tensors = every_dtype()
    safetensors_torch.save_file(tensors, tmp_path / "theirs.safetensors")
    tlio.torch.save_file(tensors, tmp_path / "ours.safetensors")
    assert (tmp_path / "ours.safetensors").read_bytes() == (tmp_path / "theirs.safetensors").read_bytes()
    assert tlio.torch.save(tensors) == safetensors_torch.save(tensors)
    one = {"format": "pt"}
    safetensors_torch.save_file(tensors, tmp_path / "theirs.safetensors", metadata=one)
    tlio.torch.save_file(tensors, tmp_path / "ours.safetensors", metadata=one)
    assert (tmp_path / "ours.safetensors").read_bytes() == (tmp_path / "theirs.safetensors").read_bytes()


@pytest.mark.parametrize("backend", ["mmap", "pread"])
def test_load_file_gives_safetensors_dtypes_and_bits(tmp_path, backend):
    tensors = every_dtype()
    path = tmp_path / "m.safetensors"
    safetensors_torch.save_file(tensors, path)
    theirs = safetensors_torch.load_file(path)
    ours = tlio.torch.load_file(path, backend=backend)
    assert ours.keys() == theirs.keys()
    for name, t in theirs.items():
        assert same(ours[name], t), (name, ours[name].dtype, t.dtype)
        assert ours[name].is_contiguous() and ours[name].stride() == t.stride(), name
    with tlio.safe_open(path, framework="pt") as f:
        for name, t in theirs.items():
            assert same(f.get_tensor(name), t), name
    assert all(same(a, theirs[k]) for k, a in tlio.torch.load(path.read_bytes()).items())


def test_numpy_arrays_have_numpy_2_strides_and_values(tmp_path):
    rng = np.random.default_rng(5)
    arrays = {f"a_{d}": rng.standard_normal((5, 7)).astype(d) for d in ("float16", "float32", "float64", "complex64")}
    arrays |= {f"i_{d}": rng.integers(-100, 100, (5, 7)).astype(d) for d in ("int8", "uint16", "int32", "uint64")}
    arrays["empty"] = np.zeros((0, 3), np.float32)
    path = tmp_path / "n.safetensors"
    safetensors_numpy.save_file(arrays, path)
    for backend in ("mmap", "pread"):
        got = tlio.numpy.load_file(path, backend=backend)
        for name, a in arrays.items():
            assert got[name].dtype == a.dtype and got[name].shape == a.shape, name
            assert got[name].strides == a.strides, (name, got[name].strides)
            assert np.array_equal(got[name], a), name
    with tlio.safe_open(path, framework="np") as f:
        assert f.get_tensor("a_float32").strides == (28, 4)
        assert np.array_equal(f.get_slice("a_float32")[1:3, ::2], arrays["a_float32"][1:3, ::2])
    tlio.numpy.save_file(arrays, tmp_path / "ours.safetensors")
    assert (tmp_path / "ours.safetensors").read_bytes() == path.read_bytes()


def test_f4_with_an_odd_last_dimension_is_refused_as_safetensors_refuses_it(tmp_path):
    path = tmp_path / "odd.safetensors"
    tlio.serialize_file({"w": {"dtype": "F4", "shape": [2, 3], "data": bytes([0x21, 0x43, 0x65])}}, path)
    with pytest.raises(Exception, match="divisible by 2|last dim"):
        safetensors_torch.load_file(path)
    with pytest.raises(ValueError, match="odd last dimension"):
        tlio.torch.load_file(path)
