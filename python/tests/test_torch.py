"""tlio.torch and safe_open(framework="pt"): against numpy's reading of every test file, round
trips, shared memory, zero copy, lifetime, threads. Needs Debian's python3-torch."""
import concurrent.futures
import os
import pathlib
import resource

import numpy as np
import pytest
import torch

import tlio
import tlio.numpy
import tlio.torch

DATA = pathlib.Path(os.environ.get("TLIO_TEST_DATA", pathlib.Path(__file__).parents[2] / "tests" / "data"))

# What torch's tensors are to numpy's arrays, per header dtype (numpy gives raw bits for types
# it lacks: BF16 as uint16, F8 as uint8).
ALWAYS = {"F64", "F32", "F16", "BF16", "I64", "I32", "I16", "I8", "U8", "BOOL", "C64"}


def torch_has(dtype):
    return dtype in tlio.torch._TORCH_DTYPES


def readable_files():
    """Every valid test file: the hf goldens, real files from other tools, bnb and int4 files."""
    files = sorted((DATA / "hf").glob("*.safetensors"))
    files += sorted((DATA / "realfiles").rglob("*.safetensors"))
    files += sorted((DATA / "bnb").glob("*.safetensors"))
    files += sorted((DATA / "quant").rglob("*.safetensors"))
    valid = []
    for p in files:
        try:
            tlio.safe_open(p, "np")
        except tlio.SafetensorError:
            continue  # the invalid real files are the reader's business, not this test's
        valid.append(p)
    return valid


