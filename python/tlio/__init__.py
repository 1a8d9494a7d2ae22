"""tlio: strict, fast safetensors for Python (numpy and torch).

The API follows the `safetensors` package, so code can switch by changing the import:

    from tlio import safe_open, load_file, save_file, load, save   # numpy
    from tlio.torch import load_file, save_file, load_model, ...   # torch

With framework="pt" (or tlio.torch), tensors are torch tensors over a private copy-on-write
mapping of the file: no copy on loading, writable, and writes never reach the file (see
tlio.torch).

With numpy, tensors come back as read-only arrays that view the mapped file (no copy). A type
numpy lacks (BF16, the F8, F6 and F4 formats) raises SafetensorError rather than handing out
bits that look like numbers: read it with framework="pt", as converted values
(``get_tensor(name, dtype="float32")``), or as its stored bits with ``dtype="bits"`` (BF16 as
uint16, F8 as uint8, F4 as packed uint8 with the last dimension halved, two values per byte and
the lower-indexed in the low nibble, F6 as a flat uint8 array of its packed bytes).

Errors come by kind, with the same message as the `tlio` command: an invalid file raises
SafetensorError (a ValueError; its `rule`, `tensor` and `offset` say where), a bad argument
ValueError, an unknown tensor name KeyError, and a file that cannot be read the OSError for its
errno (FileNotFoundError, PermissionError, IsADirectoryError, ...).
"""
import importlib as _importlib
import os as _os
import stat as _stat

import numpy as _np

from . import _gguf, _tlio
from ._gguf import export_gguf, gguf_metadata, import_gguf, transcode
from ._report import report
from ._rewrites import (ConvertResult, _ConvertCounts, convert_file, dequantize_file, edit_file,
                        import_checkpoint, quantize_file, read_checkpoint)
from ._trust import _sha256_argument, hash_file, sign, verify
from ._tlio import SafetensorError, VerificationError

__version__ = _tlio.__version__
__all__ = ["SafetensorError", "safe_open", "load_file", "save_file", "load", "save", "convert_file",
           "ConvertResult", "quantize_file", "dequantize_file", "TensorSpec", "serialize",
           "serialize_file", "deserialize", "import_checkpoint", "read_checkpoint", "edit_file",
           "compare_files", "VerificationError", "hash_file", "sign", "verify", "import_gguf",
           "gguf_metadata", "export_gguf", "transcode", "report"]

_NUMPY = ("numpy", "np")
_TORCH = ("pt", "torch", "pytorch")
# The other frameworks the safetensors package names: their arrays are made from numpy's, with
# the module imported when the first tensor is asked for (paddle: when the file is opened), so
# a missing one is ModuleNotFoundError, as the package raises.
_OTHER = {"tf": ("tensorflow", "convert_to_tensor"), "tensorflow": ("tensorflow", "convert_to_tensor"),
          "flax": ("jax.numpy", "array"), "jax": ("jax.numpy", "array"), "mlx": ("mlx.core", "array"),
          "paddle": ("paddle", "to_tensor")}
_BACKENDS = ("mmap", "pread", "direct")
# Header dtypes numpy has a type for; the others (BF16, F8_*, F6_*, F4) it has not.
_NUMPY_HAS = frozenset(("BOOL", "U8", "I8", "U16", "I16", "U32", "I32", "U64", "I64", "F16", "F32",
                        "F64", "C64"))
_BITS = "bits"  # get_tensor(name, dtype="bits"): the stored bits of a type numpy lacks


def _error(message, rule=None, tensor=None):
    """A SafetensorError raised from Python, with the attributes the compiled ones carry."""
    e = SafetensorError(message)
    e.rule, e.tensor, e.offset = rule, tensor, None
    return e


def _check_name(name):
    if not isinstance(name, str):
        raise TypeError(f"tensor name must be str, not {type(name).__name__} ({name!r})")
    return name


