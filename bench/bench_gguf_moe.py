#!/usr/bin/env python3
"""GGUF export of a mixture-of-experts folder against cp and against llama.cpp's own converter
(issue 65), whole processes, inputs in the page cache, outputs synced, each job run in turn
(A B C ...), medians, peak memory sampled from /proc (bench_gguf.py's `timed`). The model: a
2 GiB BF16 Qwen3-MoE folder in two shards (6 layers, hidden 2048, 16 heads of 128, 4 KV heads,
32 experts of 768, 8 used; vocab 32000, tied; the tokenizer of tests/data/gguf/tiny_llama),
random weights, layer 3's experts split across the shards as save_pretrained splits them.

  cp                    cp --reflink=never of both shards, then sync of the copies (goal: tlio's F16 and
                        Q8_0 exports <= 1.2x)
  export F16/Q8_0       tlio convert DIR out.gguf --dtype f16 | q8_0 (goal: peak anonymous
                        memory <= 300 MiB)
  convert_hf_to_gguf    llama.cpp's converter (build/llama.cpp, in build/consumer-venv) to F16;
                        its output and tlio's are compared byte for byte once

Usage (after a build and scripts/install-deps.sh): /usr/bin/python3 bench/bench_gguf_moe.py [BUILD] [DIR] [ROUNDS]
"""
import json
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from bench_gguf import timed  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
BUILD = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / "build").resolve()
ROUNDS = int(sys.argv[3]) if len(sys.argv) > 3 else 3
TLIO = str(BUILD / "tlio")
VENV = BUILD / "consumer-venv" / "bin" / "python"
ORACLE = ROOT / "python" / "tests" / "gguf_oracle" / "oracle_convert.py"
H, HEADS, KV, HD, FF, MOE_FF, EXPERTS, USED, LAYERS, VOCAB = 2048, 16, 4, 128, 6144, 768, 32, 8, 6, 32000


def shapes():
    out = {"model.embed_tokens.weight": (VOCAB, H), "model.norm.weight": (H,)}
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        out.update({p + "input_layernorm.weight": (H,), p + "post_attention_layernorm.weight": (H,),
                    p + "self_attn.q_proj.weight": (HEADS * HD, H), p + "self_attn.k_proj.weight": (KV * HD, H),
                    p + "self_attn.v_proj.weight": (KV * HD, H), p + "self_attn.o_proj.weight": (H, HEADS * HD),
                    p + "self_attn.q_norm.weight": (HD,), p + "self_attn.k_norm.weight": (HD,),
                    p + "mlp.gate.weight": (EXPERTS, H)})
        for e in range(EXPERTS):
            out.update({p + f"mlp.experts.{e}.gate_proj.weight": (MOE_FF, H),
                        p + f"mlp.experts.{e}.up_proj.weight": (MOE_FF, H),
                        p + f"mlp.experts.{e}.down_proj.weight": (H, MOE_FF)})
    return dict(sorted(out.items()))  # as save_pretrained orders them


def write_shard(path, names, tensors, rng):
    """A shard of `tensors` ({name: (dtype, shape)}): BF16 random normals, U8 random codes (an
    MXFP4 `_scales` tensor: exponents of 2^-5..2^-2)."""
    header, offset = {}, 0
    for name in names:
        dtype, shape = tensors[name]
        size = (2 if dtype == "BF16" else 1) * int(np.prod(shape))
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(len(text).to_bytes(8, "little") + text)
        for name in names:
            dtype, shape = tensors[name]
            if dtype == "U8":
                low, high = (122, 126) if name.endswith("_scales") else (0, 256)
                f.write(rng.integers(low, high, shape, dtype=np.uint8).tobytes())
            else:
                values = rng.standard_normal(shape, dtype=np.float32) * 0.02
                f.write((values.view(np.uint32) >> 16).astype("<u2").tobytes())


def write_folder(folder, config, tensors, second_shard_from, rng):
    """The folder in two shards, the second from tensor `second_shard_from`, written tensor by
    tensor, with tests/data/gguf/tiny_llama's tokenizer; returns the shards."""
    folder.mkdir()
    src = ROOT / "tests" / "data" / "gguf" / "tiny_llama"
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(src / f, folder / f)
    (folder / "config.json").write_text(json.dumps(config))
    names = list(tensors)
    half = names.index(second_shard_from)
    files = {"model-00001-of-00002.safetensors": names[:half], "model-00002-of-00002.safetensors": names[half:]}
    for file, part in files.items():
        write_shard(folder / file, part, tensors, rng)
    index = {"metadata": {}, "weight_map": {n: f for f, part in files.items() for n in part}}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    return [folder / f for f in files]


