"""torch.distributed.checkpoint (DCP) folders imported without running their pickle (issue 68):
tests/data/dcp/two_ranks (two ranks with torchrun: FSDP2, tensor-parallel, optimizer state)
on any stack, against what torch's dcp_to_torch_save read back when it was made; on the users'
stack (PyPI's torch 2.x) a fresh two-rank save judged by dcp_to_torch_save and dcp.load, and
metadata made hostile (overlaps, gaps, ranges past a file, foreign classes) refused by name with
nothing written."""
import json
import os
import pathlib
import pickle
import shutil
import subprocess
import sys

import pytest

import tlio

REPO = pathlib.Path(__file__).parents[2]
CLI = os.environ.get("TLIO_CLI", str(REPO / "build" / "tlio"))
DATA = pathlib.Path(os.environ.get("TLIO_TEST_DATA", REPO / "tests" / "data")) / "dcp"
FIXTURE = DATA / "two_ranks"


def run(*args, ok=True):
    r = subprocess.run([CLI, *map(str, args)], capture_output=True, text=True, timeout=300)
    assert (r.returncode == 0) == ok, r.stderr
    return r


def stored(path):
    """{name: (dtype, shape, bytes)} of a safetensors file, every dtype's bits as stored."""
    out = {}
    with tlio.safe_open(str(path), "numpy") as f:
        for name in f.keys():
            s = f.get_slice(name)
            out[name] = (s.get_dtype(), list(s.get_shape()), f.get_tensor(name, dtype="bits").tobytes())
    return out


def expect_same(folder, expected, prefix=""):
    """Every tensor of the imported folder equals expected's `prefix + name`, bit for bit."""
    want = stored(expected)
    got = {}
    for f in sorted(pathlib.Path(folder).glob("*.safetensors")):
        got.update(stored(f))
    assert got, folder
    for name, value in got.items():
        assert value == want[prefix + name], name
    return got


def test_the_fixture_imports_as_torch_read_it_back(tmp_path):
    r = tlio.import_checkpoint(FIXTURE, tmp_path / "all", import_all=True)
    assert r["format"] == "dcp" and r["dropped_values"] == 13
    got = expect_same(tmp_path / "all", DATA / "two_ranks.expected.safetensors")
    assert len(got) == len(stored(DATA / "two_ranks.expected.safetensors"))
    listed = {t["name"]: t for t in tlio.read_checkpoint(FIXTURE)["tensors"]}
    assert listed["embed.weight"]["chunks"] == 2 and listed["embed.weight"]["shape"] == [11, 6]
    # The model part by default; --key another; shards by size.
    r = tlio.import_checkpoint(FIXTURE, tmp_path / "model")
    assert r["chosen_key"] == "model" and r["tensors_written"] == 6
    expect_same(tmp_path / "model", DATA / "two_ranks.expected.safetensors", "model.")
    tlio.import_checkpoint(FIXTURE, tmp_path / "tp", "tp", max_size=300)
    assert (tmp_path / "tp" / "model.safetensors.index.json").exists()
    expect_same(tmp_path / "tp", DATA / "two_ranks.expected.safetensors", "tp.")


def test_the_cli_inspects_validates_and_imports_it(tmp_path):
    doc = json.loads(run("inspect", FIXTURE, "--json").stdout)
    assert doc["format"] == "dcp" and {t["chunks"] for t in doc["tensors"]} == {2}
    doc = json.loads(run("validate", FIXTURE, "--json").stdout)
    assert doc["ok"] and doc["results"][0]["kind"] == "dcp"
    doc = json.loads(run("import", FIXTURE, tmp_path / "out", "--all", "--json").stdout)
    assert doc["tensors_written"] == 33
    assert "--all imports everything" not in run("import", FIXTURE, tmp_path / "o2", "--all").stderr


# ---- the users' stack: torch 2.x's own DCP -----------------------------------------------------

WORKERS = pathlib.Path(__file__).parent


