tlio quantize DATA/quant/tiny_model.safetensors TMP/q.safetensors --scheme nf4 --nested
tlio inspect TMP/q.safetensors
tlio validate TMP/q.safetensors
tlio stats TMP/q.safetensors model.layers.0.mlp.down_proj.weight
tlio dequantize TMP/q.safetensors TMP/d.safetensors
tlio inspect TMP/d.safetensors --json
