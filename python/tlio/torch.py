"""tlio.torch: the safetensors package's torch module, so code switches by changing the import:

    from tlio.torch import save_file, load_file, save_model, load_model

Loading maps the file privately (copy-on-write): tensors view the mapping with no copy of
their bytes, stay valid after the file is closed, and are writable; a written page becomes this
process's own and the file never changes. BF16 comes back as torch.bfloat16; U16/U32/U64 and
the F8/F4 formats as torch's types where the installed torch has them, else a ValueError naming
the tensor and its dtype (read such files with framework="numpy").

Saving refuses tensors that share memory (use save_model, which drops the aliases and records
them in the metadata, so load_model ties them back) and non-contiguous tensors, as the package
does; the bytes are written by tlio's canonical atomic writer with the GIL released.

The package's private helpers that transformers and accelerate import are here too, with its
results: _find_shared_tensors(state_dict) (sets of names whose tensors overlap in memory, one set
per tensor with a storage), _remove_duplicate_names(state_dict, *, preferred_names=None,
discard_names=None) ({kept: [names to drop]} per shared group), _is_complete(tensor) (it covers
its whole storage) and _end_ptr(tensor) (one past its last byte). Two differences: a tensor
overlapping only an earlier, longer one is grouped with it (the package misses it), and _end_ptr
takes any strides (the package's raises for a tensor that .view(-1) refuses, e.g. a transpose).
"""
import os as _os
from collections import defaultdict as _defaultdict

import numpy as _np
import torch as _torch

from . import _plan, _tlio
# As the safetensors package's modules do: `from safetensors.torch import safe_open` works.
from . import deserialize, safe_open, serialize, serialize_file
from . import safe_open as _safe_open

__all__ = ["safe_open", "serialize", "serialize_file", "deserialize",
           "save", "save_file", "load", "load_file", "save_model", "load_model", "storage_ptr",
           "storage_size", "load_sharded", "load_distributed", "StorageReader"]


def __getattr__(name):
    # StorageReader subclasses torch.distributed.checkpoint's, imported only when it is asked for.
    if name == "StorageReader":
        try:
            from ._dcp import StorageReader
        except ImportError as e:
            raise ImportError(f"tlio.torch.StorageReader needs torch.distributed.checkpoint, which "
                              f"torch {_torch.__version__} here does not have ({e})") from e
        return StorageReader
    raise AttributeError(f"module 'tlio.torch' has no attribute {name!r}")

# Header dtype -> torch dtype, for the types this torch has. The numpy array a tensor comes in
# as has the same width; types torch.from_numpy does not take are reinterpreted with .view().
_TORCH_DTYPES = {
    "F64": _torch.float64, "F32": _torch.float32, "F16": _torch.float16,
    "BF16": _torch.bfloat16, "I64": _torch.int64, "I32": _torch.int32, "I16": _torch.int16,
    "I8": _torch.int8, "U8": _torch.uint8, "BOOL": _torch.bool, "C64": _torch.complex64,
}
# Types newer torch versions have: header dtype -> (torch attribute, first torch with it).
_NEWER_TORCH_DTYPES = {
    "U16": ("uint16", "2.3"), "U32": ("uint32", "2.3"), "U64": ("uint64", "2.3"),
    "F8_E4M3": ("float8_e4m3fn", "2.1"), "F8_E5M2": ("float8_e5m2", "2.1"),
    "F8_E4M3FNUZ": ("float8_e4m3fnuz", "2.2"), "F8_E5M2FNUZ": ("float8_e5m2fnuz", "2.2"),
    "F8_E8M0": ("float8_e8m0fnu", "2.7"), "F4": ("float4_e2m1fn_x2", "2.8"),
}
for _name, (_attr, _since) in _NEWER_TORCH_DTYPES.items():
    if hasattr(_torch, _attr):
        _TORCH_DTYPES[_name] = getattr(_torch, _attr)
_HEADER_DTYPES = {t: n for n, t in _TORCH_DTYPES.items()}
# torch.from_numpy takes these numpy types; others are viewed as the signed type of their width.
_FROM_NUMPY = {_np.dtype(t) for t in ("float64", "float32", "float16", "complex64", "int64",
                                      "int32", "int16", "int8", "uint8", "bool")}
_SIGNED_OF_WIDTH = {1: _np.int8, 2: _np.int16, 4: _np.int32, 8: _np.int64}