def torchrun(script, ranks, *args, port_salt=0):
    """`script ARGS...` on `ranks` ranks of torchrun on 127.0.0.1, with this process's sys.path
    (the workers import tlio); an assertion with its stderr's end when it fails."""
    port = 29500 + (os.getpid() + port_salt) % 1000
    r = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node",
                        str(ranks), "--master-addr", "127.0.0.1", "--master-port", str(port),
                        str(script), *map(str, args)], capture_output=True, text=True,
                       timeout=300, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert r.returncode == 0, r.stderr[-3000:]


def torch_dcp():
    pytest.importorskip("torch", minversion="2.4", reason="the users' stack (build/consumer-venv)")
    return pytest.importorskip("torch.distributed.checkpoint")


@pytest.fixture(scope="module")
def fresh(tmp_path_factory):
    """A two-rank save made now by torchrun over gloo, and its expected tensors."""
    torch_dcp()
    folder = tmp_path_factory.mktemp("dcp")
    ckpt, expected = folder / "ckpt", folder / "expected.safetensors"
    torchrun(DATA / "make_dcp.py", 2, ckpt, expected)
    return ckpt, expected


def test_a_fresh_save_imports_as_dcp_to_torch_save_and_dcp_load_read_it(fresh, tmp_path):
    import torch
    dcp = torch_dcp()
    ckpt, expected = fresh
    run("import", ckpt, tmp_path / "out", "--all")
    expect_same(tmp_path / "out", expected)
    # dcp.load fills a flat state dict of the same names, in one process.
    from safetensors.torch import load_file
    mine = load_file(str(tmp_path / "out" / "model.safetensors"))
    state = {name: torch.empty_like(value) for name, value in mine.items()}
    dcp.load(state, checkpoint_id=str(ckpt), no_dist=True)
    for name, value in state.items():
        assert torch.equal(value.reshape(-1).view(torch.uint8),
                           mine[name].reshape(-1).view(torch.uint8)), name


@pytest.mark.parametrize("backend", ["pread", "direct"])
def test_storage_reader_fills_sharded_tensors_from_a_folder(tmp_path, backend):
    """dcp.load of DTensors (row and column shards) and plain tensors through
    tlio.torch.StorageReader from a sharded Hugging Face folder, on two ranks."""
    torch_dcp()
    folder = tmp_path / "model"
    run("shard", DATA / "two_ranks.expected.safetensors", folder, "--max-size", "1KB")
    assert (folder / "model.safetensors.index.json").exists()
    torchrun(WORKERS / "dcp_reader_worker.py", 2, folder, backend, port_salt=backend == "direct")


def test_storage_reader_metadata_and_refusals(tmp_path):
    import torch
    torch_dcp()
    import tlio.torch
    reader = tlio.torch.StorageReader(DATA / "two_ranks.expected.safetensors")
    meta = reader.read_metadata()
    md = meta.state_dict_metadata["model.embed.weight"]
    assert md.size == torch.Size([11, 6]) and md.properties.dtype == torch.float32
    assert meta.state_dict_metadata["tp.up.bias"].properties.dtype == torch.bfloat16
    assert tlio.torch.StorageReader.validate_checkpoint_id(DATA / "two_ranks.expected.safetensors")
    assert not tlio.torch.StorageReader.validate_checkpoint_id(tmp_path / "nothing")
    with pytest.raises(ValueError):
        tlio.torch.StorageReader(tmp_path, backend="mmap")


def test_fsdp_over_tensor_parallel_on_a_2d_mesh_imports_as_full_tensor_gathers(tmp_path):
    """Four ranks, FSDP2 over a tensor-parallel dimension: _StridedShard weights in four
    chunks (rows 0-2, 6-8, 3-5, 9-11), row-wise ones in row and column chunks."""
    torch_dcp()
    ckpt, expected = tmp_path / "ckpt", tmp_path / "expected.safetensors"
    torchrun(WORKERS / "dcp_mesh_worker.py", 4, ckpt, expected, port_salt=7)
    listed = {t["name"]: t["chunks"] for t in tlio.read_checkpoint(ckpt, "model")["tensors"]}
    assert listed == {"up.weight": 4, "up.bias": 4, "down.weight": 4, "down.bias": 2}
    run("import", ckpt, tmp_path / "out", "--key", "model")
    expect_same(tmp_path / "out", expected)


