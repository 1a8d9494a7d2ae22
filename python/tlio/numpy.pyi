"""Type stubs for tlio.numpy (see numpy.py)."""
from types import EllipsisType
from typing import Any, Callable, Literal, Mapping

from _typeshed import ReadableBuffer, StrPath
from numpy.typing import NDArray

from . import deserialize as deserialize, safe_open as safe_open, serialize as serialize
from . import serialize_file as serialize_file

__all__ = ["safe_open", "serialize", "serialize_file", "deserialize",
           "save", "save_file", "load", "load_file", "load_sharded"]

# A plan's slice of one tensor: ints and step-1 slices per leading dimension, or ... for all.
_Slices = tuple[int | slice, ...] | int | slice | EllipsisType
_Plan = (Mapping[str, _Slices | None] | Callable[[str, tuple[int, ...], str], _Slices | None]
         | None)

def save(tensor_dict: dict[str, NDArray[Any]], metadata: dict[str, str] | None = None) -> bytes: ...
def save_file(tensor_dict: dict[str, NDArray[Any]], filename: StrPath,
              metadata: dict[str, str] | None = None) -> None: ...
def load(data: ReadableBuffer) -> dict[str, NDArray[Any]]: ...
def load_file(filename: StrPath, *, backend: Literal["mmap", "pread", "direct"] = "mmap",
              token: str | None = None, sha256: str | None = None) -> dict[str, NDArray[Any]]: ...
def load_sharded(source: StrPath, plan: _Plan, *, dtype: Literal["F32", "F16", "BF16"] | None = None,
                 keep_packed: bool = False, token: str | None = None,
                 max_inflight_bytes: int = ...,
                 backend: Literal["pread", "direct"] = "pread") -> dict[str, NDArray[Any]]: ...