def _numpy_lacks(file, name, how):
    """SafetensorError for a tensor whose dtype numpy has no type for; `how` says how to read it
    instead from where the caller stands."""
    dtype = file.dtype(name)
    return _error(f"tensor {name!r} is {dtype}, which numpy has no type for: {how}", "dtype", name)


def _check_numpy_type(file, name):
    if file.dtype(name) not in _NUMPY_HAS:
        raise _numpy_lacks(file, name, f"read it with framework='pt', as values with "
                                       f"get_tensor({name!r}, dtype='float32'), or as its stored "
                                       f"bits with dtype='bits'")


def _check_numpy_types(file, whole):
    """Loading every tensor of a file with numpy: SafetensorError for the first type numpy
    lacks, saying how to read it instead (`whole` names the call)."""
    for name in file.offset_keys():
        if file.dtype(name) not in _NUMPY_HAS:
            raise _numpy_lacks(file, name, f"{whole} cannot return it as numpy values; use "
                                           f"tlio.torch.{whole}, or safe_open(...) and "
                                           f"get_tensor({name!r}, dtype='float32') (converted "
                                           f"values) or dtype='bits' (its stored bits)")


def _index_error(name, shape, message):
    return _error(f"tensor {name!r} (shape {list(shape)}): {message}", "slice", name)


def _check_index(name, shape, index):
    """SafetensorError for an index the tensor's shape cannot take, naming the index, the
    dimension and its size (numpy's IndexError names neither the tensor nor the rule)."""
    items = index if isinstance(index, tuple) else (index,)
    if not all(i is None or i is Ellipsis or isinstance(i, slice) or
               (isinstance(i, (int, _np.integer)) and not isinstance(i, (bool, _np.bool_)))
               for i in items):
        return  # booleans and arrays (fancy indexing): numpy's own rules and errors
    consumed = sum(1 for i in items if i is not None and i is not Ellipsis)
    if consumed > len(shape):
        raise _index_error(name, shape, f"{consumed} indices for {len(shape)} dimensions")
    dim = 0
    for item in items:
        if item is Ellipsis:
            dim += len(shape) - consumed
            continue
        if item is None:
            continue
        if isinstance(item, (int, _np.integer)) and not isinstance(item, bool):
            size = shape[dim]
            if not -size <= int(item) < size:
                raise _index_error(name, shape, f"index {int(item)} is out of range for "
                                                f"dimension {dim} of size {size}")
        dim += 1


def _leading_slice(index, shape):
    """(leading, rest): `index` (already checked) split into its leading ints and unit-step
    slices, as (is a single position, start, stop) per dimension for File.read_slice, and what
    is left to index the slice read with."""
    items = index if isinstance(index, tuple) else (index,)
    leading = []
    for item in items:
        dim = len(leading)
        if dim == len(shape):
            break
        if isinstance(item, (int, _np.integer)) and not isinstance(item, bool):
            position = int(item) % shape[dim] if shape[dim] else 0
            leading.append((True, position, position + 1))
        elif isinstance(item, slice) and item.step in (None, 1):
            start, stop, _ = item.indices(shape[dim])
            leading.append((False, start, max(start, stop)))
        else:
            break
    whole = sum(1 for single, _, _ in leading if not single)
    return leading, (slice(None),) * whole + tuple(items[len(leading):])


