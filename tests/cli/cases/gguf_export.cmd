tlio convert DATA/gguf/tiny_llama TMP/t.gguf --dtype q8_0
tlio convert DATA/gguf/tiny_llama TMP/t.safetensors --dtype q8_0
tlio import DATA/checkpoints/small_zip.pt TMP/x.safetensors --dtype q4_k
