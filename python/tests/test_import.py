"""PyTorch checkpoints imported without running their pickle: checkpoints made by Debian's
python3-torch compared with torch.load, and a hostile corpus made here (code-running globals,
lying storages, views past their storage, broken pickles and zips)."""
import json
import os
import pathlib
import pickle
import shutil
import struct
import subprocess
import zipfile
from collections import OrderedDict

import numpy as np
import pytest
import torch

import tlio
import tlio.torch

CLI = os.environ.get("TLIO_CLI", str(pathlib.Path(__file__).parents[2] / "build" / "tlio"))


def flatten(obj, prefix=""):
    """{name: tensor} as the import names them: dict keys and list indices joined with '.'."""
    out = {}
    if isinstance(obj, torch.Tensor):
        out[prefix] = obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            out.update(flatten(v, f"{prefix}.{k}" if prefix else str(k)))
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            out.update(flatten(v, f"{prefix}.{i}" if prefix else str(i)))
    return out


def imported(tmp_path, src, **kw):
    dst = tmp_path / (pathlib.Path(src).stem + ".safetensors")
    report = tlio.import_checkpoint(src, dst, **kw)
    return tlio.torch.load_file(dst), report, dst


def assert_matches_torch_load(tmp_path, obj, **save_kw):
    src = tmp_path / "ckpt.pt"
    torch.save(obj, src, **save_kw)
    expected = torch.load(src, weights_only=False)  # the test's own files (torch >= 2.6: True)
    if isinstance(expected, dict) and isinstance(expected.get("state_dict"), dict):
        expected = expected["state_dict"]
    expected = flatten(expected)
    got, report, dst = imported(tmp_path, src)
    metadata = tlio.safe_open(dst, "pt").metadata()
    assert metadata["format"] == "pt"
    for name, t in expected.items():
        kept = metadata.get(name, name) if name not in got else name
        assert kept in got, name
        assert got[kept].dtype == t.dtype and torch.equal(got[kept], t.contiguous()), name
    assert len(got) + sum(1 for k in metadata if k != "format") == len(expected)
    return got, report, metadata


EVERY_DTYPE = {
    "f64": torch.randn(3, 4, dtype=torch.float64),
    "f32": torch.randn(5),
    "f16": torch.randn(2, 2).half(),
    "bf16": torch.randn(7).bfloat16(),
    "i64": torch.tensor([-(2**62), 1]),
    "i32": torch.arange(-4, 4, dtype=torch.int32),
    "i16": torch.tensor([-300, 300], dtype=torch.int16),
    "i8": torch.tensor([-128, 127], dtype=torch.int8),
    "u8": torch.arange(256, dtype=torch.uint8),
    "bool": torch.tensor([True, False]),
    "c64": torch.tensor([1 + 2j], dtype=torch.complex64),
    "scalar": torch.tensor(3.5),
    "empty": torch.zeros(0, 3),
}


@pytest.mark.parametrize("new_zip", [True, False], ids=["zip", "legacy"])
def test_every_dtype(tmp_path, new_zip):
    assert_matches_torch_load(tmp_path, EVERY_DTYPE, _use_new_zipfile_serialization=new_zip)


@pytest.mark.parametrize("protocol", [2, 4])
def test_views_aliases_and_nesting(tmp_path, protocol):
    base = torch.arange(48, dtype=torch.float32).reshape(6, 8)
    obj = {
        "epoch": 3, "name": "run", "lr": 0.1,
        "model": OrderedDict([
            ("w", base), ("same", base),                 # one tensor object twice
            ("tied", base.view(6, 8)),                   # an exact alias (another view object)
            ("t", base.t()), ("rows", base[2:4]),        # transposed, partial (offset)
            ("cols", base[:, 1:5:2]), ("expanded", torch.ones(1, 4).expand(3, 4)),
            ("param", torch.nn.Parameter(torch.randn(2, 2))),
        ]),
        "layers": [torch.ones(2), (torch.zeros(3), {"deep": torch.full((2,), 7.0)})],
    }
    got, report, metadata = assert_matches_torch_load(tmp_path, obj, pickle_protocol=protocol)
    # Exact aliases: the alphabetically first name is written, the others recorded.
    assert metadata["model.w"] == "model.same" and metadata["model.tied"] == "model.same"
    assert "layers.1.1.deep" in got and "layers.0" in got
    assert report["dropped_values"] == 3  # epoch, name, lr
    contiguous = {t["name"]: t["contiguous"] for t in report["tensors"]}
    assert not contiguous["model.t"] and not contiguous["model.cols"] and contiguous["model.rows"]


