"""quantize's default selection on the names real models use: every linear layer's weight,
never embeddings, norms or the output head (as transformers chooses for bitsandbytes)."""
import torch

import tlio
import tlio.torch


def quantized_names(tmp_path, tensors):
    tlio.torch.save_file(tensors, tmp_path / "m.safetensors")
    items = tlio.quantize_file(tmp_path / "m.safetensors", tmp_path / "q.safetensors", "nf4")
    return sorted(i["name"] for i in items if i["quantized"])


def test_gpt2_neox_mixtral_phi_and_sequential(tmp_path):
    w = lambda *shape: torch.randn(*shape)  # noqa: E731
    tensors = {
        "transformer.wte.weight": w(64, 32), "transformer.wpe.weight": w(16, 32),
        "transformer.h.0.ln_1.weight": w(32), "transformer.h.0.attn.c_attn.weight": w(32, 96),
        "transformer.h.0.attn.c_attn.bias": w(96),
        "gpt_neox.layers.0.attention.query_key_value.weight": w(96, 32), "embed_out.weight": w(64, 32),
        "model.layers.0.block_sparse_moe.experts.0.w1.weight": w(64, 32),
        "model.layers.0.mlp.fc1.weight": w(64, 32), "0.weight": w(32, 32), "lm_head.weight": w(64, 32),
    }
    assert quantized_names(tmp_path, tensors) == [
        "0.weight", "gpt_neox.layers.0.attention.query_key_value.weight",
        "model.layers.0.block_sparse_moe.experts.0.w1.weight", "model.layers.0.mlp.fc1.weight",
        "transformer.h.0.attn.c_attn.weight"]
