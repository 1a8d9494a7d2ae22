"""llama-quantize itself: `quantize_llama.py LIB_DIR IN.gguf OUT.gguf FTYPE [allow-requantize]`
runs npm's prebuilt libllama's llama_model_quantize (no importance matrix, llama.cpp's default
parameters but for the file type, a llama_ftype number, and --allow-requantize when asked) on
IN.gguf. Runs in its own process: llama.cpp logs to stderr and aborts on what it refuses.

The parameter struct is llama.cpp's defaults (llama_lib.Params) with its two first fields, stable
across versions, set: int32 nthread, then int32 ftype; allow_requantize is the bool at byte 16,
after the two ggml_type fields (its default false there, quantize_output_tensor's true after it,
checked)."""
import ctypes, os, struct, sys
from llama_lib import Params, load
lib_dir, src, dst, ftype = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
llama = load(lib_dir)
llama.llama_model_quantize_default_params.restype = Params
params = llama.llama_model_quantize_default_params()
struct.pack_into("<ii", params.raw, 0, os.cpu_count() or 1, ftype)  # one thread per core
if sys.argv[5:] == ["allow-requantize"]:
    assert params.raw[16] == 0 and params.raw[17] == 1, list(params.raw[:24])
    params.raw[16] = 1
llama.llama_model_quantize.restype = ctypes.c_uint32
llama.llama_model_quantize.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(Params)]
rc = llama.llama_model_quantize(src.encode(), dst.encode(), ctypes.byref(params))
assert rc == 0, f"llama_model_quantize returned {rc}"
