"""tlio.torch.StorageReader: torch.distributed.checkpoint (DCP) reading a Hugging Face folder (or
one safetensors file, local or remote) through tlio's read plans, so that
``dcp.load(state_dict, storage_reader=tlio.torch.StorageReader(location))`` fills a sharded state
dict, each rank reading only the slices its shards need (docs/loading.md)."""
import os as _os

import torch as _torch
from torch.distributed.checkpoint import StorageReader as _StorageReader
from torch.distributed.checkpoint.metadata import (ChunkStorageMetadata, Metadata, MetadataIndex,
                                                   StorageMeta, TensorProperties,
                                                   TensorStorageMetadata)
from torch.distributed.checkpoint.planner import LoadItemType
from torch.futures import Future as _Future

from . import _plan, _tlio


def _one_range(lengths, size):
    """Whether a slice of `lengths` of a tensor of `size` is one range of its bytes: every
    dimension before the last one it cuts has length 1."""
    cut = [d for d, (n, whole) in enumerate(zip(lengths, size)) if n != whole]
    return not cut or all(lengths[d] == 1 for d in range(cut[-1]))


def _open_plan(location, token, backend, max_inflight_bytes):
    return _tlio.ReadPlan(_plan._source(location), max_inflight_bytes=int(max_inflight_bytes),
                          keep_packed=True, token=token or "", direct=backend == "direct")


class StorageReader(_StorageReader):
    """A DCP StorageReader over the safetensors weights at `location` (a model folder, a
    safetensors file, or a URL: http(s)://, s3://, gs://, hf://), each stored tensor one whole
    chunk of the checkpoint under its name (a quantized weight's stored tensors are listed as
    stored). ``read_data`` reads every slice a rank's load plan asks for in one read plan: few
    large reads straight into the destination tensors where they are contiguous CPU tensors of
    the stored dtype, else through one buffer per slice copied as DCP copies. `backend`:
    "pread", or "direct" (O_DIRECT, past the page cache)."""

    def __init__(self, location, *, token=None, backend="pread",
                 max_inflight_bytes=_plan.DEFAULT_MAX_INFLIGHT_BYTES):
        super().__init__()
        if backend not in ("pread", "direct"):
            raise ValueError(f"a plan reads with backend 'pread' or 'direct', not {backend!r}")
        self.location = _plan._source(location)
        self._token, self._backend, self._inflight = token, backend, max_inflight_bytes
        self._sizes = {}

    def reset(self, checkpoint_id=None):
        if checkpoint_id is not None:
            self.location = _plan._source(checkpoint_id)

    def read_metadata(self, *args, **kwargs):
        from .torch import _torch_dtype  # (tlio.torch imports this module lazily)
        entries = _open_plan(self.location, self._token, self._backend, self._inflight).tensors()
        state, storage = {}, {}
        for name, shape, dtype, _ in entries:
            size = _torch.Size(shape)
            state[name] = TensorStorageMetadata(
                properties=TensorProperties(dtype=_torch_dtype(dtype, name)), size=size,
                chunks=[ChunkStorageMetadata(offsets=_torch.Size([0] * len(shape)), sizes=size)])
            storage[MetadataIndex(name, [0] * len(shape))] = name
        return Metadata(state_dict_metadata=state, storage_data=storage,
                        storage_meta=StorageMeta(checkpoint_id=self.location))

    def set_up_storage_reader(self, metadata, is_coordinator, *args, **kwargs):
        self._sizes = {name: md.size for name, md in metadata.state_dict_metadata.items()}

    def prepare_local_plan(self, plan):
        return plan

    def prepare_global_plan(self, plans):
        return plans

    def read_data(self, plan, planner):
        from . import safe_open
        from .torch import _empty
        reads = _open_plan(self.location, self._token, self._backend, self._inflight)
        local = self._backend == "pread" and _os.path.exists(self.location)
        mapped = None
        pending = []
        for req in plan.items:
            if req.type == LoadItemType.BYTE_IO:
                raise ValueError(f"{req.storage_index.fqn!r}: a safetensors folder holds tensors "
                                 "only, not the pickled values of a DCP checkpoint")
            name = req.storage_index.fqn
            target = planner.resolve_tensor(req).detach()
            if local and (_os.environ.get("X_ALL_MAPPED") or not _one_range(req.lengths, self._sizes[name])):
                # A slice in pieces (a column shard) of a local file: copied from the mapping, which
                # touches only its pages; a read plan would read the rows between them too.
                if mapped is None:
                    mapped = safe_open(self.location, "pt")
                whole = mapped.get_tensor(name)
                target.copy_(whole[tuple(slice(o, o + n)
                                         for o, n in zip(req.storage_offsets, req.lengths))])
                planner.commit_tensor(req, target)
                continue
            spec = [(o, o + n, False) for o, n in zip(req.storage_offsets, req.lengths)]
            index, shape, dtype, nbytes, _ = reads.add(name, spec, "")
            if tuple(target.shape) != tuple(shape):
                raise ValueError(f"{name!r}: the plan's slice has shape {list(shape)}, its "
                                 f"destination {list(target.shape)}")
            direct = (target.device.type == "cpu" and target.is_contiguous() and
                      target.dtype == _empty((), dtype, name).dtype)
            buffer = target if direct else _empty(tuple(shape), dtype, name)
            reads.set_destination(index, buffer.data_ptr(), nbytes)
            pending.append((req, target, None if direct else buffer))
        reads.execute()
        for req, target, buffer in pending:
            if buffer is not None:
                target.copy_(buffer)
            planner.commit_tensor(req, target)
        done = _Future()
        done.set_result(None)
        return done

    @classmethod
    def validate_checkpoint_id(cls, checkpoint_id):
        try:
            return bool(_tlio.ReadPlan(_plan._source(checkpoint_id), max_inflight_bytes=1 << 20,
                                       keep_packed=True, token="", direct=False).tensors())
        except (OSError, ValueError, TypeError):
            return False
