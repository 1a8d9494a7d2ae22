#!/usr/bin/env python3
"""GGUF both ways against their baselines (issue 42), whole processes, inputs in the page cache,
outputs synced, each job run in turn (A B C ...), medians. The model: a 1 GiB BF16 Llama folder
(9 layers, hidden 2048, 16 heads of 128, 4 KV heads, ffn 5632, vocab 32000; the tokenizer of
tests/data/gguf/tiny_llama padded to the vocabulary), random weights.

  cp               cp --reflink=never of the folder's model.safetensors, then sync (goals: export
                   to F16 <= 1.2x, to Q8_0 <= 1.5x; import of Q4_K_M to BF16 <= 1.5x, its output
                   being the same size)
  export F16/Q8_0  tlio convert DIR out.gguf --dtype f16 | q8_0
  export Q4_K_M    tlio convert DIR out.gguf --dtype q4_k_m
  llama-quantize   libllama's llama_model_quantize (npm's @node-llama-cpp/linux-x64, one thread
                   per core) of the model's F32 GGUF to Q4_K_M, then sync (goal: tlio's export
                   <= 1.0x); the two outputs are compared byte for byte once
  import Q4_K_M    tlio convert q4_k_m.gguf out.safetensors --dtype bf16

Usage (after a build and scripts/install-deps.sh): /usr/bin/python3 bench/bench_gguf.py [BUILD] [DIR] [ROUNDS]
"""
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
BUILD = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / "build").resolve()
ROUNDS = int(sys.argv[3]) if len(sys.argv) > 3 else 3
TLIO = str(BUILD / "tlio")
LIB_DIR = BUILD / "npm" / "node_modules" / "@node-llama-cpp" / "linux-x64" / "bins" / "linux-x64"
QUANTIZE = ROOT / "python" / "tests" / "gguf_oracle" / "quantize_llama.py"
H, HEADS, KV, FF, LAYERS, VOCAB = 2048, 16, 4, 5632, 9, 32000


def write_model(folder, rng):
    """The BF16 folder, written tensor by tensor (one tensor's values in memory at a time)."""
    folder.mkdir()
    src = ROOT / "tests" / "data" / "gguf" / "tiny_llama"
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(src / f, folder / f)
    config = json.loads((src / "config.json").read_text())
    config.update(hidden_size=H, intermediate_size=FF, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                  num_key_value_heads=KV, vocab_size=VOCAB, torch_dtype="bfloat16")
    (folder / "config.json").write_text(json.dumps(config))
    hd = H // HEADS
    shapes = {"model.embed_tokens.weight": (VOCAB, H), "model.norm.weight": (H,), "lm_head.weight": (VOCAB, H)}
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        shapes.update({p + "input_layernorm.weight": (H,), p + "post_attention_layernorm.weight": (H,),
                       p + "self_attn.q_proj.weight": (H, H), p + "self_attn.k_proj.weight": (KV * hd, H),
                       p + "self_attn.v_proj.weight": (KV * hd, H), p + "self_attn.o_proj.weight": (H, H),
                       p + "mlp.gate_proj.weight": (FF, H), p + "mlp.up_proj.weight": (FF, H),
                       p + "mlp.down_proj.weight": (H, FF)})
    header, offset = {}, 0
    for name, shape in shapes.items():
        size = 2 * int(np.prod(shape))
        header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(folder / "model.safetensors", "wb") as f:
        f.write(len(text).to_bytes(8, "little") + text)
        for name, shape in shapes.items():
            values = rng.standard_normal(shape, dtype=np.float32) * 0.02
            f.write((values.view(np.uint32) >> 16).astype("<u2").tobytes())


def memory_of(pid):
    """(VmHWM, RssAnon) of a running process in MiB, from /proc; None once it has exited."""
    try:
        fields = dict(line.split(":", 1) for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines())
        return tuple(int(fields[k].split()[0]) / 1024 for k in ("VmHWM", "RssAnon"))
    except (OSError, KeyError, ValueError):
        return None


def timed(args, out, sync):
    """Wall time (its output synced), peak resident set and peak anonymous memory (MiB) of one
    run of `args`. Memory is sampled from /proc every 10 ms: wait4's ru_maxrss would count the
    forked parent's pages from before exec. The resident set includes the mapped input's pages
    (the page cache's, shared); anonymous memory is what the process itself allocated."""
    t0 = time.perf_counter()
    child = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    hwm = anon = 0.0
    while True:
        pid, status = os.waitpid(child.pid, os.WNOHANG)
        if pid:
            break
        sample = memory_of(child.pid)
        if sample:
            hwm, anon = max(hwm, sample[0]), max(anon, sample[1])
        time.sleep(0.01)
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise subprocess.CalledProcessError(child.returncode, args)
    if sync:  # cp and llama-quantize: their output synced as tlio's is
        subprocess.run(["sync", str(out)], check=True)
    elapsed = time.perf_counter() - t0
    out.unlink()
    return elapsed, (hwm, anon)