def as_bits(t):
    """A tensor's bytes as numpy sees them (the same width, raw for BF16 and the like)."""
    if t.dtype in (torch.bfloat16,) or t.dtype not in (torch.float64, torch.float32, torch.float16,
                                                         torch.int64, torch.int32, torch.int16,
                                                         torch.int8, torch.uint8, torch.bool,
                                                         torch.complex64):
        return t.view({1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[
            t.element_size()]).numpy()
    return t.numpy()


@pytest.mark.parametrize("path", readable_files(), ids=lambda p: p.name)
def test_every_file_reads_through_torch_as_through_numpy(path):
    with tlio.safe_open(path, "np") as n, tlio.safe_open(path, framework="pt") as t:
        assert t.keys() == n.keys() and t.offset_keys() == n.offset_keys()
        assert t.metadata() == n.metadata()
        for name in n.keys():
            dtype = n.get_dtype(name)
            expected = n.get_tensor(name, dtype="bits")
            if not torch_has(dtype):
                with pytest.raises(ValueError, match=f"{dtype}"):
                    t.get_tensor(name)
                continue
            got = t.get_tensor(name)
            assert got.dtype == tlio.torch._TORCH_DTYPES[dtype]
            assert list(got.shape) == list(expected.shape) or dtype == "F4"
            assert as_bits(got).tobytes() == expected.tobytes(), name


def test_bf16_is_bfloat16_with_its_values():
    with tlio.safe_open(DATA / "hf" / "dtype_BF16.safetensors", "pt") as f:
        for name in f.keys():
            t = f.get_tensor(name)
            assert t.dtype == torch.bfloat16
            with tlio.safe_open(DATA / "hf" / "dtype_BF16.safetensors", "np") as n:
                exact = n.get_tensor(name, dtype=np.float32)
            assert np.array_equal(t.float().numpy(), exact, equal_nan=True)


def test_missing_torch_types_name_tensor_and_dtype():
    missing = [d for d in ("U16", "U32", "U64", "F8_E4M3", "F8_E5M2", "F8_E8M0", "F6_E2M3")
               if not torch_has(d)]
    for dtype in missing:
        path = DATA / "hf" / f"dtype_{dtype}.safetensors"
        with tlio.safe_open(path, "pt") as f:
            name = f.keys()[0]
            with pytest.raises(ValueError) as e:
                f.get_tensor(name)
            assert repr(name) in str(e.value) and dtype in str(e.value)
            assert "torch" in str(e.value)


def every_dtype_tensors():
    g = torch.Generator().manual_seed(1)
    out = {
        "f64": torch.randn(3, 5, dtype=torch.float64, generator=g),
        "f32": torch.randn(4, 2, generator=g),
        "f16": torch.randn(7, generator=g).half(),
        "bf16": torch.randn(2, 3, generator=g).bfloat16(),
        "i64": torch.tensor([-(2**62), 5, 0]),
        "i32": torch.arange(-3, 3, dtype=torch.int32),
        "i16": torch.tensor([[-32768, 32767]], dtype=torch.int16),
        "i8": torch.tensor([-128, 127], dtype=torch.int8),
        "u8": torch.arange(256, dtype=torch.uint8),
        "bool": torch.tensor([True, False, True]),
        "c64": torch.tensor([1 + 2j, -3j], dtype=torch.complex64),
        "scalar": torch.tensor(2.5),
        "empty": torch.zeros(0, 4),
    }
    for dtype, attr in [("U16", "uint16"), ("U32", "uint32"), ("U64", "uint64"),
                        ("F8_E4M3", "float8_e4m3fn"), ("F8_E5M2", "float8_e5m2")]:
        if torch_has(dtype):
            out[attr] = torch.arange(8, dtype=torch.uint8).view(getattr(torch, attr)) \
                if getattr(torch, attr).itemsize == 1 else torch.arange(4).to(getattr(torch, attr))
    return out


def assert_same(a, b):
    assert a.keys() == b.keys()
    for k in a:
        assert a[k].dtype == b[k].dtype and a[k].shape == b[k].shape, k
        assert as_bits(a[k]).tobytes() == as_bits(b[k]).tobytes(), k


def test_round_trip_every_dtype(tmp_path):
    tensors = every_dtype_tensors()
    tlio.torch.save_file(tensors, tmp_path / "t.safetensors", metadata={"format": "pt"})
    assert_same(tensors, tlio.torch.load_file(tmp_path / "t.safetensors"))
    assert_same(tensors, tlio.torch.load_file(tmp_path / "t.safetensors", backend="pread"))
    assert_same(tensors, tlio.torch.load_file(tmp_path / "t.safetensors", backend="direct"))
    data = tlio.torch.save(tensors, {"format": "pt"})
    assert data == (tmp_path / "t.safetensors").read_bytes()
    assert_same(tensors, tlio.torch.load(data))
    with tlio.safe_open(tmp_path / "t.safetensors", "pt") as f:
        assert f.metadata() == {"format": "pt"}
        assert f.get_dtype("bf16") == "BF16" and f.get_shape("f64") == [3, 5]
    # numpy reads what torch wrote, and the other way round.
    with pytest.raises(tlio.SafetensorError, match="numpy has no type for"):
        tlio.numpy.load_file(tmp_path / "t.safetensors")  # it holds BF16
    with tlio.safe_open(tmp_path / "t.safetensors", "np") as f:
        assert np.array_equal(f.get_tensor("f32"), tensors["f32"].numpy())
    tlio.numpy.save_file({"x": np.arange(6, dtype=np.int16).reshape(2, 3)}, tmp_path / "n.safetensors")
    assert torch.equal(tlio.torch.load_file(tmp_path / "n.safetensors")["x"],
                       torch.arange(6, dtype=torch.int16).reshape(2, 3))


def test_saved_bytes_are_canonical_and_equal_numpys(tmp_path):
    tensors = {"b": torch.arange(6, dtype=torch.float32).reshape(2, 3), "a": torch.ones(3, dtype=torch.int64)}
    assert tlio.torch.save(tensors) == tlio.numpy.save({k: v.numpy() for k, v in tensors.items()})
    tlio.torch.save_file(tensors, tmp_path / "c.safetensors")
    assert (tmp_path / "c.safetensors").read_bytes() == tlio.torch.save(tensors)
    with tlio.safe_open(tmp_path / "c.safetensors", "pt") as f:
        assert f.offset_keys() == ["a", "b"]  # the canonical order, whatever the dict's


def mapping_of(address):
    """(start, end, path) of the mapping of this process that holds `address`."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split(maxsplit=5)
            start, end = (int(x, 16) for x in fields[0].split("-"))
            if start <= address < end:
                return start, end, fields[5].strip() if len(fields) > 5 else ""
    return None


def test_tensors_are_zero_copy_writable_and_leave_the_file_alone(tmp_path):
    path = tmp_path / "z.safetensors"
    tlio.torch.save_file({"w": torch.arange(1000, dtype=torch.float32), "v": torch.ones(8)}, path)
    before = path.read_bytes()
    with tlio.safe_open(path, "pt") as f:
        a = f.get_tensor("w")
        b = f.get_tensor("w")
        v = f.get_tensor("v")
    # Views of one private mapping of the file at the header's offsets, not copies.
    assert a.data_ptr() == b.data_ptr()
    start, end, mapped = mapping_of(a.data_ptr())
    assert mapped == str(path) and mapping_of(v.data_ptr())[2] == str(path)
    header = 8 + int.from_bytes(before[:8], "little")
    assert a.data_ptr() - start == header + 32 and v.data_ptr() - start == header  # v sorts first
    a += 1  # writable, after the file was closed
    assert a[0].item() == 1 and b[0].item() == 1
    assert path.read_bytes() == before
    assert tlio.torch.load_file(path)["w"][0].item() == 0
    loaded = tlio.torch.load_file(path)
    loaded["v"].mul_(3)
    assert path.read_bytes() == before
    # pread gives copies of its own.
    copies = tlio.torch.load_file(path, backend="pread")
    assert mapping_of(copies["w"].data_ptr())[2] != str(path)
    copies = tlio.torch.load_file(path, backend="direct")
    assert mapping_of(copies["w"].data_ptr())[2] != str(path)
    copies["w"] += 1  # its own memory
    assert path.read_bytes() == before


def test_load_file_maps_without_reading(tmp_path):
    # A 1 GiB tensor in a sparse file: loading must not bring its bytes into memory.
    path = tmp_path / "big.safetensors"
    gib = 1 << 30
    header = ('{"big":{"dtype":"F32","shape":[%d],"data_offsets":[0,%d]}}' % (gib // 4, gib)).encode()
    header += b" " * (-len(header) % 8)
    with open(path, "wb") as out:
        out.write(len(header).to_bytes(8, "little") + header)
        out.truncate(8 + len(header) + gib)

    def rss():
        with open("/proc/self/statm") as s:
            return int(s.read().split()[1]) * resource.getpagesize()

    start = rss()
    loaded = tlio.torch.load_file(path)
    t = loaded["big"]
    grown = rss() - start
    assert t.shape == (gib // 4,) and t.data_ptr() != 0
    assert grown < 32 << 20, f"resident memory grew by {grown} bytes"
    assert t[12345678].item() == 0.0 and t[-1].item() == 0.0  # reads touch a page each
    assert rss() - start < 32 << 20


def test_get_slice_indexes_as_torch_does(tmp_path):
    x = torch.arange(2 * 5 * 6, dtype=torch.float32).reshape(2, 5, 6)
    tlio.torch.save_file({"x": x, "s": torch.tensor(7)}, tmp_path / "s.safetensors")
    with tlio.safe_open(tmp_path / "s.safetensors", "pt") as f:
        sl = f.get_slice("x")
        assert sl.get_shape() == [2, 5, 6] and sl.get_dtype() == "F32" and len(sl) == 2
        for index in [0, -1, slice(None), slice(1, None), (slice(None), slice(1, 4)),
                      (Ellipsis, slice(0, 6, 2)), (1, slice(-3, None), -2), (slice(None), None, 2),
                      (Ellipsis, -1), (slice(0, 2), slice(None, None, 3), slice(1, 5, 2))]:
            got = sl[index]
            assert torch.equal(got, x[index]), index
            # A view of the mapping with the strides torch gives x[index]: nothing copied.
            whole = f.get_tensor("x")
            assert got.stride() == x[index].stride(), index
            assert whole.storage().data_ptr() == got.storage().data_ptr(), index
    with tlio.safe_open(tmp_path / "s.safetensors", "pt", backend="pread") as f:
        for index in [(slice(None), slice(1, 4)), (Ellipsis, slice(0, 6, 2)), (1, slice(-3, None), -2)]:
            assert torch.equal(f.get_slice("x")[index], x[index]), index
    with tlio.safe_open(tmp_path / "s.safetensors", "pt") as f:
        sl = f.get_slice("x")
        with pytest.raises(tlio.SafetensorError,
                           match="index 2 is out of range for dimension 0 of size 2") as e:
            sl[2]
        assert e.value.tensor == "x" and e.value.rule == "slice"
        with pytest.raises(tlio.SafetensorError, match="index -7 .* dimension 2 of size 6"):
            sl[..., -7]
        with pytest.raises(tlio.SafetensorError, match="index 5 .* dimension 1 of size 5"):
            sl[:, None, 5]
        with pytest.raises(tlio.SafetensorError, match="4 indices for 3 dimensions"):
            sl[0, 0, 0, 0]
        assert f.get_slice("s")[...].item() == 7
        with pytest.raises(KeyError):
            f.get_slice("nope")


def test_shared_storage_and_non_contiguous_are_refused(tmp_path):
    base = torch.zeros(4, 4)
    with pytest.raises(RuntimeError, match="save_model"):
        tlio.torch.save_file({"a": base, "b": base}, tmp_path / "x.safetensors")
    with pytest.raises(RuntimeError, match="share memory"):
        tlio.torch.save({"a": base, "b": base[1]})
    # Disjoint parts of one storage do not overlap: allowed, as in the package.
    tlio.torch.save_file({"a": base[:2], "b": base[2:]}, tmp_path / "x.safetensors")
    with pytest.raises(ValueError, match="contiguous"):
        tlio.torch.save_file({"t": torch.zeros(3, 4).t()}, tmp_path / "y.safetensors")
    with pytest.raises(ValueError, match="sparse"):
        tlio.torch.save({"s": torch.eye(3).to_sparse()})
    with pytest.raises(ValueError, match="torch.Tensor"):
        tlio.torch.save({"s": [1, 2]})
    with pytest.raises(TypeError, match="metadata value"):
        tlio.torch.save({"a": base}, metadata={"n": 1})
    assert not (tmp_path / "y.safetensors").exists()
    assert not [p for p in tmp_path.iterdir() if "tlio-tmp" in p.name]


class Tied(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(10, 4)
        self.hidden = torch.nn.Linear(4, 4)
        self.head = torch.nn.Linear(4, 10, bias=False)
        self.head.weight = self.embed.weight  # tied


class Untied(Tied):
    def __init__(self):
        super().__init__()
        self.head.weight = torch.nn.Parameter(torch.zeros(10, 4))


def test_tied_weights_through_save_model_and_load_model(tmp_path):
    torch.manual_seed(0)
    model = Tied()
    model.hidden.weight.data = model.hidden.weight.data.t().contiguous().t()  # non-contiguous
    path = tmp_path / "m.safetensors"
    with pytest.raises(RuntimeError, match="save_model"):
        tlio.torch.save_file(model.state_dict(), path)
    tlio.torch.save_model(model, path, metadata={"format": "pt"})
    with tlio.safe_open(path, "pt") as f:
        # embed.weight < head.weight: the first name covering the storage is kept.
        assert "head.weight" not in f.keys() and "embed.weight" in f.keys()
        assert f.metadata() == {"format": "pt", "head.weight": "embed.weight"}
    with pytest.raises(ValueError, match="force_contiguous"):
        tlio.torch.save_model(model, tmp_path / "nc.safetensors", force_contiguous=False)

    fresh = Tied()
    assert tlio.torch.load_model(fresh, path) == ([], [])
    assert fresh.head.weight.data_ptr() == fresh.embed.weight.data_ptr()
    for (k, v), (_, w) in zip(model.state_dict().items(), fresh.state_dict().items()):
        assert torch.equal(v, w), k
    # A model that does not tie them gets the kept tensor under both names.
    untied = Untied()
    assert tlio.torch.load_model(untied, path) == ([], [])
    assert torch.equal(untied.head.weight, model.embed.weight)
    assert untied.head.weight.data_ptr() != untied.embed.weight.data_ptr()


def test_load_model_strict_reports_missing_and_unexpected(tmp_path):
    model = torch.nn.Linear(3, 2)
    path = tmp_path / "l.safetensors"
    tlio.torch.save_file({"weight": torch.ones(2, 3), "extra": torch.zeros(1)}, path)
    with pytest.raises(RuntimeError) as e:
        tlio.torch.load_model(model, path)
    assert 'Missing key(s) in state_dict: "bias"' in str(e.value)
    assert 'Unexpected key(s) in state_dict: "extra"' in str(e.value)
    missing, unexpected = tlio.torch.load_model(model, path, strict=False)
    assert missing == ["bias"] and unexpected == ["extra"]
    assert torch.equal(model.weight, torch.ones(2, 3))


def test_storage_ptr_and_size():
    t = torch.arange(10, dtype=torch.int32)
    assert tlio.torch.storage_ptr(t[3:]) == tlio.torch.storage_ptr(t) == t.data_ptr()
    assert tlio.torch.storage_size(t[3:]) == 40


def test_errors_by_kind(tmp_path):
    with pytest.raises(FileNotFoundError):
        tlio.torch.load_file(tmp_path / "nope.safetensors")
    with pytest.raises(tlio.SafetensorError) as e:
        tlio.torch.load_file(DATA / "bad" / "offsets_gap.safetensors")
    assert e.value.rule == "5" and isinstance(e.value, ValueError)
    with pytest.raises(tlio.SafetensorError):
        tlio.torch.load(b"\x01\x02")
    with tlio.safe_open(DATA / "hf" / "worked_example.safetensors", "pt") as f:
        with pytest.raises(KeyError):
            f.get_tensor("nope")
        with pytest.raises(ValueError, match="numpy"):
            f.get_tensor("w", copy=True)
    with pytest.raises(ValueError, match="backend"):
        tlio.safe_open(DATA / "hf" / "worked_example.safetensors", "pt", backend="private")


def test_get_dequantized_returns_torch_tensors():
    path = next(p for p in sorted((DATA / "bnb").glob("nf4*.safetensors")) if "expected" not in p.name)
    with tlio.safe_open(path, "pt") as t, tlio.safe_open(path, "np") as n:
        for q in n.quantized():
            for dtype in (None, "F32", "BF16"):
                got = t.get_dequantized(q["name"], dtype)
                want = n.get_dequantized(q["name"], dtype)
                assert isinstance(got, torch.Tensor)
                if dtype == "BF16":
                    assert got.dtype == torch.bfloat16
                assert as_bits(got).tobytes() == want.tobytes()


def test_concurrent_reads_from_threads(tmp_path):
    tensors = {f"t{i}": torch.full((256, 64), float(i)) for i in range(32)}
    path = tmp_path / "c.safetensors"
    tlio.torch.save_file(tensors, path)
    with tlio.safe_open(path, "pt") as f:
        def read(i):
            return [f.get_tensor(f"t{(i + j) % 32}").sum().item() for j in range(32)]

        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            results = list(pool.map(read, range(64)))
    for i, sums in enumerate(results):
        assert sums == [256 * 64 * float((i + j) % 32) for j in range(32)]

    def load(_):
        return tlio.torch.load_file(path, backend="pread")["t5"].sum().item()

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        assert set(pool.map(load, range(16))) == {256 * 64 * 5.0}


class Mixed(torch.nn.Module):
    """Parameters and buffers of several dtypes; every module loads as nn.Module does."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 6)
        self.norm = torch.nn.LayerNorm(6)
        self.low = torch.nn.Linear(6, 4).half()
        self.register_buffer("flags", torch.zeros(5, dtype=torch.bool))
        self.register_buffer("steps", torch.zeros((), dtype=torch.int64))


class WithBatchNorm(Mixed):
    """BatchNorm overrides _load_from_state_dict: such models load through load_state_dict."""

    def __init__(self):
        super().__init__()
        self.batch = torch.nn.BatchNorm1d(6)


def randomized(model, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for t in model.state_dict().values():
            if t.dtype == torch.bool:
                t.copy_(torch.rand(t.shape, generator=g) > 0.5)
            elif t.dtype.is_floating_point:
                t.copy_(torch.randn(t.shape, generator=g))
            else:
                t.fill_(int(torch.randint(0, 1000, (), generator=g)))
    return model


def assert_same_state(a, b):
    sa, sb = a.state_dict(), b.state_dict()
    assert sa.keys() == sb.keys()
    for k in sa:
        assert sa[k].dtype == sb[k].dtype and torch.equal(sa[k], sb[k]), k


@pytest.mark.parametrize("backend", ["mmap", "pread"])
def test_load_model_fills_parameters_as_load_state_dict_does(tmp_path, backend, monkeypatch):
    path = tmp_path / "mixed.safetensors"
    source = randomized(Mixed(), 1)
    tlio.torch.save_model(source, path)
    # The direct path (plain modules) and load_state_dict give the same model.
    direct = randomized(Mixed(), 2)
    through_torch = []
    original = torch.nn.Module.load_state_dict
    monkeypatch.setattr(torch.nn.Module, "load_state_dict",
                        lambda self, sd, strict=True: through_torch.extend(sd) or original(self, sd, strict))
    assert tlio.torch.load_model(direct, path, backend=backend) == ([], [])
    assert through_torch == []  # every tensor came straight from the file
    monkeypatch.undo()
    assert_same_state(direct, source)
    reference = randomized(Mixed(), 3)
    reference.load_state_dict(tlio.torch.load_file(path))
    assert_same_state(direct, reference)


def test_load_model_keeps_what_load_state_dict_does_for_the_rest(tmp_path):
    path = tmp_path / "mixed.safetensors"
    source = randomized(Mixed(), 1)
    tlio.torch.save_model(source, path)
    # A module that loads its own way: through load_state_dict.
    bn_source = randomized(WithBatchNorm(), 7)
    tlio.torch.save_model(bn_source, tmp_path / "bn.safetensors")
    bn = randomized(WithBatchNorm(), 8)
    assert tlio.torch.load_model(bn, tmp_path / "bn.safetensors") == ([], [])
    assert_same_state(bn, bn_source)
    # A load hook: the model loads through load_state_dict, and the hook sees every tensor.
    hooked = randomized(Mixed(), 4)
    seen = []
    hooked.lin._register_load_state_dict_pre_hook(
        lambda state_dict, prefix, *args: seen.extend(k for k in state_dict if k.startswith(prefix)))
    tlio.torch.load_model(hooked, path)
    assert sorted(seen) == ["lin.bias", "lin.weight"]
    assert_same_state(hooked, source)
    # Another dtype in the model: converted by load_state_dict's copy.
    wider = randomized(Mixed(), 5)
    wider.low.float()
    tlio.torch.load_model(wider, path)
    assert wider.low.weight.dtype == torch.float32
    assert torch.equal(wider.low.weight, source.low.weight.float())
    # A non-contiguous parameter is filled too.
    strided = randomized(Mixed(), 6)
    strided.lin.weight.data = strided.lin.weight.data.t().contiguous().t()
    tlio.torch.load_model(strided, path)
    assert torch.equal(strided.lin.weight, source.lin.weight)
    # Another shape: load_state_dict's error.
    other = Mixed()
    other.lin = torch.nn.Linear(8, 7)
    with pytest.raises(RuntimeError, match="size mismatch for lin.weight"):
        tlio.torch.load_model(other, path)
