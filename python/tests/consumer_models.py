"""Tiny models as the users' tools write them, for the consumer tests (test_consumers*.py): a
Llama saved by transformers 5's save_pretrained with a tokenizer that PreTrainedTokenizerFast
saved (so tokenizer_config.json holds model_max_length = int(1e30)), and the helpers that load
tlio's outputs back with transformers. Imported only where transformers is installed."""
import json
import os
import pathlib
import subprocess

import torch
import transformers
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors, trainers

CLI = os.environ.get("TLIO_CLI", str(pathlib.Path(__file__).parents[2] / "build" / "tlio"))
LLAMA3_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                r"|\s*[\r\n]+|\s+(?!\S)|\s+")
TEXT = ["The quick brown fox jumps over the lazy dog. " * 3, "Hello world! tlio writes files; llama.cpp reads them.",
        "1234567 numbers, émigré café", "def f(x):\n    return x * 2\n"]
PROMPT = [[1, 5, 9, 17, 33, 65, 129, 200]]


def run(*args, check=True):
    r = subprocess.run([CLI, *map(str, args)], capture_output=True, text=True, timeout=600)
    if check:
        assert r.returncode == 0, f"tlio {' '.join(map(str, args))}: {r.stderr}"
    return r


def save_tokenizer(folder):
    """A byte-level BPE with Llama 3's pre-tokenizer, saved as transformers saves tokenizers."""
    bos, eos = "<|begin_of_text|>", "<|end_of_text|>"
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(LLAMA3_SPLIT), behavior="isolated"),
                                                 pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=300, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  special_tokens=[bos, eos], show_progress=False)
    tok.train_from_iterator(TEXT * 20, trainer)
    tok.post_processor = processors.TemplateProcessing(single=f"{bos} $A", special_tokens=[(bos, tok.token_to_id(bos))])
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=bos, eos_token=eos)
    fast.save_pretrained(folder)
    return fast


def save_llama(folder, *, dtype=torch.bfloat16, tied=False, seed=0):
    """A two-layer Llama, saved by save_pretrained with its tokenizer; returns the model."""
    folder = pathlib.Path(folder)
    tokenizer = save_tokenizer(folder)
    config = transformers.LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128, tie_word_embeddings=tied,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id)
    torch.manual_seed(seed)
    model = transformers.LlamaForCausalLM(config)
    with torch.no_grad():  # norms away from 1, so that a norm taken for another tensor shows
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.add_(0.1 * torch.randn_like(p))
    model = model.to(dtype)
    model.save_pretrained(folder)
    return model.eval()


def load(folder, **kwargs):
    """transformers' from_pretrained on CPU; fails on any missing, unexpected or mismatched key."""
    model, info = transformers.AutoModelForCausalLM.from_pretrained(
        folder, device_map="cpu", output_loading_info=True, **kwargs)
    for kind in ("missing_keys", "unexpected_keys", "mismatched_keys", "error_msgs"):
        assert not info.get(kind), f"{folder}: {kind} {info[kind]}"
    return model.eval()


def logits(model):
    with torch.no_grad():
        return model(torch.tensor(PROMPT)).logits


def config(folder):
    return json.loads((pathlib.Path(folder) / "config.json").read_text())
