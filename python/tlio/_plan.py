"""Read plans shared by tlio.numpy and tlio.torch: what a plan argument asks for, and the
ReadPlan that reads it (docs/loading.md)."""
import os as _os
from collections.abc import Mapping as _Mapping

from . import _tlio

DEFAULT_MAX_INFLIGHT_BYTES = 64 << 20
# O_DIRECT reads land in a buffer without a copy where its address is congruent to the file
# offset modulo this (tlio.h's TL_DIRECT_ALIGNMENT).
DIRECT_ALIGNMENT = 4096
# Smaller items of a direct plan get buffers of their own: placing one costs up to a page of
# padding, more than copying it.
_PLACED_MIN_BYTES = 64 << 10


def _dimension_index(name, dim, size, value):
    """(start, stop, is_index) for an int of dimension `dim`, negative ones counted from the end."""
    if isinstance(value, bool):
        raise TypeError(f"tensor {name!r}: dimension {dim}: a bool is not an index")
    i = int(value)
    if i < 0:
        if i < -size:
            raise ValueError(f"tensor {name!r}: index {i} is out of range for dimension {dim} of "
                             f"size {size}")
        i += size
    return (i, i + 1, True)


def slice_spec(name, shape, spec):
    """The plan's slice of tensor `name` as (start, stop, is_index) per leading dimension: `spec`
    is a tuple of ints and slices (step 1), one of them alone, or ... for the whole tensor."""
    if spec is Ellipsis:
        return []
    items = spec if isinstance(spec, tuple) else (spec,)
    if len(items) > len(shape):
        raise ValueError(f"tensor {name!r} (shape {list(shape)}): {len(items)} indices for "
                         f"{len(shape)} dimensions")
    out = []
    for dim, item in enumerate(items):
        size = shape[dim]
        if isinstance(item, slice):
            if item.step not in (None, 1):
                raise ValueError(f"tensor {name!r}: dimension {dim}: a plan's slices have step 1, "
                                 f"not {item.step}")
            start, stop, _ = item.indices(size)
            out.append((start, max(start, stop), False))
        elif hasattr(item, "__index__"):
            out.append(_dimension_index(name, dim, size, item.__index__()))
        else:
            raise TypeError(f"tensor {name!r}: dimension {dim}: {item!r} is not an int or a slice")
    return out


def _source(source):
    return source if isinstance(source, str) else _os.fspath(source)


def resolve(plan, entries):
    """[(name, slice spec)] of the entries (name, shape, dtype, quantized) the plan keeps: all of
    them whole without a plan; a mapping's names (KeyError for one the source lacks); a callable's
    answers (None skips, ... is whole)."""
    if plan is None:
        return [(name, ...) for name, _, _, _ in entries]
    if isinstance(plan, _Mapping):
        known = {name: shape for name, shape, _, _ in entries}
        for name in plan:
            if name not in known:
                raise KeyError(f"the plan names {name!r}, which the source does not have")
        return [(name, spec) for name, spec in plan.items() if spec is not None]
    if callable(plan):
        chosen = []
        for name, shape, dtype, _ in entries:
            spec = plan(name, tuple(shape), dtype)
            if spec is not None:
                chosen.append((name, spec))
        return chosen
    raise TypeError(f"plan must be a mapping of names to slices or a callable, not "
                    f"{type(plan).__name__}")


class Planned:
    """A ReadPlan with the items a plan argument asked for: `items` lists (name, index, shape,
    dtype, nbytes, stored) in the order asked; `stored` is (file, offset) for an item stored as
    one range of a file, else None."""

    def __init__(self, source, plan, *, dtype=None, keep_packed=False, token=None,
                 max_inflight_bytes=DEFAULT_MAX_INFLIGHT_BYTES, backend="pread"):
        if backend not in ("pread", "direct"):
            raise ValueError(f"a plan reads with backend 'pread' or 'direct', not {backend!r}")
        self.plan = _tlio.ReadPlan(_source(source), max_inflight_bytes=int(max_inflight_bytes),
                                   keep_packed=bool(keep_packed), token=token or "",
                                   direct=backend == "direct")
        entries = self.plan.tensors()
        shapes = {name: (shape, quantized) for name, shape, _, quantized in entries}
        self.direct = backend == "direct"
        self.items = []
        for name, spec in resolve(plan, entries):
            shape, quantized = shapes[name]
            wanted = dtype if quantized and dtype is not None else ""
            index, out_shape, out_dtype, nbytes, stored = self.plan.add(
                name, slice_spec(name, shape, spec), wanted)
            self.items.append((name, index, tuple(out_shape), out_dtype, nbytes, stored))

    def congruent_buffers(self):
        """{item index: flat uint8 array of its bytes} for a direct plan: views of one block per
        file, each placed at an address congruent to its file offset modulo DIRECT_ALIGNMENT so
        that O_DIRECT reads land in it without a copy; items adjacent in the file are adjacent in
        the block. A block lives while one of its views does. Items smaller than 64 KiB, not
        stored as one range, or at offsets their element size does not divide are left out (and
        everything for a pread plan)."""
        if not self.direct:
            return {}
        by_file = {}
        for _, index, shape, _, nbytes, stored in self.items:
            count = 1
            for n in shape:
                count *= n
            itemsize = max(1, nbytes // count) if count else 1
            if stored is not None and nbytes >= _PLACED_MIN_BYTES and stored[1] % itemsize == 0:
                by_file.setdefault(stored[0], []).append((stored[1], index, nbytes))
        out = {}
        for chosen in by_file.values():
            chosen.sort()
            where, pos = [], 0
            for offset, index, nbytes in chosen:
                pos += (offset - pos) % DIRECT_ALIGNMENT
                where.append((index, pos, nbytes))
                pos += nbytes
            block = _tlio.fresh_bytes(pos + DIRECT_ALIGNMENT)
            start = -block.ctypes.data % DIRECT_ALIGNMENT  # the block's first page boundary
            for index, pos, nbytes in where:
                out[index] = block[start + pos:start + pos + nbytes]
        return out