def main():
    work = pathlib.Path(tempfile.mkdtemp(dir=sys.argv[2] if len(sys.argv) > 2 else None))
    try:
        model = work / "model"
        write_model(model, np.random.default_rng(0))
        f32, q4 = work / "f32.gguf", work / "q4_k_m.gguf"
        subprocess.run([TLIO, "convert", str(model), str(f32), "--dtype", "f32"], check=True, stdout=subprocess.DEVNULL)
        subprocess.run([TLIO, "convert", str(model), str(q4), "--dtype", "q4_k_m"], check=True,
                       stdout=subprocess.DEVNULL)
        ref = work / "ref.gguf"
        subprocess.run(["/usr/bin/python3", str(QUANTIZE), str(LIB_DIR), str(f32), str(ref), "15"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        same = same_tensors(q4, ref)
        ref.unlink()
        for p in [model / "model.safetensors", f32, q4]:  # warm
            subprocess.run(["cat", str(p)], check=True, stdout=subprocess.DEVNULL)
        out_gguf, out_st, copy = work / "out.gguf", work / "out.safetensors", work / "copy.bin"
        jobs = {
            "cp": (["cp", "--reflink=never", str(model / "model.safetensors"), str(copy)], copy, True),
            "export F16": ([TLIO, "convert", str(model), str(out_gguf), "--dtype", "f16"], out_gguf, False),
            "export Q8_0": ([TLIO, "convert", str(model), str(out_gguf), "--dtype", "q8_0"], out_gguf, False),
            "export Q4_K_M": ([TLIO, "convert", str(model), str(out_gguf), "--dtype", "q4_k_m"], out_gguf, False),
            "llama-quantize Q4_K_M": (["/usr/bin/python3", str(QUANTIZE), str(LIB_DIR), str(f32), str(out_gguf), "15"],
                                      out_gguf, True),
            "import Q4_K_M": ([TLIO, "convert", str(q4), str(out_st), "--dtype", "bf16"], out_st, False),
        }
        times, rss = {k: [] for k in jobs}, {k: (0.0, 0.0) for k in jobs}
        for _ in range(ROUNDS):
            for k, (args, out, sync) in jobs.items():
                elapsed, peak = timed(args, out, sync)
                times[k].append(elapsed)
                rss[k] = tuple(map(max, rss[k], peak))
        med = {k: statistics.median(v) for k, v in times.items()}
        runs = {k: ", ".join(f"{t:.2f}" for t in v) for k, v in times.items()}
        size = (model / "model.safetensors").stat().st_size
        print(f"model.safetensors {size / 2**30:.2f} GiB; tlio's Q4_K_M equals llama-quantize's tensor for tensor: {same}")
        print("| job | median (runs) | ratio | goal | peak RSS | peak anonymous |")
        print("|---|---|---|---|---|---|")
        goals = {"export F16": ("cp", 1.2), "export Q8_0": ("cp", 1.5), "export Q4_K_M": ("llama-quantize Q4_K_M", 1.0),
                 "import Q4_K_M": ("cp", 1.5)}
        for k in jobs:
            base, goal = goals.get(k, (None, None))
            ratio = f"**{med[k] / med[base]:.2f}x** {base}" if base else ""
            print(f"| {k} | {med[k]:.2f} s ({runs[k]}) | {ratio} | {f'<= {goal}x' if goal else ''} | "
                  f"{rss[k][0]:.0f} MiB | {rss[k][1]:.0f} MiB |")
    finally:
        shutil.rmtree(work)


def same_tensors(a, b):
    """Whether two GGUF files hold the same tensors (types and bytes), read by gguf-py."""
    compare = ROOT / "python" / "tests" / "gguf_oracle" / "compare_ggufs.py"
    r = subprocess.run([str(BUILD / "oracle-venv" / "bin" / "python"), str(compare), str(a), str(b)],
                       capture_output=True, text=True, check=True)
    seen = json.loads(r.stdout)
    return seen["differ"] == [] and all(x == y for x, y in seen["types"].values())


if __name__ == "__main__":
    main()
