"""A rank of test_dcp.py's 2-D mesh test, run under torchrun with 4 ranks (gloo): a model
tensor-parallel over one mesh dimension and FSDP2-sharded over the other (so that its
column-parallel weights are _StridedShard DTensors), saved with dcp.save; rank 0 also writes
what full_tensor() gathers, the oracle.

  torchrun --nproc-per-node 4 dcp_mesh_worker.py CHECKPOINT EXPECTED.safetensors"""
import sys

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import torch.nn as nn
from torch.distributed.checkpoint.state_dict import get_model_state_dict
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.Linear(8, 12)
        self.down = nn.Linear(12, 8)

    def forward(self, x):
        return self.down(self.up(x))


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp", "tp"))
    model = Mlp()
    parallelize_module(model, mesh["tp"], {"up": ColwiseParallel(), "down": RowwiseParallel()})
    fully_shard(model, mesh=mesh["dp"])
    state = get_model_state_dict(model)
    assert any("StridedShard" in str(t.placements) for t in state.values())
    dcp.save({"model": state}, checkpoint_id=sys.argv[1])
    full = {name: t.full_tensor().contiguous() for name, t in state.items()}
    if dist.get_rank() == 0:
        from safetensors.torch import save_file
        save_file(full, sys.argv[2])
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
