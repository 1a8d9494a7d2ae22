"""tlio: strict, fast safetensors for Python (numpy).

The API follows the `safetensors` package, so code can switch by changing the import:

    from tlio import safe_open, load_file, save_file, load, save

Tensors come back as read-only numpy arrays that view the mapped file (no copy). Types numpy
lacks come back as their raw bits: BF16 as uint16, the F8 formats as uint8; pass
``dtype=np.float32`` to get converted values. F4 comes back as its packed bytes (uint8, the last
dimension halved: two values per byte, the lower-indexed in the low nibble), F6 as a flat uint8
array of its packed bytes, C64 as complex64.

Errors come by kind, with the same message as the `tlio` command: an invalid file raises
SafetensorError (a ValueError; its `rule`, `tensor` and `offset` say where), a bad argument
ValueError, an unknown tensor name KeyError, and a file that cannot be read the OSError for its
errno (FileNotFoundError, PermissionError, IsADirectoryError, ...).
"""
import numpy as _np

from . import _tlio
from ._tlio import SafetensorError, convert_file, dequantize_file, quantize_file

__version__ = _tlio.__version__
__all__ = ["SafetensorError", "safe_open", "load_file", "save_file", "load", "save", "convert_file",
           "quantize_file", "dequantize_file"]

_FRAMEWORKS = ("numpy", "np")


class _Slice:
    """A lazy tensor: its dtype and shape without reading it, and numpy indexing that returns
    views (ints, slices with steps, negative indices, ellipsis, None)."""

    def __init__(self, file, name):
        self._file, self._name = file, name

    def get_dtype(self):
        return self._file.dtype(self._name)

    def get_shape(self):
        return list(self._file.shape(self._name))

    def __getitem__(self, index):
        return self._file.array(self._name)[index]

    def __len__(self):
        shape = self.get_shape()
        if not shape:
            raise TypeError("len() of a scalar tensor")
        return shape[0]


class safe_open:
    """``with safe_open(path, framework="numpy") as f: f.get_tensor(name)``."""

    def __init__(self, filename, framework="numpy", device="cpu"):
        if framework not in _FRAMEWORKS:
            raise ValueError(f"framework {framework!r} is not supported: tlio gives numpy arrays "
                             f"(framework='numpy' or 'np')")
        if device != "cpu":
            raise ValueError(f"device {device!r} is not supported: tlio maps files on the CPU")
        self._file = _tlio.File(str(filename))
        self._quantized = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def keys(self):
        """Tensor names, sorted."""
        return self._file.keys()

    def offset_keys(self):
        """Tensor names in the order of their bytes in the file."""
        return self._file.offset_keys()

    def metadata(self):
        """The metadata dict, or None when the file has none."""
        return self._file.metadata()

    def get_tensor(self, name, dtype=None, copy=False, out=None):
        """A read-only view of the tensor; with copy=True a writable copy; with out=array the
        bytes copied into that (C-contiguous, same size) array at full memory speed; with dtype
        (np.float32, np.float64, np.float16) a converted copy."""
        if dtype is not None:
            return self._file.converted(name, _np.dtype(dtype))
        if out is not None:
            return self._file.read_into(name, out)
        if copy:
            return self._file.copy(name)
        return self._file.array(name)

    def get_slice(self, name):
        self._file.dtype(name)  # KeyError now for unknown names
        return _Slice(self._file, name)

    def get_dtype(self, name):
        return self._file.dtype(name)

    def get_shape(self, name):
        return list(self._file.shape(name))

    def quantized(self):
        """The file's quantized weights (int4, bitsandbytes nf4/fp4, LLM.int8) as dicts: name,
        scheme, shape, dtype (restored by default), blocksize, nested, stored."""
        return self._quantized_weights().list()

    def _quantized_weights(self):
        if self._quantized is None:
            self._quantized = _tlio.QuantizedWeights(self._file)
        return self._quantized

    def get_dequantized(self, name, dtype=None):
        """Quantized weight `name` dequantized into a new array of its logical shape, as its
        default dtype (bitsandbytes 4-bit: the original) or dtype "F32", "F16", "BF16" (BF16 as
        raw uint16 bits, like BF16 tensors)."""
        return self._quantized_weights().dequantized(name, "" if dtype is None else str(dtype))


def load_file(filename, device="cpu"):
    """{name: read-only array} for every tensor (zero-copy views of the mapped file)."""
    with safe_open(filename, framework="numpy", device=device) as f:
        return {k: f.get_tensor(k) for k in f.keys()}


def load(data):
    """{name: array} from the bytes of a file."""
    f = _tlio.File.from_bytes(bytes(data))
    return {k: f.array(k) for k in f.keys()}


def save_file(tensors, filename, metadata=None, dtypes=None):
    """Writes {name: array} canonically and atomically. dtypes may name the safetensors dtype of
    raw-bit arrays, e.g. {"w": "BF16"} for a uint16 array of BF16 bits."""
    _tlio.save_file(tensors, str(filename), metadata, dtypes or {})


def save(tensors, metadata=None, dtypes=None):
    """The canonical file bytes for {name: array}."""
    return _tlio.save(tensors, metadata, dtypes or {})