def test_the_safetensors_layout_imports_as_the_whole_tensors(tmp_path):
    """HuggingFaceStorageWriter(save_distributed=True) on two ranks: each rank's chunks in its own
    safetensors shard, no .metadata; tlio puts them together (torch leaves that to
    consolidate_safetensors_files)."""
    torch_dcp()
    folder, expected = tmp_path / "shards", tmp_path / "expected.safetensors"
    torchrun(WORKERS / "dcp_hf_worker.py", 2, folder, expected, port_salt=11)
    doc = json.loads(run("inspect", folder, "--json").stdout)
    assert doc["format"] == "dcp" and doc["tensors"][0]["chunks"] == 2
    run("import", folder, tmp_path / "out")
    got = expect_same(tmp_path / "out", expected)
    assert len(got) == len(stored(expected))


def damaged(fresh, tmp_path, change):
    """A copy of the fresh checkpoint whose metadata `change(metadata)` altered."""
    torch_dcp()
    ckpt = tmp_path / "ckpt"
    shutil.copytree(fresh[0], ckpt)
    with open(ckpt / ".metadata", "rb") as f:
        meta = pickle.load(f)
    change(meta)
    with open(ckpt / ".metadata", "wb") as f:
        pickle.dump(meta, f)
    return ckpt


def chunks_of(meta, fqn):
    return meta.state_dict_metadata[fqn].chunks


def overlap(meta):
    import torch
    chunks_of(meta, "model.up.weight")[1].offsets = torch.Size([4, 0])


def gap(meta):
    del chunks_of(meta, "model.up.weight")[1]


def past_shape(meta):
    import torch
    chunks_of(meta, "model.up.weight")[1].sizes = torch.Size([6, 6])


def huge(meta):
    import torch
    meta.state_dict_metadata["model.up.weight"].size = torch.Size([2**62, 2**62])


def past_file(meta):
    for index, info in meta.storage_data.items():
        if index.fqn == "model.up.bias":
            info.offset = 1 << 40


def no_storage(meta):
    for index in list(meta.storage_data):
        if index.fqn == "model.up.bias":
            del meta.storage_data[index]
            return


def transforms(meta):
    for index, info in meta.storage_data.items():
        if index.fqn == "model.up.bias":
            info.transform_descriptors = ["zstd"]


def shared_bytes(meta):
    infos = [info for index, info in meta.storage_data.items() if index.fqn == "model.up.weight"]
    infos[1].offset, infos[1].relative_path = infos[0].offset, infos[0].relative_path


def fifo(meta):
    for index, info in meta.storage_data.items():
        if index.fqn == "model.up.bias":
            info.relative_path = "fifo"


def long_name(meta):
    meta.planner_data["model.up.bias"] = ("model", "x" * 5000)


class RunsCode:
    def __reduce__(self):
        return (os.system, ("echo pwned",))


def foreign(meta):
    meta.planner_data["model.up.bias"] = RunsCode()


@pytest.mark.parametrize("change, says", [
    (overlap, "overlap"), (gap, "hold 30 of its 60 elements"), (past_shape, "reaches past"),
    (huge, "overflows"), (past_file, "past the end"), (no_storage, "has no storage"),
    (transforms, "stream transforms (zstd)"), (foreign, "system, which is not one of the classes"),
    (shared_bytes, "overlap in __"), (fifo, "fifo is not a regular file"),
    (long_name, "5000 bytes (at most 4096)")])
def test_hostile_metadata_is_refused_by_name_and_nothing_is_written(fresh, tmp_path, change, says):
    ckpt = damaged(fresh, tmp_path, change)
    if change is fifo:
        os.mkfifo(ckpt / "fifo")  # named in the metadata: refused, never waited on
    r = run("import", ckpt, tmp_path / "out", "--all", ok=False)
    assert says in r.stderr, r.stderr
    assert not (tmp_path / "out").exists()
    assert not run("validate", ckpt, ok=False).stdout.strip().endswith("OK")
