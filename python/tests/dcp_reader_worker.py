"""A rank of test_dcp.py's StorageReader test, run under torchrun (gloo): fills a state dict of
DTensors (rows, columns) and plain tensors shaped as the folder's with dcp.load through
tlio.torch.StorageReader, and checks every value against the folder read whole.

  torchrun --nproc-per-node 2 dcp_reader_worker.py FOLDER BACKEND"""
import sys

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import DTensor, Shard, distribute_tensor

import tlio
import tlio.torch


def main():
    folder, backend = sys.argv[1], sys.argv[2]
    dist.init_process_group("gloo")
    mesh = init_device_mesh("cpu", (2,))
    with tlio.safe_open(folder, "pt") as f:
        full = {name: f.get_tensor(name).clone() for name in f.keys()}
    state = {}
    for i, (name, t) in enumerate(sorted(full.items())):
        if t.dim() >= 2 and i % 3 == 0:  # columns: every row read in two pieces
            state[name] = distribute_tensor(torch.zeros_like(t), mesh, [Shard(1)])
        elif t.dim() >= 1 and i % 3 == 1:
            state[name] = distribute_tensor(torch.zeros_like(t), mesh, [Shard(0)])
        else:
            state[name] = torch.zeros_like(t)
    dcp.load(state, storage_reader=tlio.torch.StorageReader(folder, backend=backend))
    for name, t in state.items():
        got = (t.full_tensor() if isinstance(t, DTensor) else t).reshape(-1)
        assert torch.equal(got.view(torch.uint8), full[name].reshape(-1).view(torch.uint8)), name
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
