#!/usr/bin/env python3
"""`tlio transcode GGUF OUT --to mlx` against cp of the GGUF and against MLX's own GGUF loader
(issue 67, item 4: <= 1.2x cp, memory constant), and the folder routes (an MLX mxfp4 folder to
compressed-tensors' layout and back) against cp of their source, whole processes, inputs in the page cache,
outputs synced, each job run in turn (A B C ...), medians, peak memory sampled from /proc
(bench_gguf.py's `timed`). The model: bench_mlx.py's 1.9 GiB BF16 Llama (16 layers, hidden 2048),
exported by tlio as a Q4_0 GGUF and as a pure Q4_K GGUF.

  cp                   cp --reflink=never of the GGUF, then sync of the copy
  tlio transcode       tlio transcode GGUF OUT --to mlx (every weight carried and proven)
  mx.load + save       MLX's GGUF loader (Q4_0 as its affine layout with F16 scales; Q4_K it
                       dequantizes) and mx.save_safetensors of what it gives, in the consumers'
                       venv: the nearest thing a peer does (not exact: F16 scales round q * d)

Usage (after a build and scripts/install-deps.sh): /usr/bin/python3 bench/bench_transcode.py [BUILD] [DIR] [ROUNDS]
"""
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from bench_gguf_moe import ROUNDS, TLIO, VENV  # noqa: E402
from bench_mlx import run_in_turn, write_model  # noqa: E402

MX_SAVE = ("import sys, pathlib, mlx.core as mx\n"
           "w = mx.load(sys.argv[1])\n"
           "out = pathlib.Path(sys.argv[2]); out.mkdir()\n"
           "mx.save_safetensors(str(out / 'model.safetensors'), w)\n")


def compare(jobs, rounds, what, size):
    """Each job run in turn `rounds` times; a table of medians against the first (cp)."""
    times, mem = run_in_turn(jobs, rounds)
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"\n{what}: {size / 2**30:.2f} GiB")
    print("| job | median (runs) | against cp | peak RSS | peak anonymous |")
    print("|---|---|---|---|---|")
    for k in jobs:
        runs = ", ".join(f"{t:.2f}" for t in times[k])
        print(f"| {k} | {med[k]:.2f} s ({runs}) | {med[k] / med['cp']:.2f}x | {mem[k][0]:.0f} MiB | {mem[k][1]:.0f} MiB |")


def folder_routes(model, work):
    """MLX's mxfp4 folder to compressed-tensors' layout and back: bytes carried, rows proven."""
    mlx, ct, ours, copy = work / "mlx", work / "ct", work / "ours", work / "copy"
    subprocess.run([TLIO, "quantize", str(model), str(mlx), "--scheme", "mlx-mxfp4"], check=True,
                   stdout=subprocess.DEVNULL)
    subprocess.run([TLIO, "transcode", str(mlx), str(ct), "--to", "compressed-tensors"], check=True,
                   stdout=subprocess.DEVNULL)
    shards = sorted(ct.glob("*.safetensors"))
    for p in shards + sorted(mlx.glob("*.safetensors")):
        subprocess.run(["cat", str(p)], check=True, stdout=subprocess.DEVNULL)  # warm
    jobs = {
        "cp": (["cp", "--reflink=never", *map(str, shards), str(copy)], copy, True),
        "tlio transcode ct -> mlx": ([TLIO, "transcode", str(ct), str(ours), "--to", "mlx"], ours, False),
        "tlio transcode mlx -> ct": ([TLIO, "transcode", str(mlx), str(ours), "--to", "compressed-tensors"],
                                     ours, False),
    }
    compare(jobs, ROUNDS, "compressed-tensors mxfp4 folder", sum(p.stat().st_size for p in shards))


def main():
    work = pathlib.Path(tempfile.mkdtemp(dir=sys.argv[2] if len(sys.argv) > 2 else None))
    try:
        model, ours, theirs, copy = work / "model", work / "ours", work / "theirs", work / "copy"
        write_model(model, np.random.default_rng(0))
        folder_routes(model, work)
        for dtype in ("Q4_0", "Q4_K"):
            gguf = work / f"model-{dtype}.gguf"
            subprocess.run([TLIO, "convert", str(model), str(gguf), "--dtype", dtype, "--pure"],
                           check=True, stdout=subprocess.DEVNULL)
            subprocess.run(["cat", str(gguf)], check=True, stdout=subprocess.DEVNULL)  # warm
            jobs = {
                "cp": (["cp", "--reflink=never", str(gguf), str(copy / "x.gguf")], copy, True),
                "tlio transcode --to mlx": ([TLIO, "transcode", str(gguf), str(ours), "--to", "mlx"], ours, False),
                "mx.load + save_safetensors": ([str(VENV), "-c", MX_SAVE, str(gguf), str(theirs)], theirs, True),
            }
            compare(jobs, ROUNDS, f"{dtype} GGUF", gguf.stat().st_size)
            gguf.unlink()
    finally:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
