"""npm's prebuilt libggml and libllama (build/npm, from @node-llama-cpp/linux-x64) loaded through
ctypes with their CPU backends, for the scripts beside this one (each runs in its own process:
llama.cpp logs to stderr and aborts on what it refuses).

Parameter structs are passed as llama.cpp's defaults return them, as opaque bytes larger than any
version's struct (on x86-64 they travel in memory, so the extra bytes are never read)."""
import ctypes
import os


class Params(ctypes.Structure):
    _fields_ = [("raw", ctypes.c_uint8 * 1024)]


def load(lib_dir):
    """libllama, initialised, with libggml's backends loaded from `lib_dir`."""
    ggml = ctypes.CDLL(os.path.join(lib_dir, "libggml.v0.4.0.so"), mode=ctypes.RTLD_GLOBAL)
    if hasattr(ggml, "ggml_backend_load_all_from_path"):
        ggml.ggml_backend_load_all_from_path(lib_dir.encode())
    llama = ctypes.CDLL(os.path.join(lib_dir, "libllama.v0.4.0.so"))
    llama.llama_backend_init()
    return llama
