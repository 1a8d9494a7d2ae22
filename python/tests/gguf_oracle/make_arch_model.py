"""A tiny random model of an architecture as transformers 5 writes it (save_pretrained: per-expert
tensors, rope_parameters, head_dim null where the class has none), with a tokenizer trained here
as the architecture's real models ship theirs: a SentencePiece tokenizer.model (Mistral, Mixtral,
Granite here) or a byte-level BPE tokenizer.json with Llama 3's or Qwen2's pre-tokenizer.
`make_arch_model.py OUT ARCH` (run in the users' stack, build/consumer-venv); prints the
pre-tokenizer's llama.cpp name for BPE (the converter knows real vocabularies by a hash)."""
import io, json, sys, pathlib
import torch, transformers
from tokenizers import Tokenizer, Regex, models, pre_tokenizers, decoders, trainers
out = pathlib.Path(sys.argv[1]); arch = sys.argv[2]
out.mkdir(parents=True, exist_ok=True)
TEXT = ["The quick brown fox jumps over the lazy dog. " * 3, "Hello world! llama.cpp runs GGUF files; tlio writes them.",
        "1234567 numbers, émigré café", "def f(x):\n    return x * 2\n"] * 20
QWEN2 = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
LLAMA3 = QWEN2.replace(r"\p{N}|", r"\p{N}{1,3}|")
CASED = r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]"; LOWER = r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]"; S = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
O200K = (rf"[^\r\n\p{{L}}\p{{N}}]?{CASED}*{LOWER}+{S}|[^\r\n\p{{L}}\p{{N}}]?{CASED}+{LOWER}*{S}|"  # gpt-oss's (tiktoken's o200k)
         r"\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+")
# DeepSeek-V3's three Splits (its tokenizer.json's; llama.cpp's deepseek-v3)
DEEPSEEK = [r"\p{N}{1,3}", "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+",
            "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+"
            "| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"]
SPM = {"mistral", "mixtral", "granite", "gemma2", "gemma3", "phi3", "phi3-longrope"}
if arch in SPM:  # a SentencePiece BPE model with byte fallback, as Mistral's, Gemma's and Phi-3's
    import sentencepiece as spm
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(TEXT), model_writer=model, vocab_size=320, model_type="bpe",
                                   byte_fallback=True, character_coverage=1.0, normalization_rule_name="identity",
                                   remove_extra_whitespaces=False, split_digits=True, allow_whitespace_only_pieces=True,
                                   bos_id=1, eos_id=2, unk_id=0, pad_id=3, minloglevel=2,
                                   # llama.cpp looks <|endoftext|> up in a Phi-3 vocabulary
                                   user_defined_symbols=["<|endoftext|>"] if arch.startswith("phi3") else [])
    (out / "tokenizer.model").write_bytes(model.getvalue())
    vocab, bos, eos, pad, pre = 320, 1, 2, 3, None
    (out / "tokenizer_config.json").write_text(json.dumps({"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>",
                                                           "pad_token": "<pad>", "add_bos_token": True,
                                                           "tokenizer_class": "LlamaTokenizer"}))