def _torch_dtype(dtype, name):
    try:
        return _TORCH_DTYPES[dtype]
    except KeyError:
        pass
    if dtype in _NEWER_TORCH_DTYPES:
        attr, since = _NEWER_TORCH_DTYPES[dtype]
        why = f"torch {_torch.__version__} has no torch.{attr} (torch >= {since} has)"
    else:
        why = "torch has no such type"
    raise ValueError(f"tensor {name!r} is {dtype}: {why}; read it with framework='numpy'")


class _Converter:
    """numpy arrays from the compiled module -> torch tensors on one device, sharing memory."""

    def __init__(self, device):
        if isinstance(device, int):
            device = f"cuda:{device}"
        self.device = _torch.device(device)
        self.on_cpu = self.device.type == "cpu"

    def tensor(self, array, dtype, name, move=True):
        """`array` (whose memory the tensor shares) as header dtype `dtype` (None: as the
        array's own numpy type), on the device unless `move` is False."""
        want = None if dtype is None else _torch_dtype(dtype, name)
        if array.dtype not in _FROM_NUMPY:
            array = array.view(_SIGNED_OF_WIDTH[array.dtype.itemsize])
        t = _torch.from_numpy(array)
        if want is not None and t.dtype != want:
            t = t.view(want)
        return t if self.on_cpu or not move else t.to(self.device)


def storage_ptr(tensor):
    """The address of the storage under `tensor` (0 for storage-less tensors, e.g. on meta)."""
    try:
        return tensor.untyped_storage().data_ptr()
    except AttributeError:  # torch < 2.0
        try:
            return tensor.storage().data_ptr()
        except NotImplementedError:
            return 0
    except NotImplementedError:
        return 0


def storage_size(tensor):
    """The size in bytes of the storage under `tensor`."""
    try:
        return tensor.untyped_storage().nbytes()
    except AttributeError:  # torch < 2.0
        try:
            return tensor.storage().size() * tensor.element_size()
        except NotImplementedError:
            return tensor.nelement() * tensor.element_size()


def _end_ptr(tensor):
    """The address one past the last byte of `tensor`'s elements (its data_ptr() when it has
    none), as the package's _end_ptr; any strides, where the package's needs a tensor that
    .view(-1) takes."""
    start = tensor.data_ptr()
    if tensor.nelement() == 0:
        return start
    last = sum((size - 1) * stride for size, stride in zip(tensor.shape, tensor.stride()))
    return start + (last + 1) * tensor.element_size()


def _find_shared_tensors(state_dict):
    """Sets of names whose tensors overlap in memory, as the package's _find_shared_tensors:
    tensors grouped by (device, storage address, storage size), then split where their byte
    ranges stop overlapping. Every tensor with a storage is in one set (alone when it shares
    nothing); meta tensors and tensors whose storage is empty or at address 0 are in none."""
    by_storage = _defaultdict(set)
    for name, t in state_dict.items():
        if t.device.type != "meta" and storage_ptr(t) != 0 and storage_size(t) != 0:
            by_storage[(t.device, storage_ptr(t), storage_size(t))].add(name)
    groups = []
    for names in by_storage.values():
        ranges = sorted((state_dict[n].data_ptr(), _end_ptr(state_dict[n]), n) for n in names)
        stop = None
        for start, end, name in ranges:
            # Against the furthest end so far: the package compares with the previous tensor's
            # end only, and misses a tensor overlapping an earlier, longer one.
            if stop is not None and start < stop:
                groups[-1].add(name)
                stop = max(stop, end)
            else:
                groups.append({name})
                stop = end
    return groups


def _is_complete(tensor):
    """True when `tensor` starts at its storage's start and its elements fill the storage."""
    return (tensor.data_ptr() == storage_ptr(tensor) and
            tensor.nelement() * tensor.element_size() == storage_size(tensor))


def _remove_duplicate_names(state_dict, *, preferred_names=None, discard_names=None):
    """{kept: [removed names, sorted]} for every group of _find_shared_tensors with more than one
    name, as the package's _remove_duplicate_names: kept is the alphabetically first name whose
    tensor covers the whole storage, preferring names not in `discard_names`, and above all names
    in `preferred_names`. RuntimeError for a group, even of one name, where no tensor covers the
    whole storage. A defaultdict(list), as the package's."""
    return _names_to_remove(state_dict, _find_shared_tensors(state_dict), preferred_names,
                            discard_names)


def _tied(state_dict):
    """The groups of _find_shared_tensors with more than one name."""
    return [g for g in _find_shared_tensors(state_dict) if len(g) > 1]


