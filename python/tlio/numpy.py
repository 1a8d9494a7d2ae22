"""tlio.numpy: the safetensors package's numpy module (save, save_file, load, load_file), so code
switches by changing the import: `from tlio.numpy import save_file, load_file`.

Arrays come back as read-only views of the mapped file (load_file) or of the bytes (load); BF16
comes back as its raw uint16 bits and F8 as uint8 (numpy has neither), C64 as complex64.
Big-endian arrays are written as the little-endian bytes of their values."""
import os as _os

import numpy as _np

from . import _plan, _tlio
# As the safetensors package's modules do: `from safetensors.torch import safe_open` works.
from . import deserialize, safe_open, serialize, serialize_file
from . import load as _load, load_file as _load_file

__all__ = ["safe_open", "serialize", "serialize_file", "deserialize",
           "save", "save_file", "load", "load_file", "load_sharded"]

# Header dtype -> the numpy dtype load_sharded fills (raw bits for BF16 and the F8 types).
_NUMPY_OF = {"BOOL": "bool", "U8": "u1", "I8": "i1", "U16": "<u2", "I16": "<i2", "U32": "<u4",
             "I32": "<i4", "U64": "<u8", "I64": "<i8", "F16": "<f2", "F32": "<f4", "F64": "<f8",
             "C64": "<c8", "BF16": "<u2", "F8_E4M3": "u1", "F8_E5M2": "u1", "F8_E4M3FNUZ": "u1",
             "F8_E5M2FNUZ": "u1", "F8_E8M0": "u1"}


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
    pread ("pread") or past the page cache ("direct": O_DIRECT, 16 reads in flight); a URL (http(s)://, s3://, gs://, hf://) is fetched by ranges (`token`: for http(s) and hf, default $HF_TOKEN).
    `sha256`: the SHA-256 the file's bytes must have, checked first (a full read)."""
    return _load_file(filename, backend=backend, token=token, sha256=sha256)


def _plan_array(shape, dtype, nbytes, flat):
    """A new array for a plan item, or one over `flat` (a uint8 array of exactly its bytes)."""
    if dtype in _NUMPY_OF:
        typed = _NUMPY_OF[dtype]
    elif dtype == "F4" and shape and shape[-1] % 2 == 0:  # packed, two values a byte (get_tensor)
        typed, shape = "u1", shape[:-1] + (shape[-1] // 2,)
    else:  # F6 (and a 0-d F4, or one whose pairs straddle rows): the packed bytes, flat
        typed, shape = "u1", (nbytes,)
    if flat is None:
        flat = _tlio.fresh_bytes(nbytes)  # huge pages as the system says (numpy asks for them)
    return flat.view(typed).reshape(shape)


def load_sharded(source, plan, *, dtype=None, keep_packed=False, token=None,
                 max_inflight_bytes=_plan.DEFAULT_MAX_INFLIGHT_BYTES, backend="pread"):
    """{name: array} of the slices `plan` asks for, read in few large reads straight into new
    C-contiguous arrays (docs/loading.md). `source`: a file, a folder of weights or a URL.
    `plan`: {name: slices} (a tuple of ints and step-1 slices, ... for the whole tensor, None
    to skip), or a callable (name, shape, dtype) -> slices | None | ...; None: every tensor.
    A quantized weight is named by its logical name and comes dequantized (as `dtype`: "F32",
    "F16" or "BF16"; default the dtype it was quantized from), reading only the parts its slice
    needs; keep_packed=True lists its stored tensors instead. BF16 and F8 come as raw bits, F4
    as packed uint8 (last dimension halved), F6 as a flat uint8 array of its packed bytes.
    Local files are read with pread, or past the page cache with backend="direct" (O_DIRECT: a
    cold model read once; the slices of a file that are ranges of 64 KiB or more are then views
    of one block laid out as the file is, which the reads land in without a copy, and which
    lives while one of them does)."""
    planned = _plan.Planned(source, plan, dtype=dtype, keep_packed=keep_packed, token=token,
                            max_inflight_bytes=max_inflight_bytes, backend=backend)
    out = {}
    placed = planned.congruent_buffers()  # direct plans: where reads land without a copy
    for name, index, shape, item_dtype, nbytes, _ in planned.items:
        array = _plan_array(shape, item_dtype, nbytes, placed.get(index))
        planned.plan.set_destination(index, array.ctypes.data, nbytes)
        out[name] = array
    planned.plan.execute()
    return out
