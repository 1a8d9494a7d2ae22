"""tlio.numpy: the safetensors package's numpy module (save, save_file, load, load_file), so code
switches by changing the import: `from tlio.numpy import save_file, load_file`.

Arrays come back as read-only views of the mapped file (load_file) or of the bytes (load); BF16
comes back as its raw uint16 bits and F8 as uint8 (numpy has neither), C64 as complex64.
Big-endian arrays are written as the little-endian bytes of their values."""
import os as _os

from . import _tlio
from . import load as _load, load_file as _load_file

__all__ = ["save", "save_file", "load", "load_file"]


def save(tensor_dict, metadata=None):
    """The bytes of a safetensors file holding {name: array}."""
    return _tlio.save(tensor_dict, metadata, {})


def save_file(tensor_dict, filename, metadata=None):
    """Writes {name: array} to `filename` (str or os.PathLike), canonically and atomically."""
    _tlio.save_file(tensor_dict, _os.fspath(filename), metadata, {})


def load(data):
    """{name: array} from the bytes of a file."""
    return _load(data)


def load_file(filename, *, backend="mmap", token=None, sha256=None):
    """{name: array} of a file: zero-copy views of the mapping ("mmap") or copies read with
    pread ("pread"); a URL (http(s)://, s3://, gs://, hf://) is fetched by ranges (`token`: for http(s) and hf, default $HF_TOKEN).
    `sha256`: the SHA-256 the file's bytes must have, checked first (a full read)."""
    return _load_file(filename, backend=backend, token=token, sha256=sha256)
