tlio convert DATA/quant/tiny_model.safetensors TMP/b.safetensors --dtype bf16
tlio convert TMP/b.safetensors TMP/f.safetensors --dtype F32
tlio diff DATA/quant/tiny_model.safetensors TMP/f.safetensors --json
tlio diff DATA/quant/tiny_model.safetensors TMP/f.safetensors --atol 0.01
tlio diff DATA/quant/tiny_model.safetensors TMP/f.safetensors
