tlio quantize DATA/quant/tiny_model.safetensors TMP/q.safetensors --scheme nf4
tlio convert DATA/quant/tiny_model.safetensors TMP/b.safetensors --dtype bf16
tlio diff DATA/quant/tiny_model.safetensors TMP/b.safetensors --rtol 0.004
tlio diff TMP/b.safetensors TMP/q.safetensors --all
tlio diff DATA/quant/tiny_model.safetensors TMP/q.safetensors
