"""Type stubs for tlio.ray (see ray.py)."""
from typing import Any

from _typeshed import StrPath

__all__ = ["convert", "quantize", "dequantize", "import_checkpoint"]

def convert(src: StrPath, dst: StrPath, dtype: str, *args: Any, workers: int | None = None,
            address: str | None = None, retries: int = 3, num_cpus: float = 1,
            **kwargs: Any) -> Any: ...
def quantize(src: StrPath, dst: StrPath, scheme: str, *args: Any, workers: int | None = None,
             address: str | None = None, retries: int = 3, num_cpus: float = 1,
             **kwargs: Any) -> Any: ...
def dequantize(src: StrPath, dst: StrPath, *args: Any, workers: int | None = None,
               address: str | None = None, retries: int = 3, num_cpus: float = 1,
               **kwargs: Any) -> Any: ...
def import_checkpoint(src: StrPath, dst: StrPath, *args: Any, workers: int | None = None,
                      address: str | None = None, retries: int = 3, num_cpus: float = 1,
                      **kwargs: Any) -> Any: ...
