"""gpt-oss folders exported to GGUF and back, on both Python stacks (no transformers needed): the
experts held stacked [experts, in, out] with gate and up interleaved become llama.cpp's three 3-D
tensors (transposed, every other column), their biases split alike, and OpenAI's MXFP4 experts
are copied as ggml's MXFP4 blocks without a value changing, whatever type the rest is written in;
the import puts them back together. test_gguf_archs.py judges the same exports against
llama.cpp's converter and llama.cpp itself, and the imports with transformers."""
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


def gptoss(folder, mxfp4=False, reshape=None):
    """A one-layer gpt-oss folder (transformers 5's names and config keys) with tiny_llama's
    tokenizer; `mxfp4`: its experts as MXFP4 blocks and scales (random codes, scales 2^-5..2^-2)
    as OpenAI ships them; `reshape` gives one tensor another shape."""
    folder.mkdir()
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(DATA / "gguf" / "tiny_llama" / f, folder / f)
    config = {"architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss", "hidden_size": H,
              "intermediate_size": FF, "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1,
              "head_dim": 16, "max_position_embeddings": 128, "vocab_size": V, "rms_norm_eps": 1e-5,
              "num_local_experts": E, "num_experts_per_tok": 2, "sliding_window": 8,
              "layer_types": ["sliding_attention"], "bos_token_id": 0, "eos_token_id": 1,
              "rope_parameters": {"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0,
                                  "original_max_position_embeddings": 4096, "rope_theta": 150000.0,
                                  "truncate": False}}
    if mxfp4:
        config["quantization_config"] = {"quant_method": "mxfp4"}
    (folder / "config.json").write_text(json.dumps(config))
    rng = np.random.default_rng(11)
    p = "model.layers.0."
    shapes = {"model.embed_tokens.weight": (V, H), "model.norm.weight": (H,), "lm_head.weight": (V, H),
              p + "input_layernorm.weight": (H,), p + "post_attention_layernorm.weight": (H,),
              p + "self_attn.sinks": (2,), p + "mlp.router.weight": (E, H), p + "mlp.router.bias": (E,),
              p + "mlp.experts.gate_up_proj_bias": (E, 2 * FF), p + "mlp.experts.down_proj_bias": (E, H)}
    for n, rows in (("q", 32), ("k", 16), ("v", 16)):
        shapes[p + f"self_attn.{n}_proj.weight"], shapes[p + f"self_attn.{n}_proj.bias"] = (rows, H), (rows,)
    shapes[p + "self_attn.o_proj.weight"], shapes[p + "self_attn.o_proj.bias"] = (H, 32), (H,)
    if not mxfp4:
        shapes[p + "mlp.experts.gate_up_proj"] = (E, H, 2 * FF)  # [experts, in, out]
        shapes[p + "mlp.experts.down_proj"] = (E, FF, H)
    w = {k: rng.standard_normal(reshape[1] if reshape and k == reshape[0] else s).astype(np.float32)
         for k, s in shapes.items()}
    if mxfp4:  # [experts, out, in/32, 16] codes, [experts, out, in/32] E8M0 scales
        for part, (inputs, outputs) in (("gate_up_proj", (H, 2 * FF)), ("down_proj", (FF, H))):
            w[p + f"mlp.experts.{part}_blocks"] = rng.integers(0, 256, (E, outputs, inputs // 32, 16), dtype=np.uint8)
            w[p + f"mlp.experts.{part}_scales"] = rng.integers(122, 126, (E, outputs, inputs // 32), dtype=np.uint8)
    tlio.numpy.save_file(w, folder / "model.safetensors")
    return w


def test_experts_held_stacked_are_split_and_transposed(tmp_path):
    w = gptoss(tmp_path / "oss")
    r = run("convert", tmp_path / "oss", tmp_path / "oss.gguf", "--dtype", "f32")
    assert r.returncode == 0, r.stderr
    keys = tlio.gguf_metadata(tmp_path / "oss.gguf")
    assert keys["general.architecture"] == "gpt-oss" and keys["gpt-oss.expert_count"] == E
    assert keys["gpt-oss.rope.scaling.type"] == "yarn" and keys["gpt-oss.rope.scaling.original_context_length"] == 4096
    gate_up, p = w["model.layers.0.mlp.experts.gate_up_proj"], "model.layers.0.mlp.experts."
    want = {"blk.0.ffn_gate_exps.weight": gate_up[:, :, 0::2].transpose(0, 2, 1),
            "blk.0.ffn_up_exps.weight": gate_up[:, :, 1::2].transpose(0, 2, 1),
            "blk.0.ffn_down_exps.weight": w[p + "down_proj"].transpose(0, 2, 1),
            "blk.0.ffn_gate_exps.bias": w[p + "gate_up_proj_bias"][:, 0::2],
            "blk.0.ffn_up_exps.bias": w[p + "gate_up_proj_bias"][:, 1::2],
            "blk.0.ffn_down_exps.bias": w[p + "down_proj_bias"],
            "blk.0.attn_sinks.weight": w["model.layers.0.self_attn.sinks"],
            "blk.0.ffn_gate_inp.bias": w["model.layers.0.mlp.router.bias"]}
    with tlio.safe_open(tmp_path / "oss.gguf", "numpy") as f:
        for name, values in want.items():
            np.testing.assert_array_equal(f.get_tensor(name), values, err_msg=name)


@pytest.mark.parametrize("dtype, file_type", [("f32", 38), ("q8_0", 7)])  # llama_ftype MXFP4_MOE, Q8_0
def test_mxfp4_experts_are_copied_whatever_the_rest_becomes(tmp_path, dtype, file_type):
    gptoss(tmp_path / "oss", mxfp4=True)
    r = run("convert", tmp_path / "oss", tmp_path / "oss.gguf", "--dtype", dtype)
    assert r.returncode == 0, r.stderr
    assert tlio.gguf_metadata(tmp_path / "oss.gguf")["general.file_type"] == file_type
    types = {t["name"]: t["type"] for t in json.loads(run("inspect", tmp_path / "oss.gguf", "--json").stdout)["tensors"]}
    assert [n for n, t in types.items() if t == "MXFP4"][:3] == [  # first, as the converter writes them
        "blk.0.ffn_down_exps.weight", "blk.0.ffn_gate_exps.weight", "blk.0.ffn_up_exps.weight"]
    assert types["blk.0.attn_q.weight"] == dtype.upper()
    # The values: ggml's MXFP4 decoded equals OpenAI's blocks decoded (transposed, split).
    with tlio.safe_open(tmp_path / "oss", "numpy") as src, tlio.safe_open(tmp_path / "oss.gguf", "numpy") as out:
        gate_up = src.get_dequantized("model.layers.0.mlp.experts.gate_up_proj", "F32")  # [E, in, out]
        np.testing.assert_array_equal(out.get_tensor("blk.0.ffn_gate_exps.weight"), gate_up[:, :, 0::2].transpose(0, 2, 1))
        np.testing.assert_array_equal(out.get_tensor("blk.0.ffn_up_exps.weight"), gate_up[:, :, 1::2].transpose(0, 2, 1))
        down = src.get_dequantized("model.layers.0.mlp.experts.down_proj", "F32")
        np.testing.assert_array_equal(out.get_tensor("blk.0.ffn_down_exps.weight"), down.transpose(0, 2, 1))


@pytest.mark.parametrize("mxfp4, reshape, message", [
    (False, ("model.layers.0.mlp.experts.gate_up_proj", (E, H, 2 * FF + 1)), "not the 4 experts' weights held stacked"),
    (False, ("model.layers.0.mlp.experts.down_proj_bias", (E + 1, H)), "not the 4 experts' biases held stacked"),
    (True, ("model.layers.0.mlp.experts.down_proj_scales", (E, H, 2)), "down_proj_scales"),
])
def test_misshapen_experts_are_refused(tmp_path, mxfp4, reshape, message):
    w = gptoss(tmp_path / "oss", mxfp4=mxfp4)
    if mxfp4:  # the scales of another shape than the blocks'
        w[reshape[0]] = np.zeros(reshape[1], np.uint8)
        tlio.numpy.save_file(w, tmp_path / "oss" / "model.safetensors")
    else:
        shutil.rmtree(tmp_path / "oss")
        gptoss(tmp_path / "oss", reshape=reshape)
    r = run("convert", tmp_path / "oss", tmp_path / "oss.gguf", "--dtype", "f32")
    assert r.returncode == 1 and message in r.stderr, r.stderr
    assert not (tmp_path / "oss.gguf").exists()


@pytest.mark.parametrize("mxfp4", [False, True])
def test_import_puts_the_experts_back_together(tmp_path, mxfp4):
    """F32 GGUF back to a folder: gate and up interleaved again, transposed back to [experts, in,
    out]; MXFP4 experts as OpenAI's blocks and scales, byte for byte, with their
    quantization_config; YaRN's truncate false as gpt-oss's class computes it."""
    w = gptoss(tmp_path / "oss", mxfp4=mxfp4)
    assert run("convert", tmp_path / "oss", tmp_path / "oss.gguf", "--dtype", "f32").returncode == 0
    report = tlio.import_gguf(tmp_path / "oss.gguf", tmp_path / "back", "F32")
    back = tlio.numpy.load_file(tmp_path / "back" / "model.safetensors")
    assert sorted(back) == sorted(w) and report["tensors"] == len(w), report
    for name, values in w.items():
        np.testing.assert_array_equal(back[name], values, err_msg=name)
    config = json.loads((tmp_path / "back" / "config.json").read_text())
    assert config["architectures"] == ["GptOssForCausalLM"] and config["model_type"] == "gpt_oss"
    assert (config["num_local_experts"], config["intermediate_size"], config["sliding_window"]) == (E, FF, 8)
    assert config["rope_scaling"] == {"factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0,
                                      "original_max_position_embeddings": 4096, "rope_type": "yarn", "truncate": False}
    assert ("quantization_config" in config) == mxfp4


MISSING_UP = r"""
import sys, numpy as np, gguf
w = gguf.GGUFWriter(sys.argv[1], "gpt-oss")
for key, value in (("block_count", 1), ("embedding_length", 32), ("feed_forward_length", 32), ("context_length", 128),
                   ("attention.head_count", 2), ("attention.head_count_kv", 1), ("expert_count", 4)):
    w.add_uint32("gpt-oss." + key, value)
w.add_float32("gpt-oss.attention.layer_norm_rms_epsilon", 1e-5)
w.add_tensor("token_embd.weight", np.zeros((8, 32), np.float32))
w.add_tensor("blk.0.ffn_gate_exps.weight", np.zeros((4, 32, 32), np.float32))  # no ffn_up_exps
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
"""


def test_a_missing_part_is_refused_on_import(tmp_path):
    oracle = pathlib.Path(CLI).resolve().parent / "oracle-venv" / "bin" / "python"
    if not oracle.exists():
        pytest.skip("gguf-py is installed into build/oracle-venv by scripts/install-deps.sh")
    subprocess.run([str(oracle), "-c", MISSING_UP, str(tmp_path / "cut.gguf")], check=True, timeout=120)
    r = run("convert", tmp_path / "cut.gguf", tmp_path / "back")
    assert r.returncode == 1 and "no blk.0.ffn_up_exps.weight" in r.stderr and "gate_up_proj" in r.stderr, r.stderr
    assert not (tmp_path / "back").exists()