else:
    pre = ("qwen2" if arch.startswith("qwen") else "gpt-4o" if arch.startswith("gptoss")
           else "deepseek-v3" if arch.startswith("deepseek") else "llama-bpe")
    tok = Tokenizer(models.BPE())
    splits = DEEPSEEK if pre == "deepseek-v3" else [{"qwen2": QWEN2, "gpt-4o": O200K}.get(pre, LLAMA3)]
    tok.pre_tokenizer = pre_tokenizers.Sequence([*(pre_tokenizers.Split(Regex(r), behavior="isolated") for r in splits),
                                                 pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    # Gemma's tokenizer class adds <unk> and <mask> where tokenizer.json lacks them (its own has them)
    specials = ["<|endoftext|>", "<|im_start|>", "<|pad|>"] + (["<unk>", "<mask>"] if arch == "gemma3-bpe" else [])
    tok.train_from_iterator(TEXT, trainers.BpeTrainer(vocab_size=320, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                                       special_tokens=specials, show_progress=False))
    tok.save(str(out / "tokenizer.json"))
    vocab = tok.get_vocab_size()
    bos, eos, pad = (tok.token_to_id(s) for s in specials[:3])
    (out / "tokenizer_config.json").write_text(json.dumps({"bos_token": specials[0], "eos_token": specials[0],
                                                           "pad_token": specials[2], "add_bos_token": False}))
common = dict(vocab_size=vocab, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
              num_key_value_heads=2, max_position_embeddings=128, bos_token_id=bos, eos_token_id=eos, pad_token_id=pad)
name, cls, extra = {
    "llama": ("LlamaConfig", "LlamaForCausalLM", dict(rope_theta=500000.0)),
    "mistral": ("MistralConfig", "MistralForCausalLM", {}),
    "qwen2": ("Qwen2Config", "Qwen2ForCausalLM", dict(rope_theta=1000000.0)),
    "qwen3": ("Qwen3Config", "Qwen3ForCausalLM", dict(head_dim=16, tie_word_embeddings=True)),
    "mixtral": ("MixtralConfig", "MixtralForCausalLM", dict(num_local_experts=4, num_experts_per_tok=2)),
    "qwen2moe": ("Qwen2MoeConfig", "Qwen2MoeForCausalLM", dict(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
                                                               shared_expert_intermediate_size=64)),
    "qwen3moe": ("Qwen3MoeConfig", "Qwen3MoeForCausalLM", dict(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
                                                               head_dim=16, norm_topk_prob=True)),
    "olmo2": ("Olmo2Config", "Olmo2ForCausalLM", {}),
    "granite": ("GraniteConfig", "GraniteForCausalLM", dict(embedding_multiplier=12.0, residual_multiplier=0.22,
                                                            attention_multiplier=0.0078125, logits_scaling=8.0)),
    "gemma2": ("Gemma2Config", "Gemma2ForCausalLM", dict(head_dim=16, sliding_window=8, query_pre_attn_scalar=16)),
    "phi3": ("Phi3Config", "Phi3ForCausalLM", {}),
    # llama.cpp's gemma3 makes every 6th layer global: transformers' default layer_types agree
    "gemma3": ("Gemma3TextConfig", "Gemma3ForCausalLM", dict(head_dim=16, sliding_window=8, query_pre_attn_scalar=16)),
    # DeepSeek-V3: MLA (q and kv through low ranks, kv_b split by llama.cpp's converter), a dense
    # first layer, routed experts with a sigmoid router in groups, a shared expert, YaRN with
    # DeepSeek's mscale
    "deepseek3": ("DeepseekV3Config", "DeepseekV3ForCausalLM", dict(
        num_key_value_heads=4, moe_intermediate_size=32, n_routed_experts=4, n_shared_experts=1, num_experts_per_tok=2,
        first_k_dense_replace=1, n_group=2, topk_group=1, kv_lora_rank=32, q_lora_rank=48, qk_rope_head_dim=16,
        qk_nope_head_dim=16, v_head_dim=16, scoring_func="sigmoid", max_position_embeddings=512,
        rope_parameters=dict(rope_type="yarn", rope_theta=10000.0, factor=4.0, original_max_position_embeddings=128,
                             beta_fast=32.0, beta_slow=1.0, mscale=1.0, mscale_all_dim=1.0))),
    # DeepSeek-V2-Lite's shape: q without a low rank, a softmax router, no groups; 27 layers, as
    # llama.cpp knows V2-Lite by its layer count (and asks the others for q_lora_rank)
    "deepseek2": ("DeepseekV2Config", "DeepseekV2ForCausalLM", dict(
        num_hidden_layers=27, num_key_value_heads=4, moe_intermediate_size=32, n_routed_experts=4, n_shared_experts=1, num_experts_per_tok=2,
        first_k_dense_replace=1, kv_lora_rank=32, q_lora_rank=None, qk_rope_head_dim=16, qk_nope_head_dim=16,
        v_head_dim=16, scoring_func="softmax")),
    # gpt-oss: experts held stacked [experts, in, out] with gate and up interleaved, biases, sinks,
    # YaRN; gptoss-mxfp4: its experts as OpenAI ships them, MXFP4 blocks and scales
    "gptoss": ("GptOssConfig", "GptOssForCausalLM", dict(head_dim=16, intermediate_size=32, num_local_experts=4,
                                                         num_experts_per_tok=2, sliding_window=8)),
}[arch.split("-")[0]]
if arch == "phi3-longrope":  # Phi-3.5/Phi-4-mini's LongRoPE with Phi-4-mini's partial rotary; llama.cpp
    # takes the short factors up to the original context, its default 512 tokens here
    extra = dict(max_position_embeddings=4096, original_max_position_embeddings=512, rope_parameters=dict(
        rope_type="longrope", rope_theta=10000.0, partial_rotary_factor=0.75,
        short_factor=[1.0, 1.1, 1.3, 1.7, 2.2, 3.1], long_factor=[1.0, 2.0, 4.5, 9.0, 20.0, 40.0]))
if arch == "gemma3-bpe":  # a tokenizer.json alone and a vocab_size past it, which the converter cuts
    common["vocab_size"] = vocab + 40  # token_embd to (tlio keeps the rows; see test_gguf_archs)
torch.manual_seed(0)
config = getattr(transformers, name)(**{**common, **extra})
model = getattr(transformers, cls)(config)
with torch.no_grad():  # norms away from 1 and 0, so a wrong norm convention shows; weights 10x
    for n, p in model.named_parameters():  # transformers' init, so the routers' choices and every
        if n.endswith("norm.weight"):        # layer's part show in the logits
            p.copy_(0.1 + 0.2 * torch.rand_like(p))
        elif p.dim() >= 2:  # 3-D: transformers 5 holds experts stacked
            p.mul_(10)
        if n.endswith(("mlp.gate.weight", "block_sparse_moe.gate.weight", "mlp.router.weight")):
            p.mul_(30)  # routers: clear choices, so F16 rounding in llama.cpp picks the same experts
model.save_pretrained(out)
if arch in ("qwen3", "qwen3moe", "gemma3"):  # where transformers 5 saves a chat template
    (out / "chat_template.jinja").write_text("{% for m in messages %}<|im_start|>{{ m['role'] }}\n"
                                             "{{ m['content'] }}<|endoftext|>\n{% endfor %}")
if arch.endswith("-mxfp4"):  # random codes, scales of 2^-5..2^-2: blocks [experts, out, in/32, 16]
    import numpy as np, safetensors.torch
    rng, tensors = np.random.default_rng(0), safetensors.torch.load_file(out / "model.safetensors")
    for k in [k for k in tensors if k.endswith(("experts.gate_up_proj", "experts.down_proj"))]:
        e, i, o = tensors.pop(k).shape
        tensors[k + "_blocks"] = torch.from_numpy(rng.integers(0, 256, (e, o, i // 32, 16), dtype=np.uint8))
        tensors[k + "_scales"] = torch.from_numpy(rng.integers(122, 126, (e, o, i // 32), dtype=np.uint8))
    safetensors.torch.save_file(tensors, out / "model.safetensors", metadata={"format": "pt"})
    c = json.loads((out / "config.json").read_text())
    c["quantization_config"] = {"quant_method": "mxfp4", "modules_to_not_convert": [
        "model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"]}
    (out / "config.json").write_text(json.dumps(c, indent=2))
if arch.endswith("-fp8"):  # DeepSeek's FP8: E4M3 weights in 128 x 128 blocks, each block's F32 scale
    import safetensors.torch  # (amax / 448) stored as weight_scale_inv, which dequantizing multiplies by
    tensors, size = safetensors.torch.load_file(out / "model.safetensors"), 128
    for k in [k for k in tensors if k.endswith(("proj.weight", "proj_with_mqa.weight"))]:
        w = tensors[k].float()
        rows, cols = w.shape
        padded = torch.zeros(-(-rows // size) * size, -(-cols // size) * size)
        padded[:rows, :cols] = w
        blocks = padded.reshape(padded.shape[0] // size, size, padded.shape[1] // size, size)
        scale = blocks.abs().amax(dim=(1, 3)).clamp(min=1e-12) / 448.0
        codes = (blocks / scale[:, None, :, None]).reshape(padded.shape)[:rows, :cols]
        tensors[k], tensors[k + "_scale_inv"] = codes.to(torch.float8_e4m3fn), scale
    safetensors.torch.save_file(tensors, out / "model.safetensors", metadata={"format": "pt"})
    c = json.loads((out / "config.json").read_text())
    c["quantization_config"] = {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic",
                                "weight_block_size": [size, size]}
    (out / "config.json").write_text(json.dumps(c, indent=2))
print(pre or "")
