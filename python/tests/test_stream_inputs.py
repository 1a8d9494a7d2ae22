"""Inputs that are not files: a named pipe given by path is read as "-" is (its header checked as
it arrives), never taken for an empty file; a whole-module torch.save imports under its
state_dict names, whether its class is importable or defined in the saving script."""
import os
import subprocess
import threading

import numpy as np
import torch

import tlio
import tlio.numpy
import tlio.torch
from test_import import CLI


def feed(fifo, data):
    """Writes `data` into the pipe from another thread (open blocks until a reader comes)."""
    def write():
        with open(fifo, "wb") as f:
            f.write(data)
    t = threading.Thread(target=write)
    t.start()
    return t


def test_a_named_pipe_is_read_as_a_stream(tmp_path):
    src = tmp_path / "m.safetensors"
    tlio.numpy.save_file({"w": np.arange(12, dtype=np.float32).reshape(3, 4)}, src)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    writer = feed(fifo, src.read_bytes())
    out = subprocess.run([CLI, "convert", fifo, tmp_path / "f16.safetensors", "--dtype", "f16"],
                         capture_output=True, text=True, timeout=60)
    writer.join()
    assert out.returncode == 0, out.stderr
    assert tlio.numpy.load_file(tmp_path / "f16.safetensors")["w"].dtype == np.float16
    writer = feed(fifo, src.read_bytes())
    with tlio.safe_open(fifo) as f:
        assert (f.get_tensor("w") == np.arange(12, dtype=np.float32).reshape(3, 4)).all()
    writer.join()
    writer = feed(fifo, src.read_bytes()[:20])  # cut inside the header
    out = subprocess.run([CLI, "validate", fifo], capture_output=True, text=True, timeout=60)
    writer.join()
    assert out.returncode == 1 and "ends at 20 bytes, inside the" in out.stderr, out.stderr


class Net(torch.nn.Module):  # defined here: pickled as test_stream_inputs.Net, or __main__.Net
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
        self.register_buffer("scale", torch.ones(2))


def test_a_whole_module_imports_under_its_state_dict_names(tmp_path):
    net = Net()
    torch.save(net, tmp_path / "net.pt")
    report = tlio.import_checkpoint(tmp_path / "net.pt", tmp_path / "net.safetensors")
    got = tlio.torch.load_file(tmp_path / "net.safetensors")
    assert sorted(got) == sorted(net.state_dict()) == ["body.0.bias", "body.0.weight", "body.2.bias",
                                                       "body.2.weight", "scale"]
    assert all(torch.equal(got[k], v) for k, v in net.state_dict().items())
    assert len(report["tensors"]) == 5


def test_a_class_of_main_is_no_reason_to_refuse(tmp_path):
    # A model class defined in the saving script pickles as __main__.<name>; nothing of it is run.
    script = ("import torch\n"
              "class Net(torch.nn.Module):\n"
              "    def __init__(self):\n"
              "        super().__init__()\n"
              "        self.fc = torch.nn.Linear(2, 3)\n"
              f"torch.save(Net(), {str(tmp_path / 'main.pt')!r})\n")
    subprocess.run(["/usr/bin/python3", "-c", script], check=True, timeout=120)
    tlio.import_checkpoint(tmp_path / "main.pt", tmp_path / "main.safetensors")
    assert sorted(tlio.torch.load_file(tmp_path / "main.safetensors")) == ["fc.bias", "fc.weight"]
