#!/usr/bin/env python3
"""`tlio dequantize` of the Hub's quantized formats against `cp` of a file the size of its
output (issue 43, goal <= 1.3x), whole processes, inputs in the page cache, outputs fsynced,
each side run in turn (A B A B ...), medians:

  fp8-block  1 GiB of F8_E4M3 codes in [7168, 2048] weights with F32 128x128 scale grids
             (DeepSeek's layout) -> 2 GiB of BF16
  mxfp4      gpt-oss experts: <e>_blocks [32, 2880, 90, 16] + _scales, 0.5 GiB of codes -> 2 GiB
             of BF16 in transformers' layout (the transpose included)
  ct-int4    compressed-tensors pack-quantized, group 128, BF16 scales: 0.5 GiB of words ->
             2 GiB of BF16
  cp         cp --reflink=never of a 2 GiB file, then sync of it (the baseline)
  dd         dd bs=8M oflag=direct of the same file, then sync: the disk's own speed for a copy
             past the page cache (tlio writes its outputs' bulk that way, io/output_writes)

Usage (after a build): /usr/bin/python3 bench/bench_hub_quant.py [BUILD] [DIR] [ROUNDS]
"""
import json
import os
import pathlib
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
BUILD = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / "build").resolve()
ROUNDS = int(sys.argv[3]) if len(sys.argv) > 3 else 5
TLIO = str(BUILD / "tlio")


def write_file(path, tensors):
    """tensors: [(name, dtype, shape, make_bytes)], written piece by piece (bounded memory)."""
    header, offset = {}, 0
    for name, dtype, shape, size, _ in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for *_, make in tensors:
            f.write(make())


def random_bytes(rng, size, low=0, high=256):
    return rng.integers(low, high, size=size, dtype=np.uint8).tobytes()


def fp8_block_file(path, rng):
    rows, cols, count = 7168, 2048, 73  # 73 x 14 MiB = 1 GiB
    codes = random_bytes(rng, rows * cols, 0, 0x7E)  # no NaN codes
    grid = (rng.random((rows // 128, cols // 128)) * 0.01).astype("<f4").tobytes()
    tensors = []
    for i in range(count):
        w = f"model.layers.{i}.mlp.down_proj.weight"
        tensors.append((w, "F8_E4M3", [rows, cols], len(codes), lambda: codes))
        tensors.append((w + "_scale_inv", "F32", [rows // 128, cols // 128], len(grid), lambda: grid))
    write_file(path, tensors)


def mxfp4_file(path, rng):
    e, out, blocks = 32, 2880, 90
    codes = random_bytes(rng, e * out * blocks * 16)
    scales = random_bytes(rng, e * out * blocks, 118, 128)
    tensors = []
    for i in range(int(2**29 // len(codes))):  # 0.5 GiB of codes
        p = f"model.layers.{i}.mlp.experts.gate_up_proj"
        tensors.append((p + "_blocks", "U8", [e, out, blocks, 16], len(codes), lambda: codes))
        tensors.append((p + "_scales", "U8", [e, out, blocks], len(scales), lambda: scales))
    write_file(path, tensors)


def ct_int4_file(path, rng):
    rows, cols = 4096, 4096
    words = random_bytes(rng, rows * cols // 2)
    scale = (rng.random((rows, cols // 128)) * 0.01).astype(np.float32)
    scale_bf16 = (scale.view(np.uint32) >> 16).astype("<u2").tobytes()
    shape = struct.pack("<2q", rows, cols)
    tensors = []
    for i in range(int(2**29 // len(words))):  # 0.5 GiB of words
        m = f"model.layers.{i}.mlp.up_proj"
        tensors.append((m + ".weight_packed", "I32", [rows, cols // 8], len(words), lambda: words))
        tensors.append((m + ".weight_scale", "BF16", [rows, cols // 128], len(scale_bf16), lambda: scale_bf16))
        tensors.append((m + ".weight_shape", "I64", [2], 16, lambda: shape))
    write_file(path, tensors)


def timed(args, out):
    t0 = time.perf_counter()
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
    if out.suffix != ".safetensors":  # cp and dd: their output synced as tlio's is
        subprocess.run(["sync", str(out)], check=True)
    elapsed = time.perf_counter() - t0
    out.unlink()
    return elapsed


def main():
    work = pathlib.Path(tempfile.mkdtemp(dir=sys.argv[2] if len(sys.argv) > 2 else None))
    try:
        rng = np.random.default_rng(0)
        inputs = {"fp8-block": fp8_block_file, "mxfp4": mxfp4_file, "ct-int4": ct_int4_file}
        for name, make in inputs.items():
            make(work / f"{name}.safetensors", rng)
        with open(work / "plain.bin", "wb") as f:
            f.write(os.urandom(1 << 20) * 2048)  # 2 GiB
        for p in work.iterdir():  # warm
            subprocess.run(["cat", str(p)], check=True, stdout=subprocess.DEVNULL)
        jobs = {"cp": (["cp", "--reflink=never", str(work / "plain.bin"), str(work / "copy.bin")], work / "copy.bin"),
                "dd": (["dd", f"if={work / 'plain.bin'}", f"of={work / 'copy.bin'}", "bs=8M", "oflag=direct",
                        "status=none"], work / "copy.bin")}
        for name in inputs:
            out = work / f"{name}.out.safetensors"
            jobs[name] = ([TLIO, "dequantize", str(work / f"{name}.safetensors"), str(out)], out)
        times = {k: [] for k in jobs}
        for _ in range(ROUNDS):
            for k, (args, out) in jobs.items():
                times[k].append(timed(args, out))
        cp, dd = statistics.median(times["cp"]), statistics.median(times["dd"])
        size = {k: (work / f"{k}.safetensors").stat().st_size for k in inputs}
        runs = {k: ", ".join(f"{t:.2f}" for t in times[k]) for k in times}
        print("| job | input | median (runs) | ratio to cp of 2 GiB | ratio to dd oflag=direct |")
        print("|---|---|---|---|---|")
        print(f"| cp 2 GiB + sync | | {cp:.2f} s ({runs['cp']}) | 1.00 | {cp / dd:.2f} |")
        print(f"| dd oflag=direct 2 GiB + sync | | {dd:.2f} s ({runs['dd']}) | {dd / cp:.2f} | 1.00 |")
        for k in inputs:
            m = statistics.median(times[k])
            print(f"| tlio dequantize {k} -> BF16 | {size[k] / 2**30:.2f} GiB | {m:.2f} s ({runs[k]}) "
                  f"| **{m / cp:.2f}** | {m / dd:.2f} |")
    finally:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
