"""Mixture-of-experts folders exported to GGUF, on both Python stacks (no transformers needed):
experts stacked as llama.cpp stacks them (one 3-D tensor per part, expert 0 first, placed where
the last expert comes), routers kept F32, experts un-stacked again on import, and what is not
exported refused by name: a missing or misshapen expert, a quantization mix (llama-quantize's
MoE rules are not tlio's yet). test_gguf_archs.py judges the same exports against llama.cpp's
converter and llama.cpp itself, and the imports with transformers."""
import json
import os
import pathlib
import shutil
import subprocess

import numpy as np
import pytest

import tlio
import tlio.numpy

DATA = pathlib.Path(os.environ.get("TLIO_TEST_DATA", pathlib.Path(__file__).parents[2] / "tests" / "data"))
CLI = os.environ.get("TLIO_CLI", str(pathlib.Path(__file__).parents[2] / "build" / "tlio"))
H, FF, E, V = 32, 32, 4, 270


def run(*args):
    return subprocess.run([CLI, *map(str, args)], capture_output=True, text=True, timeout=120)


def qwen3moe(folder, drop=None, reshape=None):
    """A one-layer Qwen3-MoE folder (transformers 5's names and config keys) with tiny_llama's
    tokenizer; `drop` leaves a tensor out, `reshape` gives one another shape."""
    folder.mkdir()
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(DATA / "gguf" / "tiny_llama" / f, folder / f)
    config = {"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "hidden_size": H,
              "intermediate_size": 64, "moe_intermediate_size": FF, "num_hidden_layers": 1,
              "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 16, "max_position_embeddings": 128,
              "vocab_size": V, "rms_norm_eps": 1e-6, "num_local_experts": E, "num_experts_per_tok": 2,
              "rope_parameters": {"rope_theta": 1000000.0, "rope_type": "default"}, "tie_word_embeddings": True,
              "bos_token_id": 0, "eos_token_id": 1}
    (folder / "config.json").write_text(json.dumps(config))
    rng = np.random.default_rng(7)
    w = {"model.embed_tokens.weight": (V, H), "model.norm.weight": (H,), "model.layers.0.input_layernorm.weight": (H,),
         "model.layers.0.post_attention_layernorm.weight": (H,), "model.layers.0.self_attn.q_proj.weight": (32, H),
         "model.layers.0.self_attn.k_proj.weight": (16, H), "model.layers.0.self_attn.v_proj.weight": (16, H),
         "model.layers.0.self_attn.o_proj.weight": (H, 32), "model.layers.0.self_attn.q_norm.weight": (16,),
         "model.layers.0.self_attn.k_norm.weight": (16,), "model.layers.0.mlp.gate.weight": (E, H)}
    for e in range(E):
        for part, shape in (("gate_proj", (FF, H)), ("up_proj", (FF, H)), ("down_proj", (H, FF))):
            w[f"model.layers.0.mlp.experts.{e}.{part}.weight"] = shape
    w = {k: rng.standard_normal(reshape[1] if reshape and k == reshape[0] else s).astype(np.float32)
         for k, s in w.items() if k != drop}
    tlio.numpy.save_file(w, folder / "model.safetensors")
    return w


