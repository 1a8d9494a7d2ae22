"""Whole files and folders rewritten (convert, quantize, dequantize) and edited without touching
tensor bytes: the package's functions over the compiled module's, re-exported by tlio."""
import os as _os
import types as _types
from typing import NamedTuple as _NamedTuple

from . import _tlio


# ---- whole-file conversions ----------------------------------------------------------------------

class _ConvertCounts(_NamedTuple):
    converted: int
    kept: int


class ConvertResult(_ConvertCounts):
    """What convert_file wrote: `converted` tensors changed to the new dtype, `kept` tensors
    copied as they were (not selected, already that dtype, or not convertible); `lost`, the
    tensors whose values the new dtype could not hold: {name: (overflowed, flushed)}, the
    finite values that became infinite and the nonzero ones that became zero."""

    lost = _types.MappingProxyType({})  # what _replace and _make give (they skip __new__)

    def __new__(cls, converted, kept, lost=None):
        result = super().__new__(cls, converted, kept)
        result.lost = dict(lost or {})
        return result

    def __repr__(self):
        return f"ConvertResult(converted={self.converted}, kept={self.kept}, lost={self.lost!r})"


def _shard_size(max_size):
    return _tlio.parse_size(max_size) if isinstance(max_size, str) else (max_size or 0)


def _job(job):
    """The compiled module's (id, step) of `job`: None, or (id, step) with step "plan",
    "commit", "abort" or a unit's number (docs/jobs.md)."""
    if job is None:
        return "", ""
    try:
        job_id, step = job
    except (TypeError, ValueError):
        raise TypeError(f"job is (id, step), not {job!r}") from None
    if isinstance(step, bool) or not isinstance(step, (int, str)):
        raise TypeError(f"a job's step is \"plan\", \"commit\", \"abort\" or an int, not {step!r}")
    if not job_id:
        raise ValueError("a job's id is not empty")
    return str(job_id), str(step)


_JOB_DOC = """

    `job` = (id, step) runs one step of this call as a job of units (docs/jobs.md; a folder
    `dst`): "plan" returns the number of units, each unit k (an int) writes its output shard
    into `dst`'s staging folder, "commit" publishes the folder and returns what this call
    returns, "abort" removes the staging folder. tlio.ray runs them on a Ray cluster."""


def convert_file(src, dst, dtype, include="", exclude="", *, max_size=None, cast=False, job=None):
    """Rewrites `src` into `dst` (canonically, atomically) with its floating-point tensors
    converted to `dtype` ("F32", "bf16", "float16", ...: the names ``tlio convert`` takes),
    or only those whose names match the regex `include` and not `exclude`. Returns a
    ConvertResult(converted, kept).

    `src` may be a model folder (model.safetensors, or shards with their index): `dst` is then
    a folder with the same shards, a new index, config.json (its dtype set) and the tokenizer
    and generation files, replacing `dst`'s previous weights as a whole or not at all; with
    `max_size` (bytes, or "5GB") in new shards of at most that many tensor bytes, each module's
    tensors in one (the data still written once). A folder to a dtype of 8 bits or fewer (F8_*,
    F4) is refused unless `cast` (a plain cast of every tensor, with no scale: quantize_file's
    "fp8-block" writes the scaled FP8 the Hub's loaders read)."""
    result = _tlio.convert_file(_os.fspath(src), _os.fspath(dst), str(dtype), include, exclude,
                                _shard_size(max_size), cast, *_job(job))
    return result if isinstance(result, int) else ConvertResult(*result)


convert_file.__doc__ += _JOB_DOC


