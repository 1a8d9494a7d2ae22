#!/usr/bin/env python3
"""Read plans and loading over a torch.distributed group (issue 27), each pair run in turn
(A B A B ...), medians:

  cold local load of a 2 GiB file (its pages dropped with posix_fadvise(DONTNEED) first):
      dd if=F of=/dev/null bs=16M iflag=direct                   the baseline
      tlio.numpy.load_sharded(F, None): every tensor, by a plan   target <= 1.1x
  4 ranks of a gloo group on 127.0.0.1, each wanting every tensor of a file nginx serves:
      each rank tlio.torch.load_sharded(URL, None) on its own     bytes from nginx: 4x the data
      tlio.torch.load_distributed(URL)                            bytes from nginx: 1x the data

Usage (after a build): PYTHONPATH=build/python /usr/bin/python3 bench/bench_distributed.py
    [DIR] [ROUNDS] [REMOTE_MiB]
"""
import datetime
import multiprocessing
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "python" / "tests"))
from http_servers import free_port, nginx  # noqa: E402

import tlio.numpy  # noqa: E402

MiB = 1 << 20
WORLD = 4


def write_model(path, total):
    """A file of `total` bytes of F32 weights, 64 tensors, values random."""
    per = total // 64 // 4
    rng = np.random.default_rng(1)
    tensors = {f"layers.{i}.weight": rng.standard_normal(per, dtype=np.float32) for i in range(64)}
    tlio.numpy.save_file(tensors, path)


def drop_pages(path):
    with open(path, "rb") as f:
        os.fsync(f.fileno())
        os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)


def timed(fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def cold_local(path, rounds):
    dd, plan = [], []
    tlio.numpy.load_sharded(path, None)  # the process warmed up (first mappings, threads)
    for _ in range(rounds):
        drop_pages(path)
        dd.append(timed(lambda: subprocess.run(["dd", f"if={path}", "of=/dev/null", "bs=16M",
                                                "iflag=direct"], check=True, capture_output=True)))
        drop_pages(path)
        plan.append(timed(lambda: tlio.numpy.load_sharded(path, None)))
    return statistics.median(dd), statistics.median(plan)


def rank_job(rank, port, url, distributed, verdicts):
    os.environ["GLOO_SOCKET_IFNAME"] = "lo"
    import torch.distributed as dist
    import tlio.torch
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=WORLD, timeout=datetime.timedelta(seconds=600))
    try:
        dist.barrier()
        start = time.perf_counter()
        if distributed:
            got = tlio.torch.load_distributed(url)
        else:
            got = tlio.torch.load_sharded(url, None)
        dist.barrier()
        verdicts.put((rank, time.perf_counter() - start, sum(t.numel() * t.element_size()
                                                             for t in got.values())))
    except Exception as e:  # noqa: BLE001 - the bench reports it
        verdicts.put((rank, None, repr(e)))
    dist.destroy_process_group()


def log_bytes(server):
    lines = None
    while True:
        now = server.log.read_text().splitlines() if server.log.exists() else []
        if now == lines:
            return sum(int(line.split()[1]) for line in now), len(now)
        lines = now
        time.sleep(0.2)


def group_load(context, server, url, distributed):
    before, _ = log_bytes(server)
    verdicts = context.Queue()
    port = free_port()
    procs = [context.Process(target=rank_job, args=(r, port, url, distributed, verdicts))
             for r in range(WORLD)]
    for p in procs:
        p.start()
    results = [verdicts.get(timeout=900) for _ in range(WORLD)]
    for p in procs:
        p.join(60)
    failed = [r for r in results if r[1] is None]
    if failed:
        raise RuntimeError(f"ranks failed: {failed}")
    after, _ = log_bytes(server)
    return max(t for _, t, _ in results), after - before


def main():
    work = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else pathlib.Path(tempfile.mkdtemp(
        prefix="tlio-bench-dist-", dir="build" if os.path.isdir("build") else None))
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    remote_mib = int(sys.argv[3]) if len(sys.argv) > 3 else 512
    work.mkdir(parents=True, exist_ok=True)
    work = work.resolve()  # nginx takes its root as an absolute path
    try:
        local = work / "local.safetensors"
        write_model(local, 2048 * MiB)
        dd, plan = cold_local(local, rounds)
        size = local.stat().st_size
        print(f"cold local load, {size / MiB:.0f} MiB, {rounds} rounds in turn (medians):")
        print(f"  dd iflag=direct bs=16M      {dd:7.3f} s  {size / dd / MiB:7.0f} MiB/s  1.00x")
        print(f"  load_sharded (every tensor) {plan:7.3f} s  {size / plan / MiB:7.0f} MiB/s  "
              f"{plan / dd:.2f}x")
        local.unlink()

        served = work / "www"
        served.mkdir(exist_ok=True)
        remote = served / "remote.safetensors"
        write_model(remote, remote_mib * MiB)
        data = remote.stat().st_size
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(["torch", "torch.distributed", "tlio.torch"])
        alone, shared = [], []
        with nginx(served) as server:
            url = f"{server.url}/remote.safetensors"
            for _ in range(max(1, rounds // 2 + 1)):
                alone.append(group_load(context, server, url, False))
                shared.append(group_load(context, server, url, True))
        t_alone = statistics.median(t for t, _ in alone)
        t_shared = statistics.median(t for t, _ in shared)
        b_alone = statistics.median(b for _, b in alone)
        b_shared = statistics.median(b for _, b in shared)
        print(f"{WORLD} ranks (gloo, 127.0.0.1), each wanting all of a {data / MiB:.0f} MiB file "
              f"from nginx, {len(alone)} rounds in turn (medians):")
        print(f"  each rank load_sharded     {t_alone:7.3f} s  read {b_alone / data:5.2f}x the file")
        print(f"  load_distributed           {t_shared:7.3f} s  read {b_shared / data:5.2f}x the file"
              f"  ({t_shared / t_alone:.2f}x the time)")
    finally:
        if len(sys.argv) <= 1:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
