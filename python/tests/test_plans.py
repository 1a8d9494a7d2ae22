"""tlio.numpy.load_sharded and tlio.torch.load_sharded: plans as mappings and callables, slices
of plain and quantized tensors equal to slices of the whole, files, folders and URLs, errors."""
import json
import os
import pathlib
import subprocess
import time

import numpy as np
import pytest

import tlio
import tlio.numpy
from http_servers import nginx

torch = pytest.importorskip("torch")
import tlio.torch  # noqa: E402

CLI = os.environ.get("TLIO_CLI", str(pathlib.Path(__file__).parents[2] / "build" / "tlio"))


def cli(*args):
    return subprocess.run([CLI, *map(str, args)], capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("plans")
    rng = np.random.default_rng(7)
    tensors = {
        "w": rng.standard_normal((96, 80), dtype=np.float32),
        "v": rng.standard_normal((3, 5, 7), dtype=np.float32),
        "i": np.arange(40, dtype=np.int64).reshape(8, 5),
        "scalar": np.array(2.5, dtype=np.float32),
    }
    tlio.numpy.save_file(tensors, root / "plain.safetensors")
    tlio.torch.save_file({"h": torch.randn(16, 24).to(torch.bfloat16),
                          "q": torch.randn(64, 256)}, root / "bf16.safetensors")
    tlio.quantize_file(root / "bf16.safetensors", root / "int4.safetensors", "int4-g64-sym",
                       include=r"^q$")
    tlio.quantize_file(root / "bf16.safetensors", root / "nf4.safetensors", "nf4", include=r"^q$")
    return root, tensors


CASES = [
    ("w", ...),
    ("w", (slice(10, 20),)),
    ("w", (slice(None), slice(5, 70))),
    ("w", (-1,)),
    ("w", (slice(-5, None), slice(-3, -1))),
    ("w", slice(3, 4)),
    ("v", (1, slice(1, 4), 6)),
    ("i", (slice(2, 2),)),
    ("scalar", ...),
]


@pytest.mark.parametrize("name,spec", CASES)
def test_numpy_slices_equal_numpy_indexing(files, name, spec):
    root, tensors = files
    got = tlio.numpy.load_sharded(root / "plain.safetensors", {name: spec})
    want = tensors[name] if spec is Ellipsis else tensors[name][spec]
    assert list(got) == [name]
    assert got[name].flags.c_contiguous and got[name].dtype == want.dtype
    np.testing.assert_array_equal(got[name], want)


def test_torch_plan_callable_and_bf16(files):
    root, _ = files
    seen = []

    def plan(name, shape, dtype):
        seen.append((name, shape, dtype))
        return (slice(None), slice(4, 12)) if name == "h" else None

    got = tlio.torch.load_sharded(root / "bf16.safetensors", plan)
    assert sorted(n for n, _, _ in seen) == ["h", "q"]
    assert ("h", (16, 24), "BF16") in seen
    whole = tlio.torch.load_file(root / "bf16.safetensors")
    assert list(got) == ["h"] and got["h"].dtype == torch.bfloat16
    assert torch.equal(got["h"], whole["h"][:, 4:12])


@pytest.mark.parametrize("scheme", ["int4", "nf4"])
@pytest.mark.parametrize("spec", [(slice(8, 24),), (slice(None), slice(64, 192)), (5, slice(1, 255))])
def test_quantized_slices_equal_slices_of_the_dequantized_whole(files, scheme, spec):
    root, _ = files
    path = root / f"{scheme}.safetensors"
    with tlio.safe_open(path, "pt") as f:
        whole = f.get_dequantized("q", dtype="float32")
    got = tlio.torch.load_sharded(path, {"q": spec}, dtype="F32")
    assert torch.equal(got["q"], whole[spec].contiguous())
    half = tlio.numpy.load_sharded(path, {"q": spec}, dtype="F16")
    assert half["q"].dtype == np.float16


def test_keep_packed_lists_stored_tensors(files):
    root, _ = files
    path = root / "int4.safetensors"
    got = tlio.torch.load_sharded(path, {"q.qweight": (slice(0, 2),)}, keep_packed=True)
    assert torch.equal(got["q.qweight"], tlio.torch.load_file(path)["q.qweight"][:2])
    with pytest.raises(KeyError, match="q.qweight"):
        tlio.torch.load_sharded(path, {"q.qweight": ...})


def test_whole_file_and_folder(files, tmp_path):
    root, tensors = files
    got = tlio.numpy.load_sharded(root / "plain.safetensors", None)
    assert sorted(got) == sorted(tensors)
    tlio.numpy.save_file({"a": tensors["w"]}, tmp_path / "model-00001-of-00002.safetensors")
    tlio.numpy.save_file({"b": tensors["v"]}, tmp_path / "model-00002-of-00002.safetensors")
    (tmp_path / "model.safetensors.index.json").write_text(
        '{"metadata": {}, "weight_map": {"a": "model-00001-of-00002.safetensors", '
        '"b": "model-00002-of-00002.safetensors"}}')
    got = tlio.numpy.load_sharded(tmp_path, {"a": (slice(1, 3),), "b": (2,)})
    np.testing.assert_array_equal(got["a"], tensors["w"][1:3])
    np.testing.assert_array_equal(got["b"], tensors["v"][2])
    # Past the page cache: the same values, through numpy and torch.
    got = tlio.numpy.load_sharded(tmp_path, {"a": (slice(1, 3),), "b": ...}, backend="direct")
    np.testing.assert_array_equal(got["a"], tensors["w"][1:3])
    np.testing.assert_array_equal(got["b"], tensors["v"])
    got = tlio.torch.load_sharded(root / "plain.safetensors", None, backend="direct")
    assert sorted(got) == sorted(tensors)
    np.testing.assert_array_equal(got["w"].numpy(), tensors["w"])


def _direct_descriptors():
    """Descriptors of this process open with O_DIRECT."""
    n = 0
    for fd in os.listdir("/proc/self/fdinfo"):
        try:
            with open(f"/proc/self/fdinfo/{fd}") as f:
                flags = int(f.read().split("flags:")[1].split()[0], 8)
        except (OSError, IndexError):
            continue
        n += bool(flags & os.O_DIRECT)
    return n


def test_a_direct_plan_reads_past_the_page_cache(files):
    root, _ = files
    path = root / "plain.safetensors"
    try:
        os.close(os.open(path, os.O_RDONLY | os.O_DIRECT))
    except OSError:
        pytest.skip("O_DIRECT is refused here")
    before = _direct_descriptors()
    plain = tlio._plan.Planned(path, None)
    assert _direct_descriptors() == before
    direct = tlio._plan.Planned(path, None, backend="direct")
    assert _direct_descriptors() == before + 1
    del plain, direct


def _raw_file(path, entries):
    """A safetensors file of (name, dtype, array bytes) in this order, no alignment: offsets as
    other writers may leave them."""
    header, pos = {}, 0
    for name, dtype, array in entries:
        header[name] = {"dtype": dtype, "shape": list(array.shape), "data_offsets": [pos, pos + array.nbytes]}
        pos += array.nbytes
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(len(text).to_bytes(8, "little") + text + b"".join(a.tobytes() for _, _, a in entries))


def test_direct_plans_lay_slices_out_as_the_file_does(tmp_path):
    """An item stored as one range of its file says where; a direct plan puts those of 64 KiB or
    more at addresses congruent to it modulo a page (where O_DIRECT reads land without a copy),
    adjacent ones adjacent, and the rest (small, scattered, at an offset its element size does
    not divide) in buffers of their own, all with the values pread gives."""
    a = np.arange(256 * 128, dtype=np.float32).reshape(256, 128)
    c = -np.arange(256 * 128, dtype=np.float32).reshape(256, 128)
    odd = np.full((64, 256), 3.0, dtype=np.float32)
    path = tmp_path / "raw.safetensors"
    _raw_file(path, [("a", "F32", a), ("c", "F32", c), ("b", "U8", np.array([7], np.uint8)),
                     ("odd", "F32", odd)])
    plan = {"a": ..., "c": ..., "b": ..., "odd": ...}
    data = path.read_bytes()
    cut = tlio._plan.Planned(path, dict(plan, a=(slice(None), slice(0, 64)), c=(slice(64, 256),)))
    stored = {name: st for name, _, _, _, _, st in cut.items}
    assert stored["a"] is None  # a column slice: 256 ranges
    offset = stored["c"][1]
    assert data[offset:offset + c[64:].nbytes] == c[64:].tobytes()
    stored = {name: st for name, _, _, _, _, st in tlio._plan.Planned(path, plan).items}
    for name, want in (("a", a), ("c", c), ("odd", odd)):
        file, offset = stored[name]
        assert file == 0 and data[offset:offset + want.nbytes] == want.tobytes()
    assert stored["odd"][1] % 4 == 1
    pread = tlio.numpy.load_sharded(path, plan)
    for load, address in ((tlio.numpy.load_sharded, lambda x: x.ctypes.data),
                          (tlio.torch.load_sharded, lambda x: x.data_ptr())):
        got = load(path, plan, backend="direct")
        for name in plan:
            np.testing.assert_array_equal(np.asarray(got[name]), pread[name])
        assert address(got["a"]) % 4096 == stored["a"][1] % 4096
        assert address(got["c"]) % 4096 == stored["c"][1] % 4096
        assert address(got["c"]) - address(got["a"]) == stored["c"][1] - stored["a"][1]
    # torch tensors over the block have storages of their own bytes only (torch.save of one
    # writes that tensor, not the block).
    assert tlio.torch.storage_size(got["c"]) == c.nbytes


def test_from_a_url_reads_only_the_rows(tmp_path):
    w = np.arange(2048 * 256, dtype=np.float32).reshape(2048, 256)  # 2 MiB, past the first request
    tlio.numpy.save_file({"w": w, "b": np.ones(8, np.float32)}, tmp_path / "big.safetensors")
    with nginx(tmp_path) as server:
        got = tlio.numpy.load_sharded(f"{server.url}/big.safetensors", {"w": (slice(1000, 1010),)})
        np.testing.assert_array_equal(got["w"], w[1000:1010])
        time.sleep(0.2)  # nginx logs a request after answering it
        sent = [int(line.split()[1]) for line in server.log.read_text().splitlines()]
    # The header's first request (128 KiB), then the ten rows' 10240 bytes in one range.
    assert sent[1:] == [10 * 256 * 4], sent


def test_cli_slice_from_a_url_reads_only_the_rows(tmp_path):
    w = np.arange(2048 * 256, dtype=np.float32).reshape(2048, 256)
    # z lies after w, more than max_gap (1 MiB for URLs) past the rows: a range of its own.
    tlio.numpy.save_file({"w": w, "z": np.ones(8, np.float32)}, tmp_path / "big.safetensors")
    with nginx(tmp_path) as server:
        url = f"{server.url}/big.safetensors"
        dry = cli("slice", url, "w[1000:1010]", "--dry-run", "--json")
        assert dry.returncode == 0, dry.stderr
        plan = json.loads(dry.stdout)
        assert plan["bytes_read"] == plan["bytes_wanted"] == 10 * 256 * 4
        server.log.write_text("")  # nginx appends: what the dry run fetched is left out below
        out = tmp_path / "rows.safetensors"
        r = cli("slice", url, "w[1000:1010]", "z[-1]", "-o", out)
        assert r.returncode == 0, r.stderr
        time.sleep(0.2)  # nginx logs a request after answering it
        sent = [int(line.split()[1]) for line in server.log.read_text().splitlines()]
    got = tlio.numpy.load_file(out)
    np.testing.assert_array_equal(got["w"], w[1000:1010])
    np.testing.assert_array_equal(got["z"], np.ones(1, np.float32)[0])
    # The header's first request (128 KiB), then the rows and the last of z: two ranges.
    assert sorted(sent[1:]) == [4, 10 * 256 * 4], sent


@pytest.mark.parametrize("scheme_file", ["int4", "nf4"])
def test_cli_slice_equals_load_sharded_in_any_batch_size(files, tmp_path, scheme_file):
    root, _ = files
    src = root / f"{scheme_file}.safetensors"
    want = tlio.torch.load_sharded(src, {"q": (slice(5, 60), slice(64, 200)), "h": (slice(3, 9),)})
    for memory in ["1KiB", "3000", "1MiB"]:
        out = tmp_path / f"{memory}.safetensors"
        r = cli("slice", src, "q[5:60, 64:200]", "h[3:9]", "--max-memory", memory, "-o", out)
        assert r.returncode == 0, r.stderr
        got = tlio.torch.load_file(out)
        assert torch.equal(got["q"], want["q"]) and torch.equal(got["h"], want["h"])


def test_errors(files):
    root, _ = files
    path = root / "plain.safetensors"
    with pytest.raises(KeyError, match="nope"):
        tlio.numpy.load_sharded(path, {"nope": ...})
    with pytest.raises(ValueError, match="step 1"):
        tlio.numpy.load_sharded(path, {"w": (slice(0, 10, 2),)})
    with pytest.raises(ValueError, match="out of range"):
        tlio.numpy.load_sharded(path, {"w": (-97,)})
    with pytest.raises(ValueError):
        tlio.numpy.load_sharded(path, {"w": (slice(0, 5), slice(0, 5), 1)})
    with pytest.raises(ValueError):
        tlio.numpy.load_sharded(path, {"w": (200,)})
    with pytest.raises(TypeError):
        tlio.numpy.load_sharded(path, {"w": ("a",)})
    with pytest.raises(TypeError):
        tlio.numpy.load_sharded(path, 42)
    with pytest.raises(ValueError, match="F32, F16 or BF16"):
        tlio.numpy.load_sharded(root / "int4.safetensors", {"q": ...}, dtype="I8")
    with pytest.raises(FileNotFoundError):
        tlio.numpy.load_sharded(root / "absent.safetensors", None)
    with pytest.raises(ValueError, match="'pread' or 'direct', not 'mmap'"):
        tlio.numpy.load_sharded(path, None, backend="mmap")
