"""Workers of the torch.distributed tests (test_distributed.py), in a module of their own so a
forkserver started with torch already imported can run them: each worker joins a gloo group on
127.0.0.1, runs one job and puts a small verdict on the queue."""
import datetime
import os
import traceback

import torch
import torch.distributed as dist

import tlio
import tlio.torch


def _expected(local, name, spec, quantized):
    """The wanted slice from the local file, cut from the dequantized whole of a quantized
    weight (a bitsandbytes weight's logical name is also its packed tensor's)."""
    with tlio.safe_open(local, "pt") as f:
        whole = f.get_dequantized(name) if name in quantized else f.get_tensor(name)
    return whole if spec is Ellipsis else whole[spec].contiguous()


def rank_plan(job):
    """The slices each rank wants, as a callable of (name, shape, dtype)."""
    def plan(name, shape, dtype):
        rank, world = dist.get_rank(), dist.get_world_size()
        spec = job["plans"][rank].get(name, None) if job.get("plans") else Ellipsis
        return spec
    return plan


def worker(rank, world, port, job, queue):
    os.environ["GLOO_SOCKET_IFNAME"] = "lo"
    verdict = {"rank": rank}
    try:
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                                world_size=world,
                                timeout=datetime.timedelta(seconds=job.get("timeout", 60)))
        try:
            if rank == job.get("broken_reader"):  # this rank's storage fails under it
                def broken(*args):
                    raise OSError(5, "injected read failure")
                tlio._tlio.ReadPlan.read_data = broken
            inflight = job.get("inflight", 64 << 20)
            if isinstance(inflight, list):
                inflight = inflight[rank]
            plan = rank_plan(job) if job.get("plans") else None
            got = tlio.torch.load_distributed(job["source"], plan=plan,
                                              max_inflight_bytes=inflight)
            wanted = job["plans"][rank] if job.get("plans") else None
            if wanted is None:
                with tlio.safe_open(job["local"], "pt") as f:
                    wanted = {name: Ellipsis for name in f.keys()}
            verdict["names"] = sorted(got)
            verdict["mismatch"] = []
            for name, spec in wanted.items():
                want = _expected(job["local"], name, spec, job.get("quantized", ()))
                t = got[name]
                if t.shape != want.shape or t.dtype != want.dtype or not t.is_contiguous() or \
                        not torch.equal(t.view(torch.uint8) if t.dtype == torch.bool else t,
                                        want.view(torch.uint8) if want.dtype == torch.bool else want):
                    verdict["mismatch"].append(name)
            verdict["ok"] = True
        except Exception as e:  # noqa: BLE001 - reported to the test
            verdict["ok"] = False
            verdict["error"] = (type(e).__name__, str(e))
        finally:
            dist.destroy_process_group()
    except Exception:  # noqa: BLE001
        verdict["ok"] = False
        verdict["error"] = ("setup", traceback.format_exc())
    queue.put(verdict)
