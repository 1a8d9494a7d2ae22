"""A torch.distributed.checkpoint (DCP) folder written by two ranks, and what torch reads back.

Run with PyPI's torch 2.x over gloo (CPU):
  torchrun --nproc-per-node 2 --master-addr 127.0.0.1 make_dcp.py OUT_DIR [EXPECTED.safetensors]

OUT_DIR gets what dcp.save writes (.metadata, __0_0.distcp, __1_0.distcp): an FSDP2 model
(rows sharded, the 11-row embedding unevenly: a rank's shard is a view of a padded storage),
its AdamW state, a tensor-parallel copy (column-wise Linear: row shards; row-wise: column shards;
a BF16 layer), a DTensor sharded unevenly along dim 1, a replicated tensor, a transposed view
(saved strided), and non-tensor values (saved as pickled bytes). EXPECTED gets, from rank 0,
every tensor of torch's own dcp_to_torch_save, flattened with "." as DCP names them: the oracle.
"""
import os
import sys
import tempfile

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import torch.nn as nn
from torch.distributed.checkpoint.state_dict import get_state_dict
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard
from torch.distributed.tensor import Replicate, Shard, distribute_tensor
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module


class Block(nn.Module):
    def __init__(self, bf16=False):
        super().__init__()
        self.embed = nn.Embedding(11, 6)
        self.up = nn.Linear(6, 10, bias=True)
        self.down = nn.Linear(10, 6, bias=False)
        self.norm = nn.LayerNorm(6)
        if bf16:
            self.up.to(torch.bfloat16)

    def forward(self, x):
        return self.norm(self.down(self.up(self.embed(x).to(self.up.weight.dtype)).float()))


def flatten(prefix, value, out):
    if isinstance(value, dict):
        for k, v in value.items():
            flatten(f"{prefix}.{k}" if prefix else str(k), v, out)
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            flatten(f"{prefix}.{i}", v, out)
    elif isinstance(value, torch.Tensor):
        out[prefix] = value.contiguous()


def main():
    out_dir = sys.argv[1]
    expected = sys.argv[2] if len(sys.argv) > 2 else None
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    mesh = init_device_mesh("cpu", (2,))
    fsdp, tp = Block(), Block(bf16=True)
    parallelize_module(tp, mesh, {"up": ColwiseParallel(), "down": RowwiseParallel()})
    fully_shard(fsdp, mesh=mesh)
    opt = torch.optim.AdamW(fsdp.parameters(), lr=1e-3)
    fsdp(torch.randint(0, 11, (3, 4))).sum().backward()
    opt.step()
    model_sd, optim_sd = get_state_dict(fsdp, opt)
    state = {
        "model": model_sd,
        "optimizer": optim_sd,
        "tp": tp.state_dict(),
        "extra": distribute_tensor(torch.arange(35, dtype=torch.float32).reshape(5, 7), mesh,
                                   [Shard(1)]),
        "rep": distribute_tensor(torch.arange(4, dtype=torch.int64), mesh, [Replicate()]),
        "view": torch.arange(12, dtype=torch.float16).reshape(3, 4).t(),
        "step": 3,
    }
    dcp.save(state, checkpoint_id=out_dir)
    dist.barrier()
    if expected and dist.get_rank() == 0:
        from safetensors.torch import save_file
        from torch.distributed.checkpoint.format_utils import dcp_to_torch_save

        with tempfile.TemporaryDirectory() as tmp:
            dcp_to_torch_save(out_dir, os.path.join(tmp, "all.pt"))
            flat = {}
            flatten("", torch.load(os.path.join(tmp, "all.pt"), weights_only=False), flat)
        save_file(flat, expected, metadata={"format": "pt"})
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
