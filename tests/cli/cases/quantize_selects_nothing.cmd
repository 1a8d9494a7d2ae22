tlio quantize DATA/quant/tiny_model.safetensors TMP/q.safetensors --scheme nf4 --include norm
tlio quantize DATA/quant/tiny_model.safetensors TMP/q.safetensors --scheme nf4 --include norm --allow-1d
tlio quantize TMP/q.safetensors TMP/again.safetensors --scheme nf4
tlio quantize DATA/quant/tiny_model.safetensors TMP/z.safetensors --scheme int8 --include zzz
