"""The reference forward pass of the tiny models (numpy, float64, Hugging Face's layout and
rotate-half RoPE with config.json's linear or Llama 3 rope_scaling, as transformers' Llama/Qwen2/Qwen3
compute it): logits for every position."""
import json, sys
import numpy as np
def rmsnorm(x, w, eps):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w
def forward(d, ids):
    cfg = json.load(open(f"{d}/config.json")); w = {k: v.astype(np.float64) for k, v in np.load(f"{d}/weights.npz").items()}
    H, heads, kv, L = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["num_hidden_layers"]
    hd = cfg.get("head_dim", H // heads); eps = cfg["rms_norm_eps"]; theta = cfg["rope_theta"]
    T = len(ids); x = w["model.embed_tokens.weight"][ids]
    inv = 1.0 / theta ** (np.arange(0, hd, 2) / hd)
    rs = cfg.get("rope_scaling") or {}; kind = rs.get("rope_type", rs.get("type"))
    if kind == "linear":  # positions divided by the factor
        inv = inv / rs["factor"]
    elif kind == "llama3":  # long wavelengths divided by the factor, short ones kept, a smooth band between
        f, lo, hi, old = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"], rs["original_max_position_embeddings"]
        wl = 2 * np.pi / inv; smooth = (old / wl - lo) / (hi - lo)
        inv = np.where(wl < old / hi, inv, np.where(wl > old / lo, inv / f, (1 - smooth) * inv / f + smooth * inv))
    ang = np.arange(T)[:, None] * inv[None]
    cos = np.concatenate([np.cos(ang)] * 2, -1)[:, None]; sin = np.concatenate([np.sin(ang)] * 2, -1)[:, None]
    rot = lambda t: np.concatenate([-t[..., hd // 2:], t[..., :hd // 2]], -1)
    for i in range(L):
        p = f"model.layers.{i}."
        h = rmsnorm(x, w[p + "input_layernorm.weight"], eps)
        proj = lambda n: h @ w[p + f"self_attn.{n}_proj.weight"].T + w.get(p + f"self_attn.{n}_proj.bias", 0)
        q, k, v = proj("q").reshape(T, heads, hd), proj("k").reshape(T, kv, hd), proj("v").reshape(T, kv, hd)
        if p + "self_attn.q_norm.weight" in w:
            q = rmsnorm(q, w[p + "self_attn.q_norm.weight"], eps); k = rmsnorm(k, w[p + "self_attn.k_norm.weight"], eps)
        q, k = q * cos + rot(q) * sin, k * cos + rot(k) * sin
        k, v = np.repeat(k, heads // kv, 1), np.repeat(v, heads // kv, 1)
        s = np.einsum("thd,shd->hts", q, k) / np.sqrt(hd)
        s = s + np.triu(np.full((T, T), -np.inf), 1)
        a = np.exp(s - s.max(-1, keepdims=True)); a /= a.sum(-1, keepdims=True)
        o = np.einsum("hts,shd->thd", a, v).reshape(T, heads * hd)
        x = x + o @ w[p + "self_attn.o_proj.weight"].T
        h = rmsnorm(x, w[p + "post_attention_layernorm.weight"], eps)
        g = h @ w[p + "mlp.gate_proj.weight"].T
        x = x + ((g / (1 + np.exp(-g))) * (h @ w[p + "mlp.up_proj.weight"].T)) @ w[p + "mlp.down_proj.weight"].T
    x = rmsnorm(x, w["model.norm.weight"], eps)
    return x @ w.get("lm_head.weight", w["model.embed_tokens.weight"]).T
