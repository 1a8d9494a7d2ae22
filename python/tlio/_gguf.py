"""A GGUF file (llama.cpp's format) behind what safe_open asks of a file: its tensors under their
GGUF names and numpy-order shapes, each decoded into a new array as ggml decodes it (block types
as F32, or the dtype asked for), its numbers and strings as the metadata dict."""
import numpy as _np

from . import _tlio

_DTYPE_NAMES = {_np.dtype("float32"): "F32", _np.dtype("float64"): "F64", _np.dtype("float16"): "F16"}


class _Gguf:
    remote = direct = False  # tensors come decoded, one by one

    def __init__(self, path, token):
        self.file = _tlio.GgufFile(path, token or "")
        self.name = self.file.name

    def keys(self):
        return sorted(self.file.offset_keys())

    def offset_keys(self):
        return self.file.offset_keys()

    def metadata(self):
        return self.file.metadata() or None

    def in_memory(self):
        return False  # slices are read by read_slice: only the blocks they touch

    def read_slice(self, name, leading):
        return self.file.read_slice(name, leading)

    def dtype(self, name):
        return self.file.dtype(name)

    def shape(self, name):
        return self.file.shape(name)

    def array(self, name, writable=False):  # noqa: ARG002 - always a new array
        return self.file.values(name)

    copy = array

    def copies(self, names):
        return [self.file.values(n) for n in names]

    def converted(self, name, dtype):
        if dtype not in _DTYPE_NAMES:
            raise ValueError(f"dtype {dtype} is not float32, float64 or float16")
        return self.file.values(name, _DTYPE_NAMES[dtype])

    def read_into(self, name, out):
        _np.copyto(out, self.file.values(name).reshape(out.shape), casting="no")
        return out


def import_gguf(src, dst, dtype=None, *, token=None):
    """Writes the tensors of the GGUF file `src` (a path or URL) to the safetensors file `dst`,
    atomically, as ``tlio convert SRC DST.safetensors`` does: GGUF names, numpy-order shapes,
    every block type (Q4_K, Q8_0, ...) decoded exactly as ggml decodes it, floating tensors as
    `dtype` ("F32", "F16" or "BF16"; default BF16), integer tensors as they are; numbers and
    strings become metadata. Returns counts: tensors, decoded, converted, kept, metadata_kept,
    metadata_skipped (arrays), data_bytes_in, data_bytes_out.

    A `dst` that does not end in ".safetensors" is a Hugging Face folder, as ``tlio convert SRC
    DST_DIR`` writes it: model.safetensors under the Hugging Face names (Q/K rows put back),
    config.json, tokenizer.json (byte-level BPE and SentencePiece vocabularies), tokenizer_config.json and
    generation_config.json; the counts then have files (those written) and tokenizer_note (why
    tokenizer.json is not among them, or "")."""
    import os
    dst = os.fsdecode(os.fspath(dst))
    return _tlio.import_gguf(os.fspath(src), dst, "" if dtype is None else str(dtype), token or "",
                             not dst.endswith(".safetensors"))


def gguf_metadata(src, *, token=None):
    """Every metadata key of the GGUF file `src` with its value: int, float, bool, str, or a list
    of those (a vocabulary comes whole)."""
    import os
    return _tlio.GgufFile(os.fspath(src), token or "").fields()


def export_gguf(src, dst, dtype="F16", *, token=None, split_max_size=None, allow_requantize=False,
                pure=False):
    """Writes the Hugging Face model folder `src` (a path or URL) as the GGUF file `dst` that
    llama.cpp loads, as ``tlio convert SRC DST.gguf --dtype DTYPE`` does: the 2-D weights as
    `dtype` ("F32", "F16", "BF16"; or one of llama-quantize's file types "Q4_0", "Q4_1", "Q5_0",
    "Q5_1", "Q8_0", "Q2_K", "Q3_K_S", "Q3_K_M", "Q3_K_L", "Q4_K_S", "Q4_K_M", "Q5_K_S",
    "Q5_K_M", "Q6_K" ("Q3_K", "Q4_K", "Q5_K": its _M ones): each weight the type and bytes
    llama-quantize gives it, quantized as ggml's reference quantizers do; `pure` for the file
    type's base type everywhere, as ``llama-quantize --pure``), norms and biases F32, the tokenizer
    and hyperparameters as llama.cpp reads them. Returns architecture, tensors, types ({type:
    count}), fallbacks (weights whose rows are not whole blocks, written as llama.cpp would),
    data_bytes_in, bytes_out, files. `split_max_size` (bytes, or "5GB", "500MiB") writes
    llama.cpp's split files of at most that many tensor bytes each (``--split-max-size``),
    named DST-00001-of-0000N.gguf; files lists them. An architecture, tokenizer or config key it
    does not export raises ValueError naming it.

    `src` may be a GGUF file: it is requantized as llama-quantize does (its weights in `dtype`,
    decoded as ggml decodes them, the rest and the metadata kept); weights quantized already
    only with `allow_requantize` (quality is lost twice), else ValueError naming them."""
    import os
    from ._rewrites import _shard_size
    return _tlio.export_gguf(os.fspath(src), os.fspath(dst), str(dtype), token or "",
                             _shard_size(split_max_size) if split_max_size is not None else 0,
                             bool(allow_requantize), bool(pure))


def transcode(src, dst, to="mlx", *, lossy=False, dtype=None, token=None):
    """Carries the quantized weights of `src` (a path or URL) into the layout `to`, as ``tlio
    transcode SRC DST --to TO`` does, each proven on the way (its values in the output equal the
    source's, bit for bit but a -0 may be +0). "mlx": the GGUF file `src` as the folder `dst`,
    Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_0, Q4_K and Q5_K weights as MLX affine with F32 scales and
    biases, MXFP4 and NVFP4 as MLX's mxfp4 and nvfp4; or the model folder `src` as the folder
    `dst`, compressed-tensors' MXFP4 and NVFP4 and FP8 with power-of-two scales (as mxfp8) byte
    for byte. "gguf": the model folder `src` as the GGUF
    file `dst`, MLX's and compressed-tensors' MXFP4 and NVFP4 weights as ggml's blocks.
    "compressed-tensors": an MLX folder's mxfp4 and nvfp4 Linear weights byte for byte. Tensors
    written as floats are in `dtype` ("F32", "F16" or "BF16"; default BF16). A weight no rule
    carries raises ValueError naming it, unless `lossy` (then requantized, its error reported).
    Returns weights (a dict per weight: name, source, target, scale_dtype, exact, zero_signs,
    rmse, max_abs_error), plain, bytes_in, bytes_out, files."""
    import os
    return _tlio.transcode(os.fspath(src), os.fsdecode(os.fspath(dst)), str(to), bool(lossy),
                           "" if dtype is None else str(dtype), token or "")
