"""tlio.torch.load_distributed: every byte read from storage once across a torch.distributed
group, moved between ranks by the group's own collectives (docs/loading.md).

Every rank runs the same sequence of collectives, whatever happens:
1. each rank opens the source and builds its plan; a failure anywhere is agreed on (one
   all_reduce) and raised on every rank;
2. the ranks exchange what they will read and what they want (all_gather_object); the union
   of all reads is cut into chunks dealt round-robin, so each rank reads a 1/N share and every
   byte is read once; every buffer of the rounds is allocated (a failure agreed on);
3. in rounds of one chunk per rank, each rank reads its chunk and an all_to_all_single sends
   every other rank the parts of it that rank wants (the group's tensors are flat uint8, so
   gloo's missing bf16 and bool and its non-contiguous pitfalls never arise);
4. a read error is agreed on after the rounds, a dequantization error after that, each raised
   on every rank.
Each rank reads its next chunk while the current round is exchanged. Peak memory besides the
results: two chunks read, what it sends, what it receives, together at most max_inflight_bytes.
"""
import bisect as _bisect
import concurrent.futures as _futures

import torch as _torch
import torch.distributed as _dist

from . import _plan, _tlio

_MIN_CHUNK = 1 << 20


def _describe(error):
    """What another rank needs to raise the same error: (kind, errno, message, rule, tensor)."""
    for kind in (_tlio.VerificationError, _tlio.SafetensorError):
        if isinstance(error, kind):
            return (kind.__name__, None, str(error), getattr(error, "rule", None),
                    getattr(error, "tensor", None))
    if isinstance(error, OSError):
        return ("OSError", error.errno, error.strerror if error.errno else str(error), None,
                getattr(error, "filename", None))
    for kind in (KeyError, MemoryError, TypeError, ValueError):
        if isinstance(error, kind):
            return (kind.__name__, None, error.args[0] if kind is KeyError and error.args
                    else str(error), None, None)
    return (type(error).__name__, None, str(error), None, None)


def _rebuild(rank, info):
    kind, errno, message, rule, tensor = info
    text = f"rank {rank}: {message}"
    if kind == "OSError":
        return OSError(errno, text) if errno else OSError(text)
    if kind in ("SafetensorError", "VerificationError"):
        e = getattr(_tlio, kind)(text)
        e.rule, e.tensor, e.offset = rule, tensor, None
        if kind == "VerificationError":
            e.problems = [text]
        return e
    builtin = {"KeyError": KeyError, "MemoryError": MemoryError, "TypeError": TypeError,
               "ValueError": ValueError}.get(kind)
    return builtin(text) if builtin else RuntimeError(f"rank {rank}: {kind}: {message}")


class _Group:
    def __init__(self, group):
        if not _dist.is_available() or not _dist.is_initialized():
            raise RuntimeError("load_distributed needs an initialised torch.distributed process "
                               "group (torch.distributed.init_process_group)")
        self.group = group
        self.rank = _dist.get_rank(group)
        self.size = _dist.get_world_size(group)
        # nccl moves CUDA tensors only; gloo (and the others) CPU ones.
        self.device = (_torch.device("cuda", _torch.cuda.current_device())
                       if _dist.get_backend(group) == "nccl" else _torch.device("cpu"))

    def agree(self, failure):
        """Raises on every rank the error of the first rank that failed, if one did."""
        flag = _torch.tensor([0 if failure is None else 1], dtype=_torch.int32, device=self.device)
        _dist.all_reduce(flag, op=_dist.ReduceOp.MAX, group=self.group)
        if not int(flag.item()):
            return
        infos = [None] * self.size
        _dist.all_gather_object(infos, None if failure is None else _describe(failure),
                                group=self.group)
        rank, info = next((r, i) for r, i in enumerate(infos) if i is not None)
        raise _rebuild(rank, info) from failure

    def gather(self, value):
        values = [None] * self.size
        _dist.all_gather_object(values, value, group=self.group)
        return values


