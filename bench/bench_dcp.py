#!/usr/bin/env python3
"""tlio import of a torch.distributed.checkpoint (DCP) folder (issue 68), speed and memory, run in
turn (A B C A B C ...), medians:

  dd bs=16M conv=fsync of each .distcp file               the baseline: copying the bytes
  tlio import DCP OUT --all                                target: <= 1.3x dd, memory constant
  dcp_to_torch_save, then torch.load + save_file           torch's own way to one file, for context

The checkpoint is 1 GiB of F32: 16 Linear(4096, 4096) weights and biases as DTensors over two
ranks (torchrun, gloo), half sharded by rows (FSDP's Shard(0)) and half by columns (a row-wise
tensor-parallel Shard(1), whose every output row is gathered from both ranks' chunks), in the
page cache. Peak RSS from GNU time (%M). Run with the users' stack (PyPI's torch 2.x):
  build/consumer-venv/bin/python bench/bench_dcp.py [BUILD] [DIR] [ROUNDS]
"""
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from bench_import import report, timed  # noqa: E402

SAVE = """
import sys, torch, torch.distributed as dist, torch.distributed.checkpoint as dcp
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import Shard, distribute_tensor
dist.init_process_group("gloo")
mesh = init_device_mesh("cpu", (2,))
torch.manual_seed(0)
state = {}
for i in range(16):
    w, b = torch.randn(4096, 4096), torch.randn(4096)
    state[f"layers.{i}.weight"] = distribute_tensor(w, mesh, [Shard(0) if i % 2 else Shard(1)])
    state[f"layers.{i}.bias"] = distribute_tensor(b, mesh, [Shard(0)])
dcp.save(state, checkpoint_id=sys.argv[1])
dist.destroy_process_group()
"""

TORCH_WAY = """
import sys, torch
from safetensors.torch import save_file
from torch.distributed.checkpoint.format_utils import dcp_to_torch_save
dcp_to_torch_save(sys.argv[1], sys.argv[2])
save_file(torch.load(sys.argv[2], weights_only=True), sys.argv[3])
"""


def main():
    build = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "build")
    scratch = pathlib.Path(tempfile.mkdtemp(prefix="tlio-bench-dcp-", dir=sys.argv[2] if len(sys.argv) > 2 else None))
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    ckpt, out, dd_out = scratch / "ckpt", scratch / "out", scratch / "dd"
    torch_pt, torch_out = scratch / "torch.pt", scratch / "torch.safetensors"
    try:
        (scratch / "save.py").write_text(SAVE)
        saved = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
                                "--master-addr", "127.0.0.1", "--master-port", str(29400 + os.getpid() % 500),
                                str(scratch / "save.py"), str(ckpt)], capture_output=True, text=True)
        assert saved.returncode == 0, saved.stderr[-4000:]
        files = sorted(ckpt.glob("*.distcp"))
        size = sum(f.stat().st_size for f in files)
        print(f"checkpoint: {size / 2**30:.3f} GiB in {len(files)} .distcp files")
        subprocess.run(["cat", *map(str, files)], stdout=subprocess.DEVNULL, check=True)  # page cache
        dd = " && ".join(f"dd if={f} of={dd_out}.{i} bs=16M conv=fsync status=none" for i, f in enumerate(files))
        cases = {
            "dd bs=16M conv=fsync": ["sh", "-c", dd],
            "tlio import --all": [str(build / "tlio"), "import", str(ckpt), str(out), "--all"],
            "dcp_to_torch_save + save_file": [sys.executable, "-c", TORCH_WAY, str(ckpt), str(torch_pt),
                                              str(torch_out)],
        }
        times, rss = {k: [] for k in cases}, {k: [] for k in cases}
        for _ in range(rounds):
            shutil.rmtree(out, ignore_errors=True)
            for p in [torch_pt, torch_out, *scratch.glob("dd.*")]:
                p.unlink(missing_ok=True)
            for name, cmd in cases.items():
                os.sync()
                seconds, peak = timed(cmd)
                times[name].append(seconds)
                rss[name].append(peak)
            check = subprocess.run([str(build / "tlio"), "diff", str(out / "model.safetensors"), str(torch_out)],
                                   capture_output=True, text=True)
            assert check.returncode == 0, check.stdout + check.stderr
        report(times, rss, "dd bs=16M conv=fsync")
        print("  every round, tlio's output and torch's hold the same tensors (tlio diff)")
    finally:
        shutil.rmtree(scratch)


if __name__ == "__main__":
    main()