class _Slice:
    """A lazy tensor: its dtype and shape without reading it, and indexing (ints, slices with
    steps, negative indices, ellipsis, None). Mapped files give views of the mapping, as the
    safetensors package does (numpy: a read-only view; torch: a view of the private mapping,
    strided where the index is, nothing copied; on another device, the slice alone copied
    there); read files (pread, direct, URLs) give what was read."""

    def __init__(self, opened, name):
        self._opened, self._name = opened, name

    def get_dtype(self):
        return self._opened._open_file().dtype(self._name)

    def get_shape(self):
        return list(self._opened._open_file().shape(self._name))

    def __getitem__(self, index):
        return self._opened._other_array(self._item(index))

    def _item(self, index):
        file = self._opened._open_file()
        shape = file.shape(self._name)
        _check_index(self._name, shape, index)
        torch = self._opened._torch
        if file.in_memory():  # mapped: index a view of the mapping, nothing is read
            if torch is None:
                _check_numpy_type(file, self._name)
                return file.array(self._name)[index]
            # Indexed on the CPU, so that only the slice goes to another device.
            whole = torch.tensor(file.array(self._name, True), file.dtype(self._name), self._name, move=False)
            return whole[index] if torch.on_cpu else whole[index].to(torch.device)
        # Read by pread or by ranges: the leading ints and unit-step slices pick the bytes that
        # are read; what the index asks beyond them is applied to what was read.
        leading, rest = _leading_slice(index, shape)
        if torch is None:
            _check_numpy_type(file, self._name)
            return file.read_slice(self._name, leading)[rest]
        part = torch.tensor(file.read_slice(self._name, leading), file.dtype(self._name), self._name)
        return part[rest].contiguous()

    def __len__(self):
        shape = self.get_shape()
        if not shape:
            raise TypeError("len() of a scalar tensor")
        return shape[0]