def quantize_file(src, dst, scheme, include="", exclude="", blocksize=None, nested=None,
                  storage=None, allow_1d=False, *, max_size=None, job=None):
    """Quantizes the weights of `src` into `dst` (atomically), as ``tlio quantize`` does.

    scheme: "int4-g32-sym" (tinyllm int4; other group sizes as "int4-gN-sym"), "nf4" or "fp4"
    (bitsandbytes 4-bit; `blocksize` default 64, `nested` quantizes the absmax too, `storage`
    the stored dtype, "U8" by default), "int8" (LLM.int8), "fp8-block" (F8_E4M3 with F32
    scales per 128x128 block, as DeepSeek and Qwen -FP8 ship; "fp8-block64x64" for another
    block) or "fp8" (F8_E4M3 with a scale per row, compressed-tensors), or MLX's affine mode as
    "mlx-affine-<bits>bit-g<group>" ("mlx-affine": 4 bits in groups of 64; bits 2, 3, 4, 5, 6,
    8, groups 32, 64, 128), which quantizes embeddings and lm_head too, as mlx-lm does, and
    writes config.json's "quantization". By default the 2-D tensors whose
    names end in "weight" (the weights of linear layers, whatever their names: q_proj, c_attn,
    query_key_value, w1, fc1) are quantized, never embeddings or the output head (lm_head); `include`/`exclude` are regexes that choose
    others. 1-D tensors (biases, norms) stay as they are unless `include` names them and
    `allow_1d` is True. Selecting no tensor raises ValueError.

    `src` may be a model folder: `dst` is then a folder, shard by shard or in new shards of
    at most `max_size` tensor bytes (see convert_file).

    Returns one dict per selected tensor, in file order: name, quantized (bool), note (why a
    tensor of the default selection was not, or ""), rmse and max_abs_error (of the
    dequantized values, for quantized ones). Tensors outside the selection are not listed."""
    return _tlio.quantize_file(_os.fspath(src), _os.fspath(dst), scheme, include, exclude,
                               blocksize, nested, storage, allow_1d, _shard_size(max_size),
                               *_job(job))


quantize_file.__doc__ += _JOB_DOC


def dequantize_file(src, dst, dtype=None, *, max_size=None, job=None):
    """Writes `src` with every quantized weight restored as a plain tensor under its logical
    name (atomically), as ``tlio dequantize`` does: as `dtype` ("F32", "F16", "BF16"), or by
    default as its original dtype (bitsandbytes) or F32. Returns the number of weights
    restored. `src` may be a model folder: `dst` is then a folder (see convert_file; `max_size`
    re-shards it), whose config.json loses its quantization_config."""
    return _tlio.dequantize_file(_os.fspath(src), _os.fspath(dst),
                                 None if dtype is None else str(dtype), _shard_size(max_size),
                                 *_job(job))


dequantize_file.__doc__ += _JOB_DOC


# ---- editing -------------------------------------------------------------------------------------

