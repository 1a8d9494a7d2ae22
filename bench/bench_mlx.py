#!/usr/bin/env python3
"""MLX quantize and dequantize of a model folder against cp and against mlx-lm's own convert
(issue 67, item 4: <= 1.2x cp, memory constant), whole processes, inputs in the page cache,
outputs synced, each job run in turn (A B C ...), medians, peak memory sampled from /proc
(bench_gguf.py's `timed`). The model: a 1.9 GiB BF16 Llama folder in two shards (16 layers,
hidden 2048, 16 heads, FFN 5632, vocabulary 32000, untied; the tokenizer of
tests/data/gguf/tiny_llama), random weights.

  cp                  cp --reflink=never of both shards, then sync of the copies
  tlio quantize       tlio quantize DIR OUT --scheme mlx-affine (4 bits in groups of 64)
  tlio dequantize     tlio dequantize of that MLX folder (back to BF16)
  mlx_lm.convert -q   mlx-lm's convert of the same folder (build/consumer-venv, mlx's CPU
                      backend); its tensors and tlio's are compared once, byte for byte
  mlx_lm.convert -d   mlx-lm's dequantize of tlio's MLX folder

Usage (after a build and scripts/install-deps.sh): /usr/bin/python3 bench/bench_mlx.py [BUILD] [DIR] [ROUNDS]
"""
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from bench_gguf import timed  # noqa: E402
from bench_gguf_moe import BUILD, ROUNDS, TLIO, VENV, write_folder  # noqa: E402

H, HEADS, FF, LAYERS, VOCAB = 2048, 16, 5632, 16, 32000
SAME = ("import sys, pathlib, mlx.core as mx\n"
        "a, b = ({k: v for f in sorted(pathlib.Path(d).glob('*.safetensors')) for k, v in mx.load(str(f)).items()}"
        " for d in sys.argv[1:3])\n"
        "print(sorted(a) == sorted(b) and all(a[k].dtype == b[k].dtype and mx.array_equal(a[k], b[k]).item()"
        " for k in a))\n")


def tensors():
    out = {"model.embed_tokens.weight": (VOCAB, H), "model.norm.weight": (H,), "lm_head.weight": (VOCAB, H)}
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        out.update({p + "input_layernorm.weight": (H,), p + "post_attention_layernorm.weight": (H,),
                    p + "mlp.gate_proj.weight": (FF, H), p + "mlp.up_proj.weight": (FF, H),
                    p + "mlp.down_proj.weight": (H, FF)})
        for n in "qkvo":
            out[p + f"self_attn.{n}_proj.weight"] = (H, H)
    return {name: ("BF16", shape) for name, shape in sorted(out.items())}


def write_model(folder, rng):
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": H, "intermediate_size": FF,
              "num_hidden_layers": LAYERS, "num_attention_heads": HEADS, "num_key_value_heads": HEADS,
              "max_position_embeddings": 4096, "vocab_size": VOCAB, "rms_norm_eps": 1e-5, "tie_word_embeddings": False,
              "rope_theta": 10000.0, "bos_token_id": 0, "eos_token_id": 1, "dtype": "bfloat16"}
    return write_folder(folder, config, tensors(), f"model.layers.{LAYERS // 2}.input_layernorm.weight", rng)


def run_job(args, target, sync):
    """timed() for a job whose output is a folder: the process's wall time and memory, then, for
    mlx-lm (tlio syncs its own), the time to sync every file it wrote; the folder removed."""
    marker = target.parent / (target.name + ".done")
    marker.touch()
    elapsed, peak = timed(args, marker, False)
    if sync:
        t0 = time.perf_counter()
        subprocess.run(["sh", "-c", 'sync "$0"/*', str(target)], check=True)
        elapsed += time.perf_counter() - t0
    shutil.rmtree(target)
    return elapsed, peak


def run_in_turn(jobs, rounds):
    """Each job ({name: (args, target, sync)}, "cp" first, its target folder made before each run)
    run in turn `rounds` times: every run's seconds and the peak (RSS, anonymous) memory of each."""
    times, mem = {k: [] for k in jobs}, {k: (0.0, 0.0) for k in jobs}
    for _ in range(rounds):
        for k, (args, target, sync) in jobs.items():
            if k == "cp":
                target.mkdir()
            elapsed, peak = run_job(args, target, sync)
            times[k].append(elapsed)
            mem[k] = tuple(map(max, mem[k], peak))
    return times, mem


def same_tensors(a, b):
    """Whether two MLX folders hold the same tensors, whatever their shards (mlx-lm writes one
    file up to 5 GiB; tlio keeps the source's shards)."""
    r = subprocess.run([str(VENV), "-c", SAME, str(a), str(b)], capture_output=True, text=True)
    return r.stdout.strip() == "True"


def main():
    work = pathlib.Path(tempfile.mkdtemp(dir=sys.argv[2] if len(sys.argv) > 2 else None))
    try:
        model, mlx, ours, theirs = work / "model", work / "mlx", work / "ours", work / "theirs"
        shards = write_model(model, np.random.default_rng(0))
        subprocess.run([TLIO, "quantize", str(model), str(mlx), "--scheme", "mlx-affine", "-q"], check=True,
                       stdout=subprocess.DEVNULL)
        convert = [str(VENV), "-m", "mlx_lm.convert", "--hf-path", str(model), "--mlx-path", str(theirs), "-q"]
        subprocess.run(convert, check=True, capture_output=True)
        same = same_tensors(mlx, theirs)
        shutil.rmtree(theirs)
        for p in shards + sorted(mlx.glob("*.safetensors")):  # warm
            subprocess.run(["cat", str(p)], check=True, stdout=subprocess.DEVNULL)
        copy = work / "copy"
        jobs = {
            "cp": (["cp", "--reflink=never", *map(str, shards), str(copy)], copy, True),
            "tlio quantize (mlx-affine 4/64)": ([TLIO, "quantize", str(model), str(ours), "--scheme", "mlx-affine",
                                                "-q"], ours, False),
            "tlio dequantize (to BF16)": ([TLIO, "dequantize", str(mlx), str(ours)], ours, False),
            "mlx_lm.convert -q": (convert, theirs, True),
            "mlx_lm.convert -d": ([str(VENV), "-m", "mlx_lm.convert", "--hf-path", str(mlx), "--mlx-path",
                                   str(theirs), "-d"], theirs, True),
        }
        times, mem = run_in_turn(jobs, ROUNDS)
        med = {k: statistics.median(v) for k, v in times.items()}
        size = sum(p.stat().st_size for p in shards)
        print(f"shards {size / 2**30:.2f} GiB; tlio's MLX folder equals mlx_lm.convert -q's tensor for tensor: {same}")
        print("| job | median (runs) | against cp | against mlx-lm | peak RSS | peak anonymous |")
        print("|---|---|---|---|---|---|")
        peer = {"tlio quantize (mlx-affine 4/64)": "mlx_lm.convert -q", "tlio dequantize (to BF16)": "mlx_lm.convert -d"}
        for k in jobs:
            runs = ", ".join(f"{t:.2f}" for t in times[k])
            vs = f"{med[k] / med[peer[k]]:.2f}x" if k in peer else "-"
            print(f"| {k} | {med[k]:.2f} s ({runs}) | {med[k] / med['cp']:.2f}x | {vs} | "
                  f"{mem[k][0]:.0f} MiB | {mem[k][1]:.0f} MiB |")
    finally:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
