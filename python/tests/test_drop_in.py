"""tlio as a drop-in for the safetensors 0.8 package where code meets it: safe_open imported
from the framework modules, the framework names it takes, _safe_open_handle, and serialize's
refusal of raw pointers outside a TensorSpec."""
import numpy as np
import pytest
import torch

import tlio
import tlio.numpy
import tlio.torch


@pytest.fixture
def small(tmp_path):
    path = tmp_path / "m.safetensors"
    tlio.numpy.save_file({"a": np.arange(6, dtype=np.float32).reshape(2, 3)}, path)
    return path


def test_safe_open_from_the_framework_modules(small):
    from tlio.numpy import safe_open as np_open
    from tlio.torch import safe_open as pt_open
    assert pt_open is np_open is tlio.safe_open
    with pt_open(small, framework="pytorch") as f:
        assert torch.equal(f.get_tensor("a"), torch.arange(6, dtype=torch.float32).reshape(2, 3))
    for module in (tlio.torch, tlio.numpy):
        assert module.serialize is tlio.serialize and module.deserialize is tlio.deserialize
        assert module.serialize_file is tlio.serialize_file


@pytest.mark.parametrize("framework,module", [("tf", "tensorflow"), ("tensorflow", "tensorflow"),
                                              ("flax", "jax"), ("jax", "jax"), ("mlx", "mlx")])
def test_other_frameworks_need_their_module_when_a_tensor_is_asked_for(small, framework, module):
    pytest.importorskip("numpy")
    try:
        __import__(module)
        pytest.skip(f"{module} is installed here")
    except ImportError:
        pass
    with tlio.safe_open(small, framework=framework) as f:  # opens, as the package does
        assert f.keys() == ["a"]
        with pytest.raises(ModuleNotFoundError):
            f.get_tensor("a")


def test_paddle_is_imported_at_open_and_unknown_frameworks_are_refused(small):
    try:
        __import__("paddle")
        pytest.skip("paddle is installed here")
    except ImportError:
        pass
    with pytest.raises(ModuleNotFoundError):
        tlio.safe_open(small, framework="paddle")
    with pytest.raises(tlio.SafetensorError, match="framework bogus is invalid"):
        tlio.safe_open(small, framework="bogus")


def test_safe_open_handle(small):
    with open(small, "rb") as handle, tlio._safe_open_handle(handle, "np") as f:
        assert f.get_tensor("a")[1, 2] == 5


def test_serialize_takes_tensor_specs_not_raw_pointers():
    a = np.ones(4, np.float32)
    spec = tlio.TensorSpec(dtype="float32", shape=[4], data_ptr=a.ctypes.data, data_len=16)
    assert tlio.deserialize(tlio.serialize({"a": spec}))[0][1]["dtype"] == "F32"
    with pytest.raises(TypeError):
        tlio.serialize({"a": {"dtype": "float32", "shape": [4], "data_ptr": a.ctypes.data, "data_len": 16}})