class safe_open:
    """``with safe_open(path, framework="numpy"|"pt") as f: f.get_tensor(name)``.

    framework "numpy"/"np" gives read-only numpy arrays viewing a shared mapping; "pt"/"torch"
    gives torch tensors viewing a private copy-on-write mapping (writable; writes stay in this
    process) on `device` ("cpu", or any torch device: tensors are moved there). backend "pread"
    reads each tensor with positional reads into memory of its own instead of mapping; "direct"
    likewise, past the page cache (O_DIRECT, 16 reads in flight: for files read once, cold).

    `filename` is a path (str or os.PathLike), a URL (http(s)://, s3://, gs://, hf://: docs/remote.md),
    a model folder (model.safetensors, or shards with their index, checked against it; its
    shards read as one file: keys() are all of theirs, metadata() the first shard's), or a
    binary file object open for reading (a real file is opened again through its descriptor; other objects, such as
    io.BytesIO, are read whole from their start). For a URL the header is fetched at once, each
    tensor's bytes by range when asked for (get_tensors: all at once, several requests in
    flight); `token` is a bearer token sent to the URL's own host only (default: $HF_TOKEN).

    After the ``with`` block (or close()) the object is closed: every method raises
    SafetensorError("File is closed"), as the safetensors package does; tensors already returned
    stay valid.

    `sha256` (64 hex digits): the file's bytes must have this SHA-256, checked once it is open and
    before any tensor is handed out; VerificationError otherwise. It costs a full read of the
    file (for a URL, a full download), so it is off unless asked for."""

    def __init__(self, filename, framework="numpy", device="cpu", *, backend="mmap", token=None,
                 sha256=None):
        if backend not in _BACKENDS:
            raise ValueError(f"backend {backend!r} is not 'mmap', 'pread' or 'direct'")
        if framework in _TORCH:
            from . import torch as torch_module  # imports torch, only when asked for
            self._torch = torch_module._Converter(device)
            file_backend = "private" if backend == "mmap" else backend
        elif framework in _NUMPY or framework in _OTHER:
            if device != "cpu" and framework in _NUMPY:
                raise ValueError(f"device {device!r} is not supported with numpy: arrays are "
                                 f"on the CPU")
            self._torch = None
            file_backend = backend
        else:
            raise _error(f"framework {framework} is invalid", "framework")
        self._other = None
        if framework in _OTHER:
            module, function = _OTHER[framework]
            self._other = (module, function)
            if module == "paddle":
                _importlib.import_module(module)
        self._file = _open_source(filename, file_backend, token)
        self._pread = file_backend == "pread"
        self._quantized = None
        if sha256 is not None and isinstance(self._file, _Shards):
            raise ValueError("sha256= checks one file, and this is a model folder: check its "
                             "files with tlio.hash_file or its signature with tlio.verify")
        if sha256 is not None:
            _tlio.file_sha256(self._file, _sha256_argument(sha256))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def close(self):
        """Lets go of the file (its mapping lives on while a returned tensor uses it)."""
        self._file = self._quantized = None

    def _open_file(self):
        if self._file is None:
            raise _error("File is closed", "closed")
        return self._file

    def keys(self):
        """Tensor names, sorted."""
        return self._open_file().keys()

    def offset_keys(self):
        """Tensor names in the order of their bytes in the file."""
        return self._open_file().offset_keys()

    def metadata(self):
        """The metadata dict, or None when the file has none."""
        return self._open_file().metadata()

    def get_tensor(self, name, dtype=None, copy=False, out=None):
        """The tensor. torch: a tensor viewing the private mapping (no copy, writable). numpy: a
        read-only view; with copy=True a writable copy; with out=array the bytes copied into that
        (C-contiguous, same size) array at full memory speed; with dtype (np.float32,
        np.float64, np.float16 or their names) a converted copy; with dtype="bits" the stored
        bits of any type (a view; the only way to get a type numpy lacks, such as BF16, as
        numpy). KeyError for a name the file does not have."""
        return self._other_array(self._get_tensor(name, dtype, copy, out))

    def _other_array(self, array):
        """`array` as the framework asked for (tensorflow, jax, mlx, paddle), or as it is."""
        if self._other is None:
            return array
        module, function = self._other
        return getattr(_importlib.import_module(module), function)(array)

    def _get_tensor(self, name, dtype, copy, out):
        file = self._open_file()
        _check_name(name)
        if self._torch is not None:
            if dtype is not None or copy or out is not None:
                raise ValueError("dtype=, copy= and out= are for framework='numpy'")
            return self._torch.tensor(file.array(name, True), file.dtype(name), name)
        if isinstance(dtype, str) and dtype == _BITS:
            return file.array(name)
        if dtype is not None:
            return file.converted(name, _np.dtype(dtype))
        _check_numpy_type(file, name)
        if out is not None:
            return file.read_into(name, out)
        if copy:
            return file.copy(name)
        return file.array(name)

    def get_tensors(self):
        """{name: tensor} for every tensor, in file order."""
        file = self._open_file()
        names = file.offset_keys()
        if self._torch is None:
            _check_numpy_types(file, "load_file")
        if not (file.remote or file.direct or self._pread):
            return {k: self.get_tensor(k) for k in names}  # views of the mapping
        # One read of them all: from a URL touching tensors share requests; direct keeps 16
        # reads in flight over them all; pread splits them over the cores (one thread a tensor
        # took 3.7x as long from the page cache: the faults of fresh memory, on one core).
        arrays = file.copies(names)
        if self._torch is None:
            return {k: self._other_array(a) for k, a in zip(names, arrays)}
        return {k: self._torch.tensor(a, file.dtype(k), k) for k, a in zip(names, arrays)}

    def get_slice(self, name):
        """A lazy view of tensor `name`: get_dtype(), get_shape() and indexing, which reads only
        the rows asked for: a view of the mapping for mapped files; with backend="pread",
        "direct" or a URL, only the bytes its leading ints and unit-step slices select. An index out of range
        raises SafetensorError naming the index, the dimension and its size."""
        self._open_file().dtype(_check_name(name))  # KeyError now for unknown names
        return _Slice(self, name)

    def get_dtype(self, name):
        """The header dtype of tensor `name` ("F32", "BF16", ...)."""
        return self._open_file().dtype(_check_name(name))

    def get_shape(self, name):
        """The shape of tensor `name`, a list of ints."""
        return list(self._open_file().shape(_check_name(name)))

    def quantized(self):
        """The file's quantized weights (int4, bitsandbytes nf4/fp4, LLM.int8, FP8; read only:
        GPTQ, AWQ, MXFP4, NVFP4, compressed-tensors integers) as dicts: name, scheme, shape, dtype (restored by default), blocksize (the
        group or block), nested, stored."""
        return self._quantized_weights().list()

    def _quantized_weights(self):
        file = self._open_file()
        if isinstance(file, _gguf._Gguf):
            raise _error(f"{file.name} is a GGUF file: its tensors come dequantized from "
                         f"get_tensor", "gguf")
        if self._quantized is None:
            files = file.files if isinstance(file, _Shards) else [file]
            self._quantized = _tlio.QuantizedWeights(
                files, file.name, getattr(file, "quantization_config", ""))
        return self._quantized

    def get_dequantized(self, name, dtype=None):
        """Quantized weight `name` dequantized into a new array of its logical shape, as its
        default dtype (bitsandbytes 4-bit: the original) or dtype "F32", "F16", "BF16". With
        torch a BF16 result is torch.bfloat16; numpy has no BF16, so there a BF16 default raises
        SafetensorError, and an explicit dtype="BF16" gives its bits as uint16."""
        _check_name(name)
        array = self._quantized_weights().dequantized(name, "" if dtype is None else str(dtype))
        if self._torch is None:
            if dtype is None and array.dtype == _np.uint16:  # BF16 bits
                raise _error(f"quantized weight {name!r} restores to BF16, which numpy has no "
                             f"type for: pass dtype='F32' (or 'F16'), use framework='pt', or "
                             f"dtype='BF16' for its bits as uint16", "dtype", name)
            return array
        return self._torch.tensor(array, "BF16" if array.dtype == _np.uint16 else None, name)


