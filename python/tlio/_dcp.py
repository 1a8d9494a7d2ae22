"""tlio.torch.StorageReader: torch.distributed.checkpoint (DCP) reading a Hugging Face folder (or
one safetensors file, local or remote) through tlio's mapped files or read plans, so that
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


def _open_plan(location, token, backend, max_inflight_bytes):
    return _tlio.ReadPlan(_plan._source(location), max_inflight_bytes=int(max_inflight_bytes),
                          keep_packed=True, token=token or "", direct=backend == "direct")


class StorageReader(_StorageReader):
    """A DCP StorageReader over the safetensors weights at `location` (a model folder, a
    safetensors file, or a URL: http(s)://, s3://, gs://, hf://), each stored tensor one whole
    chunk of the checkpoint under its name (a quantized weight's stored tensors are listed as
    stored). ``read_data`` reads only the slices a rank's load plan asks for: from a local
    folder, copied from its mapping; from a remote one (or with backend="direct", O_DIRECT past
    the page cache), in one read plan of few large ranged reads."""

    def __init__(self, location, *, token=None, backend="pread",
                 max_inflight_bytes=_plan.DEFAULT_MAX_INFLIGHT_BYTES):
        super().__init__()
        if backend not in ("pread", "direct"):
            raise ValueError(f"a plan reads with backend 'pread' or 'direct', not {backend!r}")
        self._location = _plan._source(location)
        self._token, self._backend, self._inflight = token, backend, max_inflight_bytes

    def reset(self, checkpoint_id=None):
        if checkpoint_id is not None:
            self._location = _plan._source(checkpoint_id)

    @property
    def location(self):
        """What the reader reads: a path or URL (a new one after reset(checkpoint_id))."""
        return self._location

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
        pass  # every rank reads by name: nothing to keep of the coordinator's metadata

    def prepare_local_plan(self, plan):
        return plan

    def prepare_global_plan(self, plans):
        return plans

    def read_data(self, plan, planner):
        items = []
        for req in plan.items:
            if req.type == LoadItemType.BYTE_IO:
                raise ValueError(f"{req.storage_index.fqn!r}: a safetensors folder holds tensors "
                                 "only, not the pickled values of a DCP checkpoint")
            items.append((req, planner.resolve_tensor(req).detach()))
        if self._backend == "pread" and _os.path.exists(self.location):
            self._copy_mapped(items)
        else:
            self._read_planned(items)
        for req, target in items:
            planner.commit_tensor(req, target)
        done = _Future()
        done.set_result(None)
        return done

    def _copy_mapped(self, items):
        """A local folder: each slice copied from the mapped file into its destination, touching
        only the pages it spans (a column shard reads no byte of the other columns)."""
        from . import safe_open
        with safe_open(self.location, "pt") as mapped:
            for req, target in items:
                whole = mapped.get_tensor(req.storage_index.fqn)
                target.copy_(whole[tuple(slice(o, o + n)
                                         for o, n in zip(req.storage_offsets, req.lengths))])

    def _read_planned(self, items):
        """A remote source, or reads past the page cache: one read plan for every slice, read in
        few large ranged reads straight into the destinations that are contiguous CPU tensors of
        the stored dtype, through a buffer copied as DCP copies into the others."""
        from .torch import _empty
        reads = _open_plan(self.location, self._token, self._backend, self._inflight)
        buffers = []
        for req, target in items:
            name = req.storage_index.fqn
            spec = [(o, o + n, False) for o, n in zip(req.storage_offsets, req.lengths)]
            index, shape, dtype, nbytes, _ = reads.add(name, spec, "")
            if tuple(target.shape) != tuple(shape):
                raise ValueError(f"{name!r}: the plan's slice has shape {list(shape)}, its "
                                 f"destination {list(target.shape)}")
            direct = (target.device.type == "cpu" and target.is_contiguous() and
                      target.dtype == _empty((), dtype, name).dtype)
            buffer = target if direct else _empty(tuple(shape), dtype, name)
            reads.set_destination(index, buffer.data_ptr(), nbytes)
            buffers.append(None if direct else buffer)
        reads.execute()
        for (_, target), buffer in zip(items, buffers):
            if buffer is not None:
                target.copy_(buffer)

    @classmethod
    def validate_checkpoint_id(cls, checkpoint_id):
        try:
            return bool(_tlio.ReadPlan(_plan._source(checkpoint_id), max_inflight_bytes=1 << 20,
                                       keep_packed=True, token="", direct=False).tensors())
        except (OSError, ValueError, TypeError):
            return False
