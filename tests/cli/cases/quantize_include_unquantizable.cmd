tlio quantize DATA/quant/tiny_model.safetensors TMP/q.safetensors --scheme int4-g32-sym --include down_proj