# What makes a local folder a model folder to open (any other folder is IsADirectoryError).
_MODEL_FILES = ("config.json", "model.safetensors", "model.safetensors.index.json")


def _safe_open_handle(f, framework, device="cpu", *, backend="mmap"):
    """safe_open over an open binary file object `f`, as the package's _safe_open_handle (its own
    tests use it): the file is opened again through its descriptor, or read whole."""
    return safe_open(f, framework, device, backend=backend)


class _Shards:
    """A model folder's shards (checked against their index by the library) read as one File:
    what safe_open asks of a file, each tensor answered by the shard that holds it."""

    def __init__(self, path, backend, token):
        self.files, self.quantization_config = _tlio.open_model_files(path, backend, token)
        self.name = _os.fspath(path)
        self._of = {name: f for f in self.files for name in f.offset_keys()}
        self.remote = any(f.remote for f in self.files)
        self.direct = any(f.direct for f in self.files)

    def _shard(self, name):
        # An unknown name: the first shard raises the error a file raises for it (KeyError).
        return self._of.get(name, self.files[0])

    def keys(self):
        return sorted(self._of)

    def offset_keys(self):
        return [name for f in self.files for name in f.offset_keys()]

    def metadata(self):
        return self.files[0].metadata()

    def in_memory(self):
        return all(f.in_memory() for f in self.files)

    def copies(self, names):
        arrays = {}
        for f in self.files:  # one batch of requests per shard
            mine = [n for n in names if self._of.get(n) is f]
            arrays.update(zip(mine, f.copies(mine)))
        return [arrays[n] for n in names]

    # The per-tensor methods: the tensor's shard answers.
    _PER_TENSOR = frozenset({"array", "dtype", "shape", "copy", "read_into", "converted", "read_slice"})

    def __getattr__(self, method):
        if method not in _Shards._PER_TENSOR:
            raise AttributeError(method)
        return lambda name, *args: getattr(self._shard(name), method)(name, *args)