def _strings(value, what):
    """None, one str, or an iterable of str, as a list (TypeError naming `what` otherwise)."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    try:
        items = list(value)
    except TypeError:
        raise TypeError(f"{what} must be a str or an iterable of str, not "
                        f"{type(value).__name__}") from None
    for item in items:
        if not isinstance(item, str):
            raise TypeError(f"{what} must hold str, not {type(item).__name__} ({item!r})")
    return items


def _rename_rules(rename):
    """A dict {regex: replacement} or an iterable of (regex, replacement) pairs, in order."""
    if rename is None:
        return []
    pairs = list(rename.items()) if isinstance(rename, dict) else list(rename)
    for pair in pairs:
        if (not isinstance(pair, (tuple, list)) or len(pair) != 2 or
                not all(isinstance(x, str) for x in pair)):
            raise TypeError(f"rename must map str regexes to str replacements, got {pair!r}")
    return [tuple(p) for p in pairs]


def edit_file(src, dst=None, *, metadata=None, delete=(), keep=None, drop=None, rename=None):
    """Edits the metadata and the set of tensors of `src` without touching the tensors' bytes,
    as ``tlio metadata`` and ``tlio convert --keep/--drop/--rename`` do.

    The result goes to `dst`, or replaces `src` itself when `dst` is None (or the same file): in
    place when only the header changes and keeps its length (one synced write of the header),
    else as one atomic rewrite whose tensor bytes are copied in the kernel. A model folder `src`
    is edited shard by shard (every shard's metadata) into the folder `dst` or itself,
    rewritten and published as a set.

    metadata: dict of str to str, entries added or replaced. delete: keys removed (each must
    exist). keep: a regex or a list of them; only tensors matching one are written. drop:
    regexes; matching tensors are left out. rename: {regex: replacement} or a list of pairs,
    applied in order, each replacing every match; ``\\1`` inserts a group. Regexes are
    ECMAScript, searched in names; keep and drop see the original names. A quantized weight
    moves whole: keep and drop decide by its logical name, and its stored tensors are renamed
    together.

    Returns a dict: kept, dropped and renamed (tensor counts), in_place (bool), data_bytes (of
    the result) and metadata (the result's). Raises ValueError, with nothing written, for a bad
    regex, two tensors renamed to one name, a key to delete that is not there, or a selection
    that would split a quantized weight or keep no tensor; TypeError for arguments of the wrong
    type."""
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, dict):
        raise TypeError(f"metadata must be a dict of str to str, not {type(metadata).__name__}")
    for k, v in metadata.items():
        if not isinstance(k, str) or not isinstance(v, str):
            raise TypeError(f"metadata must map str to str, got {k!r}: {v!r}")
    return _tlio.edit_file(_os.fspath(src), "" if dst is None else _os.fspath(dst), metadata,
                           _strings(delete, "delete"), _strings(keep, "keep"),
                           _strings(drop, "drop"), _rename_rules(rename))


# ---- PyTorch checkpoints -----------------------------------------------------------------------

def import_checkpoint(src, dst, key=None, *, skip_unsupported=False, max_size=None,
                      allow_empty=False, import_all=False, dtype=None, job=None):
    """Converts the PyTorch checkpoint `src` (torch.save's zip format or the legacy one) to the
    safetensors file `dst`, atomically, as `tlio import` does: its pickle is decoded, never run
    (one that names code torch.load would run raises SafetensorError, rule "pickle"). `key`
    imports the sub-object at that path ("model.encoder"). A directory holding pytorch_model.bin
    or its shards becomes a model directory, split as the source or into shards of at most
    `max_size` tensor bytes (an int, or "5GB"); so does a torch.distributed.checkpoint (DCP)
    folder (.metadata and .distcp files), each tensor assembled from its ranks' chunks. A checkpoint without any tensor raises
    SafetensorError (rule "checkpoint") unless `allow_empty`. A training checkpoint (a model
    state dict under "model", "state_dict", ... beside "optimizer" and the like) imports its
    model part, named in `chosen_key`, unless `import_all`. `dtype` ("bf16", "F16", ...: the
    names ``tlio convert`` takes) writes floating tensors in that dtype, integers as they are.
    Returns what was written: format,
    tensors (name, dtype, shape, contiguous, alias_of; chunks for DCP), dropped_values (how many values that
    are not tensors were left out), dropped ((path, kind) of the first 100,000 of them, kind
    "int", "float", "str", ...), skipped, chosen_key, tensors_written, tensors_converted,
    bytes_written."""
    return _tlio.import_checkpoint(_os.fspath(src), _os.fspath(dst), key or "", skip_unsupported,
                                   _shard_size(max_size), allow_empty, import_all,
                                   "" if dtype is None else str(dtype), *_job(job))


import_checkpoint.__doc__ += _JOB_DOC


def read_checkpoint(src, key=None):
    """The tensors of a PyTorch checkpoint or DCP folder (name, dtype, shape, contiguous,
    alias_of; chunks for DCP) as import_checkpoint would write them, without converting it: a
    DCP folder's every chunk is checked."""
    return _tlio.read_checkpoint(_os.fspath(src), key or "")
