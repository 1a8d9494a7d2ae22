#!/usr/bin/env python3
"""GGUF export of a gpt-oss folder with OpenAI's MXFP4 experts against cp and against llama.cpp's
own converter (issue 65, item 2: MXFP4 copied without a BF16 detour), whole processes, inputs in
the page cache, outputs synced, each job run in turn (A B C ...), medians, peak memory sampled
from /proc (bench_gguf.py's `timed`). The model: a 2.2 GiB folder in two shards with
gpt-oss-20b's layer shapes (hidden 2880, 64 heads of 64, 8 KV heads, 32 experts of 2880, 4 used)
but 4 layers and a vocabulary of 32000 (tests/data/gguf/tiny_llama's tokenizer): attention,
router and embeddings BF16, experts as `*_blocks` U8 [32, out, in/32, 16] and `*_scales` U8,
random codes and scales.

  cp                    cp --reflink=never of both shards, then sync of the copies (goal: tlio's
                        F16 and Q8_0 exports <= 1.2x)
  export F16/Q8_0       tlio convert DIR out.gguf --dtype f16 | q8_0: experts copied as MXFP4, the
                        rest F16 or Q8_0 (goal: peak anonymous memory <= 300 MiB)
  convert_hf_to_gguf    llama.cpp's converter (build/llama.cpp, in build/consumer-venv) to F16;
                        its output and tlio's are compared byte for byte once

Usage (after a build and scripts/install-deps.sh): /usr/bin/python3 bench/bench_gguf_oss.py [BUILD] [DIR] [ROUNDS]
"""
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from bench_gguf_moe import compare, write_folder  # noqa: E402

H, HEADS, KV, HD, FF, EXPERTS, USED, LAYERS, VOCAB = 2880, 64, 8, 64, 2880, 32, 4, 4, 32000


def tensors():
    """(name, dtype, shape) in save_pretrained's order."""
    out = {"model.embed_tokens.weight": ("BF16", (VOCAB, H)), "model.norm.weight": ("BF16", (H,)),
           "lm_head.weight": ("BF16", (VOCAB, H))}
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        out.update({p + "input_layernorm.weight": ("BF16", (H,)), p + "post_attention_layernorm.weight": ("BF16", (H,)),
                    p + "self_attn.sinks": ("BF16", (HEADS,)), p + "mlp.router.weight": ("BF16", (EXPERTS, H)),
                    p + "mlp.router.bias": ("BF16", (EXPERTS,)), p + "self_attn.o_proj.weight": ("BF16", (H, HEADS * HD)),
                    p + "self_attn.o_proj.bias": ("BF16", (H,)),
                    p + "mlp.experts.gate_up_proj_bias": ("BF16", (EXPERTS, 2 * FF)),
                    p + "mlp.experts.down_proj_bias": ("BF16", (EXPERTS, H))})
        for n, rows in (("q", HEADS * HD), ("k", KV * HD), ("v", KV * HD)):
            out[p + f"self_attn.{n}_proj.weight"], out[p + f"self_attn.{n}_proj.bias"] = ("BF16", (rows, H)), ("BF16", (rows,))
        for part, (inputs, outputs) in (("gate_up_proj", (H, 2 * FF)), ("down_proj", (FF, H))):
            out[p + f"mlp.experts.{part}_blocks"] = ("U8", (EXPERTS, outputs, inputs // 32, 16))
            out[p + f"mlp.experts.{part}_scales"] = ("U8", (EXPERTS, outputs, inputs // 32))
    return dict(sorted(out.items()))


def write_model(folder, rng):
    config = {"architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss", "hidden_size": H,
              "intermediate_size": FF, "num_hidden_layers": LAYERS, "num_attention_heads": HEADS,
              "num_key_value_heads": KV, "head_dim": HD, "num_local_experts": EXPERTS, "num_experts_per_tok": USED,
              "max_position_embeddings": 131072, "vocab_size": VOCAB, "rms_norm_eps": 1e-5, "sliding_window": 128,
              "layer_types": ["sliding_attention", "full_attention"] * (LAYERS // 2),
              "rope_parameters": {"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0,
                                  "original_max_position_embeddings": 4096, "rope_theta": 150000.0, "truncate": False},
              "quantization_config": {"quant_method": "mxfp4"}, "bos_token_id": 0, "eos_token_id": 1, "dtype": "bfloat16"}
    return write_folder(folder, config, tensors(), f"model.layers.{LAYERS // 2}.input_layernorm.weight", rng)


if __name__ == "__main__":
    compare(write_model)
