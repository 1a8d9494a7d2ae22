tlio quantize DATA/quant/tiny_model.safetensors TMP/q.safetensors --scheme nf4
tlio report TMP/q.safetensors --against DATA/quant/tiny_model.safetensors --bins 8 --json --filter layers.0.self_attn