def test_experts_are_stacked_in_order_where_the_last_one_comes(tmp_path):
    w = qwen3moe(tmp_path / "moe")
    r = run("convert", tmp_path / "moe", tmp_path / "moe.gguf", "--dtype", "f32")
    assert r.returncode == 0, r.stderr
    keys = tlio.gguf_metadata(tmp_path / "moe.gguf")
    assert keys["general.architecture"] == "qwen3moe" and keys["qwen3moe.expert_count"] == E
    assert keys["qwen3moe.expert_used_count"] == 2 and keys["qwen3moe.expert_feed_forward_length"] == FF
    assert keys["qwen3moe.rope.freq_base"] == 1e6  # from transformers 5's rope_parameters
    with tlio.safe_open(tmp_path / "moe.gguf", "numpy") as f:
        names = f.offset_keys()  # in file order
        for part, stacked in (("gate_proj", "ffn_gate_exps"), ("up_proj", "ffn_up_exps"), ("down_proj", "ffn_down_exps")):
            want = np.stack([w[f"model.layers.0.mlp.experts.{e}.{part}.weight"] for e in range(E)])
            np.testing.assert_array_equal(f.get_tensor(f"blk.0.{stacked}.weight"), want)
        np.testing.assert_array_equal(f.get_tensor("blk.0.ffn_gate_inp.weight"), w["model.layers.0.mlp.gate.weight"])
    # safetensors' order is by name: experts.3.down_proj closes ffn_down_exps, then gate, then up
    layer = [n for n in names if n.startswith("blk.0.ffn")]
    assert layer == ["blk.0.ffn_down_exps.weight", "blk.0.ffn_gate_exps.weight", "blk.0.ffn_up_exps.weight",
                     "blk.0.ffn_gate_inp.weight", "blk.0.ffn_norm.weight"], layer
    report = tlio.export_gguf(tmp_path / "moe", tmp_path / "q8.gguf", "Q8_0")  # the library's way in
    assert report["architecture"] == "qwen3moe" and report["types"] == {"F32": 6, "Q8_0": 8}, report
    types = {t["name"]: t["type"] for t in json.loads(run("inspect", tmp_path / "q8.gguf", "--json").stdout)["tensors"]}
    assert types["blk.0.ffn_gate_inp.weight"] == "F32" and types["blk.0.ffn_up_exps.weight"] == "Q8_0"  # routers F32


@pytest.mark.parametrize("broken, message", [
    ({"drop": "model.layers.0.mlp.experts.2.up_proj.weight"}, "blk.0.ffn_up_exps.weight lacks expert 2 of 4"),
    ({"reshape": ("model.layers.0.mlp.experts.1.gate_proj.weight", (FF + 1, H))}, "unlike the other experts"),
])
def test_a_missing_or_misshapen_expert_is_refused(tmp_path, broken, message):
    qwen3moe(tmp_path / "moe", **broken)
    r = run("convert", tmp_path / "moe", tmp_path / "moe.gguf", "--dtype", "f32")
    assert r.returncode == 1 and message in r.stderr, r.stderr
    assert not (tmp_path / "moe.gguf").exists()


def test_mixes_take_experts(tmp_path):
    """llama.cpp's rules for up to 7 experts are the dense ones (test_gguf_requantize.py compares a
    Qwen3-MoE's Q4_K_M with llama-quantize's bytes); here the stacks take the mix's types."""
    qwen3moe(tmp_path / "moe")
    r = run("convert", tmp_path / "moe", tmp_path / "mix.gguf", "--dtype", "Q4_K_M", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["tensors"] > 0


def test_import_unstacks_the_experts(tmp_path):
    w = qwen3moe(tmp_path / "moe")
    assert run("convert", tmp_path / "moe", tmp_path / "moe.gguf", "--dtype", "f32").returncode == 0
    report = tlio.import_gguf(tmp_path / "moe.gguf", tmp_path / "back", "F32")  # the library's way in
    assert report["tensors"] == len(w), report
    back = tlio.numpy.load_file(tmp_path / "back" / "model.safetensors")
    assert sorted(back) == sorted(w)
    for name, values in w.items():  # Q/K rows put back; experts each its own again
        np.testing.assert_array_equal(back[name], values, err_msg=name)
    config = json.loads((tmp_path / "back" / "config.json").read_text())
    assert config["architectures"] == ["Qwen3MoeForCausalLM"] and config["model_type"] == "qwen3_moe"
    assert (config["num_local_experts"], config["num_experts_per_tok"], config["moe_intermediate_size"]) == (E, 2, FF)
    assert config["norm_topk_prob"] is True  # what llama.cpp's qwen3moe computes