def _open_source(source, backend, token):
    """The compiled File for a path, URL or binary file object; a _Shards for a model folder."""
    if isinstance(source, (str, bytes)) or hasattr(source, "__fspath__"):
        path = _os.fspath(source)
        kind = _tlio.weights_kind(_os.fsdecode(path), token or "")  # the one question, asked once
        if kind == "model folder" and (not _os.path.isdir(path) or any(
                _os.path.exists(_os.path.join(_os.fsdecode(path), n)) for n in _MODEL_FILES)):
            return _Shards(path, backend, token or "")
        if kind == "gguf":
            return _gguf._Gguf(_os.fsdecode(path), token)
        return _tlio.File(path, backend, token or "")
    if not hasattr(source, "read"):
        raise TypeError(f"filename must be a path, a URL or a binary file object, not "
                        f"{type(source).__name__}")
    try:
        fd = source.fileno()
    except (AttributeError, OSError, ValueError):  # io.BytesIO and the like have none
        fd = None
    if fd is not None and _os.path.exists(f"/proc/self/fd/{fd}"):
        if _stat.S_ISREG(_os.fstat(fd).st_mode):
            # The same file, opened again (mapped like a path): the object's position stays.
            return _tlio.File(f"/proc/self/fd/{fd}", backend, "")
    if hasattr(source, "seek") and getattr(source, "seekable", lambda: True)():
        source.seek(0)
    data = source.read()
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"filename's read() returned {type(data).__name__}, not bytes: open the "
                        f"file in binary mode ('rb')")
    return _tlio.File.from_bytes(bytes(data))


def load_file(filename, device="cpu", *, backend="mmap", token=None, sha256=None):
    """{name: read-only array} for every tensor (zero-copy views of the mapped file; copies for
    a URL, fetched at once). `sha256`: checked first, as safe_open checks it (a full read)."""
    with safe_open(filename, framework="numpy", device=device, backend=backend, token=token,
                   sha256=sha256) as f:
        tensors = f.get_tensors()
        return {k: tensors[k] for k in f.keys()}


def load(data):
    """{name: array} from the bytes of a file."""
    f = _tlio.File.from_bytes(bytes(data))
    _check_numpy_types(f, "load")
    return {k: f.array(k) for k in f.keys()}


def save_file(tensors, filename, metadata=None, dtypes=None):
    """Writes {name: array} canonically and atomically. dtypes may name the safetensors dtype of
    raw-bit arrays, e.g. {"w": "BF16"} for a uint16 array of BF16 bits."""
    _tlio.save_file(tensors, _os.fspath(filename), metadata, dtypes or {})


def save(tensors, metadata=None, dtypes=None):
    """The canonical file bytes for {name: array}."""
    return _tlio.save(tensors, metadata, dtypes or {})


# ---- the safetensors package's raw API ---------------------------------------------------------

class TensorSpec:
    """One tensor for serialize()/serialize_file(), as the safetensors package describes it:
    TensorSpec(dtype="float32", shape=[2, 3], data_ptr=address, data_len=bytes). The caller keeps
    the memory alive during the call. dtype takes numpy/torch names or header names ("F32");
    with "float4_e2m1fn_x2" (two F4 values per byte, as torch stores them) the last dimension
    given is the storage's and is doubled."""

    __slots__ = ("_dtype", "_shape", "_data_ptr", "_data_len")

    def __init__(self, *, dtype, shape, data_ptr, data_len):
        try:
            self._dtype = _tlio.dtype_name(str(dtype))
        except ValueError:  # now, not at serialize(); SafetensorError, as the package raises
            raise _error(f"unknown dtype {str(dtype)!r} in TensorSpec", "dtype") from None
        shape = [int(d) for d in shape]
        if str(dtype) == "float4_e2m1fn_x2" and shape:
            shape[-1] *= 2
        self._shape = shape
        self._data_ptr = int(data_ptr)
        self._data_len = int(data_len)

    dtype = property(lambda self: self._dtype, doc="The header dtype (\"F32\", \"BF16\", ...).")
    shape = property(lambda self: list(self._shape), doc="The header (logical) shape.")
    data_ptr = property(lambda self: self._data_ptr)
    data_len = property(lambda self: self._data_len)

    def __repr__(self):
        return (f"TensorSpec(dtype='{self._dtype}', shape={self._shape}, "
                f"data_ptr={self._data_ptr}, data_len={self._data_len})")


