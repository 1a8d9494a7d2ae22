"""Type stubs for tlio.torch (see torch.py)."""
from collections import defaultdict
from types import EllipsisType
from typing import Any, Callable, Iterable, Literal, Mapping

import torch
from _typeshed import ReadableBuffer, StrPath

from . import deserialize as deserialize, safe_open as safe_open, serialize as serialize
from . import serialize_file as serialize_file

__all__ = ["safe_open", "serialize", "serialize_file", "deserialize",
           "save", "save_file", "load", "load_file", "save_model", "load_model", "storage_ptr",
           "storage_size", "load_sharded", "load_distributed"]

_Backend = Literal["mmap", "pread", "direct"]
_Device = str | int | torch.device
# A plan's slice of one tensor: ints and step-1 slices per leading dimension, or ... for all.
_Slices = tuple[int | slice, ...] | int | slice | EllipsisType
_Plan = (Mapping[str, _Slices | None] | Callable[[str, tuple[int, ...], str], _Slices | None]
         | None)
_QuantDtype = Literal["F32", "F16", "BF16"]

def save(tensors: dict[str, torch.Tensor], metadata: dict[str, str] | None = None) -> bytes: ...
def save_file(tensors: dict[str, torch.Tensor], filename: StrPath,
              metadata: dict[str, str] | None = None) -> None: ...
def load(data: ReadableBuffer) -> dict[str, torch.Tensor]: ...
def load_file(filename: StrPath, device: _Device = "cpu", *, backend: _Backend = "mmap",
              token: str | None = None, sha256: str | None = None) -> dict[str, torch.Tensor]: ...
def save_model(model: torch.nn.Module, filename: StrPath, metadata: Mapping[str, str] | None = None,
               force_contiguous: bool = True) -> None: ...
# (missing, unexpected) names.
def load_model(model: torch.nn.Module, filename: StrPath, strict: bool = True,
               device: _Device = "cpu", *, backend: _Backend = "mmap",
               token: str | None = None, sha256: str | None = None) -> tuple[list[str], list[str]]: ...
def load_sharded(source: StrPath, plan: _Plan, *, device: _Device = "cpu",
                 dtype: _QuantDtype | None = None, keep_packed: bool = False,
                 token: str | None = None, max_inflight_bytes: int = ...,
                 backend: Literal["pread", "direct"] = "pread") -> dict[str, torch.Tensor]: ...
def load_distributed(source: StrPath, *, plan: _Plan = None, group: Any = None,
                     device: _Device = "cpu", dtype: _QuantDtype | None = None,
                     keep_packed: bool = False, token: str | None = None,
                     max_inflight_bytes: int = ...,
                     backend: Literal["pread", "direct"] = "pread") -> dict[str, torch.Tensor]: ...
def storage_ptr(tensor: torch.Tensor) -> int: ...
def storage_size(tensor: torch.Tensor) -> int: ...

# The safetensors package's private helpers, which transformers and accelerate import.
def _end_ptr(tensor: torch.Tensor) -> int: ...
def _find_shared_tensors(state_dict: Mapping[str, torch.Tensor]) -> list[set[str]]: ...
def _is_complete(tensor: torch.Tensor) -> bool: ...
def _remove_duplicate_names(state_dict: Mapping[str, torch.Tensor], *,
                            preferred_names: Iterable[str] | None = None,
                            discard_names: Iterable[str] | None = None
                            ) -> defaultdict[str, list[str]]: ...
