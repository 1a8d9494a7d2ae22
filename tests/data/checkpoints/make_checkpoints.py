"""Makes the checkpoints in this folder with torch (python3-torch 1.13 from Debian 12) and, for
each, the safetensors file torch.load says it holds (the oracle: written by tlio.torch from
torch.load's tensors, made contiguous, aliases under their own names). Run from this folder:
  PYTHONPATH=../../../build/python /usr/bin/python3 make_checkpoints.py"""
import pickle
import zipfile
from collections import OrderedDict

import torch

import tlio.torch

torch.manual_seed(0)
base = torch.arange(12, dtype=torch.float32).reshape(3, 4)
state = OrderedDict([
    ("weight", base), ("weight_t", base.t()), ("rows", base[1:]), ("half", torch.randn(5).half()),
    ("bf16", torch.randn(2, 3).bfloat16()), ("ids", torch.tensor([3, -1, 7])), ("flag", torch.tensor(True)),
])
torch.save({"state_dict": state, "epoch": 2}, "small_zip.pt")
torch.save(state, "small_legacy.pt", _use_new_zipfile_serialization=False)
for name in ("small_zip", "small_legacy"):
    loaded = torch.load(f"{name}.pt")
    loaded = loaded.get("state_dict", loaded)
    tlio.torch.save_file({k: v.contiguous().clone() for k, v in loaded.items()}, f"{name}.expected.safetensors",
                         metadata={"format": "pt"})


class Evil:
    def __reduce__(self):
        import os
        return os.system, ("echo pwned",)


with zipfile.ZipFile("evil_os_system.pt", "w") as z:
    z.writestr("archive/data.pkl", pickle.dumps({"w": Evil()}, protocol=2))
    z.writestr("archive/version", "3\n")