def _items(tensor_dict):
    """(name, dtype, shape, data) for the compiled writer, from TensorSpecs or from the
    {"dtype", "shape", "data"} dicts of earlier safetensors versions."""
    items = []
    for name, t in tensor_dict.items():
        if isinstance(t, TensorSpec):
            items.append((name, t.dtype, t.shape, (t.data_ptr, t.data_len)))
        elif isinstance(t, dict):
            if "data" not in t:  # {"data_ptr", "data_len"}: raw pointers only a TensorSpec carries
                raise TypeError(f"tensor {name!r}: a dict of raw pointers is not a TensorSpec; "
                                f"make one with TensorSpec(dtype=, shape=, data_ptr=, data_len=)")
            data = t["data"]
            items.append((name, str(t["dtype"]), list(t["shape"]),
                          data if isinstance(data, (bytes, bytearray, memoryview)) else bytes(data)))
        else:
            raise TypeError(f"tensor {name!r}: expected a TensorSpec or a dict with dtype, shape "
                            f"and data, not {type(t).__name__}")
    return items


def serialize(tensor_dict, metadata=None):
    """The bytes of a safetensors file holding `tensor_dict` ({name: TensorSpec or
    {"dtype", "shape", "data"}}), canonical: the same bytes as the safetensors package writes."""
    return _tlio.serialize_items(_items(tensor_dict), metadata, None)


def serialize_file(tensor_dict, filename, metadata=None):
    """serialize() into `filename` (str or os.PathLike), atomically."""
    _tlio.serialize_items(_items(tensor_dict), metadata, _os.fspath(filename))


def deserialize(bytes):  # noqa: A002 - the package's parameter name
    """[(name, {"shape": [...], "dtype": "F32", "data": bytearray}), ...] in file order, after
    checking every rule (SafetensorError otherwise)."""
    f = _tlio.File.from_bytes(_builtins_bytes(bytes))
    return [(k, {"shape": list(f.shape(k)), "dtype": f.dtype(k),
                 "data": bytearray(memoryview(f.array(k)))}) for k in f.offset_keys()]


def _builtins_bytes(data):
    return data if isinstance(data, bytes) else bytes(data)


# ---- comparing values ----------------------------------------------------------------------------

def compare_files(a, b, *, atol=0.0, rtol=0.0, token=None, filter=""):  # noqa: A002 - as --filter
    """Compares the values of every name two files share, as ``tlio diff`` does: after
    converting both to float64, so different dtypes (F32 against BF16) and quantized weights
    (every scheme tlio reads: dequantized, under their logical names) compare too. A value of `a`
    is within tolerance of `b`'s when ``|a - b| <= atol + rtol * |b|`` (`b` is the reference, as
    in numpy's isclose), or both are NaN, or the same infinity. `a` and `b` are paths or URLs of
    files or model folders (a folder's shards are one namespace), or GGUF files: against a Hugging
    Face folder a GGUF file's tensors pair with the folder's by the names the GGUF export gives
    them, Q/K rows put back in place (the tensor's dict then has ``b_name``, `b`'s name for it).
    `filter`: a regex searched in names; only the names it finds are compared.

    Returns a dict: ``equal`` (no name in one file only, every common tensor within tolerance),
    ``only_in_a`` and ``only_in_b`` (names), and ``tensors``, one dict per common name in natural
    order: name, a_dtype and b_dtype (a dtype or a scheme), shape, elements, compared (False when
    the values cannot be compared: note says why), note, max_abs, max_rel, rmse, cosine (float;
    max_abs and max_rel inf where one side is NaN or infinite alone, rmse NaN when no pair is
    finite), outside (elements outside tolerance), equal."""
    for what, value in (("atol", atol), ("rtol", rtol)):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"{what} must be a number, not {type(value).__name__}")
    return _tlio.compare_locations(_os.fsdecode(_os.fspath(a)), _os.fsdecode(_os.fspath(b)), float(atol),
                                   float(rtol), str(filter), token or "")
