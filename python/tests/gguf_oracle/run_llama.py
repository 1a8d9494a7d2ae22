"""llama.cpp itself on a GGUF file: npm's prebuilt libllama and libggml (build/npm, from
@node-llama-cpp/linux-x64) through ctypes. `run_llama.py LIB_DIR MODEL.gguf TEXT OUT.npy`
tokenizes TEXT as llama.cpp does (special tokens added), prints the ids as JSON on the last
line, and saves the logits of each position (one token decoded at a time) to OUT.npy. Runs in
its own process: llama.cpp logs to stderr and a bad file must not take the tests down.
llama_batch is declared field by field (llama_lib.py has the opaque parameter structs)."""
import ctypes, json, os, sys
import numpy as np
from llama_lib import Params, load
lib_dir = sys.argv[1]; path = sys.argv[2]; text = sys.argv[3]
llama = load(lib_dir)
class Batch(ctypes.Structure):
    _fields_ = [("n_tokens", ctypes.c_int32), ("token", ctypes.c_void_p), ("embd", ctypes.c_void_p), ("pos", ctypes.c_void_p),
                ("n_seq_id", ctypes.c_void_p), ("seq_id", ctypes.c_void_p), ("logits", ctypes.c_void_p)]
llama.llama_model_default_params.restype = Params
llama.llama_model_load_from_file.restype = ctypes.c_void_p
llama.llama_model_load_from_file.argtypes = [ctypes.c_char_p, Params]
model = llama.llama_model_load_from_file(path.encode(), llama.llama_model_default_params())
assert model, "load failed"
llama.llama_model_get_vocab.restype = ctypes.c_void_p
llama.llama_model_get_vocab.argtypes = [ctypes.c_void_p]
vocab = llama.llama_model_get_vocab(model)
llama.llama_tokenize.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int32, ctypes.POINTER(ctypes.c_int32), ctypes.c_int32, ctypes.c_bool, ctypes.c_bool]
buf = (ctypes.c_int32 * 512)()
t = text.encode()
n = llama.llama_tokenize(vocab, t, len(t), buf, 512, True, False)
ids = list(buf[:n])

llama.llama_context_default_params.restype = Params
llama.llama_init_from_model.restype = ctypes.c_void_p
llama.llama_init_from_model.argtypes = [ctypes.c_void_p, Params]
ctx = llama.llama_init_from_model(model, llama.llama_context_default_params())
assert ctx
# One thread per core: llama.cpp's default of 4 spins in ggml_barrier on a 2-core machine (0.9 s
# a token for a model of a few MB).
llama.llama_set_n_threads.argtypes = [ctypes.c_void_p, ctypes.c_int32, ctypes.c_int32]
llama.llama_set_n_threads(ctx, os.cpu_count() or 1, os.cpu_count() or 1)
llama.llama_batch_get_one.restype = Batch
llama.llama_batch_get_one.argtypes = [ctypes.POINTER(ctypes.c_int32), ctypes.c_int32]
llama.llama_decode.argtypes = [ctypes.c_void_p, Batch]
llama.llama_get_logits.restype = ctypes.POINTER(ctypes.c_float)
llama.llama_get_logits.argtypes = [ctypes.c_void_p]
llama.llama_vocab_n_tokens.argtypes = [ctypes.c_void_p]
nv = llama.llama_vocab_n_tokens(vocab)
rows = []
for i in ids:
    one = (ctypes.c_int32 * 1)(i)
    rc = llama.llama_decode(ctx, llama.llama_batch_get_one(one, 1))
    assert rc == 0, rc
    rows.append(np.ctypeslib.as_array(llama.llama_get_logits(ctx), shape=(nv,)).copy())
np.save(sys.argv[4], np.array(rows))
print(json.dumps(ids))