def _union(all_reads):
    """The reads of every rank merged: sorted (file, offset, length), overlapping ones joined."""
    merged = []
    for f, off, length in sorted(r for reads in all_reads for r in reads):
        if merged and merged[-1][0] == f and off <= merged[-1][1] + merged[-1][2]:
            last_f, last_off, last_len = merged[-1]
            merged[-1] = (f, last_off, max(last_off + last_len, off + length) - last_off)
        else:
            merged.append((f, off, length))
    return merged


def _chunks(segments, size):
    out = []
    for f, off, length in segments:
        for start in range(off, off + length, size):
            out.append((f, start, min(size, off + length - start)))
    return out


class _Wants:
    """One rank's reads, for finding the parts of a chunk it wants."""

    def __init__(self, reads):
        self.reads = sorted(reads)
        self.keys = [(f, off) for f, off, _ in self.reads]

    def parts(self, chunk):
        """[(offset, length)] of `chunk` (file, offset, length) this rank wants, in order."""
        f, start, length = chunk
        end = start + length
        i = max(0, _bisect.bisect_right(self.keys, (f, start)) - 1)
        out = []
        for rf, roff, rlen in self.reads[i:]:
            if rf < f:
                continue
            if rf > f or roff >= end:
                break
            a, b = max(roff, start), min(roff + rlen, end)
            if a < b:
                out.append((a, b - a))
        return out


def _address(tensor, offset=0):
    return tensor.data_ptr() + offset


def _exchange(g, planned, wants, round_chunks, own, staging, buffers):
    """One round: every rank's chunk (this rank's in `staging`) to the ranks that want parts of
    it, with one all_to_all_single through `buffers` (send, receive; and their device copies
    for nccl), allocated before the rounds; returns a delivery error, if any."""
    # parts[o][q]: what rank q wants of the chunk rank o owns this round.
    parts = [[w.parts(c) for w in wants] for c in round_chunks]
    send_sizes = [0] * g.size
    recv_sizes = [0] * g.size
    for o in range(len(round_chunks)):
        for q in range(g.size):
            if q != o:
                n = sum(length for _, length in parts[o][q])
                if o == g.rank:
                    send_sizes[q] = n
                if q == g.rank:
                    recv_sizes[o] = n
    try:
        if own is not None:  # this rank's own wants of its chunk, straight from staging
            for off, length in parts[g.rank][g.rank]:
                planned.plan.deliver(own[0], off, _address(staging, off - own[1]), length)
    except Exception as e:  # noqa: BLE001 - the collective below must run all the same
        failure = e
    else:
        failure = None
    if not any(parts[o][q] for o in range(len(round_chunks)) for q in range(g.size) if q != o):
        return failure  # every rank knows every rank's wants, so all skip the exchange alike
    send = buffers[0][:sum(send_sizes)]
    pos = 0
    if own is not None:
        for q in range(g.size):
            if q == g.rank:
                continue
            for off, length in parts[g.rank][q]:
                send[pos:pos + length] = staging[off - own[1]:off - own[1] + length]
                pos += length
    recv = buffers[1][:sum(recv_sizes)]
    if g.device.type == "cpu":
        _dist.all_to_all_single(recv, send, output_split_sizes=recv_sizes,
                                input_split_sizes=send_sizes, group=g.group)
    else:
        send_device = buffers[2][:send.numel()]
        recv_device = buffers[3][:recv.numel()]
        send_device.copy_(send)
        _dist.all_to_all_single(recv_device, send_device, output_split_sizes=recv_sizes,
                                input_split_sizes=send_sizes, group=g.group)
        recv.copy_(recv_device)
    pos = 0
    try:
        for o, chunk in enumerate(round_chunks):
            if o == g.rank:
                continue
            for off, length in parts[o][g.rank]:
                planned.plan.deliver(chunk[0], off, _address(recv, pos), length)
                pos += length
    except Exception as e:  # noqa: BLE001
        failure = failure or e
    return failure


