"""A rank of test_dcp.py's test of DCP's safetensors layout, run under torchrun (gloo, 2 ranks):
dcp.save through torch's HuggingFaceStorageWriter(save_distributed=True), which leaves each
rank's chunks in its own safetensors shard (their places in DCP_SHARDING_INFO) without
consolidating them; rank 0 also writes the whole tensors, the oracle.

  torchrun --nproc-per-node 2 dcp_hf_worker.py FOLDER EXPECTED.safetensors"""
import sys

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint import HuggingFaceStorageWriter
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import Replicate, Shard, distribute_tensor


def main():
    dist.init_process_group("gloo")
    mesh = init_device_mesh("cpu", (2,))
    torch.manual_seed(0)
    whole = {"a.weight": torch.randn(5, 7), "b.weight": torch.randn(6, 4).to(torch.bfloat16),
             "c": torch.arange(3), "d": torch.randn(4, 6), "e": torch.randn(3, 2, 5)}
    state = {"a.weight": distribute_tensor(whole["a.weight"], mesh, [Shard(1)]),
             "b.weight": distribute_tensor(whole["b.weight"], mesh, [Shard(0)]),
             "c": distribute_tensor(whole["c"], mesh, [Replicate()]), "d": whole["d"],
             "e": distribute_tensor(whole["e"], mesh, [Shard(2)])}
    dcp.save(state, storage_writer=HuggingFaceStorageWriter(sys.argv[1], save_distributed=True))
    if dist.get_rank() == 0:
        from safetensors.torch import save_file
        save_file(whole, sys.argv[2])
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