def write_model(folder, rng):
    """The BF16 Qwen3-MoE folder, layer 3's experts split across the shards."""
    config = {"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "hidden_size": H,
              "intermediate_size": FF, "moe_intermediate_size": MOE_FF, "num_hidden_layers": LAYERS,
              "num_attention_heads": HEADS, "num_key_value_heads": KV, "head_dim": HD, "num_local_experts": EXPERTS,
              "num_experts_per_tok": USED, "max_position_embeddings": 4096, "vocab_size": VOCAB, "rms_norm_eps": 1e-6,
              "rope_parameters": {"rope_theta": 1000000.0, "rope_type": "default"}, "tie_word_embeddings": True,
              "bos_token_id": 0, "eos_token_id": 1, "dtype": "bfloat16"}
    tensors = {name: ("BF16", shape) for name, shape in shapes().items()}
    return write_folder(folder, config, tensors, f"model.layers.3.mlp.experts.{EXPERTS // 2}.down_proj.weight", rng)


def same_gguf(a, b):
    """Whether two GGUF files hold the same tensors in the same order (names, types, bytes)."""
    script = ("import sys, numpy as np\nsys.path.insert(0, sys.argv[3])\nfrom gguf import GGUFReader\n"
              "t = [[(x.name, int(x.tensor_type), np.asarray(x.data).tobytes()) for x in GGUFReader(p).tensors]"
              " for p in sys.argv[1:3]]\nprint(t[0] == t[1])\n")
    r = subprocess.run([str(VENV), "-c", script, str(a), str(b), str(BUILD / "llama.cpp" / "gguf-py")],
                       capture_output=True, text=True, check=True)
    return r.stdout.strip() == "True"


def compare(write):
    """The jobs on the folder `write(folder, rng)` makes (returning its shards), in turn; prints
    the table of docs/benchmarks.md."""
    work = pathlib.Path(tempfile.mkdtemp(dir=sys.argv[2] if len(sys.argv) > 2 else None))
    try:
        model = work / "model"
        shards = write(model, np.random.default_rng(0))
        out, ref, copy = work / "out.gguf", work / "ref.gguf", work / "copy"
        subprocess.run([TLIO, "convert", str(model), str(out), "--dtype", "f16"], check=True, stdout=subprocess.DEVNULL)
        subprocess.run([str(VENV), str(ORACLE), str(BUILD / "llama.cpp"), str(model), str(ref), "f16", "llama-bpe"],
                       check=True, capture_output=True)
        same = same_gguf(out, ref)
        out.unlink()
        ref.unlink()
        for p in shards:  # warm
            subprocess.run(["cat", str(p)], check=True, stdout=subprocess.DEVNULL)
        jobs = {
            "cp": (["sh", "-c", 'cp --reflink=never "$@" "$0" && sync "$0"/*', str(copy), *map(str, shards)],
                   copy / shards[-1].name, False),
            "export F16": ([TLIO, "convert", str(model), str(out), "--dtype", "f16"], out, False),
            "export Q8_0": ([TLIO, "convert", str(model), str(out), "--dtype", "q8_0"], out, False),
            "convert_hf_to_gguf F16": ([str(VENV), str(ORACLE), str(BUILD / "llama.cpp"), str(model), str(out), "f16",
                                        "llama-bpe"], out, True),
        }
        times, mem = {k: [] for k in jobs}, {k: (0.0, 0.0) for k in jobs}
        for _ in range(ROUNDS):
            for k, (args, target, sync) in jobs.items():
                if k == "cp":
                    copy.mkdir(exist_ok=True)
                elapsed, peak = timed(args, target, sync)  # removes its output (cp's last shard)
                if k == "cp":
                    shutil.rmtree(copy)
                times[k].append(elapsed)
                mem[k] = tuple(map(max, mem[k], peak))
        med = {k: statistics.median(v) for k, v in times.items()}
        size = sum(p.stat().st_size for p in shards)
        print(f"shards {size / 2**30:.2f} GiB; tlio's F16 equals convert_hf_to_gguf.py's tensor for tensor: {same}")
        print("| job | median (runs) | against cp | against the converter | peak RSS | peak anonymous |")
        print("|---|---|---|---|---|---|")
        for k in jobs:
            runs = ", ".join(f"{t:.2f}" for t in times[k])
            print(f"| {k} | {med[k]:.2f} s ({runs}) | {med[k] / med['cp']:.2f}x | "
                  f"{med[k] / med['convert_hf_to_gguf F16']:.2f}x | {mem[k][0]:.0f} MiB | {mem[k][1]:.0f} MiB |")
    finally:
        shutil.rmtree(work)


if __name__ == "__main__":
    compare(write_model)