def _names_to_remove(state_dict, groups, preferred_names=None, discard_names=None):
    """_remove_duplicate_names over `groups`."""
    preferred_names = set(preferred_names or ())
    discard_names = set(discard_names or ())
    to_remove = _defaultdict(list)
    for group in groups:
        complete = sorted(n for n in group if _is_complete(state_dict[n]))
        if not complete:
            raise RuntimeError(_incomplete_message(state_dict, sorted(group)))
        keep = next((n for n in complete if n in preferred_names), None)
        if keep is None:
            keep = next((n for n in complete if n not in discard_names), complete[0])
        for name in sorted(group):
            if name != keep:
                to_remove[keep].append(name)
    return to_remove


def _incomplete_message(state_dict, names):
    size = storage_size(state_dict[names[0]])
    if len(names) == 1:
        t = state_dict[names[0]]
        return (f"tensor {names[0]!r} views {t.nelement() * t.element_size()} of the {size} bytes "
                f"of its storage and no other name covers the storage, so no name can stand for "
                f"it: use a copy of the tensor (.clone())")
    return (f"tensors {names} share a storage of {size} bytes but none covers all of it, so "
            f"none can be kept for the others (saving one would store bytes the others do not "
            f"use, and drop bytes they do): use copies of them (.clone())")


def _items(tensors):
    """(name, header dtype, shape, (address, bytes)) for the compiled writer, after the
    package's checks; also the tensors to keep alive while it writes."""
    if not isinstance(tensors, dict):
        raise ValueError(f"expected a dict of {{str: torch.Tensor}}, not {type(tensors).__name__}")
    for name, t in tensors.items():
        if not isinstance(t, _torch.Tensor):
            raise ValueError(f"tensor {name!r} is a {type(t).__name__}, not a torch.Tensor")
    sparse = [n for n, t in tensors.items() if t.layout != _torch.strided]
    if sparse:
        raise ValueError(f"tensors {sparse} are sparse; tlio saves dense tensors (make them "
                         f"dense with .to_dense(), which may take much more room)")
    shared = [sorted(g) for g in _tied(tensors)]
    if shared:
        raise RuntimeError(
            f"some tensors share memory, which would store their bytes twice and load them "
            f"untied: {shared}. Use tlio.torch.save_model (it keeps one name per storage and "
            f"records the others in the metadata), or save copies (.clone()).")
    items, alive = [], []
    for name, t in tensors.items():
        if not t.is_contiguous():
            raise ValueError(
                f"tensor {name!r} is not contiguous: save .contiguous() of it (or, if it views "
                f"another tensor, save the whole tensor and slice it after loading)")
        if t.device.type != "cpu":
            t = t.to("cpu")
        dtype = _HEADER_DTYPES.get(t.dtype)
        if dtype is None:
            raise ValueError(f"tensor {name!r} is {t.dtype}, which safetensors has no dtype for")
        shape = list(t.shape)
        if dtype == "F4" and shape:  # torch's float4_e2m1fn_x2 holds two values per element
            shape[-1] *= 2
        alive.append(t)
        items.append((name, dtype, shape, (t.data_ptr(), t.nelement() * t.element_size())))
    return items, alive


def _metadata(metadata):
    """The metadata dict, checked here so a wrong type is a TypeError that names it."""
    if metadata is None:
        return None
    if not isinstance(metadata, dict):
        raise TypeError(f"metadata must be a dict of str to str, not {type(metadata).__name__}")
    for k, v in metadata.items():
        if not isinstance(k, str):
            raise TypeError(f"metadata key must be str, not {type(k).__name__} ({k!r})")
        if not isinstance(v, str):
            raise TypeError(f"metadata value of {k!r} must be str, not {type(v).__name__} ({v!r})")
    return metadata


def save(tensors, metadata=None):
    """The bytes of a safetensors file holding {name: tensor} (canonical)."""
    items, alive = _items(tensors)
    data = _tlio.serialize_items(items, _metadata(metadata), None)
    del alive
    return data


def save_file(tensors, filename, metadata=None):
    """Writes {name: tensor} to `filename` (str or os.PathLike), canonically and atomically.
    Tensors must be dense, contiguous and not share memory (see save_model)."""
    items, alive = _items(tensors)
    _tlio.serialize_items(items, _metadata(metadata), _os.fspath(filename))
    del alive


def load(data):
    """{name: tensor} from the bytes of a file (one copy of the bytes, which the tensors view;
    writable)."""
    f = _tlio.File.from_bytes(bytes(data))
    convert = _Converter("cpu")
    return {k: convert.tensor(f.array(k, True), f.dtype(k), k) for k in f.offset_keys()}