def load_distributed(source, make_tensor, *, plan=None, group=None, dtype=None,
                     keep_packed=False, token=None,
                     max_inflight_bytes=_plan.DEFAULT_MAX_INFLIGHT_BYTES, backend="pread"):
    """{name: CPU tensor}; `make_tensor(shape, header dtype, name)` makes an empty contiguous one."""
    g = _Group(group)
    failure = planned = None
    out = {}
    try:
        planned = _plan.Planned(source, plan, dtype=dtype, keep_packed=keep_packed, token=token,
                                max_inflight_bytes=max_inflight_bytes, backend=backend)
        for name, index, shape, item_dtype, nbytes, _ in planned.items:
            t = make_tensor(shape, item_dtype, name)
            planned.plan.set_destination(index, t.data_ptr(), nbytes)
            out[name] = t
        # What this rank will read (gaps included: fewer requests), what it wants (no gaps:
        # only that is sent to it), and its bound on memory in flight.
        sizes = [planned.plan.file_names, planned.plan.reads(), planned.plan.wanted(),
                 int(max_inflight_bytes)]
    except Exception as e:  # noqa: BLE001 - every rank raises it, below
        failure, sizes = e, None
    g.agree(failure)

    gathered = g.gather(sizes)
    names = [s[0] for s in gathered]
    if any(n != names[0] for n in names):
        g.agree(ValueError(f"the ranks opened different sources: {names[0]} and "
                           f"{next(n for n in names if n != names[0])}"))
    wants = [_Wants(s[2]) for s in gathered]
    # Every rank must cut the same chunks: the smallest bound any rank asked for.
    chunk_size = max(_MIN_CHUNK, min(s[3] for s in gathered) // (2 * g.size))
    chunks = _chunks(_union(s[1] for s in gathered), chunk_size)
    rounds = [chunks[first:first + g.size] for first in range(0, len(chunks), g.size)]

    failure = None
    try:  # every buffer of the rounds, so that no rank fails for memory between collectives
        staging = [_torch.empty(chunk_size, dtype=_torch.uint8)
                   for _ in range(2 if len(rounds) > 1 else 1)]
        most = (g.size - 1) * chunk_size if rounds else 0
        buffers = [_torch.empty(most, dtype=_torch.uint8), _torch.empty(most, dtype=_torch.uint8)]
        if g.device.type != "cpu":
            buffers += [_torch.empty(most, dtype=_torch.uint8, device=g.device) for _ in range(2)]
    except Exception as e:  # noqa: BLE001
        failure = e
    g.agree(failure)

    def own_chunk(k):
        return rounds[k][g.rank] if k < len(rounds) and g.rank < len(rounds[k]) else None

    def read(k, buffer):
        """Reads this rank's chunk of round k into `buffer` (on the reader thread)."""
        own = own_chunk(k)
        if own is not None:
            planned.plan.read_data(own[0], own[1], _address(buffer), own[2])

    # Two staging buffers: round k+1's chunk is read (GIL released) while round k's is
    # exchanged, so storage and the group's links are busy at once.
    with _futures.ThreadPoolExecutor(1, thread_name_prefix="tlio-read") as reader:
        pending = reader.submit(read, 0, staging[0]) if rounds else None
        for k, round_chunks in enumerate(rounds):
            buffer = staging[k % len(staging)]
            try:
                pending.result()
            except Exception as e:  # noqa: BLE001 - agreed on after the last round
                failure = failure or e
            if k + 1 < len(rounds):
                pending = reader.submit(read, k + 1, staging[(k + 1) % len(staging)])
            error = _exchange(g, planned, wants, round_chunks, own_chunk(k), buffer, buffers)
            failure = failure or error
    # A failed read is agreed on before anything decodes what it left, so the error raised is
    # the read's, not what decoding its bytes would say.
    g.agree(failure)
    try:
        planned.plan.finish()
    except Exception as e:  # noqa: BLE001
        failure = e
    g.agree(failure)
    return out
