tlio convert DATA/gguf/tiny_llama TMP/t.gguf --dtype f32
tlio convert TMP/t.gguf TMP/back --json
tlio diff TMP/back DATA/gguf/tiny_llama
tlio diff TMP/t.gguf DATA/gguf/tiny_llama --filter attn_q