def test_state_dict_of_a_training_checkpoint(tmp_path):
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.LayerNorm(3))
    opt = torch.optim.Adam(model.parameters())
    model(torch.randn(2, 4)).sum().backward()
    opt.step()
    src = tmp_path / "train.ckpt"
    torch.save({"state_dict": model.state_dict(), "optimizer": opt.state_dict(), "step": 1}, src)
    got, _, _ = imported(tmp_path, src)
    assert sorted(got) == sorted(model.state_dict())
    # --key picks another sub-object.
    opt_state, _, _ = imported(tmp_path, src, key="optimizer.state")
    assert torch.equal(opt_state["0.exp_avg"], opt.state_dict()["state"][0]["exp_avg"])
    with pytest.raises(KeyError):
        tlio.import_checkpoint(src, tmp_path / "x.safetensors", key="optimizer.nope")


def as_big_endian(src, dst):
    """`src` (storages of 4-byte floats, complex64 included) as a big-endian machine writes it:
    byteorder "big", every float swapped."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as zout:
        prefix = zin.namelist()[0].split("/")[0]
        for info in zin.infolist():
            if info.filename == f"{prefix}/byteorder":  # torch >= 2.0 writes "little"
                continue
            data = zin.read(info)
            if "/data/" in info.filename:
                data = np.frombuffer(data, dtype="<f4").byteswap().tobytes()
            zout.writestr(info.filename, data)
        zout.writestr(f"{prefix}/byteorder", "big")
    return dst


def test_module_state_dict_and_big_endian(tmp_path):
    model = torch.nn.Sequential(torch.nn.Embedding(10, 4), torch.nn.Linear(4, 4))
    src = tmp_path / "pytorch_model.bin"
    torch.save(model.state_dict(), src)
    got, _, _ = imported(tmp_path, src)
    for k, v in model.state_dict().items():
        assert torch.equal(got[k], v)
    # The same checkpoint as a big-endian machine writes it: byteorder "big", storages swapped.
    big = as_big_endian(src, tmp_path / "big.pt")
    got_big, _, _ = imported(tmp_path, big)
    for k, v in model.state_dict().items():
        assert torch.equal(got_big[k], v), k


def test_big_endian_complex64_swaps_each_part(tmp_path):
    # torch.load swaps the real and the imaginary float of a complex64 each on its own.
    c = torch.tensor([1 + 2j, -3.5 + 0.25j, 1e-3 - 7j], dtype=torch.complex64)
    src = tmp_path / "c.pt"
    torch.save({"c": c, "f": torch.tensor([1.5, -2.0])}, src)
    big = as_big_endian(src, tmp_path / "cbig.pt")  # each float of the complex values swapped
    # (Debian 12's torch 1.13 reads this complex64 unswapped; newer torch.load swaps each part,
    # as a big-endian writer means it and as tlio does.)
    got, _, _ = imported(tmp_path, big)
    assert torch.equal(got["c"], c) and torch.equal(got["f"], torch.tensor([1.5, -2.0]))


@pytest.mark.parametrize("to", ["bf16", "F16"])
@pytest.mark.parametrize("byteorder", ["little", "big"])
def test_dtype_writes_floating_tensors_as_torch_converts_them(tmp_path, to, byteorder):
    """import --dtype: each floating tensor as torch's .to() rounds it (a strided view and a
    big-endian checkpoint converted as they are gathered), integers and booleans as saved."""
    g = torch.Generator().manual_seed(7)
    obj = {"f32": torch.randn(64, 33, generator=g) * 1e3, "view": torch.randn(8, 16, generator=g).t(),
           "f64": torch.randn(3, 4, dtype=torch.float64, generator=g), "f16": torch.randn(5, generator=g).half(),
           "bf16": torch.randn(7, generator=g).bfloat16(), "huge": torch.tensor([1e38, -7e4, 3e-41]),
           "i64": torch.tensor([-(2**62), 1]), "bool": torch.tensor([True, False])}
    if byteorder == "big":  # (as_big_endian swaps 4-byte floats)
        obj = {k: v for k, v in obj.items() if v.dtype == torch.float32}
    src = tmp_path / "ckpt.pt"
    torch.save(obj, src)
    if byteorder == "big":
        src = as_big_endian(src, tmp_path / "big.pt")
    got, report, dst = imported(tmp_path, src, dtype=to)
    want = torch.bfloat16 if to == "bf16" else torch.float16
    for name, t in obj.items():
        expected = t.contiguous().to(want) if t.is_floating_point() else t
        assert got[name].dtype == expected.dtype, name
        assert torch.equal(got[name], expected) or (  # NaN-free: equal means bit-equal here
            name == "huge" and torch.equal(got[name].float(), expected.float())), name
    converted = sum(t.is_floating_point() and t.dtype != want for t in obj.values())
    assert report["tensors_converted"] == converted
    assert report["bytes_written"] == sum(t.numel() * t.element_size() for t in got.values())
    cli = subprocess.run([CLI, "import", str(src), str(tmp_path / "cli.safetensors"), "--dtype", to],
                         capture_output=True, text=True)
    assert cli.returncode == 0, cli.stderr
    assert f"{converted} converted to {'BF16' if to == 'bf16' else 'F16'}" in cli.stdout
    assert (tmp_path / "cli.safetensors").read_bytes() == dst.read_bytes()


def test_dtype_must_be_a_floating_dtype(tmp_path):
    src = tmp_path / "c.pt"
    torch.save({"a": torch.ones(2)}, src)
    with pytest.raises(ValueError, match="not a floating dtype"):
        tlio.import_checkpoint(src, tmp_path / "o.safetensors", dtype="I32")
    with pytest.raises(ValueError, match="whole-byte dtypes"):
        tlio.import_checkpoint(src, tmp_path / "o.safetensors", dtype="F4")
    out = subprocess.run([CLI, "import", str(src), str(tmp_path / "o.safetensors"), "--dtype", "int8"],
                         capture_output=True, text=True)
    assert out.returncode == 2 and "not a floating dtype" in out.stderr and "tlio import --help" in out.stderr
    assert not (tmp_path / "o.safetensors").exists()


def test_deflated_entries_and_any_folder_name(tmp_path):
    src = tmp_path / "plain.pt"
    torch.save({"a": torch.arange(100.0), "b": torch.ones(3, dtype=torch.int64)}, src)
    deflated = tmp_path / "deflated.pt"
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(deflated, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            zout.writestr("renamed/" + info.filename.split("/", 1)[1], zin.read(info))
    got, _, _ = imported(tmp_path, deflated)
    assert torch.equal(got["a"], torch.arange(100.0)) and got["b"].tolist() == [1, 1, 1]


def test_cli_import_inspect_and_pointer(tmp_path):
    src = tmp_path / "m.pt"
    torch.save({"w": torch.ones(2, 3), "v": torch.zeros(4).t()}, src)
    out = subprocess.run([CLI, "inspect", str(src)], capture_output=True, text=True)
    assert out.returncode == 0 and "w" in out.stdout and "F32" in out.stdout and "[2, 3]" in out.stdout
    out = subprocess.run([CLI, "import", str(src), str(tmp_path / "m.safetensors")], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "2 tensors" in out.stdout
    out = subprocess.run([CLI, "validate", str(tmp_path / "m.safetensors")], capture_output=True, text=True)
    assert out.returncode == 0
    out = subprocess.run([CLI, "validate", str(src)], capture_output=True, text=True)
    assert out.returncode == 1 and "tlio import" in out.stderr + out.stdout


# ---- hostile corpus ---------------------------------------------------------------------------

def zip_checkpoint(path, pkl, storages=None, folder="archive"):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        z.writestr(f"{folder}/data.pkl", pkl)
        for key, data in (storages or {}).items():
            z.writestr(f"{folder}/data/{key}", data)
        z.writestr(f"{folder}/version", "3\n")
    return path


def storage_pid(key, numel, cls=b"FloatStorage"):
    """The pickle bytes of a persistent id ('storage', torch.<cls>, key, 'cpu', numel)."""
    return (b"(X\x07\x00\x00\x00storage" + b"ctorch\n" + cls + b"\n" +
            b"X" + struct.pack("<I", len(key)) + key.encode() + b"X\x03\x00\x00\x00cpu" +
            b"J" + struct.pack("<i", numel) + b"tQ")


def tensor_pickle(key, numel, offset, size, stride, cls=b"FloatStorage"):
    """{'t': _rebuild_tensor_v2(storage, offset, size, stride, False, OrderedDict())}."""
    def tup(values):
        return b"(" + b"".join(b"J" + struct.pack("<i", v) for v in values) + b"t"
    return (b"\x80\x02}X\x01\x00\x00\x00tctorch._utils\n_rebuild_tensor_v2\n(" + storage_pid(key, numel, cls) +
            b"J" + struct.pack("<i", offset) + tup(size) + tup(stride) +
            b"\x89ccollections\nOrderedDict\n)RtRs.")


def refused(tmp_path, src, match):
    dst = tmp_path / "out.safetensors"
    with pytest.raises(tlio.SafetensorError, match=match) as e:
        tlio.import_checkpoint(src, dst)
    assert not dst.exists() and not [p for p in tmp_path.iterdir() if "tlio-tmp" in p.name]
    out = subprocess.run([CLI, "import", str(src), str(dst)], capture_output=True, text=True)
    assert out.returncode == 1 and not dst.exists()
    return e.value


class Evil:
    def __init__(self, call, *args):
        self.call, self.args = call, args

    def __reduce__(self):
        return self.call, self.args


@pytest.mark.parametrize("callable_, label", [
    (os.system, "posix.system"), (eval, "builtins.eval"), (exec, "builtins.exec"),
    (subprocess.Popen, "subprocess.Popen"), (getattr, "builtins.getattr"),
    (__import__, "builtins.__import__"), (shutil.rmtree, "shutil.rmtree"), (open, "io.open"),
    (pickle.loads, "_pickle.loads"), (compile, "builtins.compile"),
])
def test_code_running_globals_are_refused(tmp_path, callable_, label):
    # Nested in a value, as an attacker would hide it.
    pkl = pickle.dumps({"w": [1, {"x": Evil(callable_, "echo pwned")}]}, protocol=2, fix_imports=False)
    e = refused(tmp_path, zip_checkpoint(tmp_path / "evil.pt", pkl), label)
    assert e.rule == "pickle" and label in str(e)
    # STACK_GLOBAL (protocol 4) too.
    pkl4 = pickle.dumps(Evil(callable_, "x"), protocol=4)
    refused(tmp_path, zip_checkpoint(tmp_path / "evil4.pt", pkl4), label)


@pytest.mark.parametrize("pkl, label", [
    (b"cos\nsystem\n(S'echo pwned'\ntR.", "os.system"),                               # GLOBAL
    (b"(S'echo pwned'\nios\nsystem\n.", "os.system"),                                 # INST
    (b"(cposix\nsystem\nS'x'\no.", "posix.system"),                                   # OBJ
    (b"\x80\x04\x8c\x08builtins\x8c\x04eval\x93\x8c\x011\x85R.", "builtins.eval"),   # STACK_GLOBAL
    (b"cbuiltins\ngetattr\n(cbuiltins\n__import__\n(S'os'\ntRS'system'\ntR.", "builtins.getattr"),
    (b"\x80\x02cnt\nsystem\n.", "nt.system"),
    (b"\x80\x02cimportlib\nimport_module\n.", "importlib.import_module"),
    (b"\x80\x02crunpy\nrun_path\n.", "runpy.run_path"),
    (b"\x80\x02cctypes\nCDLL\n.", "ctypes.CDLL"),
    (b"\x80\x02cmarshal\nloads\n.", "marshal.loads"),
    (b"\x80\x02ctypes\nFunctionType\n.", "types.FunctionType"),
    (b"\x80\x02csocket\nsocket\n.", "socket.socket"),
    (b"\x80\x02c__builtin__\neval\n.", "__builtin__.eval"),
])
def test_hostile_pickles_are_refused(tmp_path, pkl, label):
    refused(tmp_path, zip_checkpoint(tmp_path / "h.pt", pkl), label)


def test_other_classes_are_inert(tmp_path):
    import argparse
    import fractions
    ns = argparse.Namespace(lr=0.1, emb=torch.ones(2))
    src = tmp_path / "inert.pt"
    torch.save({"args": ns, "frac": fractions.Fraction(1, 3), "w": torch.zeros(3)}, src)
    got, report, _ = imported(tmp_path, src)
    assert sorted(got) == ["args.emb", "w"]  # the tensor inside the Namespace is found
    assert report["dropped_values"] >= 2


@pytest.mark.parametrize("case, match", [
    (dict(numel=4, data=b"\0" * 12), "holds 12 bytes"),                    # storage lies about its size
    (dict(numel=4, data=b"\0" * 16, size=[5]), "reaches element"),         # view past the storage
    (dict(numel=4, data=b"\0" * 16, size=[2], stride=[3], offset=2), "reaches element"),
    (dict(numel=4, data=b"\0" * 16, size=[2], stride=[-1]), "negative"),
    (dict(numel=4, data=b"\0" * 16, offset=-1), "negative"),
    (dict(numel=4, data=None), "no entry"),                                # storage missing
])
def test_lying_storages_and_views(tmp_path, case, match):
    size, stride = case.get("size", [4]), case.get("stride", [1])
    pkl = tensor_pickle("0", case["numel"], case.get("offset", 0), size, stride)
    storages = {} if case["data"] is None else {"0": case["data"]}
    e = refused(tmp_path, zip_checkpoint(tmp_path / "lie.pt", pkl, storages), match)
    assert e.rule == "checkpoint"


def test_a_valid_handmade_checkpoint_imports(tmp_path):
    # The control for the cases above: the same bytes with a consistent view.
    data = struct.pack("<4f", 1, 2, 3, 4)
    src = zip_checkpoint(tmp_path / "ok.pt", tensor_pickle("0", 4, 1, [2], [2]), {"0": data})
    got, _, _ = imported(tmp_path, src)
    assert got["t"].tolist() == [2.0, 4.0]
    assert torch.equal(torch.load(src, weights_only=False)["t"], got["t"])


@pytest.mark.parametrize("pkl, match", [
    (b"", "ends without STOP"), (b"\x80\x02}", "ends without STOP"), (b"\x80\x09.", "protocol"),
    (b"\xff", "unknown opcode"), (b"X\xff\xff\xff\x7fab", "runs past"), (b"h\x05.", "memo entry"),
    (b"e.", "no MARK"), (b"(" * 70000 + b".", "open MARKs"), (b"0.", "no MARK"), (b"a.", "empty stack"),
    (b"\x80\x02]" + b"\x32" * (1 << 20) + b"]" + b".", "stack holds"),
    (b"\x80\x02}Q.", "persistent id"),
    # A memo index far past anything the pickle made (torch.load cannot load it either).
    (b"\x80\x02}r\xf0\xff\xff\x7f.", "memo index 2147483632 lies far past"),
], ids=lambda v: v.replace(" ", "_") if isinstance(v, str) else "pickle")
def test_broken_pickles(tmp_path, pkl, match):
    e = refused(tmp_path, zip_checkpoint(tmp_path / "b.pt", pkl), match)
    assert e.rule == "pickle"


def test_cycles_and_deep_nesting_end_cleanly(tmp_path):
    # A list that holds itself: walked once.
    cyc = b"\x80\x02]q\x00h\x00a}q\x01X\x01\x00\x00\x00xh\x00s0h\x00."
    src = zip_checkpoint(tmp_path / "cyc.pt", cyc)
    # No tensor in it: an error, unless an empty output is asked for.
    e = refused(tmp_path, src, "found no tensor to import")
    assert e.rule == "checkpoint" and "allow_empty" in str(e)
    report = tlio.import_checkpoint(src, tmp_path / "empty.safetensors", allow_empty=True)
    assert report["tensors_written"] == 0
    assert tlio.load_file(tmp_path / "empty.safetensors") == {}
    out = subprocess.run([CLI, "import", str(src), str(tmp_path / "e2.safetensors"), "--allow-empty"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    # 100000 nested lists: the walk stops at its depth limit with an error, no crash.
    deep = b"\x80\x02" + b"]" * 100000 + b"a" * 99999 + b"."
    refused(tmp_path, zip_checkpoint(tmp_path / "deep.pt", deep), "nests deeper")


def broken_zip(tmp_path, edit):
    src = tmp_path / "z.pt"
    torch.save({"a": torch.arange(10.0)}, src)
    data = bytearray(src.read_bytes())
    edit(data)
    bad = tmp_path / "bad.pt"
    bad.write_bytes(bytes(data))
    return bad


def test_broken_zips(tmp_path):
    def cut(d):
        del d[len(d) // 2:]
    refused(tmp_path, broken_zip(tmp_path, cut), "end-of-central-directory|past the end")

    def wrong_local_name(d):
        d[30] ^= 0x20  # the first local header's name
    refused(tmp_path, broken_zip(tmp_path, wrong_local_name), "local header")

    def huge_central_offset(d):
        end = d.rindex(b"PK\x05\x06")
        d[end + 16:end + 20] = struct.pack("<I", 0xFFFFFFF0)
        d[end + 8:end + 10] = struct.pack("<H", 1)
    refused(tmp_path, broken_zip(tmp_path, huge_central_offset), "zip|past")

    # Two entries of one name (zipfile writes them, with a warning).
    dup = tmp_path / "dup.pt"
    with pytest.warns(UserWarning), zipfile.ZipFile(dup, "w") as z:
        z.writestr("archive/data.pkl", b"\x80\x02}.")
        z.writestr("archive/data.pkl", b"\x80\x02}.")
    refused(tmp_path, dup, "listed twice")


def test_unsupported_dtypes_refused_or_skipped(tmp_path):
    src = tmp_path / "c128.pt"
    torch.save({"z": torch.zeros(2, dtype=torch.complex128), "w": torch.ones(2)}, src)
    with pytest.raises(ValueError, match="ComplexDoubleStorage"):
        tlio.import_checkpoint(src, tmp_path / "x.safetensors")
    assert not (tmp_path / "x.safetensors").exists()
    report = tlio.import_checkpoint(src, tmp_path / "x.safetensors", skip_unsupported=True)
    assert report["tensors_written"] == 1 and "z" in report["skipped"][0]
    q = tmp_path / "q.pt"
    torch.save({"q": torch.quantize_per_tensor(torch.ones(4), 0.1, 0, torch.qint8)}, q)
    with pytest.raises(ValueError, match="_rebuild_qtensor"):
        tlio.import_checkpoint(q, tmp_path / "y.safetensors")


def test_read_checkpoint_lists_without_writing(tmp_path):
    src = tmp_path / "r.pt"
    torch.save({"a": torch.ones(2, 3, dtype=torch.float16)}, src)
    c = tlio.read_checkpoint(src)
    assert c["format"] == "zip"
    assert c["tensors"] == [{"name": "a", "dtype": "F16", "shape": [2, 3], "contiguous": True, "alias_of": None}]


# ---- model directories ------------------------------------------------------------------------

def hf_directory(tmp_path, shards):
    """A directory as transformers writes it: config and tokenizer files, and the state dict in
    `shards` pytorch_model*.bin files (with pytorch_model.bin.index.json when more than one)."""
    src = tmp_path / "hf"
    src.mkdir()
    torch.manual_seed(0)
    state = {f"layers.{i}.weight": torch.randn(8, 4) for i in range(6)}
    state["embed.weight"] = torch.randn(10, 4)
    state["head.weight"] = state["embed.weight"]  # tied: one storage, two names
    (src / "config.json").write_text('{"model_type": "gpt2", "vocab_size": 10}')
    (src / "tokenizer.json").write_text('{"version": "1.0"}')
    (src / "merges.txt").write_text("a b\n")
    (src / "modeling_custom.py").write_text("raise SystemExit")  # code is never copied
    if shards == 1:
        torch.save(state, src / "pytorch_model.bin")
        return src, state
    layers = sorted(n for n in state if n.startswith("layers."))
    weight_map = {}
    for s in range(shards):
        part = {n: state[n] for n in layers[s::shards]}
        if s == shards - 1:  # the tied pair stays together, as transformers keeps it
            part.update({"embed.weight": state["embed.weight"], "head.weight": state["head.weight"]})
        file = f"pytorch_model-{s + 1:05}-of-{shards:05}.bin"
        torch.save(part, src / file)
        weight_map.update({n: file for n in part})
    (src / "pytorch_model.bin.index.json").write_text(json.dumps({"metadata": {"total_size": 0}, "weight_map": weight_map}))
    return src, state


def assert_model_directory(dst, state):
    out = subprocess.run([CLI, "validate", str(dst)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert (dst / "config.json").exists() and (dst / "tokenizer.json").exists() and (dst / "merges.txt").exists()
    assert not (dst / "modeling_custom.py").exists()
    got = {}
    records = {}
    for f in sorted(dst.glob("*.safetensors")):
        got.update(tlio.torch.load_file(f))
        records.update({k: v for k, v in (tlio.safe_open(f, "pt").metadata() or {}).items() if k != "format"})
    for name, t in state.items():
        kept = records.get(name, name)
        assert torch.equal(got[kept], t), name
    return got, records


def test_directory_with_one_bin(tmp_path):
    src, state = hf_directory(tmp_path, 1)
    dst = tmp_path / "st"
    report = tlio.import_checkpoint(src, dst)
    assert sorted(p.name for p in dst.iterdir()) == ["config.json", "merges.txt", "model.safetensors", "tokenizer.json"]
    got, records = assert_model_directory(dst, state)
    assert records == {"head.weight": "embed.weight"} and report["tensors_written"] == 7
    # The source directory itself: listed as a checkpoint, and validate points to tlio import.
    out = subprocess.run([CLI, "inspect", str(src)], capture_output=True, text=True)
    assert out.returncode == 0 and "layers.0.weight" in out.stdout
    out = subprocess.run([CLI, "validate", str(src)], capture_output=True, text=True)
    assert out.returncode == 1 and "tlio import" in out.stdout + out.stderr


def test_directory_with_shards_split_as_the_source_or_by_max_size(tmp_path):
    src, state = hf_directory(tmp_path, 3)
    dst = tmp_path / "st"
    tlio.import_checkpoint(src, dst)
    assert sorted(p.name for p in dst.glob("model*")) == [
        "model-00001-of-00003.safetensors", "model-00002-of-00003.safetensors",
        "model-00003-of-00003.safetensors", "model.safetensors.index.json"]
    assert_model_directory(dst, state)
    # --max-size re-splits: 128 bytes per layer tensor, at most 300 bytes per shard.
    resplit = tmp_path / "resplit"
    out = subprocess.run([CLI, "import", str(src), str(resplit), "--max-size", "300B"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert len(list(resplit.glob("model-*.safetensors"))) >= 4
    assert_model_directory(resplit, state)


def test_directory_index_that_lies_is_refused(tmp_path):
    src, _ = hf_directory(tmp_path, 2)
    index = json.loads((src / "pytorch_model.bin.index.json").read_text())
    index["weight_map"]["layers.0.weight"] = "pytorch_model-00002-of-00002.bin"  # the wrong shard
    (src / "pytorch_model.bin.index.json").write_text(json.dumps(index))
    dst = tmp_path / "st"
    with pytest.raises(tlio.SafetensorError, match="layers.0.weight") as e:
        tlio.import_checkpoint(src, dst)
    assert e.value.rule == "index"
    assert not dst.exists() or not any(dst.iterdir())
    with pytest.raises(tlio.SafetensorError, match="neither pytorch_model.bin"):
        tlio.import_checkpoint(tmp_path, tmp_path / "x")


def test_a_training_checkpoint_imports_its_model_part(tmp_path):
    model = torch.nn.Linear(3, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model(torch.ones(1, 3)).sum().backward()
    opt.step()  # momentum buffers: tensors in the optimizer state
    src = tmp_path / "last.ckpt"
    torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": 7}, src)
    report = tlio.import_checkpoint(src, tmp_path / "m.safetensors")
    assert report["chosen_key"] == "model"
    got = tlio.torch.load_file(tmp_path / "m.safetensors")
    assert sorted(got) == ["bias", "weight"] and torch.equal(got["weight"], model.weight.detach())
    out = subprocess.run([CLI, "import", str(src), str(tmp_path / "c.safetensors")],
                         capture_output=True, text=True)
    assert out.returncode == 0 and 'imported the model part, key "model"' in out.stderr, out.stderr
    assert '"optimizer"' in out.stderr and "--all" in out.stderr
    # --all (import_all): every tensor, optimizer state too.
    everything = tlio.import_checkpoint(src, tmp_path / "all.safetensors", import_all=True)
    assert everything["chosen_key"] is None
    names = sorted(tlio.torch.load_file(tmp_path / "all.safetensors"))
    assert "model.weight" in names and any(n.startswith("optimizer.") for n in names)
    # A --key that is not there lists the keys that are.
    with pytest.raises(KeyError, match=r'top level has 3 keys: "model", "optimizer", "epoch"'):
        tlio.import_checkpoint(src, tmp_path / "k.safetensors", key="modle")


def test_dropped_values_are_listed_by_path(tmp_path):
    src = tmp_path / "train.pt"
    torch.save({"model": {"w": torch.ones(2), "version": 2},
                "optimizer": {"param_groups": [{"lr": 0.5, "name": "x"}]},
                "epoch": 3, "done": True, "note": None, 7: "by an int key"}, src)
    report = tlio.import_checkpoint(src, tmp_path / "all.safetensors", import_all=True)
    assert report["dropped_values"] == 7
    assert sorted(report["dropped"]) == sorted([
        ("model.version", "int"), ("optimizer.param_groups.0.lr", "float"), ("optimizer.param_groups.0.name", "str"),
        ("epoch", "int"), ("done", "bool"), ("note", "None"), ("7", "str")])
    r = subprocess.run([CLI, "import", src, tmp_path / "m.safetensors", "-v"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert [l for l in r.stderr.splitlines() if l.startswith("dropped:")] == ["dropped: version (int)"]
    r = subprocess.run([CLI, "import", src, tmp_path / "a.safetensors", "--all", "-v", "--json"],
                       capture_output=True, text=True)
    doc = json.loads(r.stdout)
    assert {"path": "optimizer.param_groups.0.lr", "kind": "float"} in doc["dropped"]
    assert "dropped:" not in r.stderr  # with --json they are in the document
