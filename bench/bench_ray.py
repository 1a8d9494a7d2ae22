#!/usr/bin/env python3
"""tlio.ray's overhead over the single-process call (issue 68, goal <= 1.2x at one worker), run in
turn (A B C A B C ...), medians:

  tlio.convert_file(SRC, OUT, "bf16")                   the single-process call: the baseline
  tlio.ray.convert(SRC, OUT, "bf16", workers=1)         one unit at a time on a Ray cluster
  tlio.ray.convert(SRC, OUT, "bf16", workers=2)         two at a time, for context (2 cores here)

SRC is a model folder of 8 shards of SHARD_MIB MiB of F32 (default 512: 4 GiB, shards as the
Hub's are, a few GiB; 128 shows the per-unit cost), in the page cache; every output is checked
byte for byte against the baseline's. The cluster is local (2 CPUs), started once before the
runs: its start-up (a few seconds, once per session, not per job) is reported apart. Run with
the users' stack, which has Ray:
  build/consumer-venv/bin/python bench/bench_ray.py [DIR] [ROUNDS] [SHARD_MIB]
"""
import hashlib
import json
import os
import pathlib
import shutil
import statistics
import sys
import tempfile
import time

import numpy as np
import ray

import tlio
import tlio.ray


def make_folder(path, shards=8, shard_mib=128):
    path.mkdir()
    rng = np.random.default_rng(0)
    weight_map, total = {}, 0
    for s in range(shards):
        name = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
        rows = shard_mib * 2**20 // (2 * 2048 * 4)  # two F32 tensors of 2048 columns
        tensors = {f"model.layers.{2 * s + i}.mlp.up_proj.weight":
                   rng.standard_normal((rows, 2048), dtype=np.float32) for i in range(2)}
        tlio.save_file(tensors, path / name, metadata={"format": "pt"})
        for t in tensors:
            weight_map[t] = name
            total += tensors[t].nbytes
    (path / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map}))
    (path / "config.json").write_text('{"model_type": "llama", "torch_dtype": "float32"}\n')


def digests(folder):
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def main():
    scratch = pathlib.Path(tempfile.mkdtemp(prefix="tlio-bench-ray-", dir=sys.argv[1] if len(sys.argv) > 1 else None))
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    shard_mib = int(sys.argv[3]) if len(sys.argv) > 3 else 512
    src = scratch / "src"
    try:
        make_folder(src, shard_mib=shard_mib)
        for p in src.iterdir():
            p.read_bytes()  # into the page cache
        t0 = time.perf_counter()
        package_root = os.path.dirname(os.path.dirname(os.path.abspath(tlio.__file__)))
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
                 runtime_env={"env_vars": {"PYTHONPATH": package_root}})
        started = time.perf_counter() - t0
        runs = {
            "tlio.convert_file": lambda out: tlio.convert_file(src, out, "bf16"),
            "tlio.ray.convert workers=1": lambda out: tlio.ray.convert(src, out, "bf16", workers=1),
            "tlio.ray.convert workers=2": lambda out: tlio.ray.convert(src, out, "bf16", workers=2),
        }
        times = {name: [] for name in runs}
        want = None
        for _ in range(rounds):
            for name, run in runs.items():
                out = scratch / "out"
                shutil.rmtree(out, ignore_errors=True)
                t0 = time.perf_counter()
                run(out)
                times[name].append(time.perf_counter() - t0)
                got = digests(out)
                want = want or got
                assert got == want, name
        print(f"source: 8 shards of {shard_mib} MiB; ray {ray.__version__}, local cluster of 2 CPUs started in {started:.2f} s")
        base = statistics.median(times["tlio.convert_file"])
        for name, ts in times.items():
            m = statistics.median(ts)
            print(f"  {name:<28} median {m:.3f} s  ratio {m / base:.2f}  (runs {', '.join(f'{t:.2f}' for t in ts)})")
    finally:
        ray.shutdown()
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
