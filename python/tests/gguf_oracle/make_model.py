"""Makes a tiny random Hugging Face model folder for the GGUF export tests (run in
build/oracle-venv, which has PyPI's `tokenizers` and `sentencepiece`): `make_model.py OUT ARCH [SIZE]`
with ARCH llama, mistral (a SentencePiece tokenizer.model), qwen2 or qwen3, SIZE small (default),
tiny, mix or mix70. A byte-level BPE tokenizer trained here by Hugging Face's tokenizers with the
architecture's real pre-tokenizer (Llama 3's or Qwen2's Split regex), config.json, and the
weights as weights.npz (the test writes model.safetensors from it)."""
import json, sys, pathlib
import numpy as np
from tokenizers import Tokenizer, Regex, models, pre_tokenizers, decoders, trainers, processors
out = pathlib.Path(sys.argv[1]); arch = sys.argv[2]
size = sys.argv[3] if len(sys.argv) > 3 else "small"
tiny = size == "tiny"  # tests/data/gguf/tiny_llama: a few KB, BF16
out.mkdir(parents=True, exist_ok=True)
LLAMA3 = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
QWEN2 = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
pattern = LLAMA3 if arch == "llama" else QWEN2
tok = Tokenizer(models.BPE())
tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(pattern), behavior="isolated"),
                                             pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
tok.decoder = decoders.ByteLevel()
bos, eos = ("<|begin_of_text|>", "<|end_of_text|>") if arch == "llama" else ("<|im_start|>", "<|endoftext|>")
trainer = trainers.BpeTrainer(vocab_size=270 if tiny else 320, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), special_tokens=[bos, eos], show_progress=False)
text = ["The quick brown fox jumps over the lazy dog. " * 3, "Hello world! llama.cpp runs GGUF files; tlio writes them.", "1234567 numbers, émigré café", "def f(x):\n    return x * 2\n"]
tok.train_from_iterator(text * 20, trainer)
if arch == "llama":
    tok.post_processor = processors.TemplateProcessing(single=f"{bos} $A", special_tokens=[(bos, tok.token_to_id(bos))])
if arch == "mistral":  # a SentencePiece BPE model with byte fallback (tokenizer.model), as Mistral's and Llama 2's
    import io, sentencepiece as spm
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(text * 20), model_writer=model, vocab_size=320,
                                   model_type="bpe", byte_fallback=True, character_coverage=1.0,
                                   normalization_rule_name="identity", remove_extra_whitespaces=False,
                                   split_digits=True, allow_whitespace_only_pieces=True,
                                   bos_id=1, eos_id=2, unk_id=0, minloglevel=2)
    (out / "tokenizer.model").write_bytes(model.getvalue())
    V = spm.SentencePieceProcessor(model_proto=model.getvalue()).vocab_size()
    bos, eos = "<s>", "</s>"
    (out / "tokenizer_config.json").write_text(json.dumps({"bos_token": bos, "eos_token": eos, "unk_token": "<unk>",
                                                           "add_bos_token": True}))
    tok = None
else:
    tok.save(str(out / "tokenizer.json"))
    V = tok.get_vocab_size()
    (out / "tokenizer_config.json").write_text(json.dumps({"bos_token": bos, "eos_token": eos, **({"add_bos_token": False} if arch != "llama" else {})}))
# Rows of 256 and 512 values: whole K-quant super-blocks; Qwen3's heads of 48 make rows of 192,
# which fall back as llama.cpp's do.
# The quantization mixes' models: "mix" has 8 layers (the layer rules pick 0, 3, 6 and 7) and
# ffn_down rows of 352 (not whole super-blocks); "mix70" has the 80 layers of a 70B.
H, heads, kv, layers, ff = {"tiny": (32, 2, 1, 1, 64), "small": (256, 4, 2, 2, 512), "mix": (256, 4, 2, 8, 352),
                            "mix70": (256, 2, 1, 80, 32)}[size]
hd = H // heads if arch != "qwen3" else 48
cls = {"llama": "LlamaForCausalLM", "mistral": "MistralForCausalLM", "qwen2": "Qwen2ForCausalLM",
       "qwen3": "Qwen3ForCausalLM"}[arch]
config = {"architectures": [cls], "model_type": arch, "hidden_size": H, "intermediate_size": ff, "num_hidden_layers": layers,
          "num_attention_heads": heads, "num_key_value_heads": kv, "max_position_embeddings": 128, "vocab_size": V,
          "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "tie_word_embeddings": arch == "qwen3",
          "bos_token_id": tok.token_to_id(bos) if tok else 1, "eos_token_id": tok.token_to_id(eos) if tok else 2,
          "torch_dtype": "float32"}
if arch == "qwen3": config["head_dim"] = hd
(out / "config.json").write_text(json.dumps(config))
rng = np.random.default_rng(3)
w = {"model.embed_tokens.weight": rng.standard_normal((V, H)) * 0.5, "model.norm.weight": 1 + 0.1 * rng.standard_normal(H)}
if arch != "qwen3": w["lm_head.weight"] = rng.standard_normal((V, H)) * 0.06
for i in range(layers):
    p = f"model.layers.{i}."
    w[p + "input_layernorm.weight"] = 1 + 0.1 * rng.standard_normal(H)
    w[p + "post_attention_layernorm.weight"] = 1 + 0.1 * rng.standard_normal(H)
    w[p + "self_attn.q_proj.weight"] = rng.standard_normal((heads * hd, H)) * 0.06
    w[p + "self_attn.k_proj.weight"] = rng.standard_normal((kv * hd, H)) * 0.06
    w[p + "self_attn.v_proj.weight"] = rng.standard_normal((kv * hd, H)) * 0.06
    w[p + "self_attn.o_proj.weight"] = rng.standard_normal((H, heads * hd)) * 0.06
    if arch == "qwen2":
        for n, rows in (("q", heads * hd), ("k", kv * hd), ("v", kv * hd)):
            w[p + f"self_attn.{n}_proj.bias"] = rng.standard_normal(rows) * 0.1
    if arch == "qwen3":
        w[p + "self_attn.q_norm.weight"] = 1 + 0.1 * rng.standard_normal(hd)
        w[p + "self_attn.k_norm.weight"] = 1 + 0.1 * rng.standard_normal(hd)
    w[p + "mlp.gate_proj.weight"] = rng.standard_normal((ff, H)) * 0.06
    w[p + "mlp.up_proj.weight"] = rng.standard_normal((ff, H)) * 0.06
    w[p + "mlp.down_proj.weight"] = rng.standard_normal((H, ff)) * 0.06
np.savez(out / "weights.npz", **{k: v.astype(np.float32) for k, v in w.items()})
