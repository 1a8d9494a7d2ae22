"""Type stubs for tlio.numpy (see numpy.py)."""
from typing import Any, Literal

from _typeshed import ReadableBuffer, StrPath
from numpy.typing import NDArray

__all__ = ["save", "save_file", "load", "load_file"]

def save(tensor_dict: dict[str, NDArray[Any]], metadata: dict[str, str] | None = None) -> bytes: ...
def save_file(tensor_dict: dict[str, NDArray[Any]], filename: StrPath,
              metadata: dict[str, str] | None = None) -> None: ...
def load(data: ReadableBuffer) -> dict[str, NDArray[Any]]: ...
def load_file(filename: StrPath, *, backend: Literal["mmap", "pread"] = "mmap",
              token: str | None = None, sha256: str | None = None) -> dict[str, NDArray[Any]]: ...