def load_file(filename, device="cpu", *, backend="mmap", token=None, sha256=None):
    """{name: tensor} of a file, in file order: with "mmap", views of a private copy-on-write
    mapping (no copy; writable; the file never changes); with "pread", copies; with "direct",
    copies read past the page cache (O_DIRECT, 16 reads in flight: a cold file read once); a URL
    (http(s)://, s3://, gs://, hf://) is fetched at once (`token`: default $HF_TOKEN).
    `sha256` (64 hex digits): the file's bytes must have it, checked before any tensor is made
    (a full read; tlio.VerificationError otherwise)."""
    with _safe_open(filename, framework="pt", device=device, backend=backend, token=token,
                    sha256=sha256) as f:
        return f.get_tensors()


def _empty(shape, dtype, name, flat=None):
    """A new tensor, or one over `flat` (a uint8 numpy array of exactly its bytes)."""
    want = _torch_dtype(dtype, name)
    if dtype == "F4" and shape:  # torch's float4_e2m1fn_x2 holds two values per element
        if shape[-1] % 2:
            raise ValueError(f"tensor {name!r} is F4 with an odd last dimension ({shape[-1]}): torch's "
                             "float4_e2m1fn_x2 holds two values per element")
        shape = tuple(shape[:-1]) + (shape[-1] // 2,)
    if flat is None:
        return _torch.empty(shape, dtype=want)
    return _torch.from_numpy(flat).view(want).view(shape)


def _on(device, tensors):
    device = _torch.device(f"cuda:{device}" if isinstance(device, int) else device)
    if device.type == "cpu":
        return tensors
    return {name: t.to(device) for name, t in tensors.items()}


def load_sharded(source, plan, *, device="cpu", dtype=None, keep_packed=False, token=None,
                 max_inflight_bytes=_plan.DEFAULT_MAX_INFLIGHT_BYTES, backend="pread"):
    """{name: tensor} of the slices `plan` asks for, each a new contiguous tensor of the slice's
    shape, read in few large reads straight into it (docs/loading.md). `source`: a file, a
    folder of weights or a URL. `plan`: {name: slices} (a tuple of ints and step-1 slices, ...
    for the whole tensor, None to skip) or a callable (name, shape, dtype) -> slices | None |
    ...; None: every tensor. A quantized weight is named by its logical name and comes
    dequantized (as `dtype`: "F32", "F16" or "BF16"; default the dtype it was quantized from),
    reading only the parts its slice needs; keep_packed=True lists its stored tensors instead.
    Local files are read with pread, or past the page cache with backend="direct" (O_DIRECT: a
    cold model read once; the slices of a file that are ranges of 64 KiB or more are then views
    of one block laid out as the file is, which the reads land in without a copy, and which
    lives while one of them does)."""
    planned = _plan.Planned(source, plan, dtype=dtype, keep_packed=keep_packed, token=token,
                            max_inflight_bytes=max_inflight_bytes, backend=backend)
    out = {}
    placed = planned.congruent_buffers()  # direct plans: where reads land without a copy
    for name, index, shape, item_dtype, nbytes, _ in planned.items:
        t = _empty(shape, item_dtype, name, placed.get(index))
        planned.plan.set_destination(index, t.data_ptr(), nbytes)
        out[name] = t
    planned.plan.execute()
    return _on(device, out)


def load_distributed(source, *, plan=None, group=None, device="cpu", dtype=None,
                     keep_packed=False, token=None,
                     max_inflight_bytes=_plan.DEFAULT_MAX_INFLIGHT_BYTES, backend="pread"):
    """load_sharded for every rank of an initialised torch.distributed group (gloo, nccl),
    called by all of them: each byte is read from storage once across the group, and the
    group's collectives move it to the ranks that want it. Without a plan every rank gets
    every tensor; a plan (a callable may ask torch.distributed.get_rank()) gives each rank its
    own slices. An error on any rank (a bad slice, a failed read) is raised on every rank, as
    "rank R: ...". Memory besides the results: the chunks in flight (within max_inflight_bytes,
    at least 2 MiB a rank) and the touched parts of quantized weights. backend="direct": each
    rank's reads past the page cache, as load_sharded's."""
    from . import _distributed
    out = _distributed.load_distributed(source, _empty, plan=plan, group=group, dtype=dtype,
                                        keep_packed=keep_packed, token=token,
                                        max_inflight_bytes=max_inflight_bytes, backend=backend)
    return _on(device, out)


def save_model(model, filename, metadata=None, force_contiguous=True):
    """Saves model.state_dict(), keeping one name per group of tensors that share memory (the
    alphabetically first that covers the whole storage) and recording each dropped name in the
    metadata as {dropped: kept} (user entries win), so load_model ties them back. With
    force_contiguous, non-contiguous tensors are saved as contiguous copies."""
    state_dict = model.state_dict()
    metadata = dict(metadata) if metadata is not None else None
    # Lone tensors viewing part of a storage are saved as themselves, where the package's
    # save_model refuses them: only groups of two or more names drop any.
    for kept, dropped in _names_to_remove(state_dict, _tied(state_dict)).items():
        for name in dropped:
            if metadata is None:
                metadata = {}
            metadata.setdefault(name, kept)
            del state_dict[name]
    if force_contiguous:
        state_dict = {k: v.contiguous() for k, v in state_dict.items()}
    try:
        save_file(state_dict, filename, metadata)
    except ValueError as e:
        raise ValueError(f"{e} (or use save_model(..., force_contiguous=True))") from None


def _loads_plainly(model):
    """True when model.load_state_dict would only check each shape and copy: no module changes
    how it loads (an override, a load hook, extra state)."""
    base = _torch.nn.Module
    if type(model).load_state_dict is not base.load_state_dict:
        return False
    for m in model.modules():
        cls = type(m)
        if (cls._load_from_state_dict is not base._load_from_state_dict
                or getattr(cls, "get_extra_state", None) is not getattr(base, "get_extra_state", None)
                or m._load_state_dict_pre_hooks
                or getattr(m, "_load_state_dict_post_hooks", None)):
            return False
    return True


def load_model(model, filename, strict=True, device="cpu", *, backend="mmap", token=None,
               sha256=None):
    """Loads a file into `model` and returns (missing, unexpected) names. Names the model ties
    to another (they share memory) are loaded through the name the file has; names the file's
    metadata records as dropped in favour of a kept tensor ({dropped: kept}, as save_model
    writes) are loaded from it. With strict, any missing or unexpected name is a RuntimeError.

    One copy, from the file into the parameters: for a model whose modules load as nn.Module
    does (no overrides or load hooks), parameters and buffers on the CPU with the file's dtype
    and shape are filled straight from the file on every core; the rest goes through
    model.load_state_dict. `sha256`: checked first, as load_file checks it."""
    model_state = model.state_dict()
    with _safe_open(filename, framework="pt", device=device, backend=backend, token=token,
                    sha256=sha256) as f:
        names = f.keys()
        records = f.metadata() or {}
        tied = _names_to_remove(model_state, _tied(model_state), preferred_names=names)
        tied_names = {n for dropped in tied.values() for n in dropped}
        # Model name -> file name: itself, or the kept tensor of a dropped one not tied here.
        sources = {n: n for n in names}
        for dropped, kept in records.items():
            if (dropped in model_state and dropped not in sources and dropped not in tied_names
                    and kept in sources):
                sources[dropped] = kept
        direct = {}
        if _torch.device(device if not isinstance(device, int) else f"cuda:{device}").type == "cpu" \
                and _loads_plainly(model):
            for name, target in model_state.items():
                src = sources.get(name)
                dtype = _TORCH_DTYPES.get(f.get_dtype(src)) if src is not None else None
                if (dtype is not None and dtype == target.dtype and dtype is not _TORCH_DTYPES.get("F4")
                        and f.get_shape(src) == list(target.shape)
                        and target.device.type == "cpu" and target.is_contiguous()):
                    direct[name] = src
            f._file.read_many([(src, model_state[name].data_ptr(),
                                model_state[name].nelement() * model_state[name].element_size())
                               for name, src in direct.items()])
        rest = {name: f.get_tensor(src) for name, src in sources.items() if name not in direct}
    missing, unexpected = model.load_state_dict(rest, strict=False)
    missing = set(missing) - direct.keys()
    for name in tied_names:
        if name in missing:
            missing.remove(name)
        elif name in names:
            unexpected.append(name)
    if strict and (missing or unexpected):
        error = f"Error(s) in loading state_dict for {model.__class__.__name__}:"
        if missing:
            error += "\n    Missing key(s) in state_dict: " + ", ".join(
                f'"{k}"' for k in sorted(missing))
        if unexpected:
            error += "\n    Unexpected key(s) in state_dict: " + ", ".join(
                f'"{k}"' for k in sorted(unexpected))
        raise RuntimeError(error)
    return sorted(missing), unexpected
