#!/usr/bin/env python3
"""tlio.torch.StorageReader against torch's own HuggingFaceStorageReader (issue 68, item 2):
dcp.load of a sharded state dict from one Hugging Face folder, two ranks (torchrun, gloo), each
reader in turn within one job (A B A B ...), medians of the slowest rank's time per load.

The folder: 1 GiB of F32 (16 Linear(4096, 4096) weights and biases) in two shards with their
index, in the page cache. The state dict: DTensors over both ranks, the weights alternately
sharded by rows (Shard(0)) and by columns (Shard(1)), the biases by rows; every load is checked
against the folder's tensors. Run with the users' stack (PyPI's torch 2.x):
  PYTHONPATH=build/python build/consumer-venv/bin/python bench/bench_dcp_reader.py [DIR] [ROUNDS] [warm|cold] [pread|direct]
cold: before each load the folder's pages are evicted from the page cache (posix_fadvise
DONTNEED), so every byte comes from the disk.
"""
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

LOAD = """
import statistics, sys, time, torch, torch.distributed as dist, torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint import HuggingFaceStorageReader
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import Shard, distribute_tensor
import tlio.torch
dist.init_process_group("gloo")
mesh = init_device_mesh("cpu", (2,))
folder, rounds, cold, backend = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "cold", sys.argv[4]
import glob, os
def evict():  # the folder's pages out of the page cache (clean pages: no privilege needed)
    for f in glob.glob(folder + "/*.safetensors"):
        fd = os.open(f, os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)
shapes = {f"layers.{i}.weight": (4096, 4096) for i in range(16)}
shapes.update({f"layers.{i}.bias": (4096,) for i in range(16)})
def fresh():
    return {n: distribute_tensor(torch.zeros(s), mesh, [Shard(1) if n.endswith("weight") and
                                                       int(n.split(".")[1]) % 2 == 0 else Shard(0)])
            for n, s in shapes.items()}
readers = {"tlio.torch.StorageReader": lambda: tlio.torch.StorageReader(folder, backend=backend),
           "HuggingFaceStorageReader": lambda: HuggingFaceStorageReader(folder)}
times = {k: [] for k in readers}
first = None
for _ in range(rounds):
    for name, make in readers.items():
        state = fresh()
        if cold and dist.get_rank() == 0:
            evict()
        dist.barrier()
        t0 = time.perf_counter()
        dcp.load(state, storage_reader=make())
        dist.barrier()
        elapsed = torch.tensor([time.perf_counter() - t0])
        dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
        times[name].append(elapsed.item())
        local = {n: t.to_local().clone() for n, t in state.items()}
        if first is None:
            first = local
        else:
            assert all(torch.equal(local[n], first[n]) for n in local), name
if dist.get_rank() == 0:
    base = statistics.median(times["HuggingFaceStorageReader"])
    for name, ts in times.items():
        m = statistics.median(ts)
        print(f"  {name:<26} median {m:.3f} s  ratio {m / base:.2f}  (runs {', '.join(f'{t:.2f}' for t in ts)})")
    print("  every load gave every rank the same shards")
dist.destroy_process_group()
"""


def main():
    scratch = pathlib.Path(tempfile.mkdtemp(prefix="tlio-bench-dcp-reader-", dir=sys.argv[1] if len(sys.argv) > 1 else None))
    rounds = sys.argv[2] if len(sys.argv) > 2 else "5"
    temperature = sys.argv[3] if len(sys.argv) > 3 else "warm"
    backend = sys.argv[4] if len(sys.argv) > 4 else "pread"
    try:
        import torch
        import tlio.torch
        folder = scratch / "model"
        folder.mkdir()
        torch.manual_seed(0)
        tensors = {}
        for i in range(16):
            tensors[f"layers.{i}.weight"] = torch.randn(4096, 4096)
            tensors[f"layers.{i}.bias"] = torch.randn(4096)
        tlio.torch.save_file(tensors, scratch / "one.safetensors")
        del tensors
        subprocess.run([os.environ.get("TLIO_CLI", "build/tlio"), "shard", str(scratch / "one.safetensors"),
                        str(folder), "--max-size", "512MB"], check=True, capture_output=True)
        (scratch / "one.safetensors").unlink()
        for f in folder.iterdir():
            subprocess.run(["cat", str(f)], stdout=subprocess.DEVNULL, check=True)  # page cache
        (scratch / "load.py").write_text(LOAD)
        r = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
                            "--master-addr", "127.0.0.1", "--master-port", str(29400 + os.getpid() % 500),
                            str(scratch / "load.py"), str(folder), rounds, temperature, backend], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr[-4000:]
        print(f"folder: {sum(f.stat().st_size for f in folder.iterdir()) / 2**30:.3f} GiB, "
              f"{len(list(folder.glob('*.safetensors')))} shards, {temperature}, tlio's backend {backend}; torch {torch.__version__}")
        print(r.stdout, end="")
    finally:
        shutil.rmtree(scratch)


if __name__ == "__main__":
    main()
